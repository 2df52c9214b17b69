//! A PostgreSQL COMMIT whose answer is lost: the server committed, then the connection was cut before the client
//! heard so. The state writer must not report such a save as a conflict (or an error): it stands, so its caller is
//! told it was saved, and the session takes the next save on top of it. Nor may the journal report such a
//! reservation as failed: it is live, counts against the cap and holds the user's authorization. Nor may a fired
//! reminder or a taken message be reported as not stored: nothing would deliver them again. Nor may a write that adds
//! a row (a memory edit's history entry, a task, a reminder, a message, a history entry) be reported as failed: its
//! caller would write it again, and it would be there twice.
//!
//! A TCP proxy between the store and the server forwards everything until it sees a `COMMIT` go out; then it lets the
//! server process it, swallows the answer and cuts both sides.

use holdfast_core::SessionStateStore;
use holdfast_core::config::DatabaseUrl;
use holdfast_core::session_state::StateDelta;
use holdfast_store::journal::{JournalTable, NewRow, Reserved, Select};
use holdfast_store::memory::{BlockRow, BlockWrite, MemoryTable};
use holdfast_store::messages::{Added, AfterWindows, MessageTable, NewMessage, NewReminder, Sent, Windows};
use holdfast_store::sessions::{MessageRole, NewMessage as HistoryEntry, PgSessionStore, SessionStorage};
use holdfast_store::tasks::{TaskRow, TaskTable};
use holdfast_store::{PgStore, Storage};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Forwards connections to `upstream`; while armed, cuts the first connection that sends a `COMMIT`, after the
/// server has had time to process it and without relaying its answer.
struct CommitCutter {
    armed: AtomicBool,
    cuts: AtomicUsize,
    /// Cut before the COMMIT reaches the server instead (it then never commits): the case a read-back must not
    /// take for committed.
    before: AtomicBool,
}

impl CommitCutter {
    async fn start(upstream: String) -> (Arc<Self>, u16) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let cutter =
            Arc::new(Self { armed: AtomicBool::new(false), cuts: AtomicUsize::new(0), before: AtomicBool::new(false) });
        let shared = cutter.clone();
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let server = TcpStream::connect(&upstream).await.unwrap();
                tokio::spawn(shared.clone().pump(client, server));
            }
        });
        (cutter, port)
    }

    async fn pump(self: Arc<Self>, client: TcpStream, server: TcpStream) {
        let (mut client_rx, mut client_tx) = client.into_split();
        let (mut server_rx, mut server_tx) = server.into_split();
        let swallow = Arc::new(AtomicBool::new(false));
        let answers = {
            let swallow = swallow.clone();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 64 * 1024];
                while let Ok(n @ 1..) = server_rx.read(&mut buf).await {
                    if swallow.load(Ordering::SeqCst) || client_tx.write_all(&buf[..n]).await.is_err() {
                        break;
                    }
                }
            })
        };
        let mut buf = vec![0u8; 64 * 1024];
        while let Ok(n @ 1..) = client_rx.read(&mut buf).await {
            let commit = buf[..n].windows(6).any(|w| w == b"COMMIT");
            let cut = commit && self.armed.swap(false, Ordering::SeqCst);
            if cut {
                swallow.store(true, Ordering::SeqCst);
                self.cuts.fetch_add(1, Ordering::SeqCst);
                if self.before.load(Ordering::SeqCst) {
                    break;
                }
            }
            if server_tx.write_all(&buf[..n]).await.is_err() {
                break;
            }
            if cut {
                // The server reads the COMMIT and commits; its answer is read and dropped. Then both sides go.
                tokio::time::sleep(Duration::from_millis(300)).await;
                break;
            }
        }
        answers.abort();
    }
}

/// The URL of `url`'s database through a new cutter in front of its server.
async fn through_cutter(url: &DatabaseUrl) -> (Arc<CommitCutter>, DatabaseUrl) {
    let text = url.expose().to_owned();
    let (prefix, rest) = text.rsplit_once('@').unwrap();
    let (host_port, database) = rest.split_once('/').unwrap();
    let (cutter, port) = CommitCutter::start(host_port.to_owned()).await;
    (cutter, DatabaseUrl::parse(&format!("{prefix}@127.0.0.1:{port}/{database}")).unwrap())
}

fn note(value: &str) -> StateDelta {
    StateDelta { parts: vec![("note".to_owned(), Some(value.to_owned()))], copy: 0, follows: false }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_save_whose_commit_answer_is_lost_is_acknowledged_not_refused() {
    let Some(url) = holdfast_testkit::postgres::fresh_database().await else { return };
    let (cutter, proxied) = through_cutter(&url).await;
    let store = PgSessionStore::open(PgStore::connect(&proxied).await.unwrap()).await.unwrap();
    for id in ["a", "b"] {
        store.create(id, "http").await.unwrap();
        store.save_state(id, 1, note(&format!("{id} 1"))).await.unwrap();
    }

    // Two sessions' saves, queued together (one batch, or two when the writer takes the first at once): the first
    // COMMIT's answer lost.
    cutter.armed.store(true, Ordering::SeqCst);
    let (a, b) = (store.save_state("a", 2, note("a 2")), store.save_state("b", 2, note("b 2")));
    let (a, b) = tokio::join!(a, b);
    assert_eq!(cutter.cuts.load(Ordering::SeqCst), 1, "the proxy cut one COMMIT");
    a.unwrap();
    b.unwrap();
    // One save alone, the same way.
    cutter.armed.store(true, Ordering::SeqCst);
    store.save_state("a", 3, note("a 3")).await.unwrap();
    assert_eq!(cutter.cuts.load(Ordering::SeqCst), 2, "the proxy cut the second COMMIT");

    // What the callers were told is what is stored, and the sessions go on from there.
    let direct = PgSessionStore::open(PgStore::connect(&url).await.unwrap()).await.unwrap();
    for (id, revision, value) in [("a", 3, "a 3"), ("b", 2, "b 2")] {
        let stored = direct.load_state(id).await.unwrap().unwrap();
        assert_eq!((stored.revision, stored.parts.get("note").map(String::as_str)), (revision, Some(value)));
    }
    store.save_state("a", 4, note("a 4")).await.unwrap();
    store.save_state("b", 3, note("b 3")).await.unwrap();
    // A save that truly lost the race is still refused after a cut: another writer's row is not taken for its own.
    cutter.armed.store(true, Ordering::SeqCst);
    direct.save_state("b", 4, note("b 4 by the other")).await.unwrap();
    let refused = store.save_state("b", 4, note("b 4 here")).await;
    assert!(refused.is_err(), "a save another writer's row stands in for was acknowledged");
    assert_eq!(cutter.cuts.load(Ordering::SeqCst), 3, "the proxy cut the third COMMIT");
    let stored = direct.load_state("b").await.unwrap().unwrap();
    assert_eq!(stored.parts.get("note").map(String::as_str), Some("b 4 by the other"));

    // A link merge (an inbox turn's "answering" mark) committed with its answer lost is done, not an error: before,
    // the worker looked at the message again, found the mark, and took the turn that never ran for interrupted.
    cutter.armed.store(true, Ordering::SeqCst);
    store.link_merge("inbox:x", serde_json::json!({"answering": "m_1"})).await.unwrap();
    assert_eq!(cutter.cuts.load(Ordering::SeqCst), 4, "the proxy cut the merge's COMMIT");
    assert_eq!(direct.link_get("inbox:x").await.unwrap(), Some(serde_json::json!({"answering": "m_1"})));
}

/// Agent `a`'s reminder to agent `b`.
fn stand_up() -> NewReminder {
    NewReminder {
        agent_id: "a".to_owned(),
        due_at: "2026-11-26T00:00:00.000Z".to_owned(),
        message: "stand up".to_owned(),
        target_type: "agent".to_owned(),
        target_id: Some("b".to_owned()),
        created_at: "2026-11-25T00:00:00.000Z".to_owned(),
        ..NewReminder::default()
    }
}

/// The delivery of reminder `id` (agent `a`'s to agent `b`), which fires it.
fn fires(id: i64) -> NewMessage {
    NewMessage {
        content: "stand up".to_owned(),
        via: "reminder".to_owned(),
        fires: Some((id, "2026-11-26T00:00:01.000Z".to_owned())),
        ..hello()
    }
}

fn reservation(id: &str) -> NewRow {
    NewRow {
        id: id.to_owned(),
        session_id: "s".to_owned(),
        kind: "transfer".to_owned(),
        network: "base".to_owned(),
        chain_id: 8453,
        from: "0xabc".to_owned(),
        to: "0xdef".to_owned(),
        value: "0".to_owned(),
        asset: "usdc".to_owned(),
        asset_symbol: "USDC".to_owned(),
        amount: "5000000".to_owned(),
        fingerprint: "f".to_owned(),
        intent: Some("i".to_owned()),
        status: "reserved".to_owned(),
        summary: "{}".to_owned(),
        now: "2026-11-26T00:00:00Z".to_owned(),
        day: "2026-11-26".to_owned(),
        ..NewRow::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reservation_whose_commit_answer_is_lost_is_reported_inserted() {
    let Some(url) = holdfast_testkit::postgres::fresh_database().await else { return };
    let (cutter, proxied) = through_cutter(&url).await;
    let journal = JournalTable::open(&Storage::Postgres(PgStore::connect(&proxied).await.unwrap())).await.unwrap();

    cutter.armed.store(true, Ordering::SeqCst);
    let reserved = journal.reserve(reservation("j_1"), &["transfer"], |_| Ok(None::<String>)).await;
    assert_eq!(cutter.cuts.load(Ordering::SeqCst), 1, "the proxy cut the reservation's COMMIT");
    // Before: the error, beside a live reservation the caller believed was never made.
    assert!(matches!(reserved, Ok(Reserved::Inserted)), "{reserved:?}");
    let held = journal.select(Select::Id("j_1".to_owned())).await.unwrap();
    assert_eq!(held.len(), 1);
    // The same intent again finds it live.
    let again = journal
        .reserve(reservation("j_2"), &["transfer"], |found| Ok(found.same_action.map(|row| row.id)))
        .await
        .unwrap();
    assert!(matches!(again, Reserved::Refused(ref id) if id == "j_1"), "{again:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reminder_fired_and_a_message_taken_whose_commit_answer_is_lost_are_not_lost() {
    let Some(url) = holdfast_testkit::postgres::fresh_database().await else { return };
    let (cutter, proxied) = through_cutter(&url).await;
    let messages = MessageTable::open(&Storage::Postgres(PgStore::connect(&proxied).await.unwrap())).await.unwrap();
    let reminder = stand_up();
    let Added::Inserted(id) = messages.add_reminder(reminder, |_| None::<()>).await.unwrap() else { panic!() };

    // The reminder's delivery commits, its answer is lost: before, the scheduler was told the store failed and
    // skipped what comes after the store (the user's channel, a webhook), and the next pass found it fired: lost.
    cutter.armed.store(true, Ordering::SeqCst);
    let fires = NewMessage { metadata: Some(format!(r#"{{"kind":"reminder","reminder_id":"r_{id}"}}"#)), ..fires(id) };
    let no_windows = None::<Windows<fn(&str) -> Option<Duration>>>;
    let sent = messages.send(fires, no_windows, |_, _| AfterWindows::<()>::Store).await;
    assert_eq!(cutter.cuts.load(Ordering::SeqCst), 1, "the proxy cut the delivery's COMMIT");
    let Ok(Sent::Written(written)) = sent else { panic!("{sent:?}") };
    assert_eq!(written.delivered, vec!["b".to_owned()]);
    let waiting = messages.inbox_pending("b").await.unwrap();
    assert_eq!((waiting.len(), waiting[0].message_id), (1, written.id));

    // Taking it commits, the answer is lost: before, the caller got an error and no later take returned it.
    cutter.armed.store(true, Ordering::SeqCst);
    let taken = messages.inbox_take("b", "2026-11-26T00:00:02.000Z").await;
    assert_eq!(cutter.cuts.load(Ordering::SeqCst), 2, "the proxy cut the take's COMMIT");
    let Ok(Some(row)) = taken else { panic!("{taken:?}") };
    assert_eq!((row.message_id, row.content.as_str()), (written.id, "stand up"));
    assert!(messages.inbox_pending("b").await.unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commits_that_never_reached_the_server_are_not_taken_for_committed() {
    let Some(url) = holdfast_testkit::postgres::fresh_database().await else { return };
    let (cutter, proxied) = through_cutter(&url).await;
    cutter.before.store(true, Ordering::SeqCst);
    let pg = PgStore::connect(&proxied).await.unwrap();
    let cut = |n: usize| {
        cutter.armed.store(true, Ordering::SeqCst);
        move |cutter: &CommitCutter| assert_eq!(cutter.cuts.load(Ordering::SeqCst), n, "the proxy cut COMMIT {n}")
    };

    // A reservation: an error, no row, and the same intent can be reserved afresh.
    let journal = JournalTable::open(&Storage::Postgres(pg.clone())).await.unwrap();
    let check = cut(1);
    assert!(journal.reserve(reservation("j_1"), &["transfer"], |_| Ok(None::<String>)).await.is_err());
    check(&cutter);
    assert!(journal.select(Select::Id("j_1".to_owned())).await.unwrap().is_empty());
    let again = journal.reserve(reservation("j_2"), &["transfer"], |found| Ok(found.same_action.map(|r| r.id)));
    assert!(matches!(again.await.unwrap(), Reserved::Inserted));

    // A new link: an error, and no link (the read-back's probe of the key left nothing either).
    let sessions = PgSessionStore::open(pg.clone()).await.unwrap();
    let check = cut(2);
    assert!(sessions.link_merge("inbox:y", serde_json::json!({"answering": "m_2"})).await.is_err());
    check(&cutter);
    assert_eq!(sessions.link_get("inbox:y").await.unwrap(), None);

    // A session's save: tried again on a new connection, written once, acknowledged.
    sessions.create("c", "http").await.unwrap();
    let check = cut(3);
    sessions.save_state("c", 1, note("c 1")).await.unwrap();
    check(&cutter);
    let stored = sessions.load_state("c").await.unwrap().unwrap();
    assert_eq!((stored.revision, stored.parts.get("note").map(String::as_str)), (1, Some("c 1")));

    // A reminder's delivery: an error, nothing in the inbox, the reminder still due.
    let messages = MessageTable::open(&Storage::Postgres(pg.clone())).await.unwrap();
    let reminder = stand_up();
    let Added::Inserted(id) = messages.add_reminder(reminder, |_| None::<()>).await.unwrap() else { panic!() };
    let fires = fires(id);
    let no_windows = || None::<Windows<fn(&str) -> Option<Duration>>>;
    let check = cut(4);
    assert!(messages.send(fires.clone(), no_windows(), |_, _| AfterWindows::<()>::Store).await.is_err());
    check(&cutter);
    assert!(messages.inbox_pending("b").await.unwrap().is_empty());
    assert_eq!(messages.reminders("a", false).await.unwrap().len(), 1, "still due");

    // A take: an error, and the message still waiting.
    let sent = messages.send(fires, no_windows(), |_, _| AfterWindows::<()>::Store).await.unwrap();
    assert!(matches!(sent, Sent::Written(_)), "{sent:?}");
    let check = cut(5);
    assert!(messages.inbox_take("b", "2026-11-26T00:00:02.000Z").await.is_err());
    check(&cutter);
    assert_eq!(messages.inbox_pending("b").await.unwrap().len(), 1, "still waiting");
}

/// An edit that appends `text` to block `notes` (creating it), as `append_memory` does.
fn append(
    text: &'static str,
) -> impl FnOnce(Option<BlockRow>) -> Result<(Option<BlockWrite>, ()), holdfast_store::StoreError> + Send + 'static {
    move |before| {
        let mut block = before.unwrap_or_else(|| BlockRow {
            label: "notes".to_owned(),
            permission: "read_write".to_owned(),
            char_limit: 1000,
            created_at: "2026-11-26T00:00:00.000Z".to_owned(),
            ..BlockRow::default()
        });
        block.value.push_str(text);
        block.updated_at = "2026-11-26T00:00:01.000Z".to_owned();
        Ok((Some(BlockWrite { block, actor: "agent".to_owned(), op: "append".to_owned() }), ()))
    }
}

fn task(title: &str) -> TaskRow {
    TaskRow {
        title: title.to_owned(),
        priority: "normal".to_owned(),
        status: "open".to_owned(),
        steps: "[]".to_owned(),
        created_at: "2026-11-26T00:00:00.000Z".to_owned(),
        updated_at: "2026-11-26T00:00:00.000Z".to_owned(),
        ..TaskRow::default()
    }
}

/// Agent `a`'s direct message to agent `b`.
fn hello() -> NewMessage {
    NewMessage {
        sender: "a".to_owned(),
        target_type: "agent".to_owned(),
        target_id: Some("b".to_owned()),
        content: "hello".to_owned(),
        created_at: "2026-11-26T00:00:01.000Z".to_owned(),
        recipients: vec!["b".to_owned()],
        via: "direct".to_owned(),
        ..NewMessage::default()
    }
}

/// Each kind of write that adds a row, with the proxy cutting its COMMIT (`before` it reaches the server, or after
/// it was processed). Returns what each answered: ok or not, in order: memory edit, task, reminder, message,
/// history entry.
async fn add_one_of_each(url: &DatabaseUrl, before: bool) -> Vec<bool> {
    let (cutter, proxied) = through_cutter(url).await;
    cutter.before.store(before, Ordering::SeqCst);
    let storage = Storage::Postgres(PgStore::connect(&proxied).await.unwrap());
    let (memory, tasks) = (MemoryTable::open(&storage).await.unwrap(), TaskTable::open(&storage).await.unwrap());
    let messages = MessageTable::open(&storage).await.unwrap();
    let Storage::Postgres(pg) = &storage else { unreachable!() };
    let sessions = PgSessionStore::open(pg.clone()).await.unwrap();
    sessions.create("h", "http").await.unwrap();
    let no_windows = None::<Windows<fn(&str) -> Option<Duration>>>;
    let mut answers = Vec::new();
    let mut cut = |ok: bool| {
        answers.push(ok);
        assert_eq!(cutter.cuts.load(Ordering::SeqCst), answers.len(), "the proxy cut COMMIT {}", answers.len());
        cutter.armed.store(true, Ordering::SeqCst);
    };
    cutter.armed.store(true, Ordering::SeqCst);
    cut(memory.modify("a", "notes", append("met Bob. ")).await.is_ok());
    cut(tasks.insert("a", &task("pay the invoice")).await.is_ok());
    cut(matches!(messages.add_reminder(stand_up(), |_| None::<()>).await, Ok(Added::Inserted(_))));
    cut(matches!(messages.send(hello(), no_windows, |_, _| AfterWindows::<()>::Store).await, Ok(Sent::Written(_))));
    let entry = HistoryEntry::text(MessageRole::User, "pay the invoice");
    answers.push(sessions.append("h", entry).await.is_ok());
    assert_eq!(cutter.cuts.load(Ordering::SeqCst), 5, "the proxy cut the history entry's COMMIT");
    answers
}

/// How many rows each write of [`add_one_of_each`] left, read directly.
async fn rows_of_each(url: &DatabaseUrl) -> Vec<usize> {
    let storage = Storage::Postgres(PgStore::connect(url).await.unwrap());
    let memory = MemoryTable::open(&storage).await.unwrap();
    let messages = MessageTable::open(&storage).await.unwrap();
    let Storage::Postgres(pg) = &storage else { unreachable!() };
    let sessions = PgSessionStore::open(pg.clone()).await.unwrap();
    vec![
        memory.history("a", "notes", 10).await.unwrap().len(),
        TaskTable::open(&storage).await.unwrap().list("a").await.unwrap().len(),
        messages.reminders("a", true).await.unwrap().len(),
        messages.inbox_pending("b").await.unwrap().len(),
        sessions.history("h").await.unwrap().len(),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_rows_whose_commit_answer_is_lost_are_acknowledged_and_written_once() {
    let Some(url) = holdfast_testkit::postgres::fresh_database().await else { return };
    // Before: each answered an error (its caller would write it again: a second history entry, task, reminder,
    // message), though it stood.
    assert_eq!(add_one_of_each(&url, false).await, [true; 5], "memory edit, task, reminder, message, history entry");
    assert_eq!(rows_of_each(&url).await, [1; 5]);
    let storage = Storage::Postgres(PgStore::connect(&url).await.unwrap());
    let block = MemoryTable::open(&storage).await.unwrap().get("a", "notes").await.unwrap().unwrap();
    assert_eq!(block.value, "met Bob. ");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_rows_whose_commit_never_reached_the_server_are_errors_and_absent() {
    let Some(url) = holdfast_testkit::postgres::fresh_database().await else { return };
    assert_eq!(add_one_of_each(&url, true).await, [false; 5], "memory edit, task, reminder, message, history entry");
    assert_eq!(rows_of_each(&url).await, [0; 5]);
}

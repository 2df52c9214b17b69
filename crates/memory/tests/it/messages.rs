//! The message stores: one scenario on SQLite and PostgreSQL (directory, direct, group and channel messages, the
//! anti-loop windows, inboxes, the outbox, reminders), then what only a shared database can show — two instances
//! fire each reminder once, share one anti-loop window, and let one of them at a time read an agent's inbox — and
//! the one-time move of an instance's messages from its file.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::start_time;
use holdfast_core::{ErrorCode, HasErrorCode};
use holdfast_memory::{
    AgentHandle, AgentRuntime, Clock, Database, ManualClock, MemoryConfig, MemoryError, MessageStore, MessageTarget,
    MessagesAdopted, PgMessageStore, SendOrigin, SqliteMessageStore,
};
use std::sync::Arc;
use std::time::Duration;

/// A runtime whose messages live in `store`, on `clock`, with a 10 s anti-loop window.
async fn runtime(store: Arc<dyn MessageStore>, clock: &ManualClock) -> AgentRuntime {
    let config = MemoryConfig { agent_cooldown_secs: 10, ..MemoryConfig::default() };
    AgentRuntime::builder(Database::open_in_memory().unwrap())
        .config(config)
        .message_store(store)
        .clock(Arc::new(clock.clone()))
        .build()
        .await
        .unwrap()
}

async fn pg_store(url: &holdfast_core::config::DatabaseUrl) -> Arc<dyn MessageStore> {
    Arc::new(PgMessageStore::open(holdfast_store::PgStore::connect(url).await.unwrap()).await.unwrap())
}

async fn send(from: &AgentHandle, to: MessageTarget, text: &str) -> Result<Vec<String>, MemoryError> {
    Ok(from.messages.send(&to, text.to_owned(), None, SendOrigin::default()).await?.recipients)
}

/// What every store does alike.
async fn scenario(store: Arc<dyn MessageStore>) {
    let kind = store.kind();
    let clock = ManualClock::new(start_time());
    let rt = runtime(store, &clock).await;
    let (a, b, c) = (rt.agent("a").await.unwrap(), rt.agent("b").await.unwrap(), rt.agent("c").await.unwrap());
    assert_eq!(rt.router().agents().await.unwrap(), ["a", "b", "c"], "{kind}");

    // Direct, then the window: the same pair is refused, the reverse pair is not.
    assert_eq!(send(&a, MessageTarget::agent("b"), "hello").await.unwrap(), ["b"], "{kind}");
    let e = send(&a, MessageTarget::agent("b"), "again").await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::RateLimited, "{kind}: {e}");
    send(&b, MessageTarget::agent("a"), "hi back").await.unwrap();
    let unknown = send(&a, MessageTarget::agent("zed"), "x").await.unwrap_err();
    assert_eq!(unknown.code(), ErrorCode::TargetNotFound, "{kind}");
    let nul = send(&c, MessageTarget::agent("a"), "a\0b").await.unwrap_err();
    assert_eq!(nul.code(), ErrorCode::InvalidParams, "{kind}: {nul}");

    // A group skips the sender and whoever is inside the sender's window.
    rt.router().define_group("team", &["a".into(), "b".into(), "c".into()]).await.unwrap();
    assert_eq!(send(&a, MessageTarget::group("team"), "standup").await.unwrap(), ["c"], "{kind}: b is in a's window");
    assert!(send(&a, MessageTarget::group("nope"), "x").await.is_err(), "{kind}");

    // A channel reaches its subscribers (once b's window to a has ended); unsubscribing stops it.
    clock.advance(chrono::Duration::seconds(11));
    rt.router().define_channel("news", None).await.unwrap();
    rt.router().subscribe("news", &c.agent_id).await.unwrap();
    rt.router().subscribe("news", &a.agent_id).await.unwrap();
    assert_eq!(send(&b, MessageTarget::channel("news"), "extra").await.unwrap(), ["a", "c"], "{kind}");
    rt.router().unsubscribe("news", &a.agent_id).await.unwrap();
    assert!(rt.router().subscribe("missing", &a.agent_id).await.is_err(), "{kind}");

    // Inboxes: peek without taking, ack, take.
    let inbox = c.inbox();
    let pending = inbox.pending().await.unwrap();
    assert_eq!(pending.iter().map(|m| m.content.as_str()).collect::<Vec<_>>(), ["standup", "extra"], "{kind}");
    assert_eq!(pending[0].via, "group:team", "{kind}");
    let first = inbox.peek().await.unwrap().unwrap();
    assert_eq!(inbox.peek().await.unwrap().unwrap().inbox_id, first.inbox_id, "{kind}: peek does not take");
    inbox.ack(first.inbox_id).await.unwrap();
    assert_eq!(inbox.try_recv().await.unwrap().unwrap().content, "extra", "{kind}");
    assert!(inbox.try_recv().await.unwrap().is_none(), "{kind}");

    // The window ends; the user's outbox keeps what was sent to the user.
    clock.advance(chrono::Duration::seconds(11));
    send(&a, MessageTarget::agent("b"), "after the window").await.unwrap();
    send(&a, MessageTarget::user(), "for you").await.unwrap();
    assert_eq!(rt.router().outbox(&a.agent_id, 10).await.unwrap()[0].content, "for you", "{kind}");

    // Reminders: scheduled, listed, cancelled, fired once, counted against the cap.
    let due = clock.now() + chrono::Duration::seconds(60);
    let kept = a.reminders.schedule("at", due, "water the plants".into(), None, 0).await.unwrap();
    let dropped = a.reminders.schedule("at", due, "never".into(), None, 0).await.unwrap();
    assert!(a.reminders.cancel(&dropped.id).await.unwrap(), "{kind}");
    assert_eq!(a.reminders.list(false).await.unwrap(), std::slice::from_ref(&kept), "{kind}");
    assert!(a.reminders.schedule("at", due, "x\0".into(), None, 0).await.is_err(), "{kind}: NUL");
    let far = chrono::DateTime::parse_from_rfc3339("9999-12-31T23:59:59-23:59").unwrap().to_utc();
    let e = a.reminders.schedule("at", far, "one day".into(), None, 0).await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidParams, "{kind}: {e}");
    let bad_user = MessageTarget { kind: holdfast_memory::TargetType::User, id: Some("x\0".into()) };
    let e = a.reminders.schedule("at", due, "hi".into(), Some(bad_user), 0).await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidParams, "{kind}: {e}");
    let scheduler = rt.scheduler();
    assert!(scheduler.fire_due().await.unwrap().is_empty(), "{kind}: not due yet");
    assert_eq!(scheduler.next_due().await.unwrap(), Some(kept.due_at), "{kind}");
    clock.advance(chrono::Duration::seconds(61));
    assert_eq!(scheduler.fire_due().await.unwrap().len(), 1, "{kind}");
    assert!(scheduler.fire_due().await.unwrap().is_empty(), "{kind}: once");
    let got = a.inbox().drain().await.unwrap();
    let reminder = got.iter().find(|m| m.via == "reminder").unwrap();
    assert_eq!(reminder.content, "water the plants", "{kind}");
    assert!(a.reminders.list(true).await.unwrap()[0].fired_at.is_some(), "{kind}");

    // Reminders to another agent pass the pair's window when they fire: of two due at once, the second waits, not
    // dropped, and the scheduler sleeps until the window ends instead of passing it again and again.
    clock.advance(chrono::Duration::seconds(11));
    b.inbox().drain().await.unwrap();
    let now = clock.now();
    let to_b = Some(MessageTarget::agent("b"));
    let one = a.reminders.schedule("at", now, "one".into(), to_b.clone(), 0).await.unwrap();
    let two = a.reminders.schedule("at", now, "two".into(), to_b, 0).await.unwrap();
    let fired: Vec<String> = scheduler.fire_due().await.unwrap().into_iter().map(|r| r.id).collect();
    assert_eq!(fired, [one.id], "{kind}");
    let reminded = |got: Vec<holdfast_memory::InboxMessage>| {
        got.into_iter().filter(|m| m.via == "reminder").map(|m| m.content).collect::<Vec<_>>()
    };
    assert_eq!(reminded(b.inbox().drain().await.unwrap()), ["one"], "{kind}");
    let next = scheduler.next_due().await.unwrap().unwrap();
    assert!(next >= now + chrono::Duration::seconds(10), "{kind}: the next wake is the window's end, not {next}");
    assert!(scheduler.fire_due().await.unwrap().is_empty(), "{kind}: still inside the window");
    let pending: Vec<String> = a.reminders.list(false).await.unwrap().into_iter().map(|r| r.id).collect();
    assert!(pending.contains(&two.id), "{kind}: deferred, still pending: {pending:?}");
    clock.advance(chrono::Duration::seconds(11));
    let fired: Vec<String> = scheduler.fire_due().await.unwrap().into_iter().map(|r| r.id).collect();
    assert_eq!(fired, [two.id], "{kind}");
    assert_eq!(reminded(b.inbox().drain().await.unwrap()), ["two"], "{kind}");

    // A scheduler that serves some agents fires only theirs, and does not wake for the others'.
    c.reminders.schedule("at", clock.now(), "c's own".into(), None, 0).await.unwrap();
    let only_a = rt.scheduler().only(vec!["a".into()]);
    assert!(only_a.fire_due().await.unwrap().is_empty(), "{kind}");
    assert_eq!(only_a.next_due().await.unwrap(), None, "{kind}");
    assert_eq!(rt.reminders_of_other_agents(&["a".into(), "b".into()]).await.unwrap(), 1, "{kind}");
    assert_eq!(rt.scheduler().fire_due().await.unwrap().len(), 1, "{kind}: every agent's");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_message_store_behaves_alike() {
    let dir = tempfile::tempdir().unwrap();
    scenario(Arc::new(SqliteMessageStore::new(Database::open(dir.path().join("holdfast.db")).unwrap()))).await;
    if let Some(url) = holdfast_testkit::postgres::fresh_database().await {
        scenario(pg_store(&url).await).await;
    }
}

/// A window longer than any time the store can write is a century, not a panic or no window at all.
#[tokio::test]
async fn an_enormous_anti_loop_window_still_holds() {
    let clock = ManualClock::new(start_time());
    let config = MemoryConfig { agent_cooldown_secs: u64::MAX, ..MemoryConfig::default() };
    let rt = AgentRuntime::builder(Database::open_in_memory().unwrap())
        .config(config)
        .clock(Arc::new(clock.clone()))
        .build()
        .await
        .unwrap();
    let (a, _b) = (rt.agent("a").await.unwrap(), rt.agent("b").await.unwrap());
    send(&a, MessageTarget::agent("b"), "first").await.unwrap();
    clock.advance(chrono::Duration::days(365 * 50));
    let e = send(&a, MessageTarget::agent("b"), "fifty years later").await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::RateLimited, "{e}");
}

/// Two instances on one database, with one clock.
async fn two_instances() -> Option<(AgentRuntime, AgentRuntime, ManualClock, holdfast_core::config::DatabaseUrl)> {
    let url = holdfast_testkit::postgres::fresh_database().await?;
    let clock = ManualClock::new(start_time());
    let a = runtime(pg_store(&url).await, &clock).await;
    let b = runtime(pg_store(&url).await, &clock).await;
    Some((a, b, clock, url))
}

/// Thirty reminders fall due; both instances' schedulers run three passes each, all at once. Each reminder is
/// delivered exactly once: thirty messages in the inbox, thirty firings between the two, none twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_instances_fire_each_reminder_once() {
    let Some((one, two, clock, _)) = two_instances().await else { return };
    let alice = one.agent("alice").await.unwrap();
    two.agent("alice").await.unwrap();
    let due = clock.now() + chrono::Duration::seconds(5);
    for i in 0..30 {
        alice.reminders.schedule("at", due, format!("reminder {i}"), None, 0).await.unwrap();
    }
    clock.advance(chrono::Duration::seconds(6));
    let passes: Vec<_> = (0..6)
        .map(|i| {
            let scheduler = if i % 2 == 0 { one.scheduler() } else { two.scheduler() };
            tokio::spawn(async move { scheduler.fire_due().await.unwrap().len() })
        })
        .collect();
    let mut fired = 0;
    for p in passes {
        fired += p.await.unwrap();
    }
    assert_eq!(fired, 30, "each reminder fired by exactly one pass");
    let inbox = alice.inbox().pending().await.unwrap();
    let mut contents: Vec<&str> = inbox.iter().map(|m| m.content.as_str()).collect();
    contents.sort_unstable();
    contents.dedup();
    assert_eq!((inbox.len(), contents.len()), (30, 30), "one message per reminder");
    assert!(alice.reminders.list(false).await.unwrap().is_empty());
}

/// The anti-loop window is one across instances: an agent served by two instances sending to the same agent from
/// both at once gets one message through per window.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn instances_share_one_anti_loop_window() {
    let Some((one, two, clock, _)) = two_instances().await else { return };
    let (alice_one, alice_two) = (one.agent("alice").await.unwrap(), two.agent("alice").await.unwrap());
    let bob = one.agent("bob").await.unwrap();
    let sends: Vec<_> = (0..10)
        .map(|i| {
            let alice = if i % 2 == 0 { alice_one.clone() } else { alice_two.clone() };
            tokio::spawn(async move { send(&alice, MessageTarget::agent("bob"), &format!("try {i}")).await })
        })
        .collect();
    let mut passed = 0;
    for s in sends {
        match s.await.unwrap() {
            Ok(_) => passed += 1,
            Err(e) => assert_eq!(e.code(), ErrorCode::RateLimited, "{e}"),
        }
    }
    assert_eq!(passed, 1);
    assert_eq!(bob.inbox().pending().await.unwrap().len(), 1);
    clock.advance(chrono::Duration::seconds(10));
    send(&alice_two, MessageTarget::agent("bob"), "next window").await.unwrap();
}

/// One instance at a time reads an agent's inbox; it sees what the other instance stores (within the poll), and
/// when its database connection dies the other takes the inbox over.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_instance_reads_an_agents_inbox_and_the_other_takes_over() {
    let Some((one, two, _, url)) = two_instances().await else { return };
    let (bob_one, bob_two) = (one.agent("bob").await.unwrap(), two.agent("bob").await.unwrap());
    let alice = two.agent("alice").await.unwrap();
    let mut hold = bob_one.inbox().hold(Duration::from_secs(5)).await.unwrap().expect("free at first");
    assert!(bob_two.inbox().hold(Duration::from_millis(300)).await.unwrap().is_none(), "held by the other");

    send(&alice, MessageTarget::agent("bob"), "from the other instance").await.unwrap();
    let seen = tokio::time::timeout(Duration::from_secs(10), bob_one.inbox().next()).await.expect("seen in time");
    assert_eq!(seen.unwrap().content, "from the other instance");

    // The holder's connection dies (a crashed process, a network cut): its hold is gone, the other takes it.
    let killed = holdfast_testkit::postgres::kill_advisory_lock_holders(&url).await;
    assert_eq!(killed, 1);
    let held = hold.still_held().await;
    assert!(!held, "a hold whose connection died is not held");
    assert!(bob_two.inbox().hold(Duration::from_secs(5)).await.unwrap().is_some(), "taken over");
}

/// Switching an instance from its SQLite file to PostgreSQL loses no message and no reminder: they move once, with
/// their ids, and new ones follow them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_kept_in_sqlite_move_to_postgres_once_with_their_ids() {
    let Some(url) = holdfast_testkit::postgres::fresh_database().await else { return };
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path().join("holdfast.db")).unwrap();
    let clock = ManualClock::new(start_time());
    let file = runtime(Arc::new(SqliteMessageStore::new(db.clone())), &clock).await;
    let (a, b) = (file.agent("a").await.unwrap(), file.agent("b").await.unwrap());
    send(&a, MessageTarget::agent("b"), "waiting for b").await.unwrap();
    send(&a, MessageTarget::user(), "told the user").await.unwrap();
    let due = clock.now() + chrono::Duration::seconds(30);
    let reminder = b.reminders.schedule("at", due, "later".into(), None, 0).await.unwrap();

    // An older build let a NUL into a message; PostgreSQL's text refuses it, and the move must not stop there.
    db.sqlite()
        .write(|c| {
            c.execute(
                "INSERT INTO messages_log (sender, target_type, target_id, content, created_at)
                 VALUES ('a', 'agent', 'b', ?1, '2026-03-01T08:00:00.000Z')",
                ["x\0y"],
            )
        })
        .await
        .unwrap()
        .unwrap();

    let pg = PgMessageStore::open(holdfast_store::PgStore::connect(&url).await.unwrap()).await.unwrap();
    assert_eq!(pg.adopt(&db).await.unwrap(), MessagesAdopted::Copied { rows: 4 }, "three messages and a reminder");
    assert_eq!(pg.adopt(&db).await.unwrap(), MessagesAdopted::AlreadyShared { waiting: 2 }, "once");
    let empty = Database::open(dir.path().join("empty.db")).unwrap();
    assert_eq!(pg.adopt(&empty).await.unwrap(), MessagesAdopted::Nothing);
    let shared = runtime(Arc::new(pg), &clock).await;
    let (a, b) = (shared.agent("a").await.unwrap(), shared.agent("b").await.unwrap());
    let waiting = b.inbox().pending().await.unwrap();
    assert_eq!(waiting.len(), 1);
    assert_eq!((waiting[0].message_id.as_str(), waiting[0].content.as_str()), ("msg_1", "waiting for b"));
    assert_eq!(shared.router().outbox(&a.agent_id, 5).await.unwrap()[0].content, "told the user");
    assert_eq!(b.reminders.list(false).await.unwrap(), [reminder]);
    let e = send(&a, MessageTarget::agent("b"), "too soon").await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::RateLimited, "the window moved too");
    let next = send(&a, MessageTarget::user(), "new").await;
    assert!(next.is_ok());
    let latest = shared.router().outbox(&a.agent_id, 1).await.unwrap();
    assert_eq!(latest[0].message_id, "msg_4", "new ids follow the moved ones");
}

/// A reminder row this build cannot read (written from outside holdfast) is passed by: the others still fire.
#[tokio::test]
async fn an_unreadable_reminder_does_not_stop_the_others() {
    let db = Database::open_in_memory().unwrap();
    let clock = ManualClock::new(start_time());
    let rt = runtime(Arc::new(SqliteMessageStore::new(db.clone())), &clock).await;
    let a = rt.agent("a").await.unwrap();
    db.sqlite()
        .write(|c| {
            c.execute(
                "INSERT INTO reminders_items (agent_id, due_at, message, target_type, created_at)
                 VALUES ('a', '2026-03-01T08:00:00.000Z', 'odd', 'carrier-pigeon', '2026-03-01T08:00:00.000Z')",
                [],
            )
        })
        .await
        .unwrap()
        .unwrap();
    a.reminders.schedule("at", clock.now(), "on time".into(), None, 0).await.unwrap();
    let fired = rt.scheduler().fire_due().await.unwrap();
    assert_eq!(fired.iter().map(|r| r.message.as_str()).collect::<Vec<_>>(), ["on time"]);
}

/// When the store fails while delivering a reminder (not its target), the reminder stays due and is delivered to
/// its target on a later pass; it is not diverted to its agent's own inbox as undeliverable.
#[tokio::test]
async fn a_store_failure_leaves_a_reminder_due_for_its_target() {
    let db = Database::open_in_memory().unwrap();
    let clock = ManualClock::new(start_time());
    let rt = runtime(Arc::new(SqliteMessageStore::new(db.clone())), &clock).await;
    let (a, b) = (rt.agent("a").await.unwrap(), rt.agent("b").await.unwrap());
    a.reminders.schedule("at", clock.now(), "for b".into(), Some(MessageTarget::agent("b")), 0).await.unwrap();
    let trouble = "CREATE TRIGGER trouble BEFORE INSERT ON messages_inbox WHEN NEW.agent_id = 'b'
                   BEGIN SELECT RAISE(ABORT, 'disk trouble'); END;";
    db.sqlite().write(move |c| c.execute_batch(trouble)).await.unwrap().unwrap();
    assert!(rt.scheduler().fire_due().await.unwrap().is_empty(), "not fired");
    assert!(a.inbox().pending().await.unwrap().is_empty(), "not diverted to a");
    assert_eq!(a.reminders.list(false).await.unwrap().len(), 1, "still due");

    db.sqlite().write(|c| c.execute_batch("DROP TRIGGER trouble;")).await.unwrap().unwrap();
    assert_eq!(rt.scheduler().fire_due().await.unwrap().len(), 1);
    assert_eq!(b.inbox().pending().await.unwrap()[0].content, "for b");
}

/// A message stored on one instance is announced to the other's inbox watch (`LISTEN/NOTIFY`), on commit, naming
/// the recipient; a store that only polls announces nothing to its watch.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_stored_on_one_instance_wakes_the_others_inbox_reader() {
    let Some(url) = holdfast_testkit::postgres::fresh_database().await else { return };
    let clock = ManualClock::new(start_time());
    let sender = runtime(pg_store(&url).await, &clock).await;
    let (tx, mut woken) = tokio::sync::mpsc::unbounded_channel();
    let wake: holdfast_memory::InboxWake = Arc::new(move |agent: Option<&str>| {
        let _ = tx.send(agent.map(str::to_owned));
    });
    let watching = pg_store(&url).await;
    watching.watch_inboxes(Arc::clone(&wake)).unwrap();
    let first = tokio::time::timeout(Duration::from_secs(30), woken.recv()).await.unwrap().unwrap();
    assert_eq!(first, None, "listening from now: every reader looks once");

    let (alice, _bob) = (sender.agent("alice").await.unwrap(), sender.agent("bob").await.unwrap());
    send(&alice, MessageTarget::agent("bob"), "are you there?").await.unwrap();
    let named = tokio::time::timeout(Duration::from_secs(30), woken.recv()).await.expect("no wake").unwrap();
    assert_eq!(named.as_deref(), Some("bob"));
    drop(wake);
}

/// The hold on an inbox says whether its previous holder may still be in a turn: not when the inbox was never held,
/// was let go cleanly, or was last held by the same instance; yes when another instance held it last and went away
/// without saying so (its connection closed under it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_inbox_let_go_cleanly_needs_no_takeover_wait() {
    let Some(url) = holdfast_testkit::postgres::fresh_database().await else { return };
    let (one, two) = (pg_store(&url).await, pg_store(&url).await);
    let hold = async |s: &Arc<dyn MessageStore>| s.hold_inbox("bob", Duration::from_secs(10)).await.unwrap().unwrap();
    let first = hold(&one).await;
    assert!(!first.previous_may_run(), "never held");
    first.release().await;
    let second = hold(&two).await;
    assert!(!second.previous_may_run(), "let go cleanly");
    drop(second); // gone without saying so
    let third = hold(&one).await;
    assert!(third.previous_may_run(), "another instance held it last and did not let go cleanly");
    drop(third);
    assert!(!hold(&one).await.previous_may_run(), "last held by this instance");
}

//! Tests of the session tables: every store alike (SQLite, and PostgreSQL when the test server is there), concurrent
//! saves, two instances on one database, the in-place upgrade of the release before's state, history.

use super::*;

/// A save that writes one part, `note`, holding `text`.
fn note(text: &str) -> StateDelta {
    StateDelta { parts: vec![("note".to_owned(), Some(text.to_owned()))], copy: 0, follows: false }
}

/// What a store holds after saves of `note` only: the revision and that part.
fn noted(revision: u64, text: &str) -> Option<StoredState> {
    Some(StoredState { revision, legacy: None, parts: [("note".to_owned(), text.to_owned())].into() })
}

async fn exercise(store: &dyn SessionStorage) {
    store.create("a", "http").await.unwrap();
    store.create("b", "mcp").await.unwrap();
    store.append("a", NewMessage::text(MessageRole::User, "first words")).await.unwrap();
    store.append("a", NewMessage::text(MessageRole::Assistant, "hi")).await.unwrap();
    store.add_usage("a", Usage { input_tokens: 10, output_tokens: 3, ..Usage::default() }).await.unwrap();
    let a = store.get("a").await.unwrap().unwrap();
    assert_eq!((a.title.as_deref(), a.message_count, a.input_tokens, a.output_tokens), (Some("first words"), 2, 10, 3));
    assert_eq!(store.history("a").await.unwrap().iter().map(|m| m.seq).collect::<Vec<_>>(), vec![1, 2]);
    assert_eq!(store.list(10).await.unwrap()[0].id, "a", "most recently active first");
    assert!(store.get("zzz").await.unwrap().is_none());
    assert!(store.append("zzz", NewMessage::text(MessageRole::User, "x")).await.is_err());
    let code = |r: Result<(), ToolError>| r.unwrap_err().code;
    assert_eq!(code(store.save_state("a", 2, note("two")).await), holdfast_core::ErrorCode::SessionConflict);
    store.save_state("a", 1, note("one")).await.unwrap();
    store.save_state("a", 2, note("two")).await.unwrap();
    // Another process that loaded revision 1 saves its own revision 2: refused, the first one stays.
    let other = store.save_state("a", 2, note("two, from elsewhere")).await;
    assert_eq!(code(other), holdfast_core::ErrorCode::SessionConflict);
    assert_eq!(store.load_state("a").await.unwrap(), noted(2, "two"));
    store.save_state("a", 3, note("three")).await.unwrap();
    assert_eq!(store.load_state("a").await.unwrap(), noted(3, "three"));
    // Saves handed over one after another before any is answered (one session's calls, pipelined) are applied in
    // that order, each whether or not its answer is awaited (the odd ones' callers went away).
    let part = |r: u64| StateDelta { parts: vec![(format!("p{r:02}"), Some(r.to_string()))], ..note("") };
    let answers: Vec<_> = (4..=40).map(|r| store.save_state("a", r, part(r))).collect();
    for (answer, r) in answers.into_iter().zip(4u64..) {
        if r % 2 == 0 {
            answer.await.unwrap_or_else(|e| panic!("revision {r}: {e:?}"));
        }
    }
    let held = store.load_state("a").await.unwrap().unwrap();
    assert_eq!(held.revision, 40);
    assert_eq!(held.parts.len(), 38, "the note and p04…p40: {:?}", held.parts.keys());
    assert_eq!(held.parts.get("p33").map(String::as_str), Some("33"));
    // Saves whose revisions do not follow the stored one (40) are refused, nothing written.
    let late: Vec<_> = [42, 43].into_iter().map(|r| store.save_state("a", r, part(r))).collect();
    for answer in late {
        assert_eq!(code(answer.await), holdfast_core::ErrorCode::SessionConflict);
    }
    assert_eq!(store.load_state("a").await.unwrap().unwrap().revision, 40);
    // Two copies pipeline revisions 41 and 42, queued as 7's 41, 8's 41, 8's 42, 7's 42. 8's 42 would pass the
    // revision check on top of 7's 41: it is refused, because it is not on a write of its own copy.
    let by = |copy: u64, r: u64| StateDelta { copy, follows: r == 42, ..note(&format!("{r} by {copy}")) };
    let answers = [(7, 41), (8, 41), (8, 42), (7, 42)].map(|(copy, r)| store.save_state("a", r, by(copy, r)));
    let mut outcomes = Vec::new();
    for answer in answers {
        outcomes.push(answer.await.is_ok());
    }
    assert_eq!(outcomes, [true, false, false, true], "7's run written, 8's refused from its first refusal on");
    let held = store.load_state("a").await.unwrap().unwrap();
    assert_eq!((held.revision, held.parts.get("note").map(String::as_str)), (42, Some("42 by 7")));
    assert_eq!(store.load_state("b").await.unwrap(), None);
    store.link_merge("mcp:x", serde_json::json!({"init": 1})).await.unwrap();
    store.link_merge("mcp:x", serde_json::json!({"session_id": "a"})).await.unwrap();
    let link = store.link_get("mcp:x").await.unwrap();
    assert_eq!(link, Some(serde_json::json!({"init": 1, "session_id": "a"})));
    assert!(store.link_merge("mcp:x", serde_json::json!([1])).await.is_err());
    store.link_delete("mcp:x").await.unwrap();
    assert_eq!(store.link_get("mcp:x").await.unwrap(), None);
}

#[tokio::test]
async fn every_store_behaves_alike() {
    exercise(&SqliteSessionStore::in_memory().unwrap()).await;
    exercise(&InMemorySessionStore::default()).await;
    if let Some(url) = holdfast_testkit::postgres::fresh_database().await {
        let pg = crate::PgStore::connect(&url).await.unwrap();
        exercise(&PgSessionStore::open(pg).await.unwrap()).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_of_one_instance_is_continued_on_another() {
    let Some(url) = holdfast_testkit::postgres::fresh_database().await else { return };
    let a = PgSessionStore::open(crate::PgStore::connect(&url).await.unwrap()).await.unwrap();
    let b = PgSessionStore::open(crate::PgStore::connect(&url).await.unwrap()).await.unwrap();
    a.create("s", "http").await.unwrap();
    a.append("s", NewMessage::text(MessageRole::User, "hello from a")).await.unwrap();
    a.save_state("s", 1, note("one")).await.unwrap();
    // b sees a's session and continues it; 20 concurrent appends from both keep one gapless sequence.
    let tasks: Vec<_> = (0..20)
        .map(|i| {
            let store = if i % 2 == 0 { a.clone() } else { b.clone() };
            tokio::spawn(async move { store.append("s", NewMessage::text(MessageRole::Assistant, "x")).await })
        })
        .collect();
    for t in tasks {
        t.await.unwrap().unwrap();
    }
    let seqs: Vec<i64> = b.history("s").await.unwrap().iter().map(|m| m.seq).collect();
    assert_eq!(seqs, (1..=21).collect::<Vec<_>>());
    assert_eq!(b.load_state("s").await.unwrap(), noted(1, "one"));
    // Both loaded revision 1: the first save of revision 2 wins, the other is a conflict.
    b.save_state("s", 2, note("two from b")).await.unwrap();
    let lost = a.save_state("s", 2, note("two from a")).await.unwrap_err();
    assert_eq!(lost.code, holdfast_core::ErrorCode::SessionConflict);
    assert_eq!(a.load_state("s").await.unwrap(), noted(2, "two from b"));
    // Both pipeline revisions 3 to 12 at once: one instance's run is written whole, the other's refused whole
    // (each instance's writer merges its run into one compare-and-set).
    let run = |store: &PgSessionStore, by: &'static str| -> Vec<_> {
        let copy = if by == "a" { 101 } else { 102 };
        let delta = |r: u64| StateDelta { copy, follows: r > 3, ..note(&format!("{r} from {by}")) };
        (3..=12).map(|r| store.save_state("s", r, delta(r))).collect()
    };
    let (from_a, from_b) = (run(&a, "a"), run(&b, "b"));
    let mut won = Vec::new();
    for (answers, by) in [(from_a, "a"), (from_b, "b")] {
        let mut outcomes = Vec::new();
        for answer in answers {
            outcomes.push(answer.await.is_ok());
        }
        assert!(outcomes.iter().all(|&o| o == outcomes[0]), "{by}'s run is decided whole: {outcomes:?}");
        if outcomes[0] {
            won.push(by);
        }
    }
    assert_eq!(won.len(), 1, "exactly one run wins: {won:?}");
    assert_eq!(a.load_state("s").await.unwrap(), noted(12, &format!("12 from {}", won[0])));
}

/// Saves batched together are each decided on their own: of two saves of one revision exactly one wins, the
/// loser's conflict does not fail the others of its batch, and every acknowledged save is there on reopening.
async fn concurrent_saves(store: Arc<dyn SessionStorage>, reopen: impl AsyncFnOnce() -> Arc<dyn SessionStorage>) {
    const SESSIONS: usize = 40;
    for i in 0..SESSIONS {
        store.create(&format!("s{i}"), "http").await.unwrap();
    }
    let race: Vec<_> = (0..SESSIONS * 2)
        .map(|n| {
            let store = Arc::clone(&store);
            tokio::spawn(async move { store.save_state(&format!("s{}", n / 2), 1, note(&format!("one by {n}"))).await })
        })
        .collect();
    let mut won = 0;
    for task in race {
        match task.await.unwrap() {
            Ok(()) => won += 1,
            Err(e) => assert_eq!(e.code, holdfast_core::ErrorCode::SessionConflict),
        }
    }
    assert_eq!(won, SESSIONS, "one save of revision 1 per session wins");
    let sessions: Vec<_> = (0..SESSIONS)
        .map(|i| {
            let store = Arc::clone(&store);
            tokio::spawn(async move {
                for rev in 2..=6 {
                    store.save_state(&format!("s{i}"), rev, note(&format!("s{i} at {rev}"))).await.unwrap();
                }
            })
        })
        .collect();
    for task in sessions {
        task.await.unwrap();
    }
    drop(store);
    let again = reopen().await;
    for i in 0..SESSIONS {
        assert_eq!(again.load_state(&format!("s{i}")).await.unwrap(), noted(6, &format!("s{i} at 6")));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_saves_are_each_decided_and_kept() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("holdfast.db");
    let sqlite: Arc<dyn SessionStorage> = Arc::new(SqliteSessionStore::open(&path).unwrap());
    concurrent_saves(sqlite, async || Arc::new(SqliteSessionStore::open(&path).unwrap()) as Arc<dyn SessionStorage>)
        .await;
    if let Some(url) = holdfast_testkit::postgres::fresh_database().await {
        let pg = PgSessionStore::open(crate::PgStore::connect(&url).await.unwrap()).await.unwrap();
        let reopen = async || {
            let pg = crate::PgStore::connect(&url).await.unwrap();
            Arc::new(PgSessionStore::open(pg).await.unwrap()) as Arc<dyn SessionStorage>
        };
        concurrent_saves(Arc::new(pg), reopen).await;
    }
}

/// Two processes on one SQLite file append to sessions and merge links while the other commits: every write
/// lands. (A read-then-write transaction begun deferred failed at once with `database is locked` when the other
/// connection committed between its read and its write.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writers_on_two_connections_to_one_file_never_see_database_is_locked() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("holdfast.db");
    let (a, b) = (SqliteSessionStore::open(&path).unwrap(), SqliteSessionStore::open(&path).unwrap());
    for i in 0..8 {
        a.create(&format!("s{i}"), "http").await.unwrap();
    }
    let mut tasks = Vec::new();
    for i in 0..8 {
        for (n, store) in [a.clone(), b.clone()].into_iter().enumerate() {
            tasks.push(tokio::spawn(async move {
                for k in 0..25 {
                    let text = format!("{n}:{k}");
                    store.append(&format!("s{i}"), NewMessage::text(MessageRole::User, text)).await?;
                    store.link_merge(&format!("l{i}"), serde_json::json!({ format!("w{n}"): k })).await?;
                }
                Ok::<_, ToolError>(())
            }));
        }
    }
    for t in tasks {
        t.await.unwrap().unwrap();
    }
    for i in 0..8 {
        assert_eq!(a.history(&format!("s{i}")).await.unwrap().len(), 50);
        let link = b.link_get(&format!("l{i}")).await.unwrap().unwrap();
        assert_eq!((link["w0"].clone(), link["w1"].clone()), (serde_json::json!(24), serde_json::json!(24)));
    }
}

/// Two instances save the same sessions at once, their batches in opposite orders: for every session and
/// revision exactly one save wins and the other is a conflict — never a dead-lock error, never both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_instances_saving_the_same_sessions_never_fail_each_other() {
    let Some(url) = holdfast_testkit::postgres::fresh_database().await else { return };
    let a = PgSessionStore::open(crate::PgStore::connect(&url).await.unwrap()).await.unwrap();
    let b = PgSessionStore::open(crate::PgStore::connect(&url).await.unwrap()).await.unwrap();
    const SESSIONS: usize = 24;
    for i in 0..SESSIONS {
        a.create(&format!("s{i:02}"), "http").await.unwrap();
    }
    for rev in 1..=8u64 {
        let mut tasks = Vec::new();
        for i in 0..SESSIONS {
            for (store, id) in [(a.clone(), i), (b.clone(), SESSIONS - 1 - i)] {
                let name = if id == i { "a" } else { "b" };
                tasks.push(tokio::spawn(async move {
                    let r = store.save_state(&format!("s{id:02}"), rev, note(&format!("{rev} by {name}"))).await;
                    (id, r)
                }));
            }
        }
        let mut wins = vec![0; SESSIONS];
        for t in tasks {
            match t.await.unwrap() {
                (id, Ok(())) => wins[id] += 1,
                (_, Err(e)) => assert_eq!(e.code, holdfast_core::ErrorCode::SessionConflict, "{e}"),
            }
        }
        assert_eq!(wins, vec![1; SESSIONS], "revision {rev}: one winner per session");
    }
}

#[tokio::test]
async fn parts_are_written_and_removed_and_a_whole_state_of_the_release_before_is_upgraded_in_place() {
    use holdfast_core::config::CoreConfig;
    use holdfast_core::{CoreServices, Origin, RegisterWrite, SessionState};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("holdfast.db");
    // The file as the release before parts leaves it: sessions schema v1, the state one JSON text.
    let old = CoreServices::new(CoreConfig::default()).unwrap().new_session("s1");
    old.registers.set(RegisterWrite::new("note", serde_json::json!("kept"), Origin::User, "register_set")).unwrap();
    old.registers.set(RegisterWrite::new("gone", serde_json::json!("x"), Origin::User, "register_set")).unwrap();
    old.context_bank.scan_input("send 5 USDC");
    let whole = old.state().to_json().unwrap();
    {
        let mut conn = crate::sqlite::open_file(&path).unwrap();
        let v1 = crate::Component { name: "sessions", migrations: &crate::schema::SESSIONS.migrations[..1] };
        crate::migrate::sqlite(&mut conn, &v1).unwrap();
        let at = "2026-11-25T00:00:00Z";
        conn.execute(
            "INSERT INTO sessions (id, kind, created_at, updated_at) VALUES ('s1', 'http', ?1, ?1)",
            params![at],
        )
        .unwrap();
        conn.execute(
            "INSERT INTO session_state (session_id, revision, state, saved_at) VALUES ('s1', 4, ?1, ?2)",
            params![whole, at],
        )
        .unwrap();
    }
    let store = Arc::new(SqliteSessionStore::open(&path).unwrap());
    let stored = store.load_state("s1").await.unwrap().unwrap();
    assert_eq!((stored.revision, stored.legacy.as_deref(), stored.parts.len()), (4, Some(whole.as_str()), 0));
    let services = CoreServices::new(CoreConfig::default()).unwrap().with_state_store(store.clone());
    let ctx = services.restore_stored_on("s1", &stored, None).unwrap();
    assert_eq!(ctx.registers.get("note").unwrap().value, "kept");
    assert!(ctx.context_bank.has_amount("5", "USDC"));
    // The first save writes every part and drops the whole state; a removal removes its part.
    ctx.registers.set(RegisterWrite::new("other", serde_json::json!("new"), Origin::User, "register_set")).unwrap();
    ctx.registers.remove("gone");
    ctx.persist().await.unwrap();
    let after = store.load_state("s1").await.unwrap().unwrap();
    assert_eq!((after.revision, after.legacy.as_deref()), (5, None));
    let names: Vec<&str> = after.parts.keys().map(String::as_str).collect();
    assert_eq!(names, ["bank", "confirmations", "notes", "r:note", "r:other"]);
    let (state, legacy) = SessionState::from_stored(&after).unwrap();
    assert!(!legacy);
    assert_eq!(
        (state.registers["note"].value.as_str(), state.registers["other"].value.as_str()),
        (Some("kept"), Some("new"))
    );
    // Reopened on the same file, the session reads the same.
    drop(ctx);
    let again = SqliteSessionStore::open(&path).unwrap().load_state("s1").await.unwrap().unwrap();
    let back = services.restore_stored_on("s1", &again, None).unwrap();
    assert!(back.context_bank.has_amount("5", "USDC") && back.registers.get("gone").is_none());
}

#[tokio::test]
async fn history_survives_reopening() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("holdfast.db");
    {
        let store = SqliteSessionStore::open(&path).unwrap();
        store.create("s1", "http").await.unwrap();
        store.append("s1", NewMessage::text(MessageRole::User, "swap 0.001 ETH for USDC")).await.unwrap();
        let call = ToolCallRecord { id: "c1".into(), name: "token_lookup".into(), arguments: serde_json::json!({}) };
        let msg = NewMessage { tool_calls: vec![call], ..NewMessage::text(MessageRole::Assistant, "") };
        store.append("s1", msg).await.unwrap();
    }
    let store = SqliteSessionStore::open(&path).unwrap();
    let info = store.get("s1").await.unwrap().unwrap();
    assert_eq!((info.title.as_deref(), info.message_count), (Some("swap 0.001 ETH for USDC"), 2));
    let history = store.history("s1").await.unwrap();
    assert_eq!(history[1].tool_calls[0].name, "token_lookup");
    assert_eq!(store.list(10).await.unwrap().len(), 1);
}

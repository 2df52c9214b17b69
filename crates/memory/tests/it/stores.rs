//! One memory-store conformance suite, run on every store: the SQLite file (the embedded default), PostgreSQL (when
//! `HOLDFAST_TEST_DATABASE_URL` names a server; `scripts/test.sh` starts one and requires it) and, for what does not
//! depend on a text index, the in-memory store. Then what only a shared database can show: two instances editing one
//! agent's memory lose no edit.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use holdfast_memory::search::query::HitSource;
use holdfast_memory::{Adopted, AgentId, EditOp, Memory, MemoryStore, PgMemoryStore, SqliteMemoryStore};
use holdfast_memory::{BlockSpec, InMemoryStore};
use std::sync::Arc;

fn memory(store: &Arc<dyn MemoryStore>, agent: &str) -> Memory {
    Memory::new(AgentId::new(agent).unwrap(), Arc::clone(store))
}

/// What every store does alike.
async fn basics(store: Arc<dyn MemoryStore>) {
    let kind = store.kind();
    let alice = memory(&store, "alice");
    let bob = memory(&store, "bob");
    let created = alice.update("human", "Name: Alice".into(), Some("who".into()), "test").await.unwrap();
    assert!(created.created, "{kind}");
    alice.append("human", "Likes: tea".into(), "test").await.unwrap();
    alice.replace("human", "tea".into(), "green tea".into(), "test").await.unwrap();
    let block = alice.get("human").await.unwrap().unwrap();
    assert_eq!(block.value, "Name: Alice\nLikes: green tea", "{kind}");
    assert_eq!(block.description.as_deref(), Some("who"), "{kind}");
    assert!(bob.get("human").await.unwrap().is_none(), "{kind}: agents do not see each other's blocks");

    let history = alice.history("human", 10).await.unwrap();
    let ops: Vec<EditOp> = history.iter().map(|e| e.op).collect();
    assert_eq!(ops, vec![EditOp::Replace, EditOp::Append, EditOp::Create], "{kind}: newest first");
    assert_eq!(history[0].old.as_deref(), Some("Name: Alice\nLikes: tea"), "{kind}");
    assert_eq!(alice.history("human", 1).await.unwrap().len(), 1, "{kind}: the limit holds");

    alice.put_block(BlockSpec::new("persona", "I am a careful assistant.")).await.unwrap();
    let labels: Vec<String> = alice.blocks().await.unwrap().into_iter().map(|b| b.label).collect();
    assert_eq!(labels, vec!["human".to_owned(), "persona".to_owned()], "{kind}: ordered by label");

    // A NUL character is refused the same way by every store, and nothing is written.
    let nul =
        holdfast_core::ToolError::from(alice.update("human", "bad\0value".into(), None, "test").await.unwrap_err());
    assert_eq!(nul.code, holdfast_core::ErrorCode::InvalidParams, "{kind}");
    assert!(nul.message.starts_with("`value`"), "{kind}: {}", nul.message);
    let nul = holdfast_core::ToolError::from(alice.append("human", "x\0".into(), "test").await.unwrap_err());
    assert!(nul.message.starts_with("`content`"), "{kind}: {}", nul.message);
    assert_eq!(alice.get("human").await.unwrap().unwrap().value, "Name: Alice\nLikes: green tea", "{kind}");

    // A failed edit (no match) writes nothing, not even history.
    assert!(alice.replace("human", "coffee".into(), "x".into(), "test").await.is_err());
    assert_eq!(alice.history("human", 10).await.unwrap().len(), 3, "{kind}");

    assert!(alice.delete_block("persona").await.unwrap(), "{kind}");
    assert!(!alice.delete_block("persona").await.unwrap(), "{kind}: gone");
    assert!(alice.get("persona").await.unwrap().is_none(), "{kind}");

    // 16 concurrent appends to one block: none is lost.
    alice.put_block(BlockSpec::new("log", "start")).await.unwrap();
    let tasks: Vec<_> = (0..16)
        .map(|i| {
            let m = memory(&store, "alice");
            tokio::spawn(async move { m.append("log", format!("entry {i}"), "test").await.unwrap() })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    let log = alice.get("log").await.unwrap().unwrap().value;
    for i in 0..16 {
        assert!(log.lines().any(|l| l == format!("entry {i}")), "{kind}: entry {i} lost from {log:?}");
    }
}

/// What a store with a text index does: stemming, ranking, snippets, hits in replaced values.
async fn search(store: Arc<dyn MemoryStore>) {
    let kind = store.kind();
    let m = memory(&store, "searcher");
    m.update("trips", "Alice is travelling to Lisbon in May, then Porto.".into(), None, "test").await.unwrap();
    m.update("wallet", "Main wallet holds USDC and a little ETH for gas.".into(), None, "test").await.unwrap();
    m.update("old_plan", "Planned to swap everything into DAI.".into(), None, "test").await.unwrap();
    m.update("old_plan", "Now keeping stablecoins as they are.".into(), None, "test").await.unwrap();
    let other = memory(&store, "someone_else");
    other.update("trips", "Travelling to Lisbon too.".into(), None, "test").await.unwrap();

    let found = m.search("travel lisbon", None).await.unwrap();
    let labels: Vec<&str> = found.hits.iter().map(|h| h.label.as_str()).collect();
    assert_eq!(labels, vec!["trips"], "{kind}: stemmed (travel ~ travelling), this agent's blocks only");
    let hit = &found.hits[0];
    assert_eq!(hit.source, HitSource::Value, "{kind}");
    assert!(hit.snippet.contains("[Lisbon]"), "{kind}: the match is marked: {:?}", hit.snippet);
    assert!(hit.score > 0.0, "{kind}");

    // A word only in a replaced value is found in the history.
    let found = m.search("dai", None).await.unwrap();
    assert_eq!(found.hits.len(), 1, "{kind}: {:?}", found.hits);
    assert_eq!((found.hits[0].label.as_str(), found.hits[0].source), ("old_plan", HitSource::History), "{kind}");
    assert!(found.hits[0].snippet.contains("[DAI]"), "{kind}: {:?}", found.hits[0].snippet);

    // Punctuation separates words, as in FTS5: an ENS name is found by its parts and whole; no stop word is dropped.
    m.update("friends", "Send to vitalik.eth when asked.".into(), None, "test").await.unwrap();
    for query in ["vitalik", "vitalik.eth", "eth"] {
        let labels: Vec<String> = m.search(query, None).await.unwrap().hits.into_iter().map(|h| h.label).collect();
        assert!(labels.contains(&"friends".to_owned()), "{kind}: {query:?} found {labels:?}");
    }
    let labels: Vec<String> = m.search("to", None).await.unwrap().hits.into_iter().map(|h| h.label).collect();
    assert!(labels.contains(&"trips".to_owned()) && labels.contains(&"friends".to_owned()), "{kind}: {labels:?}");
    m.delete_block("friends").await.unwrap();

    // Any term matches; more matching terms rank first.
    let found = m.search("usdc porto", None).await.unwrap();
    let labels: Vec<&str> = found.hits.iter().map(|h| h.label.as_str()).collect();
    assert_eq!(labels.len(), 2, "{kind}: {labels:?}");
    assert!(m.search("nothing-here", None).await.unwrap().hits.is_empty(), "{kind}");
    // Query syntax of either engine is only text.
    for hostile in ["\"a\" OR", "x & !y | z:*", "'; DROP TABLE memory_blocks; --", "NEAR(a b)"] {
        m.search(hostile, None).await.unwrap();
    }
    assert!(m.get("wallet").await.unwrap().is_some(), "{kind}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_store_behaves_alike() {
    let dir = tempfile::tempdir().unwrap();
    let sqlite: Arc<dyn MemoryStore> = Arc::new(SqliteMemoryStore::open(dir.path().join("holdfast.db")).unwrap());
    basics(Arc::clone(&sqlite)).await;
    search(sqlite).await;
    basics(Arc::new(InMemoryStore::new())).await;
    if let Some(url) = holdfast_testkit::postgres::fresh_database().await {
        let pg: Arc<dyn MemoryStore> = Arc::new(PgMemoryStore::open(url).await.unwrap());
        basics(Arc::clone(&pg)).await;
        search(pg).await;
    }
}

/// Two instances (two pools) edit one agent's memory at once: every edit lands, each history entry's old value is
/// the value the edit before it wrote (the per-block lock serialises them across instances), and a block created
/// on one instance is read and deleted on the other.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_instances_share_one_memory_without_losing_an_edit() {
    let Some(url) = holdfast_testkit::postgres::fresh_database().await else { return };
    let a: Arc<dyn MemoryStore> = Arc::new(PgMemoryStore::open(url.clone()).await.unwrap());
    let b: Arc<dyn MemoryStore> = Arc::new(PgMemoryStore::open(url).await.unwrap());
    memory(&a, "shared").put_block(BlockSpec::new("notes", "start")).await.unwrap();
    let tasks: Vec<_> = (0..20)
        .map(|i| {
            let m = memory(if i % 2 == 0 { &a } else { &b }, "shared");
            tokio::spawn(async move { m.append("notes", format!("note {i}"), "test").await.unwrap() })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    let value = memory(&b, "shared").get("notes").await.unwrap().unwrap().value;
    assert_eq!(value.lines().count(), 21, "{value:?}");
    let mut history = memory(&a, "shared").history("notes", 100).await.unwrap();
    history.reverse();
    assert_eq!(history.len(), 21);
    for pair in history.windows(2) {
        assert_eq!(pair[1].old.as_deref(), Some(pair[0].new.as_str()), "each edit saw the one before it");
    }
    memory(&a, "shared").update("plan", "from a".into(), None, "test").await.unwrap();
    assert!(memory(&b, "shared").delete_block("plan").await.unwrap());
    assert!(memory(&a, "shared").get("plan").await.unwrap().is_none());
}

/// Switching an instance from its SQLite file to PostgreSQL loses no memory: the file's blocks and their history
/// are copied once, and a second file (another instance's) is not mixed in.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_kept_in_sqlite_moves_to_postgres_once() {
    let Some(url) = holdfast_testkit::postgres::fresh_database().await else { return };
    let dir = tempfile::tempdir().unwrap();
    let file = SqliteMemoryStore::open(dir.path().join("holdfast.db")).unwrap();
    let local: Arc<dyn MemoryStore> = Arc::new(file.clone());
    memory(&local, "alice").update("human", "Name: Alice".into(), None, "test").await.unwrap();
    memory(&local, "alice").append("human", "Lives in Porto".into(), "test").await.unwrap();
    memory(&local, "bob").put_block(BlockSpec::new("persona", "Bob's helper")).await.unwrap();

    let pg = PgMemoryStore::open(url.clone()).await.unwrap();
    assert_eq!(pg.adopt(file.database()).await.unwrap(), Adopted::Copied { blocks: 2 });
    let shared: Arc<dyn MemoryStore> = Arc::new(pg.clone());
    let alice = memory(&shared, "alice");
    assert_eq!(alice.get("human").await.unwrap().unwrap().value, "Name: Alice\nLives in Porto");
    let history = alice.history("human", 10).await.unwrap();
    assert_eq!(history.iter().map(|e| e.op).collect::<Vec<_>>(), vec![EditOp::Append, EditOp::Create]);
    assert_eq!(alice.search("porto", None).await.unwrap().hits[0].label, "human", "indexed on the way in");
    assert_eq!(memory(&shared, "bob").get("persona").await.unwrap().unwrap().value, "Bob's helper");

    // Once: the same file again, or another instance's file, is not copied over what is shared.
    assert_eq!(pg.adopt(file.database()).await.unwrap(), Adopted::AlreadyShared { local: 2 });
    let other_dir = tempfile::tempdir().unwrap();
    let other = SqliteMemoryStore::open(other_dir.path().join("holdfast.db")).unwrap();
    let other_store: Arc<dyn MemoryStore> = Arc::new(other.clone());
    memory(&other_store, "alice").update("human", "Name: someone else".into(), None, "test").await.unwrap();
    let second = PgMemoryStore::open(url).await.unwrap();
    assert_eq!(second.adopt(other.database()).await.unwrap(), Adopted::AlreadyShared { local: 1 });
    assert_eq!(alice.get("human").await.unwrap().unwrap().value, "Name: Alice\nLives in Porto");
    let empty = tempfile::tempdir().unwrap();
    let none = SqliteMemoryStore::open(empty.path().join("holdfast.db")).unwrap();
    assert_eq!(pg.adopt(none.database()).await.unwrap(), Adopted::Nothing);
}

mod tasks {
    //! The task stores: the same list on SQLite and PostgreSQL, two instances completing steps of one task lose none,
    //! and an instance's tasks move from its file to PostgreSQL once, with their ids.

    use holdfast_memory::schedule::tasks::{NewTask, TaskFilter, TaskPatch};
    use holdfast_memory::{AgentId, PgMemoryStore, PgTaskStore, Priority, SqliteTaskStore, TaskList, TaskStatus};
    use holdfast_memory::{Database, SystemClock, TaskStore};
    use std::sync::Arc;

    fn list(store: &Arc<dyn TaskStore>, agent: &str) -> TaskList {
        TaskList::new(AgentId::new(agent).unwrap(), Arc::clone(store), Arc::new(SystemClock))
    }

    fn new(title: &str, steps: &[&str]) -> NewTask {
        NewTask { title: title.into(), steps: steps.iter().map(|s| (*s).to_owned()).collect(), ..NewTask::default() }
    }

    async fn alike(store: Arc<dyn TaskStore>) {
        let kind = store.kind();
        let tasks = list(&store, "alice");
        let a = tasks.create(new("Pay rent", &["log in", "send"])).await.unwrap();
        let b = tasks.create(new("Book flight", &[])).await.unwrap();
        assert_ne!(a.id, b.id, "{kind}");
        let (after, said) = tasks.complete(a.id, Some(1)).await.unwrap();
        assert!(said.contains("Next step (2/2): send"), "{kind}: {said}");
        assert_eq!(after.status, TaskStatus::InProgress, "{kind}");
        let patch = TaskPatch { priority: Some(Priority::Urgent), ..TaskPatch::default() };
        tasks.update(b.id, patch).await.unwrap();
        let order: Vec<u64> = tasks.list(TaskFilter::default()).await.unwrap().iter().map(|t| t.id).collect();
        assert_eq!(order, vec![b.id, a.id], "{kind}: urgent first");
        assert!(list(&store, "bob").get(a.id).await.is_err(), "{kind}: another agent's task is not found");
        assert!(tasks.complete(a.id, Some(9)).await.is_err(), "{kind}: no step 9");
        assert_eq!(tasks.get(a.id).await.unwrap().steps.iter().filter(|s| s.done).count(), 1, "{kind}: unchanged");
        let (done, _) = tasks.complete(a.id, Some(2)).await.unwrap();
        assert_eq!(done.status, TaskStatus::Done, "{kind}: the last step completes the task");
        assert!(done.completed_at.is_some(), "{kind}");
        assert_eq!(tasks.delete(b.id).await.unwrap().title, "Book flight", "{kind}");
        assert!(tasks.get(b.id).await.is_err(), "{kind}: deleted");
        let all = tasks.list(TaskFilter { include_done: true, ..TaskFilter::default() }).await.unwrap();
        assert_eq!(all.len(), 1, "{kind}");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn every_task_store_behaves_alike_and_instances_share_one_list() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path().join("holdfast.db")).unwrap();
        alike(Arc::new(SqliteTaskStore::new(db))).await;
        let Some(url) = holdfast_testkit::postgres::fresh_database().await else { return };
        let a = PgTaskStore::open(PgMemoryStore::open(url.clone()).await.unwrap().pool().clone()).await.unwrap();
        let b = PgTaskStore::open(PgMemoryStore::open(url).await.unwrap().pool().clone()).await.unwrap();
        let (a, b): (Arc<dyn TaskStore>, Arc<dyn TaskStore>) = (Arc::new(a), Arc::new(b));
        alike(Arc::clone(&a)).await;

        // Ten steps of one task, completed at once from two instances: every step is done, the task with them.
        let steps: Vec<String> = (1..=10).map(|i| format!("step {i}")).collect();
        let steps: Vec<&str> = steps.iter().map(String::as_str).collect();
        let task = list(&a, "carol").create(new("Move house", &steps)).await.unwrap();
        let runs: Vec<_> = (1..=10)
            .map(|n| {
                let tasks = list(if n % 2 == 0 { &a } else { &b }, "carol");
                tokio::spawn(async move { tasks.complete(task.id, Some(n)).await.unwrap() })
            })
            .collect();
        for r in runs {
            r.await.unwrap();
        }
        let done = list(&b, "carol").get(task.id).await.unwrap();
        assert!(done.steps.iter().all(|s| s.done), "{:?}", done.steps);
        assert_eq!(done.status, TaskStatus::Done);
    }

    /// A task row this build cannot read (written from outside holdfast) is not deleted by a delete that fails to
    /// read it: the error says why and the row is still there.
    #[tokio::test]
    async fn an_unreadable_task_is_kept_when_deleting_it_fails() {
        let db = Database::open_in_memory().unwrap();
        let store: Arc<dyn TaskStore> = Arc::new(SqliteTaskStore::new(db.clone()));
        let count = || {
            let n: i64 = db.sqlite().lock().query_row("SELECT count(*) FROM tasks_items", [], |r| r.get(0)).unwrap();
            n
        };
        db.sqlite()
            .lock()
            .execute(
                "INSERT INTO tasks_items (id, agent_id, title, priority, status, steps, created_at, updated_at)
                 VALUES (7, 'alice', 'odd', 'bogus', 'todo', '[]', '2026-11-26T00:00:00.000Z', '2026-11-26T00:00:00.000Z')",
                [],
            )
            .unwrap();
        let e = list(&store, "alice").delete(7).await.unwrap_err();
        assert!(e.to_string().contains("unreadable priority"), "{e}");
        assert_eq!(count(), 1, "kept");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn tasks_kept_in_sqlite_move_to_postgres_once_with_their_ids() {
        let Some(url) = holdfast_testkit::postgres::fresh_database().await else { return };
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path().join("holdfast.db")).unwrap();
        let file: Arc<dyn TaskStore> = Arc::new(SqliteTaskStore::new(db.clone()));
        let first = list(&file, "alice").create(new("one", &[])).await.unwrap();
        list(&file, "alice").delete(first.id).await.unwrap();
        let kept = list(&file, "alice").create(new("two", &["a", "b"])).await.unwrap();
        list(&file, "alice").complete(kept.id, Some(1)).await.unwrap();

        let pg = PgTaskStore::open(PgMemoryStore::open(url).await.unwrap().pool().clone()).await.unwrap();
        assert_eq!(pg.adopt(&db).await.unwrap(), 1);
        assert_eq!(pg.adopt(&db).await.unwrap(), 0, "once");
        let shared: Arc<dyn TaskStore> = Arc::new(pg);
        let moved = list(&shared, "alice").get(kept.id).await.unwrap();
        assert_eq!((moved.title.as_str(), moved.status), ("two", TaskStatus::InProgress));
        let next = list(&shared, "alice").create(new("three", &[])).await.unwrap();
        assert!(next.id > kept.id, "new ids follow the moved ones");
    }
}

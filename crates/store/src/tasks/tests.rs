use super::*;

fn task(title: &str) -> TaskRow {
    TaskRow {
        title: title.into(),
        priority: "normal".into(),
        status: "todo".into(),
        steps: "[]".into(),
        created_at: "2026-11-26T00:00:00.000Z".into(),
        updated_at: "2026-11-26T00:00:00.000Z".into(),
        ..TaskRow::default()
    }
}

/// The table on each backend: SQLite in memory, and a fresh PostgreSQL database when the test server is there.
async fn tables() -> Vec<TaskTable> {
    let mut all = vec![TaskTable::open(&Storage::Sqlite(SqliteDb::memory().unwrap())).await.unwrap()];
    if let Some(url) = holdfast_testkit::postgres::fresh_database().await {
        let pg = PgStore::connect(&url).await.unwrap();
        all.push(TaskTable::open(&Storage::Postgres(pg)).await.unwrap());
    }
    all
}

#[tokio::test]
async fn rows_are_kept_per_agent_and_read_back_as_written() {
    for table in tables().await {
        let kind = table.dialect();
        let mut row = task("Pay rent");
        row.notes = Some("by Friday".into());
        row.due_at = Some("2026-11-27T09:00:00.000Z".into());
        let id = table.insert("alice", &row).await.unwrap();
        let other = table.insert("alice", &task("Book flight")).await.unwrap();
        assert_ne!(id, other, "{kind}");
        assert_eq!(table.get("alice", id).await.unwrap(), Some(TaskRow { id, ..row }), "{kind}");
        assert_eq!(table.get("bob", id).await.unwrap(), None, "{kind}: another agent's");
        assert_eq!(table.list("alice").await.unwrap().len(), 2, "{kind}");
        assert!(table.list("bob").await.unwrap().is_empty(), "{kind}");
        let title = |r: &TaskRow| Edited::Write(r.title.clone());
        assert_eq!(table.delete("bob", id, title).await.unwrap(), None, "{kind}: not bob's to delete");
        let kept = table.delete("alice", id, |r| Edited::Keep(r.title.clone())).await.unwrap();
        assert_eq!(kept.as_deref(), Some("Pay rent"), "{kind}: the decision keeps it");
        assert!(table.get("alice", id).await.unwrap().is_some(), "{kind}: kept");
        assert_eq!(table.delete("alice", id, title).await.unwrap().as_deref(), Some("Pay rent"), "{kind}");
        assert_eq!(table.get("alice", id).await.unwrap(), None, "{kind}: deleted");
    }
}

#[tokio::test]
async fn an_edit_writes_what_it_returns_or_nothing() {
    for table in tables().await {
        let kind = table.dialect();
        let id = table.insert("alice", &task("one")).await.unwrap();
        let kept = table
            .modify("alice", id, |row| {
                row.title = "changed".into();
                Edited::Keep("refused")
            })
            .await
            .unwrap();
        assert_eq!(kept, Some("refused"), "{kind}");
        assert_eq!(table.get("alice", id).await.unwrap().unwrap().title, "one", "{kind}: nothing written");
        let written = table
            .modify("alice", id, |row| {
                row.status = "done".into();
                row.completed_at = Some("2026-11-26T01:00:00.000Z".into());
                row.created_at = "ignored".into();
                Edited::Write(7)
            })
            .await
            .unwrap();
        assert_eq!(written, Some(7), "{kind}");
        let got = table.get("alice", id).await.unwrap().unwrap();
        assert_eq!((got.status.as_str(), got.created_at.as_str()), ("done", "2026-11-26T00:00:00.000Z"), "{kind}");
        let missing = table.modify("bob", id, |_| Edited::Write(())).await.unwrap();
        assert_eq!(missing, None, "{kind}: no such task, the edit is not called");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_edits_of_one_task_each_see_the_others() {
    for table in tables().await {
        let table = std::sync::Arc::new(table);
        let id = table.insert("carol", &task("0")).await.unwrap();
        let runs: Vec<_> = (0..16)
            .map(|_| {
                let table = std::sync::Arc::clone(&table);
                tokio::spawn(async move {
                    table
                        .modify("carol", id, |row| {
                            let n: u32 = row.title.parse().unwrap_or_default();
                            row.title = (n + 1).to_string();
                            Edited::Write(())
                        })
                        .await
                        .unwrap()
                })
            })
            .collect();
        for r in runs {
            r.await.unwrap();
        }
        assert_eq!(table.get("carol", id).await.unwrap().unwrap().title, "16", "{}: no edit lost", table.dialect());
    }
}

#[tokio::test]
async fn a_files_tasks_move_to_postgres_once_with_their_ids() {
    let Some(url) = holdfast_testkit::postgres::fresh_database().await else { return };
    let file = SqliteDb::memory().unwrap();
    let local = TaskTable::on_sqlite(&file).unwrap();
    let gone = local.insert("alice", &task("gone")).await.unwrap();
    local.delete("alice", gone, |_| Edited::Write(())).await.unwrap();
    let kept = local.insert("alice", &task("kept")).await.unwrap();
    assert!(local.adopt(&file).await.is_err(), "only PostgreSQL adopts");

    let shared = TaskTable::on_postgres(PgStore::connect(&url).await.unwrap()).await.unwrap();
    let empty = SqliteDb::memory().unwrap();
    TaskTable::on_sqlite(&empty).unwrap();
    assert_eq!(shared.adopt(&empty).await.unwrap(), 0, "an empty file");
    assert_eq!(shared.adopt(&file).await.unwrap(), 1);
    assert_eq!(shared.adopt(&file).await.unwrap(), 0, "once");
    assert_eq!(shared.get("alice", kept).await.unwrap().map(|r| r.title), Some("kept".into()));
    assert!(shared.insert("alice", &task("next")).await.unwrap() > kept, "new ids follow the copied ones");
}

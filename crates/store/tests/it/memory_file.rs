//! holdfast-memory's tables in the SQLite file: their migrations, on a new file, on one migrated by the old
//! per-crate list, and on a file other tables share.

use holdfast_store::SqliteDb;
use holdfast_store::schema::{MEMORY, MESSAGES, TASKS};
use std::path::Path;

/// The file, opened and migrated as holdfast-memory opens it.
fn open(path: &Path) -> SqliteDb {
    let db = SqliteDb::open(path).unwrap();
    db.migrate(&[MEMORY, TASKS, MESSAGES]).unwrap();
    db
}

#[test]
fn a_file_is_wal_and_migrations_are_idempotent() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nested").join("x.db");
    let db = open(&path);
    assert_eq!(db.journal_mode().unwrap(), "wal");
    let sync: i64 = db.lock().query_row("PRAGMA synchronous", [], |r| r.get(0)).unwrap();
    assert_eq!(sync, 2, "synchronous = FULL: an acknowledged write survives a power loss");
    drop(db);
    let db = open(&path);
    let sql = "SELECT group_concat(component || ' v' || version, ', ') FROM
               (SELECT * FROM holdfast_migrations ORDER BY component)";
    let steps: String = db.lock().query_row(sql, [], |r| r.get(0)).unwrap();
    assert_eq!(
        steps, "memory v1, memory v2, messages v1, messages v2, messages v3, messages v4, messages v5, tasks v1",
        "each once"
    );
}

/// A file from before the one runner (its steps in `memory_migrations`, version 1 only: no `hops`) keeps its
/// rows and gains what later steps added.
#[test]
fn a_file_migrated_by_the_old_list_is_brought_up_to_date() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.db");
    {
        let c = rusqlite::Connection::open(&path).unwrap();
        c.execute_batch(
            "CREATE TABLE memory_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL);
             INSERT INTO memory_migrations VALUES (1, '2026-01-01T00:00:00.000Z');
             CREATE TABLE messages_log (id INTEGER PRIMARY KEY, sender TEXT NOT NULL, target_type TEXT NOT NULL,
                 target_id TEXT, content TEXT NOT NULL, metadata TEXT, session_id TEXT, created_at TEXT NOT NULL);
             INSERT INTO messages_log (sender, target_type, target_id, content, created_at)
                 VALUES ('a', 'agent', 'b', 'kept', '2026-01-01T00:00:00.000Z');
             CREATE TABLE reminders_items (id INTEGER PRIMARY KEY, agent_id TEXT NOT NULL, due_at TEXT NOT NULL,
                 message TEXT NOT NULL, target_type TEXT NOT NULL, target_id TEXT, created_at TEXT NOT NULL,
                 fired_at TEXT);",
        )
        .unwrap();
    }
    let db = open(&path);
    let (content, hops): (String, i64) =
        db.lock().query_row("SELECT content, hops FROM messages_log", [], |r| Ok((r.get(0)?, r.get(1)?))).unwrap();
    assert_eq!((content.as_str(), hops), ("kept", 0));
    let n: i64 = db.lock().query_row("SELECT count(hops) FROM reminders_items", [], |r| r.get(0)).unwrap();
    assert_eq!(n, 0, "reminders_items has hops");
    db.lock().execute_batch("SELECT until_at FROM messages_cooldowns").unwrap();
}

#[test]
fn shares_a_file_with_other_tables() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shared.db");
    {
        let c = rusqlite::Connection::open(&path).unwrap();
        c.execute_batch(
            "CREATE TABLE journal (id INTEGER PRIMARY KEY, note TEXT); INSERT INTO journal (note) VALUES ('kept');",
        )
        .unwrap();
    }
    let db = open(&path);
    let note: String = db.lock().query_row("SELECT note FROM journal", [], |r| r.get(0)).unwrap();
    assert_eq!(note, "kept");
}

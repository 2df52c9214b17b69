//! The tasks' table (`tasks_items`): the rows holdfast-memory's task lists keep per agent, their queries on both
//! dialects, the edit's transaction and the one-time copy of a file's tasks into PostgreSQL.
//!
//! What a row *means* — a task's priority, status and steps, what an edit may change — is decided in holdfast-memory
//! (`holdfast_memory::schedule`). An edit must see the row as it is and write its result with no other edit in
//! between, so it is passed in as a closure ([`TaskTable::modify`]): the table reads the row in its transaction
//! (on PostgreSQL locked `FOR UPDATE`), calls the closure, and writes back what it returns, or nothing.
//!
//! ```
//! # async fn demo() -> Result<(), holdfast_store::StoreError> {
//! use holdfast_store::tasks::{Edited, TaskRow, TaskTable};
//! let table = TaskTable::on_sqlite(&holdfast_store::SqliteDb::memory()?)?;
//! let row = TaskRow { title: "Pay rent".into(), priority: "normal".into(), status: "todo".into(), ..TaskRow::default() };
//! let id = table.insert("alice", &row).await?;
//! // The edit: rename it, and say so.
//! let said = table
//!     .modify("alice", id, |row| {
//!         row.title = "Pay the rent".into();
//!         Edited::Write("renamed")
//!     })
//!     .await?;
//! assert_eq!(said, Some("renamed"));
//! assert_eq!(table.get("alice", id).await?.map(|r| r.title), Some("Pay the rent".to_owned()));
//! assert_eq!(table.get("bob", id).await?, None, "another agent's task is not found");
//! # Ok(()) }
//! ```

mod postgres;
mod sqlite;

pub use postgres::PgTasks;
pub use sqlite::SqliteTasks;

use crate::{PgStore, SqliteDb, Storage, StoreError};

/// Every column a [`TaskRow`] is read from, in its order.
const COLUMNS: &str = "id, title, notes, due_at, priority, status, steps, created_at, updated_at, completed_at";

/// One task, as stored (both dialects keep the same text columns). Times are the text holdfast-memory writes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskRow {
    /// The row id (ignored by [`TaskTable::insert`], which returns the one it was given).
    pub id: i64,
    /// Title.
    pub title: String,
    /// Notes.
    pub notes: Option<String>,
    /// When it is due.
    pub due_at: Option<String>,
    /// Priority.
    pub priority: String,
    /// Status.
    pub status: String,
    /// Steps (JSON text).
    pub steps: String,
    /// Created at.
    pub created_at: String,
    /// Updated at.
    pub updated_at: String,
    /// Completed at.
    pub completed_at: Option<String>,
}

/// What an edit passed to [`TaskTable::modify`] decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Edited<R> {
    /// Write the row back as the edit left it (every column but the id and the creation time), then return `R`.
    Write(R),
    /// Write nothing (the transaction is rolled back), and return `R`.
    Keep(R),
}

/// The tasks' table on the process's storage.
#[derive(Debug, Clone)]
pub enum TaskTable {
    /// In the SQLite file (or memory).
    Sqlite(SqliteTasks),
    /// In PostgreSQL, shared by every instance on the database.
    Postgres(PgTasks),
}

impl TaskTable {
    /// The table in `storage`, migrated first.
    pub async fn open(storage: &Storage) -> Result<Self, StoreError> {
        match storage {
            Storage::Sqlite(db) => Self::on_sqlite(db),
            Storage::Postgres(pg) => Self::on_postgres(pg.clone()).await,
        }
    }

    /// The table in the SQLite file (or memory) `db`, migrated first.
    pub fn on_sqlite(db: &SqliteDb) -> Result<Self, StoreError> {
        crate::migrate::sqlite(&mut db.lock(), &crate::schema::TASKS)?;
        Ok(Self::on_migrated_sqlite(db))
    }

    /// The table in the SQLite file (or memory) `db`, whose owner has already applied [`crate::schema::TASKS`] (as
    /// holdfast-memory's `Database` does when it opens the file).
    pub fn on_migrated_sqlite(db: &SqliteDb) -> Self {
        Self::Sqlite(SqliteTasks { db: db.clone() })
    }

    /// The table in `pg`'s database, migrated first.
    pub async fn on_postgres(pg: PgStore) -> Result<Self, StoreError> {
        pg.migrate(&crate::schema::TASKS).await?;
        Ok(Self::Postgres(PgTasks { pg }))
    }

    /// `sqlite` or `postgres`.
    pub fn dialect(&self) -> &'static str {
        match self {
            Self::Sqlite(_) => "sqlite",
            Self::Postgres(_) => "postgres",
        }
    }

    /// Inserts a task of `agent` (`row.id` is ignored) and returns the id it was given.
    pub async fn insert(&self, agent: &str, row: &TaskRow) -> Result<i64, StoreError> {
        match self {
            Self::Sqlite(s) => s.insert(agent, row).await,
            Self::Postgres(p) => p.insert(agent, row).await,
        }
    }

    /// Task `id` of `agent`; `None` when it is another agent's or does not exist.
    pub async fn get(&self, agent: &str, id: i64) -> Result<Option<TaskRow>, StoreError> {
        match self {
            Self::Sqlite(s) => s.get(agent, id).await,
            Self::Postgres(p) => p.get(agent, id).await,
        }
    }

    /// Every task of `agent`, unordered.
    pub async fn list(&self, agent: &str) -> Result<Vec<TaskRow>, StoreError> {
        match self {
            Self::Sqlite(s) => s.list(agent).await,
            Self::Postgres(p) => p.list(agent).await,
        }
    }

    /// In one transaction that excludes every other edit of the task (SQLite: the file's write lock; PostgreSQL: the
    /// row locked `FOR UPDATE`): reads task `id` of `agent`, calls `edit` on it, and writes the row back as `edit`
    /// left it when it returns [`Edited::Write`] (nothing with [`Edited::Keep`]). `None` when there is no such task (`edit` is not
    /// called).
    pub async fn modify<R: Send + 'static>(
        &self,
        agent: &str,
        id: i64,
        edit: impl FnOnce(&mut TaskRow) -> Edited<R> + Send + 'static,
    ) -> Result<Option<R>, StoreError> {
        match self {
            Self::Sqlite(s) => s.modify(agent, id, edit).await,
            Self::Postgres(p) => p.modify(agent, id, edit).await,
        }
    }

    /// Atomically: reads task `id` of `agent` (locked on PostgreSQL), calls `decide` on it, and deletes it when it
    /// returns [`Edited::Write`]; `None` when there is no such task.
    pub async fn delete<R: Send + 'static>(
        &self,
        agent: &str,
        id: i64,
        decide: impl FnOnce(&TaskRow) -> Edited<R> + Send + 'static,
    ) -> Result<Option<R>, StoreError> {
        match self {
            Self::Sqlite(s) => s.delete(agent, id, decide).await,
            Self::Postgres(p) => p.delete(agent, id, decide).await,
        }
    }

    /// Copies the tasks kept in the SQLite file `file` into this table, once ([`PgTasks::adopt`]). Only a
    /// PostgreSQL table adopts: on SQLite this is a [`StoreError::Config`].
    pub async fn adopt(&self, file: &SqliteDb) -> Result<usize, StoreError> {
        match self {
            Self::Sqlite(_) => {
                Err(StoreError::Config("tasks are copied from a SQLite file into PostgreSQL only".into()))
            }
            Self::Postgres(p) => p.adopt(file).await,
        }
    }
}

#[cfg(test)]
mod tests;

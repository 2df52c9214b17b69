//! Where tasks live: the [`TaskStore`] trait, [`SqliteTaskStore`] (`tasks_items` in the SQLite file, the default)
//! and [`PgTaskStore`] (the same table in PostgreSQL, so an agent's tasks are one list whichever instance serves it).
//!
//! Both are thin adapters over holdfast-store's table ([`holdfast_store::tasks::TaskTable`]: its queries, the edit's
//! transaction, the copy of a file's tasks into PostgreSQL); what is here is what a row means — the conversion of a
//! [`Task`] to and from its stored columns. [`super::tasks::TaskList`] validates and decides. An edit is atomic: the
//! table reads the task, calls the edit, and writes the result in one transaction (on PostgreSQL the row is locked
//! `FOR UPDATE`, so two instances completing steps of one task each see the other's). Methods are async: the SQLite
//! table runs its statements on tokio's blocking pool, the PostgreSQL one on the process's pool.

use super::task::Task;
use crate::clock::{fmt_time, parse_time};
use crate::db::Database;
use crate::error::{MemoryError, Result};
use holdfast_core::tool::BoxFuture;
use holdfast_store::PgStore;
use holdfast_store::tasks::{Edited, TaskRow, TaskTable};
use serde::Serialize;

/// An edit of one task inside its transaction: changes it, or fails (nothing is written). Returns a sentence for
/// the caller.
pub type TaskEdit = Box<dyn FnOnce(&mut Task) -> Result<String> + Send + 'static>;

/// Storage for tasks, per agent.
pub trait TaskStore: Send + Sync + 'static {
    /// Stores a new task (its `id` is ignored) and returns the id it was given.
    fn insert<'a>(&'a self, agent: &'a str, task: &'a Task) -> BoxFuture<'a, Result<u64>>;
    /// One task of `agent` (`not_found` when it is another agent's or does not exist).
    fn get<'a>(&'a self, agent: &'a str, id: u64) -> BoxFuture<'a, Result<Task>>;
    /// Every task of `agent`, unordered.
    fn list<'a>(&'a self, agent: &'a str) -> BoxFuture<'a, Result<Vec<Task>>>;
    /// Atomically: reads the task, applies `edit`, writes it back.
    fn modify<'a>(&'a self, agent: &'a str, id: u64, edit: TaskEdit) -> BoxFuture<'a, Result<(Task, String)>>;
    /// Deletes a task; returns it as it was.
    fn delete<'a>(&'a self, agent: &'a str, id: u64) -> BoxFuture<'a, Result<Task>>;
    /// `sqlite` or `postgres`.
    fn kind(&self) -> &'static str;
}

pub(super) fn enum_str<T: Serialize>(v: &T) -> String {
    serde_json::to_value(v).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default()
}

pub(super) fn enum_parse<T: serde::de::DeserializeOwned>(s: &str) -> Option<T> {
    serde_json::from_value(serde_json::Value::String(s.to_owned())).ok()
}

/// A stored row as the task it holds.
fn to_task(row: TaskRow) -> Result<Task> {
    let TaskRow { id, title, notes, due_at, priority, status, steps, created_at, updated_at, completed_at } = row;
    let bad = |what: &str| MemoryError::internal(format!("unreadable {what} in tasks_items row {id}"));
    let time = |s: &str| parse_time(s).ok_or_else(|| bad("time"));
    Ok(Task {
        id: u64::try_from(id).map_err(|_| bad("id"))?,
        title,
        notes,
        due_at: due_at.as_deref().map(time).transpose()?,
        priority: enum_parse(&priority).ok_or_else(|| bad("priority"))?,
        status: enum_parse(&status).ok_or_else(|| bad("status"))?,
        steps: serde_json::from_str(&steps).map_err(|_| bad("steps"))?,
        created_at: time(&created_at)?,
        updated_at: time(&updated_at)?,
        completed_at: completed_at.as_deref().map(time).transpose()?,
    })
}

/// A task as its stored row (its id as given: [`TaskTable::insert`] ignores it).
fn to_row(t: &Task) -> Result<TaskRow> {
    Ok(TaskRow {
        id: i64::try_from(t.id).unwrap_or_default(),
        title: t.title.clone(),
        notes: t.notes.clone(),
        due_at: t.due_at.map(fmt_time),
        priority: enum_str(&t.priority),
        status: enum_str(&t.status),
        steps: serde_json::to_string(&t.steps).map_err(|e| MemoryError::internal(e.to_string()))?,
        created_at: fmt_time(t.created_at),
        updated_at: fmt_time(t.updated_at),
        completed_at: t.completed_at.map(fmt_time),
    })
}

fn row_id(id: u64) -> Result<i64> {
    i64::try_from(id).map_err(|_| MemoryError::invalid("id", "is too large"))
}

fn not_found(id: u64) -> MemoryError {
    MemoryError::RecordNotFound { field: "id", what: "task", id: id.to_string() }
}

/// Reads a task, applies `edit` and leaves the row to write in `row` — or, when the row cannot be read or the edit
/// fails, nothing to write and the error.
fn apply(row: &mut TaskRow, edit: TaskEdit) -> Edited<Result<(Task, String)>> {
    let edited = to_task(row.clone()).and_then(|mut task| {
        let said = edit(&mut task)?;
        Ok((to_row(&task)?, task, said))
    });
    match edited {
        Ok((written, task, said)) => {
            *row = written;
            Edited::Write(Ok((task, said)))
        }
        Err(e) => Edited::Keep(Err(e)),
    }
}

/// [`TaskStore`] over a [`TaskTable`], whichever its dialect.
async fn insert(table: &TaskTable, agent: &str, task: &Task) -> Result<u64> {
    let id = table.insert(agent, &to_row(task)?).await?;
    u64::try_from(id).map_err(|_| MemoryError::internal("negative task id"))
}

async fn get(table: &TaskTable, agent: &str, id: u64) -> Result<Task> {
    table.get(agent, row_id(id)?).await?.map(to_task).transpose()?.ok_or_else(|| not_found(id))
}

async fn list(table: &TaskTable, agent: &str) -> Result<Vec<Task>> {
    table.list(agent).await?.into_iter().map(to_task).collect()
}

async fn modify(table: &TaskTable, agent: &str, id: u64, edit: TaskEdit) -> Result<(Task, String)> {
    table.modify(agent, row_id(id)?, move |row| apply(row, edit)).await?.ok_or_else(|| not_found(id))?
}

/// Deletes the task when its row can be read (an unreadable one is kept, and the error says why).
async fn delete(table: &TaskTable, agent: &str, id: u64) -> Result<Task> {
    let decided = table.delete(agent, row_id(id)?, |row| match to_task(row.clone()) {
        Ok(task) => Edited::Write(Ok(task)),
        Err(e) => Edited::Keep(Err(e)),
    });
    decided.await?.ok_or_else(|| not_found(id))?
}

/// Implements [`TaskStore`] for a store whose `table` field is a [`TaskTable`].
macro_rules! task_store_over_table {
    ($store:ty) => {
        impl TaskStore for $store {
            fn insert<'a>(&'a self, agent: &'a str, task: &'a Task) -> BoxFuture<'a, Result<u64>> {
                Box::pin(insert(&self.table, agent, task))
            }

            fn get<'a>(&'a self, agent: &'a str, id: u64) -> BoxFuture<'a, Result<Task>> {
                Box::pin(get(&self.table, agent, id))
            }

            fn list<'a>(&'a self, agent: &'a str) -> BoxFuture<'a, Result<Vec<Task>>> {
                Box::pin(list(&self.table, agent))
            }

            fn modify<'a>(&'a self, agent: &'a str, id: u64, edit: TaskEdit) -> BoxFuture<'a, Result<(Task, String)>> {
                Box::pin(modify(&self.table, agent, id, edit))
            }

            fn delete<'a>(&'a self, agent: &'a str, id: u64) -> BoxFuture<'a, Result<Task>> {
                Box::pin(delete(&self.table, agent, id))
            }

            fn kind(&self) -> &'static str {
                self.table.dialect()
            }
        }
    };
}

/// Tasks in the SQLite file (shared with memory, messages and reminders).
#[derive(Debug, Clone)]
pub struct SqliteTaskStore {
    table: TaskTable,
}

impl SqliteTaskStore {
    /// The store on `db` (whose opening applied the tasks' migrations).
    pub fn new(db: Database) -> Self {
        Self { table: TaskTable::on_migrated_sqlite(db.sqlite()) }
    }
}

task_store_over_table!(SqliteTaskStore);

/// Tasks in PostgreSQL. Clones share the pool.
#[derive(Debug, Clone)]
pub struct PgTaskStore {
    table: TaskTable,
}

impl PgTaskStore {
    /// The store on `pg`, migrated.
    pub async fn open(pg: PgStore) -> Result<Self> {
        Ok(Self { table: TaskTable::on_postgres(pg).await? })
    }

    /// Copies the tasks an instance kept in its SQLite file (`db`) into this database, once: when it holds no task
    /// yet (under a lock, so instances starting together copy once). The number copied; 0 when the database already
    /// had tasks or the file has none (the file keeps its rows).
    pub async fn adopt(&self, db: &Database) -> Result<usize> {
        Ok(self.table.adopt(db.sqlite()).await?)
    }
}

task_store_over_table!(PgTaskStore);

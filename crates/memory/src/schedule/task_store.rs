//! Where tasks live: the [`TaskStore`] trait, [`SqliteTaskStore`] (`tasks_items` in the SQLite file, the default)
//! and [`PgTaskStore`] (the same table in PostgreSQL, so an agent's tasks are one list whichever instance serves it).
//!
//! A store is storage only; [`super::tasks::TaskList`] validates and decides. An edit is atomic: the store reads the
//! task, calls the edit, and writes the result in one transaction (on PostgreSQL the row is locked `FOR UPDATE`, so
//! two instances completing steps of one task each see the other's). Methods are async: the SQLite store runs its
//! statements on tokio's blocking pool, the PostgreSQL one on the process's pool.

use super::task::Task;
use crate::clock::{fmt_time, parse_time};
use crate::db::Database;
use crate::error::{MemoryError, Result};
use holdfast_core::tool::BoxFuture;
use holdfast_store::PgStore;
use rusqlite::{OptionalExtension, params};
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

const COLUMNS: &str = "id, title, notes, due_at, priority, status, steps, created_at, updated_at, completed_at";

/// A row as stored (both backends keep the same text columns).
type Row = (i64, String, Option<String>, Option<String>, String, String, String, String, String, Option<String>);

fn to_task(row: Row) -> Result<Task> {
    let (id, title, notes, due, priority, status, steps, created, updated, completed) = row;
    let bad = |what: &str| MemoryError::internal(format!("unreadable {what} in tasks_items row {id}"));
    let time = |s: &str| parse_time(s).ok_or_else(|| bad("time"));
    Ok(Task {
        id: u64::try_from(id).map_err(|_| bad("id"))?,
        title,
        notes,
        due_at: due.as_deref().map(time).transpose()?,
        priority: enum_parse(&priority).ok_or_else(|| bad("priority"))?,
        status: enum_parse(&status).ok_or_else(|| bad("status"))?,
        steps: serde_json::from_str(&steps).map_err(|_| bad("steps"))?,
        created_at: time(&created)?,
        updated_at: time(&updated)?,
        completed_at: completed.as_deref().map(time).transpose()?,
    })
}

/// The columns written, in statement order (`agent_id` first), for one task.
struct Columns {
    title: String,
    notes: Option<String>,
    due_at: Option<String>,
    priority: String,
    status: String,
    steps: String,
    created_at: String,
    updated_at: String,
    completed_at: Option<String>,
}

fn columns(t: &Task) -> Result<Columns> {
    Ok(Columns {
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

/// Tasks in the SQLite file (shared with memory, messages and reminders).
#[derive(Debug, Clone)]
pub struct SqliteTaskStore {
    db: Database,
}

impl SqliteTaskStore {
    /// The store on `db`.
    pub fn new(db: Database) -> Self {
        Self { db }
    }
}

fn read_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Row> {
    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?, r.get(7)?, r.get(8)?, r.get(9)?))
}

fn load(c: &rusqlite::Connection, agent: &str, id: u64) -> Result<Task> {
    let sql = format!("SELECT {COLUMNS} FROM tasks_items WHERE id = ?1 AND agent_id = ?2");
    let row = c.query_row(&sql, params![row_id(id)?, agent], read_row).optional()?;
    row.map(to_task).transpose()?.ok_or_else(|| not_found(id))
}

impl TaskStore for SqliteTaskStore {
    fn insert<'a>(&'a self, agent: &'a str, task: &'a Task) -> BoxFuture<'a, Result<u64>> {
        Box::pin(async move {
            let (agent, c) = (agent.to_owned(), columns(task)?);
            let id: i64 = self
                .db
                .call(move |conn| {
                    Ok(conn.query_row(
                        "INSERT INTO tasks_items (agent_id, title, notes, due_at, priority, status, steps, created_at,
                             updated_at)
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) RETURNING id",
                        params![
                            agent,
                            c.title,
                            c.notes,
                            c.due_at,
                            c.priority,
                            c.status,
                            c.steps,
                            c.created_at,
                            c.updated_at
                        ],
                        |r| r.get(0),
                    )?)
                })
                .await?;
            u64::try_from(id).map_err(|_| MemoryError::internal("negative task id"))
        })
    }

    fn get<'a>(&'a self, agent: &'a str, id: u64) -> BoxFuture<'a, Result<Task>> {
        let agent = agent.to_owned();
        Box::pin(self.db.call(move |c| load(c, &agent, id)))
    }

    fn list<'a>(&'a self, agent: &'a str) -> BoxFuture<'a, Result<Vec<Task>>> {
        let agent = agent.to_owned();
        Box::pin(self.db.call(move |c| {
            let mut stmt = c.prepare_cached(&format!("SELECT {COLUMNS} FROM tasks_items WHERE agent_id = ?1"))?;
            let rows = stmt.query_map([agent], read_row)?.collect::<rusqlite::Result<Vec<_>>>()?;
            rows.into_iter().map(to_task).collect()
        }))
    }

    fn modify<'a>(&'a self, agent: &'a str, id: u64, edit: TaskEdit) -> BoxFuture<'a, Result<(Task, String)>> {
        let agent = agent.to_owned();
        Box::pin(self.db.call(move |conn| {
            let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            let mut task = load(&tx, &agent, id)?;
            let said = edit(&mut task)?;
            let c = columns(&task)?;
            tx.execute(
                "UPDATE tasks_items SET title = ?1, notes = ?2, due_at = ?3, priority = ?4, status = ?5, steps = ?6,
                 updated_at = ?7, completed_at = ?8 WHERE id = ?9 AND agent_id = ?10",
                params![
                    c.title,
                    c.notes,
                    c.due_at,
                    c.priority,
                    c.status,
                    c.steps,
                    c.updated_at,
                    c.completed_at,
                    row_id(id)?,
                    agent
                ],
            )?;
            tx.commit()?;
            Ok((task, said))
        }))
    }

    fn delete<'a>(&'a self, agent: &'a str, id: u64) -> BoxFuture<'a, Result<Task>> {
        let agent = agent.to_owned();
        Box::pin(self.db.call(move |conn| {
            let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            let task = load(&tx, &agent, id)?;
            tx.execute("DELETE FROM tasks_items WHERE id = ?1 AND agent_id = ?2", params![row_id(id)?, agent])?;
            tx.commit()?;
            Ok(task)
        }))
    }

    fn kind(&self) -> &'static str {
        "sqlite"
    }
}

/// Tasks in PostgreSQL. Clones share the pool.
#[derive(Debug, Clone)]
pub struct PgTaskStore {
    pg: PgStore,
}

fn pg_err(e: impl std::fmt::Display) -> MemoryError {
    MemoryError::internal(format!("tasks database: {}", holdfast_core::redact_urls(&e.to_string())))
}

fn pg_row(r: &sqlx::postgres::PgRow) -> Result<Row> {
    use sqlx::Row as _;
    let get = |i: usize| r.try_get::<Option<String>, _>(i).map_err(pg_err);
    let text = |i: usize| get(i)?.ok_or_else(|| pg_err(format!("tasks_items column {i} is null")));
    Ok((
        r.try_get(0).map_err(pg_err)?,
        text(1)?,
        get(2)?,
        get(3)?,
        text(4)?,
        text(5)?,
        text(6)?,
        text(7)?,
        text(8)?,
        get(9)?,
    ))
}

impl PgTaskStore {
    /// The store on `pg`, migrated.
    pub async fn open(pg: PgStore) -> Result<Self> {
        pg.migrate(&crate::schema::TASKS).await?;
        Ok(Self { pg })
    }

    /// Copies the tasks an instance kept in its SQLite file (`db`) into this database, once: when it holds no task
    /// yet (under a lock, so instances starting together copy once). The number copied; 0 when the database already
    /// had tasks or the file has none (the file keeps its rows).
    pub async fn adopt(&self, db: &Database) -> Result<usize> {
        let rows: Vec<(String, Row)> = db
            .call(|c| {
                let mut stmt = c.prepare(&format!("SELECT agent_id, {COLUMNS} FROM tasks_items ORDER BY id"))?;
                let rows = stmt.query_map([], |r| {
                    Ok((
                        r.get(0)?,
                        (
                            r.get(1)?,
                            r.get(2)?,
                            r.get(3)?,
                            r.get(4)?,
                            r.get(5)?,
                            r.get(6)?,
                            r.get(7)?,
                            r.get(8)?,
                            r.get(9)?,
                            r.get(10)?,
                        ),
                    ))
                })?;
                Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
            })
            .await?;
        if rows.is_empty() {
            return Ok(0);
        }
        let count = rows.len();
        let store = &self.pg;
        let copied = async move {
            let mut tx = store.pool().begin().await?;
            sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended('holdfast.tasks/adopt', 0))")
                .execute(&mut *tx)
                .await?;
            let any: bool = sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM tasks_items)").fetch_one(&mut *tx).await?;
            if any {
                return Ok(false);
            }
            for (agent, r) in rows {
                // The same ids: what the agent noted about task 7 still names task 7.
                sqlx::query(
                    "INSERT INTO tasks_items (agent_id, id, title, notes, due_at, priority, status, steps,
                             created_at, updated_at, completed_at)
                         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
                )
                .bind(agent)
                .bind(r.0)
                .bind(r.1)
                .bind(r.2)
                .bind(r.3)
                .bind(r.4)
                .bind(r.5)
                .bind(r.6)
                .bind(r.7)
                .bind(r.8)
                .bind(r.9)
                .execute(&mut *tx)
                .await?;
            }
            sqlx::query(
                "SELECT setval(pg_get_serial_sequence('tasks_items', 'id'), (SELECT max(id) FROM tasks_items))",
            )
            .execute(&mut *tx)
            .await?;
            tx.commit().await?;
            Ok::<_, sqlx::Error>(true)
        }
        .await
        .map_err(pg_err)?;
        Ok(if copied { count } else { 0 })
    }
}

async fn pg_load(tx: &mut sqlx::PgConnection, agent: &str, id: u64, lock: bool) -> Result<Task> {
    let sql = format!(
        "SELECT {COLUMNS} FROM tasks_items WHERE id = $1 AND agent_id = $2{}",
        if lock { " FOR UPDATE" } else { "" }
    );
    let row = sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(row_id(id)?)
        .bind(agent)
        .fetch_optional(&mut *tx)
        .await
        .map_err(pg_err)?;
    row.as_ref().map(pg_row).transpose()?.map(to_task).transpose()?.ok_or_else(|| not_found(id))
}

impl TaskStore for PgTaskStore {
    fn insert<'a>(&'a self, agent: &'a str, task: &'a Task) -> BoxFuture<'a, Result<u64>> {
        Box::pin(async move {
            let c = columns(task)?;
            let id: i64 = sqlx::query_scalar(
                "INSERT INTO tasks_items (agent_id, title, notes, due_at, priority, status, steps, created_at,
                     updated_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING id",
            )
            .bind(agent)
            .bind(c.title)
            .bind(c.notes)
            .bind(c.due_at)
            .bind(c.priority)
            .bind(c.status)
            .bind(c.steps)
            .bind(c.created_at)
            .bind(c.updated_at)
            .fetch_one(self.pg.pool())
            .await
            .map_err(pg_err)?;
            u64::try_from(id).map_err(|_| MemoryError::internal("negative task id"))
        })
    }

    fn get<'a>(&'a self, agent: &'a str, id: u64) -> BoxFuture<'a, Result<Task>> {
        Box::pin(async move {
            let mut conn = self.pg.pool().acquire().await.map_err(pg_err)?;
            pg_load(&mut conn, agent, id, false).await
        })
    }

    fn list<'a>(&'a self, agent: &'a str) -> BoxFuture<'a, Result<Vec<Task>>> {
        Box::pin(async move {
            let sql = format!("SELECT {COLUMNS} FROM tasks_items WHERE agent_id = $1");
            let rows =
                sqlx::query(sqlx::AssertSqlSafe(sql)).bind(agent).fetch_all(self.pg.pool()).await.map_err(pg_err)?;
            rows.iter().map(|r| pg_row(r).and_then(to_task)).collect()
        })
    }

    fn modify<'a>(&'a self, agent: &'a str, id: u64, edit: TaskEdit) -> BoxFuture<'a, Result<(Task, String)>> {
        Box::pin(async move {
            let mut tx = self.pg.pool().begin().await.map_err(pg_err)?;
            let mut task = pg_load(&mut tx, agent, id, true).await?;
            let said = edit(&mut task)?;
            let c = columns(&task)?;
            sqlx::query(
                "UPDATE tasks_items SET title = $1, notes = $2, due_at = $3, priority = $4, status = $5, steps = $6,
                 updated_at = $7, completed_at = $8 WHERE id = $9 AND agent_id = $10",
            )
            .bind(c.title)
            .bind(c.notes)
            .bind(c.due_at)
            .bind(c.priority)
            .bind(c.status)
            .bind(c.steps)
            .bind(c.updated_at)
            .bind(c.completed_at)
            .bind(row_id(id)?)
            .bind(agent)
            .execute(&mut *tx)
            .await
            .map_err(pg_err)?;
            tx.commit().await.map_err(pg_err)?;
            Ok((task, said))
        })
    }

    fn delete<'a>(&'a self, agent: &'a str, id: u64) -> BoxFuture<'a, Result<Task>> {
        Box::pin(async move {
            let mut tx = self.pg.pool().begin().await.map_err(pg_err)?;
            let task = pg_load(&mut tx, agent, id, true).await?;
            sqlx::query("DELETE FROM tasks_items WHERE id = $1 AND agent_id = $2")
                .bind(row_id(id)?)
                .bind(agent)
                .execute(&mut *tx)
                .await
                .map_err(pg_err)?;
            tx.commit().await.map_err(pg_err)?;
            Ok(task)
        })
    }

    fn kind(&self) -> &'static str {
        "postgres"
    }
}

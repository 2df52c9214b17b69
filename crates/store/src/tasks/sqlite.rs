//! The tasks in the SQLite file, on the process's one writing connection ([`crate::SqliteDb`], shared with the other
//! tables' owners), used from tokio's blocking pool. An edit is one `IMMEDIATE` transaction: the file's write lock,
//! so no other edit, in this process or another on the same file, interleaves.

use super::{COLUMNS, Edited, TaskRow};
use crate::{SqliteDb, StoreError};
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

/// The tasks in the SQLite file (or memory). Clones share the connection.
#[derive(Debug, Clone)]
pub struct SqliteTasks {
    pub(super) db: SqliteDb,
}

fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<TaskRow> {
    Ok(TaskRow {
        id: r.get(0)?,
        title: r.get(1)?,
        notes: r.get(2)?,
        due_at: r.get(3)?,
        priority: r.get(4)?,
        status: r.get(5)?,
        steps: r.get(6)?,
        created_at: r.get(7)?,
        updated_at: r.get(8)?,
        completed_at: r.get(9)?,
    })
}

fn load(c: &Connection, agent: &str, id: i64) -> rusqlite::Result<Option<TaskRow>> {
    let sql = format!("SELECT {COLUMNS} FROM tasks_items WHERE id = ?1 AND agent_id = ?2");
    c.prepare_cached(&sql)?.query_row(params![id, agent], row).optional()
}

impl SqliteTasks {
    async fn on_writer<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Connection) -> rusqlite::Result<T> + Send + 'static,
    ) -> Result<T, StoreError> {
        Ok(self.db.write(f).await??)
    }

    pub(super) async fn insert(&self, agent: &str, t: &TaskRow) -> Result<i64, StoreError> {
        let (agent, t) = (agent.to_owned(), t.clone());
        self.on_writer(move |c| {
            c.query_row(
                "INSERT INTO tasks_items (agent_id, title, notes, due_at, priority, status, steps, created_at,
                     updated_at, completed_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10) RETURNING id",
                params![
                    agent,
                    t.title,
                    t.notes,
                    t.due_at,
                    t.priority,
                    t.status,
                    t.steps,
                    t.created_at,
                    t.updated_at,
                    t.completed_at
                ],
                |r| r.get(0),
            )
        })
        .await
    }

    pub(super) async fn get(&self, agent: &str, id: i64) -> Result<Option<TaskRow>, StoreError> {
        let agent = agent.to_owned();
        self.on_writer(move |c| load(c, &agent, id)).await
    }

    pub(super) async fn list(&self, agent: &str) -> Result<Vec<TaskRow>, StoreError> {
        let agent = agent.to_owned();
        self.on_writer(move |c| {
            let mut stmt = c.prepare_cached(&format!("SELECT {COLUMNS} FROM tasks_items WHERE agent_id = ?1"))?;
            stmt.query_map([agent], row)?.collect()
        })
        .await
    }

    pub(super) async fn modify<R: Send + 'static>(
        &self,
        agent: &str,
        id: i64,
        edit: impl FnOnce(&mut TaskRow) -> Edited<R> + Send + 'static,
    ) -> Result<Option<R>, StoreError> {
        let agent = agent.to_owned();
        self.on_writer(move |c| {
            let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let Some(mut t) = load(&tx, &agent, id)? else { return Ok(None) };
            let said = match edit(&mut t) {
                Edited::Write(said) => said,
                Edited::Keep(said) => return Ok(Some(said)),
            };
            tx.execute(
                "UPDATE tasks_items SET title = ?1, notes = ?2, due_at = ?3, priority = ?4, status = ?5, steps = ?6,
                 updated_at = ?7, completed_at = ?8 WHERE id = ?9 AND agent_id = ?10",
                params![
                    t.title,
                    t.notes,
                    t.due_at,
                    t.priority,
                    t.status,
                    t.steps,
                    t.updated_at,
                    t.completed_at,
                    id,
                    agent
                ],
            )?;
            tx.commit()?;
            Ok(Some(said))
        })
        .await
    }

    pub(super) async fn delete<R: Send + 'static>(
        &self,
        agent: &str,
        id: i64,
        decide: impl FnOnce(&TaskRow) -> Edited<R> + Send + 'static,
    ) -> Result<Option<R>, StoreError> {
        let agent = agent.to_owned();
        self.on_writer(move |c| {
            let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let Some(found) = load(&tx, &agent, id)? else { return Ok(None) };
            let said = match decide(&found) {
                Edited::Write(said) => said,
                Edited::Keep(said) => return Ok(Some(said)),
            };
            tx.execute("DELETE FROM tasks_items WHERE id = ?1 AND agent_id = ?2", params![id, agent])?;
            tx.commit()?;
            Ok(Some(said))
        })
        .await
    }

    /// Every task in the file with its agent, by id (what [`super::PgTasks::adopt`] copies).
    pub(super) async fn all(&self) -> Result<Vec<(String, TaskRow)>, StoreError> {
        self.on_writer(|c| {
            let mut stmt = c.prepare(&format!("SELECT agent_id, {COLUMNS} FROM tasks_items ORDER BY id"))?;
            stmt.query_map([], |r| {
                Ok((
                    r.get(0)?,
                    TaskRow {
                        id: r.get(1)?,
                        title: r.get(2)?,
                        notes: r.get(3)?,
                        due_at: r.get(4)?,
                        priority: r.get(5)?,
                        status: r.get(6)?,
                        steps: r.get(7)?,
                        created_at: r.get(8)?,
                        updated_at: r.get(9)?,
                        completed_at: r.get(10)?,
                    },
                ))
            })?
            .collect()
        })
        .await
    }
}

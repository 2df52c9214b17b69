//! The tasks in PostgreSQL, shared by every instance on the database: an edit or a deletion locks the task's row
//! (`FOR UPDATE`) in its transaction, so two instances completing steps of one task each see the other's. The
//! one-time copy of a file's tasks ([`PgTasks::adopt`]) runs under a transaction advisory lock, so instances
//! starting together copy once.

use super::sqlite::SqliteTasks;
use super::{COLUMNS, Edited, TaskRow};
use crate::{PgStore, SqliteDb, StoreError};
use sqlx::postgres::PgRow;
use sqlx::{AssertSqlSafe, PgConnection, Row as _};

/// The tasks in PostgreSQL. Clones share the pool.
#[derive(Debug, Clone)]
pub struct PgTasks {
    pub(super) pg: PgStore,
}

fn row(r: &PgRow) -> Result<TaskRow, sqlx::Error> {
    Ok(TaskRow {
        id: r.try_get(0)?,
        title: r.try_get(1)?,
        notes: r.try_get(2)?,
        due_at: r.try_get(3)?,
        priority: r.try_get(4)?,
        status: r.try_get(5)?,
        steps: r.try_get(6)?,
        created_at: r.try_get(7)?,
        updated_at: r.try_get(8)?,
        completed_at: r.try_get(9)?,
    })
}

async fn load(c: &mut PgConnection, agent: &str, id: i64, lock: bool) -> Result<Option<TaskRow>, StoreError> {
    let sql = format!(
        "SELECT {COLUMNS} FROM tasks_items WHERE id = $1 AND agent_id = $2{}",
        if lock { " FOR UPDATE" } else { "" }
    );
    let found = sqlx::query(AssertSqlSafe(sql)).bind(id).bind(agent).fetch_optional(&mut *c).await?;
    Ok(found.as_ref().map(row).transpose()?)
}

impl PgTasks {
    pub(super) async fn insert(&self, agent: &str, t: &TaskRow) -> Result<i64, StoreError> {
        // In a transaction of its own so that a COMMIT whose answer was lost is read back, not retried into a
        // second task.
        let mut tx = self.pg.pool().begin().await?;
        let (id, xid): (i64, String) = sqlx::query_as(
            "INSERT INTO tasks_items (agent_id, title, notes, due_at, priority, status, steps, created_at,
                 updated_at, completed_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING id, pg_current_xact_id()::text",
        )
        .bind(agent)
        .bind(&t.title)
        .bind(&t.notes)
        .bind(&t.due_at)
        .bind(&t.priority)
        .bind(&t.status)
        .bind(&t.steps)
        .bind(&t.created_at)
        .bind(&t.updated_at)
        .bind(&t.completed_at)
        .fetch_one(&mut *tx)
        .await?;
        self.pg.commit(tx, &xid).await?;
        Ok(id)
    }

    pub(super) async fn get(&self, agent: &str, id: i64) -> Result<Option<TaskRow>, StoreError> {
        let mut conn = self.pg.pool().acquire().await?;
        load(&mut conn, agent, id, false).await
    }

    pub(super) async fn list(&self, agent: &str) -> Result<Vec<TaskRow>, StoreError> {
        let sql = format!("SELECT {COLUMNS} FROM tasks_items WHERE agent_id = $1");
        let found = sqlx::query(AssertSqlSafe(sql)).bind(agent).fetch_all(self.pg.pool()).await?;
        Ok(found.iter().map(row).collect::<Result<_, _>>()?)
    }

    pub(super) async fn modify<R: Send + 'static>(
        &self,
        agent: &str,
        id: i64,
        edit: impl FnOnce(&mut TaskRow) -> Edited<R> + Send + 'static,
    ) -> Result<Option<R>, StoreError> {
        let mut tx = self.pg.pool().begin().await?;
        let Some(mut t) = load(&mut tx, agent, id, true).await? else { return Ok(None) };
        let said = match edit(&mut t) {
            Edited::Write(said) => said,
            Edited::Keep(said) => return Ok(Some(said)),
        };
        sqlx::query(
            "UPDATE tasks_items SET title = $1, notes = $2, due_at = $3, priority = $4, status = $5, steps = $6,
             updated_at = $7, completed_at = $8 WHERE id = $9 AND agent_id = $10",
        )
        .bind(t.title)
        .bind(t.notes)
        .bind(t.due_at)
        .bind(t.priority)
        .bind(t.status)
        .bind(t.steps)
        .bind(t.updated_at)
        .bind(t.completed_at)
        .bind(id)
        .bind(agent)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(Some(said))
    }

    pub(super) async fn delete<R: Send + 'static>(
        &self,
        agent: &str,
        id: i64,
        decide: impl FnOnce(&TaskRow) -> Edited<R> + Send + 'static,
    ) -> Result<Option<R>, StoreError> {
        let mut tx = self.pg.pool().begin().await?;
        let Some(found) = load(&mut tx, agent, id, true).await? else { return Ok(None) };
        let said = match decide(&found) {
            Edited::Write(said) => said,
            Edited::Keep(said) => return Ok(Some(said)),
        };
        sqlx::query("DELETE FROM tasks_items WHERE id = $1 AND agent_id = $2")
            .bind(id)
            .bind(agent)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(Some(said))
    }

    /// Copies the tasks an instance kept in its SQLite file (`file`, its tables migrated) into this database, once:
    /// when it holds no task yet (under a lock, so instances starting together copy once), keeping their ids, so
    /// what an agent noted about task 7 still names task 7. The number copied; 0 when the database already had tasks
    /// or the file has none (the file keeps its rows).
    pub async fn adopt(&self, file: &SqliteDb) -> Result<usize, StoreError> {
        let rows = SqliteTasks { db: file.clone() }.all().await?;
        if rows.is_empty() {
            return Ok(0);
        }
        let count = rows.len();
        let mut tx = self.pg.pool().begin().await?;
        sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended('holdfast.tasks/adopt', 0))")
            .execute(&mut *tx)
            .await?;
        let any: bool = sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM tasks_items)").fetch_one(&mut *tx).await?;
        if any {
            return Ok(0);
        }
        for (agent, r) in rows {
            sqlx::query(
                "INSERT INTO tasks_items (agent_id, id, title, notes, due_at, priority, status, steps,
                         created_at, updated_at, completed_at)
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
            )
            .bind(agent)
            .bind(r.id)
            .bind(r.title)
            .bind(r.notes)
            .bind(r.due_at)
            .bind(r.priority)
            .bind(r.status)
            .bind(r.steps)
            .bind(r.created_at)
            .bind(r.updated_at)
            .bind(r.completed_at)
            .execute(&mut *tx)
            .await?;
        }
        sqlx::query("SELECT setval(pg_get_serial_sequence('tasks_items', 'id'), (SELECT max(id) FROM tasks_items))")
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(count)
    }
}

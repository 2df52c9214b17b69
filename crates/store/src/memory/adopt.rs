//! Moving to PostgreSQL without losing memory: the blocks and history an instance kept in its data dir's SQLite
//! file are copied into the shared database once, when it holds no block yet.

use super::postgres::PgMemory;
use crate::{PgStore, SqliteDb, StoreError};

impl PgMemory {
    /// See [`super::MemoryTable::adopt`].
    pub(super) async fn adopt(&self, file: &SqliteDb) -> Result<Adopted, StoreError> {
        let (blocks, history) = file
            .read(|c| -> rusqlite::Result<_> {
                let mut stmt = c.prepare(
                    "SELECT agent_id, label, value, description, permission, char_limit, pinned, created_at, updated_at,
                         written_by
                     FROM memory_blocks ORDER BY id",
                )?;
                let blocks = stmt
                    .query_map([], |r| {
                        Ok(LocalBlock {
                            agent: r.get(0)?,
                            label: r.get(1)?,
                            value: r.get(2)?,
                            description: r.get(3)?,
                            permission: r.get(4)?,
                            char_limit: r.get(5)?,
                            pinned: r.get::<_, i64>(6)? != 0,
                            created_at: r.get(7)?,
                            updated_at: r.get(8)?,
                            written_by: r.get(9)?,
                        })
                    })?
                    .collect::<rusqlite::Result<Vec<_>>>()?;
                let mut stmt = c.prepare(
                    "SELECT agent_id, label, actor, op, old_value, new_value, at FROM memory_history ORDER BY id",
                )?;
                let history = stmt
                    .query_map([], |r| {
                        Ok(LocalEdit {
                            agent: r.get(0)?,
                            label: r.get(1)?,
                            actor: r.get(2)?,
                            op: r.get(3)?,
                            old: r.get(4)?,
                            new: r.get(5)?,
                            at: r.get(6)?,
                        })
                    })?
                    .collect::<rusqlite::Result<Vec<_>>>()?;
                Ok((blocks, history))
            })
            .await??;
        if blocks.is_empty() {
            return Ok(Adopted::Nothing);
        }
        let local = blocks.len();
        match copy_in(self.pg.clone(), blocks, history).await? {
            true => Ok(Adopted::Copied { blocks: local }),
            false => Ok(Adopted::AlreadyShared { local }),
        }
    }
}

/// What [`MemoryTable::adopt`](super::MemoryTable::adopt) did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Adopted {
    /// The SQLite file holds no memory.
    Nothing,
    /// Its blocks (and their history) were copied.
    Copied {
        /// Blocks copied.
        blocks: usize,
    },
    /// The database already held memory: the file's `local` blocks were left where they are, unused.
    AlreadyShared {
        /// Blocks in the file.
        local: usize,
    },
}

struct LocalBlock {
    agent: String,
    label: String,
    value: String,
    description: Option<String>,
    permission: String,
    char_limit: i64,
    pinned: bool,
    written_by: Option<String>,
    created_at: String,
    updated_at: String,
}

struct LocalEdit {
    agent: String,
    label: String,
    actor: String,
    op: String,
    old: Option<String>,
    new: String,
    at: String,
}

/// Copies the rows in one transaction when the database has no block yet; `false` when it had.
async fn copy_in(store: PgStore, blocks: Vec<LocalBlock>, history: Vec<LocalEdit>) -> Result<bool, StoreError> {
    let mut tx = store.pool().begin().await?;
    sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended('holdfast.memory/adopt', 0))").execute(&mut *tx).await?;
    let any: bool = sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM memory_blocks)").fetch_one(&mut *tx).await?;
    if any {
        return Ok(false);
    }
    let col = |f: fn(&LocalBlock) -> String| blocks.iter().map(f).collect::<Vec<_>>();
    sqlx::query(
        "INSERT INTO memory_blocks (agent_id, label, value, description, permission, char_limit, pinned, created_at,
             updated_at, written_by)
         SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::bigint[], $7::bool[],
             $8::text[], $9::text[], $10::text[])",
    )
    .bind(col(|b| b.agent.clone()))
    .bind(col(|b| b.label.clone()))
    .bind(col(|b| b.value.clone()))
    .bind(blocks.iter().map(|b| b.description.clone()).collect::<Vec<_>>())
    .bind(col(|b| b.permission.clone()))
    .bind(blocks.iter().map(|b| b.char_limit).collect::<Vec<_>>())
    .bind(blocks.iter().map(|b| b.pinned).collect::<Vec<_>>())
    .bind(col(|b| b.created_at.clone()))
    .bind(col(|b| b.updated_at.clone()))
    .bind(blocks.iter().map(|b| b.written_by.clone()).collect::<Vec<_>>())
    .execute(&mut *tx)
    .await?;
    let col = |f: fn(&LocalEdit) -> String| history.iter().map(f).collect::<Vec<_>>();
    sqlx::query(
        "INSERT INTO memory_history (agent_id, label, actor, op, old_value, new_value, at)
         SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[])",
    )
    .bind(col(|e| e.agent.clone()))
    .bind(col(|e| e.label.clone()))
    .bind(col(|e| e.actor.clone()))
    .bind(col(|e| e.op.clone()))
    .bind(history.iter().map(|e| e.old.clone()).collect::<Vec<_>>())
    .bind(col(|e| e.new.clone()))
    .bind(col(|e| e.at.clone()))
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(true)
}

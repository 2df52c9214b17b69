//! The SQLite memory store: blocks in `memory_blocks`, every edit in `memory_history`, both full-text indexed
//! (`memory_fts_values` keyed by block id, `memory_fts_history` keyed by history id), embeddings cached in
//! `memory_embeddings`.

use super::{CachedEmbedding, EditFn, MemoryStore, edit_entry};
use crate::blocks::block::{BlockEdit, EditOp, MemoryBlock, Modified, Permission};
use crate::clock::{fmt_time, parse_time};
use crate::db::Database;
use crate::error::{MemoryError, Result};
use crate::search::query::{HitSource, TextHit, fts_query, merge_hits};
use holdfast_core::tool::BoxFuture;
use rusqlite::{Connection, OptionalExtension, Row, params};
use std::path::Path;

/// Memory blocks in SQLite. Clones share the database.
#[derive(Debug, Clone)]
pub struct SqliteMemoryStore {
    db: Database,
}

impl SqliteMemoryStore {
    /// Opens (creating) the database file at `path` (WAL mode, migrations run).
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        Ok(Self { db: Database::open(path)? })
    }

    /// A store on an already open database (shared with the router, tasks and reminders).
    pub fn new(db: Database) -> Self {
        Self { db }
    }

    /// The database.
    pub fn database(&self) -> &Database {
        &self.db
    }
}

const BLOCK_COLUMNS: &str = "id, label, value, description, permission, char_limit, pinned, created_at, updated_at";

fn time_col(row: &Row<'_>, idx: usize) -> rusqlite::Result<chrono::DateTime<chrono::Utc>> {
    let s: String = row.get(idx)?;
    parse_time(&s).ok_or_else(|| {
        rusqlite::Error::FromSqlConversionFailure(idx, rusqlite::types::Type::Text, format!("bad time {s:?}").into())
    })
}

fn block_from_row(row: &Row<'_>) -> rusqlite::Result<(i64, MemoryBlock)> {
    let permission: String = row.get(4)?;
    let permission = Permission::parse(&permission).ok_or_else(|| {
        rusqlite::Error::FromSqlConversionFailure(
            4,
            rusqlite::types::Type::Text,
            format!("bad permission {permission:?}").into(),
        )
    })?;
    let limit: i64 = row.get(5)?;
    Ok((
        row.get(0)?,
        MemoryBlock {
            label: row.get(1)?,
            value: row.get(2)?,
            description: row.get(3)?,
            permission,
            char_limit: usize::try_from(limit).unwrap_or(0),
            pinned: row.get::<_, i64>(6)? != 0,
            created_at: time_col(row, 7)?,
            updated_at: time_col(row, 8)?,
        },
    ))
}

fn get_block(conn: &Connection, agent: &str, label: &str) -> Result<Option<(i64, MemoryBlock)>> {
    Ok(conn
        .query_row(
            &format!("SELECT {BLOCK_COLUMNS} FROM memory_blocks WHERE agent_id = ?1 AND label = ?2"),
            params![agent, label],
            block_from_row,
        )
        .optional()?)
}

fn to_i64(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// Applies one atomic edit on an open connection (shared by the store and by runtime set-up code).
pub(crate) fn modify_on(conn: &mut Connection, agent: &str, label: &str, edit: EditFn) -> Result<Modified> {
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    let existing = get_block(&tx, agent, label)?;
    let before = existing.as_ref().map(|(_, b)| b.clone());
    let Some(write) = edit(before.as_ref())? else {
        return Ok(Modified { before, after: None });
    };
    if write.block.label != label {
        return Err(MemoryError::internal("an edit may not rename a block"));
    }
    let b = &write.block;
    let block_id: i64 = tx.query_row(
        "INSERT INTO memory_blocks (agent_id, label, value, description, permission, char_limit, pinned, created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
         ON CONFLICT (agent_id, label) DO UPDATE SET
             value = excluded.value, description = excluded.description, permission = excluded.permission,
             char_limit = excluded.char_limit, pinned = excluded.pinned, updated_at = excluded.updated_at
         RETURNING id",
        params![
            agent,
            b.label,
            b.value,
            b.description,
            b.permission.as_str(),
            to_i64(b.char_limit),
            i64::from(b.pinned),
            fmt_time(b.created_at),
            fmt_time(b.updated_at)
        ],
        |r| r.get(0),
    )?;
    let entry = edit_entry(0, before.as_ref(), &write);
    let history_id: i64 = tx.query_row(
        "INSERT INTO memory_history (agent_id, label, actor, op, old_value, new_value, at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) RETURNING id",
        params![agent, entry.label, entry.actor, entry.op.as_str(), entry.old, entry.new, fmt_time(entry.at)],
        |r| r.get(0),
    )?;
    let value_changed = before.as_ref().map(|p| p.value != b.value).unwrap_or(true);
    if value_changed {
        tx.execute("DELETE FROM memory_fts_values WHERE rowid = ?1", [block_id])?;
        tx.execute("INSERT INTO memory_fts_values (rowid, content) VALUES (?1, ?2)", params![block_id, b.value])?;
        if let Some(old) = before.as_ref().map(|p| &p.value).filter(|v| !v.is_empty()) {
            tx.execute("INSERT INTO memory_fts_history (rowid, content) VALUES (?1, ?2)", params![history_id, old])?;
        }
    }
    tx.commit()?;
    Ok(Modified { before, after: Some(write.block) })
}

/// The statements, run on the current thread (a blocking context).
impl SqliteMemoryStore {
    fn now_get(&self, agent: &str, label: &str) -> Result<Option<MemoryBlock>> {
        self.db.read(|c| Ok(get_block(c, agent, label)?.map(|(_, b)| b)))
    }

    fn now_list(&self, agent: &str) -> Result<Vec<MemoryBlock>> {
        self.db.read(|c| {
            let mut stmt = c.prepare_cached(&format!(
                "SELECT {BLOCK_COLUMNS} FROM memory_blocks WHERE agent_id = ?1 ORDER BY label"
            ))?;
            let rows = stmt.query_map([agent], block_from_row)?;
            Ok(rows.map(|r| r.map(|(_, b)| b)).collect::<rusqlite::Result<Vec<_>>>()?)
        })
    }

    fn now_modify(&self, agent: &str, label: &str, edit: EditFn) -> Result<Modified> {
        self.db.with_conn(|c| modify_on(c, agent, label, edit))
    }

    fn now_delete(&self, agent: &str, label: &str) -> Result<bool> {
        self.db.with_conn(|c| {
            let tx = c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            let id: Option<i64> = tx
                .query_row(
                    "SELECT id FROM memory_blocks WHERE agent_id = ?1 AND label = ?2",
                    params![agent, label],
                    |r| r.get(0),
                )
                .optional()?;
            if let Some(id) = id {
                tx.execute("DELETE FROM memory_fts_values WHERE rowid = ?1", [id])?;
                tx.execute("DELETE FROM memory_blocks WHERE id = ?1", [id])?;
                tx.execute("DELETE FROM memory_embeddings WHERE agent_id = ?1 AND label = ?2", params![agent, label])?;
            }
            tx.commit()?;
            Ok(id.is_some())
        })
    }

    fn now_history(&self, agent: &str, label: &str, limit: usize) -> Result<Vec<BlockEdit>> {
        self.db.read(|c| {
            let mut stmt = c.prepare_cached(
                "SELECT id, label, actor, op, old_value, new_value, at FROM memory_history
                 WHERE agent_id = ?1 AND label = ?2 ORDER BY id DESC LIMIT ?3",
            )?;
            let rows = stmt.query_map(params![agent, label, to_i64(limit)], |row| {
                let op: String = row.get(3)?;
                Ok(BlockEdit {
                    id: row.get(0)?,
                    label: row.get(1)?,
                    actor: row.get(2)?,
                    op: EditOp::parse(&op).unwrap_or(EditOp::System),
                    old: row.get(4)?,
                    new: row.get(5)?,
                    at: time_col(row, 6)?,
                })
            })?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
    }

    /// [`MemoryStore::search`] on the current thread (a blocking context: it waits for SQLite). The async method
    /// runs this on tokio's blocking pool.
    pub fn search_blocking(&self, agent: &str, terms: &[String], limit: usize) -> Result<Vec<TextHit>> {
        if terms.is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        let query = fts_query(terms);
        self.db.read(|c| {
            // One read transaction: the values, the history's ranking and its snippets from one snapshot.
            let c = &c.unchecked_transaction()?;
            // Ordered by FTS5's own `rank` column (bm25): FTS5 then hands rows over best first, so the snippets are
            // made for the rows returned, not for every match (ordering by an alias of `bm25()` sorts after
            // computing every result column, snippets included).
            let mut values = c.prepare_cached(
                "SELECT b.label, snippet(memory_fts_values, 0, '[', ']', '…', 16), memory_fts_values.rank, b.updated_at
                 FROM memory_fts_values JOIN memory_blocks b ON b.id = memory_fts_values.rowid
                 WHERE memory_fts_values MATCH ?1 AND b.agent_id = ?2
                 ORDER BY memory_fts_values.rank LIMIT ?3",
            )?;
            let value_hits = values
                .query_map(params![query, agent, to_i64(limit)], |r| hit(r, HitSource::Value))?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            // Best history row per block (auxiliary functions cannot run under a window function, so the
            // grouping happens here), skipping blocks whose current value already matched.
            let mut ranked = c.prepare_cached(
                "SELECT h.label, h.id
                 FROM memory_fts_history JOIN memory_history h ON h.id = memory_fts_history.rowid
                 WHERE memory_fts_history MATCH ?1 AND h.agent_id = ?2
                 ORDER BY memory_fts_history.rank",
            )?;
            let rows = ranked
                .query_map(params![query, agent], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            let mut best: Vec<(String, i64)> = Vec::new();
            for (label, id) in rows {
                if best.len() >= limit {
                    break;
                }
                if !value_hits.iter().any(|h| h.label == label) && !best.iter().any(|(l, _)| *l == label) {
                    best.push((label, id));
                }
            }
            let mut snippet = c.prepare_cached(
                "SELECT h.label, snippet(memory_fts_history, 0, '[', ']', '…', 16), bm25(memory_fts_history), h.at
                 FROM memory_fts_history JOIN memory_history h ON h.id = memory_fts_history.rowid
                 WHERE memory_fts_history MATCH ?1 AND memory_fts_history.rowid = ?2",
            )?;
            let mut history_hits = Vec::with_capacity(best.len());
            for (_, id) in best {
                if let Some(hit) = snippet.query_row(params![query, id], |r| hit(r, HitSource::History)).optional()? {
                    history_hits.push(hit);
                }
            }
            Ok(merge_hits(value_hits, history_hits, limit))
        })
    }

    fn now_cached_embeddings(&self, agent: &str, model: &str) -> Result<Vec<CachedEmbedding>> {
        self.db.read(|c| {
            let mut stmt = c.prepare_cached(
                "SELECT label, content_hash, vector FROM memory_embeddings WHERE agent_id = ?1 AND model = ?2",
            )?;
            let rows = stmt.query_map(params![agent, model], |r| {
                let bytes: Vec<u8> = r.get(2)?;
                Ok(CachedEmbedding { label: r.get(0)?, content_hash: r.get(1)?, vector: decode_vector(&bytes) })
            })?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
    }

    fn now_store_embedding(&self, agent: &str, model: &str, e: CachedEmbedding) -> Result<()> {
        let bytes = encode_vector(&e.vector);
        self.db.with_conn(|c| {
            c.execute(
                "INSERT INTO memory_embeddings (agent_id, label, model, content_hash, vector) VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT (agent_id, label, model) DO UPDATE SET content_hash = excluded.content_hash, vector = excluded.vector",
                params![agent, e.label, model, e.content_hash, bytes],
            )?;
            Ok(())
        })
    }

    /// Runs `f` on tokio's blocking pool: the async runtime never waits on SQLite.
    fn blocking<'a, R: Send + 'static>(
        &'a self,
        f: impl FnOnce(&Self) -> Result<R> + Send + 'static,
    ) -> BoxFuture<'a, Result<R>> {
        crate::db::on_blocking_pool(self, "memory", f)
    }
}

impl MemoryStore for SqliteMemoryStore {
    fn get<'a>(&'a self, agent: &'a str, label: &'a str) -> BoxFuture<'a, Result<Option<MemoryBlock>>> {
        let (agent, label) = (agent.to_owned(), label.to_owned());
        self.blocking(move |s| s.now_get(&agent, &label))
    }

    fn list<'a>(&'a self, agent: &'a str) -> BoxFuture<'a, Result<Vec<MemoryBlock>>> {
        let agent = agent.to_owned();
        self.blocking(move |s| s.now_list(&agent))
    }

    fn modify<'a>(&'a self, agent: &'a str, label: &'a str, edit: EditFn) -> BoxFuture<'a, Result<Modified>> {
        let (agent, label) = (agent.to_owned(), label.to_owned());
        self.blocking(move |s| s.now_modify(&agent, &label, edit))
    }

    fn delete<'a>(&'a self, agent: &'a str, label: &'a str) -> BoxFuture<'a, Result<bool>> {
        let (agent, label) = (agent.to_owned(), label.to_owned());
        self.blocking(move |s| s.now_delete(&agent, &label))
    }

    fn history<'a>(&'a self, agent: &'a str, label: &'a str, limit: usize) -> BoxFuture<'a, Result<Vec<BlockEdit>>> {
        let (agent, label) = (agent.to_owned(), label.to_owned());
        self.blocking(move |s| s.now_history(&agent, &label, limit))
    }

    fn search<'a>(&'a self, agent: &'a str, terms: &'a [String], limit: usize) -> BoxFuture<'a, Result<Vec<TextHit>>> {
        let (agent, terms) = (agent.to_owned(), terms.to_vec());
        self.blocking(move |s| s.search_blocking(&agent, &terms, limit))
    }

    fn cached_embeddings<'a>(&'a self, agent: &'a str, model: &'a str) -> BoxFuture<'a, Result<Vec<CachedEmbedding>>> {
        let (agent, model) = (agent.to_owned(), model.to_owned());
        self.blocking(move |s| s.now_cached_embeddings(&agent, &model))
    }

    fn store_embedding<'a>(&'a self, agent: &'a str, model: &'a str, e: CachedEmbedding) -> BoxFuture<'a, Result<()>> {
        let (agent, model) = (agent.to_owned(), model.to_owned());
        self.blocking(move |s| s.now_store_embedding(&agent, &model, e))
    }

    fn kind(&self) -> &'static str {
        "sqlite"
    }
}

fn hit(r: &Row<'_>, source: HitSource) -> rusqlite::Result<TextHit> {
    let rank: f64 = r.get(2)?;
    Ok(TextHit { label: r.get(0)?, source, snippet: r.get(1)?, score: -rank, at: time_col(r, 3)? })
}

pub(super) fn encode_vector(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

pub(super) fn decode_vector(bytes: &[u8]) -> Vec<f32> {
    bytes.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors_round_trip() {
        let v = vec![0.5f32, -1.25, 3.0e-7];
        assert_eq!(decode_vector(&encode_vector(&v)), v);
    }
}

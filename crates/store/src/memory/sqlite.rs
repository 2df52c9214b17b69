//! Memory's tables in the SQLite file: blocks in `memory_blocks`, every edit in `memory_history`, both full-text
//! indexed with FTS5 (`memory_fts_values` keyed by block id, `memory_fts_history` keyed by history id, the
//! `porter unicode61` tokenizer), embeddings in `memory_embeddings`. Writes run on the process's one writing
//! connection (an edit is one `IMMEDIATE` transaction); reads on a read-only one. The full-text indexes are merged into
//! one segment each in the background as they grow ([`super::compact`]).

use super::compact::Compactor;
use super::{BlockRow, BlockWrite, EditRow, EmbeddingRow, HitRow, Hits, decode_vector, encode_vector, to_i64};
use crate::{SqliteDb, StoreError};
use rusqlite::{Connection, OptionalExtension, Row, params};
use std::sync::Arc;

const BLOCK_COLUMNS: &str =
    "label, value, description, permission, char_limit, pinned, created_at, updated_at, written_by";

/// Memory's tables in SQLite. Clones share the handle and the background merge of the full-text indexes.
#[derive(Debug, Clone)]
pub struct SqliteMemory {
    db: SqliteDb,
    compactor: Arc<Compactor>,
}

/// A block from a row of [`BLOCK_COLUMNS`].
fn block(r: &Row<'_>) -> rusqlite::Result<BlockRow> {
    Ok(BlockRow {
        label: r.get(0)?,
        value: r.get(1)?,
        description: r.get(2)?,
        permission: r.get(3)?,
        char_limit: r.get(4)?,
        pinned: r.get::<_, i64>(5)? != 0,
        created_at: r.get(6)?,
        updated_at: r.get(7)?,
        written_by: r.get(8)?,
    })
}

fn get_block(c: &Connection, agent: &str, label: &str) -> rusqlite::Result<Option<BlockRow>> {
    c.query_row(
        &format!("SELECT {BLOCK_COLUMNS} FROM memory_blocks WHERE agent_id = ?1 AND label = ?2"),
        params![agent, label],
        block,
    )
    .optional()
}

/// Writes `write` as block (`agent`, `label`) over `before` (its id and row), with its history row and the full-text
/// index kept in step, inside the caller's transaction; whether the full-text index was written.
fn write_block(
    tx: &rusqlite::Transaction<'_>,
    agent: &str,
    label: &str,
    before: Option<&BlockRow>,
    write: &BlockWrite,
) -> rusqlite::Result<bool> {
    let b = &write.block;
    let block_id: i64 = tx.query_row(
        "INSERT INTO memory_blocks
             (agent_id, label, value, description, permission, char_limit, pinned, created_at, updated_at, written_by)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)
         ON CONFLICT (agent_id, label) DO UPDATE SET
             value = excluded.value, description = excluded.description, permission = excluded.permission,
             char_limit = excluded.char_limit, pinned = excluded.pinned, updated_at = excluded.updated_at,
             written_by = excluded.written_by
         RETURNING id",
        params![
            agent,
            label,
            b.value,
            b.description,
            b.permission,
            b.char_limit,
            i64::from(b.pinned),
            b.created_at,
            b.updated_at,
            b.written_by
        ],
        |r| r.get(0),
    )?;
    let old = before.map(|p| &p.value);
    let history_id: i64 = tx.query_row(
        "INSERT INTO memory_history (agent_id, label, actor, op, old_value, new_value, at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) RETURNING id",
        params![agent, label, write.actor, write.op, old, b.value, b.updated_at],
        |r| r.get(0),
    )?;
    if old != Some(&b.value) {
        tx.execute("DELETE FROM memory_fts_values WHERE rowid = ?1", [block_id])?;
        tx.execute("INSERT INTO memory_fts_values (rowid, content) VALUES (?1, ?2)", params![block_id, b.value])?;
        if let Some(old) = old.filter(|v| !v.is_empty()) {
            tx.execute("INSERT INTO memory_fts_history (rowid, content) VALUES (?1, ?2)", params![history_id, old])?;
        }
        return Ok(true);
    }
    Ok(false)
}

/// The FTS5 query for the terms: each quoted (so no term is an operator), joined with `OR`.
fn fts_query(terms: &[String]) -> String {
    terms.iter().map(|t| format!("\"{}\"", t.replace('"', "\"\""))).collect::<Vec<_>>().join(" OR ")
}

fn hit(r: &Row<'_>) -> rusqlite::Result<HitRow> {
    let rank: f64 = r.get(2)?;
    Ok(HitRow { label: r.get(0)?, snippet: r.get(1)?, score: -rank, at: r.get(3)? })
}

impl SqliteMemory {
    pub(super) fn open(db: &SqliteDb) -> Result<Self, StoreError> {
        crate::migrate::sqlite(&mut db.lock(), &crate::schema::MEMORY)?;
        Ok(Self::on_migrated(db))
    }

    pub(super) fn on_migrated(db: &SqliteDb) -> Self {
        Self { db: db.clone(), compactor: db.shared::<Compactor>() }
    }

    /// Merges the full-text indexes into one segment each now ([`super::compact`]), after any merge running.
    pub(super) async fn merge_index(&self) -> Result<(), StoreError> {
        let (db, compactor) = (self.db.clone(), Arc::clone(&self.compactor));
        tokio::task::spawn_blocking(move || compactor.merge_now(&db))
            .await
            .map_err(|e| StoreError::Query(format!("a database task failed: {e}")))?
    }

    /// Waits until no background merge of the full-text indexes runs.
    pub(super) async fn index_merged(&self) -> Result<(), StoreError> {
        let compactor = Arc::clone(&self.compactor);
        tokio::task::spawn_blocking(move || compactor.wait_idle())
            .await
            .map_err(|e| StoreError::Query(format!("a database task failed: {e}")))
    }

    async fn read<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Connection) -> rusqlite::Result<T> + Send + 'static,
    ) -> Result<T, StoreError> {
        Ok(self.db.read(f).await??)
    }

    async fn write<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Connection) -> rusqlite::Result<T> + Send + 'static,
    ) -> Result<T, StoreError> {
        Ok(self.db.write(f).await??)
    }

    pub(super) async fn get(&self, agent: &str, label: &str) -> Result<Option<BlockRow>, StoreError> {
        let (agent, label) = (agent.to_owned(), label.to_owned());
        self.read(move |c| get_block(c, &agent, &label)).await
    }

    pub(super) async fn list(&self, agent: &str) -> Result<Vec<BlockRow>, StoreError> {
        let agent = agent.to_owned();
        self.read(move |c| {
            let mut stmt = c.prepare_cached(&format!(
                "SELECT {BLOCK_COLUMNS} FROM memory_blocks WHERE agent_id = ?1 ORDER BY label"
            ))?;
            let rows = stmt.query_map([agent], block)?;
            rows.collect()
        })
        .await
    }

    pub(super) async fn modify<T, E>(
        &self,
        agent: &str,
        label: &str,
        edit: impl FnOnce(Option<BlockRow>) -> Result<(Option<BlockWrite>, T), E> + Send + 'static,
    ) -> Result<T, E>
    where
        T: Send + 'static,
        E: From<StoreError> + Send + 'static,
    {
        let (agent, label) = (agent.to_owned(), label.to_owned());
        let done = self.db.write(move |c| -> Result<(T, bool), E> {
            let sql = |e: rusqlite::Error| E::from(StoreError::from(e));
            let tx = c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate).map_err(sql)?;
            let before = get_block(&tx, &agent, &label).map_err(sql)?;
            let (write, out) = edit(before.clone())?;
            let mut indexed = false;
            if let Some(write) = write {
                indexed = write_block(&tx, &agent, &label, before.as_ref(), &write).map_err(sql)?;
                tx.commit().map_err(sql)?;
            }
            Ok((out, indexed))
        });
        let (out, indexed) = done.await.map_err(E::from)??;
        if indexed {
            self.compactor.wrote(&self.db);
        }
        Ok(out)
    }

    pub(super) async fn delete(&self, agent: &str, label: &str) -> Result<bool, StoreError> {
        let (agent, label) = (agent.to_owned(), label.to_owned());
        self.write(move |c| {
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
        .await
        .inspect(|&deleted| {
            if deleted {
                self.compactor.wrote(&self.db);
            }
        })
    }

    pub(super) async fn history(&self, agent: &str, label: &str, limit: usize) -> Result<Vec<EditRow>, StoreError> {
        let (agent, label) = (agent.to_owned(), label.to_owned());
        self.read(move |c| {
            let mut stmt = c.prepare_cached(
                "SELECT id, label, actor, op, old_value, new_value, at FROM memory_history
                 WHERE agent_id = ?1 AND label = ?2 ORDER BY id DESC LIMIT ?3",
            )?;
            let rows = stmt.query_map(params![agent, label, to_i64(limit)], |r| {
                Ok(EditRow {
                    id: r.get(0)?,
                    label: r.get(1)?,
                    actor: r.get(2)?,
                    op: r.get(3)?,
                    old: r.get(4)?,
                    new: r.get(5)?,
                    at: r.get(6)?,
                })
            })?;
            rows.collect()
        })
        .await
    }

    pub(super) async fn search(&self, agent: &str, terms: &[String], limit: usize) -> Result<Hits, StoreError> {
        let (agent, query) = (agent.to_owned(), fts_query(terms));
        self.read(move |c| search_on(c, &agent, &query, limit)).await
    }

    pub(super) fn search_blocking(&self, agent: &str, terms: &[String], limit: usize) -> Result<Hits, StoreError> {
        if terms.is_empty() || limit == 0 {
            return Ok(Hits::default());
        }
        let query = fts_query(terms);
        Ok(self.db.read_blocking(|c| search_on(c, agent, &query, limit))?)
    }

    pub(super) async fn embeddings(&self, agent: &str, model: &str) -> Result<Vec<EmbeddingRow>, StoreError> {
        let (agent, model) = (agent.to_owned(), model.to_owned());
        self.read(move |c| {
            let mut stmt = c.prepare_cached(
                "SELECT label, content_hash, vector FROM memory_embeddings WHERE agent_id = ?1 AND model = ?2",
            )?;
            let rows = stmt.query_map(params![agent, model], |r| {
                let bytes: Vec<u8> = r.get(2)?;
                Ok(EmbeddingRow { label: r.get(0)?, content_hash: r.get(1)?, vector: decode_vector(&bytes) })
            })?;
            rows.collect()
        })
        .await
    }

    pub(super) async fn store_embedding(&self, agent: &str, model: &str, e: EmbeddingRow) -> Result<(), StoreError> {
        let (agent, model, bytes) = (agent.to_owned(), model.to_owned(), encode_vector(&e.vector));
        self.write(move |c| {
            c.execute(
                "INSERT INTO memory_embeddings (agent_id, label, model, content_hash, vector) VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT (agent_id, label, model) DO UPDATE SET content_hash = excluded.content_hash, vector = excluded.vector",
                params![agent, e.label, model, e.content_hash, bytes],
            )?;
            Ok(())
        })
        .await
    }
}

/// The search's statements, in one read transaction: the values, the history's ranking and its snippets from one
/// snapshot.
fn search_on(c: &Connection, agent: &str, query: &str, limit: usize) -> rusqlite::Result<Hits> {
    let c = &c.unchecked_transaction()?;
    // Ordered by FTS5's own `rank` column (bm25): FTS5 then hands rows over best first, so the snippets are made for
    // the rows returned, not for every match (ordering by an alias of `bm25()` sorts after computing every result
    // column, snippets included).
    let mut values = c.prepare_cached(
        "SELECT b.label, snippet(memory_fts_values, 0, '[', ']', '…', 16), memory_fts_values.rank, b.updated_at
         FROM memory_fts_values JOIN memory_blocks b ON b.id = memory_fts_values.rowid
         WHERE memory_fts_values MATCH ?1 AND b.agent_id = ?2
         ORDER BY memory_fts_values.rank LIMIT ?3",
    )?;
    let values = values.query_map(params![query, agent, to_i64(limit)], hit)?.collect::<rusqlite::Result<Vec<_>>>()?;
    // Best history row per block (auxiliary functions cannot run under a window function, so the grouping happens
    // here), skipping blocks whose current value already matched.
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
        if !values.iter().any(|h| h.label == label) && !best.iter().any(|(l, _)| *l == label) {
            best.push((label, id));
        }
    }
    let mut snippet = c.prepare_cached(
        "SELECT h.label, snippet(memory_fts_history, 0, '[', ']', '…', 16), bm25(memory_fts_history), h.at
         FROM memory_fts_history JOIN memory_history h ON h.id = memory_fts_history.rowid
         WHERE memory_fts_history MATCH ?1 AND memory_fts_history.rowid = ?2",
    )?;
    let mut history = Vec::with_capacity(best.len());
    for (_, id) in best {
        if let Some(hit) = snippet.query_row(params![query, id], hit).optional()? {
            history.push(hit);
        }
    }
    Ok(Hits { values, history })
}

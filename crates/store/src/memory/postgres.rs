//! Memory's tables in PostgreSQL, shared by several instances, so an agent's memory is one memory whichever instance
//! serves it. Full-text search is PostgreSQL's own: a generated `tsvector` column (configuration `holdfast_english`:
//! snowball stemming, no stop words, like FTS5's porter tokenizer) with a GIN index on block values and on the values
//! edits replaced; ranking by `ts_rank` (term frequency, normalized by the document's length, as BM25 is in FTS5),
//! snippets by `ts_headline`.
//!
//! The text is indexed like FTS5 does it: every run of characters other than letters and digits separates words (so
//! `vitalik.eth` is `vitalik` and `eth`, not one host-name token), words are stemmed by PostgreSQL's snowball
//! `english` stemmer, and no word is dropped as a stop word (configuration `holdfast_english`). A value's first
//! 256 Ki characters are indexed (a `tsvector` is limited to 1 MB). The GIN indexes are updated with each write
//! (`fastupdate = off`): memory is written far less often than searched, and a pending list of unmerged entries
//! would make every search scan it (50 ms instead of 8 at 100,000 blocks, right after a bulk load).
//!
//! An edit is atomic per block across instances: its transaction first takes a transaction-scoped advisory lock on
//! (agent, label), so a second edit of the same block — on this instance or another, even of a block that does not
//! exist yet — waits (at most [`LOCK_WAIT`]), then reads what the first wrote. Edits of different blocks run in
//! parallel.
//!
//! Queries run on the process's pool ([`PgStore`]), which every table's owner shares.

use super::{BlockRow, BlockWrite, EditRow, EmbeddingRow, HitRow, Hits, decode_vector, encode_vector, to_i64};
use crate::{PgStore, StoreError};
use sqlx::Row;
use sqlx::postgres::PgRow;

/// How long an edit waits for another edit of the same block before it gives up.
const LOCK_WAIT: &str = "30s";

const BLOCK_COLUMNS: &str =
    "label, value, description, permission, char_limit, pinned, created_at, updated_at, written_by";

/// The snippet: one fragment around the matches, marked like the SQLite store's.
const HEADLINE: &str = "StartSel=[, StopSel=], MaxWords=16, MinWords=6, MaxFragments=1, FragmentDelimiter=…";

/// Memory's tables in PostgreSQL. Clones share the pool.
#[derive(Debug, Clone)]
pub struct PgMemory {
    pub(super) pg: PgStore,
}

fn block(r: &PgRow) -> Result<BlockRow, sqlx::Error> {
    Ok(BlockRow {
        label: r.try_get(0)?,
        value: r.try_get(1)?,
        description: r.try_get(2)?,
        permission: r.try_get(3)?,
        char_limit: r.try_get(4)?,
        pinned: r.try_get(5)?,
        created_at: r.try_get(6)?,
        updated_at: r.try_get(7)?,
        written_by: r.try_get(8)?,
    })
}

fn hit(r: &PgRow) -> Result<HitRow, sqlx::Error> {
    Ok(HitRow {
        label: r.try_get(0)?,
        snippet: r.try_get(1)?,
        score: f64::from(r.try_get::<f32, _>(2)?),
        at: r.try_get(3)?,
    })
}

/// The tsquery text for the terms: each quoted as a lexeme, joined by `|` (any term matches; more matching terms
/// rank higher). Inside the quotes a backslash escapes the next character and a quote is doubled, so a term is
/// always one lexeme, never an operator or a syntax error.
fn ts_query(terms: &[String]) -> String {
    let quoted = terms.iter().map(|t| format!("'{}'", t.replace('\\', "\\\\").replace('\'', "''")));
    quoted.collect::<Vec<_>>().join(" | ")
}

/// Takes the advisory lock of one block for the rest of the transaction, waiting at most [`LOCK_WAIT`].
async fn lock_block(tx: &mut sqlx::PgConnection, agent: &str, label: &str) -> Result<(), StoreError> {
    sqlx::query("SELECT set_config('lock_timeout', $1, true)").bind(LOCK_WAIT).execute(&mut *tx).await?;
    let locked =
        sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended('holdfast.memory/' || $1 || '/' || $2, 0))")
            .bind(agent)
            .bind(label)
            .execute(&mut *tx)
            .await;
    match locked {
        Ok(_) => Ok(()),
        Err(sqlx::Error::Database(e)) if e.code().as_deref() == Some("55P03") => Err(StoreError::Query(format!(
            "memory block `{label}` has been locked by another edit for more than {LOCK_WAIT}; try again"
        ))),
        Err(e) => Err(e.into()),
    }
}

impl PgMemory {
    pub(super) async fn open(pg: PgStore) -> Result<Self, StoreError> {
        pg.migrate(&crate::schema::MEMORY).await?;
        Ok(Self { pg })
    }

    pub(super) async fn get(&self, agent: &str, label: &str) -> Result<Option<BlockRow>, StoreError> {
        let sql = format!("SELECT {BLOCK_COLUMNS} FROM memory_blocks WHERE agent_id = $1 AND label = $2");
        let row = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(agent).bind(label).fetch_optional(self.pg.pool()).await?;
        Ok(row.as_ref().map(block).transpose()?)
    }

    pub(super) async fn list(&self, agent: &str) -> Result<Vec<BlockRow>, StoreError> {
        let sql = format!("SELECT {BLOCK_COLUMNS} FROM memory_blocks WHERE agent_id = $1 ORDER BY label");
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(agent).fetch_all(self.pg.pool()).await?;
        Ok(rows.iter().map(block).collect::<Result<_, _>>()?)
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
        let store = |e: sqlx::Error| E::from(StoreError::from(e));
        let mut tx = self.pg.pool().begin().await.map_err(store)?;
        lock_block(&mut tx, agent, label).await?;
        let sql = format!("SELECT {BLOCK_COLUMNS} FROM memory_blocks WHERE agent_id = $1 AND label = $2");
        let row = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(agent)
            .bind(label)
            .fetch_optional(&mut *tx)
            .await
            .map_err(store)?;
        let before = row.as_ref().map(block).transpose().map_err(store)?;
        let old = before.as_ref().map(|b| b.value.clone());
        let (write, out) = edit(before)?;
        let Some(write) = write else { return Ok(out) };
        let b = &write.block;
        sqlx::query(
            "INSERT INTO memory_blocks (agent_id, label, value, description, permission, char_limit, pinned,
                 created_at, updated_at, written_by)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
             ON CONFLICT (agent_id, label) DO UPDATE SET
                 value = excluded.value, description = excluded.description, permission = excluded.permission,
                 char_limit = excluded.char_limit, pinned = excluded.pinned, updated_at = excluded.updated_at,
                 written_by = excluded.written_by",
        )
        .bind(agent)
        .bind(label)
        .bind(&b.value)
        .bind(&b.description)
        .bind(&b.permission)
        .bind(b.char_limit)
        .bind(b.pinned)
        .bind(&b.created_at)
        .bind(&b.updated_at)
        .bind(&b.written_by)
        .execute(&mut *tx)
        .await
        .map_err(store)?;
        let xid: String = sqlx::query_scalar(
            "INSERT INTO memory_history (agent_id, label, actor, op, old_value, new_value, at)
             VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING pg_current_xact_id()::text",
        )
        .bind(agent)
        .bind(label)
        .bind(&write.actor)
        .bind(&write.op)
        .bind(old)
        .bind(&b.value)
        .bind(&b.updated_at)
        .fetch_one(&mut *tx)
        .await
        .map_err(store)?;
        // An append retried after a lost answer would add its text twice: the COMMIT's outcome is read back.
        self.pg.commit(tx, &xid).await.map_err(store)?;
        Ok(out)
    }

    pub(super) async fn delete(&self, agent: &str, label: &str) -> Result<bool, StoreError> {
        let mut tx = self.pg.pool().begin().await?;
        lock_block(&mut tx, agent, label).await?;
        let deleted = sqlx::query("DELETE FROM memory_blocks WHERE agent_id = $1 AND label = $2")
            .bind(agent)
            .bind(label)
            .execute(&mut *tx)
            .await?
            .rows_affected();
        sqlx::query("DELETE FROM memory_embeddings WHERE agent_id = $1 AND label = $2")
            .bind(agent)
            .bind(label)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(deleted > 0)
    }

    pub(super) async fn history(&self, agent: &str, label: &str, limit: usize) -> Result<Vec<EditRow>, StoreError> {
        let rows = sqlx::query(
            "SELECT id, label, actor, op, old_value, new_value, at FROM memory_history
             WHERE agent_id = $1 AND label = $2 ORDER BY id DESC LIMIT $3",
        )
        .bind(agent)
        .bind(label)
        .bind(to_i64(limit))
        .fetch_all(self.pg.pool())
        .await?;
        let edit = |r: &PgRow| -> Result<EditRow, sqlx::Error> {
            Ok(EditRow {
                id: r.try_get(0)?,
                label: r.try_get(1)?,
                actor: r.try_get(2)?,
                op: r.try_get(3)?,
                old: r.try_get(4)?,
                new: r.try_get(5)?,
                at: r.try_get(6)?,
            })
        };
        Ok(rows.iter().map(edit).collect::<Result<_, _>>()?)
    }

    pub(super) async fn search(&self, agent: &str, terms: &[String], limit: usize) -> Result<Hits, StoreError> {
        // One round trip: the best `limit` blocks by rank, then the best replaced value of each block whose current
        // value did not match; a headline for those rows alone, after the limits.
        let rows = sqlx::query(
            "WITH q AS (SELECT to_tsquery('holdfast_english', $2) AS q),
             v AS (SELECT b.label, b.value, ts_rank(b.search, q.q, 1) AS rank, b.updated_at AS at
                   FROM memory_blocks b, q WHERE b.agent_id = $1 AND b.search @@ q.q
                   ORDER BY rank DESC, b.label LIMIT $3),
             h AS (SELECT DISTINCT ON (h.label) h.label, h.old_value AS value, ts_rank(h.search, q.q, 1) AS rank, h.at
                   FROM memory_history h, q
                   WHERE h.agent_id = $1 AND h.search @@ q.q AND h.label NOT IN (SELECT label FROM v)
                   ORDER BY h.label, rank DESC, h.id DESC),
             ht AS (SELECT * FROM h ORDER BY rank DESC, label LIMIT $3)
             SELECT v.label, ts_headline('holdfast_english', v.value, q.q, $4), v.rank, v.at, false AS old
               FROM v, q
             UNION ALL
             SELECT ht.label, ts_headline('holdfast_english', ht.value, q.q, $4), ht.rank, ht.at, true
               FROM ht, q
             ORDER BY 5, 3 DESC, 1",
        )
        .bind(agent)
        .bind(ts_query(terms))
        .bind(to_i64(limit))
        .bind(HEADLINE)
        .fetch_all(self.pg.pool())
        .await?;
        let mut hits = Hits::default();
        for r in &rows {
            if r.try_get::<bool, _>(4)? {
                hits.history.push(hit(r)?);
            } else {
                hits.values.push(hit(r)?);
            }
        }
        Ok(hits)
    }

    pub(super) async fn embeddings(&self, agent: &str, model: &str) -> Result<Vec<EmbeddingRow>, StoreError> {
        let rows =
            sqlx::query("SELECT label, content_hash, vector FROM memory_embeddings WHERE agent_id = $1 AND model = $2")
                .bind(agent)
                .bind(model)
                .fetch_all(self.pg.pool())
                .await?;
        let embedding = |r: &PgRow| -> Result<EmbeddingRow, sqlx::Error> {
            let bytes: Vec<u8> = r.try_get(2)?;
            Ok(EmbeddingRow { label: r.try_get(0)?, content_hash: r.try_get(1)?, vector: decode_vector(&bytes) })
        };
        Ok(rows.iter().map(embedding).collect::<Result<_, _>>()?)
    }

    pub(super) async fn store_embedding(&self, agent: &str, model: &str, e: EmbeddingRow) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO memory_embeddings (agent_id, label, model, content_hash, vector) VALUES ($1, $2, $3, $4, $5)
             ON CONFLICT (agent_id, label, model)
             DO UPDATE SET content_hash = excluded.content_hash, vector = excluded.vector",
        )
        .bind(agent)
        .bind(&e.label)
        .bind(model)
        .bind(&e.content_hash)
        .bind(encode_vector(&e.vector))
        .execute(self.pg.pool())
        .await?;
        Ok(())
    }
}

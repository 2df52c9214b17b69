//! The PostgreSQL memory store: what [`super::SqliteMemoryStore`] keeps, in the database several instances share, so
//! an agent's memory is one memory whichever instance serves it. Full-text search is PostgreSQL's own: a generated
//! `tsvector` column (the `english` configuration: stemming and stop words, like FTS5's porter tokenizer) with a
//! GIN index on block values and on the values edits replaced; ranking by `ts_rank_cd`, snippets by `ts_headline`.
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
//! Queries run on the process's pool ([`PgStore`]), which the journal, sessions, tasks and messages share.

use super::{CachedEmbedding, EditFn, MemoryStore, edit_entry};
use crate::blocks::block::{BlockEdit, EditOp, MemoryBlock, Modified, Permission};
use crate::clock::{fmt_time, parse_time};
use crate::error::{MemoryError, Result};
use crate::search::query::{HitSource, TextHit, merge_hits};
use holdfast_core::tool::BoxFuture;
use holdfast_store::PgStore;
use sqlx::Row;
use sqlx::postgres::PgRow;

/// How long an edit waits for another edit of the same block before it gives up.
const LOCK_WAIT: &str = "30s";

const BLOCK_COLUMNS: &str = "label, value, description, permission, char_limit, pinned, created_at, updated_at";

/// The snippet: one fragment around the matches, marked like the SQLite store's.
const HEADLINE: &str = "StartSel=[, StopSel=], MaxWords=16, MinWords=6, MaxFragments=1, FragmentDelimiter=…";

/// Memory blocks in PostgreSQL. Clones share the pool.
#[derive(Debug, Clone)]
pub struct PgMemoryStore {
    pub(super) pg: PgStore,
}

pub(super) fn pg_err(e: impl std::fmt::Display) -> MemoryError {
    MemoryError::internal(format!("memory database: {}", holdfast_core::redact_urls(&e.to_string())))
}

fn time(s: &str) -> Result<chrono::DateTime<chrono::Utc>> {
    parse_time(s).ok_or_else(|| pg_err(format!("bad time {s:?}")))
}

fn block(r: &PgRow) -> Result<MemoryBlock> {
    let permission: String = r.try_get(3).map_err(pg_err)?;
    let limit: i64 = r.try_get(4).map_err(pg_err)?;
    Ok(MemoryBlock {
        label: r.try_get(0).map_err(pg_err)?,
        value: r.try_get(1).map_err(pg_err)?,
        description: r.try_get(2).map_err(pg_err)?,
        permission: Permission::parse(&permission).ok_or_else(|| pg_err(format!("bad permission {permission:?}")))?,
        char_limit: usize::try_from(limit).unwrap_or(0),
        pinned: r.try_get(5).map_err(pg_err)?,
        created_at: time(&r.try_get::<String, _>(6).map_err(pg_err)?)?,
        updated_at: time(&r.try_get::<String, _>(7).map_err(pg_err)?)?,
    })
}

fn hit(r: &PgRow, source: HitSource) -> Result<TextHit> {
    Ok(TextHit {
        label: r.try_get(0).map_err(pg_err)?,
        source,
        snippet: r.try_get(1).map_err(pg_err)?,
        score: f64::from(r.try_get::<f32, _>(2).map_err(pg_err)?),
        at: time(&r.try_get::<String, _>(3).map_err(pg_err)?)?,
    })
}

fn to_i64(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// The tsquery text for the terms: each quoted as a lexeme, joined by `|` (any term matches; more matching terms
/// rank higher). Terms are letters and digits only ([`crate::search::query::query_terms`]); quotes are doubled all
/// the same.
fn ts_query(terms: &[String]) -> String {
    terms.iter().map(|t| format!("'{}'", t.replace('\'', "''"))).collect::<Vec<_>>().join(" | ")
}

/// Takes the advisory lock of one block for the rest of the transaction, waiting at most [`LOCK_WAIT`].
async fn lock_block(tx: &mut sqlx::PgConnection, agent: &str, label: &str) -> Result<()> {
    sqlx::query("SELECT set_config('lock_timeout', $1, true)")
        .bind(LOCK_WAIT)
        .execute(&mut *tx)
        .await
        .map_err(pg_err)?;
    let locked =
        sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended('holdfast.memory/' || $1 || '/' || $2, 0))")
            .bind(agent)
            .bind(label)
            .execute(&mut *tx)
            .await;
    match locked {
        Ok(_) => Ok(()),
        Err(sqlx::Error::Database(e)) if e.code().as_deref() == Some("55P03") => Err(MemoryError::internal(format!(
            "memory block `{label}` has been locked by another edit for more than {LOCK_WAIT}; try again"
        ))),
        Err(e) => Err(pg_err(e)),
    }
}

impl PgMemoryStore {
    /// The pool (shared with the other stores on the same database, such as [`crate::PgTaskStore`]).
    pub fn pool(&self) -> &PgStore {
        &self.pg
    }

    /// The store in `url`'s database (a pool of its own), migrated. A process that already has a pool on the
    /// database uses [`PgMemoryStore::on`].
    pub async fn open(url: holdfast_core::config::DatabaseUrl) -> Result<Self> {
        Self::on(PgStore::connect(&url).await?).await
    }

    /// The store on `pg`'s pool, migrated.
    pub async fn on(pg: PgStore) -> Result<Self> {
        pg.migrate(&crate::schema::MEMORY).await?;
        Ok(Self { pg })
    }
}

impl MemoryStore for PgMemoryStore {
    fn get<'a>(&'a self, agent: &'a str, label: &'a str) -> BoxFuture<'a, Result<Option<MemoryBlock>>> {
        Box::pin(async move {
            let store = &self.pg;
            let sql = format!("SELECT {BLOCK_COLUMNS} FROM memory_blocks WHERE agent_id = $1 AND label = $2");
            let row = sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(agent)
                .bind(label)
                .fetch_optional(store.pool())
                .await
                .map_err(pg_err)?;
            row.as_ref().map(block).transpose()
        })
    }

    fn list<'a>(&'a self, agent: &'a str) -> BoxFuture<'a, Result<Vec<MemoryBlock>>> {
        Box::pin(async move {
            let store = &self.pg;
            let sql = format!("SELECT {BLOCK_COLUMNS} FROM memory_blocks WHERE agent_id = $1 ORDER BY label");
            let rows =
                sqlx::query(sqlx::AssertSqlSafe(sql)).bind(agent).fetch_all(store.pool()).await.map_err(pg_err)?;
            rows.iter().map(block).collect()
        })
    }

    fn modify<'a>(&'a self, agent: &'a str, label: &'a str, edit: EditFn) -> BoxFuture<'a, Result<Modified>> {
        Box::pin(async move {
            let store = &self.pg;
            let mut tx = store.pool().begin().await.map_err(pg_err)?;
            lock_block(&mut tx, agent, label).await?;
            let sql = format!("SELECT {BLOCK_COLUMNS} FROM memory_blocks WHERE agent_id = $1 AND label = $2");
            let row = sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(agent)
                .bind(label)
                .fetch_optional(&mut *tx)
                .await
                .map_err(pg_err)?;
            let before = row.as_ref().map(block).transpose()?;
            let Some(write) = edit(before.as_ref())? else {
                return Ok(Modified { before, after: None });
            };
            if write.block.label != label {
                return Err(MemoryError::internal("an edit may not rename a block"));
            }
            let b = &write.block;
            sqlx::query(
                "INSERT INTO memory_blocks (agent_id, label, value, description, permission, char_limit, pinned,
                     created_at, updated_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
                 ON CONFLICT (agent_id, label) DO UPDATE SET
                     value = excluded.value, description = excluded.description, permission = excluded.permission,
                     char_limit = excluded.char_limit, pinned = excluded.pinned, updated_at = excluded.updated_at",
            )
            .bind(agent)
            .bind(&b.label)
            .bind(&b.value)
            .bind(&b.description)
            .bind(b.permission.as_str())
            .bind(to_i64(b.char_limit))
            .bind(b.pinned)
            .bind(fmt_time(b.created_at))
            .bind(fmt_time(b.updated_at))
            .execute(&mut *tx)
            .await
            .map_err(pg_err)?;
            let entry = edit_entry(0, before.as_ref(), &write);
            sqlx::query(
                "INSERT INTO memory_history (agent_id, label, actor, op, old_value, new_value, at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7)",
            )
            .bind(agent)
            .bind(&entry.label)
            .bind(&entry.actor)
            .bind(entry.op.as_str())
            .bind(&entry.old)
            .bind(&entry.new)
            .bind(fmt_time(entry.at))
            .execute(&mut *tx)
            .await
            .map_err(pg_err)?;
            tx.commit().await.map_err(pg_err)?;
            Ok(Modified { before, after: Some(write.block) })
        })
    }

    fn delete<'a>(&'a self, agent: &'a str, label: &'a str) -> BoxFuture<'a, Result<bool>> {
        Box::pin(async move {
            let store = &self.pg;
            let mut tx = store.pool().begin().await.map_err(pg_err)?;
            lock_block(&mut tx, agent, label).await?;
            let deleted = sqlx::query("DELETE FROM memory_blocks WHERE agent_id = $1 AND label = $2")
                .bind(agent)
                .bind(label)
                .execute(&mut *tx)
                .await
                .map_err(pg_err)?
                .rows_affected();
            sqlx::query("DELETE FROM memory_embeddings WHERE agent_id = $1 AND label = $2")
                .bind(agent)
                .bind(label)
                .execute(&mut *tx)
                .await
                .map_err(pg_err)?;
            tx.commit().await.map_err(pg_err)?;
            Ok(deleted > 0)
        })
    }

    fn history<'a>(&'a self, agent: &'a str, label: &'a str, limit: usize) -> BoxFuture<'a, Result<Vec<BlockEdit>>> {
        Box::pin(async move {
            let store = &self.pg;
            let rows = sqlx::query(
                "SELECT id, label, actor, op, old_value, new_value, at FROM memory_history
                 WHERE agent_id = $1 AND label = $2 ORDER BY id DESC LIMIT $3",
            )
            .bind(agent)
            .bind(label)
            .bind(to_i64(limit))
            .fetch_all(store.pool())
            .await
            .map_err(pg_err)?;
            rows.iter()
                .map(|r| {
                    let op: String = r.try_get(3).map_err(pg_err)?;
                    Ok(BlockEdit {
                        id: r.try_get(0).map_err(pg_err)?,
                        label: r.try_get(1).map_err(pg_err)?,
                        actor: r.try_get(2).map_err(pg_err)?,
                        op: EditOp::parse(&op).unwrap_or(EditOp::System),
                        old: r.try_get(4).map_err(pg_err)?,
                        new: r.try_get(5).map_err(pg_err)?,
                        at: time(&r.try_get::<String, _>(6).map_err(pg_err)?)?,
                    })
                })
                .collect()
        })
    }

    fn search<'a>(&'a self, agent: &'a str, terms: &'a [String], limit: usize) -> BoxFuture<'a, Result<Vec<TextHit>>> {
        Box::pin(async move {
            if terms.is_empty() || limit == 0 {
                return Ok(Vec::new());
            }
            let query = ts_query(terms);
            let store = &self.pg;
            // One round trip: the best `limit` blocks by rank, then the best replaced value of each block whose
            // current value did not match; a headline for those rows alone, after the limits.
            let rows = sqlx::query(
                    "WITH q AS (SELECT to_tsquery('holdfast_english', $2) AS q),
                     v AS (SELECT b.label, b.value, ts_rank_cd(b.search, q.q) AS rank, b.updated_at AS at
                           FROM memory_blocks b, q WHERE b.agent_id = $1 AND b.search @@ q.q
                           ORDER BY rank DESC, b.label LIMIT $3),
                     h AS (SELECT DISTINCT ON (h.label) h.label, h.old_value AS value, ts_rank_cd(h.search, q.q) AS rank, h.at
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
                .bind(&query)
                .bind(to_i64(limit))
                .bind(HEADLINE)
                .fetch_all(store.pool())
                .await
                .map_err(pg_err)?;
            let (mut value_hits, mut history_hits) = (Vec::new(), Vec::new());
            for r in &rows {
                if r.try_get::<bool, _>(4).map_err(pg_err)? {
                    history_hits.push(hit(r, HitSource::History)?);
                } else {
                    value_hits.push(hit(r, HitSource::Value)?);
                }
            }
            Ok(merge_hits(value_hits, history_hits, limit))
        })
    }

    fn cached_embeddings<'a>(&'a self, agent: &'a str, model: &'a str) -> BoxFuture<'a, Result<Vec<CachedEmbedding>>> {
        Box::pin(async move {
            let store = &self.pg;
            let rows = sqlx::query(
                "SELECT label, content_hash, vector FROM memory_embeddings WHERE agent_id = $1 AND model = $2",
            )
            .bind(agent)
            .bind(model)
            .fetch_all(store.pool())
            .await
            .map_err(pg_err)?;
            rows.iter()
                .map(|r| {
                    let bytes: Vec<u8> = r.try_get(2).map_err(pg_err)?;
                    Ok(CachedEmbedding {
                        label: r.try_get(0).map_err(pg_err)?,
                        content_hash: r.try_get(1).map_err(pg_err)?,
                        vector: super::sqlite::decode_vector(&bytes),
                    })
                })
                .collect()
        })
    }

    fn store_embedding<'a>(&'a self, agent: &'a str, model: &'a str, e: CachedEmbedding) -> BoxFuture<'a, Result<()>> {
        let bytes = super::sqlite::encode_vector(&e.vector);
        Box::pin(async move {
            let store = &self.pg;
            sqlx::query(
                "INSERT INTO memory_embeddings (agent_id, label, model, content_hash, vector) VALUES ($1, $2, $3, $4, $5)
                 ON CONFLICT (agent_id, label, model)
                 DO UPDATE SET content_hash = excluded.content_hash, vector = excluded.vector",
            )
            .bind(agent)
            .bind(&e.label)
            .bind(model)
            .bind(&e.content_hash)
            .bind(bytes)
            .execute(store.pool())
            .await
            .map_err(pg_err)?;
            Ok(())
        })
    }

    fn kind(&self) -> &'static str {
        "postgres"
    }
}

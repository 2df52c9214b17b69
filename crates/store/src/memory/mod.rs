//! Memory's tables (`memory_blocks`, `memory_history`, their full-text indexes, `memory_embeddings`): the rows
//! holdfast-memory keeps for each agent's blocks, their queries on both dialects, the atomic edit and the search.
//!
//! What a block *means* — who may edit it, what the new value is, how hits of values and of history are merged —
//! is decided in holdfast-memory. An edit is decided inside this table's transaction: [`MemoryTable::modify`] reads
//! the block, calls the caller's closure, and writes what it returns with one history row, with no other edit of
//! the block in between.
//!
//! ```
//! # async fn demo() -> Result<(), holdfast_store::StoreError> {
//! use holdfast_store::memory::{BlockRow, BlockWrite, MemoryTable};
//! let table = MemoryTable::on_sqlite(&holdfast_store::SqliteDb::memory()?)?;
//! let block = BlockRow { label: "persona".into(), value: "curious".into(), permission: "read_write".into(),
//!     created_at: "2026-11-26T00:00:00.000000Z".into(), updated_at: "2026-11-26T00:00:00.000000Z".into(),
//!     ..BlockRow::default() };
//! let written = table
//!     .modify("agent", "persona", move |before| {
//!         assert!(before.is_none());
//!         let write = BlockWrite { block, actor: "user".into(), op: "create".into() };
//!         Ok::<_, holdfast_store::StoreError>((Some(write), "created"))
//!     })
//!     .await?;
//! assert_eq!(written, "created");
//! assert_eq!(table.get("agent", "persona").await?.map(|b| b.value).as_deref(), Some("curious"));
//! # Ok(()) }
//! ```

mod adopt;
mod compact;
mod postgres;
mod sqlite;

pub use adopt::Adopted;
pub use postgres::PgMemory;
pub use sqlite::SqliteMemory;

use crate::{SqliteDb, Storage, StoreError};

/// A block as stored. Times are the text holdfast-memory writes (fixed width, so text order is time order).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BlockRow {
    /// The block's label (unique per agent).
    pub label: String,
    /// Its value.
    pub value: String,
    /// What it is for.
    pub description: Option<String>,
    /// Who may write it (holdfast-memory's permission, as text).
    pub permission: String,
    /// The most characters its value may hold.
    pub char_limit: i64,
    /// Shown in every prompt.
    pub pinned: bool,
    /// Created at.
    pub created_at: String,
    /// Last written at.
    pub updated_at: String,
    /// Who started the turn of its last write, when it was not the user.
    pub written_by: Option<String>,
}

/// What an edit writes: the block (under the label the edit was asked for, whatever `block.label` says) and who
/// wrote it how, for the history row (old value → `block.value`, at `block.updated_at`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BlockWrite {
    /// The block as it is to be.
    pub block: BlockRow,
    /// Who.
    pub actor: String,
    /// Which operation (holdfast-memory's, as text).
    pub op: String,
}

/// One history row.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EditRow {
    /// Its id (increasing).
    pub id: i64,
    /// The block.
    pub label: String,
    /// Who.
    pub actor: String,
    /// Which operation.
    pub op: String,
    /// The value before (none: the block was created).
    pub old: Option<String>,
    /// The value after.
    pub new: String,
    /// When.
    pub at: String,
}

/// One search hit: a block whose current value (or an earlier one) matched.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HitRow {
    /// The block.
    pub label: String,
    /// The matching text around the matches, which are marked `[…]`.
    pub snippet: String,
    /// Higher is better (SQLite: minus FTS5's BM25; PostgreSQL: `ts_rank` normalized by length).
    pub score: f64,
    /// When the matching value was written.
    pub at: String,
}

/// What a search found: the best blocks whose current value matched, best first, and for blocks whose current value
/// did not, the best of their earlier values, best first; each list at most the limit.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Hits {
    /// Current values.
    pub values: Vec<HitRow>,
    /// Earlier values, one per block, none of a block in `values`.
    pub history: Vec<HitRow>,
}

/// A cached embedding of a block's value.
#[derive(Debug, Clone, PartialEq)]
pub struct EmbeddingRow {
    /// The block.
    pub label: String,
    /// A hash of the text that was embedded.
    pub content_hash: String,
    /// The vector.
    pub vector: Vec<f32>,
}

/// Memory's tables on the process's storage. Clones share the storage.
#[derive(Debug, Clone)]
pub enum MemoryTable {
    /// In the SQLite file (or memory).
    Sqlite(sqlite::SqliteMemory),
    /// In PostgreSQL, shared by every instance on the database.
    Postgres(postgres::PgMemory),
}

impl MemoryTable {
    /// The tables in `storage`, migrated first.
    pub async fn open(storage: &Storage) -> Result<Self, StoreError> {
        match storage {
            Storage::Sqlite(db) => Self::on_sqlite(db),
            Storage::Postgres(pg) => Self::on_postgres(pg.clone()).await,
        }
    }

    /// The tables in the SQLite file (or memory) `db`, migrated first.
    pub fn on_sqlite(db: &SqliteDb) -> Result<Self, StoreError> {
        Ok(Self::Sqlite(sqlite::SqliteMemory::open(db)?))
    }

    /// The tables in `pg`'s database, migrated first.
    pub async fn on_postgres(pg: crate::PgStore) -> Result<Self, StoreError> {
        Ok(Self::Postgres(postgres::PgMemory::open(pg).await?))
    }

    /// `sqlite` or `postgres`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Sqlite(_) => "sqlite",
            Self::Postgres(_) => "postgres",
        }
    }

    /// The tables in the SQLite file (or memory) `db`, whose owner has already applied [`crate::schema::MEMORY`]
    /// (as holdfast-memory's `Database` does when it opens the file).
    pub fn on_migrated_sqlite(db: &SqliteDb) -> Self {
        Self::Sqlite(sqlite::SqliteMemory::on_migrated(db))
    }

    /// Merges SQLite's full-text indexes into one segment each now, the fastest form to search, after any merge
    /// already running (the tables merge them in the background as they grow; this is for a caller that wants it at
    /// once, after a bulk load). On PostgreSQL nothing to do: its GIN index needs no merging by holdfast.
    pub async fn merge_index(&self) -> Result<(), StoreError> {
        match self {
            Self::Sqlite(s) => s.merge_index().await,
            Self::Postgres(_) => Ok(()),
        }
    }

    /// Waits until no background merge of SQLite's full-text indexes runs (at once on PostgreSQL).
    pub async fn index_merged(&self) -> Result<(), StoreError> {
        match self {
            Self::Sqlite(s) => s.index_merged().await,
            Self::Postgres(_) => Ok(()),
        }
    }

    /// [`MemoryTable::search`] on the current thread (a blocking context: it waits for SQLite), for benchmarks that
    /// time the query alone. SQLite only: on PostgreSQL a [`StoreError::Config`].
    pub fn search_blocking(&self, agent: &str, terms: &[String], limit: usize) -> Result<Hits, StoreError> {
        match self {
            Self::Sqlite(s) => s.search_blocking(agent, terms, limit),
            Self::Postgres(_) => Err(StoreError::Config("a blocking search is the SQLite tables' only".into())),
        }
    }

    /// One block.
    pub async fn get(&self, agent: &str, label: &str) -> Result<Option<BlockRow>, StoreError> {
        match self {
            Self::Sqlite(s) => s.get(agent, label).await,
            Self::Postgres(p) => p.get(agent, label).await,
        }
    }

    /// Every block of an agent, ordered by label.
    pub async fn list(&self, agent: &str) -> Result<Vec<BlockRow>, StoreError> {
        match self {
            Self::Sqlite(s) => s.list(agent).await,
            Self::Postgres(p) => p.list(agent).await,
        }
    }

    /// Atomically: reads the block (none: it does not exist), calls `edit` on it, and when it returns a write,
    /// stores the block and appends one history row (old value → new value). No other edit of the same block — in
    /// this process or, on PostgreSQL, on another instance, even of a block that does not exist yet — interleaves.
    /// `edit`'s second value is handed back; its error aborts the edit and is returned as it is.
    pub async fn modify<T, E>(
        &self,
        agent: &str,
        label: &str,
        edit: impl FnOnce(Option<BlockRow>) -> Result<(Option<BlockWrite>, T), E> + Send + 'static,
    ) -> Result<T, E>
    where
        T: Send + 'static,
        E: From<StoreError> + Send + 'static,
    {
        match self {
            Self::Sqlite(s) => s.modify(agent, label, edit).await,
            Self::Postgres(p) => p.modify(agent, label, edit).await,
        }
    }

    /// Deletes a block and its cached embeddings (its history stays). Whether it existed.
    pub async fn delete(&self, agent: &str, label: &str) -> Result<bool, StoreError> {
        match self {
            Self::Sqlite(s) => s.delete(agent, label).await,
            Self::Postgres(p) => p.delete(agent, label).await,
        }
    }

    /// A block's history, newest first, at most `limit` rows.
    pub async fn history(&self, agent: &str, label: &str, limit: usize) -> Result<Vec<EditRow>, StoreError> {
        match self {
            Self::Sqlite(s) => s.history(agent, label, limit).await,
            Self::Postgres(p) => p.history(agent, label, limit).await,
        }
    }

    /// Full-text search of the agent's block values and their history for any of `terms` (words of letters and
    /// digits; each is quoted, so none is an operator), from one snapshot.
    pub async fn search(&self, agent: &str, terms: &[String], limit: usize) -> Result<Hits, StoreError> {
        if terms.is_empty() || limit == 0 {
            return Ok(Hits::default());
        }
        match self {
            Self::Sqlite(s) => s.search(agent, terms, limit).await,
            Self::Postgres(p) => p.search(agent, terms, limit).await,
        }
    }

    /// Moves the memory of an instance that kept it in SQLite (`file`, its data dir's database) into this PostgreSQL
    /// database, once: when the database holds no memory block yet, every block and every history row of `file` is
    /// copied in one transaction (under a lock, so instances starting together copy once). The file keeps its rows;
    /// cached embeddings are not copied (they are computed again). On SQLite there is nothing to move to:
    /// [`Adopted::Nothing`].
    pub async fn adopt(&self, file: &SqliteDb) -> Result<Adopted, StoreError> {
        match self {
            Self::Sqlite(_) => Ok(Adopted::Nothing),
            Self::Postgres(p) => p.adopt(file).await,
        }
    }

    /// Cached embeddings of the agent's block values for `model`.
    pub async fn embeddings(&self, agent: &str, model: &str) -> Result<Vec<EmbeddingRow>, StoreError> {
        match self {
            Self::Sqlite(s) => s.embeddings(agent, model).await,
            Self::Postgres(p) => p.embeddings(agent, model).await,
        }
    }

    /// Caches an embedding (replacing the block's for `model`).
    pub async fn store_embedding(&self, agent: &str, model: &str, e: EmbeddingRow) -> Result<(), StoreError> {
        match self {
            Self::Sqlite(s) => s.store_embedding(agent, model, e).await,
            Self::Postgres(p) => p.store_embedding(agent, model, e).await,
        }
    }
}

/// The bytes a vector is stored as (little-endian `f32`s).
fn encode_vector(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn decode_vector(bytes: &[u8]) -> Vec<f32> {
    bytes.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

fn to_i64(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests;

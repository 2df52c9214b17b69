//! Where memory blocks live: the [`MemoryStore`] trait and its implementations, [`SqliteMemoryStore`] (the
//! embedded default: a real file in WAL mode, full-text indexed with FTS5), [`PgMemoryStore`] (PostgreSQL, shared by
//! several instances, full-text indexed with PostgreSQL's text search) and [`InMemoryStore`].
//!
//! A store is storage only: it applies an edit atomically and keeps the history. Deciding whether an edit is allowed
//! (permissions) and what the new value is happens in [`crate::Memory`], inside the store's atomic
//! [`MemoryStore::modify`].

mod in_memory;
mod postgres;
mod sqlite;
mod table;

pub use holdfast_store::memory::Adopted;
pub use in_memory::InMemoryStore;
pub use postgres::PgMemoryStore;
pub use sqlite::SqliteMemoryStore;

use crate::blocks::block::{BlockEdit, MemoryBlock, Modified, PendingWrite};
use crate::error::Result;
use crate::search::query::TextHit;
use holdfast_core::tool::BoxFuture;

/// The decision made inside an atomic edit: given the block as it is (absent: it does not exist), what to write
/// (nothing: leave it), or an error that aborts the edit.
pub type EditFn = Box<dyn FnOnce(Option<&MemoryBlock>) -> Result<Option<PendingWrite>> + Send + 'static>;

/// A cached embedding of a block's value.
#[derive(Debug, Clone, PartialEq)]
pub struct CachedEmbedding {
    /// The block.
    pub label: String,
    /// A hash of the text that was embedded.
    pub content_hash: String,
    /// The vector.
    pub vector: Vec<f32>,
}

/// Storage for memory blocks, per agent. Methods are async: the SQLite store runs its statements on tokio's blocking
/// pool, the PostgreSQL one on the process's pool.
pub trait MemoryStore: Send + Sync + 'static {
    /// One block.
    fn get<'a>(&'a self, agent: &'a str, label: &'a str) -> BoxFuture<'a, Result<Option<MemoryBlock>>>;

    /// Every block of an agent, ordered by label.
    fn list<'a>(&'a self, agent: &'a str) -> BoxFuture<'a, Result<Vec<MemoryBlock>>>;

    /// Atomically: reads the block, calls `edit`, and when it returns a write, stores the new block and appends one
    /// history entry (old value → new value, actor, op, time). No other edit of the same block interleaves.
    fn modify<'a>(&'a self, agent: &'a str, label: &'a str, edit: EditFn) -> BoxFuture<'a, Result<Modified>>;

    /// Deletes a block (its history stays). Returns whether it existed.
    fn delete<'a>(&'a self, agent: &'a str, label: &'a str) -> BoxFuture<'a, Result<bool>>;

    /// A block's history, newest first, at most `limit` entries.
    fn history<'a>(&'a self, agent: &'a str, label: &'a str, limit: usize) -> BoxFuture<'a, Result<Vec<BlockEdit>>>;

    /// Text search over the agent's block values and their history (see [`crate::search::query`]): one hit per block,
    /// best first, at most `limit`. `terms` are [`crate::search::query::query_terms`] (never empty).
    fn search<'a>(&'a self, agent: &'a str, terms: &'a [String], limit: usize) -> BoxFuture<'a, Result<Vec<TextHit>>>;

    /// Cached embeddings of the agent's block values for `model` (stores without a cache return none).
    fn cached_embeddings<'a>(&'a self, agent: &'a str, model: &'a str) -> BoxFuture<'a, Result<Vec<CachedEmbedding>>> {
        let _ = (agent, model);
        Box::pin(async { Ok(Vec::new()) })
    }

    /// Caches an embedding (stores without a cache ignore it).
    fn store_embedding<'a>(
        &'a self,
        agent: &'a str,
        model: &'a str,
        embedding: CachedEmbedding,
    ) -> BoxFuture<'a, Result<()>> {
        let _ = (agent, model, embedding);
        Box::pin(async { Ok(()) })
    }

    /// A short name for documentation and diagnostics (`sqlite`, `postgres`, `in_memory`).
    fn kind(&self) -> &'static str;
}

/// The history entry a write produces.
pub(crate) fn edit_entry(id: i64, before: Option<&MemoryBlock>, write: &PendingWrite) -> BlockEdit {
    BlockEdit {
        id,
        label: write.block.label.clone(),
        actor: write.actor.clone(),
        op: write.op,
        old: before.map(|b| b.value.clone()),
        new: write.block.value.clone(),
        at: write.block.updated_at,
    }
}

//! Memory blocks kept in holdfast-store's tables ([`holdfast_store::memory::MemoryTable`], where their SQL is): the
//! conversion of rows to blocks and back, and the [`MemoryStore`] both [`super::SqliteMemoryStore`] and
//! [`super::PgMemoryStore`] are.

use super::{CachedEmbedding, EditFn, MemoryStore};
use crate::blocks::block::{BlockEdit, EditOp, MemoryBlock, Modified, Permission};
use crate::clock::{fmt_time, parse_time};
use crate::error::{MemoryError, Result};
use crate::search::query::{HitSource, TextHit, merge_hits};
use holdfast_core::tool::BoxFuture;
use holdfast_store::memory::{BlockRow, BlockWrite, EditRow, EmbeddingRow, HitRow, MemoryTable};

fn time(s: &str) -> Result<chrono::DateTime<chrono::Utc>> {
    parse_time(s).ok_or_else(|| MemoryError::internal(format!("memory database: bad time {s:?}")))
}

fn block(row: BlockRow) -> Result<MemoryBlock> {
    let permission = Permission::parse(&row.permission)
        .ok_or_else(|| MemoryError::internal(format!("memory database: bad permission {:?}", row.permission)))?;
    Ok(MemoryBlock {
        created_at: time(&row.created_at)?,
        updated_at: time(&row.updated_at)?,
        label: row.label,
        value: row.value,
        description: row.description,
        permission,
        char_limit: usize::try_from(row.char_limit).unwrap_or(0),
        pinned: row.pinned,
        written_by: row.written_by,
    })
}

fn row(b: &MemoryBlock) -> BlockRow {
    BlockRow {
        label: b.label.clone(),
        value: b.value.clone(),
        description: b.description.clone(),
        permission: b.permission.as_str().to_owned(),
        char_limit: i64::try_from(b.char_limit).unwrap_or(i64::MAX),
        pinned: b.pinned,
        created_at: fmt_time(b.created_at),
        updated_at: fmt_time(b.updated_at),
        written_by: b.written_by.clone(),
    }
}

fn edit(e: EditRow) -> Result<BlockEdit> {
    Ok(BlockEdit {
        at: time(&e.at)?,
        id: e.id,
        label: e.label,
        actor: e.actor,
        op: EditOp::parse(&e.op).unwrap_or(EditOp::System),
        old: e.old,
        new: e.new,
    })
}

fn hit(h: HitRow, source: HitSource) -> Result<TextHit> {
    Ok(TextHit { at: time(&h.at)?, label: h.label, source, snippet: h.snippet, score: h.score })
}

impl MemoryStore for MemoryTable {
    fn get<'a>(&'a self, agent: &'a str, label: &'a str) -> BoxFuture<'a, Result<Option<MemoryBlock>>> {
        Box::pin(async move { MemoryTable::get(self, agent, label).await?.map(block).transpose() })
    }

    fn list<'a>(&'a self, agent: &'a str) -> BoxFuture<'a, Result<Vec<MemoryBlock>>> {
        Box::pin(async move { MemoryTable::list(self, agent).await?.into_iter().map(block).collect() })
    }

    fn modify<'a>(&'a self, agent: &'a str, label: &'a str, decide: EditFn) -> BoxFuture<'a, Result<Modified>> {
        let asked = label.to_owned();
        Box::pin(MemoryTable::modify(self, agent, label, move |found| -> Result<(Option<BlockWrite>, Modified)> {
            let before = found.map(block).transpose()?;
            let Some(write) = decide(before.as_ref())? else {
                return Ok((None, Modified { before, after: None }));
            };
            if write.block.label != asked {
                return Err(MemoryError::internal("an edit may not rename a block"));
            }
            let stored = BlockWrite { block: row(&write.block), actor: write.actor, op: write.op.as_str().to_owned() };
            Ok((Some(stored), Modified { before, after: Some(write.block) }))
        }))
    }

    fn delete<'a>(&'a self, agent: &'a str, label: &'a str) -> BoxFuture<'a, Result<bool>> {
        Box::pin(async move { Ok(MemoryTable::delete(self, agent, label).await?) })
    }

    fn history<'a>(&'a self, agent: &'a str, label: &'a str, limit: usize) -> BoxFuture<'a, Result<Vec<BlockEdit>>> {
        Box::pin(async move { MemoryTable::history(self, agent, label, limit).await?.into_iter().map(edit).collect() })
    }

    fn search<'a>(&'a self, agent: &'a str, terms: &'a [String], limit: usize) -> BoxFuture<'a, Result<Vec<TextHit>>> {
        Box::pin(async move { hits(MemoryTable::search(self, agent, terms, limit).await?, limit) })
    }

    fn cached_embeddings<'a>(&'a self, agent: &'a str, model: &'a str) -> BoxFuture<'a, Result<Vec<CachedEmbedding>>> {
        Box::pin(async move {
            let rows = self.embeddings(agent, model).await?;
            Ok(rows
                .into_iter()
                .map(|e| CachedEmbedding { label: e.label, content_hash: e.content_hash, vector: e.vector })
                .collect())
        })
    }

    fn store_embedding<'a>(&'a self, agent: &'a str, model: &'a str, e: CachedEmbedding) -> BoxFuture<'a, Result<()>> {
        let e = EmbeddingRow { label: e.label, content_hash: e.content_hash, vector: e.vector };
        Box::pin(async move { Ok(MemoryTable::store_embedding(self, agent, model, e).await?) })
    }

    fn kind(&self) -> &'static str {
        MemoryTable::kind(self)
    }
}

/// The store's hits as search results: one per block, values first, the limit kept ([`merge_hits`]).
pub(super) fn hits(found: holdfast_store::memory::Hits, limit: usize) -> Result<Vec<TextHit>> {
    let values = found.values.into_iter().map(|h| hit(h, HitSource::Value)).collect::<Result<Vec<_>>>()?;
    let history = found.history.into_iter().map(|h| hit(h, HitSource::History)).collect::<Result<Vec<_>>>()?;
    Ok(merge_hits(values, history, limit))
}

/// [`MemoryStore`] for a type that keeps its blocks in a [`MemoryTable`] (its field `table`).
macro_rules! memory_store_on_table {
    ($ty:ty, $kind:literal) => {
        impl $crate::blocks::store::MemoryStore for $ty {
            fn get<'a>(
                &'a self,
                agent: &'a str,
                label: &'a str,
            ) -> holdfast_core::tool::BoxFuture<'a, $crate::error::Result<Option<$crate::MemoryBlock>>> {
                $crate::blocks::store::MemoryStore::get(&self.table, agent, label)
            }

            fn list<'a>(
                &'a self,
                agent: &'a str,
            ) -> holdfast_core::tool::BoxFuture<'a, $crate::error::Result<Vec<$crate::MemoryBlock>>> {
                $crate::blocks::store::MemoryStore::list(&self.table, agent)
            }

            fn modify<'a>(
                &'a self,
                agent: &'a str,
                label: &'a str,
                edit: $crate::blocks::store::EditFn,
            ) -> holdfast_core::tool::BoxFuture<'a, $crate::error::Result<$crate::blocks::block::Modified>> {
                $crate::blocks::store::MemoryStore::modify(&self.table, agent, label, edit)
            }

            fn delete<'a>(
                &'a self,
                agent: &'a str,
                label: &'a str,
            ) -> holdfast_core::tool::BoxFuture<'a, $crate::error::Result<bool>> {
                $crate::blocks::store::MemoryStore::delete(&self.table, agent, label)
            }

            fn history<'a>(
                &'a self,
                agent: &'a str,
                label: &'a str,
                limit: usize,
            ) -> holdfast_core::tool::BoxFuture<'a, $crate::error::Result<Vec<$crate::blocks::block::BlockEdit>>> {
                $crate::blocks::store::MemoryStore::history(&self.table, agent, label, limit)
            }

            fn search<'a>(
                &'a self,
                agent: &'a str,
                terms: &'a [String],
                limit: usize,
            ) -> holdfast_core::tool::BoxFuture<'a, $crate::error::Result<Vec<$crate::search::query::TextHit>>> {
                $crate::blocks::store::MemoryStore::search(&self.table, agent, terms, limit)
            }

            fn cached_embeddings<'a>(
                &'a self,
                agent: &'a str,
                model: &'a str,
            ) -> holdfast_core::tool::BoxFuture<'a, $crate::error::Result<Vec<$crate::blocks::store::CachedEmbedding>>>
            {
                $crate::blocks::store::MemoryStore::cached_embeddings(&self.table, agent, model)
            }

            fn store_embedding<'a>(
                &'a self,
                agent: &'a str,
                model: &'a str,
                e: $crate::blocks::store::CachedEmbedding,
            ) -> holdfast_core::tool::BoxFuture<'a, $crate::error::Result<()>> {
                $crate::blocks::store::MemoryStore::store_embedding(&self.table, agent, model, e)
            }

            fn kind(&self) -> &'static str {
                $kind
            }
        }
    };
}
pub(super) use memory_store_on_table;

//! An in-memory store: the same semantics as SQLite (atomic edits, history, search over values and history) with
//! naive search. For tests, benchmarks and ephemeral agents.

use super::{CachedEmbedding, EditFn, MemoryStore, edit_entry};
use crate::blocks::block::{BlockEdit, MemoryBlock, Modified};
use crate::error::{MemoryError, Result};
use crate::search::query::{HitSource, TextHit, merge_hits, naive_score, naive_snippet};
use holdfast_core::tool::BoxFuture;
use parking_lot::Mutex;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

#[derive(Debug, Default)]
struct State {
    /// (agent, label) → block; ordered so listing is by label.
    blocks: BTreeMap<(String, String), MemoryBlock>,
    /// Every edit, oldest first, with its agent.
    history: Vec<(String, BlockEdit)>,
    /// (agent, model, label) → embedding.
    embeddings: HashMap<(String, String, String), CachedEmbedding>,
}

/// Memory blocks in process memory. Clones share the same blocks.
#[derive(Debug, Clone, Default)]
pub struct InMemoryStore {
    state: Arc<Mutex<State>>,
}

impl InMemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }
}

impl InMemoryStore {
    fn now_get(&self, agent: &str, label: &str) -> Result<Option<MemoryBlock>> {
        Ok(self.state.lock().blocks.get(&(agent.to_owned(), label.to_owned())).cloned())
    }

    fn now_list(&self, agent: &str) -> Result<Vec<MemoryBlock>> {
        let state = self.state.lock();
        Ok(state.blocks.iter().filter(|((a, _), _)| a == agent).map(|(_, b)| b.clone()).collect())
    }

    fn now_modify(&self, agent: &str, label: &str, edit: EditFn) -> Result<Modified> {
        let mut state = self.state.lock();
        let key = (agent.to_owned(), label.to_owned());
        let before = state.blocks.get(&key).cloned();
        let Some(write) = edit(before.as_ref())? else {
            return Ok(Modified { before, after: None });
        };
        if write.block.label != label {
            return Err(MemoryError::internal("an edit may not rename a block"));
        }
        let id = i64::try_from(state.history.len()).unwrap_or(i64::MAX).saturating_add(1);
        let entry = edit_entry(id, before.as_ref(), &write);
        state.history.push((agent.to_owned(), entry));
        state.blocks.insert(key, write.block.clone());
        Ok(Modified { before, after: Some(write.block) })
    }

    fn now_delete(&self, agent: &str, label: &str) -> Result<bool> {
        let mut state = self.state.lock();
        state.embeddings.retain(|(a, _, l), _| !(a == agent && l == label));
        Ok(state.blocks.remove(&(agent.to_owned(), label.to_owned())).is_some())
    }

    fn now_history(&self, agent: &str, label: &str, limit: usize) -> Result<Vec<BlockEdit>> {
        let state = self.state.lock();
        Ok(state
            .history
            .iter()
            .rev()
            .filter(|(a, e)| a == agent && e.label == label)
            .take(limit)
            .map(|(_, e)| e.clone())
            .collect())
    }

    fn now_search(&self, agent: &str, terms: &[String], limit: usize) -> Result<Vec<TextHit>> {
        let state = self.state.lock();
        let mut values = Vec::new();
        for ((a, _), block) in &state.blocks {
            if a != agent {
                continue;
            }
            if let Some(score) = naive_score(&block.value, terms) {
                values.push(TextHit {
                    label: block.label.clone(),
                    source: HitSource::Value,
                    snippet: naive_snippet(&block.value, terms),
                    score,
                    at: block.updated_at,
                });
            }
        }
        let mut best_history: BTreeMap<&str, TextHit> = BTreeMap::new();
        for (a, edit) in state.history.iter().rev() {
            let Some(old) = edit.old.as_deref().filter(|o| a == agent && !o.is_empty()) else { continue };
            let Some(score) = naive_score(old, terms) else { continue };
            let better = best_history.get(edit.label.as_str()).is_none_or(|h| score > h.score);
            if better {
                best_history.insert(
                    &edit.label,
                    TextHit {
                        label: edit.label.clone(),
                        source: HitSource::History,
                        snippet: naive_snippet(old, terms),
                        score,
                        at: edit.at,
                    },
                );
            }
        }
        values.sort_by(|a, b| b.score.total_cmp(&a.score));
        let mut history: Vec<TextHit> = best_history.into_values().collect();
        history.sort_by(|a, b| b.score.total_cmp(&a.score));
        Ok(merge_hits(values, history, limit))
    }

    fn now_cached_embeddings(&self, agent: &str, model: &str) -> Result<Vec<CachedEmbedding>> {
        let state = self.state.lock();
        Ok(state.embeddings.iter().filter(|((a, m, _), _)| a == agent && m == model).map(|(_, e)| e.clone()).collect())
    }

    fn now_store_embedding(&self, agent: &str, model: &str, e: CachedEmbedding) -> Result<()> {
        self.state.lock().embeddings.insert((agent.to_owned(), model.to_owned(), e.label.clone()), e);
        Ok(())
    }
}

/// The store's work never waits on I/O: each future is ready at once.
impl MemoryStore for InMemoryStore {
    fn get<'a>(&'a self, agent: &'a str, label: &'a str) -> BoxFuture<'a, Result<Option<MemoryBlock>>> {
        Box::pin(std::future::ready(self.now_get(agent, label)))
    }

    fn list<'a>(&'a self, agent: &'a str) -> BoxFuture<'a, Result<Vec<MemoryBlock>>> {
        Box::pin(std::future::ready(self.now_list(agent)))
    }

    fn modify<'a>(&'a self, agent: &'a str, label: &'a str, edit: EditFn) -> BoxFuture<'a, Result<Modified>> {
        Box::pin(std::future::ready(self.now_modify(agent, label, edit)))
    }

    fn delete<'a>(&'a self, agent: &'a str, label: &'a str) -> BoxFuture<'a, Result<bool>> {
        Box::pin(std::future::ready(self.now_delete(agent, label)))
    }

    fn history<'a>(&'a self, agent: &'a str, label: &'a str, limit: usize) -> BoxFuture<'a, Result<Vec<BlockEdit>>> {
        Box::pin(std::future::ready(self.now_history(agent, label, limit)))
    }

    fn search<'a>(&'a self, agent: &'a str, terms: &'a [String], limit: usize) -> BoxFuture<'a, Result<Vec<TextHit>>> {
        Box::pin(std::future::ready(self.now_search(agent, terms, limit)))
    }

    fn cached_embeddings<'a>(&'a self, agent: &'a str, model: &'a str) -> BoxFuture<'a, Result<Vec<CachedEmbedding>>> {
        Box::pin(std::future::ready(self.now_cached_embeddings(agent, model)))
    }

    fn store_embedding<'a>(&'a self, agent: &'a str, model: &'a str, e: CachedEmbedding) -> BoxFuture<'a, Result<()>> {
        Box::pin(std::future::ready(self.now_store_embedding(agent, model, e)))
    }

    fn kind(&self) -> &'static str {
        "in_memory"
    }
}

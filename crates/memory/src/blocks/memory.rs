//! [`Memory`]: one agent's view of a [`MemoryStore`], and the only write path to it.
//!
//! Every edit (update, append, replace) runs as one atomic read-check-write inside the store: the permission check
//! ([`crate::blocks::permission::authorize`]) and the new value are computed on the block as it is at that instant, so
//! concurrent appends never lose each other and no tool can bypass the check. The soft budget never refuses a write;
//! the outcome reports how far over it the block is.

use crate::agent_id::{AgentId, validate_id};
use crate::blocks::block::{BlockEdit, BlockSpec, DEFAULT_CHAR_LIMIT, EditOp, MemoryBlock, PendingWrite};
use crate::blocks::permission::authorize;
use crate::blocks::render::render_blocks;
use crate::blocks::store::{CachedEmbedding, EditFn, MemoryStore};
use crate::clock::{SharedClock, SystemClock};
use crate::error::{MemoryError, Result};
use crate::search::embeddings::{Embedder, MAX_EMBED_CHARS, content_hash, cosine};
use crate::search::query::{HitSource, TextHit, naive_snippet, query_terms};
use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::Serialize;
use std::collections::HashMap;
use std::sync::Arc;

/// `update_memory` and friends may not be given a description longer than this.
pub const MAX_DESCRIPTION_CHARS: usize = 1000;
/// The most characters the tools may leave in an agent's memory blocks together, as the system context shows them
/// (values and descriptions, escaped; the runtime's session summaries aside): every block is in every system context
/// of the agent, so a model, another agent's turn or a client cannot grow it until no request fits.
pub const MAX_MEMORY_CHARS: usize = 100_000;
/// The most blocks the tools may create for one agent (each is shown with its label and attributes).
pub const MAX_BLOCKS: usize = 2_000;
/// Largest `limit` of a search.
pub const MAX_SEARCH_LIMIT: usize = 50;
/// Default `limit` of a search.
pub const DEFAULT_SEARCH_LIMIT: usize = 10;
/// Values up to this many characters are quoted whole in a `memory_no_match` error; longer ones as a window.
pub const NO_MATCH_FULL_VALUE_CHARS: usize = 1500;
/// Characters on each side of the nearest partial match in a `memory_no_match` window.
const NO_MATCH_WINDOW: usize = 500;

/// One agent's memory. Cheap to clone.
#[derive(Clone)]
pub struct Memory {
    agent: AgentId,
    store: Arc<dyn MemoryStore>,
    clock: SharedClock,
    default_char_limit: usize,
    embedder: Option<Embedder>,
    /// Held by a tool's write from the read of the other blocks (for the limits) to its commit: one at a time per
    /// agent in this process ([`Memory::with_write_lock`] shares it between an agent's handles).
    writes: Arc<tokio::sync::Mutex<()>>,
    /// Who started the turn the tool writes of this handle run in, when it was not the user ([`Memory::in_turn_of`]).
    writer: Option<String>,
}

impl std::fmt::Debug for Memory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Memory")
            .field("agent", &self.agent)
            .field("store", &self.store.kind())
            .field("search_mode", &self.search_mode())
            .finish()
    }
}

/// Which ranking `search_memory` uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SearchMode {
    /// Full-text ranking only (FTS5/BM25 in SQLite, text search in PostgreSQL; naive term counts in memory).
    Text,
    /// Text and embedding similarity combined (an embeddings endpoint is configured).
    Hybrid,
}

/// The result of a successful edit.
#[derive(Debug, Clone)]
pub struct WriteOutcome {
    /// The block as written.
    pub block: MemoryBlock,
    /// The value before (absent when the edit created the block).
    pub previous_value: Option<String>,
    /// True when the edit created the block.
    pub created: bool,
    /// For a replace: the 1-based line where the replaced text started.
    pub line: Option<usize>,
    /// The kind of edit.
    pub op: EditOp,
}

impl WriteOutcome {
    /// Characters over the soft budget, if any.
    pub fn over_budget_by(&self) -> Option<usize> {
        self.block.over_budget_by()
    }

    /// A sentence about the budget when the block is over it.
    pub fn budget_warning(&self) -> Option<String> {
        self.over_budget_by().map(|over| {
            format!(
                "Block '{}' is over its soft budget by {over} characters ({}/{}); the write was kept, but consider condensing it.",
                self.block.label,
                self.block.chars(),
                self.block.char_limit
            )
        })
    }
}

/// One ranked search hit.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SearchHit {
    /// The block.
    pub label: String,
    /// Current value or history.
    pub source: HitSource,
    /// The matching passage, matches in `[brackets]`.
    pub snippet: String,
    /// The final score (higher is better): the text score in text mode, the hybrid score in hybrid mode.
    pub score: f64,
    /// The text score (BM25, or `ts_rank` on PostgreSQL), when the text search found the block.
    pub text_score: Option<f64>,
    /// The cosine similarity to the query, in hybrid mode.
    pub vector_score: Option<f64>,
    /// When the matching text was written.
    pub at: DateTime<Utc>,
}

/// The result of a search.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SearchResults {
    /// The ranking used.
    pub mode: SearchMode,
    /// Why the mode differs from the configured one, if it does.
    pub note: Option<String>,
    /// Hits, best first.
    pub hits: Vec<SearchHit>,
}

impl Memory {
    /// `agent`'s memory in `store`, on the system clock, with the default budget and no embeddings.
    pub fn new(agent: AgentId, store: Arc<dyn MemoryStore>) -> Self {
        Self {
            agent,
            store,
            clock: Arc::new(SystemClock),
            default_char_limit: DEFAULT_CHAR_LIMIT,
            embedder: None,
            writes: Arc::default(),
            writer: None,
        }
    }

    /// This memory, for the tool writes of a turn `who` started when it was not the user (`None`: the user's turn):
    /// a block such a write leaves words in is marked with `who` ([`MemoryBlock::written_by`]) until a write of the
    /// user's turn replaces its whole value.
    #[must_use]
    pub fn in_turn_of(&self, who: Option<String>) -> Self {
        Self { writer: who, ..self.clone() }
    }

    /// Shares `lock` as the agent's write lock: every handle of one agent in a process holds the same, so two
    /// concurrent writes cannot both pass the limits on what memory holds (on PostgreSQL, instances each have theirs,
    /// and concurrent writes of several instances may pass them by a block each).
    pub fn with_write_lock(mut self, lock: Arc<tokio::sync::Mutex<()>>) -> Self {
        self.writes = lock;
        self
    }

    /// Uses `clock` for timestamps.
    pub fn with_clock(mut self, clock: SharedClock) -> Self {
        self.clock = clock;
        self
    }

    /// The soft budget of blocks created by tools.
    pub fn with_default_char_limit(mut self, limit: usize) -> Self {
        self.default_char_limit = limit;
        self
    }

    /// Enables hybrid search.
    pub fn with_embedder(mut self, embedder: Option<Embedder>) -> Self {
        self.embedder = embedder;
        self
    }

    /// The agent.
    pub fn agent_id(&self) -> &AgentId {
        &self.agent
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn MemoryStore> {
        &self.store
    }

    /// The ranking `search` will use.
    pub fn search_mode(&self) -> SearchMode {
        if self.embedder.is_some() { SearchMode::Hybrid } else { SearchMode::Text }
    }

    /// One block.
    pub async fn get(&self, label: &str) -> Result<Option<MemoryBlock>> {
        self.store.get(self.agent.as_str(), label).await
    }

    /// Every block, ordered by label.
    pub async fn blocks(&self) -> Result<Vec<MemoryBlock>> {
        self.store.list(self.agent.as_str()).await
    }

    /// A block's history, newest first.
    pub async fn history(&self, label: &str, limit: usize) -> Result<Vec<BlockEdit>> {
        self.store.history(self.agent.as_str(), label, limit).await
    }

    async fn labels(&self) -> Vec<String> {
        self.blocks().await.map(|b| b.into_iter().map(|b| b.label).collect()).unwrap_or_default()
    }

    async fn edit(&self, label: &str, op: EditOp, edit: EditFn) -> Result<crate::blocks::block::Modified> {
        let owned = label.to_owned();
        // Every write, whatever the store: no NUL character (PostgreSQL's text refuses it; no memory needs it). The
        // error names the parameter the text came in.
        let text_field = match op {
            EditOp::Append => "content",
            EditOp::Replace => "new",
            EditOp::Create | EditOp::Update | EditOp::System => "value",
        };
        // What the other blocks hold, read under the agent's write lock, which this write holds until it commits.
        let _writing = match op {
            EditOp::System => None,
            _ => Some(self.writes.lock().await),
        };
        let (others, count) = match op {
            EditOp::System => (0, 0),
            _ => {
                let blocks = self.blocks().await?;
                let kept = blocks.iter().filter(|b| !b.label.starts_with(RUNTIME_LABEL_PREFIX));
                let others: usize = kept.clone().filter(|b| b.label != label).map(shown_chars).sum();
                (others, kept.count())
            }
        };
        let edit: EditFn = Box::new(move |before| {
            let write = edit(before)?;
            if let (Some(w), true) = (&write, op != EditOp::System) {
                if before.is_none() && count >= MAX_BLOCKS {
                    return Err(MemoryError::invalid(
                        "label",
                        format!("memory holds {count} blocks, the most it may; condense a block first (reuse one)"),
                    ));
                }
                let this = shown_chars(&w.block);
                let total = others.saturating_add(this);
                if total > MAX_MEMORY_CHARS && this > before.map_or(0, shown_chars) {
                    return Err(MemoryError::invalid(
                        text_field,
                        format!(
                            "memory would hold {total} characters, above the {MAX_MEMORY_CHARS} every system context \
                             of this agent can carry; condense a block first"
                        ),
                    ));
                }
            }
            if let Some(w) = &write {
                if w.block.value.contains('\0') {
                    return Err(MemoryError::invalid(text_field, "contains a NUL character (U+0000)"));
                }
                if w.block.description.as_deref().is_some_and(|d| d.contains('\0')) {
                    return Err(MemoryError::invalid("description", "contains a NUL character (U+0000)"));
                }
            }
            Ok(write)
        });
        let result = self.store.modify(self.agent.as_str(), &owned, edit).await;
        match result {
            Err(MemoryError::BlockNotFound { label, .. }) => {
                Err(MemoryError::BlockNotFound { label, existing: self.labels().await })
            }
            Ok(m) if m.after.is_none() && op != EditOp::System => Err(MemoryError::internal("the edit wrote nothing")),
            other => other,
        }
    }

    /// Sets a block's value (creating a read-write block with the default budget when missing). `description`, when
    /// given, replaces the description (empty clears it). `via` names the tool for error messages.
    pub async fn update(
        &self,
        label: &str,
        value: String,
        description: Option<String>,
        via: &str,
    ) -> Result<WriteOutcome> {
        tool_label("label", label)?;
        let description = check_description(description)?;
        let now = self.clock.now();
        let actor = self.agent.to_string();
        let writer = self.writer.clone();
        let (via_owned, limit, label_owned) = (via.to_owned(), self.default_char_limit, label.to_owned());
        let m = self
            .edit(
                label,
                EditOp::Update,
                Box::new(move |before| {
                    authorize(before, EditOp::Update, &via_owned)?;
                    let block = match before {
                        Some(b) => MemoryBlock {
                            value,
                            description: description.unwrap_or_else(|| b.description.clone()),
                            updated_at: now,
                            written_by: writer,
                            ..b.clone()
                        },
                        None => MemoryBlock {
                            label: label_owned,
                            value,
                            description: description.flatten(),
                            permission: crate::blocks::block::Permission::ReadWrite,
                            char_limit: limit,
                            pinned: false,
                            written_by: writer,
                            created_at: now,
                            updated_at: now,
                        },
                    };
                    let op = if before.is_some() { EditOp::Update } else { EditOp::Create };
                    Ok(Some(PendingWrite { block, actor, op }))
                }),
            )
            .await?;
        outcome(m, EditOp::Update, None)
    }

    /// Appends `content` to a block, on a new line when the value does not end with one.
    pub async fn append(&self, label: &str, content: String, via: &str) -> Result<WriteOutcome> {
        tool_label("label", label)?;
        if content.is_empty() {
            return Err(MemoryError::invalid("content", "must not be empty"));
        }
        let now = self.clock.now();
        let actor = self.agent.to_string();
        let writer = self.writer.clone();
        let (via_owned, label_owned) = (via.to_owned(), label.to_owned());
        let m = self
            .edit(
                label,
                EditOp::Append,
                Box::new(move |before| {
                    let Some(b) = before else {
                        return Err(MemoryError::BlockNotFound { label: label_owned, existing: Vec::new() });
                    };
                    authorize(Some(b), EditOp::Append, &via_owned)?;
                    let mut value = b.value.clone();
                    if !value.is_empty() && !value.ends_with('\n') {
                        value.push('\n');
                    }
                    value.push_str(&content);
                    let written_by = writer.or_else(|| b.written_by.clone());
                    let block = MemoryBlock { value, updated_at: now, written_by, ..b.clone() };
                    Ok(Some(PendingWrite { block, actor, op: EditOp::Append }))
                }),
            )
            .await?;
        outcome(m, EditOp::Append, None)
    }

    /// Replaces the one occurrence of `old` with `new`. No occurrence → `memory_no_match` quoting the value (or the
    /// window where `old` nearly matched); several → `memory_ambiguous_match` with their line numbers.
    pub async fn replace(&self, label: &str, old: String, new: String, via: &str) -> Result<WriteOutcome> {
        tool_label("label", label)?;
        if old.is_empty() {
            return Err(MemoryError::invalid("old", "must not be empty: say which text to replace"));
        }
        let now = self.clock.now();
        let actor = self.agent.to_string();
        let writer = self.writer.clone();
        let (via_owned, label_owned) = (via.to_owned(), label.to_owned());
        let line_slot = Arc::new(parking_lot::Mutex::new(None));
        let line_out = Arc::clone(&line_slot);
        let m = self
            .edit(
                label,
                EditOp::Replace,
                Box::new(move |before| {
                    let Some(b) = before else {
                        return Err(MemoryError::BlockNotFound { label: label_owned, existing: Vec::new() });
                    };
                    authorize(Some(b), EditOp::Replace, &via_owned)?;
                    let positions: Vec<usize> = b.value.match_indices(old.as_str()).map(|(i, _)| i).collect();
                    match positions.as_slice() {
                        [] => {
                            let (value_window, truncated) = no_match_window(&b.value, &old);
                            Err(MemoryError::NoMatch { label: label_owned, value_window, truncated })
                        }
                        [at] => {
                            let at = *at;
                            *line_out.lock() = Some(line_of(&b.value, at));
                            let mut value = String::with_capacity(b.value.len() + new.len());
                            value.push_str(&b.value[..at]);
                            value.push_str(&new);
                            value.push_str(&b.value[at + old.len()..]);
                            let written_by = writer.or_else(|| b.written_by.clone());
                            let block = MemoryBlock { value, updated_at: now, written_by, ..b.clone() };
                            Ok(Some(PendingWrite { block, actor, op: EditOp::Replace }))
                        }
                        many => Err(MemoryError::AmbiguousMatch {
                            label: label_owned,
                            count: many.len(),
                            lines: many.iter().map(|&i| line_of(&b.value, i)).collect(),
                        }),
                    }
                }),
            )
            .await?;
        let line = *line_slot.lock();
        outcome(m, EditOp::Replace, line)
    }

    /// Creates or overwrites a block as the runtime (not a tool): value, description, permission, budget and pin
    /// all from `spec`, permissions not checked. Recorded in the history as a `system` edit.
    pub async fn put_block(&self, spec: BlockSpec) -> Result<MemoryBlock> {
        self.system_write(spec, true).await
    }

    /// Creates the block from `spec` when it does not exist; leaves an existing block untouched.
    pub async fn ensure_block(&self, spec: BlockSpec) -> Result<MemoryBlock> {
        self.system_write(spec, false).await
    }

    async fn system_write(&self, spec: BlockSpec, overwrite: bool) -> Result<MemoryBlock> {
        validate_id("label", &spec.label)?;
        let now = self.clock.now();
        let label = spec.label.clone();
        let m = self
            .edit(
                &label,
                EditOp::System,
                Box::new(move |before| {
                    if before.is_some() && !overwrite {
                        return Ok(None);
                    }
                    let block = MemoryBlock {
                        label: spec.label,
                        value: spec.value,
                        description: spec.description,
                        permission: spec.permission,
                        char_limit: spec.char_limit,
                        pinned: spec.pinned,
                        written_by: None,
                        created_at: before.map(|b| b.created_at).unwrap_or(now),
                        updated_at: now,
                    };
                    Ok(Some(PendingWrite { block, actor: "system".to_owned(), op: EditOp::System }))
                }),
            )
            .await?;
        m.after.or(m.before).ok_or_else(|| MemoryError::internal("the block vanished"))
    }

    /// Deletes a block (runtime operation; its history is kept). Returns whether it existed.
    pub async fn delete_block(&self, label: &str) -> Result<bool> {
        self.store.delete(self.agent.as_str(), label).await
    }

    /// Ranked search over block values and their history; hybrid when an embeddings endpoint is configured.
    pub async fn search(&self, query: &str, limit: Option<usize>) -> Result<SearchResults> {
        self.search_visible(query, limit, &|_| true).await
    }

    /// [`Memory::search`] over the blocks whose label `visible` accepts: up to `limit` hits among them (the store is
    /// asked for more while hidden blocks took places, up to [`MAX_HIDDEN_FETCH`] hits).
    pub async fn search_visible(
        &self,
        query: &str,
        limit: Option<usize>,
        visible: &(dyn Fn(&str) -> bool + Sync),
    ) -> Result<SearchResults> {
        let terms = query_terms(query);
        if terms.is_empty() {
            return Err(MemoryError::invalid("query", "contains no words to search for"));
        }
        let limit = limit.unwrap_or(DEFAULT_SEARCH_LIMIT);
        if limit == 0 || limit > MAX_SEARCH_LIMIT {
            return Err(MemoryError::invalid("limit", format!("must be between 1 and {MAX_SEARCH_LIMIT}")));
        }
        let mut fetch = limit;
        let text_hits = loop {
            let hits = self.store.search(self.agent.as_str(), &terms, fetch).await?;
            let exhausted = hits.len() < fetch;
            let shown: Vec<TextHit> = hits.into_iter().filter(|h| visible(&h.label)).collect();
            if shown.len() >= limit || exhausted || fetch >= MAX_HIDDEN_FETCH {
                break shown.into_iter().take(limit).collect::<Vec<_>>();
            }
            fetch = fetch.saturating_mul(4).min(MAX_HIDDEN_FETCH);
        };
        let Some(embedder) = &self.embedder else {
            return Ok(SearchResults { mode: SearchMode::Text, note: None, hits: text_only(text_hits) });
        };
        match self.hybrid(embedder, query, &terms, text_hits.clone(), limit, visible).await {
            Ok(hits) => Ok(SearchResults { mode: SearchMode::Hybrid, note: None, hits }),
            Err(e) => {
                tracing::warn!(error = %e, "embeddings failed; falling back to text search");
                Ok(SearchResults {
                    mode: SearchMode::Text,
                    note: Some(format!("hybrid ranking unavailable ({e}); results are text-ranked")),
                    hits: text_only(text_hits),
                })
            }
        }
    }

    async fn hybrid(
        &self,
        embedder: &Embedder,
        query: &str,
        terms: &[String],
        text_hits: Vec<TextHit>,
        limit: usize,
        visible: &(dyn Fn(&str) -> bool + Sync),
    ) -> Result<Vec<SearchHit>> {
        let model = embedder.config().model.clone();
        let blocks: Vec<MemoryBlock> = self.blocks().await?.into_iter().filter(|b| visible(&b.label)).collect();
        let cached = self.store.cached_embeddings(self.agent.as_str(), &model).await?;
        let mut vectors: HashMap<String, Vec<f32>> = HashMap::new();
        let cache: HashMap<&str, &CachedEmbedding> = cached.iter().map(|c| (c.label.as_str(), c)).collect();
        let mut stale = Vec::new();
        for b in blocks.iter().filter(|b| !b.value.trim().is_empty()) {
            let text: String = b.value.chars().take(MAX_EMBED_CHARS).collect();
            let hash = content_hash(&text);
            match cache.get(b.label.as_str()) {
                Some(c) if c.content_hash == hash => {
                    vectors.insert(b.label.clone(), c.vector.clone());
                }
                _ => stale.push((b.label.clone(), hash, text)),
            }
        }
        if !stale.is_empty() {
            let texts: Vec<String> = stale.iter().map(|(_, _, t)| t.clone()).collect();
            let embedded = embedder.embed(&texts).await?;
            let mut fresh = Vec::new();
            for ((label, hash, _), vector) in stale.into_iter().zip(embedded) {
                vectors.insert(label.clone(), vector.clone());
                fresh.push(CachedEmbedding { label, content_hash: hash, vector });
            }
            for e in fresh {
                self.store.store_embedding(self.agent.as_str(), &model, e).await?;
            }
        }
        let query_vec = embedder.embed(&[query.to_owned()]).await?.into_iter().next().unwrap_or_default();
        let similarity: HashMap<&str, f64> = vectors.iter().map(|(l, v)| (l.as_str(), cosine(&query_vec, v))).collect();

        let weight = embedder.config().text_weight;
        let best_text = text_hits.iter().map(|h| h.score).fold(0.0f64, f64::max);
        let mut hits: Vec<SearchHit> = text_hits
            .into_iter()
            .map(|h| {
                let vector = similarity.get(h.label.as_str()).copied();
                let text_norm = if best_text > 0.0 { h.score / best_text } else { 0.0 };
                SearchHit {
                    score: weight * text_norm + (1.0 - weight) * vector.unwrap_or(0.0).max(0.0),
                    text_score: Some(h.score),
                    vector_score: vector,
                    label: h.label,
                    source: h.source,
                    snippet: h.snippet,
                    at: h.at,
                }
            })
            .collect();
        let mut by_similarity: Vec<(&str, f64)> = similarity.iter().map(|(l, s)| (*l, *s)).collect();
        by_similarity.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(b.0)));
        for (label, sim) in by_similarity.into_iter().take(limit) {
            if sim <= 0.0 || sim < embedder.config().min_vector_score || hits.iter().any(|h| h.label == label) {
                continue;
            }
            let Some(block) = blocks.iter().find(|b| b.label == label) else { continue };
            hits.push(SearchHit {
                label: label.to_owned(),
                source: HitSource::Value,
                snippet: naive_snippet(&block.value, terms),
                score: (1.0 - weight) * sim,
                text_score: None,
                vector_score: Some(sim),
                at: block.updated_at,
            });
        }
        hits.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| a.label.cmp(&b.label)));
        hits.truncate(limit);
        Ok(hits)
    }

    /// The agent's system-context section: every block with its label, description, permission, used/limit and
    /// value, pinned blocks first, then by label (see [`render_blocks`]).
    pub async fn render(&self) -> Result<String> {
        Ok(render_blocks(&self.blocks().await?))
    }
}

/// A block's characters as the system context shows them: its value and description, escaped.
fn shown_chars(b: &MemoryBlock) -> usize {
    let text = |t: &str| crate::blocks::render::escape_text(t).chars().count();
    text(&b.value) + b.description.as_deref().map_or(0, text)
}

/// Labels the runtime keeps for itself: `summary_<session>` holds a session's summary of its older turns
/// (`holdfast_agent::window`), shown in that session as its own history. Tools may not create or edit one, and
/// `list_memories` and `search_memory` show a session only its own ([`summary_label`]).
pub const RUNTIME_LABEL_PREFIX: &str = "summary_";

/// The block that holds session `session_id`'s summary of its older turns.
pub fn summary_label(session_id: &str) -> String {
    format!("{RUNTIME_LABEL_PREFIX}{session_id}")
}

/// Whether a tool call in session `session_id` may see the block `label`: any block but another session's summary
/// (a session's summary is that conversation's, and another principal's or another agent's turn must not read it).
pub fn visible_in_session(label: &str, session_id: &str) -> bool {
    label.strip_prefix(RUNTIME_LABEL_PREFIX).is_none_or(|rest| rest == session_id)
}

/// The most hits [`Memory::search_visible`] asks the store for while hidden blocks take places.
pub const MAX_HIDDEN_FETCH: usize = 400;

/// A label a tool may write: a valid id, not one the runtime keeps ([`RUNTIME_LABEL_PREFIX`]).
fn tool_label(field: &str, label: &str) -> Result<()> {
    validate_id(field, label)?;
    if label.starts_with(RUNTIME_LABEL_PREFIX) {
        return Err(MemoryError::invalid(
            "label",
            format!(
                "`{label}`: blocks named `{RUNTIME_LABEL_PREFIX}…` are the runtime's session summaries; use another label"
            ),
        ));
    }
    Ok(())
}

fn text_only(hits: Vec<TextHit>) -> Vec<SearchHit> {
    hits.into_iter()
        .map(|h| SearchHit {
            label: h.label,
            source: h.source,
            snippet: h.snippet,
            score: h.score,
            text_score: Some(h.score),
            vector_score: None,
            at: h.at,
        })
        .collect()
}

fn check_description(description: Option<String>) -> Result<Option<Option<String>>> {
    match description {
        None => Ok(None),
        Some(d) if d.trim().is_empty() => Ok(Some(None)),
        Some(d) if d.chars().count() > MAX_DESCRIPTION_CHARS => {
            Err(MemoryError::invalid("description", format!("is longer than {MAX_DESCRIPTION_CHARS} characters")))
        }
        Some(d) => Ok(Some(Some(d))),
    }
}

fn outcome(m: crate::blocks::block::Modified, op: EditOp, line: Option<usize>) -> Result<WriteOutcome> {
    let block = m.after.ok_or_else(|| MemoryError::internal("the edit wrote nothing"))?;
    let created = m.before.is_none();
    Ok(WriteOutcome { block, previous_value: m.before.map(|b| b.value), created, line, op })
}

/// 1-based line number of a byte offset.
fn line_of(text: &str, byte: usize) -> usize {
    text.get(..byte).map(|s| s.matches('\n').count()).unwrap_or(0) + 1
}

/// The part of `value` to quote when `old` does not occur: the whole value when short, else a window around the
/// longest prefix of `old` that does occur (or the start of the value).
fn no_match_window(value: &str, old: &str) -> (String, bool) {
    let chars: Vec<char> = value.chars().collect();
    if chars.len() <= NO_MATCH_FULL_VALUE_CHARS {
        return (value.to_owned(), false);
    }
    // Binary search the longest prefix of `old` (in chars) that occurs: occurrence is monotone in prefix length.
    let old_chars: Vec<char> = old.chars().collect();
    let (mut lo, mut hi) = (0usize, old_chars.len());
    let mut found: Option<usize> = None;
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        let prefix: String = old_chars[..mid].iter().collect();
        match value.find(&prefix) {
            Some(at) => {
                lo = mid;
                found = Some(at);
            }
            None => hi = mid - 1,
        }
    }
    let center = match found {
        Some(byte) if lo >= 3 => value.get(..byte).map(|s| s.chars().count()).unwrap_or(0),
        _ => 0,
    };
    let start = center.saturating_sub(NO_MATCH_WINDOW);
    let end = (center + NO_MATCH_WINDOW).min(chars.len());
    let mut window = String::new();
    if start > 0 {
        window.push('…');
    }
    window.extend(&chars[start..end]);
    if end < chars.len() {
        window.push('…');
    }
    (window, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_and_windows() {
        assert_eq!(line_of("a\nb\nc", 4), 3);
        assert_eq!(line_of("abc", 0), 1);
        let (w, t) = no_match_window("short value", "zzz");
        assert_eq!((w.as_str(), t), ("short value", false));
        let long = format!("{}The user lives in Paris.{}", "a".repeat(3000), "b".repeat(3000));
        let (w, t) = no_match_window(&long, "The user lives in Berlin.");
        assert!(t && w.contains("The user lives in Paris.") && w.starts_with('…') && w.ends_with('…'), "{w}");
        assert!(w.chars().count() <= 2 * NO_MATCH_WINDOW + 2);
    }

    #[tokio::test]
    async fn hidden_blocks_do_not_take_the_places_of_visible_ones() {
        let memory = Memory::new(AgentId::new("a").unwrap(), Arc::new(crate::InMemoryStore::new()));
        let spec = |label: String| BlockSpec {
            label,
            value: "the treasury address is in this note".into(),
            description: None,
            permission: crate::Permission::ReadWrite,
            char_limit: 1_000,
            pinned: false,
        };
        for i in 0..30 {
            memory.put_block(spec(summary_label(&format!("s_{i}")))).await.unwrap();
        }
        for i in 0..4 {
            memory.put_block(spec(format!("note_{i}"))).await.unwrap();
        }
        let visible = |label: &str| visible_in_session(label, "s_7");
        let found = memory.search_visible("treasury address", Some(3), &visible).await.unwrap();
        let labels: Vec<&str> = found.hits.iter().map(|h| h.label.as_str()).collect();
        assert_eq!(labels.len(), 3, "{labels:?}");
        assert!(labels.iter().all(|l| !l.starts_with(RUNTIME_LABEL_PREFIX) || *l == "summary_s_7"), "{labels:?}");
        let found = memory.search_visible("treasury address", Some(10), &visible).await.unwrap();
        assert_eq!(found.hits.len(), 5, "four notes and the session's own summary");
        assert_eq!(memory.search("treasury address", Some(10)).await.unwrap().hits.len(), 10, "unfiltered");
    }
}

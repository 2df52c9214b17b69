//! `update_memory`, `append_memory`, `replace_in_memory`, `list_memories`, `search_memory`.

use super::{n, publish_memory_update, resolve};
use crate::agent::AgentHandle;
use crate::blocks::block::Permission;
use crate::blocks::memory::SearchMode;
use crate::clock::fmt_time;
use crate::search::query::HitSource;
use holdfast_core::{AiTool, ToolContext, ToolError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// Parameters of `update_memory`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateMemoryInput {
    /// The block's label, e.g. `human` (letters, digits, `_`, `-`, `.`; created when missing).
    pub label: String,
    /// The block's new value, whole (replaces the old one).
    pub value: String,
    /// What the block is for. Null keeps the current description; empty clears it.
    pub description: Option<String>,
}

/// Result of `update_memory`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct UpdateMemoryOutput {
    /// True when the value was written.
    pub success: bool,
    /// The value before, when the block existed.
    pub previous_value: Option<String>,
    /// "Created new memory block '…'" when created; a soft-budget warning when the block is over budget.
    pub message: Option<String>,
}

/// `update_memory`: sets a block's value, creating the block when missing.
#[derive(Debug, Clone)]
pub struct UpdateMemoryTool {
    handle: AgentHandle,
}

impl UpdateMemoryTool {
    /// The tool for `handle`'s agent.
    pub fn new(handle: AgentHandle) -> Self {
        Self { handle }
    }
}

impl AiTool for UpdateMemoryTool {
    type Input = UpdateMemoryInput;
    type Output = UpdateMemoryOutput;

    fn name(&self) -> &str {
        "update_memory"
    }

    fn description(&self) -> &str {
        "Set a memory block's whole value (creating the block when it does not exist). Returns the previous value. \
         Blocks persist across conversations; use append_memory to add a line and replace_in_memory to change part \
         of a value. Read-only and append-only blocks refuse this."
    }

    fn examples(&self) -> Vec<serde_json::Value> {
        vec![
            json!({"label": "human", "value": "The user's name is Alice", "description": "Information about the user"}),
            json!({"label": "preferences", "value": "User prefers dark mode", "description": null}),
        ]
    }

    async fn execute(&self, input: UpdateMemoryInput, ctx: &ToolContext) -> Result<UpdateMemoryOutput, ToolError> {
        let handle = resolve(&self.handle, ctx);
        let outcome = writer(&handle, ctx).update(&input.label, input.value, input.description, self.name()).await?;
        publish_memory_update(ctx, &handle, &outcome, self.name());
        let mut message = Vec::new();
        if outcome.created {
            message.push(format!("Created new memory block '{}'", outcome.block.label));
        }
        if let Some(w) = outcome.budget_warning() {
            message.push(w);
        }
        Ok(UpdateMemoryOutput {
            success: true,
            previous_value: outcome.previous_value,
            message: (!message.is_empty()).then(|| message.join(". ")),
        })
    }
}

/// Parameters of `append_memory`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AppendMemoryInput {
    /// The block's label (it must exist).
    pub label: String,
    /// Text to add at the end, on a new line.
    pub content: String,
}

/// Result of `append_memory`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct AppendMemoryOutput {
    /// True when the text was appended.
    pub success: bool,
    /// The block.
    pub label: String,
    /// Characters in the block now.
    pub chars: u64,
    /// The block's soft budget.
    pub char_limit: u64,
    /// How many characters over the budget the block is (null when within it). The write is kept either way.
    pub over_budget_by: Option<u64>,
    /// A soft-budget warning, when over.
    pub message: Option<String>,
}

/// `append_memory`: appends a line to a block.
#[derive(Debug, Clone)]
pub struct AppendMemoryTool {
    handle: AgentHandle,
}

impl AppendMemoryTool {
    /// The tool for `handle`'s agent.
    pub fn new(handle: AgentHandle) -> Self {
        Self { handle }
    }
}

impl AiTool for AppendMemoryTool {
    type Input = AppendMemoryInput;
    type Output = AppendMemoryOutput;

    fn name(&self) -> &str {
        "append_memory"
    }

    fn description(&self) -> &str {
        "Append text to the end of an existing memory block, on a new line. Works on read-write and append-only \
         blocks. If the block goes over its soft budget the text is still kept and the result says by how much."
    }

    fn examples(&self) -> Vec<serde_json::Value> {
        vec![json!({"label": "human", "content": "Prefers to be called Ali."})]
    }

    async fn execute(&self, input: AppendMemoryInput, ctx: &ToolContext) -> Result<AppendMemoryOutput, ToolError> {
        let handle = resolve(&self.handle, ctx);
        let outcome = writer(&handle, ctx).append(&input.label, input.content, self.name()).await?;
        publish_memory_update(ctx, &handle, &outcome, self.name());
        let b = &outcome.block;
        Ok(AppendMemoryOutput {
            success: true,
            label: b.label.clone(),
            chars: n(b.chars()),
            char_limit: n(b.char_limit),
            over_budget_by: outcome.over_budget_by().map(n),
            message: outcome.budget_warning(),
        })
    }
}

/// Parameters of `replace_in_memory`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReplaceInMemoryInput {
    /// The block's label.
    pub label: String,
    /// The exact text to replace; it must occur exactly once in the block (not empty).
    pub old: String,
    /// The replacement (may be empty to delete `old`).
    pub new: String,
}

/// Result of `replace_in_memory`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct ReplaceInMemoryOutput {
    /// True when the text was replaced.
    pub success: bool,
    /// The block.
    pub label: String,
    /// The 1-based line where the replaced text started.
    pub line: u64,
    /// Characters in the block now.
    pub chars: u64,
    /// The block's soft budget.
    pub char_limit: u64,
    /// How many characters over the budget the block is (null when within it).
    pub over_budget_by: Option<u64>,
    /// A soft-budget warning, when over.
    pub message: Option<String>,
}

/// `replace_in_memory`: replaces the one occurrence of a text in a block.
#[derive(Debug, Clone)]
pub struct ReplaceInMemoryTool {
    handle: AgentHandle,
}

impl ReplaceInMemoryTool {
    /// The tool for `handle`'s agent.
    pub fn new(handle: AgentHandle) -> Self {
        Self { handle }
    }
}

impl AiTool for ReplaceInMemoryTool {
    type Input = ReplaceInMemoryInput;
    type Output = ReplaceInMemoryOutput;

    fn name(&self) -> &str {
        "replace_in_memory"
    }

    fn description(&self) -> &str {
        "Replace text in a read-write memory block. `old` must occur exactly once: if it does not occur, the error \
         (memory_no_match) quotes the block's current value so you can retry with the exact text; if it occurs \
         several times, the error (memory_ambiguous_match) lists the line numbers: include more context."
    }

    fn examples(&self) -> Vec<serde_json::Value> {
        vec![json!({"label": "human", "old": "lives in Paris", "new": "lives in Berlin"})]
    }

    async fn execute(
        &self,
        input: ReplaceInMemoryInput,
        ctx: &ToolContext,
    ) -> Result<ReplaceInMemoryOutput, ToolError> {
        let handle = resolve(&self.handle, ctx);
        let outcome = writer(&handle, ctx).replace(&input.label, input.old, input.new, self.name()).await?;
        publish_memory_update(ctx, &handle, &outcome, self.name());
        let b = &outcome.block;
        Ok(ReplaceInMemoryOutput {
            success: true,
            label: b.label.clone(),
            line: n(outcome.line.unwrap_or(1)),
            chars: n(b.chars()),
            char_limit: n(b.char_limit),
            over_budget_by: outcome.over_budget_by().map(n),
            message: outcome.budget_warning(),
        })
    }
}

/// Parameters of `list_memories` (none).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListMemoriesInput {}

/// One block in `list_memories`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct MemorySummary {
    /// Label.
    pub label: String,
    /// Description.
    pub description: Option<String>,
    /// `read_only`, `append` or `read_write`.
    pub permission: Permission,
    /// Characters used.
    pub chars: u64,
    /// Soft budget.
    pub char_limit: u64,
    /// Characters over budget (null when within it).
    pub over_budget_by: Option<u64>,
    /// Pinned blocks are shown first in the agent's context.
    pub pinned: bool,
    /// Last change, RFC 3339.
    pub updated_at: String,
    /// Who started the turn of its last write when it was not the user (`agent 'mallory'`): its words are theirs,
    /// not the user's. Null: the user's turns, the runtime, the configuration.
    pub written_by: Option<String>,
}

/// Result of `list_memories`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct ListMemoriesOutput {
    /// Number of blocks.
    pub count: u64,
    /// The blocks, pinned first, then by label.
    pub blocks: Vec<MemorySummary>,
}

/// `list_memories`: labels, descriptions, sizes and permissions of every block.
#[derive(Debug, Clone)]
pub struct ListMemoriesTool {
    handle: AgentHandle,
}

impl ListMemoriesTool {
    /// The tool for `handle`'s agent.
    pub fn new(handle: AgentHandle) -> Self {
        Self { handle }
    }
}

impl AiTool for ListMemoriesTool {
    type Input = ListMemoriesInput;
    type Output = ListMemoriesOutput;

    fn name(&self) -> &str {
        "list_memories"
    }

    fn description(&self) -> &str {
        "List every memory block: label, description, permission, size and soft budget."
    }

    fn examples(&self) -> Vec<serde_json::Value> {
        vec![json!({})]
    }

    async fn execute(&self, _input: ListMemoriesInput, ctx: &ToolContext) -> Result<ListMemoriesOutput, ToolError> {
        let handle = resolve(&self.handle, ctx);
        let mut blocks = handle.memory.blocks().await?;
        // Another session's summary is that conversation's, not this one's.
        blocks.retain(|b| crate::visible_in_session(&b.label, &ctx.session_id));
        blocks.sort_by(|a, b| b.pinned.cmp(&a.pinned).then_with(|| a.label.cmp(&b.label)));
        let blocks: Vec<MemorySummary> = blocks
            .into_iter()
            .map(|b| MemorySummary {
                chars: n(b.chars()),
                over_budget_by: b.over_budget_by().map(n),
                char_limit: n(b.char_limit),
                label: b.label,
                description: b.description,
                permission: b.permission,
                pinned: b.pinned,
                updated_at: fmt_time(b.updated_at),
                written_by: b.written_by,
            })
            .collect();
        Ok(ListMemoriesOutput { count: n(blocks.len()), blocks })
    }
}

/// Parameters of `search_memory`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchMemoryInput {
    /// Words to look for in block values and their earlier versions.
    pub query: String,
    /// Most hits to return, 1–50 (null: 10).
    pub limit: Option<u32>,
}

/// One hit of `search_memory`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct SearchHitView {
    /// The block.
    pub label: String,
    /// `value` (the current value matched) or `history` (an earlier value matched).
    pub source: HitSource,
    /// The matching passage, matches in `[brackets]`.
    pub snippet: String,
    /// Final score, higher is better.
    pub score: f64,
    /// Full-text (BM25) score, when the text search found it.
    pub text_score: Option<f64>,
    /// Cosine similarity to the query (hybrid mode only).
    pub vector_score: Option<f64>,
    /// When the matching text was written, RFC 3339.
    pub at: String,
    /// For a match in the current value: who started the turn of the block's last write when it was not the user
    /// (its words are theirs, not the user's). Null otherwise.
    pub written_by: Option<String>,
}

/// Result of `search_memory`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct SearchMemoryOutput {
    /// `text` (full-text ranking) or `hybrid` (text + embeddings).
    pub mode: SearchMode,
    /// Why the mode is not the configured one (e.g. the embeddings endpoint failed).
    pub note: Option<String>,
    /// Hits, best first, one per block.
    pub hits: Vec<SearchHitView>,
}

/// `search_memory`: ranked search over block values and history.
#[derive(Debug, Clone)]
pub struct SearchMemoryTool {
    handle: AgentHandle,
}

impl SearchMemoryTool {
    /// The tool for `handle`'s agent.
    pub fn new(handle: AgentHandle) -> Self {
        Self { handle }
    }
}

impl AiTool for SearchMemoryTool {
    type Input = SearchMemoryInput;
    type Output = SearchMemoryOutput;

    fn name(&self) -> &str {
        "search_memory"
    }

    fn description(&self) -> &str {
        "Search memory blocks and their earlier versions by words; returns the best-matching blocks with snippets \
         (matches in [brackets]). Ranking is full-text (BM25), or hybrid text + embeddings when an embeddings \
         endpoint is configured; `mode` says which was used."
    }

    fn examples(&self) -> Vec<serde_json::Value> {
        vec![json!({"query": "dark mode preference", "limit": 5}), json!({"query": "Alice", "limit": null})]
    }

    async fn execute(&self, input: SearchMemoryInput, ctx: &ToolContext) -> Result<SearchMemoryOutput, ToolError> {
        let handle = resolve(&self.handle, ctx);
        let limit = input.limit.map(|l| usize::try_from(l).unwrap_or(usize::MAX));
        let session: &str = &ctx.session_id;
        let visible = |label: &str| crate::visible_in_session(label, session);
        let results = handle.memory.search_visible(&input.query, limit, &visible).await?;
        let mut hits = Vec::with_capacity(results.hits.len());
        for h in results.hits {
            let written_by = match h.source {
                HitSource::Value => handle.memory.get(&h.label).await?.and_then(|b| b.written_by),
                HitSource::History => None,
            };
            hits.push(SearchHitView {
                label: h.label,
                source: h.source,
                snippet: h.snippet,
                score: h.score,
                text_score: h.text_score,
                vector_score: h.vector_score,
                at: fmt_time(h.at),
                written_by,
            });
        }
        Ok(SearchMemoryOutput { mode: results.mode, note: results.note, hits })
    }
}

/// The agent's memory for a tool's write in `ctx`'s turn: marked with who started it when that was not the user.
fn writer(handle: &AgentHandle, ctx: &ToolContext) -> crate::Memory {
    handle.memory.in_turn_of(holdfast_core::confirm::TurnStarter::not_user(ctx))
}

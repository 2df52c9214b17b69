//! What each event says: [`EventPayload`], one variant per event name, each with its payload type.
//!
//! Serialized adjacently tagged, `{"event": "<name>", "data": {…}}`, the shape `docs/interfaces.md` documents and the
//! WebSocket carries. A publisher cannot send a name without its payload, or a payload under another name.

use super::names;
use crate::confirm::{Confirmation, UserChannel};
use crate::context_bank::ContextItem;
use crate::error::ToolError;
use crate::registers::RegisterEntry;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// An event's name and payload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", content = "data")]
pub enum EventPayload {
    /// A register was written or removed.
    #[serde(rename = "register.update")]
    RegisterUpdate(RegisterUpdate),
    /// The context bank changed.
    #[serde(rename = "context_bank.update")]
    ContextBankUpdate(ContextBankUpdate),
    /// A memory block changed.
    #[serde(rename = "memory.update")]
    MemoryUpdate(MemoryUpdate),
    /// A tool call started.
    #[serde(rename = "tool.call")]
    ToolCall(ToolCallStarted),
    /// A tool call finished (ok or error).
    #[serde(rename = "tool.result")]
    ToolResult(ToolCallFinished),
    /// The agent produced (part of) a message.
    #[serde(rename = "agent.message")]
    AgentMessage(AgentMessage),
    /// A value-moving action waits for the user's approval.
    #[serde(rename = "confirmation.required")]
    ConfirmationRequired(Confirmation),
    /// A pending confirmation was approved or denied.
    #[serde(rename = "confirmation.resolved")]
    ConfirmationResolved(ConfirmationResolved),
    /// A pending confirmation was withdrawn without a decision: nothing can approve it any more.
    #[serde(rename = "confirmation.withdrawn")]
    ConfirmationWithdrawn(ConfirmationWithdrawn),
    /// A transaction was broadcast.
    #[serde(rename = "tx.pending")]
    TxPending(TxPending),
    /// A transaction was mined.
    #[serde(rename = "tx.confirmed")]
    TxConfirmed(TxConfirmed),
    /// An x402 payment was made.
    #[serde(rename = "payment.made")]
    PaymentMade(PaymentMade),
    /// A message was delivered to the session's user outbox.
    #[serde(rename = "message.outbox")]
    MessageOutbox(MessageOutbox),
    /// A message between agents was refused at the hop limit.
    #[serde(rename = "message.hop_limit")]
    MessageHopLimit(MessageHopLimit),
    /// An agent's inbox turn waits for its per-minute turn budget.
    #[serde(rename = "agent.rate_limited")]
    AgentRateLimited(AgentRateLimited),
    /// A turn the inbox started begins.
    #[serde(rename = "agent.inbox_turn")]
    AgentInboxTurn(AgentInboxTurn),
    /// The session's state was saved (between instances only: never delivered to subscribers).
    #[serde(rename = "session.saved")]
    SessionSaved(SessionSaved),
}

impl EventPayload {
    /// The event's name, one of [`names`].
    pub fn name(&self) -> &'static str {
        match self {
            Self::RegisterUpdate(_) => names::REGISTER_UPDATE,
            Self::ContextBankUpdate(_) => names::CONTEXT_BANK_UPDATE,
            Self::MemoryUpdate(_) => names::MEMORY_UPDATE,
            Self::ToolCall(_) => names::TOOL_CALL,
            Self::ToolResult(_) => names::TOOL_RESULT,
            Self::AgentMessage(_) => names::AGENT_MESSAGE,
            Self::ConfirmationRequired(_) => names::CONFIRMATION_REQUIRED,
            Self::ConfirmationResolved(_) => names::CONFIRMATION_RESOLVED,
            Self::ConfirmationWithdrawn(_) => names::CONFIRMATION_WITHDRAWN,
            Self::TxPending(_) => names::TX_PENDING,
            Self::TxConfirmed(_) => names::TX_CONFIRMED,
            Self::PaymentMade(_) => names::PAYMENT_MADE,
            Self::MessageOutbox(_) => names::MESSAGE_OUTBOX,
            Self::MessageHopLimit(_) => names::MESSAGE_HOP_LIMIT,
            Self::AgentRateLimited(_) => names::AGENT_RATE_LIMITED,
            Self::AgentInboxTurn(_) => names::AGENT_INBOX_TURN,
            Self::SessionSaved(_) => names::SESSION_SAVED,
        }
    }

    /// The payload alone, as JSON (the envelope's `data`).
    pub fn data(&self) -> Value {
        match serde_json::to_value(self) {
            Ok(Value::Object(mut map)) => map.remove("data").unwrap_or(Value::Null),
            _ => Value::Null,
        }
    }
}

/// `register.update`: a register was set (its entry, with provenance) or removed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum RegisterUpdate {
    /// Written: the whole entry.
    Set {
        /// The register.
        key: String,
        /// Its value and provenance.
        #[serde(flatten)]
        entry: RegisterEntry,
    },
    /// Removed.
    Remove {
        /// The register.
        key: String,
        /// When.
        created_at: DateTime<Utc>,
    },
}

/// `context_bank.update`: every item, and those the last scan added.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContextBankUpdate {
    /// Every item, in order of first appearance.
    pub items: Vec<ContextItem>,
    /// The items the last scan added (empty when the bank was cleared).
    pub added: Vec<ContextItem>,
    /// The items of the user's latest message, in the order written, new or not.
    #[serde(default)]
    pub latest_message: Vec<ContextItem>,
}

/// `memory.update`: a memory block after an edit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryUpdate {
    /// The agent whose block it is.
    pub agent_id: String,
    /// The block.
    pub label: String,
    /// `create`, `update`, `append`, `replace`, `system`.
    pub op: String,
    /// The tool that made the edit.
    pub tool: String,
    /// The value after the edit.
    pub value: String,
    /// The block's description.
    pub description: Option<String>,
    /// `read_write`, `append`, `read_only`.
    pub permission: String,
    /// Characters in the value.
    pub chars: usize,
    /// The soft budget.
    pub char_limit: usize,
    /// How far over the budget the value is, if it is.
    pub over_budget_by: Option<usize>,
}

/// `tool.call`: a call starting, with the parameters the caller sent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCallStarted {
    /// The tool.
    pub tool: String,
    /// The parameters.
    pub params: Value,
}

/// `tool.result`: a call's output or error.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCallFinished {
    /// The tool.
    pub tool: String,
    /// Whether it succeeded.
    pub ok: bool,
    /// Its output, when it succeeded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<Value>,
    /// Its error, when it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ToolError>,
}

impl ToolCallFinished {
    /// The event for `result` of `tool`.
    pub fn new(tool: &str, result: &Result<Value, ToolError>) -> Self {
        match result {
            Ok(output) => Self { tool: tool.to_owned(), ok: true, output: Some(output.clone()), error: None },
            Err(error) => Self { tool: tool.to_owned(), ok: false, output: None, error: Some(error.clone()) },
        }
    }
}

/// Token counts of a model call or a turn.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TokenUsage {
    /// Prompt tokens (for Anthropic: those not read from or written to the prompt cache).
    pub input_tokens: u64,
    /// Generated tokens.
    pub output_tokens: u64,
    /// Prompt tokens read from the provider's prompt cache (Anthropic `cache_read_input_tokens`, OpenAI
    /// `prompt_tokens_details.cached_tokens`, which OpenAI also counts in `input_tokens`).
    #[serde(default)]
    pub cache_read_tokens: u64,
    /// Prompt tokens written to the prompt cache (Anthropic `cache_creation_input_tokens`).
    #[serde(default)]
    pub cache_write_tokens: u64,
}

impl TokenUsage {
    /// Adds another call's usage.
    pub fn add(&mut self, other: TokenUsage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cache_read_tokens += other.cache_read_tokens;
        self.cache_write_tokens += other.cache_write_tokens;
    }
}

/// `agent.message`: streamed text, or a turn's final message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum AgentMessage {
    /// A piece of text as the model streams it.
    Delta {
        /// The text.
        delta: String,
    },
    /// The turn's last message: the answer, or the note of why it stopped.
    Final {
        /// `assistant` or `system`.
        role: String,
        /// The text.
        content: String,
        /// Always true.
        #[serde(rename = "final")]
        is_final: bool,
        /// The turn's tokens.
        usage: TokenUsage,
    },
}

/// `confirmation.resolved`: a user channel decided a confirmation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConfirmationResolved {
    /// The confirmation.
    pub id: String,
    /// Its tool.
    pub tool: String,
    /// Approved, or denied.
    pub approved: bool,
    /// The channel that decided.
    pub channel: UserChannel,
}

/// `confirmation.withdrawn`: a pending confirmation was withdrawn without a decision (the turn waiting for it was
/// stopped, a newer request of the same tool superseded it, or no user channel can be asked), so a page showing the
/// question can take it away.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConfirmationWithdrawn {
    /// The confirmation.
    pub id: String,
    /// Its tool.
    pub tool: String,
    /// Why, in words for the user.
    pub reason: String,
}

/// `tx.pending`: a transaction was broadcast.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TxPending {
    /// The journal entry.
    pub journal_id: String,
    /// The transaction hash.
    pub hash: String,
    /// The network's name.
    pub network: String,
    /// `swap`, `approval`, `transfer`.
    pub kind: String,
    /// The decoded summary.
    pub summary: Value,
}

/// `tx.confirmed`: a transaction was mined.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TxConfirmed {
    /// The journal entry.
    pub journal_id: String,
    /// The transaction hash.
    pub hash: String,
    /// The network's name.
    pub network: String,
    /// `swap`, `approval`, `transfer`.
    pub kind: String,
    /// `confirmed` or `reverted`.
    pub status: String,
    /// The block it was mined in.
    pub block_number: Option<u64>,
    /// Gas used, in decimal.
    pub gas_used: String,
}

/// `payment.made`: an x402 payment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PaymentMade {
    /// The journal entry.
    pub journal_id: String,
    /// The preset paid for.
    pub preset: String,
    /// The network's name.
    pub network: String,
    /// The amount in the asset's units, e.g. `0.01 USDC`.
    pub amount: String,
    /// The asset's symbol.
    pub asset: String,
    /// The payee, checksummed.
    pub payee: String,
    /// The payment's journal status.
    pub status: String,
    /// The settlement transaction, when the server reported one.
    pub transaction: Option<String>,
}

/// `message.outbox`: a message an agent sent to the user.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MessageOutbox {
    /// `msg_<n>`.
    pub message_id: String,
    /// The sending agent.
    pub agent_id: String,
    /// The user id the agent named, if any.
    pub user_id: Option<String>,
    /// The content, whole.
    pub content: String,
    /// Metadata object, if any.
    pub metadata: Option<Value>,
    /// When, RFC 3339.
    pub created_at: String,
}

/// `message.hop_limit`: a send between agents refused at the hop limit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MessageHopLimit {
    /// The sender.
    pub agent_id: String,
    /// The target, described (`agent 'b'`).
    pub target: String,
    /// Hops made so far.
    pub hops: u32,
}

/// `agent.rate_limited`: an inbox turn waits for the agent's per-minute budget.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentRateLimited {
    /// The agent.
    pub agent_id: String,
    /// The message waiting.
    pub message_id: String,
    /// Seconds until it may start.
    pub retry_after_secs: u64,
}

/// `agent.inbox_turn`: a turn the inbox started.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentInboxTurn {
    /// The message it answers.
    pub message_id: String,
    /// Its sender.
    pub from: String,
    /// How it arrived (`direct`, `group:<g>`, `channel:<c>`, `reminder`).
    pub via: String,
    /// Its hops.
    pub hops: u32,
}

/// `session.saved`: an instance saved the session's state. Relayed between instances sharing a database (the one
/// that saved it publishes it after the save committed), so the others replace an older copy; never delivered to a
/// subscriber.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionSaved {
    /// The revision saved.
    pub revision: u64,
}

//! The REST API's answer bodies: what each handler of [`crate::api`] serializes. Their JSON Schemas (schemars) are
//! the response schemas of the OpenAPI document ([`crate::openapi`]), so the document is the code's own shape.

use holdfast_agent::{SessionInfo, StoredMessage, TurnOutcome};
use holdfast_core::confirm::Confirmation;
use holdfast_core::context_bank::ContextItem;
use holdfast_core::registers::RegisterEntry;
use holdfast_memory::MemoryBlock;
use holdfast_memory::Reminder;
use holdfast_memory::Task;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;

/// `GET /api/info`: what this server runs.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Info {
    /// holdfast's version.
    pub version: String,
    /// The wallet's address, checksummed.
    pub wallet_address: String,
    /// The configured networks.
    pub networks: Vec<NetworkInfo>,
    /// The `x402_fetch` presets' names.
    pub presets: Vec<String>,
    /// The model the default agent uses; `null` without one (the tool console still works).
    pub agent: Option<AgentInfo>,
    /// Every agent: the default `assistant` and one per `[agents.NAME]`.
    pub agents: Vec<AgentEntry>,
    /// The register declarations.
    pub registers: Vec<DeclarationInfo>,
    /// The loaded skills.
    pub skills: Vec<SkillInfo>,
    /// On PostgreSQL: events not relayed to the other instances since the start (the relay's queue was full; each
    /// such session was sent a reload hint instead). `null` when not on PostgreSQL.
    pub relay_dropped_events: Option<u64>,
    /// On PostgreSQL: events not sent to the other instances since the start because none of them watched the
    /// session (a save among them was sent as a reload hint). `null` when not on PostgreSQL.
    pub relay_unwatched_events: Option<u64>,
}

/// A configured network.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct NetworkInfo {
    /// Canonical name.
    pub name: String,
    /// Chain id.
    pub chain_id: u64,
}

/// The agent's model.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct AgentInfo {
    /// `openai` or `anthropic`.
    pub provider: String,
    /// The model name.
    pub model: String,
}

/// One of the runtime's agents.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct AgentEntry {
    /// Its name (its id for messages between agents).
    pub name: String,
    /// Its model; `null` when no LLM is configured.
    pub model: Option<String>,
    /// The tools it may call; `null`: every tool.
    pub tools: Option<Vec<String>>,
    /// Whether it is the default agent (new sessions talk to it unless they name another).
    pub default: bool,
}

/// A register declaration.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct DeclarationInfo {
    /// The register's key.
    pub key: String,
    /// Who may write it.
    pub writers: Vec<String>,
    /// Computed by the runtime itself.
    pub intrinsic: bool,
    /// How long a value stays usable, when bounded.
    pub max_age_secs: Option<u64>,
}

/// A loaded skill.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct SkillInfo {
    /// Name.
    pub name: String,
    /// One-line description.
    pub description: String,
}

/// `GET /api/sessions`.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct SessionList {
    /// The most recent sessions first.
    pub sessions: Vec<SessionRow>,
}

/// A session and the agent it belongs to.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct SessionRow {
    /// The session.
    #[serde(flatten)]
    pub info: SessionInfo,
    /// The agent it talks to.
    pub agent: String,
}

/// `GET /api/sessions/{id}`.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct SessionDetail {
    /// The session.
    pub session: SessionInfo,
    /// Its history, oldest first.
    pub history: Vec<StoredMessage>,
    /// Whether a turn runs in it now (the user's, or the inbox's answering a message); `POST …/cancel` stops it.
    pub turn_running: bool,
}

/// `POST /api/sessions/{id}/messages`: the agent's turn.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct TurnReply {
    /// The turn; `null` when no model is configured.
    pub agent: Option<TurnOutcome>,
    /// Why there was no turn.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The session's context bank after the message.
    pub context_bank: Vec<ContextItem>,
    /// The items of this message, in the order written.
    pub latest_message: Vec<ContextItem>,
}

/// `POST /api/sessions/{id}/cancel`.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Cancelled {
    /// Whether a running turn was cancelled.
    pub cancelled: bool,
}

/// A tool's answer.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct ToolOutput {
    /// Always `true` (a refusal is an error answer).
    pub ok: bool,
    /// The output, as the tool's output schema (`GET /api/tools`) describes it.
    pub output: Value,
}

/// One register as the UI shows it: value, provenance and age.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct RegisterView {
    /// The value and where it came from.
    #[serde(flatten)]
    pub entry: RegisterEntry,
    /// Seconds since it was written.
    pub age_secs: f64,
    /// Its declaration's maximum age, when bounded.
    pub max_age_secs: Option<u64>,
    /// Older than its maximum age: reads of it are refused.
    pub stale: bool,
    /// Whether a declaration names it (undeclared keys are scratch values).
    pub declared: bool,
}

/// `GET /api/sessions/{id}/registers`.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Registers {
    /// By key.
    pub registers: BTreeMap<String, RegisterView>,
}

/// `GET /api/sessions/{id}/context-bank`.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct ContextBankView {
    /// Values found in the user's own words.
    pub items: Vec<ContextItem>,
    /// The items of the user's latest message, in the order written (what the walkthroughs pre-fill from).
    pub latest_message: Vec<ContextItem>,
    /// The text the model is shown, when there is anything.
    pub formatted: Option<String>,
}

/// `GET /api/sessions/{id}/confirmations`.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct PendingList {
    /// Actions waiting for the user.
    pub pending: Vec<Confirmation>,
}

/// How an approval or a denial ended.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(untagged)]
pub(crate) enum Resolution {
    /// The action was approved and re-run here: its output.
    Ran(ToolOutput),
    /// A waiting agent turn received the decision and resumed.
    Resumed {
        /// The confirmation.
        id: String,
        /// Whether it was approved.
        approved: bool,
        /// Whether it was denied.
        denied: bool,
        /// Always `agent`.
        resumed: String,
    },
    /// The action was denied.
    Denied {
        /// The confirmation.
        id: String,
        /// Always `true`.
        denied: bool,
        /// The tool that asked.
        tool: String,
    },
}

/// `GET /api/memory`.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct MemoryList {
    /// The agent whose memory this is.
    pub agent: String,
    /// The agent's memory blocks.
    pub blocks: Vec<MemoryBlock>,
}

/// `GET /api/tasks`.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct TaskList {
    /// The agent whose tasks these are.
    pub agent: String,
    /// Every task, done ones included.
    pub tasks: Vec<Task>,
}

/// `GET /api/reminders`.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct ReminderList {
    /// The agent whose reminders these are.
    pub agent: String,
    /// Every reminder, fired ones included.
    pub reminders: Vec<Reminder>,
}

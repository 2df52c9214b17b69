//! # holdfast-agent
//!
//! The agent layer: [`Runtime`] composes every layer from one configuration file into one tool registry;
//! [`SessionStorage`] persists sessions and their history; [`llm`] speaks the OpenAI-compatible and Anthropic wire
//! protocols; [`Agent`] runs the tool loop, showing the model its history as [`transcript`] puts it, fitting the history into the context window ([`window`]); [`inbox`]
//! starts the turns that messages and reminders ask for; [`skills`] loads markdown skills; [`access`] guards the HTTP front ends (access token, `Host`/`Origin` checks).

pub mod access;
pub mod agent;
pub mod agents;
pub mod inbox;
pub mod listen;
pub mod llm;
pub mod runtime;
pub use holdfast_store::sessions;
pub mod skills;
pub mod transcript;
pub mod turns;
pub mod window;

pub use agent::{
    Agent, AgentConfig, AgentError, CancelToken, ConfirmDecision, NoObserver, StopReason, TurnObserver, TurnOutcome,
};
pub use runtime::{AGENT_ID, CheckedConfig, Decided, Runtime, RuntimeError, known_sections};
pub use sessions::{
    InMemorySessionStore, MessageRole, NewMessage, PgSessionStore, SessionInfo, SessionStorage, SqliteSessionStore,
    StoredMessage, ToolCallRecord, open_sessions,
};
pub use skills::{Skill, SkillError, SkillSet};

//! # holdfast-agent
//!
//! The agent layer: [`Runtime`] composes every layer from one configuration file into one tool registry, and
//! [`SessionStore`] persists sessions and their history.

pub mod runtime;
pub mod sessions;

pub use runtime::{AGENT_ID, Runtime, RuntimeError, known_sections};
pub use sessions::{MessageRole, NewMessage, SessionInfo, SessionStore, StoredMessage, ToolCallRecord};

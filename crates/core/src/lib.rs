//! # holdfast-core
//!
//! The safety core of holdfast, a runtime where the model *names* values and never *carries* them. This crate has
//! no network or database I/O; the layers above (memory, web3, agent, server, MCP) build on it.
//!
//! - [`AiTool`] / [`DynTool`] / [`ToolRegistry`]: typed tools and the one path every call runs through.
//! - [`schema`]: strict JSON schemas that MCP and OpenAI strict mode both accept.
//! - [`RegisterStore`]: named values with provenance; the store enforces who may write what.
//! - [`ContextBank`]: addresses, tokens, networks and amounts extracted from the user's own words.
//! - [`config`]: networks, tokens, register overrides.
//! - [`Confirmations`]: value-moving actions waiting for the user's approval.
//! - [`PresetOrCustom`]: a preset name or custom fields, never both.
//! - [`builtin`]: `register_set`, `register_get`, `token_lookup`, `to_raw_amount`.
//! - [`transcript`]: the replay transcript format and its parser.
//! - [`session_state`]: a session's registers, context bank and confirmations, saved and restored.

pub mod address;
pub mod amount;
pub mod builtin;
pub mod config;
pub mod confirm;
pub mod context;
pub mod context_bank;
pub mod error;
pub mod event;
pub mod notes;
pub mod preset;
pub mod private_fs;
pub mod registers;
pub mod registry;
mod saving;
pub mod schema;
pub mod session_state;
mod text;
pub mod tool;
pub mod transcript;

pub use confirm::{Confirmation, Confirmations, UserChannel, UserDecision, UserDecisions};
pub use context::{CancellationToken, CoreServices, Extensions, SessionHook, ToolContext};
pub use context_bank::{AmountRole, ContextBank, ContextItem, ContextScanner, Hedge, HedgeKind, ItemType};
pub use error::{ErrorCode, HasErrorCode, ToolError};
pub use event::{Event, EventBus, EventRelay, WeakEventBus};
pub use notes::SessionNotes;
pub use preset::PresetOrCustom;
pub use registers::{Origin, RegisterStore, RegisterWrite};
pub use registry::{RegistryError, ToolInfo, ToolRegistry};
pub use session_state::{SessionState, SessionStateStore};
pub use text::{is_env_var_name, is_invisible, is_line_break, redact_urls, unify_line_breaks};
pub use tool::{AiTool, DynTool, DynamicToolAdapter, ToolKind};

/// Re-exported so tool authors derive schemas with the same version.
pub use schemars;

/// The value types of addresses and base-unit amounts (from `alloy-primitives`), re-exported so a tool author
/// parses and computes with the same types the core does.
pub use alloy_primitives::{Address, U256};

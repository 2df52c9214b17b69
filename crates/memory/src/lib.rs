//! # holdfast-memory
//!
//! The built-in agent tools and the state behind them, persisted in SQLite:
//!
//! - **Memory blocks** ([`Memory`], [`MemoryStore`], [`SqliteMemoryStore`], [`InMemoryStore`]): label, value,
//!   description, permission, soft character budget, pinned flag, timestamps; every edit kept in a history; one
//!   permission check ([`permission::authorize`]) below all tools; a deterministic renderer ([`render_blocks`]).
//! - **Messaging** ([`MessageRouter`]): to the user (outbox + `message.outbox` event), to another agent (durable
//!   inbox, anti-loop cooldown), to a group (fan-out) or a channel (subscribers + optional webhook POST).
//! - **Reminders** ([`Reminders`], [`ReminderScheduler`]) and **tasks** ([`TaskList`]).
//! - **Tools**: `update_memory`, `append_memory`, `replace_in_memory`, `list_memories`, `search_memory`,
//!   `send_message`, `send_to_group`, `schedule_reminder`, `track_task`, registered with the core tools by
//!   [`BuiltinTools`], any of them replaceable by name.
//!
//! Start with [`AgentRuntime`]: it opens the database, owns the router and the scheduler, and hands out
//! [`AgentHandle`]s.

pub mod agent;
pub mod agent_id;
pub mod block;
pub mod builtin;
pub mod clock;
pub mod db;
pub mod embeddings;
pub mod error;
pub mod memory;
pub mod permission;
pub mod reminders;
pub mod render;
pub mod router;
pub mod runtime;
pub mod search;
pub mod store;
pub mod tasks;
pub mod tools;
pub mod when;

pub use agent::{AgentHandle, MessageSender};
pub use agent_id::AgentId;
pub use block::{BlockEdit, BlockSpec, DEFAULT_CHAR_LIMIT, EditOp, MemoryBlock, Permission};
pub use builtin::{BUILTIN_TOOL_NAMES, BuiltinTools, BuiltinToolsBuilder, CORE_TOOL_NAMES};
pub use clock::{Clock, ManualClock, SystemClock};
pub use db::{DEFAULT_DB_FILE, Database};
pub use embeddings::{Embedder, EmbeddingsConfig};
pub use error::MemoryError;
pub use memory::{Memory, SearchHit, SearchMode, SearchResults, WriteOutcome};
pub use reminders::{Reminder, ReminderScheduler, Reminders, SchedulerHandle};
pub use render::render_blocks;
pub use router::{
    ConversationHops, Inbox, InboxMessage, MessageEndpoint, MessageRouter, MessageTarget, RoutedMessage, RouterConfig,
    SendOrigin, SendReceipt, TargetType, UserMessage,
};
pub use runtime::{AgentRuntime, ChannelConfig, MemoryConfig, RuntimeBuilder};
pub use store::{InMemoryStore, MemoryStore, SqliteMemoryStore};
pub use tasks::{Priority, Task, TaskList, TaskStatus, TaskStep};
pub use tools::*;

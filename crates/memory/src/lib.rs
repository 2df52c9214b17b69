//! # holdfast-memory
//!
//! The built-in agent tools and the state behind them, persisted in SQLite (memory blocks also in PostgreSQL):
//!
//! - **Memory blocks** ([`Memory`], [`MemoryStore`], [`SqliteMemoryStore`], [`PgMemoryStore`], [`InMemoryStore`]):
//!   label, value,
//!   description, permission, soft character budget, pinned flag, timestamps; every edit kept in a history; one
//!   permission check ([`blocks::permission::authorize`]) below all tools; a deterministic renderer ([`render_blocks`]).
//! - **Messaging** ([`MessageRouter`]): to the user (outbox + `message.outbox` event), to another agent (durable
//!   inbox, anti-loop cooldown), to a group (fan-out) or a channel (subscribers + optional webhook POST).
//! - **Reminders** ([`Reminders`], [`ReminderScheduler`]) and **tasks** ([`TaskList`], kept by a [`TaskStore`]: the
//!   SQLite file or PostgreSQL).
//! - **Tools**: `update_memory`, `append_memory`, `replace_in_memory`, `list_memories`, `search_memory`,
//!   `send_message`, `send_to_group`, `schedule_reminder`, `track_task`, registered with the core tools by
//!   [`BuiltinTools`], any of them replaceable by name.
//!
//! Start with [`AgentRuntime`]: it opens the database, owns the router and the scheduler, and hands out
//! [`AgentHandle`]s.

pub mod agent;
pub mod agent_id;
pub mod blocks;
pub mod builtin;
pub mod clock;
pub mod db;
pub mod error;
pub mod messaging;
pub mod runtime;
pub mod schedule;
pub mod schema;
pub mod search;
pub mod tools;

pub use agent::{AgentHandle, MessageSender};
pub use agent_id::AgentId;
pub use blocks::block::{BlockEdit, BlockSpec, DEFAULT_CHAR_LIMIT, EditOp, MemoryBlock, Modified, Permission};
pub use blocks::memory::{
    MAX_BLOCKS, MAX_HIDDEN_FETCH, MAX_MEMORY_CHARS, Memory, RUNTIME_LABEL_PREFIX, SearchHit, SearchMode, SearchResults,
    WriteOutcome, summary_label, visible_in_session,
};
pub use blocks::render::{escape_text, render_blocks};
pub use blocks::store::{Adopted, EditFn, InMemoryStore, MemoryStore, PgMemoryStore, SqliteMemoryStore};
pub use builtin::{BUILTIN_TOOL_NAMES, BuiltinTools, BuiltinToolsBuilder, CORE_TOOL_NAMES};
pub use clock::{Clock, ManualClock, SystemClock};
pub use db::{DEFAULT_DB_FILE, Database};
pub use error::MemoryError;
pub use messaging::{
    ConversationHops, Inbox, InboxHold, InboxMessage, InboxWake, MessageEndpoint, MessageRouter, MessageStore,
    MessageTarget, MessagesAdopted, PgMessageStore, RoutedMessage, RouterConfig, SendOrigin, SendReceipt,
    SessionEvents, SqliteMessageStore, TargetType, UserMessage,
};
pub use runtime::{AgentRuntime, ChannelConfig, MemoryConfig, RuntimeBuilder};
pub use schedule::reminders::{Reminder, ReminderScheduler, Reminders, ScheduledIn, SchedulerHandle};
pub use schedule::task_store::{PgTaskStore, SqliteTaskStore, TaskStore};
pub use schedule::tasks::{Priority, Task, TaskList, TaskStatus, TaskStep};
pub use search::embeddings::{Embedder, EmbeddingsConfig};
pub use search::query::{HitSource, TextHit};
pub use tools::*;

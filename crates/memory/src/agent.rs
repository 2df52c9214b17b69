//! The agent handle and the agent's larger state, split as the built-in tools design asks.
//!
//! [`AgentHandle`] is what tools hold and clone: the agent's id, its [`Memory`], its [`MessageSender`], its
//! [`TaskList`] and [`Reminders`] — all `Arc`s inside, so a clone copies no data. The agent's larger state lives in
//! [`AgentContext`]: the message history and the metadata, each behind its own lock, so tools never copy history.

use crate::agent_id::AgentId;
use crate::error::Result;
use crate::memory::Memory;
use crate::reminders::Reminders;
use crate::router::{Inbox, MessageRouter, MessageTarget, SendOrigin, SendReceipt};
use crate::tasks::TaskList;
use chrono::{DateTime, Utc};
use holdfast_core::{SessionHook, ToolContext};
use parking_lot::RwLock;
use serde::Serialize;
use serde_json::Value;
use std::sync::Arc;

/// Sends messages as one agent through the runtime's router.
#[derive(Clone, Debug)]
pub struct MessageSender {
    agent: AgentId,
    router: MessageRouter,
}

impl MessageSender {
    /// A sender for `agent`.
    pub fn new(agent: AgentId, router: MessageRouter) -> Self {
        Self { agent, router }
    }

    /// Sends a message (subject to the anti-loop rule; see [`crate::router`]).
    pub async fn send(
        &self,
        target: &MessageTarget,
        content: String,
        metadata: Option<Value>,
        origin: SendOrigin,
    ) -> Result<SendReceipt> {
        self.router.send(&self.agent, target, content, metadata, origin).await
    }

    /// This agent's inbox.
    pub fn inbox(&self) -> Inbox {
        self.router.inbox(&self.agent)
    }

    /// The router.
    pub fn router(&self) -> &MessageRouter {
        &self.router
    }
}

/// What the built-in tools get: cheap to clone, shares everything.
#[derive(Clone, Debug)]
pub struct AgentHandle {
    /// The agent's id.
    pub agent_id: AgentId,
    /// The agent's memory blocks.
    pub memory: Memory,
    /// Sends messages as this agent.
    pub messages: MessageSender,
    /// The agent's tasks.
    pub tasks: TaskList,
    /// The agent's reminders.
    pub reminders: Reminders,
}

impl AgentHandle {
    /// This agent's durable inbox.
    pub fn inbox(&self) -> Inbox {
        self.messages.inbox()
    }

    /// Attaches this handle to a session: tools of that session act for this agent (a handle in the context wins
    /// over the one a tool was built with), and user messages the runtime sends for it without a session
    /// (reminders) publish `message.outbox` on this session's bus.
    pub fn attach(&self, ctx: &ToolContext) {
        ctx.extensions.insert(self.clone());
        self.messages.router().attach_session(&self.agent_id, ctx.events.clone());
    }

    /// The handle attached to a session, if any.
    pub fn from_context(ctx: &ToolContext) -> Option<Arc<AgentHandle>> {
        ctx.extensions.get::<AgentHandle>()
    }

    /// A [`SessionHook`] that attaches this handle to every new session (for `CoreServices::with_hook`).
    pub fn session_hook(&self) -> Arc<dyn SessionHook> {
        Arc::new(AttachAgent(self.clone()))
    }
}

struct AttachAgent(AgentHandle);

impl SessionHook for AttachAgent {
    fn on_new_session(&self, ctx: &ToolContext) {
        self.0.attach(ctx);
    }
}

/// Who said something in the conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The user.
    User,
    /// The agent.
    Assistant,
    /// A tool result.
    Tool,
    /// The runtime (reminders, inbox messages).
    System,
}

/// One entry of the conversation history.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HistoryEntry {
    /// Who.
    pub role: Role,
    /// What.
    pub content: String,
    /// When.
    pub at: DateTime<Utc>,
}

/// The conversation history (kept out of the handle).
#[derive(Debug, Clone, Default)]
pub struct MessageHistory {
    entries: Vec<HistoryEntry>,
}

impl MessageHistory {
    /// Appends an entry.
    pub fn push(&mut self, role: Role, content: impl Into<String>) {
        self.entries.push(HistoryEntry { role, content: content.into(), at: Utc::now() });
    }

    /// Every entry, oldest first.
    pub fn entries(&self) -> &[HistoryEntry] {
        &self.entries
    }

    /// The last `n` entries.
    pub fn recent(&self, n: usize) -> &[HistoryEntry] {
        &self.entries[self.entries.len().saturating_sub(n)..]
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// Statistics about the agent, updated concurrently.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AgentMetadata {
    /// When the context was created.
    pub created_at: DateTime<Utc>,
    /// Last activity.
    pub last_active: DateTime<Utc>,
    /// Conversation turns.
    pub turns: u64,
    /// Tool calls made.
    pub tool_calls: u64,
}

/// An agent's full state: the cheap [`AgentHandle`] plus history and metadata behind their own locks.
#[derive(Debug, Clone)]
pub struct AgentContext {
    handle: AgentHandle,
    /// The conversation history.
    pub history: Arc<RwLock<MessageHistory>>,
    /// The statistics.
    pub metadata: Arc<RwLock<AgentMetadata>>,
}

impl AgentContext {
    /// A fresh context around `handle`.
    pub fn new(handle: AgentHandle) -> Self {
        let now = Utc::now();
        Self {
            handle,
            history: Arc::new(RwLock::new(MessageHistory::default())),
            metadata: Arc::new(RwLock::new(AgentMetadata {
                created_at: now,
                last_active: now,
                turns: 0,
                tool_calls: 0,
            })),
        }
    }

    /// The handle the tools get (a clone: cheap).
    pub fn handle(&self) -> AgentHandle {
        self.handle.clone()
    }

    /// Records a turn.
    pub fn record_turn(&self, role: Role, content: impl Into<String>) {
        self.history.write().push(role, content);
        let mut m = self.metadata.write();
        m.turns += 1;
        m.last_active = Utc::now();
    }

    /// Records a tool call.
    pub fn record_tool_call(&self) {
        let mut m = self.metadata.write();
        m.tool_calls += 1;
        m.last_active = Utc::now();
    }
}

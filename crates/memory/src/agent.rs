//! The agent handle: what tools hold and clone — the agent's id, its [`Memory`], its [`MessageSender`], its
//! [`TaskList`] and [`Reminders`], all `Arc`s inside, so a clone copies no data.
//!
//! The conversation itself is not here: it is the session's durable history (`holdfast_agent::SessionStorage`),
//! from which the agent loop builds every model request.

use crate::agent_id::AgentId;
use crate::blocks::memory::Memory;
use crate::error::Result;
use crate::messaging::{Inbox, MessageRouter, MessageTarget, SendOrigin, SendReceipt};
use crate::schedule::reminders::Reminders;
use crate::schedule::tasks::TaskList;
use holdfast_core::{SessionHook, ToolContext};
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

    /// Sends a message (subject to the anti-loop rule; see [`crate::messaging`]).
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

//! Target kind `user`: the outbox. A message to the user is a row in `messages_outbox` and a `message.outbox` event
//! on the session's bus (the server forwards it to the UI).

use super::router::MessageRouter;
use super::store::to_user_message;
use super::types::{RoutedMessage, SendOrigin, UserMessage};
use crate::agent_id::{AgentId, validate_id};
use crate::clock::fmt_time;
use crate::error::Result;
use holdfast_core::event::{EventPayload, MessageOutbox};

/// The user id a message names, if any (validated like every id).
pub(super) fn user_id(id: Option<&String>) -> Result<Option<String>> {
    let id = id.filter(|s| !s.is_empty()).cloned();
    if let Some(id) = &id {
        validate_id("target.id", id)?;
    }
    Ok(id)
}

impl MessageRouter {
    /// Publishes a stored message to the user on the sending session's bus. A reminder has no bus but may name the
    /// session that scheduled it: it is announced there, on whichever instance serves it
    /// ([`MessageRouter::set_session_events`]); one without a session (scheduled before sessions were recorded) on
    /// the bus [`MessageRouter::attach_session`] remembered for the agent on this instance.
    pub(super) fn announce_to_user(&self, m: &RoutedMessage, origin: &SendOrigin) {
        let bus = match (&origin.events, &origin.session_id) {
            (Some(bus), _) => Some(bus.clone()),
            // Without a runtime that says where sessions are, the bus attached for the agent, if it is that session's.
            (None, Some(session)) => self
                .session_bus(session)
                .or_else(|| self.attached_session(&m.from).filter(|bus| bus.session_id() == session.as_str())),
            (None, None) => self.attached_session(&m.from),
        };
        let Some(bus) = bus else { return };
        bus.publish(EventPayload::MessageOutbox(MessageOutbox {
            message_id: m.message_id.clone(),
            agent_id: m.from.clone(),
            user_id: m.target_id.clone(),
            content: m.content.clone(),
            metadata: m.metadata.clone(),
            created_at: fmt_time(m.created_at),
        }));
    }

    /// Messages an agent sent to users, newest first.
    pub async fn outbox(&self, agent: &AgentId, limit: usize) -> Result<Vec<UserMessage>> {
        let agent = agent.to_string();
        let rows = self.store().outbox(&agent, limit).await?;
        rows.into_iter().map(to_user_message).collect()
    }
}

//! Target kind `user`: the outbox. A message to the user is a row in `messages_outbox` and a `message.outbox` event
//! on the session's bus (the server forwards it to the UI).

use super::router::MessageRouter;
use super::types::{RoutedMessage, SendOrigin, UserMessage};
use super::{bad_time, msg_id, parse_metadata};
use crate::agent_id::{AgentId, validate_id};
use crate::clock::{fmt_time, parse_time};
use crate::error::Result;
use holdfast_core::event::{EventPayload, MessageOutbox};
use rusqlite::params;

/// The user id a message names, if any (validated like every id).
pub(super) fn user_id(id: Option<&String>) -> Result<Option<String>> {
    let id = id.filter(|s| !s.is_empty()).cloned();
    if let Some(id) = &id {
        validate_id("target.id", id)?;
    }
    Ok(id)
}

impl MessageRouter {
    /// Publishes a stored message to the user on the sending session's bus, or, for a send without a session (a
    /// reminder), on the bus [`MessageRouter::attach_session`] remembered for the agent.
    pub(super) fn announce_to_user(&self, m: &RoutedMessage, origin: &SendOrigin) {
        let Some(bus) = origin.events.clone().or_else(|| self.attached_session(&m.from)) else { return };
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
        self.database()
            .call(move |c| {
                let mut stmt = c.prepare_cached(
                    "SELECT l.id, o.agent_id, o.session_id, o.user_id, l.content, l.metadata, l.created_at
                     FROM messages_outbox o JOIN messages_log l ON l.id = o.message_id
                     WHERE o.agent_id = ?1 ORDER BY o.id DESC LIMIT ?2",
                )?;
                let rows = stmt.query_map(params![agent, i64::try_from(limit).unwrap_or(i64::MAX)], |r| {
                    Ok((
                        r.get::<_, i64>(0)?,
                        r.get(1)?,
                        r.get(2)?,
                        r.get(3)?,
                        r.get(4)?,
                        r.get(5)?,
                        r.get::<_, String>(6)?,
                    ))
                })?;
                let mut out = Vec::new();
                for row in rows {
                    let (id, agent_id, session_id, user_id, content, metadata, at) = row?;
                    out.push(UserMessage {
                        message_id: msg_id(id),
                        agent_id,
                        session_id,
                        user_id,
                        content,
                        metadata: parse_metadata(metadata),
                        created_at: parse_time(&at).ok_or_else(|| bad_time(&at))?,
                    });
                }
                Ok(out)
            })
            .await
    }
}

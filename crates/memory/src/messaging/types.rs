//! The messaging vocabulary: targets, the router's settings, and the shapes of a message as it is sent, routed,
//! queued in an inbox or kept in a user's outbox.

use crate::agent_id::validate_id;
use crate::error::{MemoryError, Result};
use chrono::{DateTime, Utc};
use holdfast_core::EventBus;
use holdfast_core::tool::BoxFuture;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::time::Duration;

/// The anti-loop cooldown used when none is configured.
pub const DEFAULT_AGENT_COOLDOWN: Duration = Duration::from_secs(10);

/// The kind of a message target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TargetType {
    /// The user of the session.
    User,
    /// Another agent of this runtime (`id` required).
    Agent,
    /// A named group of agents (`id` required).
    Group,
    /// A named channel (`id` required).
    Channel,
}

impl TargetType {
    /// The wire and storage form.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::User => "user",
            Self::Agent => "agent",
            Self::Group => "group",
            Self::Channel => "channel",
        }
    }

    /// Parses the wire form.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "user" => Some(Self::User),
            "agent" => Some(Self::Agent),
            "group" => Some(Self::Group),
            "channel" => Some(Self::Channel),
            _ => None,
        }
    }
}

/// Where a message goes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MessageTarget {
    /// `user`, `agent`, `group` or `channel`.
    #[serde(rename = "type")]
    pub kind: TargetType,
    /// The agent, group or channel name (required for those); for `user`, optionally the user's id.
    pub id: Option<String>,
}

impl MessageTarget {
    /// The session's user.
    pub fn user() -> Self {
        Self { kind: TargetType::User, id: None }
    }

    /// An agent.
    pub fn agent(id: impl Into<String>) -> Self {
        Self { kind: TargetType::Agent, id: Some(id.into()) }
    }

    /// A group.
    pub fn group(id: impl Into<String>) -> Self {
        Self { kind: TargetType::Group, id: Some(id.into()) }
    }

    /// A channel.
    pub fn channel(id: impl Into<String>) -> Self {
        Self { kind: TargetType::Channel, id: Some(id.into()) }
    }

    /// `user`, `agent 'b'`, …
    pub fn describe(&self) -> String {
        match &self.id {
            Some(id) => format!("{} '{id}'", self.kind.as_str()),
            None => self.kind.as_str().to_owned(),
        }
    }

    pub(super) fn required_id(&self) -> Result<&str> {
        let id = self.id.as_deref().filter(|s| !s.is_empty()).ok_or_else(|| {
            MemoryError::invalid("target.id", format!("is required when `target.type` is {}", self.kind.as_str()))
        })?;
        validate_id("target.id", id)?;
        Ok(id)
    }
}

/// The most agent-to-agent hops one conversation may make unless configured (`[memory] max_hops`).
pub const DEFAULT_MAX_HOPS: u32 = 4;

/// On a session whose turn answers a message from another agent (set by the inbox): how many agent-to-agent hops
/// led to that message. Sends from the session carry one more.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConversationHops(pub u32);

/// Router settings.
#[derive(Debug, Clone)]
pub struct RouterConfig {
    /// The anti-loop cooldown between the same ordered pair of agents (zero disables it).
    pub agent_cooldown: Duration,
    /// The most agent-to-agent hops one conversation may make.
    pub max_hops: u32,
    /// Timeout of a channel's webhook POST.
    pub webhook_timeout: Duration,
}

impl Default for RouterConfig {
    fn default() -> Self {
        Self {
            agent_cooldown: DEFAULT_AGENT_COOLDOWN,
            max_hops: DEFAULT_MAX_HOPS,
            webhook_timeout: Duration::from_secs(10),
        }
    }
}

/// A message as it leaves the router (for extra endpoints and webhooks).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RoutedMessage {
    /// `msg_<n>`.
    pub message_id: String,
    /// The sending agent.
    pub from: String,
    /// The target kind.
    pub target_type: TargetType,
    /// The target id.
    pub target_id: Option<String>,
    /// The content, whole.
    pub content: String,
    /// Optional metadata object.
    pub metadata: Option<Value>,
    /// The session that sent it, if any.
    pub session_id: Option<String>,
    /// When.
    pub created_at: DateTime<Utc>,
}

/// An extra delivery endpoint for one kind of target (a chat bridge, a push service…). It runs after the
/// router's own delivery; what it returns is added to the result's `details`, and its failure is reported there
/// without undoing the delivery.
pub trait MessageEndpoint: Send + Sync {
    /// A short name for `details`.
    fn name(&self) -> &str;
    /// Delivers the message; returns a short description of what happened.
    fn deliver<'a>(&'a self, message: &'a RoutedMessage) -> BoxFuture<'a, Result<String>>;
}

/// A message waiting in (or taken from) an agent's inbox.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InboxMessage {
    /// The inbox row.
    pub inbox_id: i64,
    /// `msg_<n>`.
    pub message_id: String,
    /// The sender.
    pub from: String,
    /// How it arrived: `direct`, `group:<name>`, `channel:<name>` or `reminder`. Set by the router, never by the
    /// sender.
    pub via: String,
    /// Agent-to-agent hops that led to it (see the hop limit in [`crate::messaging`]); a reminder has its
    /// scheduling turn's.
    pub hops: u32,
    /// The content, whole.
    pub content: String,
    /// Metadata object, if any.
    pub metadata: Option<Value>,
    /// When it was sent.
    pub created_at: DateTime<Utc>,
}

/// A message sent to a user (the outbox).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UserMessage {
    /// `msg_<n>`.
    pub message_id: String,
    /// The agent that sent it.
    pub agent_id: String,
    /// The session it was sent from (absent for reminders fired with no session attached).
    pub session_id: Option<String>,
    /// The user id the agent named, if any.
    pub user_id: Option<String>,
    /// The content, whole.
    pub content: String,
    /// Metadata object, if any.
    pub metadata: Option<Value>,
    /// When.
    pub created_at: DateTime<Utc>,
}

/// What a successful send did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SendReceipt {
    /// `msg_<n>`.
    pub message_id: String,
    /// A sentence for the model: where it went, who was skipped, what the webhook said.
    pub details: String,
    /// The agents whose inbox received it.
    pub recipients: Vec<String>,
}

/// Where a send comes from: the session (for user messages and their event) or the runtime itself.
#[derive(Debug, Clone, Default)]
pub struct SendOrigin {
    /// The session id.
    pub session_id: Option<String>,
    /// The session's event bus (`message.outbox` is published there).
    pub events: Option<EventBus>,
    /// Agent-to-agent hops that led to the turn sending it (0: a turn the user started).
    pub hops: u32,
}

impl SendOrigin {
    /// From a tool context: its session, its bus and the hops its turn answers ([`ConversationHops`]).
    pub fn session(ctx: &holdfast_core::ToolContext) -> Self {
        let hops = ctx.extensions.get::<ConversationHops>().map_or(0, |h| h.0);
        Self { session_id: Some(ctx.session_id.to_string()), events: Some(ctx.events.clone()), hops }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn target_kinds_round_trip() {
        for k in [TargetType::User, TargetType::Agent, TargetType::Group, TargetType::Channel] {
            assert_eq!(TargetType::parse(k.as_str()), Some(k));
        }
        assert_eq!(MessageTarget::agent("b").describe(), "agent 'b'");
        assert!(
            MessageTarget { kind: TargetType::Group, id: None }
                .required_id()
                .unwrap_err()
                .to_string()
                .contains("`target.id`")
        );
    }
}

//! Messaging: `send_message` to a user, another agent, a group or a channel, through one router, with durable agent
//! inboxes, the anti-loop cooldown and hop limit, group fan-out, channel subscribers, an optional outbound webhook per
//! channel and pluggable extra endpoints.
//!
//! Every message is logged in `messages_log` (`message_id` = `msg_<row id>`). Delivery by target:
//! - **user**: a row in `messages_outbox` and a `message.outbox` event on the session's bus (the server forwards it
//!   to the UI/WebSocket).
//! - **agent**: a row in the recipient's durable inbox (`messages_inbox`), which survives restarts until the
//!   recipient takes it ([`Inbox::recv`]). The recipient must be an agent of this runtime.
//! - **group**: the same, fanned out to every member except the sender.
//! - **channel**: the same, to every subscriber except the sender, then an HTTP POST of the message as JSON to the
//!   channel's webhook URL, if it has one.
//!
//! **Anti-loop rule.** An agent may send at most one message to the same other agent per cooldown window
//! ([`RouterConfig::agent_cooldown`], 10 s by default; zero disables it). The pair is *ordered*: a reply (B → A) is
//! always allowed, so two agents bouncing messages run at most one round trip per window. A direct message inside
//! the window is refused with `rate_limited` (`details.retry_after_secs`); in a group or channel fan-out the
//! recipients inside their window are skipped and named in `details`, and the send is refused only when every
//! recipient was skipped. Messages to users are exempt. A reminder that reaches other agents passes the windows of
//! its agent when it fires: inside any of them it is not delivered to anyone yet but waits (its `not_before`) until
//! the last one ends, so reminders due at once cannot start many turns of another agent. (A reminder to a group or
//! channel waits for the last of its recipients' windows; only its own agent's sends renew them.) The windows are kept in the store and taken
//! in the transaction that stores the message: a restart does not reset them, a refused send does not use one up,
//! and on PostgreSQL every instance shares them.
//!
//! **Hop limit.** Every message carries the runtime's count of agent-to-agent hops that led to it. A message to other
//! agents sent in a turn its user started has 1; one sent in a turn that answers a message of `n` hops has `n + 1`
//! (the inbox sets [`ConversationHops`] on that turn's session); a message to the user keeps its turn's count. A send
//! to an agent, group or channel from a turn at the limit ([`RouterConfig::max_hops`]) is refused with `rate_limited`
//! and a `message.hop_limit` event, so two agents answering each other stop. A reminder carries the count of the turn
//! that scheduled it (see [`crate::schedule::reminders`]), so no conversation restarts its count that way. The count
//! is the router's, stored in `messages_log.hops`; a sender's metadata cannot change it.
//!
//! Content is delivered whole: never truncated or summarised.
//!
//! The room, by concern: [`types`] (targets, settings, message shapes), `router` (the one send path: checks,
//! storage, delivery), one file per target kind (`user`, `agent`, `group`, `channel`: who a target reaches and what
//! delivering to it does), [`store`] (where messages, windows and reminders live, and what is decided in one
//! transaction) and [`inbox`] (an agent's durable queue).

mod agent;
mod channel;
mod group;
pub mod inbox;
mod router;
pub mod store;
pub mod types;
mod user;

pub use inbox::Inbox;
pub use router::{MessageRouter, SessionEvents};
pub use store::{InboxHold, InboxWake, MessageStore, MessagesAdopted, PgMessageStore, SqliteMessageStore};
pub use types::{
    ConversationHops, DEFAULT_AGENT_COOLDOWN, DEFAULT_MAX_HOPS, InboxMessage, MessageEndpoint, MessageTarget,
    RoutedMessage, RouterConfig, SendOrigin, SendReceipt, TargetType, UserMessage,
};

use serde_json::Value;

/// `msg_<n>`: a message's id from its `messages_log` row.
fn msg_id(n: i64) -> String {
    format!("msg_{n}")
}

/// Metadata as stored (JSON text).
fn metadata_text(m: &Option<Value>) -> Option<String> {
    m.as_ref().map(Value::to_string)
}

/// Metadata as read back (text that is not JSON reads as none).
fn parse_metadata(s: Option<String>) -> Option<Value> {
    s.and_then(|s| serde_json::from_str(&s).ok())
}

/// Who a target reaches, read from the directory before the message is stored.
#[derive(Debug, Default)]
struct Reach {
    /// The agents whose inbox receives the message.
    recipients: Vec<String>,
    /// A channel's outbound webhook.
    webhook: Option<String>,
}

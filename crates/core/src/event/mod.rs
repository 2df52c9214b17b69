//! The per-session event bus.
//!
//! Every session owns one [`EventBus`]. The register store, the context bank, the registry and the value-moving
//! tools publish on it; the server forwards a session's events only to clients authenticated for that session
//! (invariant 14). Publishing never blocks: a slow subscriber lags and is told how many events it missed.
//!
//! What an event says is typed: [`EventPayload`] has one variant per name, with its payload type ([`payload`]).

pub mod payload;
pub mod relay;

pub use payload::{
    AgentInboxTurn, AgentMessage, AgentRateLimited, ConfirmationResolved, ConfirmationWithdrawn, ContextBankUpdate,
    EventPayload, MemoryUpdate, MessageHopLimit, MessageOutbox, PaymentMade, RegisterUpdate, SessionSaved, TokenUsage,
    ToolCallFinished, ToolCallStarted, TxConfirmed, TxPending,
};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use tokio::sync::broadcast;

/// Stable event names (see `interfaces.md`).
pub mod names {
    /// A register was written or removed.
    pub const REGISTER_UPDATE: &str = "register.update";
    /// The context bank changed.
    pub const CONTEXT_BANK_UPDATE: &str = "context_bank.update";
    /// A memory block changed.
    pub const MEMORY_UPDATE: &str = "memory.update";
    /// A tool call started.
    pub const TOOL_CALL: &str = "tool.call";
    /// A tool call finished (ok or error).
    pub const TOOL_RESULT: &str = "tool.result";
    /// The agent produced (part of) a message.
    pub const AGENT_MESSAGE: &str = "agent.message";
    /// A value-moving action waits for the user's approval.
    pub const CONFIRMATION_REQUIRED: &str = "confirmation.required";
    /// A pending confirmation was approved or denied.
    pub const CONFIRMATION_RESOLVED: &str = "confirmation.resolved";
    /// A pending confirmation was withdrawn without a decision.
    pub const CONFIRMATION_WITHDRAWN: &str = "confirmation.withdrawn";
    /// A transaction was broadcast.
    pub const TX_PENDING: &str = "tx.pending";
    /// A transaction was mined.
    pub const TX_CONFIRMED: &str = "tx.confirmed";
    /// An x402 payment was made.
    pub const PAYMENT_MADE: &str = "payment.made";
    /// A message was delivered to the session's user outbox.
    pub const MESSAGE_OUTBOX: &str = "message.outbox";
    /// A message between agents was refused: the conversation reached the hop limit (`[memory] max_hops`).
    pub const MESSAGE_HOP_LIMIT: &str = "message.hop_limit";
    /// An agent's inbox turn waits: the agent started its most turns allowed per minute (`[agent] inbox_turns_per_minute`).
    pub const AGENT_RATE_LIMITED: &str = "agent.rate_limited";
    /// A turn the inbox started (a message from another agent, a group, a channel, or a reminder) begins.
    pub const AGENT_INBOX_TURN: &str = "agent.inbox_turn";
    /// Another instance saved the session's state (between instances only; never delivered to subscribers).
    pub const SESSION_SAVED: &str = "session.saved";
}

/// One event, as delivered to subscribers: `{"event": name, "session_id", "data": payload, "at"}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// The session the event belongs to.
    pub session_id: String,
    /// The name and payload.
    #[serde(flatten)]
    pub payload: EventPayload,
    /// When the event was published.
    pub at: DateTime<Utc>,
}

impl Event {
    /// The event name, one of [`names`].
    pub fn name(&self) -> &'static str {
        self.payload.name()
    }

    /// The payload as JSON.
    pub fn data(&self) -> serde_json::Value {
        self.payload.data()
    }

    /// The WebSocket envelope `{"type":"event","event":…,"session_id":…,"data":…,"at":…}`.
    pub fn envelope(&self) -> serde_json::Value {
        serde_json::json!({
            "type": "event",
            "event": self.name(),
            "session_id": self.session_id,
            "data": self.data(),
            "at": self.at,
        })
    }
}

/// Carries events between instances that share one database ([`relay::Relay`], on `holdfast-store`'s channel): every event a
/// bus publishes is handed to [`EventRelay::relay`], and events of other instances are delivered to the local buses
/// [`EventRelay::attach`] registered, through [`EventBus::deliver`] (which does not relay them again).
pub trait EventRelay: Send + Sync + std::fmt::Debug {
    /// Takes one event this instance published. Must not block: a relay queues and sends elsewhere.
    fn relay(&self, event: &Arc<Event>);
    /// Registers a new session's bus for the events other instances publish for that session. A relay keeps only a
    /// [`WeakEventBus`]: a session closed here stops receiving.
    fn attach(&self, bus: &EventBus);
    /// A bus of this process got a subscriber ([`EventBus::subscribe`]): a relay that sends other instances only the
    /// events someone there watches asks them for this session's. Does nothing by default.
    fn watch(&self, session_id: &str) {
        let _ = session_id;
    }
}

/// A cheap-to-clone handle on one session's event stream.
///
/// The subscribers' buffer ([`EVENT_BUFFER`] events) is allocated when the first subscriber arrives: a session no
/// one watches (most of them: an API client's, an idle one) costs a few words, not the buffer's tens of KiB.
#[derive(Debug, Clone)]
pub struct EventBus {
    shared: Arc<Shared>,
    relay: Option<Arc<dyn EventRelay>>,
}

/// What every handle on one bus shares.
#[derive(Debug)]
struct Shared {
    session_id: Arc<str>,
    /// Made by the first [`EventBus::subscribe`].
    sender: OnceLock<broadcast::Sender<Arc<Event>>>,
    /// Set when another instance's event for this session is delivered ([`EventBus::deliver`]).
    remote: AtomicBool,
}

/// A handle on a bus that does not keep it open ([`EventBus::downgrade`]).
#[derive(Debug, Clone)]
pub struct WeakEventBus {
    session_id: Arc<str>,
    shared: Weak<Shared>,
}

impl WeakEventBus {
    /// The session.
    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    /// The bus, while its session is open.
    pub fn upgrade(&self) -> Option<EventBus> {
        Some(EventBus { shared: self.shared.upgrade()?, relay: None })
    }
}

/// How many events a subscriber may fall behind before it starts losing the oldest ones.
pub const EVENT_BUFFER: usize = 1024;

impl EventBus {
    /// A bus for one session.
    pub fn new(session_id: impl Into<Arc<str>>) -> Self {
        let shared = Shared { session_id: session_id.into(), sender: OnceLock::new(), remote: AtomicBool::new(false) };
        Self { shared: Arc::new(shared), relay: None }
    }

    /// This bus, handing every event it publishes to `relay` as well (and registered with it for other instances'
    /// events).
    pub fn with_relay(mut self, relay: Arc<dyn EventRelay>) -> Self {
        relay.attach(&self);
        self.relay = Some(relay);
        self
    }

    /// A handle that does not keep the bus open.
    pub fn downgrade(&self) -> WeakEventBus {
        WeakEventBus { session_id: Arc::clone(&self.shared.session_id), shared: Arc::downgrade(&self.shared) }
    }

    /// Hands `event` to this process's subscribers, if any.
    fn send_local(&self, event: Arc<Event>) {
        if let Some(sender) = self.shared.sender.get() {
            // An error only means nobody is listening here.
            let _ = sender.send(event);
        }
    }

    /// Delivers an event another instance published for this session to this instance's subscribers (not relayed
    /// again).
    /// A `tool.result` or `session.saved` (both published after a save) marks this instance's copy of the session
    /// as older than what that instance saved ([`EventBus::take_remote_activity`]); a `session.saved` does only
    /// that, and is not delivered.
    pub fn deliver(&self, event: Arc<Event>) {
        match event.payload {
            EventPayload::SessionSaved(_) => {
                self.shared.remote.store(true, Ordering::Release);
                return;
            }
            EventPayload::ToolResult(_) => self.shared.remote.store(true, Ordering::Release),
            _ => {}
        }
        self.send_local(event);
    }

    /// Marks this instance's copy of the session as possibly older than what another instance saved, without an
    /// event: for a relay that may have missed events (its listening connection was lost and reconnected).
    pub fn mark_remote_activity(&self) {
        self.shared.remote.store(true, Ordering::Release);
    }

    /// Tells the other instances (through the relay, never this instance's subscribers) that the session's state
    /// was saved at `revision`. Without a relay, does nothing.
    pub fn announce_save(&self, revision: u64) {
        if let Some(relay) = &self.relay {
            let payload = EventPayload::SessionSaved(SessionSaved { revision });
            relay.relay(&Arc::new(Event { session_id: self.session_id().to_owned(), payload, at: Utc::now() }));
        }
    }

    /// Whether another instance saved this session since the last call (which clears it): its `tool.result` or
    /// `session.saved` arrived, both published after the save, so a copy loaded here before it is older.
    pub fn take_remote_activity(&self) -> bool {
        self.shared.remote.swap(false, Ordering::AcqRel)
    }

    /// [`EventBus::take_remote_activity`] without clearing it.
    pub fn has_remote_activity(&self) -> bool {
        self.shared.remote.load(Ordering::Acquire)
    }

    /// The session this bus belongs to.
    pub fn session_id(&self) -> &str {
        &self.shared.session_id
    }

    /// True when at least one subscriber of this process is listening (a relay's listeners elsewhere not counted).
    pub fn has_local_subscribers(&self) -> bool {
        self.shared.sender.get().is_some_and(|s| s.receiver_count() > 0)
    }

    /// True when at least one subscriber of this process is listening, or whenever a relay is attached (the relay
    /// decides what another instance needs): lets publishers skip building payloads.
    pub fn has_subscribers(&self) -> bool {
        self.has_local_subscribers() || self.relay.is_some()
    }

    /// Publishes an event. Never blocks; with no subscriber the event is dropped.
    pub fn publish(&self, payload: EventPayload) {
        if !self.has_subscribers() {
            return;
        }
        let event = Arc::new(Event { session_id: self.session_id().to_owned(), payload, at: Utc::now() });
        if let Some(relay) = &self.relay {
            relay.relay(&event);
        }
        self.send_local(event);
    }

    /// Subscribes to every event published from now on (the first subscriber allocates the bus's buffer). With a
    /// relay, other instances are asked for this session's events too ([`EventRelay::watch`]); theirs arrive once
    /// the request has reached them.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<Event>> {
        let receiver = self.shared.sender.get_or_init(|| broadcast::channel(EVENT_BUFFER).0).subscribe();
        if let Some(relay) = &self.relay {
            relay.watch(self.session_id());
        }
        receiver
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context_bank::ItemType;
    use serde_json::json;

    fn entry() -> crate::registers::RegisterEntry {
        crate::registers::RegisterEntry {
            value: json!(1),
            provenance: crate::registers::Provenance {
                origin: crate::Origin::Tool,
                source: "t".into(),
                preset: None,
                created_at: Utc::now(),
                derived_from: vec!["a".into()],
                authorization: None,
            },
        }
    }

    fn started(i: usize) -> EventPayload {
        EventPayload::ToolCall(ToolCallStarted { tool: "t".into(), params: json!({ "i": i }) })
    }

    #[tokio::test]
    async fn subscribers_receive_events_in_order_with_the_session_id() {
        let bus = EventBus::new("s1");
        let mut rx = bus.subscribe();
        bus.publish(EventPayload::RegisterUpdate(RegisterUpdate::Remove { key: "a".into(), created_at: Utc::now() }));
        bus.publish(EventPayload::ContextBankUpdate(ContextBankUpdate {
            items: vec![],
            added: vec![],
            latest_message: vec![],
        }));
        let first = rx.recv().await.unwrap();
        assert_eq!(first.name(), "register.update");
        assert_eq!(first.session_id, "s1");
        let envelope = first.envelope();
        assert_eq!((envelope["type"].as_str(), envelope["event"].as_str()), (Some("event"), Some("register.update")));
        assert_eq!(
            (envelope["data"]["key"].as_str(), envelope["data"]["action"].as_str()),
            (Some("a"), Some("remove"))
        );
        assert_eq!(rx.recv().await.unwrap().name(), "context_bank.update");
    }

    #[test]
    fn the_buffer_is_allocated_when_the_first_subscriber_arrives() {
        let bus = EventBus::new("s1");
        bus.publish(started(0));
        assert!(bus.shared.sender.get().is_none(), "no subscriber, no buffer");
        let weak = bus.downgrade();
        let rx = weak.upgrade().unwrap().subscribe();
        assert!(bus.shared.sender.get().is_some() && bus.has_local_subscribers());
        drop(rx);
        drop(bus);
        assert!(weak.upgrade().is_none(), "a weak handle does not keep the bus");
    }

    #[tokio::test]
    async fn a_slow_subscriber_lags_instead_of_blocking_the_publisher() {
        let bus = EventBus::new("s1");
        let mut rx = bus.subscribe();
        for i in 0..(EVENT_BUFFER + 10) {
            bus.publish(started(i));
        }
        assert!(matches!(rx.recv().await, Err(broadcast::error::RecvError::Lagged(10))));
    }

    #[test]
    fn every_payload_serializes_under_its_documented_name_and_reads_back() {
        let usage = TokenUsage { input_tokens: 3, ..TokenUsage::default() };
        let payloads = [
            started(1),
            EventPayload::ToolResult(ToolCallFinished::new("t", &Ok(json!({"x": 1})))),
            EventPayload::AgentMessage(AgentMessage::Delta { delta: "he".into() }),
            EventPayload::AgentMessage(AgentMessage::Final {
                role: "assistant".into(),
                content: "hello".into(),
                is_final: true,
                usage,
            }),
            EventPayload::MessageHopLimit(MessageHopLimit {
                agent_id: "a".into(),
                target: "agent 'b'".into(),
                hops: 4,
            }),
            EventPayload::RegisterUpdate(RegisterUpdate::Set { key: "k".into(), entry: entry() }),
        ];
        for payload in payloads {
            let event = Event { session_id: "s".into(), payload: payload.clone(), at: Utc::now() };
            let text = serde_json::to_value(&event).unwrap();
            assert_eq!(text["event"], payload.name());
            assert_eq!(text["data"], payload.data());
            assert_eq!(serde_json::from_value::<Event>(text).unwrap(), event);
        }
        let set = EventPayload::RegisterUpdate(RegisterUpdate::Set { key: "k".into(), entry: entry() }).data();
        assert_eq!(
            (set["action"].as_str(), set["key"].as_str(), set["source"].as_str(), set["origin"].as_str()),
            (Some("set"), Some("k"), Some("t"), Some("tool")),
            "a set register's entry and provenance are flat beside key and action: {set}"
        );
        let ok = EventPayload::ToolResult(ToolCallFinished::new("t", &Ok(json!(1)))).data();
        assert_eq!(ok, json!({"tool": "t", "ok": true, "output": 1}), "no error field on success");
        let last = EventPayload::AgentMessage(AgentMessage::Final {
            role: "system".into(),
            content: "stopped".into(),
            is_final: true,
            usage,
        });
        assert_eq!(last.data()["final"], true);
        assert_eq!(last.data()["usage"]["input_tokens"], 3);
        for t in [ItemType::EthAddress, ItemType::TokenSymbol, ItemType::Network, ItemType::Amount] {
            assert_eq!(serde_json::to_value(t).unwrap(), t.as_str());
        }
    }

    #[tokio::test]
    async fn another_instances_saves_mark_the_copy_and_session_saved_is_never_delivered() {
        let bus = EventBus::new("s");
        let mut rx = bus.subscribe();
        assert!(!bus.take_remote_activity());
        let saved = EventPayload::SessionSaved(SessionSaved { revision: 7 });
        bus.deliver(Arc::new(Event { session_id: "s".into(), payload: saved, at: Utc::now() }));
        let other = EventPayload::ToolCall(ToolCallStarted { tool: "t".into(), params: json!({}) });
        bus.deliver(Arc::new(Event { session_id: "s".into(), payload: other, at: Utc::now() }));
        assert_eq!(rx.recv().await.unwrap().payload.name(), names::TOOL_CALL, "the save is not delivered");
        assert!(bus.has_remote_activity());
        // Every handle on the bus (the relay's weak one included) shares the mark; reading it clears it.
        assert!(bus.downgrade().upgrade().unwrap().take_remote_activity());
        assert!(!bus.take_remote_activity());
        // Another event (published before the other instance's save) marks nothing.
        let call = EventPayload::ToolCall(ToolCallStarted { tool: "t".into(), params: json!({}) });
        bus.deliver(Arc::new(Event { session_id: "s".into(), payload: call, at: Utc::now() }));
        assert!(!bus.has_remote_activity());
        assert_eq!(rx.recv().await.unwrap().payload.name(), names::TOOL_CALL);
        bus.announce_save(8);
        assert!(rx.try_recv().is_err(), "announced to other instances only");
    }
}

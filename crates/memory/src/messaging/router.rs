//! The router: the one path every message takes. [`MessageRouter::route`] checks the send (content, the
//! no-messaging-yourself rule, the hop limit), asks the target's kind whom it reaches, then has the store reserve
//! the anti-loop windows and store the message with its inbox rows in one transaction, then delivers by kind.

use super::inbox::Inbox;
use super::store::{CooldownRule, MessageStore, NewMessage, StoredMessage};
use super::types::{MessageEndpoint, MessageTarget, RoutedMessage, RouterConfig, SendOrigin, SendReceipt, TargetType};
use super::{Reach, agent, channel, group, metadata_text, msg_id, user};
use crate::agent_id::AgentId;
use crate::clock::{SharedClock, fmt_time};
use crate::error::{MemoryError, Result};
use chrono::{DateTime, Utc};
use holdfast_core::EventBus;
use holdfast_core::event::{EventPayload, MessageHopLimit};
use parking_lot::{Mutex, RwLock};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;
use tokio::sync::Notify;

/// The longest anti-loop window the store keeps (a longer `agent_cooldown` is this one).
const MAX_WINDOW: std::time::Duration = std::time::Duration::from_secs(100 * 365 * 24 * 3600);

/// Finds the bus that reaches a session's clients ([`MessageRouter::set_session_events`]).
pub type SessionEvents = Arc<dyn Fn(&str) -> Option<EventBus> + Send + Sync>;

/// How a send is treated: an agent's own, or the runtime's (a reminder).
#[derive(Debug, Clone)]
struct SendRules {
    /// An agent's send: subject to the anti-loop cooldown, and an agent may not message itself.
    agent_send: bool,
    /// How inbox rows are labelled, overriding the target's.
    via: Option<&'static str>,
    /// A reminder (row id, firing time) marked fired in the transaction that delivers it: delivered once or not at
    /// all, whatever stops the process. Already fired → the send is dropped ([`MemoryError::AlreadyFired`]).
    fires: Option<(i64, String)>,
}

/// The router. Clones share state.
#[derive(Clone)]
pub struct MessageRouter {
    inner: Arc<RouterInner>,
}

struct RouterInner {
    store: Arc<dyn MessageStore>,
    clock: SharedClock,
    config: RouterConfig,
    http: reqwest::Client,
    notifiers: Mutex<HashMap<String, Arc<Notify>>>,
    /// What the store's inbox watch calls; the watch holds it weakly, so it stops with the router.
    inbox_wake: Mutex<Option<super::store::InboxWake>>,
    sessions: RwLock<HashMap<String, EventBus>>,
    session_events: RwLock<Option<SessionEvents>>,
    endpoints: RwLock<Vec<(TargetType, Arc<dyn MessageEndpoint>)>>,
}

impl std::fmt::Debug for MessageRouter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MessageRouter").field("config", &self.inner.config).finish_non_exhaustive()
    }
}

impl MessageRouter {
    /// A router on `store`.
    pub fn new(store: Arc<dyn MessageStore>, config: RouterConfig, clock: SharedClock) -> Result<Self> {
        let http = reqwest::Client::builder()
            .timeout(config.webhook_timeout)
            .build()
            .map_err(|e| MemoryError::internal(format!("cannot build the HTTP client: {e}")))?;
        let router = Self {
            inner: Arc::new(RouterInner {
                store,
                clock,
                config,
                http,
                notifiers: Mutex::new(HashMap::new()),
                inbox_wake: Mutex::new(None),
                sessions: RwLock::new(HashMap::new()),
                session_events: RwLock::new(None),
                endpoints: RwLock::new(Vec::new()),
            }),
        };
        // Messages other instances store wake this instance's readers of those inboxes.
        let inner = Arc::downgrade(&router.inner);
        let wake: super::store::InboxWake = Arc::new(move |agent: Option<&str>| {
            let Some(inner) = inner.upgrade() else { return };
            let notifiers = inner.notifiers.lock();
            match agent {
                Some(agent) => notifiers.get(agent).into_iter().for_each(|n| n.notify_one()),
                None => notifiers.values().for_each(|n| n.notify_one()),
            }
        });
        router.inner.store.watch_inboxes(Arc::clone(&wake))?;
        *router.inner.inbox_wake.lock() = Some(wake);
        Ok(router)
    }

    /// The store messages and reminders live in.
    pub fn store(&self) -> &Arc<dyn MessageStore> {
        &self.inner.store
    }

    /// The configuration.
    pub fn config(&self) -> &RouterConfig {
        &self.inner.config
    }

    /// Now, on the runtime's clock.
    pub(super) fn now(&self) -> DateTime<Utc> {
        self.inner.clock.now()
    }

    /// The client channel webhooks are posted with.
    pub(super) fn http(&self) -> &reqwest::Client {
        &self.inner.http
    }

    /// Adds an extra endpoint for one kind of target.
    pub fn add_endpoint(&self, kind: TargetType, endpoint: Arc<dyn MessageEndpoint>) {
        self.inner.endpoints.write().push((kind, endpoint));
    }

    /// Remembers the session bus of `agent`, so messages to the user sent without a session (reminders) still
    /// publish `message.outbox` there.
    pub fn attach_session(&self, agent: &AgentId, events: EventBus) {
        self.inner.sessions.write().insert(agent.to_string(), events);
    }

    /// The session bus remembered for `agent`.
    pub(super) fn attached_session(&self, agent: &str) -> Option<EventBus> {
        self.inner.sessions.read().get(agent).cloned()
    }

    /// How to reach a session's clients without holding its context: the runtime that owns sessions says (its
    /// loaded copy's bus, or a bus that reaches the other instances through the event relay). A reminder to the user
    /// is announced on the session that scheduled it this way.
    pub fn set_session_events(&self, find: SessionEvents) {
        *self.inner.session_events.write() = Some(find);
    }

    /// The bus to reach session `id` on, if the runtime says.
    pub(super) fn session_bus(&self, id: &str) -> Option<EventBus> {
        self.inner.session_events.read().as_ref().and_then(|find| find(id))
    }

    /// An agent's durable inbox.
    pub fn inbox(&self, agent: &AgentId) -> Inbox {
        Inbox::new(self.clone(), agent.to_string())
    }

    /// Wakes whoever waits on `agent`'s inbox.
    pub(super) fn notifier(&self, agent: &str) -> Arc<Notify> {
        Arc::clone(self.inner.notifiers.lock().entry(agent.to_owned()).or_default())
    }

    /// Sends a message from `from` (subject to the anti-loop rules).
    pub async fn send(
        &self,
        from: &AgentId,
        target: &MessageTarget,
        content: String,
        metadata: Option<Value>,
        origin: SendOrigin,
    ) -> Result<SendReceipt> {
        let rules = SendRules { agent_send: true, via: None, fires: None };
        self.route(from, target, content, metadata, origin, rules).await
    }

    /// Sends as the runtime (a reminder): an agent may be its own target, and one that reaches other agents inside
    /// the anti-loop window of the pair waits until it ends ([`MemoryError::Deferred`]). `hops` are
    /// those of the turn that scheduled it, so a reminder carries a conversation's count on instead of restarting
    /// it: to another agent it is one more hop, under the hop limit. The reminder (`fires`: its row id and firing
    /// time) is marked fired in the same transaction.
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn send_reminder(
        &self,
        from: &AgentId,
        target: &MessageTarget,
        content: String,
        metadata: Option<Value>,
        hops: u32,
        fires: (i64, String),
        session: Option<String>,
    ) -> Result<SendReceipt> {
        let origin = SendOrigin { hops, session_id: session, events: None };
        let rules = SendRules { agent_send: false, via: Some("reminder"), fires: Some(fires) };
        self.route(from, target, content, metadata, origin, rules).await
    }

    /// Sends `from`'s answer to a message `to` sent it (the inbox delivers the final text of the turn that answered
    /// it). Labelled `reply`, so the recipient's inbox does not answer it in turn; subject to the anti-loop rules.
    pub async fn reply(
        &self,
        from: &AgentId,
        to: &str,
        content: String,
        in_reply_to: &str,
        origin: SendOrigin,
    ) -> Result<SendReceipt> {
        let target = MessageTarget::agent(to);
        let metadata = Some(serde_json::json!({"in_reply_to": in_reply_to}));
        let rules = SendRules { agent_send: true, via: Some("reply"), fires: None };
        self.route(from, &target, content, metadata, origin, rules).await
    }

    /// Checks a reminder's target when it is scheduled: it exists now, and, when it reaches other agents, the
    /// scheduling turn (`hops`) is under the hop limit.
    pub async fn check_target(&self, from: &AgentId, target: &MessageTarget, hops: u32) -> Result<()> {
        if target.kind == TargetType::User {
            return user::user_id(target.id.as_ref()).map(drop);
        }
        let id = target.required_id()?.to_owned();
        // Even a reminder to the agent itself: hops only grow along a chain no user started (a reminder scheduled in
        // such a turn carries one more), so every such chain ends here.
        if hops >= self.inner.config.max_hops {
            return Err(MemoryError::HopLimit { hops });
        }
        let (s, from) = (self.store().as_ref(), from.to_string());
        match target.kind {
            TargetType::Agent if id == from => Ok(()),
            TargetType::Agent => agent::known_agent(s, &id).await,
            TargetType::Group => group::members(s, &id).await.map(|_| ()),
            TargetType::Channel => channel::info(s, &id).await.map(|_| ()),
            TargetType::User => Ok(()),
        }
    }

    /// The one send path (see the module).
    async fn route(
        &self,
        from: &AgentId,
        target: &MessageTarget,
        content: String,
        metadata: Option<Value>,
        origin: SendOrigin,
        rules: SendRules,
    ) -> Result<SendReceipt> {
        if content.is_empty() {
            return Err(MemoryError::invalid("content", "must not be empty"));
        }
        if content.contains('\0') {
            return Err(MemoryError::invalid("content", "must not contain NUL characters"));
        }
        if metadata.as_ref().is_some_and(|m| !m.is_object()) {
            return Err(MemoryError::invalid("metadata", "must be an object or null"));
        }
        let now = self.inner.clock.now();
        let sender = from.to_string();
        let target_id = match target.kind {
            TargetType::User => user::user_id(target.id.as_ref())?,
            _ => Some(target.required_id()?.to_owned()),
        };
        let to_self = target.kind == TargetType::Agent && target_id.as_deref() == Some(from.as_str());
        if to_self && rules.agent_send {
            return Err(MemoryError::invalid(
                "target.id",
                "is you: an agent cannot message itself (use memory, track_task or schedule_reminder)",
            ));
        }
        // A message that reaches other agents is one more hop of its conversation.
        let agent_hop = target.kind != TargetType::User && !to_self;
        if agent_hop {
            self.check_hops(&sender, target, &origin)?;
        }

        let reach = self.reach(target.kind, target_id.clone(), &sender).await?;
        // Longer than a century is forever; capped so the window's end is a time the store can write.
        let window = self.inner.config.agent_cooldown.min(MAX_WINDOW);
        // A reminder that reaches other agents passes the pair's window too, or one turn could start many turns
        // of another agent by way of reminders due at once; inside it, the reminder waits rather than being dropped.
        let reminder = rules.fires.is_some();
        let cooldown = ((rules.agent_send || (reminder && agent_hop)) && !window.is_zero()).then_some(CooldownRule {
            now,
            window,
            // A channel's webhook, or the user, still gets a message no inbox does.
            refuse_when_all_skipped: reach.webhook.is_none() && target.kind != TargetType::User,
            defer: reminder,
        });
        let via = rules.via.map(str::to_owned).unwrap_or_else(|| match target.kind {
            TargetType::Agent | TargetType::User => "direct".to_owned(),
            TargetType::Group => format!("group:{}", target_id.as_deref().unwrap_or_default()),
            TargetType::Channel => format!("channel:{}", target_id.as_deref().unwrap_or_default()),
        });
        let hops = if agent_hop { origin.hops.saturating_add(1) } else { origin.hops };
        let new = NewMessage {
            sender: sender.clone(),
            target_type: target.kind,
            target_id: target_id.clone(),
            content,
            metadata: metadata_text(&metadata),
            session_id: origin.session_id.clone(),
            created_at: fmt_time(now),
            hops,
            recipients: reach.recipients,
            via,
            fires: rules.fires.clone(),
            cooldown,
        };
        let (StoredMessage { id, delivered: recipients, skipped }, new) = (self.store().store(&new).await?, new);
        let routed = RoutedMessage {
            message_id: msg_id(id),
            from: sender,
            target_type: target.kind,
            target_id,
            content: new.content,
            metadata,
            session_id: origin.session_id.clone(),
            created_at: now,
        };
        for agent in &recipients {
            self.notifier(agent).notify_one();
        }

        let mut details = self.delivered(&routed, &recipients, &origin);
        if !skipped.is_empty() {
            let s: Vec<String> = skipped
                .iter()
                .map(|(a, d)| format!("{a} (anti-loop cooldown, retry in {}s)", d.as_secs().max(1)))
                .collect();
            details.push_str(&format!("; skipped {}", s.join(", ")));
        }
        if let Some(url) = reach.webhook {
            match self.post_webhook(&url, &routed).await {
                Ok(status) => details.push_str(&format!("; webhook POST returned {status}")),
                Err(e) => {
                    tracing::warn!(channel = ?routed.target_id, error = %e, "channel webhook failed");
                    // A reminder is delivered (and marked fired) once its message is stored; the failed POST is
                    // reported, not retried as a second delivery.
                    if recipients.is_empty() && rules.fires.is_none() {
                        return Err(e);
                    }
                    details.push_str(&format!("; {e}"));
                }
            }
        }
        let endpoints: Vec<Arc<dyn MessageEndpoint>> =
            self.inner.endpoints.read().iter().filter(|(k, _)| *k == target.kind).map(|(_, e)| Arc::clone(e)).collect();
        for endpoint in endpoints {
            match endpoint.deliver(&routed).await {
                Ok(what) => details.push_str(&format!("; {}: {what}", endpoint.name())),
                Err(e) => details.push_str(&format!("; {} failed: {e}", endpoint.name())),
            }
        }
        Ok(SendReceipt { message_id: routed.message_id, details, recipients })
    }

    /// The hop limit: a send to other agents from a turn at [`RouterConfig::max_hops`] is refused, with a
    /// `message.hop_limit` event on the sending session's bus.
    fn check_hops(&self, sender: &str, target: &MessageTarget, origin: &SendOrigin) -> Result<()> {
        if origin.hops < self.inner.config.max_hops {
            return Ok(());
        }
        if let Some(bus) = &origin.events {
            bus.publish(EventPayload::MessageHopLimit(MessageHopLimit {
                agent_id: sender.to_owned(),
                target: target.describe(),
                hops: origin.hops,
            }));
        }
        tracing::info!(agent = %sender, target = %target.describe(), hops = origin.hops, "hop limit reached");
        Err(MemoryError::HopLimit { hops: origin.hops })
    }

    /// Whom a target reaches, asked of its kind.
    async fn reach(&self, kind: TargetType, id: Option<String>, sender: &str) -> Result<Reach> {
        let Some(id) = id.filter(|_| kind != TargetType::User) else { return Ok(Reach::default()) };
        let s = self.store().as_ref();
        match kind {
            TargetType::Agent => agent::reach(s, id, sender).await,
            TargetType::Group => group::reach(s, &id, sender).await,
            TargetType::Channel => channel::reach(s, &id, sender).await,
            TargetType::User => Ok(Reach::default()),
        }
    }

    /// Delivery by kind once stored, and the sentence saying where the message went.
    fn delivered(&self, m: &RoutedMessage, recipients: &[String], origin: &SendOrigin) -> String {
        let id = m.target_id.as_deref().unwrap_or_default();
        match m.target_type {
            TargetType::User => {
                self.announce_to_user(m, origin);
                String::from("Message sent to user")
            }
            TargetType::Agent => format!("Message sent to agent '{id}'"),
            TargetType::Group => format!("Message sent to group '{id}' (delivered to {})", list_or_none(recipients)),
            TargetType::Channel => {
                format!("Message sent to channel '{id}' (subscribers: {})", list_or_none(recipients))
            }
        }
    }
}

fn list_or_none(v: &[String]) -> String {
    if v.is_empty() { "none".to_owned() } else { v.join(", ") }
}

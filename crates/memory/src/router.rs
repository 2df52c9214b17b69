//! The message router: `send_message` to a user, another agent, a group or a channel, with durable agent inboxes,
//! the anti-loop cooldown, group fan-out, channel subscribers, an optional outbound webhook per channel and
//! pluggable extra endpoints.
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
//! recipient was skipped. Messages to users and reminders are exempt. The window is kept in memory (a restart
//! resets it).
//!
//! **Hop limit.** Every message carries the runtime's count of agent-to-agent hops that led to it: a message an
//! agent sends in a turn its user started has 1; one sent in a turn that answers a message of `n` hops has `n + 1`
//! (the inbox sets [`ConversationHops`] on that turn's session). A send to an agent, group or channel from a turn
//! at the limit ([`RouterConfig::max_hops`]) is refused with `rate_limited` and a `message.hop_limit` event, so two
//! agents answering each other stop. The count is the router's, stored in `messages_log.hops`; a sender's metadata
//! cannot change it.
//!
//! Content is delivered whole: never truncated or summarised.

use crate::agent_id::{AgentId, validate_id};
use crate::clock::{SharedClock, fmt_time, parse_time};
use crate::db::Database;
use crate::error::{MemoryError, Result};
use chrono::{DateTime, Utc};
use holdfast_core::EventBus;
use holdfast_core::event::names;
use holdfast_core::tool::BoxFuture;
use parking_lot::{Mutex, RwLock};
use rusqlite::{OptionalExtension, params};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;

/// An ordered (sender, recipient) pair.
type Pair = (String, String);

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

    fn required_id(&self) -> Result<&str> {
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
    /// Agent-to-agent hops that led to it (see the module's hop limit); 0 for reminders.
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

/// Options of the runtime's own sends (reminders).
#[derive(Debug, Clone)]
struct SendRules {
    /// Subject to the anti-loop cooldown and the no-messaging-yourself rule.
    agent_rules: bool,
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
    db: Database,
    clock: SharedClock,
    config: RouterConfig,
    http: reqwest::Client,
    last_sent: Mutex<HashMap<(String, String), DateTime<Utc>>>,
    notifiers: Mutex<HashMap<String, Arc<Notify>>>,
    sessions: RwLock<HashMap<String, EventBus>>,
    endpoints: RwLock<Vec<(TargetType, Arc<dyn MessageEndpoint>)>>,
}

impl std::fmt::Debug for MessageRouter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MessageRouter").field("config", &self.inner.config).finish_non_exhaustive()
    }
}

fn msg_id(n: i64) -> String {
    format!("msg_{n}")
}

fn metadata_text(m: &Option<Value>) -> Option<String> {
    m.as_ref().map(Value::to_string)
}

fn parse_metadata(s: Option<String>) -> Option<Value> {
    s.and_then(|s| serde_json::from_str(&s).ok())
}

fn bad_time(s: &str) -> MemoryError {
    MemoryError::internal(format!("unreadable time {s:?} in the message tables"))
}

impl MessageRouter {
    /// A router on `db`.
    pub fn new(db: Database, config: RouterConfig, clock: SharedClock) -> Result<Self> {
        let http = reqwest::Client::builder()
            .timeout(config.webhook_timeout)
            .build()
            .map_err(|e| MemoryError::internal(format!("cannot build the HTTP client: {e}")))?;
        Ok(Self {
            inner: Arc::new(RouterInner {
                db,
                clock,
                config,
                http,
                last_sent: Mutex::new(HashMap::new()),
                notifiers: Mutex::new(HashMap::new()),
                sessions: RwLock::new(HashMap::new()),
                endpoints: RwLock::new(Vec::new()),
            }),
        })
    }

    /// The database.
    pub fn database(&self) -> &Database {
        &self.inner.db
    }

    /// The configuration.
    pub fn config(&self) -> &RouterConfig {
        &self.inner.config
    }

    /// Makes `agent` known, so other agents may message it.
    pub async fn register_agent(&self, agent: &AgentId) -> Result<()> {
        let (agent, now) = (agent.to_string(), fmt_time(self.inner.clock.now()));
        self.inner
            .db
            .call(move |c| {
                c.execute(
                    "INSERT OR IGNORE INTO messages_agents (agent_id, created_at) VALUES (?1, ?2)",
                    params![agent, now],
                )?;
                Ok(())
            })
            .await
    }

    /// Every known agent, by id.
    pub async fn agents(&self) -> Result<Vec<String>> {
        self.inner.db.call(|c| list_strings(c, "SELECT agent_id FROM messages_agents ORDER BY agent_id", [])).await
    }

    /// Defines (or redefines) a group with exactly these members.
    pub async fn define_group(&self, name: &str, members: &[String]) -> Result<()> {
        validate_id("group", name)?;
        for m in members {
            validate_id("members", m)?;
        }
        let (name, members) = (name.to_owned(), members.to_vec());
        self.inner
            .db
            .call(move |c| {
                let tx = c.transaction()?;
                tx.execute("DELETE FROM messages_groups WHERE name = ?1", [&name])?;
                for m in &members {
                    tx.execute(
                        "INSERT OR IGNORE INTO messages_groups (name, member) VALUES (?1, ?2)",
                        params![name, m],
                    )?;
                }
                tx.commit()?;
                Ok(())
            })
            .await
    }

    /// Every group with its members.
    pub async fn groups(&self) -> Result<BTreeMap<String, Vec<String>>> {
        self.inner
            .db
            .call(|c| {
                let mut stmt = c.prepare_cached("SELECT name, member FROM messages_groups ORDER BY name, member")?;
                let rows = stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))?;
                let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
                for row in rows {
                    let (g, m) = row?;
                    out.entry(g).or_default().push(m);
                }
                Ok(out)
            })
            .await
    }

    /// Defines (or redefines) a channel and its optional outbound webhook URL (`http://` or `https://`).
    pub async fn define_channel(&self, name: &str, webhook_url: Option<String>) -> Result<()> {
        validate_id("channel", name)?;
        if let Some(url) = &webhook_url {
            let parsed = reqwest::Url::parse(url).map_err(|e| MemoryError::invalid("webhook_url", e.to_string()))?;
            if !matches!(parsed.scheme(), "http" | "https") {
                return Err(MemoryError::invalid("webhook_url", "must be an http or https URL"));
            }
        }
        let name = name.to_owned();
        self.inner
            .db
            .call(move |c| {
                c.execute(
                    "INSERT INTO messages_channels (name, webhook_url) VALUES (?1, ?2)
                     ON CONFLICT (name) DO UPDATE SET webhook_url = excluded.webhook_url",
                    params![name, webhook_url],
                )?;
                Ok(())
            })
            .await
    }

    /// Subscribes an agent to a channel (the channel must exist).
    pub async fn subscribe(&self, channel: &str, agent: &AgentId) -> Result<()> {
        let (channel, agent) = (channel.to_owned(), agent.to_string());
        self.inner
            .db
            .call(move |c| {
                if !channel_exists(c, &channel)? {
                    return Err(MemoryError::TargetNotFound {
                        kind: "channel",
                        id: channel,
                        existing: list_channels(c)?,
                    });
                }
                c.execute(
                    "INSERT OR IGNORE INTO messages_subscriptions (channel, agent_id) VALUES (?1, ?2)",
                    params![channel, agent],
                )?;
                Ok(())
            })
            .await
    }

    /// Unsubscribes an agent from a channel.
    pub async fn unsubscribe(&self, channel: &str, agent: &AgentId) -> Result<()> {
        let (channel, agent) = (channel.to_owned(), agent.to_string());
        self.inner
            .db
            .call(move |c| {
                c.execute(
                    "DELETE FROM messages_subscriptions WHERE channel = ?1 AND agent_id = ?2",
                    params![channel, agent],
                )?;
                Ok(())
            })
            .await
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

    /// An agent's durable inbox.
    pub fn inbox(&self, agent: &AgentId) -> Inbox {
        Inbox { router: self.clone(), agent: agent.to_string() }
    }

    fn notifier(&self, agent: &str) -> Arc<Notify> {
        Arc::clone(self.inner.notifiers.lock().entry(agent.to_owned()).or_default())
    }

    /// Sends a message from `from` (subject to the anti-loop rule).
    pub async fn send(
        &self,
        from: &AgentId,
        target: &MessageTarget,
        content: String,
        metadata: Option<Value>,
        origin: SendOrigin,
    ) -> Result<SendReceipt> {
        self.route(from, target, content, metadata, origin, SendRules { agent_rules: true, via: None, fires: None })
            .await
    }

    /// Sends as the runtime (a reminder): exempt from the anti-loop rule, and an agent may be its own target. The
    /// reminder (`fires`: its row id and firing time) is marked fired in the same transaction.
    pub(crate) async fn send_reminder(
        &self,
        from: &AgentId,
        target: &MessageTarget,
        content: String,
        metadata: Option<Value>,
        fires: (i64, String),
    ) -> Result<SendReceipt> {
        let origin = SendOrigin::default();
        let rules = SendRules { agent_rules: false, via: Some("reminder"), fires: Some(fires) };
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
        self.route(
            from,
            &target,
            content,
            metadata,
            origin,
            SendRules { agent_rules: true, via: Some("reply"), fires: None },
        )
        .await
    }

    /// Checks that a target exists (for reminders scheduled now and sent later).
    pub async fn check_target(&self, from: &AgentId, target: &MessageTarget) -> Result<()> {
        if target.kind == TargetType::User {
            return Ok(());
        }
        let id = target.required_id()?.to_owned();
        let (kind, from) = (target.kind, from.to_string());
        self.inner
            .db
            .call(move |c| match kind {
                TargetType::Agent if id == from => Ok(()),
                TargetType::Agent => known_agent(c, &id).map(|_| ()),
                TargetType::Group => group_members(c, &id).map(|_| ()),
                TargetType::Channel => channel_info(c, &id).map(|_| ()),
                TargetType::User => Ok(()),
            })
            .await
    }

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
        if metadata.as_ref().is_some_and(|m| !m.is_object()) {
            return Err(MemoryError::invalid("metadata", "must be an object or null"));
        }
        let now = self.inner.clock.now();
        let sender = from.to_string();
        let target_id = match target.kind {
            TargetType::User => {
                let id = target.id.clone().filter(|s| !s.is_empty());
                if let Some(id) = &id {
                    validate_id("target.id", id)?;
                }
                id
            }
            _ => Some(target.required_id()?.to_owned()),
        };
        if rules.agent_rules && target.kind == TargetType::Agent && target_id.as_deref() == Some(from.as_str()) {
            return Err(MemoryError::invalid(
                "target.id",
                "is you: an agent cannot message itself (use memory, track_task or schedule_reminder)",
            ));
        }

        if rules.agent_rules && target.kind != TargetType::User && origin.hops >= self.inner.config.max_hops {
            if let Some(bus) = &origin.events {
                bus.publish(
                    names::MESSAGE_HOP_LIMIT,
                    serde_json::json!({"agent_id": sender, "target": target.describe(), "hops": origin.hops}),
                );
            }
            tracing::info!(agent = %sender, target = %target.describe(), hops = origin.hops, "hop limit reached");
            return Err(MemoryError::HopLimit { hops: origin.hops });
        }

        // Resolve recipients (agents whose inbox receives the message) and the channel webhook.
        let (kind, tid, me) = (target.kind, target_id.clone(), sender.clone());
        let (mut recipients, webhook) = self
            .inner
            .db
            .call(move |c| -> Result<(Vec<String>, Option<String>)> {
                Ok(match (kind, tid) {
                    (TargetType::User, _) => (Vec::new(), None),
                    (TargetType::Agent, Some(id)) => {
                        if id != me {
                            known_agent(c, &id)?;
                        }
                        (vec![id], None)
                    }
                    (TargetType::Group, Some(id)) => {
                        let members: Vec<String> = group_members(c, &id)?.into_iter().filter(|m| *m != me).collect();
                        if members.is_empty() {
                            return Err(MemoryError::invalid(
                                "target.id",
                                format!("group `{id}` has no members besides you"),
                            ));
                        }
                        (members, None)
                    }
                    (TargetType::Channel, Some(id)) => {
                        let (webhook, subs) = channel_info(c, &id)?;
                        (subs.into_iter().filter(|s| *s != me).collect(), webhook)
                    }
                    (_, None) => (Vec::new(), None),
                })
            })
            .await?;

        // The anti-loop rule: reserve the window for every recipient outside it, skip the others.
        let mut skipped: Vec<(String, Duration)> = Vec::new();
        let cooldown = self.inner.config.agent_cooldown;
        let mut previous: Vec<(Pair, Option<DateTime<Utc>>)> = Vec::new();
        if rules.agent_rules && !cooldown.is_zero() && !recipients.is_empty() {
            let mut last = self.inner.last_sent.lock();
            recipients.retain(|to| {
                let key = (sender.clone(), to.clone());
                if let Some(at) = last.get(&key) {
                    let elapsed = (now - *at).to_std().unwrap_or(Duration::ZERO);
                    if elapsed < cooldown {
                        skipped.push((to.clone(), cooldown - elapsed));
                        return false;
                    }
                }
                previous.push((key.clone(), last.insert(key, now)));
                true
            });
            if recipients.is_empty()
                && webhook.is_none()
                && target.kind != TargetType::User
                && let Some((to, retry_after)) = skipped.iter().min_by_key(|(_, d)| *d).cloned()
            {
                return Err(MemoryError::Cooldown { from: sender, to, cooldown, retry_after });
            }
        }

        let via = rules.via.map(str::to_owned).unwrap_or_else(|| match target.kind {
            TargetType::Agent | TargetType::User => "direct".to_owned(),
            TargetType::Group => format!("group:{}", target_id.as_deref().unwrap_or_default()),
            TargetType::Channel => format!("channel:{}", target_id.as_deref().unwrap_or_default()),
        });
        let routed = RoutedMessage {
            message_id: String::new(),
            from: sender.clone(),
            target_type: target.kind,
            target_id: target_id.clone(),
            content,
            metadata,
            session_id: origin.session_id.clone(),
            created_at: now,
        };
        let to_insert = routed.clone();
        let inbox_for = recipients.clone();
        let hops = if rules.agent_rules { origin.hops.saturating_add(1) } else { 0 };
        let fires = rules.fires.clone();
        let stored = self
            .inner
            .db
            .call(move |c| {
                let tx = c.transaction()?;
                if let Some((reminder, at)) = &fires
                    && tx.execute(
                        "UPDATE reminders_items SET fired_at = ?1 WHERE id = ?2 AND fired_at IS NULL",
                        params![at, reminder],
                    )? == 0
                {
                    return Err(MemoryError::AlreadyFired);
                }
                let m = &to_insert;
                let id: i64 = tx.query_row(
                    "INSERT INTO messages_log (sender, target_type, target_id, content, metadata, session_id, created_at, hops)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) RETURNING id",
                    params![m.from, m.target_type.as_str(), m.target_id, m.content, metadata_text(&m.metadata), m.session_id, fmt_time(m.created_at), hops],
                    |r| r.get(0),
                )?;
                for agent in &inbox_for {
                    tx.execute("INSERT INTO messages_inbox (message_id, agent_id, via) VALUES (?1, ?2, ?3)", params![id, agent, via])?;
                }
                if m.target_type == TargetType::User {
                    tx.execute(
                        "INSERT INTO messages_outbox (message_id, agent_id, session_id, user_id) VALUES (?1, ?2, ?3, ?4)",
                        params![id, m.from, m.session_id, m.target_id],
                    )?;
                }
                tx.commit()?;
                Ok(id)
            })
            .await;
        let id = match stored {
            Ok(id) => id,
            Err(e) => {
                let mut last = self.inner.last_sent.lock();
                for (key, prev) in previous {
                    match prev {
                        Some(at) => last.insert(key, at),
                        None => last.remove(&key),
                    };
                }
                return Err(e);
            }
        };
        let routed = RoutedMessage { message_id: msg_id(id), ..routed };
        for agent in &recipients {
            self.notifier(agent).notify_one();
        }

        let mut details = match target.kind {
            TargetType::User => {
                let bus = origin.events.clone().or_else(|| self.inner.sessions.read().get(&sender).cloned());
                if let Some(bus) = bus {
                    bus.publish(
                        names::MESSAGE_OUTBOX,
                        serde_json::json!({
                            "message_id": routed.message_id,
                            "agent_id": routed.from,
                            "user_id": routed.target_id,
                            "content": routed.content,
                            "metadata": routed.metadata,
                            "created_at": fmt_time(routed.created_at),
                        }),
                    );
                }
                String::from("Message sent to user")
            }
            TargetType::Agent => format!("Message sent to agent '{}'", target_id.as_deref().unwrap_or_default()),
            TargetType::Group => format!(
                "Message sent to group '{}' (delivered to {})",
                target_id.as_deref().unwrap_or_default(),
                list_or_none(&recipients)
            ),
            TargetType::Channel => format!(
                "Message sent to channel '{}' (subscribers: {})",
                target_id.as_deref().unwrap_or_default(),
                list_or_none(&recipients)
            ),
        };
        if !skipped.is_empty() {
            let s: Vec<String> = skipped
                .iter()
                .map(|(a, d)| format!("{a} (anti-loop cooldown, retry in {}s)", d.as_secs().max(1)))
                .collect();
            details.push_str(&format!("; skipped {}", s.join(", ")));
        }
        if let Some(url) = webhook {
            let result = self.post_webhook(&url, &routed).await;
            match result {
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

    async fn post_webhook(&self, url: &str, m: &RoutedMessage) -> Result<String> {
        let body = serde_json::json!({
            "message_id": m.message_id,
            "channel": m.target_id,
            "from": m.from,
            "content": m.content,
            "metadata": m.metadata,
            "created_at": fmt_time(m.created_at),
        });
        let upstream = |detail: String| MemoryError::Upstream { service: format!("webhook POST to {url}"), detail };
        let response = self.inner.http.post(url).json(&body).send().await.map_err(|e| upstream(e.to_string()))?;
        let status = response.status();
        if status.is_success() { Ok(status.to_string()) } else { Err(upstream(format!("HTTP {status}"))) }
    }

    /// Messages an agent sent to users, newest first.
    pub async fn outbox(&self, agent: &AgentId, limit: usize) -> Result<Vec<UserMessage>> {
        let agent = agent.to_string();
        self.inner
            .db
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

fn list_or_none(v: &[String]) -> String {
    if v.is_empty() { "none".to_owned() } else { v.join(", ") }
}

fn list_strings<P: rusqlite::Params>(c: &rusqlite::Connection, sql: &str, p: P) -> Result<Vec<String>> {
    let mut stmt = c.prepare_cached(sql)?;
    let rows = stmt.query_map(p, |r| r.get::<_, String>(0))?;
    Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
}

fn known_agent(c: &rusqlite::Connection, id: &str) -> Result<()> {
    let found: Option<String> =
        c.query_row("SELECT agent_id FROM messages_agents WHERE agent_id = ?1", [id], |r| r.get(0)).optional()?;
    if found.is_some() {
        Ok(())
    } else {
        Err(MemoryError::TargetNotFound {
            kind: "agent",
            id: id.to_owned(),
            existing: list_strings(c, "SELECT agent_id FROM messages_agents ORDER BY agent_id", [])?,
        })
    }
}

fn group_members(c: &rusqlite::Connection, id: &str) -> Result<Vec<String>> {
    let members = list_strings(c, "SELECT member FROM messages_groups WHERE name = ?1 ORDER BY member", [id])?;
    if members.is_empty() {
        return Err(MemoryError::TargetNotFound {
            kind: "group",
            id: id.to_owned(),
            existing: list_strings(c, "SELECT DISTINCT name FROM messages_groups ORDER BY name", [])?,
        });
    }
    Ok(members)
}

fn channel_exists(c: &rusqlite::Connection, id: &str) -> Result<bool> {
    Ok(c.query_row("SELECT 1 FROM messages_channels WHERE name = ?1", [id], |_| Ok(())).optional()?.is_some())
}

fn list_channels(c: &rusqlite::Connection) -> Result<Vec<String>> {
    list_strings(c, "SELECT name FROM messages_channels ORDER BY name", [])
}

fn channel_info(c: &rusqlite::Connection, id: &str) -> Result<(Option<String>, Vec<String>)> {
    let webhook: Option<Option<String>> =
        c.query_row("SELECT webhook_url FROM messages_channels WHERE name = ?1", [id], |r| r.get(0)).optional()?;
    let Some(webhook) = webhook else {
        return Err(MemoryError::TargetNotFound { kind: "channel", id: id.to_owned(), existing: list_channels(c)? });
    };
    let subs =
        list_strings(c, "SELECT agent_id FROM messages_subscriptions WHERE channel = ?1 ORDER BY agent_id", [id])?;
    Ok((webhook, subs))
}

/// One agent's durable inbox. Messages stay queued (across restarts) until taken.
#[derive(Clone)]
pub struct Inbox {
    router: MessageRouter,
    agent: String,
}

impl std::fmt::Debug for Inbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Inbox").field("agent", &self.agent).finish()
    }
}

const INBOX_SELECT: &str = "SELECT i.id, l.id, l.sender, i.via, l.content, l.metadata, l.created_at, l.hops
     FROM messages_inbox i JOIN messages_log l ON l.id = i.message_id";

/// An inbox row: inbox id, message id, sender, via, content, metadata, created_at, hops.
type InboxRow = (i64, i64, String, String, String, Option<String>, String, u32);

fn inbox_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<InboxRow> {
    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?, r.get(7)?))
}

fn to_inbox_message(row: InboxRow) -> Result<InboxMessage> {
    let (inbox_id, id, from, via, content, metadata, at, hops) = row;
    Ok(InboxMessage {
        inbox_id,
        message_id: msg_id(id),
        from,
        via,
        hops,
        content,
        metadata: parse_metadata(metadata),
        created_at: parse_time(&at).ok_or_else(|| bad_time(&at))?,
    })
}

impl Inbox {
    /// The agent.
    pub fn agent(&self) -> &str {
        &self.agent
    }

    /// Takes the oldest waiting message, if any (marking it delivered).
    pub async fn try_recv(&self) -> Result<Option<InboxMessage>> {
        let (agent, now) = (self.agent.clone(), fmt_time(self.router.inner.clock.now()));
        self.router
            .inner
            .db
            .call(move |c| {
                let tx = c.transaction()?;
                let row = tx
                    .query_row(
                        &format!(
                            "{INBOX_SELECT} WHERE i.agent_id = ?1 AND i.delivered_at IS NULL ORDER BY i.id LIMIT 1"
                        ),
                        [&agent],
                        inbox_row,
                    )
                    .optional()?;
                let Some(row) = row else { return Ok(None) };
                tx.execute("UPDATE messages_inbox SET delivered_at = ?1 WHERE id = ?2", params![now, row.0])?;
                tx.commit()?;
                to_inbox_message(row).map(Some)
            })
            .await
    }

    /// The oldest waiting message, without taking it: [`Inbox::ack`] takes it once it has been handled, so a
    /// message being handled when the process dies is handled again after a restart (at least once).
    pub async fn peek(&self) -> Result<Option<InboxMessage>> {
        let agent = self.agent.clone();
        self.router
            .inner
            .db
            .call(move |c| {
                c.query_row(
                    &format!("{INBOX_SELECT} WHERE i.agent_id = ?1 AND i.delivered_at IS NULL ORDER BY i.id LIMIT 1"),
                    [&agent],
                    inbox_row,
                )
                .optional()?
                .map(to_inbox_message)
                .transpose()
            })
            .await
    }

    /// Waits for a message and returns it without taking it (see [`Inbox::peek`]).
    pub async fn next(&self) -> Result<InboxMessage> {
        let notify = self.router.notifier(&self.agent);
        loop {
            let notified = notify.notified();
            if let Some(m) = self.peek().await? {
                return Ok(m);
            }
            notified.await;
        }
    }

    /// Takes a message [`Inbox::peek`] returned: it is delivered and will not be returned again.
    pub async fn ack(&self, inbox_id: i64) -> Result<()> {
        let (agent, now) = (self.agent.clone(), fmt_time(self.router.inner.clock.now()));
        self.router
            .inner
            .db
            .call(move |c| {
                c.execute(
                    "UPDATE messages_inbox SET delivered_at = ?1 WHERE id = ?2 AND agent_id = ?3 AND delivered_at IS NULL",
                    params![now, inbox_id, agent],
                )?;
                Ok(())
            })
            .await
    }

    /// Waits for the next message and takes it.
    pub async fn recv(&self) -> Result<InboxMessage> {
        let notify = self.router.notifier(&self.agent);
        loop {
            if let Some(m) = self.try_recv().await? {
                return Ok(m);
            }
            notify.notified().await;
        }
    }

    /// Waiting messages, oldest first, without taking them.
    pub async fn pending(&self) -> Result<Vec<InboxMessage>> {
        let agent = self.agent.clone();
        self.router
            .inner
            .db
            .call(move |c| {
                let mut stmt = c.prepare_cached(&format!(
                    "{INBOX_SELECT} WHERE i.agent_id = ?1 AND i.delivered_at IS NULL ORDER BY i.id"
                ))?;
                let rows = stmt.query_map([&agent], inbox_row)?.collect::<rusqlite::Result<Vec<_>>>()?;
                rows.into_iter().map(to_inbox_message).collect()
            })
            .await
    }

    /// Takes every waiting message, oldest first.
    pub async fn drain(&self) -> Result<Vec<InboxMessage>> {
        let mut out = Vec::new();
        while let Some(m) = self.try_recv().await? {
            out.push(m);
        }
        Ok(out)
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

//! Where messages and reminders live: the [`MessageStore`] trait, [`SqliteMessageStore`] (the `messages_*` and
//! `reminders_items` tables of the SQLite file, the default) and [`PgMessageStore`] (the same tables in PostgreSQL,
//! shared by every instance on the database).
//!
//! Both are thin adapters over holdfast-store's tables ([`holdfast_store::messages::MessageTable`]: the queries, the
//! transactions, the inbox hold, the wake-up of other instances' readers, the copy of a file's rows into
//! PostgreSQL). A store is storage only; the router, the inbox and the reminder scheduler decide. What must be
//! decided atomically is decided here and passed into the table's transaction, so it holds across instances:
//! - [`MessageStore::store`] reserves the anti-loop windows of the message's recipients (a window taken by a
//!   concurrent send, on any instance, skips that recipient; `window_left` says whether a window is still open),
//!   marks a reminder fired (only if still unfired; on PostgreSQL the reminder row is claimed `FOR UPDATE SKIP
//!   LOCKED`, so an instance delivering it makes the others pass it by: [`MemoryError::AlreadyFired`]), decides what
//!   the windows it found mean (a reminder waits, [`MemoryError::Deferred`]; a send whose every recipient is inside
//!   its window is refused, [`MemoryError::Cooldown`]) and writes the message with its inbox or outbox rows — all of
//!   it or none.
//! - [`MessageStore::add_reminder`] counts the agent's pending reminders, refuses past the cap
//!   ([`MemoryError::TooManyReminders`]) and inserts, under one lock.
//! - [`MessageStore::hold_inbox`] makes one instance the only reader of an agent's inbox (a no-op on SQLite, whose
//!   file one process owns; a session-level advisory lock on PostgreSQL, freed by the server if the holder dies).
//!
//! Times are stored as the text [`crate::clock::fmt_time`] writes (fixed width, so text order is time order).
//! Methods are async: the SQLite store runs its statements on tokio's blocking pool, the PostgreSQL one on the
//! process's pool.

mod postgres;
mod sqlite;
mod table;

pub use postgres::{MessagesAdopted, PgMessageStore};
pub use sqlite::SqliteMessageStore;

use super::types::{InboxMessage, MessageTarget, TargetType, UserMessage};
use super::{msg_id, parse_metadata};
use crate::clock::parse_time;
use crate::error::{MemoryError, Result};
use chrono::{DateTime, Utc};
use holdfast_core::tool::BoxFuture;
use std::sync::Arc;
use std::time::Duration;

/// A message to store, with what storing it decides.
#[derive(Debug, Clone)]
pub struct NewMessage {
    /// The sending agent.
    pub sender: String,
    /// The target's kind.
    pub target_type: TargetType,
    /// The target's id (a user's id is optional).
    pub target_id: Option<String>,
    /// The content, whole.
    pub content: String,
    /// Metadata as JSON text.
    pub metadata: Option<String>,
    /// The sending session.
    pub session_id: Option<String>,
    /// When it was sent ([`crate::clock::fmt_time`]).
    pub created_at: String,
    /// Agent-to-agent hops that led to it.
    pub hops: u32,
    /// The agents whose inbox it should reach (before the anti-loop windows are checked).
    pub recipients: Vec<String>,
    /// How the inbox rows are labelled (`direct`, `group:<g>`, `reminder`, …).
    pub via: String,
    /// A reminder to mark fired in the same transaction: its row id and the firing time. Already fired, or being
    /// fired by another instance, → [`MemoryError::AlreadyFired`] and nothing is stored.
    pub fires: Option<(i64, String)>,
    /// The anti-loop windows to reserve, if the send is subject to them.
    pub cooldown: Option<CooldownRule>,
}

/// The anti-loop rule applied when a message is stored.
#[derive(Debug, Clone, Copy)]
pub struct CooldownRule {
    /// Now, on the runtime's clock.
    pub now: DateTime<Utc>,
    /// The window (more than zero).
    pub window: Duration,
    /// Refuse the send ([`MemoryError::Cooldown`]) when every recipient is inside its window (a channel with a
    /// webhook, or a message to the user, still goes out).
    pub refuse_when_all_skipped: bool,
    /// A reminder's rule: when any recipient is inside its window, nothing is stored, the reminder (`fires`) waits
    /// until the last of those windows ends (`reminders_items.not_before`), and the send fails with
    /// [`MemoryError::Deferred`]. Deferred, never dropped, and never partly delivered.
    pub defer: bool,
}

/// What storing a message did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredMessage {
    /// The `messages_log` row id.
    pub id: i64,
    /// The recipients whose inbox got it.
    pub delivered: Vec<String>,
    /// Recipients inside their anti-loop window, with how long until it ends.
    pub skipped: Vec<(String, Duration)>,
}

/// A reminder to insert.
#[derive(Debug, Clone)]
pub struct NewReminder {
    /// The scheduling agent.
    pub agent_id: String,
    /// When it is due ([`crate::clock::fmt_time`]).
    pub due_at: String,
    /// The message.
    pub message: String,
    /// Who receives it.
    pub target: MessageTarget,
    /// When it was scheduled.
    pub created_at: String,
    /// The scheduling turn's hops.
    pub hops: u32,
    /// The scheduling session, if any.
    pub session_id: Option<String>,
    /// Who started the scheduling turn, when it was not the user ([`holdfast_core::confirm::TurnStarter::Other`]).
    pub asked_by: Option<String>,
}

/// An inbox row as stored: inbox id, message id, sender, via, content, metadata, created_at, hops.
pub type InboxRow = (i64, i64, String, String, String, Option<String>, String, u32);

/// An outbox row as stored: message id, agent, session, user, content, metadata, created_at.
pub type OutboxRow = (i64, String, Option<String>, Option<String>, String, Option<String>, String);

/// A reminder row as stored: id, agent, due_at, message, target type, target id, created_at, fired_at, hops, the
/// scheduling session, who started the scheduling turn (when not the user).
pub type ReminderRow =
    (i64, String, String, String, String, Option<String>, String, Option<String>, u32, Option<String>, Option<String>);

/// A channel as stored: its webhook and its subscribers (by id).
pub type ChannelRow = (Option<String>, Vec<String>);

/// What [`MessageStore::watch_inboxes`] calls: an agent whose inbox got a message, or `None` for every agent.
pub type InboxWake = Arc<dyn Fn(Option<&str>) + Send + Sync>;

/// An exclusive hold on one agent's inbox: while it is held, no other instance reads that inbox. Dropping it lets
/// another instance take it.
pub struct InboxHold(Box<dyn HeldLock>);

/// What an [`InboxHold`] holds.
pub trait HeldLock: Send {
    /// Whether the hold is still in force (a PostgreSQL connection that died has lost its lock).
    fn still_held(&mut self) -> BoxFuture<'_, bool>;
    /// Whether the previous holder may still be in a turn: another instance held the inbox last and did not let it
    /// go cleanly (it died, or lost its connection), so the new holder should give it time to notice and stop.
    fn previous_may_run(&self) -> bool {
        false
    }
    /// Lets go cleanly: no turn of this holder runs any more, and the next holder need not wait.
    fn release(&mut self) -> BoxFuture<'_, ()> {
        Box::pin(std::future::ready(()))
    }
}

impl InboxHold {
    /// A hold on `lock`.
    pub fn new(lock: impl HeldLock + 'static) -> Self {
        Self(Box::new(lock))
    }

    /// A hold that always holds (one process owns the store).
    pub fn sole() -> Self {
        struct Sole;
        impl HeldLock for Sole {
            fn still_held(&mut self) -> BoxFuture<'_, bool> {
                Box::pin(std::future::ready(true))
            }
        }
        Self::new(Sole)
    }

    /// Whether it is still in force.
    pub async fn still_held(&mut self) -> bool {
        self.0.still_held().await
    }

    /// Whether the previous holder may still be in a turn (it held the inbox last and did not let go cleanly): then
    /// the new holder waits for it to notice before reading. `false` when the inbox was let go cleanly, never held,
    /// or last held by this instance.
    pub fn previous_may_run(&self) -> bool {
        self.0.previous_may_run()
    }

    /// Lets go cleanly, saying so to the next holder (call it once no turn of this holder runs).
    pub async fn release(mut self) {
        self.0.release().await;
    }
}

impl std::fmt::Debug for InboxHold {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("InboxHold")
    }
}

/// Storage for messages between agents, inboxes, the outbox, the anti-loop windows and reminders.
pub trait MessageStore: Send + Sync + 'static {
    /// Makes `agent` known (idempotent).
    fn register_agent<'a>(&'a self, agent: &'a str, at: &'a str) -> BoxFuture<'a, Result<()>>;
    /// Every known agent, by id.
    fn agents<'a>(&'a self) -> BoxFuture<'a, Result<Vec<String>>>;
    /// Whether `agent` is known.
    fn agent_known<'a>(&'a self, agent: &'a str) -> BoxFuture<'a, Result<bool>>;

    /// Defines (or redefines) a group with exactly these members.
    fn define_group<'a>(&'a self, name: &'a str, members: &'a [String]) -> BoxFuture<'a, Result<()>>;
    /// Every (group, member) pair, by group then member.
    fn group_pairs<'a>(&'a self) -> BoxFuture<'a, Result<Vec<(String, String)>>>;
    /// A group's members, by id (empty: no such group).
    fn group_members<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<Vec<String>>>;

    /// Defines (or redefines) a channel and its webhook.
    fn define_channel<'a>(&'a self, name: &'a str, webhook_url: Option<&'a str>) -> BoxFuture<'a, Result<()>>;
    /// Every channel, by name.
    fn channels<'a>(&'a self) -> BoxFuture<'a, Result<Vec<String>>>;
    /// A channel's webhook and subscribers (by id); `None` when it does not exist.
    fn channel<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<Option<ChannelRow>>>;
    /// Subscribes `agent`; `false` when the channel does not exist.
    fn subscribe<'a>(&'a self, channel: &'a str, agent: &'a str) -> BoxFuture<'a, Result<bool>>;
    /// Unsubscribes `agent`.
    fn unsubscribe<'a>(&'a self, channel: &'a str, agent: &'a str) -> BoxFuture<'a, Result<()>>;

    /// Stores a message: the anti-loop windows, a reminder's firing, the log row and its inbox (or outbox) rows, in
    /// one transaction (see the module).
    fn store<'a>(&'a self, message: &'a NewMessage) -> BoxFuture<'a, Result<StoredMessage>>;

    /// The oldest waiting message of `agent`.
    fn inbox_first<'a>(&'a self, agent: &'a str) -> BoxFuture<'a, Result<Option<InboxRow>>>;
    /// Takes the oldest waiting message of `agent` (marks it delivered at `at`).
    fn inbox_take<'a>(&'a self, agent: &'a str, at: &'a str) -> BoxFuture<'a, Result<Option<InboxRow>>>;
    /// Marks one waiting message of `agent` delivered at `at`.
    fn inbox_ack<'a>(&'a self, agent: &'a str, inbox_id: i64, at: &'a str) -> BoxFuture<'a, Result<()>>;
    /// Every waiting message of `agent`, oldest first.
    fn inbox_pending<'a>(&'a self, agent: &'a str) -> BoxFuture<'a, Result<Vec<InboxRow>>>;
    /// Makes this process the only reader of `agent`'s inbox, waiting at most `wait`; `None` when another
    /// instance held it all that time.
    fn hold_inbox<'a>(&'a self, agent: &'a str, wait: Duration) -> BoxFuture<'a, Result<Option<InboxHold>>>;
    /// How often a reader should look at an inbox that other instances may write, in case their sends do not wake
    /// it ([`MessageStore::watch_inboxes`]); `None` when every writer is in this process.
    fn poll_interval(&self) -> Option<Duration>;
    /// Calls `wake` with an agent's id when another instance stores a message for that agent's inbox (and with
    /// `None` when such news may have been missed: every reader looks again). Nothing to watch when every writer is
    /// in this process.
    fn watch_inboxes(&self, wake: InboxWake) -> Result<()> {
        drop(wake);
        Ok(())
    }

    /// Messages `agent` sent to users, newest first.
    fn outbox<'a>(&'a self, agent: &'a str, limit: usize) -> BoxFuture<'a, Result<Vec<OutboxRow>>>;

    /// Inserts a reminder unless `agent` already has `max_pending` pending ([`MemoryError::TooManyReminders`]);
    /// counted and inserted atomically. Returns its row id.
    fn add_reminder<'a>(&'a self, reminder: &'a NewReminder, max_pending: u32) -> BoxFuture<'a, Result<i64>>;
    /// `agent`'s reminders, soonest first (fired ones only when asked).
    fn reminders<'a>(&'a self, agent: &'a str, include_fired: bool) -> BoxFuture<'a, Result<Vec<ReminderRow>>>;
    /// Deletes a pending reminder of `agent`; whether one was.
    fn cancel_reminder<'a>(&'a self, agent: &'a str, id: i64) -> BoxFuture<'a, Result<bool>>;
    /// Deletes every pending reminder of an agent not in `agents` (removed from the configuration); how many.
    fn cancel_reminders_of_others<'a>(&'a self, agents: &'a [String]) -> BoxFuture<'a, Result<u64>>;
    /// How many pending reminders agents not in `agents` have.
    fn count_reminders_of_others<'a>(&'a self, agents: &'a [String]) -> BoxFuture<'a, Result<u64>>;
    /// Every unfired reminder due at `now` or before (and past its `not_before`), oldest due first: of the agents in
    /// `agents`, or of every agent (`None`).
    fn due_reminders<'a>(
        &'a self,
        now: &'a str,
        agents: Option<&'a [String]>,
    ) -> BoxFuture<'a, Result<Vec<ReminderRow>>>;
    /// When the next unfired reminder (of `agents`, or of every agent) may fire.
    fn next_due<'a>(&'a self, agents: Option<&'a [String]>) -> BoxFuture<'a, Result<Option<String>>>;

    /// `sqlite` or `postgres`.
    fn kind(&self) -> &'static str;
}

/// A stored time the tables cannot have written.
pub(crate) fn bad_time(table: &str, s: &str) -> MemoryError {
    MemoryError::internal(format!("unreadable time {s:?} in {table}"))
}

/// An inbox row as the inbox hands it out.
pub(crate) fn to_inbox_message(row: InboxRow) -> Result<InboxMessage> {
    let (inbox_id, id, from, via, content, metadata, at, hops) = row;
    Ok(InboxMessage {
        inbox_id,
        message_id: msg_id(id),
        from,
        via,
        hops,
        content,
        metadata: parse_metadata(metadata),
        created_at: parse_time(&at).ok_or_else(|| bad_time("messages_log", &at))?,
    })
}

/// An outbox row as the outbox lists it.
pub(crate) fn to_user_message(row: OutboxRow) -> Result<UserMessage> {
    let (id, agent_id, session_id, user_id, content, metadata, at) = row;
    Ok(UserMessage {
        message_id: msg_id(id),
        agent_id,
        session_id,
        user_id,
        content,
        metadata: parse_metadata(metadata),
        created_at: parse_time(&at).ok_or_else(|| bad_time("messages_log", &at))?,
    })
}

/// Whether a window whose stored end is `until` still blocks at `now`: the time left (`None`: it has ended, or
/// cannot be read, and is taken again).
fn window_left(until: &str, now: DateTime<Utc>) -> Option<Duration> {
    let until = parse_time(until)?;
    (until > now).then(|| (until - now).to_std().unwrap_or_default())
}

/// The deferral of a reminder whose send found `skipped` recipients inside their windows: until the last window
/// ends. `None` when the rule does not defer or nobody was skipped.
fn deferral(rule: &CooldownRule, skipped: &[(String, Duration)]) -> Option<(String, DateTime<Utc>)> {
    if !rule.defer {
        return None;
    }
    let (to, left) = skipped.iter().max_by_key(|(_, d)| *d).cloned()?;
    Some((to, rule.now + chrono::Duration::from_std(left).unwrap_or(chrono::TimeDelta::MAX)))
}

/// The error a send of `sender` gets when every recipient was inside its window: the one whose window ends first.
fn all_skipped(sender: &str, rule: &CooldownRule, skipped: &[(String, Duration)]) -> Option<MemoryError> {
    let (to, retry_after) = skipped.iter().min_by_key(|(_, d)| *d).cloned()?;
    Some(MemoryError::Cooldown { from: sender.to_owned(), to, cooldown: rule.window, retry_after })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_blocks_until_its_end_and_unreadable_ends_do_not_block() {
        let now = Utc::now();
        let end = crate::clock::fmt_time(now + chrono::Duration::seconds(6));
        let left = window_left(&end, now).unwrap_or_default();
        assert!(left > Duration::from_secs(5) && left <= Duration::from_secs(6), "{left:?}");
        assert_eq!(window_left(&end, now + chrono::Duration::seconds(6)), None);
        assert_eq!(window_left("garbage", now), None);
    }
}

//! The messaging tables (`messages_*`, `reminders_items`): the rows holdfast-memory's router, inboxes and reminder
//! scheduler keep, their queries on both dialects, the transactions that must hold across instances, the inbox hold,
//! the wake-up of other instances' readers and the one-time copy of a file's messages into PostgreSQL.
//!
//! What a row *means* — who may message whom, how long an anti-loop window lasts, whether a reminder waits or a send
//! is refused, how many reminders an agent may have — is decided in holdfast-memory (`holdfast_memory::messaging`).
//! The decisions that must be made inside a transaction are passed in, so that they hold with no other send in
//! between, on any instance:
//! - [`MessageTable::send`] marks a reminder fired (only if still unfired; on PostgreSQL the row is claimed `FOR
//!   UPDATE SKIP LOCKED`, so an instance delivering it makes the others pass it by: [`Sent::AlreadyFired`]),
//!   reserves the recipients' anti-loop windows ([`Windows`]: a window still open, or taken by a concurrent send,
//!   skips its recipient), asks the decision what to do with what it reserved ([`AfterWindows`]) and writes the
//!   message with its inbox and outbox rows — all of it or none;
//! - [`MessageTable::add_reminder`] counts the agent's pending reminders, asks the decision, and inserts, under one
//!   lock;
//! - [`MessageTable::hold_inbox`] makes one instance the only reader of an agent's inbox (always held on SQLite,
//!   whose file one process owns; a session-level advisory lock on PostgreSQL, freed by the server if the holder
//!   dies).
//!
//! ```
//! # async fn demo() -> Result<(), holdfast_store::StoreError> {
//! use holdfast_store::messages::{AfterWindows, MessageTable, NewMessage, Sent, Windows};
//! let table = MessageTable::on_sqlite(&holdfast_store::SqliteDb::memory()?)?;
//! let message = NewMessage {
//!     sender: "alice".into(),
//!     target_type: "agent".into(),
//!     target_id: Some("bob".into()),
//!     content: "hi".into(),
//!     created_at: "2026-11-26T00:00:00.000Z".into(),
//!     recipients: vec!["bob".into()],
//!     via: "direct".into(),
//!     ..NewMessage::default()
//! };
//! // A window of a minute, and the decision: refuse when every recipient is inside theirs.
//! let windows = || Windows {
//!     now: "2026-11-26T00:00:00.000Z".into(),
//!     until: "2026-11-26T00:01:00.000Z".into(),
//!     left: |until: &str| (until > "2026-11-26T00:00:00.000Z").then(|| std::time::Duration::from_secs(60)),
//! };
//! let decide = |delivered: &[String], _skipped: &[(String, std::time::Duration)]| {
//!     if delivered.is_empty() { AfterWindows::Refuse("cooldown") } else { AfterWindows::Store }
//! };
//! let Sent::Written(first) = table.send(message.clone(), Some(windows()), decide).await? else { panic!() };
//! assert_eq!(first.delivered, ["bob"]);
//! assert!(matches!(table.send(message, Some(windows()), decide).await?, Sent::Refused("cooldown")));
//! assert_eq!(table.inbox_pending("bob").await?.len(), 1);
//! # Ok(()) }
//! ```

mod adopt;
mod postgres;
mod sqlite;

pub use postgres::PgMessages;
pub use sqlite::SqliteMessages;

use crate::{PgStore, SqliteDb, Storage, StoreError};
use holdfast_core::tool::BoxFuture;
use std::sync::Arc;
use std::time::Duration;

/// The `LISTEN/NOTIFY` channel on which a stored message names the agents whose inbox got it (PostgreSQL).
pub const INBOX_CHANNEL: &str = "holdfast_inbox";

/// A message to write, as stored. Times are the text holdfast-memory writes (fixed width: text order is time order).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NewMessage {
    /// The sending agent.
    pub sender: String,
    /// The target's kind (`agent`, `group`, `channel`, `user`).
    pub target_type: String,
    /// The target's id.
    pub target_id: Option<String>,
    /// The content.
    pub content: String,
    /// Metadata (JSON text).
    pub metadata: Option<String>,
    /// The sending session.
    pub session_id: Option<String>,
    /// When it was sent.
    pub created_at: String,
    /// Agent-to-agent hops that led to it.
    pub hops: u32,
    /// The agents whose inbox it should reach (before the anti-loop windows are reserved).
    pub recipients: Vec<String>,
    /// How the inbox rows are labelled (`direct`, `group:<g>`, `reminder`, …).
    pub via: String,
    /// A reminder to mark fired in the same transaction: its row id and the firing time.
    pub fires: Option<(i64, String)>,
    /// Also write an outbox row (a message to a user).
    pub outbox: bool,
}

/// The anti-loop windows a send reserves: one per (sender, recipient), in `messages_cooldowns`.
#[derive(Debug, Clone)]
pub struct Windows<L> {
    /// Now, as stored.
    pub now: String,
    /// The end a reserved window gets, as stored.
    pub until: String,
    /// The decision of whether a window is still open: how long the window whose stored end is the argument is open
    /// from `now`, `None` once it has ended (or when it cannot be read). (On PostgreSQL a window is taken only when
    /// its stored end is not after `now`; this then gives the time left of one that was not.)
    pub left: L,
}

/// What the decision passed to [`MessageTable::send`] makes of the windows reserved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AfterWindows<R> {
    /// Write the message.
    Store,
    /// Write nothing (the windows reserved and the reminder's fired mark are rolled back); the reminder the send
    /// fires (if any) waits until `not_before` (`reminders_items.not_before`); the send is [`Sent::Refused`] with
    /// `refusal`.
    Defer {
        /// When the reminder may fire, as stored.
        not_before: String,
        /// What the send returns.
        refusal: R,
    },
    /// Write nothing; the send is [`Sent::Refused`] with this.
    Refuse(R),
}

/// A message written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    /// The `messages_log` row id.
    pub id: i64,
    /// The recipients whose inbox got it, in the order they were given.
    pub delivered: Vec<String>,
    /// Recipients inside their anti-loop window, with how long until it ends.
    pub skipped: Vec<(String, Duration)>,
}

/// What [`MessageTable::send`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sent<R> {
    /// The message and its rows were written.
    Written(Written),
    /// The reminder it fires was already fired, or is being fired by another instance: nothing was written.
    AlreadyFired,
    /// The decision refused it (or deferred the reminder it fires): nothing of the send was written.
    Refused(R),
}

/// An inbox row, as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InboxRow {
    /// `messages_inbox` row id.
    pub inbox_id: i64,
    /// `messages_log` row id.
    pub message_id: i64,
    /// Sender.
    pub sender: String,
    /// How it came.
    pub via: String,
    /// Content.
    pub content: String,
    /// Metadata (JSON text).
    pub metadata: Option<String>,
    /// When it was sent.
    pub created_at: String,
    /// Hops.
    pub hops: u32,
}

/// An outbox row (a message to a user), as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutboxRow {
    /// `messages_log` row id.
    pub message_id: i64,
    /// The sending agent.
    pub agent_id: String,
    /// The sending session.
    pub session_id: Option<String>,
    /// The user.
    pub user_id: Option<String>,
    /// Content.
    pub content: String,
    /// Metadata (JSON text).
    pub metadata: Option<String>,
    /// When it was sent.
    pub created_at: String,
}

/// A reminder, as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReminderRow {
    /// Row id.
    pub id: i64,
    /// The scheduling agent.
    pub agent_id: String,
    /// When it is due.
    pub due_at: String,
    /// The message.
    pub message: String,
    /// The target's kind.
    pub target_type: String,
    /// The target's id.
    pub target_id: Option<String>,
    /// When it was scheduled.
    pub created_at: String,
    /// When it fired.
    pub fired_at: Option<String>,
    /// The scheduling turn's hops.
    pub hops: u32,
    /// The scheduling session.
    pub session_id: Option<String>,
    /// Who started the scheduling turn, when it was not the user.
    pub asked_by: Option<String>,
}

/// A reminder to insert.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NewReminder {
    /// The scheduling agent.
    pub agent_id: String,
    /// When it is due.
    pub due_at: String,
    /// The message.
    pub message: String,
    /// The target's kind.
    pub target_type: String,
    /// The target's id.
    pub target_id: Option<String>,
    /// When it was scheduled.
    pub created_at: String,
    /// The scheduling turn's hops.
    pub hops: u32,
    /// The scheduling session.
    pub session_id: Option<String>,
    /// Who started the scheduling turn, when it was not the user.
    pub asked_by: Option<String>,
}

/// What [`MessageTable::add_reminder`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Added<R> {
    /// Inserted, with this row id.
    Inserted(i64),
    /// The decision refused it; nothing was written.
    Refused(R),
}

/// A channel, as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Channel {
    /// Its webhook.
    pub webhook_url: Option<String>,
    /// Its subscribers, by id.
    pub subscribers: Vec<String>,
}

/// What [`MessageTable::adopt`] did with a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Adopted {
    /// The file's messages and reminders were copied: how many (messages plus reminders).
    Copied {
        /// Messages plus reminders copied.
        rows: usize,
    },
    /// The database already held messages or reminders, so the file's were not copied.
    AlreadyShared {
        /// Undelivered inbox rows and unfired reminders left in the file.
        waiting: usize,
    },
    /// The file holds no message and no reminder.
    Nothing,
}

/// What [`MessageTable::watch_inboxes`] calls: an agent whose inbox got a message, or `None` for every agent.
pub type InboxWake = Arc<dyn Fn(Option<&str>) + Send + Sync>;

/// An exclusive hold on one agent's inbox ([`MessageTable::hold_inbox`]): while it is held, no other instance reads
/// that inbox. Dropping it lets another instance take it.
#[derive(Debug)]
pub struct InboxLock {
    held: Option<postgres::PgHold>,
}

impl InboxLock {
    /// A hold that always holds (one process owns the file).
    fn sole() -> Self {
        Self { held: None }
    }

    /// Whether the hold is still in force (a PostgreSQL connection that died has lost its lock).
    pub fn still_held(&mut self) -> BoxFuture<'_, bool> {
        match self.held.as_mut() {
            None => Box::pin(std::future::ready(true)),
            Some(held) => Box::pin(held.still_held()),
        }
    }

    /// Whether the previous holder may still be in a turn: another instance held the inbox last and did not let it
    /// go cleanly (it died, or lost its connection).
    pub fn previous_may_run(&self) -> bool {
        self.held.as_ref().is_some_and(|held| held.previous_may_run)
    }

    /// Lets go cleanly, saying so to the next holder.
    pub fn release(&mut self) -> BoxFuture<'_, ()> {
        match self.held.as_mut() {
            None => Box::pin(std::future::ready(())),
            Some(held) => Box::pin(held.release()),
        }
    }
}

/// The messaging tables on the process's storage.
#[derive(Debug, Clone)]
pub enum MessageTable {
    /// In the SQLite file (or memory), which one process owns.
    Sqlite(SqliteMessages),
    /// In PostgreSQL, shared by every instance on the database.
    Postgres(PgMessages),
}

/// Dispatches a call to the dialect's table.
macro_rules! on {
    ($self:ident . $method:ident ( $($arg:expr),* )) => {
        match $self {
            Self::Sqlite(s) => s.$method($($arg),*).await,
            Self::Postgres(p) => p.$method($($arg),*).await,
        }
    };
}

impl MessageTable {
    /// The tables in `storage`, migrated first.
    pub async fn open(storage: &Storage) -> Result<Self, StoreError> {
        match storage {
            Storage::Sqlite(db) => Self::on_sqlite(db),
            Storage::Postgres(pg) => Self::on_postgres(pg.clone()).await,
        }
    }

    /// The tables in the SQLite file (or memory) `db`, migrated first.
    pub fn on_sqlite(db: &SqliteDb) -> Result<Self, StoreError> {
        crate::migrate::sqlite(&mut db.lock(), &crate::schema::MESSAGES)?;
        Ok(Self::on_migrated_sqlite(db))
    }

    /// The tables in the SQLite file (or memory) `db`, whose owner has already applied [`crate::schema::MESSAGES`]
    /// (as holdfast-memory's `Database` does when it opens the file).
    pub fn on_migrated_sqlite(db: &SqliteDb) -> Self {
        Self::Sqlite(SqliteMessages { db: db.clone() })
    }

    /// The tables in `pg`'s database, migrated first.
    pub async fn on_postgres(pg: PgStore) -> Result<Self, StoreError> {
        pg.migrate(&crate::schema::MESSAGES).await?;
        Ok(Self::Postgres(PgMessages { pg }))
    }

    /// `sqlite` or `postgres`.
    pub fn dialect(&self) -> &'static str {
        match self {
            Self::Sqlite(_) => "sqlite",
            Self::Postgres(_) => "postgres",
        }
    }

    /// Makes `agent` known, since `at` (idempotent).
    pub async fn register_agent(&self, agent: &str, at: &str) -> Result<(), StoreError> {
        on!(self.register_agent(agent, at))
    }

    /// Every known agent, by id.
    pub async fn agents(&self) -> Result<Vec<String>, StoreError> {
        on!(self.agents())
    }

    /// Whether `agent` is known.
    pub async fn agent_known(&self, agent: &str) -> Result<bool, StoreError> {
        on!(self.agent_known(agent))
    }

    /// Defines (or redefines) a group with exactly these members.
    pub async fn define_group(&self, name: &str, members: &[String]) -> Result<(), StoreError> {
        on!(self.define_group(name, members))
    }

    /// Every (group, member) pair, by group then member.
    pub async fn group_pairs(&self) -> Result<Vec<(String, String)>, StoreError> {
        on!(self.group_pairs())
    }

    /// A group's members, by id (empty: no such group).
    pub async fn group_members(&self, name: &str) -> Result<Vec<String>, StoreError> {
        on!(self.group_members(name))
    }

    /// Defines (or redefines) a channel and its webhook.
    pub async fn define_channel(&self, name: &str, webhook_url: Option<&str>) -> Result<(), StoreError> {
        on!(self.define_channel(name, webhook_url))
    }

    /// Every channel, by name.
    pub async fn channels(&self) -> Result<Vec<String>, StoreError> {
        on!(self.channels())
    }

    /// A channel; `None` when it does not exist.
    pub async fn channel(&self, name: &str) -> Result<Option<Channel>, StoreError> {
        on!(self.channel(name))
    }

    /// Subscribes `agent` to `channel`; `false` when the channel does not exist.
    pub async fn subscribe(&self, channel: &str, agent: &str) -> Result<bool, StoreError> {
        on!(self.subscribe(channel, agent))
    }

    /// Unsubscribes `agent` from `channel`.
    pub async fn unsubscribe(&self, channel: &str, agent: &str) -> Result<(), StoreError> {
        on!(self.unsubscribe(channel, agent))
    }

    /// Sends a message, in one transaction: marks the reminder it fires (`message.fires`) fired, or finds it fired
    /// already ([`Sent::AlreadyFired`]); reserves the recipients' windows (when `windows` is given: a recipient whose
    /// window is still open is skipped) and calls `decide` with the recipients reached and those skipped; then writes
    /// the log row, one inbox row per recipient reached (on PostgreSQL, notifying [`INBOX_CHANNEL`] with each, on
    /// commit) and the outbox row — or, as `decide` says, nothing ([`AfterWindows`]). Without `windows` every
    /// recipient is reached and `decide` is not called.
    pub async fn send<L, D, R>(
        &self,
        message: NewMessage,
        windows: Option<Windows<L>>,
        decide: D,
    ) -> Result<Sent<R>, StoreError>
    where
        L: Fn(&str) -> Option<Duration> + Send + 'static,
        D: FnOnce(&[String], &[(String, Duration)]) -> AfterWindows<R> + Send + 'static,
        R: Send + 'static,
    {
        on!(self.send(message, windows, decide))
    }

    /// The oldest waiting message of `agent`.
    pub async fn inbox_first(&self, agent: &str) -> Result<Option<InboxRow>, StoreError> {
        on!(self.inbox_first(agent))
    }

    /// Takes the oldest waiting message of `agent`: marks it delivered at `at` (on PostgreSQL, one that another
    /// transaction is taking is passed by).
    pub async fn inbox_take(&self, agent: &str, at: &str) -> Result<Option<InboxRow>, StoreError> {
        on!(self.inbox_take(agent, at))
    }

    /// Marks one waiting message of `agent` delivered at `at`.
    pub async fn inbox_ack(&self, agent: &str, inbox_id: i64, at: &str) -> Result<(), StoreError> {
        on!(self.inbox_ack(agent, inbox_id, at))
    }

    /// Every waiting message of `agent`, oldest first.
    pub async fn inbox_pending(&self, agent: &str) -> Result<Vec<InboxRow>, StoreError> {
        on!(self.inbox_pending(agent))
    }

    /// Makes this process the only reader of `agent`'s inbox, waiting at most `wait`; `None` when another instance
    /// held it all that time. (On SQLite, whose file one process owns, it is always held.)
    pub async fn hold_inbox(&self, agent: &str, wait: Duration) -> Result<Option<InboxLock>, StoreError> {
        match self {
            Self::Sqlite(_) => Ok(Some(InboxLock::sole())),
            Self::Postgres(p) => p.hold_inbox(agent, wait).await,
        }
    }

    /// Calls `wake` with an agent's id when another instance stores a message for that agent's inbox, and with
    /// `None` when such news may have been missed, until `wake` is dropped by every other owner (PostgreSQL:
    /// `LISTEN` on [`INBOX_CHANNEL`], on a task of the current Tokio runtime). Nothing to watch on SQLite.
    pub fn watch_inboxes(&self, wake: &InboxWake) -> Result<(), StoreError> {
        match self {
            Self::Sqlite(_) => Ok(()),
            Self::Postgres(p) => p.watch_inboxes(wake),
        }
    }

    /// Messages `agent` sent to users, newest first, at most `limit`.
    pub async fn outbox(&self, agent: &str, limit: usize) -> Result<Vec<OutboxRow>, StoreError> {
        on!(self.outbox(agent, limit))
    }

    /// Under one lock (per agent on PostgreSQL): counts `reminder.agent_id`'s pending reminders, calls `refuse` with
    /// the count, and inserts the reminder unless it returns a refusal.
    pub async fn add_reminder<R: Send + 'static>(
        &self,
        reminder: NewReminder,
        refuse: impl FnOnce(u64) -> Option<R> + Send + 'static,
    ) -> Result<Added<R>, StoreError> {
        on!(self.add_reminder(reminder, refuse))
    }

    /// `agent`'s reminders, soonest first (fired ones only when asked).
    pub async fn reminders(&self, agent: &str, include_fired: bool) -> Result<Vec<ReminderRow>, StoreError> {
        on!(self.reminders(agent, include_fired))
    }

    /// Deletes a pending reminder of `agent`; whether one was.
    pub async fn cancel_reminder(&self, agent: &str, id: i64) -> Result<bool, StoreError> {
        on!(self.cancel_reminder(agent, id))
    }

    /// Deletes every pending reminder of an agent not in `agents`; how many.
    pub async fn cancel_reminders_of_others(&self, agents: &[String]) -> Result<u64, StoreError> {
        on!(self.cancel_reminders_of_others(agents))
    }

    /// How many pending reminders agents not in `agents` have.
    pub async fn count_reminders_of_others(&self, agents: &[String]) -> Result<u64, StoreError> {
        on!(self.count_reminders_of_others(agents))
    }

    /// Every unfired reminder due at `now` or before (and past its `not_before`), oldest due first: of the agents in
    /// `agents`, or of every agent (`None`).
    pub async fn due_reminders(&self, now: &str, agents: Option<&[String]>) -> Result<Vec<ReminderRow>, StoreError> {
        on!(self.due_reminders(now, agents))
    }

    /// When the next unfired reminder (of `agents`, or of every agent) may fire.
    pub async fn next_due(&self, agents: Option<&[String]>) -> Result<Option<String>, StoreError> {
        on!(self.next_due(agents))
    }

    /// Copies the messages, inboxes, outbox, directory, anti-loop windows and reminders kept in the SQLite file
    /// `file` (its tables migrated) into this database, once: when it holds no message and no reminder yet (under a
    /// lock, so instances starting together copy once), keeping their ids, so a `msg_7` or `rem_3` an agent noted
    /// still names the same thing. The file keeps its rows. Only a PostgreSQL table adopts: on SQLite this is a
    /// [`StoreError::Config`].
    pub async fn adopt(&self, file: &SqliteDb) -> Result<Adopted, StoreError> {
        match self {
            Self::Sqlite(_) => {
                Err(StoreError::Config("messages are copied from a SQLite file into PostgreSQL only".into()))
            }
            Self::Postgres(p) => p.adopt(file).await,
        }
    }
}

#[cfg(test)]
mod tests;

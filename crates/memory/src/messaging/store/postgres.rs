//! Messages and reminders in PostgreSQL, shared by every instance on the database, over holdfast-store's table
//! ([`holdfast_store::messages`] says what makes its transactions correct across instances).
//!
//! A send on another instance wakes this one's inbox readers: the transaction that stores a message notifies
//! `holdfast_inbox` with each recipient's id (delivered on commit), and each instance listens on it
//! ([`MessageStore::watch_inboxes`]); readers also look every [`MessageStore::poll_interval`] in case one was missed.

use super::table::{TableHold, over_table};
use super::{
    ChannelRow, InboxHold, InboxRow, InboxWake, MessageStore, NewMessage, NewReminder, OutboxRow, ReminderRow,
    StoredMessage,
};
use crate::db::Database;
use crate::error::Result;
use holdfast_core::tool::BoxFuture;
use holdfast_store::PgStore;
use holdfast_store::messages::{Adopted, MessageTable};
use std::time::Duration;

/// How often an inbox reader looks for messages other instances stored, when they are not announced
/// ([`PgMessageStore::poll_only`]).
const POLL: Duration = Duration::from_secs(1);

/// How often an inbox reader looks anyway when stores are announced (`LISTEN`): a safety net, since a listener that
/// reconnects wakes every reader itself.
const POLL_LISTENING: Duration = Duration::from_secs(15);

/// Messages and reminders in PostgreSQL. Clones share the pool.
#[derive(Debug, Clone)]
pub struct PgMessageStore {
    table: MessageTable,
    /// Inbox readers are woken by `LISTEN` (false: they poll every [`POLL`] alone).
    listen: bool,
}

impl PgMessageStore {
    /// The store on `pg`'s pool, migrated.
    pub async fn open(pg: PgStore) -> Result<Self> {
        Ok(Self { table: MessageTable::on_postgres(pg).await?, listen: true })
    }

    /// Inbox readers find other instances' messages by looking every second, without `LISTEN` (for a connection
    /// pooler that does not keep `LISTEN`, such as PgBouncer in transaction mode; and the benchmark's baseline).
    #[must_use]
    pub fn poll_only(mut self) -> Self {
        self.listen = false;
        self
    }

    /// Copies the messages, inboxes, outbox, directory, anti-loop windows and reminders an instance kept in its
    /// SQLite file (`db`) into this database, once: when it holds no message and no reminder yet (under a lock, so
    /// instances starting together copy once), keeping their ids. The file keeps its rows.
    pub async fn adopt(&self, db: &Database) -> Result<MessagesAdopted> {
        Ok(match self.table.adopt(db.sqlite()).await? {
            Adopted::Copied { rows } => MessagesAdopted::Copied { rows },
            Adopted::AlreadyShared { waiting } => MessagesAdopted::AlreadyShared { waiting },
            Adopted::Nothing => MessagesAdopted::Nothing,
        })
    }
}

/// What [`PgMessageStore::adopt`] did with an instance's file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MessagesAdopted {
    /// The file's messages and reminders were copied: how many (messages plus reminders).
    Copied {
        /// Messages plus reminders copied.
        rows: usize,
    },
    /// The database already held messages or reminders, so the file's were not copied; `waiting` is what the file
    /// leaves behind still pending (undelivered inbox rows and unfired reminders).
    AlreadyShared {
        /// Undelivered inbox rows and unfired reminders left in the file.
        waiting: usize,
    },
    /// The file holds no message and no reminder.
    Nothing,
}

impl MessageStore for PgMessageStore {
    over_table!();

    fn hold_inbox<'a>(&'a self, agent: &'a str, wait: Duration) -> BoxFuture<'a, Result<Option<InboxHold>>> {
        Box::pin(
            async move { Ok(self.table.hold_inbox(agent, wait).await?.map(|held| InboxHold::new(TableHold(held)))) },
        )
    }

    fn poll_interval(&self) -> Option<Duration> {
        Some(if self.listen { POLL_LISTENING } else { POLL })
    }

    fn watch_inboxes(&self, wake: InboxWake) -> Result<()> {
        if !self.listen {
            return Ok(());
        }
        Ok(self.table.watch_inboxes(&wake)?)
    }
}

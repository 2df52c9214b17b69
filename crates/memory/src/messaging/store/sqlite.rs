//! Messages and reminders in the SQLite file ([`crate::Database`]; its migrations create the tables), over
//! holdfast-store's table. One process owns the file: the inbox needs no hold.

use super::table::over_table;
use super::{
    ChannelRow, InboxHold, InboxRow, MessageStore, NewMessage, NewReminder, OutboxRow, ReminderRow, StoredMessage,
};
use crate::db::Database;
use crate::error::Result;
use holdfast_core::tool::BoxFuture;
use holdfast_store::messages::MessageTable;
use std::time::Duration;

/// Messages and reminders in the SQLite file. Clones share the connection.
#[derive(Debug, Clone)]
pub struct SqliteMessageStore {
    table: MessageTable,
}

impl SqliteMessageStore {
    /// The store on `db` (whose opening applied the messages' migrations).
    pub fn new(db: Database) -> Self {
        Self { table: MessageTable::on_migrated_sqlite(db.sqlite()) }
    }
}

impl MessageStore for SqliteMessageStore {
    over_table!();

    fn hold_inbox<'a>(&'a self, _agent: &'a str, _wait: Duration) -> BoxFuture<'a, Result<Option<InboxHold>>> {
        // One process owns the file: its inboxes need no hold.
        Box::pin(std::future::ready(Ok(Some(InboxHold::sole()))))
    }

    fn poll_interval(&self) -> Option<Duration> {
        None
    }
}

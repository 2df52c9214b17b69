//! One agent's durable inbox: messages stay queued, across restarts, until the agent takes them.
//!
//! On a store several instances share, one instance at a time reads an agent's inbox: the reader takes
//! [`Inbox::hold`] first. Sends made on other instances wake it too, when the store announces them
//! ([`MessageStore::watch_inboxes`](super::store::MessageStore::watch_inboxes): `LISTEN/NOTIFY` on PostgreSQL); it
//! also looks again every [`MessageStore::poll_interval`](super::store::MessageStore::poll_interval) in case an
//! announcement was missed.

use super::router::MessageRouter;
use super::store::{InboxHold, to_inbox_message};
use super::types::InboxMessage;
use crate::clock::fmt_time;
use crate::error::Result;
use std::time::Duration;

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

impl Inbox {
    /// `agent`'s inbox, read through `router`.
    pub(super) fn new(router: MessageRouter, agent: String) -> Self {
        Self { router, agent }
    }

    /// The agent.
    pub fn agent(&self) -> &str {
        &self.agent
    }

    /// Takes the oldest waiting message, if any (marking it delivered).
    pub async fn try_recv(&self) -> Result<Option<InboxMessage>> {
        let (agent, now) = (self.agent.clone(), fmt_time(self.router.now()));
        self.router.store().inbox_take(&agent, &now).await?.map(to_inbox_message).transpose()
    }

    /// The oldest waiting message, without taking it: [`Inbox::ack`] takes it once it has been handled, so a
    /// message being handled when the process dies is handled again after a restart (at least once).
    pub async fn peek(&self) -> Result<Option<InboxMessage>> {
        let agent = self.agent.clone();
        self.router.store().inbox_first(&agent).await?.map(to_inbox_message).transpose()
    }

    /// Waits until a message may have been stored for the agent: a send in this process wakes it at once, one on
    /// another instance sharing the store when the store announces it, and either way it looks again within the
    /// store's poll interval.
    async fn wait(&self, notified: tokio::sync::futures::Notified<'_>) {
        match self.router.store().poll_interval() {
            Some(every) => {
                let _ = tokio::time::timeout(every, notified).await;
            }
            None => notified.await,
        }
    }

    /// Waits for a message and returns it without taking it (see [`Inbox::peek`]).
    pub async fn next(&self) -> Result<InboxMessage> {
        let notify = self.router.notifier(&self.agent);
        loop {
            let notified = notify.notified();
            if let Some(m) = self.peek().await? {
                return Ok(m);
            }
            self.wait(notified).await;
        }
    }

    /// Takes a message [`Inbox::peek`] returned: it is delivered and will not be returned again.
    pub async fn ack(&self, inbox_id: i64) -> Result<()> {
        let (agent, now) = (self.agent.clone(), fmt_time(self.router.now()));
        self.router.store().inbox_ack(&agent, inbox_id, &now).await
    }

    /// Waits for the next message and takes it.
    pub async fn recv(&self) -> Result<InboxMessage> {
        let notify = self.router.notifier(&self.agent);
        loop {
            let notified = notify.notified();
            if let Some(m) = self.try_recv().await? {
                return Ok(m);
            }
            self.wait(notified).await;
        }
    }

    /// Waiting messages, oldest first, without taking them.
    pub async fn pending(&self) -> Result<Vec<InboxMessage>> {
        let agent = self.agent.clone();
        self.router.store().inbox_pending(&agent).await?.into_iter().map(to_inbox_message).collect()
    }

    /// Takes every waiting message, oldest first.
    pub async fn drain(&self) -> Result<Vec<InboxMessage>> {
        let mut out = Vec::new();
        while let Some(m) = self.try_recv().await? {
            out.push(m);
        }
        Ok(out)
    }

    /// Whether other instances share the store (then they may write this inbox, and read it when this process does
    /// not hold it).
    pub fn is_shared(&self) -> bool {
        self.router.store().poll_interval().is_some()
    }

    /// Makes this process the only reader of the inbox among the instances sharing the store, waiting at most
    /// `wait`; `None` when another instance held it all that time. Keep the hold while reading, and check
    /// [`InboxHold::still_held`] before each message (a lost database connection loses it).
    pub async fn hold(&self, wait: Duration) -> Result<Option<InboxHold>> {
        let agent = self.agent.clone();
        self.router.store().hold_inbox(&agent, wait).await
    }
}

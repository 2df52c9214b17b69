//! One agent's durable inbox: messages stay queued, across restarts, until the agent takes them.

use super::router::MessageRouter;
use super::types::InboxMessage;
use super::{bad_time, msg_id, parse_metadata};
use crate::clock::{fmt_time, parse_time};
use crate::error::Result;
use rusqlite::{OptionalExtension, params};

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
        self.router
            .database()
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
            .database()
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
        let (agent, now) = (self.agent.clone(), fmt_time(self.router.now()));
        self.router
            .database()
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
            .database()
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

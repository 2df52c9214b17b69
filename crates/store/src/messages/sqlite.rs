//! The messaging tables in the SQLite file, on the process's one writing connection ([`crate::SqliteDb`], shared
//! with the other tables' owners), used from tokio's blocking pool. One process owns the file: a send, a reminder's
//! insertion, an inbox take and a group's redefinition are each one `IMMEDIATE` transaction (the file's write lock),
//! and the inbox needs no hold.

use super::{
    Added, AfterWindows, Channel, InboxRow, NewMessage, NewReminder, OutboxRow, ReminderRow, Sent, Windows, Written,
};
use crate::{SqliteDb, StoreError};
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use std::time::Duration;

/// The messaging tables in the SQLite file (or memory). Clones share the connection.
#[derive(Debug, Clone)]
pub struct SqliteMessages {
    pub(super) db: SqliteDb,
}

/// The first column of every row of `sql`.
fn strings<P: rusqlite::Params>(c: &Connection, sql: &str, p: P) -> rusqlite::Result<Vec<String>> {
    let mut stmt = c.prepare_cached(sql)?;
    let rows = stmt.query_map(p, |r| r.get::<_, String>(0))?;
    rows.collect()
}

/// Inbox rows with their message, read in [`InboxRow`]'s order (both dialects).
pub(super) const INBOX_SELECT: &str = "SELECT i.id, l.id, l.sender, i.via, l.content, l.metadata, l.created_at, l.hops
     FROM messages_inbox i JOIN messages_log l ON l.id = i.message_id";

fn inbox_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<InboxRow> {
    Ok(InboxRow {
        inbox_id: r.get(0)?,
        message_id: r.get(1)?,
        sender: r.get(2)?,
        via: r.get(3)?,
        content: r.get(4)?,
        metadata: r.get(5)?,
        created_at: r.get(6)?,
        hops: r.get(7)?,
    })
}

/// Reminders, read in [`ReminderRow`]'s order (both dialects).
pub(super) const REMINDER_SELECT: &str = "SELECT id, agent_id, due_at, message, target_type, target_id, created_at, fired_at, hops, session_id, asked_by FROM reminders_items";

pub(super) fn reminder_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<ReminderRow> {
    Ok(ReminderRow {
        id: r.get(0)?,
        agent_id: r.get(1)?,
        due_at: r.get(2)?,
        message: r.get(3)?,
        target_type: r.get(4)?,
        target_id: r.get(5)?,
        created_at: r.get(6)?,
        fired_at: r.get(7)?,
        hops: r.get(8)?,
        session_id: r.get(9)?,
        asked_by: r.get(10)?,
    })
}

/// `agent_id IN (…)` with one placeholder per agent from `?first` on — bound, so no agent name is ever part of the
/// SQL text; every agent when `None`, none when empty.
fn of(agents: Option<&[String]>, first: usize) -> String {
    match agents {
        None => "1 = 1".to_owned(),
        Some([]) => "1 = 0".to_owned(),
        Some(agents) => format!("agent_id IN ({})", marks(agents.len(), first)),
    }
}

/// `agent_id NOT IN (…)`, as [`of`]: every agent when `agents` is empty.
fn not_of(agents: &[String], first: usize) -> String {
    if agents.is_empty() { "1 = 1".to_owned() } else { format!("agent_id NOT IN ({})", marks(agents.len(), first)) }
}

fn marks(n: usize, first: usize) -> String {
    (first..first + n).map(|i| format!("?{i}")).collect::<Vec<_>>().join(", ")
}

/// The recipients a reservation reached, and those inside their window with how long until it ends.
type Reserved = (Vec<String>, Vec<(String, Duration)>);

/// Reserves the windows of `m`'s recipients in `tx`: the recipients it reached and those it skipped.
fn reserve<L: Fn(&str) -> Option<Duration>>(
    tx: &Connection,
    m: &NewMessage,
    w: &Windows<L>,
) -> rusqlite::Result<Reserved> {
    let (mut delivered, mut skipped) = (Vec::new(), Vec::new());
    for to in &m.recipients {
        let current: Option<String> = tx
            .query_row(
                "SELECT until_at FROM messages_cooldowns WHERE sender = ?1 AND recipient = ?2",
                params![m.sender, to],
                |r| r.get(0),
            )
            .optional()?;
        if let Some(left) = current.as_deref().and_then(&w.left) {
            skipped.push((to.clone(), left));
            continue;
        }
        tx.execute(
            "INSERT INTO messages_cooldowns (sender, recipient, until_at) VALUES (?1, ?2, ?3)
             ON CONFLICT (sender, recipient) DO UPDATE SET until_at = excluded.until_at",
            params![m.sender, to, w.until],
        )?;
        delivered.push(to.clone());
    }
    Ok((delivered, skipped))
}

impl SqliteMessages {
    /// Runs `f` on the writing connection, on tokio's blocking pool.
    async fn on_writer<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Connection) -> rusqlite::Result<T> + Send + 'static,
    ) -> Result<T, StoreError> {
        Ok(self.db.write(f).await??)
    }

    pub(super) async fn register_agent(&self, agent: &str, at: &str) -> Result<(), StoreError> {
        let (agent, at) = (agent.to_owned(), at.to_owned());
        self.on_writer(move |c| {
            c.execute(
                "INSERT OR IGNORE INTO messages_agents (agent_id, created_at) VALUES (?1, ?2)",
                params![agent, at],
            )
            .map(drop)
        })
        .await
    }

    pub(super) async fn agents(&self) -> Result<Vec<String>, StoreError> {
        self.on_writer(|c| strings(c, "SELECT agent_id FROM messages_agents ORDER BY agent_id", [])).await
    }

    pub(super) async fn agent_known(&self, agent: &str) -> Result<bool, StoreError> {
        let agent = agent.to_owned();
        self.on_writer(move |c| {
            Ok(c.query_row("SELECT 1 FROM messages_agents WHERE agent_id = ?1", [agent], |_| Ok(()))
                .optional()?
                .is_some())
        })
        .await
    }

    pub(super) async fn define_group(&self, name: &str, members: &[String]) -> Result<(), StoreError> {
        let (name, members) = (name.to_owned(), members.to_vec());
        self.on_writer(move |c| {
            let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
            tx.execute("DELETE FROM messages_groups WHERE name = ?1", [&name])?;
            for m in &members {
                tx.execute("INSERT OR IGNORE INTO messages_groups (name, member) VALUES (?1, ?2)", params![name, m])?;
            }
            tx.commit()
        })
        .await
    }

    pub(super) async fn group_pairs(&self) -> Result<Vec<(String, String)>, StoreError> {
        self.on_writer(|c| {
            let mut stmt = c.prepare_cached("SELECT name, member FROM messages_groups ORDER BY name, member")?;
            let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
            rows.collect()
        })
        .await
    }

    pub(super) async fn group_members(&self, name: &str) -> Result<Vec<String>, StoreError> {
        let name = name.to_owned();
        self.on_writer(move |c| {
            strings(c, "SELECT member FROM messages_groups WHERE name = ?1 ORDER BY member", [name])
        })
        .await
    }

    pub(super) async fn define_channel(&self, name: &str, webhook_url: Option<&str>) -> Result<(), StoreError> {
        let (name, webhook_url) = (name.to_owned(), webhook_url.map(str::to_owned));
        self.on_writer(move |c| {
            c.execute(
                "INSERT INTO messages_channels (name, webhook_url) VALUES (?1, ?2)
                 ON CONFLICT (name) DO UPDATE SET webhook_url = excluded.webhook_url",
                params![name, webhook_url],
            )
            .map(drop)
        })
        .await
    }

    pub(super) async fn channels(&self) -> Result<Vec<String>, StoreError> {
        self.on_writer(|c| strings(c, "SELECT name FROM messages_channels ORDER BY name", [])).await
    }

    pub(super) async fn channel(&self, name: &str) -> Result<Option<Channel>, StoreError> {
        let name = name.to_owned();
        self.on_writer(move |c| {
            let webhook: Option<Option<String>> = c
                .query_row("SELECT webhook_url FROM messages_channels WHERE name = ?1", [&name], |r| r.get(0))
                .optional()?;
            let Some(webhook_url) = webhook else { return Ok(None) };
            let subscribers =
                strings(c, "SELECT agent_id FROM messages_subscriptions WHERE channel = ?1 ORDER BY agent_id", [name])?;
            Ok(Some(Channel { webhook_url, subscribers }))
        })
        .await
    }

    pub(super) async fn subscribe(&self, channel: &str, agent: &str) -> Result<bool, StoreError> {
        let (channel, agent) = (channel.to_owned(), agent.to_owned());
        self.on_writer(move |c| {
            let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
            if tx
                .query_row("SELECT 1 FROM messages_channels WHERE name = ?1", [&channel], |_| Ok(()))
                .optional()?
                .is_none()
            {
                return Ok(false);
            }
            tx.execute(
                "INSERT OR IGNORE INTO messages_subscriptions (channel, agent_id) VALUES (?1, ?2)",
                params![channel, agent],
            )?;
            tx.commit()?;
            Ok(true)
        })
        .await
    }

    pub(super) async fn unsubscribe(&self, channel: &str, agent: &str) -> Result<(), StoreError> {
        let (channel, agent) = (channel.to_owned(), agent.to_owned());
        self.on_writer(move |c| {
            c.execute(
                "DELETE FROM messages_subscriptions WHERE channel = ?1 AND agent_id = ?2",
                params![channel, agent],
            )
            .map(drop)
        })
        .await
    }

    pub(super) async fn send<L, D, R>(
        &self,
        m: NewMessage,
        windows: Option<Windows<L>>,
        decide: D,
    ) -> Result<Sent<R>, StoreError>
    where
        L: Fn(&str) -> Option<Duration> + Send + 'static,
        D: FnOnce(&[String], &[(String, Duration)]) -> AfterWindows<R> + Send + 'static,
        R: Send + 'static,
    {
        self.on_writer(move |c| {
            let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
            if let Some((reminder, at)) = &m.fires
                && tx.execute(
                    "UPDATE reminders_items SET fired_at = ?1 WHERE id = ?2 AND fired_at IS NULL",
                    params![at, reminder],
                )? == 0
            {
                return Ok(Sent::AlreadyFired);
            }
            let (delivered, skipped) = match &windows {
                Some(w) => reserve(&tx, &m, w)?,
                None => (m.recipients.clone(), Vec::new()),
            };
            if windows.is_some() {
                match decide(&delivered, &skipped) {
                    AfterWindows::Store => {}
                    AfterWindows::Refuse(refusal) => return Ok(Sent::Refused(refusal)),
                    AfterWindows::Defer { not_before, refusal } => {
                        // Nothing of this send is kept (the windows it reserved, the fired mark): only the wait.
                        drop(tx);
                        if let Some((reminder, _)) = &m.fires {
                            c.execute(
                                "UPDATE reminders_items SET not_before = ?1 WHERE id = ?2 AND fired_at IS NULL",
                                params![not_before, reminder],
                            )?;
                        }
                        return Ok(Sent::Refused(refusal));
                    }
                }
            }
            let id: i64 = tx.query_row(
                "INSERT INTO messages_log (sender, target_type, target_id, content, metadata, session_id, created_at, hops)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) RETURNING id",
                params![m.sender, m.target_type, m.target_id, m.content, m.metadata, m.session_id, m.created_at, m.hops],
                |r| r.get(0),
            )?;
            for agent in &delivered {
                tx.execute(
                    "INSERT INTO messages_inbox (message_id, agent_id, via) VALUES (?1, ?2, ?3)",
                    params![id, agent, m.via],
                )?;
            }
            if m.outbox {
                tx.execute(
                    "INSERT INTO messages_outbox (message_id, agent_id, session_id, user_id) VALUES (?1, ?2, ?3, ?4)",
                    params![id, m.sender, m.session_id, m.target_id],
                )?;
            }
            tx.commit()?;
            Ok(Sent::Written(Written { id, delivered, skipped }))
        })
        .await
    }

    pub(super) async fn inbox_first(&self, agent: &str) -> Result<Option<InboxRow>, StoreError> {
        let agent = agent.to_owned();
        self.on_writer(move |c| {
            let sql = format!("{INBOX_SELECT} WHERE i.agent_id = ?1 AND i.delivered_at IS NULL ORDER BY i.id LIMIT 1");
            c.prepare_cached(&sql)?.query_row([agent], inbox_row).optional()
        })
        .await
    }

    pub(super) async fn inbox_take(&self, agent: &str, at: &str) -> Result<Option<InboxRow>, StoreError> {
        let (agent, at) = (agent.to_owned(), at.to_owned());
        self.on_writer(move |c| {
            let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let sql = format!("{INBOX_SELECT} WHERE i.agent_id = ?1 AND i.delivered_at IS NULL ORDER BY i.id LIMIT 1");
            let Some(row) = tx.query_row(&sql, [agent], inbox_row).optional()? else { return Ok(None) };
            tx.execute("UPDATE messages_inbox SET delivered_at = ?1 WHERE id = ?2", params![at, row.inbox_id])?;
            tx.commit()?;
            Ok(Some(row))
        })
        .await
    }

    pub(super) async fn inbox_ack(&self, agent: &str, inbox_id: i64, at: &str) -> Result<(), StoreError> {
        let (agent, at) = (agent.to_owned(), at.to_owned());
        self.on_writer(move |c| {
            c.execute(
                "UPDATE messages_inbox SET delivered_at = ?1 WHERE id = ?2 AND agent_id = ?3 AND delivered_at IS NULL",
                params![at, inbox_id, agent],
            )
            .map(drop)
        })
        .await
    }

    pub(super) async fn inbox_pending(&self, agent: &str) -> Result<Vec<InboxRow>, StoreError> {
        let agent = agent.to_owned();
        self.on_writer(move |c| {
            let sql = format!("{INBOX_SELECT} WHERE i.agent_id = ?1 AND i.delivered_at IS NULL ORDER BY i.id");
            let mut stmt = c.prepare_cached(&sql)?;
            stmt.query_map([agent], inbox_row)?.collect()
        })
        .await
    }

    pub(super) async fn outbox(&self, agent: &str, limit: usize) -> Result<Vec<OutboxRow>, StoreError> {
        let agent = agent.to_owned();
        self.on_writer(move |c| {
            let mut stmt = c.prepare_cached(
                "SELECT l.id, o.agent_id, o.session_id, o.user_id, l.content, l.metadata, l.created_at
                 FROM messages_outbox o JOIN messages_log l ON l.id = o.message_id
                 WHERE o.agent_id = ?1 ORDER BY o.id DESC LIMIT ?2",
            )?;
            let limit = i64::try_from(limit).unwrap_or(i64::MAX);
            let rows = stmt.query_map(params![agent, limit], |r| {
                Ok(OutboxRow {
                    message_id: r.get(0)?,
                    agent_id: r.get(1)?,
                    session_id: r.get(2)?,
                    user_id: r.get(3)?,
                    content: r.get(4)?,
                    metadata: r.get(5)?,
                    created_at: r.get(6)?,
                })
            })?;
            rows.collect()
        })
        .await
    }

    pub(super) async fn add_reminder<R: Send + 'static>(
        &self,
        r: NewReminder,
        refuse: impl FnOnce(u64) -> Option<R> + Send + 'static,
    ) -> Result<Added<R>, StoreError> {
        self.on_writer(move |c| {
            // Counted and inserted in one write transaction: concurrent calls cannot pass the cap together.
            let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let pending: i64 = tx.query_row(
                "SELECT count(*) FROM reminders_items WHERE agent_id = ?1 AND fired_at IS NULL",
                [&r.agent_id],
                |row| row.get(0),
            )?;
            if let Some(refusal) = refuse(u64::try_from(pending).unwrap_or_default()) {
                return Ok(Added::Refused(refusal));
            }
            let id = tx.query_row(
                "INSERT INTO reminders_items
                     (agent_id, due_at, message, target_type, target_id, created_at, hops, session_id, asked_by)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) RETURNING id",
                params![
                    r.agent_id,
                    r.due_at,
                    r.message,
                    r.target_type,
                    r.target_id,
                    r.created_at,
                    r.hops,
                    r.session_id,
                    r.asked_by
                ],
                |row| row.get::<_, i64>(0),
            )?;
            tx.commit()?;
            Ok(Added::Inserted(id))
        })
        .await
    }

    pub(super) async fn reminders(&self, agent: &str, include_fired: bool) -> Result<Vec<ReminderRow>, StoreError> {
        let agent = agent.to_owned();
        self.on_writer(move |c| {
            let filter = if include_fired { "" } else { " AND fired_at IS NULL" };
            let mut stmt =
                c.prepare_cached(&format!("{REMINDER_SELECT} WHERE agent_id = ?1{filter} ORDER BY due_at, id"))?;
            stmt.query_map([agent], reminder_row)?.collect()
        })
        .await
    }

    pub(super) async fn cancel_reminder(&self, agent: &str, id: i64) -> Result<bool, StoreError> {
        let agent = agent.to_owned();
        self.on_writer(move |c| {
            Ok(c.execute(
                "DELETE FROM reminders_items WHERE id = ?1 AND agent_id = ?2 AND fired_at IS NULL",
                params![id, agent],
            )? > 0)
        })
        .await
    }

    pub(super) async fn cancel_reminders_of_others(&self, agents: &[String]) -> Result<u64, StoreError> {
        let agents = agents.to_vec();
        self.on_writer(move |c| {
            let sql = format!("DELETE FROM reminders_items WHERE fired_at IS NULL AND {}", not_of(&agents, 1));
            let n = c.execute(&sql, rusqlite::params_from_iter(agents.iter()))?;
            Ok(u64::try_from(n).unwrap_or(u64::MAX))
        })
        .await
    }

    pub(super) async fn count_reminders_of_others(&self, agents: &[String]) -> Result<u64, StoreError> {
        let agents = agents.to_vec();
        self.on_writer(move |c| {
            let sql = format!("SELECT count(*) FROM reminders_items WHERE fired_at IS NULL AND {}", not_of(&agents, 1));
            let n: i64 = c.query_row(&sql, rusqlite::params_from_iter(agents.iter()), |r| r.get(0))?;
            Ok(u64::try_from(n).unwrap_or_default())
        })
        .await
    }

    pub(super) async fn due_reminders(
        &self,
        now: &str,
        agents: Option<&[String]>,
    ) -> Result<Vec<ReminderRow>, StoreError> {
        let (now, agents) = (now.to_owned(), agents.map(<[String]>::to_vec));
        self.on_writer(move |c| {
            let agents = agents.as_deref();
            let sql = format!(
                "{REMINDER_SELECT} WHERE fired_at IS NULL AND due_at <= ?1 AND (not_before IS NULL OR not_before <= ?1)
                 AND {} ORDER BY due_at, id",
                of(agents, 2)
            );
            let params = std::iter::once(now.as_str()).chain(agents.unwrap_or_default().iter().map(String::as_str));
            let mut stmt = c.prepare_cached(&sql)?;
            stmt.query_map(rusqlite::params_from_iter(params), reminder_row)?.collect()
        })
        .await
    }

    pub(super) async fn next_due(&self, agents: Option<&[String]>) -> Result<Option<String>, StoreError> {
        let agents = agents.map(<[String]>::to_vec);
        self.on_writer(move |c| {
            let agents = agents.as_deref();
            let sql = format!(
                "SELECT min(coalesce(not_before, due_at)) FROM reminders_items WHERE fired_at IS NULL AND {}",
                of(agents, 1)
            );
            c.query_row(&sql, rusqlite::params_from_iter(agents.unwrap_or_default().iter()), |r| r.get(0))
        })
        .await
    }
}

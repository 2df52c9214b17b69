//! Messages and reminders in the SQLite file ([`crate::Database`]; its migrations create the tables). One process
//! owns the file: every statement goes through its one connection, and the inbox needs no hold.

use super::{
    ChannelRow, CooldownRule, InboxHold, InboxRow, MessageStore, NewMessage, NewReminder, OutboxRow, ReminderRow,
    Reservation, StoredMessage, all_skipped, deferral, window_left,
};
use crate::clock::fmt_time;
use crate::db::Database;
use crate::error::{MemoryError, Result};
use crate::messaging::types::TargetType;
use holdfast_core::tool::BoxFuture;
use rusqlite::{Connection, OptionalExtension, Transaction, TransactionBehavior, params};
use std::time::Duration;

/// Messages and reminders in the SQLite file. Clones share the connection.
#[derive(Debug, Clone)]
pub struct SqliteMessageStore {
    db: Database,
}

impl SqliteMessageStore {
    /// The store on `db`.
    pub fn new(db: Database) -> Self {
        Self { db }
    }
}

/// The first column of every row of `sql`.
fn strings<P: rusqlite::Params>(c: &Connection, sql: &str, p: P) -> Result<Vec<String>> {
    let mut stmt = c.prepare_cached(sql)?;
    let rows = stmt.query_map(p, |r| r.get::<_, String>(0))?;
    Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
}

pub(super) const INBOX_SELECT: &str = "SELECT i.id, l.id, l.sender, i.via, l.content, l.metadata, l.created_at, l.hops
     FROM messages_inbox i JOIN messages_log l ON l.id = i.message_id";

fn inbox_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<InboxRow> {
    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?, r.get(7)?))
}

pub(super) const REMINDER_SELECT: &str = "SELECT id, agent_id, due_at, message, target_type, target_id, created_at, fired_at, hops, session_id FROM reminders_items";

fn reminder_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<ReminderRow> {
    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?, r.get(7)?, r.get(8)?, r.get(9)?))
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

/// Reserves the windows of `m`'s recipients in `tx`: the recipients it reached and those it skipped.
fn reserve(tx: &Transaction<'_>, m: &NewMessage, rule: &CooldownRule) -> Result<Reservation> {
    let until = fmt_time(rule.now + chrono::Duration::from_std(rule.window).unwrap_or(chrono::TimeDelta::MAX));
    let (mut delivered, mut skipped) = (Vec::new(), Vec::new());
    for to in &m.recipients {
        let current: Option<String> = tx
            .query_row(
                "SELECT until_at FROM messages_cooldowns WHERE sender = ?1 AND recipient = ?2",
                params![m.sender, to],
                |r| r.get(0),
            )
            .optional()?;
        if let Some(left) = current.as_deref().and_then(|u| window_left(u, rule.now)) {
            skipped.push((to.clone(), left));
            continue;
        }
        tx.execute(
            "INSERT INTO messages_cooldowns (sender, recipient, until_at) VALUES (?1, ?2, ?3)
             ON CONFLICT (sender, recipient) DO UPDATE SET until_at = excluded.until_at",
            params![m.sender, to, until],
        )?;
        delivered.push(to.clone());
    }
    Ok((delivered, skipped))
}

/// The statements, run on the current thread (a blocking context).
impl SqliteMessageStore {
    fn now_register_agent(&self, agent: &str, at: &str) -> Result<()> {
        self.db.with_conn(|c| {
            c.execute(
                "INSERT OR IGNORE INTO messages_agents (agent_id, created_at) VALUES (?1, ?2)",
                params![agent, at],
            )?;
            Ok(())
        })
    }

    fn now_agents(&self) -> Result<Vec<String>> {
        self.db.with_conn(|c| strings(c, "SELECT agent_id FROM messages_agents ORDER BY agent_id", []))
    }

    fn now_agent_known(&self, agent: &str) -> Result<bool> {
        self.db.with_conn(|c| {
            Ok(c.query_row("SELECT 1 FROM messages_agents WHERE agent_id = ?1", [agent], |_| Ok(()))
                .optional()?
                .is_some())
        })
    }

    fn now_define_group(&self, name: &str, members: &[String]) -> Result<()> {
        self.db.with_conn(|c| {
            let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
            tx.execute("DELETE FROM messages_groups WHERE name = ?1", [name])?;
            for m in members {
                tx.execute("INSERT OR IGNORE INTO messages_groups (name, member) VALUES (?1, ?2)", params![name, m])?;
            }
            tx.commit()?;
            Ok(())
        })
    }

    fn now_group_pairs(&self) -> Result<Vec<(String, String)>> {
        self.db.with_conn(|c| {
            let mut stmt = c.prepare_cached("SELECT name, member FROM messages_groups ORDER BY name, member")?;
            let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
    }

    fn now_group_members(&self, name: &str) -> Result<Vec<String>> {
        self.db.with_conn(|c| strings(c, "SELECT member FROM messages_groups WHERE name = ?1 ORDER BY member", [name]))
    }

    fn now_define_channel(&self, name: &str, webhook_url: Option<&str>) -> Result<()> {
        self.db.with_conn(|c| {
            c.execute(
                "INSERT INTO messages_channels (name, webhook_url) VALUES (?1, ?2)
                 ON CONFLICT (name) DO UPDATE SET webhook_url = excluded.webhook_url",
                params![name, webhook_url],
            )?;
            Ok(())
        })
    }

    fn now_channels(&self) -> Result<Vec<String>> {
        self.db.with_conn(|c| strings(c, "SELECT name FROM messages_channels ORDER BY name", []))
    }

    fn now_channel(&self, name: &str) -> Result<Option<ChannelRow>> {
        self.db.with_conn(|c| {
            let webhook: Option<Option<String>> = c
                .query_row("SELECT webhook_url FROM messages_channels WHERE name = ?1", [name], |r| r.get(0))
                .optional()?;
            let Some(webhook) = webhook else { return Ok(None) };
            let subs =
                strings(c, "SELECT agent_id FROM messages_subscriptions WHERE channel = ?1 ORDER BY agent_id", [name])?;
            Ok(Some((webhook, subs)))
        })
    }

    fn now_subscribe(&self, channel: &str, agent: &str) -> Result<bool> {
        self.db.with_conn(|c| {
            let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
            if tx
                .query_row("SELECT 1 FROM messages_channels WHERE name = ?1", [channel], |_| Ok(()))
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
    }

    fn now_unsubscribe(&self, channel: &str, agent: &str) -> Result<()> {
        self.db.with_conn(|c| {
            c.execute(
                "DELETE FROM messages_subscriptions WHERE channel = ?1 AND agent_id = ?2",
                params![channel, agent],
            )?;
            Ok(())
        })
    }

    fn now_store(&self, m: &NewMessage) -> Result<StoredMessage> {
        self.db.with_conn(|c| {
            let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
            if let Some((reminder, at)) = &m.fires
                && tx.execute(
                    "UPDATE reminders_items SET fired_at = ?1 WHERE id = ?2 AND fired_at IS NULL",
                    params![at, reminder],
                )? == 0
            {
                return Err(MemoryError::AlreadyFired);
            }
            let (delivered, skipped) = match &m.cooldown {
                Some(rule) => reserve(&tx, m, rule)?,
                None => (m.recipients.clone(), Vec::new()),
            };
            if let Some(rule) = &m.cooldown
                && let Some((to, until)) = deferral(rule, &skipped)
                && let Some((reminder, _)) = &m.fires
            {
                // Nothing of this send is kept (the windows it reserved, the fired mark): only the wait.
                drop(tx);
                let until = fmt_time(until);
                c.execute(
                    "UPDATE reminders_items SET not_before = ?1 WHERE id = ?2 AND fired_at IS NULL",
                    params![until, reminder],
                )?;
                return Err(MemoryError::Deferred { to, until });
            }
            if let Some(rule) = &m.cooldown
                && delivered.is_empty()
                && rule.refuse_when_all_skipped
                && let Some(refused) = all_skipped(m, rule, &skipped)
            {
                return Err(refused);
            }
            let id: i64 = tx.query_row(
                "INSERT INTO messages_log (sender, target_type, target_id, content, metadata, session_id, created_at, hops)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) RETURNING id",
                params![m.sender, m.target_type.as_str(), m.target_id, m.content, m.metadata, m.session_id, m.created_at, m.hops],
                |r| r.get(0),
            )?;
            for agent in &delivered {
                tx.execute(
                    "INSERT INTO messages_inbox (message_id, agent_id, via) VALUES (?1, ?2, ?3)",
                    params![id, agent, m.via],
                )?;
            }
            if m.target_type == TargetType::User {
                tx.execute(
                    "INSERT INTO messages_outbox (message_id, agent_id, session_id, user_id) VALUES (?1, ?2, ?3, ?4)",
                    params![id, m.sender, m.session_id, m.target_id],
                )?;
            }
            tx.commit()?;
            Ok(StoredMessage { id, delivered, skipped })
        })
    }

    fn now_inbox_first(&self, agent: &str) -> Result<Option<InboxRow>> {
        self.db.with_conn(|c| {
            let sql = format!("{INBOX_SELECT} WHERE i.agent_id = ?1 AND i.delivered_at IS NULL ORDER BY i.id LIMIT 1");
            Ok(c.prepare_cached(&sql)?.query_row([agent], inbox_row).optional()?)
        })
    }

    fn now_inbox_take(&self, agent: &str, at: &str) -> Result<Option<InboxRow>> {
        self.db.with_conn(|c| {
            let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let sql = format!("{INBOX_SELECT} WHERE i.agent_id = ?1 AND i.delivered_at IS NULL ORDER BY i.id LIMIT 1");
            let Some(row) = tx.query_row(&sql, [agent], inbox_row).optional()? else { return Ok(None) };
            tx.execute("UPDATE messages_inbox SET delivered_at = ?1 WHERE id = ?2", params![at, row.0])?;
            tx.commit()?;
            Ok(Some(row))
        })
    }

    fn now_inbox_ack(&self, agent: &str, inbox_id: i64, at: &str) -> Result<()> {
        self.db.with_conn(|c| {
            c.execute(
                "UPDATE messages_inbox SET delivered_at = ?1 WHERE id = ?2 AND agent_id = ?3 AND delivered_at IS NULL",
                params![at, inbox_id, agent],
            )?;
            Ok(())
        })
    }

    fn now_inbox_pending(&self, agent: &str) -> Result<Vec<InboxRow>> {
        self.db.with_conn(|c| {
            let sql = format!("{INBOX_SELECT} WHERE i.agent_id = ?1 AND i.delivered_at IS NULL ORDER BY i.id");
            let mut stmt = c.prepare_cached(&sql)?;
            Ok(stmt.query_map([agent], inbox_row)?.collect::<rusqlite::Result<Vec<_>>>()?)
        })
    }

    fn now_outbox(&self, agent: &str, limit: usize) -> Result<Vec<OutboxRow>> {
        self.db.with_conn(|c| {
            let mut stmt = c.prepare_cached(
                "SELECT l.id, o.agent_id, o.session_id, o.user_id, l.content, l.metadata, l.created_at
                 FROM messages_outbox o JOIN messages_log l ON l.id = o.message_id
                 WHERE o.agent_id = ?1 ORDER BY o.id DESC LIMIT ?2",
            )?;
            let limit = i64::try_from(limit).unwrap_or(i64::MAX);
            let rows = stmt.query_map(params![agent, limit], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?))
            })?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
    }

    fn now_add_reminder(&self, r: &NewReminder, max_pending: u32) -> Result<i64> {
        self.db.with_conn(|c| {
            // Counted and inserted in one write transaction: concurrent calls cannot pass the cap together.
            let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let pending: u32 = tx.query_row(
                "SELECT count(*) FROM reminders_items WHERE agent_id = ?1 AND fired_at IS NULL",
                [&r.agent_id],
                |row| row.get(0),
            )?;
            if pending >= max_pending {
                return Err(MemoryError::TooManyReminders { pending });
            }
            let id = tx.query_row(
                "INSERT INTO reminders_items (agent_id, due_at, message, target_type, target_id, created_at, hops, session_id)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) RETURNING id",
                params![r.agent_id, r.due_at, r.message, r.target.kind.as_str(), r.target.id, r.created_at, r.hops, r.session_id],
                |row| row.get::<_, i64>(0),
            )?;
            tx.commit()?;
            Ok(id)
        })
    }

    fn now_reminders(&self, agent: &str, include_fired: bool) -> Result<Vec<ReminderRow>> {
        self.db.with_conn(|c| {
            let filter = if include_fired { "" } else { " AND fired_at IS NULL" };
            let mut stmt =
                c.prepare_cached(&format!("{REMINDER_SELECT} WHERE agent_id = ?1{filter} ORDER BY due_at, id"))?;
            Ok(stmt.query_map([agent], reminder_row)?.collect::<rusqlite::Result<Vec<_>>>()?)
        })
    }

    fn now_cancel_reminder(&self, agent: &str, id: i64) -> Result<bool> {
        self.db.with_conn(|c| {
            Ok(c.execute(
                "DELETE FROM reminders_items WHERE id = ?1 AND agent_id = ?2 AND fired_at IS NULL",
                params![id, agent],
            )? > 0)
        })
    }

    fn now_cancel_reminders_of_others(&self, agents: &[String]) -> Result<u64> {
        self.db.with_conn(|c| {
            let sql = format!("DELETE FROM reminders_items WHERE fired_at IS NULL AND {}", not_of(agents, 1));
            let n = c.execute(&sql, rusqlite::params_from_iter(agents.iter()))?;
            Ok(u64::try_from(n).unwrap_or(u64::MAX))
        })
    }

    fn now_count_reminders_of_others(&self, agents: &[String]) -> Result<u64> {
        self.db.with_conn(|c| {
            let sql = format!("SELECT count(*) FROM reminders_items WHERE fired_at IS NULL AND {}", not_of(agents, 1));
            let n: i64 = c.query_row(&sql, rusqlite::params_from_iter(agents.iter()), |r| r.get(0))?;
            Ok(u64::try_from(n).unwrap_or_default())
        })
    }

    fn now_due_reminders(&self, now: &str, agents: Option<&[String]>) -> Result<Vec<ReminderRow>> {
        self.db.with_conn(|c| {
            let sql = format!(
                "{REMINDER_SELECT} WHERE fired_at IS NULL AND due_at <= ?1 AND (not_before IS NULL OR not_before <= ?1)
                 AND {} ORDER BY due_at, id",
                of(agents, 2)
            );
            let params = std::iter::once(now).chain(agents.unwrap_or_default().iter().map(String::as_str));
            let mut stmt = c.prepare_cached(&sql)?;
            Ok(stmt
                .query_map(rusqlite::params_from_iter(params), reminder_row)?
                .collect::<rusqlite::Result<Vec<_>>>()?)
        })
    }

    fn now_next_due(&self, agents: Option<&[String]>) -> Result<Option<String>> {
        self.db.with_conn(|c| {
            let sql = format!(
                "SELECT min(coalesce(not_before, due_at)) FROM reminders_items WHERE fired_at IS NULL AND {}",
                of(agents, 1)
            );
            Ok(c.query_row(&sql, rusqlite::params_from_iter(agents.unwrap_or_default().iter()), |r| r.get(0))?)
        })
    }

    /// Runs `f` on tokio's blocking pool: the async runtime never waits on SQLite.
    fn blocking<'a, R: Send + 'static>(
        &'a self,
        f: impl FnOnce(&Self) -> Result<R> + Send + 'static,
    ) -> BoxFuture<'a, Result<R>> {
        crate::db::on_blocking_pool(self, "message store", f)
    }
}

impl MessageStore for SqliteMessageStore {
    fn register_agent<'a>(&'a self, agent: &'a str, at: &'a str) -> BoxFuture<'a, Result<()>> {
        let (agent, at) = (agent.to_owned(), at.to_owned());
        self.blocking(move |s| s.now_register_agent(&agent, &at))
    }

    fn agents<'a>(&'a self) -> BoxFuture<'a, Result<Vec<String>>> {
        self.blocking(move |s| s.now_agents())
    }

    fn agent_known<'a>(&'a self, agent: &'a str) -> BoxFuture<'a, Result<bool>> {
        let agent = agent.to_owned();
        self.blocking(move |s| s.now_agent_known(&agent))
    }

    fn define_group<'a>(&'a self, name: &'a str, members: &'a [String]) -> BoxFuture<'a, Result<()>> {
        let (name, members) = (name.to_owned(), members.to_vec());
        self.blocking(move |s| s.now_define_group(&name, &members))
    }

    fn group_pairs<'a>(&'a self) -> BoxFuture<'a, Result<Vec<(String, String)>>> {
        self.blocking(move |s| s.now_group_pairs())
    }

    fn group_members<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<Vec<String>>> {
        let name = name.to_owned();
        self.blocking(move |s| s.now_group_members(&name))
    }

    fn define_channel<'a>(&'a self, name: &'a str, webhook_url: Option<&'a str>) -> BoxFuture<'a, Result<()>> {
        let (name, webhook_url) = (name.to_owned(), webhook_url.map(str::to_owned));
        self.blocking(move |s| s.now_define_channel(&name, webhook_url.as_deref()))
    }

    fn channels<'a>(&'a self) -> BoxFuture<'a, Result<Vec<String>>> {
        self.blocking(move |s| s.now_channels())
    }

    fn channel<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<Option<ChannelRow>>> {
        let name = name.to_owned();
        self.blocking(move |s| s.now_channel(&name))
    }

    fn subscribe<'a>(&'a self, channel: &'a str, agent: &'a str) -> BoxFuture<'a, Result<bool>> {
        let (channel, agent) = (channel.to_owned(), agent.to_owned());
        self.blocking(move |s| s.now_subscribe(&channel, &agent))
    }

    fn unsubscribe<'a>(&'a self, channel: &'a str, agent: &'a str) -> BoxFuture<'a, Result<()>> {
        let (channel, agent) = (channel.to_owned(), agent.to_owned());
        self.blocking(move |s| s.now_unsubscribe(&channel, &agent))
    }

    fn store<'a>(&'a self, m: &'a NewMessage) -> BoxFuture<'a, Result<StoredMessage>> {
        let m = m.clone();
        self.blocking(move |s| s.now_store(&m))
    }

    fn inbox_first<'a>(&'a self, agent: &'a str) -> BoxFuture<'a, Result<Option<InboxRow>>> {
        let agent = agent.to_owned();
        self.blocking(move |s| s.now_inbox_first(&agent))
    }

    fn inbox_take<'a>(&'a self, agent: &'a str, at: &'a str) -> BoxFuture<'a, Result<Option<InboxRow>>> {
        let (agent, at) = (agent.to_owned(), at.to_owned());
        self.blocking(move |s| s.now_inbox_take(&agent, &at))
    }

    fn inbox_ack<'a>(&'a self, agent: &'a str, inbox_id: i64, at: &'a str) -> BoxFuture<'a, Result<()>> {
        let (agent, at) = (agent.to_owned(), at.to_owned());
        self.blocking(move |s| s.now_inbox_ack(&agent, inbox_id, &at))
    }

    fn inbox_pending<'a>(&'a self, agent: &'a str) -> BoxFuture<'a, Result<Vec<InboxRow>>> {
        let agent = agent.to_owned();
        self.blocking(move |s| s.now_inbox_pending(&agent))
    }

    fn hold_inbox<'a>(&'a self, _agent: &'a str, _wait: Duration) -> BoxFuture<'a, Result<Option<InboxHold>>> {
        // One process owns the file: its inboxes need no hold.
        Box::pin(std::future::ready(Ok(Some(InboxHold::sole()))))
    }

    fn outbox<'a>(&'a self, agent: &'a str, limit: usize) -> BoxFuture<'a, Result<Vec<OutboxRow>>> {
        let agent = agent.to_owned();
        self.blocking(move |s| s.now_outbox(&agent, limit))
    }

    fn add_reminder<'a>(&'a self, r: &'a NewReminder, max_pending: u32) -> BoxFuture<'a, Result<i64>> {
        let r = r.clone();
        self.blocking(move |s| s.now_add_reminder(&r, max_pending))
    }

    fn reminders<'a>(&'a self, agent: &'a str, include_fired: bool) -> BoxFuture<'a, Result<Vec<ReminderRow>>> {
        let agent = agent.to_owned();
        self.blocking(move |s| s.now_reminders(&agent, include_fired))
    }

    fn cancel_reminder<'a>(&'a self, agent: &'a str, id: i64) -> BoxFuture<'a, Result<bool>> {
        let agent = agent.to_owned();
        self.blocking(move |s| s.now_cancel_reminder(&agent, id))
    }

    fn cancel_reminders_of_others<'a>(&'a self, agents: &'a [String]) -> BoxFuture<'a, Result<u64>> {
        let agents = agents.to_vec();
        self.blocking(move |s| s.now_cancel_reminders_of_others(&agents))
    }

    fn count_reminders_of_others<'a>(&'a self, agents: &'a [String]) -> BoxFuture<'a, Result<u64>> {
        let agents = agents.to_vec();
        self.blocking(move |s| s.now_count_reminders_of_others(&agents))
    }

    fn due_reminders<'a>(
        &'a self,
        now: &'a str,
        agents: Option<&'a [String]>,
    ) -> BoxFuture<'a, Result<Vec<ReminderRow>>> {
        let (now, agents) = (now.to_owned(), agents.map(<[String]>::to_vec));
        self.blocking(move |s| s.now_due_reminders(&now, agents.as_deref()))
    }

    fn next_due<'a>(&'a self, agents: Option<&'a [String]>) -> BoxFuture<'a, Result<Option<String>>> {
        let agents = agents.map(<[String]>::to_vec);
        self.blocking(move |s| s.now_next_due(agents.as_deref()))
    }

    fn poll_interval(&self) -> Option<Duration> {
        None
    }

    fn kind(&self) -> &'static str {
        "sqlite"
    }
}

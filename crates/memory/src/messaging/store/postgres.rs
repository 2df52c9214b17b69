//! Messages and reminders in PostgreSQL, shared by every instance on the database.
//!
//! What makes it correct across instances (see the parent module for what each call decides):
//! - a reminder is claimed with `SELECT … FOR UPDATE SKIP LOCKED` in the transaction that delivers it: an instance
//!   that finds it claimed passes it by ([`MemoryError::AlreadyFired`]); if the claimer rolls back, it is still due
//!   and the next pass of any instance fires it;
//! - an anti-loop window is an upsert that only moves a window that has ended (`ON CONFLICT … WHERE until_at <=
//!   now`): of two concurrent sends on a pair, the second waits for the first's row and finds the window taken;
//! - the pending-reminder cap is counted under a transaction advisory lock per agent;
//! - one instance at a time reads an agent's inbox, holding the session advisory lock `holdfast.inbox/<agent>` on a
//!   connection of its own; the others wait for it, and take over when the holder's connection dies.
//!
//! A send on another instance wakes this one's inbox readers: the transaction that stores a message notifies
//! `holdfast_inbox` with each recipient's id (delivered on commit), and each instance listens on it
//! ([`MessageStore::watch_inboxes`]); readers also look every [`MessageStore::poll_interval`] in case one was missed.

use super::adopt;
use super::sqlite::{INBOX_SELECT, REMINDER_SELECT};
use super::{
    ChannelRow, HeldLock, InboxHold, InboxRow, InboxWake, MessageStore, NewMessage, NewReminder, OutboxRow,
    ReminderRow, StoredMessage, all_skipped, deferral, window_left,
};
use crate::clock::fmt_time;
use crate::db::Database;
use crate::error::{MemoryError, Result};
use crate::messaging::types::TargetType;
use holdfast_core::tool::BoxFuture;
use holdfast_store::{PgLock, PgStore};
use sqlx::Row as _;
use sqlx::postgres::PgRow;
use std::sync::Arc;
use std::time::Duration;

/// How often an inbox reader looks for messages other instances stored, when they are not announced
/// ([`PgMessageStore::poll_only`]).
const POLL: Duration = Duration::from_secs(1);

/// How often an inbox reader looks anyway when stores are announced (`LISTEN`): a safety net, since a listener that
/// reconnects wakes every reader itself.
const POLL_LISTENING: Duration = Duration::from_secs(15);

/// The `LISTEN/NOTIFY` channel on which a stored message names the agents whose inbox got it.
pub(super) const INBOX_CHANNEL: &str = "holdfast_inbox";

/// Messages and reminders in PostgreSQL. Clones share the pool.
#[derive(Debug, Clone)]
pub struct PgMessageStore {
    pg: PgStore,
    /// Inbox readers are woken by `LISTEN` (false: they poll every [`POLL`] alone).
    listen: bool,
}

fn pg_err(e: impl std::fmt::Display) -> MemoryError {
    MemoryError::internal(format!("messages database: {}", holdfast_core::redact_urls(&e.to_string())))
}

fn hops_out(n: i32) -> u32 {
    u32::try_from(n).unwrap_or(0)
}

fn hops_in(n: u32) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

fn inbox_row(r: &PgRow) -> Result<InboxRow> {
    Ok((
        r.try_get(0).map_err(pg_err)?,
        r.try_get(1).map_err(pg_err)?,
        r.try_get(2).map_err(pg_err)?,
        r.try_get(3).map_err(pg_err)?,
        r.try_get(4).map_err(pg_err)?,
        r.try_get(5).map_err(pg_err)?,
        r.try_get(6).map_err(pg_err)?,
        hops_out(r.try_get(7).map_err(pg_err)?),
    ))
}

fn reminder_row(r: &PgRow) -> Result<ReminderRow> {
    Ok((
        r.try_get(0).map_err(pg_err)?,
        r.try_get(1).map_err(pg_err)?,
        r.try_get(2).map_err(pg_err)?,
        r.try_get(3).map_err(pg_err)?,
        r.try_get(4).map_err(pg_err)?,
        r.try_get(5).map_err(pg_err)?,
        r.try_get(6).map_err(pg_err)?,
        r.try_get(7).map_err(pg_err)?,
        hops_out(r.try_get(8).map_err(pg_err)?),
        r.try_get(9).map_err(pg_err)?,
    ))
}

/// An advisory transaction lock on `key`.
async fn xact_lock(tx: &mut sqlx::PgConnection, key: &str) -> Result<()> {
    sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))")
        .bind(key)
        .execute(&mut *tx)
        .await
        .map_err(pg_err)?;
    Ok(())
}

impl PgMessageStore {
    /// The store on `pg`'s pool, migrated.
    pub async fn open(pg: PgStore) -> Result<Self> {
        pg.migrate(&crate::schema::MESSAGES).await?;
        Ok(Self { pg, listen: true })
    }

    /// Inbox readers find other instances' messages by looking every second, without `LISTEN` (for a connection
    /// pooler that does not keep `LISTEN`, such as PgBouncer in transaction mode; and the benchmark's baseline).
    #[must_use]
    pub fn poll_only(mut self) -> Self {
        self.listen = false;
        self
    }

    /// Runs `sql` with text arguments.
    async fn exec(&self, sql: &'static str, args: &[Option<&str>]) -> Result<u64> {
        let mut query = sqlx::query(sql);
        for arg in args {
            query = query.bind(*arg);
        }
        Ok(query.execute(self.pg.pool()).await.map_err(pg_err)?.rows_affected())
    }

    /// The first column of every row of `sql`, with text arguments.
    async fn texts(&self, sql: &'static str, args: &[&str]) -> Result<Vec<String>> {
        let mut query = sqlx::query_scalar(sql);
        for arg in args {
            query = query.bind(*arg);
        }
        query.fetch_all(self.pg.pool()).await.map_err(pg_err)
    }

    /// Copies the messages, inboxes, outbox, directory, anti-loop windows and reminders an instance kept in its
    /// SQLite file (`db`) into this database, once: when it holds no message and no reminder yet (under a lock, so
    /// instances starting together copy once), keeping their ids. The file keeps its rows.
    pub async fn adopt(&self, db: &Database) -> Result<MessagesAdopted> {
        if !db.call(adopt::Local::any).await? {
            return Ok(MessagesAdopted::Nothing);
        }
        let shared: bool =
            sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM messages_log) OR EXISTS (SELECT 1 FROM reminders_items)")
                .fetch_one(self.pg.pool())
                .await
                .map_err(pg_err)?;
        if shared {
            return Ok(MessagesAdopted::AlreadyShared { waiting: db.call(adopt::Local::waiting).await? });
        }
        let local = db.call(adopt::Local::read).await?.without_nul();
        let rows = local.log.len() + local.reminders.len();
        let store = &self.pg;
        let copied = async move {
            let mut tx = store.pool().begin().await?;
            sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended('holdfast.messages/adopt', 0))")
                .execute(&mut *tx)
                .await?;
            let any: bool = sqlx::query_scalar(
                "SELECT EXISTS (SELECT 1 FROM messages_log) OR EXISTS (SELECT 1 FROM reminders_items)",
            )
            .fetch_one(&mut *tx)
            .await?;
            if any {
                return Ok(false);
            }
            local.write(&mut tx).await?;
            tx.commit().await?;
            Ok::<_, sqlx::Error>(true)
        }
        .await
        .map_err(pg_err)?;
        if copied {
            Ok(MessagesAdopted::Copied { rows })
        } else {
            Ok(MessagesAdopted::AlreadyShared { waiting: db.call(adopt::Local::waiting).await? })
        }
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

/// The lock an [`InboxHold`] holds on PostgreSQL.
struct PgHold {
    lock: Option<PgLock>,
    pg: PgStore,
    agent: String,
    /// Another instance held it last and did not let go cleanly.
    previous_may_run: bool,
}

impl HeldLock for PgHold {
    fn previous_may_run(&self) -> bool {
        self.previous_may_run
    }

    fn release(&mut self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let Some(lock) = self.lock.take() else { return };
            // Marked while the lock is still held, then the lock goes with its connection.
            let marked =
                sqlx::query("UPDATE messages_inbox_holds SET released = true WHERE agent_id = $1 AND holder = $2")
                    .bind(&self.agent)
                    .bind(self.pg.instance())
                    .execute(self.pg.pool())
                    .await;
            drop(lock);
            if let Err(e) = marked {
                let e = pg_err(e);
                tracing::warn!(agent = %self.agent, error = %e, "the inbox was let go without saying so: the next holder waits");
            }
        })
    }

    fn still_held(&mut self) -> BoxFuture<'_, bool> {
        Box::pin(async move {
            let Some(lock) = self.lock.as_mut() else { return false };
            if lock.is_held().await {
                return true;
            }
            self.lock = None;
            false
        })
    }
}

impl MessageStore for PgMessageStore {
    fn register_agent<'a>(&'a self, agent: &'a str, at: &'a str) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            self.exec(
                "INSERT INTO messages_agents (agent_id, created_at) VALUES ($1, $2) ON CONFLICT DO NOTHING",
                &[Some(agent), Some(at)],
            )
            .await
            .map(drop)
        })
    }

    fn agents<'a>(&'a self) -> BoxFuture<'a, Result<Vec<String>>> {
        Box::pin(async move { self.texts("SELECT agent_id FROM messages_agents ORDER BY agent_id", &[]).await })
    }

    fn agent_known<'a>(&'a self, agent: &'a str) -> BoxFuture<'a, Result<bool>> {
        Box::pin(async move {
            let s = &self.pg;
            sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM messages_agents WHERE agent_id = $1)")
                .bind(agent)
                .fetch_one(s.pool())
                .await
                .map_err(pg_err)
        })
    }

    fn define_group<'a>(&'a self, name: &'a str, members: &'a [String]) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            let s = &self.pg;
            let mut tx = s.pool().begin().await.map_err(pg_err)?;
            // Instances starting together redefine the same groups: one after the other.
            xact_lock(&mut tx, &format!("holdfast.messages/group/{name}")).await?;
            sqlx::query("DELETE FROM messages_groups WHERE name = $1")
                .bind(name)
                .execute(&mut *tx)
                .await
                .map_err(pg_err)?;
            sqlx::query(
                "INSERT INTO messages_groups (name, member) SELECT $1, m FROM unnest($2::text[]) AS m
                 ON CONFLICT DO NOTHING",
            )
            .bind(name)
            .bind(members)
            .execute(&mut *tx)
            .await
            .map_err(pg_err)?;
            tx.commit().await.map_err(pg_err)
        })
    }

    fn group_pairs<'a>(&'a self) -> BoxFuture<'a, Result<Vec<(String, String)>>> {
        Box::pin(async move {
            let s = &self.pg;
            sqlx::query_as("SELECT name, member FROM messages_groups ORDER BY name, member")
                .fetch_all(s.pool())
                .await
                .map_err(pg_err)
        })
    }

    fn group_members<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<Vec<String>>> {
        Box::pin(async move {
            self.texts("SELECT member FROM messages_groups WHERE name = $1 ORDER BY member", &[name]).await
        })
    }

    fn define_channel<'a>(&'a self, name: &'a str, webhook_url: Option<&'a str>) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            self.exec(
                "INSERT INTO messages_channels (name, webhook_url) VALUES ($1, $2)
                 ON CONFLICT (name) DO UPDATE SET webhook_url = excluded.webhook_url",
                &[Some(name), webhook_url],
            )
            .await
            .map(drop)
        })
    }

    fn channels<'a>(&'a self) -> BoxFuture<'a, Result<Vec<String>>> {
        Box::pin(async move { self.texts("SELECT name FROM messages_channels ORDER BY name", &[]).await })
    }

    fn channel<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<Option<ChannelRow>>> {
        Box::pin(async move {
            let s = &self.pg;
            let webhook: Option<Option<String>> =
                sqlx::query_scalar("SELECT webhook_url FROM messages_channels WHERE name = $1")
                    .bind(name)
                    .fetch_optional(s.pool())
                    .await
                    .map_err(pg_err)?;
            let Some(webhook) = webhook else { return Ok(None) };
            let subs =
                sqlx::query_scalar("SELECT agent_id FROM messages_subscriptions WHERE channel = $1 ORDER BY agent_id")
                    .bind(name)
                    .fetch_all(s.pool())
                    .await
                    .map_err(pg_err)?;
            Ok(Some((webhook, subs)))
        })
    }

    fn subscribe<'a>(&'a self, channel: &'a str, agent: &'a str) -> BoxFuture<'a, Result<bool>> {
        Box::pin(async move {
            let s = &self.pg;
            let done = sqlx::query(
                "INSERT INTO messages_subscriptions (channel, agent_id)
                 SELECT name, $2 FROM messages_channels WHERE name = $1 ON CONFLICT DO NOTHING",
            )
            .bind(channel)
            .bind(agent)
            .execute(s.pool())
            .await
            .map_err(pg_err)?;
            if done.rows_affected() > 0 {
                return Ok(true);
            }
            sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM messages_channels WHERE name = $1)")
                .bind(channel)
                .fetch_one(s.pool())
                .await
                .map_err(pg_err)
        })
    }

    fn unsubscribe<'a>(&'a self, channel: &'a str, agent: &'a str) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            self.exec(
                "DELETE FROM messages_subscriptions WHERE channel = $1 AND agent_id = $2",
                &[Some(channel), Some(agent)],
            )
            .await
            .map(drop)
        })
    }

    fn store<'a>(&'a self, m: &'a NewMessage) -> BoxFuture<'a, Result<StoredMessage>> {
        Box::pin(async move {
            let s = &self.pg;
            let mut tx = s.pool().begin().await.map_err(pg_err)?;
            if let Some((reminder, at)) = &m.fires {
                // Claimed here, or passed by: another instance delivering it holds the row.
                let claimed: Option<i64> = sqlx::query_scalar(
                    "SELECT id FROM reminders_items WHERE id = $1 AND fired_at IS NULL FOR UPDATE SKIP LOCKED",
                )
                .bind(reminder)
                .fetch_optional(&mut *tx)
                .await
                .map_err(pg_err)?;
                if claimed.is_none() {
                    return Err(MemoryError::AlreadyFired);
                }
                sqlx::query("UPDATE reminders_items SET fired_at = $1 WHERE id = $2")
                    .bind(at)
                    .bind(reminder)
                    .execute(&mut *tx)
                    .await
                    .map_err(pg_err)?;
            }
            let (mut delivered, mut skipped) = (Vec::new(), Vec::new());
            match &m.cooldown {
                None => delivered.clone_from(&m.recipients),
                Some(rule) => {
                    let now = fmt_time(rule.now);
                    let until =
                        fmt_time(rule.now + chrono::Duration::from_std(rule.window).unwrap_or(chrono::TimeDelta::MAX));
                    // In recipient order (the directory lists them sorted): concurrent fan-outs lock rows alike.
                    let mut order = m.recipients.clone();
                    order.sort();
                    for to in order {
                        let taken: Option<String> = sqlx::query_scalar(
                            "INSERT INTO messages_cooldowns (sender, recipient, until_at) VALUES ($1, $2, $3)
                             ON CONFLICT (sender, recipient) DO UPDATE SET until_at = excluded.until_at
                             WHERE messages_cooldowns.until_at <= $4
                             RETURNING until_at",
                        )
                        .bind(&m.sender)
                        .bind(&to)
                        .bind(&until)
                        .bind(&now)
                        .fetch_optional(&mut *tx)
                        .await
                        .map_err(pg_err)?;
                        if taken.is_some() {
                            delivered.push(to);
                            continue;
                        }
                        let current: Option<String> = sqlx::query_scalar(
                            "SELECT until_at FROM messages_cooldowns WHERE sender = $1 AND recipient = $2",
                        )
                        .bind(&m.sender)
                        .bind(&to)
                        .fetch_optional(&mut *tx)
                        .await
                        .map_err(pg_err)?;
                        let left = current.as_deref().and_then(|u| window_left(u, rule.now)).unwrap_or_default();
                        skipped.push((to, left));
                    }
                    if let Some((to, until)) = deferral(rule, &skipped)
                        && let Some((reminder, _)) = &m.fires
                    {
                        // Nothing of this send is kept (the windows it reserved, the claim): only the wait.
                        tx.rollback().await.map_err(pg_err)?;
                        let until = fmt_time(until);
                        sqlx::query("UPDATE reminders_items SET not_before = $1 WHERE id = $2 AND fired_at IS NULL")
                            .bind(&until)
                            .bind(reminder)
                            .execute(s.pool())
                            .await
                            .map_err(pg_err)?;
                        return Err(MemoryError::Deferred { to, until });
                    }
                    if delivered.is_empty()
                        && rule.refuse_when_all_skipped
                        && let Some(refused) = all_skipped(m, rule, &skipped)
                    {
                        return Err(refused);
                    }
                    delivered = m.recipients.iter().filter(|r| delivered.contains(r)).cloned().collect();
                }
            }
            let id: i64 = sqlx::query_scalar(
                "INSERT INTO messages_log (sender, target_type, target_id, content, metadata, session_id, created_at, hops)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id",
            )
            .bind(&m.sender)
            .bind(m.target_type.as_str())
            .bind(&m.target_id)
            .bind(&m.content)
            .bind(&m.metadata)
            .bind(&m.session_id)
            .bind(&m.created_at)
            .bind(hops_in(m.hops))
            .fetch_one(&mut *tx)
            .await
            .map_err(pg_err)?;
            if !delivered.is_empty() {
                sqlx::query(
                    "INSERT INTO messages_inbox (message_id, agent_id, via) SELECT $1, a, $3 FROM unnest($2::text[]) AS a",
                )
                .bind(id)
                .bind(&delivered)
                .bind(&m.via)
                .execute(&mut *tx)
                .await
                .map_err(pg_err)?;
                // Sent when the transaction commits, and only then: every instance's readers of these inboxes look.
                sqlx::query("SELECT pg_notify($1, a) FROM unnest($2::text[]) AS a")
                    .bind(INBOX_CHANNEL)
                    .bind(&delivered)
                    .execute(&mut *tx)
                    .await
                    .map_err(pg_err)?;
            }
            if m.target_type == TargetType::User {
                sqlx::query(
                    "INSERT INTO messages_outbox (message_id, agent_id, session_id, user_id) VALUES ($1, $2, $3, $4)",
                )
                .bind(id)
                .bind(&m.sender)
                .bind(&m.session_id)
                .bind(&m.target_id)
                .execute(&mut *tx)
                .await
                .map_err(pg_err)?;
            }
            tx.commit().await.map_err(pg_err)?;
            Ok(StoredMessage { id, delivered, skipped })
        })
    }

    fn inbox_first<'a>(&'a self, agent: &'a str) -> BoxFuture<'a, Result<Option<InboxRow>>> {
        Box::pin(async move {
            let s = &self.pg;
            let sql = format!("{INBOX_SELECT} WHERE i.agent_id = $1 AND i.delivered_at IS NULL ORDER BY i.id LIMIT 1");
            let row =
                sqlx::query(sqlx::AssertSqlSafe(sql)).bind(agent).fetch_optional(s.pool()).await.map_err(pg_err)?;
            row.as_ref().map(inbox_row).transpose()
        })
    }

    fn inbox_take<'a>(&'a self, agent: &'a str, at: &'a str) -> BoxFuture<'a, Result<Option<InboxRow>>> {
        Box::pin(async move {
            let s = &self.pg;
            let mut tx = s.pool().begin().await.map_err(pg_err)?;
            let sql = format!(
                "{INBOX_SELECT} WHERE i.agent_id = $1 AND i.delivered_at IS NULL ORDER BY i.id LIMIT 1
                 FOR UPDATE OF i SKIP LOCKED"
            );
            let row =
                sqlx::query(sqlx::AssertSqlSafe(sql)).bind(agent).fetch_optional(&mut *tx).await.map_err(pg_err)?;
            let Some(row) = row.as_ref().map(inbox_row).transpose()? else { return Ok(None) };
            sqlx::query("UPDATE messages_inbox SET delivered_at = $1 WHERE id = $2")
                .bind(at)
                .bind(row.0)
                .execute(&mut *tx)
                .await
                .map_err(pg_err)?;
            tx.commit().await.map_err(pg_err)?;
            Ok(Some(row))
        })
    }

    fn inbox_ack<'a>(&'a self, agent: &'a str, inbox_id: i64, at: &'a str) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            let s = &self.pg;
            sqlx::query(
                "UPDATE messages_inbox SET delivered_at = $1 WHERE id = $2 AND agent_id = $3 AND delivered_at IS NULL",
            )
            .bind(at)
            .bind(inbox_id)
            .bind(agent)
            .execute(s.pool())
            .await
            .map_err(pg_err)?;
            Ok(())
        })
    }

    fn inbox_pending<'a>(&'a self, agent: &'a str) -> BoxFuture<'a, Result<Vec<InboxRow>>> {
        Box::pin(async move {
            let s = &self.pg;
            let sql = format!("{INBOX_SELECT} WHERE i.agent_id = $1 AND i.delivered_at IS NULL ORDER BY i.id");
            let rows = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(agent).fetch_all(s.pool()).await.map_err(pg_err)?;
            rows.iter().map(inbox_row).collect()
        })
    }

    fn hold_inbox<'a>(&'a self, agent: &'a str, wait: Duration) -> BoxFuture<'a, Result<Option<InboxHold>>> {
        Box::pin(async move {
            let s = &self.pg;
            let key = format!("holdfast.inbox/{agent}");
            let Some(lock) = s.lock_within(&key, wait).await.map_err(pg_err)? else { return Ok(None) };
            // Under the lock: who held it last, and whether it let go cleanly; then this instance holds it.
            let last: Option<(String, bool)> =
                sqlx::query_as("SELECT holder, released FROM messages_inbox_holds WHERE agent_id = $1")
                    .bind(agent)
                    .fetch_optional(s.pool())
                    .await
                    .map_err(pg_err)?;
            sqlx::query(
                "INSERT INTO messages_inbox_holds (agent_id, holder, released) VALUES ($1, $2, false)
                 ON CONFLICT (agent_id) DO UPDATE SET holder = excluded.holder, released = false",
            )
            .bind(agent)
            .bind(s.instance())
            .execute(s.pool())
            .await
            .map_err(pg_err)?;
            let previous_may_run = last.is_some_and(|(holder, released)| !released && holder != s.instance());
            Ok(Some(InboxHold::new(PgHold {
                lock: Some(lock),
                pg: self.pg.clone(),
                agent: agent.to_owned(),
                previous_may_run,
            })))
        })
    }

    fn poll_interval(&self) -> Option<Duration> {
        Some(if self.listen { POLL_LISTENING } else { POLL })
    }

    fn watch_inboxes(&self, wake: InboxWake) -> Result<()> {
        if !self.listen {
            return Ok(());
        }
        // The payload only says where to look: a reader woken by it reads the table, so a notification another
        // role sends (any role may NOTIFY) costs a read, never a message.
        let wake = Arc::downgrade(&wake);
        let store = self.pg.clone();
        let runtime = tokio::runtime::Handle::try_current()
            .map_err(|_| MemoryError::internal("watching the inboxes needs a Tokio runtime"))?;
        runtime.spawn(async move {
            // Until the router that asked is gone.
            while wake.strong_count() > 0 {
                let mut listener = match sqlx::postgres::PgListener::connect_with(store.pool()).await {
                    Ok(l) => l,
                    Err(e) => {
                        tracing::warn!(error = %holdfast_core::redact_urls(&e.to_string()), "inbox listener: connect");
                        tokio::time::sleep(Duration::from_secs(1)).await;
                        continue;
                    }
                };
                if let Err(e) = listener.listen(INBOX_CHANNEL).await {
                    tracing::warn!(error = %holdfast_core::redact_urls(&e.to_string()), "inbox listener: listen");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    continue;
                }
                // Listening from here: anything stored before may not have been announced to this instance.
                let Some(w) = wake.upgrade() else { return };
                w(None);
                drop(w);
                loop {
                    let note = listener.try_recv().await;
                    let Some(w) = wake.upgrade() else { return };
                    match note {
                        Ok(Some(note)) => w(Some(note.payload())),
                        // Reconnected by the next call: what was sent meanwhile is lost, so every reader looks.
                        Ok(None) => w(None),
                        Err(e) => {
                            tracing::warn!(error = %holdfast_core::redact_urls(&e.to_string()), "inbox listener");
                            break;
                        }
                    }
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        });
        Ok(())
    }

    fn outbox<'a>(&'a self, agent: &'a str, limit: usize) -> BoxFuture<'a, Result<Vec<OutboxRow>>> {
        Box::pin(async move {
            let s = &self.pg;
            sqlx::query_as(
                "SELECT l.id, o.agent_id, o.session_id, o.user_id, l.content, l.metadata, l.created_at
                 FROM messages_outbox o JOIN messages_log l ON l.id = o.message_id
                 WHERE o.agent_id = $1 ORDER BY o.id DESC LIMIT $2",
            )
            .bind(agent)
            .bind(i64::try_from(limit).unwrap_or(i64::MAX))
            .fetch_all(s.pool())
            .await
            .map_err(pg_err)
        })
    }

    fn add_reminder<'a>(&'a self, r: &'a NewReminder, max_pending: u32) -> BoxFuture<'a, Result<i64>> {
        Box::pin(async move {
            let s = &self.pg;
            let mut tx = s.pool().begin().await.map_err(pg_err)?;
            // Counted and inserted under one lock per agent: instances cannot pass the cap together.
            xact_lock(&mut tx, &format!("holdfast.reminders/{}", r.agent_id)).await?;
            let pending: i64 =
                sqlx::query_scalar("SELECT count(*) FROM reminders_items WHERE agent_id = $1 AND fired_at IS NULL")
                    .bind(&r.agent_id)
                    .fetch_one(&mut *tx)
                    .await
                    .map_err(pg_err)?;
            let pending = u32::try_from(pending).unwrap_or(u32::MAX);
            if pending >= max_pending {
                return Err(MemoryError::TooManyReminders { pending });
            }
            let id: i64 = sqlx::query_scalar(
                "INSERT INTO reminders_items (agent_id, due_at, message, target_type, target_id, created_at, hops, session_id)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id",
            )
            .bind(&r.agent_id)
            .bind(&r.due_at)
            .bind(&r.message)
            .bind(r.target.kind.as_str())
            .bind(&r.target.id)
            .bind(&r.created_at)
            .bind(hops_in(r.hops))
            .bind(&r.session_id)
            .fetch_one(&mut *tx)
            .await
            .map_err(pg_err)?;
            tx.commit().await.map_err(pg_err)?;
            Ok(id)
        })
    }

    fn reminders<'a>(&'a self, agent: &'a str, include_fired: bool) -> BoxFuture<'a, Result<Vec<ReminderRow>>> {
        Box::pin(async move {
            let s = &self.pg;
            let filter = if include_fired { "" } else { " AND fired_at IS NULL" };
            let sql = format!("{REMINDER_SELECT} WHERE agent_id = $1{filter} ORDER BY due_at, id");
            let rows = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(agent).fetch_all(s.pool()).await.map_err(pg_err)?;
            rows.iter().map(reminder_row).collect()
        })
    }

    fn cancel_reminder<'a>(&'a self, agent: &'a str, id: i64) -> BoxFuture<'a, Result<bool>> {
        Box::pin(async move {
            let s = &self.pg;
            let done = sqlx::query("DELETE FROM reminders_items WHERE id = $1 AND agent_id = $2 AND fired_at IS NULL")
                .bind(id)
                .bind(agent)
                .execute(s.pool())
                .await
                .map_err(pg_err)?;
            Ok(done.rows_affected() > 0)
        })
    }

    fn cancel_reminders_of_others<'a>(&'a self, agents: &'a [String]) -> BoxFuture<'a, Result<u64>> {
        let agents = agents.to_vec();
        Box::pin(async move {
            let s = &self.pg;
            let done = sqlx::query("DELETE FROM reminders_items WHERE fired_at IS NULL AND NOT (agent_id = ANY($1))")
                .bind(agents)
                .execute(s.pool())
                .await
                .map_err(pg_err)?;
            Ok(done.rows_affected())
        })
    }

    fn count_reminders_of_others<'a>(&'a self, agents: &'a [String]) -> BoxFuture<'a, Result<u64>> {
        let agents = agents.to_vec();
        Box::pin(async move {
            let s = &self.pg;
            let n: i64 = sqlx::query_scalar(
                "SELECT count(*) FROM reminders_items WHERE fired_at IS NULL AND NOT (agent_id = ANY($1))",
            )
            .bind(agents)
            .fetch_one(s.pool())
            .await
            .map_err(pg_err)?;
            Ok(u64::try_from(n).unwrap_or_default())
        })
    }

    fn due_reminders<'a>(
        &'a self,
        now: &'a str,
        agents: Option<&'a [String]>,
    ) -> BoxFuture<'a, Result<Vec<ReminderRow>>> {
        let agents = agents.map(<[String]>::to_vec);
        Box::pin(async move {
            let s = &self.pg;
            let sql = format!(
                "{REMINDER_SELECT} WHERE fired_at IS NULL AND due_at <= $1 AND (not_before IS NULL OR not_before <= $1)
                 AND ($2::text[] IS NULL OR agent_id = ANY($2)) ORDER BY due_at, id"
            );
            let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(now)
                .bind(agents)
                .fetch_all(s.pool())
                .await
                .map_err(pg_err)?;
            rows.iter().map(reminder_row).collect()
        })
    }

    fn next_due<'a>(&'a self, agents: Option<&'a [String]>) -> BoxFuture<'a, Result<Option<String>>> {
        let agents = agents.map(<[String]>::to_vec);
        Box::pin(async move {
            let s = &self.pg;
            sqlx::query_scalar(
                "SELECT min(coalesce(not_before, due_at)) FROM reminders_items
                 WHERE fired_at IS NULL AND ($1::text[] IS NULL OR agent_id = ANY($1))",
            )
            .bind(agents)
            .fetch_one(s.pool())
            .await
            .map_err(pg_err)
        })
    }

    fn kind(&self) -> &'static str {
        "postgres"
    }
}

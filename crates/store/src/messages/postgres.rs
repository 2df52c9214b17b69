//! The messaging tables in PostgreSQL, shared by every instance on the database.
//!
//! What makes them correct across instances:
//! - a reminder is claimed with `SELECT … FOR UPDATE SKIP LOCKED` in the transaction that delivers it: an instance
//!   that finds it claimed passes it by ([`Sent::AlreadyFired`]); if the claimer rolls back, it is still due and the
//!   next pass of any instance fires it;
//! - an anti-loop window is an upsert that only moves a window that has ended (`ON CONFLICT … WHERE until_at <=
//!   now`): of two concurrent sends on a pair, the second waits for the first's row and finds the window taken;
//! - the pending-reminder count is taken under a transaction advisory lock per agent;
//! - one instance at a time reads an agent's inbox, holding the session advisory lock `holdfast.inbox/<agent>` on a
//!   connection of its own; the others wait for it, and take over when the holder's connection dies.
//!
//! A send on another instance wakes this one's inbox readers: the transaction that stores a message notifies
//! [`INBOX_CHANNEL`] with each recipient's id (delivered on commit), and each instance listens on it
//! ([`PgMessages::watch_inboxes`]).

use super::sqlite::{INBOX_SELECT, REMINDER_SELECT};
use super::{
    Added, AfterWindows, Channel, INBOX_CHANNEL, InboxLock, InboxRow, InboxWake, NewMessage, NewReminder, OutboxRow,
    ReminderRow, Sent, Windows, Written,
};
use crate::{PgLock, PgStore, StoreError};
use sqlx::postgres::PgRow;
use sqlx::{AssertSqlSafe, Row as _};
use std::sync::Arc;
use std::time::Duration;

/// The messaging tables in PostgreSQL. Clones share the pool.
#[derive(Debug, Clone)]
pub struct PgMessages {
    pub(super) pg: PgStore,
}

pub(super) fn hops_out(n: i32) -> u32 {
    u32::try_from(n).unwrap_or(0)
}

pub(super) fn hops_in(n: u32) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

fn inbox_row(r: &PgRow) -> Result<InboxRow, sqlx::Error> {
    Ok(InboxRow {
        inbox_id: r.try_get(0)?,
        message_id: r.try_get(1)?,
        sender: r.try_get(2)?,
        via: r.try_get(3)?,
        content: r.try_get(4)?,
        metadata: r.try_get(5)?,
        created_at: r.try_get(6)?,
        hops: hops_out(r.try_get(7)?),
    })
}

fn reminder_row(r: &PgRow) -> Result<ReminderRow, sqlx::Error> {
    Ok(ReminderRow {
        id: r.try_get(0)?,
        agent_id: r.try_get(1)?,
        due_at: r.try_get(2)?,
        message: r.try_get(3)?,
        target_type: r.try_get(4)?,
        target_id: r.try_get(5)?,
        created_at: r.try_get(6)?,
        fired_at: r.try_get(7)?,
        hops: hops_out(r.try_get(8)?),
        session_id: r.try_get(9)?,
        asked_by: r.try_get(10)?,
    })
}

fn reminder_rows(found: &[PgRow]) -> Result<Vec<ReminderRow>, StoreError> {
    Ok(found.iter().map(reminder_row).collect::<Result<_, _>>()?)
}

/// An advisory transaction lock on `key`.
async fn xact_lock(tx: &mut sqlx::PgConnection, key: &str) -> Result<(), StoreError> {
    sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))").bind(key).execute(&mut *tx).await?;
    Ok(())
}

/// The lock an [`InboxLock`] holds on PostgreSQL.
pub(super) struct PgHold {
    lock: Option<PgLock>,
    pg: PgStore,
    agent: String,
    /// Another instance held it last and did not let go cleanly.
    pub(super) previous_may_run: bool,
}

impl std::fmt::Debug for PgHold {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgHold").field("agent", &self.agent).finish_non_exhaustive()
    }
}

impl PgHold {
    pub(super) async fn release(&mut self) {
        let Some(lock) = self.lock.take() else { return };
        // Marked while the lock is still held, then the lock goes with its connection.
        let marked = sqlx::query("UPDATE messages_inbox_holds SET released = true WHERE agent_id = $1 AND holder = $2")
            .bind(&self.agent)
            .bind(self.pg.instance())
            .execute(self.pg.pool())
            .await;
        drop(lock);
        if let Err(e) = marked {
            let e = StoreError::from(e);
            tracing::warn!(agent = %self.agent, error = %e, "the inbox was let go without saying so: the next holder waits");
        }
    }

    pub(super) async fn still_held(&mut self) -> bool {
        let Some(lock) = self.lock.as_mut() else { return false };
        if lock.is_held().await {
            return true;
        }
        self.lock = None;
        false
    }
}

/// The directory (agents, groups, channels) and the reminders.
impl PgMessages {
    /// Runs `sql` with text arguments.
    async fn exec(&self, sql: &'static str, args: &[Option<&str>]) -> Result<u64, StoreError> {
        let mut query = sqlx::query(sql);
        for arg in args {
            query = query.bind(*arg);
        }
        Ok(query.execute(self.pg.pool()).await?.rows_affected())
    }

    /// The first column of every row of `sql`, with text arguments.
    async fn texts(&self, sql: &'static str, args: &[&str]) -> Result<Vec<String>, StoreError> {
        let mut query = sqlx::query_scalar(sql);
        for arg in args {
            query = query.bind(*arg);
        }
        Ok(query.fetch_all(self.pg.pool()).await?)
    }

    pub(super) async fn register_agent(&self, agent: &str, at: &str) -> Result<(), StoreError> {
        self.exec(
            "INSERT INTO messages_agents (agent_id, created_at) VALUES ($1, $2) ON CONFLICT DO NOTHING",
            &[Some(agent), Some(at)],
        )
        .await
        .map(drop)
    }

    pub(super) async fn agents(&self) -> Result<Vec<String>, StoreError> {
        self.texts("SELECT agent_id FROM messages_agents ORDER BY agent_id", &[]).await
    }

    pub(super) async fn agent_known(&self, agent: &str) -> Result<bool, StoreError> {
        Ok(sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM messages_agents WHERE agent_id = $1)")
            .bind(agent)
            .fetch_one(self.pg.pool())
            .await?)
    }

    pub(super) async fn define_group(&self, name: &str, members: &[String]) -> Result<(), StoreError> {
        let mut tx = self.pg.pool().begin().await?;
        // Instances starting together redefine the same groups: one after the other.
        xact_lock(&mut tx, &format!("holdfast.messages/group/{name}")).await?;
        sqlx::query("DELETE FROM messages_groups WHERE name = $1").bind(name).execute(&mut *tx).await?;
        sqlx::query(
            "INSERT INTO messages_groups (name, member) SELECT $1, m FROM unnest($2::text[]) AS m
             ON CONFLICT DO NOTHING",
        )
        .bind(name)
        .bind(members)
        .execute(&mut *tx)
        .await?;
        Ok(tx.commit().await?)
    }

    pub(super) async fn group_pairs(&self) -> Result<Vec<(String, String)>, StoreError> {
        Ok(sqlx::query_as("SELECT name, member FROM messages_groups ORDER BY name, member")
            .fetch_all(self.pg.pool())
            .await?)
    }

    pub(super) async fn group_members(&self, name: &str) -> Result<Vec<String>, StoreError> {
        self.texts("SELECT member FROM messages_groups WHERE name = $1 ORDER BY member", &[name]).await
    }

    pub(super) async fn define_channel(&self, name: &str, webhook_url: Option<&str>) -> Result<(), StoreError> {
        self.exec(
            "INSERT INTO messages_channels (name, webhook_url) VALUES ($1, $2)
             ON CONFLICT (name) DO UPDATE SET webhook_url = excluded.webhook_url",
            &[Some(name), webhook_url],
        )
        .await
        .map(drop)
    }

    pub(super) async fn channels(&self) -> Result<Vec<String>, StoreError> {
        self.texts("SELECT name FROM messages_channels ORDER BY name", &[]).await
    }

    pub(super) async fn channel(&self, name: &str) -> Result<Option<Channel>, StoreError> {
        let webhook: Option<Option<String>> =
            sqlx::query_scalar("SELECT webhook_url FROM messages_channels WHERE name = $1")
                .bind(name)
                .fetch_optional(self.pg.pool())
                .await?;
        let Some(webhook_url) = webhook else { return Ok(None) };
        let subscribers =
            sqlx::query_scalar("SELECT agent_id FROM messages_subscriptions WHERE channel = $1 ORDER BY agent_id")
                .bind(name)
                .fetch_all(self.pg.pool())
                .await?;
        Ok(Some(Channel { webhook_url, subscribers }))
    }

    pub(super) async fn subscribe(&self, channel: &str, agent: &str) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "INSERT INTO messages_subscriptions (channel, agent_id)
             SELECT name, $2 FROM messages_channels WHERE name = $1 ON CONFLICT DO NOTHING",
        )
        .bind(channel)
        .bind(agent)
        .execute(self.pg.pool())
        .await?;
        if done.rows_affected() > 0 {
            return Ok(true);
        }
        Ok(sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM messages_channels WHERE name = $1)")
            .bind(channel)
            .fetch_one(self.pg.pool())
            .await?)
    }

    pub(super) async fn unsubscribe(&self, channel: &str, agent: &str) -> Result<(), StoreError> {
        self.exec(
            "DELETE FROM messages_subscriptions WHERE channel = $1 AND agent_id = $2",
            &[Some(channel), Some(agent)],
        )
        .await
        .map(drop)
    }

    pub(super) async fn outbox(&self, agent: &str, limit: usize) -> Result<Vec<OutboxRow>, StoreError> {
        type Raw = (i64, String, Option<String>, Option<String>, String, Option<String>, String);
        let rows: Vec<Raw> = sqlx::query_as(
            "SELECT l.id, o.agent_id, o.session_id, o.user_id, l.content, l.metadata, l.created_at
             FROM messages_outbox o JOIN messages_log l ON l.id = o.message_id
             WHERE o.agent_id = $1 ORDER BY o.id DESC LIMIT $2",
        )
        .bind(agent)
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
        .fetch_all(self.pg.pool())
        .await?;
        Ok(rows
            .into_iter()
            .map(|(message_id, agent_id, session_id, user_id, content, metadata, created_at)| OutboxRow {
                message_id,
                agent_id,
                session_id,
                user_id,
                content,
                metadata,
                created_at,
            })
            .collect())
    }

    pub(super) async fn add_reminder<R: Send + 'static>(
        &self,
        r: NewReminder,
        refuse: impl FnOnce(u64) -> Option<R> + Send + 'static,
    ) -> Result<Added<R>, StoreError> {
        let mut tx = self.pg.pool().begin().await?;
        // Counted and inserted under one lock per agent: instances cannot pass the cap together.
        xact_lock(&mut tx, &format!("holdfast.reminders/{}", r.agent_id)).await?;
        let pending: i64 =
            sqlx::query_scalar("SELECT count(*) FROM reminders_items WHERE agent_id = $1 AND fired_at IS NULL")
                .bind(&r.agent_id)
                .fetch_one(&mut *tx)
                .await?;
        if let Some(refusal) = refuse(u64::try_from(pending).unwrap_or_default()) {
            return Ok(Added::Refused(refusal));
        }
        let (id, xid): (i64, String) = sqlx::query_as(
            "INSERT INTO reminders_items
                 (agent_id, due_at, message, target_type, target_id, created_at, hops, session_id, asked_by)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING id, pg_current_xact_id()::text",
        )
        .bind(&r.agent_id)
        .bind(&r.due_at)
        .bind(&r.message)
        .bind(&r.target_type)
        .bind(&r.target_id)
        .bind(&r.created_at)
        .bind(hops_in(r.hops))
        .bind(&r.session_id)
        .bind(&r.asked_by)
        .fetch_one(&mut *tx)
        .await?;
        // Added again after a lost answer, it would fire twice.
        self.pg.commit(tx, &xid).await?;
        Ok(Added::Inserted(id))
    }

    pub(super) async fn reminders(&self, agent: &str, include_fired: bool) -> Result<Vec<ReminderRow>, StoreError> {
        let filter = if include_fired { "" } else { " AND fired_at IS NULL" };
        let sql = format!("{REMINDER_SELECT} WHERE agent_id = $1{filter} ORDER BY due_at, id");
        reminder_rows(&sqlx::query(AssertSqlSafe(sql)).bind(agent).fetch_all(self.pg.pool()).await?)
    }

    pub(super) async fn cancel_reminder(&self, agent: &str, id: i64) -> Result<bool, StoreError> {
        let done = sqlx::query("DELETE FROM reminders_items WHERE id = $1 AND agent_id = $2 AND fired_at IS NULL")
            .bind(id)
            .bind(agent)
            .execute(self.pg.pool())
            .await?;
        Ok(done.rows_affected() > 0)
    }

    pub(super) async fn cancel_reminders_of_others(&self, agents: &[String]) -> Result<u64, StoreError> {
        let done = sqlx::query("DELETE FROM reminders_items WHERE fired_at IS NULL AND NOT (agent_id = ANY($1))")
            .bind(agents)
            .execute(self.pg.pool())
            .await?;
        Ok(done.rows_affected())
    }

    pub(super) async fn count_reminders_of_others(&self, agents: &[String]) -> Result<u64, StoreError> {
        let n: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM reminders_items WHERE fired_at IS NULL AND NOT (agent_id = ANY($1))",
        )
        .bind(agents)
        .fetch_one(self.pg.pool())
        .await?;
        Ok(u64::try_from(n).unwrap_or_default())
    }

    pub(super) async fn due_reminders(
        &self,
        now: &str,
        agents: Option<&[String]>,
    ) -> Result<Vec<ReminderRow>, StoreError> {
        let sql = format!(
            "{REMINDER_SELECT} WHERE fired_at IS NULL AND due_at <= $1 AND (not_before IS NULL OR not_before <= $1)
             AND ($2::text[] IS NULL OR agent_id = ANY($2)) ORDER BY due_at, id"
        );
        reminder_rows(&sqlx::query(AssertSqlSafe(sql)).bind(now).bind(agents).fetch_all(self.pg.pool()).await?)
    }

    pub(super) async fn next_due(&self, agents: Option<&[String]>) -> Result<Option<String>, StoreError> {
        Ok(sqlx::query_scalar(
            "SELECT min(coalesce(not_before, due_at)) FROM reminders_items
             WHERE fired_at IS NULL AND ($1::text[] IS NULL OR agent_id = ANY($1))",
        )
        .bind(agents)
        .fetch_one(self.pg.pool())
        .await?)
    }
}

/// Sends and inboxes.
impl PgMessages {
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
        let mut tx = self.pg.pool().begin().await?;
        if let Some((reminder, at)) = &m.fires {
            // Claimed here, or passed by: another instance delivering it holds the row.
            let claimed: Option<i64> = sqlx::query_scalar(
                "SELECT id FROM reminders_items WHERE id = $1 AND fired_at IS NULL FOR UPDATE SKIP LOCKED",
            )
            .bind(reminder)
            .fetch_optional(&mut *tx)
            .await?;
            if claimed.is_none() {
                return Ok(Sent::AlreadyFired);
            }
            sqlx::query("UPDATE reminders_items SET fired_at = $1 WHERE id = $2")
                .bind(at)
                .bind(reminder)
                .execute(&mut *tx)
                .await?;
        }
        let (mut delivered, mut skipped) = (Vec::new(), Vec::new());
        match windows {
            None => delivered.clone_from(&m.recipients),
            Some(w) => {
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
                    .bind(&w.until)
                    .bind(&w.now)
                    .fetch_optional(&mut *tx)
                    .await?;
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
                    .await?;
                    let left = current.as_deref().and_then(&w.left).unwrap_or_default();
                    skipped.push((to, left));
                }
                match decide(&delivered, &skipped) {
                    AfterWindows::Store => {}
                    AfterWindows::Refuse(refusal) => return Ok(Sent::Refused(refusal)),
                    AfterWindows::Defer { not_before, refusal } => {
                        // Nothing of this send is kept (the windows it reserved, the claim): only the wait.
                        tx.rollback().await?;
                        if let Some((reminder, _)) = &m.fires {
                            sqlx::query(
                                "UPDATE reminders_items SET not_before = $1 WHERE id = $2 AND fired_at IS NULL",
                            )
                            .bind(&not_before)
                            .bind(reminder)
                            .execute(self.pg.pool())
                            .await?;
                        }
                        return Ok(Sent::Refused(refusal));
                    }
                }
                delivered = m.recipients.iter().filter(|r| delivered.contains(r)).cloned().collect();
            }
        }
        let (id, xid): (i64, String) = sqlx::query_as(
            "INSERT INTO messages_log (sender, target_type, target_id, content, metadata, session_id, created_at, hops)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id, pg_current_xact_id()::text",
        )
        .bind(&m.sender)
        .bind(&m.target_type)
        .bind(&m.target_id)
        .bind(&m.content)
        .bind(&m.metadata)
        .bind(&m.session_id)
        .bind(&m.created_at)
        .bind(hops_in(m.hops))
        .fetch_one(&mut *tx)
        .await?;
        if !delivered.is_empty() {
            sqlx::query(
                "INSERT INTO messages_inbox (message_id, agent_id, via) SELECT $1, a, $3 FROM unnest($2::text[]) AS a",
            )
            .bind(id)
            .bind(&delivered)
            .bind(&m.via)
            .execute(&mut *tx)
            .await?;
            // Sent when the transaction commits, and only then: every instance's readers of these inboxes look.
            sqlx::query("SELECT pg_notify($1, a) FROM unnest($2::text[]) AS a")
                .bind(INBOX_CHANNEL)
                .bind(&delivered)
                .execute(&mut *tx)
                .await?;
        }
        if m.outbox {
            sqlx::query(
                "INSERT INTO messages_outbox (message_id, agent_id, session_id, user_id) VALUES ($1, $2, $3, $4)",
            )
            .bind(id)
            .bind(&m.sender)
            .bind(&m.session_id)
            .bind(&m.target_id)
            .execute(&mut *tx)
            .await?;
        }
        // A COMMIT whose answer was lost may have stored the message: sent again, every recipient would get it
        // twice; and a reminder it fired would be lost (its delivery beyond the store — the user's channel, a
        // webhook — skipped, and the next pass finds it fired). So its outcome is read back.
        self.pg.commit(tx, &xid).await?;
        Ok(Sent::Written(Written { id, delivered, skipped }))
    }

    pub(super) async fn inbox_first(&self, agent: &str) -> Result<Option<InboxRow>, StoreError> {
        let sql = format!("{INBOX_SELECT} WHERE i.agent_id = $1 AND i.delivered_at IS NULL ORDER BY i.id LIMIT 1");
        let row = sqlx::query(AssertSqlSafe(sql)).bind(agent).fetch_optional(self.pg.pool()).await?;
        Ok(row.as_ref().map(inbox_row).transpose()?)
    }

    pub(super) async fn inbox_take(&self, agent: &str, at: &str) -> Result<Option<InboxRow>, StoreError> {
        let mut tx = self.pg.pool().begin().await?;
        let sql = format!(
            "{INBOX_SELECT} WHERE i.agent_id = $1 AND i.delivered_at IS NULL ORDER BY i.id LIMIT 1
             FOR UPDATE OF i SKIP LOCKED"
        );
        let row = sqlx::query(AssertSqlSafe(sql)).bind(agent).fetch_optional(&mut *tx).await?;
        let Some(row) = row.as_ref().map(inbox_row).transpose()? else { return Ok(None) };
        let xid: String = sqlx::query_scalar(
            "UPDATE messages_inbox SET delivered_at = $1 WHERE id = $2 RETURNING pg_current_xact_id()::text",
        )
        .bind(at)
        .bind(row.inbox_id)
        .fetch_one(&mut *tx)
        .await?;
        // A COMMIT whose answer was lost may have marked it taken: then it is handed over, not lost (no later take
        // would return it). Its outcome is read back.
        self.pg.commit(tx, &xid).await?;
        Ok(Some(row))
    }

    pub(super) async fn inbox_ack(&self, agent: &str, inbox_id: i64, at: &str) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE messages_inbox SET delivered_at = $1 WHERE id = $2 AND agent_id = $3 AND delivered_at IS NULL",
        )
        .bind(at)
        .bind(inbox_id)
        .bind(agent)
        .execute(self.pg.pool())
        .await?;
        Ok(())
    }

    pub(super) async fn inbox_pending(&self, agent: &str) -> Result<Vec<InboxRow>, StoreError> {
        let sql = format!("{INBOX_SELECT} WHERE i.agent_id = $1 AND i.delivered_at IS NULL ORDER BY i.id");
        let rows = sqlx::query(AssertSqlSafe(sql)).bind(agent).fetch_all(self.pg.pool()).await?;
        Ok(rows.iter().map(inbox_row).collect::<Result<_, _>>()?)
    }

    pub(super) async fn hold_inbox(&self, agent: &str, wait: Duration) -> Result<Option<InboxLock>, StoreError> {
        let s = &self.pg;
        let key = format!("holdfast.inbox/{agent}");
        let Some(lock) = s.lock_within(&key, wait).await? else { return Ok(None) };
        // Under the lock: who held it last, and whether it let go cleanly; then this instance holds it.
        let last: Option<(String, bool)> =
            sqlx::query_as("SELECT holder, released FROM messages_inbox_holds WHERE agent_id = $1")
                .bind(agent)
                .fetch_optional(s.pool())
                .await?;
        sqlx::query(
            "INSERT INTO messages_inbox_holds (agent_id, holder, released) VALUES ($1, $2, false)
             ON CONFLICT (agent_id) DO UPDATE SET holder = excluded.holder, released = false",
        )
        .bind(agent)
        .bind(s.instance())
        .execute(s.pool())
        .await?;
        let previous_may_run = last.is_some_and(|(holder, released)| !released && holder != s.instance());
        let held = PgHold { lock: Some(lock), pg: s.clone(), agent: agent.to_owned(), previous_may_run };
        Ok(Some(InboxLock { held: Some(held) }))
    }

    /// Listens on [`INBOX_CHANNEL`] on a task of the current runtime, calling `wake` with each notification's agent
    /// (and with `None` once listening, and after a reconnection: what was sent meanwhile may be lost), until every
    /// other owner of `wake` has dropped it.
    pub fn watch_inboxes(&self, wake: &InboxWake) -> Result<(), StoreError> {
        // The payload only says where to look: a reader woken by it reads the table, so a notification another
        // role sends (any role may NOTIFY) costs a read, never a message.
        let wake = Arc::downgrade(wake);
        let store = self.pg.clone();
        let runtime = tokio::runtime::Handle::try_current()
            .map_err(|_| StoreError::Query("watching the inboxes needs a Tokio runtime".into()))?;
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
}

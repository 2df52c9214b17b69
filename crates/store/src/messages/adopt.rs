//! The one-time move of an instance's messages and reminders from its SQLite file into PostgreSQL
//! ([`PgMessages::adopt`]): every row of every messaging table, with its id, so a `msg_7` or `rem_3` an agent noted
//! still names the same thing.

use super::postgres::{PgMessages, hops_in};
use super::sqlite::{REMINDER_SELECT, reminder_row};
use super::{Adopted, ReminderRow};
use crate::{SqliteDb, StoreError};
use rusqlite::Connection;

/// A `messages_log` row: id, sender, target type, target id, content, metadata, session, created_at, hops.
type LogRow = (i64, String, String, Option<String>, String, Option<String>, Option<String>, String, u32);

/// A `messages_outbox` row: id, message id, agent, session, user, forwarded_at.
type OutboxCopy = (i64, i64, String, Option<String>, Option<String>, Option<String>);

/// Everything the SQLite file holds for messaging.
#[derive(Debug, Default)]
struct Local {
    agents: Vec<(String, String)>,
    log: Vec<LogRow>,
    inbox: Vec<(i64, i64, String, String, Option<String>)>,
    outbox: Vec<OutboxCopy>,
    groups: Vec<(String, String)>,
    channels: Vec<(String, Option<String>)>,
    subscriptions: Vec<(String, String)>,
    cooldowns: Vec<(String, String, String)>,
    reminders: Vec<ReminderRow>,
}

fn all<T, F>(c: &Connection, sql: &str, f: F) -> rusqlite::Result<Vec<T>>
where
    F: FnMut(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
{
    let mut stmt = c.prepare(sql)?;
    let rows = stmt.query_map([], f)?;
    rows.collect()
}

fn column<T, U: Clone>(rows: &[T], f: impl Fn(&T) -> U) -> Vec<U> {
    rows.iter().map(f).collect()
}

/// Moves a table's id sequence past the ids copied into it.
async fn resequence(tx: &mut sqlx::PgConnection, table: &str) -> Result<(), sqlx::Error> {
    let sql = format!(
        "SELECT setval(pg_get_serial_sequence('{table}', 'id'), (SELECT max(id) FROM {table})) WHERE EXISTS (SELECT 1 FROM {table})"
    );
    sqlx::query(sqlx::AssertSqlSafe(sql)).execute(&mut *tx).await?;
    Ok(())
}

impl Local {
    /// Reads every messaging row of the file.
    fn read(c: &mut Connection) -> rusqlite::Result<Self> {
        Ok(Self {
            agents: all(c, "SELECT agent_id, created_at FROM messages_agents", |r| Ok((r.get(0)?, r.get(1)?)))?,
            log: all(
                c,
                "SELECT id, sender, target_type, target_id, content, metadata, session_id, created_at, hops
                 FROM messages_log ORDER BY id",
                |r| {
                    Ok((
                        r.get(0)?,
                        r.get(1)?,
                        r.get(2)?,
                        r.get(3)?,
                        r.get(4)?,
                        r.get(5)?,
                        r.get(6)?,
                        r.get(7)?,
                        r.get(8)?,
                    ))
                },
            )?,
            inbox: all(c, "SELECT id, message_id, agent_id, via, delivered_at FROM messages_inbox ORDER BY id", |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
            })?,
            outbox: all(
                c,
                "SELECT id, message_id, agent_id, session_id, user_id, forwarded_at FROM messages_outbox ORDER BY id",
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?)),
            )?,
            groups: all(c, "SELECT name, member FROM messages_groups", |r| Ok((r.get(0)?, r.get(1)?)))?,
            channels: all(c, "SELECT name, webhook_url FROM messages_channels", |r| Ok((r.get(0)?, r.get(1)?)))?,
            subscriptions: all(c, "SELECT channel, agent_id FROM messages_subscriptions", |r| {
                Ok((r.get(0)?, r.get(1)?))
            })?,
            cooldowns: all(c, "SELECT sender, recipient, until_at FROM messages_cooldowns", |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })?,
            reminders: all(c, &format!("{REMINDER_SELECT} ORDER BY id"), reminder_row)?,
        })
    }

    /// Replaces NUL characters (which an older build let into message and reminder text, and PostgreSQL's text
    /// refuses) with U+FFFD, so one such row cannot stop the move.
    fn without_nul(mut self) -> Self {
        let clean = |s: &mut String| {
            if s.contains('\0') {
                *s = s.replace('\0', "\u{FFFD}");
            }
        };
        for row in &mut self.log {
            clean(&mut row.4);
            if let Some(m) = row.5.as_mut() {
                clean(m);
            }
        }
        for row in &mut self.reminders {
            clean(&mut row.message);
            if let Some(a) = row.asked_by.as_mut() {
                clean(a);
            }
        }
        self
    }

    /// Counts what the file still has waiting: undelivered inbox rows and unfired reminders.
    fn waiting(c: &mut Connection) -> rusqlite::Result<usize> {
        let n: i64 = c.query_row(
            "SELECT (SELECT count(*) FROM messages_inbox WHERE delivered_at IS NULL)
                  + (SELECT count(*) FROM reminders_items WHERE fired_at IS NULL)",
            [],
            |r| r.get(0),
        )?;
        Ok(usize::try_from(n).unwrap_or(0))
    }

    /// Whether the file holds any message or reminder.
    fn any(c: &mut Connection) -> rusqlite::Result<bool> {
        c.query_row("SELECT EXISTS (SELECT 1 FROM messages_log) OR EXISTS (SELECT 1 FROM reminders_items)", [], |r| {
            r.get(0)
        })
    }

    /// Writes every row in `tx`, keeping ids, and moves the id sequences past them.
    async fn write(self, tx: &mut sqlx::PgConnection) -> Result<(), sqlx::Error> {
        let hops = hops_in;
        sqlx::query(
            "INSERT INTO messages_agents (agent_id, created_at) SELECT * FROM unnest($1::text[], $2::text[])
             ON CONFLICT DO NOTHING",
        )
        .bind(column(&self.agents, |r| r.0.clone()))
        .bind(column(&self.agents, |r| r.1.clone()))
        .execute(&mut *tx)
        .await?;
        let l = &self.log;
        sqlx::query(
            "INSERT INTO messages_log (id, sender, target_type, target_id, content, metadata, session_id, created_at, hops)
             SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
                                  $8::text[], $9::int[])",
        )
        .bind(column(l, |r| r.0))
        .bind(column(l, |r| r.1.clone()))
        .bind(column(l, |r| r.2.clone()))
        .bind(column(l, |r| r.3.clone()))
        .bind(column(l, |r| r.4.clone()))
        .bind(column(l, |r| r.5.clone()))
        .bind(column(l, |r| r.6.clone()))
        .bind(column(l, |r| r.7.clone()))
        .bind(column(l, |r| hops(r.8)))
        .execute(&mut *tx)
        .await?;
        let i = &self.inbox;
        sqlx::query(
            "INSERT INTO messages_inbox (id, message_id, agent_id, via, delivered_at)
             SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::text[], $4::text[], $5::text[])",
        )
        .bind(column(i, |r| r.0))
        .bind(column(i, |r| r.1))
        .bind(column(i, |r| r.2.clone()))
        .bind(column(i, |r| r.3.clone()))
        .bind(column(i, |r| r.4.clone()))
        .execute(&mut *tx)
        .await?;
        let o = &self.outbox;
        sqlx::query(
            "INSERT INTO messages_outbox (id, message_id, agent_id, session_id, user_id, forwarded_at)
             SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::text[])",
        )
        .bind(column(o, |r| r.0))
        .bind(column(o, |r| r.1))
        .bind(column(o, |r| r.2.clone()))
        .bind(column(o, |r| r.3.clone()))
        .bind(column(o, |r| r.4.clone()))
        .bind(column(o, |r| r.5.clone()))
        .execute(&mut *tx)
        .await?;
        sqlx::query(
            "INSERT INTO messages_groups (name, member) SELECT * FROM unnest($1::text[], $2::text[]) ON CONFLICT DO NOTHING",
        )
        .bind(column(&self.groups, |r| r.0.clone()))
        .bind(column(&self.groups, |r| r.1.clone()))
        .execute(&mut *tx)
        .await?;
        sqlx::query(
            "INSERT INTO messages_channels (name, webhook_url) SELECT * FROM unnest($1::text[], $2::text[])
             ON CONFLICT DO NOTHING",
        )
        .bind(column(&self.channels, |r| r.0.clone()))
        .bind(column(&self.channels, |r| r.1.clone()))
        .execute(&mut *tx)
        .await?;
        sqlx::query(
            "INSERT INTO messages_subscriptions (channel, agent_id) SELECT * FROM unnest($1::text[], $2::text[])
             ON CONFLICT DO NOTHING",
        )
        .bind(column(&self.subscriptions, |r| r.0.clone()))
        .bind(column(&self.subscriptions, |r| r.1.clone()))
        .execute(&mut *tx)
        .await?;
        sqlx::query(
            "INSERT INTO messages_cooldowns (sender, recipient, until_at)
             SELECT * FROM unnest($1::text[], $2::text[], $3::text[]) ON CONFLICT DO NOTHING",
        )
        .bind(column(&self.cooldowns, |r| r.0.clone()))
        .bind(column(&self.cooldowns, |r| r.1.clone()))
        .bind(column(&self.cooldowns, |r| r.2.clone()))
        .execute(&mut *tx)
        .await?;
        let r = &self.reminders;
        sqlx::query(
            "INSERT INTO reminders_items
                 (id, agent_id, due_at, message, target_type, target_id, created_at, fired_at, hops, session_id,
                  asked_by)
             SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
                                  $8::text[], $9::int[], $10::text[], $11::text[])",
        )
        .bind(column(r, |x| x.id))
        .bind(column(r, |x| x.agent_id.clone()))
        .bind(column(r, |x| x.due_at.clone()))
        .bind(column(r, |x| x.message.clone()))
        .bind(column(r, |x| x.target_type.clone()))
        .bind(column(r, |x| x.target_id.clone()))
        .bind(column(r, |x| x.created_at.clone()))
        .bind(column(r, |x| x.fired_at.clone()))
        .bind(column(r, |x| hops(x.hops)))
        .bind(column(r, |x| x.session_id.clone()))
        .bind(column(r, |x| x.asked_by.clone()))
        .execute(&mut *tx)
        .await?;
        for table in ["messages_log", "messages_inbox", "messages_outbox", "reminders_items"] {
            resequence(tx, table).await?;
        }
        Ok(())
    }
}

/// What a file holds, read on its writing connection.
async fn local<T: Send + 'static>(
    file: &SqliteDb,
    f: impl FnOnce(&mut Connection) -> rusqlite::Result<T> + Send + 'static,
) -> Result<T, StoreError> {
    Ok(file.write(f).await??)
}

impl PgMessages {
    /// Copies the messages, inboxes, outbox, directory, anti-loop windows and reminders an instance kept in its
    /// SQLite file (`file`, its tables migrated) into this database, once: when it holds no message and no reminder
    /// yet (under a lock, so instances starting together copy once), keeping their ids. The file keeps its rows.
    pub async fn adopt(&self, file: &SqliteDb) -> Result<Adopted, StoreError> {
        if !local(file, Local::any).await? {
            return Ok(Adopted::Nothing);
        }
        let shared: bool =
            sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM messages_log) OR EXISTS (SELECT 1 FROM reminders_items)")
                .fetch_one(self.pg.pool())
                .await?;
        if shared {
            return Ok(Adopted::AlreadyShared { waiting: local(file, Local::waiting).await? });
        }
        let copy = local(file, Local::read).await?.without_nul();
        let rows = copy.log.len() + copy.reminders.len();
        let mut tx = self.pg.pool().begin().await?;
        sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended('holdfast.messages/adopt', 0))")
            .execute(&mut *tx)
            .await?;
        let any: bool =
            sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM messages_log) OR EXISTS (SELECT 1 FROM reminders_items)")
                .fetch_one(&mut *tx)
                .await?;
        if any {
            drop(tx);
            return Ok(Adopted::AlreadyShared { waiting: local(file, Local::waiting).await? });
        }
        copy.write(&mut tx).await?;
        tx.commit().await?;
        Ok(Adopted::Copied { rows })
    }
}

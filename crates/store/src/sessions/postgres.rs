//! Sessions in PostgreSQL: what [`super::SqliteSessionStore`] keeps, in the database every instance shares, so a
//! session created on one instance is continued on another. A state save is the same compare-and-set on the
//! revision: two instances saving one session cannot both win (`session_conflict`, and the loser reloads).
//!
//! Every tool call saves its session's state, so saves are batched: one task takes every save queued while the previous
//! batch was written and writes them in one transaction, with one statement over arrays for first saves and one for the
//! others. A batch holds one save per session: a session's next revision queued behind it (one copy's pipelined calls)
//! is merged into it, so the compare-and-set goes from the first one's revision to the last one's; any other second
//! save of a session waits for the next batch, so each compare-and-set sees the one before it. The transaction first
//! locks the batch's rows in session-id order, the order every instance uses, so two instances' batches wait for each
//! other instead of dead-locking. When a batch fails (a dead-lock PostgreSQL broke anyway, a lost connection), each
//! of its saves is tried again alone, so one bad save fails only its own call; none is acknowledged unless its row
//! was written. A batch whose COMMIT went out but whose answer was lost (the connection cut after the server
//! committed) may have been committed: each row records the number its writer drew for the save that wrote it
//! (`save_id`), so a save that is not written when tried again is read back, and acknowledged if its own number is
//! there, not reported as a conflict. A pipelined save is written only on top of its own copy's write
//! (`super::runs`), or refused unwritten.

use super::{MessageRole, NewMessage, SessionInfo, SessionStorage, StoredMessage, conflict, ts};
use crate::PgStore;
use chrono::Utc;
use holdfast_core::event::TokenUsage as Usage;
use holdfast_core::session_state::{StateDelta, StoredState};
use holdfast_core::tool::BoxFuture;
use holdfast_core::{SessionStateStore, ToolError};
use serde_json::Value;
use sqlx::postgres::PgRow;
use sqlx::{AssertSqlSafe, Row};
use std::collections::{HashSet, VecDeque};
use tokio::sync::{mpsc, oneshot};

/// Most state saves written by one statement.
const SAVE_BATCH: usize = 256;

fn db_err(e: impl std::fmt::Display) -> ToolError {
    ToolError::internal(format!("sessions: {}", holdfast_core::redact_urls(&e.to_string())))
}

/// (Statements built from this constant and literals only, never from input: what `AssertSqlSafe` asserts.)
const SELECT_INFO: &str = "SELECT s.id, s.kind, s.title, s.created_at, s.updated_at,
        (SELECT COUNT(*) FROM session_messages m WHERE m.session_id = s.id), s.input_tokens, s.output_tokens
    FROM sessions s";

fn info(r: &PgRow) -> Result<SessionInfo, ToolError> {
    Ok(SessionInfo {
        id: r.try_get(0).map_err(db_err)?,
        kind: r.try_get(1).map_err(db_err)?,
        title: r.try_get(2).map_err(db_err)?,
        created_at: ts(r.try_get(3).map_err(db_err)?),
        updated_at: ts(r.try_get(4).map_err(db_err)?),
        message_count: r.try_get(5).map_err(db_err)?,
        input_tokens: r.try_get(6).map_err(db_err)?,
        output_tokens: r.try_get(7).map_err(db_err)?,
    })
}

/// The PostgreSQL session store. Clones share the pool.
#[derive(Debug, Clone)]
pub struct PgSessionStore {
    store: PgStore,
    saves: mpsc::UnboundedSender<Save>,
}

/// A queued compare-and-set of one session's state, answered with whether its row was written. Consecutive saves
/// of one session (revisions `first..=revision`, from one copy pipelining its calls) are merged into one: a single
/// compare-and-set from `first - 1` to `revision`, the later value of a part winning, every caller answered alike.
/// (Only saves of one known copy are merged: another copy's next revision is a save of its own.)
#[derive(Debug)]
struct Save {
    id: String,
    first: i64,
    revision: i64,
    delta: StateDelta,
    saved_at: String,
    /// Drawn by the writer when it takes the save; never 0, which rows written before the column existed hold.
    save_id: i64,
    replies: Vec<oneshot::Sender<Result<bool, ToolError>>>,
}

impl Save {
    /// Whether `next` is the same copy's pipelined save of this session's next revision.
    fn follows(&self, next: &Save) -> bool {
        next.delta.follows
            && self.revision + 1 == next.revision
            && self.delta.copy == next.delta.copy
            && next.delta.copy != 0
    }

    /// Takes `next`, the same copy's save of this session's next revision, into this one.
    fn merge(&mut self, next: Save) {
        let names: HashSet<&str> = next.delta.parts.iter().map(|(name, _)| name.as_str()).collect();
        self.delta.parts.retain(|(name, _)| !names.contains(name.as_str()));
        self.delta.parts.extend(next.delta.parts);
        (self.revision, self.saved_at) = (next.revision, next.saved_at);
        self.replies.extend(next.replies);
    }

    /// Remembers whether the copy wrote it (a pipelined save of its next revision goes only on its own write).
    fn record(&self, runs: &mut super::runs::Runs, outcome: &Result<HashSet<String>, ToolError>) {
        let revision = u64::try_from(self.revision).unwrap_or_default();
        let written = outcome.as_ref().is_ok_and(|written| written.contains(&self.id));
        runs.record(&self.id, self.delta.copy, revision, written);
    }

    fn answer(self, outcome: &Result<HashSet<String>, ToolError>) {
        for reply in self.replies {
            let _ = reply.send(outcome.as_ref().map(|written| written.contains(&self.id)).map_err(Clone::clone));
        }
    }
}

impl PgSessionStore {
    /// The store in `store`'s database, migrated.
    pub async fn open(store: PgStore) -> Result<Self, ToolError> {
        store.migrate(&crate::schema::SESSIONS).await?;
        let (saves, rx) = mpsc::unbounded_channel();
        tokio::spawn(write_saves(store.clone(), rx));
        Ok(Self { store, saves })
    }

    async fn get_info(&self, id: &str) -> Result<Option<SessionInfo>, ToolError> {
        let row = sqlx::query(AssertSqlSafe(format!("{SELECT_INFO} WHERE s.id = $1")))
            .bind(id)
            .fetch_optional(self.store.pool())
            .await
            .map_err(db_err)?;
        row.as_ref().map(info).transpose()
    }
}

impl SessionStateStore for PgSessionStore {
    fn save_state(
        &self,
        session_id: &str,
        revision: u64,
        delta: StateDelta,
    ) -> BoxFuture<'static, Result<(), ToolError>> {
        // Queued now, in the order of the calls; the future only waits for the writer's answer.
        let (reply, answer) = oneshot::channel();
        let id = session_id.to_owned();
        let queued = i64::try_from(revision).map_err(db_err).and_then(|rev| {
            let saved_at = Utc::now().to_rfc3339();
            let save =
                Save { id: id.clone(), first: rev, revision: rev, delta, saved_at, save_id: 0, replies: vec![reply] };
            self.saves.send(save).map_err(|_| db_err("the state writer has stopped"))
        });
        Box::pin(async move {
            queued?;
            let written = answer.await.map_err(|_| db_err("the state writer stopped before answering"))??;
            if !written {
                return Err(conflict(&id, revision));
            }
            Ok(())
        })
    }
}

impl SessionStorage for PgSessionStore {
    fn link_get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<Value>, ToolError>> {
        Box::pin(async move {
            let text: Option<String> = sqlx::query_scalar("SELECT value FROM session_links WHERE key = $1")
                .bind(key)
                .fetch_optional(self.store.pool())
                .await
                .map_err(db_err)?;
            text.map(|t| serde_json::from_str(&t).map_err(db_err)).transpose()
        })
    }

    fn link_merge<'a>(&'a self, key: &'a str, fields: Value) -> BoxFuture<'a, Result<(), ToolError>> {
        Box::pin(async move {
            let Value::Object(fields) = fields else { return Err(db_err("a link holds a JSON object")) };
            let mut tx = self.store.pool().begin().await.map_err(db_err)?;
            // The row lock (or, for a new key, the insert's conflict) keeps two merges from losing each other's
            // fields.
            let old: Option<String> = sqlx::query_scalar("SELECT value FROM session_links WHERE key = $1 FOR UPDATE")
                .bind(key)
                .fetch_optional(&mut *tx)
                .await
                .map_err(db_err)?;
            let mut value =
                old.and_then(|t| serde_json::from_str::<serde_json::Map<String, Value>>(&t).ok()).unwrap_or_default();
            value.extend(fields);
            let xid: String = sqlx::query_scalar(
                "INSERT INTO session_links (key, value) VALUES ($1, $2)
                 ON CONFLICT (key) DO UPDATE SET value = excluded.value RETURNING pg_current_xact_id()::text",
            )
            .bind(key)
            .bind(Value::Object(value).to_string())
            .fetch_one(&mut *tx)
            .await
            .map_err(db_err)?;
            // A COMMIT whose answer was lost may have merged them (an inbox turn's "answering" mark, read after a
            // restart as "this turn began"): its outcome is read back, never reported as an error if it stood.
            self.store.commit(tx, &xid).await.map_err(db_err)
        })
    }

    fn link_delete<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<(), ToolError>> {
        Box::pin(async move {
            sqlx::query("DELETE FROM session_links WHERE key = $1")
                .bind(key)
                .execute(self.store.pool())
                .await
                .map_err(db_err)?;
            Ok(())
        })
    }

    fn load_state<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<StoredState>, ToolError>> {
        Box::pin(async move {
            // One snapshot for the revision and its parts: a save committed between two reads cannot mix them.
            let mut tx = self.store.pool().begin().await.map_err(db_err)?;
            sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
            let row = sqlx::query("SELECT revision, state FROM session_state WHERE session_id = $1")
                .bind(id)
                .fetch_optional(&mut *tx)
                .await
                .map_err(db_err)?;
            let Some(row) = row else { return Ok(None) };
            let rev: i64 = row.try_get(0).map_err(db_err)?;
            let legacy: String = row.try_get(1).map_err(db_err)?;
            let parts: Vec<(String, String)> =
                sqlx::query_as("SELECT part, value FROM session_parts WHERE session_id = $1")
                    .bind(id)
                    .fetch_all(&mut *tx)
                    .await
                    .map_err(db_err)?;
            tx.commit().await.map_err(db_err)?;
            Ok(Some(StoredState {
                revision: u64::try_from(rev).unwrap_or_default(),
                legacy: Some(legacy).filter(|l| !l.is_empty()),
                parts: parts.into_iter().collect(),
            }))
        })
    }

    fn create<'a>(&'a self, id: &'a str, kind: &'a str) -> BoxFuture<'a, Result<SessionInfo, ToolError>> {
        Box::pin(async move {
            sqlx::query(
                "INSERT INTO sessions (id, kind, title, created_at, updated_at) VALUES ($1, $2, NULL, $3, $3)
                 ON CONFLICT (id) DO NOTHING",
            )
            .bind(id)
            .bind(kind)
            .bind(Utc::now().to_rfc3339())
            .execute(self.store.pool())
            .await
            .map_err(db_err)?;
            self.get_info(id).await?.ok_or_else(|| db_err("session vanished after insert"))
        })
    }

    fn get<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<SessionInfo>, ToolError>> {
        Box::pin(self.get_info(id))
    }

    fn list(&self, limit: usize) -> BoxFuture<'_, Result<Vec<SessionInfo>, ToolError>> {
        Box::pin(async move {
            let limit = i64::try_from(limit.min(10_000)).unwrap_or(10_000);
            let rows = sqlx::query(AssertSqlSafe(format!("{SELECT_INFO} ORDER BY s.updated_at DESC LIMIT $1")))
                .bind(limit)
                .fetch_all(self.store.pool())
                .await
                .map_err(db_err)?;
            rows.iter().map(info).collect()
        })
    }

    fn append<'a>(
        &'a self,
        session_id: &'a str,
        message: NewMessage,
    ) -> BoxFuture<'a, Result<StoredMessage, ToolError>> {
        Box::pin(async move {
            let now = Utc::now();
            let now_s = now.to_rfc3339();
            let calls = if message.tool_calls.is_empty() {
                None
            } else {
                Some(serde_json::to_string(&message.tool_calls).map_err(db_err)?)
            };
            let mut tx = self.store.pool().begin().await.map_err(db_err)?;
            // The session's row lock orders appends from every instance; a session that does not exist is an error.
            let found: Option<String> = sqlx::query_scalar("SELECT id FROM sessions WHERE id = $1 FOR UPDATE")
                .bind(session_id)
                .fetch_optional(&mut *tx)
                .await
                .map_err(db_err)?;
            if found.is_none() {
                return Err(db_err(format!("no session {session_id:?}")));
            }
            let seq: i64 =
                sqlx::query_scalar("SELECT COALESCE(MAX(seq), 0) + 1 FROM session_messages WHERE session_id = $1")
                    .bind(session_id)
                    .fetch_one(&mut *tx)
                    .await
                    .map_err(db_err)?;
            let xid: String = sqlx::query_scalar(
                "INSERT INTO session_messages (session_id, seq, role, content, tool_calls, tool_call_id, name, created_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING pg_current_xact_id()::text",
            )
            .bind(session_id)
            .bind(seq)
            .bind(message.role.as_str())
            .bind(&message.content)
            .bind(calls)
            .bind(&message.tool_call_id)
            .bind(&message.name)
            .bind(&now_s)
            .fetch_one(&mut *tx)
            .await
            .map_err(db_err)?;
            if message.role == MessageRole::User {
                let title: String = message.content.chars().take(80).collect();
                sqlx::query("UPDATE sessions SET title = $2 WHERE id = $1 AND title IS NULL")
                    .bind(session_id)
                    .bind(title)
                    .execute(&mut *tx)
                    .await
                    .map_err(db_err)?;
            }
            sqlx::query("UPDATE sessions SET updated_at = $2 WHERE id = $1")
                .bind(session_id)
                .bind(&now_s)
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
            // Appended again after a lost answer, the entry would be in the history twice.
            self.store.commit(tx, &xid).await.map_err(db_err)?;
            Ok(StoredMessage {
                seq,
                role: message.role,
                content: message.content,
                tool_calls: message.tool_calls,
                tool_call_id: message.tool_call_id,
                name: message.name,
                created_at: now,
            })
        })
    }

    fn history<'a>(&'a self, session_id: &'a str) -> BoxFuture<'a, Result<Vec<StoredMessage>, ToolError>> {
        Box::pin(async move {
            let rows = sqlx::query(
                "SELECT seq, role, content, tool_calls, tool_call_id, name, created_at
                 FROM session_messages WHERE session_id = $1 ORDER BY seq",
            )
            .bind(session_id)
            .fetch_all(self.store.pool())
            .await
            .map_err(db_err)?;
            rows.iter()
                .map(|r| {
                    let calls: Option<String> = r.try_get(3).map_err(db_err)?;
                    Ok(StoredMessage {
                        seq: r.try_get(0).map_err(db_err)?,
                        role: MessageRole::parse(&r.try_get::<String, _>(1).map_err(db_err)?),
                        content: r.try_get(2).map_err(db_err)?,
                        tool_calls: calls.and_then(|c| serde_json::from_str(&c).ok()).unwrap_or_default(),
                        tool_call_id: r.try_get(4).map_err(db_err)?,
                        name: r.try_get(5).map_err(db_err)?,
                        created_at: ts(r.try_get(6).map_err(db_err)?),
                    })
                })
                .collect()
        })
    }

    fn add_usage<'a>(&'a self, session_id: &'a str, usage: Usage) -> BoxFuture<'a, Result<(), ToolError>> {
        Box::pin(async move {
            sqlx::query(
                "UPDATE sessions SET input_tokens = input_tokens + $2, output_tokens = output_tokens + $3 WHERE id = $1",
            )
            .bind(session_id)
            .bind(i64::try_from(usage.input_tokens).unwrap_or(i64::MAX))
            .bind(i64::try_from(usage.output_tokens).unwrap_or(i64::MAX))
            .execute(self.store.pool())
            .await
            .map_err(db_err)?;
            Ok(())
        })
    }

    fn stored_revision<'a>(&'a self, session_id: &'a str) -> BoxFuture<'a, Result<Option<u64>, ToolError>> {
        Box::pin(async move {
            let rev: Option<i64> = sqlx::query_scalar("SELECT revision FROM session_state WHERE session_id = $1")
                .bind(session_id)
                .fetch_optional(self.store.pool())
                .await
                .map_err(db_err)?;
            Ok(rev.map(|r| u64::try_from(r).unwrap_or_default()))
        })
    }

    fn name_session<'a>(&'a self, session_id: &'a str, title: &'a str) -> BoxFuture<'a, Result<(), ToolError>> {
        Box::pin(async move {
            sqlx::query("UPDATE sessions SET title = $2 WHERE id = $1 AND title IS NULL")
                .bind(session_id)
                .bind(title)
                .execute(self.store.pool())
                .await
                .map_err(db_err)?;
            Ok(())
        })
    }
}

/// Writes queued saves in batches until every handle on the store is dropped.
async fn write_saves(store: PgStore, mut rx: mpsc::UnboundedReceiver<Save>) {
    let mut runs = super::runs::Runs::default();
    let mut save_ids = SaveIds::new();
    let mut queued = VecDeque::new();
    let mut incoming = Vec::with_capacity(SAVE_BATCH);
    loop {
        if queued.is_empty() {
            if rx.recv_many(&mut incoming, SAVE_BATCH).await == 0 {
                return;
            }
        } else {
            while incoming.len() < SAVE_BATCH
                && let Ok(save) = rx.try_recv()
            {
                incoming.push(save);
            }
        }
        queued.extend(incoming.drain(..));
        // Saves in order, up to the first that names a session already in the batch, except the next revision of
        // that session, which is merged into its save (one copy's pipelined calls: one compare-and-set).
        let mut at = std::collections::HashMap::new();
        let (mut batch, mut taken): (Vec<Save>, usize) = (Vec::new(), 0);
        while taken < SAVE_BATCH
            && let Some(next) = queued.front()
        {
            let merge = match at.get(&next.id) {
                Some(&i) if batch.get(i).is_some_and(|s: &Save| s.follows(next)) => Some(i),
                Some(_) => break,
                None => None,
            };
            let Some(mut save) = queued.pop_front() else { break };
            taken += 1;
            save.save_id = save_ids.next();
            // A pipelined save not on its own copy's write is refused, unwritten.
            let first = u64::try_from(save.first).unwrap_or_default();
            if merge.is_none() && !runs.admits(&save.id, save.delta.copy, first, save.delta.follows) {
                save.answer(&Ok(HashSet::new()));
                continue;
            }
            match merge.and_then(|i: usize| -> Option<&mut Save> { batch.get_mut(i) }) {
                Some(into) => into.merge(save),
                None => {
                    at.insert(save.id.clone(), batch.len());
                    batch.push(save);
                }
            }
        }
        if batch.is_empty() {
            // Every save taken was refused unwritten.
            continue;
        }
        batch.sort_by(|a, b| a.id.cmp(&b.id));
        match write_batch(&store, &batch, false).await {
            Ok(written) => {
                let outcome = Ok(written);
                for save in batch {
                    save.record(&mut runs, &outcome);
                    save.answer(&outcome);
                }
            }
            Err(e) => {
                // Each save is tried again alone, so one bad save fails only its own call. The retry's write waits
                // for the failed transaction's row locks (a COMMIT still under way on the server), so what it finds
                // is settled: a save it cannot write is then read back, and stands if its own number is there.
                tracing::warn!(saves = batch.len(), error = %e, "sessions: a batch of state saves failed; saving each alone");
                for save in batch {
                    let alone = write_batch(&store, std::slice::from_ref(&save), true).await;
                    let alone = landed_anyway(&store, &save, alone).await;
                    save.record(&mut runs, &alone);
                    save.answer(&alone);
                }
            }
        }
    }
}

/// The numbers a writer draws for its saves: from a random start, one apart, skipping 0. Two writers' numbers meet
/// only if their random starts are within a few billion of each other (odds about 2^-30 per pair of processes), and
/// even then a save read back must also match the row's session and revision.
struct SaveIds(i64);

impl SaveIds {
    fn new() -> Self {
        let mut start = [0u8; 8];
        // Without the OS's randomness the clock's nanoseconds serve: what matters is that two writers differ.
        if getrandom::fill(&mut start).is_err() {
            let nanos = Utc::now().timestamp_nanos_opt().unwrap_or_default();
            start = nanos.to_le_bytes();
        }
        Self(i64::from_le_bytes(start))
    }

    fn next(&mut self) -> i64 {
        self.0 = self.0.wrapping_add(1);
        if self.0 == 0 {
            self.0 = 1;
        }
        self.0
    }
}

/// `outcome` of `save`, unless the save was not written and its row holds its revision and its number: then a
/// COMMIT whose answer was lost did commit it, and it is acknowledged. A read that fails leaves `outcome` as it is.
async fn landed_anyway(
    store: &PgStore,
    save: &Save,
    outcome: Result<HashSet<String>, ToolError>,
) -> Result<HashSet<String>, ToolError> {
    if outcome.as_ref().is_ok_and(|written| written.contains(&save.id)) {
        return outcome;
    }
    let stored: Result<Option<(i64, i64)>, _> =
        sqlx::query_as("SELECT revision, save_id FROM session_state WHERE session_id = $1")
            .bind(&save.id)
            .fetch_optional(store.pool())
            .await;
    match stored {
        Ok(Some(row)) if row == (save.revision, save.save_id) => {
            tracing::info!(session = %save.id, revision = save.revision, "sessions: a save whose COMMIT went unanswered was committed");
            Ok(HashSet::from([save.id.clone()]))
        }
        _ => outcome,
    }
}

/// The batch (sorted by session id) in one transaction: its existing rows locked in that order, first saves
/// (revision 1) inserted, the others compared-and-set, each kind with one statement over arrays. The ids of the
/// sessions whose row was written.
///
/// `again`: the batch is being tried again after a failure, whose transaction the server may still hold (a connection
/// cut half-open can leave it idle for as long as TCP keeps it): its row locks are waited for at most 30 s.
async fn write_batch(store: &PgStore, batch: &[Save], again: bool) -> Result<HashSet<String>, ToolError> {
    let mut tx = if again { store.begin_read_back().await } else { store.pool().begin().await }.map_err(db_err)?;
    let ids: Vec<&str> = batch.iter().map(|s| s.id.as_str()).collect();
    sqlx::query("SELECT 1 FROM session_state WHERE session_id = ANY($1) ORDER BY session_id FOR UPDATE")
        .bind(&ids)
        .execute(&mut *tx)
        .await
        .map_err(db_err)?;
    let mut written = HashSet::new();
    for first in [true, false] {
        let part: Vec<&Save> = batch.iter().filter(|s| (s.first == 1) == first).collect();
        if part.is_empty() {
            continue;
        }
        let ids: Vec<&str> = part.iter().map(|s| s.id.as_str()).collect();
        let revisions: Vec<i64> = part.iter().map(|s| s.revision).collect();
        let saved_at: Vec<&str> = part.iter().map(|s| s.saved_at.as_str()).collect();
        let firsts: Vec<i64> = part.iter().map(|s| s.first).collect();
        let save_ids: Vec<i64> = part.iter().map(|s| s.save_id).collect();
        // `state` is emptied: a whole state of the form before parts is replaced by the parts of the session's first
        // save in parts, which writes all of them.
        let sql = if first {
            "INSERT INTO session_state (session_id, revision, state, saved_at, save_id)
             SELECT u.id, u.revision, '', u.saved_at, u.save_id
                 FROM unnest($1::text[], $2::bigint[], $3::text[], $4::bigint[]) AS u(id, revision, saved_at, save_id)
             ON CONFLICT (session_id) DO NOTHING RETURNING session_id"
        } else {
            "UPDATE session_state AS s SET revision = u.revision, state = '', saved_at = u.saved_at, save_id = u.save_id
             FROM unnest($1::text[], $2::bigint[], $3::text[], $4::bigint[], $5::bigint[])
                 AS u(id, revision, saved_at, save_id, first)
             WHERE s.session_id = u.id AND s.revision = u.first - 1 RETURNING s.session_id"
        };
        let query = sqlx::query_scalar(sql).bind(ids).bind(revisions).bind(saved_at).bind(save_ids);
        let query = if first { query } else { query.bind(firsts) };
        let rows: Vec<String> = query.fetch_all(&mut *tx).await.map_err(db_err)?;
        written.extend(rows);
    }
    // The parts of the saves whose revision passed: one statement for those written, one for those gone.
    let (mut put_ids, mut put_parts, mut put_values, mut gone_ids, mut gone_parts) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for save in batch.iter().filter(|s| written.contains(&s.id)) {
        for (part, value) in &save.delta.parts {
            match value {
                Some(value) => {
                    put_ids.push(save.id.as_str());
                    put_parts.push(part.as_str());
                    put_values.push(value.as_str());
                }
                None => {
                    gone_ids.push(save.id.as_str());
                    gone_parts.push(part.as_str());
                }
            }
        }
    }
    if !put_ids.is_empty() {
        sqlx::query(
            "INSERT INTO session_parts (session_id, part, value)
             SELECT * FROM unnest($1::text[], $2::text[], $3::text[])
             ON CONFLICT (session_id, part) DO UPDATE SET value = excluded.value",
        )
        .bind(put_ids)
        .bind(put_parts)
        .bind(put_values)
        .execute(&mut *tx)
        .await
        .map_err(db_err)?;
    }
    if !gone_ids.is_empty() {
        sqlx::query(
            "DELETE FROM session_parts AS p USING unnest($1::text[], $2::text[]) AS g(id, part)
             WHERE p.session_id = g.id AND p.part = g.part",
        )
        .bind(gone_ids)
        .bind(gone_parts)
        .execute(&mut *tx)
        .await
        .map_err(db_err)?;
    }
    tx.commit().await.map_err(db_err)?;
    Ok(written)
}

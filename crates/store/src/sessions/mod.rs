//! Persisted sessions: one row per session, its message history (user, assistant, tool calls and results) and its
//! saved state (registers with their provenance, the context bank, confirmations — see
//! [`holdfast_core::session_state`]), so a conversation and everything it fetched survive a restart.
//!
//! The SQLite store runs WAL with `synchronous = FULL`: a write that returned is on disk, even across a power loss.
//!
//! Storage sits behind [`SessionStorage`]: [`SqliteSessionStore`] (a real file, WAL; the default),
//! [`PgSessionStore`] (PostgreSQL, shared by several instances: a session created on one is used on another) and
//! [`InMemorySessionStore`] (no data dir). [`open_sessions`] picks the one a [`crate::Storage`] names.

mod postgres;
mod runs;

pub use postgres::PgSessionStore;

use chrono::{DateTime, Utc};
use holdfast_core::event::TokenUsage as Usage;
use holdfast_core::session_state::{StateDelta, StoredState};
use holdfast_core::tool::BoxFuture;
use holdfast_core::{SessionStateStore, ToolError};
use parking_lot::Mutex;
use rusqlite::{Connection, OptionalExtension, Transaction, TransactionBehavior, params};

/// A write transaction that takes the file's write lock at `BEGIN`. A read-then-write transaction that starts
/// deferred fails at once with `database is locked` when another connection to the file (another process reading
/// it, or a second `SqliteDb` on it) commits between its read and its write; taken up front, the lock waits out the
/// busy timeout instead.
fn immediate(c: &Connection) -> rusqlite::Result<Transaction<'_>> {
    Transaction::new_unchecked(c, TransactionBehavior::Immediate)
}
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::Path;
use std::sync::Arc;

/// Who speaks in a history entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MessageRole {
    /// The user.
    User,
    /// The model.
    Assistant,
    /// A tool result.
    Tool,
    /// The runtime (step limits, confirmations, cancellations).
    System,
    /// A message the inbox delivered (another agent, a group, a channel, a reminder): never the user's words.
    /// `name` says who sent it and how; `tool_call_id` holds its message id.
    Inbox,
    /// A tool the user ran from the UI's tool console, or a decision the user took there: `name` is the tool,
    /// `content` a JSON record (`tool`, `params`, `ok`, `output` or `error`, `decision`). Shown to the user after a
    /// reload; never shown to the model (neither in its context nor in its summaries).
    Console,
}

impl MessageRole {
    /// The name the history stores.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::User => "user",
            Self::Assistant => "assistant",
            Self::Tool => "tool",
            Self::System => "system",
            Self::Inbox => "inbox",
            Self::Console => "console",
        }
    }

    /// The role a stored name reads as: one this build does not know is [`MessageRole::System`], never the user's.
    pub fn parse(s: &str) -> Self {
        match s {
            "user" => Self::User,
            "assistant" => Self::Assistant,
            "tool" => Self::Tool,
            "system" => Self::System,
            "inbox" => Self::Inbox,
            "console" => Self::Console,
            // A role this build does not know (written by a newer one) is never taken for the user's words.
            _ => Self::System,
        }
    }
}

/// One tool call the model asked for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ToolCallRecord {
    /// The provider's call id.
    pub id: String,
    /// Tool name.
    pub name: String,
    /// Arguments as the model sent them (parsed JSON, or a string when they were not valid JSON).
    pub arguments: Value,
}

/// One history entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StoredMessage {
    /// Position in the session, from 1.
    pub seq: i64,
    /// Speaker.
    pub role: MessageRole,
    /// Text (for tool results: the JSON result or coded error as text).
    pub content: String,
    /// Tool calls of an assistant message.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCallRecord>,
    /// For a tool result: the call it answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// For a tool result: the tool's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// When it was recorded.
    pub created_at: DateTime<Utc>,
}

/// A new history entry.
#[derive(Debug, Clone, PartialEq)]
pub struct NewMessage {
    /// Speaker.
    pub role: MessageRole,
    /// Text.
    pub content: String,
    /// Tool calls (assistant).
    pub tool_calls: Vec<ToolCallRecord>,
    /// Call answered (tool).
    pub tool_call_id: Option<String>,
    /// Tool name (tool).
    pub name: Option<String>,
}

impl NewMessage {
    /// A plain message.
    pub fn text(role: MessageRole, content: impl Into<String>) -> Self {
        Self { role, content: content.into(), tool_calls: Vec::new(), tool_call_id: None, name: None }
    }
}

/// A session's row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SessionInfo {
    /// Id.
    pub id: String,
    /// Where it was opened: `http`, `mcp`, `chat`, `replay`.
    pub kind: String,
    /// A title (the first user message, shortened).
    pub title: Option<String>,
    /// Creation time.
    pub created_at: DateTime<Utc>,
    /// Last activity.
    pub updated_at: DateTime<Utc>,
    /// Messages recorded.
    pub message_count: i64,
    /// Prompt tokens used by the model in this session.
    pub input_tokens: i64,
    /// Tokens the model generated in this session.
    pub output_tokens: i64,
}

/// Where sessions, their history and their saved state are kept.
pub trait SessionStorage: SessionStateStore {
    /// The JSON object linked to `key` (what a transport keeps about its own sessions, such as an MCP session's
    /// `initialize` parameters and the holdfast session it opened), if any.
    fn link_get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<Value>, ToolError>>;
    /// Sets the top-level fields of `fields` (a JSON object) in the object linked to `key`, creating it; durable
    /// when it returns.
    fn link_merge<'a>(&'a self, key: &'a str, fields: Value) -> BoxFuture<'a, Result<(), ToolError>>;
    /// Forgets the object linked to `key`.
    fn link_delete<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<(), ToolError>>;
    /// The state saved last for `id` (its revision and parts), if any.
    fn load_state<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<StoredState>, ToolError>>;
    /// Records a new session (an existing id is left as it is).
    fn create<'a>(&'a self, id: &'a str, kind: &'a str) -> BoxFuture<'a, Result<SessionInfo, ToolError>>;
    /// One session's row.
    fn get<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<SessionInfo>, ToolError>>;
    /// Sessions, most recently active first.
    fn list(&self, limit: usize) -> BoxFuture<'_, Result<Vec<SessionInfo>, ToolError>>;
    /// Appends a message; the first user message becomes the title.
    fn append<'a>(
        &'a self,
        session_id: &'a str,
        message: NewMessage,
    ) -> BoxFuture<'a, Result<StoredMessage, ToolError>>;
    /// A session's history, oldest first.
    fn history<'a>(&'a self, session_id: &'a str) -> BoxFuture<'a, Result<Vec<StoredMessage>, ToolError>>;
    /// Adds a model call's token usage to the session's totals.
    fn add_usage<'a>(&'a self, session_id: &'a str, usage: Usage) -> BoxFuture<'a, Result<(), ToolError>>;
    /// Titles a session that has no title yet (an inbox session, by whom it talks with); a titled one is left.
    fn name_session<'a>(&'a self, session_id: &'a str, title: &'a str) -> BoxFuture<'a, Result<(), ToolError>>;
    /// The revision of the state saved last for `session_id`, if any (one indexed read: how an instance finds that
    /// another saved the session since it loaded it, even when the event saying so never arrived).
    fn stored_revision<'a>(&'a self, session_id: &'a str) -> BoxFuture<'a, Result<Option<u64>, ToolError>> {
        Box::pin(async move { Ok(self.load_state(session_id).await?.map(|s| s.revision)) })
    }
}

/// The session store `storage` names: the SQLite file (or memory without one), or PostgreSQL (migrated first).
pub async fn open_sessions(storage: &crate::Storage) -> Result<Arc<dyn SessionStorage>, ToolError> {
    Ok(match storage {
        crate::Storage::Sqlite(db) if db.path().is_none() => Arc::new(InMemorySessionStore::default()),
        crate::Storage::Sqlite(db) => Arc::new(SqliteSessionStore::on(db)?),
        crate::Storage::Postgres(pg) => Arc::new(PgSessionStore::open(pg.clone()).await?),
    })
}

/// The SQLite session store. Clones share the connection.
#[derive(Clone)]
pub struct SqliteSessionStore {
    /// The process's handle on the file: statements that change it run on its writing connection, reads on its
    /// read-only ones.
    db: crate::SqliteDb,
    /// Saves of session state, group-committed: every tool call saves its session's state, and concurrent calls share
    /// one transaction (one fsync) instead of queueing for one each.
    states: Arc<crate::GroupCommit<StateWrite>>,
}

/// One compare-and-set of a session's saved state, with the parts it writes.
struct StateWrite {
    id: String,
    revision: i64,
    delta: StateDelta,
    now: String,
}

/// The revision's compare-and-set (which drops a whole state of the form before parts: the session's first save in
/// parts writes all of them), then the parts, only when it passed; nothing for a pipelined save that `runs` cannot
/// place on its own copy's write. Cached statements: this runs once per tool call.
fn write_state(c: &Connection, w: &StateWrite, runs: &Mutex<runs::Runs>) -> rusqlite::Result<usize> {
    let revision = u64::try_from(w.revision).unwrap_or_default();
    if !runs.lock().admits(&w.id, w.delta.copy, revision, w.delta.follows) {
        return Ok(0);
    }
    let written = write_admitted(c, w);
    runs.lock().record(&w.id, w.delta.copy, revision, matches!(written, Ok(1)));
    written
}

fn write_admitted(c: &Connection, w: &StateWrite) -> rusqlite::Result<usize> {
    let sql = if w.revision == 1 {
        "INSERT INTO session_state (session_id, revision, state, saved_at) VALUES (?1, ?2, '', ?3)
         ON CONFLICT (session_id) DO NOTHING"
    } else {
        "UPDATE session_state SET revision = ?2, state = '', saved_at = ?3 WHERE session_id = ?1 AND revision = ?2 - 1"
    };
    let written = c.prepare_cached(sql)?.execute(params![w.id, w.revision, w.now])?;
    if written == 1 {
        for (part, value) in &w.delta.parts {
            match value {
                Some(value) => c
                    .prepare_cached(
                        "INSERT INTO session_parts (session_id, part, value) VALUES (?1, ?2, ?3)
                         ON CONFLICT (session_id, part) DO UPDATE SET value = excluded.value",
                    )?
                    .execute(params![w.id, part, value])?,
                None => c
                    .prepare_cached("DELETE FROM session_parts WHERE session_id = ?1 AND part = ?2")?
                    .execute(params![w.id, part])?,
            };
        }
    }
    Ok(written)
}

impl std::fmt::Debug for SqliteSessionStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteSessionStore").finish_non_exhaustive()
    }
}

fn db_err(e: impl std::fmt::Display) -> ToolError {
    ToolError::internal(format!("sessions: {e}"))
}

pub(crate) fn conflict(id: &str, revision: u64) -> ToolError {
    ToolError::new(
        holdfast_core::ErrorCode::SessionConflict,
        format!(
            "session {id} was saved by another holdfast process on this data dir since this one loaded it (this \
             save would have been revision {revision}); nothing of this change was saved and the session is reloaded"
        ),
    )
}

const SELECT_INFO: &str = "SELECT s.id, s.kind, s.title, s.created_at, s.updated_at,
        (SELECT COUNT(*) FROM session_messages m WHERE m.session_id = s.id), s.input_tokens, s.output_tokens
    FROM sessions s";

fn row_to_info(r: &rusqlite::Row<'_>) -> rusqlite::Result<SessionInfo> {
    Ok(SessionInfo {
        id: r.get(0)?,
        kind: r.get(1)?,
        title: r.get(2)?,
        created_at: ts(r.get(3)?),
        updated_at: ts(r.get(4)?),
        message_count: r.get(5)?,
        input_tokens: r.get(6)?,
        output_tokens: r.get(7)?,
    })
}

pub(crate) fn ts(s: String) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(&s).map(|d| d.with_timezone(&Utc)).unwrap_or_default()
}

impl SqliteSessionStore {
    /// Opens (or creates) the store in the SQLite file at `path` (directory mode 0700, files mode 0600; WAL with
    /// `synchronous = FULL`: an acknowledged message or state is on disk).
    /// The file is opened on its own: a process that keeps other tables in it uses [`SqliteSessionStore::on`].
    pub fn open(path: &Path) -> Result<Self, ToolError> {
        Self::on(&crate::SqliteDb::open(path)?)
    }

    /// A store in memory.
    pub fn in_memory() -> Result<Self, ToolError> {
        Self::on(&crate::SqliteDb::memory()?)
    }

    /// The store on the process's one handle on its SQLite database (its tables migrated first).
    pub fn on(db: &crate::SqliteDb) -> Result<Self, ToolError> {
        crate::migrate::sqlite(&mut db.lock(), &crate::schema::SESSIONS)?;
        // The writer thread decides saves in order, so it keeps what each copy wrote; a save answered with an error
        // (undone alone, or with its whole batch) wrote nothing.
        let runs = Arc::new(Mutex::new(runs::Runs::default()));
        let undo = Arc::clone(&runs);
        let states = crate::GroupCommit::start_with_undo(
            "session-state",
            db.writer(),
            move |c, w| write_state(c, w, &runs),
            move |w: &StateWrite| {
                undo.lock().record(&w.id, w.delta.copy, u64::try_from(w.revision).unwrap_or_default(), false)
            },
        )?;
        Ok(Self { db: db.clone(), states: Arc::new(states) })
    }

    /// A statement that changes the file, on the writing connection.
    async fn with<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Connection) -> rusqlite::Result<T> + Send + 'static,
    ) -> Result<T, ToolError> {
        self.db.write(move |c| f(c)).await?.map_err(db_err)
    }

    /// A read, on a read-only connection (it sees every save acknowledged before it began).
    async fn read<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Connection) -> rusqlite::Result<T> + Send + 'static,
    ) -> Result<T, ToolError> {
        self.db.read(f).await?.map_err(db_err)
    }

    /// Records a new session.
    pub async fn create(&self, id: &str, kind: &str) -> Result<SessionInfo, ToolError> {
        let (id, kind) = (id.to_owned(), kind.to_owned());
        let now = Utc::now().to_rfc3339();
        let id2 = id.clone();
        self.with(move |c| {
            c.execute(
                "INSERT OR IGNORE INTO sessions (id, kind, title, created_at, updated_at) VALUES (?1, ?2, NULL, ?3, ?3)",
                params![id2, kind, now],
            )
        })
        .await?;
        self.get(&id).await?.ok_or_else(|| db_err("session vanished after insert"))
    }

    /// One session's row.
    pub async fn get(&self, id: &str) -> Result<Option<SessionInfo>, ToolError> {
        let id = id.to_owned();
        self.read(move |c| c.query_row(&format!("{SELECT_INFO} WHERE s.id = ?1"), params![id], row_to_info).optional())
            .await
    }

    /// Sessions, most recently active first.
    pub async fn list(&self, limit: usize) -> Result<Vec<SessionInfo>, ToolError> {
        let limit = i64::try_from(limit.min(10_000)).unwrap_or(10_000);
        self.read(move |c| {
            let mut stmt = c.prepare(&format!("{SELECT_INFO} ORDER BY s.updated_at DESC LIMIT ?1"))?;
            let rows = stmt.query_map(params![limit], row_to_info)?;
            rows.collect()
        })
        .await
    }

    /// Appends a message; the first user message becomes the title.
    pub async fn append(&self, session_id: &str, message: NewMessage) -> Result<StoredMessage, ToolError> {
        let id = session_id.to_owned();
        let now = Utc::now();
        let now_s = now.to_rfc3339();
        let calls = if message.tool_calls.is_empty() {
            None
        } else {
            Some(serde_json::to_string(&message.tool_calls).map_err(db_err)?)
        };
        let msg = message.clone();
        let seq = self
            .with(move |c| {
                let tx = immediate(c)?;
                let seq: i64 = tx.query_row(
                    "SELECT COALESCE(MAX(seq), 0) + 1 FROM session_messages WHERE session_id = ?1",
                    params![id],
                    |r| r.get(0),
                )?;
                tx.execute(
                    "INSERT INTO session_messages (session_id, seq, role, content, tool_calls, tool_call_id, name, created_at)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                    params![id, seq, msg.role.as_str(), msg.content, calls, msg.tool_call_id, msg.name, now_s],
                )?;
                let title: String = msg.content.chars().take(80).collect();
                if msg.role == MessageRole::User {
                    tx.execute("UPDATE sessions SET title = ?2 WHERE id = ?1 AND title IS NULL", params![id, title])?;
                }
                tx.execute("UPDATE sessions SET updated_at = ?2 WHERE id = ?1", params![id, now_s])?;
                tx.commit()?;
                Ok(seq)
            })
            .await?;
        Ok(StoredMessage {
            seq,
            role: message.role,
            content: message.content,
            tool_calls: message.tool_calls,
            tool_call_id: message.tool_call_id,
            name: message.name,
            created_at: now,
        })
    }

    /// Adds a model call's token usage to the session's totals.
    pub async fn add_usage(&self, session_id: &str, usage: Usage) -> Result<(), ToolError> {
        let id = session_id.to_owned();
        let (i, o) = (
            i64::try_from(usage.input_tokens).unwrap_or(i64::MAX),
            i64::try_from(usage.output_tokens).unwrap_or(i64::MAX),
        );
        self.with(move |c| {
            c.execute(
                "UPDATE sessions SET input_tokens = input_tokens + ?2, output_tokens = output_tokens + ?3 WHERE id = ?1",
                params![id, i, o],
            )
        })
        .await
        .map(|_| ())
    }

    /// Titles a session that has no title yet.
    pub async fn name_session(&self, session_id: &str, title: &str) -> Result<(), ToolError> {
        let (id, title) = (session_id.to_owned(), title.to_owned());
        self.with(move |c| {
            c.execute("UPDATE sessions SET title = ?2 WHERE id = ?1 AND title IS NULL", params![id, title])
        })
        .await
        .map(|_| ())
    }

    /// Saves a session's state as `revision` when the saved one is `revision - 1` (or none is saved and `revision` is
    /// 1); otherwise another process or copy saved it meanwhile: `session_conflict`, nothing written. A save that
    /// `follows` is also refused unless this store wrote its copy's `revision - 1`.
    ///
    /// The save is queued when this is called (saves are applied in the order of these calls), and applied whether
    /// or not the returned future is awaited.
    pub fn save_state(
        &self,
        session_id: &str,
        revision: u64,
        delta: StateDelta,
    ) -> impl Future<Output = Result<(), ToolError>> + Send + 'static {
        let id = session_id.to_owned();
        let queued = i64::try_from(revision).map_err(db_err).map(|rev| {
            let now = Utc::now().to_rfc3339();
            self.states.queue(StateWrite { id: id.clone(), revision: rev, delta, now })
        });
        async move {
            if queued?.await? == 0 {
                return Err(conflict(&id, revision));
            }
            Ok(())
        }
    }

    /// The JSON object linked to `key`.
    pub async fn link_get(&self, key: &str) -> Result<Option<Value>, ToolError> {
        let key = key.to_owned();
        let text = self
            .read(move |c| {
                c.query_row("SELECT value FROM session_links WHERE key = ?1", params![key], |r| r.get::<_, String>(0))
                    .optional()
            })
            .await?;
        text.map(|t| serde_json::from_str(&t).map_err(db_err)).transpose()
    }

    /// Sets `fields`' top-level fields in the object linked to `key` (one transaction).
    pub async fn link_merge(&self, key: &str, fields: Value) -> Result<(), ToolError> {
        let key = key.to_owned();
        let Value::Object(fields) = fields else { return Err(db_err("a link holds a JSON object")) };
        self.with(move |c| {
            let tx = immediate(c)?;
            let old: Option<String> = tx
                .query_row("SELECT value FROM session_links WHERE key = ?1", params![key], |r| r.get(0))
                .optional()?;
            let mut value =
                old.and_then(|t| serde_json::from_str::<serde_json::Map<String, Value>>(&t).ok()).unwrap_or_default();
            value.extend(fields);
            tx.execute(
                "INSERT INTO session_links (key, value) VALUES (?1, ?2)
                 ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                params![key, Value::Object(value).to_string()],
            )?;
            tx.commit()
        })
        .await
    }

    /// Forgets the object linked to `key`.
    pub async fn link_delete(&self, key: &str) -> Result<(), ToolError> {
        let key = key.to_owned();
        self.with(move |c| c.execute("DELETE FROM session_links WHERE key = ?1", params![key])).await.map(|_| ())
    }

    /// The state saved last for `id`: its revision and parts (one read transaction).
    pub async fn load_state(&self, id: &str) -> Result<Option<StoredState>, ToolError> {
        let id = id.to_owned();
        self.read(move |c| {
            let tx = c.unchecked_transaction()?;
            let row = tx
                .query_row("SELECT revision, state FROM session_state WHERE session_id = ?1", params![id], |r| {
                    Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?))
                })
                .optional()?;
            let Some((revision, legacy)) = row else { return Ok(None) };
            let mut stmt = tx.prepare_cached("SELECT part, value FROM session_parts WHERE session_id = ?1")?;
            let parts = stmt.query_map(params![id], |r| Ok((r.get(0)?, r.get(1)?)))?.collect::<Result<_, _>>()?;
            drop(stmt);
            tx.finish()?;
            Ok(Some(StoredState {
                revision: u64::try_from(revision).unwrap_or_default(),
                legacy: Some(legacy).filter(|l| !l.is_empty()),
                parts,
            }))
        })
        .await
    }

    /// A session's history, oldest first.
    pub async fn history(&self, session_id: &str) -> Result<Vec<StoredMessage>, ToolError> {
        let id = session_id.to_owned();
        self.read(move |c| {
            let mut stmt = c.prepare(
                "SELECT seq, role, content, tool_calls, tool_call_id, name, created_at
                 FROM session_messages WHERE session_id = ?1 ORDER BY seq",
            )?;
            let rows = stmt.query_map(params![id], |r| {
                let calls: Option<String> = r.get(3)?;
                Ok(StoredMessage {
                    seq: r.get(0)?,
                    role: MessageRole::parse(&r.get::<_, String>(1)?),
                    content: r.get(2)?,
                    tool_calls: calls.and_then(|c| serde_json::from_str(&c).ok()).unwrap_or_default(),
                    tool_call_id: r.get(4)?,
                    name: r.get(5)?,
                    created_at: ts(r.get(6)?),
                })
            })?;
            rows.collect()
        })
        .await
    }
}

impl SessionStateStore for SqliteSessionStore {
    fn save_state(
        &self,
        session_id: &str,
        revision: u64,
        delta: StateDelta,
    ) -> BoxFuture<'static, Result<(), ToolError>> {
        Box::pin(SqliteSessionStore::save_state(self, session_id, revision, delta))
    }
}

impl SessionStorage for SqliteSessionStore {
    fn link_get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<Value>, ToolError>> {
        Box::pin(SqliteSessionStore::link_get(self, key))
    }
    fn link_merge<'a>(&'a self, key: &'a str, fields: Value) -> BoxFuture<'a, Result<(), ToolError>> {
        Box::pin(SqliteSessionStore::link_merge(self, key, fields))
    }
    fn link_delete<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<(), ToolError>> {
        Box::pin(SqliteSessionStore::link_delete(self, key))
    }
    fn load_state<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<StoredState>, ToolError>> {
        Box::pin(SqliteSessionStore::load_state(self, id))
    }
    fn create<'a>(&'a self, id: &'a str, kind: &'a str) -> BoxFuture<'a, Result<SessionInfo, ToolError>> {
        Box::pin(SqliteSessionStore::create(self, id, kind))
    }
    fn get<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<SessionInfo>, ToolError>> {
        Box::pin(SqliteSessionStore::get(self, id))
    }
    fn list(&self, limit: usize) -> BoxFuture<'_, Result<Vec<SessionInfo>, ToolError>> {
        Box::pin(SqliteSessionStore::list(self, limit))
    }
    fn append<'a>(
        &'a self,
        session_id: &'a str,
        message: NewMessage,
    ) -> BoxFuture<'a, Result<StoredMessage, ToolError>> {
        Box::pin(SqliteSessionStore::append(self, session_id, message))
    }
    fn history<'a>(&'a self, session_id: &'a str) -> BoxFuture<'a, Result<Vec<StoredMessage>, ToolError>> {
        Box::pin(SqliteSessionStore::history(self, session_id))
    }
    fn add_usage<'a>(&'a self, session_id: &'a str, usage: Usage) -> BoxFuture<'a, Result<(), ToolError>> {
        Box::pin(SqliteSessionStore::add_usage(self, session_id, usage))
    }
    fn name_session<'a>(&'a self, session_id: &'a str, title: &'a str) -> BoxFuture<'a, Result<(), ToolError>> {
        Box::pin(SqliteSessionStore::name_session(self, session_id, title))
    }
}

#[derive(Debug, Default)]
struct MemSession {
    info: Option<SessionInfo>,
    messages: Vec<StoredMessage>,
    state: Option<StoredState>,
}

/// Sessions kept in memory, for a runtime without a data dir.
#[derive(Debug, Default)]
pub struct InMemorySessionStore {
    sessions: Mutex<std::collections::HashMap<String, MemSession>>,
    runs: Mutex<runs::Runs>,
    links: Mutex<std::collections::HashMap<String, serde_json::Map<String, Value>>>,
}

impl InMemorySessionStore {
    fn info(s: &MemSession) -> Option<SessionInfo> {
        s.info.clone().map(|mut i| {
            i.message_count = i64::try_from(s.messages.len()).unwrap_or(i64::MAX);
            i
        })
    }
}

impl SessionStateStore for InMemorySessionStore {
    fn save_state(
        &self,
        session_id: &str,
        revision: u64,
        delta: StateDelta,
    ) -> BoxFuture<'static, Result<(), ToolError>> {
        // Applied now, in the order of the calls; the future only hands over the outcome.
        let outcome = self.apply_state(session_id, revision, delta);
        Box::pin(std::future::ready(outcome))
    }
}

impl InMemorySessionStore {
    fn apply_state(&self, session_id: &str, revision: u64, delta: StateDelta) -> Result<(), ToolError> {
        let mut sessions = self.sessions.lock();
        let mut runs = self.runs.lock();
        let s = sessions.entry(session_id.to_owned()).or_default();
        let passes = s.state.as_ref().map_or(0, |saved| saved.revision) + 1 == revision;
        if !runs.admits(session_id, delta.copy, revision, delta.follows) || !passes {
            runs.record(session_id, delta.copy, revision, false);
            return Err(conflict(session_id, revision));
        }
        runs.record(session_id, delta.copy, revision, true);
        let state = s.state.get_or_insert_with(StoredState::default);
        state.revision = revision;
        state.legacy = None;
        for (part, value) in delta.parts {
            match value {
                Some(value) => state.parts.insert(part, value),
                None => state.parts.remove(&part),
            };
        }
        Ok(())
    }
}

impl SessionStorage for InMemorySessionStore {
    fn link_get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<Value>, ToolError>> {
        Box::pin(async move { Ok(self.links.lock().get(key).cloned().map(Value::Object)) })
    }
    fn link_merge<'a>(&'a self, key: &'a str, fields: Value) -> BoxFuture<'a, Result<(), ToolError>> {
        Box::pin(async move {
            let Value::Object(fields) = fields else { return Err(db_err("a link holds a JSON object")) };
            self.links.lock().entry(key.to_owned()).or_default().extend(fields);
            Ok(())
        })
    }
    fn link_delete<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<(), ToolError>> {
        Box::pin(async move {
            self.links.lock().remove(key);
            Ok(())
        })
    }
    fn load_state<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<StoredState>, ToolError>> {
        Box::pin(async move { Ok(self.sessions.lock().get(id).and_then(|s| s.state.clone())) })
    }
    fn create<'a>(&'a self, id: &'a str, kind: &'a str) -> BoxFuture<'a, Result<SessionInfo, ToolError>> {
        Box::pin(async move {
            let now = Utc::now();
            let mut sessions = self.sessions.lock();
            let s = sessions.entry(id.to_owned()).or_default();
            s.info.get_or_insert_with(|| SessionInfo {
                id: id.to_owned(),
                kind: kind.to_owned(),
                title: None,
                created_at: now,
                updated_at: now,
                message_count: 0,
                input_tokens: 0,
                output_tokens: 0,
            });
            Self::info(s).ok_or_else(|| db_err("session vanished after insert"))
        })
    }

    fn get<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<SessionInfo>, ToolError>> {
        Box::pin(async move { Ok(self.sessions.lock().get(id).and_then(Self::info)) })
    }

    fn list(&self, limit: usize) -> BoxFuture<'_, Result<Vec<SessionInfo>, ToolError>> {
        Box::pin(async move {
            let mut all: Vec<SessionInfo> = self.sessions.lock().values().filter_map(Self::info).collect();
            all.sort_by_key(|s| std::cmp::Reverse(s.updated_at));
            all.truncate(limit);
            Ok(all)
        })
    }

    fn append<'a>(
        &'a self,
        session_id: &'a str,
        message: NewMessage,
    ) -> BoxFuture<'a, Result<StoredMessage, ToolError>> {
        Box::pin(async move {
            let mut sessions = self.sessions.lock();
            let s = sessions
                .get_mut(session_id)
                .filter(|s| s.info.is_some())
                .ok_or_else(|| db_err(format!("no session {session_id:?}")))?;
            let now = Utc::now();
            let stored = StoredMessage {
                seq: i64::try_from(s.messages.len()).unwrap_or(i64::MAX) + 1,
                role: message.role,
                content: message.content,
                tool_calls: message.tool_calls,
                tool_call_id: message.tool_call_id,
                name: message.name,
                created_at: now,
            };
            if let Some(info) = s.info.as_mut() {
                if stored.role == MessageRole::User && info.title.is_none() {
                    info.title = Some(stored.content.chars().take(80).collect());
                }
                info.updated_at = now;
            }
            s.messages.push(stored.clone());
            Ok(stored)
        })
    }

    fn history<'a>(&'a self, session_id: &'a str) -> BoxFuture<'a, Result<Vec<StoredMessage>, ToolError>> {
        Box::pin(
            async move { Ok(self.sessions.lock().get(session_id).map(|s| s.messages.clone()).unwrap_or_default()) },
        )
    }

    fn add_usage<'a>(&'a self, session_id: &'a str, usage: Usage) -> BoxFuture<'a, Result<(), ToolError>> {
        Box::pin(async move {
            if let Some(info) = self.sessions.lock().get_mut(session_id).and_then(|s| s.info.as_mut()) {
                info.input_tokens += i64::try_from(usage.input_tokens).unwrap_or(i64::MAX);
                info.output_tokens += i64::try_from(usage.output_tokens).unwrap_or(i64::MAX);
            }
            Ok(())
        })
    }
    fn name_session<'a>(&'a self, session_id: &'a str, title: &'a str) -> BoxFuture<'a, Result<(), ToolError>> {
        Box::pin(async move {
            if let Some(info) = self.sessions.lock().get_mut(session_id).and_then(|s| s.info.as_mut()) {
                info.title.get_or_insert_with(|| title.to_owned());
            }
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests;

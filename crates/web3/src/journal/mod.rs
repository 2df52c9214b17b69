//! The durable journal of every value-moving action (invariant 9) and the ledger the caps are reserved in.
//!
//! An action's life, as the [`crate::kernel`] drives it:
//!
//! 1. [`Journal::reserve`] — in one immediate SQLite transaction: an earlier entry for the same *intent* is returned
//!    instead of a new one (idempotency), the day's cap for the chain id, wallet and asset is checked against every
//!    live entry and the amount is reserved by inserting the entry as `reserved`. Concurrent callers — any number of
//!    sessions, or processes sharing the file — cannot exceed a cap by one wei.
//! 2. [`Journal::mark_signed`] — the signed bytes and hash are written (with `synchronous = FULL`, so they are on
//!    disk) before they leave the process.
//! 3. The broadcast's outcome: `pending` (the node accepted it), `failed` (a definite rejection: the reservation is
//!    released), or `unknown` (a timeout, reset, 5xx or unreadable reply: the amount stays reserved and the entry is
//!    reconciled by hash, never signed anew).
//! 4. `confirmed`, `reverted` or `dropped` once the chain settles it.
//!
//! An action refused after its inputs were validated (an independent price below the quote's promise, a failing
//! balance-delta simulation) is journaled as `refused` with the reason, and reserves nothing.

mod schema;

use chrono::{DateTime, Utc};
use holdfast_core::ToolError;
use parking_lot::Mutex;
use rusqlite::{Connection, OptionalExtension, params};
use schema::{COLUMNS, LIVE, Row, insert_row, row_to_entry};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::Path;
use std::sync::Arc;

/// An error as the journal keeps it: a node's or a transport's message quotes the node URL, whose path or query
/// often holds an API key; only its scheme and host are kept (the journal is shown in the UI and the API).
pub(crate) fn stored_error(error: &str) -> String {
    holdfast_core::redact_urls(error).into_owned()
}

/// What an entry records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EntryKind {
    /// A swap transaction.
    Swap,
    /// An ERC-20 approval.
    Approval,
    /// A native or ERC-20 transfer.
    Transfer,
    /// An x402 payment.
    Payment,
}

/// Where an entry stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EntryStatus {
    /// Its amount is reserved against the caps; nothing is signed yet.
    Reserved,
    /// Signed and journaled; not yet known to have left the process.
    Signed,
    /// Accepted by the node (or the payee); waiting for the chain.
    Pending,
    /// The broadcast's outcome is not known (timeout, reset, 5xx): reconciled by hash, never re-signed.
    Unknown,
    /// Mined with status 1 (or settled).
    Confirmed,
    /// Mined with status 0.
    Reverted,
    /// Never reached the chain (definitely rejected by the node or the payee, or never signed).
    Failed,
    /// Its nonce was used by another transaction; it will never be mined.
    Dropped,
    /// Refused by a check before signing (independent price, simulation); the reason is in `error`.
    Refused,
}

impl EntryKind {
    /// The stored form.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Swap => "swap",
            Self::Approval => "approval",
            Self::Transfer => "transfer",
            Self::Payment => "payment",
        }
    }

    fn parse(s: &str) -> Self {
        match s {
            "approval" => Self::Approval,
            "transfer" => Self::Transfer,
            "payment" => Self::Payment,
            _ => Self::Swap,
        }
    }

    /// The kinds whose amounts count against the same per-day cap as this kind: swaps and transfers both move the
    /// asset out of the wallet; payments have their own budget; approvals move nothing.
    pub const fn cap_group(self) -> &'static [EntryKind] {
        match self {
            Self::Swap | Self::Transfer => &[Self::Swap, Self::Transfer],
            Self::Payment => &[Self::Payment],
            Self::Approval => &[],
        }
    }
}

impl EntryStatus {
    /// The stored form.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Reserved => "reserved",
            Self::Signed => "signed",
            Self::Pending => "pending",
            Self::Unknown => "unknown",
            Self::Confirmed => "confirmed",
            Self::Reverted => "reverted",
            Self::Failed => "failed",
            Self::Dropped => "dropped",
            Self::Refused => "refused",
        }
    }

    fn parse(s: &str) -> Self {
        match s {
            "reserved" => Self::Reserved,
            "pending" => Self::Pending,
            "unknown" => Self::Unknown,
            "confirmed" => Self::Confirmed,
            "reverted" => Self::Reverted,
            "failed" => Self::Failed,
            "dropped" => Self::Dropped,
            "refused" => Self::Refused,
            _ => Self::Signed,
        }
    }

    /// Counts against daily limits and blocks a second send of the same action or intent.
    pub fn is_live(self) -> bool {
        matches!(self, Self::Reserved | Self::Signed | Self::Pending | Self::Unknown | Self::Confirmed)
    }

    /// Not settled yet: reconciliation still has work to do.
    pub fn is_unresolved(self) -> bool {
        matches!(self, Self::Reserved | Self::Signed | Self::Pending | Self::Unknown)
    }
}

/// A new entry.
#[derive(Debug, Clone)]
pub struct NewEntry {
    /// Session that caused it.
    pub session_id: String,
    /// Kind.
    pub kind: EntryKind,
    /// Canonical network name (for display; caps are keyed by `chain_id`).
    pub network: String,
    /// Chain id.
    pub chain_id: u64,
    /// Sender (EIP-55).
    pub from: String,
    /// Contract called, recipient or payee.
    pub to: String,
    /// Nonce (transactions only).
    pub nonce: Option<u64>,
    /// Native value in base units.
    pub value: String,
    /// Asset whose amount counts against limits (token address or the native placeholder, EIP-55).
    pub asset: String,
    /// Asset symbol.
    pub asset_symbol: String,
    /// Amount of `asset` moved, base units.
    pub amount: String,
    /// Fingerprint of the exact action.
    pub fingerprint: String,
    /// Idempotency key of the intent (for a swap: the quote register's write). One live entry per intent.
    pub intent: Option<String>,
    /// Signed transaction bytes, hex (transactions only).
    pub raw_tx: Option<String>,
    /// Transaction hash, when known.
    pub tx_hash: Option<String>,
    /// Why, for an entry written as `refused`.
    pub error: Option<String>,
    /// Decoded summary.
    pub summary: Value,
}

/// A stored entry.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct JournalEntry {
    /// Id (`j_…`).
    pub id: String,
    /// Session.
    pub session_id: String,
    /// Kind.
    pub kind: EntryKind,
    /// Network.
    pub network: String,
    /// Chain id.
    pub chain_id: u64,
    /// Sender.
    pub from: String,
    /// Contract, recipient or payee.
    pub to: String,
    /// Nonce.
    pub nonce: Option<u64>,
    /// Native value.
    pub value: String,
    /// Asset.
    pub asset: String,
    /// Asset symbol.
    pub asset_symbol: String,
    /// Amount.
    pub amount: String,
    /// Transaction hash (for payments: the settlement transaction).
    pub tx_hash: Option<String>,
    /// Status.
    pub status: EntryStatus,
    /// Block number once mined.
    pub block_number: Option<u64>,
    /// Gas used once mined.
    pub gas_used: Option<String>,
    /// Error text for failed, refused or unknown entries.
    pub error: Option<String>,
    /// Decoded summary.
    pub summary: Value,
    /// Creation time.
    pub created_at: DateTime<Utc>,
    /// Last update.
    pub updated_at: DateTime<Utc>,
    #[serde(skip)]
    raw_tx: Option<String>,
    #[serde(skip)]
    fingerprint: String,
    #[serde(skip)]
    intent: Option<String>,
}

impl JournalEntry {
    /// The signed bytes, hex.
    pub fn raw_tx(&self) -> Option<&str> {
        self.raw_tx.as_deref()
    }

    /// The action fingerprint.
    pub fn fingerprint(&self) -> &str {
        &self.fingerprint
    }

    /// The intent's idempotency key, if the entry has one.
    pub fn intent(&self) -> Option<&str> {
        self.intent.as_deref()
    }
}

/// Fields that change as an entry settles. `None` leaves a field as it is.
#[derive(Debug, Clone, Default)]
pub struct EntryUpdate {
    /// Transaction hash.
    pub tx_hash: Option<String>,
    /// Block number.
    pub block_number: Option<u64>,
    /// Gas used.
    pub gas_used: Option<String>,
    /// Error text.
    pub error: Option<String>,
    /// A new decoded summary.
    pub summary: Option<Value>,
}

/// The day's cap a reservation must fit under.
#[derive(Debug, Clone, Copy)]
pub struct DayCap {
    /// The most the entries of `kinds` may move per UTC day for this chain id, wallet and asset.
    pub limit: alloy::primitives::U256,
    /// The kinds counted together.
    pub kinds: &'static [EntryKind],
}

/// What [`Journal::reserve`] did.
#[derive(Debug, Clone)]
pub enum Reserved {
    /// A new entry holds the reservation.
    New(JournalEntry),
    /// The intent already has a live entry: this is it (nothing new was reserved).
    Existing(JournalEntry),
    /// The cap would be exceeded; nothing was written.
    OverCap {
        /// What live entries already hold today.
        spent: alloy::primitives::U256,
    },
}

/// The journal. Clones share one SQLite connection.
#[derive(Clone)]
pub struct Journal {
    conn: Arc<Mutex<Connection>>,
    persistent: bool,
}

impl std::fmt::Debug for Journal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Journal").field("persistent", &self.persistent).finish_non_exhaustive()
    }
}

fn db_err(e: impl std::fmt::Display) -> ToolError {
    ToolError::internal(format!("journal: {e}"))
}

fn today() -> String {
    Utc::now().format("%Y-%m-%d").to_string()
}

fn sum(amounts: Vec<String>) -> Result<alloy::primitives::U256, rusqlite::Error> {
    let mut total = alloy::primitives::U256::ZERO;
    for a in amounts {
        let v = alloy::primitives::U256::from_str_radix(&a, 10)
            .map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))?;
        total = total.saturating_add(v);
    }
    Ok(total)
}

fn kinds_sql(kinds: &[EntryKind]) -> String {
    let list: Vec<String> = kinds.iter().map(|k| format!("'{}'", k.as_str())).collect();
    format!("({})", list.join(","))
}

/// Live amounts of `asset` sent by `from` on `chain_id` today, in entries of `kinds`.
fn spent(c: &Connection, chain_id: u64, from: &str, asset: &str, kinds: &[EntryKind]) -> rusqlite::Result<Vec<String>> {
    if kinds.is_empty() {
        return Ok(Vec::new());
    }
    let mut stmt = c.prepare(&format!(
        "SELECT amount FROM journal WHERE chain_id = ?1 AND from_address = ?2 AND asset = ?3 AND day = ?4
         AND kind IN {} AND status IN {LIVE}",
        kinds_sql(kinds)
    ))?;
    let rows = stmt.query_map(params![i64::try_from(chain_id).unwrap_or(i64::MAX), from, asset, today()], |r| {
        r.get::<_, String>(0)
    })?;
    rows.collect()
}

impl Journal {
    /// Opens (or creates) the journal in the SQLite file at `path` (directory mode 0700, files mode 0600).
    pub fn open(path: &Path) -> Result<Self, ToolError> {
        holdfast_core::private_fs::prepare_sqlite_file(path).map_err(db_err)?;
        let conn = Connection::open(path).map_err(db_err)?;
        let journal = Self::init(conn, true)?;
        holdfast_core::private_fs::restrict_sqlite_files(path).map_err(db_err)?;
        Ok(journal)
    }

    /// A journal that lives in memory (replay without configuration). The kernel refuses to move value with a
    /// persistent key over such a journal.
    pub fn in_memory() -> Result<Self, ToolError> {
        Self::init(Connection::open_in_memory().map_err(db_err)?, false)
    }

    fn init(conn: Connection, persistent: bool) -> Result<Self, ToolError> {
        conn.busy_timeout(std::time::Duration::from_secs(5)).map_err(db_err)?;
        // WAL for concurrency with the other layers sharing the file; FULL so a committed entry survives power loss.
        let _: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0)).map_err(db_err)?;
        conn.execute_batch("PRAGMA synchronous = FULL;").map_err(db_err)?;
        schema::migrate(&conn).map_err(db_err)?;
        Ok(Self { conn: Arc::new(Mutex::new(conn)), persistent })
    }

    /// True when entries survive the process (a file, not memory).
    pub fn is_persistent(&self) -> bool {
        self.persistent
    }

    async fn with<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Connection) -> rusqlite::Result<T> + Send + 'static,
    ) -> Result<T, ToolError> {
        let conn = Arc::clone(&self.conn);
        tokio::task::spawn_blocking(move || f(&conn.lock())).await.map_err(db_err)?.map_err(db_err)
    }

    async fn write(&self, entry: NewEntry, status: EntryStatus) -> Result<JournalEntry, ToolError> {
        let id = format!("j_{}", holdfast_core::confirm::random_id());
        let (id2, now, day) = (id.clone(), Utc::now().to_rfc3339(), today());
        let summary = entry.summary.to_string();
        self.with(move |c| {
            insert_row(c, &Row { id: &id2, entry: &entry, status, summary: &summary, now: &now, day: &day })
        })
        .await?;
        self.get(&id).await?.ok_or_else(|| db_err("entry vanished after insert"))
    }

    /// Writes a new entry durably and returns it (no cap, no idempotency check: for records such as `refused`).
    pub async fn insert(&self, entry: NewEntry, status: EntryStatus) -> Result<JournalEntry, ToolError> {
        let written = self.write(entry, status).await?;
        tracing::info!(journal_id = %written.id, status = status.as_str(), kind = written.kind.as_str(), "journal entry");
        Ok(written)
    }

    /// Reserves `entry.amount` of `entry.asset` for `entry.from` on `entry.chain_id` under `cap`, in one immediate
    /// transaction: an existing live entry of the same intent (or, without an intent, of the same fingerprint) is
    /// returned instead; a cap that would be exceeded writes nothing.
    pub async fn reserve(&self, entry: NewEntry, cap: Option<DayCap>) -> Result<Reserved, ToolError> {
        let id = format!("j_{}", holdfast_core::confirm::random_id());
        let (id2, now, day) = (id.clone(), Utc::now().to_rfc3339(), today());
        let summary = entry.summary.to_string();
        let outcome = self
            .with(move |c| {
                let tx = rusqlite::Transaction::new_unchecked(c, rusqlite::TransactionBehavior::Immediate)?;
                let (column, key) = match &entry.intent {
                    Some(intent) => ("intent", intent.clone()),
                    None => ("fingerprint", entry.fingerprint.clone()),
                };
                let existing = tx
                    .query_row(
                        &format!(
                            "SELECT {COLUMNS} FROM journal WHERE {column} = ?1 AND status IN {LIVE} \
                             ORDER BY created_at LIMIT 1"
                        ),
                        params![key],
                        row_to_entry,
                    )
                    .optional()?;
                if let Some(found) = existing {
                    return Ok(Err(Reserved::Existing(found)));
                }
                if let Some(cap) = cap {
                    let amount = alloy::primitives::U256::from_str_radix(&entry.amount, 10)
                        .map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))?;
                    let spent = sum(spent(&tx, entry.chain_id, &entry.from, &entry.asset, cap.kinds)?)?;
                    if spent.saturating_add(amount) > cap.limit {
                        return Ok(Err(Reserved::OverCap { spent }));
                    }
                }
                let row = Row {
                    id: &id2,
                    entry: &entry,
                    status: EntryStatus::Reserved,
                    summary: &summary,
                    now: &now,
                    day: &day,
                };
                insert_row(&tx, &row)?;
                tx.commit()?;
                Ok(Ok(()))
            })
            .await?;
        match outcome {
            Err(done) => {
                match &done {
                    Reserved::Existing(found) => {
                        tracing::info!(journal_id = %found.id, status = found.status.as_str(), "journal: the same action is already live");
                    }
                    Reserved::OverCap { spent } => {
                        tracing::info!(%spent, "journal: refused, the day's cap would be exceeded")
                    }
                    Reserved::New(_) => {}
                }
                Ok(done)
            }
            Ok(()) => {
                tracing::info!(journal_id = %id, status = "reserved", "journal transition");
                Ok(Reserved::New(self.get(&id).await?.ok_or_else(|| db_err("entry vanished after insert"))?))
            }
        }
    }

    /// Records the signed bytes of a reserved entry (durably, before they leave the process): `signed`.
    pub async fn mark_signed(
        &self,
        id: &str,
        nonce: Option<u64>,
        raw_tx: &str,
        tx_hash: &str,
    ) -> Result<(), ToolError> {
        let (id, raw, hash, now) = (id.to_owned(), raw_tx.to_owned(), tx_hash.to_owned(), Utc::now().to_rfc3339());
        let (log_id, log_hash) = (id.clone(), hash.clone());
        let changed = self
            .with(move |c| {
                c.execute(
                    "UPDATE journal SET status = 'signed', nonce = ?2, raw_tx = ?3, tx_hash = ?4, updated_at = ?5
                     WHERE id = ?1 AND status = 'reserved'",
                    params![id, nonce.and_then(|n| i64::try_from(n).ok()), raw, hash, now],
                )
            })
            .await?;
        if changed == 1 {
            tracing::info!(journal_id = %log_id, status = "signed", tx_hash = %log_hash, "journal transition");
            Ok(())
        } else {
            Err(db_err("only a reserved entry can be marked signed"))
        }
    }

    /// Moves an entry to `to` only if it is still in one of `from` (compare-and-set: a reconciler working from an older
    /// snapshot cannot overwrite a newer state). Returns whether it moved.
    pub async fn transition(
        &self,
        id: &str,
        from: &[EntryStatus],
        to: EntryStatus,
        update: EntryUpdate,
    ) -> Result<bool, ToolError> {
        let id = id.to_owned();
        let log_id = id.clone();
        let now = Utc::now().to_rfc3339();
        let summary = update.summary.map(|s| s.to_string());
        let error = update.error.as_deref().map(stored_error);
        let allowed: Vec<String> = from.iter().map(|s| format!("'{}'", s.as_str())).collect();
        let sql = format!(
            "UPDATE journal SET status = ?2, tx_hash = COALESCE(?3, tx_hash), block_number = COALESCE(?4, block_number),
             gas_used = COALESCE(?5, gas_used), error = COALESCE(?6, error), summary = COALESCE(?7, summary),
             updated_at = ?8 WHERE id = ?1 AND status IN ({})",
            allowed.join(",")
        );
        let changed = self
            .with(move |c| {
                c.execute(
                    &sql,
                    params![
                        id,
                        to.as_str(),
                        update.tx_hash,
                        update.block_number.and_then(|n| i64::try_from(n).ok()),
                        update.gas_used,
                        error,
                        summary,
                        now
                    ],
                )
            })
            .await?;
        if changed == 1 {
            tracing::info!(journal_id = %log_id, status = to.as_str(), "journal transition");
        } else {
            tracing::debug!(journal_id = %log_id, to = to.as_str(), "journal: transition skipped, the entry moved on");
        }
        Ok(changed == 1)
    }

    /// The highest nonce of a transaction of `from` on `chain_id` that may still be mined (signed, pending, unknown)
    /// or was (confirmed, reverted). Failed and dropped entries' nonces are free to reuse.
    pub async fn highest_live_nonce(&self, chain_id: u64, from: &str) -> Result<Option<u64>, ToolError> {
        let from = from.to_owned();
        self.with(move |c| {
            c.query_row(
                "SELECT MAX(nonce) FROM journal WHERE chain_id = ?1 AND from_address = ?2 AND kind != 'payment'
                 AND nonce IS NOT NULL AND status IN ('signed','pending','unknown','confirmed','reverted')",
                params![i64::try_from(chain_id).unwrap_or(i64::MAX), from],
                |r| r.get::<_, Option<i64>>(0),
            )
        })
        .await
        .map(|n| n.and_then(|n| u64::try_from(n).ok()))
    }

    /// Moves an entry to `status`, recording the given fields (unconditionally: prefer [`Journal::transition`]).
    pub async fn update(&self, id: &str, status: EntryStatus, update: EntryUpdate) -> Result<(), ToolError> {
        let id = id.to_owned();
        let log_id = id.clone();
        let now = Utc::now().to_rfc3339();
        let summary = update.summary.map(|s| s.to_string());
        let error = update.error.as_deref().map(stored_error);
        self.with(move |c| {
            c.execute(
                "UPDATE journal SET status = ?2, tx_hash = COALESCE(?3, tx_hash), block_number = COALESCE(?4, block_number),
                 gas_used = COALESCE(?5, gas_used), error = COALESCE(?6, error), summary = COALESCE(?7, summary),
                 updated_at = ?8 WHERE id = ?1",
                params![
                    id,
                    status.as_str(),
                    update.tx_hash,
                    update.block_number.and_then(|n| i64::try_from(n).ok()),
                    update.gas_used,
                    error,
                    summary,
                    now
                ],
            )
        })
        .await?;
        // Logged once written: the log never shows a state the journal does not hold.
        tracing::info!(journal_id = %log_id, status = status.as_str(), "journal transition");
        Ok(())
    }

    /// One entry.
    pub async fn get(&self, id: &str) -> Result<Option<JournalEntry>, ToolError> {
        let id = id.to_owned();
        self.with(move |c| {
            c.query_row(&format!("SELECT {COLUMNS} FROM journal WHERE id = ?1"), params![id], row_to_entry).optional()
        })
        .await
    }

    /// A live entry for the same action (fingerprint), if any.
    pub async fn live_by_fingerprint(&self, fingerprint: &str) -> Result<Option<JournalEntry>, ToolError> {
        let fp = fingerprint.to_owned();
        self.with(move |c| {
            c.query_row(
                &format!(
                    "SELECT {COLUMNS} FROM journal WHERE fingerprint = ?1 AND status IN {LIVE} ORDER BY created_at LIMIT 1"
                ),
                params![fp],
                row_to_entry,
            )
            .optional()
        })
        .await
    }

    /// The live entry of an intent, if any.
    pub async fn live_by_intent(&self, intent: &str) -> Result<Option<JournalEntry>, ToolError> {
        let intent = intent.to_owned();
        self.with(move |c| {
            c.query_row(
                &format!("SELECT {COLUMNS} FROM journal WHERE intent = ?1 AND status IN {LIVE} LIMIT 1"),
                params![intent],
                row_to_entry,
            )
            .optional()
        })
        .await
    }

    /// Entries not yet settled (reserved, signed, pending or unknown), oldest first.
    pub async fn unresolved(&self) -> Result<Vec<JournalEntry>, ToolError> {
        self.query("WHERE status IN ('reserved','signed','pending','unknown') ORDER BY created_at", Vec::new()).await
    }

    /// Transactions of `from` on `chain_id` that were signed but whose broadcast is not known to have reached the
    /// node (`signed` or `unknown`), oldest first. A new intent waits until these are settled.
    pub async fn unsettled_sends(&self, chain_id: u64, from: &str) -> Result<Vec<JournalEntry>, ToolError> {
        self.query(
            "WHERE chain_id = ?1 AND from_address = ?2 AND kind != 'payment' AND status IN ('signed','unknown') \
             ORDER BY created_at",
            vec![chain_id.to_string(), from.to_owned()],
        )
        .await
    }

    /// Transactions marked `failed` or `dropped` within `within` that carry a hash: reconciliation still looks for their
    /// receipt, so a rejection that was not one (a lying or confused node, a lagging receipt index) cannot keep a mined
    /// transaction out of the count.
    pub async fn recently_failed_sends(&self, within: std::time::Duration) -> Result<Vec<JournalEntry>, ToolError> {
        let since = Utc::now() - chrono::Duration::from_std(within).unwrap_or_default();
        self.query(
            "WHERE status IN ('failed','dropped') AND tx_hash IS NOT NULL AND kind != 'payment' AND updated_at >= ?1 \
             ORDER BY created_at",
            vec![since.to_rfc3339()],
        )
        .await
    }

    /// Entries of one session, oldest first.
    pub async fn for_session(&self, session_id: &str) -> Result<Vec<JournalEntry>, ToolError> {
        self.query("WHERE session_id = ?1 ORDER BY created_at", vec![session_id.to_owned()]).await
    }

    /// The entries a view asks for, filtered in SQL before the limit: one session's (all of them, oldest first) or
    /// the `limit` most recent of all sessions (newest first), of one `kind` when given.
    pub async fn list(
        &self,
        session_id: Option<&str>,
        kind: Option<EntryKind>,
        limit: usize,
    ) -> Result<Vec<JournalEntry>, ToolError> {
        let mut args = Vec::new();
        let mut conditions = Vec::new();
        if let Some(kind) = kind {
            args.push(kind.as_str().to_owned());
            conditions.push(format!("kind = ?{}", args.len()));
        }
        if let Some(id) = session_id {
            args.push(id.to_owned());
            conditions.push(format!("session_id = ?{}", args.len()));
        }
        let filter = if conditions.is_empty() { String::new() } else { format!("WHERE {} ", conditions.join(" AND ")) };
        let order = match session_id {
            Some(_) => "ORDER BY created_at".to_owned(),
            None => format!("ORDER BY created_at DESC LIMIT {}", limit.min(10_000)),
        };
        self.query(&format!("{filter}{order}"), args).await
    }

    /// The most recent entries, newest first.
    pub async fn recent(&self, limit: usize) -> Result<Vec<JournalEntry>, ToolError> {
        self.query(&format!("ORDER BY created_at DESC LIMIT {}", limit.min(10_000)), Vec::new()).await
    }

    async fn query(&self, tail: &str, args: Vec<String>) -> Result<Vec<JournalEntry>, ToolError> {
        let sql = format!("SELECT {COLUMNS} FROM journal {tail}");
        self.with(move |c| {
            let mut stmt = c.prepare(&sql)?;
            let rows = stmt.query_map(rusqlite::params_from_iter(args.iter()), row_to_entry)?;
            rows.collect()
        })
        .await
    }

    /// Total `amount` of `asset` sent by `from` on `chain_id` in live entries of `kinds` created today (UTC).
    pub async fn spent_today(
        &self,
        chain_id: u64,
        from: &str,
        asset: &str,
        kinds: &'static [EntryKind],
    ) -> Result<alloy::primitives::U256, ToolError> {
        let (from, asset) = (from.to_owned(), asset.to_owned());
        self.with(move |c| sum(spent(c, chain_id, &from, &asset, kinds)?)).await
    }
}

#[cfg(test)]
mod tests;

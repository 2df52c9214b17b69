//! The durable journal of every signed transaction and payment (invariant 9).
//!
//! An entry is written — with `synchronous = FULL`, so it is on disk — after signing and before the bytes leave the
//! process. After a crash or restart, [`crate::Web3::reconcile`] settles every unresolved entry against the chain
//! without ever signing anything new. The journal also answers the policy's daily totals.

use chrono::{DateTime, Utc};
use holdfast_core::ToolError;
use parking_lot::Mutex;
use rusqlite::{Connection, OptionalExtension, params};
use serde::Serialize;
use serde_json::Value;
use std::path::Path;
use std::sync::Arc;

/// What an entry records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EntryKind {
    /// A swap transaction.
    Swap,
    /// An ERC-20 approval.
    Approval,
    /// An x402 payment.
    Payment,
}

/// Where an entry stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EntryStatus {
    /// Signed and journaled; not yet known to have left the process.
    Signed,
    /// Accepted by the node (or the payee); waiting for the chain.
    Pending,
    /// Mined with status 1 (or settled).
    Confirmed,
    /// Mined with status 0.
    Reverted,
    /// Never reached the chain (rejected by the node or the payee).
    Failed,
    /// Its nonce was used by another transaction; it will never be mined.
    Dropped,
}

impl EntryKind {
    fn as_str(self) -> &'static str {
        match self {
            Self::Swap => "swap",
            Self::Approval => "approval",
            Self::Payment => "payment",
        }
    }

    fn parse(s: &str) -> Self {
        match s {
            "approval" => Self::Approval,
            "payment" => Self::Payment,
            _ => Self::Swap,
        }
    }
}

impl EntryStatus {
    /// The stored form.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Signed => "signed",
            Self::Pending => "pending",
            Self::Confirmed => "confirmed",
            Self::Reverted => "reverted",
            Self::Failed => "failed",
            Self::Dropped => "dropped",
        }
    }

    fn parse(s: &str) -> Self {
        match s {
            "pending" => Self::Pending,
            "confirmed" => Self::Confirmed,
            "reverted" => Self::Reverted,
            "failed" => Self::Failed,
            "dropped" => Self::Dropped,
            _ => Self::Signed,
        }
    }

    /// Counts against daily limits and blocks a second send of the same action.
    pub fn is_live(self) -> bool {
        matches!(self, Self::Signed | Self::Pending | Self::Confirmed)
    }
}

/// A new entry, written before broadcast.
#[derive(Debug, Clone)]
pub struct NewEntry {
    /// Session that caused it.
    pub session_id: String,
    /// Kind.
    pub kind: EntryKind,
    /// Canonical network name.
    pub network: String,
    /// Chain id.
    pub chain_id: u64,
    /// Sender.
    pub from: String,
    /// Contract called (or payee).
    pub to: String,
    /// Nonce (transactions only).
    pub nonce: Option<u64>,
    /// Native value in base units.
    pub value: String,
    /// Asset whose amount counts against limits (token address or the native placeholder).
    pub asset: String,
    /// Asset symbol.
    pub asset_symbol: String,
    /// Amount of `asset` moved, base units.
    pub amount: String,
    /// Fingerprint of the exact action.
    pub fingerprint: String,
    /// Signed transaction bytes, hex (transactions only).
    pub raw_tx: Option<String>,
    /// Transaction hash, when known at signing.
    pub tx_hash: Option<String>,
    /// Decoded summary.
    pub summary: Value,
}

/// A stored entry.
#[derive(Debug, Clone, Serialize)]
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
    /// Contract or payee.
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
    /// Error text for failed entries.
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
}

/// Fields that change as an entry settles.
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
}

/// The journal. Clones share one SQLite connection.
#[derive(Clone)]
pub struct Journal {
    conn: Arc<Mutex<Connection>>,
}

impl std::fmt::Debug for Journal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Journal").finish_non_exhaustive()
    }
}

fn db_err(e: impl std::fmt::Display) -> ToolError {
    ToolError::internal(format!("journal: {e}"))
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS journal (
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    network TEXT NOT NULL,
    chain_id INTEGER NOT NULL,
    from_address TEXT NOT NULL,
    to_address TEXT NOT NULL,
    nonce INTEGER,
    value TEXT NOT NULL,
    asset TEXT NOT NULL,
    asset_symbol TEXT NOT NULL,
    amount TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    raw_tx TEXT,
    tx_hash TEXT,
    status TEXT NOT NULL,
    block_number INTEGER,
    gas_used TEXT,
    error TEXT,
    summary TEXT NOT NULL,
    day TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS journal_day ON journal (network, asset, day);
CREATE INDEX IF NOT EXISTS journal_status ON journal (status);
CREATE INDEX IF NOT EXISTS journal_fingerprint ON journal (fingerprint);
CREATE INDEX IF NOT EXISTS journal_session ON journal (session_id);
";

const COLUMNS: &str = "id, session_id, kind, network, chain_id, from_address, to_address, nonce, value, asset, \
                       asset_symbol, amount, fingerprint, raw_tx, tx_hash, status, block_number, gas_used, error, \
                       summary, created_at, updated_at";

fn row_to_entry(row: &rusqlite::Row<'_>) -> rusqlite::Result<JournalEntry> {
    let ts = |s: String| DateTime::parse_from_rfc3339(&s).map(|d| d.with_timezone(&Utc)).unwrap_or_default();
    Ok(JournalEntry {
        id: row.get(0)?,
        session_id: row.get(1)?,
        kind: EntryKind::parse(&row.get::<_, String>(2)?),
        network: row.get(3)?,
        chain_id: row.get::<_, i64>(4)?.try_into().unwrap_or_default(),
        from: row.get(5)?,
        to: row.get(6)?,
        nonce: row.get::<_, Option<i64>>(7)?.and_then(|n| n.try_into().ok()),
        value: row.get(8)?,
        asset: row.get(9)?,
        asset_symbol: row.get(10)?,
        amount: row.get(11)?,
        fingerprint: row.get(12)?,
        raw_tx: row.get(13)?,
        tx_hash: row.get(14)?,
        status: EntryStatus::parse(&row.get::<_, String>(15)?),
        block_number: row.get::<_, Option<i64>>(16)?.and_then(|n| n.try_into().ok()),
        gas_used: row.get(17)?,
        error: row.get(18)?,
        summary: serde_json::from_str(&row.get::<_, String>(19)?).unwrap_or(Value::Null),
        created_at: ts(row.get(20)?),
        updated_at: ts(row.get(21)?),
    })
}

fn duplicate(id: &str, status: &str) -> ToolError {
    ToolError::new(
        holdfast_core::ErrorCode::DuplicateAction,
        format!("this exact action was already signed (journal {id}, status {status}); it is never sent twice"),
    )
}

fn insert_row(
    c: &Connection,
    id: &str,
    entry: &NewEntry,
    status: EntryStatus,
    summary: &str,
    now: &str,
    day: &str,
) -> rusqlite::Result<()> {
    c.execute(
        &format!(
            "INSERT INTO journal ({COLUMNS}, day) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, NULL, NULL, NULL, ?17, ?18, ?18, ?19)"
        ),
        params![
            id,
            entry.session_id,
            entry.kind.as_str(),
            entry.network,
            i64::try_from(entry.chain_id).unwrap_or(i64::MAX),
            entry.from,
            entry.to,
            entry.nonce.and_then(|n| i64::try_from(n).ok()),
            entry.value,
            entry.asset,
            entry.asset_symbol,
            entry.amount,
            entry.fingerprint,
            entry.raw_tx,
            entry.tx_hash,
            status.as_str(),
            summary,
            now,
            day,
        ],
    )
    .map(|_| ())
}

impl Journal {
    /// Opens (or creates) the journal in the SQLite file at `path`.
    pub fn open(path: &Path) -> Result<Self, ToolError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(db_err)?;
        }
        let conn = Connection::open(path).map_err(db_err)?;
        Self::init(conn)
    }

    /// A journal that lives in memory (replay without configuration).
    pub fn in_memory() -> Result<Self, ToolError> {
        Self::init(Connection::open_in_memory().map_err(db_err)?)
    }

    fn init(conn: Connection) -> Result<Self, ToolError> {
        conn.busy_timeout(std::time::Duration::from_secs(5)).map_err(db_err)?;
        // WAL for concurrency with the other layers sharing the file; FULL so a committed entry survives power loss.
        let _: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0)).map_err(db_err)?;
        conn.execute_batch("PRAGMA synchronous = FULL;").map_err(db_err)?;
        conn.execute_batch(SCHEMA).map_err(db_err)?;
        Ok(Self { conn: Arc::new(Mutex::new(conn)) })
    }

    async fn with<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Connection) -> rusqlite::Result<T> + Send + 'static,
    ) -> Result<T, ToolError> {
        let conn = Arc::clone(&self.conn);
        tokio::task::spawn_blocking(move || f(&conn.lock())).await.map_err(db_err)?.map_err(db_err)
    }

    /// Writes a new entry durably and returns it.
    pub async fn insert(&self, entry: NewEntry, status: EntryStatus) -> Result<JournalEntry, ToolError> {
        let id = format!("j_{}", holdfast_core::confirm::random_id());
        let now = Utc::now();
        let (id2, now_s, day) = (id.clone(), now.to_rfc3339(), now.format("%Y-%m-%d").to_string());
        let summary = entry.summary.to_string();
        self.with(move |c| insert_row(c, &id2, &entry, status, &summary, &now_s, &day)).await?;
        self.get(&id).await?.ok_or_else(|| db_err("entry vanished after insert"))
    }

    /// Writes a new entry durably unless a live entry (signed, pending or confirmed) with the same fingerprint
    /// exists — check and insert in one immediate transaction, so two concurrent sends of the same action cannot
    /// both be journaled (and so cannot both be broadcast). A duplicate → `duplicate_action`.
    pub async fn insert_unique(&self, entry: NewEntry, status: EntryStatus) -> Result<JournalEntry, ToolError> {
        let id = format!("j_{}", holdfast_core::confirm::random_id());
        let now = Utc::now();
        let (id2, now_s, day) = (id.clone(), now.to_rfc3339(), now.format("%Y-%m-%d").to_string());
        let summary = entry.summary.to_string();
        let outcome = self
            .with(move |c| {
                let tx = rusqlite::Transaction::new_unchecked(c, rusqlite::TransactionBehavior::Immediate)?;
                let existing: Option<(String, String)> = tx
                    .query_row(
                        "SELECT id, status FROM journal WHERE fingerprint = ?1 AND status IN ('signed','pending','confirmed') LIMIT 1",
                        params![entry.fingerprint],
                        |r| Ok((r.get(0)?, r.get(1)?)),
                    )
                    .optional()?;
                if let Some(found) = existing {
                    return Ok(Err(found));
                }
                insert_row(&tx, &id2, &entry, status, &summary, &now_s, &day)?;
                tx.commit()?;
                Ok(Ok(()))
            })
            .await?;
        if let Err((id, status)) = outcome {
            return Err(duplicate(&id, &status));
        }
        self.get(&id).await?.ok_or_else(|| db_err("entry vanished after insert"))
    }

    /// Moves an entry to `status`, recording the given fields.
    pub async fn update(&self, id: &str, status: EntryStatus, update: EntryUpdate) -> Result<(), ToolError> {
        let id = id.to_owned();
        let now = Utc::now().to_rfc3339();
        self.with(move |c| {
            c.execute(
                "UPDATE journal SET status = ?2, tx_hash = COALESCE(?3, tx_hash), block_number = COALESCE(?4, block_number),
                 gas_used = COALESCE(?5, gas_used), error = COALESCE(?6, error), updated_at = ?7 WHERE id = ?1",
                params![
                    id,
                    status.as_str(),
                    update.tx_hash,
                    update.block_number.and_then(|n| i64::try_from(n).ok()),
                    update.gas_used,
                    update.error,
                    now
                ],
            )
        })
        .await
        .map(|_| ())
    }

    /// One entry.
    pub async fn get(&self, id: &str) -> Result<Option<JournalEntry>, ToolError> {
        let id = id.to_owned();
        self.with(move |c| {
            c.query_row(&format!("SELECT {COLUMNS} FROM journal WHERE id = ?1"), params![id], row_to_entry).optional()
        })
        .await
    }

    /// A live entry (signed, pending or confirmed) for the same action, if any.
    pub async fn live_by_fingerprint(&self, fingerprint: &str) -> Result<Option<JournalEntry>, ToolError> {
        let fp = fingerprint.to_owned();
        self.with(move |c| {
            c.query_row(
                &format!(
                    "SELECT {COLUMNS} FROM journal WHERE fingerprint = ?1 AND status IN ('signed','pending','confirmed') ORDER BY created_at LIMIT 1"
                ),
                params![fp],
                row_to_entry,
            )
            .optional()
        })
        .await
    }

    /// Entries not yet settled (signed or pending), oldest first.
    pub async fn unresolved(&self) -> Result<Vec<JournalEntry>, ToolError> {
        self.query("WHERE status IN ('signed','pending') ORDER BY created_at", Vec::new()).await
    }

    /// Entries of one session, oldest first.
    pub async fn for_session(&self, session_id: &str) -> Result<Vec<JournalEntry>, ToolError> {
        self.query("WHERE session_id = ?1 ORDER BY created_at", vec![session_id.to_owned()]).await
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

    /// Total `amount` of `asset` on `network` in live entries of `kind` created today (UTC).
    pub async fn spent_today(
        &self,
        network: &str,
        asset: &str,
        kind: EntryKind,
    ) -> Result<alloy::primitives::U256, ToolError> {
        let (network, asset) = (network.to_owned(), asset.to_owned());
        let day = Utc::now().format("%Y-%m-%d").to_string();
        let amounts: Vec<String> = self
            .with(move |c| {
                let mut stmt = c.prepare(
                    "SELECT amount FROM journal WHERE network = ?1 AND asset = ?2 AND day = ?3 AND kind = ?4
                     AND status IN ('signed','pending','confirmed')",
                )?;
                let rows = stmt.query_map(params![network, asset, day, kind.as_str()], |r| r.get::<_, String>(0))?;
                rows.collect()
            })
            .await?;
        let mut total = alloy::primitives::U256::ZERO;
        for a in amounts {
            let v = alloy::primitives::U256::from_str_radix(&a, 10).map_err(db_err)?;
            total = total.saturating_add(v);
        }
        Ok(total)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn entry(fp: &str, amount: &str) -> NewEntry {
        NewEntry {
            session_id: "s".into(),
            kind: EntryKind::Swap,
            network: "base".into(),
            chain_id: 8453,
            from: "0xa".into(),
            to: "0xb".into(),
            nonce: Some(3),
            value: "0".into(),
            asset: "0xUSDC".into(),
            asset_symbol: "USDC".into(),
            amount: amount.into(),
            fingerprint: fp.into(),
            raw_tx: Some("0x02".into()),
            tx_hash: Some("0xhash".into()),
            summary: json!({"action": "swap"}),
        }
    }

    #[tokio::test]
    async fn entries_survive_reopening_and_settle() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("holdfast.db");
        let id = {
            let j = Journal::open(&path).unwrap();
            j.insert(entry("fp1", "5"), EntryStatus::Signed).await.unwrap().id
        };
        let j = Journal::open(&path).unwrap();
        let unresolved = j.unresolved().await.unwrap();
        assert_eq!(unresolved.len(), 1);
        assert_eq!(unresolved[0].raw_tx(), Some("0x02"));
        assert!(j.live_by_fingerprint("fp1").await.unwrap().is_some());
        j.update(&id, EntryStatus::Confirmed, EntryUpdate { block_number: Some(9), ..Default::default() })
            .await
            .unwrap();
        let e = j.get(&id).await.unwrap().unwrap();
        assert_eq!((e.status, e.block_number, e.tx_hash.as_deref()), (EntryStatus::Confirmed, Some(9), Some("0xhash")));
        assert!(j.unresolved().await.unwrap().is_empty());
    }

    #[tokio::test]
    async fn daily_totals_count_only_live_entries() {
        let j = Journal::in_memory().unwrap();
        j.insert(entry("a", "5"), EntryStatus::Confirmed).await.unwrap();
        j.insert(entry("b", "7"), EntryStatus::Pending).await.unwrap();
        let failed = j.insert(entry("c", "100"), EntryStatus::Signed).await.unwrap();
        j.update(&failed.id, EntryStatus::Failed, EntryUpdate::default()).await.unwrap();
        let total = j.spent_today("base", "0xUSDC", EntryKind::Swap).await.unwrap();
        assert_eq!(total, alloy::primitives::U256::from(12u8));
        assert!(j.live_by_fingerprint("c").await.unwrap().is_none());
        assert_eq!(j.for_session("s").await.unwrap().len(), 3);
    }
}

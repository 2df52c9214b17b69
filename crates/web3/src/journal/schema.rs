//! The journal's SQLite table: its schema (with the additive migrations of older files), the column list and the
//! mapping of a row to a [`JournalEntry`]. Only [`super::Journal`] uses this.

use super::{EntryKind, EntryStatus, JournalEntry, NewEntry};
use chrono::{DateTime, Utc};
use rusqlite::{Connection, params};
use serde_json::Value;

/// The table as a fresh file creates it.
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
    updated_at TEXT NOT NULL,
    intent TEXT
);
CREATE INDEX IF NOT EXISTS journal_status ON journal (status);
CREATE INDEX IF NOT EXISTS journal_fingerprint ON journal (fingerprint);
CREATE INDEX IF NOT EXISTS journal_session ON journal (session_id);
";

/// Indexes that need the `intent` column (added to older files first).
const INTENT_INDEXES: &str = "
CREATE INDEX IF NOT EXISTS journal_spend ON journal (chain_id, from_address, asset, day);
CREATE UNIQUE INDEX IF NOT EXISTS journal_intent ON journal (intent)
    WHERE intent IS NOT NULL AND status NOT IN ('failed', 'refused');
";

/// Statuses that count against caps and block a second send of the same action or intent.
pub(super) const LIVE: &str = "('reserved','signed','pending','unknown','confirmed')";

/// Creates the table, or brings an older file's table up to date (additive only: nothing is dropped).
pub(super) fn migrate(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch(SCHEMA)?;
    let has_intent = conn.prepare("SELECT 1 FROM pragma_table_info('journal') WHERE name = 'intent'")?.exists([])?;
    if !has_intent {
        conn.execute_batch("ALTER TABLE journal ADD COLUMN intent TEXT;")?;
    }
    conn.execute_batch(INTENT_INDEXES)
}

/// Every column a [`JournalEntry`] is read from, in [`row_to_entry`]'s order.
pub(super) const COLUMNS: &str = "id, session_id, kind, network, chain_id, from_address, to_address, nonce, value, \
                                  asset, asset_symbol, amount, fingerprint, raw_tx, tx_hash, status, block_number, \
                                  gas_used, error, summary, created_at, updated_at, intent";

pub(super) fn row_to_entry(row: &rusqlite::Row<'_>) -> rusqlite::Result<JournalEntry> {
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
        intent: row.get(22)?,
    })
}

/// One new row.
pub(super) struct Row<'a> {
    pub id: &'a str,
    pub entry: &'a NewEntry,
    pub status: EntryStatus,
    pub summary: &'a str,
    pub now: &'a str,
    pub day: &'a str,
}

pub(super) fn insert_row(c: &Connection, r: &Row<'_>) -> rusqlite::Result<()> {
    let e = r.entry;
    c.execute(
        &format!(
            "INSERT INTO journal ({COLUMNS}, day) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, \
             ?14, ?15, ?16, NULL, NULL, ?17, ?18, ?19, ?19, ?20, ?21)"
        ),
        params![
            r.id,
            e.session_id,
            e.kind.as_str(),
            e.network,
            i64::try_from(e.chain_id).unwrap_or(i64::MAX),
            e.from,
            e.to,
            e.nonce.and_then(|n| i64::try_from(n).ok()),
            e.value,
            e.asset,
            e.asset_symbol,
            e.amount,
            e.fingerprint,
            e.raw_tx,
            e.tx_hash,
            r.status.as_str(),
            e.error.as_deref().map(super::stored_error),
            r.summary,
            r.now,
            e.intent,
            r.day,
        ],
    )
    .map(|_| ())
}

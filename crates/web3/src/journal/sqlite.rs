//! The journal in the embedded SQLite file, on the process's one writing connection ([`holdfast_store::SqliteDb`],
//! shared with the other tables' owners), used from tokio's blocking pool; a
//! reservation is one `IMMEDIATE` transaction (the file's write lock: no other reservation, in this process or
//! another on the same file, interleaves). The wallet lock is this process's: one process per file moves value.

use super::entry::{DayCap, EntryKind, JournalEntry};
use super::sql::{self, NewRow, Param, RawEntry, Statement, for_sqlite};
use super::store::{JournalStore, Reservation, Select, WalletLock, decide};
use holdfast_core::ToolError;
use holdfast_core::tool::BoxFuture;
use parking_lot::Mutex;
use rusqlite::types::Value as SqlValue;
use rusqlite::{Connection, OptionalExtension};
use std::collections::HashMap;
use std::sync::Arc;

fn db_err(e: impl std::fmt::Display) -> ToolError {
    ToolError::internal(format!("journal: {e}"))
}

fn values(params: Vec<Param>) -> Vec<SqlValue> {
    params
        .into_iter()
        .map(|p| match p {
            Param::Text(Some(s)) => SqlValue::Text(s),
            Param::Int(Some(n)) => SqlValue::Integer(n),
            Param::Text(None) | Param::Int(None) => SqlValue::Null,
        })
        .collect()
}

fn raw(r: &rusqlite::Row<'_>) -> rusqlite::Result<RawEntry> {
    Ok(RawEntry {
        id: r.get(0)?,
        session_id: r.get(1)?,
        kind: r.get(2)?,
        network: r.get(3)?,
        chain_id: r.get(4)?,
        from: r.get(5)?,
        to: r.get(6)?,
        nonce: r.get(7)?,
        value: r.get(8)?,
        asset: r.get(9)?,
        asset_symbol: r.get(10)?,
        amount: r.get(11)?,
        fingerprint: r.get(12)?,
        raw_tx: r.get(13)?,
        tx_hash: r.get(14)?,
        status: r.get(15)?,
        block_number: r.get(16)?,
        gas_used: r.get(17)?,
        error: r.get(18)?,
        summary: r.get(19)?,
        created_at: r.get(20)?,
        updated_at: r.get(21)?,
        intent: r.get(22)?,
        genesis: r.get(23)?,
    })
}

fn entries(c: &Connection, (sql, params): Statement) -> rusqlite::Result<Vec<JournalEntry>> {
    let mut stmt = c.prepare(&for_sqlite(&sql))?;
    let rows = stmt.query_map(rusqlite::params_from_iter(values(params)), raw)?;
    rows.map(|r| r.map(RawEntry::into_entry)).collect()
}

fn strings(c: &Connection, (sql, params): Statement) -> rusqlite::Result<Vec<String>> {
    let mut stmt = c.prepare(&for_sqlite(&sql))?;
    let rows = stmt.query_map(rusqlite::params_from_iter(values(params)), |r| r.get::<_, String>(0))?;
    rows.collect()
}

fn execute(c: &Connection, (sql, params): Statement) -> rusqlite::Result<usize> {
    c.execute(&for_sqlite(&sql), rusqlite::params_from_iter(values(params)))
}

/// One wallet's send lock in this process.
type SendLock = Arc<tokio::sync::Mutex<()>>;

/// The SQLite journal.
pub(crate) struct SqliteJournal {
    conn: Arc<Mutex<Connection>>,
    persistent: bool,
    wallets: Mutex<HashMap<(u64, String), SendLock>>,
}

impl std::fmt::Debug for SqliteJournal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteJournal").field("persistent", &self.persistent).finish_non_exhaustive()
    }
}

impl SqliteJournal {
    /// The journal in `db` (its tables migrated first).
    pub(crate) fn open(db: &holdfast_store::SqliteDb) -> Result<Self, ToolError> {
        holdfast_store::migrate::sqlite(&mut db.lock(), &holdfast_store::schema::JOURNAL).map_err(db_err)?;
        Ok(Self { conn: db.writer(), persistent: db.path().is_some(), wallets: Mutex::default() })
    }

    fn with<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Connection) -> rusqlite::Result<T> + Send + 'static,
    ) -> BoxFuture<'_, Result<T, ToolError>> {
        let conn = Arc::clone(&self.conn);
        Box::pin(async move {
            tokio::task::spawn_blocking(move || f(&mut conn.lock())).await.map_err(db_err)?.map_err(db_err)
        })
    }
}

impl JournalStore for SqliteJournal {
    fn is_persistent(&self) -> bool {
        self.persistent
    }

    fn insert(&self, row: NewRow) -> BoxFuture<'_, Result<(), ToolError>> {
        self.with(move |c| execute(c, sql::insert(&row)).map(|_| ()))
    }

    fn reserve(&self, row: NewRow, cap: Option<DayCap>) -> BoxFuture<'_, Result<Reservation, ToolError>> {
        let conn = Arc::clone(&self.conn);
        Box::pin(async move {
            let work = move || -> Result<Reservation, String> {
                let mut c = conn.lock();
                let tx =
                    c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate).map_err(|e| e.to_string())?;
                let e = &row.entry;
                let existing = entries(&tx, sql::same_action(e)).map_err(|e| e.to_string())?.into_iter().next();
                let holder = match sql::authorization_holder(e) {
                    Some(statement) => entries(&tx, statement).map_err(|e| e.to_string())?.into_iter().next(),
                    None => None,
                };
                let spent = match cap.and_then(|cap| sql::spent(e.chain_id, &e.from, &e.asset, cap.kinds, &row.day)) {
                    Some(statement) => strings(&tx, statement).map_err(|e| e.to_string())?,
                    None => Vec::new(),
                };
                if let Err(done) = decide(existing, holder, &spent, &e.amount, cap)? {
                    return Ok(done);
                }
                execute(&tx, sql::insert(&row)).map_err(|e| e.to_string())?;
                tx.commit().map_err(|e| e.to_string())?;
                Ok(Reservation::Inserted)
            };
            tokio::task::spawn_blocking(work).await.map_err(db_err)?.map_err(db_err)
        })
    }

    fn update(&self, statement: Statement) -> BoxFuture<'_, Result<u64, ToolError>> {
        self.with(move |c| execute(c, statement).map(|n| n as u64))
    }

    fn select(&self, q: Select) -> BoxFuture<'_, Result<Vec<JournalEntry>, ToolError>> {
        self.with(move |c| entries(c, sql::select(&q)))
    }

    fn highest_live_nonce(&self, chain_id: u64, from: String) -> BoxFuture<'_, Result<Option<u64>, ToolError>> {
        self.with(move |c| {
            let (sql, params) = sql::highest_live_nonce(chain_id, &from);
            let n: Option<i64> = c
                .query_row(&for_sqlite(&sql), rusqlite::params_from_iter(values(params)), |r| r.get(0))
                .optional()?
                .flatten();
            Ok(n.and_then(|n| u64::try_from(n).ok()))
        })
    }

    fn spent(
        &self,
        chain_id: u64,
        from: String,
        asset: String,
        kinds: &'static [EntryKind],
        day: String,
    ) -> BoxFuture<'_, Result<Vec<String>, ToolError>> {
        self.with(move |c| match sql::spent(chain_id, &from, &asset, kinds, &day) {
            Some(statement) => strings(c, statement),
            None => Ok(Vec::new()),
        })
    }

    fn lock_wallet(&self, chain_id: u64, from: String) -> BoxFuture<'_, Result<WalletLock, ToolError>> {
        let lock = Arc::clone(self.wallets.lock().entry((chain_id, from.to_ascii_lowercase())).or_default());
        Box::pin(async move { Ok(WalletLock::new(lock.lock_owned().await)) })
    }
}

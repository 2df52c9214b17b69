//! The journal in the embedded SQLite file, on the process's one writing connection ([`crate::SqliteDb`], shared with
//! the other tables' owners), used from tokio's blocking pool. A reservation is one `IMMEDIATE` transaction (the
//! file's write lock: no other reservation, in this process or another on the same file, interleaves). The wallet
//! lock is this process's: one process per file moves value.

use super::sql::{Param, ReservationReads, Statement, for_sqlite};
use super::{Found, NewRow, Reserved, Row, WalletLock};
use crate::{SqliteDb, StoreError};
use parking_lot::Mutex;
use rusqlite::types::Value as SqlValue;
use rusqlite::{Connection, OptionalExtension};
use std::collections::HashMap;
use std::sync::Arc;

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

fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Row> {
    Ok(Row {
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

fn rows(c: &Connection, (sql, params): Statement) -> rusqlite::Result<Vec<Row>> {
    let mut stmt = c.prepare(&for_sqlite(&sql))?;
    let rows = stmt.query_map(rusqlite::params_from_iter(values(params)), row)?;
    rows.collect()
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
pub struct SqliteJournal {
    db: SqliteDb,
    wallets: Mutex<HashMap<(u64, String), SendLock>>,
}

impl std::fmt::Debug for SqliteJournal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteJournal").field("persistent", &self.is_persistent()).finish_non_exhaustive()
    }
}

impl SqliteJournal {
    /// The journal in `db` (its tables migrated first).
    pub(super) fn open(db: &SqliteDb) -> Result<Self, StoreError> {
        crate::migrate::sqlite(&mut db.lock(), &crate::schema::JOURNAL)?;
        Ok(Self { db: db.clone(), wallets: Mutex::default() })
    }

    pub(super) fn is_persistent(&self) -> bool {
        self.db.path().is_some()
    }

    async fn on_writer<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Connection) -> rusqlite::Result<T> + Send + 'static,
    ) -> Result<T, StoreError> {
        Ok(self.db.write(f).await??)
    }

    pub(super) async fn execute(&self, statement: Statement) -> Result<u64, StoreError> {
        self.on_writer(move |c| execute(c, statement).map(|n| n as u64)).await
    }

    pub(super) async fn rows(&self, statement: Statement) -> Result<Vec<Row>, StoreError> {
        self.on_writer(move |c| rows(c, statement)).await
    }

    pub(super) async fn strings(&self, statement: Statement) -> Result<Vec<String>, StoreError> {
        self.on_writer(move |c| strings(c, statement)).await
    }

    pub(super) async fn optional_int(&self, (sql, params): Statement) -> Result<Option<i64>, StoreError> {
        self.on_writer(move |c| {
            let n: Option<Option<i64>> =
                c.query_row(&for_sqlite(&sql), rusqlite::params_from_iter(values(params)), |r| r.get(0)).optional()?;
            Ok(n.flatten())
        })
        .await
    }

    pub(super) async fn reserve<R: Send + 'static>(
        &self,
        row: NewRow,
        reads: ReservationReads,
        decide: impl FnOnce(Found) -> Result<Option<R>, String> + Send + 'static,
    ) -> Result<Reserved<R>, StoreError> {
        let statement = super::sql::insert(&row);
        self.db
            .write(move |c| {
                let tx = c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
                let found = Found {
                    same_action: rows(&tx, reads.same_action)?.into_iter().next(),
                    authorization_holder: match reads.authorization_holder {
                        Some(statement) => rows(&tx, statement)?.into_iter().next(),
                        None => None,
                    },
                    spent: match reads.spent {
                        Some(statement) => strings(&tx, statement)?,
                        None => Vec::new(),
                    },
                    undelivered: match reads.undelivered {
                        Some(statement) => strings(&tx, statement)?,
                        None => Vec::new(),
                    },
                };
                if let Some(reason) = decide(found).map_err(StoreError::Query)? {
                    return Ok(Reserved::Refused(reason));
                }
                execute(&tx, statement)?;
                tx.commit()?;
                Ok(Reserved::Inserted)
            })
            .await?
    }

    pub(super) async fn lock_wallet(&self, chain_id: u64, from: &str) -> Result<WalletLock, StoreError> {
        let lock = Arc::clone(self.wallets.lock().entry((chain_id, from.to_ascii_lowercase())).or_default());
        Ok(WalletLock::new(lock.lock_owned().await))
    }
}

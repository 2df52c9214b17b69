//! The journal in PostgreSQL, shared by every instance on the database. A reservation is a transaction that first
//! takes the wallet's reservation lock (`pg_advisory_xact_lock`, released at commit or rollback), so concurrent
//! reservations from any instance see each other's committed rows: the day's cap holds across instances. The
//! wallet's send lock is an advisory lock on a connection of its own ([`holdfast_store::PgStore::lock`]): from the
//! nonce's choice to the broadcast, one instance at a time; a killed instance's lock dies with its connection.

use super::entry::{DayCap, EntryKind, JournalEntry};
use super::sql::{self, NewRow, Param, RawEntry, Statement};
use super::store::{JournalStore, Reservation, Select, WalletLock, decide};
use holdfast_core::ToolError;
use holdfast_core::tool::BoxFuture;
use holdfast_store::PgStore;
use sqlx::postgres::{PgArguments, PgRow};
use sqlx::query::Query;
use sqlx::{AssertSqlSafe, Postgres, Row};
use std::time::Duration;

/// How long a send waits for another instance's send of the same wallet.
const WALLET_WAIT: Duration = Duration::from_secs(120);

fn db_err(e: impl std::fmt::Display) -> ToolError {
    ToolError::internal(format!("journal: {}", holdfast_core::redact_urls(&e.to_string())))
}

/// Binds the shared parameters. (The statements are built from constants and the journal's own enums, never from
/// input: [`AssertSqlSafe`] says so to sqlx.)
fn query((sql, params): Statement) -> Query<'static, Postgres, PgArguments> {
    let mut q = sqlx::query(AssertSqlSafe(sql));
    for p in params {
        q = match p {
            Param::Text(s) => q.bind(s),
            Param::Int(n) => q.bind(n),
        };
    }
    q
}

fn raw(r: &PgRow) -> Result<RawEntry, sqlx::Error> {
    Ok(RawEntry {
        id: r.try_get(0)?,
        session_id: r.try_get(1)?,
        kind: r.try_get(2)?,
        network: r.try_get(3)?,
        chain_id: r.try_get(4)?,
        from: r.try_get(5)?,
        to: r.try_get(6)?,
        nonce: r.try_get(7)?,
        value: r.try_get(8)?,
        asset: r.try_get(9)?,
        asset_symbol: r.try_get(10)?,
        amount: r.try_get(11)?,
        fingerprint: r.try_get(12)?,
        raw_tx: r.try_get(13)?,
        tx_hash: r.try_get(14)?,
        status: r.try_get(15)?,
        block_number: r.try_get(16)?,
        gas_used: r.try_get(17)?,
        error: r.try_get(18)?,
        summary: r.try_get(19)?,
        created_at: r.try_get(20)?,
        updated_at: r.try_get(21)?,
        intent: r.try_get(22)?,
        genesis: r.try_get(23)?,
    })
}

fn entries(rows: Vec<PgRow>) -> Result<Vec<JournalEntry>, ToolError> {
    rows.iter().map(|r| raw(r).map(RawEntry::into_entry).map_err(db_err)).collect()
}

fn strings(rows: Vec<PgRow>) -> Result<Vec<String>, ToolError> {
    rows.iter().map(|r| r.try_get::<String, _>(0).map_err(db_err)).collect()
}

/// The PostgreSQL journal.
#[derive(Debug)]
pub(crate) struct PgJournal {
    store: PgStore,
}

impl PgJournal {
    /// The journal in `store`'s database, migrated.
    pub(crate) async fn open(store: PgStore) -> Result<Self, ToolError> {
        store.migrate(&holdfast_store::schema::JOURNAL).await.map_err(db_err)?;
        Ok(Self { store })
    }
}

impl JournalStore for PgJournal {
    fn is_persistent(&self) -> bool {
        true
    }

    fn insert(&self, row: NewRow) -> BoxFuture<'_, Result<(), ToolError>> {
        Box::pin(async move {
            query(sql::insert(&row)).execute(self.store.pool()).await.map_err(db_err)?;
            Ok(())
        })
    }

    fn reserve(&self, row: NewRow, cap: Option<DayCap>) -> BoxFuture<'_, Result<Reservation, ToolError>> {
        Box::pin(async move {
            let e = &row.entry;
            let mut tx = self.store.pool().begin().await.map_err(db_err)?;
            let key = format!("holdfast:reserve:{}:{}", e.chain_id, e.from.to_ascii_lowercase());
            sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))")
                .bind(key)
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
            let existing = entries(query(sql::same_action(e)).fetch_all(&mut *tx).await.map_err(db_err)?)?;
            let holder = match sql::authorization_holder(e) {
                Some(statement) => entries(query(statement).fetch_all(&mut *tx).await.map_err(db_err)?)?,
                None => Vec::new(),
            };
            let spent = match cap.and_then(|cap| sql::spent(e.chain_id, &e.from, &e.asset, cap.kinds, &row.day)) {
                Some(statement) => strings(query(statement).fetch_all(&mut *tx).await.map_err(db_err)?)?,
                None => Vec::new(),
            };
            let decided = decide(existing.into_iter().next(), holder.into_iter().next(), &spent, &e.amount, cap);
            if let Err(done) = decided.map_err(db_err)? {
                return Ok(done);
            }
            query(sql::insert(&row)).execute(&mut *tx).await.map_err(db_err)?;
            tx.commit().await.map_err(db_err)?;
            Ok(Reservation::Inserted)
        })
    }

    fn update(&self, statement: Statement) -> BoxFuture<'_, Result<u64, ToolError>> {
        Box::pin(async move { Ok(query(statement).execute(self.store.pool()).await.map_err(db_err)?.rows_affected()) })
    }

    fn select(&self, q: Select) -> BoxFuture<'_, Result<Vec<JournalEntry>, ToolError>> {
        Box::pin(async move { entries(query(sql::select(&q)).fetch_all(self.store.pool()).await.map_err(db_err)?) })
    }

    fn highest_live_nonce(&self, chain_id: u64, from: String) -> BoxFuture<'_, Result<Option<u64>, ToolError>> {
        Box::pin(async move {
            let row =
                query(sql::highest_live_nonce(chain_id, &from)).fetch_one(self.store.pool()).await.map_err(db_err)?;
            let n: Option<i64> = row.try_get(0).map_err(db_err)?;
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
        Box::pin(async move {
            match sql::spent(chain_id, &from, &asset, kinds, &day) {
                Some(statement) => strings(query(statement).fetch_all(self.store.pool()).await.map_err(db_err)?),
                None => Ok(Vec::new()),
            }
        })
    }

    fn lock_wallet(&self, chain_id: u64, from: String) -> BoxFuture<'_, Result<WalletLock, ToolError>> {
        Box::pin(async move {
            let key = format!("holdfast:wallet:{chain_id}:{}", from.to_ascii_lowercase());
            let held = self.store.lock(&key, WALLET_WAIT).await.map_err(db_err)?;
            Ok(WalletLock::new(held))
        })
    }
}

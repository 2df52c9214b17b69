//! The journal in PostgreSQL, shared by every instance on the database. A reservation is a transaction that first
//! takes the wallet's reservation lock (`pg_advisory_xact_lock`, released at commit or rollback) and, when the row
//! relies on a user authorization, that authorization's, so concurrent reservations from any instance see each
//! other's committed rows: the day's cap holds across instances, and an authorization is spent once. The
//! wallet's send lock is an advisory lock on a connection of its own ([`crate::PgStore::lock`]): from the nonce's
//! choice to the broadcast, one instance at a time; a killed instance's lock dies with its connection.

use super::sql::{Param, ReservationReads, Statement};
use super::{Found, NewRow, Reserved, Row, WalletLock};
use crate::{PgStore, StoreError};
use sqlx::postgres::{PgArguments, PgRow};
use sqlx::query::Query;
use sqlx::{AssertSqlSafe, Postgres, Row as _};
use std::time::Duration;

/// How long a send waits for another instance's send of the same wallet.
const WALLET_WAIT: Duration = Duration::from_secs(120);

/// Binds the shared parameters. (A statement's text is built from constants only, every caller's value bound:
/// [`AssertSqlSafe`] says so to sqlx.)
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

fn row(r: &PgRow) -> Result<Row, sqlx::Error> {
    Ok(Row {
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

fn rows(found: Vec<PgRow>) -> Result<Vec<Row>, StoreError> {
    Ok(found.iter().map(row).collect::<Result<_, _>>()?)
}

fn strings(found: Vec<PgRow>) -> Result<Vec<String>, StoreError> {
    Ok(found.iter().map(|r| r.try_get::<String, _>(0)).collect::<Result<_, _>>()?)
}

/// The PostgreSQL journal.
#[derive(Debug)]
pub struct PgJournal {
    pub(super) store: PgStore,
}

impl PgJournal {
    /// The journal in `store`'s database, migrated.
    pub(super) async fn open(store: PgStore) -> Result<Self, StoreError> {
        store.migrate(&crate::schema::JOURNAL).await?;
        Ok(Self { store })
    }

    pub(super) async fn execute(&self, statement: Statement) -> Result<u64, StoreError> {
        Ok(query(statement).execute(self.store.pool()).await?.rows_affected())
    }

    /// [`Self::execute`] on `conn` (a wallet lock's own connection).
    pub(super) async fn execute_on(conn: &mut sqlx::PgConnection, statement: Statement) -> Result<u64, StoreError> {
        Ok(query(statement).execute(conn).await?.rows_affected())
    }

    pub(super) async fn rows(&self, statement: Statement) -> Result<Vec<Row>, StoreError> {
        rows(query(statement).fetch_all(self.store.pool()).await?)
    }

    pub(super) async fn strings(&self, statement: Statement) -> Result<Vec<String>, StoreError> {
        strings(query(statement).fetch_all(self.store.pool()).await?)
    }

    pub(super) async fn optional_int(&self, statement: Statement) -> Result<Option<i64>, StoreError> {
        Ok(query(statement).fetch_one(self.store.pool()).await?.try_get(0)?)
    }

    pub(super) async fn reserve<R: Send + 'static>(
        &self,
        new: NewRow,
        reads: ReservationReads,
        decide: impl FnOnce(Found) -> Result<Option<R>, String> + Send + 'static,
    ) -> Result<Reserved<R>, StoreError> {
        let mut tx = self.store.pool().begin().await?;
        let key = format!("holdfast:reserve:{}:{}", new.chain_id, new.from.to_ascii_lowercase());
        sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))").bind(&key).execute(&mut *tx).await?;
        // The authorization a row relies on may be relied on by a reservation of another wallet or chain, which the
        // wallet's lock does not exclude: its own lock (always taken after the wallet's, so two reservations cannot
        // wait for each other) makes the second see the first's row.
        if let Some(authorization) = new.authorization.as_deref().filter(|_| new.relies_on_authorization) {
            sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))")
                .bind(format!("holdfast:authorization:{authorization}"))
                .execute(&mut *tx)
                .await?;
        }
        let same_action = rows(query(reads.same_action).fetch_all(&mut *tx).await?)?.into_iter().next();
        let authorization_holder = match reads.authorization_holder {
            Some(statement) => rows(query(statement).fetch_all(&mut *tx).await?)?.into_iter().next(),
            None => None,
        };
        let spent = match reads.spent {
            Some(statement) => strings(query(statement).fetch_all(&mut *tx).await?)?,
            None => Vec::new(),
        };
        let undelivered = match reads.undelivered {
            Some(statement) => strings(query(statement).fetch_all(&mut *tx).await?)?,
            None => Vec::new(),
        };
        let found = Found { same_action, authorization_holder, spent, undelivered };
        if let Some(reason) = decide(found).map_err(StoreError::Query)? {
            return Ok(Reserved::Refused(reason));
        }
        query(super::sql::insert(&new)).execute(&mut *tx).await?;
        if let Err(e) = tx.commit().await {
            // A COMMIT whose answer was lost may have committed the row: a live reservation that counts against the
            // cap and holds the user's authorization. Whether it did is read back under the wallet's reservation
            // lock (which the failed transaction holds until the server has finished with it), by the row's id, a
            // random number this process drew; a row found is reported as inserted, not as an error beside a live
            // reservation.
            return match self.inserted(&key, &new.id).await {
                Ok(true) => {
                    tracing::info!(journal_id = %new.id, "journal: a reservation whose COMMIT went unanswered was committed");
                    Ok(Reserved::Inserted)
                }
                _ => Err(e.into()),
            };
        }
        Ok(Reserved::Inserted)
    }

    /// Whether the row `id` is stored, read once the wallet's reservation lock `key` is free.
    async fn inserted(&self, key: &str, id: &str) -> Result<bool, StoreError> {
        let mut tx = self.store.begin_read_back().await?;
        sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))").bind(key).execute(&mut *tx).await?;
        let found = sqlx::query("SELECT 1 FROM journal WHERE id = $1").bind(id).fetch_optional(&mut *tx).await?;
        tx.commit().await?;
        Ok(found.is_some())
    }

    pub(super) async fn lock_wallet(&self, chain_id: u64, from: &str) -> Result<WalletLock, StoreError> {
        let key = format!("holdfast:wallet:{chain_id}:{}", from.to_ascii_lowercase());
        Ok(WalletLock::on_postgres(self.store.lock(&key, WALLET_WAIT).await?))
    }
}

//! The journal's table (`journal`): the rows holdfast-web3's journal keeps for every value-moving action, their
//! queries on both dialects, the reservation's transaction and the wallet's send lock.
//!
//! What a row *means* — which status may follow which, what counts against a cap, when a reservation is refused —
//! is decided in holdfast-web3 (`holdfast_web3::journal`). The one decision that must be made inside this table's
//! transaction, the reservation's, is passed in as a closure ([`JournalTable::reserve`]): the table reads what the
//! decision needs, calls it, and inserts only when it says so, with no other reservation of the wallet (or of the user
//! authorization the row relies on) in between.
//!
//! ```
//! # async fn demo() -> Result<(), holdfast_store::StoreError> {
//! use holdfast_store::journal::{JournalTable, NewRow, Reserved, Select};
//! let table = JournalTable::on_sqlite(&holdfast_store::SqliteDb::memory()?)?;
//! let row = NewRow { id: "j_1".into(), amount: "5".into(), status: "reserved".into(), ..NewRow::default() };
//! // The decision: refuse when the day's rows already hold 10 or more.
//! let reserved = table
//!     .reserve(row, &["swap"], |found| Ok(if found.spent.len() >= 10 { Some("over") } else { None }))
//!     .await?;
//! assert!(matches!(reserved, Reserved::Inserted));
//! assert_eq!(table.select(Select::Id("j_1".into())).await?[0].amount, "5");
//! # Ok(()) }
//! ```

mod postgres;
mod sql;
mod sqlite;

pub use postgres::PgJournal;
pub use sqlite::SqliteJournal;

use crate::{Storage, StoreError};

/// Statuses whose rows count against caps and block a second send of the same action or intent.
pub const LIVE: &[&str] = &["reserved", "signed", "pending", "unknown", "stalled", "confirmed"];
/// Statuses whose rows are not settled yet: reconciliation still has work to do.
pub const UNRESOLVED: &[&str] = &["reserved", "signed", "pending", "unknown", "stalled"];
/// Statuses whose transaction's nonce is taken: it may still be mined, or was.
pub const NONCE_TAKEN: &[&str] = &["signed", "pending", "unknown", "confirmed", "reverted"];
/// Statuses of a send whose broadcast is not known to have reached the node.
pub const UNSETTLED_SEND: &[&str] = &["signed", "unknown"];
/// Statuses of an entry that did not reach the chain (or whose chain is gone), which reconciliation still checks.
pub const FAILED: &[&str] = &["failed", "dropped", "chain_reset"];

/// Which of a wallet's rows [`JournalTable::spent`] sums.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpentWindow<'a> {
    /// The rows of this day (`YYYY-MM-DD`, UTC).
    Day(&'a str),
    /// The rows made since the wallet's first live row (of this asset, in a [`LIVE`] status) of this kind; none
    /// before it, and none at all while there is no such row.
    SinceFirst(&'a str),
}

/// One new row, as stored. Times are RFC 3339; `day` is the UTC day (`YYYY-MM-DD`) the caps count it on.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NewRow {
    /// `j_…`.
    pub id: String,
    /// The session that caused it.
    pub session_id: String,
    /// The entry's kind (`swap`, `payment`, …).
    pub kind: String,
    /// Network name.
    pub network: String,
    /// Chain id.
    pub chain_id: u64,
    /// Sender.
    pub from: String,
    /// Recipient or contract.
    pub to: String,
    /// The transaction's nonce, when chosen.
    pub nonce: Option<u64>,
    /// Native value, base units (decimal).
    pub value: String,
    /// The asset the caps count.
    pub asset: String,
    /// Its symbol.
    pub asset_symbol: String,
    /// The amount the caps count, base units (decimal).
    pub amount: String,
    /// The action's fingerprint.
    pub fingerprint: String,
    /// The intent's idempotency key.
    pub intent: Option<String>,
    /// Signed bytes.
    pub raw_tx: Option<String>,
    /// Transaction hash.
    pub tx_hash: Option<String>,
    /// Status.
    pub status: String,
    /// Why it failed or was refused (already redacted).
    pub error: Option<String>,
    /// Summary (JSON text).
    pub summary: String,
    /// The user authorization the action spends (`au_…`).
    pub authorization: Option<String>,
    /// True when the action runs by itself on `authorization`: another live row of another intent holding it is
    /// then read for the decision ([`Found::authorization_holder`]).
    pub relies_on_authorization: bool,
    /// The server a payment was made to (its preset's host and port), stored with a `payment` row.
    pub server: Option<String>,
    /// When set (RFC 3339), the [`LIVE`] `payment` rows on the same chain made after it to the same recipient or the
    /// same [`NewRow::server`], whose delivery is not recorded ([`JournalTable::mark_delivered`]), are read for the
    /// decision ([`Found::undelivered`]).
    pub undelivered_since: Option<String>,
    /// Created and updated at.
    pub now: String,
    /// The UTC day it counts on.
    pub day: String,
}

/// A stored row, as read.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Row {
    /// `j_…`.
    pub id: String,
    /// The session that caused it.
    pub session_id: String,
    /// Kind.
    pub kind: String,
    /// Network name.
    pub network: String,
    /// Chain id.
    pub chain_id: i64,
    /// Sender.
    pub from: String,
    /// Recipient or contract.
    pub to: String,
    /// Nonce.
    pub nonce: Option<i64>,
    /// Native value.
    pub value: String,
    /// Asset.
    pub asset: String,
    /// Its symbol.
    pub asset_symbol: String,
    /// Amount.
    pub amount: String,
    /// Fingerprint.
    pub fingerprint: String,
    /// Signed bytes.
    pub raw_tx: Option<String>,
    /// Hash.
    pub tx_hash: Option<String>,
    /// Status.
    pub status: String,
    /// Block it was mined in.
    pub block_number: Option<i64>,
    /// Gas used.
    pub gas_used: Option<String>,
    /// Error.
    pub error: Option<String>,
    /// Summary (JSON text).
    pub summary: String,
    /// RFC 3339.
    pub created_at: String,
    /// RFC 3339.
    pub updated_at: String,
    /// Intent.
    pub intent: Option<String>,
    /// The genesis hash of the chain it was signed for.
    pub genesis: Option<String>,
}

/// Fields that change as an entry settles, as stored (`None` keeps a field).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Settled {
    /// Transaction hash.
    pub tx_hash: Option<String>,
    /// Block.
    pub block_number: Option<u64>,
    /// Gas used.
    pub gas_used: Option<String>,
    /// Error (already redacted).
    pub error: Option<String>,
    /// Summary (JSON text).
    pub summary: Option<String>,
}

/// What a list of rows is selected by.
#[derive(Debug, Clone, PartialEq)]
pub enum Select {
    /// One row by id.
    Id(String),
    /// The oldest [`LIVE`] row of an action fingerprint.
    LiveFingerprint(String),
    /// The [`LIVE`] row of an intent.
    LiveIntent(String),
    /// Rows in an [`UNRESOLVED`] status, oldest first.
    Unresolved,
    /// Transactions (not payments) of a wallet in an [`UNSETTLED_SEND`] status, oldest first.
    UnsettledSends {
        /// Chain.
        chain_id: u64,
        /// Sender (EIP-55).
        from: String,
    },
    /// Transactions with a hash, and payments, in a [`FAILED`] status, updated since an RFC 3339 time.
    RecentlyFailedSends {
        /// RFC 3339.
        since: String,
    },
    /// Transactions (not payments) of a wallet with a hash, in a [`FAILED`] status, whose nonce is in `nonces`
    /// (`from..to`), at any age, by nonce.
    FailedSendsAt {
        /// Chain.
        chain_id: u64,
        /// Sender (EIP-55).
        from: String,
        /// First nonce (included).
        nonce_from: u64,
        /// Last nonce (excluded).
        nonce_to: u64,
    },
    /// One session's rows, oldest first.
    Session(String),
    /// A view: one session's rows (oldest first) or the `limit` most recent (newest first, at most 10,000), of one
    /// kind.
    List {
        /// Only this session's.
        session_id: Option<String>,
        /// Only this kind.
        kind: Option<String>,
        /// The most rows without a session.
        limit: usize,
    },
}

/// What a reservation's transaction read for its decision.
#[derive(Debug, Clone, Default)]
pub struct Found {
    /// The [`LIVE`] row of the same intent (without one: of the same fingerprint).
    pub same_action: Option<Row>,
    /// A [`LIVE`] row of another intent holding the authorization the new row relies on.
    pub authorization_holder: Option<Row>,
    /// The amounts of the wallet's [`LIVE`] rows of the capped kinds in the asset on the row's day.
    pub spent: Vec<String>,
    /// The ids of the [`LIVE`] payments to the same recipient or server not known to have delivered, when the row
    /// asks ([`NewRow::undelivered_since`]).
    pub undelivered: Vec<String>,
}

/// What [`JournalTable::reserve`] did.
#[derive(Debug, Clone, PartialEq)]
pub enum Reserved<R> {
    /// The decision allowed it: the row was inserted.
    Inserted,
    /// The decision refused it, for this reason; nothing was written.
    Refused(R),
}

/// A wallet's send lock, held from the nonce's choice to the broadcast; released when dropped.
pub struct WalletLock {
    held: Held,
}

/// What holds a [`WalletLock`].
enum Held {
    /// A lock of this process (SQLite: one process holds the data dir).
    Local {
        /// Released when dropped.
        _guard: Box<dyn Send>,
    },
    /// A PostgreSQL advisory lock on a connection of its own, which a restart of the server or a lost connection
    /// takes away.
    Postgres(crate::postgres::PgLock),
}

impl WalletLock {
    fn new(held: impl Send + 'static) -> Self {
        Self { held: Held::Local { _guard: Box::new(held) } }
    }

    fn on_postgres(lock: crate::postgres::PgLock) -> Self {
        Self { held: Held::Postgres(lock) }
    }

    /// Whether the lock is still held: always for a lock of this process; on PostgreSQL, whether its connection
    /// still holds it (another instance may hold it now, and choose the same nonce).
    pub async fn is_held(&mut self) -> bool {
        match &mut self.held {
            Held::Local { .. } => true,
            Held::Postgres(lock) => lock.is_held().await,
        }
    }
}

impl std::fmt::Debug for WalletLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WalletLock")
    }
}

/// The journal's table on the process's storage.
#[derive(Debug)]
pub enum JournalTable {
    /// In the SQLite file (or memory).
    Sqlite(sqlite::SqliteJournal),
    /// In PostgreSQL, shared by every instance on the database.
    Postgres(postgres::PgJournal),
}

impl JournalTable {
    /// The table in `storage`, migrated first.
    pub async fn open(storage: &Storage) -> Result<Self, StoreError> {
        match storage {
            Storage::Sqlite(db) => Self::on_sqlite(db),
            Storage::Postgres(pg) => Ok(Self::Postgres(postgres::PgJournal::open(pg.clone()).await?)),
        }
    }

    /// The table in the SQLite file (or memory) `db`, migrated first.
    pub fn on_sqlite(db: &crate::SqliteDb) -> Result<Self, StoreError> {
        Ok(Self::Sqlite(sqlite::SqliteJournal::open(db)?))
    }

    /// True when rows outlive the process (a file or a database, not memory).
    pub fn is_persistent(&self) -> bool {
        match self {
            Self::Sqlite(s) => s.is_persistent(),
            Self::Postgres(_) => true,
        }
    }

    /// Inserts a row.
    pub async fn insert(&self, row: NewRow) -> Result<(), StoreError> {
        match self {
            Self::Sqlite(s) => s.execute(sql::insert(&row)).await.map(drop),
            Self::Postgres(p) => p.execute(sql::insert(&row)).await.map(drop),
        }
    }

    /// In one transaction that excludes every other reservation of the same wallet (`row`'s chain id and sender),
    /// and of the same authorization when `row` relies on one:
    /// reads what [`Found`] holds (`spent` only for `capped_kinds`, none when empty), calls `decide`, and inserts
    /// `row` when it returns `Ok(None)`. `Ok(Some(reason))` refuses and writes nothing; `Err` aborts.
    pub async fn reserve<R: Send + 'static>(
        &self,
        row: NewRow,
        capped_kinds: &[&str],
        decide: impl FnOnce(Found) -> Result<Option<R>, String> + Send + 'static,
    ) -> Result<Reserved<R>, StoreError> {
        let reads = sql::reservation_reads(&row, capped_kinds);
        match self {
            Self::Sqlite(s) => s.reserve(row, reads, decide).await,
            Self::Postgres(p) => p.reserve(row, reads, decide).await,
        }
    }

    /// Records that what row `id` paid for was delivered, once. The number of rows it changed (0: unknown, or
    /// recorded before).
    pub async fn mark_delivered(&self, id: &str, now: &str) -> Result<u64, StoreError> {
        let statement = sql::mark_delivered(id, now);
        match self {
            Self::Sqlite(s) => s.execute(statement).await,
            Self::Postgres(p) => p.execute(statement).await,
        }
    }

    /// Records the signed bytes of a `reserved` row (`signed`). The number of rows it changed (0: not reserved).
    pub async fn mark_signed(
        &self,
        id: &str,
        nonce: Option<u64>,
        raw: &str,
        hash: &str,
        genesis: Option<&str>,
        now: &str,
    ) -> Result<u64, StoreError> {
        let statement = sql::mark_signed(id, nonce, raw, hash, genesis, now);
        match self {
            Self::Sqlite(s) => s.execute(statement).await,
            Self::Postgres(p) => p.execute(statement).await,
        }
    }

    /// [`Self::mark_signed`] while `lock` is held: on PostgreSQL the row is written on the lock's own connection, so it
    /// commits only while the lock is held — a lock lost with its connection (a server restart) fails the write, and
    /// another instance that takes the lock afterwards finds the row `signed` with its nonce, or not signed at all.
    pub async fn mark_signed_holding(
        &self,
        lock: &mut WalletLock,
        id: &str,
        nonce: Option<u64>,
        (raw, hash): (&str, &str),
        genesis: Option<&str>,
        now: &str,
    ) -> Result<u64, StoreError> {
        match (self, &mut lock.held) {
            (Self::Postgres(_), Held::Postgres(held)) => {
                let statement = sql::mark_signed(id, nonce, raw, hash, genesis, now);
                postgres::PgJournal::execute_on(held.conn(), statement).await
            }
            _ => self.mark_signed(id, nonce, raw, hash, genesis, now).await,
        }
    }

    /// Moves row `id` to status `to` with the `settled` fields, when its status is one of `from` (any, when `None`).
    /// The number of rows it changed.
    pub async fn set_status(
        &self,
        id: &str,
        from: Option<&[&str]>,
        to: &str,
        settled: Settled,
        now: &str,
    ) -> Result<u64, StoreError> {
        let statement = sql::set_status(id, from, to, settled, now);
        match self {
            Self::Sqlite(s) => s.execute(statement).await,
            Self::Postgres(p) => p.execute(statement).await,
        }
    }

    /// Rows.
    pub async fn select(&self, q: Select) -> Result<Vec<Row>, StoreError> {
        let statement = sql::select(&q);
        match self {
            Self::Sqlite(s) => s.rows(statement).await,
            Self::Postgres(p) => p.rows(statement).await,
        }
    }

    /// The nonces from `lowest` up of the wallet's transactions (not payments) in one of `statuses`, ascending.
    pub async fn nonces_from(
        &self,
        chain_id: u64,
        from: &str,
        lowest: u64,
        statuses: &'static [&'static str],
    ) -> Result<Vec<u64>, StoreError> {
        let statement = sql::nonces_from(chain_id, from, lowest, statuses);
        let found = match self {
            Self::Sqlite(s) => s.strings(statement).await?,
            Self::Postgres(p) => p.strings(statement).await?,
        };
        let mut nonces: Vec<u64> = found.iter().filter_map(|n| n.parse().ok()).collect();
        nonces.sort_unstable();
        Ok(nonces)
    }

    /// The highest nonce of a transaction (not a payment) of the wallet in a [`NONCE_TAKEN`] status.
    pub async fn highest_nonce_taken(&self, chain_id: u64, from: &str) -> Result<Option<u64>, StoreError> {
        let statement = sql::highest_nonce_taken(chain_id, from);
        let n = match self {
            Self::Sqlite(s) => s.optional_int(statement).await?,
            Self::Postgres(p) => p.optional_int(statement).await?,
        };
        Ok(n.and_then(|n| u64::try_from(n).ok()))
    }

    /// Amounts of `asset` of the wallet's [`LIVE`] rows of `kinds` within `window` (none for no kinds).
    pub async fn spent(
        &self,
        chain_id: u64,
        from: &str,
        asset: &str,
        kinds: &[&str],
        window: SpentWindow<'_>,
    ) -> Result<Vec<String>, StoreError> {
        let Some(statement) = sql::spent(chain_id, from, asset, kinds, window) else { return Ok(Vec::new()) };
        match self {
            Self::Sqlite(s) => s.strings(statement).await,
            Self::Postgres(p) => p.strings(statement).await,
        }
    }

    /// Takes the wallet's send lock: in this process (SQLite: one process per file moves value) or across every
    /// instance on the database (PostgreSQL; a killed instance's lock dies with its connection).
    pub async fn lock_wallet(&self, chain_id: u64, from: &str) -> Result<WalletLock, StoreError> {
        match self {
            Self::Sqlite(s) => s.lock_wallet(chain_id, from).await,
            Self::Postgres(p) => p.lock_wallet(chain_id, from).await,
        }
    }
}

#[cfg(test)]
mod tests;

//! Where the journal is kept: the `JournalStore` trait, with the SQLite file (module `sqlite`) and PostgreSQL
//! (module `postgres`) behind it. The rules — what counts against a cap, which transition is allowed, what is
//! logged — live in [`super::Journal`] and in the statements both share (module `sql`); a store runs them and
//! supplies the two things that differ: its transaction for a reservation, and its wallet lock.

use super::entry::{DayCap, EntryKind, JournalEntry};
use super::sql::NewRow;
use holdfast_core::ToolError;
use holdfast_core::tool::BoxFuture;

/// What a list of entries is selected by.
#[derive(Debug, Clone)]
pub enum Select {
    /// One entry by id.
    Id(String),
    /// The live entry of an action fingerprint.
    LiveFingerprint(String),
    /// The live entry of an intent.
    LiveIntent(String),
    /// Entries not settled yet (reserved, signed, pending, unknown), oldest first.
    Unresolved,
    /// Transactions of a wallet that are `signed` or `unknown`, oldest first.
    UnsettledSends {
        /// Chain.
        chain_id: u64,
        /// Sender (EIP-55).
        from: String,
    },
    /// Transactions with a hash, and payments, marked `failed` or `dropped` since an RFC 3339 time.
    RecentlyFailedSends {
        /// RFC 3339.
        since: String,
    },
    /// One session's entries, oldest first.
    Session(String),
    /// A view: one session's entries (oldest first) or the `limit` most recent (newest first), of one kind.
    List {
        /// Only this session's.
        session_id: Option<String>,
        /// Only this kind.
        kind: Option<EntryKind>,
        /// The most entries without a session.
        limit: usize,
    },
}

/// What a reservation's transaction found.
#[derive(Debug, Clone)]
pub(super) enum Reservation {
    /// The row was inserted.
    Inserted,
    /// The same intent (or fingerprint) already has this live entry; nothing was written.
    Existing(Box<JournalEntry>),
    /// The cap would be exceeded by this much already spent; nothing was written.
    OverCap(alloy::primitives::U256),
    /// Another live entry holds the user authorization this action would run on by itself; nothing was written.
    AuthorizationSpent(Box<JournalEntry>),
}

/// A wallet's send lock, held from the nonce's choice to the broadcast; released when dropped.
pub struct WalletLock {
    _held: Box<dyn Send>,
}

impl WalletLock {
    pub(crate) fn new(held: impl Send + 'static) -> Self {
        Self { _held: Box::new(held) }
    }
}

impl std::fmt::Debug for WalletLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WalletLock")
    }
}

/// The journal's storage.
pub(super) trait JournalStore: Send + Sync + std::fmt::Debug {
    /// True when entries outlive the process.
    fn is_persistent(&self) -> bool;
    /// Inserts a row.
    fn insert(&self, row: NewRow) -> BoxFuture<'_, Result<(), ToolError>>;
    /// In one transaction that excludes every other reservation of the same wallet: returns the live entry of the
    /// same action if there is one, refuses if `cap` would be exceeded, else inserts `row` (as `reserved`).
    fn reserve(&self, row: NewRow, cap: Option<DayCap>) -> BoxFuture<'_, Result<Reservation, ToolError>>;
    /// Runs an `UPDATE` built by [`super::sql`]; the number of rows it changed.
    fn update(&self, statement: super::sql::Statement) -> BoxFuture<'_, Result<u64, ToolError>>;
    /// Entries.
    fn select(&self, q: Select) -> BoxFuture<'_, Result<Vec<JournalEntry>, ToolError>>;
    /// The highest nonce still or ever live for the wallet.
    fn highest_live_nonce(&self, chain_id: u64, from: String) -> BoxFuture<'_, Result<Option<u64>, ToolError>>;
    /// Live amounts of `asset` of the wallet on `day`, in entries of `kinds`.
    fn spent(
        &self,
        chain_id: u64,
        from: String,
        asset: String,
        kinds: &'static [EntryKind],
        day: String,
    ) -> BoxFuture<'_, Result<Vec<String>, ToolError>>;
    /// Takes the wallet's send lock: in this process (SQLite) or across every instance on the database
    /// (PostgreSQL).
    fn lock_wallet(&self, chain_id: u64, from: String) -> BoxFuture<'_, Result<WalletLock, ToolError>>;
}

/// Sums base-unit amounts (decimal text); an unreadable amount is an error, never zero.
pub(super) fn sum(amounts: &[String]) -> Result<alloy::primitives::U256, String> {
    let mut total = alloy::primitives::U256::ZERO;
    for a in amounts {
        let v = alloy::primitives::U256::from_str_radix(a, 10).map_err(|e| format!("amount {a:?}: {e}"))?;
        total = total.saturating_add(v);
    }
    Ok(total)
}

/// The reservation's decision, the same for both stores: `Ok(())` to insert. `holder`: a live entry of another
/// intent holding the user authorization this action relies on.
pub(super) fn decide(
    existing: Option<JournalEntry>,
    holder: Option<JournalEntry>,
    spent: &[String],
    amount: &str,
    cap: Option<DayCap>,
) -> Result<Result<(), Reservation>, String> {
    if let Some(found) = existing {
        return Ok(Err(Reservation::Existing(Box::new(found))));
    }
    if let Some(holder) = holder {
        return Ok(Err(Reservation::AuthorizationSpent(Box::new(holder))));
    }
    if let Some(cap) = cap {
        let amount = alloy::primitives::U256::from_str_radix(amount, 10).map_err(|e| format!("amount: {e}"))?;
        let spent = sum(spent)?;
        if spent.saturating_add(amount) > cap.limit {
            return Ok(Err(Reservation::OverCap(spent)));
        }
    }
    Ok(Ok(()))
}

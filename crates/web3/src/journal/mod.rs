//! The durable journal of every value-moving action (invariant 9) and the ledger the caps are reserved in.
//!
//! An action's life, as the [`crate::kernel`] drives it:
//!
//! 1. `Journal::reserve` — in one transaction that excludes every other reservation of the wallet (and of the user
//!    authorization the action relies on): an earlier entry
//!    for the same *intent* is returned instead of a new one (idempotency), the day's cap for the chain id, wallet
//!    and asset is checked against every live entry and the amount is reserved by inserting the entry as
//!    `reserved`. Concurrent callers — any number of sessions, processes sharing the SQLite file, or instances
//!    sharing a PostgreSQL database — cannot exceed a cap by one wei.
//! 2. `Journal::mark_signed` — under the wallet's send lock ([`Journal::lock_wallet`]), the signed bytes and hash
//!    are written (committed durably) before they leave the process.
//! 3. The broadcast's outcome: `pending` (the node accepted it), `failed` (a definite rejection: the reservation is
//!    released), or `unknown` (a timeout, reset, 5xx or unreadable reply: the amount stays reserved and the entry is
//!    reconciled by hash, never signed anew).
//! 4. `confirmed`, `reverted` or `dropped` once the chain settles it.
//!
//! An action refused after its inputs were validated (an independent price below the quote's promise, a failing
//! balance-delta simulation) is journaled as `refused` with the reason, and reserves nothing.
//!
//! Where it is kept: the SQLite file `DATA_DIR/holdfast.db` (or memory), or PostgreSQL (`[storage] url`), in
//! holdfast-store's journal table ([`holdfast_store::journal`], where its SQL is); this module decides what the rows
//! mean, and makes the reservation's decision inside the table's transaction (the `reserve` module).

mod entry;
mod reserve;
mod rows;

pub use entry::{
    AuthorizationUse, DayCap, EntryKind, EntryStatus, EntryUpdate, JournalEntry, NewEntry, Reserved, Undelivered,
};
pub use holdfast_store::journal::{Select, WalletLock};

use chrono::{DateTime, Utc};
use holdfast_core::ToolError;
use holdfast_store::journal::{JournalTable, Reserved as Decided, Settled, SpentWindow};
use holdfast_store::{SqliteDb, Storage};
use reserve::Refusal;
use std::path::Path;
use std::sync::Arc;

/// An error as the journal keeps it: a node's or a transport's message quotes the node URL, whose path or query
/// often holds an API key; only its scheme and host are kept (the journal is shown in the UI and the API).
pub(crate) fn stored_error(error: &str) -> String {
    holdfast_core::redact_urls(error).into_owned()
}

/// The journal. Clones share one table.
#[derive(Clone, Debug)]
pub struct Journal {
    table: Arc<JournalTable>,
}

fn db_err(e: impl std::fmt::Display) -> ToolError {
    ToolError::internal(format!("journal: {}", holdfast_core::redact_urls(&e.to_string())))
}

/// The UTC day a time counts on for the caps.
fn day(at: DateTime<Utc>) -> String {
    at.format("%Y-%m-%d").to_string()
}

fn settled(update: EntryUpdate) -> Settled {
    Settled {
        tx_hash: update.tx_hash,
        block_number: update.block_number,
        gas_used: update.gas_used,
        error: update.error.as_deref().map(stored_error),
        summary: update.summary.map(|s| s.to_string()),
    }
}

fn statuses(list: &[EntryStatus]) -> Vec<&'static str> {
    list.iter().map(|s| s.as_str()).collect()
}

impl Journal {
    /// Opens (or creates) the journal in the SQLite file at `path` (directory mode 0700, files mode 0600).
    /// The file is opened on its own: a process that keeps other tables in it passes its one handle to
    /// [`Journal::open_storage`] instead.
    pub fn open(path: &Path) -> Result<Self, ToolError> {
        Self::on_sqlite(SqliteDb::open(path)?)
    }

    /// A journal that lives in memory (replay without configuration). The kernel refuses to move value with a
    /// persistent key over such a journal.
    pub fn in_memory() -> Result<Self, ToolError> {
        Self::on_sqlite(SqliteDb::memory()?)
    }

    fn on_sqlite(db: SqliteDb) -> Result<Self, ToolError> {
        Ok(Self { table: Arc::new(JournalTable::on_sqlite(&db).map_err(db_err)?) })
    }

    /// The journal in `storage`: its SQLite file (or memory), or its PostgreSQL database (migrated first).
    pub async fn open_storage(storage: &Storage) -> Result<Self, ToolError> {
        Ok(Self { table: Arc::new(JournalTable::open(storage).await.map_err(db_err)?) })
    }

    /// True when entries survive the process (a file or a database, not memory).
    pub fn is_persistent(&self) -> bool {
        self.table.is_persistent()
    }

    async fn must_get(&self, id: &str) -> Result<JournalEntry, ToolError> {
        self.get(id).await?.ok_or_else(|| db_err("entry vanished after insert"))
    }

    /// Writes a new entry durably and returns it (no cap, no idempotency check: for records such as `refused`).
    pub(crate) async fn insert(&self, entry: NewEntry, status: EntryStatus) -> Result<JournalEntry, ToolError> {
        let row = rows::new_row(entry, status);
        let id = row.id.clone();
        self.table.insert(row).await.map_err(db_err)?;
        let written = self.must_get(&id).await?;
        tracing::info!(journal_id = %written.id, status = status.as_str(), kind = written.kind.as_str(), "journal entry");
        Ok(written)
    }

    /// Reserves `entry.amount` of `entry.asset` for `entry.from` on `entry.chain_id` under `cap`, in one transaction
    /// that excludes every other reservation of the wallet: an existing live entry of the same intent (or, without
    /// an intent, of the same fingerprint) is returned instead; a cap that would be exceeded writes nothing.
    pub(crate) async fn reserve(&self, entry: NewEntry, cap: Option<DayCap>) -> Result<Reserved, ToolError> {
        self.reserve_counting(entry, cap, None).await
    }

    /// [`Journal::reserve`] for a payment, refused also ([`Reserved::Undelivered`]) when `undelivered.max` live payments
    /// on the chain to the same payee or the same `undelivered.server`, made since `undelivered.since`, are not known to
    /// have delivered ([`Journal::delivered`]): counted in the same transaction, across sessions and instances.
    pub(crate) async fn reserve_counting(
        &self,
        entry: NewEntry,
        cap: Option<DayCap>,
        undelivered: Option<Undelivered>,
    ) -> Result<Reserved, ToolError> {
        let mut row = rows::new_row(entry, EntryStatus::Reserved);
        if let Some(u) = &undelivered {
            row.undelivered_since = Some(u.since.to_rfc3339());
            row.server = Some(u.server.clone());
        }
        let max = undelivered.map(|u| u.max);
        let (id, written) = (row.id.clone(), rows::written(&row));
        let amount = row.amount.clone();
        let capped: Vec<&str> = cap.map(|cap| cap.kinds.iter().map(|k| k.as_str()).collect()).unwrap_or_default();
        let decided = self.table.reserve(row, &capped, move |found| reserve::decide(found, &amount, cap, max));
        match decided.await.map_err(db_err)? {
            Decided::Refused(Refusal::Existing(found)) => {
                tracing::info!(journal_id = %found.id, status = found.status.as_str(), "journal: the same action is already live");
                Ok(Reserved::Existing(*found))
            }
            Decided::Refused(Refusal::OverCap(spent)) => {
                tracing::info!(%spent, "journal: refused, the day's cap would be exceeded");
                Ok(Reserved::OverCap { spent })
            }
            Decided::Refused(Refusal::AuthorizationSpent(by)) => {
                tracing::info!(journal_id = %by.id, "journal: refused, the user's authorization already moved value");
                Ok(Reserved::AuthorizationSpent { by: *by })
            }
            Decided::Refused(Refusal::Undelivered(ids)) => {
                tracing::info!(count = ids.len(), "journal: refused, the payee's last payments delivered nothing");
                Ok(Reserved::Undelivered { ids })
            }
            Decided::Inserted => {
                tracing::info!(journal_id = %id, status = "reserved", "journal transition");
                Ok(Reserved::New(written))
            }
        }
    }

    /// Records that what entry `id` paid for was delivered: it no longer counts as undelivered
    /// (`Journal::reserve_counting`).
    pub async fn delivered(&self, id: &str) -> Result<(), ToolError> {
        let now = Utc::now().to_rfc3339();
        self.table.mark_delivered(id, &now).await.map_err(db_err).map(drop)
    }

    /// Takes the wallet's send lock, held by the kernel from the nonce's choice to the broadcast: in this process
    /// for the SQLite file, across every instance for PostgreSQL. Released when the guard is dropped.
    pub async fn lock_wallet(&self, chain_id: u64, from: &str) -> Result<WalletLock, ToolError> {
        self.table.lock_wallet(chain_id, from).await.map_err(db_err)
    }

    /// Records the signed bytes of a reserved entry (durably, before they leave the process): `signed` (tests; the
    /// kernel writes them holding the wallet's lock, [`Journal::mark_signed_holding`]).
    #[cfg(any(test, feature = "test-hooks"))]
    pub(crate) async fn mark_signed(
        &self,
        id: &str,
        nonce: Option<u64>,
        raw_tx: &str,
        tx_hash: &str,
        genesis: Option<&str>,
    ) -> Result<(), ToolError> {
        let now = Utc::now().to_rfc3339();
        let changed = self.table.mark_signed(id, nonce, raw_tx, tx_hash, genesis, &now).await.map_err(db_err)?;
        if changed == 1 {
            tracing::info!(journal_id = %id, status = "signed", tx_hash = %tx_hash, "journal transition");
            Ok(())
        } else {
            Err(db_err("only a reserved entry can be marked signed"))
        }
    }

    /// [`Journal::mark_signed`] while the wallet's send `lock` is held (on PostgreSQL, written on the lock's own
    /// connection: it commits only while the lock is held).
    pub(crate) async fn mark_signed_holding(
        &self,
        lock: &mut holdfast_store::journal::WalletLock,
        id: &str,
        nonce: Option<u64>,
        signed: (&str, &str),
        genesis: Option<&str>,
    ) -> Result<(), ToolError> {
        let (raw_tx, tx_hash) = signed;
        let now = Utc::now().to_rfc3339();
        let changed =
            self.table.mark_signed_holding(lock, id, nonce, (raw_tx, tx_hash), genesis, &now).await.map_err(db_err)?;
        if changed == 1 {
            tracing::info!(journal_id = %id, status = "signed", tx_hash = %tx_hash, "journal transition");
            Ok(())
        } else {
            Err(db_err("only a reserved entry can be marked signed"))
        }
    }

    /// Moves an entry to `to` only if it is still in one of `from` (compare-and-set: a reconciler working from an older
    /// snapshot cannot overwrite a newer state). Returns whether it moved.
    pub(crate) async fn transition(
        &self,
        id: &str,
        from: &[EntryStatus],
        to: EntryStatus,
        update: EntryUpdate,
    ) -> Result<bool, ToolError> {
        let now = Utc::now().to_rfc3339();
        let from = statuses(from);
        let changed =
            self.table.set_status(id, Some(&from), to.as_str(), settled(update), &now).await.map_err(db_err)?;
        if changed == 1 {
            tracing::info!(journal_id = %id, status = to.as_str(), "journal transition");
        } else {
            tracing::debug!(journal_id = %id, to = to.as_str(), "journal: transition skipped, the entry moved on");
        }
        Ok(changed == 1)
    }

    /// The nonces from `lowest` up, ascending, of `from`'s transactions on `chain_id` that hold them (signed, pending,
    /// unknown, confirmed, reverted): the next send takes one past the highest, or a stalled send's free nonce below
    /// it ([`crate::chain::MinedCount::next_for`]).
    pub async fn nonces_taken_from(&self, chain_id: u64, from: &str, lowest: u64) -> Result<Vec<u64>, ToolError> {
        let taken = holdfast_store::journal::NONCE_TAKEN;
        self.table.nonces_from(chain_id, from, lowest, taken).await.map_err(db_err)
    }

    /// The nonces from `lowest` up, ascending, of `from`'s `stalled` transactions on `chain_id`: the gaps the next
    /// send may fill.
    pub async fn stalled_nonces_from(&self, chain_id: u64, from: &str, lowest: u64) -> Result<Vec<u64>, ToolError> {
        self.table.nonces_from(chain_id, from, lowest, &["stalled"]).await.map_err(db_err)
    }

    /// The highest nonce of a transaction of `from` on `chain_id` that may still be mined (signed, pending, unknown)
    /// or was (confirmed, reverted). Failed, dropped and stalled entries' nonces are free to reuse (a stalled one's
    /// transaction and the one that takes its nonce cannot both be mined).
    pub async fn highest_live_nonce(&self, chain_id: u64, from: &str) -> Result<Option<u64>, ToolError> {
        self.table.highest_nonce_taken(chain_id, from).await.map_err(db_err)
    }

    /// Moves an entry to `status`, recording the given fields (unconditionally: the kernel moves entries only by
    /// [`Journal::transition`]; this is for tests that stage a state).
    #[cfg(any(test, feature = "test-hooks"))]
    pub(crate) async fn update(&self, id: &str, status: EntryStatus, update: EntryUpdate) -> Result<(), ToolError> {
        let now = Utc::now().to_rfc3339();
        self.table.set_status(id, None, status.as_str(), settled(update), &now).await.map_err(db_err)?;
        // Logged once written: the log never shows a state the journal does not hold.
        tracing::info!(journal_id = %id, status = status.as_str(), "journal transition");
        Ok(())
    }

    /// Entries a [`Select`] names.
    pub async fn select(&self, q: Select) -> Result<Vec<JournalEntry>, ToolError> {
        Ok(self.table.select(q).await.map_err(db_err)?.into_iter().map(rows::entry).collect())
    }

    async fn one(&self, q: Select) -> Result<Option<JournalEntry>, ToolError> {
        Ok(self.select(q).await?.into_iter().next())
    }

    /// One entry.
    pub async fn get(&self, id: &str) -> Result<Option<JournalEntry>, ToolError> {
        self.one(Select::Id(id.to_owned())).await
    }

    /// A live entry for the same action (fingerprint), if any.
    pub async fn live_by_fingerprint(&self, fingerprint: &str) -> Result<Option<JournalEntry>, ToolError> {
        self.one(Select::LiveFingerprint(fingerprint.to_owned())).await
    }

    /// The live entry of an intent, if any.
    pub async fn live_by_intent(&self, intent: &str) -> Result<Option<JournalEntry>, ToolError> {
        self.one(Select::LiveIntent(intent.to_owned())).await
    }

    /// Entries not yet settled (reserved, signed, pending or unknown), oldest first.
    pub async fn unresolved(&self) -> Result<Vec<JournalEntry>, ToolError> {
        self.select(Select::Unresolved).await
    }

    /// Transactions of `from` on `chain_id` that were signed but whose broadcast is not known to have reached the
    /// node (`signed` or `unknown`), oldest first. A new intent waits until these are settled.
    pub async fn unsettled_sends(&self, chain_id: u64, from: &str) -> Result<Vec<JournalEntry>, ToolError> {
        self.select(Select::UnsettledSends { chain_id, from: from.to_owned() }).await
    }

    /// Transactions marked `failed` or `dropped` within `within` that carry a hash, and payments marked `failed`:
    /// reconciliation still looks for their receipt (or the payment's settlement), so a rejection that was not one (a
    /// lying or confused node, a lagging receipt index or clock) cannot keep what was mined out of the count.
    pub async fn recently_failed_sends(&self, within: std::time::Duration) -> Result<Vec<JournalEntry>, ToolError> {
        let since = Utc::now() - chrono::Duration::from_std(within).unwrap_or_default();
        self.select(Select::RecentlyFailedSends { since: since.to_rfc3339() }).await
    }

    /// Transactions of `from` on `chain_id` marked `failed`, `dropped` or `chain_reset`, with a hash and a nonce in
    /// `nonces`, however long ago: the sends a chain that counts past the journal may have mined after all.
    pub async fn failed_sends_at(
        &self,
        chain_id: u64,
        from: &str,
        nonces: std::ops::Range<u64>,
    ) -> Result<Vec<JournalEntry>, ToolError> {
        let (nonce_from, nonce_to) = (nonces.start, nonces.end);
        self.select(Select::FailedSendsAt { chain_id, from: from.to_owned(), nonce_from, nonce_to }).await
    }

    /// Entries of one session, oldest first.
    pub async fn for_session(&self, session_id: &str) -> Result<Vec<JournalEntry>, ToolError> {
        self.select(Select::Session(session_id.to_owned())).await
    }

    /// The entries a view asks for, filtered before the limit: one session's (all of them, oldest first) or the
    /// `limit` most recent of all sessions (newest first), of one `kind` when given.
    pub async fn list(
        &self,
        session_id: Option<&str>,
        kind: Option<EntryKind>,
        limit: usize,
    ) -> Result<Vec<JournalEntry>, ToolError> {
        let kind = kind.map(|k| k.as_str().to_owned());
        self.select(Select::List { session_id: session_id.map(str::to_owned), kind, limit }).await
    }

    /// The most recent entries, newest first.
    pub async fn recent(&self, limit: usize) -> Result<Vec<JournalEntry>, ToolError> {
        self.list(None, None, limit).await
    }

    /// Total `amount` of `asset` sent by `from` on `chain_id` in live entries of `kinds` created today (UTC).
    pub async fn spent_today(
        &self,
        chain_id: u64,
        from: &str,
        asset: &str,
        kinds: &'static [EntryKind],
    ) -> Result<alloy::primitives::U256, ToolError> {
        self.sent((chain_id, from, asset), kinds, SpentWindow::Day(&day(Utc::now()))).await
    }

    /// Like [`Journal::spent_today`], on any day since the wallet's first live entry of kind `first` (of this asset:
    /// reserved, signed, pending, unknown, stalled or confirmed; not refused, failed, reverted, dropped or chain_reset): what
    /// its live entries of `kinds` moved of `asset`, `wallet` being `(chain_id, from, asset)`. Nothing while it has no
    /// such entry.
    pub async fn sent_since_first(
        &self,
        wallet: (u64, &str, &str),
        kinds: &'static [EntryKind],
        first: EntryKind,
    ) -> Result<alloy::primitives::U256, ToolError> {
        self.sent(wallet, kinds, SpentWindow::SinceFirst(first.as_str())).await
    }

    /// The sum of `asset` the wallet `(chain_id, from, asset)` sent in live entries of `kinds` within `window`.
    async fn sent(
        &self,
        (chain_id, from, asset): (u64, &str, &str),
        kinds: &[EntryKind],
        window: SpentWindow<'_>,
    ) -> Result<alloy::primitives::U256, ToolError> {
        let kinds: Vec<&str> = kinds.iter().map(|k| k.as_str()).collect();
        let amounts = self.table.spent(chain_id, from, asset, &kinds, window).await.map_err(db_err)?;
        reserve::sum(&amounts).map_err(db_err)
    }
}

#[cfg(test)]
mod tests;

/// The journal's write methods, for tests and benchmarks that stage a crash between two of the kernel's steps. The
/// kernel alone writes the journal (they are `pub(crate)`); this module exists only with the `test-hooks` feature,
/// which only this crate's own tests and benches turn on.
#[cfg(feature = "test-hooks")]
pub mod test_hooks {
    use super::{DayCap, EntryStatus, EntryUpdate, Journal, JournalEntry, NewEntry, Reserved};
    use holdfast_core::ToolError;

    /// [`Journal::insert`].
    pub async fn insert(j: &Journal, entry: NewEntry, status: EntryStatus) -> Result<JournalEntry, ToolError> {
        j.insert(entry, status).await
    }

    /// `Journal::reserve`.
    pub async fn reserve(j: &Journal, entry: NewEntry, cap: Option<DayCap>) -> Result<Reserved, ToolError> {
        j.reserve(entry, cap).await
    }

    /// `Journal::mark_signed`.
    pub async fn mark_signed(
        j: &Journal,
        id: &str,
        nonce: Option<u64>,
        raw: &str,
        hash: &str,
        genesis: Option<&str>,
    ) -> Result<(), ToolError> {
        j.mark_signed(id, nonce, raw, hash, genesis).await
    }

    /// [`Journal::transition`].
    pub async fn transition(
        j: &Journal,
        id: &str,
        from: &[EntryStatus],
        to: EntryStatus,
        update: EntryUpdate,
    ) -> Result<bool, ToolError> {
        j.transition(id, from, to, update).await
    }

    /// [`Journal::update`].
    pub async fn set_status(j: &Journal, id: &str, status: EntryStatus) -> Result<(), ToolError> {
        j.update(id, status, EntryUpdate::default()).await
    }
}

//! Reconciliation: settles journal entries against the chain by hash — at the call (an unknown broadcast, a retry
//! of the same intent, a new intent waiting for the wallet's earlier sends), in the background
//! ([`spawn_background`]) and at start-up ([`crate::Web3::reconcile`]).
//!
//! It never signs a new transaction of its own choosing for an entry. A mined transaction is recorded
//! (`confirmed`/`reverted`) — even one an earlier process marked `failed`, so a node that lied about a rejection
//! cannot keep a mined swap outside the day's spend. An entry is released (`dropped`) only on the chain's proof
//! ([`crate::chain::Chain::nonce_use`]): its nonce mined by another transaction. One whose nonce every node shows
//! unused while the node refuses its identical bytes is `stalled`: still counted (a node may hold it back), its nonce
//! free for the next send; its bytes are sent again only when a retry of its intent asks, or a fund of the same asset
//! settles it first (the background pass only looks for its receipt and its nonce's use). One the node does not know is broadcast again from its identical signed bytes
//! (same hash, same nonce: it cannot be mined twice); anything unproven stays as it is, counted against the caps. A
//! reservation never signed within [`STALE_RESERVATION`] is released. Payments are settled by the chain's
//! authorization state (`super::payment::reconcile_payment`). The background pass also resets the allowances of
//! abandoned swaps (`super::allowances::sweep`) — the one transaction the kernel signs on its own.

use crate::Web3;
use crate::chain::{Broadcast, NonceUse};
use crate::journal::{EntryKind, EntryStatus, EntryUpdate, JournalEntry};
use alloy::primitives::{B256, Bytes};
use holdfast_core::ToolError;
use serde::Serialize;
use std::sync::{Arc, Weak};
use std::time::Duration;

/// A `reserved` entry older than this was never signed (the signing step takes milliseconds): it is released.
pub const STALE_RESERVATION: Duration = Duration::from_secs(120);
/// How often the background task reconciles.
pub const BACKGROUND_INTERVAL: Duration = Duration::from_secs(15);
/// How long a `failed` transaction is still checked for a receipt.
pub const FAILED_RECHECK: Duration = Duration::from_secs(24 * 3600);

/// What reconciliation did with one entry.
#[derive(Debug, Clone, Serialize)]
pub struct Reconciled {
    /// The entry.
    pub journal_id: String,
    /// Its new status.
    pub status: EntryStatus,
    /// What happened, for the operator.
    pub note: String,
}

/// An entry after reconciliation, with what changed.
pub(crate) struct Settled {
    pub entry: JournalEntry,
    pub report: Reconciled,
}

/// Moves `entry` from the status it was read in (compare-and-set: a newer state written meanwhile wins).
async fn set(
    web3: &Web3,
    entry: &JournalEntry,
    status: EntryStatus,
    update: EntryUpdate,
    note: &str,
) -> Result<Option<Settled>, ToolError> {
    if !web3.journal().transition(&entry.id, &[entry.status], status, update).await? {
        return Ok(None);
    }
    let entry = web3.journal().get(&entry.id).await?.unwrap_or_else(|| entry.clone());
    let report = Reconciled { journal_id: entry.id.clone(), status, note: note.to_owned() };
    Ok(Some(Settled { entry, report }))
}

/// The configured network an entry was sent on, found by the chain id it was signed for: a network renamed since
/// keeps its entries, and a name now given to another chain does not take them (its receipts and nonces are another
/// chain's).
pub(crate) fn network_of(web3: &Web3, entry: &JournalEntry) -> Result<holdfast_core::config::NetworkConfig, ToolError> {
    web3.core().networks.by_chain_id(entry.chain_id).cloned().ok_or_else(|| {
        ToolError::new(
            holdfast_core::ErrorCode::UnknownNetwork,
            format!(
                "journal entry {}: chain id {} ({}) is no longer configured, so it cannot be looked up",
                entry.id, entry.chain_id, entry.network
            ),
        )
    })
}

/// Settles one entry as far as the chain tells now. `None`: nothing changed.
pub(crate) async fn entry(web3: &Web3, entry: &JournalEntry) -> Result<Option<Settled>, ToolError> {
    settle(web3, entry, true).await
}

/// [`entry`]; `resend_stalled`: a `stalled` entry's identical bytes are sent again (a retry of its intent asks for
/// that; the background pass only looks whether it was mined or its nonce used, and never re-sends what the user was
/// told is not out there).
async fn settle(web3: &Web3, entry: &JournalEntry, resend_stalled: bool) -> Result<Option<Settled>, ToolError> {
    if entry.kind == EntryKind::Payment {
        return match super::payment::reconcile_payment(web3, entry).await? {
            Some(status) => {
                let note = match status {
                    EntryStatus::Confirmed => "payment settled while we were away",
                    _ => "payment authorization expired unsettled",
                };
                let now = web3.journal().get(&entry.id).await?.unwrap_or_else(|| entry.clone());
                Ok(Some(Settled {
                    entry: now,
                    report: Reconciled { journal_id: entry.id.clone(), status, note: note.into() },
                }))
            }
            None => Ok(None),
        };
    }
    if entry.status == EntryStatus::Reserved {
        let age = (chrono::Utc::now() - entry.updated_at).to_std().unwrap_or_default();
        if age < STALE_RESERVATION {
            return Ok(None);
        }
        let update =
            EntryUpdate { error: Some("never signed; the reservation was released".into()), ..Default::default() };
        return set(web3, entry, EntryStatus::Failed, update, "stale reservation released").await;
    }
    let network = network_of(web3, entry)?;
    let chain = web3.chain(&network)?;
    let hash: Option<B256> = entry.tx_hash.as_deref().and_then(|h| h.parse().ok());
    if let Some(hash) = hash
        && let Some(receipt) = chain.receipt(hash).await?
    {
        let status = if receipt.status() { EntryStatus::Confirmed } else { EntryStatus::Reverted };
        if status == entry.status {
            return Ok(None);
        }
        let update = EntryUpdate {
            block_number: receipt.block_number,
            gas_used: Some(receipt.gas_used.to_string()),
            ..Default::default()
        };
        return set(web3, entry, status, update, "mined").await;
    }
    if !matches!(entry.status, EntryStatus::Signed | EntryStatus::Pending | EntryStatus::Unknown | EntryStatus::Stalled)
    {
        return Ok(None);
    }
    if let Some(settled) = chain_began_anew(web3, &chain, entry).await? {
        return Ok(settled);
    }
    let from = holdfast_core::address::parse_address("from", &entry.from)?;
    let known = match hash {
        Some(h) => chain.is_known(h).await?,
        None => false,
    };
    // Released only on the chain's proof: its nonce mined by another transaction (a lagging receipt index, or a node
    // that hides this one, never turns our own mined transaction into a dropped one).
    let nonce_use = match entry.nonce {
        Some(nonce) if !known => Some(chain.nonce_use(from, nonce).await?),
        _ => None,
    };
    match nonce_use {
        Some(NonceUse::UsedBy(other)) if Some(other) != hash => {
            let nonce = entry.nonce.unwrap_or_default();
            // Released only when every node shows that other transaction; until then it stays as it is.
            if !chain.mined_elsewhere_too(other, from, nonce).await {
                return Ok(None);
            }
            // The transaction that used the nonce may be one of ours recorded as never sent (a node kept it while
            // answering that it refused it, and let it out later): found at any age and recorded as mined, counted.
            // Until its receipt shows, this entry stays as it is, so the nonce's amount stays counted somewhere.
            let failed = web3.journal().failed_sends_at(entry.chain_id, &entry.from, nonce..nonce + 1).await?;
            let ours = failed.iter().find(|e| e.tx_hash.as_deref().and_then(|h| h.parse::<B256>().ok()) == Some(other));
            if let Some(earlier) = ours {
                let settled = Box::pin(settle(web3, earlier, resend_stalled)).await?;
                if !settled.is_some_and(|s| s.report.status.is_live()) {
                    return Ok(None);
                }
            }
            let update = EntryUpdate {
                error: Some(format!("nonce {nonce} was used by another transaction ({other})")),
                ..Default::default()
            };
            return set(web3, entry, EntryStatus::Dropped, update, "nonce used by another transaction; never mined")
                .await;
        }
        // Mined by this very hash, though the node shows no receipt yet: it stays live.
        Some(NonceUse::UsedBy(_)) => {
            if entry.status == EntryStatus::Pending {
                return Ok(None);
            }
            return set(
                web3,
                entry,
                EntryStatus::Pending,
                EntryUpdate::default(),
                "mined (its receipt is not shown yet)",
            )
            .await;
        }
        // Used or pending by something the chain does not show: no proof either way, the entry stays as it is.
        Some(NonceUse::Unknown) => return Ok(None),
        Some(NonceUse::Unused) | None => {}
    }
    let (Some(_), Some(raw)) = (hash, entry.raw_tx()) else {
        let update = EntryUpdate { error: Some("no signed bytes were journaled".into()), ..Default::default() };
        return set(web3, entry, EntryStatus::Failed, update, "nothing to re-send").await;
    };
    if known {
        if entry.status == EntryStatus::Pending {
            return Ok(None);
        }
        return set(web3, entry, EntryStatus::Pending, EntryUpdate::default(), "the node has it").await;
    }
    if entry.status == EntryStatus::Stalled && !resend_stalled {
        return Ok(None);
    }
    let raw: Bytes = raw.parse().map_err(|_| ToolError::internal("journal holds unreadable signed bytes"))?;
    match chain.broadcast(&raw).await {
        Broadcast::Accepted => {
            set(
                web3,
                entry,
                EntryStatus::Pending,
                EntryUpdate::default(),
                "re-broadcast the identical signed transaction",
            )
            .await
        }
        Broadcast::Rejected(why) => {
            // The node does not know it and refuses it now, and every node shows its nonce unused: `stalled`, still
            // counted (a node may hold it and let it out later) until its nonce is used; never released here.
            let Some(nonce) = entry.nonce else { return Ok(None) };
            if entry.status == EntryStatus::Stalled
                || chain.nonce_use(from, nonce).await? != NonceUse::Unused
                || !chain.nonce_unused_everywhere(from, nonce).await.unwrap_or(false)
            {
                return Ok(None);
            }
            let update = EntryUpdate { error: Some(why), ..Default::default() };
            set(web3, entry, EntryStatus::Stalled, update, "refused again, and the chain shows its nonce unused").await
        }
        Broadcast::Unknown(_) => Ok(None),
    }
}

/// An entry signed on a local development chain whose genesis the node no longer shows (a devnet reset without its
/// saved state) is `chain_reset` — neither dropped (no other transaction used its nonce) nor sent again (its chain is
/// gone). It is still checked for a receipt for a day, like a failed send, so one mined after all is recorded. `None`:
/// not a local chain, no genesis recorded, or the node shows the entry's chain: reconcile on.
async fn chain_began_anew(
    web3: &Web3,
    chain: &crate::chain::Chain,
    entry: &JournalEntry,
) -> Result<Option<Option<Settled>>, ToolError> {
    // Only a local chain begins anew; an entry of any other chain is reconciled as always (and records no genesis).
    if !holdfast_core::config::is_local_chain_id(entry.chain_id) {
        return Ok(None);
    }
    let Some(recorded) = entry.genesis.as_deref().and_then(|g| g.parse::<B256>().ok()) else { return Ok(None) };
    // Every node must show another chain: one that still shows the entry's keeps it live.
    let Some(now) = chain.genesis_other_than(recorded).await? else { return Ok(None) };
    let update = EntryUpdate {
        error: Some(format!(
            "the chain was reset: the node's chain begins at {now}, not at {recorded} where this was sent; it is \
             never sent again"
        )),
        ..Default::default()
    };
    Ok(Some(set(web3, entry, EntryStatus::ChainReset, update, "chain was reset").await?))
}

/// A send signed this recently may be in the middle of its broadcast by a live call: the background pass leaves it to
/// that call (which reconciles it itself under the account's send lock).
pub const IN_FLIGHT: Duration = Duration::from_secs(30);

/// Which background pass (`pass`, counted from 0 every [`BACKGROUND_INTERVAL`]) checks an entry last changed `age`
/// ago: every pass for ten minutes, then every 4th (a minute) for the rest of the hour, then every 20th (five minutes)
/// — but a failed or dropped send, checked for a late receipt that must count against the day's caps at once, every
/// 4th for its whole day. Entries are spread over the
/// passes by their id, so the work of a pass is bounded by the entries of the last ten minutes plus a share of the
/// rest, however many the journal holds (before, every entry of the last day at every pass). The operator's
/// `reconcile` and the start-up check every entry.
///
/// ```
/// use holdfast_web3::kernel::reconcile::due_in_pass;
/// use std::time::Duration;
///
/// let minutes = |m: u64| Duration::from_secs(m * 60);
/// assert!((0..8).all(|pass| due_in_pass(minutes(5), false, "j_1", pass)));
/// assert_eq!((0..80).filter(|&pass| due_in_pass(minutes(30), false, "j_1", pass)).count(), 20);
/// assert_eq!((0..80).filter(|&pass| due_in_pass(minutes(90), false, "j_1", pass)).count(), 4);
/// assert_eq!((0..80).filter(|&pass| due_in_pass(minutes(90), true, "j_1", pass)).count(), 20);
/// ```
pub fn due_in_pass(age: Duration, only_a_late_receipt: bool, id: &str, pass: u64) -> bool {
    let every: u64 = if age < Duration::from_secs(600) {
        1
    } else if age < Duration::from_secs(3600) || only_a_late_receipt {
        4
    } else {
        20
    };
    let spread = id.bytes().fold(0u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b)));
    pass.wrapping_add(spread) % every == 0
}

/// Settles every unresolved entry, and re-checks recently failed or dropped transactions for a receipt. `pass`: the
/// background pass's number — it leaves `signed` entries younger than [`IN_FLIGHT`] alone (live calls may be sending
/// them) and checks older entries less often ([`due_in_pass`]); `None` checks every entry.
pub(crate) async fn all(web3: &Web3, pass: Option<u64>) -> Result<Vec<Reconciled>, ToolError> {
    let mut out = Vec::new();
    let mut work = web3.journal().unresolved().await?;
    work.extend(web3.journal().recently_failed_sends(FAILED_RECHECK).await?);
    let now = chrono::Utc::now();
    work.retain(|e| {
        let Some(pass) = pass else { return true };
        let age = (now - e.updated_at).to_std().unwrap_or_default();
        let in_flight = e.kind != EntryKind::Payment && e.status == EntryStatus::Signed && age < IN_FLIGHT;
        let late_receipt = matches!(e.status, EntryStatus::Failed | EntryStatus::Dropped);
        !in_flight && due_in_pass(age, late_receipt, &e.id, pass)
    });
    for e in work {
        match settle(web3, &e, false).await {
            Ok(Some(settled)) => {
                tracing::info!(journal_id = %settled.report.journal_id, status = settled.report.status.as_str(), note = %settled.report.note, "journal reconciled");
                out.push(settled.report);
            }
            Ok(None) => {}
            Err(err) => tracing::warn!(journal_id = %e.id, error = %err.message, "journal: reconciliation failed"),
        }
    }
    Ok(out)
}

/// Reconciles every [`BACKGROUND_INTERVAL`] while `web3` is alive (a weak handle: the task ends with it), then resets
/// the allowances of abandoned swaps.
/// Needs a Tokio runtime; returns `false` when there is none.
pub fn spawn_background(web3: &Arc<Web3>) -> bool {
    let Ok(handle) = tokio::runtime::Handle::try_current() else { return false };
    let weak: Weak<Web3> = Arc::downgrade(web3);
    handle.spawn(async move {
        for pass in 0u64.. {
            tokio::time::sleep(BACKGROUND_INTERVAL).await;
            let Some(web3) = weak.upgrade() else { break };
            let _ = all(&web3, Some(pass)).await;
            super::allowances::sweep(&web3).await;
        }
    });
    true
}

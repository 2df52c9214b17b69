//! The last steps every value-moving transaction shares, in order:
//!
//! 1. an earlier entry for the same intent is returned, settled, instead of sending anything (idempotency);
//! 2. the user is asked when the policy says so;
//! 3. the day's cap is reserved atomically ([`crate::journal::Journal::reserve`]);
//! 4. under the account's send lock: earlier transactions whose broadcast outcome is unknown are reconciled — while
//!    one stays unknown nothing new is signed (`outcome_unknown`); the nonce comes from the chain; the transaction is
//!    signed and its bytes and hash journaled durably; then it is broadcast;
//! 5. the broadcast's answer decides: accepted → `pending`; a definite rejection (the node answered an error and
//!    does not know the hash) → `failed`, the reservation released; anything else → `unknown`, reconciled by hash
//!    at once (the node knows it → `pending`; else the identical bytes are sent again);
//! 6. `tx.pending` is published, the receipt awaited (bounded), recorded, and `tx.confirmed` published.

use super::reconcile::{self, Settled};
use crate::Web3;
use crate::chain::{Broadcast, Chain, FeeQuote, TxPlan};
use crate::journal::{DayCap, EntryKind, EntryStatus, EntryUpdate, JournalEntry, NewEntry, Reserved};
use crate::policy::{AssetMove, Decision};
use alloy::primitives::B256;
use holdfast_core::config::NetworkConfig;
use holdfast_core::event::{EventPayload, TxConfirmed, TxPending};
use holdfast_core::{ErrorCode, ToolContext, ToolError};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

/// A transaction ready for the last steps: everything the chain does not decide, and what the policy said.
pub(crate) struct Action<'a> {
    /// The tool asking (for confirmations).
    pub tool: &'a str,
    /// The tool call's params (to re-run it after approval).
    pub params: Value,
    /// What the journal records.
    pub kind: EntryKind,
    /// The network.
    pub network: &'a NetworkConfig,
    /// Its client.
    pub chain: &'a Chain,
    /// Target, calldata, value.
    pub plan: TxPlan,
    /// Gas and fees from the chain, within the policy's caps.
    pub fees: FeeQuote,
    /// Fingerprint of the exact action (what an approval is bound to).
    pub fingerprint: String,
    /// The intent's idempotency key.
    pub intent: String,
    /// Auto or confirm.
    pub decision: Decision,
    /// The day's cap to reserve under, if the action moves an asset out.
    pub cap: Option<DayCap>,
    /// Decoded summary.
    pub summary: Value,
    /// Recipient or contract, for the journal.
    pub to: String,
    /// The asset moved (EIP-55 address or the native placeholder).
    pub asset: String,
}

/// How a sent transaction ended (or that it has not yet).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TxOutcome {
    /// Mined, status 1.
    Confirmed,
    /// Mined, status 0.
    Reverted,
    /// Accepted by the node; no receipt within the wait.
    Pending,
    /// The broadcast's outcome is not known yet; the journal reconciles it by hash and never signs it anew.
    Unknown,
}

impl TxOutcome {
    /// The wire form (as serialized).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Confirmed => "confirmed",
            Self::Reverted => "reverted",
            Self::Pending => "pending",
            Self::Unknown => "unknown",
        }
    }
}

/// What was sent (or found already sent for the same intent).
#[derive(Debug, Clone)]
pub struct Sent {
    /// Transaction hash.
    pub hash: String,
    /// Where it stands.
    pub outcome: TxOutcome,
    /// Block number, once mined.
    pub block_number: Option<u64>,
    /// Gas used, once mined.
    pub gas_used: Option<String>,
    /// The journal entry.
    pub journal_id: String,
}

impl Sent {
    /// The outcome an entry records, or `None` when it has no transaction.
    pub(crate) fn from_entry(e: &JournalEntry) -> Option<Self> {
        let outcome = match e.status {
            EntryStatus::Confirmed => TxOutcome::Confirmed,
            EntryStatus::Reverted => TxOutcome::Reverted,
            EntryStatus::Pending => TxOutcome::Pending,
            EntryStatus::Signed | EntryStatus::Unknown => TxOutcome::Unknown,
            _ => return None,
        };
        Some(Self {
            hash: e.tx_hash.clone()?,
            outcome,
            block_number: e.block_number,
            gas_used: e.gas_used.clone(),
            journal_id: e.id.clone(),
        })
    }
}

/// The earlier entry of an intent, settled as far as the chain tells now, as this call's answer.
pub(crate) async fn already_sent(web3: &Web3, entry: JournalEntry) -> Result<Sent, ToolError> {
    if entry.status == EntryStatus::Reserved {
        return Err(ToolError::new(
            ErrorCode::DuplicateAction,
            format!("this action is being sent right now (journal {}); it is never sent twice", entry.id),
        ));
    }
    let entry = match reconcile::entry(web3, &entry).await {
        Ok(Some(Settled { entry, .. })) => entry,
        _ => entry,
    };
    Sent::from_entry(&entry).ok_or_else(|| {
        ToolError::new(
            ErrorCode::DuplicateAction,
            format!("this action was already journaled (journal {}, {})", entry.id, entry.status.as_str()),
        )
    })
}

/// Runs steps 2–6 for `a`, whose amounts `m` describes.
pub(crate) async fn execute(
    web3: &Web3,
    ctx: &ToolContext,
    a: Action<'_>,
    m: &AssetMove<'_>,
) -> Result<Sent, ToolError> {
    // The last point where a stop leaves nothing behind: past it the action is reserved, signed and broadcast.
    ctx.check_cancelled("the transaction was signed")?;
    // A turn the user did not start (another agent, a reminder) moves nothing without the user's confirmation.
    let not_user = holdfast_core::confirm::TurnStarter::not_user(ctx)
        .map(|who| format!("this turn was started by {who}, not by you"));
    let reason = match &a.decision {
        Decision::Confirm(reason) => Some(reason.clone()),
        Decision::Auto => not_user.or_else(|| {
            // One amount from the user's words, one automatic action of a class per user message.
            let shown = crate::kernel::human(m.amount, m.decimals, m.symbol);
            let approval = a.kind == EntryKind::Approval;
            crate::kernel::inputs::already_authorized(ctx, approval, &a.asset, &m.amount.to_string(), &shown, &a.intent)
        }),
    };
    if let Some(reason) = reason {
        ctx.confirmations.require(a.tool, &a.params, &a.fingerprint, a.summary.clone(), &reason)?;
    }
    let from = web3.wallet().address();
    let new = NewEntry {
        session_id: ctx.session_id.to_string(),
        kind: a.kind,
        network: a.network.name.clone(),
        chain_id: a.network.chain_id,
        from: from.to_checksum(None),
        to: a.to.clone(),
        nonce: None,
        value: a.plan.value.to_string(),
        asset: a.asset.clone(),
        asset_symbol: m.symbol.to_owned(),
        amount: m.amount.to_string(),
        fingerprint: a.fingerprint.clone(),
        intent: Some(a.intent.clone()),
        raw_tx: None,
        tx_hash: None,
        error: None,
        summary: a.summary.clone(),
    };
    let entry = match web3.journal().reserve(new, a.cap).await? {
        Reserved::New(e) => e,
        Reserved::Existing(e) => return already_sent(web3, e).await,
        Reserved::OverCap { spent } => {
            let limit = a.cap.map(|c| c.limit).unwrap_or_default();
            return Err(web3.policy().over_cap(m, spent, limit));
        }
    };
    let sent = sign_and_broadcast(web3, &a, &entry).await;
    let (hash, status) = match sent {
        Ok(done) => done,
        Err(e) => {
            // Nothing left the process, or the node definitely refused it: release the reservation. (Its nonce is
            // free again: the next transaction reuses it, so even a node that lied about the rejection cannot get
            // both mined.)
            let update = EntryUpdate { error: Some(e.message.clone()), ..Default::default() };
            let from = [EntryStatus::Reserved, EntryStatus::Signed];
            web3.journal().transition(&entry.id, &from, EntryStatus::Failed, update).await?;
            return Err(e);
        }
    };
    let hash_text = hash.to_string();
    if status == EntryStatus::Unknown {
        return Ok(Sent {
            hash: hash_text,
            outcome: TxOutcome::Unknown,
            block_number: None,
            gas_used: None,
            journal_id: entry.id,
        });
    }
    ctx.events.publish(EventPayload::TxPending(TxPending {
        journal_id: entry.id.clone(),
        hash: hash_text.clone(),
        network: a.network.name.clone(),
        kind: a.kind.as_str().to_owned(),
        summary: a.summary.clone(),
    }));
    // A stop while waiting for the receipt leaves the transaction as it is, sent: the answer says pending, as after
    // the receipt timeout, and the journal settles it.
    let receipt = ctx.until_cancelled("waiting for the receipt", a.chain.wait_receipt(hash, web3.receipt_timeout()));
    let Some(receipt) = receipt.await.unwrap_or(Ok(None))? else {
        return Ok(Sent {
            hash: hash_text,
            outcome: TxOutcome::Pending,
            block_number: None,
            gas_used: None,
            journal_id: entry.id,
        });
    };
    let (status, outcome) = if receipt.status() {
        (EntryStatus::Confirmed, TxOutcome::Confirmed)
    } else {
        (EntryStatus::Reverted, TxOutcome::Reverted)
    };
    let gas_used = receipt.gas_used.to_string();
    let update =
        EntryUpdate { block_number: receipt.block_number, gas_used: Some(gas_used.clone()), ..Default::default() };
    let settled_from = [EntryStatus::Signed, EntryStatus::Pending, EntryStatus::Unknown, EntryStatus::Dropped];
    web3.journal().transition(&entry.id, &settled_from, status, update).await?;
    ctx.events.publish(EventPayload::TxConfirmed(TxConfirmed {
        journal_id: entry.id.clone(),
        hash: hash_text.clone(),
        network: a.network.name.clone(),
        kind: a.kind.as_str().to_owned(),
        status: outcome.as_str().to_owned(),
        block_number: receipt.block_number,
        gas_used: gas_used.clone(),
    }));
    Ok(Sent {
        hash: hash_text,
        outcome,
        block_number: receipt.block_number,
        gas_used: Some(gas_used),
        journal_id: entry.id,
    })
}

/// Step 4 and 5 under the account's send lock. `Err` means nothing is out there (the caller releases the
/// reservation); `Ok` carries the hash and `pending` or `unknown`.
async fn sign_and_broadcast(
    web3: &Web3,
    a: &Action<'_>,
    entry: &JournalEntry,
) -> Result<(B256, EntryStatus), ToolError> {
    let wallet = web3.wallet();
    let from = wallet.address();
    let from_text = from.to_checksum(None);
    let journal = web3.journal();
    // One send of this wallet at a time — across every instance when the journal is in PostgreSQL.
    let _sending = journal.lock_wallet(a.network.chain_id, &from_text).await?;

    // A new intent waits until the wallet's earlier sends are known to the node.
    for earlier in journal.unsettled_sends(a.network.chain_id, &from_text).await? {
        if earlier.id != entry.id {
            // Best effort: an RPC error leaves it as it was, and the check below refuses.
            let _ = reconcile::entry(web3, &earlier).await;
        }
    }
    let still: Vec<String> = journal
        .unsettled_sends(a.network.chain_id, &from_text)
        .await?
        .into_iter()
        .filter(|e| e.id != entry.id)
        .map(|e| e.id)
        .collect();
    if !still.is_empty() {
        return Err(ToolError::new(
            ErrorCode::OutcomeUnknown,
            format!(
                "an earlier transaction of this wallet ({}) has an unknown outcome; nothing new is signed until it is \
                 reconciled with the chain — try again shortly",
                still.join(", ")
            ),
        ));
    }

    let nonce = a.chain.next_nonce(from, journal.highest_live_nonce(a.network.chain_id, &from_text).await?).await?;
    let signed = a.chain.sign(wallet.signer(), &a.plan, a.fees, nonce)?;
    // Durable before the bytes leave the process (invariant 9).
    journal.mark_signed(&entry.id, Some(nonce), &signed.raw.to_string(), &signed.hash.to_string()).await?;
    let status = match a.chain.broadcast(&signed.raw).await {
        Broadcast::Accepted => EntryStatus::Pending,
        Broadcast::Rejected(why) => {
            // A node's "no" is checked against its own pool before the reservation is released; a failed check is
            // not a "no".
            match a.chain.is_known(signed.hash).await {
                Ok(true) => EntryStatus::Pending,
                Ok(false) => return Err(ToolError::new(ErrorCode::TransactionFailed, why)),
                Err(_) => unknown(journal, &entry.id, why).await,
            }
        }
        Broadcast::Unknown(why) => {
            // From here on the bytes may be out there: nothing below may fail the call (the entry stays live).
            unknown(journal, &entry.id, why).await;
            if a.chain.is_known(signed.hash).await.unwrap_or(false) {
                EntryStatus::Pending
            } else {
                match a.chain.broadcast(&signed.raw).await {
                    Broadcast::Accepted => EntryStatus::Pending,
                    _ => EntryStatus::Unknown,
                }
            }
        }
    };
    let from_sent = [EntryStatus::Signed, EntryStatus::Unknown];
    if status == EntryStatus::Pending
        && let Err(e) = journal.transition(&entry.id, &from_sent, EntryStatus::Pending, EntryUpdate::default()).await
    {
        // The entry stays `signed`, which reconciliation settles by hash: never an error once broadcast.
        tracing::warn!(journal_id = %entry.id, error = %e.message, "journal: could not record the broadcast");
    }
    Ok((signed.hash, status))
}

/// Records that a broadcast's outcome is unknown (best effort: the entry is `signed` otherwise, which reconciliation
/// treats the same way).
async fn unknown(journal: &crate::journal::Journal, id: &str, why: String) -> EntryStatus {
    let update = EntryUpdate { error: Some(why), ..Default::default() };
    if let Err(e) = journal.transition(id, &[EntryStatus::Signed], EntryStatus::Unknown, update).await {
        tracing::warn!(journal_id = %id, error = %e.message, "journal: could not record an unknown outcome");
    }
    EntryStatus::Unknown
}

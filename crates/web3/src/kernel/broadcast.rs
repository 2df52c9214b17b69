//! Step 12 of the [pipeline](super::pipeline): the signed transaction, journaled, is broadcast, and the node's answer
//! decides nothing by itself. Accepted → `pending`. Any error (a refusal, no answer, a garbled one) → the chain is
//! asked where the nonce stands: shown unused by every configured node, twice a moment apart, or mined by another
//! transaction on every node → `failed` (the reservation and the authorization are released); mined by this
//! hash, or known to a node → `pending`; anything else → the identical bytes are sent once more, and if that is not
//! accepted → `unknown`, which reconciliation settles later (still counted against the caps).

use crate::Web3;
use crate::chain::{Broadcast, Chain, NonceUse};
use crate::journal::{EntryStatus, EntryUpdate};
use alloy::primitives::{Address, B256};
use holdfast_core::{ErrorCode, ToolError};

/// Broadcasts the journaled bytes and settles what the answer means. `Err` only when the chain proves the nonce
/// unused (the entry is then `failed` and its reservation released); otherwise `pending` or `unknown`.
pub(super) async fn broadcast(
    web3: &Web3,
    chain: &Chain,
    id: &str,
    from: Address,
    signed: &crate::chain::SignedTx,
) -> Result<EntryStatus, ToolError> {
    let journal = web3.journal();
    let (status, why) = match chain.broadcast(&signed.raw).await {
        Broadcast::Accepted => (EntryStatus::Pending, None),
        // A node's "no" — or no answer at all — is only its word: the chain decides.
        Broadcast::Rejected(why) | Broadcast::Unknown(why) => {
            match prove(chain, from, signed.nonce, signed.hash).await {
                Proof::NotSent(shown) => {
                    let why = format!("{why}; {shown}: this transaction was not sent");
                    let update = EntryUpdate { error: Some(why.clone()), ..Default::default() };
                    let from_signed = [EntryStatus::Signed];
                    return Ok(match journal.transition(id, &from_signed, EntryStatus::Failed, update).await {
                        Ok(true) => return Err(ToolError::new(ErrorCode::TransactionFailed, why)),
                        // Reconciliation moved it meanwhile (it found the transaction): what it holds stands.
                        Ok(false) => match journal.get(id).await.ok().flatten().map(|e| e.status) {
                            Some(EntryStatus::Failed | EntryStatus::Signed) | None => EntryStatus::Unknown,
                            Some(now) => now,
                        },
                        // A journal that cannot record it leaves the entry `signed`, which reconciliation may send
                        // again: unknown, never "failed" and never "pending" (no node has it).
                        Err(_) => EntryStatus::Unknown,
                    });
                }
                Proof::Sent => (EntryStatus::Pending, None),
                Proof::Unproven => {
                    // Send the identical bytes once more: same hash, same nonce, at most one can ever be mined.
                    match chain.broadcast(&signed.raw).await {
                        Broadcast::Accepted => (EntryStatus::Pending, None),
                        _ => (EntryStatus::Unknown, Some(why)),
                    }
                }
            }
        }
    };
    let update = EntryUpdate { error: why, ..Default::default() };
    if let Err(e) = journal.transition(id, &[EntryStatus::Signed], status, update).await {
        // The entry stays `signed`, which reconciliation settles by hash and nonce: never an error once broadcast.
        tracing::warn!(journal_id = %id, error = %e.message, "journal: could not record the broadcast");
    }
    Ok(status)
}

/// How long the proof that a nonce is unused waits before it asks every node again.
const PROOF_RECHECK: std::time::Duration = std::time::Duration::from_millis(1000);

/// What the chain shows about a transaction a node answered with an error.
enum Proof {
    /// Its nonce is unused, or was mined by another transaction: it is not out there and never will be (what the
    /// chain showed).
    NotSent(String),
    /// The node has it, or its nonce was mined by it.
    Sent,
    /// Neither could be shown.
    Unproven,
}

async fn prove(chain: &Chain, from: Address, nonce: u64, hash: B256) -> Proof {
    if chain.is_known(hash).await.unwrap_or(false) {
        return Proof::Sent;
    }
    match chain.nonce_use(from, nonce).await {
        Ok(NonceUse::Unused) => {
            // One node's pending count may lag (a load balancer's other backend): every configured node must show it
            // unused, and again a moment later.
            tokio::time::sleep(PROOF_RECHECK).await;
            match chain.nonce_unused_everywhere(from, nonce).await {
                Ok(true) if !chain.is_known(hash).await.unwrap_or(true) => Proof::NotSent(format!(
                    "every RPC node shows nonce {nonce} unused, mined and pending, twice {} ms apart",
                    PROOF_RECHECK.as_millis()
                )),
                _ => Proof::Unproven,
            }
        }
        Ok(NonceUse::UsedBy(h)) if h == hash => Proof::Sent,
        // Releases the entry and gives the authorization back: every node must show that other transaction.
        Ok(NonceUse::UsedBy(h)) if chain.mined_elsewhere_too(h, from, nonce).await => {
            Proof::NotSent(format!("every RPC node shows nonce {nonce} mined by {h}"))
        }
        Ok(NonceUse::UsedBy(_) | NonceUse::Unknown) | Err(_) => Proof::Unproven,
    }
}

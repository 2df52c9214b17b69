//! Step 12 of the [pipeline](super::pipeline): the signed transaction, journaled, is broadcast, and the node's answer
//! decides nothing by itself. Accepted → `pending`. Any error (a refusal, no answer, a garbled one) → the chain is
//! asked where the nonce stands: mined by another transaction on every node → `failed` (the reservation and the
//! authorization are released: it can never be mined); shown unused by every configured node, twice a moment apart →
//! `stalled` (not out there as far as the chain shows, but a node may hold it back and let it out later, so it stays
//! counted against the caps and keeps the user's authorization until its nonce is used; its nonce is free for the
//! next send, and at most one of the two is mined); mined by this hash, or known to a node → `pending`; anything else
//! → the identical bytes are sent once more, and if that is not accepted → `unknown`, which reconciliation settles
//! later (still counted against the caps).

use crate::Web3;
use crate::chain::{Broadcast, Chain, NonceUse};
use crate::journal::{EntryStatus, EntryUpdate};
use alloy::primitives::{Address, B256};
use holdfast_core::{ErrorCode, ToolError};

/// Broadcasts the journaled bytes and settles what the answer means. `Err` only when the chain proves the nonce used
/// by another transaction (the entry is then `failed` and its reservation released); otherwise `pending`, `unknown`
/// or `stalled`.
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
                Proof::Unused(shown) => {
                    // A node that answered "refused" may still hold the transaction and let it out later: its bytes
                    // stay valid until its nonce is used, so it keeps its reservation and authorization.
                    let why = format!(
                        "{why}; {shown}: this transaction is not out there as far as the chain shows, but its \
                         signature stays valid until its nonce is used"
                    );
                    (EntryStatus::Stalled, Some(why))
                }
                Proof::Replaced(shown) => {
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
    match journal.transition(id, &[EntryStatus::Signed], status, update).await {
        Ok(true) => Ok(status),
        // Reconciliation settled it meanwhile, or the journal could not record it (the entry stays `signed`, which
        // reconciliation settles by hash and nonce): never an error once broadcast, and never "stalled" unrecorded.
        Ok(false) if status == EntryStatus::Stalled => Ok(EntryStatus::Unknown),
        Ok(false) => Ok(status),
        Err(e) => {
            tracing::warn!(journal_id = %id, error = %e.message, "journal: could not record the broadcast");
            Ok(if status == EntryStatus::Stalled { EntryStatus::Unknown } else { status })
        }
    }
}

/// The answer for a send left `stalled` (journal `id`, transaction `hash`): not out there, still counted.
pub(super) fn stalled(id: &str, hash: &str) -> ToolError {
    ToolError::new(
        ErrorCode::OutcomeUnknown,
        format!(
            "the node refused the transaction and no RPC node shows it (journal {id}, transaction {hash}): it is not \
             out there as far as the chain shows, but its signature stays valid until its nonce is used, so it still \
             counts against your limits (and an amount from your message it relied on stays spent); asking again sends the same \
             transaction again (it is never signed anew). To give it up, make any other transaction of the wallet: \
             it takes this nonce, and once it is mined this one is released"
        ),
    )
    .with_details(serde_json::json!({"journal_id": id, "hash": hash, "status": "stalled"}))
}

/// How long the proof that a nonce is unused waits before it asks every node again.
const PROOF_RECHECK: std::time::Duration = std::time::Duration::from_millis(1000);

/// What the chain shows about a transaction a node answered with an error.
enum Proof {
    /// Its nonce is unused on every node (what the chain showed): it is not out there now, though a node may hold it.
    Unused(String),
    /// Its nonce was mined by another transaction on every node: it never will be (what the chain showed).
    Replaced(String),
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
                Ok(true) if !chain.is_known(hash).await.unwrap_or(true) => Proof::Unused(format!(
                    "every RPC node shows nonce {nonce} unused, mined and pending, twice {} ms apart",
                    PROOF_RECHECK.as_millis()
                )),
                _ => Proof::Unproven,
            }
        }
        Ok(NonceUse::UsedBy(h)) if h == hash => Proof::Sent,
        // Releases the entry and gives the authorization back: every node must show that other transaction.
        Ok(NonceUse::UsedBy(h)) if chain.mined_elsewhere_too(h, from, nonce).await => {
            Proof::Replaced(format!("every RPC node shows nonce {nonce} mined by {h}"))
        }
        Ok(NonceUse::UsedBy(_) | NonceUse::Unknown) | Err(_) => Proof::Unproven,
    }
}

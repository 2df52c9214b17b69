//! The wallet's earlier sends, settled before a new one is signed: one whose broadcast is in doubt is reconciled (and
//! refuses the new action while it stays so), and one recorded as never sent that the chain shows mined after all is
//! recorded and counted before anything is signed beside it.

use super::reconcile;
use crate::Web3;
use holdfast_core::config::NetworkConfig;
use holdfast_core::{ErrorCode, ToolError};

/// Before a nonce is chosen: when every node shows more of the wallet's transactions mined than the journal holds
/// live, one recorded as never sent (`failed`, `dropped` or `chain_reset`) may have been mined after all — a node kept it while
/// answering that it refused it, and let it out once every node had shown its nonce unused and its amount and the
/// user's authorization were given back. Each such entry whose nonce the chain has since used, however old, is
/// looked up again on every node ([`reconcile::entry`]); one found mined is recorded (it counts against the caps and
/// holds its authorization again) and refuses the new action, which would otherwise go out beside it.
pub(super) async fn mined_after_all(
    web3: &Web3,
    network: &NetworkConfig,
    from_text: &str,
    journaled: Option<u64>,
    mined: &crate::chain::MinedCount,
) -> Result<(), ToolError> {
    let first_free = journaled.map_or(0, |n| n.saturating_add(1));
    if mined.lowest <= first_free {
        return Ok(());
    }
    // Past the journal, only on every node's word: one that did not answer may count fewer (it may be the honest
    // one, while the node that answered counts a transaction it held back).
    if let Some(e) = &mined.unanswered {
        return Err(ToolError::new(
            e.code,
            format!(
                "{}; the other nodes count more of this wallet's transactions than the journal holds, which only every \
                 node's count may show: nothing was signed — try again shortly",
                e.message
            ),
        ));
    }
    let mined = mined.lowest;
    let mut found = Vec::new();
    for earlier in web3.journal().failed_sends_at(network.chain_id, from_text, first_free..mined).await? {
        if let Some(settled) = reconcile::entry(web3, &earlier).await?
            && settled.report.status.is_live()
        {
            found.push(settled.report.journal_id);
        }
    }
    if found.is_empty() {
        return Ok(());
    }
    Err(ToolError::new(
        ErrorCode::OutcomeUnknown,
        format!(
            "an earlier transaction of this wallet that a node reported as not sent was mined after all ({}); it now \
             counts against the limits, and nothing new was signed — check the journal before trying again",
            found.join(", ")
        ),
    ))
}

/// A new action waits until the wallet's earlier sends are known to the chain: each `signed` or `unknown` one is
/// reconciled now, and one that stays so refuses the new action (`outcome_unknown`).
pub(super) async fn settle_earlier_sends(web3: &Web3, network: &NetworkConfig, from: &str) -> Result<(), ToolError> {
    let journal = web3.journal();
    for earlier in journal.unsettled_sends(network.chain_id, from).await? {
        // Best effort: an RPC error leaves it as it was, and the check below refuses.
        let _ = reconcile::entry(web3, &earlier).await;
    }
    let still: Vec<String> = journal.unsettled_sends(network.chain_id, from).await?.into_iter().map(|e| e.id).collect();
    if still.is_empty() {
        return Ok(());
    }
    Err(ToolError::new(
        ErrorCode::OutcomeUnknown,
        format!(
            "an earlier transaction of this wallet ({}) has an unknown outcome; nothing new is signed until it is \
             reconciled with the chain — try again shortly",
            still.join(", ")
        ),
    ))
}

//! The last steps every value-moving transaction shares, in order: refuse a duplicate of an action already signed,
//! ask for confirmation when the policy says so, sign with the chain's nonce and fees, journal durably, broadcast,
//! publish `tx.pending`, wait (bounded) for the receipt, record it, publish `tx.confirmed`.

use crate::Web3;
use crate::chain::{Chain, FeeQuote, TxPlan};
use crate::journal::{EntryKind, EntryStatus, EntryUpdate, NewEntry};
use crate::policy::Decision;
use alloy::primitives::U256;
use holdfast_core::config::NetworkConfig;
use holdfast_core::event::names;
use holdfast_core::{ErrorCode, ToolContext, ToolError};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Value, json};

/// A transaction ready for the last steps.
pub(crate) struct Outgoing<'a> {
    pub tool: &'a str,
    pub params: Value,
    pub kind: EntryKind,
    pub network: &'a NetworkConfig,
    pub chain: &'a Chain,
    pub plan: TxPlan,
    pub fees: FeeQuote,
    pub fingerprint: String,
    pub decision: Decision,
    pub summary: Value,
    pub asset: String,
    pub asset_symbol: String,
    pub amount: U256,
}

/// How a sent transaction ended (or that it is still pending).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TxOutcome {
    /// Mined, status 1.
    Confirmed,
    /// Mined, status 0.
    Reverted,
    /// Broadcast; no receipt within the wait.
    Pending,
}

/// What was sent.
pub(crate) struct Sent {
    pub hash: String,
    pub outcome: TxOutcome,
    pub block_number: Option<u64>,
    pub gas_used: Option<String>,
    pub journal_id: String,
}

pub(crate) async fn confirm_and_send(web3: &Web3, ctx: &ToolContext, out: Outgoing<'_>) -> Result<Sent, ToolError> {
    if let Some(existing) = web3.journal().live_by_fingerprint(&out.fingerprint).await? {
        return Err(ToolError::new(
            ErrorCode::DuplicateAction,
            format!(
                "this exact action was already signed (journal {}, status {}); it is never sent twice",
                existing.id,
                existing.status.as_str()
            ),
        ));
    }
    if let Decision::Confirm(reason) = &out.decision {
        ctx.confirmations.require(out.tool, &out.params, &out.fingerprint, out.summary.clone(), reason)?;
    }

    let wallet = web3.wallet();
    let from = wallet.address().to_checksum(None);
    let entry_template = NewEntry {
        session_id: ctx.session_id.to_string(),
        kind: out.kind,
        network: out.network.name.clone(),
        chain_id: out.network.chain_id,
        from: from.clone(),
        to: out.plan.to.to_checksum(None),
        nonce: None,
        value: out.plan.value.to_string(),
        asset: out.asset.clone(),
        asset_symbol: out.asset_symbol.clone(),
        amount: out.amount.to_string(),
        fingerprint: out.fingerprint.clone(),
        raw_tx: None,
        tx_hash: None,
        summary: out.summary.clone(),
    };
    let journal = web3.journal().clone();
    let sent = out
        .chain
        .sign_journal_broadcast(wallet.signer(), &out.plan, out.fees, |signed| async move {
            let entry = NewEntry {
                nonce: Some(signed.nonce),
                raw_tx: Some(signed.raw.to_string()),
                tx_hash: Some(signed.hash.to_string()),
                ..entry_template
            };
            // Atomic with the duplicate check: a concurrent send of the same action stops here, unbroadcast.
            journal.insert_unique(entry, EntryStatus::Signed).await.map(|e| e.id)
        })
        .await;
    let (signed, journal_id) = match sent {
        Ok(ok) => ok,
        Err((error, journaled)) => {
            if let Some(id) = journaled {
                let update = EntryUpdate { error: Some(error.message.clone()), ..Default::default() };
                web3.journal().update(&id, EntryStatus::Failed, update).await?;
            }
            return Err(error);
        }
    };
    let hash = signed.hash.to_string();
    web3.journal().update(&journal_id, EntryStatus::Pending, EntryUpdate::default()).await?;
    ctx.events.publish(
        names::TX_PENDING,
        json!({"journal_id": journal_id, "hash": hash, "network": out.network.name, "kind": out.kind, "summary": out.summary}),
    );

    let Some(receipt) = out.chain.wait_receipt(signed.hash, web3.receipt_timeout()).await? else {
        return Ok(Sent { hash, outcome: TxOutcome::Pending, block_number: None, gas_used: None, journal_id });
    };
    let (status, outcome) = if receipt.status() {
        (EntryStatus::Confirmed, TxOutcome::Confirmed)
    } else {
        (EntryStatus::Reverted, TxOutcome::Reverted)
    };
    let gas_used = receipt.gas_used.to_string();
    let update =
        EntryUpdate { block_number: receipt.block_number, gas_used: Some(gas_used.clone()), ..Default::default() };
    web3.journal().update(&journal_id, status, update).await?;
    ctx.events.publish(
        names::TX_CONFIRMED,
        json!({
            "journal_id": journal_id,
            "hash": hash,
            "network": out.network.name,
            "kind": out.kind,
            "status": outcome,
            "block_number": receipt.block_number,
            "gas_used": gas_used,
        }),
    );
    Ok(Sent { hash, outcome, block_number: receipt.block_number, gas_used: Some(gas_used), journal_id })
}

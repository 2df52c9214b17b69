//! `web3_tx {from_register, network}`: sends the validated swap quote held in a register — nothing else.
//!
//! A thin front of [`crate::kernel::swap`], which owns every rule: the typed quote register, idempotency, the
//! validator, the allowance, the caps, the simulation's balance deltas, the independent price, the fee caps, the
//! confirmation and the journal. Calling it again on the same quote returns the same transaction.

use crate::Web3;
use crate::kernel::TxOutcome;
use crate::kernel::swap::{SwapSummary, swap};
use holdfast_core::{AiTool, ToolContext, ToolError, ToolKind};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Parameters of `web3_tx`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Web3TxInput {
    /// The register holding the quote: `swap_quote`.
    pub from_register: String,
    /// The network, e.g. `base`.
    pub network: String,
}

/// Result of `web3_tx`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Web3TxOutput {
    /// Transaction hash.
    pub hash: String,
    /// `confirmed`, `reverted`, `pending` (no receipt within the wait) or `unknown` (the broadcast's outcome is being
    /// reconciled; calling again returns the same transaction).
    pub status: TxOutcome,
    /// Block number, once mined.
    pub block_number: Option<u64>,
    /// Gas used, once mined.
    pub gas_used: Option<String>,
    /// Journal entry id.
    pub journal_id: String,
    /// The decoded action (null when this quote had already been sent: this is that transaction).
    pub summary: Option<SwapSummary>,
}

/// The `web3_tx` tool.
#[derive(Debug, Clone)]
pub struct Web3Tx(pub Arc<Web3>);

impl AiTool for Web3Tx {
    type Input = Web3TxInput;
    type Output = Web3TxOutput;

    fn name(&self) -> &str {
        "web3_tx"
    }

    fn description(&self) -> &str {
        "Send the swap quote stored in a register (from_register: \"swap_quote\"). It takes no addresses, amounts \
         or calldata: everything comes from the validated quote. It may return `confirmation_required` (the user \
         approves), `allowance_required` (run token_approve first), `policy_denied`, `simulation_failed` or \
         `quote_rejected` (the quote promises less than an independent price). Calling it again on the same quote \
         returns the same transaction, never a second one."
    }

    fn kind(&self) -> ToolKind {
        ToolKind::ValueMoving
    }

    fn examples(&self) -> Vec<serde_json::Value> {
        vec![serde_json::json!({"from_register": "swap_quote", "network": "base"})]
    }

    async fn execute(&self, input: Web3TxInput, ctx: &ToolContext) -> Result<Web3TxOutput, ToolError> {
        let done = swap(&self.0, ctx, self.name(), &input.from_register, &input.network).await?;
        Ok(Web3TxOutput {
            hash: done.sent.hash,
            status: done.sent.outcome,
            block_number: done.sent.block_number,
            gas_used: done.sent.gas_used,
            journal_id: done.sent.journal_id,
            summary: done.summary,
        })
    }
}

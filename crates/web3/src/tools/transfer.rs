//! `transfer {network, token_register, amount_register, preset | recipient_register}`: sends the native token or an
//! ERC-20. Every value is a register name or an address-book name: the model types no address and no amount.
//! A thin front of [`crate::kernel::transfer`].

use crate::Web3;
use crate::kernel::TxOutcome;
use crate::kernel::transfer::{RecipientRegister, TransferRequest, TransferSummary, transfer};
use holdfast_core::{AiTool, PresetOrCustom, ToolContext, ToolError, ToolKind};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Parameters of `transfer`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct TransferInput {
    /// The network, e.g. `base`.
    pub network: String,
    /// Register holding the token (written by `token_lookup`), e.g. `transfer_token`.
    pub token_register: String,
    /// Register holding the amount in base units (written by `to_raw_amount`), e.g. `transfer_amount`.
    pub amount_register: String,
    /// The recipient: an address-book name as `preset`, or `recipient_register` (e.g. `recipient_address`, written
    /// by `context_address`) — one or the other, never both.
    #[serde(flatten)]
    pub recipient: PresetOrCustom<RecipientRegister>,
}

/// Result of `transfer`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct TransferOutput {
    /// Transaction hash.
    pub hash: String,
    /// `confirmed`, `reverted`, `pending` or `unknown` (being reconciled; calling again returns the same one).
    pub status: TxOutcome,
    /// Block number, once mined.
    pub block_number: Option<u64>,
    /// Journal entry id.
    pub journal_id: String,
    /// The decoded action (null when these registers had already been sent: this is that transaction).
    pub summary: Option<TransferSummary>,
}

/// The `transfer` tool.
#[derive(Debug, Clone)]
pub struct Transfer(pub Arc<Web3>);

impl AiTool for Transfer {
    type Input = TransferInput;
    type Output = TransferOutput;

    fn name(&self) -> &str {
        "transfer"
    }

    fn description(&self) -> &str {
        "Send a token to a recipient. Everything is a register name: the token (token_lookup … cache_as \
         \"transfer_token\"), the amount (to_raw_amount … cache_as \"transfer_amount\") and the recipient — either \
         `preset` with an address-book name, or `recipient_register` (\"recipient_address\", filled by \
         context_address from the user's own words). Never type an address. It may return `confirmation_required` \
         (the user approves), `policy_denied` or `simulation_failed`; calling it again with the same registers \
         returns the same transaction."
    }

    fn kind(&self) -> ToolKind {
        ToolKind::ValueMoving
    }

    fn examples(&self) -> Vec<serde_json::Value> {
        vec![serde_json::json!({
            "network": "base",
            "token_register": "transfer_token",
            "amount_register": "transfer_amount",
            "preset": null,
            "recipient_register": "recipient_address"
        })]
    }

    async fn execute(&self, input: TransferInput, ctx: &ToolContext) -> Result<TransferOutput, ToolError> {
        let params = serde_json::json!({
            "network": input.network,
            "token_register": input.token_register,
            "amount_register": input.amount_register,
            "preset": input.recipient.preset(),
            "recipient_register": match &input.recipient {
                PresetOrCustom::Custom(r) => Some(r.recipient_register.as_str()),
                PresetOrCustom::Preset { .. } => None,
            },
        });
        let request = TransferRequest {
            tool: self.name(),
            network: &input.network,
            token_register: &input.token_register,
            amount_register: &input.amount_register,
            recipient: &input.recipient,
            params,
        };
        let done = transfer(&self.0, ctx, request).await?;
        Ok(TransferOutput {
            hash: done.sent.hash,
            status: done.sent.outcome,
            block_number: done.sent.block_number,
            journal_id: done.sent.journal_id,
            summary: done.summary,
        })
    }
}

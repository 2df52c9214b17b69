//! `token_approve {for_quote}`: approves exactly the quote's sell amount to the network's pinned spender
//! (invariant 5). Never unlimited, never another spender, nothing when the allowance already suffices.

use crate::Web3;
use crate::chain::{IERC20, TxPlan};
use crate::journal::EntryKind;
use crate::policy::AssetMove;
use crate::quote::validate_quote;
use crate::send::{Outgoing, TxOutcome, confirm_and_send};
use crate::tools::{fingerprint, human};
use alloy::sol_types::SolCall;
use holdfast_core::{AiTool, ErrorCode, ToolContext, ToolError, ToolKind};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Parameters of `token_approve`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApproveInput {
    /// The register holding the quote that needs the approval: `swap_quote`.
    pub for_quote: String,
}

/// Result of `token_approve`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ApproveOutput {
    /// `approved`, or `not_needed` when the allowance already covers the sell amount.
    pub result: String,
    /// The token approved.
    pub token: String,
    /// The pinned spender.
    pub spender: String,
    /// The allowance now (human units).
    pub allowance: String,
    /// Transaction hash, when one was sent.
    pub hash: Option<String>,
    /// Transaction status, when one was sent.
    pub status: Option<TxOutcome>,
    /// Journal entry, when one was written.
    pub journal_id: Option<String>,
}

/// The `token_approve` tool.
#[derive(Debug, Clone)]
pub struct TokenApprove(pub Arc<Web3>);

impl AiTool for TokenApprove {
    type Input = ApproveInput;
    type Output = ApproveOutput;

    fn name(&self) -> &str {
        "token_approve"
    }

    fn description(&self) -> &str {
        "When a swap quote needs an allowance, approve exactly its sell amount to the pinned spender \
         (for_quote: \"swap_quote\"). Does nothing when the allowance already suffices."
    }

    fn kind(&self) -> ToolKind {
        ToolKind::ValueMoving
    }

    fn examples(&self) -> Vec<serde_json::Value> {
        vec![serde_json::json!({"for_quote": "swap_quote"})]
    }

    async fn execute(&self, input: ApproveInput, ctx: &ToolContext) -> Result<ApproveOutput, ToolError> {
        let entry = ctx.registers.require_declared("for_quote", &input.for_quote)?;
        let q = validate_quote(&entry.value, &ctx.registers, &ctx.config.networks, None)?;
        if q.sell.is_native() {
            return Err(ToolError::new(
                ErrorCode::InvalidParams,
                format!("`for_quote`: the quote sells native {}, which needs no approval", q.sell.symbol),
            ));
        }
        let network = q.network.clone();
        let spender = network.contracts.allowance_spender.ok_or_else(|| {
            ToolError::new(ErrorCode::PolicyDenied, format!("no allowance spender is pinned for {}", network.name))
        })?;
        let chain = self.0.chain(&network)?;
        let wallet = self.0.wallet().address();
        let current = chain.allowance(q.sell.address, wallet, spender).await?;
        let token = q.sell.symbol.clone();
        if current >= q.sell_amount {
            return Ok(ApproveOutput {
                result: "not_needed".into(),
                token,
                spender: spender.to_checksum(None),
                allowance: human(current, q.sell.decimals, &q.sell.symbol),
                hash: None,
                status: None,
                journal_id: None,
            });
        }
        let model_inputs = ctx.registers.any_model_origin(&["sell_amount", "sell_token", "wallet_address"]);
        let decision = self.0.policy().check_approval(&AssetMove {
            network: &network.name,
            symbol: &q.sell.symbol,
            decimals: q.sell.decimals,
            native: false,
            amount: q.sell_amount,
            spent_today: alloy::primitives::U256::ZERO,
            model_inputs,
        })?;
        let data = IERC20::approveCall { spender, amount: q.sell_amount }.abi_encode();
        let plan = TxPlan { to: q.sell.address, data: data.into(), value: alloy::primitives::U256::ZERO };
        chain.simulate_call(wallet, &plan).await?;
        let fees = chain.fees(wallet, &plan).await?;
        let summary = serde_json::json!({
            "action": "approve",
            "network": network.name,
            "token": q.sell.symbol,
            "token_address": q.sell.address.to_checksum(None),
            "amount": human(q.sell_amount, q.sell.decimals, &q.sell.symbol),
            "spender": spender.to_checksum(None),
            "gas_limit": fees.gas_limit.to_string(),
            "max_network_fee": human(fees.max_cost(), 18, &network.native_symbol),
        });
        let fp = fingerprint(&[
            "token_approve",
            &network.name,
            &q.sell.address.to_string(),
            &spender.to_string(),
            &q.sell_amount.to_string(),
            &entry.provenance.created_at.to_rfc3339(),
        ]);
        let sent = confirm_and_send(
            &self.0,
            ctx,
            Outgoing {
                tool: self.name(),
                params: serde_json::json!({"for_quote": input.for_quote}),
                kind: EntryKind::Approval,
                network: &network,
                chain: &chain,
                plan,
                fees,
                fingerprint: fp,
                decision,
                summary,
                asset: q.sell.address.to_checksum(None),
                asset_symbol: q.sell.symbol.clone(),
                amount: q.sell_amount,
            },
        )
        .await?;
        let now = chain.allowance(q.sell.address, wallet, spender).await?;
        Ok(ApproveOutput {
            result: "approved".into(),
            token,
            spender: spender.to_checksum(None),
            allowance: human(now, q.sell.decimals, &q.sell.symbol),
            hash: Some(sent.hash),
            status: Some(sent.outcome),
            journal_id: Some(sent.journal_id),
        })
    }
}

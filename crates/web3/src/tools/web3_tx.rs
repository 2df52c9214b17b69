//! `web3_tx {from_register, network}`: sends the validated swap quote held in a register — nothing else.
//!
//! In order: the register must be declared and fresh; the quote is validated again (invariant 3); an ERC-20 sell
//! needs an exact on-chain allowance (`allowance_required`); the policy checks caps and decides auto vs
//! confirmation (invariants 6, 7); the transaction is simulated and the wallet's balance deltas checked against the
//! quote (invariant 4); gas, fees and nonce come from the chain; the journal entry is written before broadcast
//! (invariant 9). The quote register is consumed once the transaction is broadcast.

use crate::Web3;
use crate::chain::TxPlan;
use crate::journal::EntryKind;
use crate::policy::AssetMove;
use crate::quote::validate_quote;
use crate::send::{Outgoing, TxOutcome, confirm_and_send};
use crate::tools::{fingerprint, human};
use alloy::primitives::U256;
use holdfast_core::{AiTool, ErrorCode, Origin, ToolContext, ToolError, ToolKind};
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

/// The decoded action, as shown to the user before approval and returned after sending.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SwapSummary {
    /// `swap`.
    pub action: String,
    /// Network.
    pub network: String,
    /// What is sold (human units).
    pub sell: String,
    /// What the quote expects to buy.
    pub buy_expected: String,
    /// Minimum received, or the transaction reverts.
    pub buy_minimum: String,
    /// What the simulation received.
    pub buy_simulated: String,
    /// The contract called (the pinned swap target).
    pub contract: String,
    /// Native value sent with the call.
    pub value: String,
    /// Gas limit from the chain's estimate.
    pub gas_limit: String,
    /// The most the network fee can be.
    pub max_network_fee: String,
}

/// Result of `web3_tx`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Web3TxOutput {
    /// Transaction hash.
    pub hash: String,
    /// `confirmed`, `reverted` or `pending` (no receipt within the wait).
    pub status: TxOutcome,
    /// Block number, once mined.
    pub block_number: Option<u64>,
    /// Gas used, once mined.
    pub gas_used: Option<String>,
    /// Journal entry id.
    pub journal_id: String,
    /// The decoded action.
    pub summary: SwapSummary,
}

/// The `web3_tx` tool.
#[derive(Debug, Clone)]
pub struct Web3Tx(pub Arc<Web3>);

/// Registers whose origins decide whether a swap may run without asking.
const SWAP_INPUTS: &[&str] = &["wallet_address", "sell_token", "buy_token", "sell_amount"];

impl AiTool for Web3Tx {
    type Input = Web3TxInput;
    type Output = Web3TxOutput;

    fn name(&self) -> &str {
        "web3_tx"
    }

    fn description(&self) -> &str {
        "Send the swap quote stored in a register (from_register: \"swap_quote\"). It takes no addresses, amounts \
         or calldata: everything comes from the validated quote. It may return `confirmation_required` (the user \
         approves), `allowance_required` (run token_approve first), `policy_denied` or `simulation_failed`."
    }

    fn kind(&self) -> ToolKind {
        ToolKind::ValueMoving
    }

    fn examples(&self) -> Vec<serde_json::Value> {
        vec![serde_json::json!({"from_register": "swap_quote", "network": "base"})]
    }

    async fn execute(&self, input: Web3TxInput, ctx: &ToolContext) -> Result<Web3TxOutput, ToolError> {
        let network = ctx.config.networks.resolve(&input.network)?.clone();
        let entry = ctx.registers.require_declared("from_register", &input.from_register)?;
        let q = validate_quote(&entry.value, &ctx.registers, &ctx.config.networks, Some(&network))?;
        let chain = self.0.chain(&network)?;
        let wallet = self.0.wallet().address();

        if !q.sell.is_native() {
            let spender = network.contracts.allowance_spender.unwrap_or(q.to);
            let allowance = chain.allowance(q.sell.address, wallet, spender).await?;
            if allowance < q.sell_amount {
                return Err(ToolError::new(
                    ErrorCode::AllowanceRequired,
                    format!(
                        "`{}`: the swap needs an allowance of {} for {spender} (it is {}); run token_approve with \
                         for_quote \"{}\" first",
                        input.from_register,
                        human(q.sell_amount, q.sell.decimals, &q.sell.symbol),
                        human(allowance, q.sell.decimals, &q.sell.symbol),
                        input.from_register
                    ),
                ));
            }
        }

        let model_inputs = entry.origin() == Origin::Model || ctx.registers.any_model_origin(SWAP_INPUTS);
        let asset = q.sell.address.to_checksum(None);
        let spent_today = self.0.journal().spent_today(&network.name, &asset, EntryKind::Swap).await?;
        let decision = self.0.policy().check(&AssetMove {
            network: &network.name,
            symbol: &q.sell.symbol,
            decimals: q.sell.decimals,
            native: q.sell.is_native(),
            amount: q.sell_amount,
            spent_today,
            model_inputs,
        })?;

        let plan = TxPlan { to: q.to, data: q.data.clone(), value: q.value };
        let sim = chain.simulate_swap(wallet, &plan, q.sell.address, q.buy.address).await?;
        let sold = sim.sell_before.saturating_sub(sim.sell_after);
        if sim.sell_after > sim.sell_before || sold > q.sell_amount {
            return Err(ToolError::new(
                ErrorCode::SimulationFailed,
                format!(
                    "`transaction.data`: the simulation moves {} out of the wallet, not the quoted {}",
                    human(sold, q.sell.decimals, &q.sell.symbol),
                    human(q.sell_amount, q.sell.decimals, &q.sell.symbol)
                ),
            ));
        }
        let bought = if sim.buy_after > sim.buy_before { sim.buy_after - sim.buy_before } else { U256::ZERO };
        if bought < q.min_buy_amount {
            return Err(ToolError::new(
                ErrorCode::SimulationFailed,
                format!(
                    "`transaction.data`: the simulation delivers {} to the wallet, less than the minimum {}",
                    human(bought, q.buy.decimals, &q.buy.symbol),
                    human(q.min_buy_amount, q.buy.decimals, &q.buy.symbol)
                ),
            ));
        }

        let fees = chain.fees(wallet, &plan).await?;
        let native_symbol = &network.native_symbol;
        let summary = SwapSummary {
            action: "swap".into(),
            network: network.name.clone(),
            sell: human(q.sell_amount, q.sell.decimals, &q.sell.symbol),
            buy_expected: human(q.buy_amount, q.buy.decimals, &q.buy.symbol),
            buy_minimum: human(q.min_buy_amount, q.buy.decimals, &q.buy.symbol),
            buy_simulated: human(bought, q.buy.decimals, &q.buy.symbol),
            contract: q.to.to_checksum(None),
            value: human(q.value, 18, native_symbol),
            gas_limit: fees.gas_limit.to_string(),
            max_network_fee: human(fees.max_cost(), 18, native_symbol),
        };
        let summary_json = serde_json::to_value(&summary).map_err(|e| ToolError::internal(e.to_string()))?;
        let fp = fingerprint(&[
            "web3_tx",
            &network.name,
            &q.to.to_string(),
            &q.data.to_string(),
            &q.value.to_string(),
            &q.sell_amount.to_string(),
            &q.min_buy_amount.to_string(),
            &entry.provenance.created_at.to_rfc3339(),
        ]);
        let params = serde_json::json!({"from_register": input.from_register, "network": input.network});
        let sent = confirm_and_send(
            &self.0,
            ctx,
            Outgoing {
                tool: self.name(),
                params,
                kind: EntryKind::Swap,
                network: &network,
                chain: &chain,
                plan,
                fees,
                fingerprint: fp,
                decision,
                summary: summary_json,
                asset,
                asset_symbol: q.sell.symbol.clone(),
                amount: q.sell_amount,
            },
        )
        .await?;
        // The quote has been used: it cannot be sent again.
        ctx.registers.remove(&input.from_register);
        Ok(Web3TxOutput {
            hash: sent.hash,
            status: sent.outcome,
            block_number: sent.block_number,
            gas_used: sent.gas_used,
            journal_id: sent.journal_id,
            summary,
        })
    }
}

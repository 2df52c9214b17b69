//! An approval for a quote: exactly its sell amount, to the network's pinned spender (invariant 5), never
//! unlimited, nothing when the allowance already suffices. The quote is read, checked and trusted exactly as a swap
//! reads it (typed register, freshness, validator, the same model-input rule).

use super::execute::{self, Action, Sent};
use super::inputs::{SWAP_INPUTS, intent_key, model_tainted, pinned_spender, quote_register};
use super::{fingerprint, human, require_durable};
use crate::Web3;
use crate::chain::{IERC20, TxPlan};
use crate::journal::EntryKind;
use crate::policy::AssetMove;
use crate::quote::validate_quote;
use alloy::primitives::{Address, U256};
use alloy::sol_types::SolCall;
use holdfast_core::{ErrorCode, ToolContext, ToolError};

/// What an approval did.
pub struct Approved {
    /// The token's symbol.
    pub token: String,
    /// The pinned spender.
    pub spender: Address,
    /// The allowance now, human units.
    pub allowance: String,
    /// The transaction, when one was needed (`None`: the allowance already sufficed).
    pub sent: Option<Sent>,
}

/// Approves the sell amount of the quote in `for_quote` to the pinned spender.
pub async fn approve(web3: &Web3, ctx: &ToolContext, tool: &str, for_quote: &str) -> Result<Approved, ToolError> {
    require_durable(web3)?;
    let quote = quote_register(ctx, "for_quote", for_quote)?;
    let intent = intent_key(ctx, "approve", &[(for_quote, &quote)]);
    let q = validate_quote(&quote.value, &ctx.registers, &ctx.config.networks, None)?;
    if q.sell.is_native() {
        return Err(ToolError::new(
            ErrorCode::InvalidParams,
            format!("`for_quote`: the quote sells native {}, which needs no approval", q.sell.symbol),
        ));
    }
    let network = q.network.clone();
    let spender = pinned_spender(&network)?;
    let chain = web3.chain(&network)?;
    let wallet = web3.wallet().address();
    if let Some(earlier) = web3.journal().live_by_intent(&intent).await? {
        let sent = execute::already_sent(web3, earlier).await?;
        let now = chain.allowance(q.sell.address, wallet, spender).await?;
        let allowance = human(now, q.sell.decimals, &q.sell.symbol);
        return Ok(Approved { token: q.sell.symbol.clone(), spender, allowance, sent: Some(sent) });
    }
    ctx.registers.require_fresh(for_quote)?;
    let current = chain.allowance(q.sell.address, wallet, spender).await?;
    if current >= q.sell_amount {
        let allowance = human(current, q.sell.decimals, &q.sell.symbol);
        return Ok(Approved { token: q.sell.symbol.clone(), spender, allowance, sent: None });
    }
    let m = AssetMove {
        network: &network.name,
        symbol: &q.sell.symbol,
        decimals: q.sell.decimals,
        native: false,
        amount: q.sell_amount,
        spent_today: U256::ZERO,
        model_inputs: model_tainted(ctx, &quote, SWAP_INPUTS),
    };
    let decision = web3.policy().check_approval(&m)?;
    let data = IERC20::approveCall { spender, amount: q.sell_amount }.abi_encode();
    let plan = TxPlan { to: q.sell.address, data: data.into(), value: U256::ZERO };
    chain.simulate_call(wallet, &plan).await?;
    let fees = chain.fees(wallet, &plan).await?;
    web3.policy().check_fees(&network.name, &fees)?;
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
        &quote.provenance.created_at.to_rfc3339(),
    ]);
    let action = Action {
        tool,
        params: serde_json::json!({"for_quote": for_quote}),
        kind: EntryKind::Approval,
        network: &network,
        chain: &chain,
        plan,
        fees,
        fingerprint: fp,
        intent,
        decision,
        cap: None,
        summary,
        to: q.sell.address.to_checksum(None),
        asset: q.sell.address.to_checksum(None),
    };
    let sent = execute::execute(web3, ctx, action, &m).await?;
    let now = chain.allowance(q.sell.address, wallet, spender).await?;
    let allowance = human(now, q.sell.decimals, &q.sell.symbol);
    Ok(Approved { token: q.sell.symbol.clone(), spender, allowance, sent: Some(sent) })
}

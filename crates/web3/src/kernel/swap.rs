//! A swap from a validated quote register, through every rule, in order:
//!
//! 1. durability ([`super::require_durable`]); the register must be declared as a swap quote
//!    ([`super::inputs::quote_register`]) — before any RPC;
//! 2. an earlier transaction for the same quote write is returned instead (idempotency);
//! 3. the quote is fresh and valid again ([`crate::quote::validate_quote`]); a swap between the native token and its
//!    wrapped twin is refused unless allowed;
//! 4. an ERC-20 sell needs an exact allowance for the pinned spender (`allowance_required`);
//! 5. the policy's per-transaction cap and the day's total so far; auto or confirm (any model input → confirm);
//! 6. the simulation's balance deltas: the sell token falls by at most the sell amount;
//! 7. the independent price ([`super::price`]): `minBuyAmount` and the simulated output at or above it within
//!    `max_slippage_bps` — or, with no independent price, the user confirms;
//! 8. gas and fees from the chain, within the fee caps; then [`super::execute`].
//!
//! Refusals at 6 and 7 are journaled as `refused` with the reason and the price check. Once the swap is settled on
//! chain the quote register is cleared; a retry on it returns the same transaction.

use super::execute::TxOutcome;
use super::execute::{self, Action, Sent};
use super::inputs::{
    SWAP_INPUTS, amount_bound, intent_key, model_tainted, pinned_spender, quote_register, spend, spent_by,
    unbound_reason,
};
use super::price::{self, PriceCheck};
use super::{fingerprint, human, require_durable};
use crate::Web3;
use crate::chain::TxPlan;
use crate::journal::{EntryKind, EntryStatus, NewEntry};
use crate::policy::{AssetMove, Decision};
use crate::quote::{TokenRef, ValidQuote, validate_quote};
use holdfast_core::config::NetworkConfig;
use holdfast_core::{ErrorCode, ToolContext, ToolError};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

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
    /// The check against the independent price; null when none was available.
    pub price_check: Option<PriceCheck>,
    /// Why no independent price was available, when none was (the swap then needs the user's confirmation).
    pub no_independent_price: Option<String>,
}

/// The outcome of a swap: the transaction, and the summary (absent when an earlier call already sent this intent).
pub struct SwapDone {
    /// The transaction.
    pub sent: Sent,
    /// The decoded action.
    pub summary: Option<SwapSummary>,
}

/// True when one side is the network's native token and the other its wrapped twin (`W` + native symbol).
fn is_wrap(q: &ValidQuote, network: &NetworkConfig) -> bool {
    let twin = format!("W{}", network.native_symbol);
    let pair = |a: &TokenRef, b: &TokenRef| a.is_native() && b.symbol.eq_ignore_ascii_case(&twin);
    pair(&q.sell, &q.buy) || pair(&q.buy, &q.sell)
}

async fn refuse(web3: &Web3, ctx: &ToolContext, q: &ValidQuote, summary: Value, error: ToolError) -> ToolError {
    let wallet = web3.wallet().address().to_checksum(None);
    let entry = NewEntry {
        session_id: ctx.session_id.to_string(),
        kind: EntryKind::Swap,
        network: q.network.name.clone(),
        chain_id: q.network.chain_id,
        from: wallet,
        to: q.to.to_checksum(None),
        nonce: None,
        value: q.value.to_string(),
        asset: q.sell.address.to_checksum(None),
        asset_symbol: q.sell.symbol.clone(),
        amount: q.sell_amount.to_string(),
        fingerprint: String::new(),
        intent: None,
        raw_tx: None,
        tx_hash: None,
        error: Some(format!("{}: {}", error.code, error.message)),
        summary,
    };
    if let Err(e) = web3.journal().insert(entry, EntryStatus::Refused).await {
        tracing::warn!(error = %e.message, "journal: could not record a refused swap");
    }
    error
}

/// Sends the swap quote held in `from_register` on `network_name`.
pub async fn swap(
    web3: &Web3,
    ctx: &ToolContext,
    tool: &str,
    from_register: &str,
    network_name: &str,
) -> Result<SwapDone, ToolError> {
    require_durable(web3)?;
    let network = ctx.config.networks.resolve(network_name)?.clone();
    let quote = match quote_register(ctx, "from_register", from_register) {
        Ok(q) => q,
        // The quote was spent by a settled swap: a retry gets that swap.
        Err(e) if e.code == ErrorCode::RegisterMissing => match spent_by(ctx, from_register) {
            Some(intent) => match web3.journal().live_by_intent(&intent).await? {
                Some(earlier) => {
                    return Ok(SwapDone { sent: execute::already_sent(web3, earlier).await?, summary: None });
                }
                None => return Err(e),
            },
            None => return Err(e),
        },
        Err(e) => return Err(e),
    };
    let intent = intent_key(ctx, "swap", &[(from_register, &quote)]);
    if let Some(earlier) = web3.journal().live_by_intent(&intent).await? {
        let sent = execute::already_sent(web3, earlier).await?;
        if matches!(sent.outcome, TxOutcome::Confirmed | TxOutcome::Reverted) {
            spend(ctx, from_register, &intent);
        }
        return Ok(SwapDone { sent, summary: None });
    }
    ctx.registers.require_fresh(from_register)?;
    let q = validate_quote(&quote.value, &ctx.registers, &ctx.config.networks, Some(&network))?;
    if is_wrap(&q, &network) && !web3.policy().allows_wrap(&network.name) {
        return Err(ToolError::new(
            ErrorCode::PolicyDenied,
            format!(
                "{} → {} only wraps or unwraps the native token through the venue; not allowed on {} (allow_wrap)",
                q.sell.symbol, q.buy.symbol, network.name
            ),
        ));
    }
    let chain = web3.chain(&network)?;
    let wallet = web3.wallet().address();

    if !q.sell.is_native() {
        let spender = pinned_spender(&network)?;
        let allowance = chain.allowance(q.sell.address, wallet, spender).await?;
        if allowance < q.sell_amount {
            return Err(ToolError::new(
                ErrorCode::AllowanceRequired,
                format!(
                    "`{from_register}`: the swap needs an allowance of {} for {spender} (it is {}); run token_approve \
                     with for_quote \"{from_register}\" first",
                    human(q.sell_amount, q.sell.decimals, &q.sell.symbol),
                    human(allowance, q.sell.decimals, &q.sell.symbol),
                ),
            ));
        }
    }

    let asset = q.sell.address.to_checksum(None);
    let cap_group = EntryKind::Swap.cap_group();
    let spent_today =
        web3.journal().spent_today(network.chain_id, &wallet.to_checksum(None), &asset, cap_group).await?;
    let m = AssetMove {
        network: &network.name,
        symbol: &q.sell.symbol,
        decimals: q.sell.decimals,
        native: q.sell.is_native(),
        amount: q.sell_amount,
        spent_today,
        model_inputs: model_tainted(ctx, &quote, SWAP_INPUTS),
    };
    let mut decision = web3.policy().check(&m)?;
    if !amount_bound(ctx, "sell_amount", "sell_token") {
        decision = Decision::Confirm(unbound_reason("sell_amount", "sell_token"));
    }
    let cap = web3.policy().day_cap(&m, EntryKind::Swap)?;

    let plan = TxPlan { to: q.to, data: q.data.clone(), value: q.value };
    let sim = chain.simulate_swap(wallet, &plan, q.sell.address, q.buy.address).await?;
    let sold = sim.sell_before.saturating_sub(sim.sell_after);
    let bought = sim.buy_after.saturating_sub(sim.buy_before);
    let mut summary = SwapSummary {
        action: "swap".into(),
        network: network.name.clone(),
        sell: human(q.sell_amount, q.sell.decimals, &q.sell.symbol),
        buy_expected: human(q.buy_amount, q.buy.decimals, &q.buy.symbol),
        buy_minimum: human(q.min_buy_amount, q.buy.decimals, &q.buy.symbol),
        buy_simulated: human(bought, q.buy.decimals, &q.buy.symbol),
        contract: q.to.to_checksum(None),
        value: human(q.value, 18, &network.native_symbol),
        gas_limit: String::new(),
        max_network_fee: String::new(),
        price_check: None,
        no_independent_price: None,
    };
    let as_json = |s: &SwapSummary| serde_json::to_value(s).unwrap_or(Value::Null);
    if sim.sell_after > sim.sell_before || sold > q.sell_amount {
        let e = ToolError::new(
            ErrorCode::SimulationFailed,
            format!(
                "`transaction.data`: the simulation moves {} out of the wallet, not the quoted {}",
                human(sold, q.sell.decimals, &q.sell.symbol),
                human(q.sell_amount, q.sell.decimals, &q.sell.symbol)
            ),
        );
        return Err(refuse(web3, ctx, &q, as_json(&summary), e).await);
    }
    if bought < q.min_buy_amount {
        let e = ToolError::new(
            ErrorCode::SimulationFailed,
            format!(
                "`transaction.data`: the simulation delivers {} to the wallet, less than the minimum {}",
                human(bought, q.buy.decimals, &q.buy.symbol),
                human(q.min_buy_amount, q.buy.decimals, &q.buy.symbol)
            ),
        );
        return Err(refuse(web3, ctx, &q, as_json(&summary), e).await);
    }

    let feeds = web3.price_feeds(&network.name);
    match price::expected_output(&chain, feeds, &q.sell, &q.buy, q.sell_amount).await {
        Ok(expected) => {
            let check = price::judge(
                &expected,
                q.min_buy_amount,
                bought,
                web3.policy().max_slippage_bps(&network.name),
                &q.buy,
            );
            let passed = check.passed;
            summary.price_check = Some(check.clone());
            if !passed {
                let e = ToolError::new(
                    ErrorCode::QuoteRejected,
                    format!(
                        "`minBuyAmount`: the quote promises at least {} and the simulation delivers {}, but the \
                         independent price ({}) puts {} at {}; the least accepted is {} ({} bps below)",
                        check.promised,
                        check.simulated,
                        check.source,
                        summary.sell,
                        check.expected,
                        check.minimum_accepted,
                        check.max_slippage_bps
                    ),
                );
                return Err(refuse(web3, ctx, &q, as_json(&summary), e).await);
            }
        }
        Err(reason) => {
            decision = Decision::Confirm(format!(
                "no independent price was available ({reason}); you receive at least {}",
                summary.buy_minimum
            ));
            summary.no_independent_price = Some(reason);
        }
    }

    let fees = chain.fees(wallet, &plan).await?;
    web3.policy().check_fees(&network.name, &fees)?;
    summary.gas_limit = fees.gas_limit.to_string();
    summary.max_network_fee = human(fees.max_cost(), 18, &network.native_symbol);
    let fp = fingerprint(&[
        "web3_tx",
        &network.name,
        &q.to.to_string(),
        &q.data.to_string(),
        &q.value.to_string(),
        &q.sell_amount.to_string(),
        &q.min_buy_amount.to_string(),
        &quote.provenance.created_at.to_rfc3339(),
    ]);
    let action = Action {
        tool,
        params: serde_json::json!({"from_register": from_register, "network": network_name}),
        kind: EntryKind::Swap,
        network: &network,
        chain: &chain,
        plan,
        fees,
        fingerprint: fp,
        intent: intent.clone(),
        decision,
        cap: Some(cap),
        summary: as_json(&summary),
        to: q.to.to_checksum(None),
        asset,
    };
    let sent = execute::execute(web3, ctx, action, &m).await?;
    // Settled on chain: the quote is spent (a retry still finds this swap by its intent).
    if matches!(sent.outcome, TxOutcome::Confirmed | TxOutcome::Reverted) {
        spend(ctx, from_register, &intent);
    }
    Ok(SwapDone { sent, summary: Some(summary) })
}

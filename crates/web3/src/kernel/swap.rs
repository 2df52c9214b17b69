//! A swap from a validated quote register: what the kind supplies to the `super::pipeline`.
//!
//! - **Inputs**: the register must be declared as a swap quote ([`super::inputs::quote_register`]), before any RPC;
//!   its intent is the quote's write; the amount the user authorizes is `sell_amount`, and the swap spends that
//!   authorization.
//! - **Plan**: the quote is valid again ([`crate::quote::validate_quote`]); a swap between the native token and its
//!   wrapped twin is refused unless allowed; the calldata is decoded and checked argument by argument
//!   ([`super::calldata`]); an ERC-20 sell needs an allowance of exactly the sell amount for the pinned spender
//!   (`allowance_required` otherwise: `token_approve` sets it).
//! - **Check** of the exact simulation: the sell token falls by at most the sell amount (the gas paid aside), the
//!   buy token rises by at least `minBuyAmount`, and both the promise and the simulated output stand against the
//!   independent price ([`super::price`]) — or, with none, the user confirms.
//!
//! Refusals of the calldata and of the check are journaled as `refused` with the reason and the price check; an
//! approval made for a refused swap is reset ([`super::allowances`]). Once the swap is settled on chain the quote
//! register is cleared; a retry on it returns the same transaction.

use super::calldata::{DecodedCall, check_swap};
use super::inputs::{
    SWAP_INPUTS, UserAmount, amount_bound, entries, intent_key, pinned_spender, quote_register, spend, spent_by,
    unbound_reason,
};
use super::pipeline::{self, Inputs, Limits, Move, Plan, Planned, Sent, TxKind, Verdict};
use super::price::{self, PriceCheck};
use super::{fingerprint, human};
use crate::Web3;
use crate::chain::{Chain, Read, Simulated, TxPlan};
use crate::journal::EntryKind;
use crate::quote::{TokenRef, ValidQuote, validate_quote};
use holdfast_core::config::NetworkConfig;
use holdfast_core::{ErrorCode, Origin, ToolContext, ToolError};
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
    /// What the simulation of the exact transaction received.
    pub buy_simulated: String,
    /// The contract called (the pinned swap target).
    pub contract: String,
    /// The calldata, decoded: the function, the recipient and the minimum it enforces.
    pub call: Option<DecodedCall>,
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

impl pipeline::Summary for SwapSummary {
    fn set_fees(&mut self, gas_limit: u64, max_network_fee: String) {
        self.gas_limit = gas_limit.to_string();
        self.max_network_fee = max_network_fee;
    }
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

/// Why a swap whose amount the user wrote waits for the user after all: the message that wrote it did not name, in
/// the user's own words, the token the quote buys ("I have 40 USDC. Swap it." authorizes selling 40 USDC for nothing
/// in particular). `None` for an amount that is not the user's (the input rule's) or names no authorization (the
/// pipeline's [`super::inputs::authorization_reason`] asks for those).
fn unnamed_buy(ctx: &ToolContext, amount: Option<&UserAmount>, q: &ValidQuote) -> Option<String> {
    let amount = amount.filter(|a| a.entry.origin() == Origin::User)?;
    let said = ctx.context_bank.authorization_by_id(amount.entry.provenance.authorization.as_deref()?)?;
    let named = |symbol: &str| said.tokens.iter().any(|t| t.eq_ignore_ascii_case(symbol));
    if named(&q.buy.symbol) && !q.buy.symbol.eq_ignore_ascii_case(&q.sell.symbol) {
        return None;
    }
    Some(format!(
        "your message that wrote {} did not name {} as what to buy; the swap needs your approval",
        human(q.sell_amount, q.sell.decimals, &q.sell.symbol),
        q.buy.symbol
    ))
}

struct Swap<'a> {
    tool: &'a str,
    register: &'a str,
    network: &'a str,
    /// The quote as validated by `plan`, for `check`.
    quote: parking_lot::Mutex<Option<ValidQuote>>,
}

/// Indexes of the simulation's reads.
const SELL: usize = 0;
const BUY: usize = 1;

impl TxKind for Swap<'_> {
    type Summary = SwapSummary;
    const KIND: EntryKind = EntryKind::Swap;

    fn tool(&self) -> &str {
        self.tool
    }

    fn params(&self) -> Value {
        serde_json::json!({"from_register": self.register, "network": self.network})
    }

    fn inputs(&self, _web3: &Web3, ctx: &ToolContext) -> Result<Inputs, ToolError> {
        let network = ctx.config.networks.resolve(self.network)?.clone();
        let quote = quote_register(ctx, "from_register", self.register)?;
        let intent = intent_key(ctx, "swap", &[(self.register, &quote)]);
        let mut registers = entries(ctx, SWAP_INPUTS);
        registers.push((self.register.to_owned(), quote));
        Ok(Inputs {
            network,
            authorization_intent: intent.clone(),
            intent,
            registers,
            fresh: vec![self.register.to_owned()],
            amount: UserAmount::read(ctx, "sell_amount"),
            spends: true,
        })
    }

    async fn plan(
        &self,
        web3: &Web3,
        ctx: &ToolContext,
        inputs: &Inputs,
        chain: &Chain,
    ) -> Result<Planned<SwapSummary>, ToolError> {
        let network = &inputs.network;
        let quote = ctx.registers.require(self.register)?;
        let q = validate_quote(&quote.value, &ctx.registers, &ctx.config.networks, Some(network))?;
        if is_wrap(&q, network) && !web3.policy().allows_wrap(&network.name) {
            return Err(ToolError::new(
                ErrorCode::PolicyDenied,
                format!(
                    "{} → {} only wraps or unwraps the native token through the venue; not allowed on {} (allow_wrap)",
                    q.sell.symbol, q.buy.symbol, network.name
                ),
            ));
        }
        let wallet = web3.wallet().address();
        // From a smart account, what is bought goes to the account (the quote's `recipient`), never to the signer.
        let receiver = web3.account().map_or(wallet, |a| a.address);
        let tx = TxPlan { to: q.to, data: q.data.clone(), value: q.value };
        let mv = Move {
            asset: q.sell.address,
            symbol: q.sell.symbol.clone(),
            decimals: q.sell.decimals,
            native: q.sell.is_native(),
            amount: q.sell_amount,
        };
        let mut summary = SwapSummary {
            action: "swap".into(),
            network: network.name.clone(),
            sell: human(q.sell_amount, q.sell.decimals, &q.sell.symbol),
            buy_expected: human(q.buy_amount, q.buy.decimals, &q.buy.symbol),
            buy_minimum: human(q.min_buy_amount, q.buy.decimals, &q.buy.symbol),
            buy_simulated: String::new(),
            contract: q.to.to_checksum(None),
            call: None,
            value: human(q.value, 18, &network.native_symbol),
            gas_limit: String::new(),
            max_network_fee: String::new(),
            price_check: None,
            no_independent_price: None,
        };
        match check_swap(chain, network, &q, receiver).await {
            Ok(call) => summary.call = Some(call),
            Err(e) => {
                let json = serde_json::to_value(&summary).unwrap_or(Value::Null);
                let session = ctx.session_id.to_string();
                return Err(pipeline::refuse(web3, &session, EntryKind::Swap, network, (&tx, &mv), json, e).await);
            }
        }
        if !q.sell.is_native() {
            let spender = pinned_spender(network)?;
            let allowance = chain.allowance(q.sell.address, wallet, spender).await?;
            if allowance != q.sell_amount {
                let (what, fix) = if allowance < q.sell_amount {
                    ("is", "to exactly the sell amount")
                } else {
                    ("is more than the sell amount:", "to exactly the sell amount (a swap never relies on more)")
                };
                return Err(ToolError::new(
                    ErrorCode::AllowanceRequired,
                    format!(
                        "`{}`: the swap needs an allowance of exactly {} for {spender}; it {what} {}. Run \
                         token_approve with for_quote \"{}\" first, which sets it {fix}",
                        self.register,
                        human(q.sell_amount, q.sell.decimals, &q.sell.symbol),
                        human(allowance, q.sell.decimals, &q.sell.symbol),
                        self.register,
                    ),
                ));
            }
        }
        let mut confirm = Vec::new();
        if !amount_bound(ctx, "sell_amount", "sell_token") {
            confirm.push(unbound_reason("sell_amount", "sell_token"));
        }
        if let Some(reason) = unnamed_buy(ctx, inputs.amount.as_ref(), &q) {
            confirm.push(reason);
        }
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
        let reads = vec![
            Read::Balance { token: q.sell.address, owner: wallet },
            Read::Balance { token: q.buy.address, owner: receiver },
        ];
        let to = q.to;
        *self.quote.lock() = Some(q);
        Ok(Planned::Tx(Box::new(Plan {
            tx,
            mv,
            limits: Limits::Spend,
            onchain: false,
            funded: web3.account().is_some(),
            reads,
            summary,
            fingerprint: fp,
            to,
            confirm,
        })))
    }

    async fn check(
        &self,
        web3: &Web3,
        chain: &Chain,
        plan: &mut Plan<SwapSummary>,
        sim: &Simulated,
    ) -> Result<Verdict, ToolError> {
        let Some(q) = self.quote.lock().clone() else { return Err(ToolError::internal("the swap was not planned")) };
        // What the wallet paid for gas is not what it sold (native sell) or less than it bought (native buy).
        let fee = |native: bool| if native { sim.fee } else { alloy::primitives::U256::ZERO };
        let sold = sim.fell(SELL).saturating_sub(fee(q.sell.is_native()));
        // Bought into a smart account: the account pays no gas.
        let bought = (sim.after[BUY] + fee(q.buy.is_native() && !plan.funded)).saturating_sub(sim.before[BUY]);
        plan.summary.buy_simulated = human(bought, q.buy.decimals, &q.buy.symbol);
        if sold > q.sell_amount || (!q.sell.is_native() && sim.after[SELL] > sim.before[SELL]) {
            return Ok(Verdict::Refuse(ToolError::new(
                ErrorCode::SimulationFailed,
                format!(
                    "`transaction.data`: the simulation of the exact transaction moves {} out of the wallet, not the \
                     quoted {}",
                    human(sold, q.sell.decimals, &q.sell.symbol),
                    human(q.sell_amount, q.sell.decimals, &q.sell.symbol)
                ),
            )));
        }
        if bought < q.min_buy_amount {
            return Ok(Verdict::Refuse(ToolError::new(
                ErrorCode::SimulationFailed,
                format!(
                    "`transaction.data`: the simulation of the exact transaction delivers {} to the wallet, less than \
                     the minimum {}",
                    human(bought, q.buy.decimals, &q.buy.symbol),
                    human(q.min_buy_amount, q.buy.decimals, &q.buy.symbol)
                ),
            )));
        }
        let feeds = web3.price_feeds(&q.network.name);
        match price::expected_output(chain, feeds, &q.sell, &q.buy, q.sell_amount).await {
            Ok(expected) => {
                let check = price::judge(
                    &expected,
                    q.min_buy_amount,
                    bought,
                    web3.policy().max_slippage_bps(&q.network.name),
                    &q.buy,
                );
                let passed = check.passed;
                plan.summary.price_check = Some(check.clone());
                if !passed {
                    return Ok(Verdict::Refuse(ToolError::new(
                        ErrorCode::QuoteRejected,
                        format!(
                            "`minBuyAmount`: the quote promises at least {} and the simulation delivers {}, but the \
                             independent price ({}) puts {} at {}; the least accepted is {} ({} bps below)",
                            check.promised,
                            check.simulated,
                            check.source,
                            plan.summary.sell,
                            check.expected,
                            check.minimum_accepted,
                            check.max_slippage_bps
                        ),
                    )));
                }
                Ok(Verdict::Pass)
            }
            Err(reason) => {
                let why = format!(
                    "no independent price was available ({reason}); you receive at least {}",
                    plan.summary.buy_minimum
                );
                plan.summary.no_independent_price = Some(reason);
                Ok(Verdict::Confirm(why))
            }
        }
    }
}

/// Sends the swap quote held in `from_register` on `network_name`.
pub async fn swap(
    web3: &Web3,
    ctx: &ToolContext,
    tool: &str,
    from_register: &str,
    network_name: &str,
) -> Result<SwapDone, ToolError> {
    // The quote was spent by a settled swap: a retry gets that swap.
    if ctx.registers.get(from_register).is_none()
        && let Some(intent) = spent_by(ctx, from_register)
        && let Some(earlier) = web3.journal().live_by_intent(&intent).await?
    {
        return Ok(SwapDone { sent: pipeline::already_sent(web3, earlier).await?, summary: None });
    }
    let kind = Swap { tool, register: from_register, network: network_name, quote: parking_lot::Mutex::new(None) };
    let done = match pipeline::run(web3, ctx, &kind).await {
        Ok(done) => done,
        Err(e) => {
            // A refused swap is abandoned: an approval made for it must not stay standing. The token is the one of
            // the quote that was judged (a `sell_token` written meanwhile names another).
            let judged = kind.quote.lock().as_ref().map(|q| q.sell.clone());
            let sell = judged.map_or_else(|| TokenRef::from_register(&ctx.registers, "sell_token"), Ok);
            if pipeline::was_refused(&e)
                && let Ok(network) = ctx.config.networks.resolve(network_name)
                && let Ok(sell) = sell
                && !sell.is_native()
            {
                super::allowances::reset_abandoned(web3, &ctx.session_id, network, sell.address).await;
            }
            return Err(e);
        }
    };
    let sent = done.sent.ok_or_else(|| ToolError::internal("a swap always sends or fails"))?;
    // Settled on chain: the quote is spent (a retry still finds this swap by its intent).
    if sent.settled() {
        spend(ctx, from_register, &done.intent);
    }
    Ok(SwapDone { sent, summary: done.summary })
}

//! Allowances: an approval for a quote sets exactly its sell amount for the network's pinned spender (invariant 5) —
//! never unlimited, and never more than the swap sells, even when the allowance already stands higher — and a reset
//! sets an allowance back to zero (`Reset`, run by [`super::allowances`] when its swap is abandoned).
//!
//! An approval reads and trusts the quote exactly as a swap does (typed register, freshness, validator, the same
//! model-input rule); it does not spend the user's authorization of the amount — the swap it serves does — but waits
//! for the user when another action already spent it. The exact simulation must leave the allowance at the amount.

use super::inputs::{SWAP_INPUTS, UserAmount, entries, intent_key, pinned_spender, quote_register};
use super::pipeline::{self, Inputs, Limits, Move, Plan, Planned, Sent, TxKind, Verdict};
use super::{fingerprint, human};
use crate::Web3;
use crate::chain::{Chain, IERC20, Read, Simulated, TxPlan};
use crate::journal::EntryKind;
use crate::quote::validate_quote;
use alloy::primitives::{Address, U256};
use alloy::sol_types::SolCall;
use holdfast_core::config::NetworkConfig;
use holdfast_core::{ErrorCode, ToolContext, ToolError};
use serde_json::{Value, json};

/// What an approval did.
pub struct Approved {
    /// The token's symbol.
    pub token: String,
    /// The pinned spender.
    pub spender: Address,
    /// The allowance now, human units.
    pub allowance: String,
    /// The transaction, when one was needed (`None`: the allowance already was exactly the amount).
    pub sent: Option<Sent>,
}

struct Approve<'a> {
    tool: &'a str,
    register: &'a str,
}

/// The allowance `amount` of `token` for `spender`, by the wallet `owner`, as a transaction plan.
fn approval_plan(
    network: &NetworkConfig,
    token: &holdfast_core::config::TokenInfo,
    amount: U256,
    owner: Address,
    spender: Address,
    fp: String,
) -> Plan<Value> {
    let (symbol, decimals) = (token.symbol.as_str(), token.decimals);
    let token = token.address;
    let wallet = owner;
    let data = IERC20::approveCall { spender, amount }.abi_encode();
    let summary = json!({
        "action": if amount.is_zero() { "reset allowance" } else { "approve" },
        "network": network.name,
        "token": symbol,
        "token_address": token.to_checksum(None),
        "amount": human(amount, decimals, symbol),
        "spender": spender.to_checksum(None),
        "gas_limit": "",
        "max_network_fee": "",
    });
    Plan {
        tx: TxPlan { to: token, data: data.into(), value: U256::ZERO },
        mv: Move { asset: token, symbol: symbol.to_owned(), decimals, native: false, amount },
        limits: if amount.is_zero() { Limits::Reset } else { Limits::Approval },
        onchain: false,
        funded: false,
        reads: vec![Read::Allowance { token, owner: wallet, spender }],
        summary,
        fingerprint: fp,
        to: token,
        confirm: Vec::new(),
    }
}

/// The approval's check: the exact transaction leaves the allowance at the planned amount.
fn allowance_check(plan: &Plan<Value>, sim: &Simulated) -> Verdict {
    if sim.after[0] == plan.mv.amount {
        return Verdict::Pass;
    }
    Verdict::Refuse(ToolError::new(
        ErrorCode::SimulationFailed,
        format!(
            "the simulation of the exact approval leaves the allowance at {}, not {}",
            human(sim.after[0], plan.mv.decimals, &plan.mv.symbol),
            human(plan.mv.amount, plan.mv.decimals, &plan.mv.symbol)
        ),
    ))
}

impl TxKind for Approve<'_> {
    type Summary = Value;
    const KIND: EntryKind = EntryKind::Approval;

    fn tool(&self) -> &str {
        self.tool
    }

    fn params(&self) -> Value {
        json!({"for_quote": self.register})
    }

    fn inputs(&self, _web3: &Web3, ctx: &ToolContext) -> Result<Inputs, ToolError> {
        let quote = quote_register(ctx, "for_quote", self.register)?;
        let q = validate_quote(&quote.value, &ctx.registers, &ctx.config.networks, None)?;
        if q.sell.is_native() {
            return Err(ToolError::new(
                ErrorCode::InvalidParams,
                format!("`for_quote`: the quote sells native {}, which needs no approval", q.sell.symbol),
            ));
        }
        let intent = intent_key(ctx, "approve", &[(self.register, &quote)]);
        // The user's amount authorizes the swap; its approval may not run by itself once another action spent it.
        let swap_intent = intent_key(ctx, "swap", &[(self.register, &quote)]);
        let mut registers = entries(ctx, SWAP_INPUTS);
        registers.push((self.register.to_owned(), quote));
        Ok(Inputs {
            network: q.network,
            intent,
            registers,
            fresh: vec![self.register.to_owned()],
            amount: UserAmount::read(ctx, "sell_amount"),
            spends: false,
            authorization_intent: swap_intent,
        })
    }

    async fn plan(
        &self,
        web3: &Web3,
        ctx: &ToolContext,
        inputs: &Inputs,
        chain: &Chain,
    ) -> Result<Planned<Value>, ToolError> {
        let quote = ctx.registers.require(self.register)?;
        let q = validate_quote(&quote.value, &ctx.registers, &ctx.config.networks, None)?;
        let network = &inputs.network;
        let spender = pinned_spender(network)?;
        let wallet = web3.wallet().address();
        let current = chain.allowance(q.sell.address, wallet, spender).await?;
        if current == q.sell_amount {
            return Ok(Planned::Nothing(json!({
                "action": "approve",
                "token": q.sell.symbol,
                "allowance": human(current, q.sell.decimals, &q.sell.symbol),
            })));
        }
        let fp = fingerprint(&[
            "token_approve",
            &network.name,
            &q.sell.address.to_string(),
            &spender.to_string(),
            &q.sell_amount.to_string(),
            &quote.provenance.created_at.to_rfc3339(),
        ]);
        let token = ctx.config.tokens.by_address(&network.name, q.sell.address).cloned().ok_or_else(|| {
            ToolError::new(ErrorCode::UnknownToken, format!("{} is not in the token table", q.sell.address))
        })?;
        let mut plan = approval_plan(network, &token, q.sell_amount, wallet, spender, fp);
        let resets = super::allowances::resets_today(web3, network.chain_id, token.address).await;
        if resets >= super::allowances::RESETS_BEFORE_ASKING {
            plan.confirm.push(format!(
                "{} approvals were reset {resets} times today after their swaps were refused or abandoned",
                token.symbol
            ));
        }
        Ok(Planned::Tx(Box::new(plan)))
    }

    async fn check(&self, _: &Web3, _: &Chain, plan: &mut Plan<Value>, sim: &Simulated) -> Result<Verdict, ToolError> {
        Ok(allowance_check(plan, sim))
    }
}

/// Sets the allowance of the quote in `for_quote` to exactly its sell amount for the pinned spender.
pub async fn approve(web3: &Web3, ctx: &ToolContext, tool: &str, for_quote: &str) -> Result<Approved, ToolError> {
    let kind = Approve { tool, register: for_quote };
    let done = pipeline::run(web3, ctx, &kind).await?;
    // Read back what the chain holds now, whatever happened.
    let quote = quote_register(ctx, "for_quote", for_quote)?;
    let q = validate_quote(&quote.value, &ctx.registers, &ctx.config.networks, None)?;
    let spender = pinned_spender(&q.network)?;
    let now = web3.chain(&q.network)?.allowance(q.sell.address, web3.wallet().address(), spender).await?;
    Ok(Approved {
        token: q.sell.symbol.clone(),
        spender,
        allowance: human(now, q.sell.decimals, &q.sell.symbol),
        sent: done.sent,
    })
}

/// The kernel's own transaction setting an allowance to zero: it moves nothing, so it asks no one.
pub(crate) struct Reset;

impl TxKind for Reset {
    type Summary = Value;
    const KIND: EntryKind = EntryKind::Reset;

    fn tool(&self) -> &str {
        "kernel"
    }

    fn params(&self) -> Value {
        Value::Null
    }

    fn inputs(&self, _: &Web3, _: &ToolContext) -> Result<Inputs, ToolError> {
        Err(ToolError::internal("a reset is the kernel's own, never a tool's"))
    }

    async fn plan(&self, _: &Web3, _: &ToolContext, _: &Inputs, _: &Chain) -> Result<Planned<Value>, ToolError> {
        Err(ToolError::internal("a reset is planned by the kernel"))
    }

    async fn check(&self, _: &Web3, _: &Chain, plan: &mut Plan<Value>, sim: &Simulated) -> Result<Verdict, ToolError> {
        Ok(allowance_check(plan, sim))
    }
}

/// Sets `token`'s allowance for `spender` on `network` back to zero, through the pipeline (journaled as `reset`).
/// `occasion` makes the reset's intent its own (what it resets: the allowance seen and the approval it follows).
pub(crate) async fn reset(
    web3: &Web3,
    network: &NetworkConfig,
    token: &holdfast_core::config::TokenInfo,
    spender: Address,
    occasion: &str,
) -> Result<Sent, ToolError> {
    let wallet = web3.wallet().address();
    let fp = fingerprint(&["reset", &network.name, &token.address.to_string(), &spender.to_string(), occasion]);
    let plan = approval_plan(network, token, U256::ZERO, wallet, spender, fp);
    pipeline::run_kernel(web3, &Reset, network, plan).await
}

//! A transfer of the native token or an ERC-20, whose token, amount and recipient are all register names (or an
//! address-book name), through the same rules as a swap:
//!
//! - the token from a register declared as a token, its decimals and symbol from the token table;
//! - the amount from a register declared as a base-unit amount;
//! - the recipient from the configured address book (origin `config`) or a register declared as an address —
//!   written from the user's own words by `context_address` (origin `user`), or typed by the model (origin
//!   `model`: the transfer then always waits for the user, and the confirmation shows the full address);
//! - caps, idempotency, journal and confirmation from [`super::execute`]; the simulation's balance deltas: the
//!   wallet loses at most the amount and the recipient gains at least it.

use super::execute::{self, Action, Sent};
use super::inputs::{amount_bound, intent_key, unbound_reason};
use super::{fingerprint, human, require_durable};
use crate::Web3;
use crate::chain::{IERC20, TxPlan};
use crate::journal::EntryKind;
use crate::policy::{AssetMove, Decision};
use alloy::primitives::{Address, Bytes, U256};
use alloy::sol_types::SolCall;
use holdfast_core::registers::{SharedEntry, ValueType};
use holdfast_core::{ErrorCode, Origin, PresetOrCustom, ToolContext, ToolError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The custom form of a recipient: a register holding an address.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecipientRegister {
    /// A register declared to hold an address, e.g. `recipient_address` (filled by `context_address`).
    pub recipient_register: String,
}

/// What the user sees before approving, and what the tool returns.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct TransferSummary {
    /// `transfer`.
    pub action: String,
    /// Network.
    pub network: String,
    /// Amount and token, human units.
    pub amount: String,
    /// The token's contract (or the native placeholder).
    pub token_address: String,
    /// The full recipient address (EIP-55).
    pub recipient: String,
    /// Where the recipient came from: `address book NAME`, `user` (their own words) or `model`.
    pub recipient_source: String,
    /// Gas limit from the chain's estimate.
    pub gas_limit: String,
    /// The most the network fee can be.
    pub max_network_fee: String,
}

/// The outcome of a transfer.
pub struct TransferDone {
    /// The transaction.
    pub sent: Sent,
    /// The decoded action (absent when an earlier call already sent this intent).
    pub summary: Option<TransferSummary>,
}

/// What the transfer tool names.
pub struct TransferRequest<'a> {
    /// The tool's name (for confirmations).
    pub tool: &'a str,
    /// The network.
    pub network: &'a str,
    /// Register holding the token.
    pub token_register: &'a str,
    /// Register holding the base-unit amount.
    pub amount_register: &'a str,
    /// Address-book name or recipient register.
    pub recipient: &'a PresetOrCustom<RecipientRegister>,
    /// The call's params, to re-run after approval.
    pub params: serde_json::Value,
}

fn invalid(field: &str, why: String) -> ToolError {
    ToolError::new(ErrorCode::InvalidParams, format!("`{field}`: {why}"))
}

/// Sends a transfer.
pub async fn transfer(web3: &Web3, ctx: &ToolContext, r: TransferRequest<'_>) -> Result<TransferDone, ToolError> {
    require_durable(web3)?;
    let network = ctx.config.networks.resolve(r.network)?.clone();
    let token_entry = ctx.registers.require_typed("token_register", r.token_register, ValueType::Token)?;
    let token_address = token_entry.value.get("address").and_then(|v| v.as_str()).unwrap_or_default();
    let token_address = holdfast_core::address::parse_address("token_register", token_address)?;
    let token = ctx.config.tokens.by_address(&network.name, token_address).cloned().ok_or_else(|| {
        ToolError::new(
            ErrorCode::UnknownToken,
            format!("`token_register`: {token_address} is not in the token table for {}", network.name),
        )
    })?;
    let amount_entry = ctx.registers.require_typed("amount_register", r.amount_register, ValueType::BaseUnits)?;
    let amount = amount_entry
        .value
        .as_str()
        .and_then(|s| U256::from_str_radix(s, 10).ok())
        .filter(|a| !a.is_zero())
        .ok_or_else(|| invalid("amount_register", format!("`{}` holds no positive amount", r.amount_register)))?;

    let (recipient, recipient_origin, recipient_source, recipient_entry): (
        Address,
        Origin,
        String,
        Option<(String, SharedEntry)>,
    ) = match r.recipient {
        PresetOrCustom::Preset { preset } => {
            let address = web3.address_book().get(preset).copied().ok_or_else(|| {
                ToolError::new(ErrorCode::UnknownPreset, format!("`preset`: `{preset}` is not in the address book"))
            })?;
            (address, Origin::Config, format!("address book {preset}"), None)
        }
        PresetOrCustom::Custom(RecipientRegister { recipient_register }) => {
            let entry = ctx.registers.require_typed("recipient_register", recipient_register, ValueType::Address)?;
            let text = entry.value.as_str().unwrap_or_default();
            let address = holdfast_core::address::parse_address("recipient_register", text)?;
            let origin = entry.origin();
            (address, origin, origin.as_str().to_owned(), Some((recipient_register.clone(), entry)))
        }
    };

    let mut intent_parts: Vec<(&str, &SharedEntry)> =
        vec![(r.token_register, &token_entry), (r.amount_register, &amount_entry)];
    if let Some((key, entry)) = &recipient_entry {
        intent_parts.push((key.as_str(), entry));
    }
    let intent = intent_key(ctx, &format!("transfer to {recipient}"), &intent_parts);
    if let Some(earlier) = web3.journal().live_by_intent(&intent).await? {
        return Ok(TransferDone { sent: execute::already_sent(web3, earlier).await?, summary: None });
    }

    let wallet = web3.wallet().address();
    if recipient == Address::ZERO || recipient == wallet || recipient == token.address {
        return Err(invalid(
            "recipient",
            format!("{recipient} cannot receive this transfer (zero, the wallet itself or the token contract)"),
        ));
    }
    let model_inputs = amount_entry.origin() == Origin::Model || recipient_origin == Origin::Model;
    let asset = token.address.to_checksum(None);
    let spent_today = web3
        .journal()
        .spent_today(network.chain_id, &wallet.to_checksum(None), &asset, EntryKind::Transfer.cap_group())
        .await?;
    let m = AssetMove {
        network: &network.name,
        symbol: &token.symbol,
        decimals: token.decimals,
        native: token.is_native(),
        amount,
        spent_today,
        model_inputs,
    };
    let mut decision = web3.policy().check(&m)?;
    if !amount_bound(ctx, r.amount_register, r.token_register) {
        decision = Decision::Confirm(unbound_reason(r.amount_register, r.token_register));
    }
    if recipient_origin == Origin::Model {
        decision =
            Decision::Confirm(format!("the recipient {recipient} was typed by the model, not taken from your words"));
    }
    let cap = web3.policy().day_cap(&m, EntryKind::Transfer)?;

    let plan = if token.is_native() {
        TxPlan { to: recipient, data: Bytes::new(), value: amount }
    } else {
        TxPlan {
            to: token.address,
            data: IERC20::transferCall { to: recipient, amount }.abi_encode().into(),
            value: U256::ZERO,
        }
    };
    let chain = web3.chain(&network)?;
    let sim = chain.simulate_deltas(wallet, &plan, &[(token.address, wallet), (token.address, recipient)]).await?;
    let (sender, receiver) = (sim.balances[0], sim.balances[1]);
    let sent_out = sender.0.saturating_sub(sender.1);
    let received = receiver.1.saturating_sub(receiver.0);
    if sender.1 > sender.0 || sent_out > amount || received < amount {
        return Err(ToolError::new(
            ErrorCode::SimulationFailed,
            format!(
                "the simulation moves {} out of the wallet and {} into {recipient}, not {}",
                human(sent_out, token.decimals, &token.symbol),
                human(received, token.decimals, &token.symbol),
                human(amount, token.decimals, &token.symbol)
            ),
        ));
    }
    let fees = chain.fees(wallet, &plan).await?;
    web3.policy().check_fees(&network.name, &fees)?;
    let summary = TransferSummary {
        action: "transfer".into(),
        network: network.name.clone(),
        amount: human(amount, token.decimals, &token.symbol),
        token_address: asset.clone(),
        recipient: recipient.to_checksum(None),
        recipient_source,
        gas_limit: fees.gas_limit.to_string(),
        max_network_fee: human(fees.max_cost(), 18, &network.native_symbol),
    };
    let fp = fingerprint(&["transfer", &network.name, &asset, &recipient.to_string(), &amount.to_string(), &intent]);
    let action = Action {
        tool: r.tool,
        params: r.params,
        kind: EntryKind::Transfer,
        network: &network,
        chain: &chain,
        plan,
        fees,
        fingerprint: fp,
        intent,
        decision,
        cap: Some(cap),
        summary: serde_json::to_value(&summary).unwrap_or_default(),
        to: recipient.to_checksum(None),
        asset,
    };
    let sent = execute::execute(web3, ctx, action, &m).await?;
    Ok(TransferDone { sent, summary: Some(summary) })
}

//! A transfer of the native token or an ERC-20, whose token, amount and recipient are all register names (or an
//! address-book name): what the kind supplies to the `super::pipeline`.
//!
//! - the token from a register declared as a token, its decimals and symbol from the token table;
//! - the amount from a register declared as a base-unit amount; a `user` amount's authorization is spent by the
//!   transfer;
//! - the recipient from the configured address book (origin `config`) or a register declared as an address —
//!   written from the user's own words by `context_address` (origin `user`), or typed by the model (origin
//!   `model`: the transfer then always waits for the user, and the confirmation shows the full address);
//! - the check of the exact simulation: the wallet loses at most the amount (the gas paid aside) and the recipient
//!   gains at least it.

use super::inputs::{UserAmount, amount_bound, intent_key, unbound_reason};
use super::pipeline::{self, Inputs, Limits, Move, Plan, Planned, Sent, TxKind, Verdict};
use super::{fingerprint, human};
use crate::Web3;
use crate::chain::{Chain, IERC20, Read, Simulated, TxPlan};
use crate::journal::EntryKind;
use alloy::primitives::{Address, Bytes, U256};
use alloy::sol_types::SolCall;
use holdfast_core::config::TokenInfo;
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

impl pipeline::Summary for TransferSummary {
    fn set_fees(&mut self, gas_limit: u64, max_network_fee: String) {
        self.gas_limit = gas_limit.to_string();
        self.max_network_fee = max_network_fee;
    }
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

struct Transfer<'a> {
    r: TransferRequest<'a>,
}

/// Where the recipient came from.
struct Recipient {
    address: Address,
    origin: Origin,
    source: String,
}

impl Transfer<'_> {
    fn token(&self, ctx: &ToolContext, network: &str) -> Result<(SharedEntry, TokenInfo), ToolError> {
        let entry = ctx.registers.require_typed("token_register", self.r.token_register, ValueType::Token)?;
        // Its decimals (and so the amount `to_raw_amount` made of the user's words) are that network's: a token looked
        // up on one network is not sent on another, even where its address is the same (the native token's).
        let looked_up = entry.value.get("network").and_then(|v| v.as_str()).unwrap_or_default();
        if looked_up != network {
            return Err(invalid(
                "token_register",
                format!(
                    "`{}` holds a token of {looked_up}, not {network}: look it up on {network} first",
                    self.r.token_register
                ),
            ));
        }
        let address = entry.value.get("address").and_then(|v| v.as_str()).unwrap_or_default();
        let address = holdfast_core::address::parse_address("token_register", address)?;
        let token = ctx.config.tokens.by_address(network, address).cloned().ok_or_else(|| {
            ToolError::new(
                ErrorCode::UnknownToken,
                format!("`token_register`: {address} is not in the token table for {network}"),
            )
        })?;
        Ok((entry, token))
    }

    fn recipient(
        &self,
        web3: &Web3,
        ctx: &ToolContext,
    ) -> Result<(Recipient, Option<(String, SharedEntry)>), ToolError> {
        match self.r.recipient {
            PresetOrCustom::Preset { preset } => {
                let address = web3.address_book().get(preset).copied().ok_or_else(|| {
                    ToolError::new(ErrorCode::UnknownPreset, format!("`preset`: `{preset}` is not in the address book"))
                })?;
                Ok((Recipient { address, origin: Origin::Config, source: format!("address book {preset}") }, None))
            }
            PresetOrCustom::Custom(RecipientRegister { recipient_register }) => {
                let entry =
                    ctx.registers.require_typed("recipient_register", recipient_register, ValueType::Address)?;
                let address = holdfast_core::address::parse_address(
                    "recipient_register",
                    entry.value.as_str().unwrap_or_default(),
                )?;
                let origin = entry.origin();
                let recipient = Recipient { address, origin, source: origin.as_str().to_owned() };
                Ok((recipient, Some((recipient_register.clone(), entry))))
            }
        }
    }
}

/// Whether `to` is the one address written in the user message of the amount's authorization: a user's amount goes
/// by itself only there, not to any address the session ever saw (a pasted scam message, an old wallet the user
/// called hacked) nor to one of several in that message ("to A, not B"; an address-book name beside it counts too:
/// "to alice or 0x…"), which the model could otherwise pick; and it must be written as where something goes ("to
/// 0x…", "pay 0x…"), not only mentioned ("0x… got hacked, the thief took 50 USDC").
fn written_with_the_amount(ctx: &ToolContext, inputs: &Inputs, to: Address) -> bool {
    amounts_authorization(ctx, inputs).is_some_and(|a| {
        let is_to = |address: &String| address.parse::<Address>().is_ok_and(|a| a == to);
        a.names.is_empty() && matches!(a.addresses.as_slice(), [only] if is_to(only)) && a.recipients.iter().any(is_to)
    })
}

/// Whether the address book's `preset` is the one address-book name of the user message of the amount's
/// authorization (outside its quoted parts): an amount the user only mentioned ("swap 0.001 ETH for 5 USDC", "I have
/// 40 USDC") does not go to an address-book recipient by itself, nor to one of several names ("to alice, not bob"),
/// nor to the name when the message also writes an address ("10 USDC to alice and 5 USDC to 0x…").
fn named_with_the_amount(ctx: &ToolContext, inputs: &Inputs, preset: &str) -> bool {
    amounts_authorization(ctx, inputs)
        .is_some_and(|a| a.addresses.is_empty() && matches!(a.names.as_slice(), [only] if only == preset))
}

/// The authorization the amount register was written with, as this session's context bank holds it.
fn amounts_authorization(ctx: &ToolContext, inputs: &Inputs) -> Option<holdfast_core::context_bank::Authorization> {
    let authorization = inputs.amount.as_ref().and_then(|a| a.entry.provenance.authorization.clone())?;
    ctx.context_bank.authorization_by_id(&authorization)
}

impl TxKind for Transfer<'_> {
    type Summary = TransferSummary;
    const KIND: EntryKind = EntryKind::Transfer;

    fn tool(&self) -> &str {
        self.r.tool
    }

    fn params(&self) -> serde_json::Value {
        self.r.params.clone()
    }

    fn inputs(&self, web3: &Web3, ctx: &ToolContext) -> Result<Inputs, ToolError> {
        let network = ctx.config.networks.resolve(self.r.network)?.clone();
        let (token_entry, _) = self.token(ctx, &network.name)?;
        let amount_entry =
            ctx.registers.require_typed("amount_register", self.r.amount_register, ValueType::BaseUnits)?;
        let (recipient, recipient_entry) = self.recipient(web3, ctx)?;
        let mut parts: Vec<(&str, &SharedEntry)> =
            vec![(self.r.token_register, &token_entry), (self.r.amount_register, &amount_entry)];
        if let Some((key, entry)) = &recipient_entry {
            parts.push((key.as_str(), entry));
        }
        let intent = intent_key(ctx, &format!("transfer to {}", recipient.address), &parts);
        let mut registers = vec![(self.r.amount_register.to_owned(), amount_entry.clone())];
        registers.extend(recipient_entry);
        Ok(Inputs {
            network,
            authorization_intent: intent.clone(),
            intent,
            registers,
            fresh: Vec::new(),
            amount: Some(UserAmount { key: self.r.amount_register.to_owned(), entry: amount_entry }),
            spends: true,
        })
    }

    async fn plan(
        &self,
        web3: &Web3,
        ctx: &ToolContext,
        inputs: &Inputs,
        _chain: &Chain,
    ) -> Result<Planned<TransferSummary>, ToolError> {
        let network = &inputs.network;
        let (_, token) = self.token(ctx, &network.name)?;
        let amount = inputs
            .amount
            .as_ref()
            .and_then(|a| a.entry.value.as_str())
            .and_then(|s| U256::from_str_radix(s, 10).ok())
            .filter(|a| !a.is_zero())
            .ok_or_else(|| {
                invalid("amount_register", format!("`{}` holds no positive amount", self.r.amount_register))
            })?;
        let (recipient, _) = self.recipient(web3, ctx)?;
        let wallet = web3.wallet().address();
        let account = web3.account();
        // Whose funds move: the smart account's, when the key signs for one.
        let from = account.map_or(wallet, |a| a.address);
        let to = recipient.address;
        if to == Address::ZERO || to == wallet || to == from || to == token.address {
            return Err(invalid(
                "recipient",
                format!("{to} cannot receive this transfer (zero, the wallet itself or the token contract)"),
            ));
        }
        let mut confirm = Vec::new();
        if !amount_bound(ctx, self.r.amount_register, self.r.token_register) {
            confirm.push(unbound_reason(self.r.amount_register, self.r.token_register));
        }
        match (recipient.origin, self.r.recipient) {
            (Origin::Model, _) => {
                confirm.push(format!("the recipient {to} was typed by the model, not taken from your words"));
            }
            (Origin::Config, PresetOrCustom::Preset { preset }) => {
                if !named_with_the_amount(ctx, inputs, preset) {
                    confirm.push(format!(
                        "the address-book recipient `{preset}` ({to}) is not the one name of the message that gave the amount"
                    ));
                }
            }
            _ => {
                if !written_with_the_amount(ctx, inputs, to) {
                    confirm.push(format!(
                        "the recipient {to} is not the one address of the message that gave the amount, written as \
                         where it goes (\"to 0x…\", \"pay 0x…\")"
                    ));
                }
            }
        }
        let tx = if let Some(account) = account {
            super::account::transfer_tx(account, wallet, token.address, to, amount)?
        } else if token.is_native() {
            TxPlan { to, data: Bytes::new(), value: amount }
        } else {
            TxPlan {
                to: token.address,
                data: IERC20::transferCall { to, amount }.abi_encode().into(),
                value: U256::ZERO,
            }
        };
        let asset = token.address.to_checksum(None);
        let summary = TransferSummary {
            action: "transfer".into(),
            network: network.name.clone(),
            amount: human(amount, token.decimals, &token.symbol),
            token_address: asset.clone(),
            recipient: to.to_checksum(None),
            recipient_source: recipient.source,
            gas_limit: String::new(),
            max_network_fee: String::new(),
        };
        let fp =
            fingerprint(&["transfer", &network.name, &asset, &to.to_string(), &amount.to_string(), &inputs.intent]);
        Ok(Planned::Tx(Box::new(Plan {
            tx,
            mv: Move {
                asset: token.address,
                symbol: token.symbol.clone(),
                decimals: token.decimals,
                native: token.is_native(),
                amount,
            },
            limits: Limits::Spend,
            onchain: account.is_some(),
            funded: false,
            reads: vec![
                Read::Balance { token: token.address, owner: from },
                Read::Balance { token: token.address, owner: to },
            ],
            summary,
            fingerprint: fp,
            to,
            confirm,
        })))
    }

    async fn check(
        &self,
        _web3: &Web3,
        _chain: &Chain,
        plan: &mut Plan<TransferSummary>,
        sim: &Simulated,
    ) -> Result<Verdict, ToolError> {
        let mv = &plan.mv;
        // The signer pays the gas; from a smart account, the account pays none of it.
        let fee = if mv.native && !plan.onchain { sim.fee } else { U256::ZERO };
        let sent_out = sim.fell(0).saturating_sub(fee);
        let received = sim.rose(1);
        if sim.after[0] > sim.before[0] || sent_out > mv.amount || received < mv.amount {
            return Ok(Verdict::Refuse(ToolError::new(
                ErrorCode::SimulationFailed,
                format!(
                    "the simulation of the exact transaction moves {} out of {} and {} into {}, not {}",
                    human(sent_out, mv.decimals, &mv.symbol),
                    if plan.onchain { "the account" } else { "the wallet" },
                    human(received, mv.decimals, &mv.symbol),
                    plan.to,
                    human(mv.amount, mv.decimals, &mv.symbol)
                ),
            )));
        }
        Ok(Verdict::Pass)
    }
}

/// Sends a transfer.
pub async fn transfer(web3: &Web3, ctx: &ToolContext, r: TransferRequest<'_>) -> Result<TransferDone, ToolError> {
    let done = pipeline::run(web3, ctx, &Transfer { r }).await?;
    let sent = done.sent.ok_or_else(|| ToolError::internal("a transfer always sends or fails"))?;
    Ok(TransferDone { sent, summary: done.summary })
}

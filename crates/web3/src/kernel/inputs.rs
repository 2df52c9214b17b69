//! What a value-moving action may read, and how much it trusts it: typed register reads, the one model-input rule,
//! the pinned spender, and the intent key that makes a retry idempotent.

use super::fingerprint;
use alloy::primitives::{Address, keccak256};
use holdfast_core::config::NetworkConfig;
use holdfast_core::registers::{SharedEntry, ValueType};
use holdfast_core::{ErrorCode, Origin, ToolContext, ToolError};
use parking_lot::Mutex;
use std::collections::HashMap;

/// The registers a swap (and its approval) is built from besides the quote: any of them typed by the model makes
/// the action wait for the user.
pub const SWAP_INPUTS: &[&str] = &["wallet_address", "sell_token", "buy_token", "sell_amount"];

/// Reads the register named by `field` as a swap quote: it must be declared with the swap-quote type (so the store
/// ran the quote validator on every write to it). Anything else — a price, a scratch register — is
/// `register_type_mismatch` before any RPC call. Freshness is checked by the caller, after the idempotency lookup.
pub fn quote_register(ctx: &ToolContext, field: &str, key: &str) -> Result<SharedEntry, ToolError> {
    ctx.registers.require_typed(field, key, ValueType::SwapQuote)
}

/// The input rule of invariant 7, for every action: true when the register the action consumes, or any of
/// `inputs`, holds a `model`-origin (or model-derived) value.
pub fn model_tainted(ctx: &ToolContext, consumed: &SharedEntry, inputs: &[&str]) -> bool {
    consumed.origin() == Origin::Model || ctx.registers.any_model_origin(inputs)
}

/// True when the amount in `amount_key` was converted for the token now held in `token_key`: derived from that
/// register (by `to_raw_amount`) after it was last written. Otherwise the amount's origin says nothing about this
/// token (50 USDC in base units is 0.5 of an 8-decimals token), and the action waits for the user.
pub fn amount_bound(ctx: &ToolContext, amount_key: &str, token_key: &str) -> bool {
    let (Some(amount), Some(token)) = (ctx.registers.get(amount_key), ctx.registers.get(token_key)) else {
        return false;
    };
    amount.provenance.derived_from.iter().any(|k| k == token_key)
        && token.provenance.created_at <= amount.provenance.created_at
}

/// The confirmation reason for an amount that is not bound to its token.
pub fn unbound_reason(amount_key: &str, token_key: &str) -> String {
    format!("`{amount_key}` was not converted for the token now in `{token_key}`: check the amount")
}

/// The only spender an approval (or a quote's allowance issue) may name on `network`: its pinned
/// `allowance_spender`. None pinned → `policy_denied`.
pub fn pinned_spender(network: &NetworkConfig) -> Result<Address, ToolError> {
    network.contracts.allowance_spender.ok_or_else(|| {
        ToolError::new(ErrorCode::PolicyDenied, format!("no allowance spender is pinned for {}", network.name))
    })
}

/// The idempotency key of using `entries` for `purpose` in this session: the same register writes (same key,
/// time and value) give the same intent, so a retry finds the transaction already journaled for it.
pub fn intent_key(ctx: &ToolContext, purpose: &str, entries: &[(&str, &SharedEntry)]) -> String {
    let mut parts: Vec<String> = vec![purpose.to_owned(), ctx.session_id.to_string()];
    for (key, entry) in entries {
        parts.push((*key).to_owned());
        parts.push(entry.provenance.created_at.to_rfc3339_opts(chrono::SecondsFormat::Nanos, true));
        parts.push(keccak256(entry.value.to_string().as_bytes()).to_string());
    }
    let refs: Vec<&str> = parts.iter().map(String::as_str).collect();
    fingerprint(&refs)
}

/// Per session: which intent each automatic action of a user turn was (by turn, class, asset and amount), so one
/// amount from the user's words authorizes one automatic action of a class per user message (see
/// [`holdfast_core::confirm::UserTurn`]); a retry of the same intent is the same action.
#[derive(Debug, Default)]
pub struct AutoActions(Mutex<HashMap<AutoKey, String>>);

/// The user turn, the class (`approval` or `transfer of value`), the asset and the amount of an automatic action.
type AutoKey = (String, &'static str, String, String);

/// Why an automatic action needs the user after all: this turn already ran another automatic action of the same class
/// with the same amount of the same asset. `None` when it is the first (recorded now) or a retry of it.
pub fn already_authorized(
    ctx: &ToolContext,
    approval: bool,
    asset: &str,
    amount: &str,
    shown: &str,
    intent: &str,
) -> Option<String> {
    let turn = ctx.extensions.get::<holdfast_core::confirm::UserTurn>()?;
    let actions = ctx.extensions.get::<AutoActions>()?;
    let class = if approval { "approval" } else { "transfer of value" };
    let key = (turn.0.clone(), class, asset.to_owned(), amount.to_owned());
    let mut seen = actions.0.lock();
    match seen.get(&key) {
        Some(first) if first != intent => Some(format!(
            "{shown} from your words already authorized one {class} in this turn; another one needs your approval"
        )),
        Some(_) => None,
        None => {
            seen.insert(key, intent.to_owned());
            None
        }
    }
}

/// Per session: which intent spent a register the kernel cleared (a swap's quote, once its transaction settled), so
/// that a retry on the now-empty register returns that transaction instead of `register_missing`.
#[derive(Debug, Default)]
pub struct SpentRegisters(Mutex<HashMap<String, String>>);

/// Clears `key` after its intent settled on chain, remembering the intent for retries.
pub fn spend(ctx: &ToolContext, key: &str, intent: &str) {
    if let Some(spent) = ctx.extensions.get::<SpentRegisters>() {
        spent.0.lock().insert(key.to_owned(), intent.to_owned());
    }
    ctx.registers.remove(key);
}

/// The intent that spent `key` in this session, if the kernel cleared it.
pub fn spent_by(ctx: &ToolContext, key: &str) -> Option<String> {
    ctx.extensions.get::<SpentRegisters>().and_then(|s| s.0.lock().get(key).cloned())
}

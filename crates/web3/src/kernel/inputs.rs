//! What a value-moving action may read, and how much it trusts it: typed register reads, the one model-input rule,
//! the pinned spender, and the intent key that makes a retry idempotent.

use super::fingerprint;
use alloy::primitives::{Address, keccak256};
use holdfast_core::config::NetworkConfig;
use holdfast_core::registers::{SharedEntry, ValueType};
use holdfast_core::{ErrorCode, Origin, ToolContext, ToolError};

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

//! The value-moving kernel: the one place every swap, approval, allowance reset, transfer, x402 payment and fund from
//! the smart account passes.
//!
//! Tools ([`crate::tools`]) parse their parameters and call one function here; front ends never call it directly.
//! Every transaction goes through one pipeline (`pipeline`); each kind of action supplies only its inputs, its plan
//! and the check of its simulated effects ([`swap`], [`approve`] with the allowance reset, [`transfer`]). The rules
//! every kind shares run once, in this order, for every kind:
//!
//! | # | rule | where |
//! |---|---|---|
//! | 1 | durability: a persistent key needs a persistent journal | [`require_durable`] |
//! | 2 | idempotency: one transaction per intent | `pipeline::run` with [`inputs::intent_key`] |
//! | 3 | authorization: a turn the user did not start moves nothing by itself; one amount from the user's words moves value once | `pipeline` with `inputs::authorization_reason` and `inputs::spend_authorization` |
//! | 4 | freshness of the registers read | `pipeline::run` (`RegisterStore::require_fresh`) |
//! | 5 | taint: any model-typed input waits for the user | `pipeline::run` ([`inputs::model_typed`]) |
//! | 6 | policy and caps (per transaction, per day, reserved atomically) | [`crate::policy`], `crate::journal::Journal::reserve` from `pipeline` |
//! | 7 | fee caps | [`crate::policy::Policy::check_fees`] from `pipeline::run` |
//! | 7a | with a smart account: what remains of the on-chain limit (before the estimate and under the lock), the fund from the account after the user allowed the action | [`account`] from `pipeline` |
//! | 8 | the exact simulation of what will be signed, and the kind's check of its effects | [`crate::chain::simulate`], the kind's `check` |
//! | 9 | confirmation | `pipeline` ([`holdfast_core::ToolContext::require_confirmation`]) |
//! | 10 | journal before broadcast | `pipeline` (`crate::journal::Journal::mark_signed`) |
//! | 11 | broadcast; a reservation released only on the chain's proof | `broadcast` with [`crate::chain::nonce`] |
//! | 12 | reconciliation by hash and by nonce | [`reconcile`] |
//!
//! Each kind owns what is its own: the quote validator ([`crate::quote`], run by the register store on every write
//! and again here), the decoded calldata of the pinned target ([`calldata`]), exact allowances and their reset
//! ([`approve`], [`allowances`]), the independent price ([`price`]), the balance deltas. x402 payments have no
//! transaction; they pass the same rules that apply to them in [`payment`] (durability, a turn the user started, the
//! policy's choice, the budget reserved atomically, journal before the header leaves, settlement by the chain).

pub mod account;
pub mod allowances;
pub mod approve;
mod broadcast;
pub mod calldata;
mod covered;
pub mod inputs;
pub mod payment;
pub(crate) mod pipeline;
pub mod price;
pub mod reconcile;
mod sends;
pub mod swap;
pub mod transfer;

pub use pipeline::{Sent, TxOutcome};
pub use price::PriceCheck;
pub use reconcile::Reconciled;

use crate::Web3;
use crate::wallet::KeySource;
use alloy::primitives::{B256, U256, keccak256};
use holdfast_core::amount::from_base_units;
use holdfast_core::{ErrorCode, ToolError};

/// Human form of a base-unit amount with its symbol.
pub(crate) fn human(raw: U256, decimals: u8, symbol: &str) -> String {
    format!("{} {symbol}", from_base_units(raw, decimals))
}

/// A fingerprint of an action or intent: the keccak of its parts, joined unambiguously.
pub(crate) fn fingerprint(parts: &[&str]) -> String {
    let mut joined = Vec::new();
    for p in parts {
        joined.extend_from_slice(&(p.len() as u64).to_be_bytes());
        joined.extend_from_slice(p.as_bytes());
    }
    let hash: B256 = keccak256(&joined);
    hash.to_string()
}

/// Fails closed when the wallet's key outlives the process but the journal does not: a restart would forget
/// pending transactions and the day's spend. `config_invalid`, naming the fix.
pub fn require_durable(web3: &Web3) -> Result<(), ToolError> {
    let source = match web3.wallet().source() {
        KeySource::Ephemeral => return Ok(()),
        KeySource::File(path) => format!("key_file {}", path.display()),
        KeySource::Env(var) => format!("key_env {var}"),
    };
    if web3.journal().is_persistent() {
        return Ok(());
    }
    Err(ToolError::new(
        ErrorCode::ConfigInvalid,
        format!(
            "the wallet's key is persistent ({source}) but the transaction journal is in memory: set [storage] \
             data_dir (or --data-dir) so pending transactions and the day's spend survive a restart; nothing was \
             signed"
        ),
    ))
}

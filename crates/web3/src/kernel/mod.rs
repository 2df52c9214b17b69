//! The value-moving kernel: the one place every swap, approval, transfer and x402 payment passes.
//!
//! Tools ([`crate::tools`]) parse their parameters and call one function here; front ends never call it directly.
//! The kernel alone owns these rules (safety model, invariants 3–9, 15 and 16), each in one file:
//!
//! | rule | where |
//! |---|---|
//! | fail closed: a persistent key needs a persistent journal | [`require_durable`] |
//! | typed registers: a quote only from a register declared as a swap quote | [`inputs::quote_register`] |
//! | one model-input (taint) rule for every action | [`inputs::model_tainted`] |
//! | the pinned spender | [`inputs::pinned_spender`] |
//! | idempotency: one transaction per intent | [`inputs::intent_key`], `execute::execute` |
//! | quotes checked against an independent on-chain price | [`price`] |
//! | balance deltas of the simulated transaction | [`swap`], [`transfer`] |
//! | caps reserved atomically before signing, per chain id, wallet and asset | `execute::execute` with [`crate::journal::Journal::reserve`] |
//! | fee caps, wrap rule, per-tx caps, auto vs confirm | [`crate::policy`], called from here |
//! | a turn the user did not start moves nothing by itself | `execute::execute` (confirm), `payment::reserve` (refuse) |
//! | one user amount, one automatic action of a class per user message | [`inputs::already_authorized`] from `execute::execute` |
//! | journal before broadcast; only a definite rejection is "not sent" | [`execute`] |
//! | reconciliation by hash at the call, in the background and at start | [`reconcile`] |
//!
//! The quote validator itself is [`crate::quote`] (run by the register store on every write and again here on use);
//! the payment policy is [`crate::policy::Policy::choose_payment`], and the payment flow [`crate::x402`] reserves its
//! budget through `payment::reserve`.

pub mod approve;
pub mod execute;
pub mod inputs;
pub mod payment;
pub mod price;
pub mod reconcile;
pub mod swap;
pub mod transfer;

pub use execute::{Sent, TxOutcome};
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

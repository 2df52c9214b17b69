//! The web3 tools. Each is a thin sequence of calls into the layer's rule owners (validator, policy, chain,
//! journal); none re-implements a rule.

mod local_burner_wallet;
mod token_approve;
mod web3_tx;
mod x402_fetch;

pub use local_burner_wallet::{LocalBurnerWallet, WalletAction, WalletInput, WalletOutput};
pub use token_approve::{ApproveInput, ApproveOutput, TokenApprove};
pub use web3_tx::{SwapSummary, Web3Tx, Web3TxInput, Web3TxOutput};
pub use x402_fetch::{FetchInput, FetchOutput, QuoteSummary, X402Fetch};

use alloy::primitives::{B256, U256, keccak256};
use holdfast_core::amount::from_base_units;

/// Human form of a base-unit amount with its symbol.
pub(crate) fn human(raw: U256, decimals: u8, symbol: &str) -> String {
    format!("{} {symbol}", from_base_units(raw, decimals))
}

/// A fingerprint of an action: the keccak of its parts, joined unambiguously.
pub(crate) fn fingerprint(parts: &[&str]) -> String {
    let mut joined = Vec::new();
    for p in parts {
        joined.extend_from_slice(&(p.len() as u64).to_be_bytes());
        joined.extend_from_slice(p.as_bytes());
    }
    let hash: B256 = keccak256(&joined);
    hash.to_string()
}

//! The web3 tools. Each parses its parameters and calls the [`crate::kernel`], which owns every rule; none
//! re-implements one.

mod local_burner_wallet;
mod token_approve;
mod transfer;
mod web3_tx;
mod x402_fetch;

pub use local_burner_wallet::{LocalBurnerWallet, WalletAction, WalletInput, WalletOutput};
pub use token_approve::{ApproveInput, ApproveOutput, TokenApprove};
pub use transfer::{Transfer, TransferInput, TransferOutput};
pub use web3_tx::{Web3Tx, Web3TxInput, Web3TxOutput};
pub use x402_fetch::{FetchInput, FetchOutput, QuoteSummary, X402Fetch};

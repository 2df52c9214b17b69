//! What every command that can move value does before anything new: check the price feeds' pins and that the smart
//! account's limits bind the key against the chain, and settle the journal against the chain.

use holdfast_agent::Runtime;

/// Checks every configured price feed's pinned decimals and description against every RPC node. A mismatch is a
/// wrong pin or a lying node: the command does not start. A node that does not answer is reported and the start goes
/// on (each swap reads the feeds again, and without them waits for the user).
pub(crate) async fn verify_price_feeds(runtime: &Runtime) -> Result<(), holdfast_core::ToolError> {
    at_start("the price feeds", runtime.web3.verify_price_feeds().await)
}

/// Checks that the smart account's on-chain limits bind the key (it is not one of the account's owners). A key that
/// is an owner: the command does not start. A node that does not answer is reported and the start goes on.
pub(crate) async fn verify_account(runtime: &Runtime) -> Result<(), holdfast_core::ToolError> {
    at_start("the smart account", runtime.web3.verify_account().await)
}

/// A start-up check's outcome: `config_invalid` stops the command; any other error (a node that does not answer) is
/// reported, and the start goes on.
fn at_start(what: &str, checked: Result<(), holdfast_core::ToolError>) -> Result<(), holdfast_core::ToolError> {
    match checked {
        Err(e) if e.code == holdfast_core::ErrorCode::ConfigInvalid => Err(e),
        Err(e) => {
            say!("holdfast: {what} could not be checked at start-up: {}", e.message);
            Ok(())
        }
        Ok(()) => Ok(()),
    }
}

/// Reconciles what an earlier run left unresolved (an entry signed but never confirmed, an unknown broadcast), printing
/// each settled entry on stderr as `holdfast: journal ID: STATUS (NOTE)`. A journal in memory has nothing to settle.
pub(crate) async fn reconcile_journal(runtime: &Runtime) {
    if !runtime.web3.journal().is_persistent() {
        return;
    }
    match runtime.web3.reconcile().await {
        Ok(done) => {
            for r in done {
                say!("holdfast: journal {}: {} ({})", r.journal_id, r.status.as_str(), r.note);
            }
        }
        Err(e) => say!("holdfast: could not reconcile the journal: {e}"),
    }
}

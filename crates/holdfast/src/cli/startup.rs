//! What every command that can move value does before anything new: settle the journal against the chain.

use holdfast_agent::Runtime;

/// Reconciles what an earlier run left unresolved (an entry signed but never confirmed, an unknown broadcast), printing
/// each settled entry on stderr as `holdfast: journal ID: STATUS (NOTE)`. A journal in memory has nothing to settle.
pub(crate) async fn reconcile_journal(runtime: &Runtime) {
    if !runtime.web3.journal().is_persistent() {
        return;
    }
    match runtime.web3.reconcile().await {
        Ok(done) => {
            for r in done {
                eprintln!("holdfast: journal {}: {} ({})", r.journal_id, r.status.as_str(), r.note);
            }
        }
        Err(e) => eprintln!("holdfast: could not reconcile the journal: {e}"),
    }
}

//! What the devnet leaves on disk: nothing under HOME.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use alloy::primitives::{Address, U256, address};
use holdfast_devnet::TestDevnet;

const THIEF: Address = address!("0x000000000000000000000000000000000000dEaD");

/// A devnet's anvil writes nothing under HOME: a long history is pruned in memory, never offloaded to
/// `~/.foundry/anvil/tmp` (which a killed anvil would leave behind).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_history_leaves_nothing_under_home() {
    use alloy::providers::ext::AnvilApi;
    let tmp_states = std::env::var_os("HOME").map(|h| std::path::PathBuf::from(h).join(".foundry/anvil/tmp"));
    let before: Vec<_> = tmp_states
        .as_ref()
        .and_then(|d| std::fs::read_dir(d).ok())
        .map(|r| r.filter_map(Result::ok).map(|e| e.file_name()).collect())
        .unwrap_or_default();
    let dn = TestDevnet::start().await.unwrap();
    let provider = dn.provider();
    // Several thousand blocks with state changes: more than anvil keeps in memory by default.
    for _ in 0..20 {
        provider.anvil_mine(Some(250), None).await.unwrap();
        dn.fund_eth(THIEF, U256::from(1u8)).await.unwrap();
    }
    let after: Vec<_> = tmp_states
        .as_ref()
        .and_then(|d| std::fs::read_dir(d).ok())
        .map(|r| r.filter_map(Result::ok).map(|e| e.file_name()).filter(|n| !before.contains(n)).collect())
        .unwrap_or_default();
    assert!(after.is_empty(), "anvil wrote {after:?} under ~/.foundry/anvil/tmp");
    drop(dn);
}

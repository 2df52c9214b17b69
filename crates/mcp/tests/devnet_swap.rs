//! The full swap on a real devnet (anvil, contracts at Base addresses, the x402-paywalled quoter) through MCP
//! tools, driven by the official TypeScript SDK over stdio, confirmation included: approved through elicitation,
//! declined through elicitation, and approved through the `holdfast_confirm` prompt by a client without elicitation.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod common;

use alloy_primitives::U256;
use holdfast_devnet::{NATIVE, TestDevnet, USDC};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_swap_runs_through_mcp_with_the_users_confirmation() {
    common::require_sdk();
    let devnet = TestDevnet::start().await.expect("devnet");
    let wallet = devnet.wallet_address;
    let (eth0, usdc0) =
        (devnet.balance_of(NATIVE, wallet).await.unwrap(), devnet.balance_of(USDC, wallet).await.unwrap());

    let config = devnet.config_path.to_str().unwrap().to_owned();
    let findings = common::run_script("swap_flow.mjs", &common::stdio_env(&["--config", &config])).await;

    // Exactly two swaps of 0.02 ETH went out (A approved, B declined, C approved by prompt).
    let (eth1, usdc1) =
        (devnet.balance_of(NATIVE, wallet).await.unwrap(), devnet.balance_of(USDC, wallet).await.unwrap());
    let spent = eth0 - eth1;
    let two = alloy_u256(40_000_000_000_000_000);
    let gas = alloy_u256(5_000_000_000_000_000);
    assert!(spent >= two && spent < two + gas, "two swaps of 0.02 ETH and gas, not three: spent {spent} wei");
    assert!(usdc1 > usdc0, "USDC arrived (less the x402 quote payments): {usdc0} → {usdc1}; {findings}");
}

fn alloy_u256(v: u128) -> U256 {
    U256::from(v)
}

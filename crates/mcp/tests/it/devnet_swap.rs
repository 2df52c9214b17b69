//! The full swap on a real devnet (anvil, contracts at Base addresses, the x402-paywalled quoter) through MCP
//! tools, driven by the official TypeScript SDK over stdio and over streamable HTTP, confirmation included. Over MCP
//! the only user channel is elicitation: approved through it → mined once; declined → nothing; a client without
//! elicitation → `confirmation_unavailable`, nothing; a client that tries to approve its own pending swap by every
//! path the server exposes (the old approval prompts, completion, tools, resources) → refused, nothing; a failed
//! elicitation → `confirmation_unavailable`, nothing.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use alloy_primitives::U256;
use holdfast_devnet::{NATIVE, TestDevnet, USDC};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_swap_runs_through_mcp_over_stdio_with_the_users_confirmation() {
    let devnet = TestDevnet::start().await.expect("devnet");
    let config = devnet.config_path.to_str().unwrap().to_owned();
    swap_and_check(&devnet, crate::common::stdio_env(&["--config", &config])).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_swap_runs_through_mcp_over_streamable_http_with_the_users_confirmation() {
    let devnet = TestDevnet::start().await.expect("devnet");
    let config = devnet.config_path.to_str().unwrap().to_owned();
    let server = crate::common::HttpChild::start(&["--bind", "127.0.0.1:0", "--config", &config], &[]).await;
    let token = std::fs::read_to_string(devnet.dir.join("data/mcp.token")).unwrap();
    swap_and_check(&devnet, server.http_env(token.trim())).await;
}

/// Runs swap_flow.mjs (A approves by elicitation; B declines; C has no elicitation; D tries to approve its own swap
/// by every other path, then the human cancels; E's elicitation fails) and checks the chain: exactly one swap of
/// 0.02 ETH went out.
async fn swap_and_check(devnet: &TestDevnet, env: Vec<(&'static str, String)>) {
    crate::common::require_sdk();
    let wallet = devnet.wallet_address;
    let eth0 = devnet.balance_of(NATIVE, wallet).await.unwrap();
    let usdc0 = devnet.balance_of(USDC, wallet).await.unwrap();
    let findings = crate::common::run_script("swap_flow.mjs", &env).await;
    let eth1 = devnet.balance_of(NATIVE, wallet).await.unwrap();
    let usdc1 = devnet.balance_of(USDC, wallet).await.unwrap();
    let spent = eth0 - eth1;
    let one = U256::from(20_000_000_000_000_000u128);
    let gas = U256::from(5_000_000_000_000_000u128);
    assert!(spent >= one && spent < one + gas, "one swap of 0.02 ETH and gas, not two: spent {spent} wei; {findings}");
    assert!(usdc1 > usdc0, "USDC arrived (less the x402 quote payments): {usdc0} → {usdc1}; {findings}");
    let tried = findings["tried_d"].as_array().map_or(0, Vec::len);
    assert!(tried >= 8, "D tried every path: {findings}");
}

/// Runs transfer_once.mjs (one user_request the human submitted, four transfers of it) and checks the chain: the
/// human's 40 USDC moved once.
#[tokio::test]
async fn one_submitted_request_moves_value_once_over_mcp() {
    crate::common::require_sdk();
    let devnet = TestDevnet::start().await.expect("devnet");
    let config = devnet.config_path.to_str().unwrap().to_owned();
    let alice: alloy_primitives::Address = holdfast_devnet::config::ALICE.parse().unwrap();
    let before = devnet.balance_of(USDC, alice).await.unwrap();
    let findings =
        crate::common::run_script("transfer_once.mjs", &crate::common::stdio_env(&["--config", &config])).await;
    let received = devnet.balance_of(USDC, alice).await.unwrap() - before;
    assert_eq!(received, U256::from(40_000_000u64), "40 USDC once, not 160: {findings}");
}

/// With `[mcp] trust_elicitation = false`, a host that answers holdfast's forms itself (untrusted_host.mjs: it
/// accepts everything) is never sent one: its request stays its own text, the quote's x402 payment is refused and a
/// transfer is refused. Nothing moved: no ETH, no USDC (to the quoter or to alice).
#[tokio::test]
async fn a_host_not_trusted_with_forms_cannot_approve_by_answering_them() {
    crate::common::require_sdk();
    let devnet = TestDevnet::start().await.expect("devnet");
    let mut config = std::fs::read_to_string(&devnet.config_path).unwrap();
    config.push_str("\n[mcp]\ntrust_elicitation = false\n");
    std::fs::write(&devnet.config_path, config).unwrap();
    let wallet = devnet.wallet_address;
    let eth0 = devnet.balance_of(NATIVE, wallet).await.unwrap();
    let usdc0 = devnet.balance_of(USDC, wallet).await.unwrap();
    let path = devnet.config_path.to_str().unwrap().to_owned();
    let findings =
        crate::common::run_script("untrusted_host.mjs", &crate::common::stdio_env(&["--config", &path])).await;
    assert!(findings["withdrawn"].as_str().is_some_and(|id| id.starts_with("cf_")), "{findings}");
    let spent = eth0 - devnet.balance_of(NATIVE, wallet).await.unwrap();
    assert!(spent < U256::from(20_000_000_000_000_000u128), "no swap of 0.02 ETH went out: spent {spent} wei");
    assert_eq!(devnet.balance_of(USDC, wallet).await.unwrap(), usdc0, "no USDC left: no payment, no transfer");
}

//! Interop with the x402 reference implementation (npm `@x402/*` 2.27.0, pinned in `devnet/package.json`), on the
//! devnet chain, with the JS peers in `tests/js/` started on loopback free ports:
//!
//! 1. holdfast's client pays the reference `@x402/express` resource server, settled by the reference facilitator
//!    (`@x402/core` + `@x402/evm`) — and, second, by holdfast's own facilitator;
//! 2. the reference client `@x402/fetch` pays holdfast's devnet paywall.
//!
//! Each checks the HTTP status, that USDC moved from the payer to the payee by exactly the price, and the
//! settlement transaction (in holdfast's journal when holdfast paid). The npm packages must be installed
//! (`npm ci --prefix devnet`, as `scripts/test.sh` does); without them these tests fail, they never skip.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use crate::common::{Env, Tweaks, hostile_quoter};
use alloy::primitives::{Address, B256, U256, address};
use alloy::providers::Provider;
use holdfast_devnet::{CHAIN_ID, FACILITATOR_ACCOUNT, PAYEE, QUOTE_PRICE, TestDevnet, USDC};
use holdfast_web3::{EntryKind, EntryStatus};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// anvil's dev account #3: the reference facilitator's signer (its key is anvil's public test key).
const REFERENCE_FACILITATOR: Address = address!("0x90F79bf6EB2c4f870365E785982E1f101E93b906");
const REFERENCE_FACILITATOR_KEY: &str = "0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6";

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn script(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/js").join(name)
}

/// A JS peer, killed (by its own pid) when dropped; it also exits when its stdin closes.
struct Peer {
    child: Child,
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn require_npm_packages() {
    let modules = repo().join("devnet/node_modules/@x402/express");
    assert!(
        modules.is_dir(),
        "the x402 reference packages are not installed ({} is missing): run `npm ci --prefix devnet`",
        modules.display()
    );
}

/// Starts `node SCRIPT ARGS` and returns it with the first JSON line it prints (within 60 s).
fn start_peer(name: &str, args: &[&str], env: &[(&str, &str)]) -> (Peer, Value) {
    require_npm_packages();
    let mut cmd = Command::new("node");
    cmd.arg(script(name)).args(args).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::inherit());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().unwrap_or_else(|e| panic!("starting node (is Node.js installed?): {e}"));
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let peer = Peer { child };
    let line = rx.recv_timeout(Duration::from_secs(60)).unwrap_or_else(|_| panic!("{name} printed nothing in 60 s"));
    let value: Value = serde_json::from_str(line.trim()).unwrap_or_else(|e| panic!("{name}: not JSON ({e}): {line:?}"));
    (peer, value)
}

async fn usdc(devnet: &TestDevnet, who: Address) -> U256 {
    devnet.balance_of(USDC, who).await.unwrap()
}

/// The reference server in front of an honest (unpaid) devnet quoter, settled by the reference facilitator or by
/// holdfast's; holdfast's x402_fetch pays it, then the paid quote is swapped.
async fn holdfast_pays_the_reference_server(holdfast_facilitator: bool) {
    let devnet = TestDevnet::start().await.unwrap();
    let (upstream, _tamper) = hostile_quoter(&devnet).await;
    let pay_to = PAYEE.to_checksum(None);
    // 0.01 USDC, as the devnet's own paywall asks.
    let (chain_id, amount, asset) =
        (holdfast_devnet::CHAIN_ID.to_string(), QUOTE_PRICE.to_string(), USDC.to_checksum(None));
    let mut args = vec![
        "--rpc",
        devnet.rpc_url.as_str(),
        "--upstream",
        upstream.as_str(),
        "--pay-to",
        pay_to.as_str(),
        "--chain-id",
        &chain_id,
        "--amount",
        &amount,
        "--asset",
        &asset,
    ];
    let settler = if holdfast_facilitator {
        args.extend(["--facilitator", devnet.facilitator_url.as_str()]);
        FACILITATOR_ACCOUNT
    } else {
        args.extend(["--facilitator-key", REFERENCE_FACILITATOR_KEY]);
        REFERENCE_FACILITATOR
    };
    let (_server, ready) = start_peer("reference-server.mjs", &args, &[]);
    assert_eq!(ready["ready"], true, "{ready}");
    if holdfast_facilitator {
        assert_eq!(ready["facilitator"], devnet.facilitator_url.as_str());
    }
    let port = ready["port"].as_u64().unwrap();
    let env = Env::apply(devnet, Tweaks { quoter_url: Some(format!("http://127.0.0.1:{port}")), ..Default::default() });
    let (wallet0, payee0) = (env.balance(USDC).await, usdc(&env.devnet, PAYEE).await);

    let out = env.quote("swap 0.001 ETH for USDC", "ETH", "USDC", "0.001").await;
    assert_eq!(out["origin"], "tool", "status 200 and a validated quote: {out}");
    assert_eq!(out["payment"]["status"], "confirmed", "{out}");
    assert_eq!(out["payment"]["x402_version"], 2);
    assert_eq!(env.balance(USDC).await, wallet0 - QUOTE_PRICE, "exactly the price left the wallet");
    assert_eq!(usdc(&env.devnet, PAYEE).await, payee0 + QUOTE_PRICE, "and reached the payee");

    let journal = env.web3.journal().for_session("session-1").await.unwrap();
    let payment = journal.iter().find(|e| e.kind == EntryKind::Payment).unwrap();
    assert_eq!(payment.status, EntryStatus::Confirmed);
    let hash: B256 = payment.tx_hash.as_deref().expect("the settlement transaction is journaled").parse().unwrap();
    assert_eq!(out["payment"]["transaction"], payment.tx_hash.clone().unwrap());
    let receipt = env.devnet.provider().get_transaction_receipt(hash).await.unwrap().unwrap();
    assert!(receipt.status());
    assert_eq!(receipt.from, settler, "settled by the expected facilitator");

    // The paid quote is an ordinary validated quote: it swaps.
    let sent = env.ok("web3_tx", json!({"from_register": "swap_quote", "network": "base"})).await;
    assert_eq!(sent["status"], "confirmed", "{sent}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn holdfast_pays_the_reference_express_server_and_facilitator() {
    holdfast_pays_the_reference_server(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reference_express_server_settles_through_the_holdfast_facilitator() {
    holdfast_pays_the_reference_server(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reference_fetch_client_pays_the_holdfast_paywall() {
    let devnet = TestDevnet::start().await.unwrap();
    let key = std::fs::read_to_string(&devnet.key_path).unwrap().trim().to_owned();
    let (wallet0, payee0) = (usdc(&devnet, devnet.wallet_address).await, usdc(&devnet, PAYEE).await);
    let url = format!(
        "{}/swap/allowance-holder/quote?chainId={CHAIN_ID}&sellToken={}&buyToken={USDC}&sellAmount=1000000000000000&taker={}",
        devnet.quoter_url,
        holdfast_devnet::NATIVE,
        devnet.wallet_address
    );
    let (_client, out) = start_peer(
        "reference-client.mjs",
        &[
            "--url",
            &url,
            "--chain-id",
            &CHAIN_ID.to_string(),
            "--asset",
            &USDC.to_checksum(None),
            "--max-amount",
            &QUOTE_PRICE.to_string(),
        ],
        &[("PAYER_KEY", &key)],
    );
    assert_eq!(out["status"], 200, "{out}");
    assert_eq!(out["body"]["sellAmount"], "1000000000000000");
    assert_eq!(out["body"]["liquidityAvailable"], true);
    let settlement = &out["paymentResponse"];
    assert_eq!(settlement["success"], true, "{out}");
    assert_eq!(settlement["network"], format!("eip155:{CHAIN_ID}"));
    let hash: B256 = settlement["transaction"].as_str().unwrap().parse().unwrap();
    let receipt = devnet.provider().get_transaction_receipt(hash).await.unwrap().unwrap();
    assert!(receipt.status());
    assert_eq!(receipt.from, FACILITATOR_ACCOUNT, "settled by holdfast's facilitator");
    assert_eq!(usdc(&devnet, devnet.wallet_address).await, wallet0 - QUOTE_PRICE);
    assert_eq!(usdc(&devnet, PAYEE).await, payee0 + QUOTE_PRICE);
}

//! An x402 payment on a chain whose latest block is ten minutes old, paid to the x402 reference resource server
//! (`@x402/express`) settled by the reference facilitator (`@x402/core` + `@x402/evm`), as in `interop.rs`.
//!
//! The reference facilitator checks the authorization's window against its own clock (`validAfter <= now`,
//! `validBefore >= now + 6`) and then simulates `transferWithAuthorization` with `eth_call` at `latest`, where the
//! token requires `block.timestamp > validAfter` — the latest block's timestamp, ten minutes behind the wall clock
//! here. A window opened by the local clock is refused there ("authorization is not yet valid"); holdfast opens it
//! by the chain's clock ([`holdfast_web3::x402::validity_window`]) and is paid.
//!
//! The chain is made ten minutes old with anvil's genesis `--timestamp` ([`TestDevnet::start_with_genesis_timestamp`]):
//! anvil's clock starts there and runs on, so every block is stamped ten minutes in the past. Two shapes:
//!
//! - idle: then `evm_setTime` to the wall clock — the latest block stays ten minutes old and the settlement is mined
//!   at the wall clock's time;
//! - lagging: the chain's clock stays ten minutes behind, the settlement's block too.
//!
//! The npm packages must be installed (`npm ci --prefix devnet`); without them this test fails, it never skips.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use crate::common::{Env, Tweaks, hostile_quoter};
use alloy::eips::BlockNumberOrTag;
use alloy::primitives::{Address, B256, address};
use alloy::providers::Provider;
use holdfast_devnet::{PAYEE, QUOTE_PRICE, TestDevnet, USDC};
use holdfast_web3::{EntryKind, EntryStatus};
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How far behind the wall clock the chain's latest block is.
const AGE_SECS: u64 = 600;

/// anvil's dev account #3: the reference facilitator's signer (its key is anvil's public test key).
const REFERENCE_FACILITATOR: Address = address!("0x90F79bf6EB2c4f870365E785982E1f101E93b906");
const REFERENCE_FACILITATOR_KEY: &str = "0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6";

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs()
}

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

/// Starts `node SCRIPT ARGS` and returns it with the first JSON line it prints (within 60 s).
fn start_peer(name: &str, args: &[&str]) -> (Peer, Value) {
    let modules = repo().join("devnet/node_modules/@x402/express");
    assert!(
        modules.is_dir(),
        "the x402 reference packages are not installed ({} is missing): run `npm ci --prefix devnet`",
        modules.display()
    );
    let mut child = Command::new("node")
        .arg(script(name))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap_or_else(|e| panic!("starting node (is Node.js installed?): {e}"));
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

async fn latest_timestamp(devnet: &TestDevnet) -> u64 {
    devnet.provider().get_block_by_number(BlockNumberOrTag::Latest).await.unwrap().unwrap().header.timestamp
}

/// holdfast's `x402_fetch` pays the reference server (reference facilitator) on a chain ten minutes old.
async fn paid_on_a_chain_ten_minutes_old(idle: bool) {
    let devnet = TestDevnet::start_with_genesis_timestamp(now() - AGE_SECS).await.unwrap();
    if idle {
        let _: Value = devnet.provider().raw_request("evm_setTime".into(), (now(),)).await.unwrap();
    }
    let (upstream, _tamper) = hostile_quoter(&devnet).await;
    let pay_to = PAYEE.to_checksum(None);
    // 0.01 USDC, as the devnet's own paywall asks.
    let (chain_id, amount, asset) =
        (holdfast_devnet::CHAIN_ID.to_string(), QUOTE_PRICE.to_string(), USDC.to_checksum(None));
    let args = [
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
        "--facilitator-key",
        REFERENCE_FACILITATOR_KEY,
    ];
    let (_server, ready) = start_peer("reference-server.mjs", &args);
    assert_eq!(ready["ready"], true, "{ready}");
    let port = ready["port"].as_u64().unwrap();
    let env = Env::apply(devnet, Tweaks { quoter_url: Some(format!("http://127.0.0.1:{port}")), ..Default::default() });
    let wallet0 = env.balance(USDC).await;
    let payee0 = env.devnet.balance_of(USDC, PAYEE).await.unwrap();

    let latest = latest_timestamp(&env.devnet).await;
    let before_payment = now();
    assert!(
        before_payment - latest >= AGE_SECS - 5,
        "the latest block is ten minutes old: {latest} at {before_payment}"
    );

    let out = env.quote("swap 0.001 ETH for USDC", "ETH", "USDC", "0.001").await;
    assert_eq!(out["payment"]["status"], "confirmed", "the payment settles: {out}");
    assert_eq!(out["origin"], "tool", "the content is returned and validated: {out}");
    assert!(out["quote"]["sell"].is_string(), "{out}");
    assert!(env.ctx.registers.get("swap_quote").is_some());
    assert_eq!(env.balance(USDC).await, wallet0 - QUOTE_PRICE, "exactly the price left the wallet");
    assert_eq!(env.devnet.balance_of(USDC, PAYEE).await.unwrap(), payee0 + QUOTE_PRICE, "and reached the payee");

    let journal = env.web3.journal().for_session("session-1").await.unwrap();
    let payment = journal.iter().find(|e| e.kind == EntryKind::Payment).unwrap();
    assert_eq!(payment.status, EntryStatus::Confirmed, "{payment:?}");
    let hash: B256 = payment.tx_hash.as_deref().expect("the settlement transaction is journaled").parse().unwrap();
    assert_eq!(out["payment"]["transaction"], payment.tx_hash.clone().unwrap());
    let receipt = env.devnet.provider().get_transaction_receipt(hash).await.unwrap().unwrap();
    assert!(receipt.status());
    assert_eq!(receipt.from, REFERENCE_FACILITATOR, "settled by the reference facilitator");

    // The window opened by the chain's clock and closed by the local one, within the server's 60 s.
    let auth = &payment.summary["authorization"];
    let (valid_after, valid_before) = (auth["valid_after"].as_u64().unwrap(), auth["valid_before"].as_u64().unwrap());
    assert!(valid_after < latest, "opens before the latest block: {valid_after} vs {latest}");
    assert!(valid_before > before_payment + 6 && valid_before <= now() + 60, "{valid_before} at {before_payment}");
    let settled_at = env
        .devnet
        .provider()
        .get_block_by_number(receipt.block_number.unwrap().into())
        .await
        .unwrap()
        .unwrap()
        .header
        .timestamp;
    assert!(valid_after < settled_at && settled_at < valid_before, "{valid_after} < {settled_at} < {valid_before}");
    if idle {
        assert!(settled_at >= before_payment, "an idle chain mines the settlement at the wall clock's time");
    } else {
        assert!(settled_at < before_payment, "a lagging chain mines the settlement in its own past");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_chain_whose_latest_block_is_ten_minutes_old_is_paid() {
    paid_on_a_chain_ten_minutes_old(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chain_whose_clock_lags_ten_minutes_is_paid() {
    paid_on_a_chain_ten_minutes_old(false).await;
}

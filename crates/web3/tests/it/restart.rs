//! Journal before broadcast, and reconciliation after a restart: nothing is ever sent twice (invariant 9).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use crate::common::Env;
use alloy::primitives::{Bytes, U256};
use holdfast_web3::chain::TxPlan;
use holdfast_web3::journal::{EntryKind, EntryStatus, NewEntry};
use std::time::Duration;

fn entry(signed: &holdfast_web3::chain::SignedTx, from: &str) -> NewEntry {
    NewEntry {
        session_id: "crashed".into(),
        kind: EntryKind::Swap,
        network: "base".into(),
        chain_id: 8453,
        from: from.into(),
        to: "dev".into(),
        nonce: Some(signed.nonce),
        value: "1".into(),
        asset: holdfast_devnet::NATIVE.to_checksum(None),
        asset_symbol: "ETH".into(),
        amount: "1".into(),
        fingerprint: format!("test-{}", signed.hash),
        intent: None,
        raw_tx: Some(signed.raw.to_string()),
        tx_hash: Some(signed.hash.to_string()),
        error: None,
        summary: serde_json::json!({"action": "test transfer"}),
        authorization: None,
    }
}

/// Signs a 1-wei transfer, journals it, and "crashes" before broadcasting (the process stops after the journal
/// write, as the kernel's send path would if killed there).
async fn crash_before_broadcast(env: &Env) -> holdfast_web3::chain::SignedTx {
    let chain = env.web3.chain(env.ctx.config.networks.resolve("base").unwrap()).unwrap();
    let signer = env.devnet.signer().unwrap();
    let plan = TxPlan { to: env.devnet.dev_account(), data: Bytes::new(), value: U256::from(1u8) };
    let fees = chain.fees(signer.address(), &plan).await.unwrap();
    let from = signer.address().to_checksum(None);
    let nonce = chain.next_nonce(signer.address(), None).await.unwrap();
    let signed = chain.sign(&signer, &plan, fees, nonce).unwrap();
    holdfast_web3::journal::test_hooks::insert(env.web3.journal(), entry(&signed, &from), EntryStatus::Signed)
        .await
        .unwrap();
    signed
}

#[tokio::test]
async fn a_transaction_journaled_but_never_broadcast_is_resent_identically_once() {
    let env = Env::start().await;
    let nonce = env.nonce().await;
    let signed = crash_before_broadcast(&env).await;
    assert_eq!(env.nonce().await, nonce, "the crash happened before anything left the process");

    // Restart over the same data dir: a new runtime, a new journal handle.
    let env = Env::load(env.devnet, "after-restart");
    let report = env.web3.reconcile().await.unwrap();
    assert_eq!(report.len(), 1);
    assert_eq!(report[0].status, EntryStatus::Pending, "{report:?}");
    let chain = env.web3.chain(env.ctx.config.networks.resolve("base").unwrap()).unwrap();
    let receipt = chain.wait_receipt(signed.hash, Duration::from_secs(10)).await.unwrap().unwrap();
    assert!(receipt.status());

    // A second reconciliation records the receipt and sends nothing.
    let report = env.web3.reconcile().await.unwrap();
    assert_eq!(report[0].status, EntryStatus::Confirmed);
    assert!(env.web3.reconcile().await.unwrap().is_empty());
    assert_eq!(env.nonce().await, nonce + 1, "exactly one transaction, the journaled one");
}

#[tokio::test]
async fn a_transaction_mined_while_down_is_recorded_without_resending() {
    let env = Env::start().await;
    env.quote("swap 0.001 ETH for USDC", "ETH", "USDC", "0.001").await;
    let out = env.ok("web3_tx", serde_json::json!({"from_register": "swap_quote", "network": "base"})).await;
    let id = out["journal_id"].as_str().unwrap().to_owned();
    // Pretend the process died before it recorded the receipt.
    holdfast_web3::journal::test_hooks::set_status(env.web3.journal(), &id, EntryStatus::Signed).await.unwrap();
    let nonce = env.nonce().await;

    let env = Env::load(env.devnet, "after-restart");
    let report = env.web3.reconcile().await.unwrap();
    assert_eq!((report.len(), report[0].status), (1, EntryStatus::Confirmed), "{report:?}");
    assert_eq!(env.nonce().await, nonce);
}

#[tokio::test]
async fn a_journaled_transaction_whose_nonce_was_used_elsewhere_is_marked_dropped() {
    let env = Env::start().await;
    let nonce = env.nonce().await;
    let _never_sent = crash_before_broadcast(&env).await;
    // Another transaction takes the same nonce (the user acted from another client while we were down).
    let chain = env.web3.chain(env.ctx.config.networks.resolve("base").unwrap()).unwrap();
    let signer = env.devnet.signer().unwrap();
    let plan = TxPlan { to: env.devnet.dev_account(), data: Bytes::new(), value: U256::from(2u8) };
    let fees = chain.fees(signer.address(), &plan).await.unwrap();
    let other = chain.sign(&signer, &plan, fees, chain.next_nonce(signer.address(), None).await.unwrap()).unwrap();
    assert_eq!(chain.broadcast(&other.raw).await, holdfast_web3::chain::Broadcast::Accepted);
    assert_eq!(other.nonce, nonce);
    chain.wait_receipt(other.hash, Duration::from_secs(10)).await.unwrap().unwrap();

    let env = Env::load(env.devnet, "after-restart");
    let report = env.web3.reconcile().await.unwrap();
    assert_eq!(report[0].status, EntryStatus::Dropped, "{report:?}");
    assert_eq!(env.nonce().await, nonce + 1);
}

//! Journal before broadcast, and reconciliation after a restart: nothing is ever sent twice (invariant 9).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use crate::common::Env;
use alloy::primitives::{B256, Bytes, U256};
use holdfast_web3::chain::TxPlan;
use holdfast_web3::journal::{EntryKind, EntryStatus, NewEntry};
use std::time::Duration;

fn entry(signed: &holdfast_web3::chain::SignedTx, from: &str) -> NewEntry {
    NewEntry {
        session_id: "crashed".into(),
        kind: EntryKind::Swap,
        network: "base".into(),
        chain_id: holdfast_devnet::CHAIN_ID,
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

/// A new entry with `e`'s fields.
pub(crate) fn entry_of(e: &holdfast_web3::journal::JournalEntry) -> NewEntry {
    NewEntry {
        session_id: e.session_id.clone(),
        kind: e.kind,
        network: e.network.clone(),
        chain_id: e.chain_id,
        from: e.from.clone(),
        to: e.to.clone(),
        nonce: e.nonce,
        value: e.value.clone(),
        asset: e.asset.clone(),
        asset_symbol: e.asset_symbol.clone(),
        amount: e.amount.clone(),
        fingerprint: e.fingerprint().to_owned(),
        intent: e.intent().map(str::to_owned),
        raw_tx: None,
        tx_hash: e.tx_hash.clone(),
        error: None,
        summary: e.summary.clone(),
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
    let receipt = chain.wait_receipt(signed.hash, Duration::from_secs(10)).await.unwrap();
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
    chain.wait_receipt(other.hash, Duration::from_secs(10)).await.unwrap();

    let env = Env::load(env.devnet, "after-restart");
    let report = env.web3.reconcile().await.unwrap();
    assert_eq!(report[0].status, EntryStatus::Dropped, "{report:?}");
    assert_eq!(env.nonce().await, nonce + 1);
}

/// Journals a signed, never-sent 1-wei transfer on `network` as the kernel would, recorded for the chain whose
/// genesis is `genesis`.
pub(crate) async fn signed_for(env: &Env, genesis: B256, network: &str) -> (holdfast_web3::chain::SignedTx, String) {
    let network = env.ctx.config.networks.resolve(network).unwrap();
    let chain = env.web3.chain(network).unwrap();
    let signer = env.devnet.signer().unwrap();
    let plan = TxPlan { to: env.devnet.dev_account(), data: Bytes::new(), value: U256::from(1u8) };
    let fees = chain.fees(signer.address(), &plan).await.unwrap();
    let nonce = chain.next_nonce(signer.address(), None).await.unwrap();
    let signed = chain.sign(&signer, &plan, fees, nonce).unwrap();
    let new = NewEntry {
        chain_id: network.chain_id,
        network: network.name.clone(),
        ..entry(&signed, &signer.address().to_checksum(None))
    };
    let j = env.web3.journal();
    let row = holdfast_web3::journal::test_hooks::insert(j, new, EntryStatus::Reserved).await.unwrap();
    let (raw, hash, genesis) = (signed.raw.to_string(), signed.hash.to_string(), genesis.to_string());
    holdfast_web3::journal::test_hooks::mark_signed(j, &row.id, Some(signed.nonce), &raw, &hash, Some(&genesis))
        .await
        .unwrap();
    (signed, row.id)
}

#[tokio::test]
async fn a_transaction_of_a_devnet_chain_that_began_anew_is_chain_reset_never_dropped_or_resent() {
    let env = Env::start().await;
    let nonce = env.nonce().await;
    // Signed on the chain the devnet ran before a reset without its saved state: the node shows another genesis.
    let before_reset = B256::repeat_byte(0x11);
    let (signed, id) = signed_for(&env, before_reset, "base").await;

    let report = env.web3.reconcile().await.unwrap();
    assert_eq!(report.len(), 1, "{report:?}");
    assert_eq!(report[0].status, EntryStatus::ChainReset, "{report:?}");
    assert_eq!(report[0].note, "chain was reset");
    let entry = env.web3.journal().get(&id).await.unwrap().unwrap();
    assert!(entry.error.as_deref().unwrap().contains("the chain was reset"), "{entry:?}");
    let page = env.web3.tx_page(&entry).await.unwrap();
    assert_eq!(page.status, "chain_reset");
    // Not sent on the new chain, and never again: the node does not know it, the nonce did not move.
    assert!(env.web3.reconcile().await.unwrap().is_empty());
    let chain = env.web3.chain(env.ctx.config.networks.resolve("base").unwrap()).unwrap();
    assert!(!chain.is_known(signed.hash).await.unwrap());
    assert_eq!(env.nonce().await, nonce);

    // Mined after all (the node lied about its genesis, or the bytes were sent elsewhere): the receipt is recorded and
    // the amount counts again.
    assert_eq!(chain.broadcast(&signed.raw).await, holdfast_web3::chain::Broadcast::Accepted);
    chain.wait_receipt(signed.hash, Duration::from_secs(10)).await.unwrap();
    let report = env.web3.reconcile().await.unwrap();
    assert_eq!((report.len(), report[0].status), (1, EntryStatus::Confirmed), "{report:?}");
}

#[tokio::test]
async fn on_a_public_chain_id_an_entry_is_reconciled_as_always_whatever_genesis_it_names() {
    // A second chain under Base's chain id (a plain anvil), where the devnet's signer holds ether.
    let devnet = holdfast_devnet::TestDevnet::start().await.expect("devnet");
    let public = crate::common::PlainAnvil::start(8453, devnet.wallet_address).await;
    let toml = format!("\n[networks.public]\nchain_id = 8453\nrpc_urls = [\"{}\"]\n", public.url);
    let env = Env::apply(devnet, crate::common::Tweaks { toml, ..Default::default() });
    // Base's chain id never begins anew: the genesis is not asked, and the entry is re-sent from its identical bytes.
    let (signed, id) = signed_for(&env, B256::repeat_byte(0x22), "public").await;
    let report = env.web3.reconcile().await.unwrap();
    assert!(report.iter().any(|r| r.journal_id == id && r.status == EntryStatus::Pending), "{report:?}");
    let chain = env.web3.chain(env.ctx.config.networks.resolve("public").unwrap()).unwrap();
    assert!(chain.wait_receipt(signed.hash, Duration::from_secs(10)).await.is_some());
}

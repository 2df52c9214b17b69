//! A journal that fails at the worst moment: after value has moved, or with a signed transaction's record in doubt.
//! The chain, not the journal's error, decides what the caller is told: a mined transfer is reported mined, and a
//! transaction whose record cannot be established is reported with an unknown outcome, never as failed. The faults
//! are SQLite triggers on the journal's own file that abort one kind of status change (what a full disk or a lost
//! database connection does to that one write).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::rpc_proxy::Fault;
use crate::common::{Env, Tweaks};
use crate::transfer::{prepare, to_register};
use alloy::primitives::{Address, U256, address};
use holdfast_core::ErrorCode;
use holdfast_devnet::{TestDevnet, USDC};
use holdfast_web3::{EntryKind, EntryStatus};
use serde_json::json;

const FRIEND: Address = address!("0x90F79bf6EB2c4f870365E785982E1f101E93b906");

/// Makes every change of a journal entry's status to one of `statuses` fail, from a connection of the test's own.
pub(crate) fn fail_status_changes(devnet: &TestDevnet, statuses: &[&str]) {
    let list = statuses.iter().map(|s| format!("'{s}'")).collect::<Vec<_>>().join(", ");
    let db = holdfast_store::SqliteDb::open(&devnet.dir.join("data/holdfast.db")).unwrap();
    db.lock()
        .execute_batch(&format!(
            "CREATE TRIGGER journal_fault BEFORE UPDATE OF status ON journal WHEN NEW.status IN ({list})
             BEGIN SELECT RAISE(ABORT, 'journal fault injected by the test'); END;"
        ))
        .unwrap();
}

pub(crate) fn heal(devnet: &TestDevnet) {
    let db = holdfast_store::SqliteDb::open(&devnet.dir.join("data/holdfast.db")).unwrap();
    db.lock().execute_batch("DROP TRIGGER journal_fault").unwrap();
}

async fn transfers(env: &Env) -> Vec<holdfast_web3::JournalEntry> {
    let all = env.web3.journal().for_session("session-1").await.unwrap();
    all.into_iter().filter(|e| e.kind == EntryKind::Transfer).collect()
}

/// A devnet with "send 5 USDC to FRIEND" ready to transfer: the env, the wallet's USDC and its nonce.
async fn five_usdc_to_friend() -> (Env, U256, u64) {
    let env = Env::start().await;
    prepare(&env, "send 5 USDC to 0x90F79bf6EB2c4f870365E785982E1f101E93b906 on base", "USDC", "5").await;
    env.ok("context_address", json!({"index": null, "cache_as": "recipient_address"})).await;
    let (mine, nonce) = (env.balance(USDC).await, env.nonce().await);
    (env, mine, nonce)
}

#[tokio::test]
async fn a_mined_transfer_whose_receipt_the_journal_cannot_record_is_reported_mined() {
    let (env, mine, nonce) = five_usdc_to_friend().await;
    fail_status_changes(&env.devnet, &["confirmed", "reverted"]);

    // Before: the call failed with the journal's error though the transfer was mined, inviting a second one.
    let out = env.ok("transfer", to_register()).await;
    assert_eq!(out["status"], "confirmed", "{out}");
    assert_eq!(env.balance(USDC).await, mine - U256::from(5_000_000u64));
    assert_eq!(env.nonce().await, nonce + 1);
    let held = transfers(&env).await;
    assert_eq!(held.len(), 1);
    assert_ne!(held[0].status, EntryStatus::Confirmed, "the fault kept the receipt out of the journal");

    // Reconciliation records it from the chain once the journal takes writes again; a repeat sends nothing.
    heal(&env.devnet);
    env.web3.reconcile().await.unwrap();
    assert_eq!(transfers(&env).await[0].status, EntryStatus::Confirmed);
    let again = env.ok("transfer", to_register()).await;
    assert_eq!(again["journal_id"], out["journal_id"]);
    assert_eq!(env.nonce().await, nonce + 1, "never a second transfer");
    assert_eq!(env.balance(USDC).await, mine - U256::from(5_000_000u64));
}

#[tokio::test]
async fn a_signed_transfer_whose_record_is_in_doubt_is_unknown_not_failed() {
    let (env, mine, nonce) = five_usdc_to_friend().await;
    let friend = env.devnet.balance_of(USDC, FRIEND).await.unwrap();
    // Neither the record of the signed bytes nor the release of the reservation can be written: whether the bytes
    // are journaled (and so will be sent by reconciliation) is not established.
    fail_status_changes(&env.devnet, &["signed", "failed"]);

    let e = env.err("transfer", to_register()).await;
    assert_eq!(e.code, ErrorCode::OutcomeUnknown, "{e:?}");
    assert!(e.message.contains("journal j_"), "{}", e.message);
    assert_eq!((env.balance(USDC).await, env.nonce().await), (mine, nonce), "nothing was sent");

    // With the journal healed, the reservation is still held and nothing was journaled to send; a repeat of the
    // same action is refused while it is, and signs nothing beside it.
    heal(&env.devnet);
    let held = transfers(&env).await;
    assert_eq!((held.len(), held[0].status, held[0].raw_tx().is_none()), (1, EntryStatus::Reserved, true));
    env.err("transfer", to_register()).await;
    env.web3.reconcile().await.unwrap();
    assert_eq!((env.balance(USDC).await, env.nonce().await), (mine, nonce), "still nothing sent");
    assert_eq!(env.devnet.balance_of(USDC, FRIEND).await.unwrap(), friend, "the recipient got nothing");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_send_every_node_refused_whose_failure_cannot_be_recorded_is_unknown_not_pending() {
    let (env, proxy) = crate::kernel::behind_proxy(TestDevnet::start().await.unwrap(), Tweaks::default()).await;
    prepare(&env, "send 5 USDC to 0x90F79bf6EB2c4f870365E785982E1f101E93b906 on base", "USDC", "5").await;
    env.ok("context_address", json!({"index": null, "cache_as": "recipient_address"})).await;
    let (mine, nonce) = (env.balance(USDC).await, env.nonce().await);
    // The node refuses the transaction and never has it; the chain shows the nonce unused (`stalled`), but the journal
    // cannot record it: the entry stays `signed`, bytes and all.
    proxy.set_fault(Fault::RejectUnsent);
    fail_status_changes(&env.devnet, &["stalled"]);

    // Before: "pending" (a hash no node has), after waiting out the receipt timeout.
    let out = env.ok("transfer", to_register()).await;
    assert_eq!(out["status"], "unknown", "{out}");
    assert!(proxy.faults_applied() >= 1, "the node refused it");
    assert_eq!((env.balance(USDC).await, env.nonce().await), (mine, nonce), "nothing was sent");
    assert_eq!(transfers(&env).await[0].status, EntryStatus::Signed);

    // Unknown was the truth: once the journal and the node work again, reconciliation sends the journaled bytes, and
    // the transfer happens exactly once.
    heal(&env.devnet);
    proxy.set_fault(Fault::Forward);
    env.web3.reconcile().await.unwrap();
    env.web3.reconcile().await.unwrap();
    assert_eq!(env.nonce().await, nonce + 1);
    assert_eq!(env.balance(USDC).await, mine - U256::from(5_000_000u64));
}

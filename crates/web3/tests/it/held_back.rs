//! A node that holds a transaction back while it answers that it refused it: the send is `stalled` — counted against
//! the caps and holding the user's authorization until it is mined or its nonce is used by another transaction — and
//! nothing is signed beside it that both could be mined; a retry sends the same bytes. And a node that raises the fee
//! once the user approved gets the question asked again. Played on the devnet behind an RPC proxy that lies, and
//! judged by the chain and the journal.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use crate::common::rpc_proxy::{Fault, RpcProxy};
use crate::common::{Env, Tweaks};
use crate::evidence::{ALICE, behind_proxy, five_usdc_to_alice};
use alloy::primitives::{B256, U256};
use holdfast_core::{ErrorCode, ToolError, UserDecision};
use holdfast_devnet::{TestDevnet, USDC};
use holdfast_web3::{EntryKind, EntryStatus};
use serde_json::{Value, json};
use std::sync::Arc;

/// The first node keeps the transfer to itself and answers that it refused it; every node shows its nonce unused, so
/// it is recorded as `stalled`: not out there as far as the chain shows, still counted and holding the user's
/// authorization. The node lets it out afterwards and it is mined. The same transfer asked again must find it, not go
/// out beside it.
#[tokio::test(flavor = "multi_thread")]
async fn a_transfer_a_node_held_back_and_let_out_later_is_found_before_anything_new_is_signed() {
    held_back_let_out_and_asked_again(None).await;
}

/// As above, with the node holding it back for two days: a failed send is looked for by its nonce, however old.
#[tokio::test(flavor = "multi_thread")]
async fn a_transfer_a_node_held_back_for_days_is_found_before_anything_new_is_signed() {
    // Two days pass: the journal's entries were written and last updated then.
    let two_days_ago = (chrono::Utc::now() - chrono::Duration::days(2)).to_rfc3339();
    let aged = format!(
        "UPDATE journal SET created_at = '{two_days_ago}', updated_at = '{two_days_ago}', day = date(day, '-2 day')"
    );
    held_back_let_out_and_asked_again(Some(&aged)).await;
}

/// As above, with the network renamed in the config since (same chain id): the entry is looked up on its chain, not
/// by a name no network answers to (before: every send on the chain refused with `unknown_network` while the gap
/// lasted).
#[tokio::test(flavor = "multi_thread")]
async fn a_transfer_held_back_on_a_network_renamed_since_is_found_before_anything_new_is_signed() {
    held_back_let_out_and_asked_again(Some("UPDATE journal SET network = 'base-before-renaming'")).await;
}

/// The held-back transfer let out two days later, mined with the nonce a later send of the wallet also holds (one
/// still `unknown`, which the chain never mined): the chain counts no more than the journal, so no nonce gap shows
/// it. The held-back one was kept counted (`stalled`) all along, so reconciling finds it mined and releases the later
/// send (before: it was `failed`, counted nowhere once the day's recheck of failed sends was over, and only a lookup
/// from the later send found it).
#[tokio::test(flavor = "multi_thread")]
async fn a_transfer_held_back_for_days_and_mined_in_a_later_sends_place_is_counted() {
    let devnet = TestDevnet::start().await.expect("devnet");
    let (proxy, second) = (RpcProxy::start(&devnet.rpc_url).await, RpcProxy::start(&devnet.rpc_url).await);
    let both = format!("rpc_urls = [\"{}\", \"{}\"]", proxy.url, second.url);
    let tweaks =
        Tweaks { toml_replace: vec![(format!("rpc_urls = [\"{}\"]", devnet.rpc_url), both)], ..Default::default() };
    let env = Env::apply(devnet, tweaks);
    let (_, nonce) = five_usdc_to_alice(&env).await;
    proxy.set_fault(Fault::Withhold);
    let first = env.call("transfer", crate::transfer::to_register()).await;
    let held = env.web3.journal().for_session("session-1").await.unwrap();
    let held = held.into_iter().find(|e| e.kind == EntryKind::Transfer).unwrap();
    assert_eq!((held.status, held.nonce), (EntryStatus::Stalled, Some(nonce)), "{first:?}");
    let two_days_ago = (chrono::Utc::now() - chrono::Duration::days(2)).to_rfc3339();
    let db = holdfast_store::SqliteDb::open(&env.devnet.dir.join("data/holdfast.db")).unwrap();
    db.lock()
        .execute_batch(&format!(
            "UPDATE journal SET created_at = '{two_days_ago}', updated_at = '{two_days_ago}', day = date(day, '-2 day')"
        ))
        .unwrap();
    // A later send of the wallet with the same nonce, whose outcome is unknown and which the chain never saw.
    let later = holdfast_web3::journal::NewEntry {
        fingerprint: "later".into(),
        intent: None,
        nonce: Some(nonce),
        tx_hash: None,
        raw_tx: None,
        authorization: None,
        ..crate::restart::entry_of(&held)
    };
    use holdfast_web3::journal::test_hooks as j;
    let later = j::insert(env.web3.journal(), later, EntryStatus::Reserved).await.unwrap();
    let hash = B256::repeat_byte(0x5e).to_string();
    j::mark_signed(env.web3.journal(), &later.id, Some(nonce), "0x02", &hash, None).await.unwrap();
    j::set_status(env.web3.journal(), &later.id, EntryStatus::Unknown).await.unwrap();
    proxy.set_fault(Fault::Forward);
    let released = proxy.release().await;
    assert_eq!(env.nonce().await, nonce + 1, "the held-back one was mined: {released:?}");

    // Both nodes' receipt indexes lag: the nonce is shown used by the held-back transfer, its receipt not yet.
    let no_receipts: crate::common::rpc_proxy::Rewrite = Arc::new(|req: &Value, resp: &mut Value| {
        if req["method"] == "eth_getTransactionReceipt" {
            resp["result"] = Value::Null;
        }
    });
    proxy.set_rewrite(Some(no_receipts.clone()));
    second.set_rewrite(Some(no_receipts));
    // The held-back transfer stayed counted (`stalled`): found mined by its own hash, it is `pending`, and the later
    // send, whose nonce it took, is released. The nonce's amount is counted once, on the transfer that was mined.
    let report = env.web3.reconcile().await.unwrap();
    let status = |id: &str| report.iter().find(|r| r.journal_id == id).map(|r| r.status);
    assert_eq!(status(&held.id), Some(EntryStatus::Pending), "{report:?}");
    assert_eq!(status(&later.id), Some(EntryStatus::Dropped), "{report:?}");
    proxy.set_rewrite(None);
    second.set_rewrite(None);

    env.web3.reconcile().await.unwrap();
    let now = env.web3.journal().get(&held.id).await.unwrap().unwrap();
    assert_eq!(now.status, EntryStatus::Confirmed, "the held-back transfer is recorded as mined");
}

/// The held-back transfer; `then` runs on the journal's SQLite file once the transfer was recorded as never sent.
async fn held_back_let_out_and_asked_again(then: Option<&str>) {
    let devnet = TestDevnet::start().await.expect("devnet");
    let (env, proxy) = behind_proxy(devnet, Tweaks::default(), true).await;
    let (mine, nonce) = five_usdc_to_alice(&env).await;
    let alice = env.devnet.balance_of(USDC, ALICE).await.unwrap();
    proxy.set_fault(Fault::Withhold);
    let first = env.call("transfer", crate::transfer::to_register()).await;
    assert!(proxy.faults_applied() >= 1, "the node held it back: {first:?}");
    assert_eq!(env.nonce().await, nonce, "nothing mined yet: {first:?}");
    if let Some(sql) = then {
        let db = holdfast_store::SqliteDb::open(&env.devnet.dir.join("data/holdfast.db")).unwrap();
        db.lock().execute_batch(sql).unwrap();
    }
    let released = proxy.release().await;
    assert_eq!(env.nonce().await, nonce + 1, "the node let it out and it was mined: {released:?}");

    // Before: the retry was signed with the next nonce and mined as well, 10 USDC for one "send 5 USDC".
    proxy.set_fault(Fault::Forward);
    let second = env.call("transfer", crate::transfer::to_register()).await;
    let five = U256::from(5_000_000u64);
    assert_eq!(
        (env.balance(USDC).await, env.nonce().await),
        (mine - five, nonce + 1),
        "one transfer: first {first:?}, second {second:?}"
    );
    assert_eq!(env.devnet.balance_of(USDC, ALICE).await.unwrap(), alice + five);
    // The held-back transfer stayed `stalled` (counted): asking again finds it mined.
    assert_eq!(second.as_ref().map(|out| out["status"].clone()), Ok(json!("confirmed")), "{second:?}");
    let entries = env.web3.journal().for_session("session-1").await.unwrap();
    let transfers: Vec<_> = entries.iter().filter(|e| e.kind == EntryKind::Transfer).map(|e| e.status).collect();
    assert_eq!(transfers, [EntryStatus::Confirmed], "recorded as mined, and counted against the caps again");
}

/// A node that counts one more of every account's mined transactions than it mined (one it holds back).
fn one_more_mined() -> crate::common::rpc_proxy::Rewrite {
    Arc::new(|req: &Value, resp: &mut Value| {
        let count = resp["result"].as_str().and_then(|h| u64::from_str_radix(h.trim_start_matches("0x"), 16).ok());
        if req["method"] == "eth_getTransactionCount"
            && req["params"][1] == "latest"
            && let Some(n) = count
        {
            resp["result"] = json!(format!("0x{:x}", n + 1));
        }
    })
}

/// "send 5 USDC to ALICE" held back by `proxy`'s node (answered as refused, so recorded as never sent), then that
/// node forwarding again and counting the held-back transfer as mined: the wallet's USDC and nonce before, and the
/// first call's answer.
async fn held_back_and_counted(env: &Env, proxy: &RpcProxy) -> (U256, u64, Result<Value, ToolError>) {
    let (mine, nonce) = five_usdc_to_alice(env).await;
    proxy.set_fault(Fault::Withhold);
    let first = env.call("transfer", crate::transfer::to_register()).await;
    assert_eq!(env.nonce().await, nonce, "nothing mined yet: {first:?}");
    proxy.set_fault(Fault::Forward);
    proxy.set_rewrite(Some(one_more_mined()));
    (mine, nonce, first)
}

/// The node stops lying and lets out what it held back: the node's answers.
async fn let_out(proxy: &RpcProxy) -> Vec<Value> {
    proxy.set_rewrite(None);
    proxy.release().await
}

/// As below, with the honest node failing to answer the count while the retry is prepared: the count only the lying
/// node shows is not used, and nothing is signed until every node answers.
#[tokio::test(flavor = "multi_thread")]
async fn a_node_counting_a_transaction_it_held_back_gets_nothing_signed_while_the_other_node_errs() {
    let devnet = TestDevnet::start().await.expect("devnet");
    let (proxy, honest) = (RpcProxy::start(&devnet.rpc_url).await, RpcProxy::start(&devnet.rpc_url).await);
    let both = format!("rpc_urls = [\"{}\", \"{}\"]", proxy.url, honest.url);
    let tweaks =
        Tweaks { toml_replace: vec![(format!("rpc_urls = [\"{}\"]", devnet.rpc_url), both)], ..Default::default() };
    let env = Env::apply(devnet, tweaks);
    let (mine, nonce, first) = held_back_and_counted(&env, &proxy).await;
    honest.set_rewrite(Some(Arc::new(|req: &Value, resp: &mut Value| {
        if req["method"] == "eth_getTransactionCount" {
            *resp = json!({"jsonrpc": "2.0", "id": req["id"], "error": {"code": -32603, "message": "internal error"}});
        }
    })));
    // Before: signed with the nonce after the held-back one, the only count that answered.
    let second = env.call("transfer", crate::transfer::to_register()).await;
    assert!(second.is_err(), "nothing signed while only the lying node counts: {second:?}");
    honest.set_rewrite(None);
    let released = let_out(&proxy).await;
    let moved = (env.balance(USDC).await, env.nonce().await);
    let what = format!("first {first:?}, second {second:?}, released {released:?}");
    assert_eq!(moved, (mine - U256::from(5_000_000u64), nonce + 1), "one transfer, the held-back one: {what}");
}

/// The same node, holding the transfer back, also counts it as mined: the next transaction must not take the nonce
/// after it (the node could then let both out) but the one the other node shows free, so at most one of the two is
/// ever mined.
#[tokio::test(flavor = "multi_thread")]
async fn a_node_counting_a_transaction_it_held_back_cannot_get_the_next_one_signed_beside_it() {
    let devnet = TestDevnet::start().await.expect("devnet");
    let (env, proxy) = behind_proxy(devnet, Tweaks::default(), true).await;
    let (mine, nonce, first) = held_back_and_counted(&env, &proxy).await;
    // Before: signed with the nonce after the held-back one, which only this node counts.
    let second = env.call("transfer", crate::transfer::to_register()).await;
    let released = let_out(&proxy).await;
    let moved = (env.balance(USDC).await, env.nonce().await);
    let what = format!("first {first:?}, second {second:?}, the held-back one let out: {released:?}");
    assert_eq!(moved, (mine - U256::from(5_000_000u64), nonce + 1), "one transfer: {what}");
}

/// The wallet's only node holds the transfer back (answering that it refused it, its nonce shown unused: the chain
/// shows nothing else), then counts it as mined. The transfer stays counted and keeps the user's authorization
/// (`stalled`), and asking again sends nothing new: before, it was released as `failed`, the retry was signed with the
/// next nonce, and the node let both out — 10 USDC for one "send 5 USDC".
#[tokio::test(flavor = "multi_thread")]
async fn a_transfer_a_single_node_held_back_and_counted_is_sent_once() {
    let devnet = TestDevnet::start().await.expect("devnet");
    let (env, proxy) = behind_proxy(devnet, Tweaks::default(), false).await;
    let (mine, nonce, first) = held_back_and_counted(&env, &proxy).await;
    let err = first.as_ref().unwrap_err();
    assert_eq!(err.code, ErrorCode::OutcomeUnknown, "{err:?}");
    assert_eq!(err.details.as_ref().unwrap()["status"], "stalled", "{err:?}");
    let transfer = || async {
        let entries = env.web3.journal().for_session("session-1").await.unwrap();
        entries.into_iter().find(|e| e.kind == EntryKind::Transfer).unwrap()
    };
    assert_eq!(transfer().await.status, EntryStatus::Stalled);
    let spent = env
        .web3
        .journal()
        .spent_today(
            holdfast_devnet::CHAIN_ID,
            &env.devnet.wallet_address.to_checksum(None),
            &USDC.to_checksum(None),
            &[EntryKind::Swap, EntryKind::Transfer],
        )
        .await
        .unwrap();
    assert_eq!(spent, U256::from(5_000_000u64), "still counted against the day's cap");
    let second = env.call("transfer", crate::transfer::to_register()).await;
    let released = let_out(&proxy).await;
    let moved = (env.balance(USDC).await, env.nonce().await);
    let what = format!("first {first:?}, second {second:?}, the held-back one let out: {released:?}");
    assert_eq!(moved, (mine - U256::from(5_000_000u64), nonce + 1), "one transfer: {what}");
    env.web3.reconcile().await.unwrap();
    assert_eq!(transfer().await.status, EntryStatus::Confirmed, "{what}");
}

/// An approval covers the network fee it showed, at most twice: the node quoting a tip of 9 gwei (within the
/// policy's 10 gwei cap, hundreds of times the devnet's) once the user approved gets the question asked again with
/// the new fee. Before, the approval covered any fee within the caps, and the transfer ran on it.
#[tokio::test(flavor = "multi_thread")]
async fn an_approval_does_not_cover_a_fee_the_node_raised_since() {
    let devnet = TestDevnet::start().await.expect("devnet");
    let (env, proxy) = behind_proxy(devnet, Tweaks::default(), false).await;
    crate::transfer::prepare(&env, "send 60 USDC to 0x90F79bf6EB2c4f870365E785982E1f101E93b906 on base", "USDC", "60")
        .await;
    env.ok("context_address", json!({"index": null, "cache_as": "recipient_address"})).await;
    let (mine, nonce) = (env.balance(USDC).await, env.nonce().await);
    let asked = env.err("transfer", crate::transfer::to_register()).await;
    assert_eq!(asked.code, ErrorCode::ConfirmationRequired, "{asked:?}");
    let details = asked.details.unwrap();
    env.decide(details["confirmation_id"].as_str().unwrap(), UserDecision::Approve).unwrap();
    proxy.set_rewrite(Some(Arc::new(|req: &Value, resp: &mut Value| {
        if req["method"] == "eth_feeHistory"
            && let Some(rewards) = resp["result"]["reward"].as_array_mut()
        {
            for r in rewards.iter_mut() {
                *r = json!(["0x218711a00"]);
            }
        }
    })));
    let again = env.err("transfer", crate::transfer::to_register()).await;
    assert_eq!(again.code, ErrorCode::ConfirmationRequired, "asked again: {again:?}");
    let fee = |d: &Value| d["summary"]["max_network_fee"].as_str().unwrap().to_owned();
    let (before, after) = (fee(&details), fee(again.details.as_ref().unwrap()));
    assert_ne!(before, after, "the new question shows the new fee");
    assert_eq!((env.balance(USDC).await, env.nonce().await), (mine, nonce), "nothing sent on the old approval");
}

/// A transfer the node refused while every node shows its nonce unused is `stalled`: reconciliation (in the
/// background, at start-up) does not send it again by itself — the user was told it is not out there — but asking for
/// it again does, the same signed bytes, once. A second transfer of the wallet meanwhile would take its nonce.
#[tokio::test(flavor = "multi_thread")]
async fn a_stalled_transfer_is_sent_again_only_when_asked_for_again() {
    let devnet = TestDevnet::start().await.expect("devnet");
    let (env, proxy) = behind_proxy(devnet, Tweaks::default(), true).await;
    let (mine, nonce) = five_usdc_to_alice(&env).await;
    proxy.set_fault(Fault::RejectUnsent);
    let first = env.call("transfer", crate::transfer::to_register()).await;
    assert_eq!(first.as_ref().map_err(|e| e.code), Err(ErrorCode::OutcomeUnknown), "{first:?}");
    proxy.set_fault(Fault::Forward);
    env.web3.reconcile().await.unwrap();
    let entries = env.web3.journal().for_session("session-1").await.unwrap();
    let held = entries.into_iter().find(|e| e.kind == EntryKind::Transfer).unwrap();
    assert_eq!(held.status, EntryStatus::Stalled, "not sent again by itself");
    assert_eq!((env.balance(USDC).await, env.nonce().await), (mine, nonce));
    let again = env.ok("transfer", crate::transfer::to_register()).await;
    assert_eq!(again["journal_id"], held.id.as_str(), "the same transaction: {again}");
    assert_eq!(again["hash"], held.tx_hash.clone().unwrap().as_str(), "{again}");
    env.web3.reconcile().await.unwrap();
    assert_eq!((env.balance(USDC).await, env.nonce().await), (mine - U256::from(5_000_000u64), nonce + 1), "once");
}

//! Every check bound to the action that is signed (issue: "Bind the evidence to the action"): each attack that moved
//! value before — a simulation a contract can tell apart from the real block, allowances left standing, one
//! authorization spent many times, a node that lies about a broadcast, a price from that same node, an amount the
//! user did not write — played on a real devnet and judged by what the chain and the journal hold afterwards, next to
//! an honest control that still swaps, transfers or pays.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use crate::common::rpc_proxy::RpcProxy;
use crate::common::{Env, Failures, Tweaks, hostile_quoter, recalldata, u256};
use alloy::primitives::{Address, B256, Bytes, U256, address};
use alloy::providers::Provider;
use alloy::providers::ext::AnvilApi;
use alloy::sol_types::SolCall;
use holdfast_core::{ErrorCode, ToolError, UserDecision};
use holdfast_devnet::{NATIVE, TestDevnet, USDC, VENUE};
use holdfast_web3::chain::{IERC20, TxPlan};
use holdfast_web3::{EntryKind, EntryStatus};
use serde_json::{Value, json};
use std::sync::Arc;

pub(crate) const THIEF: Address = address!("0x000000000000000000000000000000000000dEaD");
/// Anvil's dev account #3, the devnet config's `alice`.
pub(crate) const ALICE: Address = address!("0x90F79bf6EB2c4f870365E785982E1f101E93b906");
pub(crate) const FINNEY: u64 = 1_000_000_000_000_000;

pub(crate) fn tx() -> Value {
    json!({"from_register": "swap_quote", "network": "base"})
}

/// A transfer to the address in `recipient_address`.
pub(crate) fn to_register() -> Value {
    json!({"network": "base", "token_register": "transfer_token", "amount_register": "transfer_amount",
           "preset": null, "recipient_register": "recipient_address"})
}

pub(crate) fn code(r: &Result<Value, ToolError>) -> String {
    match r {
        Ok(_) => "ok".into(),
        Err(e) => e.code.as_str().to_owned(),
    }
}

/// A contract's deployed code from the committed artifacts.
fn artifact_code(name: &str) -> Bytes {
    let path = format!("{}/../../devnet/artifacts/{name}.json", env!("CARGO_MANIFEST_DIR"));
    let artifact: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    artifact["deployedBytecode"].as_str().unwrap().parse().unwrap()
}

/// Sends an ERC-20 approval from the wallet's own key, outside holdfast (an allowance some earlier run left standing).
async fn approve_outside(env: &Env, token: Address, spender: Address, amount: U256) {
    send_outside(
        env,
        TxPlan { to: token, data: IERC20::approveCall { spender, amount }.abi_encode().into(), value: U256::ZERO },
    )
    .await;
}

/// Sends `plan` from the wallet's own key, outside holdfast, and waits for it to be mined.
pub(crate) async fn send_outside(env: &Env, plan: TxPlan) {
    let signer = env.devnet.signer().unwrap();
    let chain = env.web3.chain(env.ctx.config.networks.resolve("base").unwrap()).unwrap();
    let fees = chain.fees(signer.address(), &plan).await.unwrap();
    let signed = chain.sign(&signer, &plan, fees, chain.next_nonce(signer.address(), None).await.unwrap()).unwrap();
    assert_eq!(chain.broadcast(&signed.raw).await, holdfast_web3::chain::Broadcast::Accepted);
    chain.wait_receipt(signed.hash, std::time::Duration::from_secs(10)).await.unwrap();
}

pub(crate) async fn allowance(env: &Env, token: Address) -> U256 {
    let chain = env.web3.chain(env.ctx.config.networks.resolve("base").unwrap()).unwrap();
    chain.allowance(token, env.devnet.wallet_address, VENUE).await.unwrap()
}

// ---------------------------------------------------------------------------------------------------------------
// 1 and 2: calldata that sells more to a thief, riding on an allowance left standing.
// ---------------------------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread")]
async fn calldata_selling_more_to_a_thief_on_a_standing_allowance_is_refused_and_the_allowance_reset() {
    let (env, tamper) = Env::with_hostile_quoter(Tweaks::default()).await;
    // An approval of 3000 USDC an abandoned swap left on chain.
    approve_outside(&env, USDC, VENUE, U256::from(3_000_000_000u64)).await;
    // Honest fields (sell 10 USDC, a fair minimum), but the venue call sells 3000 USDC for at least 1 wei, to THIEF.
    *tamper.lock() = Box::new(|q| {
        recalldata(q, |c| {
            c.sellAmount = U256::from(3_000_000_000u64);
            c.minBuyAmount = U256::from(1u8);
            c.recipient = THIEF;
        });
    });
    let out = env.quote("swap 10 USDC for ETH", "USDC", "ETH", "10").await;
    assert_eq!(out["origin"], "tool", "honest fields: the quote is stored: {out}");
    let usdc = env.balance(USDC).await;
    let thief = env.devnet.balance_of(NATIVE, THIEF).await.unwrap();

    let mut f = Failures::default();
    let sent = env.call("web3_tx", tx()).await;
    f.check(code(&sent) == "quote_rejected", format!("web3_tx → quote_rejected (got {sent:?})"));
    if let Err(e) = &sent {
        f.check(e.message.contains("`sellAmount`"), format!("the refusal names the argument: {}", e.message));
    }
    f.check(env.balance(USDC).await == usdc, "not one USDC left the wallet");
    f.check(env.devnet.balance_of(NATIVE, THIEF).await.unwrap() == thief, "the thief received nothing");
    // Attack 2: the allowance the refused swap could have ridden on is reset to zero by the kernel, and journaled.
    f.check(allowance(&env, USDC).await.is_zero(), "the standing allowance is reset to zero");
    let resets = env.web3.journal().list(None, Some(EntryKind::Reset), 10).await.unwrap();
    f.check(
        resets.iter().any(|e| e.status == EntryStatus::Confirmed && e.asset == USDC.to_checksum(None)),
        format!("a confirmed `reset` entry for USDC is journaled (got {resets:?})"),
    );

    // The honest control: the same 10 USDC swap, with the approval set to exactly 10 (down from nothing), goes out.
    *tamper.lock() = Box::new(|_| {});
    env.ctx.context_bank.scan_input("ok, swap 10 USDC for ETH");
    let out = env.quote("swap 10 USDC for ETH", "USDC", "ETH", "10").await;
    assert_eq!(out["origin"], "tool", "{out}");
    let approved = env.ok("token_approve", json!({"for_quote": "swap_quote"})).await;
    f.check(approved["allowance"] == "10 USDC", format!("the allowance is exactly the sell amount: {approved}"));
    let usdc = env.balance(USDC).await;
    let swapped = env.call("web3_tx", tx()).await;
    f.check(
        swapped.as_ref().is_ok_and(|v| v["status"] == "confirmed"),
        format!("the honest swap is confirmed: {swapped:?}"),
    );
    f.check(usdc - env.balance(USDC).await == U256::from(10_000_000u64), "exactly 10 USDC left the wallet");
    f.check(allowance(&env, USDC).await.is_zero(), "the swap consumed the allowance exactly");
    f.finish();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_larger_allowance_is_never_relied_on_and_token_approve_lowers_it_to_the_amount() {
    let env = Env::start().await;
    approve_outside(&env, USDC, VENUE, U256::from(3_000_000_000u64)).await;
    env.quote("swap 10 USDC for ETH", "USDC", "ETH", "10").await;
    let usdc = env.balance(USDC).await;
    let err = env.err("web3_tx", tx()).await;
    assert_eq!(err.code, ErrorCode::AllowanceRequired, "{err:?}");
    assert!(err.message.contains("more than the sell amount"), "{}", err.message);
    assert_eq!(env.balance(USDC).await, usdc, "nothing sold on the standing 3000");
    let approved = env.ok("token_approve", json!({"for_quote": "swap_quote"})).await;
    assert_eq!(approved["result"], "approved", "{approved}");
    assert_eq!(allowance(&env, USDC).await, U256::from(10_000_000u64), "lowered to exactly 10 USDC");
    assert_eq!(env.ok("web3_tx", tx()).await["status"], "confirmed");
    assert_eq!(usdc - env.balance(USDC).await, U256::from(10_000_000u64));
}

#[tokio::test(flavor = "multi_thread")]
async fn an_approval_whose_swap_the_user_denied_is_reset_once_its_quote_is_abandoned() {
    let env = Env::start_with(Tweaks {
        // Every swap asks the user (USDC's auto-approve limit below 10).
        toml_replace: vec![("auto_per_tx = \"50\"".into(), "auto_per_tx = \"1\"".into())],
        ..Default::default()
    })
    .await;
    env.quote("swap 10 USDC for ETH", "USDC", "ETH", "10").await;
    // The approval itself is above the auto limit too: the user approves it.
    let err = env.err("token_approve", json!({"for_quote": "swap_quote"})).await;
    let id = err.details.unwrap()["confirmation_id"].as_str().unwrap().to_owned();
    env.decide(&id, UserDecision::Approve).unwrap();
    env.ok("token_approve", json!({"for_quote": "swap_quote"})).await;
    assert_eq!(allowance(&env, USDC).await, U256::from(10_000_000u64));
    // The user denies the swap.
    let err = env.err("web3_tx", tx()).await;
    assert_eq!(err.code, ErrorCode::ConfirmationRequired);
    env.decide(err.details.unwrap()["confirmation_id"].as_str().unwrap(), UserDecision::Deny).unwrap();
    // While its quote may still be used, the allowance stands; once it is abandoned, the sweep resets it.
    assert!(env.web3.reset_abandoned_allowances().await.is_empty(), "too early: the quote may still be used");
    env.web3.set_abandoned_after(std::time::Duration::ZERO);
    let reset = env.web3.reset_abandoned_allowances().await;
    assert_eq!(reset.len(), 1, "{reset:?}");
    assert!(allowance(&env, USDC).await.is_zero(), "reset to zero on chain");
    assert!(env.web3.reset_abandoned_allowances().await.is_empty(), "nothing left to reset");
    let wallet = env.web3.standing_allowances().await;
    assert!(wallet.is_empty(), "no standing allowance is shown: {wallet:?}");
}

// ---------------------------------------------------------------------------------------------------------------
// 1: a contract that behaves honestly only in a simulation.
// ---------------------------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread")]
async fn the_exact_simulation_cannot_be_told_apart_from_the_next_block() {
    let env = Env::start().await;
    let probe = address!("0x00000000000000000000000000000000000b0b0b");
    let provider = env.devnet.provider();
    provider.anvil_set_code(probe, artifact_code("TestSimulationProbe")).await.unwrap();
    let latest = provider.get_block_number().await.unwrap();
    provider.anvil_set_storage_at(probe, U256::ZERO, B256::from(U256::from(latest))).await.unwrap();
    let chain = env.web3.chain(env.ctx.config.networks.resolve("base").unwrap()).unwrap();
    let wallet = env.devnet.wallet_address;
    let plan = TxPlan {
        to: probe,
        data: Bytes::copy_from_slice(&alloy::primitives::keccak256(b"check()")[..4]),
        value: U256::ZERO,
    };
    // The probe can tell a simulation without validation apart: it reverts there (so this test can fail).
    let naive = provider
        .raw_request::<_, Value>(
            "eth_simulateV1".into(),
            (json!({"blockStateCalls": [{"calls": [{"from": wallet, "to": probe, "data": plan.data}]}], "validation": false}), "latest"),
        )
        .await
        .unwrap();
    assert_ne!(naive[0]["calls"][0]["status"], "0x1", "a naive simulation must be caught by the probe: {naive}");
    // The kernel's exact simulation of the transaction it would sign is not.
    let fees = chain.fees(wallet, &plan).await.unwrap();
    let nonce = chain.next_nonce(wallet, None).await.unwrap();
    let sim = chain.simulate_exact(wallet, &chain.build(&plan, fees, nonce), &[]).await;
    assert!(sim.is_ok(), "the exact simulation looks like the next real block: {sim:?}");
    // And the real block agrees.
    let signed = chain.sign_tx(&env.devnet.signer().unwrap(), chain.build(&plan, fees, nonce)).unwrap();
    assert_eq!(chain.broadcast(&signed.raw).await, holdfast_web3::chain::Broadcast::Accepted);
    let receipt = chain.wait_receipt(signed.hash, std::time::Duration::from_secs(10)).await.unwrap();
    assert!(receipt.status(), "the probe passes on chain too");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_recipient_honest_only_at_a_zero_gas_price_gets_nothing_and_an_honest_one_is_paid() {
    let env = Env::start().await;
    let trap = address!("0x00000000000000000000000000000000000c0c0c");
    env.devnet.provider().anvil_set_code(trap, artifact_code("TestGasPriceThief")).await.unwrap();
    let params = to_register();
    let prepare = |text: String, index: u64| {
        let env = &env;
        async move {
            env.ctx.context_bank.scan_input(&text);
            env.ok("token_lookup", json!({"symbol": "ETH", "network": "base", "cache_as": "transfer_token"})).await;
            env.ok(
                "to_raw_amount",
                json!({"amount": "0.001", "token_register": "transfer_token", "cache_as": "transfer_amount"}),
            )
            .await;
            env.ok("context_address", json!({"index": index, "cache_as": "recipient_address"})).await;
        }
    };
    let mut f = Failures::default();
    prepare(format!("send 0.001 ETH to {}", trap.to_checksum(None)), 1).await;
    let (eth, thief, nonce) =
        (env.balance(NATIVE).await, env.devnet.balance_of(NATIVE, THIEF).await.unwrap(), env.nonce().await);
    let sent = env.call("transfer", params.clone()).await;
    f.check(code(&sent) == "simulation_failed", format!("the exact simulation sees the ether forwarded: {sent:?}"));
    f.check(env.devnet.balance_of(NATIVE, THIEF).await.unwrap() == thief, "the thief received nothing");
    f.check((env.balance(NATIVE).await, env.nonce().await) == (eth, nonce), "nothing left the wallet");
    // The honest control: the same amount to an account that keeps it.
    prepare(format!("send 0.001 ETH to {}", ALICE.to_checksum(None)), 2).await;
    let alice = env.devnet.balance_of(NATIVE, ALICE).await.unwrap();
    let sent = env.call("transfer", params).await;
    f.check(sent.as_ref().is_ok_and(|v| v["status"] == "confirmed"), format!("the honest transfer goes out: {sent:?}"));
    f.check(env.devnet.balance_of(NATIVE, ALICE).await.unwrap() - alice == U256::from(FINNEY), "alice got 0.001 ETH");
    f.finish();
}

// ---------------------------------------------------------------------------------------------------------------
// 3: one authorization, many actions.
// ---------------------------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread")]
async fn one_swap_request_moves_value_once_and_each_new_request_once_more() {
    let env = Env::start().await;
    let mut f = Failures::default();
    let nonce = env.nonce().await;
    // One message, then four quote + web3_tx pairs with no amount written again (chat, replay, the console, MCP).
    env.ctx.context_bank.scan_input("swap 0.001 ETH for USDC");
    let mut outcomes = Vec::new();
    for _ in 0..4 {
        env.quote("", "ETH", "USDC", "0.001").await;
        outcomes.push(code(&env.call("web3_tx", tx()).await));
    }
    f.check(
        outcomes == ["ok", "confirmation_required", "confirmation_required", "confirmation_required"],
        format!("{outcomes:?}"),
    );
    f.check(
        env.nonce().await == nonce + 1,
        format!("exactly one swap was mined (nonce {nonce} → {})", env.nonce().await),
    );
    // The honest control: a new message for each swap, and each swaps by itself.
    let nonce = env.nonce().await;
    for i in 0..2 {
        env.quote(&format!("swap 0.001 ETH for USDC, round {i}"), "ETH", "USDC", "0.001").await;
        let sent = env.call("web3_tx", tx()).await;
        f.check(sent.as_ref().is_ok_and(|v| v["status"] == "confirmed"), format!("round {i}: {sent:?}"));
    }
    f.check(env.nonce().await == nonce + 2, "one swap per message");
    f.finish();
}

#[tokio::test(flavor = "multi_thread")]
async fn two_identical_calls_at_once_spend_the_authorization_once_and_keep_it_spent() {
    let env = Env::start().await;
    env.quote("swap 0.001 ETH for USDC", "ETH", "USDC", "0.001").await;
    let nonce = env.nonce().await;
    // The model sends the same quote twice at once: one transaction, and the authorization stays spent.
    let (a, b) = tokio::join!(env.call("web3_tx", tx()), env.call("web3_tx", tx()));
    let hashes: Vec<String> = [&a, &b]
        .iter()
        .filter_map(|r| r.as_ref().ok())
        .map(|v| v["hash"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert!(!hashes.is_empty() && hashes.iter().all(|h| *h == hashes[0]), "one transaction: {a:?} {b:?}");
    // A fresh quote for the same amount, no new message: it asks.
    env.quote("", "ETH", "USDC", "0.001").await;
    let again = env.call("web3_tx", tx()).await;
    assert_eq!(code(&again), "confirmation_required", "{again:?}");
    assert_eq!(env.nonce().await, nonce + 1, "one swap mined");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_session_restored_from_before_the_spend_cannot_spend_it_again() {
    let env = Env::start().await;
    env.quote("swap 0.001 ETH for USDC", "ETH", "USDC", "0.001").await;
    // What another instance (or a crash that lost the session's last save) would hold: the authorization unspent.
    let before = env.ctx.state();
    assert_eq!(env.ok("web3_tx", tx()).await["status"], "confirmed");
    let nonce = env.nonce().await;
    let stale = env.services.restore_session("session-1", before, 1);
    let sell_amount = stale.registers.get("sell_amount").unwrap();
    let id = sell_amount.provenance.authorization.clone().unwrap();
    assert!(stale.context_bank.authorization_by_id(&id).unwrap().spent_by.is_none(), "the stale copy knows nothing");
    // A fresh quote in the stale session: the journal knows the authorization moved value already.
    let quote = env
        .registry
        .call("x402_fetch", json!({"preset": "swap_quote", "network": "base", "cache_as": "swap_quote"}), &stale)
        .await;
    assert!(quote.is_ok(), "{quote:?}");
    let sent = env.registry.call("web3_tx", tx(), &stale).await;
    assert_eq!(code(&sent), "confirmation_required", "{sent:?}");
    assert!(format!("{sent:?}").contains("already moved value"), "{sent:?}");
    assert_eq!(env.nonce().await, nonce, "nothing more was sent");
    // The user approves this second swap: it is sent once, on that approval (before: the approval was used up by the
    // same refusal and the question came back without an id, whatever the user answered).
    let id = sent.err().and_then(|e| e.details).and_then(|d| d["confirmation_id"].as_str().map(str::to_owned));
    let decisions = env.services.user_decisions();
    decisions
        .decide(
            &stale.confirmations,
            holdfast_core::UserChannel::Replay,
            &id.expect("a question"),
            UserDecision::Approve,
        )
        .unwrap();
    let again = env.registry.call("web3_tx", tx(), &stale).await;
    assert!(again.as_ref().is_ok_and(|v| v["status"] == "confirmed"), "{again:?}");
    assert_eq!(env.nonce().await, nonce + 1, "sent once, on the user's approval");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_authorization_spent_survives_a_restart() {
    let env = Env::start().await;
    env.quote("swap 0.001 ETH for USDC", "ETH", "USDC", "0.001").await;
    assert_eq!(env.ok("web3_tx", tx()).await["status"], "confirmed");
    let saved = env.ctx.state();
    // Another process restores the session: the authorization is spent there too.
    let restored = env.services.restore_session("session-1", saved, 1);
    let sell_amount = restored.registers.get("sell_amount").unwrap();
    let id = sell_amount.provenance.authorization.clone().unwrap();
    assert!(restored.context_bank.authorization_by_id(&id).unwrap().spent_by.is_some());
}

// ---------------------------------------------------------------------------------------------------------------
// 4: a node that lies about a broadcast.
// ---------------------------------------------------------------------------------------------------------------

/// A devnet reached only through a proxy (the first RPC URL), with `tweaks`.
pub(crate) async fn behind_proxy(devnet: TestDevnet, mut tweaks: Tweaks, also_direct: bool) -> (Env, RpcProxy) {
    let proxy = RpcProxy::start(&devnet.rpc_url).await;
    let urls = if also_direct {
        format!("rpc_urls = [\"{}\", \"{}\"]", proxy.url, devnet.rpc_url)
    } else {
        format!("rpc_urls = [\"{}\"]", proxy.url)
    };
    tweaks.toml_replace.push((format!("rpc_urls = [\"{}\"]", devnet.rpc_url), urls));
    (Env::apply(devnet, tweaks), proxy)
}

/// The node forwards every broadcast, then answers "nonce too low" and denies knowing the transaction by hash.
fn lie_about_broadcasts(also_hide_blocks: bool) -> crate::common::rpc_proxy::Rewrite {
    Arc::new(move |req: &Value, resp: &mut Value| match req["method"].as_str() {
        Some("eth_sendRawTransaction") => {
            *resp = json!({"jsonrpc": "2.0", "id": req["id"], "error": {"code": -32000, "message": "nonce too low"}});
        }
        Some("eth_getTransactionByHash") => resp["result"] = Value::Null,
        Some("eth_getTransactionReceipt") if also_hide_blocks => resp["result"] = Value::Null,
        // Full blocks: the transactions a block holds.
        Some("eth_getBlockByNumber") if also_hide_blocks && req["params"][1] == true => resp["result"] = Value::Null,
        _ => {}
    })
}

#[tokio::test(flavor = "multi_thread")]
async fn a_node_lying_about_broadcasts_cannot_make_the_caps_count_less_than_was_mined() {
    let tweaks = Tweaks {
        toml_replace: vec![("native_per_day = \"5\"".into(), "native_per_day = \"0.0025\"".into())],
        ..Default::default()
    };
    let devnet = TestDevnet::start().await.expect("devnet");
    let (env, proxy) = behind_proxy(devnet, tweaks, false).await;
    proxy.set_rewrite(Some(lie_about_broadcasts(false)));
    let nonce = env.nonce().await;
    let mut outcomes = Vec::new();
    for i in 0..4 {
        env.quote(&format!("swap 0.001 ETH for USDC (request {i})"), "ETH", "USDC", "0.001").await;
        let sent = env.call("web3_tx", tx()).await;
        outcomes.push(match &sent {
            Ok(v) => v["status"].as_str().unwrap_or_default().to_owned(),
            Err(e) => e.code.as_str().to_owned(),
        });
    }
    let mut f = Failures::default();
    let mined = env.nonce().await - nonce;
    f.check(mined == 2, format!("two swaps of 0.001 ETH fit 0.0025 a day: {mined} mined ({outcomes:?})"));
    f.check(
        outcomes[..2].iter().all(|o| o != "transaction_failed"),
        format!("a mined swap is never called failed: {outcomes:?}"),
    );
    f.check(
        outcomes[2..].iter().all(|o| o == "policy_denied"),
        format!("the third and fourth exceed the cap: {outcomes:?}"),
    );
    let swaps = env.web3.journal().list(None, Some(EntryKind::Swap), 10).await.unwrap();
    let live = swaps.iter().filter(|e| e.status.is_live()).count();
    f.check(
        live == 2,
        format!("the journal counts both mined swaps: {:?}", swaps.iter().map(|e| e.status).collect::<Vec<_>>()),
    );
    f.finish();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_node_that_hides_a_broadcast_entirely_leaves_it_unknown_and_nothing_new_is_signed() {
    let devnet = TestDevnet::start().await.expect("devnet");
    let (env, proxy) = behind_proxy(devnet, Tweaks::default(), false).await;
    proxy.set_rewrite(Some(lie_about_broadcasts(true)));
    let nonce = env.nonce().await;
    env.quote("swap 0.001 ETH for USDC", "ETH", "USDC", "0.001").await;
    let first = env.call("web3_tx", tx()).await;
    env.quote("swap 0.001 ETH for USDC again", "ETH", "USDC", "0.001").await;
    let second = env.call("web3_tx", tx()).await;
    let mut f = Failures::default();
    f.check(
        first.as_ref().is_ok_and(|v| v["status"] == "unknown"),
        format!("the first is unknown, not failed: {first:?}"),
    );
    f.check(code(&second) == "outcome_unknown", format!("nothing new is signed meanwhile: {second:?}"));
    f.check(env.nonce().await == nonce + 1, "one swap mined, and the journal still counts it");
    let swaps = env.web3.journal().list(None, Some(EntryKind::Swap), 10).await.unwrap();
    f.check(swaps.iter().filter(|e| e.status.is_live()).count() == 1, format!("{swaps:?}"));
    // Once the node tells the truth again, reconciliation settles it as mined.
    proxy.set_rewrite(None);
    env.web3.reconcile().await.unwrap();
    let swaps = env.web3.journal().list(None, Some(EntryKind::Swap), 10).await.unwrap();
    f.check(swaps.iter().any(|e| e.status == EntryStatus::Confirmed), format!("{swaps:?}"));
    f.finish();
}

// ---------------------------------------------------------------------------------------------------------------
// 5: a price from the same node.
// ---------------------------------------------------------------------------------------------------------------

/// `latestRoundData()`'s selector.
const LATEST_ROUND_DATA: &str = "0xfeaf968c";
/// `decimals()`'s selector.
const DECIMALS: &str = "0x313ce567";

fn call_to(req: &Value, feed: Address, selector: &str) -> bool {
    let call = &req["params"][0];
    let to = call["to"].as_str().and_then(|t| t.parse::<Address>().ok());
    let data = call["input"].as_str().or_else(|| call["data"].as_str()).unwrap_or_default();
    req["method"] == "eth_call" && to == Some(feed) && data.starts_with(selector)
}

/// The node answers the ETH/USD feed's price times three.
fn triple_the_eth_price() -> crate::common::rpc_proxy::Rewrite {
    Arc::new(|req: &Value, resp: &mut Value| {
        if call_to(req, holdfast_devnet::contracts::ETH_USD_FEED, LATEST_ROUND_DATA)
            && let Some(hex) = resp["result"].as_str()
        {
            let mut bytes: Vec<u8> = alloy::primitives::hex::decode(hex).unwrap();
            let answer = U256::from_be_slice(&bytes[32..64]) * U256::from(3u8);
            bytes[32..64].copy_from_slice(&answer.to_be_bytes::<32>());
            resp["result"] = json!(alloy::primitives::hex::encode_prefixed(bytes));
        }
    })
}

/// A quote paying half the fair output, self-consistent (its calldata's minimum halved too).
fn half_the_output(q: &mut Value) {
    let buy = u256(&q["buyAmount"]) / U256::from(2);
    let min = u256(&q["minBuyAmount"]) / U256::from(2);
    q["buyAmount"] = json!(buy.to_string());
    q["minBuyAmount"] = json!(min.to_string());
    recalldata(q, |c| c.minBuyAmount = min);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_price_one_node_fakes_disagrees_with_the_other_and_the_swap_waits_for_the_user() {
    let devnet = TestDevnet::start().await.expect("devnet");
    let (url, tamper) = hostile_quoter(&devnet).await;
    let (env, proxy) = behind_proxy(devnet, Tweaks { quoter_url: Some(url), ..Default::default() }, true).await;
    proxy.set_rewrite(Some(triple_the_eth_price()));
    *tamper.lock() = Box::new(half_the_output);
    env.quote("swap 10 USDC for ETH", "USDC", "ETH", "10").await;
    env.ok("token_approve", json!({"for_quote": "swap_quote"})).await;
    let (usdc, nonce) = (env.balance(USDC).await, env.nonce().await);
    let mut f = Failures::default();
    let sent = env.call("web3_tx", tx()).await;
    f.check(code(&sent) == "confirmation_required", format!("no independent price: the user decides ({sent:?})"));
    if let Err(e) = &sent {
        let reason = e.details.as_ref().map(|d| d["reason"].to_string()).unwrap_or_default();
        f.check(reason.contains("disagree"), format!("the confirmation says the nodes disagree: {reason}"));
    }
    f.check((env.balance(USDC).await, env.nonce().await) == (usdc, nonce), "nothing was swapped");
    // The honest control: both nodes agree and the fair quote swaps by itself.
    proxy.set_rewrite(None);
    *tamper.lock() = Box::new(|_| {});
    env.quote("swap 10 USDC for ETH, fairly", "USDC", "ETH", "10").await;
    env.ok("token_approve", json!({"for_quote": "swap_quote"})).await;
    let sent = env.call("web3_tx", tx()).await;
    f.check(sent.as_ref().is_ok_and(|v| v["status"] == "confirmed"), format!("the fair swap goes out: {sent:?}"));
    f.finish();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_node_answering_other_feed_decimals_fails_the_start_and_cannot_rescale_the_price() {
    let devnet = TestDevnet::start().await.expect("devnet");
    let (url, tamper) = hostile_quoter(&devnet).await;
    let (env, proxy) = behind_proxy(devnet, Tweaks { quoter_url: Some(url), ..Default::default() }, false).await;
    assert!(env.web3.verify_price_feeds().await.is_ok(), "the pins match an honest node");
    proxy.set_rewrite(Some(Arc::new(|req: &Value, resp: &mut Value| {
        if call_to(req, holdfast_devnet::contracts::ETH_USD_FEED, DECIMALS) {
            resp["result"] = json!(alloy::primitives::hex::encode_prefixed(U256::from(9u8).to_be_bytes::<32>()));
        }
    })));
    let err = env.web3.verify_price_feeds().await.unwrap_err();
    assert_eq!(err.code, ErrorCode::ConfigInvalid, "{err:?}");
    assert!(err.message.contains("decimals() answers 9, the configuration pins 8"), "{}", err.message);
    // Were it running, the pinned decimals still price the swap: half the fair output is refused.
    *tamper.lock() = Box::new(half_the_output);
    env.quote("swap 10 USDC for ETH", "USDC", "ETH", "10").await;
    env.ok("token_approve", json!({"for_quote": "swap_quote"})).await;
    let usdc = env.balance(USDC).await;
    let sent = env.call("web3_tx", tx()).await;
    assert_eq!(code(&sent), "quote_rejected", "{sent:?}");
    assert_eq!(env.balance(USDC).await, usdc, "nothing was swapped");
}

/// "send 5 USDC to ALICE" ready to transfer on `env`: the wallet's USDC and its nonce before.
pub(crate) async fn five_usdc_to_alice(env: &Env) -> (U256, u64) {
    let user = "send 5 USDC to 0x90F79bf6EB2c4f870365E785982E1f101E93b906 on base";
    crate::transfer::prepare(env, user, "USDC", "5").await;
    env.ok("context_address", json!({"index": null, "cache_as": "recipient_address"})).await;
    (env.balance(USDC).await, env.nonce().await)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_revert_one_node_fakes_cannot_release_the_cap_while_another_shows_success() {
    let devnet = TestDevnet::start().await.expect("devnet");
    let (env, proxy) = behind_proxy(devnet, Tweaks::default(), true).await;
    // The first node forwards everything and answers every receipt as reverted (status 0): were it believed, the
    // transfer's 5 USDC would leave the day's cap while they left the wallet.
    proxy.set_rewrite(Some(Arc::new(|req: &Value, resp: &mut Value| {
        if req["method"] == "eth_getTransactionReceipt" && resp["result"].is_object() {
            resp["result"]["status"] = json!("0x0");
        }
    })));
    let (mine, nonce) = five_usdc_to_alice(&env).await;
    let out = env.ok("transfer", crate::transfer::to_register()).await;
    // Before: "reverted", and the entry released from the cap. The nodes disagree, so it stays pending (live).
    assert_eq!(out["status"], "pending", "{out}");
    assert_eq!((env.balance(USDC).await, env.nonce().await), (mine - U256::from(5_000_000u64), nonce + 1));
    env.web3.reconcile().await.unwrap();
    let entries = env.web3.journal().for_session("session-1").await.unwrap();
    let transfer = entries.iter().find(|e| e.kind == EntryKind::Transfer).unwrap();
    assert_eq!(transfer.status, EntryStatus::Pending, "still counted against the cap, as it was mined");
    // Once the first node tells the truth, reconciliation records it.
    proxy.set_rewrite(None);
    env.web3.reconcile().await.unwrap();
    let entries = env.web3.journal().for_session("session-1").await.unwrap();
    assert_eq!(entries.iter().find(|e| e.kind == EntryKind::Transfer).unwrap().status, EntryStatus::Confirmed);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_node_that_errs_while_the_receipt_is_awaited_does_not_turn_a_sent_transfer_into_an_error() {
    let devnet = TestDevnet::start().await.expect("devnet");
    let (env, proxy) = behind_proxy(devnet, Tweaks::default(), false).await;
    // The node takes the transaction, then fails the first three receipt requests (a gateway's 5xx-like error).
    let failed = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = Arc::clone(&failed);
    proxy.set_rewrite(Some(Arc::new(move |req: &Value, resp: &mut Value| {
        if req["method"] == "eth_getTransactionReceipt" && counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst) < 3
        {
            *resp = json!({"jsonrpc": "2.0", "id": req["id"], "error": {"code": -32603, "message": "internal error"}});
        }
    })));
    let (mine, nonce) = five_usdc_to_alice(&env).await;
    // Before: the node's error, for a transfer that was sent and mined.
    let out = env.ok("transfer", crate::transfer::to_register()).await;
    assert_eq!(out["status"], "confirmed", "{out}");
    assert!(failed.load(std::sync::atomic::Ordering::SeqCst) > 3, "the node erred, then answered");
    assert_eq!((env.balance(USDC).await, env.nonce().await), (mine - U256::from(5_000_000u64), nonce + 1));
}

#[tokio::test(flavor = "multi_thread")]
async fn another_transaction_one_node_makes_up_for_the_nonce_releases_nothing_and_sends_nothing_twice() {
    let devnet = TestDevnet::start().await.expect("devnet");
    let (env, proxy) = behind_proxy(devnet, Tweaks::default(), true).await;
    // The first node forwards the transfer, answers "nonce too low", hides it by hash, and shows the block that mined
    // it holding a transaction with another hash: "your nonce was used by another transaction, yours was never sent".
    proxy.set_rewrite(Some(Arc::new(|req: &Value, resp: &mut Value| match req["method"].as_str() {
        Some("eth_sendRawTransaction") => {
            *resp = json!({"jsonrpc": "2.0", "id": req["id"], "error": {"code": -32000, "message": "nonce too low"}});
        }
        Some("eth_getTransactionByHash") => resp["result"] = Value::Null,
        Some("eth_getBlockByNumber") if req["params"][1] == true => {
            for tx in resp["result"]["transactions"].as_array_mut().into_iter().flatten() {
                tx["hash"] = json!(format!("0x{}", "11".repeat(32)));
            }
        }
        _ => {}
    })));
    let (mine, nonce) = five_usdc_to_alice(&env).await;
    // Before: `transaction_failed` ("mined by 0x1111…"), the entry `failed`, its 5 USDC released from the cap and
    // the user's authorization given back, for a transfer that was mined.
    let out = env.ok("transfer", crate::transfer::to_register()).await;
    assert_eq!(out["status"], "unknown", "{out}");
    assert_eq!((env.balance(USDC).await, env.nonce().await), (mine - U256::from(5_000_000u64), nonce + 1));
    let transfer = || async {
        let entries = env.web3.journal().for_session("session-1").await.unwrap();
        entries.into_iter().find(|e| e.kind == EntryKind::Transfer).unwrap()
    };
    // (The background reconciliation may have found its receipt already.)
    let status = transfer().await.status;
    assert!(
        matches!(status, EntryStatus::Unknown | EntryStatus::Confirmed),
        "still counted against the cap: {status:?}"
    );
    // The same request again sends nothing; reconciliation finds the receipt and records it.
    env.call("transfer", crate::transfer::to_register()).await.ok();
    env.web3.reconcile().await.unwrap();
    assert_eq!(transfer().await.status, EntryStatus::Confirmed);
    assert_eq!((env.balance(USDC).await, env.nonce().await), (mine - U256::from(5_000_000u64), nonce + 1), "once");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_node_that_shows_a_new_allowance_each_pass_gets_a_bounded_number_of_resets() {
    let tweaks = Tweaks {
        toml_replace: vec![("auto_per_tx = \"50\"".into(), "auto_per_tx = \"1\"".into())],
        ..Default::default()
    };
    let (env, proxy) = behind_proxy(TestDevnet::start().await.expect("devnet"), tweaks, false).await;
    // An approval whose swap the user denied, abandoned: the sweep resets it.
    env.quote("swap 10 USDC for ETH", "USDC", "ETH", "10").await;
    let err = env.err("token_approve", json!({"for_quote": "swap_quote"})).await;
    env.decide(err.details.unwrap()["confirmation_id"].as_str().unwrap(), UserDecision::Approve).unwrap();
    env.ok("token_approve", json!({"for_quote": "swap_quote"})).await;
    let err = env.err("web3_tx", tx()).await;
    env.decide(err.details.unwrap()["confirmation_id"].as_str().unwrap(), UserDecision::Deny).unwrap();
    env.web3.set_abandoned_after(std::time::Duration::ZERO);
    // From now on the node answers every `allowance(owner, spender)` with a new non-zero amount.
    let shown = Arc::new(std::sync::atomic::AtomicU64::new(1));
    proxy.set_rewrite(Some(Arc::new(move |req: &Value, resp: &mut Value| {
        let data = req["params"][0]["input"].as_str().or(req["params"][0]["data"].as_str()).unwrap_or_default();
        if req["method"] == "eth_call" && data.starts_with("0xdd62ed3e") {
            let n = shown.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            resp["result"] = json!(format!("0x{n:064x}"));
        }
    })));
    let nonce = env.nonce().await;
    let mut resets = 0;
    for _ in 0..10 {
        resets += env.web3.reset_abandoned_allowances().await.len();
    }
    // Before: a reset sent on every pass, each paid for.
    let cap = holdfast_web3::kernel::allowances::RESETS_PER_DAY;
    assert!(resets >= 1 && resets <= cap, "{resets} resets sent");
    assert!(env.nonce().await - nonce <= u64::try_from(cap).unwrap(), "at most {cap} transactions");
}

/// Behind a proxy with an honest second node: a transaction journaled on this devnet's chain and not yet sent (as
/// after a crash between the two), with the wallet's nonce before it and its journal id.
async fn journaled_not_sent() -> (Env, RpcProxy, u64, holdfast_web3::chain::SignedTx, String) {
    let (env, proxy) = behind_proxy(TestDevnet::start().await.expect("devnet"), Tweaks::default(), true).await;
    let genesis = env.devnet.provider().get_block_by_number(0.into()).await.unwrap().unwrap().header.hash;
    let nonce = env.nonce().await;
    let (signed, id) = crate::restart::signed_for(&env, genesis, "base").await;
    (env, proxy, nonce, signed, id)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_chain_reset_one_node_makes_up_releases_nothing_and_the_send_goes_on() {
    let (env, proxy, nonce, signed, id) = journaled_not_sent().await;
    // The first node shows another genesis block: "the devnet was reset, that transaction's chain is gone".
    proxy.set_rewrite(Some(Arc::new(|req: &Value, resp: &mut Value| {
        if req["method"] == "eth_getBlockByNumber" && req["params"][0] == "0x0" && resp["result"].is_object() {
            resp["result"]["hash"] = json!(format!("0x{}", "22".repeat(32)));
        }
    })));
    // Before: `chain_reset`, its amount released and its bytes never sent. The honest node still shows the chain.
    let report = env.web3.reconcile().await.unwrap();
    assert!(report.iter().all(|r| r.status != EntryStatus::ChainReset), "{report:?}");
    let chain = env.web3.chain(env.ctx.config.networks.resolve("base").unwrap()).unwrap();
    assert!(chain.wait_receipt(signed.hash, std::time::Duration::from_secs(10)).await.is_some(), "sent, and mined");
    env.web3.reconcile().await.unwrap();
    assert_eq!(env.web3.journal().get(&id).await.unwrap().unwrap().status, EntryStatus::Confirmed);
    assert_eq!(env.nonce().await, nonce + 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_send_one_node_says_it_refused_and_never_saw_keeps_its_amount_while_another_node_has_it() {
    let (env, proxy, nonce, signed, id) = journaled_not_sent().await;
    // Nothing is mined for now; the first node takes the transaction, answers an error, denies knowing it and shows
    // the wallet's counts (mined and pending) as if the nonce were unused.
    env.devnet.provider().anvil_set_auto_mine(false).await.unwrap();
    proxy.set_rewrite(Some(Arc::new(move |req: &Value, resp: &mut Value| match req["method"].as_str() {
        Some("eth_sendRawTransaction") => {
            *resp = json!({"jsonrpc": "2.0", "id": req["id"], "error": {"code": -32000, "message": "nonce too low"}});
        }
        Some("eth_getTransactionByHash") => resp["result"] = Value::Null,
        Some("eth_getTransactionCount") => resp["result"] = json!(format!("0x{nonce:x}")),
        _ => {}
    })));
    // Before: `failed` ("refused again, and the chain shows its nonce unused"), its amount released, while the
    // transaction waits in the other node's pool.
    env.web3.reconcile().await.unwrap();
    let status = env.web3.journal().get(&id).await.unwrap().unwrap().status;
    assert!(status.is_live(), "{status:?}");
    // The chain goes on: it is mined, once, and recorded.
    proxy.set_rewrite(None);
    env.devnet.provider().anvil_set_auto_mine(true).await.unwrap();
    env.devnet.provider().anvil_mine(Some(1), None).await.unwrap();
    let chain = env.web3.chain(env.ctx.config.networks.resolve("base").unwrap()).unwrap();
    assert!(chain.wait_receipt(signed.hash, std::time::Duration::from_secs(10)).await.is_some());
    env.web3.reconcile().await.unwrap();
    assert_eq!(env.web3.journal().get(&id).await.unwrap().unwrap().status, EntryStatus::Confirmed);
    assert_eq!(env.nonce().await, nonce + 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_second_node_that_is_down_stops_nothing_that_releases_nothing() {
    let devnet = TestDevnet::start().await.expect("devnet");
    // The first node honest, the second answering every request with an error.
    let proxy = RpcProxy::start(&devnet.rpc_url).await;
    proxy.set_rewrite(Some(Arc::new(|req: &Value, resp: &mut Value| {
        *resp = json!({"jsonrpc": "2.0", "id": req["id"], "error": {"code": -32603, "message": "internal error"}});
    })));
    let both = format!("rpc_urls = [\"{}\", \"{}\"]", devnet.rpc_url, proxy.url);
    let tweaks =
        Tweaks { toml_replace: vec![(format!("rpc_urls = [\"{}\"]", devnet.rpc_url), both)], ..Default::default() };
    let env = Env::apply(devnet, tweaks);
    let genesis = env.devnet.provider().get_block_by_number(0.into()).await.unwrap().unwrap().header.hash;
    let nonce = env.nonce().await;
    // A transaction journaled and not yet sent: reconciliation sends its identical bytes, which needs no proof.
    let (signed, id) = crate::restart::signed_for(&env, genesis, "base").await;
    env.web3.reconcile().await.unwrap();
    let chain = env.web3.chain(env.ctx.config.networks.resolve("base").unwrap()).unwrap();
    assert!(chain.wait_receipt(signed.hash, std::time::Duration::from_secs(10)).await.is_some(), "sent and mined");
    env.web3.reconcile().await.unwrap();
    assert_eq!(env.web3.journal().get(&id).await.unwrap().unwrap().status, EntryStatus::Confirmed);
    // And a new transfer goes through: a success is the first node's word.
    let (mine, _) = five_usdc_to_alice(&env).await;
    let out = env.ok("transfer", crate::transfer::to_register()).await;
    assert_eq!(out["status"], "confirmed", "{out}");
    assert_eq!((env.balance(USDC).await, env.nonce().await), (mine - U256::from(5_000_000u64), nonce + 2));
}

//! The attacker's tests for the value-moving kernel (safety model, rules 15 and 16), on a real devnet.
//!
//! Each test plays one adversary — a quoter that lies about the price, an RPC node that loses the answer to a
//! broadcast, concurrent sessions racing for the daily cap, a price server that answers with a swap quote, a
//! configuration that keeps a key but no journal — and asserts what happened ON CHAIN (nonce, balances,
//! transactions read back by hash) and ON DISK (journal entries), not only the tool's answer.
//!
//! Tests collect every broken property before failing, so one run shows all of them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use crate::common::rpc_proxy::{Fault, RpcProxy};
use crate::common::server::{Call, Ctx, X402Server, script};
use crate::common::{Env, Failures, Tweaks, hostile_quoter, recalldata, u256};
use alloy::network::TransactionResponse as _;
use alloy::primitives::{Address, B256, U256, address};
use alloy::providers::Provider;
use holdfast_core::{ToolContext, ToolError};
use holdfast_devnet::{NATIVE, PAYEE, QuoteRequest, TestDevnet, USDC, VENUE, build_quote};
use holdfast_web3::JournalEntry;
use serde_json::{Value, json};
use std::collections::BTreeSet;

const ATTACKER: Address = address!("0x000000000000000000000000000000000000dEaD");
const FINNEY: u64 = 1_000_000_000_000_000; // 0.001 ETH in wei

fn tx() -> Value {
    json!({"from_register": "swap_quote", "network": "base"})
}

fn code(r: &Result<Value, ToolError>) -> String {
    match r {
        Ok(_) => "ok".into(),
        Err(e) => e.code.as_str().to_owned(),
    }
}

fn kind(e: &JournalEntry) -> String {
    serde_json::to_value(e.kind).unwrap().as_str().unwrap_or_default().to_owned()
}

/// The swap half of the seed-001 flow in any session, then the quote (like `Env::quote`).
async fn quote_in(env: &Env, ctx: &ToolContext, sell: &str, buy: &str, amount: &str) -> Value {
    ctx.context_bank.scan_input(&format!("swap {amount} {sell} for {buy}"));
    let steps = [
        (
            "local_burner_wallet",
            json!({"action": "address", "token_register": null, "network": null, "cache_as": "wallet_address"}),
        ),
        ("token_lookup", json!({"symbol": sell, "network": "base", "cache_as": "sell_token"})),
        ("token_lookup", json!({"symbol": buy, "network": "base", "cache_as": "buy_token"})),
        ("to_raw_amount", json!({"amount": amount, "token_register": "sell_token", "cache_as": "sell_amount"})),
    ];
    for (tool, params) in steps {
        env.registry.call(tool, params.clone(), ctx).await.unwrap_or_else(|e| panic!("{tool} {params}: {e:?}"));
    }
    env.registry
        .call("x402_fetch", json!({"preset": "swap_quote", "network": "base", "cache_as": "swap_quote"}), ctx)
        .await
        .unwrap_or_else(|e| json!({"error": e}))
}

/// What the wallet holds, and its mined nonce.
#[derive(Debug, PartialEq, Eq)]
struct Holdings {
    nonce: u64,
    eth: U256,
    usdc: U256,
}

async fn holdings(env: &Env) -> Holdings {
    Holdings { nonce: env.nonce().await, eth: env.balance(NATIVE).await, usdc: env.balance(USDC).await }
}

/// The journal's swap entries of `session`, checked for exactly one `refused` entry that signed nothing.
async fn check_refused_swap(f: &mut Failures, env: &Env, session: &str, price_check: bool) {
    let journal = env.web3.journal().for_session(session).await.unwrap();
    let swaps: Vec<&JournalEntry> = journal.iter().filter(|e| kind(e) == "swap").collect();
    let refused: Vec<&&JournalEntry> = swaps.iter().filter(|e| e.status.as_str() == "refused").collect();
    f.check(
        refused.len() == 1,
        format!(
            "journal: one swap entry with status `refused` (got {} swap entries: {:?})",
            swaps.len(),
            swaps.iter().map(|e| (e.status.as_str(), e.error.clone())).collect::<Vec<_>>()
        ),
    );
    f.check(
        swaps.iter().all(|e| e.tx_hash.is_none() && e.raw_tx().is_none()),
        "journal: nothing was signed (a swap entry carries a hash or signed bytes)",
    );
    let Some(entry) = refused.first() else { return };
    f.check(
        entry.error.as_deref().is_some_and(|e| !e.trim().is_empty()),
        format!("journal: the refused entry's `error` says why (got {:?})", entry.error),
    );
    if price_check {
        let pc = &entry.summary["price_check"];
        for key in ["expected", "promised", "simulated", "deviation_bps"] {
            f.check(!pc[key].is_null(), format!("journal: summary.price_check.{key} is recorded (got {pc})"));
        }
    }
}

fn deviation_bps(v: &Value) -> Option<f64> {
    v.as_f64().or_else(|| v.as_str().and_then(|s| s.parse().ok()))
}

// ---------------------------------------------------------------------------------------------------------------
// 1–3: the quoter lies; the independent price and the simulation catch it, and the refusal is journaled.
// ---------------------------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread")]
async fn a_quote_promising_one_wei_is_rejected_against_the_price_feed_and_journaled() {
    let (env, tamper) = Env::with_hostile_quoter(Tweaks::default()).await;
    // Honest calldata (its own minimum is the honest one); only the promised minimum is absurd.
    *tamper.lock() = Box::new(|q| q["minBuyAmount"] = json!("1"));
    let out = env.quote("swap 0.001 ETH for USDC", "ETH", "USDC", "0.001").await;
    assert_eq!(out["origin"], "tool", "the quote's fields pass the write-time checks; web3_tx must stop it: {out}");
    let before = holdings(&env).await;

    let sent = env.call("web3_tx", tx()).await;
    let mut f = Failures::default();
    f.check(code(&sent) == "quote_rejected", format!("web3_tx → quote_rejected (got {sent:?})"));
    f.check(holdings(&env).await == before, format!("nothing moved on chain: {before:?} → {:?}", holdings(&env).await));
    check_refused_swap(&mut f, &env, "session-1", true).await;
    f.finish();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_quote_priced_fifty_percent_below_the_feed_is_rejected_even_with_matching_calldata() {
    let (env, tamper) = Env::with_hostile_quoter(Tweaks::default()).await;
    *tamper.lock() = Box::new(|q| {
        let buy = u256(&q["buyAmount"]) / U256::from(2);
        let min = u256(&q["minBuyAmount"]) / U256::from(2);
        q["buyAmount"] = json!(buy.to_string());
        q["minBuyAmount"] = json!(min.to_string());
        recalldata(q, |c| c.minBuyAmount = min);
    });
    let out = env.quote("swap 0.001 ETH for USDC", "ETH", "USDC", "0.001").await;
    assert_eq!(out["origin"], "tool", "a self-consistent quote passes the write-time checks: {out}");
    let before = holdings(&env).await;

    let sent = env.call("web3_tx", tx()).await;
    let mut f = Failures::default();
    f.check(code(&sent) == "quote_rejected", format!("web3_tx → quote_rejected (got {sent:?})"));
    f.check(holdings(&env).await == before, format!("nothing moved on chain: {before:?} → {:?}", holdings(&env).await));
    check_refused_swap(&mut f, &env, "session-1", true).await;
    let journal = env.web3.journal().for_session("session-1").await.unwrap();
    if let Some(e) = journal.iter().find(|e| e.status.as_str() == "refused") {
        let bps = deviation_bps(&e.summary["price_check"]["deviation_bps"]);
        f.check(
            bps.is_some_and(|b| b.abs() >= 4_000.0),
            format!("journal: a 50% discount shows as ~5000 bps deviation (got {:?})", e.summary["price_check"]),
        );
    }
    f.finish();
}

#[tokio::test(flavor = "multi_thread")]
async fn calldata_paying_another_recipient_is_refused_by_its_decoding_and_the_refusal_is_journaled() {
    let (env, tamper) = Env::with_hostile_quoter(Tweaks::default()).await;
    *tamper.lock() = Box::new(|q| recalldata(q, |c| c.recipient = ATTACKER));
    let out = env.quote("swap 0.001 ETH for USDC", "ETH", "USDC", "0.001").await;
    assert_eq!(out["origin"], "tool", "honest fields, so the quote is stored: {out}");
    let before = holdings(&env).await;

    let sent = env.call("web3_tx", tx()).await;
    let mut f = Failures::default();
    f.check(code(&sent) == "quote_rejected", format!("web3_tx → quote_rejected (got {sent:?})"));
    f.check(holdings(&env).await == before, format!("nothing moved on chain: {before:?} → {:?}", holdings(&env).await));
    f.check(env.devnet.balance_of(USDC, ATTACKER).await.unwrap().is_zero(), "the attacker received nothing");
    check_refused_swap(&mut f, &env, "session-1", false).await;
    f.finish();
}

/// Bytes a quoter appends to honest calldata: the venue ignores them, the wallet would pay their gas on every swap.
#[tokio::test(flavor = "multi_thread")]
async fn calldata_with_bytes_after_its_encoding_is_refused() {
    let (env, tamper) = Env::with_hostile_quoter(Tweaks::default()).await;
    *tamper.lock() = Box::new(|q| {
        let data = q["transaction"]["data"].as_str().unwrap().to_owned();
        q["transaction"]["data"] = json!(format!("{data}{}", "ff".repeat(20_000)));
    });
    let out = env.quote("swap 0.001 ETH for USDC", "ETH", "USDC", "0.001").await;
    assert_eq!(out["origin"], "tool", "honest fields, so the quote is stored: {out}");
    let before = holdings(&env).await;

    // Before: decoded leniently, it was signed and mined, paying for 20,000 more bytes of calldata.
    let sent = env.call("web3_tx", tx()).await;
    let mut f = Failures::default();
    f.check(code(&sent) == "quote_rejected", format!("web3_tx → quote_rejected (got {sent:?})"));
    let message = sent.as_ref().err().map(|e| e.message.clone()).unwrap_or_default();
    f.check(message.contains("undecodable sell"), format!("the refusal names the decoding: {message}"));
    f.check(holdings(&env).await == before, format!("nothing moved on chain: {before:?} → {:?}", holdings(&env).await));
    check_refused_swap(&mut f, &env, "session-1", false).await;
    f.finish();
}

/// The devnet's policy with `auto_max_gas` below any swap's gas.
fn low_auto_max_gas() -> Tweaks {
    Tweaks {
        toml_replace: vec![("[policy.base]\n".into(), "[policy.base]\nauto_max_gas = 50000\n".into())],
        ..Tweaks::default()
    }
}

/// A transaction that may use more gas than the network's `auto_max_gas` waits for the user even inside the
/// auto-approve limits, and runs once approved.
#[tokio::test(flavor = "multi_thread")]
async fn a_swap_above_the_auto_approve_gas_limit_waits_for_the_user() {
    let env = Env::start_with(low_auto_max_gas()).await;
    let out = env.quote("swap 0.001 ETH for USDC", "ETH", "USDC", "0.001").await;
    assert_eq!(out["origin"], "tool", "{out}");
    let before = holdings(&env).await;
    let err = env.call("web3_tx", tx()).await.unwrap_err();
    assert_eq!(err.code, holdfast_core::ErrorCode::ConfirmationRequired, "{err:?}");
    let details = err.details.unwrap();
    let reason = details["reason"].as_str().unwrap();
    assert!(reason.contains("above the auto-approve gas limit of 50000 on base"), "{reason}");
    assert_eq!(holdings(&env).await, before, "nothing sent before the user answers");
    let id = details["confirmation_id"].as_str().unwrap();
    env.decide(id, holdfast_core::UserDecision::Approve).unwrap();
    let sent = env.call("web3_tx", tx()).await.unwrap();
    assert_eq!(sent["status"], "confirmed", "{sent}");
    assert_eq!(env.nonce().await, before.nonce + 1);
}

/// An approval covers the gas the user was shown (and a tenth more), not whatever the route costs when it runs: an
/// estimate that grew since (chain state the route reads changed) is asked again, showing the new gas.
#[tokio::test(flavor = "multi_thread")]
async fn an_approval_does_not_cover_a_transaction_that_grew_heavier_since() {
    let (env, proxy) = behind_proxy(TestDevnet::start().await.unwrap(), low_auto_max_gas()).await;
    let out = env.quote("swap 0.001 ETH for USDC", "ETH", "USDC", "0.001").await;
    assert_eq!(out["origin"], "tool", "{out}");
    let before = holdings(&env).await;
    let first = env.call("web3_tx", tx()).await.unwrap_err();
    let details = first.details.unwrap();
    let shown: u64 = details["summary"]["gas_limit"].as_str().unwrap().parse().unwrap();
    env.decide(details["confirmation_id"].as_str().unwrap(), holdfast_core::UserDecision::Approve).unwrap();
    // The node now estimates three times the gas.
    proxy.set_rewrite(Some(std::sync::Arc::new(|req: &Value, resp: &mut Value| {
        if req["method"] == "eth_estimateGas"
            && let Some(gas) =
                resp["result"].as_str().and_then(|g| u64::from_str_radix(g.trim_start_matches("0x"), 16).ok())
        {
            resp["result"] = json!(format!("0x{:x}", gas * 3));
        }
    })));
    // Before: the approval was used, and the heavier transaction signed.
    let again = env.call("web3_tx", tx()).await.unwrap_err();
    assert_eq!(again.code, holdfast_core::ErrorCode::ConfirmationRequired, "{again:?}");
    let details = again.details.unwrap();
    let grown: u64 = details["summary"]["gas_limit"].as_str().unwrap().parse().unwrap();
    assert!(grown > shown + shown / 10, "the question shows the new gas: {grown} against {shown}");
    assert_eq!(holdings(&env).await, before, "nothing sent on the old approval");
    env.decide(details["confirmation_id"].as_str().unwrap(), holdfast_core::UserDecision::Approve).unwrap();
    let sent = env.call("web3_tx", tx()).await.unwrap();
    assert_eq!(sent["status"], "confirmed", "{sent}");
    assert_eq!(env.nonce().await, before.nonce + 1);
}

// ---------------------------------------------------------------------------------------------------------------
// 4: the node takes the transaction but its answer is lost.
// ---------------------------------------------------------------------------------------------------------------

/// A devnet whose network `base` is reached only through an [`RpcProxy`].
pub(crate) async fn behind_proxy(devnet: TestDevnet, mut tweaks: Tweaks) -> (Env, RpcProxy) {
    let proxy = RpcProxy::start(&devnet.rpc_url).await;
    let text = std::fs::read_to_string(&devnet.config_path).unwrap();
    assert!(text.contains(&devnet.rpc_url), "the generated config names anvil's URL:\n{text}");
    tweaks.toml_replace.push((devnet.rpc_url.clone(), proxy.url.clone()));
    let env = Env::apply(devnet, tweaks);
    let text = std::fs::read_to_string(&env.devnet.config_path).unwrap();
    assert!(text.contains(&proxy.url) && !text.contains(&env.devnet.rpc_url), "rpc_urls point at the proxy");
    (env, proxy)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_broadcast_whose_answer_is_lost_is_reconciled_by_hash_and_never_sent_twice() {
    let mut f = Failures::default();
    for fault in [Fault::ForwardThen502, Fault::ForwardThenDrop, Fault::ForwardThenGarbage, Fault::ForwardThenRpcError]
    {
        let (env, proxy) = behind_proxy(TestDevnet::start().await.unwrap(), Tweaks::default()).await;
        let out = env.quote("swap 0.001 ETH for USDC", "ETH", "USDC", "0.001").await;
        assert_eq!(out["origin"], "tool", "{fault:?}: {out}");
        let nonce0 = env.nonce().await;
        proxy.set_fault(fault);

        let first = env.call("web3_tx", tx()).await;
        let nonce1 = env.nonce().await;
        let second = env.call("web3_tx", tx()).await;
        let nonce2 = env.nonce().await;
        let p = format!("{fault:?}:");
        eprintln!("{p} first {}, second {}; RPC calls {:?}", code(&first), code(&second), proxy.counts());

        f.check(proxy.faults_applied() >= 1, format!("{p} the fault was exercised (it was not: {:?})", proxy.counts()));
        f.check(
            nonce1 == nonce0 + 1,
            format!("{p} exactly one transaction mined by the first call (nonce +{})", nonce1 - nonce0),
        );
        f.check(
            nonce2 == nonce0 + 1,
            format!(
                "{p} still exactly one after the retry (nonce +{}); first {first:?}; second {second:?}",
                nonce2 - nonce0
            ),
        );
        f.check(
            first.as_ref().is_ok_and(|v| v["status"] == "confirmed"),
            format!("{p} the first call reconciles by hash and reports `confirmed` (got {first:?})"),
        );
        let (hash, id) = match &first {
            Ok(v) => (
                v["hash"].as_str().unwrap_or_default().to_owned(),
                v["journal_id"].as_str().unwrap_or_default().to_owned(),
            ),
            Err(_) => (String::new(), String::new()),
        };
        match &second {
            Ok(v) => {
                f.check(
                    v["hash"] == hash.as_str(),
                    format!("{p} the retry returns the same hash {hash} (got {})", v["hash"]),
                );
                f.check(
                    v["journal_id"] == id.as_str(),
                    format!("{p} the retry returns the same journal id {id} (got {})", v["journal_id"]),
                );
            }
            Err(e) => f.check(false, format!("{p} the retry returns the earlier outcome, not an error (got {e:?})")),
        }

        // On chain: the one transaction the wallet sent, read back by hash.
        let journal = env.web3.journal().for_session("session-1").await.unwrap();
        let swaps: Vec<&JournalEntry> = journal.iter().filter(|e| kind(e) == "swap").collect();
        let signed: Vec<&&JournalEntry> = swaps.iter().filter(|e| e.tx_hash.is_some()).collect();
        f.check(
            signed.len() == 1,
            format!(
                "{p} the journal holds one signed swap (got {:?})",
                signed.iter().map(|e| (e.status.as_str(), e.tx_hash.clone(), e.error.clone())).collect::<Vec<_>>()
            ),
        );
        for e in &signed {
            let hash: B256 = e.tx_hash.as_deref().unwrap().parse().unwrap();
            let receipt = env.devnet.provider().get_transaction_receipt(hash).await.unwrap();
            let mined_ok = receipt.as_ref().is_some_and(|r| r.status());
            f.check(
                (e.status.as_str() == "confirmed") == mined_ok,
                format!("{p} journal {} says `{}` but the chain says mined={mined_ok}", e.id, e.status.as_str()),
            );
        }
        if !id.is_empty() {
            match env.web3.journal().get(&id).await.unwrap() {
                Some(e) => {
                    f.check(
                        e.status.as_str() == "confirmed",
                        format!("{p} journal {id} ends `confirmed` (got `{}`)", e.status.as_str()),
                    );
                    f.check(e.tx_hash.as_deref() == Some(hash.as_str()), format!("{p} journal {id} holds hash {hash}"));
                }
                None => f.check(false, format!("{p} the journal entry of the first call exists ({id:?})")),
            }
        }
    }
    f.finish();
}

// ---------------------------------------------------------------------------------------------------------------
// 5: six sessions race for the daily cap.
// ---------------------------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread")]
async fn concurrent_swaps_from_six_sessions_never_exceed_the_daily_cap_by_one_wei() {
    let env = Env::start_with(Tweaks {
        toml_replace: vec![
            ("native_per_day = \"5\"".into(), "native_per_day = \"0.05\"".into()),
            ("auto_native_per_tx = \"0.01\"".into(), "auto_native_per_tx = \"0.01\"".into()),
        ],
        ..Default::default()
    })
    .await;
    let text = std::fs::read_to_string(&env.devnet.config_path).unwrap();
    assert!(text.contains("native_per_day = \"0.05\"") && text.contains("auto_native_per_tx = \"0.01\""), "{text}");
    let cap = U256::from(50 * FINNEY);

    let mut sessions = Vec::new();
    for i in 1..=6 {
        let ctx = env.services.new_session(&format!("s{i}"));
        let out = quote_in(&env, &ctx, "ETH", "USDC", "0.01").await;
        assert_eq!(out["origin"], "tool", "s{i}: {out}");
        sessions.push(ctx);
    }
    let nonce0 = env.nonce().await;

    let tasks: Vec<_> = sessions
        .into_iter()
        .map(|ctx| {
            let registry = env.registry.clone();
            tokio::spawn(async move { registry.call("web3_tx", tx(), &ctx).await })
        })
        .collect();
    let mut results = Vec::new();
    for t in tasks {
        results.push(t.await.unwrap());
    }

    let mut f = Failures::default();
    let oks: Vec<&Value> = results.iter().filter_map(|r| r.as_ref().ok()).collect();
    let codes: Vec<String> = results.iter().map(code).collect();
    eprintln!("web3_tx outcomes of the six sessions: {codes:?}");
    f.check(oks.len() <= 5, format!("at most 5 swaps of 0.01 ETH fit under 0.05 ETH a day (outcomes {codes:?})"));
    f.check(!oks.is_empty(), format!("the cap still lets swaps through (outcomes {codes:?})"));
    f.check(
        codes.iter().all(|c| c == "ok" || c == "policy_denied"),
        format!("the refused ones are `policy_denied` (outcomes {codes:?})"),
    );

    // On chain: every transaction the wallet sent since, read back by hash; the hashes come from the answers and
    // from the journal, and must account for every nonce used.
    let mut hashes = BTreeSet::new();
    for v in &oks {
        hashes.insert(v["hash"].as_str().unwrap().to_owned());
    }
    let journal = env.web3.journal().recent(1_000).await.unwrap();
    for e in journal.iter().filter(|e| kind(e) == "swap") {
        if let Some(h) = &e.tx_hash {
            hashes.insert(h.clone());
        }
    }
    let provider = env.devnet.provider();
    let mut sent = U256::ZERO;
    let mut nonces = Vec::new();
    for h in &hashes {
        let Some(t) = provider.get_transaction_by_hash(h.parse().unwrap()).await.unwrap() else { continue };
        if t.block_number().is_none() || t.from() != env.devnet.wallet_address {
            continue;
        }
        sent += alloy::consensus::Transaction::value(&t);
        nonces.push(alloy::consensus::Transaction::nonce(&t));
    }
    let used = env.nonce().await - nonce0;
    f.check(
        nonces.len() as u64 == used,
        format!(
            "every mined transaction is reported or journaled ({} found by hash, {used} nonces used)",
            nonces.len()
        ),
    );
    let distinct: BTreeSet<u64> = nonces.iter().copied().collect();
    f.check(distinct.len() == nonces.len(), format!("no two mined transactions share a nonce: {nonces:?}"));
    f.check(sent <= cap, format!("on chain the wallet sent {sent} wei as swap value, above the cap of {cap}"));

    // On disk: what the journal counts as live stays within the cap too.
    let live: U256 = journal
        .iter()
        .filter(|e| kind(e) == "swap" && matches!(e.status.as_str(), "signed" | "pending" | "confirmed" | "unknown"))
        .map(|e| U256::from_str_radix(&e.amount, 10).unwrap())
        .sum();
    f.check(live <= cap, format!("the journal's live swaps total {live} wei, above the cap of {cap}"));
    f.finish();
}

// ---------------------------------------------------------------------------------------------------------------
// 6: a price server answers with something shaped like a swap quote, and claims 19 decimals.
// ---------------------------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread")]
async fn a_price_answer_shaped_like_a_quote_is_never_sent_and_never_supplies_decimals() {
    let devnet = TestDevnet::start().await.unwrap();
    let wallet = devnet.wallet_address;
    // `/price/token` answers an honest, signable quote for 0.001 ETH → USDC from this wallet, plus token fields.
    let server = X402Server::start(
        &devnet,
        script(move |call: Call, ctx: Ctx| async move {
            let asks_price = call.query.iter().any(|(k, _)| k == "token");
            let body = if asks_price {
                let req = QuoteRequest {
                    chain_id: holdfast_devnet::CHAIN_ID,
                    sell_token: NATIVE,
                    buy_token: USDC,
                    sell_amount: U256::from(FINNEY),
                    taker: wallet,
                    recipient: wallet,
                    slippage_bps: 100,
                };
                let mut q = build_quote(&ctx.quotes, &req).await.unwrap();
                q["taker"] = json!(wallet.to_checksum(None));
                q["token"] = json!(USDC.to_checksum(None));
                q["symbol"] = json!("USDC");
                q["decimals"] = json!(19);
                q["priceUsd"] = json!("1");
                q
            } else {
                crate::common::server::quote(&ctx, &call).await
            };
            axum::response::IntoResponse::into_response(axum::Json(body))
        }),
    )
    .await;
    let presets = devnet.dir.join("presets.ron");
    let text = std::fs::read_to_string(&presets).unwrap();
    let price_url = format!("{}/price/token", devnet.quoter_url);
    assert!(text.contains(&price_url));
    std::fs::write(&presets, text.replace(&price_url, &format!("{}/price/token", server.url))).unwrap();
    let (env, proxy) = behind_proxy(devnet, Tweaks::default()).await;

    // The registers a swap needs, so that the price answer is a quote the old validator would accept.
    env.ctx.context_bank.scan_input("swap 0.001 ETH for USDC");
    env.ok(
        "local_burner_wallet",
        json!({"action": "address", "token_register": null, "network": null, "cache_as": "wallet_address"}),
    )
    .await;
    env.ok("token_lookup", json!({"symbol": "ETH", "network": "base", "cache_as": "sell_token"})).await;
    env.ok("token_lookup", json!({"symbol": "USDC", "network": "base", "cache_as": "buy_token"})).await;
    env.ok("to_raw_amount", json!({"amount": "0.001", "token_register": "sell_token", "cache_as": "sell_amount"}))
        .await;
    env.ok("register_set", json!({"key": "token_address", "value": USDC.to_checksum(None)})).await;
    let fetched =
        env.ok("x402_fetch", json!({"preset": "token_price", "network": "base", "cache_as": "token_price"})).await;
    assert_eq!(fetched["cached_as"], "token_price", "{fetched}");
    let nonce0 = env.nonce().await;

    let mut f = Failures::default();
    let calls_before = proxy.counts();
    let sent = env.call("web3_tx", json!({"from_register": "token_price", "network": "base"})).await;
    let calls_after = proxy.counts();
    f.check(
        code(&sent) == "register_type_mismatch",
        format!("web3_tx on token_price → register_type_mismatch (got {sent:?})"),
    );
    f.check(
        calls_before == calls_after,
        format!("web3_tx on token_price makes no RPC call (before {calls_before:?}, after {calls_after:?})"),
    );
    f.check(env.nonce().await == nonce0, "nothing was sent");

    let raw =
        env.call("to_raw_amount", json!({"amount": "1", "token_register": "token_price", "cache_as": null})).await;
    f.check(
        code(&raw) == "register_type_mismatch",
        format!("to_raw_amount on token_price → register_type_mismatch (got {raw:?})"),
    );

    env.ok("token_lookup", json!({"symbol": "USDC", "network": "base", "cache_as": "sell_token"})).await;
    let raw = env.call("to_raw_amount", json!({"amount": "1", "token_register": "sell_token", "cache_as": null})).await;
    f.check(
        raw.as_ref().is_ok_and(|v| v["raw"] == "1000000"),
        format!("1 USDC is 1000000 base units from the token table, whatever the price server said (got {raw:?})"),
    );
    f.finish();
}

// ---------------------------------------------------------------------------------------------------------------
// 7: a persistent key with no data dir: the journal would live in memory, so nothing may move.
// ---------------------------------------------------------------------------------------------------------------

/// Unique to this test. The variable is set by re-running this test in a child process: `std::env::set_var` is
/// `unsafe` in edition 2024 and the workspace forbids unsafe code.
const KEY_VAR: &str = "HOLDFAST_TEST_KEY_KERNEL_NO_DATA_DIR_5F1C";
/// A throw-away key (the well-known example key of the web3.js docs), funded by the test.
const DEV_KEY: &str = "0x4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318";
const NO_DATA_DIR_TEST: &str = "kernel::a_persistent_env_key_without_a_data_dir_refuses_every_value_moving_tool";

#[tokio::test(flavor = "multi_thread")]
async fn a_persistent_env_key_without_a_data_dir_refuses_every_value_moving_tool() {
    if std::env::var_os(KEY_VAR).is_none() {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([NO_DATA_DIR_TEST, "--exact", "--nocapture", "--test-threads=1"])
            .env(KEY_VAR, DEV_KEY)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success() && stdout.contains("1 passed"),
            "the test, run with {KEY_VAR} set, failed:\n{stdout}\n{stderr}"
        );
        return;
    }

    let devnet = TestDevnet::start().await.unwrap();
    let key: alloy::signers::local::PrivateKeySigner = DEV_KEY.parse().unwrap();
    let addr = key.address();
    devnet.fund_eth(addr, U256::from(10_000 * FINNEY)).await.unwrap();
    devnet.mint_usdc(addr, U256::from(100_000_000u64)).await.unwrap();
    // Quotes come from an unpaid quoter (so obtaining one is not itself a payment); `token_price` stays behind the
    // devnet's paywall, to try a paid fetch.
    let (quoter, _honest) = hostile_quoter(&devnet).await;
    let presets = devnet.dir.join("presets.ron");
    let quote_url = format!("{}/swap/allowance-holder/quote", devnet.quoter_url);
    let text = std::fs::read_to_string(&presets).unwrap();
    assert!(text.contains(&quote_url));
    std::fs::write(&presets, text.replace(&quote_url, &format!("{quoter}/swap/allowance-holder/quote"))).unwrap();
    let env = Env::apply(
        devnet,
        Tweaks {
            toml_replace: vec![
                ("[storage]\ndata_dir = \"data\"\n".into(), String::new()),
                ("key_file = \"wallet.key\"".into(), format!("key_env = \"{KEY_VAR}\"")),
            ],
            ..Default::default()
        },
    );
    let text = std::fs::read_to_string(&env.devnet.config_path).unwrap();
    assert!(!text.contains("data_dir") && !text.contains("key_file") && text.contains(KEY_VAR), "{text}");
    assert_eq!(env.web3.wallet().address(), addr, "the wallet is the key from {KEY_VAR}");

    let provider = env.devnet.provider();
    let nonce0 = provider.get_transaction_count(addr).await.unwrap();
    let usdc0 = env.devnet.balance_of(USDC, addr).await.unwrap();
    let payee0 = env.devnet.balance_of(USDC, PAYEE).await.unwrap();
    let mut f = Failures::default();
    let names_data_dir = |r: &Result<Value, ToolError>| matches!(r, Err(e) if e.code.as_str() == "config_invalid" && e.message.contains("data_dir"));

    let out = env.quote("swap 0.001 ETH for USDC", "ETH", "USDC", "0.001").await;
    assert_eq!(out["origin"], "tool", "an unpaid quote is fetched: {out}");
    let sent = env.call("web3_tx", tx()).await;
    f.check(names_data_dir(&sent), format!("web3_tx → config_invalid naming data_dir (got {sent:?})"));

    env.ctx.registers.remove("swap_quote");
    let out = env.quote("sell 5 USDC for ETH", "USDC", "ETH", "5").await;
    assert_eq!(out["origin"], "tool", "an unpaid quote is fetched: {out}");
    let approved = env.call("token_approve", json!({"for_quote": "swap_quote"})).await;
    f.check(names_data_dir(&approved), format!("token_approve → config_invalid naming data_dir (got {approved:?})"));
    let allowance = holdfast_devnet::contracts::abi::IDevnetToken::new(USDC, &provider)
        .allowance(addr, VENUE)
        .call()
        .await
        .unwrap();
    f.check(allowance.is_zero(), format!("no allowance was granted (it is {allowance})"));

    env.ok("register_set", json!({"key": "token_address", "value": USDC.to_checksum(None)})).await;
    let paid =
        env.call("x402_fetch", json!({"preset": "token_price", "network": "base", "cache_as": "token_price"})).await;
    f.check(names_data_dir(&paid), format!("a paid x402_fetch → config_invalid naming data_dir (got {paid:?})"));
    f.check(env.devnet.balance_of(USDC, PAYEE).await.unwrap() == payee0, "the paywall's payee received nothing");
    f.check(env.devnet.balance_of(USDC, addr).await.unwrap() == usdc0, "the wallet paid nothing");

    let nonce1 = provider.get_transaction_count(addr).await.unwrap();
    f.check(nonce1 == nonce0, format!("nothing was mined from the wallet (nonce +{})", nonce1 - nonce0));
    f.finish();
}

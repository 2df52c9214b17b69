//! x402 payments against scripted servers on the devnet: honest v2 and v1 servers settled on chain (choosing the
//! offer that passes policy, not the first), and hostile ones — price above the cap, payee switched between the
//! 402 and the retry, wrong network, unknown asset, payee off the allow-list, malformed and huge headers, a 402
//! loop, a fake settlement report, an exhausted budget, a node that lies about the chain's clock or hides a settled
//! payment. Each hostile case ends with a stable code, and with nothing paid (balances and journal checked); the
//! refusals also sign nothing. A payment that was made is counted, whatever one node says.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use crate::common::server::{
    Call, Ctx, Script, X402Server, b64, honest_requirement, offer_v1, offer_v2, quote, raw_402, script,
    settle_and_quote, v1_requirement,
};
use crate::common::{Env, Tweaks};
use alloy::primitives::{Address, U256, address};
use axum::response::IntoResponse;
use holdfast_core::{ErrorCode, ToolError};
use holdfast_devnet::{PAYEE, QUOTE_PRICE, TestDevnet, USDC};
use holdfast_web3::{EntryKind, EntryStatus};
use parking_lot::Mutex;
use serde_json::{Value, json};
use std::sync::Arc;

const ATTACKER: Address = address!("0x000000000000000000000000000000000000dEaD");
const SESSION: &str = "session-1";

struct Case {
    env: Env,
    server: X402Server,
    wallet_usdc: U256,
    payee_usdc: U256,
}

impl Case {
    async fn start(make: impl FnOnce(String) -> Script, tweaks: Tweaks) -> Case {
        Self::start_on(TestDevnet::start().await.unwrap(), make, tweaks).await
    }

    async fn start_on(devnet: TestDevnet, make: impl FnOnce(String) -> Script, tweaks: Tweaks) -> Case {
        // The script needs the server's own URL (for `resource`), so it is installed once the server listens.
        let slot: Arc<Mutex<Option<Script>>> = Arc::default();
        let installed = Arc::clone(&slot);
        let server = X402Server::start(
            &devnet,
            script(move |call: Call, ctx: Ctx| {
                let s = installed.lock().clone();
                async move {
                    match s {
                        Some(s) => s(call, ctx).await,
                        None => axum::http::StatusCode::SERVICE_UNAVAILABLE.into_response(),
                    }
                }
            }),
        )
        .await;
        *slot.lock() = Some(make(format!("{}/swap/allowance-holder/quote", server.url)));
        let env = Env::apply(devnet, Tweaks { quoter_url: Some(server.url.clone()), ..tweaks });
        let wallet_usdc = env.balance(USDC).await;
        let payee_usdc = env.devnet.balance_of(USDC, PAYEE).await.unwrap();
        Case { env, server, wallet_usdc, payee_usdc }
    }

    /// One quote attempt through the tool (the env helper fills the registers first).
    async fn attempt(&self) -> Result<Value, ToolError> {
        let out = self.env.quote("swap 0.001 ETH for USDC", "ETH", "USDC", "0.001").await;
        match out.get("error") {
            Some(e) => Err(serde_json::from_value(e.clone()).unwrap()),
            None => Ok(out),
        }
    }

    async fn payments(&self) -> Vec<holdfast_web3::JournalEntry> {
        self.env
            .web3
            .journal()
            .for_session(SESSION)
            .await
            .unwrap()
            .into_iter()
            .filter(|e| e.kind == EntryKind::Payment)
            .collect()
    }

    /// What the day's payment budget counts as spent (USDC, the wallet's).
    async fn budget_spent(&self) -> U256 {
        let wallet = self.env.web3.wallet().address().to_checksum(None);
        let journal = self.env.web3.journal();
        journal
            .spent_today(holdfast_devnet::CHAIN_ID, &wallet, &USDC.to_checksum(None), EntryKind::Payment.cap_group())
            .await
            .unwrap()
    }

    async fn paid_nothing(&self) {
        assert_eq!(self.env.balance(USDC).await, self.wallet_usdc, "nothing left the wallet");
        assert_eq!(self.env.devnet.balance_of(USDC, PAYEE).await.unwrap(), self.payee_usdc, "the payee got nothing");
        assert_eq!(self.env.devnet.balance_of(USDC, ATTACKER).await.unwrap(), U256::ZERO);
        assert!(self.payments().await.iter().all(|e| e.status != EntryStatus::Confirmed));
    }

    async fn signed_nothing(&self) {
        self.paid_nothing().await;
        assert_eq!(self.server.payments_received(), 0, "no payment header was ever sent");
        assert!(self.payments().await.is_empty(), "nothing journaled");
    }
}

fn refused(result: &Result<Value, ToolError>, code: ErrorCode, needle: &str) {
    match result {
        Err(e) => {
            assert_eq!(e.code, code, "{e:?}");
            assert!(e.message.contains(needle), "{needle:?} not in {}", e.message);
        }
        Ok(v) => panic!("expected {code:?}, got {v}"),
    }
}

#[tokio::test]
async fn an_honest_v2_server_with_several_offers_is_paid_the_one_that_passes() {
    let case = Case::start(
        |url| {
            script(move |call: Call, ctx: Ctx| {
                let url = url.clone();
                async move {
                    let mut expensive = honest_requirement();
                    expensive["amount"] = json!("60000");
                    let mut elsewhere = honest_requirement();
                    elsewhere["network"] = json!("eip155:1");
                    let honest = honest_requirement();
                    if call.payment.is_none() {
                        return offer_v2(&url, vec![expensive, elsewhere, honest], None);
                    }
                    let paid = call.payload().unwrap()["accepted"].clone();
                    assert_eq!(paid, honest, "the client echoes the requirement it chose");
                    settle_and_quote(&ctx, &call, &honest, &url).await
                }
            })
        },
        Tweaks::default(),
    )
    .await;
    let mut events = case.env.ctx.events.subscribe();
    let out = case.attempt().await.unwrap();
    assert_eq!(out["payment"]["status"], "confirmed", "{out}");
    assert_eq!(out["payment"]["x402_version"], 2);
    assert_eq!(case.env.balance(USDC).await, case.wallet_usdc - QUOTE_PRICE);
    assert_eq!(case.env.devnet.balance_of(USDC, PAYEE).await.unwrap(), case.payee_usdc + QUOTE_PRICE);
    let payments = case.payments().await;
    assert_eq!(payments.len(), 1);
    assert_eq!((payments[0].status, payments[0].amount.as_str()), (EntryStatus::Confirmed, "10000"));
    assert_eq!(payments[0].tx_hash.as_deref(), out["payment"]["transaction"].as_str());
    assert_eq!(payments[0].to, PAYEE.to_checksum(None));
    // The signed authorization carried exactly the chosen requirement, with a window within maxTimeoutSeconds.
    let payload = case.server.calls().into_iter().find_map(|c| c.payload()).unwrap();
    let auth = &payload["payload"]["authorization"];
    assert_eq!(auth["to"], PAYEE.to_checksum(None));
    assert_eq!(auth["value"], "10000");
    let window: u64 = auth["validBefore"].as_str().unwrap().parse::<u64>().unwrap()
        - auth["validAfter"].as_str().unwrap().parse::<u64>().unwrap();
    assert!(window <= 60, "{window}");
    assert_eq!(auth["nonce"].as_str().unwrap().len(), 66, "32 nonce bytes");
    let mut made = Vec::new();
    while let Ok(e) = events.try_recv() {
        if e.name() == "payment.made" {
            made.push(e.data());
        }
    }
    assert_eq!(made.len(), 1, "{made:?}");
    assert_eq!(made[0]["status"], "confirmed");
    assert_eq!(made[0]["amount"], "0.01 USDC");
    // The stored quote went through the validator as usual.
    assert_eq!(out["origin"], "tool");
    assert!(case.env.ctx.registers.get("swap_quote").is_some());
}

/// An honest x402 v1 server: offers one requirement, then settles the `X-PAYMENT` it is sent and answers a quote.
async fn honest_v1() -> Case {
    Case::start(
        |url| {
            script(move |call: Call, ctx: Ctx| {
                let url = url.clone();
                async move {
                    let requirement = v1_requirement(&url);
                    if call.payment.is_none() {
                        return offer_v1(vec![requirement]);
                    }
                    assert_eq!(call.payment.as_ref().unwrap().0, "x-payment");
                    let payload = call.payload().unwrap();
                    assert_eq!((payload["x402Version"].as_u64(), payload["network"].as_str()), (Some(1), Some("base")));
                    settle_and_quote(&ctx, &call, &requirement, &url).await
                }
            })
        },
        Tweaks::default(),
    )
    .await
}

#[tokio::test]
async fn an_honest_v1_server_is_paid_with_x_payment() {
    let case = honest_v1().await;
    let out = case.attempt().await.unwrap();
    assert_eq!(out["payment"]["x402_version"], 1, "{out}");
    assert_eq!(out["payment"]["status"], "confirmed");
    assert_eq!(case.env.devnet.balance_of(USDC, PAYEE).await.unwrap(), case.payee_usdc + QUOTE_PRICE);
    assert_eq!(case.payments().await[0].status, EntryStatus::Confirmed);
}

/// A server whose first answer is `offer` and which never settles anything.
fn never_settles(
    offer: impl Fn(&str) -> axum::response::Response + Send + Sync + Clone + 'static,
) -> impl FnOnce(String) -> Script {
    move |url| {
        script(move |_call: Call, _ctx: Ctx| {
            let resp = offer(&url);
            async move { resp }
        })
    }
}

/// A server that settles the payment on chain and then answers `after(its URL)` instead of the content.
fn settles_then(after: fn(&str) -> axum::response::Response) -> impl FnOnce(String) -> Script {
    move |url| {
        script(move |call: Call, ctx: Ctx| {
            let url = url.clone();
            async move {
                let Some(payload) = call.payload() else { return offer_v2(&url, vec![honest_requirement()], None) };
                let settled = ctx.facilitator.settle(&payload, &honest_requirement()).await;
                assert!(settled.success, "{settled:?}");
                after(&url)
            }
        })
    }
}

/// A server that settles the payment on chain and still refuses the content.
fn settles_and_refuses() -> impl FnOnce(String) -> Script {
    settles_then(|url| offer_v2(url, vec![honest_requirement()], Some("thanks, but no")))
}

/// A server that settles the payment and then answers 200 with a body above the tool's 1 MiB cap: it took the payment
/// and delivered nothing holdfast can read.
fn settles_and_floods() -> impl FnOnce(String) -> Script {
    settles_then(|_| (axum::http::StatusCode::OK, vec![b' '; 2 << 20]).into_response())
}

#[tokio::test]
async fn a_price_above_the_cap_is_refused_and_nothing_is_signed() {
    let case = Case::start(
        never_settles(|url| {
            let mut r = honest_requirement();
            r["amount"] = json!("60000"); // 0.06 USDC > max_per_request 0.05
            offer_v2(url, vec![r], None)
        }),
        Tweaks::default(),
    )
    .await;
    refused(&case.attempt().await, ErrorCode::PaymentRefused, "exceeds the per-request cap of 0.05 USDC");
    case.signed_nothing().await;
}

#[tokio::test]
async fn wrong_network_unknown_asset_and_foreign_payee_are_refused() {
    type Tamper = fn(&mut Value);
    let cases: [(Tamper, &str); 6] = [
        (|r| r["network"] = json!("eip155:31337"), "network othernet is not the request's network base"),
        // Base mainnet is not configured on the devnet: a mainnet-valid authorization is never signed.
        (|r| r["network"] = json!("eip155:8453"), "is not configured"),
        (|r| r["network"] = json!("eip155:84532"), "is not configured"),
        (
            |r| r["asset"] = json!("0x000000000000000000000000000000000000bEEF"),
            "is not on the [payments.base] allow-list",
        ),
        (|r| r["payTo"] = json!(ATTACKER.to_checksum(None)), "is not on preset `swap_quote`'s payee list"),
        (|r| r["scheme"] = json!("upto"), "scheme \"upto\" is not supported"),
    ];
    for (tamper, needle) in cases {
        let case = Case::start(
            never_settles(move |url| {
                let mut r = honest_requirement();
                tamper(&mut r);
                offer_v2(url, vec![r], None)
            }),
            Tweaks {
                toml: "\n[networks.othernet]\nchain_id = 31337\nrpc_urls = [\"http://127.0.0.1:9\"]\n".into(),
                ..Default::default()
            },
        )
        .await;
        refused(&case.attempt().await, ErrorCode::PaymentRefused, needle);
        case.signed_nothing().await;
    }
}

#[tokio::test]
async fn malformed_and_huge_headers_are_coded_errors() {
    let cases: Vec<(Option<String>, String, &'static str)> = vec![
        (Some("%%% not base64 %%%".into()), "{}".into(), "not valid base64"),
        (Some(b64(&json!("just a string"))), "{}".into(), "not a JSON object"),
        (Some(base64_raw(b"{\"x402Version\": 2, \"accepts\": [")), "{}".into(), "not valid JSON"),
        (Some(b64(&json!({"x402Version": 99, "accepts": []}))), "{}".into(), "x402Version 99"),
        (Some(b64(&json!({"x402Version": 2}))), "{}".into(), "`accepts` is missing"),
        (Some(b64(&json!({"x402Version": 2, "accepts": []}))), "{}".into(), "offered no requirement"),
        (Some(b64(&json!({"x402Version": 2, "accepts": [{"scheme": "exact"}]}))), "{}".into(), "unreadable"),
        (Some(b64(&json!({"x402Version": 2, "accepts": vec![honest_requirement(); 40]}))), "{}".into(), "more than 32"),
        (Some("A".repeat(20 * 1024)), "{}".into(), "above the 16384-byte cap"),
        (Some("A".repeat(100 * 1024)), "{}".into(), "above the 16384-byte cap"),
        (None, "<html>pay up</html>".into(), "not valid JSON"),
        (None, String::new(), "no x402 payment requirements"),
        (None, "x".repeat(200 * 1024), "cap"),
    ];
    let replies: Vec<(Option<String>, String)> = cases.iter().map(|(h, b, _)| (h.clone(), b.clone())).collect();
    let case = Case::start(
        move |_url| {
            let replies = Arc::new(replies);
            script(move |call: Call, _ctx: Ctx| {
                let (header, body) = replies[(call.n - 1) % replies.len()].clone();
                async move { raw_402(header, body) }
            })
        },
        Tweaks::default(),
    )
    .await;
    for (i, (_, _, needle)) in cases.iter().enumerate() {
        refused(&case.attempt().await, ErrorCode::PaymentRefused, needle);
        assert_eq!(case.server.calls().len(), i + 1, "one unpaid request per attempt");
    }
    case.signed_nothing().await;
}

fn base64_raw(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

#[tokio::test]
async fn a_payee_switched_between_the_402_and_the_retry_is_not_paid_twice() {
    let case = Case::start(
        |url| {
            script(move |call: Call, _ctx: Ctx| {
                let url = url.clone();
                async move {
                    let mut r = honest_requirement();
                    if call.payment.is_some() {
                        r["payTo"] = json!(ATTACKER.to_checksum(None));
                        return offer_v2(&url, vec![r], Some("pay the new address"));
                    }
                    offer_v2(&url, vec![r], None)
                }
            })
        },
        Tweaks::default(),
    )
    .await;
    refused(&case.attempt().await, ErrorCode::PaymentFailed, "changed its terms between the offer and the retry");
    assert_eq!(case.server.payments_received(), 1, "signed once, for the original payee only");
    let payload = case.server.calls().into_iter().find_map(|c| c.payload()).unwrap();
    assert_eq!(payload["payload"]["authorization"]["to"], PAYEE.to_checksum(None));
    case.paid_nothing().await;
    let payments = case.payments().await;
    assert_eq!(payments.len(), 1);
    assert_eq!(payments[0].status, EntryStatus::Pending, "live until it expires unsettled");
    assert!(payments[0].error.as_deref().unwrap().contains("changed its terms"));
}

#[tokio::test]
async fn a_402_loop_is_paid_once_and_then_refused() {
    let case = Case::start(
        never_settles(|url| offer_v2(url, vec![honest_requirement()], Some("try again"))),
        Tweaks::default(),
    )
    .await;
    refused(&case.attempt().await, ErrorCode::PaymentFailed, "not paying twice");
    assert_eq!(case.server.payments_received(), 1);
    assert_eq!(case.server.calls().len(), 2, "one offer, one paid retry, nothing more");
    case.paid_nothing().await;
}

#[tokio::test]
async fn a_fake_settlement_report_is_not_believed() {
    let case = Case::start(
        |url| {
            script(move |call: Call, ctx: Ctx| {
                let url = url.clone();
                async move {
                    if call.payment.is_none() {
                        return offer_v2(&url, vec![honest_requirement()], None);
                    }
                    let body = quote(&ctx, &call).await;
                    let report = json!({"success": true, "transaction": format!("0x{}", "ab".repeat(32)), "network": format!("eip155:{}", holdfast_devnet::CHAIN_ID)});
                    let mut resp = axum::response::IntoResponse::into_response(axum::Json(body));
                    resp.headers_mut().insert("payment-response", b64(&report).parse().unwrap());
                    resp
                }
            })
        },
        Tweaks::default(),
    )
    .await;
    let out = case.attempt().await.unwrap();
    assert_eq!(out["payment"]["status"], "pending", "the chain decides, not the header: {out}");
    assert_eq!(out["payment"]["transaction"], Value::Null);
    case.paid_nothing().await;
    let payments = case.payments().await;
    assert_eq!(payments[0].status, EntryStatus::Pending);
    assert_eq!(payments[0].tx_hash, None);
}

#[tokio::test]
async fn the_daily_budget_stops_payments_and_counts_unsettled_ones() {
    let tweaks = Tweaks {
        toml_replace: vec![("daily_budget = \"5\"".into(), "daily_budget = \"0.02\"".into())],
        ..Default::default()
    };
    let case = Case::start(
        |url| {
            script(move |call: Call, ctx: Ctx| {
                let url = url.clone();
                async move {
                    if call.payment.is_none() {
                        return offer_v2(&url, vec![honest_requirement()], None);
                    }
                    if call.n == 2 {
                        // The first payment: kept, never settled, refused. It still counts until it expires.
                        return offer_v2(&url, vec![honest_requirement()], Some("come back later"));
                    }
                    settle_and_quote(&ctx, &call, &honest_requirement(), &url).await
                }
            })
        },
        tweaks,
    )
    .await;
    refused(&case.attempt().await, ErrorCode::PaymentFailed, "not paying twice");
    case.attempt().await.unwrap();
    refused(&case.attempt().await, ErrorCode::PaymentRefused, "above the daily budget of 0.02 USDC");
    assert_eq!(case.server.payments_received(), 2);
    assert_eq!(case.env.devnet.balance_of(USDC, PAYEE).await.unwrap(), case.payee_usdc + QUOTE_PRICE);
    let statuses: Vec<_> = case.payments().await.iter().map(|e| e.status).collect();
    assert_eq!(statuses, [EntryStatus::Pending, EntryStatus::Confirmed]);
}

#[tokio::test]
async fn unpaid_presets_and_replays_of_the_real_paywall() {
    // The devnet's own paywall: a second fetch pays again (a new nonce), never the same authorization twice.
    let env = Env::start().await;
    let payee0 = env.devnet.balance_of(USDC, PAYEE).await.unwrap();
    env.quote("swap 0.001 ETH for USDC", "ETH", "USDC", "0.001").await;
    env.quote("swap 0.001 ETH for USDC", "ETH", "USDC", "0.001").await;
    assert_eq!(env.devnet.balance_of(USDC, PAYEE).await.unwrap(), payee0 + QUOTE_PRICE * U256::from(2));
    let journal = env.web3.journal().for_session(SESSION).await.unwrap();
    let nonces: std::collections::HashSet<String> =
        journal.iter().map(|e| e.summary["authorization"]["nonce"].as_str().unwrap().to_owned()).collect();
    assert_eq!(nonces.len(), 2);
    // Restart reconciliation confirms nothing new and re-sends nothing.
    assert!(env.web3.reconcile().await.unwrap().is_empty());
}

#[tokio::test]
async fn a_server_that_settles_and_still_refuses_is_recorded_as_paid() {
    let case = Case::start(settles_and_refuses(), Tweaks::default()).await;
    refused(&case.attempt().await, ErrorCode::PaymentFailed, "the server settled it and still refused the content");
    let payments = case.payments().await;
    assert_eq!(payments[0].status, EntryStatus::Confirmed, "the chain shows it settled");
    assert_eq!(case.env.devnet.balance_of(USDC, PAYEE).await.unwrap(), case.payee_usdc + QUOTE_PRICE);
    assert_eq!(case.server.payments_received(), 1, "and it is not paid twice");
}

/// A server allowing `max_timeout` seconds took a payment and never settled it: the case and the payload it was sent.
async fn paid_and_never_settled(max_timeout: u64) -> (Case, Value) {
    let case = Case::start(
        never_settles(move |url| {
            let mut r = honest_requirement();
            r["maxTimeoutSeconds"] = json!(max_timeout);
            offer_v2(url, vec![r], None)
        }),
        Tweaks::default(),
    )
    .await;
    refused(&case.attempt().await, ErrorCode::PaymentFailed, "not paying twice");
    let payload = case.server.calls().into_iter().find_map(|c| c.payload()).unwrap();
    (case, payload)
}

/// The calldata that settles the signed payment `payload` (an x402 `X-PAYMENT` payload): the token's
/// `transferWithAuthorization`, which anyone may submit.
fn settlement_calldata(payload: &Value) -> Vec<u8> {
    use alloy::sol_types::SolCall as _;
    let auth = &payload["payload"]["authorization"];
    let number = |k: &str| U256::from(auth[k].as_str().unwrap().parse::<u64>().unwrap());
    let signature = alloy::primitives::hex::decode(payload["payload"]["signature"].as_str().unwrap()).unwrap();
    holdfast_devnet::facilitator::IEip3009::transferWithAuthorizationCall {
        from: auth["from"].as_str().unwrap().parse().unwrap(),
        to: auth["to"].as_str().unwrap().parse().unwrap(),
        value: auth["value"].as_str().unwrap().parse().unwrap(),
        validAfter: number("validAfter"),
        validBefore: number("validBefore"),
        nonce: auth["nonce"].as_str().unwrap().parse().unwrap(),
        v: signature[64],
        r: alloy::primitives::B256::from_slice(&signature[..32]),
        s: alloy::primitives::B256::from_slice(&signature[32..64]),
    }
    .abi_encode()
}

/// Anvil's dev account #9 (unlocked): anyone, submitting a settlement.
const ANYONE: Address = address!("0xa0Ee7A142d267C1f36714E4a8F75612F20a79720");

#[tokio::test]
async fn an_unsettled_payment_expires_and_stops_counting() {
    let (case, payload) = paid_and_never_settled(2).await;
    let auth = &payload["payload"]["authorization"];
    let window = auth["validBefore"].as_str().unwrap().parse::<u64>().unwrap()
        - auth["validAfter"].as_str().unwrap().parse::<u64>().unwrap();
    assert!(window <= 2, "the window follows the server's maxTimeoutSeconds: {window}");
    assert!(case.env.web3.reconcile().await.unwrap().is_empty(), "still live inside its window");
    tokio::time::sleep(std::time::Duration::from_millis(3_100)).await;
    // Our clock is past the window; the idle chain's is not until its next block.
    use alloy::providers::ext::AnvilApi as _;
    case.env.devnet.provider().anvil_mine(Some(1), None).await.unwrap();
    let done = case.env.web3.reconcile().await.unwrap();
    assert_eq!(done.len(), 1);
    assert_eq!(done[0].status, EntryStatus::Failed);
    let entry = &case.payments().await[0];
    assert!(entry.error.as_deref().unwrap().contains("expired"), "{entry:?}");
    let spent = case.budget_spent().await;
    assert_eq!(spent, U256::ZERO, "an expired authorization no longer counts against the budget");
    case.paid_nothing().await;
}

/// A payment the server never settled keeps counting once our clock passes its `validBefore`, until the chain's clock
/// does: a chain behind ours (here: idle, its next block stamped by `evm_setNextBlockTimestamp` as a sequencer catching
/// up after a stall stamps its own) still carries it.
#[tokio::test]
async fn an_unsettled_payment_counts_until_the_chains_clock_passes_its_window() {
    use alloy::network::TransactionBuilder as _;
    use alloy::providers::Provider as _;
    use alloy::providers::ext::AnvilApi as _;
    let (case, payload) = paid_and_never_settled(4).await;
    let auth = &payload["payload"]["authorization"];
    let number = |k: &str| auth[k].as_str().unwrap().parse::<u64>().unwrap();
    let valid_before = number("validBefore");
    while std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() <= valid_before {
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    // Before: `failed` ("expired") by our clock, its price released from the day's budget.
    assert!(case.env.web3.reconcile().await.unwrap().is_empty(), "still live: no block of the chain is past it");
    assert_eq!(case.payments().await[0].status, EntryStatus::Pending);
    assert_eq!(case.budget_spent().await, QUOTE_PRICE, "it still counts against the budget");

    // And the chain can still carry it: the payee (anyone) submits it in a block stamped inside the window.
    let provider = case.env.devnet.provider();
    provider.anvil_set_next_block_timestamp(valid_before - 1).await.unwrap();
    let tx = alloy::rpc::types::TransactionRequest::default()
        .with_from(ANYONE)
        .with_to(USDC)
        .with_input(settlement_calldata(&payload));
    let receipt = provider.send_transaction(tx).await.unwrap().get_receipt().await.unwrap();
    assert!(receipt.status(), "a block stamped before validBefore settles it");
    assert_eq!(case.env.devnet.balance_of(USDC, PAYEE).await.unwrap(), case.payee_usdc + QUOTE_PRICE);
    case.env.web3.reconcile().await.unwrap();
    assert_eq!(case.payments().await[0].status, EntryStatus::Confirmed);
    assert_eq!(case.budget_spent().await, QUOTE_PRICE, "counted once, as paid");
}

/// With a smart account, an unsettled payment whose window closed by our clock no longer keeps the key's tokens for
/// itself when the next payment is funded, though it still counts (the idle chain's clock has not passed it, as with
/// a node that errs or lags): the next payment uses what the key holds instead of funding it again.
#[tokio::test(flavor = "multi_thread")]
async fn an_unsettled_payment_whose_window_closed_does_not_pile_the_accounts_funds_up_in_the_key() {
    let devnet = TestDevnet::start_with_account(holdfast_devnet::OnchainLimit::defaults()).await.unwrap();
    let account = devnet.account.unwrap();
    let never = never_settles(|url| {
        let mut r = honest_requirement();
        r["maxTimeoutSeconds"] = json!(2);
        offer_v2(url, vec![r], None)
    });
    let case = Case::start_on(devnet, never, Tweaks::default()).await;
    let key = case.env.web3.wallet().address();
    let before = case.env.devnet.balance_of(USDC, account).await.unwrap();
    refused(&case.attempt().await, ErrorCode::PaymentFailed, "not paying twice");
    assert_eq!(case.env.devnet.balance_of(USDC, key).await.unwrap(), QUOTE_PRICE, "funded for the first payment");
    let valid_before = case.payments().await[0].summary["authorization"]["valid_before"].as_u64().unwrap();
    let closed = valid_before + holdfast_web3::kernel::account::PAYMENT_FUND_GRACE_SECS;
    while std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() <= closed {
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
    refused(&case.attempt().await, ErrorCode::PaymentFailed, "not paying twice");
    let payments = case.payments().await;
    assert_eq!(payments.len(), 2, "{payments:#?}");
    assert_eq!(payments[0].status, EntryStatus::Pending, "the first still counts: no block is past its window");
    // Before: funded again, a second price left the account and stayed with the key.
    assert_eq!(case.env.devnet.balance_of(USDC, key).await.unwrap(), QUOTE_PRICE, "the key holds one price");
    assert_eq!(case.env.devnet.balance_of(USDC, account).await.unwrap(), before - QUOTE_PRICE, "funded once");
}

#[tokio::test]
async fn a_made_payment_whose_outcome_the_journal_cannot_record_still_delivers_what_was_paid_for() {
    let case = honest_v1().await;
    crate::journal_faults::fail_status_changes(&case.env.devnet, &["confirmed", "pending"]);
    // Before: the tool failed with the journal's error after the server was paid, throwing the quote away; the
    // model's retry signed and paid a second time.
    let out = case.attempt().await.unwrap();
    assert_eq!(out["payment"]["status"], "confirmed", "{out}");
    assert!(case.env.ctx.registers.get("swap_quote").is_some(), "what was paid for is delivered");
    assert_eq!(case.env.devnet.balance_of(USDC, PAYEE).await.unwrap(), case.payee_usdc + QUOTE_PRICE);
    assert_eq!(case.payments().await[0].status, EntryStatus::Signed, "the fault kept the outcome out of the journal");
    // Reconciliation records what the chain shows once the journal takes writes again.
    crate::journal_faults::heal(&case.env.devnet);
    case.env.web3.reconcile().await.unwrap();
    assert_eq!(case.payments().await[0].status, EntryStatus::Confirmed);
    assert_eq!(case.server.payments_received(), 1, "paid once");
}

/// A payment to a server that never settles it (a 600 s window), made through a proxy in front of the devnet's node,
/// beside that node itself when `beside_honest`: the case, the proxy and the signed payload.
async fn never_settled_behind_a_proxy(beside_honest: bool) -> (Case, crate::common::rpc_proxy::RpcProxy, Value) {
    let devnet = TestDevnet::start().await.unwrap();
    let proxy = crate::common::rpc_proxy::RpcProxy::start(&devnet.rpc_url).await;
    let urls = if beside_honest {
        format!("rpc_urls = [\"{}\", \"{}\"]", proxy.url, devnet.rpc_url)
    } else {
        format!("rpc_urls = [\"{}\"]", proxy.url)
    };
    let tweaks =
        Tweaks { toml_replace: vec![(format!("rpc_urls = [\"{}\"]", devnet.rpc_url), urls)], ..Default::default() };
    let never = never_settles(|url| {
        let mut r = honest_requirement();
        r["maxTimeoutSeconds"] = json!(600);
        offer_v2(url, vec![r], None)
    });
    let case = Case::start_on(devnet, never, tweaks).await;
    refused(&case.attempt().await, ErrorCode::PaymentFailed, "not paying twice");
    assert_eq!(case.payments().await[0].status, EntryStatus::Pending, "signed, not settled: it may still be");
    let payload = case.server.calls().into_iter().find_map(|c| c.payload()).unwrap();
    (case, proxy, payload)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_clock_one_node_moves_ahead_cannot_expire_a_payment_that_can_still_settle() {
    // A lying first node beside an honest second one.
    let (case, proxy, _) = never_settled_behind_a_proxy(true).await;
    // The first node now shows a latest block an hour ahead: past the authorization's window.
    proxy.set_rewrite(Some(Arc::new(|req: &Value, resp: &mut Value| {
        if req["method"] == "eth_getBlockByNumber" && req["params"][0] == "latest" && resp["result"].is_object() {
            let now = u64::from_str_radix(resp["result"]["timestamp"].as_str().unwrap().trim_start_matches("0x"), 16);
            resp["result"]["timestamp"] = json!(format!("0x{:x}", now.unwrap() + 3_600));
        }
    })));
    // Before: `failed` ("expired"), and its price released from the day's budget while the payee could still
    // settle it on the real chain.
    assert!(case.env.web3.reconcile().await.unwrap().is_empty(), "still live: the honest node's clock decides");
    assert_eq!(case.payments().await[0].status, EntryStatus::Pending);
    let spent = case.budget_spent().await;
    assert!(spent > U256::ZERO, "it still counts against the budget");
}

/// The one node configured (the default) shows a latest block an hour ahead: the payment's window is not closed by
/// our clock, and the payee can still settle it on the real chain.
#[tokio::test(flavor = "multi_thread")]
async fn a_clock_the_only_node_moves_ahead_cannot_expire_a_payment_that_can_still_settle() {
    use alloy::network::TransactionBuilder as _;
    use alloy::providers::Provider as _;
    let (case, proxy, payload) = never_settled_behind_a_proxy(false).await;
    proxy.set_rewrite(Some(Arc::new(|req: &Value, resp: &mut Value| {
        if req["method"] == "eth_getBlockByNumber" && req["params"][0] == "latest" && resp["result"].is_object() {
            let now = u64::from_str_radix(resp["result"]["timestamp"].as_str().unwrap().trim_start_matches("0x"), 16);
            resp["result"]["timestamp"] = json!(format!("0x{:x}", now.unwrap() + 3_600));
        }
    })));
    // Before: `failed` ("expired") within seconds of signing, its price released from the day's budget, while the
    // payee settled it on the real chain: a budget refilled with every payment.
    assert!(case.env.web3.reconcile().await.unwrap().is_empty(), "still live: our clock is inside its window");
    assert_eq!(case.payments().await[0].status, EntryStatus::Pending);
    assert_eq!(case.budget_spent().await, QUOTE_PRICE, "it still counts against the budget");
    let tx = alloy::rpc::types::TransactionRequest::default()
        .with_from(ANYONE)
        .with_to(USDC)
        .with_input(settlement_calldata(&payload));
    assert!(case.env.devnet.provider().send_transaction(tx).await.unwrap().get_receipt().await.unwrap().status());
    case.env.web3.reconcile().await.unwrap();
    assert_eq!(case.payments().await[0].status, EntryStatus::Confirmed);
    assert_eq!(case.budget_spent().await, QUOTE_PRICE, "counted once, as paid");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_node_that_hides_a_settled_payment_cannot_release_its_budget() {
    let devnet = TestDevnet::start().await.unwrap();
    // A lying first node beside an honest second one: every `authorizationState` it answers is "unused".
    let proxy = crate::common::rpc_proxy::RpcProxy::start(&devnet.rpc_url).await;
    let selector = format!(
        "0x{}",
        alloy::primitives::hex::encode(&alloy::primitives::keccak256("authorizationState(address,bytes32)")[..4])
    );
    proxy.set_rewrite(Some(Arc::new(move |req: &Value, resp: &mut Value| {
        let call = &req["params"][0];
        let data = call["input"].as_str().or_else(|| call["data"].as_str()).unwrap_or_default();
        if req["method"] == "eth_call" && data.starts_with(&selector) && resp["result"].is_string() {
            resp["result"] = json!(format!("0x{}", "0".repeat(64)));
        }
    })));
    let both = format!("rpc_urls = [\"{}\", \"{}\"]", proxy.url, devnet.rpc_url);
    let tweaks =
        Tweaks { toml_replace: vec![(format!("rpc_urls = [\"{}\"]", devnet.rpc_url), both)], ..Default::default() };
    // The server settles the payment on chain and still refuses the content.
    let case = Case::start_on(devnet, settles_and_refuses(), tweaks).await;
    assert!(case.attempt().await.is_err());
    assert_eq!(case.env.devnet.balance_of(USDC, PAYEE).await.unwrap(), case.payee_usdc + QUOTE_PRICE, "it was paid");
    // The chain's clock passes the authorization's window; the lying node still shows it unused.
    use alloy::providers::ext::AnvilApi as _;
    case.env.devnet.provider().anvil_increase_time(3_600).await.unwrap();
    case.env.devnet.provider().anvil_mine(Some(1), None).await.unwrap();
    case.env.web3.reconcile().await.unwrap();
    // Before (the first node's word alone): `failed` ("expired"), and its price released from the day's budget
    // though the payee holds it.
    let payments = case.payments().await;
    assert_eq!(payments[0].status, EntryStatus::Confirmed, "the honest node shows it settled: {:?}", payments[0]);
    let spent = case.budget_spent().await;
    assert_eq!(spent, QUOTE_PRICE, "it counts against the budget");
    assert_eq!(case.server.payments_received(), 1, "paid once");
}

/// The payee settles the payment in the last block inside its window, and the chain moves past the window, between the
/// two readings of its reconciliation. Read state-then-clock, the state from before the settlement and the clock from
/// after it called the payment expired and released its price from the day's budget.
#[tokio::test(flavor = "multi_thread")]
async fn a_payment_settled_between_the_readings_of_its_reconciliation_is_not_called_expired() {
    use alloy::network::TransactionBuilder as _;
    use alloy::providers::Provider as _;
    use alloy::providers::ext::AnvilApi as _;
    let (case, proxy, payload) = never_settled_behind_a_proxy(false).await;
    let valid_before = payload["payload"]["authorization"]["validBefore"].as_str().unwrap().parse::<u64>().unwrap();
    let settle = settlement_calldata(&payload);
    // Right after the node answers the first `authorizationState` (before the answer reaches holdfast): the payee
    // settles it in a block stamped a second before `validBefore`, and the next block is past the window.
    let selector = format!(
        "0x{}",
        alloy::primitives::hex::encode(&alloy::primitives::keccak256("authorizationState(address,bytes32)")[..4])
    );
    let provider = case.env.devnet.provider().clone();
    let fired = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let once = Arc::clone(&fired);
    proxy.set_rewrite(Some(Arc::new(move |req: &Value, _resp: &mut Value| {
        let call = &req["params"][0];
        let data = call["input"].as_str().or_else(|| call["data"].as_str()).unwrap_or_default();
        if req["method"] != "eth_call"
            || !data.starts_with(&selector)
            || once.swap(true, std::sync::atomic::Ordering::SeqCst)
        {
            return;
        }
        let (provider, input) = (provider.clone(), settle.clone());
        tokio::task::block_in_place(|| {
            tokio::runtime::Handle::current().block_on(async move {
                provider.anvil_set_next_block_timestamp(valid_before - 1).await.unwrap();
                let anyone = address!("0xa0Ee7A142d267C1f36714E4a8F75612F20a79720"); // anvil's dev account #9
                let tx =
                    alloy::rpc::types::TransactionRequest::default().with_from(anyone).with_to(USDC).with_input(input);
                let receipt = provider.send_transaction(tx).await.unwrap().get_receipt().await.unwrap();
                assert!(receipt.status(), "settled inside the window");
                provider.anvil_set_next_block_timestamp(valid_before + 1).await.unwrap();
                provider.anvil_mine(Some(1), None).await.unwrap();
            });
        });
    })));
    case.env.web3.reconcile().await.unwrap();
    assert!(fired.load(std::sync::atomic::Ordering::SeqCst), "the settlement landed between the readings");
    assert_eq!(case.env.devnet.balance_of(USDC, PAYEE).await.unwrap(), case.payee_usdc + QUOTE_PRICE, "paid");
    // Before: `failed` ("expired"), its price released from the day's budget though the payee holds it.
    assert_ne!(case.payments().await[0].status, EntryStatus::Failed, "{:?}", case.payments().await[0]);
    assert_eq!(case.budget_spent().await, QUOTE_PRICE, "it counts against the budget");
    case.env.web3.reconcile().await.unwrap();
    assert_eq!(case.payments().await[0].status, EntryStatus::Confirmed);
    assert_eq!(case.budget_spent().await, QUOTE_PRICE, "counted once, as paid");
}

/// A node that cannot tell its clock (every `eth_getBlockByNumber` an error), beside an honest one: a payment the
/// payee settled after the server answered is still counted as paid; only its expiry needs every node's clock.
#[tokio::test(flavor = "multi_thread")]
async fn a_node_without_a_clock_does_not_keep_a_settled_payment_from_being_counted() {
    use alloy::network::TransactionBuilder as _;
    use alloy::providers::Provider as _;
    let (case, proxy, payload) = never_settled_behind_a_proxy(true).await;
    // The payee settles it later, inside its window.
    let tx = alloy::rpc::types::TransactionRequest::default()
        .with_from(ANYONE)
        .with_to(USDC)
        .with_input(settlement_calldata(&payload));
    let provider = case.env.devnet.provider();
    assert!(provider.send_transaction(tx).await.unwrap().get_receipt().await.unwrap().status());
    proxy.set_rewrite(Some(Arc::new(|req: &Value, resp: &mut Value| {
        if req["method"] == "eth_getBlockByNumber" {
            *resp = json!({"jsonrpc": "2.0", "id": req["id"], "error": {"code": -32603, "message": "internal error"}});
        }
    })));
    let _ = case.env.web3.reconcile().await;
    // Before: the clock's error ended the reconciliation before the settlement was read.
    assert_eq!(case.payments().await[0].status, EntryStatus::Confirmed, "{:?}", case.payments().await[0]);
    assert_eq!(case.budget_spent().await, QUOTE_PRICE, "counted once, as paid");
}

/// The model names a register the answer may not go to: refused before the server is asked, so nothing is paid
/// for a write that would be refused (before: paid, then `register_write_denied`, and the model retried).
#[tokio::test]
async fn a_fetch_whose_register_would_be_refused_pays_nothing() {
    let case = honest_v1().await;
    assert!(case.attempt().await.is_ok(), "the preset pays and delivers");
    assert_eq!(case.server.payments_received(), 1);
    let paid_once = case.payments().await.len();
    for cache_as in ["wallet_address", "quote_address", "sell_amount"] {
        let fetch = json!({"preset": "swap_quote", "network": "base", "cache_as": cache_as});
        let err = case.env.registry.call("x402_fetch", fetch, &case.env.ctx).await.unwrap_err();
        assert_eq!(err.code, ErrorCode::RegisterWriteDenied, "{cache_as}: {err:?}");
    }
    assert_eq!(case.server.payments_received(), 1, "not paid again");
    assert_eq!(case.payments().await.len(), paid_once, "nothing signed");
    assert_eq!(case.env.devnet.balance_of(USDC, PAYEE).await.unwrap(), case.payee_usdc + QUOTE_PRICE);
}

/// A server that takes every payment and delivers nothing (it refuses the content after settling, or floods the
/// answer), and a model that retries: the third payment to it is refused before anything is signed, in this session
/// and any other (before: paid at every retry, up to the day's budget). So are concurrent calls beyond the first two.
#[tokio::test]
async fn a_server_that_takes_payments_and_delivers_nothing_is_not_paid_a_third_time() {
    use holdfast_web3::kernel::payment::MAX_UNDELIVERED;
    for (server, first) in [
        (Box::new(settles_and_refuses()) as Box<dyn FnOnce(String) -> Script>, ErrorCode::PaymentFailed),
        (Box::new(settles_and_floods()), ErrorCode::UpstreamError),
    ] {
        let case = Case::start(server, Tweaks::default()).await;
        for _ in 0..MAX_UNDELIVERED {
            let err = case.attempt().await.unwrap_err();
            assert_eq!(err.code, first);
            // The error says that a payment was made, so the model does not take it for "nothing happened".
            assert!(err.message.contains("journal j_"), "{err:?}");
            if first == ErrorCode::UpstreamError {
                // Before, a flood's "larger than" error did not.
                assert!(err.message.contains("a payment of 0.01 USDC"), "{err:?}");
                assert!(err.details.as_ref().is_some_and(|d| d["payment"]["journal_id"].is_string()), "{err:?}");
            }
        }
        let paid = U256::from(MAX_UNDELIVERED) * QUOTE_PRICE;
        assert_eq!(case.env.devnet.balance_of(USDC, PAYEE).await.unwrap(), case.payee_usdc + paid);
        refused(&case.attempt().await, ErrorCode::PaymentRefused, "unanswered or bought nothing");
        assert_eq!(case.env.devnet.balance_of(USDC, PAYEE).await.unwrap(), case.payee_usdc + paid, "not paid again");
        assert_eq!(case.server.payments_received(), MAX_UNDELIVERED, "signed no more");
        // A new session (an MCP host can open one at will) pays that payee no more either: counted in the journal.
        let second = case.env.services.new_session("session-2");
        let out = case.env.quote_in(&second, "swap 0.001 ETH for USDC", "ETH", "USDC", "0.001").await;
        let refused_there: ToolError = serde_json::from_value(out["error"].clone()).unwrap();
        refused(&Err(refused_there), ErrorCode::PaymentRefused, "unanswered or bought nothing");
        assert_eq!(case.server.payments_received(), MAX_UNDELIVERED, "not paid from another session");
    }
    // Eight concurrent calls in one session: at most two are paid.
    let case = Case::start(settles_and_refuses(), Tweaks::default()).await;
    assert!(case.attempt().await.is_err());
    let fetch = json!({"preset": "swap_quote", "network": "base", "cache_as": "swap_quote"});
    let calls = (0..8).map(|_| case.env.registry.call("x402_fetch", fetch.clone(), &case.env.ctx));
    let refused_now = futures::future::join_all(calls)
        .await
        .into_iter()
        .filter(|r| r.as_ref().is_err_and(|e| e.code == ErrorCode::PaymentRefused))
        .count();
    assert_eq!(case.server.payments_received(), MAX_UNDELIVERED, "paid at most twice in all");
    assert_eq!(refused_now, 8 - (MAX_UNDELIVERED - 1), "the others refused before signing");
}

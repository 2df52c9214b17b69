//! Each refusal of the safety model, on a real devnet. Every refused action leaves the chain untouched.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use crate::common::{Env, Tweaks, recalldata};
use alloy::primitives::{Address, U256, address};
use alloy::sol_types::SolCall;
use holdfast_core::ErrorCode;
use holdfast_devnet::{NATIVE, USDC, WETH};
use serde_json::{Value, json};

const ATTACKER: Address = address!("0x000000000000000000000000000000000000dEaD");

fn tx() -> Value {
    json!({"from_register": "swap_quote", "network": "base"})
}

fn set(quote: &mut Value, pointer: &str, v: Value) {
    *quote.pointer_mut(pointer).unwrap() = v;
}

#[tokio::test]
async fn every_validated_quote_field_is_checked_on_write() {
    let (env, tamper) = Env::with_hostile_quoter(Tweaks::default()).await;
    type Case = (&'static str, &'static str, Box<dyn Fn(&mut Value) + Send + Sync>);
    let attacker = ATTACKER.to_checksum(None);
    let cases: Vec<Case> = vec![
        ("ETH", "chainId", Box::new(|q| set(q, "/chainId", json!("1")))),
        ("ETH", "transaction.to", {
            let a = attacker.clone();
            Box::new(move |q| set(q, "/transaction/to", json!(a)))
        }),
        ("ETH", "issues.allowance.spender", {
            let a = attacker.clone();
            Box::new(move |q| set(q, "/issues/allowance", json!({"actual": "0", "spender": a})))
        }),
        ("USDC", "issues.allowance.spender", {
            let a = attacker.clone();
            Box::new(move |q| set(q, "/issues/allowance/spender", json!(a)))
        }),
        ("ETH", "taker", {
            let a = attacker.clone();
            Box::new(move |q| {
                q["taker"] = json!(a);
            })
        }),
        ("ETH", "sellToken", Box::new(|q| set(q, "/sellToken", json!(WETH.to_checksum(None))))),
        ("ETH", "buyToken", Box::new(|q| set(q, "/buyToken", json!(WETH.to_checksum(None))))),
        ("ETH", "sellAmount", Box::new(|q| set(q, "/sellAmount", json!("2000000000000000")))),
        ("ETH", "transaction.value", Box::new(|q| set(q, "/transaction/value", json!("0")))),
        ("USDC", "transaction.value", Box::new(|q| set(q, "/transaction/value", json!("1")))),
        (
            "ETH",
            "minBuyAmount",
            Box::new(|q| {
                q.as_object_mut().unwrap().remove("minBuyAmount");
            }),
        ),
        ("ETH", "minBuyAmount", Box::new(|q| set(q, "/minBuyAmount", json!("0")))),
        (
            "ETH",
            "minBuyAmount",
            Box::new(|q| {
                let b = q["buyAmount"].as_str().unwrap().to_owned();
                set(q, "/minBuyAmount", json!(format!("{b}0")))
            }),
        ),
    ];
    for (sell, field, f) in cases {
        *tamper.lock() = f;
        env.ctx.registers.remove("swap_quote");
        let (buy, amount) = if sell == "ETH" { ("USDC", "0.001") } else { ("ETH", "5") };
        let out = env.quote(&format!("swap {amount} {sell} for {buy}"), sell, buy, amount).await;
        let err: holdfast_core::ToolError =
            serde_json::from_value(out["error"].clone()).unwrap_or_else(|_| panic!("{field}: accepted {out}"));
        assert_eq!(err.code, ErrorCode::QuoteRejected, "{field}: {err:?}");
        assert!(err.message.starts_with(&format!("`{field}`")), "{field}: {}", err.message);
        assert!(env.ctx.registers.get("swap_quote").is_none(), "{field}: a rejected quote is never stored");
    }
}

#[tokio::test]
async fn honest_fields_with_calldata_that_pays_someone_else_are_refused_by_the_decoded_calldata() {
    let (env, tamper) = Env::with_hostile_quoter(Tweaks::default()).await;
    *tamper.lock() = Box::new(|q| recalldata(q, |c| c.recipient = ATTACKER));
    let out = env.quote("swap 0.001 ETH for USDC", "ETH", "USDC", "0.001").await;
    assert_eq!(out["origin"], "tool", "the fields are honest, so the quote is stored: {out}");
    let nonce = env.nonce().await;
    let err = env.err("web3_tx", tx()).await;
    assert_eq!(err.code, ErrorCode::QuoteRejected, "{err:?}");
    assert!(err.message.contains("`recipient`") && err.message.contains("not the wallet"), "{}", err.message);
    assert_eq!(env.nonce().await, nonce, "nothing was sent");
    assert_eq!(env.devnet.balance_of(USDC, ATTACKER).await.unwrap(), U256::ZERO);
}

#[tokio::test]
async fn calldata_that_takes_more_than_the_quoted_amount_is_refused_before_anything_is_simulated() {
    let (env, tamper) = Env::with_hostile_quoter(Tweaks::default()).await;
    // Approve far more than the quote sells, then let the calldata sell double.
    *tamper.lock() = Box::new(|q| recalldata(q, |c| c.sellAmount *= U256::from(2)));
    env.quote("sell 5 USDC for ETH", "USDC", "ETH", "5").await;
    let data = holdfast_web3::chain::IERC20::approveCall {
        spender: holdfast_devnet::VENUE,
        amount: U256::from(100_000_000u64),
    }
    .abi_encode();
    let signer = env.devnet.signer().unwrap();
    let chain = env.web3.chain(env.ctx.config.networks.resolve("base").unwrap()).unwrap();
    let plan = holdfast_web3::chain::TxPlan { to: USDC, data: data.into(), value: U256::ZERO };
    let fees = chain.fees(signer.address(), &plan).await.unwrap();
    let signed = chain.sign(&signer, &plan, fees, chain.next_nonce(signer.address(), None).await.unwrap()).unwrap();
    assert_eq!(chain.broadcast(&signed.raw).await, holdfast_web3::chain::Broadcast::Accepted);
    chain.wait_receipt(signed.hash, std::time::Duration::from_secs(10)).await.unwrap();
    let usdc = env.balance(USDC).await;
    let err = env.err("web3_tx", tx()).await;
    assert_eq!(err.code, ErrorCode::QuoteRejected, "{err:?}");
    assert!(err.message.contains("`sellAmount` is 10000000, not the sell amount 5000000"), "{}", err.message);
    assert_eq!(env.balance(USDC).await, usdc);
}

#[tokio::test]
async fn a_stale_quote_is_refused() {
    let env =
        Env::start_with(Tweaks { toml: "\n[registers.swap_quote]\nmax_age_secs = 1\n".into(), ..Default::default() })
            .await;
    env.quote("swap 0.001 ETH for USDC", "ETH", "USDC", "0.001").await;
    tokio::time::sleep(std::time::Duration::from_millis(1_200)).await;
    let nonce = env.nonce().await;
    let err = env.err("web3_tx", tx()).await;
    assert_eq!(err.code, ErrorCode::RegisterStale, "{err:?}");
    assert!(err.message.contains("swap_quote"));
    assert_eq!(env.nonce().await, nonce);
}

#[tokio::test]
async fn a_wrong_network_is_refused_and_never_defaulted() {
    let env = Env::start_with(Tweaks {
        toml: "\n[networks.othernet]\nchain_id = 31337\nrpc_urls = [\"http://127.0.0.1:9\"]\n".into(),
        ..Default::default()
    })
    .await;
    env.quote("swap 0.001 ETH for USDC", "ETH", "USDC", "0.001").await;
    let err = env.err("web3_tx", json!({"from_register": "swap_quote", "network": "ethereum"})).await;
    assert_eq!(err.code, ErrorCode::UnknownNetwork);
    let err = env.err("web3_tx", json!({"from_register": "swap_quote", "network": "othernet"})).await;
    assert_eq!(err.code, ErrorCode::QuoteRejected);
    assert!(err.message.starts_with("`network`"), "{}", err.message);
}

#[tokio::test]
async fn a_quote_for_a_contract_other_than_the_pinned_one_is_refused() {
    let env = Env::start_with(Tweaks {
        toml_replace: vec![(
            "swap_target = \"0x0000000000001fF3684f28c67538d4D072C22734\"".into(),
            "swap_target = \"0x000000000000000000000000000000000000bEEF\"".into(),
        )],
        ..Default::default()
    })
    .await;
    let out = env.quote("swap 0.001 ETH for USDC", "ETH", "USDC", "0.001").await;
    assert_eq!(out["error"]["code"], "quote_rejected", "{out}");
    assert!(
        out["error"]["message"]
            .as_str()
            .unwrap()
            .contains("pinned swap target 0x000000000000000000000000000000000000bEEF")
    );
}

#[tokio::test]
async fn a_reverting_transaction_is_stopped_by_the_simulation() {
    let (env, tamper) = Env::with_hostile_quoter(Tweaks::default()).await;
    *tamper.lock() = Box::new(|q| recalldata(q, |c| c.minBuyAmount = U256::MAX));
    env.quote("swap 0.001 ETH for USDC", "ETH", "USDC", "0.001").await;
    let nonce = env.nonce().await;
    let err = env.err("web3_tx", tx()).await;
    assert_eq!(err.code, ErrorCode::SimulationFailed);
    assert!(err.message.contains("reverted"), "{}", err.message);
    assert_eq!(env.nonce().await, nonce);
}

#[tokio::test]
async fn amounts_above_the_cap_are_denied_by_policy() {
    let env = Env::start().await;
    env.quote("swap 2 ETH for USDC", "ETH", "USDC", "2").await;
    let err = env.err("web3_tx", tx()).await;
    assert_eq!(err.code, ErrorCode::PolicyDenied);
    assert!(err.message.contains("per-transaction cap of 1 ETH"), "{}", err.message);
    // A token without a policy entry is denied by default.
    let env2 = Env::start_with(Tweaks {
        toml_replace: vec![("[policy.base.tokens.USDC]".into(), "[policy.base.tokens.DAI]".into())],
        ..Default::default()
    })
    .await;
    env2.quote("sell 5 USDC for ETH", "USDC", "ETH", "5").await;
    let err = env2.err("token_approve", json!({"for_quote": "swap_quote"})).await;
    assert_eq!(err.code, ErrorCode::PolicyDenied);
    assert!(err.message.contains("deny by default"), "{}", err.message);
}

#[tokio::test]
async fn a_model_typed_amount_waits_for_the_user_and_then_runs_once() {
    let env = Env::start().await;
    env.ok(
        "local_burner_wallet",
        json!({"action": "address", "token_register": null, "network": null, "cache_as": "wallet_address"}),
    )
    .await;
    env.ok("token_lookup", json!({"symbol": "ETH", "network": "base", "cache_as": "sell_token"})).await;
    env.ok("token_lookup", json!({"symbol": "USDC", "network": "base", "cache_as": "buy_token"})).await;
    env.ok("register_set", json!({"key": "sell_amount", "value": "1000000000000000"})).await;
    let fetched =
        env.ok("x402_fetch", json!({"preset": "swap_quote", "network": "base", "cache_as": "swap_quote"})).await;
    assert_eq!(fetched["origin"], "model", "a quote built from a model-typed amount is model-tainted");

    let nonce = env.nonce().await;
    let err = env.err("web3_tx", tx()).await;
    assert_eq!(err.code, ErrorCode::ConfirmationRequired, "{err:?}");
    let details = err.details.unwrap();
    let summary = &details["summary"];
    for key in ["sell", "buy_minimum", "contract", "max_network_fee", "buy_simulated"] {
        assert!(summary[key].is_string(), "the approval shows {key}: {summary}");
    }
    assert_eq!(summary["sell"], "0.001 ETH");
    let reason = details["reason"].as_str().unwrap();
    assert!(reason.contains("`sell_amount` was typed by the model, not taken from your words"), "{reason}");
    assert_eq!(env.nonce().await, nonce, "nothing is sent before approval");

    let id = details["confirmation_id"].as_str().unwrap();
    let approved = env.decide(id, holdfast_core::UserDecision::Approve).unwrap();
    let out = env.registry.call(&approved.tool, approved.params, &env.ctx).await.unwrap();
    assert_eq!(out["status"], "confirmed");
    assert_eq!(env.nonce().await, nonce + 1);
}

#[tokio::test]
async fn an_amount_above_the_auto_limit_needs_confirmation_even_when_the_user_typed_it() {
    let env = Env::start().await;
    env.quote("swap 0.02 ETH for USDC", "ETH", "USDC", "0.02").await;
    let err = env.err("web3_tx", tx()).await;
    assert_eq!(err.code, ErrorCode::ConfirmationRequired);
    assert!(err.message.contains("auto-approve limit"), "{}", err.message);
}

#[tokio::test]
async fn a_denied_confirmation_sends_nothing() {
    let env = Env::start().await;
    env.quote("swap 0.02 ETH for USDC", "ETH", "USDC", "0.02").await;
    let nonce = env.nonce().await;
    let err = env.err("web3_tx", tx()).await;
    let id = err.details.unwrap()["confirmation_id"].as_str().unwrap().to_owned();
    env.decide(&id, holdfast_core::UserDecision::Deny).unwrap();
    assert_eq!(
        env.decide(&id, holdfast_core::UserDecision::Approve).unwrap_err().code,
        ErrorCode::ConfirmationNotFound
    );
    let again = env.err("web3_tx", tx()).await;
    assert_eq!(again.code, ErrorCode::ConfirmationRequired, "a denial is not an approval");
    assert_eq!(env.nonce().await, nonce);
    let journal = env.web3.journal().for_session("session-1").await.unwrap();
    assert!(journal.iter().all(|e| e.kind == holdfast_web3::EntryKind::Payment), "only the paid quote: {journal:?}");
}

#[tokio::test]
async fn an_erc20_sell_without_allowance_is_refused() {
    let env = Env::start().await;
    env.quote("sell 5 USDC for ETH", "USDC", "ETH", "5").await;
    let nonce = env.nonce().await;
    let err = env.err("web3_tx", tx()).await;
    assert_eq!(err.code, ErrorCode::AllowanceRequired);
    assert_eq!(env.nonce().await, nonce);
}

#[tokio::test]
async fn the_same_quote_sent_twice_concurrently_goes_out_once() {
    let env = Env::start().await;
    env.quote("swap 0.001 ETH for USDC", "ETH", "USDC", "0.001").await;
    let nonce = env.nonce().await;
    let (a, b) = tokio::join!(env.call("web3_tx", tx()), env.call("web3_tx", tx()));
    // One sends; the other either finds it in flight (`duplicate_action`) or returns that same transaction.
    let hashes: Vec<&str> =
        [&a, &b].iter().filter_map(|r| r.as_ref().ok()).map(|v| v["hash"].as_str().unwrap()).collect();
    assert!(!hashes.is_empty(), "{a:?} {b:?}");
    assert!(hashes.iter().all(|h| *h == hashes[0]), "one transaction: {a:?} {b:?}");
    for r in [&a, &b] {
        if let Err(e) = r {
            assert_eq!(e.code, ErrorCode::DuplicateAction, "{e:?}");
        }
    }
    assert_eq!(env.nonce().await, nonce + 1);
    let again = env.ok("web3_tx", tx()).await;
    assert_eq!(again["hash"], hashes[0], "a later call returns the same transaction");
    assert_eq!(env.nonce().await, nonce + 1);
}

#[tokio::test]
async fn scratch_registers_and_model_crafted_values_never_reach_a_signature() {
    let env = Env::start().await;
    env.quote("swap 0.001 ETH for USDC", "ETH", "USDC", "0.001").await;
    let quote = env.ctx.registers.get("swap_quote").unwrap().value.to_string();
    // A model copying the quote into a scratch register gets a string, and web3_tx refuses scratch registers.
    let stored = env.call("register_set", json!({"key": "my_quote", "value": quote})).await;
    assert!(stored.is_err() || env.ctx.registers.get("my_quote").is_some());
    let err = env.err("web3_tx", json!({"from_register": "my_quote", "network": "base"})).await;
    assert_eq!(err.code, ErrorCode::RegisterTypeMismatch, "{err:?}");
    // Passing values directly is not even expressible.
    let err = env
        .err(
            "web3_tx",
            json!({"from_register": "swap_quote", "network": "base", "to": ATTACKER.to_checksum(None), "value": "1"}),
        )
        .await;
    assert_eq!(err.code, ErrorCode::InvalidParams);
    let err = env
        .err(
            "x402_fetch",
            json!({"preset": "swap_quote", "network": "base", "cache_as": "swap_quote", "url": "http://evil"}),
        )
        .await;
    assert_eq!(err.code, ErrorCode::InvalidParams);
    let err = env
        .err("x402_fetch", json!({"preset": "http://evil/quote", "network": "base", "cache_as": "swap_quote"}))
        .await;
    assert_eq!(err.code, ErrorCode::UnknownPreset);
    // Another tool's cache_as cannot fill a protected register.
    let err =
        env.err("x402_fetch", json!({"preset": "token_price", "network": "base", "cache_as": "swap_quote"})).await;
    assert!(matches!(err.code, ErrorCode::RegisterWriteDenied | ErrorCode::RegisterMissing), "{err:?}");
    let _ = NATIVE;
}

#[tokio::test]
async fn without_an_independent_price_a_swap_always_waits_and_says_so() {
    // No USDC feed: ETH → USDC has no price that does not come from the quoter.
    let usdc_feed = format!(
        "feeds.USDC = {{ address = \"{}\", decimals = 8, description = \"USDC / USD\", heartbeat_secs = 86400 }}",
        holdfast_devnet::contracts::USDC_USD_FEED
    );
    let env = Env::start_with(Tweaks { toml_replace: vec![(usdc_feed, String::new())], ..Default::default() }).await;
    env.quote("swap 0.001 ETH for USDC", "ETH", "USDC", "0.001").await;
    let nonce = env.nonce().await;
    let err = env.err("web3_tx", tx()).await;
    assert_eq!(err.code, ErrorCode::ConfirmationRequired, "inside the auto limit, yet asked: {err:?}");
    let details = err.details.unwrap();
    let reason = details["reason"].as_str().unwrap();
    assert!(reason.contains("no independent price") && reason.contains("at least"), "{reason}");
    assert!(details["summary"]["no_independent_price"].as_str().unwrap().contains("USDC"), "{details}");
    assert!(details["summary"]["price_check"].is_null());
    assert_eq!(env.nonce().await, nonce);
    // The user's approval still lets it run, once.
    env.decide(details["confirmation_id"].as_str().unwrap(), holdfast_core::UserDecision::Approve).unwrap();
    assert_eq!(env.ok("web3_tx", tx()).await["status"], "confirmed");
    assert_eq!(env.nonce().await, nonce + 1);
}

#[tokio::test]
async fn wrapping_through_the_venue_is_refused_unless_allowed() {
    let env = Env::start().await;
    env.quote("swap 0.001 ETH for WETH", "ETH", "WETH", "0.001").await;
    let nonce = env.nonce().await;
    let err = env.err("web3_tx", tx()).await;
    assert_eq!(err.code, ErrorCode::PolicyDenied, "{err:?}");
    assert!(err.message.contains("allow_wrap"), "{}", err.message);
    assert_eq!(env.nonce().await, nonce);

    let allowed = vec![("max_slippage_bps = 100".into(), "max_slippage_bps = 100\nallow_wrap = true".into())];
    let env = Env::start_with(Tweaks { toml_replace: allowed, ..Default::default() }).await;
    env.quote("swap 0.001 ETH for WETH", "ETH", "WETH", "0.001").await;
    assert_eq!(env.ok("web3_tx", tx()).await["status"], "confirmed");
    assert_eq!(env.balance(WETH).await, U256::from(1_000_000_000_000_000u64));
}

#[tokio::test]
async fn fees_above_the_networks_cap_are_refused() {
    let capped = vec![(
        "max_slippage_bps = 100".into(),
        "max_slippage_bps = 100\nmax_fee_per_gas_gwei = \"0.000000001\"".into(),
    )];
    let env = Env::start_with(Tweaks { toml_replace: capped, ..Default::default() }).await;
    env.quote("swap 0.001 ETH for USDC", "ETH", "USDC", "0.001").await;
    let nonce = env.nonce().await;
    let err = env.err("web3_tx", tx()).await;
    assert_eq!(err.code, ErrorCode::PolicyDenied, "{err:?}");
    assert!(err.message.contains("max fee") && err.message.contains("cap"), "{}", err.message);
    assert_eq!(env.nonce().await, nonce);
}

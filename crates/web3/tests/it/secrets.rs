//! Invariant 10: the private key appears in no tool output, event, log line, error or file the runtime writes —
//! swaps, approvals and x402 payments (paid quotes and a paid price lookup, their journal entries and events) included.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use crate::common::Env;
use holdfast_testkit::find_secret;
use serde_json::json;
use std::io::Write;
use std::sync::{Arc, Mutex};

#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<u8>>>);

impl Write for Capture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test(flavor = "current_thread")]
async fn the_key_never_leaves_the_wallet() {
    let logs = Capture::default();
    let sink = logs.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(move || sink.clone())
        .with_ansi(false)
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);

    let env = Env::start().await;
    let key = std::fs::read_to_string(&env.devnet.key_path).unwrap().trim().to_owned();
    let mut events = env.ctx.events.subscribe();
    let mut seen = Vec::<String>::new();

    let quote = env.quote("swap 0.001 ETH for USDC", "ETH", "USDC", "0.001").await;
    seen.push(quote.to_string());
    for (tool, params) in [
        ("web3_tx", json!({"from_register": "swap_quote", "network": "base"})),
        (
            "local_burner_wallet",
            json!({"action": "balance", "token_register": null, "network": "base", "cache_as": null}),
        ),
        (
            "local_burner_wallet",
            json!({"action": "token_balance", "token_register": "buy_token", "network": null, "cache_as": "usdc_amount"}),
        ),
        ("register_get", json!({"key": "wallet_address", "path": null})),
        ("web3_tx", json!({"from_register": "swap_quote", "network": "base"})),
        ("web3_tx", json!({"from_register": "wallet_address", "network": "base"})),
        ("x402_fetch", json!({"preset": "nope", "network": "base", "cache_as": "x"})),
    ] {
        let result = env.call(tool, params).await;
        seen.push(match result {
            Ok(v) => v.to_string(),
            Err(e) => format!("{e} {:?} {e:?}", e.details),
        });
    }
    // Payments: a paid price lookup, and its journal entry and payment.made event below.
    let usdc = holdfast_devnet::USDC.to_checksum(None);
    seen.push(format!("{:?}", env.call("register_set", json!({"key": "token_address", "value": usdc})).await));
    let price =
        env.ok("x402_fetch", json!({"preset": "token_price", "network": "base", "cache_as": "token_price"})).await;
    assert_eq!(price["payment"]["status"], "confirmed", "{price}");
    seen.push(price.to_string());
    let sell = env.quote("sell 5 USDC for ETH", "USDC", "ETH", "5").await;
    seen.push(sell.to_string());
    seen.push(env.ok("token_approve", json!({"for_quote": "swap_quote"})).await.to_string());
    seen.push(env.ok("web3_tx", json!({"from_register": "swap_quote", "network": "base"})).await.to_string());
    seen.push(format!("{:?}", env.web3));
    seen.push(format!("{:?}", env.ctx.registers.snapshot()));
    seen.push(serde_json::to_string(&env.web3.journal().recent(100).await.unwrap()).unwrap());
    while let Ok(e) = events.try_recv() {
        seen.push(e.envelope().to_string());
    }
    seen.push(String::from_utf8_lossy(&logs.0.lock().unwrap()).into_owned());
    for file in ["holdfast.toml", "presets.ron", "devnet.json", "anvil.log"] {
        seen.push(std::fs::read_to_string(env.devnet.dir.join(file)).unwrap_or_default());
    }
    assert!(seen.len() > 15);
    assert!(find_secret(&format!("a{}b", key.to_uppercase()), &key).is_some(), "the scan itself finds the key");
    for text in &seen {
        assert_eq!(find_secret(text, &key), None, "key material leaked");
    }
}

#[tokio::test]
async fn web3_tools_pass_the_registry_conformance_checks() {
    let env = Env::start().await;
    holdfast_testkit::check_tool_schemas(&env.registry).unwrap_or_else(|p| panic!("{}", p.join("\n")));
    holdfast_testkit::check_malformed_params(&env.registry, &env.ctx)
        .await
        .unwrap_or_else(|p| panic!("{}", p.join("\n")));
}

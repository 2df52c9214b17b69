//! The swap from quote-in-register to mined receipt on a real devnet (`web3_tx`: re-validation, allowance and
//! policy checks, eth_simulateV1 with balance deltas, gas/fee estimation, journal write, broadcast, receipt), against
//! the floor of the same chain round trips: signing and sending a plain transfer and waiting for its receipt.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use alloy::primitives::{Bytes, U256};
use criterion::{Criterion, criterion_group, criterion_main};
use holdfast_core::config::{ConfigDocument, CoreConfig};
use holdfast_core::{CoreServices, ToolRegistry};
use holdfast_devnet::TestDevnet;
use holdfast_web3::Web3;
use holdfast_web3::chain::TxPlan;
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};

fn swap(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let devnet = rt.block_on(TestDevnet::start()).unwrap();
    // Generous caps so the benchmark never hits the daily limit; auto-approve the benchmark's size.
    let mut toml = std::fs::read_to_string(&devnet.config_path).unwrap();
    toml = toml.replace("native_per_day = \"5\"", "native_per_day = \"1000\"");
    std::fs::write(&devnet.config_path, toml).unwrap();
    let doc = ConfigDocument::load(&devnet.config_path).unwrap();
    let core = CoreConfig::from_document(&doc).unwrap();
    let mut decls = core.registers.clone();
    Web3::install_declarations(&mut decls, &core.networks);
    let services = CoreServices::new(core).unwrap().with_declarations(decls);
    let web3 = Web3::from_document(&doc, Arc::clone(&services.config)).unwrap();
    let services = services.with_hook(web3.session_hook());
    let registry = ToolRegistry::new();
    holdfast_core::builtin::register_core_tools(&registry).unwrap();
    web3.register_tools(&registry).unwrap();
    let ctx = services.new_session("bench");
    ctx.context_bank.scan_input("swap 0.0001 ETH for USDC");
    rt.block_on(async {
        for (tool, params) in [
            (
                "local_burner_wallet",
                json!({"action": "address", "token_register": null, "network": null, "cache_as": "wallet_address"}),
            ),
            ("token_lookup", json!({"symbol": "ETH", "network": "base", "cache_as": "sell_token"})),
            ("token_lookup", json!({"symbol": "USDC", "network": "base", "cache_as": "buy_token"})),
            ("to_raw_amount", json!({"amount": "0.0001", "token_register": "sell_token", "cache_as": "sell_amount"})),
        ] {
            registry.call(tool, params, &ctx).await.unwrap();
        }
    });

    let mut g = c.benchmark_group("swap_quote_in_register_to_receipt");
    g.sample_size(30);
    g.measurement_time(Duration::from_secs(10));
    g.bench_function("web3_tx", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    registry
                        .call(
                            "x402_fetch",
                            json!({"preset": "swap_quote", "network": "base", "cache_as": "swap_quote"}),
                            &ctx,
                        )
                        .await
                        .unwrap();
                    let start = Instant::now();
                    let out = registry
                        .call("web3_tx", json!({"from_register": "swap_quote", "network": "base"}), &ctx)
                        .await
                        .unwrap();
                    total += start.elapsed();
                    assert_eq!(out["status"], "confirmed");
                }
                total
            })
        })
    });
    let chain = web3.chain(services.config.networks.resolve("base").unwrap()).unwrap();
    let signer = devnet.signer().unwrap();
    let plan = TxPlan { to: devnet.dev_account(), data: Bytes::new(), value: U256::from(1u8) };
    g.bench_function("baseline_plain_transfer_sign_send_receipt", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let start = Instant::now();
                for _ in 0..iters {
                    let fees = chain.fees(signer.address(), &plan).await.unwrap();
                    let (signed, ()) = chain
                        .sign_journal_broadcast(&signer, &plan, fees, |_| async { Ok(()) })
                        .await
                        .map_err(|e| e.0)
                        .unwrap();
                    chain.wait_receipt(signed.hash, Duration::from_secs(10)).await.unwrap().unwrap();
                }
                start.elapsed()
            })
        })
    });
    g.finish();
    drop(devnet);
}

criterion_group!(benches, swap);
criterion_main!(benches);

//! The swap from quote-in-register to mined receipt on a real devnet (`web3_tx`: re-validation, the decoded
//! calldata, allowance and policy checks, gas/fee estimation, under the wallet lock the exact simulation with balance
//! reads before and after, the independent price, the journal's reservation and signed record, broadcast, receipt),
//! against the floor of the same chain round trips: signing and sending a plain transfer and waiting for its receipt.
//!
//! And the paid quote (`x402_fetch` through the devnet's x402 paywall: 402, policy, EIP-3009 signature, journal,
//! the facilitator's verify, the quote, settlement on chain, the client's on-chain check) against the same tool
//! fetching the same quote from the quoter without a paywall.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

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
    toml = toml.replace("daily_budget = \"5\"", "daily_budget = \"1000\"");
    // The same quoter without the paywall, as a second preset (the baseline of the paid quote).
    let free = rt.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let app = holdfast_devnet::quote_router(devnet.quote_state());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        url
    });
    let presets_path = devnet.dir.join("presets.ron");
    let presets = std::fs::read_to_string(&presets_path).unwrap();
    let free_preset = holdfast_devnet::config::presets_ron(&free).replacen("\"swap_quote\": (", "\"free_quote\": (", 1);
    let free_entry =
        &free_preset[free_preset.find("\"free_quote\"").unwrap()..free_preset.find("\"token_price\"").unwrap()];
    let presets = presets.replacen("{\n    \"swap_quote\"", &format!("{{\n    {free_entry}\"swap_quote\""), 1);
    std::fs::write(&presets_path, presets).unwrap();
    std::fs::write(&devnet.config_path, toml).unwrap();
    let (web3, services, registry, ctx) = load(&rt, &devnet);
    let amount = json!({"amount": "0.0001", "token_register": "sell_token", "cache_as": "sell_amount"});
    rt.block_on(registry.call("to_raw_amount", amount, &ctx)).unwrap();

    let mut g = c.benchmark_group("swap_quote_in_register_to_receipt");
    g.sample_size(30);
    g.measurement_time(Duration::from_secs(10));
    timed_swaps(&mut g, "web3_tx", &rt, &registry, &ctx);
    let chain = web3.chain(services.config.networks.resolve("base").unwrap()).unwrap();
    // The two costs the value-moving kernel added to every swap, measured in the same run: the independent price
    // (two AggregatorV3 feeds, four eth_calls) and the journal's atomic reservation plus the durable signed record.
    let (sell, buy) = (
        holdfast_web3::quote::TokenRef::from_register(&ctx.registers, "sell_token").unwrap(),
        holdfast_web3::quote::TokenRef::from_register(&ctx.registers, "buy_token").unwrap(),
    );
    g.bench_function("part_independent_price_read", |b| {
        b.to_async(&rt).iter(|| async {
            let feeds = web3.price_feeds("base");
            let amount = U256::from(100_000_000_000_000u64);
            holdfast_web3::kernel::price::expected_output(&chain, feeds, &sell, &buy, amount).await.unwrap();
        })
    });
    g.bench_function("part_journal_reserve_and_signed_record", |b| {
        b.to_async(&rt).iter(|| async {
            use holdfast_web3::journal::{DayCap, EntryKind, EntryStatus, NewEntry, Reserved};
            let id = holdfast_core::confirm::random_id();
            let entry = NewEntry {
                session_id: "bench".into(),
                kind: EntryKind::Swap,
                network: "base".into(),
                chain_id: 1,
                from: "0xbench".into(),
                to: "0xvenue".into(),
                nonce: None,
                value: "0".into(),
                asset: "0xasset".into(),
                asset_symbol: "ETH".into(),
                amount: "1".into(),
                fingerprint: id.clone(),
                intent: Some(id.clone()),
                raw_tx: None,
                tx_hash: None,
                error: None,
                summary: json!({"action": "bench"}),
                authorization: None,
            };
            let cap = DayCap { limit: U256::MAX, kinds: EntryKind::Swap.cap_group() };
            use holdfast_web3::journal::test_hooks as j;
            let journal = web3.journal();
            let Reserved::New(e) = j::reserve(journal, entry, Some(cap)).await.unwrap() else { panic!("reserved") };
            j::mark_signed(journal, &e.id, Some(0), "0x02", &id, None).await.unwrap();
            j::transition(journal, &e.id, &[EntryStatus::Signed], EntryStatus::Failed, Default::default())
                .await
                .unwrap();
        })
    });
    plain_transfer_floor(&mut g, &rt, &chain, &devnet);
    g.finish();

    let mut g = c.benchmark_group("x402_paid_quote");
    g.sample_size(30);
    g.measurement_time(Duration::from_secs(10));
    g.bench_function("x402_fetch_paid_quote", |b| {
        b.to_async(&rt).iter(|| async {
            let out = registry
                .call("x402_fetch", json!({"preset": "swap_quote", "network": "base", "cache_as": "swap_quote"}), &ctx)
                .await
                .unwrap();
            assert_eq!(out["payment"]["status"], "confirmed");
        })
    });
    g.bench_function("baseline_x402_fetch_unpaid_quote", |b| {
        b.to_async(&rt).iter(|| async {
            let out = registry
                .call("x402_fetch", json!({"preset": "free_quote", "network": "base", "cache_as": "free_quote"}), &ctx)
                .await
                .unwrap();
            assert!(out["payment"].is_null());
        })
    });
    g.finish();
    drop(devnet);
}

/// The same swap with the funds in the devnet's smart account (`[wallet] account`): each `web3_tx` also reads the
/// on-chain limit and funds the sell amount from the account through Safe's AllowanceModule (a transaction of its own,
/// mined before the swap), against the plain-transfer floor on the same devnet, in the same run.
fn account_swap(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let limits = vec![
        holdfast_devnet::OnchainLimit {
            asset: "ETH".into(),
            amount: "1000000000000000000".into(),
            period_secs: 86_400,
        },
        holdfast_devnet::OnchainLimit {
            asset: holdfast_devnet::USDC.to_checksum(None),
            amount: "1000000000".into(),
            period_secs: 86_400,
        },
    ];
    let devnet = rt.block_on(TestDevnet::start_with_account(limits)).unwrap();
    // Gas for the many hundreds of funds and swaps criterion runs (the devnet gives the signer 0.05 ETH).
    rt.block_on(devnet.fund_eth(devnet.wallet_address, U256::from(10u128.pow(19)))).unwrap();
    let mut toml = std::fs::read_to_string(&devnet.config_path).unwrap();
    toml = toml.replace("native_per_day = \"5\"", "native_per_day = \"1000\"");
    toml = toml.replace("daily_budget = \"5\"", "daily_budget = \"1000\"");
    std::fs::write(&devnet.config_path, toml).unwrap();
    let (web3, services, registry, ctx) = load(&rt, &devnet);
    let mut g = c.benchmark_group("swap_through_the_account");
    g.sample_size(20);
    g.measurement_time(Duration::from_secs(10));
    timed_swaps(&mut g, "web3_tx_funded_from_the_account", &rt, &registry, &ctx);
    let chain = web3.chain(services.config.networks.resolve("base").unwrap()).unwrap();
    plain_transfer_floor(&mut g, &rt, &chain, &devnet);
    g.finish();
    drop(devnet);
}

/// The runtime over the devnet's configuration, with a session that holds the wallet, ETH as the sell token and USDC
/// as the buy token (the user asked to swap 0.0001 ETH for USDC).
fn load(
    rt: &tokio::runtime::Runtime,
    devnet: &TestDevnet,
) -> (Arc<Web3>, CoreServices, ToolRegistry, holdfast_core::ToolContext) {
    let doc = ConfigDocument::load(&devnet.config_path).unwrap();
    let core = CoreConfig::from_document(&doc).unwrap();
    let services = CoreServices::new(core).unwrap();
    let web3 = Web3::from_document(&doc, Arc::clone(&services.config)).unwrap();
    let registry = ToolRegistry::new();
    holdfast_core::builtin::register_core_tools(&registry).unwrap();
    let services = web3.install(services, &registry).unwrap();
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
        ] {
            registry.call(tool, params, &ctx).await.unwrap();
        }
    });
    (web3, services, registry, ctx)
}

/// `web3_tx` from a fresh quote in the register to its mined receipt, timed alone: each swap is one the user asked
/// for (a message of theirs, the amount converted from it — one authorization moves value once — then the quote),
/// all outside the timed part.
fn timed_swaps(
    g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
    rt: &tokio::runtime::Runtime,
    registry: &ToolRegistry,
    ctx: &holdfast_core::ToolContext,
) {
    g.bench_function(name, |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    ctx.context_bank.scan_input("swap 0.0001 ETH for USDC");
                    let amount = json!({"amount": "0.0001", "token_register": "sell_token", "cache_as": "sell_amount"});
                    registry.call("to_raw_amount", amount, ctx).await.unwrap();
                    let quote = json!({"preset": "swap_quote", "network": "base", "cache_as": "swap_quote"});
                    registry.call("x402_fetch", quote, ctx).await.unwrap();
                    let start = Instant::now();
                    let out = registry
                        .call("web3_tx", json!({"from_register": "swap_quote", "network": "base"}), ctx)
                        .await
                        .unwrap();
                    total += start.elapsed();
                    assert_eq!(out["status"], "confirmed");
                }
                total
            })
        })
    });
}

/// The floor: estimating, signing and sending a plain 1-wei transfer and waiting for its receipt.
fn plain_transfer_floor(
    g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    rt: &tokio::runtime::Runtime,
    chain: &holdfast_web3::chain::Chain,
    devnet: &TestDevnet,
) {
    let signer = devnet.signer().unwrap();
    let plan = TxPlan { to: devnet.dev_account(), data: Bytes::new(), value: U256::from(1u8) };
    g.bench_function("baseline_plain_transfer_sign_send_receipt", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let start = Instant::now();
                for _ in 0..iters {
                    let fees = chain.fees(signer.address(), &plan).await.unwrap();
                    let nonce = chain.next_nonce(signer.address(), None).await.unwrap();
                    let signed = chain.sign(&signer, &plan, fees, nonce).unwrap();
                    assert_eq!(chain.broadcast(&signed.raw).await, holdfast_web3::chain::Broadcast::Accepted);
                    chain.wait_receipt(signed.hash, Duration::from_secs(10)).await.unwrap();
                }
                start.elapsed()
            })
        })
    });
}

criterion_group!(benches, swap, account_swap);
criterion_main!(benches);

//! The seed-001 swap flow on a real devnet: wallet → tokens → amount → quote → web3_tx, both directions.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use crate::common::Env;
use alloy::primitives::U256;
use holdfast_core::ErrorCode;
use holdfast_devnet::{NATIVE, USDC, VENUE};
use serde_json::json;

#[tokio::test]
async fn sells_eth_for_usdc_within_the_quote() {
    let env = Env::start().await;
    let quote = env.quote("swap 0.001 ETH for USDC", "ETH", "USDC", "0.001").await;
    assert_eq!(quote["origin"], "tool", "{quote}");
    assert_eq!(quote["quote"]["allowance_required"], false);
    assert_eq!(quote["payment"]["amount"], "0.01 USDC", "the quote was paid: {quote}");
    assert_eq!(quote["payment"]["status"], "confirmed");
    assert_eq!(quote["payment"]["payee"], holdfast_devnet::PAYEE.to_checksum(None));
    let stored = env.ctx.registers.get("swap_quote").unwrap();
    let min_buy = U256::from_str_radix(stored.value["minBuyAmount"].as_str().unwrap(), 10).unwrap();
    let buy = U256::from_str_radix(stored.value["buyAmount"].as_str().unwrap(), 10).unwrap();
    let (eth0, usdc0, nonce0) = (env.balance(NATIVE).await, env.balance(USDC).await, env.nonce().await);

    let mut events = env.ctx.events.subscribe();
    let out = env.ok("web3_tx", json!({"from_register": "swap_quote", "network": "base"})).await;
    assert_eq!(out["status"], "confirmed", "{out}");
    assert_eq!(out["summary"]["sell"], "0.001 ETH");
    assert_eq!(out["summary"]["contract"], VENUE.to_checksum(None));
    let check = &out["summary"]["price_check"];
    assert_eq!(check["passed"], true, "checked against the devnet's ETH/USD and USDC/USD feeds: {out}");
    assert!(check["source"].as_str().unwrap().contains("ETH/USD feed"), "{check}");
    assert!(check["deviation_bps"].as_i64().unwrap() < 100, "{check}");

    let (eth1, usdc1) = (env.balance(NATIVE).await, env.balance(USDC).await);
    let received = usdc1 - usdc0;
    assert!(received >= min_buy && received <= buy, "received {received}, quote {min_buy}..{buy}");
    let gas_cost = eth0 - eth1 - U256::from(1_000_000_000_000_000u64);
    assert!(gas_cost < U256::from(10_000_000_000_000_000u64), "only the sell amount and gas left the wallet");
    assert_eq!(env.nonce().await, nonce0 + 1, "exactly one transaction");

    // The journal has the paid quote and the swap, both confirmed, written before they left; the quote is spent.
    let journal = env.web3.journal().for_session("session-1").await.unwrap();
    assert_eq!(journal.len(), 2, "{journal:?}");
    assert_eq!(journal[0].kind, holdfast_web3::EntryKind::Payment);
    assert_eq!(journal[0].status, holdfast_web3::EntryStatus::Confirmed);
    assert_eq!(journal[0].amount, "10000", "0.01 USDC for the quote");
    assert_eq!(journal[0].tx_hash.as_deref(), quote["payment"]["transaction"].as_str());
    assert_eq!(journal[1].kind, holdfast_web3::EntryKind::Swap);
    assert_eq!(journal[1].status, holdfast_web3::EntryStatus::Confirmed);
    assert_eq!(journal[1].tx_hash.as_deref(), out["hash"].as_str());
    assert!(env.ctx.registers.get("swap_quote").is_none(), "the settled swap spent the quote");
    let again = env.ok("web3_tx", json!({"from_register": "swap_quote", "network": "base"})).await;
    assert_eq!((&again["hash"], &again["journal_id"]), (&out["hash"], &out["journal_id"]), "the same transaction");
    assert_eq!(env.nonce().await, nonce0 + 1, "still exactly one transaction");

    let mut names = Vec::new();
    while let Ok(e) = events.try_recv() {
        names.push(e.name().to_owned());
    }
    let pending = names.iter().position(|n| n == "tx.pending").unwrap();
    let confirmed = names.iter().position(|n| n == "tx.confirmed").unwrap();
    assert!(pending < confirmed, "{names:?}");
}

#[tokio::test]
async fn sells_usdc_for_eth_after_an_exact_approval() {
    let env = Env::start().await;
    let quote = env.quote("sell 25 USDC for ETH", "USDC", "ETH", "25").await;
    assert_eq!(quote["quote"]["allowance_required"], true, "{quote}");

    let err = env.err("web3_tx", json!({"from_register": "swap_quote", "network": "base"})).await;
    assert_eq!(err.code, ErrorCode::AllowanceRequired, "{err:?}");
    assert!(err.message.contains("token_approve"));

    let approved = env.ok("token_approve", json!({"for_quote": "swap_quote"})).await;
    assert_eq!(approved["result"], "approved", "{approved}");
    assert_eq!(approved["allowance"], "25 USDC", "exactly the sell amount, never unlimited");
    assert_eq!(approved["spender"], VENUE.to_checksum(None));
    let again = env.ok("token_approve", json!({"for_quote": "swap_quote"})).await;
    assert_eq!(again["hash"], approved["hash"], "the same approval, not a second one");
    assert_eq!(again["allowance"], "25 USDC");

    let (eth0, usdc0) = (env.balance(NATIVE).await, env.balance(USDC).await);
    let min_buy =
        U256::from_str_radix(env.ctx.registers.get("swap_quote").unwrap().value["minBuyAmount"].as_str().unwrap(), 10)
            .unwrap();
    let out = env.ok("web3_tx", json!({"from_register": "swap_quote", "network": "base"})).await;
    assert_eq!(out["status"], "confirmed", "{out}");
    let (eth1, usdc1) = (env.balance(NATIVE).await, env.balance(USDC).await);
    assert_eq!(usdc0 - usdc1, U256::from(25_000_000u64), "exactly the sell amount left");
    let gas_allowance = U256::from(10_000_000_000_000_000u64);
    assert!(eth1 + gas_allowance >= eth0 + min_buy, "received at least the minimum, less gas");
    let kinds: Vec<_> = env.web3.journal().for_session("session-1").await.unwrap().iter().map(|e| e.kind).collect();
    use holdfast_web3::EntryKind::{Approval, Payment, Swap};
    assert_eq!(kinds, [Payment, Approval, Swap], "paid quote + approval + swap");
}

/// A quote's maximum age holds up to the signature: a swap that passed the freshness check and then waited for the
/// wallet (another send of it held the lock) until its quote was older than 60 s is refused `register_stale`, and
/// nothing is signed.
#[tokio::test(flavor = "multi_thread")]
async fn a_quote_that_grows_stale_while_the_swap_waits_for_the_wallet_is_not_signed() {
    let env = Env::start().await;
    env.quote("swap 0.001 ETH for USDC", "ETH", "USDC", "0.001").await;
    let quoted = tokio::time::Instant::now();
    let nonce0 = env.nonce().await;
    let wallet = env.web3.wallet().address().to_checksum(None);
    let held = env.web3.journal().lock_wallet(holdfast_devnet::CHAIN_ID, &wallet).await.unwrap();
    let swap = {
        let (registry, ctx) = (env.registry.clone(), env.ctx.clone());
        tokio::spawn(async move {
            registry.call("web3_tx", json!({"from_register": "swap_quote", "network": "base"}), &ctx).await
        })
    };
    let stale = quoted + holdfast_core::registers::QUOTE_MAX_AGE + std::time::Duration::from_secs(1);
    tokio::time::sleep_until(stale).await;
    assert!(!swap.is_finished(), "the swap waits for the wallet");
    drop(held);
    // Before: signed and mined on the 61-second-old quote.
    let err = swap.await.unwrap().unwrap_err();
    assert_eq!(err.code, ErrorCode::RegisterStale, "{err:?}");
    assert_eq!(env.nonce().await, nonce0, "nothing signed");
    let journal = env.web3.journal().for_session("session-1").await.unwrap();
    assert!(journal.iter().all(|e| e.kind != holdfast_web3::EntryKind::Swap), "{journal:?}");
}

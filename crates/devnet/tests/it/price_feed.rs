//! The devnet's Chainlink-style price feeds against a real anvil: ETH / USD follows the swap venue's reserves, USDC /
//! USD answers $1, the override slots replace the answer and the timestamps, and misconfigured feeds revert.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use alloy::network::TransactionBuilder;
use alloy::primitives::{Address, I256, U256};
use alloy::providers::ext::AnvilApi;
use alloy::providers::{DynProvider, Provider};
use alloy::rpc::types::TransactionRequest;
use holdfast_devnet::contracts::abi::{IDevnetPriceFeed, IDevnetToken, ISwapVenue};
use holdfast_devnet::contracts::{
    ETH_USD_FEED, ETHER, FEED_ANSWER_OVERRIDE_SLOT, FEED_DECIMALS, ONE_USDC, USDC_USD_FEED, placements,
    set_feed_answer_override, set_feed_updated_at_override,
};
use holdfast_devnet::{NATIVE, TestDevnet, USDC, VENUE};
use serde_json::Value;
use std::time::Duration;

/// One US dollar in feed units (8 decimals).
fn usd(dollars: u64) -> I256 {
    I256::try_from(dollars).unwrap() * I256::try_from(100_000_000u64).unwrap()
}

/// The venue's mid price from its reserves, as the feed must compute it: usdc · 1e8 · 1e18 / (eth · 1e6).
async fn venue_mid(dn: &TestDevnet) -> I256 {
    let eth = dn.balance_of(NATIVE, VENUE).await.unwrap();
    let usdc = dn.balance_of(USDC, VENUE).await.unwrap();
    let scale = U256::from(100_000_000u64) * ETHER / ONE_USDC;
    I256::try_from(usdc * scale / eth).unwrap()
}

async fn answer(provider: &DynProvider, feed: Address) -> I256 {
    IDevnetPriceFeed::new(feed, provider).latestRoundData().call().await.unwrap().answer
}

/// Sends `tx` from anvil's unlocked dev account and requires success.
async fn send(dn: &TestDevnet, tx: TransactionRequest) {
    let provider = dn.provider();
    let hash = *provider.send_transaction(tx.with_from(dn.dev_account())).await.unwrap().tx_hash();
    for _ in 0..300 {
        if let Some(receipt) = provider.get_transaction_receipt(hash).await.unwrap() {
            assert!(receipt.status(), "reverted: {hash}");
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("not mined: {hash}");
}

/// The 4-byte selector of a revert, from a failed `call()`.
fn revert_selector(err: &alloy::contract::Error) -> [u8; 4] {
    let data = err.as_revert_data().unwrap_or_else(|| panic!("not a revert: {err}"));
    data[..4].try_into().unwrap()
}

#[tokio::test]
async fn feeds_follow_the_venue_and_obey_their_overrides() {
    let dn = TestDevnet::start().await.unwrap();
    let provider = dn.provider();
    let eth_usd = IDevnetPriceFeed::new(ETH_USD_FEED, &provider);
    let usdc_usd = IDevnetPriceFeed::new(USDC_USD_FEED, &provider);

    // The read surface.
    assert_eq!(FEED_DECIMALS, 8);
    assert_eq!(eth_usd.decimals().call().await.unwrap(), 8);
    assert_eq!(usdc_usd.decimals().call().await.unwrap(), 8);
    assert_eq!(eth_usd.description().call().await.unwrap(), "ETH / USD");
    assert_eq!(usdc_usd.description().call().await.unwrap(), "USDC / USD");
    assert_eq!(eth_usd.version().call().await.unwrap(), U256::from(4));

    // Right after start: the venue's mid price, 300000 USDC / 100 ETH = 3000e8.
    let round = eth_usd.latestRoundData().call().await.unwrap();
    assert_eq!(round.answer, venue_mid(&dn).await);
    assert_eq!(round.answer, usd(3000));
    let block = provider.get_block_by_number(alloy::eips::BlockNumberOrTag::Latest).await.unwrap().unwrap();
    assert_eq!(u64::try_from(round.roundId).unwrap(), block.header.number, "roundId is block.number");
    assert_eq!(round.answeredInRound, round.roundId);
    assert_eq!(round.updatedAt, U256::from(block.header.timestamp), "updatedAt is block.timestamp");
    assert_eq!(round.startedAt, round.updatedAt);
    assert_eq!(answer(&provider, USDC_USD_FEED).await, usd(1));

    // getRoundData answers any round id with the latest data under that id.
    let old = eth_usd.getRoundData(alloy::primitives::aliases::U80::from(7)).call().await.unwrap();
    assert_eq!(old.roundId, alloy::primitives::aliases::U80::from(7));
    assert_eq!(old.answeredInRound, old.roundId);
    assert_eq!(old.answer, round.answer);

    // A swap that sells 10 ETH into the venue lowers the price; the feed follows at once.
    let venue = ISwapVenue::new(VENUE, &provider);
    let ten = ETHER * U256::from(10);
    send(&dn, venue.sell(NATIVE, USDC, ten, U256::from(1), dn.dev_account()).value(ten).into_transaction_request())
        .await;
    let after_sell = answer(&provider, ETH_USD_FEED).await;
    assert_eq!(after_sell, venue_mid(&dn).await);
    assert!(after_sell < usd(2500), "{after_sell}");
    assert_eq!(answer(&provider, USDC_USD_FEED).await, usd(1), "the USDC feed does not move");

    // Buying ETH back with USDC raises it again.
    let usdc_in = ONE_USDC * U256::from(50_000);
    let usdc = IDevnetToken::new(USDC, &provider);
    send(&dn, usdc.mint(dn.dev_account(), usdc_in).into_transaction_request()).await;
    send(&dn, usdc.approve(VENUE, usdc_in).into_transaction_request()).await;
    send(&dn, venue.sell(USDC, NATIVE, usdc_in, U256::from(1), dn.dev_account()).into_transaction_request()).await;
    let after_buy = answer(&provider, ETH_USD_FEED).await;
    assert_eq!(after_buy, venue_mid(&dn).await);
    assert!(after_buy > after_sell, "{after_buy} vs {after_sell}");

    // The override slot replaces the answer (the venue itself is untouched) until it is zeroed again.
    set_feed_answer_override(&provider, ETH_USD_FEED, usd(4000)).await.unwrap();
    assert_eq!(answer(&provider, ETH_USD_FEED).await, usd(4000));
    assert_eq!(eth_usd.answerOverride().call().await.unwrap(), usd(4000));
    assert_ne!(venue_mid(&dn).await, usd(4000));
    assert_eq!(answer(&provider, USDC_USD_FEED).await, usd(1), "one feed's override leaves the other alone");
    let raw = provider.get_storage_at(ETH_USD_FEED, FEED_ANSWER_OVERRIDE_SLOT).await.unwrap();
    assert_eq!(raw, usd(4000).into_raw(), "the documented slot holds the override");
    set_feed_answer_override(&provider, ETH_USD_FEED, -usd(1)).await.unwrap();
    assert_eq!(answer(&provider, ETH_USD_FEED).await, -usd(1), "a negative override is answered as is");
    set_feed_answer_override(&provider, USDC_USD_FEED, I256::try_from(98_000_000u64).unwrap()).await.unwrap();
    assert_eq!(answer(&provider, USDC_USD_FEED).await, I256::try_from(98_000_000u64).unwrap(), "a depeg");
    set_feed_answer_override(&provider, ETH_USD_FEED, I256::ZERO).await.unwrap();
    assert_eq!(answer(&provider, ETH_USD_FEED).await, venue_mid(&dn).await);

    // The updatedAt override makes the feed stale.
    set_feed_updated_at_override(&provider, ETH_USD_FEED, 1_000).await.unwrap();
    let stale = eth_usd.latestRoundData().call().await.unwrap();
    assert_eq!((stale.startedAt, stale.updatedAt), (U256::from(1_000), U256::from(1_000)));
    assert_eq!(stale.answer, venue_mid(&dn).await);
    set_feed_updated_at_override(&provider, ETH_USD_FEED, 0).await.unwrap();
    let fresh = eth_usd.latestRoundData().call().await.unwrap();
    assert!(fresh.updatedAt > U256::from(1_000));

    // devnet.json lists both feeds.
    let json: Value = serde_json::from_str(&std::fs::read_to_string(dn.dir.join("devnet.json")).unwrap()).unwrap();
    assert_eq!(json["contracts"]["eth_usd_feed"], "0x71041dddad3595F9CEd3DcCFBe3D1F4b0a16Bb70");
    assert_eq!(json["contracts"]["usdc_usd_feed"], "0x7e860098F58bBFC8648a4311b374B1D669a2bc6B");

    // A venue without ether has no mid price: the ETH / USD feed reverts with NoMidPrice.
    provider.anvil_set_balance(VENUE, U256::ZERO).await.unwrap();
    let err = eth_usd.latestRoundData().call().await.unwrap_err();
    assert_eq!(revert_selector(&err), <IDevnetPriceFeed::NoMidPrice as alloy::sol_types::SolError>::SELECTOR);
    dn.stop().await;
}

#[tokio::test]
async fn an_unconfigured_feed_reverts() {
    let dn = TestDevnet::start().await.unwrap();
    let provider = dn.provider();
    let (_, _, code) = placements().unwrap().into_iter().find(|(_, at, _)| *at == ETH_USD_FEED).unwrap();
    let bare = Address::repeat_byte(0x42);
    provider.anvil_set_code(bare, code).await.unwrap();
    let feed = IDevnetPriceFeed::new(bare, &provider);
    assert_eq!(feed.decimals().call().await.unwrap(), 8, "constants answer without configuration");
    let err = feed.latestRoundData().call().await.unwrap_err();
    assert_eq!(revert_selector(&err), <IDevnetPriceFeed::NotConfigured as alloy::sol_types::SolError>::SELECTOR);
    let err = feed.description().call().await.unwrap_err();
    assert_eq!(revert_selector(&err), <IDevnetPriceFeed::NotConfigured as alloy::sol_types::SolError>::SELECTOR);

    // An unknown mode is refused, not guessed.
    provider.anvil_set_storage_at(bare, U256::ZERO, U256::from(9).into()).await.unwrap();
    let err = feed.latestRoundData().call().await.unwrap_err();
    assert_eq!(revert_selector(&err), <IDevnetPriceFeed::UnknownMode as alloy::sol_types::SolError>::SELECTOR);
    dn.stop().await;
}

//! TestDevnet and the quoter against a real anvil: funding, prices, honest quotes executed with the burner key,
//! allowance issues, and refusals.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use alloy::network::{EthereumWallet, TransactionBuilder};
use alloy::primitives::{Address, Bytes, U256};
use alloy::providers::{DynProvider, Provider, ProviderBuilder};
use alloy::rpc::types::{TransactionReceipt, TransactionRequest};
use holdfast_devnet::contracts::abi::{IDevnetToken, ISwapVenue};
use holdfast_devnet::contracts::{ETHER, ONE_USDC};
use holdfast_devnet::{CHAIN_ID, NATIVE, QuoteRequest, TestDevnet, USDC, VENUE, WALLET_ETH, WALLET_USDC, WETH};
use serde_json::Value;
use std::str::FromStr;
use std::time::{Duration, Instant};

/// GET through the x402 paywall, paying 0.01 USDC with the burner key (free endpoints answer directly).
async fn get(url: &str) -> (u16, Value) {
    let signer = SIGNER.with(|s| s.borrow().clone()).expect("set_payer first");
    let answer = if url.ends_with("/health") {
        crate::common::get_with(url, None).await
    } else {
        crate::common::paid_get(url, &signer).await
    };
    assert!(!answer.body.is_null(), "not JSON: {url}");
    (answer.status, answer.body)
}

thread_local! {
    static SIGNER: std::cell::RefCell<Option<alloy::signers::local::PrivateKeySigner>> = const { std::cell::RefCell::new(None) };
}

/// Starts a devnet and makes its burner wallet the payer of [`get`].
async fn start() -> TestDevnet {
    let dn = TestDevnet::start().await.unwrap();
    let signer = dn.signer().unwrap();
    SIGNER.with(|s| *s.borrow_mut() = Some(signer));
    dn
}

fn quote_url(dn: &TestDevnet, sell: Address, buy: Address, amount: U256, extra: &str) -> String {
    format!(
        "{}/swap/allowance-holder/quote?chainId={CHAIN_ID}&sellToken={sell}&buyToken={buy}&sellAmount={amount}&taker={}{extra}",
        dn.quoter_url, dn.wallet_address
    )
}

fn u(v: &Value) -> U256 {
    U256::from_str_radix(v.as_str().unwrap_or_else(|| panic!("not a string: {v}")), 10).unwrap()
}

fn addr(v: &Value) -> Address {
    let s = v.as_str().unwrap();
    Address::parse_checksummed(s, None).unwrap_or_else(|_| panic!("not EIP-55: {s}"))
}

/// A provider that signs with the burner key (EIP-1559 fees filled from the node).
fn wallet_provider(dn: &TestDevnet) -> DynProvider {
    let signer = dn.signer().unwrap();
    ProviderBuilder::new().wallet(EthereumWallet::from(signer)).connect_http(dn.rpc_url.parse().unwrap()).erased()
}

async fn send(provider: &DynProvider, tx: TransactionRequest) -> TransactionReceipt {
    let hash = *provider.send_transaction(tx).await.unwrap().tx_hash();
    for _ in 0..300 {
        if let Some(r) = provider.get_transaction_receipt(hash).await.unwrap() {
            return r;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("not mined: {hash}");
}

fn quote_tx(quote: &Value) -> TransactionRequest {
    let t = &quote["transaction"];
    TransactionRequest::default()
        .with_to(addr(&t["to"]))
        .with_input(Bytes::from_str(t["data"].as_str().unwrap()).unwrap())
        .with_value(u(&t["value"]))
        .with_gas_limit(u(&t["gas"]).to::<u64>())
}

#[tokio::test]
async fn starts_fast_funded_and_prices_eth_near_3000() {
    let t0 = Instant::now();
    let dn = start().await;
    let elapsed = t0.elapsed();
    eprintln!("TestDevnet::start took {elapsed:?}");
    assert!(elapsed < Duration::from_secs(5), "start took {elapsed:?}");

    assert_eq!(dn.balance_of(NATIVE, dn.wallet_address).await.unwrap(), WALLET_ETH);
    assert_eq!(dn.balance_of(USDC, dn.wallet_address).await.unwrap(), WALLET_USDC);
    assert_eq!(WALLET_ETH, ETHER * U256::from(10));
    assert_eq!(WALLET_USDC, ONE_USDC * U256::from(10_000));
    assert_eq!(dn.balance_of(WETH, VENUE).await.unwrap(), ETHER * U256::from(100));

    // The venue's own view: 0.01 ETH pays 29.907018 USDC (devnet/NOTES.md).
    let venue = ISwapVenue::new(VENUE, dn.provider());
    let out = venue.quote(NATIVE, USDC, ETHER / U256::from(100)).call().await.unwrap();
    assert_eq!(out, U256::from(29_907_018u64));

    let (status, price) = get(&format!("{}/price/token?chainId={CHAIN_ID}&token={NATIVE}", dn.quoter_url)).await;
    assert_eq!(status, 200, "{price}");
    assert_eq!(price["priceUsd"], "3000");
    assert_eq!(price["token"], "0xEeeeeEeeeEeEeeEeEeEeeEEEeeeeEeeeeeeeEEeE");
    assert_eq!(price["chainId"], CHAIN_ID.to_string());
    let (_, weth) = get(&format!("{}/price/token?chainId={CHAIN_ID}&token={WETH}", dn.quoter_url)).await;
    assert_eq!(weth["priceUsd"], "3000");
    let (_, usdc) = get(&format!("{}/price/token?chainId={CHAIN_ID}&token={USDC}", dn.quoter_url)).await;
    assert_eq!(usdc["priceUsd"], "1");
    let (status, unknown) =
        get(&format!("{}/price/token?chainId={CHAIN_ID}&token={}", dn.quoter_url, Address::repeat_byte(7))).await;
    assert_eq!(status, 400, "{unknown}");
    assert_eq!(unknown["name"], "TOKEN_NOT_SUPPORTED");

    // Generated files.
    let toml = std::fs::read_to_string(&dn.config_path).unwrap();
    assert!(toml.contains(&dn.rpc_url), "{toml}");
    let presets = std::fs::read_to_string(dn.dir.join("presets.ron")).unwrap();
    assert!(presets.contains(&format!("{}/swap/allowance-holder/quote", dn.quoter_url)));
    let json: Value = serde_json::from_str(&std::fs::read_to_string(dn.dir.join("devnet.json")).unwrap()).unwrap();
    assert_eq!(json["wallet"]["address"], dn.wallet_address.to_checksum(None));
    assert_eq!(json["state"], "up");
    let (status, health) = get(&format!("{}/health", dn.quoter_url)).await;
    assert_eq!((status, health["status"].as_str()), (200, Some("ok")));
    dn.stop().await;
}

#[tokio::test]
async fn honest_eth_to_usdc_quote_executes_with_the_burner_key() {
    let dn = start().await;
    let sell = ETHER / U256::from(10); // 0.1 ETH
    let (status, quote) = get(&quote_url(&dn, NATIVE, USDC, sell, "&slippageBps=50")).await;
    assert_eq!(status, 200, "{quote}");
    assert_eq!(quote["liquidityAvailable"], true);
    assert_eq!(quote["sellToken"], "0xEeeeeEeeeEeEeeEeEeEeeEEEeeeeEeeeeeeeEEeE");
    assert_eq!(quote["buyToken"], "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913");
    assert_eq!(u(&quote["sellAmount"]), sell);
    assert_eq!(addr(&quote["transaction"]["to"]), VENUE);
    assert_eq!(u(&quote["transaction"]["value"]), sell);
    assert_eq!(quote["issues"]["allowance"], Value::Null);
    assert_eq!(quote["issues"]["balance"], Value::Null);
    assert_eq!(quote["issues"]["simulationIncomplete"], false);
    assert_eq!(quote["route"]["fills"][0]["source"], "HoldfastDevnetVenue");
    assert_eq!(quote["route"]["tokens"][1]["symbol"], "USDC");
    assert_eq!(quote["fees"]["zeroExFee"], Value::Null);
    assert!(quote["zid"].as_str().unwrap().starts_with("0x"));
    let buy = u(&quote["buyAmount"]);
    let min_buy = u(&quote["minBuyAmount"]);
    assert_eq!(min_buy, buy * U256::from(9_950) / U256::from(10_000));
    // ≈ 3000 USDC per ETH, less fee and price impact.
    assert!(buy > U256::from(290_000_000u64) && buy < U256::from(300_000_000u64), "{buy}");
    assert_eq!(u(&quote["totalNetworkFee"]), u(&quote["transaction"]["gas"]) * u(&quote["transaction"]["gasPrice"]));

    let usdc_before = dn.balance_of(USDC, dn.wallet_address).await.unwrap();
    let wallet = wallet_provider(&dn);
    let receipt = send(&wallet, quote_tx(&quote)).await;
    assert!(receipt.status(), "swap reverted");
    assert_eq!(receipt.transaction_type(), alloy::consensus::TxType::Eip1559);
    let got = dn.balance_of(USDC, dn.wallet_address).await.unwrap() - usdc_before;
    assert!(got >= min_buy, "got {got} < min {min_buy}");
    assert_eq!(got, buy, "nothing moved between quote and execution");
}

#[tokio::test]
async fn usdc_to_eth_reports_the_allowance_then_executes_after_an_exact_approval() {
    let dn = start().await;
    let sell = ONE_USDC * U256::from(300); // 300 USDC ≈ 0.1 ETH
    let (status, quote) = get(&quote_url(&dn, USDC, NATIVE, sell, "")).await;
    assert_eq!(status, 200, "{quote}");
    assert_eq!(quote["issues"]["allowance"]["actual"], "0");
    assert_eq!(quote["issues"]["allowance"]["spender"], "0x0000000000001fF3684f28c67538d4D072C22734");
    assert_eq!(quote["issues"]["balance"], Value::Null);
    assert_eq!(quote["transaction"]["value"], "0");
    assert_eq!(quote["transaction"]["gas"], holdfast_devnet::quoter::DEFAULT_GAS.to_string());

    let wallet = wallet_provider(&dn);
    let approve = IDevnetToken::new(USDC, &wallet).approve(VENUE, sell).into_transaction_request();
    assert!(send(&wallet, approve).await.status());

    let (status, quote) = get(&quote_url(&dn, USDC, NATIVE, sell, "")).await;
    assert_eq!(status, 200, "{quote}");
    assert_eq!(quote["issues"]["allowance"], Value::Null, "{quote}");
    let min_buy = u(&quote["minBuyAmount"]);
    assert!(u(&quote["transaction"]["gas"]) < U256::from(holdfast_devnet::quoter::DEFAULT_GAS), "estimated");

    let eth_before = dn.balance_of(NATIVE, dn.wallet_address).await.unwrap();
    let usdc_before = dn.balance_of(USDC, dn.wallet_address).await.unwrap();
    let receipt = send(&wallet, quote_tx(&quote)).await;
    assert!(receipt.status());
    let gas_cost = U256::from(receipt.gas_used) * U256::from(receipt.effective_gas_price);
    let eth_after = dn.balance_of(NATIVE, dn.wallet_address).await.unwrap();
    assert!(eth_after + gas_cost - eth_before >= min_buy);
    assert_eq!(usdc_before - dn.balance_of(USDC, dn.wallet_address).await.unwrap(), sell);
    let left = IDevnetToken::new(USDC, dn.provider()).allowance(dn.wallet_address, VENUE).call().await.unwrap();
    assert_eq!(left, U256::ZERO, "exact approval fully spent");
}

#[tokio::test]
async fn refuses_bad_params_wrong_chain_and_reports_balance_and_liquidity() {
    let dn = start().await;
    let base = format!("{}/swap/allowance-holder/quote", dn.quoter_url);
    let taker = dn.wallet_address;
    let bad = [
        (format!("{base}?chainId={CHAIN_ID}&sellToken={NATIVE}&buyToken={USDC}&taker={taker}"), "sellAmount"),
        (format!("{base}?chainId={CHAIN_ID}&sellToken=0x12&buyToken={USDC}&sellAmount=1&taker={taker}"), "sellToken"),
        (
            format!("{base}?chainId={CHAIN_ID}&sellToken={NATIVE}&buyToken={USDC}&sellAmount=abc&taker={taker}"),
            "sellAmount",
        ),
        (
            format!("{base}?chainId={CHAIN_ID}&sellToken={NATIVE}&buyToken={USDC}&sellAmount=0&taker={taker}"),
            "sellAmount",
        ),
        (format!("{base}?chainId={CHAIN_ID}&sellToken={USDC}&buyToken={USDC}&sellAmount=1&taker={taker}"), "buyToken"),
        (format!("{base}?chainId=1&sellToken={NATIVE}&buyToken={USDC}&sellAmount=1&taker={taker}"), "chainId"),
        (
            format!(
                "{base}?chainId={CHAIN_ID}&sellToken={NATIVE}&buyToken={USDC}&sellAmount=1&taker={taker}&slippageBps=20000"
            ),
            "slippageBps",
        ),
        (format!("{base}?chainId={CHAIN_ID}&sellToken={NATIVE}&buyToken={USDC}&sellAmount=1"), "taker"),
    ];
    for (url, field) in bad {
        let (status, body) = get(&url).await;
        assert_eq!(status, 400, "{url}: {body}");
        assert_eq!(body["name"], "INPUT_INVALID", "{body}");
        assert_eq!(body["data"]["details"][0]["field"], field, "{body}");
        assert!(body["message"].as_str().unwrap().contains(field));
    }

    // More than the taker holds: quoted, with a balance issue.
    let (status, quote) = get(&quote_url(&dn, NATIVE, USDC, ETHER * U256::from(20), "")).await;
    assert_eq!(status, 200, "{quote}");
    assert_eq!(quote["issues"]["balance"]["token"], "0xEeeeeEeeeEeEeeEeEeEeeEEEeeeeEeeeeeeeEEeE");
    assert_eq!(u(&quote["issues"]["balance"]["actual"]), WALLET_ETH);
    assert_eq!(u(&quote["issues"]["balance"]["expected"]), ETHER * U256::from(20));

    // Huge amounts: no liquidity, like the real API.
    for amount in [ETHER * U256::from(1_000_000), U256::MAX] {
        let (status, quote) = get(&quote_url(&dn, NATIVE, USDC, amount, "")).await;
        assert_eq!(status, 200, "{quote}");
        assert_eq!(quote["liquidityAvailable"], false, "{quote}");
        assert!(quote["zid"].is_string());
        assert!(quote.get("transaction").is_none());
    }
    // A token the venue does not hold (an address without code).
    let (status, quote) = get(&quote_url(&dn, Address::repeat_byte(9), USDC, U256::from(1000), "")).await;
    assert_eq!((status, &quote["liquidityAvailable"]), (200, &Value::Bool(false)), "{quote}");
}

#[tokio::test]
async fn build_quote_is_callable_directly_and_matches_the_http_answer() {
    let dn = start().await;
    let state = dn.quote_state();
    let req = QuoteRequest {
        chain_id: CHAIN_ID,
        sell_token: NATIVE,
        buy_token: USDC,
        sell_amount: ETHER / U256::from(100),
        taker: dn.wallet_address,
        recipient: dn.wallet_address,
        slippage_bps: 100,
    };
    let direct = holdfast_devnet::build_quote(&state, &req).await.unwrap();
    let (_, http) = get(&quote_url(&dn, NATIVE, USDC, ETHER / U256::from(100), "")).await;
    for field in ["buyAmount", "minBuyAmount", "sellAmount", "blockNumber"] {
        assert_eq!(direct[field], http[field], "{field}");
    }
    assert_eq!(direct["transaction"]["data"], http["transaction"]["data"]);
    assert_eq!(u(&direct["buyAmount"]), U256::from(29_907_018u64));
    // A tampered quote is just JSON: the caller's validator has to catch it.
    let mut tampered = direct.clone();
    tampered["transaction"]["to"] = Value::String(Address::repeat_byte(0x66).to_checksum(None));
    assert_ne!(tampered, direct);

    let wrong_chain = QuoteRequest { chain_id: 1, ..req };
    let err = holdfast_devnet::build_quote(&state, &wrong_chain).await.unwrap_err();
    assert_eq!(err.status(), 400);
}

#[tokio::test]
async fn helpers_fund_and_mint() {
    let dn = start().await;
    let someone = Address::repeat_byte(0x42);
    dn.fund_eth(someone, ETHER).await.unwrap();
    dn.fund_eth(someone, ETHER).await.unwrap();
    dn.mint_usdc(someone, ONE_USDC * U256::from(5)).await.unwrap();
    assert_eq!(dn.balance_of(NATIVE, someone).await.unwrap(), ETHER * U256::from(2));
    assert_eq!(dn.balance_of(USDC, someone).await.unwrap(), ONE_USDC * U256::from(5));
    let anvil_pid = dn.info.anvil.pid;
    drop(dn);
    assert!(!std::path::Path::new(&format!("/proc/{anvil_pid}")).exists(), "anvil killed and reaped on drop");
}

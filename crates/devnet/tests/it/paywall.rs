//! The x402 paywall and its facilitator on a real devnet: the offer, a paid quote settled on chain for exactly the
//! price, replay refused, and every tampered or invalid payment refused with nothing moved.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use crate::common::{Auth, get_with, now, paid_get, payload};
use alloy::primitives::{Address, B256, U256};
use alloy::signers::local::PrivateKeySigner;
use alloy::transports::http::reqwest;
use holdfast_devnet::paywall::{PAYMENT_SIGNATURE, encode_header};
use holdfast_devnet::{CHAIN_ID, NATIVE, PAYEE, PaywallConfig, QUOTE_PRICE, TestDevnet, USDC};
use serde_json::{Value, json};

fn quote_url(dn: &TestDevnet) -> String {
    format!(
        "{}/swap/allowance-holder/quote?chainId={CHAIN_ID}&sellToken={NATIVE}&buyToken={USDC}&sellAmount=1000000000000000&taker={}",
        dn.quoter_url, dn.wallet_address
    )
}

async fn usdc(dn: &TestDevnet, who: Address) -> U256 {
    dn.balance_of(USDC, who).await.unwrap()
}

async fn post(url: &str, body: &Value) -> (u16, Value) {
    let resp = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    let status = resp.status().as_u16();
    (status, serde_json::from_str(&resp.text().await.unwrap()).unwrap_or(Value::Null))
}

#[tokio::test]
async fn unpaid_requests_get_the_v2_offer_and_health_stays_free() {
    let dn = TestDevnet::start().await.unwrap();
    let first = get_with(&quote_url(&dn), None).await;
    assert_eq!(first.status, 402);
    let offer = first.offer();
    assert_eq!(offer["x402Version"], 2);
    assert_eq!(offer["accepts"], json!([PaywallConfig::devnet().requirement()]));
    assert_eq!(offer["accepts"][0]["payTo"], PAYEE.to_checksum(None));
    assert!(offer["resource"]["url"].as_str().unwrap().starts_with(&dn.quoter_url), "{offer}");
    assert_eq!(first.body, offer, "the body repeats the offer");
    let price = get_with(&format!("{}/price/token?chainId={CHAIN_ID}&token={NATIVE}", dn.quoter_url), None).await;
    assert_eq!(price.status, 402);
    assert_eq!(get_with(&format!("{}/health", dn.quoter_url), None).await.status, 200);
}

#[tokio::test]
async fn a_paid_quote_moves_exactly_the_price_and_cannot_be_replayed() {
    let dn = TestDevnet::start().await.unwrap();
    let signer = dn.signer().unwrap();
    let (wallet0, payee0) = (usdc(&dn, dn.wallet_address).await, usdc(&dn, PAYEE).await);
    let url = quote_url(&dn);
    let first = get_with(&url, None).await;
    let offer = first.offer();
    let requirement = &offer["accepts"][0];
    let header = encode_header(&payload(&offer, requirement, &signer, &Auth::honest(requirement)));

    let paid = get_with(&url, Some((PAYMENT_SIGNATURE, header.clone()))).await;
    assert_eq!(paid.status, 200, "{}", paid.body);
    assert_eq!(paid.body["sellAmount"], "1000000000000000");
    let settlement = paid.settlement().unwrap();
    assert_eq!(settlement["success"], true);
    assert_eq!(settlement["network"], format!("eip155:{CHAIN_ID}"));
    assert_eq!(settlement["payer"], dn.wallet_address.to_checksum(None));
    let hash: B256 = settlement["transaction"].as_str().unwrap().parse().unwrap();
    use alloy::providers::Provider;
    let receipt = dn.provider().get_transaction_receipt(hash).await.unwrap().unwrap();
    assert!(receipt.status());
    assert_eq!(receipt.from, holdfast_devnet::FACILITATOR_ACCOUNT, "the facilitator submitted it");
    assert_eq!(usdc(&dn, dn.wallet_address).await, wallet0 - QUOTE_PRICE);
    assert_eq!(usdc(&dn, PAYEE).await, payee0 + QUOTE_PRICE);

    let replay = get_with(&url, Some((PAYMENT_SIGNATURE, header))).await;
    assert_eq!(replay.status, 402);
    assert!(replay.offer()["error"].as_str().unwrap().contains("nonce_already_used"), "{}", replay.body);
    assert_eq!(usdc(&dn, PAYEE).await, payee0 + QUOTE_PRICE, "a replay moves nothing");
}

#[tokio::test]
async fn every_invalid_payment_is_refused_and_nothing_moves() {
    let dn = TestDevnet::start().await.unwrap();
    let signer = dn.signer().unwrap();
    let url = quote_url(&dn);
    let offer = get_with(&url, None).await.offer();
    let req = offer["accepts"][0].clone();
    let payee0 = usdc(&dn, PAYEE).await;
    let wallet0 = usdc(&dn, dn.wallet_address).await;

    let honest = || Auth::honest(&req);
    let signed = |auth: Auth| payload(&offer, &req, &signer, &auth);
    let mut tampered_value = signed(honest());
    tampered_value["payload"]["authorization"]["value"] = json!("10001");
    let mut tampered_accepted = signed(honest());
    tampered_accepted["accepted"]["amount"] = json!("1");
    let mut wrong_domain_req = req.clone();
    wrong_domain_req["extra"]["name"] = json!("USD Coins");
    let wrong_domain = payload(&offer, &wrong_domain_req, &signer, &honest());
    let mut wrong_domain_echo = wrong_domain.clone();
    wrong_domain_echo["accepted"] = req.clone();
    let mut v1 = signed(honest());
    v1["x402Version"] = json!(1);
    let mut high_s = signed(honest());
    {
        // Flip s to n - s (and v) : the same signer, a malleable encoding.
        let sig: alloy::primitives::Bytes = high_s["payload"]["signature"].as_str().unwrap().parse().unwrap();
        let parsed = alloy::primitives::Signature::from_raw(&sig).unwrap();
        let n = U256::from_str_radix("fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141", 16).unwrap();
        let flipped = alloy::primitives::Signature::new(parsed.r(), n - parsed.s(), !parsed.v());
        high_s["payload"]["signature"] = json!(alloy::primitives::hex::encode_prefixed(flipped.as_bytes()));
    }
    let broke = PrivateKeySigner::random();
    let cases: Vec<(&str, Result<Value, &str>)> = vec![
        ("invalid_exact_evm_signature", Ok(tampered_value)),
        (
            "invalid_exact_evm_authorization_value_mismatch",
            Ok(signed(Auth { value: QUOTE_PRICE - U256::from(1), ..honest() })),
        ),
        ("invalid_exact_evm_recipient_mismatch", Ok(signed(Auth { to: Some(Address::repeat_byte(0xd0)), ..honest() }))),
        ("valid_before", Ok(signed(Auth { valid_before: now() + 2, ..honest() }))),
        ("valid_after", Ok(signed(Auth { valid_after: now() + 100, ..honest() }))),
        ("maxTimeoutSeconds", Ok(signed(Auth { valid_before: now() + 3_600, ..honest() }))),
        ("invalid_exact_evm_signature", Ok(wrong_domain_echo)),
        ("accepted_requirements_mismatch", Ok(tampered_accepted)),
        ("insufficient_funds", Ok(payload(&offer, &req, &broke, &honest()))),
        ("invalid_x402_version", Ok(v1)),
        ("malleable", Ok(high_s)),
        ("invalid_payload", Err("@@@ not base64 @@@")),
        ("invalid_payload", Err("eyJub3QiOiAianNvbg")),
    ];
    for (needle, body) in cases {
        let header = match body {
            Ok(v) => encode_header(&v),
            Err(raw) => raw.to_owned(),
        };
        let answer = get_with(&url, Some((PAYMENT_SIGNATURE, header))).await;
        assert_eq!(answer.status, 402, "{needle}: {}", answer.body);
        let error = answer.offer()["error"].as_str().unwrap().to_owned();
        assert!(error.contains(needle), "{needle}: {error}");
    }
    let huge = get_with(&url, Some((PAYMENT_SIGNATURE, "A".repeat(20_000)))).await;
    assert_eq!(huge.status, 402);
    assert_eq!(usdc(&dn, PAYEE).await, payee0, "nothing reached the payee");
    assert_eq!(usdc(&dn, dn.wallet_address).await, wallet0, "nothing left the wallet");
}

#[tokio::test]
async fn a_request_the_quoter_refuses_is_not_charged() {
    let dn = TestDevnet::start().await.unwrap();
    let signer = dn.signer().unwrap();
    let wallet0 = usdc(&dn, dn.wallet_address).await;
    let bad =
        format!("{}/swap/allowance-holder/quote?chainId={CHAIN_ID}&sellToken={NATIVE}&buyToken={USDC}", dn.quoter_url);
    let answer = paid_get(&bad, &signer).await;
    assert_eq!(answer.status, 400, "{}", answer.body);
    assert!(answer.settlement().is_none());
    assert_eq!(usdc(&dn, dn.wallet_address).await, wallet0);
}

#[tokio::test]
async fn the_facilitator_api_verifies_settles_and_refuses_replays() {
    let dn = TestDevnet::start().await.unwrap();
    let signer = dn.signer().unwrap();
    let supported: Value = serde_json::from_str(
        &reqwest::get(format!("{}/supported", dn.facilitator_url)).await.unwrap().text().await.unwrap(),
    )
    .unwrap();
    assert_eq!(
        supported["kinds"][0],
        json!({"x402Version": 2, "scheme": "exact", "network": format!("eip155:{CHAIN_ID}")})
    );
    assert_eq!(supported["signers"]["eip155:*"][0], holdfast_devnet::FACILITATOR_ACCOUNT.to_checksum(None));

    let req = PaywallConfig::devnet().requirement();
    let offer = json!({"x402Version": 2, "resource": {"url": "http://x/y"}, "accepts": [req]});
    let body = json!({"x402Version": 2, "paymentPayload": payload(&offer, &req, &signer, &Auth::honest(&req)), "paymentRequirements": req});
    let (status, verified) = post(&format!("{}/verify", dn.facilitator_url), &body).await;
    assert_eq!((status, &verified["isValid"]), (200, &json!(true)), "{verified}");
    assert_eq!(verified["payer"], dn.wallet_address.to_checksum(None));
    let payee0 = usdc(&dn, PAYEE).await;
    let (_, settled) = post(&format!("{}/settle", dn.facilitator_url), &body).await;
    assert_eq!(settled["success"], true, "{settled}");
    assert_eq!(settled["amount"], "10000");
    assert_eq!(usdc(&dn, PAYEE).await, payee0 + QUOTE_PRICE);
    let (_, again) = post(&format!("{}/verify", dn.facilitator_url), &body).await;
    assert_eq!(again["invalidReason"], "invalid_exact_evm_nonce_already_used", "{again}");
    let (_, resettle) = post(&format!("{}/settle", dn.facilitator_url), &body).await;
    assert_eq!(resettle["success"], false);
    assert_eq!(usdc(&dn, PAYEE).await, payee0 + QUOTE_PRICE);
    let (status, _) = post(&format!("{}/verify", dn.facilitator_url), &json!({"nope": 1})).await;
    assert_eq!(status, 400);
}

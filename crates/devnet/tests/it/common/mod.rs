//! A minimal x402 v2 client for the devnet's own tests: reads the paywall's offer, signs the EIP-3009
//! authorization with a given key, and retries with `PAYMENT-SIGNATURE`.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use alloy::primitives::{B256, U256};
use alloy::signers::SignerSync;
use alloy::signers::local::PrivateKeySigner;
use alloy::sol_types::{Eip712Domain, SolStruct};
use alloy::transports::http::reqwest;
use holdfast_devnet::facilitator::TransferWithAuthorization;
use holdfast_devnet::paywall::{PAYMENT_REQUIRED, PAYMENT_RESPONSE, PAYMENT_SIGNATURE, decode_header, encode_header};
use serde_json::{Value, json};
use std::time::{SystemTime, UNIX_EPOCH};

pub(crate) fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs()
}

/// Fields of an authorization a test may tamper with before signing or after.
pub(crate) struct Auth {
    pub value: U256,
    pub valid_after: u64,
    pub valid_before: u64,
    pub nonce: B256,
    pub to: Option<alloy::primitives::Address>,
}

impl Auth {
    pub(crate) fn honest(requirement: &Value) -> Self {
        let timeout = requirement["maxTimeoutSeconds"].as_u64().unwrap();
        Self {
            value: U256::from_str_radix(requirement["amount"].as_str().unwrap(), 10).unwrap(),
            valid_after: now() - 10,
            valid_before: now() + timeout - 10,
            nonce: B256::random(),
            to: None,
        }
    }
}

/// The PaymentPayload JSON for `requirement`, signed by `signer` under the chain's token domain.
pub(crate) fn payload(offer: &Value, requirement: &Value, signer: &PrivateKeySigner, auth: &Auth) -> Value {
    let to = auth.to.unwrap_or_else(|| requirement["payTo"].as_str().unwrap().parse().unwrap());
    let asset = requirement["asset"].as_str().unwrap().parse().unwrap();
    let chain_id: u64 = requirement["network"].as_str().unwrap().trim_start_matches("eip155:").parse().unwrap();
    let typed = TransferWithAuthorization {
        from: signer.address(),
        to,
        value: auth.value,
        validAfter: U256::from(auth.valid_after),
        validBefore: U256::from(auth.valid_before),
        nonce: auth.nonce,
    };
    let domain = Eip712Domain::new(
        Some(requirement["extra"]["name"].as_str().unwrap().to_owned().into()),
        Some(requirement["extra"]["version"].as_str().unwrap().to_owned().into()),
        Some(U256::from(chain_id)),
        Some(asset),
        None,
    );
    let sig = signer.sign_hash_sync(&typed.eip712_signing_hash(&domain)).unwrap();
    json!({
        "x402Version": 2,
        "resource": offer["resource"],
        "accepted": requirement,
        "payload": {
            "signature": alloy::primitives::hex::encode_prefixed(sig.as_bytes()),
            "authorization": {
                "from": signer.address().to_checksum(None),
                "to": to.to_checksum(None),
                "value": auth.value.to_string(),
                "validAfter": auth.valid_after.to_string(),
                "validBefore": auth.valid_before.to_string(),
                "nonce": auth.nonce.to_string(),
            },
        },
    })
}

/// The answer to a GET: status, JSON body (Null when not JSON), headers.
pub(crate) struct Answer {
    pub status: u16,
    pub body: Value,
    pub headers: reqwest::header::HeaderMap,
}

impl Answer {
    pub(crate) fn offer(&self) -> Value {
        decode_header(self.headers.get(PAYMENT_REQUIRED).expect("PAYMENT-REQUIRED").as_bytes()).unwrap()
    }

    pub(crate) fn settlement(&self) -> Option<Value> {
        self.headers.get(PAYMENT_RESPONSE).map(|h| decode_header(h.as_bytes()).unwrap())
    }
}

pub(crate) async fn get_with(url: &str, header: Option<(&str, String)>) -> Answer {
    let client = reqwest::Client::new();
    let mut req = client.get(url);
    if let Some((name, value)) = header {
        req = req.header(name, value);
    }
    let resp = req.send().await.unwrap();
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let text = resp.text().await.unwrap();
    Answer { status, body: serde_json::from_str(&text).unwrap_or(Value::Null), headers }
}

/// GET `url`, paying the paywall's offer with `signer` (honest terms). Panics unless the first answer is a 402.
pub(crate) async fn paid_get(url: &str, signer: &PrivateKeySigner) -> Answer {
    let first = get_with(url, None).await;
    assert_eq!(first.status, 402, "unpaid {url}: {}", first.body);
    let offer = first.offer();
    let requirement = &offer["accepts"][0];
    let payload = payload(&offer, requirement, signer, &Auth::honest(requirement));
    get_with(url, Some((PAYMENT_SIGNATURE, encode_header(&payload)))).await
}

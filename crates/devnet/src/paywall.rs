//! The x402 v2 paywall in front of the devnet quoter (`/swap/allowance-holder/quote` and `/price/token`).
//!
//! An unpaid request answers `402` with `PAYMENT-REQUIRED: base64(PaymentRequired)` offering one requirement:
//! scheme `exact`, this chain (CAIP-2), [`QUOTE_PRICE`] of USDC (EIP-712 domain "USD Coin" / "2") to [`PAYEE`],
//! `maxTimeoutSeconds` [`MAX_TIMEOUT_SECS`]. A request with `PAYMENT-SIGNATURE` is checked in order: the header
//! (capped at 16 KiB, base64, JSON, x402Version 2, `accepted` equal to the offer), the [`Facilitator`]'s verify,
//! then the inner handler runs, and only when it succeeds is the payment settled on chain; the answer then carries
//! `PAYMENT-RESPONSE: base64({success, transaction, network, payer})`. A payment that fails any step gets another
//! 402 whose PaymentRequired carries `error`; a request the quoter refuses (4xx/5xx) is not charged.

use crate::contracts::{CHAIN_ID, USDC};
use crate::facilitator::Facilitator;
use alloy::primitives::{Address, U256, address, uint};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use serde_json::{Value, json};
use std::sync::Arc;

/// The price of one quote or price lookup: 0.01 USDC (base units).
pub const QUOTE_PRICE: U256 = uint!(10_000_U256);
/// Who is paid: anvil dev account #2 of the default mnemonic.
pub const PAYEE: Address = address!("0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC");
/// The validity window the paywall accepts.
pub const MAX_TIMEOUT_SECS: u64 = 60;
/// Largest payment header read.
pub const MAX_HEADER_BYTES: usize = 16 * 1024;
/// The v2 request header carrying the payment.
pub const PAYMENT_SIGNATURE: &str = "payment-signature";
/// The v2 offer header.
pub const PAYMENT_REQUIRED: &str = "payment-required";
/// The v2 settlement header.
pub const PAYMENT_RESPONSE: &str = "payment-response";

/// What the paywall charges.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PaywallConfig {
    /// Chain id (the network is `eip155:ID`).
    pub chain_id: u64,
    /// The token paid with (EIP-3009).
    pub asset: Address,
    /// The token's EIP-712 domain name.
    pub asset_name: String,
    /// The token's EIP-712 domain version.
    pub asset_version: String,
    /// Price per request, base units.
    pub price: U256,
    /// The payee.
    pub pay_to: Address,
    /// The validity window accepted, seconds.
    pub max_timeout_seconds: u64,
}

impl PaywallConfig {
    /// The devnet's paywall: [`QUOTE_PRICE`] USDC per request to [`PAYEE`] on the devnet's chain ([`CHAIN_ID`]).
    pub fn devnet() -> Self {
        Self {
            chain_id: CHAIN_ID,
            asset: USDC,
            asset_name: "USD Coin".into(),
            asset_version: "2".into(),
            price: QUOTE_PRICE,
            pay_to: PAYEE,
            max_timeout_seconds: MAX_TIMEOUT_SECS,
        }
    }

    /// The one requirement offered (v2 shape).
    pub fn requirement(&self) -> Value {
        json!({
            "scheme": "exact",
            "network": format!("eip155:{}", self.chain_id),
            "amount": self.price.to_string(),
            "asset": self.asset.to_checksum(None),
            "payTo": self.pay_to.to_checksum(None),
            "maxTimeoutSeconds": self.max_timeout_seconds,
            "extra": {"name": self.asset_name, "version": self.asset_version},
        })
    }
}

/// The paywall: its terms and the facilitator that verifies and settles.
#[derive(Debug)]
pub struct Paywall {
    /// What it charges.
    pub config: PaywallConfig,
    /// Who verifies and settles.
    pub facilitator: Arc<Facilitator>,
}

/// Encodes JSON as a standard base64 header value.
pub fn encode_header(value: &Value) -> String {
    base64::engine::general_purpose::STANDARD.encode(value.to_string())
}

/// Decodes a base64 JSON header value (capped at [`MAX_HEADER_BYTES`]).
pub fn decode_header(raw: &[u8]) -> Result<Value, String> {
    if raw.len() > MAX_HEADER_BYTES {
        return Err(format!("the header is {} bytes, above {MAX_HEADER_BYTES}", raw.len()));
    }
    let text = std::str::from_utf8(raw).map_err(|_| "the header is not text".to_owned())?.trim();
    let engine = base64::engine::GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        base64::engine::GeneralPurposeConfig::new()
            .with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent),
    );
    let bytes = engine.decode(text).map_err(|_| "the header is not base64".to_owned())?;
    serde_json::from_slice(&bytes).map_err(|e| format!("the header is not JSON: {e}"))
}

fn resource_of(headers: &HeaderMap, uri: &axum::http::Uri) -> Value {
    let host = headers.get(axum::http::header::HOST).and_then(|h| h.to_str().ok()).unwrap_or("127.0.0.1");
    let path = uri.path_and_query().map_or("/", |p| p.as_str());
    let description =
        if uri.path().starts_with(crate::quoter::PRICE_PATH) { "devnet token price" } else { "devnet swap quote" };
    json!({"url": format!("http://{host}{path}"), "description": description, "mimeType": "application/json"})
}

fn payment_required(paywall: &Paywall, resource: &Value, error: Option<String>) -> Response {
    let mut doc = json!({
        "x402Version": 2,
        "resource": resource,
        "accepts": [paywall.config.requirement()],
    });
    if let (Some(error), Some(map)) = (error, doc.as_object_mut()) {
        map.insert("error".into(), Value::String(error));
    }
    let mut response = (StatusCode::PAYMENT_REQUIRED, axum::Json(doc.clone())).into_response();
    if let Ok(value) = HeaderValue::from_str(&encode_header(&doc)) {
        response.headers_mut().insert(PAYMENT_REQUIRED, value);
    }
    response
}

/// The axum middleware: `axum::middleware::from_fn_with_state(Arc<Paywall>, paywall)`.
pub async fn paywall(State(paywall): State<Arc<Paywall>>, request: Request, next: Next) -> Response {
    let resource = resource_of(request.headers(), request.uri());
    let Some(header) = request.headers().get(PAYMENT_SIGNATURE) else {
        return payment_required(&paywall, &resource, Some("payment required".into()));
    };
    let payload = match decode_header(header.as_bytes()) {
        Ok(p) => p,
        Err(e) => return payment_required(&paywall, &resource, Some(format!("invalid_payload: {e}"))),
    };
    if payload.get("x402Version").and_then(Value::as_u64) != Some(2) {
        return payment_required(&paywall, &resource, Some("invalid_x402_version: this paywall speaks x402 v2".into()));
    }
    let requirement = paywall.config.requirement();
    let verified = paywall.facilitator.verify(&payload, &requirement).await;
    if !verified.is_valid {
        let why = format!(
            "{}: {}",
            verified.invalid_reason.unwrap_or_default(),
            verified.invalid_message.unwrap_or_default()
        );
        tracing::info!(reason = %why, "x402 payment refused");
        return payment_required(&paywall, &resource, Some(why));
    }
    let response = next.run(request).await;
    if !response.status().is_success() {
        // The quoter refused the request: nothing is charged (the authorization is never submitted).
        return response;
    }
    let settled = paywall.facilitator.settle(&payload, &requirement).await;
    if !settled.success {
        let why = format!(
            "{}: {}",
            settled.error_reason.clone().unwrap_or_default(),
            settled.error_message.clone().unwrap_or_default()
        );
        tracing::info!(reason = %why, "x402 settlement failed");
        return payment_required(&paywall, &resource, Some(why));
    }
    let report = json!({
        "success": true,
        "transaction": settled.transaction,
        "network": settled.network,
        "payer": settled.payer,
    });
    let (mut parts, body) = response.into_parts();
    if let Ok(value) = HeaderValue::from_str(&encode_header(&report)) {
        parts.headers.insert(PAYMENT_RESPONSE, value);
    }
    parts.headers.insert(
        axum::http::header::ACCESS_CONTROL_EXPOSE_HEADERS,
        HeaderValue::from_static("PAYMENT-RESPONSE, PAYMENT-REQUIRED"),
    );
    Response::from_parts(parts, body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_offer_is_v2_usdc_on_the_devnet_chain() {
        let r = PaywallConfig::devnet().requirement();
        assert_eq!(r["network"], "eip155:1752132708", "the devnet's own chain, never Base mainnet's");
        assert_eq!(r["amount"], "10000");
        assert_eq!(r["asset"], "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913");
        assert_eq!(r["extra"]["name"], "USD Coin");
        assert_eq!(decode_header(encode_header(&r).as_bytes()).unwrap(), r);
        assert!(decode_header(b"***").is_err());
        assert!(decode_header(&vec![b'A'; MAX_HEADER_BYTES + 1]).is_err());
    }
}

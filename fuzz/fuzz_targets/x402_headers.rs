//! The x402 wire format (crates/web3/src/x402/wire.rs): `PAYMENT-REQUIRED`, `PAYMENT-RESPONSE` /
//! `X-PAYMENT-RESPONSE`, 402 bodies and PaymentRequired documents. Never panics, refuses oversized input with
//! `TooLarge` / `BodyTooLarge`, keeps every field within its cap, and the payment header built for any offered
//! requirement decodes back to the payload it carries.
//!
//! Input: one mode byte, then the payload.
#![no_main]

use alloy_primitives::Address;
use holdfast_web3::x402::wire::{
    self, MAX_BODY_BYTES, MAX_HEADER_BYTES, MAX_OFFERS, PAYMENT_REQUIRED, PAYMENT_RESPONSE, PaymentRequired,
    SignedAuthorization, Version, WireError, X_PAYMENT_RESPONSE,
};
use http::{HeaderMap, HeaderValue};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, payload)) = data.split_first() else { return };
    match mode % 6 {
        // The header as the server sent it.
        0 => {
            let _ = wire::decode_header(PAYMENT_REQUIRED, payload);
            if let Some(h) = headers(PAYMENT_REQUIRED, payload) {
                check_402(wire::parse_402(&h, b"ignored"));
            }
        }
        // Well-formed base64 of arbitrary bytes: the JSON layer.
        1 => {
            let encoded = wire::encode_base64(payload);
            if let Some(h) = headers(PAYMENT_REQUIRED, encoded.as_bytes()) {
                check_402(wire::parse_402(&h, b""));
            }
            for (name, version) in [(PAYMENT_RESPONSE, Version::V2), (X_PAYMENT_RESPONSE, Version::V1)] {
                if let Some(h) = headers(name, encoded.as_bytes()) {
                    check_settlement(&h, version);
                }
            }
        }
        // A 402 body (v1, or v2 in the body).
        2 => check_402(wire::parse_402(&HeaderMap::new(), payload)),
        // A PaymentRequired document, with each expected version.
        3 => {
            if let Ok(doc) = serde_json::from_slice::<Value>(payload) {
                for expect in [None, Some(Version::V1), Some(Version::V2)] {
                    let parsed = wire::parse_payment_required("doc", &doc, expect);
                    if let (Ok(offer), Some(v)) = (&parsed, expect) {
                        assert_eq!(offer.version, v);
                    }
                    check_402(parsed);
                }
            }
        }
        // Oversized: refused before anything is decoded.
        4 => {
            let seed = if payload.is_empty() { b"A".as_slice() } else { payload };
            let header = seed.repeat(MAX_HEADER_BYTES / seed.len() + 1);
            let err = wire::decode_header(PAYMENT_REQUIRED, &header);
            assert!(matches!(err, Err(WireError::TooLarge { len, max: MAX_HEADER_BYTES, .. }) if len == header.len()));
            if let Some(h) = headers(PAYMENT_REQUIRED, &header) {
                assert!(matches!(wire::parse_402(&h, b""), Err(WireError::TooLarge { .. })));
            }
            if let Some(h) = headers(PAYMENT_RESPONSE, &header) {
                assert!(matches!(wire::parse_settlement(&h, Version::V2), Some(Err(WireError::TooLarge { .. }))));
            }
            let body = seed.repeat(MAX_BODY_BYTES / seed.len() + 1);
            let err = wire::parse_402(&HeaderMap::new(), &body);
            assert!(matches!(err, Err(WireError::BodyTooLarge { max: MAX_BODY_BYTES })), "{err:?}");
        }
        // A settlement header as the server sent it.
        _ => {
            for (name, version) in [(PAYMENT_RESPONSE, Version::V2), (X_PAYMENT_RESPONSE, Version::V1)] {
                if let Some(h) = headers(name, payload) {
                    check_settlement(&h, version);
                }
            }
        }
    }
});

/// A header map with one header, when the bytes are a valid header value.
fn headers(name: &'static str, value: &[u8]) -> Option<HeaderMap> {
    let mut h = HeaderMap::new();
    h.insert(name, HeaderValue::from_bytes(value).ok()?);
    Some(h)
}

fn check_402(parsed: Result<PaymentRequired, WireError>) {
    let offer = match parsed {
        Ok(offer) => offer,
        Err(e) => {
            assert!(!e.to_string().is_empty());
            return;
        }
    };
    assert!(offer.accepts.len() <= MAX_OFFERS, "{} offers", offer.accepts.len());
    assert!(offer.error.as_ref().is_none_or(|e| e.chars().count() <= 300));
    if offer.version == Version::V1 {
        assert!(offer.resource.is_none());
    }
    for requirement in &offer.accepts {
        let r = match requirement {
            Ok(r) => r,
            Err(reason) => {
                assert!(!reason.is_empty());
                continue;
            }
        };
        for field in [&r.scheme, &r.network, &r.domain_name, &r.domain_version] {
            assert!(!field.is_empty() && field.chars().count() <= 128, "{field:?}");
        }
        assert!(r.max_timeout_seconds > 0);
        assert!(r.raw.is_object());
        // The payment for it decodes back to what was built.
        let auth = SignedAuthorization {
            from: Address::repeat_byte(1),
            to: r.pay_to,
            value: r.amount,
            valid_after: 1,
            valid_before: 1 + r.max_timeout_seconds.min(3600),
            nonce: [7u8; 32].into(),
            signature: vec![9u8; 65].into(),
        };
        let payload = wire::payment_payload(&offer, r, &auth);
        let (name, value) = wire::payment_header(&offer, r, &auth);
        assert_eq!(name, offer.version.payment_header());
        match wire::decode_header(name, value.as_bytes()) {
            Ok(decoded) => assert_eq!(decoded, payload),
            // An offer close to the cap echoes back larger than it came.
            Err(WireError::TooLarge { .. }) => {}
            Err(e) => panic!("our own payment header does not decode: {e}"),
        }
    }
}

fn check_settlement(h: &HeaderMap, version: Version) {
    match wire::parse_settlement(h, version) {
        Some(Ok(s)) => {
            for text in [&s.network, &s.payer, &s.error_reason].into_iter().flatten() {
                assert!(text.chars().count() <= 200, "{text:?}");
            }
        }
        Some(Err(e)) => assert!(!e.to_string().is_empty()),
        None => panic!("the header is there"),
    }
}

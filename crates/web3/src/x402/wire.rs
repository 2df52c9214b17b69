//! The x402 wire format, v2 and v1, read defensively (see `protocols.md`).
//!
//! - v2: the 402 carries `PAYMENT-REQUIRED: base64(JSON PaymentRequired)`; the client retries with
//!   `PAYMENT-SIGNATURE: base64(JSON PaymentPayload)` echoing the chosen requirement as `accepted`; a paid answer
//!   carries `PAYMENT-RESPONSE: base64(JSON {success, transaction, network, payer})`. Networks are CAIP-2 ids.
//! - v1: the 402 carries the PaymentRequired as its JSON body, requirements name `maxAmountRequired` and networks
//!   like `base`; the headers are `X-PAYMENT` and `X-PAYMENT-RESPONSE`.
//!
//! Everything a server sends is capped ([`MAX_HEADER_BYTES`], [`MAX_BODY_BYTES`], [`MAX_OFFERS`]) and parsed
//! without panicking: any malformation is a [`WireError`] naming what was wrong. One malformed requirement does not
//! spoil the others: it is kept as the reason it could not be read.

use alloy::primitives::{Address, B256, Bytes, U256};
use base64::Engine as _;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use reqwest::header::HeaderMap;
use serde_json::{Map, Value, json};

/// Largest x402 header accepted from a server (base64 text).
pub const MAX_HEADER_BYTES: usize = 16 * 1024;
/// Largest 402 body read when looking for a v1 PaymentRequired.
pub const MAX_BODY_BYTES: usize = 64 * 1024;
/// Most requirements one PaymentRequired may offer.
pub const MAX_OFFERS: usize = 32;
/// Longest string accepted in a requirement's short fields (scheme, network, EIP-712 name and version).
const MAX_FIELD_CHARS: usize = 128;

/// v2: the server's offer.
pub const PAYMENT_REQUIRED: &str = "payment-required";
/// v2: the client's signed payment.
pub const PAYMENT_SIGNATURE: &str = "payment-signature";
/// v2: the server's settlement report.
pub const PAYMENT_RESPONSE: &str = "payment-response";
/// v1: the client's signed payment.
pub const X_PAYMENT: &str = "x-payment";
/// v1: the server's settlement report.
pub const X_PAYMENT_RESPONSE: &str = "x-payment-response";

/// The protocol version a server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Version {
    /// Legacy: JSON body, `X-PAYMENT`, network names.
    V1,
    /// Current: `PAYMENT-*` headers, CAIP-2 networks.
    V2,
}

impl Version {
    /// The number on the wire.
    pub fn number(self) -> u8 {
        match self {
            Self::V1 => 1,
            Self::V2 => 2,
        }
    }

    /// The request header that carries the signed payment.
    pub fn payment_header(self) -> &'static str {
        match self {
            Self::V1 => X_PAYMENT,
            Self::V2 => PAYMENT_SIGNATURE,
        }
    }

    /// The response header that carries the settlement.
    pub fn response_header(self) -> &'static str {
        match self {
            Self::V1 => X_PAYMENT_RESPONSE,
            Self::V2 => PAYMENT_RESPONSE,
        }
    }
}

/// Why an x402 message from a server could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// A header or body is larger than its cap.
    #[error("the {what} is {len} bytes, above the {max}-byte cap")]
    TooLarge {
        /// Which header or body.
        what: String,
        /// Its size.
        len: usize,
        /// The cap.
        max: usize,
    },
    /// The 402 body is larger than its cap.
    #[error("the 402 body is larger than the {max}-byte cap")]
    BodyTooLarge {
        /// The cap.
        max: usize,
    },
    /// A header is not ASCII text.
    #[error("the {0} header is not ASCII text")]
    NotText(String),
    /// A header is not base64.
    #[error("the {0} header is not valid base64")]
    Base64(String),
    /// A header or body is not the JSON it should be.
    #[error("the {what} is not valid JSON: {reason}")]
    Json {
        /// Which header or body.
        what: String,
        /// The parser's complaint.
        reason: String,
    },
    /// The message has the wrong shape (a field missing or of the wrong type).
    #[error("the {what}: {reason}")]
    Shape {
        /// Which message.
        what: String,
        /// What is wrong.
        reason: String,
    },
    /// The server speaks an x402 version this client does not.
    #[error("the {what} declares x402Version {version}, which this client does not speak (1 and 2 only)")]
    Version {
        /// Which message.
        what: String,
        /// The version given.
        version: String,
    },
    /// A 402 without any x402 payment requirements.
    #[error("the 402 response carries no x402 payment requirements (no PAYMENT-REQUIRED header, no x402 JSON body)")]
    Missing,
}

fn shape(what: &str, reason: impl Into<String>) -> WireError {
    WireError::Shape { what: what.to_owned(), reason: reason.into() }
}

/// Standard base64, padding optional (servers differ).
const STANDARD: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);
/// URL-safe base64, padding optional.
const URL_SAFE: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::URL_SAFE,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// Encodes bytes as standard padded base64 (what every x402 peer reads).
pub fn encode_base64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Decodes a capped base64 JSON header value.
pub fn decode_header(name: &str, raw: &[u8]) -> Result<Value, WireError> {
    if raw.len() > MAX_HEADER_BYTES {
        return Err(WireError::TooLarge {
            what: format!("{} header", name.to_uppercase()),
            len: raw.len(),
            max: MAX_HEADER_BYTES,
        });
    }
    let text = std::str::from_utf8(raw)
        .ok()
        .filter(|t| t.is_ascii())
        .ok_or_else(|| WireError::NotText(name.to_uppercase()))?
        .trim();
    let bytes =
        STANDARD.decode(text).or_else(|_| URL_SAFE.decode(text)).map_err(|_| WireError::Base64(name.to_uppercase()))?;
    serde_json::from_slice(&bytes)
        .map_err(|e| WireError::Json { what: format!("{} header", name.to_uppercase()), reason: e.to_string() })
}

/// One payment requirement, as offered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requirement {
    /// `exact` is the only scheme this client pays.
    pub scheme: String,
    /// The network as written (CAIP-2 for v2, a name for v1).
    pub network: String,
    /// Amount in the asset's base units (`amount`, v1 `maxAmountRequired`).
    pub amount: U256,
    /// The token paid with (the EIP-712 verifying contract).
    pub asset: Address,
    /// The payee.
    pub pay_to: Address,
    /// The longest validity window the server accepts.
    pub max_timeout_seconds: u64,
    /// EIP-712 domain name (`extra.name`).
    pub domain_name: String,
    /// EIP-712 domain version (`extra.version`).
    pub domain_version: String,
    /// The resource URL the requirement is for, when the server names one.
    pub resource: Option<String>,
    /// The requirement exactly as offered (echoed back as v2 `accepted`).
    pub raw: Value,
}

/// A server's 402 offer.
#[derive(Debug, Clone)]
pub struct PaymentRequired {
    /// The protocol version.
    pub version: Version,
    /// The server's error text (set on a 402 that answers a payment).
    pub error: Option<String>,
    /// v2 `resource` object, echoed in the payload.
    pub resource: Option<Value>,
    /// Each requirement, or why it could not be read.
    pub accepts: Vec<Result<Requirement, String>>,
}

fn short_str<'a>(obj: &'a Map<String, Value>, field: &str) -> Result<&'a str, String> {
    match obj.get(field) {
        Some(Value::String(s)) if !s.is_empty() && s.chars().count() <= MAX_FIELD_CHARS => Ok(s),
        Some(Value::String(s)) if s.is_empty() => Err(format!("`{field}` is empty")),
        Some(Value::String(_)) => Err(format!("`{field}` is longer than {MAX_FIELD_CHARS} characters")),
        Some(_) => Err(format!("`{field}` is not a string")),
        None => Err(format!("`{field}` is missing")),
    }
}

fn amount_field(obj: &Map<String, Value>, field: &str) -> Result<U256, String> {
    let text = match obj.get(field) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) if n.is_u64() => n.to_string(),
        Some(_) => return Err(format!("`{field}` is not a base-unit integer")),
        None => return Err(format!("`{field}` is missing")),
    };
    if text.is_empty() || text.len() > 78 || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("`{field}` is not a base-unit integer"));
    }
    U256::from_str_radix(&text, 10).map_err(|_| format!("`{field}` overflows uint256"))
}

fn address_field(obj: &Map<String, Value>, field: &str) -> Result<Address, String> {
    let text = short_str(obj, field)?;
    holdfast_core::address::parse_address(field, text).map_err(|e| e.message)
}

fn parse_requirement(version: Version, raw: &Value) -> Result<Requirement, String> {
    let obj = raw.as_object().ok_or("a requirement is not a JSON object")?;
    let amount_key = match version {
        Version::V1 => "maxAmountRequired",
        Version::V2 => "amount",
    };
    let max_timeout_seconds = match obj.get("maxTimeoutSeconds") {
        Some(Value::Number(n)) => {
            n.as_u64().filter(|s| *s > 0).ok_or("`maxTimeoutSeconds` must be a positive integer")?
        }
        Some(_) => return Err("`maxTimeoutSeconds` must be a positive integer".into()),
        None => return Err("`maxTimeoutSeconds` is missing".into()),
    };
    let extra = obj.get("extra").and_then(Value::as_object);
    let domain = |field: &str| -> Result<String, String> {
        extra.ok_or_else(|| format!("`extra.{field}` is missing (the token's EIP-712 domain)")).and_then(|e| {
            short_str(e, field).map(str::to_owned).map_err(|r| format!("extra.{}", r.trim_start_matches('`')))
        })
    };
    let resource = match (version, obj.get("resource")) {
        (Version::V1, Some(Value::String(s))) if s.len() <= 2048 => Some(s.clone()),
        (Version::V1, Some(_)) => return Err("`resource` is not a URL string".into()),
        _ => None,
    };
    Ok(Requirement {
        scheme: short_str(obj, "scheme")?.to_owned(),
        network: short_str(obj, "network")?.to_owned(),
        amount: amount_field(obj, amount_key)?,
        asset: address_field(obj, "asset")?,
        pay_to: address_field(obj, "payTo")?,
        max_timeout_seconds,
        domain_name: domain("name")?,
        domain_version: domain("version")?,
        resource,
        raw: raw.clone(),
    })
}

/// Reads a PaymentRequired JSON document (`what` names it in errors).
pub fn parse_payment_required(what: &str, doc: &Value, expect: Option<Version>) -> Result<PaymentRequired, WireError> {
    let obj = doc.as_object().ok_or_else(|| shape(what, "not a JSON object"))?;
    let version = match obj.get("x402Version") {
        Some(Value::Number(n)) if n.as_u64() == Some(1) => Version::V1,
        Some(Value::Number(n)) if n.as_u64() == Some(2) => Version::V2,
        Some(other) => {
            let shown: String = other.to_string().chars().take(20).collect();
            return Err(WireError::Version { what: what.to_owned(), version: shown });
        }
        None => return Err(shape(what, "`x402Version` is missing")),
    };
    if let Some(expected) = expect
        && expected != version
    {
        return Err(WireError::Version { what: what.to_owned(), version: version.number().to_string() });
    }
    let accepts = obj
        .get("accepts")
        .and_then(Value::as_array)
        .ok_or_else(|| shape(what, "`accepts` is missing or not a list"))?;
    if accepts.len() > MAX_OFFERS {
        return Err(shape(what, format!("offers {} requirements, more than {MAX_OFFERS}", accepts.len())));
    }
    let error = obj.get("error").and_then(Value::as_str).map(|e| e.chars().take(300).collect());
    let resource = match version {
        Version::V2 => obj.get("resource").filter(|r| r.is_object()).cloned(),
        Version::V1 => None,
    };
    let resource_url = resource.as_ref().and_then(|r| r.get("url")).and_then(Value::as_str).map(str::to_owned);
    let accepts = accepts
        .iter()
        .map(|raw| {
            parse_requirement(version, raw).map(|mut r| {
                if r.resource.is_none() {
                    r.resource.clone_from(&resource_url);
                }
                r
            })
        })
        .collect();
    Ok(PaymentRequired { version, error, resource, accepts })
}

/// Reads the offer of a 402: the v2 `PAYMENT-REQUIRED` header when present, else a v1 (or v2) JSON body.
pub fn parse_402(headers: &HeaderMap, body: &[u8]) -> Result<PaymentRequired, WireError> {
    if let Some(value) = headers.get(PAYMENT_REQUIRED) {
        let doc = decode_header(PAYMENT_REQUIRED, value.as_bytes())?;
        return parse_payment_required("PAYMENT-REQUIRED header", &doc, Some(Version::V2));
    }
    if body.len() > MAX_BODY_BYTES {
        return Err(WireError::BodyTooLarge { max: MAX_BODY_BYTES });
    }
    let doc: Value = match serde_json::from_slice(body) {
        Ok(doc) => doc,
        Err(_) if body.iter().all(u8::is_ascii_whitespace) => return Err(WireError::Missing),
        Err(e) => return Err(WireError::Json { what: "402 body".into(), reason: e.to_string() }),
    };
    if doc.get("x402Version").is_none() && doc.get("accepts").is_none() {
        return Err(WireError::Missing);
    }
    parse_payment_required("402 body", &doc, None)
}

/// An EIP-3009 authorization, signed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedAuthorization {
    /// The payer (the wallet).
    pub from: Address,
    /// The payee.
    pub to: Address,
    /// Amount in base units.
    pub value: U256,
    /// Not valid at or before this time (Unix seconds).
    pub valid_after: u64,
    /// Not valid at or after this time (Unix seconds).
    pub valid_before: u64,
    /// 32 random bytes.
    pub nonce: B256,
    /// 65 bytes r‖s‖v.
    pub signature: Bytes,
}

impl SignedAuthorization {
    fn to_json(&self) -> Value {
        json!({
            "signature": self.signature.to_string(),
            "authorization": {
                "from": self.from.to_checksum(None),
                "to": self.to.to_checksum(None),
                "value": self.value.to_string(),
                "validAfter": self.valid_after.to_string(),
                "validBefore": self.valid_before.to_string(),
                "nonce": self.nonce.to_string(),
            },
        })
    }
}

/// The PaymentPayload for `requirement` of `offer`, as JSON.
pub fn payment_payload(offer: &PaymentRequired, requirement: &Requirement, auth: &SignedAuthorization) -> Value {
    match offer.version {
        Version::V2 => {
            let mut payload = json!({
                "x402Version": 2,
                "accepted": requirement.raw,
                "payload": auth.to_json(),
            });
            if let (Some(resource), Some(map)) = (&offer.resource, payload.as_object_mut()) {
                map.insert("resource".into(), resource.clone());
            }
            payload
        }
        Version::V1 => json!({
            "x402Version": 1,
            "scheme": requirement.scheme,
            "network": requirement.network,
            "payload": auth.to_json(),
        }),
    }
}

/// The header (name, value) that carries the payment on the retry.
pub fn payment_header(
    offer: &PaymentRequired,
    requirement: &Requirement,
    auth: &SignedAuthorization,
) -> (&'static str, String) {
    let payload = payment_payload(offer, requirement, auth);
    (offer.version.payment_header(), encode_base64(payload.to_string().as_bytes()))
}

/// A server's settlement report (`PAYMENT-RESPONSE` / `X-PAYMENT-RESPONSE`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settlement {
    /// Whether the server reports success.
    pub success: bool,
    /// The settlement transaction, when given and well-formed.
    pub transaction: Option<B256>,
    /// The network it names.
    pub network: Option<String>,
    /// The payer it names.
    pub payer: Option<String>,
    /// The server's error reason.
    pub error_reason: Option<String>,
}

/// Reads the settlement header of `version` from a response, if present.
pub fn parse_settlement(headers: &HeaderMap, version: Version) -> Option<Result<Settlement, WireError>> {
    let name = version.response_header();
    let value = headers.get(name)?;
    Some(decode_header(name, value.as_bytes()).and_then(|doc| {
        let what = format!("{} header", name.to_uppercase());
        let obj = doc.as_object().ok_or_else(|| shape(&what, "not a JSON object"))?;
        let success =
            obj.get("success").and_then(Value::as_bool).ok_or_else(|| shape(&what, "`success` is missing"))?;
        let text = |k: &str| obj.get(k).and_then(Value::as_str).map(|s| s.chars().take(200).collect::<String>());
        Ok(Settlement {
            success,
            transaction: text("transaction").and_then(|t| t.parse().ok()),
            network: text("network"),
            payer: text("payer"),
            error_reason: text("errorReason"),
        })
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    fn v2_offer() -> Value {
        json!({
            "x402Version": 2,
            "resource": {"url": "http://127.0.0.1:9/q", "description": "quote", "mimeType": "application/json"},
            "accepts": [{
                "scheme": "exact",
                "network": "eip155:8453",
                "amount": "10000",
                "asset": "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
                "payTo": "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC",
                "maxTimeoutSeconds": 60,
                "extra": {"name": "USD Coin", "version": "2"}
            }]
        })
    }

    fn headers(name: &'static str, value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(name, HeaderValue::from_str(value).unwrap());
        h
    }

    #[test]
    fn reads_a_v2_header_and_a_v1_body() {
        let h = headers(PAYMENT_REQUIRED, &encode_base64(v2_offer().to_string().as_bytes()));
        let offer = parse_402(&h, b"").unwrap();
        assert_eq!(offer.version, Version::V2);
        let r = offer.accepts[0].as_ref().unwrap();
        assert_eq!(r.amount, U256::from(10_000u64));
        assert_eq!(r.resource.as_deref(), Some("http://127.0.0.1:9/q"));
        assert_eq!(r.domain_name, "USD Coin");

        let mut v1 = v2_offer();
        v1["x402Version"] = json!(1);
        let req = v1["accepts"][0].as_object_mut().unwrap();
        let amount = req.remove("amount").unwrap();
        req.insert("maxAmountRequired".into(), amount);
        req.insert("network".into(), json!("base"));
        req.insert("resource".into(), json!("http://127.0.0.1:9/q"));
        let offer = parse_402(&HeaderMap::new(), v1.to_string().as_bytes()).unwrap();
        assert_eq!(offer.version, Version::V1);
        assert_eq!(offer.accepts[0].as_ref().unwrap().network, "base");
    }

    #[test]
    fn malformed_offers_are_coded_errors() {
        let cases: Vec<(HeaderMap, &[u8], &str)> = vec![
            (headers(PAYMENT_REQUIRED, "!!!not base64!!!"), b"", "base64"),
            (headers(PAYMENT_REQUIRED, &encode_base64(b"{not json")), b"", "not valid JSON"),
            (headers(PAYMENT_REQUIRED, &encode_base64(b"[1,2]")), b"", "not a JSON object"),
            (headers(PAYMENT_REQUIRED, &encode_base64(b"{\"x402Version\":7,\"accepts\":[]}")), b"", "x402Version 7"),
            (headers(PAYMENT_REQUIRED, &"A".repeat(MAX_HEADER_BYTES + 4)), b"", "cap"),
            (HeaderMap::new(), b"", "no x402"),
            (HeaderMap::new(), b"<html>pay me</html>", "not valid JSON"),
            (HeaderMap::new(), b"{\"x402Version\":1}", "accepts"),
        ];
        for (h, body, needle) in cases {
            let err = parse_402(&h, body).unwrap_err().to_string();
            assert!(err.contains(needle), "{needle}: {err}");
        }
        let many = json!({"x402Version": 2, "accepts": vec![json!({}); MAX_OFFERS + 1]});
        let h = headers(PAYMENT_REQUIRED, &encode_base64(many.to_string().as_bytes()));
        assert!(parse_402(&h, b"").unwrap_err().to_string().contains("more than"));
    }

    #[test]
    fn one_bad_requirement_keeps_its_reason() {
        let mut doc = v2_offer();
        let good = doc["accepts"][0].clone();
        let mut bad_amount = good.clone();
        bad_amount["amount"] = json!("1e6");
        let mut no_extra = good.clone();
        no_extra.as_object_mut().unwrap().remove("extra");
        let mut bad_payee = good.clone();
        bad_payee["payTo"] = json!("0x3c44cdddb6a900fa2b585dd299e03d12fa4293BC");
        let mut zero_timeout = good.clone();
        zero_timeout["maxTimeoutSeconds"] = json!(0);
        doc["accepts"] = json!([bad_amount, no_extra, bad_payee, zero_timeout, 5, good]);
        let offer = parse_payment_required("x", &doc, None).unwrap();
        let reasons: Vec<String> = offer.accepts.iter().filter_map(|r| r.as_ref().err().cloned()).collect();
        assert_eq!(reasons.len(), 5, "{reasons:?}");
        assert!(reasons[0].contains("amount") && reasons[1].contains("extra.name"), "{reasons:?}");
        assert!(reasons[2].to_lowercase().contains("checksum"), "{reasons:?}");
        assert!(reasons[3].contains("maxTimeoutSeconds") && reasons[4].contains("object"), "{reasons:?}");
        assert!(offer.accepts[5].is_ok());
    }

    #[test]
    fn payloads_echo_the_requirement_and_round_trip() {
        let h = headers(PAYMENT_REQUIRED, &encode_base64(v2_offer().to_string().as_bytes()));
        let offer = parse_402(&h, b"").unwrap();
        let req = offer.accepts[0].clone().unwrap();
        let auth = SignedAuthorization {
            from: Address::repeat_byte(1),
            to: req.pay_to,
            value: req.amount,
            valid_after: 1,
            valid_before: 61,
            nonce: B256::repeat_byte(7),
            signature: Bytes::from(vec![9u8; 65]),
        };
        let (name, value) = payment_header(&offer, &req, &auth);
        assert_eq!(name, PAYMENT_SIGNATURE);
        let doc = decode_header(name, value.as_bytes()).unwrap();
        assert_eq!(doc["accepted"], v2_offer()["accepts"][0]);
        assert_eq!(doc["resource"]["url"], "http://127.0.0.1:9/q");
        assert_eq!(doc["payload"]["authorization"]["value"], "10000");
        assert_eq!(doc["payload"]["authorization"]["nonce"], format!("0x{}", "07".repeat(32)));

        let settle =
            json!({"success": true, "transaction": format!("0x{}", "ab".repeat(32)), "network": "eip155:8453"});
        let h = headers(PAYMENT_RESPONSE, &encode_base64(settle.to_string().as_bytes()));
        let s = parse_settlement(&h, Version::V2).unwrap().unwrap();
        assert!(s.success && s.transaction.is_some());
        assert!(parse_settlement(&h, Version::V1).is_none());
        let h = headers(PAYMENT_RESPONSE, "%%%");
        assert!(parse_settlement(&h, Version::V2).unwrap().is_err());
    }
}

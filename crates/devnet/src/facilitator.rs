//! The devnet's x402 facilitator: real verify-and-settle of EIP-3009 payments against the devnet chain.
//!
//! [`Facilitator::verify`] checks, in order: the scheme (`exact`) and network (this chain, CAIP-2 `eip155:ID` for v2
//! or `base` for v1); for v2 that the payload's `accepted` echoes the requirement; that the asset is a contract;
//! the signature — 65 bytes, `v` 27/28, low `s`, and the signer recovered from the EIP-712 digest under the token's
//! domain (`extra.name`, `extra.version`, the chain id, the asset as verifying contract) equals `from`;
//! `to == payTo`; `value == amount`; the validity window (`validAfter <= now`, `validBefore >= now + 6`, and no
//! longer than `maxTimeoutSeconds` allows); the payer's balance; that the nonce is unused
//! (`authorizationState`); and finally a simulation of `transferWithAuthorization` from the facilitator account.
//!
//! [`Facilitator::settle`] verifies again (simulation included) under a lock, submits
//! `transferWithAuthorization(from, to, value, validAfter, validBefore, nonce, v, r, s)` from the facilitator
//! account (an unlocked anvil dev account), waits for the receipt and requires status 1 and the token's
//! `Transfer(from, to, value)` log.
//!
//! [`facilitator_router`] serves it as the x402 facilitator HTTP API: `POST /verify`, `POST /settle`,
//! `GET /supported`, so any x402 resource server (the reference `@x402/express` one included) can use it.

use crate::contracts::abi::IDevnetToken;
use alloy::network::TransactionBuilder;
use alloy::primitives::{Address, B256, Bytes, Signature, U256, address, uint};
use alloy::providers::{DynProvider, Provider};
use alloy::rpc::types::TransactionRequest;
use alloy::sol_types::{Eip712Domain, SolCall, SolEvent, SolStruct};
use axum::extract::DefaultBodyLimit;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Serialize;
use serde_json::{Map, Value, json};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The anvil dev account (#1 of the default mnemonic) that submits settlements and pays their gas.
pub const FACILITATOR_ACCOUNT: Address = address!("0x70997970C51812dc3A010C7d01b50e0d17dc79C8");
/// Largest request body the facilitator reads.
pub const MAX_BODY_BYTES: usize = 64 * 1024;
/// `validBefore` must be at least this far in the future when verified (as the reference facilitator requires).
pub const MIN_REMAINING_SECS: u64 = 6;
/// Clock slack allowed on top of `maxTimeoutSeconds` for the end of the validity window.
pub const WINDOW_SLACK_SECS: u64 = 60;
/// secp256k1 group order / 2: a larger `s` is a malleable signature.
const HALF_N: U256 = uint!(0x7fffffffffffffffffffffffffffffff5d576e7357a4501ddfe92f46681b20a0_U256);

alloy::sol! {
    /// EIP-3009 as the facilitator calls it.
    interface IEip3009 {
        function transferWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, uint8 v, bytes32 r, bytes32 s) external;
        function authorizationState(address authorizer, bytes32 nonce) external view returns (bool);
    }

    /// The typed data an x402 `exact` EVM payment signs.
    #[derive(Debug)]
    struct TransferWithAuthorization {
        address from;
        address to;
        uint256 value;
        uint256 validAfter;
        uint256 validBefore;
        bytes32 nonce;
    }
}

/// `POST /verify` answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VerifyResponse {
    /// Whether the payment is valid.
    pub is_valid: bool,
    /// Why not (a stable snake_case reason).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub invalid_reason: Option<String>,
    /// More detail.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub invalid_message: Option<String>,
    /// The payer, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub payer: Option<String>,
}

/// `POST /settle` answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SettleResponse {
    /// Whether the payment settled.
    pub success: bool,
    /// Why not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_reason: Option<String>,
    /// More detail.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
    /// The payer, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub payer: Option<String>,
    /// The settlement transaction (empty when none was sent).
    pub transaction: String,
    /// The network (as in the requirement).
    pub network: String,
    /// The amount settled, base units.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub amount: Option<String>,
}

/// A refusal: a stable reason and a message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason}: {message}")]
pub struct Invalid {
    /// Stable snake_case reason (`invalid_exact_evm_signature`, …).
    pub reason: &'static str,
    /// What was wrong.
    pub message: String,
    /// The payer, when it could be read.
    pub payer: Option<Address>,
}

fn invalid(reason: &'static str, message: impl Into<String>) -> Invalid {
    Invalid { reason, message: message.into(), payer: None }
}

/// A requirement as the facilitator reads it.
#[derive(Debug, Clone)]
struct Terms {
    version: u64,
    network: String,
    amount: U256,
    asset: Address,
    pay_to: Address,
    max_timeout: u64,
    name: String,
    token_version: String,
}

/// An authorization as the facilitator reads it.
#[derive(Debug, Clone)]
struct Authorization {
    from: Address,
    to: Address,
    value: U256,
    valid_after: U256,
    valid_before: U256,
    nonce: B256,
    signature: Signature,
}

impl Authorization {
    fn call(&self) -> IEip3009::transferWithAuthorizationCall {
        let v = if self.signature.v() { 28u8 } else { 27u8 };
        IEip3009::transferWithAuthorizationCall {
            from: self.from,
            to: self.to,
            value: self.value,
            validAfter: self.valid_after,
            validBefore: self.valid_before,
            nonce: self.nonce,
            v,
            r: self.signature.r().into(),
            s: self.signature.s().into(),
        }
    }
}

fn str_field<'a>(obj: &'a Map<String, Value>, field: &str, what: &str) -> Result<&'a str, Invalid> {
    obj.get(field)
        .and_then(Value::as_str)
        .ok_or_else(|| invalid("invalid_payload", format!("{what}: `{field}` is missing")))
}

fn uint_field(obj: &Map<String, Value>, field: &str, what: &str) -> Result<U256, Invalid> {
    let bad = || invalid("invalid_payload", format!("{what}: `{field}` is not a base-unit integer"));
    match obj.get(field) {
        Some(Value::String(s)) if !s.is_empty() && s.len() <= 78 && s.bytes().all(|b| b.is_ascii_digit()) => {
            U256::from_str_radix(s, 10).map_err(|_| bad())
        }
        Some(Value::Number(n)) => n.as_u64().map(U256::from).ok_or_else(bad),
        _ => Err(bad()),
    }
}

fn addr_field(obj: &Map<String, Value>, field: &str, what: &str) -> Result<Address, Invalid> {
    str_field(obj, field, what)?
        .parse()
        .map_err(|_| invalid("invalid_payload", format!("{what}: `{field}` is not an address")))
}

fn now_secs() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or_default()
}

/// The x402 facilitator of one devnet chain.
pub struct Facilitator {
    provider: DynProvider,
    chain_id: u64,
    account: Address,
    settle_lock: tokio::sync::Mutex<()>,
}

impl std::fmt::Debug for Facilitator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Facilitator").field("chain_id", &self.chain_id).field("account", &self.account).finish()
    }
}

impl Facilitator {
    /// A facilitator for the chain behind `provider` that settles from `account` (an account the node has
    /// unlocked, e.g. [`FACILITATOR_ACCOUNT`] on anvil).
    pub fn new(provider: DynProvider, chain_id: u64, account: Address) -> Self {
        Self { provider, chain_id, account, settle_lock: tokio::sync::Mutex::new(()) }
    }

    /// The CAIP-2 network this facilitator settles on (`eip155:1752132708` on the devnet).
    pub fn network(&self) -> String {
        format!("eip155:{}", self.chain_id)
    }

    /// The account that submits settlements.
    pub fn account(&self) -> Address {
        self.account
    }

    /// `GET /supported`.
    pub fn supported(&self) -> Value {
        // x402 v1 names networks; the devnet's one network keeps the name `base` whatever its chain id.
        let kinds = vec![
            json!({"x402Version": 2, "scheme": "exact", "network": self.network()}),
            json!({"x402Version": 1, "scheme": "exact", "network": "base"}),
        ];
        json!({"kinds": kinds, "extensions": [], "signers": {"eip155:*": [self.account.to_checksum(None)]}})
    }

    fn network_ok(&self, version: u64, network: &str) -> bool {
        match version {
            2 => network == self.network(),
            1 => network == "base",
            _ => false,
        }
    }

    fn terms(&self, requirements: &Value) -> Result<Terms, Invalid> {
        let what = "paymentRequirements";
        let obj = requirements.as_object().ok_or_else(|| invalid("invalid_payment_requirements", "not an object"))?;
        if str_field(obj, "scheme", what)? != "exact" {
            return Err(invalid("unsupported_scheme", "only the `exact` scheme is supported"));
        }
        let network = str_field(obj, "network", what)?.to_owned();
        let version = if network.starts_with("eip155:") { 2 } else { 1 };
        if !self.network_ok(version, &network) {
            return Err(invalid("invalid_network", format!("network {network:?} is not {}", self.network())));
        }
        let amount = match version {
            2 => uint_field(obj, "amount", what)?,
            _ => uint_field(obj, "maxAmountRequired", what)?,
        };
        let extra = obj.get("extra").and_then(Value::as_object);
        let domain = |field: &str| {
            extra
                .and_then(|e| e.get(field))
                .and_then(Value::as_str)
                .map(str::to_owned)
                .ok_or_else(|| invalid("invalid_payment_requirements", format!("`extra.{field}` is missing")))
        };
        Ok(Terms {
            version,
            network,
            amount,
            asset: addr_field(obj, "asset", what)?,
            pay_to: addr_field(obj, "payTo", what)?,
            max_timeout: obj
                .get("maxTimeoutSeconds")
                .and_then(Value::as_u64)
                .filter(|s| *s > 0)
                .ok_or_else(|| invalid("invalid_payment_requirements", "`maxTimeoutSeconds` is missing"))?,
            name: domain("name")?,
            token_version: domain("version")?,
        })
    }

    fn authorization(&self, payload: &Value, requirements: &Value, terms: &Terms) -> Result<Authorization, Invalid> {
        let what = "paymentPayload";
        let obj = payload.as_object().ok_or_else(|| invalid("invalid_payload", "not an object"))?;
        let version = obj.get("x402Version").and_then(Value::as_u64).unwrap_or_default();
        if version != terms.version {
            return Err(invalid("invalid_x402_version", format!("x402Version {version} does not fit the requirement")));
        }
        if version == 2 {
            let accepted = obj.get("accepted").ok_or_else(|| invalid("invalid_payload", "`accepted` is missing"))?;
            for key in ["scheme", "network", "amount", "asset", "payTo", "maxTimeoutSeconds"] {
                if accepted.get(key) != requirements.get(key) {
                    return Err(invalid(
                        "accepted_requirements_mismatch",
                        format!("`accepted.{key}` does not match the requirement"),
                    ));
                }
            }
        } else if obj.get("scheme").and_then(Value::as_str) != Some("exact")
            || obj.get("network").and_then(Value::as_str) != Some(terms.network.as_str())
        {
            return Err(invalid("accepted_requirements_mismatch", "scheme or network does not match the requirement"));
        }
        let inner = obj
            .get("payload")
            .and_then(Value::as_object)
            .ok_or_else(|| invalid("invalid_payload", "`payload` is missing"))?;
        let auth = inner
            .get("authorization")
            .and_then(Value::as_object)
            .ok_or_else(|| invalid("invalid_payload", "`payload.authorization` is missing"))?;
        let sig_hex = str_field(inner, "signature", what)?;
        let sig: Bytes =
            sig_hex.parse().map_err(|_| invalid("invalid_exact_evm_signature", "the signature is not hex"))?;
        if sig.len() != 65 {
            return Err(invalid(
                "invalid_exact_evm_signature",
                format!("the signature is {} bytes, not 65", sig.len()),
            ));
        }
        if !matches!(sig[64], 0 | 1 | 27 | 28) {
            return Err(invalid("invalid_exact_evm_signature", "the signature's v is not 27 or 28"));
        }
        let signature =
            Signature::from_raw(&sig).map_err(|_| invalid("invalid_exact_evm_signature", "unreadable signature"))?;
        if signature.s() > HALF_N {
            return Err(invalid("invalid_exact_evm_signature", "the signature's s is in the upper half (malleable)"));
        }
        let nonce: B256 = str_field(auth, "nonce", what)?
            .parse()
            .map_err(|_| invalid("invalid_payload", "`authorization.nonce` is not 32 bytes of hex"))?;
        Ok(Authorization {
            from: addr_field(auth, "from", what)?,
            to: addr_field(auth, "to", what)?,
            value: uint_field(auth, "value", what)?,
            valid_after: uint_field(auth, "validAfter", what)?,
            valid_before: uint_field(auth, "validBefore", what)?,
            nonce,
            signature,
        })
    }

    async fn check(&self, payload: &Value, requirements: &Value) -> Result<(Terms, Authorization), Invalid> {
        let terms = self.terms(requirements)?;
        let auth = self.authorization(payload, requirements, &terms)?;
        let payer = Some(auth.from);
        let with_payer = |mut e: Invalid| {
            e.payer = payer;
            e
        };
        let code =
            self.provider.get_code_at(terms.asset).await.map_err(|e| {
                with_payer(invalid("unexpected_verify_error", format!("reading the asset's code: {e}")))
            })?;
        if code.is_empty() {
            return Err(with_payer(invalid("invalid_exact_evm_asset", format!("asset {} has no code", terms.asset))));
        }
        let typed = TransferWithAuthorization {
            from: auth.from,
            to: auth.to,
            value: auth.value,
            validAfter: auth.valid_after,
            validBefore: auth.valid_before,
            nonce: auth.nonce,
        };
        let domain = Eip712Domain::new(
            Some(terms.name.clone().into()),
            Some(terms.token_version.clone().into()),
            Some(U256::from(self.chain_id)),
            Some(terms.asset),
            None,
        );
        let digest = typed.eip712_signing_hash(&domain);
        let signer = auth.signature.recover_address_from_prehash(&digest).ok();
        if signer != Some(auth.from) {
            return Err(with_payer(invalid(
                "invalid_exact_evm_signature",
                "the signature does not recover to `from` under the token's EIP-712 domain",
            )));
        }
        if auth.to != terms.pay_to {
            return Err(with_payer(invalid(
                "invalid_exact_evm_recipient_mismatch",
                format!("`to` {} is not payTo {}", auth.to, terms.pay_to),
            )));
        }
        if auth.value != terms.amount {
            return Err(with_payer(invalid(
                "invalid_exact_evm_authorization_value_mismatch",
                format!("`value` {} is not the amount {}", auth.value, terms.amount),
            )));
        }
        let now = U256::from(now_secs());
        if auth.valid_after > now {
            return Err(with_payer(invalid("invalid_exact_evm_payload_authorization_valid_after", "not valid yet")));
        }
        if auth.valid_before < now + U256::from(MIN_REMAINING_SECS) {
            return Err(with_payer(invalid(
                "invalid_exact_evm_payload_authorization_valid_before",
                "expired or about to",
            )));
        }
        if auth.valid_before > now + U256::from(terms.max_timeout + WINDOW_SLACK_SECS) {
            return Err(with_payer(invalid(
                "invalid_exact_evm_payload_authorization_valid_before",
                format!("the authorization stays valid longer than maxTimeoutSeconds ({})", terms.max_timeout),
            )));
        }
        let token = IDevnetToken::new(terms.asset, &self.provider);
        let balance =
            token.balanceOf(auth.from).call().await.map_err(|e| {
                with_payer(invalid("unexpected_verify_error", format!("reading the payer's balance: {e}")))
            })?;
        if balance < auth.value {
            return Err(with_payer(invalid(
                "insufficient_funds",
                format!("the payer holds {balance}, needs {}", auth.value),
            )));
        }
        let used = IEip3009::authorizationStateCall { authorizer: auth.from, nonce: auth.nonce }.abi_encode();
        let used = self
            .provider
            .call(TransactionRequest::default().with_to(terms.asset).with_input(used))
            .await
            .ok()
            .and_then(|out| IEip3009::authorizationStateCall::abi_decode_returns(&out).ok());
        match used {
            Some(false) => {}
            Some(true) => {
                return Err(with_payer(invalid("invalid_exact_evm_nonce_already_used", "the authorization was used")));
            }
            None => return Err(with_payer(invalid("unexpected_verify_error", "cannot read authorizationState"))),
        }
        let sim = TransactionRequest::default()
            .with_from(self.account)
            .with_to(terms.asset)
            .with_input(auth.call().abi_encode());
        if let Err(e) = self.provider.call(sim).await {
            return Err(with_payer(invalid("invalid_exact_evm_transaction_simulation_failed", e.to_string())));
        }
        Ok((terms, auth))
    }

    /// Verifies a payment against a requirement without settling it.
    pub async fn verify(&self, payload: &Value, requirements: &Value) -> VerifyResponse {
        match self.check(payload, requirements).await {
            Ok((_, auth)) => VerifyResponse {
                is_valid: true,
                invalid_reason: None,
                invalid_message: None,
                payer: Some(auth.from.to_checksum(None)),
            },
            Err(e) => VerifyResponse {
                is_valid: false,
                invalid_reason: Some(e.reason.to_owned()),
                invalid_message: Some(e.message),
                payer: e.payer.map(|p| p.to_checksum(None)),
            },
        }
    }

    /// Verifies, then settles on chain: submits `transferWithAuthorization` and waits for its receipt.
    pub async fn settle(&self, payload: &Value, requirements: &Value) -> SettleResponse {
        let network = requirements.get("network").and_then(Value::as_str).unwrap_or_default().to_owned();
        let fail = |e: Invalid, transaction: String| SettleResponse {
            success: false,
            error_reason: Some(e.reason.to_owned()),
            error_message: Some(e.message),
            payer: e.payer.map(|p| p.to_checksum(None)),
            transaction,
            network: network.clone(),
            amount: None,
        };
        let _guard = self.settle_lock.lock().await;
        let (terms, auth) = match self.check(payload, requirements).await {
            Ok(ok) => ok,
            Err(e) => return fail(e, String::new()),
        };
        let payer = Some(auth.from);
        let failed = |reason: &'static str, message: String| Invalid { reason, message, payer };
        let tx = TransactionRequest::default()
            .with_from(self.account)
            .with_to(terms.asset)
            .with_input(auth.call().abi_encode());
        let hash = match self.provider.send_transaction(tx).await {
            Ok(pending) => *pending.tx_hash(),
            Err(e) => return fail(failed("settle_exact_failed_onchain", format!("sending: {e}")), String::new()),
        };
        let mut receipt = None;
        for _ in 0..1000 {
            match self.provider.get_transaction_receipt(hash).await {
                Ok(Some(r)) => {
                    receipt = Some(r);
                    break;
                }
                Ok(None) => tokio::time::sleep(Duration::from_millis(10)).await,
                Err(e) => {
                    return fail(failed("settle_exact_failed_onchain", format!("receipt: {e}")), hash.to_string());
                }
            }
        }
        let Some(receipt) = receipt else {
            return fail(failed("settle_exact_failed_onchain", "not mined within 10 s".into()), hash.to_string());
        };
        let transferred = receipt.logs().iter().any(|log| {
            log.address() == terms.asset
                && IDevnetToken::Transfer::decode_log_data(log.data())
                    .is_ok_and(|t| t.from == auth.from && t.to == auth.to && t.value == auth.value)
        });
        if !receipt.status() || !transferred {
            return fail(
                failed("settle_exact_failed_onchain", "the settlement reverted or moved nothing".into()),
                hash.to_string(),
            );
        }
        tracing::info!(tx = %hash, payer = %auth.from, amount = %auth.value, "x402 payment settled");
        SettleResponse {
            success: true,
            error_reason: None,
            error_message: None,
            payer: Some(auth.from.to_checksum(None)),
            transaction: hash.to_string(),
            network,
            amount: Some(auth.value.to_string()),
        }
    }
}

/// Splits a facilitator request body `{x402Version, paymentPayload, paymentRequirements}`.
fn request_parts(body: &Value) -> Option<(&Value, &Value)> {
    Some((body.get("paymentPayload")?, body.get("paymentRequirements")?))
}

fn bad_request(why: &str) -> Response {
    (StatusCode::BAD_REQUEST, Json(json!({"error": why}))).into_response()
}

async fn verify_handler(
    State(f): State<Arc<Facilitator>>,
    body: Result<Json<Value>, axum::extract::rejection::JsonRejection>,
) -> Response {
    let Ok(Json(body)) = body else { return bad_request("the body is not JSON") };
    let Some((payload, requirements)) = request_parts(&body) else {
        return bad_request("the body needs paymentPayload and paymentRequirements");
    };
    Json(f.verify(payload, requirements).await).into_response()
}

async fn settle_handler(
    State(f): State<Arc<Facilitator>>,
    body: Result<Json<Value>, axum::extract::rejection::JsonRejection>,
) -> Response {
    let Ok(Json(body)) = body else { return bad_request("the body is not JSON") };
    let Some((payload, requirements)) = request_parts(&body) else {
        return bad_request("the body needs paymentPayload and paymentRequirements");
    };
    Json(f.settle(payload, requirements).await).into_response()
}

async fn supported_handler(State(f): State<Arc<Facilitator>>) -> Json<Value> {
    Json(f.supported())
}

/// The facilitator HTTP API: `POST /verify`, `POST /settle`, `GET /supported` (bodies capped at 64 KiB).
pub fn facilitator_router(facilitator: Arc<Facilitator>) -> Router {
    Router::new()
        .route("/verify", post(verify_handler))
        .route("/settle", post(settle_handler))
        .route("/supported", get(supported_handler))
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(facilitator)
}

//! The x402 client: how `x402_fetch` pays a preset's server that answers HTTP 402 — the HTTP and the wire format
//! ([`wire`]). Everything a payment decides, signs and records happens in the kernel ([`crate::kernel::payment`]).
//!
//! One paid request, in order:
//!
//! 1. The unpaid `GET` answers 402. Its offer is read defensively ([`wire`]): v2 `PAYMENT-REQUIRED` header or a v1
//!    JSON body, every header capped at 16 KiB. Anything unreadable → `payment_refused`, nothing signed.
//! 2. The kernel (`crate::kernel::payment::authorize`) chooses the cheapest requirement that passes every rule
//!    ([`crate::policy::Policy::choose_payment`]); none passes → `payment_refused` naming each reason. It reserves
//!    the amount under the daily budget atomically, so concurrent payments from any number of sessions cannot
//!    overrun it together.
//! 3. The wallet signs an EIP-3009 `TransferWithAuthorization` carrying exactly that requirement's amount, asset,
//!    payee and network (the EIP-712 domain is the token's on that chain), a validity window that opens by the
//!    chain's clock and closes no later than its `maxTimeoutSeconds` (and never above [`MAX_WINDOW_SECS`]) after
//!    now ([`validity_window`]), and 32 random nonce bytes (invariant 8).
//! 4. The payment is journaled durably (`payment`, status `signed`) before the header leaves the process
//!    (invariant 9).
//! 5. The same URL is requested once more with the payment header. A 2xx is the content; the settlement is read
//!    from `PAYMENT-RESPONSE` and checked on chain by the kernel (`crate::kernel::payment::settle`,
//!    `authorizationState`): settled → `confirmed` with the transaction. Another 402 is never paid again (`payment_failed`, naming changed terms when the server changed
//!    them). Any answer leaves the entry live until the chain shows it settled or it expires unsettled, so a server
//!    that sits on a signed authorization cannot push today's payments past the budget.
//! 6. `payment.made` is published on the session's bus.
//!
//! Payments run without a confirmation: each is capped per request and per day by configuration, and its terms come
//! from the server and the configuration, never from the model.

pub mod wire;

pub use crate::kernel::payment::{MAX_WINDOW_SECS, validity_window};

use crate::Web3;
use crate::journal::EntryStatus;
use crate::kernel::human;
use crate::kernel::payment::{self, PaymentAsk};
use crate::presets::Preset;
use holdfast_core::config::NetworkConfig;
use holdfast_core::{ErrorCode, ToolContext, ToolError};
use reqwest::StatusCode;
use schemars::JsonSchema;
use serde::Serialize;
use wire::{PaymentRequired, Requirement, WireError};

/// What an x402 payment did, as `x402_fetch` reports it.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct PaymentSummary {
    /// Amount paid (human units with the symbol).
    pub amount: String,
    /// The payee.
    pub payee: String,
    /// The network (canonical name).
    pub network: String,
    /// The x402 version spoken (1 or 2).
    pub x402_version: u8,
    /// `confirmed` (settled on chain) or `pending` (not yet seen settled; counted against the budget until it
    /// settles or expires).
    pub status: String,
    /// The settlement transaction, once known.
    pub transaction: Option<String>,
    /// The journal entry.
    pub journal_id: String,
}

/// The answer to a preset request, paid or not.
#[derive(Debug)]
pub(crate) struct Fetched {
    /// HTTP status of the final answer.
    pub status: StatusCode,
    /// Its body (capped).
    pub body: Vec<u8>,
    /// The payment made, if one was.
    pub payment: Option<PaymentSummary>,
}

/// A preset request about to be sent.
pub(crate) struct PresetRequest<'a> {
    pub preset_name: &'a str,
    pub preset: &'a Preset,
    pub network: &'a NetworkConfig,
    pub url: &'a reqwest::Url,
}

/// Why a payment was refused or failed; each maps to one stable code.
#[derive(Debug, thiserror::Error)]
pub enum X402Error {
    /// The server's offer could not be read; nothing was signed.
    #[error("preset `{preset}`: the 402 offer is malformed, nothing was signed: {source}")]
    MalformedOffer {
        /// The preset.
        preset: String,
        /// What was wrong.
        #[source]
        source: WireError,
    },
    /// The payment was signed and sent, and did not buy the content.
    #[error("preset `{preset}`: {reason}")]
    Failed {
        /// The preset.
        preset: String,
        /// What happened, including the payment's state.
        reason: String,
    },
}

impl X402Error {
    /// The stable code.
    pub fn code(&self) -> ErrorCode {
        match self {
            Self::MalformedOffer { .. } => ErrorCode::PaymentRefused,
            Self::Failed { .. } => ErrorCode::PaymentFailed,
        }
    }
}

impl From<X402Error> for ToolError {
    fn from(e: X402Error) -> Self {
        ToolError::new(e.code(), e.to_string())
    }
}

fn upstream(preset: &str, e: impl std::fmt::Display) -> ToolError {
    ToolError::new(ErrorCode::UpstreamError, format!("preset `{preset}`: {e}"))
}

/// Reads a response body, refusing more than `cap` bytes.
pub(crate) async fn read_limited(mut response: reqwest::Response, cap: usize) -> Result<Vec<u8>, ToolError> {
    let too_large = || ToolError::new(ErrorCode::UpstreamError, format!("the response is larger than {cap} bytes"));
    if response.content_length().is_some_and(|n| n > cap as u64) {
        return Err(too_large());
    }
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| ToolError::new(ErrorCode::UpstreamError, format!("reading the response: {e}")))?
    {
        if body.len() + chunk.len() > cap {
            return Err(too_large());
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

async fn send(
    web3: &Web3,
    req: &PresetRequest<'_>,
    payment: Option<(&str, &str)>,
) -> Result<reqwest::Response, ToolError> {
    let mut request = web3.http().get(req.url.clone());
    for (k, v) in &req.preset.headers {
        request = request.header(k, v);
    }
    if let Some((name, value)) = payment {
        request = request.header(name, value);
    }
    request.send().await.map_err(|e| upstream(req.preset_name, e))
}

/// Fetches a preset, paying its server when it answers 402 and the policy allows it.
pub(crate) async fn fetch(
    web3: &Web3,
    ctx: &ToolContext,
    req: &PresetRequest<'_>,
    cap: usize,
) -> Result<Fetched, ToolError> {
    // Until a payment is signed nothing is written: a stop (the turn's cancel) drops the request here.
    let first = ctx.until_cancelled("fetching the preset", send(web3, req, None)).await??;
    // The host only: a preset URL's query may carry the user's values.
    let host = req.url.host_str().unwrap_or_default();
    tracing::debug!(preset = req.preset_name, host, status = first.status().as_u16(), "x402: fetched");
    if first.status() != StatusCode::PAYMENT_REQUIRED {
        let status = first.status();
        let body = ctx.until_cancelled("reading the preset's answer", read_limited(first, cap)).await??;
        return Ok(Fetched { status, body, payment: None });
    }
    let headers = first.headers().clone();
    let offer =
        match ctx.until_cancelled("reading the payment offer", read_limited(first, wire::MAX_BODY_BYTES)).await? {
            Ok(body) => wire::parse_402(&headers, &body),
            // A v2 offer travels in its header; the body does not matter then.
            Err(_) if headers.contains_key(wire::PAYMENT_REQUIRED) => wire::parse_402(&headers, &[]),
            Err(_) => Err(WireError::BodyTooLarge { max: wire::MAX_BODY_BYTES }),
        }
        .map_err(|source| X402Error::MalformedOffer { preset: req.preset_name.to_owned(), source })?;
    tracing::info!(preset = req.preset_name, host, version = ?offer.version, offers = offer.accepts.len(), "x402: payment required");
    pay_and_fetch(web3, ctx, req, offer, cap).await
}

async fn pay_and_fetch(
    web3: &Web3,
    ctx: &ToolContext,
    req: &PresetRequest<'_>,
    offer: PaymentRequired,
    cap: usize,
) -> Result<Fetched, ToolError> {
    let ask = PaymentAsk {
        preset_name: req.preset_name,
        preset: req.preset,
        network: req.network,
        url: req.url,
        version: offer.version.number(),
        offers: &offer.accepts,
    };
    let paid = payment::authorize(web3, ctx, ask).await?;
    let header = wire::payment_header(&offer, &paid.requirement, &paid.auth);
    let journal_id = paid.entry.id.clone();
    tracing::info!(
        preset = req.preset_name,
        %journal_id,
        amount = %paid.entry.amount,
        asset = %paid.symbol,
        network = %paid.requirement.network,
        "x402: authorization signed and journaled; retrying with payment"
    );
    let failed = |reason: String| X402Error::Failed { preset: req.preset_name.to_owned(), reason };
    let settle = |claimed, why| payment::settle(web3, ctx, req.preset_name, req.network, &paid, claimed, why);

    let response = match send(web3, req, Some((header.0, header.1.as_str()))).await {
        Ok(r) => r,
        Err(e) => {
            let state = settle(None, Some(format!("sending the paid request failed: {}", e.message))).await;
            return Err(failed(format!(
                "sending the paid request failed ({}); the payment is {} (journal {journal_id})",
                e.message,
                state.status.as_str()
            ))
            .into());
        }
    };
    let status = response.status();
    let settlement = wire::parse_settlement(response.headers(), offer.version);
    tracing::info!(
        preset = req.preset_name,
        %journal_id,
        status = status.as_u16(),
        settlement_reported = settlement.as_ref().is_some_and(Result::is_ok),
        "x402: paid request answered"
    );
    let again = (status == StatusCode::PAYMENT_REQUIRED).then(|| response.headers().clone());
    let body = read_limited(response, if again.is_some() { wire::MAX_BODY_BYTES } else { cap }).await;
    let claimed = match &settlement {
        Some(Ok(s)) if s.success => s.transaction,
        _ => None,
    };

    if let Some(headers) = again {
        let second = wire::parse_402(&headers, body.as_deref().unwrap_or_default());
        let why = match &second {
            Ok(second) if !same_terms(second, &paid.requirement) => {
                "the server changed its terms between the offer and the retry".to_owned()
            }
            Ok(second) => {
                format!("the server refused the payment ({})", second.error.as_deref().unwrap_or("no reason given"))
            }
            Err(e) => format!("the server answered the payment with another 402 ({e})"),
        };
        let state = settle(claimed, Some(why.clone())).await;
        return Err(failed(format!(
            "{why}; not paying twice. The signed payment is {} (journal {journal_id}){}",
            state.status.as_str(),
            if state.status == EntryStatus::Confirmed {
                ": the server settled it and still refused the content"
            } else {
                ""
            }
        ))
        .into());
    }

    let note = match &settlement {
        None => Some(format!("the server sent no {} header", offer.version.response_header().to_uppercase())),
        Some(Err(e)) => Some(e.to_string()),
        Some(Ok(s)) if !s.success => Some(format!(
            "the server reports a failed settlement: {}",
            s.error_reason.as_deref().unwrap_or("no reason")
        )),
        Some(Ok(_)) => None,
    };
    let why =
        if status.is_success() { note } else { Some(format!("the paid request answered HTTP {}", status.as_u16())) };
    let state = settle(claimed, why).await;
    let summary = PaymentSummary {
        amount: human(paid.requirement.amount, paid.decimals, &paid.symbol),
        payee: paid.requirement.pay_to.to_checksum(None),
        network: req.network.name.clone(),
        x402_version: offer.version.number(),
        status: state.status.as_str().to_owned(),
        transaction: state.tx_hash.clone(),
        journal_id: journal_id.clone(),
    };
    let body = body.map_err(|e| after_payment(e, &summary))?;
    if !status.is_success() {
        let text = String::from_utf8_lossy(&body[..body.len().min(300)]).into_owned();
        return Err(failed(format!(
            "the paid request answered HTTP {}: {text}; the payment is {} (journal {journal_id})",
            status.as_u16(),
            state.status.as_str()
        ))
        .into());
    }
    Ok(Fetched { status, body, payment: Some(summary) })
}

/// `e`, raised after `paid` was made, naming the payment.
pub(crate) fn after_payment(e: ToolError, paid: &PaymentSummary) -> ToolError {
    let message = format!(
        "{}; a payment of {} to {} was made for this fetch (status {}, journal {}): do not retry in a loop",
        e.message, paid.amount, paid.payee, paid.status, paid.journal_id
    );
    let payment = serde_json::to_value(paid).unwrap_or(serde_json::Value::Null);
    let details = match e.details {
        Some(serde_json::Value::Object(mut map)) => {
            map.insert("payment".into(), payment);
            serde_json::Value::Object(map)
        }
        _ => serde_json::json!({"payment": payment}),
    };
    ToolError::new(e.code, message).with_details(details)
}

/// Whether a second 402 offers the same terms as the requirement that was paid.
fn same_terms(second: &PaymentRequired, paid: &Requirement) -> bool {
    second.accepts.iter().filter_map(|r| r.as_ref().ok()).any(|r| {
        r.scheme == paid.scheme
            && r.network == paid.network
            && r.amount == paid.amount
            && r.asset == paid.asset
            && r.pay_to == paid.pay_to
    })
}

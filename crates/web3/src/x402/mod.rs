//! The x402 client: how `x402_fetch` pays a preset's server that answers HTTP 402.
//!
//! One paid request, in order:
//!
//! 1. The unpaid `GET` answers 402. Its offer is read defensively ([`wire`]): v2 `PAYMENT-REQUIRED` header or a v1
//!    JSON body, every header capped at 16 KiB. Anything unreadable → `payment_refused`, nothing signed.
//! 2. Today's payments are read from the journal and the policy chooses the cheapest requirement that passes every
//!    rule ([`crate::policy::Policy::choose_payment`]); none passes → `payment_refused` naming each reason. The
//!    kernel then reserves the amount under the daily budget atomically (`kernel::payment::reserve`), so
//!    concurrent payments from any number of sessions cannot overrun it together.
//! 3. The wallet signs an EIP-3009 `TransferWithAuthorization` carrying exactly that requirement's amount, asset,
//!    payee and network (the EIP-712 domain is the token's on that chain), a validity window that opens by the
//!    chain's clock and closes no later than its `maxTimeoutSeconds` (and never above [`MAX_WINDOW_SECS`]) after
//!    now ([`validity_window`]), and 32 random nonce bytes (invariant 8).
//! 4. The payment is journaled durably (`payment`, status `signed`) before the header leaves the process
//!    (invariant 9).
//! 5. The same URL is requested once more with the payment header. A 2xx is the content; the settlement is read
//!    from `PAYMENT-RESPONSE` and checked on chain (`authorizationState`): settled → `confirmed` with the
//!    transaction. Another 402 is never paid again (`payment_failed`, naming changed terms when the server changed
//!    them). Any answer leaves the entry live until the chain shows it settled or it expires unsettled, so a server
//!    that sits on a signed authorization cannot push today's payments past the budget.
//! 6. `payment.made` is published on the session's bus.
//!
//! Payments run without a confirmation: each is capped per request and per day by configuration, and its terms come
//! from the server and the configuration, never from the model.

pub mod wire;

use crate::Web3;
use crate::journal::{EntryKind, EntryStatus, EntryUpdate, JournalEntry, NewEntry};
use crate::kernel::{fingerprint, human};
use crate::policy::{PaymentOffer, PaymentRequest};
use crate::presets::Preset;
use crate::wallet::TransferWithAuthorization;
use alloy::primitives::{Address, B256, Bytes, U256};
use alloy::sol_types::Eip712Domain;
use holdfast_core::config::NetworkConfig;
use holdfast_core::event::{EventPayload, PaymentMade};
use holdfast_core::{ErrorCode, ToolContext, ToolError};
use reqwest::StatusCode;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::json;
use std::collections::HashMap;
use std::time::{SystemTime, UNIX_EPOCH};
use wire::{PaymentRequired, Requirement, SignedAuthorization, WireError};

/// A chain whose latest block is at most this far behind the local clock keeps time: once the local clock passes an
/// authorization's `validBefore`, no block of it can settle the authorization any more.
const CHAIN_LAG_TOLERANCE_SECS: u64 = 120;

/// The longest validity window the client signs, whatever the server allows (seconds).
pub const MAX_WINDOW_SECS: u64 = 300;
/// How far before the chain's clock (the latest block's timestamp) the window opens, at most (seconds), so the
/// token's `block.timestamp > validAfter` holds on the block a facilitator simulates at.
const MAX_SKEW_SECS: u64 = 30;

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

fn now_secs() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or_default()
}

/// The validity window `(validAfter, validBefore)` signed at local time `now` for a requirement allowing
/// `max_timeout` seconds, on a chain whose latest block is stamped `chain_time`. The window is `max_timeout`, at
/// most [`MAX_WINDOW_SECS`].
///
/// It opens by the chain's clock: a little (a quarter of the window, at most 30 s) before the latest block's
/// timestamp, never later than `now`. The token requires `block.timestamp > validAfter`, and a facilitator
/// simulates at `latest`, whose timestamp lags the wall clock on an idle chain or a lagging node.
///
/// It closes by the local clock, as a facilitator checks it (`validBefore >= its now + 6`): one window after it
/// opens, and at least half a window after `now` when the chain lags — never more than the window after `now`, so
/// a server can never hold the authorization longer than it asked for. On a chain that keeps time the whole window
/// is no longer than `max_timeout`.
pub fn validity_window(now: u64, chain_time: u64, max_timeout: u64) -> (u64, u64) {
    let window = max_timeout.min(MAX_WINDOW_SECS);
    let skew = (window / 4).min(MAX_SKEW_SECS);
    let after = chain_time.min(now).saturating_sub(skew);
    let before = after.saturating_add(window).max(now.saturating_add(window.div_ceil(2)));
    (after, before)
}

fn host_of(url: &reqwest::Url) -> String {
    match (url.host_str(), url.port()) {
        (Some(h), Some(p)) => format!("{h}:{p}"),
        (Some(h), None) => h.to_owned(),
        _ => String::new(),
    }
}

/// The requirement as the policy sees it.
fn to_offer(ctx: &ToolContext, r: &Requirement) -> PaymentOffer {
    PaymentOffer {
        scheme: r.scheme.clone(),
        network: ctx.config.networks.resolve(&r.network).ok().map(|n| n.name.clone()),
        network_raw: r.network.clone(),
        asset: r.asset,
        amount: r.amount,
        pay_to: r.pay_to,
        resource_url: r.resource.clone(),
    }
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

/// A signed payment, journaled.
struct Journaled {
    entry: JournalEntry,
    requirement: Requirement,
    auth: SignedAuthorization,
    symbol: String,
    decimals: u8,
    header: (&'static str, String),
}

async fn choose_sign_journal(
    web3: &Web3,
    ctx: &ToolContext,
    req: &PresetRequest<'_>,
    offer: &PaymentRequired,
) -> Result<Journaled, ToolError> {
    let network = req.network;
    let wallet = web3.wallet().address();
    // Settle what can be settled first, so expired unsettled payments stop counting against the budget.
    refresh_payments(web3, Some(&network.name)).await;

    crate::kernel::require_durable(web3)?;
    // Today's payments for the policy's choice; the kernel's reservation below re-checks the budget atomically.
    let mut spent_today = HashMap::new();
    let from = wallet.to_checksum(None);
    if let Some(payments) = web3.policy().payments(&network.name) {
        for token in &payments.assets {
            let asset = token.address.to_checksum(None);
            let kinds = EntryKind::Payment.cap_group();
            let spent = web3.journal().spent_today(network.chain_id, &from, &asset, kinds).await?;
            spent_today.insert(token.address, spent);
        }
    }
    // Checked when the preset file was loaded; a bad entry here still fails closed (never "any payee").
    let payees: Vec<Address> = req
        .preset
        .payees
        .iter()
        .map(|p| holdfast_core::address::parse_address("payees", p))
        .collect::<Result<_, _>>()
        .map_err(|e| {
            ToolError::new(ErrorCode::PaymentRefused, format!("preset `{}`: {}", req.preset_name, e.message))
        })?;
    let preset_host = req.preset.host().unwrap_or_default();
    let request_host = host_of(req.url);
    let offers: Vec<Result<PaymentOffer, String>> =
        offer.accepts.iter().map(|r| r.as_ref().map(|r| to_offer(ctx, r)).map_err(Clone::clone)).collect();
    let policy_req = PaymentRequest {
        network: &network.name,
        preset: req.preset_name,
        preset_host: &preset_host,
        request_host: &request_host,
        payees: &payees,
        spent_today: &spent_today,
    };
    let approved = web3.policy().choose_payment(&policy_req, &offers)?;
    let requirement = offer
        .accepts
        .get(approved.index)
        .and_then(|r| r.as_ref().ok())
        .cloned()
        .ok_or_else(|| ToolError::internal("the chosen requirement vanished"))?;

    // Exactly the chosen requirement's amount, asset, payee and network.
    let chain_time = web3.chain(network)?.latest_block_timestamp().await?;
    let (valid_after, valid_before) = validity_window(now_secs(), chain_time, requirement.max_timeout_seconds);
    let nonce = B256::random();
    let typed = TransferWithAuthorization {
        from: wallet,
        to: requirement.pay_to,
        value: requirement.amount,
        validAfter: U256::from(valid_after),
        validBefore: U256::from(valid_before),
        nonce,
    };
    let domain = Eip712Domain::new(
        Some(requirement.domain_name.clone().into()),
        Some(requirement.domain_version.clone().into()),
        Some(U256::from(network.chain_id)),
        Some(requirement.asset),
        None,
    );
    let token = &approved.token;
    let summary = json!({
        "action": "payment",
        "preset": req.preset_name,
        "url": req.url.as_str(),
        "x402_version": offer.version.number(),
        "scheme": requirement.scheme,
        "network": requirement.network,
        "amount": human(requirement.amount, token.decimals, &token.symbol),
        "payee": requirement.pay_to.to_checksum(None),
        "resource": requirement.resource,
        "authorization": {
            "nonce": nonce.to_string(),
            "valid_after": valid_after,
            "valid_before": valid_before,
        },
    });
    let entry = NewEntry {
        session_id: ctx.session_id.to_string(),
        kind: EntryKind::Payment,
        network: network.name.clone(),
        chain_id: network.chain_id,
        from: wallet.to_checksum(None),
        to: requirement.pay_to.to_checksum(None),
        nonce: None,
        value: "0".into(),
        asset: token.address.to_checksum(None),
        asset_symbol: token.symbol.clone(),
        amount: requirement.amount.to_string(),
        fingerprint: fingerprint(&[
            "x402",
            &network.name,
            &token.address.to_string(),
            &wallet.to_string(),
            &nonce.to_string(),
        ]),
        intent: None,
        raw_tx: None,
        tx_hash: None,
        error: None,
        summary,
    };
    // The budget is reserved (atomically, against every session's payments) before anything is signed.
    let entry = crate::kernel::payment::reserve(web3, ctx, req.preset_name, entry, &approved).await?;
    let signature = match web3.wallet().sign_transfer_authorization(&typed, &domain) {
        Ok(s) => s,
        Err(e) => {
            let update = EntryUpdate { error: Some("signing failed; nothing was sent".into()), ..Default::default() };
            web3.journal().update(&entry.id, EntryStatus::Failed, update).await?;
            return Err(e);
        }
    };
    let auth = SignedAuthorization {
        from: wallet,
        to: requirement.pay_to,
        value: requirement.amount,
        valid_after,
        valid_before,
        nonce,
        signature: Bytes::from(signature.as_bytes().to_vec()),
    };
    let header = wire::payment_header(offer, &requirement, &auth);
    // Durable before the header leaves the process (invariant 9).
    web3.journal().update(&entry.id, EntryStatus::Signed, EntryUpdate::default()).await?;
    Ok(Journaled { entry, requirement, auth, symbol: token.symbol.clone(), decimals: token.decimals, header })
}

async fn pay_and_fetch(
    web3: &Web3,
    ctx: &ToolContext,
    req: &PresetRequest<'_>,
    offer: PaymentRequired,
    cap: usize,
) -> Result<Fetched, ToolError> {
    let paid = choose_sign_journal(web3, ctx, req, &offer).await?;
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

    let retry = send(web3, req, Some((paid.header.0, paid.header.1.as_str()))).await;
    let response = match retry {
        Ok(r) => r,
        Err(e) => {
            let state = settle_state(web3, req.network, &paid, None).await;
            let state =
                record(web3, &paid, state, Some(format!("sending the paid request failed: {}", e.message))).await?;
            publish(ctx, req, &paid, &state);
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
    let state = settle_state(web3, req.network, &paid, claimed).await;

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
        let state = record(web3, &paid, state, Some(why.clone())).await?;
        publish(ctx, req, &paid, &state);
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
    let why = if !status.is_success() {
        Some(format!("the paid request answered HTTP {}", status.as_u16()))
    } else if state.status != EntryStatus::Confirmed {
        note
    } else {
        None
    };
    let state = record(web3, &paid, state, why).await?;
    publish(ctx, req, &paid, &state);
    let summary = PaymentSummary {
        amount: human(paid.requirement.amount, paid.decimals, &paid.symbol),
        payee: paid.requirement.pay_to.to_checksum(None),
        network: req.network.name.clone(),
        x402_version: offer.version.number(),
        status: state.status.as_str().to_owned(),
        transaction: state.tx_hash.clone(),
        journal_id: journal_id.clone(),
    };
    let body = body?;
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

/// Where a sent payment stands.
struct SettleState {
    status: EntryStatus,
    tx_hash: Option<String>,
    block_number: Option<u64>,
    note: Option<String>,
}

/// Asks the chain whether the payment's authorization was used: the chain decides, not the server's header.
async fn settle_state(web3: &Web3, network: &NetworkConfig, paid: &Journaled, claimed: Option<B256>) -> SettleState {
    let pending = |note: String| SettleState {
        status: EntryStatus::Pending,
        tx_hash: None,
        block_number: None,
        note: Some(note),
    };
    let chain = match web3.chain(network) {
        Ok(c) => c,
        Err(e) => return pending(format!("cannot check the settlement: {}", e.message)),
    };
    match chain.authorization_state(paid.requirement.asset, paid.auth.from, paid.auth.nonce).await {
        Ok(true) => {
            let mut state =
                SettleState { status: EntryStatus::Confirmed, tx_hash: None, block_number: None, note: None };
            if let Some(hash) = claimed {
                match chain.receipt(hash).await {
                    Ok(Some(r)) if r.status() => {
                        state.tx_hash = Some(hash.to_string());
                        state.block_number = r.block_number;
                    }
                    _ => {
                        state.note = Some(format!("the reported settlement transaction {hash} was not found on chain"))
                    }
                }
            }
            state
        }
        Ok(false) => pending(format!(
            "not settled on chain yet; counted against the daily budget until it settles or expires at {}",
            paid.auth.valid_before
        )),
        Err(e) => pending(format!("cannot check the settlement: {}", e.message)),
    }
}

async fn record(
    web3: &Web3,
    paid: &Journaled,
    state: SettleState,
    why: Option<String>,
) -> Result<SettleState, ToolError> {
    let error = match (why, &state.note) {
        (Some(w), Some(n)) => Some(format!("{w}; {n}")),
        (Some(w), None) => Some(w),
        (None, Some(n)) if state.status != EntryStatus::Confirmed => Some(n.clone()),
        (None, _) => None,
    };
    let update =
        EntryUpdate { tx_hash: state.tx_hash.clone(), block_number: state.block_number, error, ..Default::default() };
    web3.journal().update(&paid.entry.id, state.status, update).await?;
    Ok(state)
}

fn publish(ctx: &ToolContext, req: &PresetRequest<'_>, paid: &Journaled, state: &SettleState) {
    ctx.events.publish(EventPayload::PaymentMade(PaymentMade {
        journal_id: paid.entry.id.clone(),
        preset: req.preset_name.to_owned(),
        network: req.network.name.clone(),
        amount: human(paid.requirement.amount, paid.decimals, &paid.symbol),
        asset: paid.symbol.clone(),
        payee: paid.requirement.pay_to.to_checksum(None),
        status: state.status.as_str().to_owned(),
        transaction: state.tx_hash.clone(),
    }));
}

/// The authorization fields a payment entry's summary records.
fn authorization_of(entry: &JournalEntry) -> Option<(B256, u64)> {
    let auth = entry.summary.get("authorization")?;
    let nonce = auth.get("nonce")?.as_str()?.parse().ok()?;
    let valid_before = auth.get("valid_before")?.as_u64()?;
    Some((nonce, valid_before))
}

/// Settles one unresolved payment entry against the chain: authorization used → `confirmed`; unused and expired →
/// `failed` (it can never settle now); otherwise unchanged. Returns the new status when it changed.
pub(crate) async fn reconcile_payment(web3: &Web3, entry: &JournalEntry) -> Result<Option<EntryStatus>, ToolError> {
    let Some((nonce, valid_before)) = authorization_of(entry) else {
        let update =
            EntryUpdate { error: Some("the journal entry lacks its authorization".into()), ..Default::default() };
        web3.journal().update(&entry.id, EntryStatus::Failed, update).await?;
        return Ok(Some(EntryStatus::Failed));
    };
    let network = web3.core().networks.resolve(&entry.network)?.clone();
    let chain = web3.chain(&network)?;
    let asset = holdfast_core::address::parse_address("asset", &entry.asset)?;
    let from = holdfast_core::address::parse_address("from", &entry.from)?;
    if chain.authorization_state(asset, from, nonce).await? {
        let moved = web3
            .journal()
            .transition(&entry.id, &[entry.status], EntryStatus::Confirmed, EntryUpdate::default())
            .await?;
        return Ok(moved.then_some(EntryStatus::Confirmed));
    }
    // Expired only when no block can carry it any more: the token checks `block.timestamp < validBefore`, so the
    // chain's clock decides — a chain lagging behind ours could still settle it (and it keeps counting until then).
    let chain_time = chain.latest_block_timestamp().await?;
    let now = now_secs();
    let chain_keeps_time = now.saturating_sub(chain_time) <= CHAIN_LAG_TOLERANCE_SECS;
    if chain_time >= valid_before || (now > valid_before && chain_keeps_time) {
        let update = EntryUpdate {
            error: Some(format!("the authorization expired at {valid_before} without being settled")),
            ..Default::default()
        };
        let from = [entry.status];
        return Ok(web3
            .journal()
            .transition(&entry.id, &from, EntryStatus::Failed, update)
            .await?
            .then_some(EntryStatus::Failed));
    }
    Ok(None)
}

/// Reconciles unresolved payments whose window has closed (on `network`, or everywhere), best effort.
async fn refresh_payments(web3: &Web3, network: Option<&str>) {
    let Ok(unresolved) = web3.journal().unresolved().await else { return };
    let now = now_secs();
    for entry in unresolved {
        let due = entry.kind == EntryKind::Payment
            && network.is_none_or(|n| n == entry.network)
            && authorization_of(&entry).is_none_or(|(_, before)| now > before);
        if due {
            let _ = reconcile_payment(web3, &entry).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAXES: [u64; 9] = [1, 5, 10, 60, 299, 300, 301, 86_400, u64::MAX];

    #[test]
    fn the_window_never_exceeds_the_servers_timeout() {
        let now = 1_700_000_000;
        // A chain that keeps time (or runs ahead of the local clock): the window opens by the local clock, as it did.
        for chain in [now, now + 1, now + 600] {
            for max in MAXES {
                let (after, before) = validity_window(now, chain, max);
                assert!(before - after <= max.min(MAX_WINDOW_SECS), "{chain} {max}");
                assert!(after <= now && now - after <= MAX_SKEW_SECS, "{chain} {max}");
                assert!(before > now, "{chain} {max}");
            }
        }
        assert_eq!(validity_window(1_000, 1_000, 60), (985, 1_045));
        assert_eq!(validity_window(1_000, 5_000, 60), (985, 1_045), "never opens after the local clock");
        assert_eq!(validity_window(1_000, 999, 60), (984, 1_044));
    }

    #[test]
    fn on_a_lagging_chain_the_window_opens_by_the_chains_clock() {
        let now = 1_700_000_000;
        for lag in [1u64, 15, 59, 600, 3_600, now - 1] {
            let chain = now - lag;
            for max in MAXES {
                let window = max.min(MAX_WINDOW_SECS);
                let (after, before) = validity_window(now, chain, max);
                // Open on the latest block (whenever there is room for a skew) and on every later one.
                assert!(after <= chain && chain - after <= MAX_SKEW_SECS, "{lag} {max}");
                if window >= 4 {
                    assert!(chain > after, "{lag} {max}: the latest block must see it valid");
                }
                // Closed by the local clock: never later than the window allows, and still open for a while.
                assert!(before <= now + window, "{lag} {max}");
                assert!(before >= now + window / 2, "{lag} {max}");
                // The reference facilitator wants validBefore >= its now + 6 (with a few seconds to spare here).
                if window >= 20 {
                    assert!(before >= now + 10, "{lag} {max}");
                }
            }
        }
        // Ten minutes behind, the reference server's 60 s: opens 15 s before the latest block, closes 30 s from now.
        assert_eq!(validity_window(10_000, 9_400, 60), (9_385, 10_030));
        // The cap and skew are the same as on a chain that keeps time.
        assert_eq!(validity_window(10_000, 9_400, 86_400), (9_370, 10_150));
        // A small lag keeps the whole window within max_timeout.
        assert_eq!(validity_window(10_000, 9_990, 60), (9_975, 10_035));
        // A chain at genesis time zero (or a node answering 0) cannot push the start below zero.
        assert_eq!(validity_window(10_000, 0, 60), (0, 10_030));
    }
}

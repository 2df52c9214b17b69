//! x402 payments inside the kernel: the rules a payment shares with every value-moving action, and the payment's
//! life in the journal. The x402 client ([`crate::x402`]) only speaks HTTP and the wire format; it calls
//! `authorize` for a 402 and `settle` with what the server answered.
//!
//! `authorize`, in order:
//! 1. **durability** ([`super::require_durable`]); earlier payments whose window closed are settled first, so expired
//!    unsettled ones stop counting;
//! 2. **a turn the user started**: a payment has no confirmation step, so in a turn another agent or a reminder
//!    started it is refused (`payment_refused`);
//! 3. **policy** ([`crate::policy::Policy::choose_payment`]): the cheapest offered requirement that passes every rule
//!    (scheme, network, host, asset allow-list, payee list, per-request cap, today's budget);
//! 4. **the budget reserved atomically** in the journal (concurrent payments from any number of sessions cannot
//!    overrun `daily_budget`);
//! 5. the EIP-3009 authorization signed with exactly that requirement's amount, asset, payee and network, a validity
//!    window that opens by the chain's clock ([`validity_window`]) and 32 random nonce bytes; **journaled `signed`
//!    before the header leaves** (invariant 9).
//!
//! `settle` asks the chain whether the authorization was used (`authorizationState`), never the server's word, and
//! records the outcome by compare-and-set (`signed`/`pending` → `confirmed` or `pending`): an entry the background
//! reconciliation settled meanwhile is never moved back. `reconcile_payment` settles an unresolved payment later:
//! used → `confirmed`; unused and expired by the chain's clock → `failed`.

use super::{fingerprint, human, require_durable};
use crate::Web3;
use crate::journal::{DayCap, EntryKind, EntryStatus, EntryUpdate, JournalEntry, NewEntry, Reserved, Undelivered};
use crate::policy::{ApprovedPayment, PaymentOffer, PaymentRequest};
use crate::presets::Preset;
use crate::wallet::TransferWithAuthorization;
use crate::x402::wire::{Requirement, SignedAuthorization};
use alloy::primitives::{Address, B256, Bytes, U256};
use alloy::sol_types::Eip712Domain;
use holdfast_core::amount::from_base_units;
use holdfast_core::config::NetworkConfig;
use holdfast_core::event::{EventPayload, PaymentMade};
use holdfast_core::{ErrorCode, ToolContext, ToolError};
use serde_json::json;
use std::collections::HashMap;
use std::time::{SystemTime, UNIX_EPOCH};

/// The longest validity window the client signs, whatever the server allows (seconds).
pub const MAX_WINDOW_SECS: u64 = 300;
/// How far before the chain's clock (the latest block's timestamp) the window opens, at most (seconds), so the
/// token's `block.timestamp > validAfter` holds on the block a facilitator simulates at.
const MAX_SKEW_SECS: u64 = 30;

pub(crate) fn now_secs() -> u64 {
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
///
/// ```
/// use holdfast_web3::kernel::payment::validity_window;
/// assert_eq!(validity_window(1_000, 1_000, 60), (985, 1_045));
/// ```
pub fn validity_window(now: u64, chain_time: u64, max_timeout: u64) -> (u64, u64) {
    let window = max_timeout.min(MAX_WINDOW_SECS);
    let skew = (window / 4).min(MAX_SKEW_SECS);
    let after = chain_time.min(now).saturating_sub(skew);
    let before = after.saturating_add(window).max(now.saturating_add(window.div_ceil(2)));
    (after, before)
}

/// A 402 as the x402 client read it: what a payment is asked for.
pub(crate) struct PaymentAsk<'a> {
    /// The preset run.
    pub preset_name: &'a str,
    /// Its definition.
    pub preset: &'a Preset,
    /// The request's network.
    pub network: &'a NetworkConfig,
    /// The URL asked (its host must be the preset's).
    pub url: &'a reqwest::Url,
    /// The x402 version spoken.
    pub version: u8,
    /// Each offered requirement, or why it could not be read.
    pub offers: &'a [Result<Requirement, String>],
}

/// A payment signed and journaled `signed`: ready for its header.
pub(crate) struct SignedPayment {
    /// The journal entry.
    pub entry: JournalEntry,
    /// The requirement paid.
    pub requirement: Requirement,
    /// The signed authorization.
    pub auth: SignedAuthorization,
    /// The asset's symbol.
    pub symbol: String,
    /// The asset's decimals.
    pub decimals: u8,
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

/// Steps 1–5: chooses, reserves, signs and journals the payment a 402 asks for.
pub(crate) async fn authorize(web3: &Web3, ctx: &ToolContext, ask: PaymentAsk<'_>) -> Result<SignedPayment, ToolError> {
    let network = ask.network;
    let wallet = web3.wallet().address();
    require_durable(web3)?;
    // Settle what can be settled first, so expired unsettled payments stop counting against the budget.
    refresh_payments(web3, network.chain_id).await;
    // Today's payments for the policy's choice; the reservation below re-checks the budget atomically.
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
    let payees: Vec<Address> = ask
        .preset
        .payees
        .iter()
        .map(|p| holdfast_core::address::parse_address("payees", p))
        .collect::<Result<_, _>>()
        .map_err(|e| {
            ToolError::new(ErrorCode::PaymentRefused, format!("preset `{}`: {}", ask.preset_name, e.message))
        })?;
    // With their schemes, so that an https preset's host is compared on port 443, as its resource's is.
    let preset_origin = ask.preset.origin().unwrap_or_default();
    let request_origin = ask.url.origin().ascii_serialization();
    let request_host = host_of(ask.url);
    let offers: Vec<Result<PaymentOffer, String>> =
        ask.offers.iter().map(|r| r.as_ref().map(|r| to_offer(ctx, r)).map_err(Clone::clone)).collect();
    let policy_req = PaymentRequest {
        network: &network.name,
        preset: ask.preset_name,
        preset_host: &preset_origin,
        request_host: &request_origin,
        payees: &payees,
        spent_today: &spent_today,
    };
    let approved = web3.policy().choose_payment(&policy_req, &offers)?;
    let requirement = ask
        .offers
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
        "preset": ask.preset_name,
        "url": ask.url.as_str(),
        "x402_version": ask.version,
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
        authorization: None,
    };
    // The budget is reserved (atomically, against every session's payments) before anything is signed.
    let entry = reserve(web3, ctx, (ask.preset_name, &request_host), entry, &approved).await?;
    if let Some(account) = web3.account() {
        // EIP-3009 needs the holder's own signature, which a Safe cannot give through its module: the kernel moves
        // exactly what the signer lacks from the account (within the on-chain limit, journaled `fund`) first.
        let mv = super::pipeline::Move {
            asset: token.address,
            symbol: token.symbol.clone(),
            decimals: token.decimals,
            native: false,
            amount: requirement.amount,
        };
        if let Err(e) = super::account::fund(web3, network, account, &mv, &entry.fingerprint).await {
            let update = EntryUpdate {
                error: Some(format!("funding from the account failed: {}", e.message)),
                ..Default::default()
            };
            web3.journal().transition(&entry.id, &[EntryStatus::Reserved], EntryStatus::Failed, update).await?;
            return Err(ToolError::new(
                ErrorCode::PaymentRefused,
                format!("preset `{}`: {}; nothing was signed", ask.preset_name, e.message),
            ));
        }
    }
    let signature = match web3.wallet().sign_transfer_authorization(&typed, &domain) {
        Ok(s) => s,
        Err(e) => {
            let update = EntryUpdate { error: Some("signing failed; nothing was sent".into()), ..Default::default() };
            web3.journal().transition(&entry.id, &[EntryStatus::Reserved], EntryStatus::Failed, update).await?;
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
    // Durable before the header leaves the process (invariant 9).
    let signed = web3
        .journal()
        .transition(&entry.id, &[EntryStatus::Reserved], EntryStatus::Signed, EntryUpdate::default())
        .await?;
    if !signed {
        return Err(ToolError::internal(format!(
            "journal {}: the payment's reservation moved on before signing",
            entry.id
        )));
    }
    Ok(SignedPayment { entry, requirement, auth, symbol: token.symbol.clone(), decimals: token.decimals })
}

/// How many payments to one payee, or to one server (a preset's host and port, whatever payee it names), may be
/// unanswered or have bought nothing (the server took the payment and answered
/// an error, a second 402, a body too large or not JSON, or a quote holdfast rejects) within
/// [`UNDELIVERED_WINDOW_SECS`] before the next one is refused: a server that settles and then fails would otherwise be
/// paid again at every retry of the model, up to the day's budget. Counted from the journal, in the reservation's
/// own transaction: across sessions, presets and instances, concurrent calls included. A payment counts from its
/// reservation until `x402_fetch` stores what it bought (`delivered`).
pub const MAX_UNDELIVERED: usize = 2;

/// The window [`MAX_UNDELIVERED`] counts in.
pub const UNDELIVERED_WINDOW_SECS: u64 = 3600;

/// Records that the payment `journal_id` delivered what it paid for (`x402_fetch` stored it). A journal that cannot
/// record it leaves the payment counted as undelivered for the window: fail closed, logged.
pub(crate) async fn delivered(web3: &Web3, journal_id: &str) {
    if let Err(e) = web3.journal().delivered(journal_id).await {
        tracing::warn!(journal_id, error = %e.message, "x402: the payment's delivery was not recorded");
    }
}

/// Reserves `approved`'s amount under the network's daily payment budget and returns the reserved entry.
/// Over the budget → `payment_refused`, nothing written or signed. In a turn the user did not start (another agent,
/// a reminder) → `payment_refused`: a payment has no confirmation step, so only the user's own turn may pay. After
/// [`MAX_UNDELIVERED`] payments to its payee or server that bought nothing → `payment_refused`.
async fn reserve(
    web3: &Web3,
    ctx: &ToolContext,
    (preset, server): (&str, &str),
    entry: NewEntry,
    approved: &ApprovedPayment,
) -> Result<JournalEntry, ToolError> {
    // The last point where a stop leaves nothing behind: past it the payment is reserved, signed and sent.
    ctx.check_cancelled("the payment was signed")?;
    if let Some(who) = holdfast_core::confirm::TurnStarter::not_user(ctx) {
        return Err(ToolError::new(
            ErrorCode::PaymentRefused,
            format!(
                "preset `{preset}`: this turn was started by {who}, not by the user; x402 payments run only in a turn \
                 the user started; nothing was signed"
            ),
        ));
    }
    let token = &approved.token;
    let limit =
        web3.policy().payments(&entry.network).and_then(|p| p.daily_budget.get(&token.symbol)).copied().ok_or_else(
            || {
                ToolError::new(
                    ErrorCode::PaymentRefused,
                    format!("no daily_budget is set for {} (deny by default)", token.symbol),
                )
            },
        )?;
    let cap = DayCap { limit, kinds: EntryKind::Payment.cap_group() };
    let window = chrono::Duration::seconds(i64::try_from(UNDELIVERED_WINDOW_SECS).unwrap_or(i64::MAX));
    let undelivered =
        Undelivered { max: MAX_UNDELIVERED, since: chrono::Utc::now() - window, server: server.to_owned() };
    let payee = entry.to.clone();
    match web3.journal().reserve_counting(entry, Some(cap), Some(undelivered)).await? {
        Reserved::New(e) => Ok(e),
        Reserved::Existing(e) => Err(ToolError::new(
            ErrorCode::DuplicateAction,
            format!("this payment was already journaled (journal {}); it is never paid twice", e.id),
        )),
        Reserved::AuthorizationSpent { by } => {
            Err(ToolError::internal(format!("journal {}: a payment relies on no user authorization", by.id)))
        }
        Reserved::Undelivered { ids } => Err(ToolError::new(
            ErrorCode::PaymentRefused,
            format!(
                "preset `{preset}`: the last {} payments to its payee {payee} or its server {server} are unanswered \
                 or bought nothing (the server took them and failed; journal {}); it is paid again an hour after the \
                 earliest of them; nothing was signed",
                ids.len(),
                ids.join(", ")
            ),
        )),
        Reserved::OverCap { spent } => {
            let human = |v| format!("{} {}", from_base_units(v, token.decimals), token.symbol);
            Err(ToolError::new(
                ErrorCode::PaymentRefused,
                format!(
                    "preset `{preset}`: {} would bring today's payments to {}, above the daily budget of {}; nothing was signed",
                    human(approved.amount),
                    human(spent.saturating_add(approved.amount)),
                    human(limit)
                ),
            ))
        }
    }
}

/// Where a sent payment stands.
#[derive(Debug, Clone)]
pub(crate) struct SettleState {
    /// `confirmed` (the chain shows the authorization used) or `pending`.
    pub status: EntryStatus,
    /// The settlement transaction, when the server named one the chain shows mined.
    pub tx_hash: Option<String>,
    /// Its block.
    pub block_number: Option<u64>,
    /// What else the chain showed.
    pub note: Option<String>,
}

/// Asks the chain whether the payment's authorization was used — the chain decides, not the server's header — and
/// records the outcome (with `why`, what went wrong on the wire) by compare-and-set from `signed` or `pending`;
/// publishes `payment.made`. `claimed` is the settlement transaction the server reported.
///
/// Never an error: the payment has gone out, so what the chain showed is the answer. A journal that cannot record it
/// (a lost connection, a COMMIT whose answer never came) leaves the entry `signed` or `pending`, still counted
/// against the budget, for reconciliation to settle; the caller is not told "failed" for a payment that was made.
pub(crate) async fn settle(
    web3: &Web3,
    ctx: &ToolContext,
    preset: &str,
    network: &NetworkConfig,
    paid: &SignedPayment,
    claimed: Option<B256>,
    why: Option<String>,
) -> SettleState {
    let state = settle_state(web3, network, paid, claimed).await;
    let error = match (why, &state.note) {
        (Some(w), Some(n)) => Some(format!("{w}; {n}")),
        (Some(w), None) => Some(w),
        (None, Some(n)) if state.status != EntryStatus::Confirmed => Some(n.clone()),
        (None, _) => None,
    };
    let update =
        EntryUpdate { tx_hash: state.tx_hash.clone(), block_number: state.block_number, error, ..Default::default() };
    let from = [EntryStatus::Signed, EntryStatus::Pending];
    let recorded = web3.journal().transition(&paid.entry.id, &from, state.status, update).await;
    let now = match recorded {
        // Not from `signed` or `pending` any more: a reconciliation settled it first, and what it recorded stands.
        Ok(false) => web3.journal().get(&paid.entry.id).await.ok().flatten(),
        Ok(true) => None,
        Err(e) => {
            tracing::warn!(journal_id = %paid.entry.id, error = %e.message, "journal: could not record a payment's outcome; reconciliation will");
            None
        }
    };
    let state = match now {
        Some(e) if e.status != state.status => SettleState {
            status: e.status,
            tx_hash: e.tx_hash.clone().or(state.tx_hash),
            block_number: e.block_number.or(state.block_number),
            note: state.note,
        },
        _ => state,
    };
    ctx.events.publish(EventPayload::PaymentMade(PaymentMade {
        journal_id: paid.entry.id.clone(),
        preset: preset.to_owned(),
        network: network.name.clone(),
        amount: human(paid.requirement.amount, paid.decimals, &paid.symbol),
        asset: paid.symbol.clone(),
        payee: paid.requirement.pay_to.to_checksum(None),
        status: state.status.as_str().to_owned(),
        transaction: state.tx_hash.clone(),
    }));
    state
}

async fn settle_state(
    web3: &Web3,
    network: &NetworkConfig,
    paid: &SignedPayment,
    claimed: Option<B256>,
) -> SettleState {
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

/// The authorization fields a payment entry's summary records: its nonce and `validBefore`.
pub(crate) fn authorization_of(entry: &JournalEntry) -> Option<(B256, u64)> {
    let auth = entry.summary.get("authorization")?;
    let nonce = auth.get("nonce")?.as_str()?.parse().ok()?;
    let valid_before = auth.get("valid_before")?.as_u64()?;
    Some((nonce, valid_before))
}

/// Settles one unresolved payment entry against the chain: authorization used → `confirmed`; unused and expired by
/// the chain's clock and by ours → `failed` (it can never settle now); otherwise unchanged. Returns the new status when it changed.
pub(crate) async fn reconcile_payment(web3: &Web3, entry: &JournalEntry) -> Result<Option<EntryStatus>, ToolError> {
    let from = [entry.status];
    let Some((nonce, valid_before)) = authorization_of(entry) else {
        let update =
            EntryUpdate { error: Some("the journal entry lacks its authorization".into()), ..Default::default() };
        let moved = web3.journal().transition(&entry.id, &from, EntryStatus::Failed, update).await?;
        return Ok(moved.then_some(EntryStatus::Failed));
    };
    let network = super::reconcile::network_of(web3, entry)?;
    let chain = web3.chain(&network)?;
    let asset = holdfast_core::address::parse_address("asset", &entry.asset)?;
    let payer = holdfast_core::address::parse_address("from", &entry.from)?;
    // The chain's clock first, then the authorization's state: a block that settles it (stamped before
    // `validBefore`) can land between two readings, and then only this order shows it — read the other way round,
    // the state from before it and a clock from after it would call a settled payment expired and release its
    // budget. Blocks after this clock are stamped no earlier, so past the window none of them can settle it.
    // A node that cannot tell its clock keeps the payment from expiring, not from being counted as paid.
    let chain_time = chain.latest_block_timestamp_everywhere().await;
    // Every node is asked: one that shows it used is enough to count it (the safe side); releasing the budget needs
    // every node to show it unused, so one lying node cannot release it while the payment settles elsewhere.
    let used = chain.authorization_state_everywhere(asset, payer, nonce).await?;
    if used {
        // Also from `failed`: a payment called expired by a lagging node's clock was settled after all, and counts.
        let moved = web3.journal().transition(&entry.id, &from, EntryStatus::Confirmed, EntryUpdate::default()).await?;
        return Ok(moved.then_some(EntryStatus::Confirmed));
    }
    if entry.status == EntryStatus::Failed {
        return Ok(None);
    }
    // Expired only when no block can carry it any more: the token checks `block.timestamp < validBefore`, so the
    // chain's clock decides, never ours — a chain lagging behind ours (a sequencer catching up after a stall stamps
    // its blocks by its own schedule) could still settle it, and it keeps counting until then; an idle chain, until
    // its next block. By the clock of the node furthest behind: one node that shows a block from the future cannot
    // expire it early. And by ours too: a single node (the default) that shows a block from the future would
    // otherwise release the budget of each payment a few seconds after it was signed, while the payee settles it on
    // the real chain within its window — a budget refilled with every payment.
    if chain_time? >= valid_before && now_secs() >= valid_before {
        let update = EntryUpdate {
            error: Some(format!("the authorization expired at {valid_before} without being settled")),
            ..Default::default()
        };
        return Ok(web3
            .journal()
            .transition(&entry.id, &from, EntryStatus::Failed, update)
            .await?
            .then_some(EntryStatus::Failed));
    }
    Ok(None)
}

/// Reconciles unresolved payments on the chain `chain_id` whose window has closed, best effort.
async fn refresh_payments(web3: &Web3, chain_id: u64) {
    let Ok(unresolved) = web3.journal().unresolved().await else { return };
    let now = now_secs();
    for entry in unresolved {
        let due = entry.kind == EntryKind::Payment
            && entry.chain_id == chain_id
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

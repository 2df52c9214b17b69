//! The one pipeline every transaction of the wallet goes through, whatever its kind. A kind ([`TxKind`]: a swap, an
//! approval, a transfer, an allowance reset) supplies its inputs, its plan and the check of its simulated effects;
//! the rules they share run here once, in this order:
//!
//! 1. **durability** — a persistent key needs a persistent journal ([`super::require_durable`]);
//! 2. **idempotency** — an earlier entry for the same intent is returned, settled, instead of anything new;
//! 3. **freshness** — the registers the kind names must still be within their maximum age;
//! 4. the kind's **plan**: its validated inputs, the transaction (target, calldata, value) and what it moves;
//! 5. **taint** — any input typed by the model makes the action wait for the user;
//! 6. **policy** — per-transaction cap, today's total so far, auto or confirm; **fee caps** on the chain's fees;
//! 7. under the wallet's send lock (held to the broadcast): earlier sends whose outcome is unknown are reconciled
//!    (one that stays unknown stops everything: `outcome_unknown`), as is a send recorded as never sent whose nonce
//!    the chain has since used (one found mined after all stops the action too), the **nonce** comes from the chain
//!    (the lowest count the answering nodes show, read once; above the journal's only when every node answered) and
//!    the journal, and the transaction is built — the exact one that will be signed;
//! 8. the **exact simulation** of that transaction ([`crate::chain::simulate`]) and the kind's **check** of its effects
//!    (a refusal is journaled `refused` with the reason);
//! 9. **freshness** again, under the lock (what came since step 3 took time); **authorization** — a turn the user did
//!    not start, or an amount whose authorization another action spent,
//!    makes the action wait for the user; **confirmation** — the user is asked when anything above says so;
//! 10. the authorization is spent for this intent, and the **day's cap reserved** atomically in the journal;
//! 11. **journal before broadcast** — the signed bytes are written durably, then sent;
//! 12. the **broadcast's answer** decides nothing by itself: accepted → `pending`; any error → the chain is asked
//!     where the nonce stands ([`crate::chain::Chain::nonce_use`]): unused on every node → `stalled` (still counted,
//!     its authorization kept, until it is mined or its nonce is used by another transaction), mined by another
//!     transaction on every node → `failed` (released), mined by this hash → `pending`, anything else → `unknown`,
//!     reconciled later and still counted against the caps;
//! 13. `tx.pending` is published, the receipt awaited (bounded), recorded, and `tx.confirmed` published.

use super::covered::{fee_covered, gas_covered};
use super::inputs::{Spent, UserAmount, authorization_reason, give_back, model_typed, spend_authorization};
use super::reconcile::{self, Settled};
use super::require_durable;
use super::sends::{mined_after_all, settle_earlier_sends};
use crate::Web3;
use crate::chain::{Chain, FeeQuote, Read, Simulated, TxPlan};
use crate::journal::{AuthorizationUse, DayCap, EntryKind, EntryStatus, EntryUpdate, JournalEntry, NewEntry, Reserved};
use crate::policy::{AssetMove, Decision};
use alloy::primitives::{Address, U256};
use holdfast_core::config::NetworkConfig;
use holdfast_core::event::{EventPayload, TxConfirmed, TxPending};
use holdfast_core::registers::SharedEntry;
use holdfast_core::{ErrorCode, ToolContext, ToolError};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;
use std::future::Future;

/// How a sent transaction ended (or that it has not yet).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TxOutcome {
    /// Mined, status 1.
    Confirmed,
    /// Mined, status 0.
    Reverted,
    /// Accepted by the node; no receipt within the wait.
    Pending,
    /// The broadcast's outcome is not known yet; the journal reconciles it by hash and never signs it anew.
    Unknown,
}

impl TxOutcome {
    /// The wire form (as serialized).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Confirmed => "confirmed",
            Self::Reverted => "reverted",
            Self::Pending => "pending",
            Self::Unknown => "unknown",
        }
    }
}

/// What was sent (or found already sent for the same intent).
#[derive(Debug, Clone)]
pub struct Sent {
    /// Transaction hash.
    pub hash: String,
    /// Where it stands.
    pub outcome: TxOutcome,
    /// Block number, once mined.
    pub block_number: Option<u64>,
    /// Gas used, once mined.
    pub gas_used: Option<String>,
    /// The journal entry.
    pub journal_id: String,
}

impl Sent {
    /// The outcome an entry records, or `None` when it has no transaction.
    pub(crate) fn from_entry(e: &JournalEntry) -> Option<Self> {
        let outcome = match e.status {
            EntryStatus::Confirmed => TxOutcome::Confirmed,
            EntryStatus::Reverted => TxOutcome::Reverted,
            EntryStatus::Pending => TxOutcome::Pending,
            EntryStatus::Signed | EntryStatus::Unknown => TxOutcome::Unknown,
            _ => return None,
        };
        Some(Self {
            hash: e.tx_hash.clone()?,
            outcome,
            block_number: e.block_number,
            gas_used: e.gas_used.clone(),
            journal_id: e.id.clone(),
        })
    }

    /// True once the chain settled it (mined, either way).
    pub fn settled(&self) -> bool {
        matches!(self.outcome, TxOutcome::Confirmed | TxOutcome::Reverted)
    }
}

/// What a kind reads before anything else, without any RPC.
pub(crate) struct Inputs {
    /// The network.
    pub network: NetworkConfig,
    /// The intent: its idempotency key.
    pub intent: String,
    /// Every register the action is built from (the taint rule reads their origins).
    pub registers: Vec<(String, SharedEntry)>,
    /// Registers that must still be within their maximum age.
    pub fresh: Vec<String>,
    /// The amount the user's authorization must cover, if the action moves one.
    pub amount: Option<UserAmount>,
    /// Whether the action spends that authorization (a swap, a transfer) or only needs no other action to have spent
    /// it (the approval a swap needs).
    pub spends: bool,
    /// The intent the authorization belongs to (for an approval: its swap's).
    pub authorization_intent: String,
}

/// What the policy checks an action against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Limits {
    /// Moves the asset out: per-transaction cap, the day's cap (reserved), auto-approve limit.
    Spend,
    /// An allowance for the pinned spender: per-transaction cap and auto-approve limit; no day's cap.
    Approval,
    /// Sets an allowance to zero: moves nothing, always allowed, never asks.
    Reset,
}

/// The asset an action moves (or approves).
#[derive(Debug, Clone)]
pub(crate) struct Move {
    /// Token address (the native placeholder for the native token).
    pub asset: Address,
    /// Symbol.
    pub symbol: String,
    /// Decimals (from the token table).
    pub decimals: u8,
    /// True for the native token.
    pub native: bool,
    /// Base units.
    pub amount: U256,
}

/// Why the user must approve `mv` (an action of `kind`) for who started the turn and for what the user's words said:
/// a turn the user did not start (another agent, a reminder) moves nothing without the user's confirmation, and one
/// amount from the user's words moves value once, the way its message asked — shown beside any other reason, so that
/// the user approving an action above a limit also reads that its amount was only quoted, hedged or from an earlier
/// message.
fn the_users_reasons(ctx: &ToolContext, inputs: &Inputs, mv: &Move, kind: EntryKind) -> Vec<String> {
    let mut reasons = Vec::new();
    if let Some(who) = holdfast_core::confirm::TurnStarter::not_user(ctx) {
        reasons.push(format!("this turn was started by {who}, not by you"));
    }
    if let Some(amount) = &inputs.amount
        && let Some(reason) =
            authorization_reason(ctx, amount, (mv, kind), &inputs.authorization_intent, &inputs.network.name)
    {
        reasons.push(reason);
    }
    reasons
}

/// A summary the user sees; the pipeline fills in the fees.
pub(crate) trait Summary: Serialize + Clone + Send + Sync {
    /// Records the gas limit and the most the network fee can be.
    fn set_fees(&mut self, gas_limit: u64, max_network_fee: String);
}

impl Summary for Value {
    fn set_fees(&mut self, gas_limit: u64, max_network_fee: String) {
        if let Some(map) = self.as_object_mut() {
            map.insert("gas_limit".into(), Value::String(gas_limit.to_string()));
            map.insert("max_network_fee".into(), Value::String(max_network_fee));
        }
    }
}

/// A planned transaction: everything but gas, fees and nonce, which the chain decides.
pub(crate) struct Plan<S> {
    /// Target, calldata, value.
    pub tx: TxPlan,
    /// What it moves.
    pub mv: Move,
    /// What the policy checks.
    pub limits: Limits,
    /// What the simulation reads before and after it, for the kind's check.
    pub reads: Vec<Read>,
    /// The decoded action.
    pub summary: S,
    /// Fingerprint of the exact action (what an approval is bound to).
    pub fingerprint: String,
    /// Recipient or contract, for the journal.
    pub to: Address,
    /// The kind's own reasons to ask the user (an amount not converted for its token, a recipient typed by the model).
    pub confirm: Vec<String>,
    /// It moves the smart account's funds through its module (`[wallet] account`): before signing, the move is
    /// checked against what remains of the on-chain limit ([`super::account`]).
    pub onchain: bool,
    /// It is sent by the signer with funds the kernel first moves from the smart account through its module (a swap
    /// from an account): `mv` is funded ([`super::account::fund`], within the on-chain limit) before the estimate.
    pub funded: bool,
}

/// A kind's plan: a transaction, or nothing to send.
pub(crate) enum Planned<S> {
    /// A transaction.
    Tx(Box<Plan<S>>),
    /// Nothing needs sending (an allowance already exactly right).
    Nothing(S),
}

/// The kind's judgment of the simulated effects.
pub(crate) enum Verdict {
    /// As planned.
    Pass,
    /// As planned, but the user decides (the reason is shown to them).
    Confirm(String),
    /// Refused: journaled as `refused` with the reason.
    Refuse(ToolError),
}

/// One kind of transaction.
pub(crate) trait TxKind: Sync {
    /// The decoded action.
    type Summary: Summary;
    /// What the journal records.
    const KIND: EntryKind;
    /// The tool asking (for confirmations).
    fn tool(&self) -> &str;
    /// The tool call's params (to re-run it after approval).
    fn params(&self) -> Value;
    /// The registers, intent and authorization of the action; no RPC.
    fn inputs(&self, web3: &Web3, ctx: &ToolContext) -> Result<Inputs, ToolError>;
    /// The plan, after the idempotency check.
    fn plan(
        &self,
        web3: &Web3,
        ctx: &ToolContext,
        inputs: &Inputs,
        chain: &Chain,
    ) -> impl Future<Output = Result<Planned<Self::Summary>, ToolError>> + Send;
    /// Judges the exact simulation's effects (and may complete the summary with them).
    fn check(
        &self,
        web3: &Web3,
        chain: &Chain,
        plan: &mut Plan<Self::Summary>,
        sim: &Simulated,
    ) -> impl Future<Output = Result<Verdict, ToolError>> + Send;
}

/// What the pipeline did.
pub(crate) struct Outcome<S> {
    /// The transaction (none when nothing needed sending).
    pub sent: Option<Sent>,
    /// The decoded action (absent when an earlier call already sent this intent).
    pub summary: Option<S>,
    /// The intent.
    pub intent: String,
}

/// The earlier entry of an intent, settled as far as the chain tells now, as this call's answer.
pub(crate) async fn already_sent(web3: &Web3, entry: JournalEntry) -> Result<Sent, ToolError> {
    if entry.status == EntryStatus::Reserved {
        return Err(ToolError::new(
            ErrorCode::DuplicateAction,
            format!("this action is being sent right now (journal {}); it is never sent twice", entry.id),
        ));
    }
    let entry = match reconcile::entry(web3, &entry).await {
        Ok(Some(Settled { entry, .. })) => entry,
        _ => entry,
    };
    if entry.status == EntryStatus::Stalled {
        return Err(super::broadcast::stalled(&entry.id, entry.tx_hash.as_deref().unwrap_or_default()));
    }
    Sent::from_entry(&entry).ok_or_else(|| {
        ToolError::new(
            ErrorCode::DuplicateAction,
            format!("this action was already journaled (journal {}, {})", entry.id, entry.status.as_str()),
        )
    })
}

/// Journals an action refused after its inputs were validated (a check of its simulated effects, its calldata, the
/// independent price): `refused`, with the reason and the summary, reserving nothing. Returns the error.
pub(crate) async fn refuse(
    web3: &Web3,
    session: &str,
    kind: EntryKind,
    network: &NetworkConfig,
    refused: (&TxPlan, &Move),
    summary: Value,
    error: ToolError,
) -> ToolError {
    let (tx, mv) = refused;
    let entry = NewEntry {
        session_id: session.to_owned(),
        kind,
        network: network.name.clone(),
        chain_id: network.chain_id,
        from: web3.wallet().address().to_checksum(None),
        to: tx.to.to_checksum(None),
        nonce: None,
        value: tx.value.to_string(),
        asset: mv.asset.to_checksum(None),
        asset_symbol: mv.symbol.clone(),
        amount: mv.amount.to_string(),
        fingerprint: String::new(),
        intent: None,
        raw_tx: None,
        tx_hash: None,
        error: Some(format!("{}: {}", error.code, error.message)),
        summary,
        authorization: None,
    };
    let mut details = error.details.clone().unwrap_or_else(|| serde_json::json!({}));
    match web3.journal().insert(entry, EntryStatus::Refused).await {
        Ok(e) => {
            if let Some(map) = details.as_object_mut() {
                map.insert("refused".into(), Value::Bool(true));
                map.insert("journal_id".into(), Value::String(e.id));
            }
        }
        Err(e) => tracing::warn!(error = %e.message, "journal: could not record a refused action"),
    }
    error.with_details(details)
}

/// True for an error [`refuse`] returned: the action was refused after its inputs were validated, and journaled.
pub(crate) fn was_refused(error: &ToolError) -> bool {
    error.details.as_ref().and_then(|d| d.get("refused")).and_then(Value::as_bool) == Some(true)
}

fn to_json<S: Serialize>(s: &S) -> Value {
    serde_json::to_value(s).unwrap_or(Value::Null)
}

/// Runs `kind` through every rule, on behalf of the session `ctx`.
pub(crate) async fn run<K: TxKind>(web3: &Web3, ctx: &ToolContext, kind: &K) -> Result<Outcome<K::Summary>, ToolError> {
    require_durable(web3)?;
    let inputs = kind.inputs(web3, ctx)?;
    if let Some(earlier) = web3.journal().live_by_intent(&inputs.intent).await? {
        let sent = already_sent(web3, earlier).await?;
        return Ok(Outcome { sent: Some(sent), summary: None, intent: inputs.intent });
    }
    for key in &inputs.fresh {
        ctx.registers.require_fresh(key)?;
    }
    let chain = web3.chain(&inputs.network)?;
    let planned = kind.plan(web3, ctx, &inputs, &chain).await?;
    // The plan read the registers again: they must be the very entries the intent and the taint rule were judged on.
    unchanged(ctx, &inputs)?;
    let mut plan = match planned {
        Planned::Nothing(summary) => return Ok(Outcome { sent: None, summary: Some(summary), intent: inputs.intent }),
        Planned::Tx(plan) => *plan,
    };
    let wallet = web3.wallet().address();
    let network = &inputs.network;
    let typed = model_typed(&inputs.registers);
    let m = |spent_today: U256| AssetMove {
        network: &network.name,
        symbol: &plan.mv.symbol,
        decimals: plan.mv.decimals,
        native: plan.mv.native,
        amount: plan.mv.amount,
        spent_today,
        model_typed: typed.as_deref(),
    };
    let (decision, cap) = match plan.limits {
        Limits::Spend => {
            let asset = plan.mv.asset.to_checksum(None);
            let spent = web3
                .journal()
                .spent_today(network.chain_id, &wallet.to_checksum(None), &asset, K::KIND.cap_group())
                .await?;
            let m = m(spent);
            (web3.policy().check(&m)?, Some(web3.policy().day_cap(&m, K::KIND)?))
        }
        Limits::Approval => (web3.policy().check_approval(&m(U256::ZERO))?, None),
        Limits::Reset => (Decision::Auto, None),
    };
    if plan.onchain || plan.funded {
        // Before the fee estimate (which would only say "reverted") and before the user is asked about an action
        // the chain would refuse; checked again under the lock in `commit` (and by the fund).
        within_onchain_limit(web3, &chain, &plan).await?;
    }
    let mut reasons: Vec<String> = Vec::new();
    if let Decision::Confirm(reason) = decision {
        reasons.push(reason);
    }
    reasons.append(&mut plan.confirm);
    let mut upfront = false;
    let mut funded = None;
    if plan.funded
        && let Some(account) = web3.account()
    {
        // The account's funds move only for an action the user's policy and the user allow: every reason to ask
        // the user that is known before the simulation is asked now, before the fund (the simulation's own reasons,
        // if any, are asked after it in `commit`).
        reasons.extend(the_users_reasons(ctx, &inputs, &plan.mv, K::KIND));
        if !reasons.is_empty() {
            // An approval of the simulation's own question ([`simulated_fingerprint`]) is asked only once this one
            // was approved: it answers this one too.
            if !ctx.has_approval(kind.tool(), &simulated_fingerprint(&plan.fingerprint)) {
                let summary = to_json(&plan.summary);
                let reason = reasons.join("; ");
                ctx.require_confirmation(kind.tool(), &kind.params(), &plan.fingerprint, summary, &reason, |_| true)?;
            }
            reasons.clear();
            upfront = true;
        }
        // Holdfast's own caps passed above; the fund is checked against the on-chain limit and journaled itself.
        funded = Some(super::account::fund(web3, network, account, &plan.mv, &plan.fingerprint).await?);
    }
    let fees = chain.fees(wallet, &plan.tx).await?;
    web3.policy().check_fees(&network.name, &fees)?;
    // Known only now, after a fund's question: then asked with the simulation's own reasons.
    reasons.extend(web3.policy().gas_reason(&network.name, &fees, &network.native_symbol));
    plan.summary.set_fees(fees.gas_limit, super::human(fees.max_cost(), 18, &network.native_symbol));
    let asked = Asked { reasons, upfront, funded };
    let committed = commit(web3, Some((ctx, &inputs)), kind, &chain, network, plan, fees, cap, asked).await?;
    Ok(Outcome { sent: Some(committed.0), summary: Some(committed.1), intent: inputs.intent })
}

/// Fails (`policy_denied`, naming the on-chain limit) when the plan moves more out of the smart account than what
/// remains of the limit its module enforces.
async fn within_onchain_limit<S>(web3: &Web3, chain: &Chain, plan: &Plan<S>) -> Result<(), ToolError> {
    let account = web3.account().ok_or_else(|| ToolError::internal("an account move without `[wallet] account`"))?;
    let limit = super::account::read_limit(chain, account, web3.wallet().address(), plan.mv.asset).await?;
    if plan.mv.amount > limit.remaining {
        return Err(super::account::over_limit(&plan.mv, &limit, account));
    }
    Ok(())
}

/// Fails when a register the action was judged on was rewritten since (a concurrent call): nothing is signed, and the
/// next call judges the new values. `register_stale`, naming the register.
fn unchanged(ctx: &ToolContext, inputs: &Inputs) -> Result<(), ToolError> {
    let amount = inputs.amount.iter().map(|a| (&a.key, &a.entry));
    for (key, entry) in inputs.registers.iter().map(|(k, e)| (k, e)).chain(amount) {
        if !ctx.registers.get(key).is_some_and(|now| std::sync::Arc::ptr_eq(&now, entry)) {
            return Err(ToolError::new(
                ErrorCode::RegisterStale,
                format!(
                    "`{key}` was rewritten while this action was being prepared; nothing was signed — call it again"
                ),
            ));
        }
    }
    Ok(())
}

/// Runs a transaction the kernel itself decided on (an allowance reset): no session, no user to ask, no authorization
/// — its kind moves nothing. The same lock, simulation, check, journal and broadcast as every other transaction.
pub(crate) async fn run_kernel<K: TxKind>(
    web3: &Web3,
    kind: &K,
    network: &NetworkConfig,
    mut plan: Plan<K::Summary>,
) -> Result<Sent, ToolError> {
    require_durable(web3)?;
    let chain = web3.chain(network)?;
    if plan.onchain {
        within_onchain_limit(web3, &chain, &plan).await?;
    }
    let mut fees = chain.fees(web3.wallet().address(), &plan.tx).await?;
    if K::KIND == EntryKind::Fund && !plan.mv.native {
        // A fund pays a token to the signer, whose balance of it a payment settling meanwhile may empty: the transfer
        // then writes a fresh storage slot, up to 17,100 gas more than estimated against a non-empty one.
        fees.gas_limit = fees.gas_limit.saturating_add(FRESH_SLOT_GAS);
    }
    web3.policy().check_fees(&network.name, &fees)?;
    plan.summary.set_fees(fees.gas_limit, super::human(fees.max_cost(), 18, &network.native_symbol));
    Ok(commit(web3, None, kind, &chain, network, plan, fees, None, Asked::default()).await?.0)
}

/// The gas a token transfer may need beyond its estimate when its recipient's balance is emptied in between: a fresh
/// storage slot (20,000) instead of a changed one (2,900).
const FRESH_SLOT_GAS: u64 = 17_100;

/// The fingerprint of the question the simulation of a funded action raises after the user approved it before its
/// fund: a confirmation of its own, so that the first approval (used by the fund's run) does not answer it.
fn simulated_fingerprint(fingerprint: &str) -> String {
    format!("{fingerprint}:simulated")
}

/// What the user is asked about an action, and whether they already approved it before its fund.
#[derive(Debug, Default)]
struct Asked {
    /// Reasons to ask the user, known before the simulation.
    reasons: Vec<String>,
    /// The user approved this very action (its fingerprint) before its fund moved from the smart account: the
    /// reasons known then are answered; only the simulation's own reasons are asked again.
    upfront: bool,
    /// The fund's lock ([`super::account::fund`]), held until the action is reserved in the journal (or refused): a
    /// concurrent action judging what the signer holds then sees this one's share spent, and funds its own.
    funded: Option<tokio::sync::OwnedMutexGuard<()>>,
}

/// Steps 7–13: under the wallet's send lock, the exact transaction is built, simulated and checked; then asked,
/// authorized, reserved, signed, journaled, broadcast and settled.
#[allow(clippy::too_many_arguments)]
async fn commit<K: TxKind>(
    web3: &Web3,
    session: Option<(&ToolContext, &Inputs)>,
    kind: &K,
    chain: &Chain,
    network: &NetworkConfig,
    mut plan: Plan<K::Summary>,
    fees: FeeQuote,
    cap: Option<DayCap>,
    asked: Asked,
) -> Result<(Sent, K::Summary), ToolError> {
    let Asked { mut reasons, upfront, funded } = asked;
    let wallet = web3.wallet();
    let from = wallet.address();
    let from_text = from.to_checksum(None);
    let journal = web3.journal();
    // One send of this wallet at a time — across every instance when the journal is in PostgreSQL — from the nonce's
    // choice through the simulation to the broadcast.
    let mut sending = journal.lock_wallet(network.chain_id, &from_text).await?;
    settle_earlier_sends(web3, network, &from_text).await?;
    let session_id = session.map_or_else(|| "kernel".to_owned(), |(ctx, _)| ctx.session_id.to_string());
    if plan.onchain {
        // Under the lock, once earlier sends are settled: what remains of the on-chain limit is what the chain will
        // allow this transaction (the simulation below runs the module's own check as well).
        if let Err(error) = within_onchain_limit(web3, chain, &plan).await {
            drop(sending);
            let summary = to_json(&plan.summary);
            return Err(refuse(web3, &session_id, K::KIND, network, (&plan.tx, &plan.mv), summary, error).await);
        }
    }
    let journaled = journal.highest_live_nonce(network.chain_id, &from_text).await?;
    // One reading of the count, for the check and the nonce: a held-back transaction mined between two readings
    // would pass the first and push the second past it.
    chain.verify().await?;
    let mined = chain.mined_count(from).await?;
    mined_after_all(web3, network, &from_text, journaled, &mined).await?;
    // After the highest taken nonce, or a stalled send's nonce below it (at most one of the two is mined), so the
    // sends after it are not left behind a gap.
    let taken = journal.nonces_taken_from(network.chain_id, &from_text, mined.lowest).await?;
    let stalled = journal.stalled_nonces_from(network.chain_id, &from_text, mined.lowest).await?;
    let nonce = mined.next_for(&taken, &stalled);
    let tx = chain.build(&plan.tx, fees, nonce);
    let sim = chain.simulate_exact(from, &tx, &plan.reads).await?;
    match kind.check(web3, chain, &mut plan, &sim).await? {
        Verdict::Pass => {}
        Verdict::Confirm(reason) => reasons.push(reason),
        Verdict::Refuse(error) => {
            drop(sending);
            let summary = to_json(&plan.summary);
            return Err(refuse(web3, &session_id, K::KIND, network, (&plan.tx, &plan.mv), summary, error).await);
        }
    }
    let intent = session.map_or_else(|| plan.fingerprint.clone(), |(_, inputs)| inputs.intent.clone());
    let mut spent = Spent::Nothing;
    // What an approval must have shown for this run to use it: at most this transaction's gas and about its fee (see
    // `gas_covered`, `fee_covered`).
    let auto_max_gas = web3.policy().auto_max_gas(&network.name);
    let covers = |approved: &serde_json::Value| {
        gas_covered(approved, fees.gas_limit, auto_max_gas) && fee_covered(approved, fees.max_cost())
    };
    if let Some((ctx, inputs)) = session {
        // Still within their maximum age (a quote's 60 s) now, under the lock, right before the action is reserved and
        // signed: `run` checked them before the plan's reads, the fees, the wait for the wallet's lock (another send
        // of this wallet) and the simulation, which all take time. The entries the action was planned on are judged,
        // whatever the registers hold now.
        for (key, entry) in inputs.registers.iter().filter(|(k, _)| inputs.fresh.contains(k)) {
            if let Err(stale) = ctx.registers.check_fresh(key, entry) {
                // A concurrent twin of this call sent while it waited (it spent the quote) is its answer.
                drop(sending);
                return match journal.live_by_intent(&inputs.intent).await? {
                    Some(earlier) => Ok((already_sent(web3, earlier).await?, plan.summary)),
                    None => Err(stale),
                };
            }
        }
        // Checked here, under the lock, so two concurrent actions of this wallet cannot both find the user's amount
        // unspent (asked before the fund already when `upfront`).
        let shown = super::human(plan.mv.amount, plan.mv.decimals, &plan.mv.symbol);
        if !upfront {
            reasons.extend(the_users_reasons(ctx, inputs, &plan.mv, K::KIND));
        }
        let summary = to_json(&plan.summary);
        if !reasons.is_empty() {
            let reason = reasons.join("; ");
            // After an approval before the fund, the simulation's question is its own (the first approval is used).
            let fingerprint = if upfront { simulated_fingerprint(&plan.fingerprint) } else { plan.fingerprint.clone() };
            ctx.require_confirmation(kind.tool(), &kind.params(), &fingerprint, summary.clone(), &reason, covers)?;
        }
        // The last point where a stop leaves nothing behind: past it the action is reserved, signed and broadcast.
        ctx.check_cancelled("the transaction was signed")?;
        if inputs.spends
            && let Some(amount) = &inputs.amount
        {
            spent = spend_authorization(ctx, amount, &inputs.authorization_intent);
            if matches!(spent, Spent::Elsewhere(_)) && reasons.is_empty() && !upfront {
                // Another action spent it since the check (under another chain's lock): this one asks the user.
                let reason =
                    format!("{shown} from your message already authorized one action; this one needs your approval");
                ctx.require_confirmation(kind.tool(), &kind.params(), &plan.fingerprint, summary, &reason, covers)?;
            }
        }
    }
    let relied_on = reasons.is_empty() && !upfront;
    let give_back_authorization = || {
        if let Some((ctx, inputs)) = session {
            give_back(ctx, spent.by_this_call(), &inputs.authorization_intent);
        }
    };
    let summary_json = to_json(&plan.summary);
    let new = NewEntry {
        session_id,
        kind: K::KIND,
        network: network.name.clone(),
        chain_id: network.chain_id,
        from: from_text.clone(),
        to: plan.to.to_checksum(None),
        nonce: None,
        value: plan.tx.value.to_string(),
        asset: plan.mv.asset.to_checksum(None),
        asset_symbol: plan.mv.symbol.clone(),
        amount: plan.mv.amount.to_string(),
        fingerprint: plan.fingerprint.clone(),
        intent: Some(intent),
        raw_tx: None,
        tx_hash: None,
        error: None,
        summary: summary_json.clone(),
        // Stored with the entry, so that no other action — another instance, or after a crash — runs by itself on it.
        authorization: spent.id().map(|id| AuthorizationUse { id: id.to_owned(), relied_on }),
    };
    let reserved = journal.reserve(new, cap).await;
    // Reserved (its share counted), or refused: a concurrent action may judge the signer's funds now.
    drop(funded);
    let entry = match reserved {
        Ok(Reserved::New(e)) => e,
        // The same intent is already out (a concurrent twin of this call): its authorization stays spent.
        Ok(Reserved::Existing(e)) => {
            drop(sending);
            return Ok((already_sent(web3, e).await?, plan.summary));
        }
        Ok(Reserved::OverCap { spent }) => {
            give_back_authorization();
            let limit = cap.map(|c| c.limit).unwrap_or_default();
            let m = AssetMove {
                network: &network.name,
                symbol: &plan.mv.symbol,
                decimals: plan.mv.decimals,
                native: plan.mv.native,
                amount: plan.mv.amount,
                spent_today: spent,
                model_typed: None,
            };
            return Err(web3.policy().over_cap(&m, spent, limit));
        }
        Ok(Reserved::AuthorizationSpent { by }) => {
            give_back_authorization();
            // The session's bank learns what the journal knows (a copy restored from before the spend, another
            // instance's): the next run asks before it reserves, so an approval of this question is used there and
            // the action then reserves without relying on the authorization, instead of meeting this refusal again.
            if let (Some((ctx, _)), Some(id)) = (session, spent.id()) {
                ctx.context_bank.spent_elsewhere(id, by.intent().unwrap_or(&by.id));
            }
            drop(sending);
            let reason = format!(
                "the amount from your message already moved value (journal {}); this action needs your approval",
                by.id
            );
            let asked = session.map(|(ctx, _)| {
                ctx.require_confirmation(kind.tool(), &kind.params(), &plan.fingerprint, summary_json, &reason, |_| {
                    true
                })
            });
            return Err(match asked {
                Some(Err(e)) => e,
                _ => ToolError::new(ErrorCode::ConfirmationRequired, reason),
            });
        }
        Ok(Reserved::Undelivered { .. }) => {
            give_back_authorization();
            return Err(ToolError::internal("a transaction's reservation counted undelivered payments"));
        }
        Err(e) => {
            give_back_authorization();
            return Err(e);
        }
    };
    // A local development chain can begin anew (a devnet reset): its genesis, read now, is journaled with the bytes, so
    // that reconciliation tells such an entry from a dropped one. A public chain never does; nothing is read for it.
    let genesis = if holdfast_core::config::is_local_chain_id(chain.network().chain_id) {
        match chain.genesis_now().await {
            Ok(g) => Some(g.to_string()),
            Err(e) => {
                give_back_authorization();
                let update = EntryUpdate { error: Some(e.message.clone()), ..Default::default() };
                journal.transition(&entry.id, &[EntryStatus::Reserved], EntryStatus::Failed, update).await?;
                return Err(e);
            }
        }
    } else {
        None
    };
    let signed = match chain.sign_tx(wallet.signer(), tx) {
        Ok(s) => s,
        Err(e) => {
            give_back_authorization();
            let update = EntryUpdate { error: Some(e.message.clone()), ..Default::default() };
            journal.transition(&entry.id, &[EntryStatus::Reserved], EntryStatus::Failed, update).await?;
            return Err(e);
        }
    };
    // The nonce was chosen under the wallet's lock: on PostgreSQL a lost connection (a server restart) frees it, and
    // another instance may have chosen the same nonce since. Nothing is signed then.
    if !sending.is_held().await {
        give_back_authorization();
        let why = "the wallet's send lock in PostgreSQL was lost (its connection dropped, or the server restarted) \
                   before this transaction was journaled; nothing was sent — try again";
        let update = EntryUpdate { error: Some(why.to_owned()), ..Default::default() };
        // A database that just restarted may not take this write: the entry then stays `reserved`, released as stale
        // by reconciliation; the answer is the lost lock either way.
        if let Err(e) = journal.transition(&entry.id, &[EntryStatus::Reserved], EntryStatus::Failed, update).await {
            tracing::warn!(journal_id = %entry.id, error = %e.message, "journal: could not release an unsigned entry");
        }
        return Err(ToolError::new(ErrorCode::UpstreamError, why));
    }
    // Durable before the bytes leave the process (invariant 9).
    let (raw, hash) = (signed.raw.to_string(), signed.hash.to_string());
    if let Err(e) =
        journal.mark_signed_holding(&mut sending, &entry.id, Some(nonce), (&raw, &hash), genesis.as_deref()).await
    {
        // The write may have been committed before the error (a COMMIT whose answer was lost): what the journal holds
        // decides. Signed → the bytes will be sent (now, or by reconciliation), so nothing is given back. Only an
        // entry this call moved from `reserved` to `failed` is surely never sent; anything else is unknown, and
        // saying "failed" would be a lie the reconciliation could later make worse by sending the journaled bytes.
        let now = journal.get(&entry.id).await;
        if !matches!(&now, Ok(Some(held)) if held.status == EntryStatus::Signed) {
            let update = EntryUpdate { error: Some(e.message.clone()), ..Default::default() };
            let failed = journal.transition(&entry.id, &[EntryStatus::Reserved], EntryStatus::Failed, update).await;
            if matches!(failed, Ok(true)) {
                give_back_authorization();
                return Err(e);
            }
            return Err(unrecorded(&entry.id, &e));
        }
    }
    let status = super::broadcast::broadcast(web3, chain, &entry.id, from, &signed).await;
    drop(sending);
    let status = match status {
        Ok(status) => status,
        Err(e) => {
            give_back_authorization();
            return Err(e);
        }
    };
    let hash_text = signed.hash.to_string();
    let sent = |outcome, block_number, gas_used| Sent {
        hash: hash_text.clone(),
        outcome,
        block_number,
        gas_used,
        journal_id: entry.id.clone(),
    };
    if status == EntryStatus::Unknown {
        return Ok((sent(TxOutcome::Unknown, None, None), plan.summary));
    }
    // Still counted, its authorization still spent: nothing is given back.
    if status == EntryStatus::Stalled {
        return Err(super::broadcast::stalled(&entry.id, &hash_text));
    }
    let events = session.map(|(ctx, _)| ctx.events.clone());
    if let Some(events) = &events {
        events.publish(EventPayload::TxPending(TxPending {
            journal_id: entry.id.clone(),
            hash: hash_text.clone(),
            network: network.name.clone(),
            kind: K::KIND.as_str().to_owned(),
            summary: summary_json,
        }));
    }
    // A stop while waiting for the receipt leaves the transaction as it is, sent: the answer says pending, as after
    // the receipt timeout, and the journal settles it.
    let waiting = chain.wait_receipt(signed.hash, web3.receipt_timeout());
    let receipt = match session {
        Some((ctx, _)) => ctx.until_cancelled("waiting for the receipt", waiting).await.unwrap_or(None),
        None => waiting.await,
    };
    let Some(receipt) = receipt else {
        return Ok((sent(TxOutcome::Pending, None, None), plan.summary));
    };
    let (status, outcome) = if receipt.status() {
        (EntryStatus::Confirmed, TxOutcome::Confirmed)
    } else {
        (EntryStatus::Reverted, TxOutcome::Reverted)
    };
    let gas_used = receipt.gas_used.to_string();
    let update =
        EntryUpdate { block_number: receipt.block_number, gas_used: Some(gas_used.clone()), ..Default::default() };
    let settled_from = [
        EntryStatus::Signed,
        EntryStatus::Pending,
        EntryStatus::Unknown,
        EntryStatus::Stalled,
        EntryStatus::Failed,
        EntryStatus::Dropped,
        EntryStatus::ChainReset,
    ];
    // The chain has decided: a journal that cannot record it (reconciliation will, from the receipt) does not turn a
    // mined transaction into an error for its caller.
    if let Err(e) = journal.transition(&entry.id, &settled_from, status, update).await {
        tracing::warn!(journal_id = %entry.id, error = %e.message, "journal: could not record a receipt; reconciliation will");
    }
    if let Some(events) = &events {
        events.publish(EventPayload::TxConfirmed(TxConfirmed {
            journal_id: entry.id.clone(),
            hash: hash_text.clone(),
            network: network.name.clone(),
            kind: K::KIND.as_str().to_owned(),
            status: outcome.as_str().to_owned(),
            block_number: receipt.block_number,
            gas_used: gas_used.clone(),
        }));
    }
    Ok((sent(outcome, receipt.block_number, Some(gas_used)), plan.summary))
}

/// The answer when the journal's record of a signed transaction is unknown (its write failed, it was not found
/// `signed`, and its release to `failed` could not be recorded): the bytes may be journaled, and then reconciliation
/// sends them, so the outcome is unknown — never "failed".
fn unrecorded(id: &str, e: &ToolError) -> ToolError {
    ToolError::new(
        ErrorCode::OutcomeUnknown,
        format!(
            "the transaction was signed but the journal's record of it could not be confirmed ({}); it may still be \
             sent (journal {id}): reconciliation with the chain decides",
            e.message
        ),
    )
}

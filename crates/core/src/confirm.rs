//! The confirmation protocol: value-moving actions that wait for the user's decision (invariant 7), one protocol for
//! every front end.
//!
//! 1. **Request.** A value-moving tool that needs approval calls [`crate::ToolContext::require_confirmation`] with a *fingerprint* of
//!    the exact action (every input that decides what would be signed) and a decoded summary. Without a matching
//!    approval the action is recorded as pending (id, summary, expiry after [`CONFIRMATION_TTL`]) and the tool fails
//!    with `confirmation_required` carrying the confirmation id and summary.
//! 2. **Decision, by a user channel only.** [`UserDecisions::decide`] approves or denies it and records the
//!    [`UserChannel`] the decision came through: the `chat` terminal, the authenticated web UI/API of `serve`,
//!    replay's explicit `{"confirm": …}` line, or an MCP elicitation the human answered. Tools get a
//!    [`crate::ToolContext`], whose [`Confirmations`] can request and list but never decide; the [`UserDecisions`]
//!    capability comes only from [`crate::CoreServices::user_decisions`], which front ends hold and tools do not.
//! 3. **Executed once.** The front end re-runs the same tool call (`Runtime::decide` in `holdfast-agent` is the one
//!    implementation); the tool calls [`crate::ToolContext::require_confirmation`] again, finds the approval for the same fingerprint, consumes it and
//!    proceeds. If anything that feeds the fingerprint changed in between, the approval does not match and the user
//!    is asked again. Approvals are used once, and only by that re-run ([`ApprovedRun`]; a call in a turn the user
//!    started may use one too, a call in any other turn may not): one it did not use (stopped, or failed before
//!    the action) expires when it ends ([`Confirmations::retire_unused`]), and one restored by a later process
//!    expires too.

use crate::error::{ErrorCode, ToolError};
use crate::event::{ConfirmationResolved, ConfirmationWithdrawn, EventBus, EventPayload};
use crate::session_state::SavedConfirmation;
use chrono::{DateTime, Utc};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

/// How a confirmation ended (or that it has not yet).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ConfirmationState {
    /// Waiting for the user.
    Pending,
    /// Approved; the next matching `require` consumes it.
    Approved,
    /// Rejected by the user.
    Denied,
    /// Approved and used.
    Used,
    /// Superseded or too old.
    Expired,
}

/// Where a user's decision came from. Nothing else decides a confirmation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum UserChannel {
    /// The terminal of `holdfast chat`.
    Terminal,
    /// The authenticated web UI or REST/WebSocket API of `holdfast serve`.
    WebUi,
    /// An explicit `{"confirm": …}` / `{"deny": …}` line of a replayed transcript.
    Replay,
    /// An MCP elicitation (a form the client showed to the human) answered by the human.
    McpElicitation,
}

/// The user's decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum UserDecision {
    /// Run it (once).
    Approve,
    /// Do not run it.
    Deny,
}

/// The capability to decide confirmations. Front ends get it from [`crate::CoreServices::user_decisions`]; a tool
/// only ever sees a [`crate::ToolContext`], which offers no way to it.
#[derive(Debug, Clone)]
pub struct UserDecisions(());

impl UserDecisions {
    pub(crate) fn new() -> Self {
        Self(())
    }

    /// What the re-run of the approved call `approved` carries (`ctx.with_extension(…)`): that run may use the
    /// approval, whoever started the turn ([`ApprovedRun`]).
    pub fn approved_run(&self, approved: &Confirmation) -> ApprovedRun {
        ApprovedRun(approved.id.clone())
    }

    /// Records the user's `decision` on the pending confirmation `id` of `confirmations`, as given through
    /// `channel`. Returns the confirmation (an approved one carries the tool call to re-run).
    pub fn decide(
        &self,
        confirmations: &Confirmations,
        channel: UserChannel,
        id: &str,
        decision: UserDecision,
    ) -> Result<Confirmation, ToolError> {
        let to = match decision {
            UserDecision::Approve => ConfirmationState::Approved,
            UserDecision::Deny => ConfirmationState::Denied,
        };
        confirmations.resolve(id, to, channel)
    }
}

/// One confirmation request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Confirmation {
    /// Its id (`cf_…`).
    pub id: String,
    /// The tool that asked.
    pub tool: String,
    /// The tool call's params, to re-run it after approval.
    pub params: Value,
    /// What exactly would be approved: the decoded action for the user.
    pub summary: Value,
    /// The action's fingerprint.
    #[serde(skip)]
    pub fingerprint: String,
    /// Why confirmation is needed.
    pub reason: String,
    /// The state.
    pub state: ConfirmationState,
    /// The user channel that decided it, once decided.
    pub decided_by: Option<UserChannel>,
    /// When it was requested.
    pub created_at: DateTime<Utc>,
}

/// Who started the turn a session runs now. The agent loop sets it on the turn's own context (a fork of the session's
/// extensions, so another turn in the session never reads it) before each turn: [`User`] for a
/// turn the user's message started, [`Other`] (naming the sender) for one the inbox started — a message from another
/// agent, a group, a channel, or a reminder. The value-moving kernel reads it: a turn the user did not start moves
/// nothing by itself (every action waits for the user's confirmation; an x402 payment, which has no confirmation, is
/// refused). Absent — the tool console, an MCP host's call — counts as the user's, as before; the MCP server sets
/// [`Other`] on every call when it does not trust the client's forms (`[mcp] trust_elicitation = false`).
///
/// [`User`]: TurnStarter::User
/// [`Other`]: TurnStarter::Other
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TurnStarter {
    /// The user's own message.
    User,
    /// Someone else: who and how (`agent 'b'`, `a reminder the agent scheduled for itself`).
    Other(String),
}

impl TurnStarter {
    /// Who started the current turn of `ctx`, when it is not the user.
    pub fn not_user(ctx: &crate::ToolContext) -> Option<String> {
        match ctx.extensions.get::<TurnStarter>().as_deref() {
            Some(TurnStarter::Other(who)) => Some(who.clone()),
            _ => None,
        }
    }
}

/// The approval a call runs for: the re-run of an approved call ([`crate::confirm::UserDecisions`]' caller, the
/// runtime's `decide`) carries its confirmation's id, and that run may use that approval only.
/// Only the holder of [`UserDecisions`] (a front end, never a tool) makes one ([`UserDecisions::approved_run`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovedRun(String);

impl ApprovedRun {
    /// Whether a call made through `ctx` may use the approval `c`: the re-run of `c` ([`ApprovedRun`]) may; any other
    /// call only in a turn the user started (or the tool console) — a turn another agent started never uses the
    /// user's approval by repeating the approved call before its re-run does. Every approval is looked up through
    /// [`crate::ToolContext::require_confirmation`] and [`crate::ToolContext::has_approval`], which apply it.
    pub(crate) fn may_use(ctx: &crate::ToolContext, c: &Confirmation) -> bool {
        match ctx.extensions.get::<ApprovedRun>() {
            Some(run) => run.0 == c.id,
            None => TurnStarter::not_user(ctx).is_none(),
        }
    }
}

/// The `confirmation.withdrawn` event of `c`.
fn withdrawn(c: &Confirmation, reason: String) -> EventPayload {
    EventPayload::ConfirmationWithdrawn(ConfirmationWithdrawn { id: c.id.clone(), tool: c.tool.clone(), reason })
}

/// How long an approval or a pending request stays usable.
pub const CONFIRMATION_TTL: Duration = Duration::from_secs(600);

/// One session's confirmations. Clones share state.
#[derive(Debug, Clone)]
pub struct Confirmations {
    items: Arc<Mutex<Vec<Confirmation>>>,
    events: EventBus,
    /// Counts requests, decisions and withdrawals (expiry is derived from time again when restored).
    version: Arc<std::sync::atomic::AtomicU64>,
}

impl Confirmations {
    /// An empty set publishing on `events`.
    pub fn new(events: EventBus) -> Self {
        Self { items: Arc::default(), events, version: Arc::default() }
    }

    /// Proceeds when an unexpired approval for `fingerprint` from `tool` exists (consuming it); otherwise records a
    /// pending confirmation and returns `confirmation_required` with `{confirmation_id, summary, reason}` details.
    #[cfg(test)]
    pub(crate) fn require(
        &self,
        tool: &str,
        params: &Value,
        fingerprint: &str,
        summary: Value,
        reason: &str,
    ) -> Result<(), ToolError> {
        self.require_covered(tool, params, fingerprint, summary, reason, |_| true)
    }

    /// As `Confirmations::require`, but an approval is used only when `covers` accepts it — the summary the user
    /// approved: what the fingerprint does not fix (a transaction's gas, estimated again on each run) is judged
    /// against what the user was shown, and anything more is asked again; and who may use it ([`ApprovedRun::may_use`]).
    pub(crate) fn require_covered(
        &self,
        tool: &str,
        params: &Value,
        fingerprint: &str,
        summary: Value,
        reason: &str,
        covers: impl Fn(&Confirmation) -> bool,
    ) -> Result<(), ToolError> {
        let now = Utc::now();
        let mut items = self.items.lock();
        self.changed();
        expire(&mut items, now);
        if let Some(approved) = items.iter_mut().find(|c| {
            c.state == ConfirmationState::Approved && c.tool == tool && c.fingerprint == fingerprint && covers(c)
        }) {
            approved.state = ConfirmationState::Used;
            return Ok(());
        }
        // A new request for the same tool supersedes older pending ones.
        let id = format!("cf_{}", random_id());
        let mut superseded = Vec::new();
        for c in items.iter_mut().filter(|c| c.state == ConfirmationState::Pending && c.tool == tool) {
            c.state = ConfirmationState::Expired;
            superseded.push(withdrawn(c, format!("a newer request of {tool} ({id}) replaces it")));
        }
        let confirmation = Confirmation {
            id: id.clone(),
            tool: tool.to_owned(),
            params: params.clone(),
            summary: summary.clone(),
            fingerprint: fingerprint.to_owned(),
            reason: reason.to_owned(),
            state: ConfirmationState::Pending,
            decided_by: None,
            created_at: now,
        };
        let event = EventPayload::ConfirmationRequired(confirmation.clone());
        items.push(confirmation);
        // Published under the lock (publishing never blocks): the events arrive in the order the changes happened,
        // so a page that follows them ends with what is pending.
        for gone in superseded {
            self.events.publish(gone);
        }
        self.events.publish(event);
        drop(items);
        Err(ToolError::new(
            ErrorCode::ConfirmationRequired,
            format!("{tool} waits for the user's approval ({reason}); confirmation id {id}"),
        )
        .with_details(serde_json::json!({"confirmation_id": id, "summary": summary, "reason": reason})))
    }

    /// Expires a pending confirmation that nothing will act on any more (the turn waiting for it was stopped; no
    /// user channel can be asked about it, as with an MCP client without elicitation): it can then never be approved.
    /// Publishes `confirmation.withdrawn` with `reason` (words for the user) when it was still pending.
    pub fn withdraw(&self, id: &str, reason: &str) {
        let mut items = self.items.lock();
        let Some(c) = items.iter_mut().find(|c| c.id == id && c.state == ConfirmationState::Pending) else {
            return;
        };
        c.state = ConfirmationState::Expired;
        self.changed();
        let event = withdrawn(c, reason.to_owned());
        // Under the lock, in order with the other confirmation events (see `require`).
        self.events.publish(event);
        drop(items);
    }

    fn changed(&self) {
        self.version.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }

    /// How many requests, decisions and withdrawals these confirmations have had.
    pub(crate) fn version(&self) -> u64 {
        self.version.load(std::sync::atomic::Ordering::SeqCst)
    }

    fn resolve(&self, id: &str, to: ConfirmationState, channel: UserChannel) -> Result<Confirmation, ToolError> {
        let mut items = self.items.lock();
        expire(&mut items, Utc::now());
        let Some(c) = items.iter_mut().find(|c| c.id == id) else {
            return Err(ToolError::new(ErrorCode::ConfirmationNotFound, format!("`id`: no confirmation {id:?}")));
        };
        if c.state != ConfirmationState::Pending {
            return Err(ToolError::new(
                ErrorCode::ConfirmationNotFound,
                format!("`id`: confirmation {id} is no longer pending (it is {:?})", c.state),
            ));
        }
        c.state = to;
        c.decided_by = Some(channel);
        self.changed();
        let resolved = c.clone();
        // Under the lock, in order with the other confirmation events (see `require`).
        self.events.publish(EventPayload::ConfirmationResolved(ConfirmationResolved {
            id: resolved.id.clone(),
            tool: resolved.tool.clone(),
            approved: to == ConfirmationState::Approved,
            channel,
        }));
        drop(items);
        Ok(resolved)
    }

    /// Expires confirmation `id` when it is approved and still unused. An approval is spent by the one run it was
    /// given for (the re-run of the approved call: `Runtime::decide` in `holdfast-agent`): an approval that run did not
    /// use (it was stopped, or failed before it reached the action) is not left for a later call of the same action to
    /// find — the model's next turn, another agent's turn, a retry — which would then run without the user being
    /// asked. True when it expired it.
    pub fn retire_unused(&self, id: &str) -> bool {
        let mut items = self.items.lock();
        let Some(c) = items.iter_mut().find(|c| c.id == id && c.state == ConfirmationState::Approved) else {
            return false;
        };
        c.state = ConfirmationState::Expired;
        self.changed();
        true
    }

    /// Whether the user approved `tool`'s action `fingerprint` and the approval is not used yet (it is not used by
    /// asking).
    pub(crate) fn has_approved(&self, tool: &str, fingerprint: &str, usable: impl Fn(&Confirmation) -> bool) -> bool {
        let mut items = self.items.lock();
        expire(&mut items, Utc::now());
        items.iter().any(|c| {
            c.state == ConfirmationState::Approved && c.tool == tool && c.fingerprint == fingerprint && usable(c)
        })
    }

    /// The most recent pending confirmation.
    pub fn last_pending(&self) -> Option<Confirmation> {
        let mut items = self.items.lock();
        expire(&mut items, Utc::now());
        items.iter().rev().find(|c| c.state == ConfirmationState::Pending).cloned()
    }

    /// Every confirmation still pending, oldest first.
    pub fn pending(&self) -> Vec<Confirmation> {
        let mut items = self.items.lock();
        expire(&mut items, Utc::now());
        items.iter().filter(|c| c.state == ConfirmationState::Pending).cloned().collect()
    }

    /// Every confirmation with its fingerprint, oldest first, for saving.
    pub(crate) fn saved(&self) -> Vec<SavedConfirmation> {
        let mut items = self.items.lock();
        expire(&mut items, Utc::now());
        items
            .iter()
            .map(|c| SavedConfirmation { confirmation: c.clone(), fingerprint: c.fingerprint.clone() })
            .collect()
    }

    /// Puts back confirmations an earlier process saved; those past their time expire as they would have, and so
    /// does an approval still unused: the run it was given for ended with that process
    /// ([`Confirmations::retire_unused`]).
    pub(crate) fn restore(&self, saved: Vec<SavedConfirmation>) {
        let mut items = self.items.lock();
        items.extend(saved.into_iter().map(|s| {
            let mut c = Confirmation { fingerprint: s.fingerprint, ..s.confirmation };
            if c.state == ConfirmationState::Approved {
                c.state = ConfirmationState::Expired;
            }
            c
        }));
        expire(&mut items, Utc::now());
    }

    /// A confirmation by id, in any state.
    pub fn get(&self, id: &str) -> Option<Confirmation> {
        self.items.lock().iter().find(|c| c.id == id).cloned()
    }
}

fn expire(items: &mut Vec<Confirmation>, now: DateTime<Utc>) {
    let ttl = chrono::Duration::from_std(CONFIRMATION_TTL).unwrap_or(chrono::Duration::MAX);
    for c in items.iter_mut() {
        if matches!(c.state, ConfirmationState::Pending | ConfirmationState::Approved) && now - c.created_at > ttl {
            c.state = ConfirmationState::Expired;
        }
    }
    // Keep the list bounded: drop settled entries beyond the most recent 256.
    let settled =
        items.iter().filter(|c| !matches!(c.state, ConfirmationState::Pending | ConfirmationState::Approved)).count();
    if settled > 256 {
        let mut to_drop = settled - 256;
        items.retain(|c| {
            let drop_it = to_drop > 0 && !matches!(c.state, ConfirmationState::Pending | ConfirmationState::Approved);
            if drop_it {
                to_drop -= 1;
            }
            !drop_it
        });
    }
}

/// 16 hex chars from the OS-seeded hasher and a counter; ids need to be unique, not secret.
pub fn random_id() -> String {
    use std::collections::hash_map::RandomState;
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut h = RandomState::new().build_hasher();
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    h.write_i64(Utc::now().timestamp_nanos_opt().unwrap_or_default());
    format!("{:016x}", h.finish())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn confirmations() -> Confirmations {
        Confirmations::new(EventBus::new("s"))
    }

    fn approve(c: &Confirmations, id: &str) -> Result<Confirmation, ToolError> {
        UserDecisions::new().decide(c, UserChannel::Terminal, id, UserDecision::Approve)
    }

    fn deny(c: &Confirmations, id: &str) -> Result<Confirmation, ToolError> {
        UserDecisions::new().decide(c, UserChannel::Terminal, id, UserDecision::Deny)
    }

    #[test]
    fn approval_is_bound_to_the_fingerprint_and_used_once() {
        let c = confirmations();
        let params = json!({"from_register": "swap_quote"});
        let err = c.require("web3_tx", &params, "fp1", json!({"sell": "0.001 ETH"}), "model-typed amount").unwrap_err();
        assert_eq!(err.code, ErrorCode::ConfirmationRequired);
        let id = err.details.as_ref().unwrap()["confirmation_id"].as_str().unwrap().to_owned();
        assert_eq!(c.last_pending().unwrap().id, id);
        let approved = approve(&c, &id).unwrap();
        assert_eq!(approved.decided_by, Some(UserChannel::Terminal));
        assert_eq!(approved.params, params);
        // A different action does not ride on the approval.
        assert!(c.require("web3_tx", &params, "fp2", json!({}), "r").is_err());
        approve(&c, &c.last_pending().unwrap().id).unwrap();
        assert!(c.require("web3_tx", &params, "fp1", json!({}), "r").is_ok());
        // Used once.
        assert_eq!(
            c.require("web3_tx", &params, "fp1", json!({}), "r").unwrap_err().code,
            ErrorCode::ConfirmationRequired
        );
    }

    #[test]
    fn denial_and_unknown_ids() {
        let c = confirmations();
        let err = c.require("web3_tx", &json!({}), "fp", json!({}), "r").unwrap_err();
        let id = err.details.unwrap()["confirmation_id"].as_str().unwrap().to_owned();
        assert_eq!(deny(&c, &id).unwrap().state, ConfirmationState::Denied);
        assert_eq!(approve(&c, &id).unwrap_err().code, ErrorCode::ConfirmationNotFound);
        assert_eq!(approve(&c, "cf_nope").unwrap_err().code, ErrorCode::ConfirmationNotFound);
        assert!(c.require("web3_tx", &json!({}), "fp", json!({}), "r").is_err());
    }

    #[test]
    fn an_approval_left_unused_by_its_run_or_by_a_stopped_process_is_never_used_later() {
        let c = confirmations();
        let ask = |c: &Confirmations| c.require("t", &json!({}), "fp", json!({}), "r");
        let id = ask(&c).unwrap_err().details.unwrap()["confirmation_id"].as_str().unwrap().to_owned();
        approve(&c, &id).unwrap();
        // Its run ended without using it.
        assert!(c.retire_unused(&id));
        assert_eq!(ask(&c).unwrap_err().code, ErrorCode::ConfirmationRequired, "asked again");
        // A used approval stays used.
        let id = c.last_pending().unwrap().id;
        approve(&c, &id).unwrap();
        assert!(ask(&c).is_ok());
        assert!(!c.retire_unused(&id));
        assert_eq!(c.get(&id).unwrap().state, ConfirmationState::Used);
        // Approved, and the process stopped before its run used it: restored, it has expired.
        let id = ask(&c).unwrap_err().details.unwrap()["confirmation_id"].as_str().unwrap().to_owned();
        approve(&c, &id).unwrap();
        let restored = confirmations();
        restored.restore(c.saved());
        assert_eq!(restored.get(&id).unwrap().state, ConfirmationState::Expired);
        assert_eq!(restored.get(&id).unwrap().decided_by, Some(UserChannel::Terminal), "who decided is kept");
        assert_eq!(ask(&restored).unwrap_err().code, ErrorCode::ConfirmationRequired);
    }

    #[test]
    fn a_withdrawn_confirmation_can_never_be_approved() {
        let c = confirmations();
        let id = c.require("t", &json!({}), "a", json!({}), "r").unwrap_err().details.unwrap()["confirmation_id"]
            .as_str()
            .unwrap()
            .to_owned();
        c.withdraw(&id, "test");
        assert_eq!(approve(&c, &id).unwrap_err().code, ErrorCode::ConfirmationNotFound);
        assert!(c.pending().is_empty());
    }

    /// Requests of one tool made at once from several threads: a page that follows the events (a question added on
    /// `confirmation.required`, taken off on `.withdrawn`) ends with exactly the one question still pending. The
    /// events are published in the order the requests took the confirmations' lock.
    #[test]
    fn events_of_concurrent_requests_arrive_in_the_order_they_happened() {
        for _ in 0..200 {
            let c = confirmations();
            let mut events = c.events.subscribe();
            std::thread::scope(|s| {
                for t in 0..4 {
                    let c = &c;
                    s.spawn(move || {
                        for i in 0..50 {
                            let _ = c.require("t", &json!({}), &format!("fp{t}-{i}"), json!({}), "r");
                        }
                    });
                }
            });
            let mut shown = std::collections::BTreeSet::new();
            while let Ok(event) = events.try_recv() {
                match &event.payload {
                    EventPayload::ConfirmationRequired(r) => {
                        shown.insert(r.id.clone());
                    }
                    EventPayload::ConfirmationWithdrawn(w) => {
                        assert!(shown.remove(&w.id), "{} withdrawn before it was shown", w.id);
                    }
                    _ => {}
                }
            }
            let pending: std::collections::BTreeSet<_> = c.pending().into_iter().map(|p| p.id).collect();
            assert_eq!(shown, pending);
        }
    }

    #[test]
    fn a_new_request_supersedes_the_old_pending_one() {
        let c = confirmations();
        let first = c.require("t", &json!({}), "a", json!({}), "r").unwrap_err().details.unwrap();
        let mut events = c.events.subscribe();
        let _second = c.require("t", &json!({}), "b", json!({}), "r").unwrap_err();
        assert_eq!(c.pending().len(), 1);
        // A page showing the first question is told it is gone, before it is shown the second.
        let names: Vec<_> = std::iter::from_fn(|| events.try_recv().ok()).map(|e| e.payload.clone()).collect();
        match names.as_slice() {
            [EventPayload::ConfirmationWithdrawn(w), EventPayload::ConfirmationRequired(_)] => {
                assert_eq!(Some(w.id.as_str()), first["confirmation_id"].as_str());
                assert!(w.reason.contains("newer request"), "{}", w.reason);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            approve(&c, first["confirmation_id"].as_str().unwrap()).unwrap_err().code,
            ErrorCode::ConfirmationNotFound
        );
    }
}

//! A session's in-process state as one value that can be saved and restored: its registers (value, origin, writer,
//! time), its context bank, and its confirmations (pending ones keep their expiry, approvals their fingerprint).
//!
//! The core does no I/O: a layer above supplies a [`SessionStateStore`] through
//! [`crate::CoreServices::with_state_store`], and [`crate::ToolContext::persist`] hands it the state after every
//! change the runtime makes on the user's or a tool's behalf. Every tool call runs through
//! [`crate::ToolRegistry::call`], which persists before it returns the result; the front ends persist after they
//! scan a user message or record a decision. A restored session ([`crate::CoreServices::restore_session`]) holds
//! the same entries with their original creation times, so a value that was stale before a restart is stale after
//! it.
//!
//! ```
//! use holdfast_core::{CoreServices, Origin, RegisterWrite, config::CoreConfig};
//! let services = CoreServices::new(CoreConfig::default()).unwrap();
//! let ctx = services.new_session("s1");
//! ctx.registers.set(RegisterWrite::new("note", serde_json::json!("hi"), Origin::User, "register_set")).unwrap();
//! ctx.context_bank.scan_input("send 5 USDC");
//! let saved = ctx.state().to_json().unwrap();
//!
//! let restored = services.restore_session("s1", holdfast_core::SessionState::from_json(&saved).unwrap(), 1);
//! assert_eq!(restored.registers.get("note").unwrap().value, "hi");
//! assert!(restored.context_bank.has_amount("5", "USDC"));
//! ```

use crate::confirm::Confirmation;
use crate::context_bank::{Authorization, ContextItem};
use crate::error::ToolError;
use crate::registers::RegisterEntry;
use crate::tool::BoxFuture;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The format version written with a whole saved state ([`SessionState::to_json`]). The parts a store keeps
/// ([`StoredState`]) carry none: their format is guarded by the store's schema migrations, which a release that does
/// not know a newer schema refuses.
pub const STATE_VERSION: u32 = 1;

/// A confirmation as saved: everything in [`Confirmation`] plus the fingerprint an approval is matched by.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SavedConfirmation {
    /// The confirmation.
    #[serde(flatten)]
    pub confirmation: Confirmation,
    /// The action's fingerprint.
    pub fingerprint: String,
}

/// One session's registers, context bank and confirmations.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct SessionState {
    /// [`STATE_VERSION`] when written (required: a document without it is not a saved state).
    pub version: u32,
    /// Register entries by key (intrinsic registers are not saved: they resolve again).
    #[serde(default)]
    pub registers: BTreeMap<String, RegisterEntry>,
    /// Context-bank items in order of first appearance.
    #[serde(default)]
    pub context_bank: Vec<ContextItem>,
    /// The items of the user's latest message, in the order written.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub latest_message: Vec<ContextItem>,
    /// The authorizations of the amounts the user wrote, oldest first, with the action that spent each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub authorizations: Vec<Authorization>,
    /// Confirmations, oldest first.
    #[serde(default)]
    pub confirmations: Vec<SavedConfirmation>,
    /// The session's notes ([`crate::notes`]).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub notes: BTreeMap<String, serde_json::Value>,
}

/// A saved state could not be read.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    /// The text is not a saved state.
    #[error("saved session state is not valid: {0}")]
    Invalid(#[from] serde_json::Error),
    /// Written by a newer holdfast.
    #[error("saved session state has version {0}; this holdfast reads version {STATE_VERSION}")]
    Version(u32),
    /// A part this holdfast does not know (written by a newer one).
    #[error("saved session state has a part {0:?} this holdfast does not know")]
    Part(String),
    /// Both a whole state and parts: not a state any release writes (a save in parts empties the whole state).
    #[error("saved session state holds both a whole state and parts; no release writes that")]
    Mixed,
}

impl SessionState {
    /// The state as JSON text.
    pub fn to_json(&self) -> Result<String, StateError> {
        Ok(serde_json::to_string(self)?)
    }

    /// Reads a state written by [`SessionState::to_json`].
    pub fn from_json(text: &str) -> Result<Self, StateError> {
        let state: Self = serde_json::from_str(text)?;
        if state.version > STATE_VERSION {
            return Err(StateError::Version(state.version));
        }
        Ok(state)
    }
}

/// The part a saved state keeps its context bank in (its items, the latest message's, the authorizations).
pub const BANK_PART: &str = "bank";
/// The part a saved state keeps its confirmations in.
pub const CONFIRMATIONS_PART: &str = "confirmations";
/// The part a saved state keeps the session's notes in ([`crate::notes`]).
pub const NOTES_PART: &str = "notes";
/// The prefix of the part that keeps one register (`r:KEY`).
pub const REGISTER_PART_PREFIX: &str = "r:";

/// A session's saved state as its store holds it: one JSON text per part (each register, the context bank, the
/// confirmations), so a save writes only the parts that changed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StoredState {
    /// The revision saved last.
    pub revision: u64,
    /// A whole state written by a release before parts ([`SessionState::to_json`]): read in its place until the
    /// session's first save, which writes every part and drops it.
    pub legacy: Option<String>,
    /// Part name → its JSON.
    pub parts: BTreeMap<String, String>,
}

/// What one save writes: each part that changed with its JSON, or `None` for a part that is gone (a register
/// removed).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StateDelta {
    /// The parts, each once.
    pub parts: Vec<(String, Option<String>)>,
    /// The session copy that saves: a number unique in this process, 0 when unknown.
    pub copy: u64,
    /// Handed over while the same copy's save of the revision before it was still unanswered (pipelined): the store
    /// writes it only on top of that save, never on a revision another writer wrote.
    pub follows: bool,
}

/// The context bank's part.
#[derive(Debug, Default, Serialize, Deserialize)]
struct BankPart {
    #[serde(default)]
    context_bank: Vec<ContextItem>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    latest_message: Vec<ContextItem>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    authorizations: Vec<Authorization>,
}

impl SessionState {
    /// The state a store holds: its parts, or the whole state a release before parts wrote. `true` with it when it
    /// was the latter (then every part is to be written by the next save).
    pub fn from_stored(stored: &StoredState) -> Result<(Self, bool), StateError> {
        if let Some(text) = &stored.legacy {
            // A store writes parts only where it empties the whole state: both at once is not a state it wrote.
            if !stored.parts.is_empty() {
                return Err(StateError::Mixed);
            }
            return Ok((Self::from_json(text)?, true));
        }
        let mut state = Self { version: STATE_VERSION, ..Self::default() };
        for (name, text) in &stored.parts {
            if let Some(key) = name.strip_prefix(REGISTER_PART_PREFIX) {
                state.registers.insert(key.to_owned(), serde_json::from_str(text)?);
            } else if name == BANK_PART {
                let bank: BankPart = serde_json::from_str(text)?;
                state.context_bank = bank.context_bank;
                state.latest_message = bank.latest_message;
                state.authorizations = bank.authorizations;
            } else if name == CONFIRMATIONS_PART {
                state.confirmations = serde_json::from_str(text)?;
            } else if name == NOTES_PART {
                state.notes = serde_json::from_str(text)?;
            } else {
                return Err(StateError::Part(name.clone()));
            }
        }
        Ok((state, false))
    }
}

/// The context bank's part as JSON.
pub(crate) fn bank_part(
    context_bank: &[ContextItem],
    latest_message: &[ContextItem],
    authorizations: &[Authorization],
) -> serde_json::Result<String> {
    let part = BankPart {
        context_bank: context_bank.to_vec(),
        latest_message: latest_message.to_vec(),
        authorizations: authorizations.to_vec(),
    };
    serde_json::to_string(&part)
}

/// Where sessions' states are kept (the agent layer's session stores implement it over SQLite and PostgreSQL).
pub trait SessionStateStore: Send + Sync + std::fmt::Debug {
    /// Writes `delta`'s parts of `session_id`'s state as revision `revision`, which must follow the revision saved
    /// last (`revision - 1`; 1 when none is saved), in one transaction. Any other saved revision (another process or
    /// copy saved meanwhile, or this copy's save of `revision - 1` was not written): nothing is written and the answer
    /// is `session_conflict`. Returning `Ok`
    /// promises the parts survive a crash of the process (for a store on disk).
    ///
    /// The save takes its place in the store's order when this is called, not when the future is first polled: the
    /// saves of one session are applied in the order of these calls (a caller hands revision `r + 1` over right
    /// after `r`, before `r` is answered), and each is applied whether or not its future is polled or kept. A save
    /// that `follows` is written only when the store wrote `delta.copy`'s save of `revision - 1` (and remembers
    /// it); otherwise it is refused, unwritten.
    fn save_state(
        &self,
        session_id: &str,
        revision: u64,
        delta: StateDelta,
    ) -> BoxFuture<'static, Result<(), ToolError>>;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::CoreConfig;
    use crate::confirm::ConfirmationState;
    use crate::registers::{Origin, RegisterWrite};
    use crate::{CoreServices, ErrorCode};
    use serde_json::json;
    use std::time::Duration;

    #[test]
    fn what_was_stale_or_expired_stays_so_after_a_restore() {
        let services = CoreServices::new(CoreConfig::default()).unwrap();
        let ctx = services.new_session("s");
        ctx.registers.set(RegisterWrite::new("old", json!("v"), Origin::User, "register_set")).unwrap();
        let err = ctx.confirmations.require("web3_tx", &json!({}), "fp", json!({}), "why").unwrap_err();
        assert_eq!(err.code, ErrorCode::ConfirmationRequired);
        let mut state = ctx.state();
        let two_hours = chrono::Duration::hours(2);
        state.registers.get_mut("old").unwrap().provenance.created_at -= two_hours;
        state.confirmations[0].confirmation.created_at -= two_hours;

        let back = services.restore_session("s", SessionState::from_json(&state.to_json().unwrap()).unwrap(), 3);
        assert!(back.registers.is_stale("old", Duration::from_secs(60)));
        assert!(back.confirmations.pending().is_empty());
        let c = &back.confirmations.saved()[0];
        assert_eq!((c.confirmation.state, c.fingerprint.as_str()), (ConfirmationState::Expired, "fp"));
    }

    #[test]
    fn intrinsic_entries_and_bad_keys_are_not_restored_and_newer_formats_are_refused() {
        let services = CoreServices::new(CoreConfig::default()).unwrap();
        let mut state = SessionState { version: STATE_VERSION, ..SessionState::default() };
        let entry = |origin| RegisterEntry {
            value: json!("x"),
            provenance: crate::registers::Provenance {
                origin,
                source: "t".into(),
                preset: None,
                created_at: chrono::Utc::now(),
                derived_from: vec![],
                authorization: None,
            },
        };
        state.registers.insert("wallet_address".into(), entry(Origin::Intrinsic));
        state.registers.insert("bad key".into(), entry(Origin::User));
        state.registers.insert("good".into(), entry(Origin::User));
        let ctx = services.restore_session("s", state, 1);
        assert_eq!(ctx.registers.keys(), vec!["good".to_owned()]);
        assert!(matches!(SessionState::from_json(r#"{"version": 99}"#), Err(StateError::Version(99))));
        assert!(matches!(SessionState::from_json("{"), Err(StateError::Invalid(_))));
        assert!(matches!(SessionState::from_json("{}"), Err(StateError::Invalid(_))), "no version: not a state");
    }

    /// A store that takes its time and counts the saves it finished.
    #[derive(Debug, Default)]
    struct SlowStore {
        finished: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    }

    impl SessionStateStore for SlowStore {
        fn save_state(&self, _: &str, _: u64, _: StateDelta) -> BoxFuture<'static, Result<(), ToolError>> {
            let finished = std::sync::Arc::clone(&self.finished);
            Box::pin(async move {
                tokio::time::sleep(Duration::from_millis(100)).await;
                finished.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                Ok(())
            })
        }
    }

    #[tokio::test]
    async fn saved_means_saved_even_when_another_save_already_carries_the_change() {
        let store = std::sync::Arc::new(SlowStore::default());
        let services = CoreServices::new(CoreConfig::default()).unwrap().with_state_store(store.clone());
        let ctx = services.new_session("s");
        ctx.registers.set(RegisterWrite::new("k", json!("v"), Origin::User, "register_set")).unwrap();
        let first = tokio::spawn({
            let ctx = ctx.clone();
            async move { ctx.persist().await }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        // Nothing changed since the first save's snapshot: this call's change is in a save still running.
        ctx.persist().await.unwrap();
        assert_eq!(store.finished.load(std::sync::atomic::Ordering::SeqCst), 1, "answered only once it is saved");
        first.await.unwrap().unwrap();
    }

    /// A store whose writer works on its own (like the SQLite group-commit writer): a save a caller stops waiting for
    /// is still written, with the revision check.
    #[derive(Debug, Default)]
    struct DetachedStore {
        saved: std::sync::Arc<parking_lot::Mutex<u64>>,
    }

    impl SessionStateStore for DetachedStore {
        fn save_state(&self, id: &str, revision: u64, _: StateDelta) -> BoxFuture<'static, Result<(), ToolError>> {
            let saved = std::sync::Arc::clone(&self.saved);
            let id = id.to_owned();
            let writer = tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(50)).await;
                let mut at = saved.lock();
                if *at + 1 != revision {
                    return Err(ToolError::new(
                        ErrorCode::SessionConflict,
                        format!("{id}: revision {revision} after {at}"),
                    ));
                }
                *at = revision;
                Ok(())
            });
            Box::pin(async move { writer.await.unwrap_or_else(|e| Err(ToolError::internal(e.to_string()))) })
        }
    }

    #[tokio::test]
    async fn a_caller_that_goes_away_mid_save_leaves_the_session_usable() {
        let store = std::sync::Arc::new(DetachedStore::default());
        let services = CoreServices::new(CoreConfig::default()).unwrap().with_state_store(store.clone());
        let ctx = services.new_session("s");
        ctx.registers.set(RegisterWrite::new("a", json!("1"), Origin::User, "register_set")).unwrap();
        // The HTTP client went away: the request's future is dropped while its save is being written.
        assert!(tokio::time::timeout(Duration::from_millis(10), ctx.persist()).await.is_err());
        // The next calls on the session save, each its own revision; none is refused as another process's.
        for (i, key) in ["b", "c", "d"].into_iter().enumerate() {
            ctx.registers.set(RegisterWrite::new(key, json!("v"), Origin::User, "register_set")).unwrap();
            ctx.persist().await.unwrap_or_else(|e| panic!("save {i} after the dropped one: {e:?}"));
        }
        assert_eq!(*store.saved.lock(), 4, "the dropped save counted, then three more");
        assert!(!ctx.is_superseded());
    }

    /// A store that keeps what it is given, as a real one would, and each save's part names and bytes.
    #[derive(Debug, Default)]
    struct RecordingStore {
        held: parking_lot::Mutex<StoredState>,
        saves: parking_lot::Mutex<Vec<(Vec<String>, usize)>>,
    }

    impl SessionStateStore for RecordingStore {
        fn save_state(&self, _: &str, revision: u64, delta: StateDelta) -> BoxFuture<'static, Result<(), ToolError>> {
            let mut held = self.held.lock();
            assert_eq!(held.revision + 1, revision);
            held.revision = revision;
            let bytes = delta.parts.iter().map(|(n, v)| n.len() + v.as_ref().map_or(0, String::len)).sum();
            self.saves.lock().push((delta.parts.iter().map(|(n, _)| n.clone()).collect(), bytes));
            for (name, value) in delta.parts {
                match value {
                    Some(v) => held.parts.insert(name, v),
                    None => held.parts.remove(&name),
                };
            }
            Box::pin(std::future::ready(Ok(())))
        }
    }

    #[tokio::test]
    async fn a_save_writes_only_what_changed_whatever_the_sessions_size() {
        let store = std::sync::Arc::new(RecordingStore::default());
        let services = CoreServices::new(CoreConfig::default()).unwrap().with_state_store(store.clone());
        let ctx = services.new_session("s");
        for i in 0..250 {
            let value = json!(format!("{i:04}{}", "x".repeat(2044)));
            ctx.registers.set(RegisterWrite::new(format!("r{i}"), value, Origin::User, "register_set")).unwrap();
        }
        for i in 0..200 {
            ctx.context_bank.scan_input(&format!("message {i}: swap 0.{i:03} ETH for USDC"));
        }
        ctx.persist().await.unwrap();
        let first = store.saves.lock().last().cloned().unwrap();
        assert_eq!(first.0.len(), 251, "every register and the bank: {:?}", &first.0[..3]);
        assert!(first.1 > 500_000, "{} bytes", first.1);

        // One register written: one part, about its own size.
        ctx.registers.set(RegisterWrite::new("note", json!("v"), Origin::User, "register_set")).unwrap();
        ctx.persist().await.unwrap();
        let (names, bytes) = store.saves.lock().last().cloned().unwrap();
        assert_eq!(names, ["r:note"]);
        assert!(bytes < 400, "{bytes} bytes for one small register");
        // A removal removes its part; a message rewrites the bank, not the registers.
        ctx.registers.remove("r7");
        ctx.persist().await.unwrap();
        assert_eq!(store.saves.lock().last().unwrap().0, ["r:r7"]);
        ctx.context_bank.scan_input("send 5 USDC");
        ctx.persist().await.unwrap();
        assert_eq!(store.saves.lock().last().unwrap().0, ["bank"]);
        // Nothing changed: nothing written.
        let count = store.saves.lock().len();
        ctx.persist().await.unwrap();
        assert_eq!(store.saves.lock().len(), count);

        // What the parts add up to is the session.
        let held = store.held.lock().clone();
        let back = services.restore_stored_on("s", &held, None).unwrap();
        assert_eq!(back.registers.keys().len(), 250, "249 of r0…r249 and note");
        assert!(back.registers.get("r7").is_none() && back.registers.get("note").is_some());
        assert!(back.context_bank.has_amount("5", "USDC") && back.context_bank.has_amount("0.199", "ETH"));

        // What no release writes is refused, never half read: a whole state beside parts, a part of a newer release.
        let mixed = StoredState { legacy: Some(services.new_session("x").state().to_json().unwrap()), ..held.clone() };
        assert!(matches!(SessionState::from_stored(&mixed), Err(StateError::Mixed)));
        let mut newer = held;
        newer.parts.insert("from_the_future".into(), "{}".into());
        assert!(matches!(SessionState::from_stored(&newer), Err(StateError::Part(p)) if p == "from_the_future"));
    }

    /// A store whose saves wait until the test lets them go, counting them.
    #[derive(Debug, Default)]
    struct GatedStore {
        gate: std::sync::Arc<tokio::sync::Notify>,
        saves: std::sync::atomic::AtomicUsize,
    }

    impl SessionStateStore for GatedStore {
        fn save_state(&self, _: &str, _: u64, _: StateDelta) -> BoxFuture<'static, Result<(), ToolError>> {
            self.saves.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let gate = std::sync::Arc::clone(&self.gate);
            Box::pin(async move {
                gate.notified().await;
                Ok(())
            })
        }
    }

    #[tokio::test]
    async fn a_read_saves_nothing_and_never_waits_for_a_write_in_progress() {
        let store = std::sync::Arc::new(GatedStore::default());
        let services = CoreServices::new(CoreConfig::default()).unwrap().with_state_store(store.clone());
        let registry = crate::ToolRegistry::new();
        crate::builtin::register_core_tools(&registry).unwrap();
        let ctx = services.new_session("s");
        let write = |key: &'static str| {
            let (registry, ctx) = (registry.clone(), ctx.clone());
            tokio::spawn(async move { registry.call("register_set", json!({"key": key, "value": "v"}), &ctx).await })
        };
        let writing = write("note_a");
        while store.saves.load(std::sync::atomic::Ordering::SeqCst) == 0 {
            tokio::task::yield_now().await;
        }
        // The write's save is held: a read of the same session answers at once, and saves nothing.
        let read = registry.call("register_get", json!({"key": "note_a"}), &ctx);
        let read = tokio::time::timeout(Duration::from_secs(5), read).await.expect("the read waited for the write");
        assert_eq!(read.unwrap()["value"], "v");
        assert_eq!(store.saves.load(std::sync::atomic::Ordering::SeqCst), 1, "the read saved nothing");
        store.gate.notify_one();
        writing.await.unwrap().unwrap();
        // A second write is saved (its own revision), and a read after it saves nothing either.
        let second = write("note_b");
        while store.saves.load(std::sync::atomic::Ordering::SeqCst) < 2 {
            tokio::task::yield_now().await;
        }
        store.gate.notify_one();
        second.await.unwrap().unwrap();
        registry.call("register_get", json!({"key": "note_b"}), &ctx).await.unwrap();
        assert_eq!(store.saves.load(std::sync::atomic::Ordering::SeqCst), 2);
    }
}

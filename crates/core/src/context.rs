//! The tool context: one session's registers, context bank and event bus, plus the shared configuration.
//!
//! [`CoreServices`] holds what every session shares (configuration, the context scanner, register declarations);
//! [`ToolContext`] is one session, cheap to clone. Other layers attach their per-session state as typed
//! [`Extensions`] rather than widening this type.

use crate::config::CoreConfig;
use crate::confirm::{Confirmations, UserDecisions};
use crate::context_bank::{ContextBank, ContextScanner, ScannerBuildError};
use crate::error::{ErrorCode, ToolError};
use crate::event::EventBus;
use crate::registers::{Origin, RegisterDeclarations, RegisterEntry, RegisterStore};
use crate::saving::{Parts, Saves};
use crate::session_state::{STATE_VERSION, SessionState, SessionStateStore};
use parking_lot::RwLock;
use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::sync::Arc;
pub use tokio_util::sync::CancellationToken;

/// Runs when a session is opened, so other layers can attach their per-session state (an intrinsic-register
/// provider, a journal handle…).
pub trait SessionHook: Send + Sync {
    /// Prepares a freshly opened session.
    fn on_new_session(&self, ctx: &ToolContext);
}

/// What every session of a runtime shares.
#[derive(Clone)]
pub struct CoreServices {
    /// Networks, tokens and register declarations.
    pub config: Arc<CoreConfig>,
    /// The declarations every session's store enforces (with validators installed by other layers).
    pub declarations: Arc<RegisterDeclarations>,
    /// The context-bank scanner built from the token and network tables.
    pub scanner: Arc<ContextScanner>,
    hooks: Vec<Arc<dyn SessionHook>>,
    state_store: Option<Arc<dyn SessionStateStore>>,
    relay: Option<Arc<dyn crate::event::EventRelay>>,
}

impl fmt::Debug for CoreServices {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CoreServices").field("hooks", &self.hooks.len()).finish_non_exhaustive()
    }
}

impl CoreServices {
    /// Builds the shared services from a configuration. `declarations` defaults to the configuration's.
    pub fn new(config: CoreConfig) -> Result<Self, ScannerBuildError> {
        let scanner =
            Arc::new(ContextScanner::new(&config.tokens, &config.networks)?.with_decimal_comma(config.decimal_comma));
        let declarations = Arc::new(config.registers.clone());
        Ok(Self { config: Arc::new(config), declarations, scanner, hooks: Vec::new(), state_store: None, relay: None })
    }

    /// Lets every new session's context bank record which of the address book's `names` a message names (see
    /// [`ContextScanner::with_recipient_names`]); installed by the layer that owns the address book. The scanner is
    /// built again from the same tables as in [`CoreServices::new`].
    pub fn with_recipient_names(mut self, names: impl IntoIterator<Item = String>) -> Result<Self, ScannerBuildError> {
        let scanner = ContextScanner::new(&self.config.tokens, &self.config.networks)?;
        self.scanner = Arc::new(scanner.with_decimal_comma(self.config.decimal_comma).with_recipient_names(names));
        Ok(self)
    }

    /// Replaces the declarations (for example with validators installed).
    pub fn with_declarations(mut self, declarations: RegisterDeclarations) -> Self {
        self.declarations = Arc::new(declarations);
        self
    }

    /// Adds a hook run on every new session.
    pub fn with_hook(mut self, hook: Arc<dyn SessionHook>) -> Self {
        self.hooks.push(hook);
        self
    }

    /// Saves every session's state to `store` as it changes (see [`crate::session_state`]).
    pub fn with_state_store(mut self, store: Arc<dyn SessionStateStore>) -> Self {
        self.state_store = Some(store);
        self
    }

    /// Relays every session's events to the other instances sharing the database, and theirs to this one's
    /// subscribers (see [`crate::event::EventRelay`]).
    pub fn with_event_relay(mut self, relay: Arc<dyn crate::event::EventRelay>) -> Self {
        self.relay = Some(relay);
        self
    }

    /// The capability to decide confirmations, for front ends (a user channel). Tools never get it: a tool only sees
    /// a [`ToolContext`].
    pub fn user_decisions(&self) -> UserDecisions {
        UserDecisions::new()
    }

    /// Opens a fresh session and runs every hook on it.
    pub fn new_session(&self, session_id: &str) -> ToolContext {
        self.open_on(session_id, 0, None)
    }

    /// Opens session `session_id` with the state an earlier process saved as revision `revision`: its registers
    /// (intrinsic ones resolve again), context bank and confirmations, with their original times, so what was
    /// stale or expired stays so. Runs every hook, as for a new session.
    pub fn restore_session(&self, session_id: &str, state: SessionState, revision: u64) -> ToolContext {
        self.restore_session_on(session_id, state, revision, None)
    }

    /// [`CoreServices::restore_session`], publishing on `events` when given: the bus of an older copy of the same
    /// session, so whoever subscribed to it (a WebSocket client) goes on receiving the new copy's events.
    pub fn restore_session_on(
        &self,
        session_id: &str,
        state: SessionState,
        revision: u64,
        events: Option<EventBus>,
    ) -> ToolContext {
        let ctx = self.open_on(session_id, revision, events);
        let entries = state.registers.into_iter().filter(|(_, e)| e.origin() != Origin::Intrinsic);
        ctx.registers.restore(entries);
        ctx.context_bank.restore(state.context_bank, state.authorizations, state.latest_message);
        ctx.confirmations.restore(state.confirmations);
        ctx.notes.restore(state.notes);
        // What was loaded counts as saved: a copy that changes nothing writes nothing (a new revision here would
        // refuse another instance's next save of the same session).
        ctx.registers.take_dirty();
        if let Some(saves) = &ctx.persistence {
            saves.loaded(ctx.parts(), ctx.state_version());
        }
        ctx
    }

    /// [`CoreServices::restore_session_on`] for a state a store holds ([`crate::session_state::StoredState`]): a
    /// whole state in the form before parts is restored too, and its every part written by the session's next save.
    pub fn restore_stored_on(
        &self,
        session_id: &str,
        stored: &crate::session_state::StoredState,
        events: Option<EventBus>,
    ) -> Result<ToolContext, crate::session_state::StateError> {
        let (state, legacy) = SessionState::from_stored(stored)?;
        let ctx = self.restore_session_on(session_id, state, stored.revision, events);
        // A whole state of the form before parts: the first save that changes something writes every part. A copy
        // that only reads writes nothing (a new revision would refuse another instance's next save).
        if legacy {
            ctx.registers.mark_all_dirty();
            if let Some(saves) = &ctx.persistence {
                saves.loaded(Parts::UNSAVED, ctx.state_version());
            }
        }
        Ok(ctx)
    }

    /// A new, empty session publishing on `events` when given (the bus of an older copy of it: see
    /// [`CoreServices::restore_session_on`]).
    pub fn new_session_on(&self, session_id: &str, events: Option<EventBus>) -> ToolContext {
        self.open_on(session_id, 0, events)
    }

    /// The relay that carries events to the other instances sharing the database, if any: with it, a bus made
    /// for a session this instance has not loaded (`EventBus::new(id).with_relay(relay)`) still reaches the
    /// instances that have.
    pub fn event_relay(&self) -> Option<Arc<dyn crate::event::EventRelay>> {
        self.relay.clone()
    }

    fn open_on(&self, session_id: &str, revision: u64, events: Option<EventBus>) -> ToolContext {
        let events = match (events, &self.relay) {
            (Some(events), _) => events,
            (None, Some(relay)) => EventBus::new(session_id).with_relay(Arc::clone(relay)),
            (None, None) => EventBus::new(session_id),
        };
        let ctx = ToolContext {
            session_id: Arc::from(session_id),
            registers: RegisterStore::new(Arc::clone(&self.declarations), events.clone()),
            context_bank: ContextBank::new(Arc::clone(&self.scanner), events.clone()),
            confirmations: Confirmations::new(events.clone()),
            notes: crate::notes::SessionNotes::default(),
            events,
            config: Arc::clone(&self.config),
            extensions: Extensions::default(),
            cancel: CancellationToken::new(),
            persistence: self.state_store.as_ref().map(|store| Arc::new(Saves::new(Arc::clone(store), revision))),
        };
        for hook in &self.hooks {
            hook.on_new_session(&ctx);
        }
        ctx
    }
}

/// Typed per-session state attached by other layers (an agent handle, pending confirmations, a wallet…).
#[derive(Clone, Default)]
pub struct Extensions {
    map: Arc<RwLock<HashMap<TypeId, Arc<dyn Any + Send + Sync>>>>,
}

impl fmt::Debug for Extensions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Extensions").field("len", &self.map.read().len()).finish()
    }
}

impl Extensions {
    /// A map of its own holding what `self` holds now: what is attached to either afterwards stays there.
    pub fn fork(&self) -> Extensions {
        Extensions { map: Arc::new(RwLock::new(self.map.read().clone())) }
    }

    /// Attaches `value`, replacing any earlier value of the same type.
    pub fn insert<T: Any + Send + Sync>(&self, value: T) {
        self.map.write().insert(TypeId::of::<T>(), Arc::new(value));
    }

    /// The attached value of type `T`.
    pub fn get<T: Any + Send + Sync>(&self) -> Option<Arc<T>> {
        let any = self.map.read().get(&TypeId::of::<T>()).cloned()?;
        any.downcast::<T>().ok()
    }
}

/// The error of a call that was stopped: `when` says where (`before …`, `while …`).
fn cancelled(when: &str) -> ToolError {
    ToolError::new(ErrorCode::Cancelled, format!("cancelled {when}; nothing was written"))
}

/// One session, as every tool sees it. Clones share state.
#[derive(Debug, Clone)]
pub struct ToolContext {
    /// The session id.
    pub session_id: Arc<str>,
    /// The session's registers.
    pub registers: RegisterStore,
    /// The session's context bank.
    pub context_bank: ContextBank,
    /// The session's pending confirmations.
    pub confirmations: Confirmations,
    /// The session's event bus.
    pub events: EventBus,
    /// Networks, tokens, declarations.
    pub config: Arc<CoreConfig>,
    /// Per-session state of other layers.
    pub extensions: Extensions,
    /// Small values other layers keep with the session across restarts ([`crate::notes`]).
    pub notes: crate::notes::SessionNotes,
    /// Cancels the call in flight: the front end's stop (the turn's token, given with [`ToolContext::with_cancel`]).
    /// A session's own context never cancels. Tools stop only where they have written nothing, through
    /// [`ToolContext::until_cancelled`] or [`ToolContext::check_cancelled`].
    pub cancel: CancellationToken,
    /// Where the session's state goes and what was last saved.
    persistence: Option<Arc<Saves>>,
}

impl ToolContext {
    /// The same session, with calls cancelled by `token` (a turn's stop). Everything else is shared with `self`.
    ///
    /// ```
    /// use holdfast_core::config::CoreConfig;
    /// use holdfast_core::{CoreServices, ErrorCode};
    /// use holdfast_core::context::CancellationToken;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let session = CoreServices::new(CoreConfig::default())?.new_session("doc");
    /// let stop = CancellationToken::new();
    /// let turn = session.with_cancel(stop.clone());
    /// stop.cancel();
    /// // A wait that has written nothing yet gives way to the stop…
    /// let slow = tokio::time::sleep(std::time::Duration::from_secs(3600));
    /// let err = turn.until_cancelled("waiting", slow).await.unwrap_err();
    /// assert_eq!(err.code, ErrorCode::Cancelled);
    /// // …and the session itself is not cancelled.
    /// assert!(session.check_cancelled("anything").is_ok());
    /// # Ok(())
    /// # }
    /// ```
    pub fn with_cancel(&self, token: CancellationToken) -> ToolContext {
        ToolContext { cancel: token, ..self.clone() }
    }

    /// The same session, with `value` attached for calls made through the returned context only: the session's other
    /// extensions are copied, and neither what this call attaches nor what the session attaches meanwhile (another
    /// front end's turn) reaches the other.
    ///
    /// ```
    /// use holdfast_core::config::CoreConfig;
    /// use holdfast_core::CoreServices;
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let session = CoreServices::new(CoreConfig::default())?.new_session("doc");
    /// let call = session.with_extension(7u32);
    /// session.extensions.insert(8u32);
    /// assert_eq!(call.extensions.get::<u32>().as_deref(), Some(&7));
    /// assert_eq!(session.extensions.get::<u32>().as_deref(), Some(&8));
    /// # Ok(())
    /// # }
    /// ```
    pub fn with_extension<T: std::any::Any + Send + Sync>(&self, value: T) -> ToolContext {
        let extensions = self.extensions.fork();
        extensions.insert(value);
        ToolContext { extensions, ..self.clone() }
    }

    /// `Err(cancelled)` once the call was asked to stop. `what` says what was about to happen (`signing`).
    pub fn check_cancelled(&self, what: &str) -> Result<(), ToolError> {
        if self.cancel.is_cancelled() { Err(cancelled(&format!("before {what}"))) } else { Ok(()) }
    }

    /// Runs `work` unless the call is asked to stop first; then `work` is dropped and `Err(cancelled)` returned.
    /// Only for work that writes nothing until it completes (a fetch, a read, a simulation): what it would have
    /// written is never half-written, because it is dropped before writing.
    pub async fn until_cancelled<T>(&self, what: &str, work: impl Future<Output = T>) -> Result<T, ToolError> {
        tokio::select! {
            biased;
            () = self.cancel.cancelled() => Err(cancelled(&format!("while {what}"))),
            out = work => Ok(out),
        }
    }

    /// A number that changes whenever the session's saved form may have changed (a register written or removed, a
    /// message scanned, an authorization spent or given back, a confirmation asked, decided or withdrawn): the sum
    /// of its parts' change counters, each only ever growing.
    pub fn state_version(&self) -> u64 {
        self.registers
            .version()
            .wrapping_add(self.context_bank.version())
            .wrapping_add(self.confirmations.version())
            .wrapping_add(self.notes.version())
    }

    /// The session's registers, context bank and confirmations as one value.
    pub fn state(&self) -> SessionState {
        let registers = self.registers.snapshot().0.into_iter().filter(|(_, e)| e.origin() != Origin::Intrinsic);
        SessionState {
            version: STATE_VERSION,
            registers: registers.map(|(k, e)| (k, RegisterEntry::clone(&e))).collect(),
            context_bank: self.context_bank.items(),
            latest_message: self.context_bank.latest_message(),
            authorizations: self.context_bank.authorizations(),
            confirmations: self.confirmations.saved(),
            notes: self.notes.all(),
        }
    }

    /// Saves the session's state to the runtime's state store when it changed since the last save; does nothing
    /// without a store. `Ok` means the state is durable.
    ///
    /// Another instance sharing the database is told (`session.saved`, through the event relay), so it replaces
    /// an older copy of the session it may hold.
    pub async fn persist(&self) -> Result<(), ToolError> {
        if let Some(revision) = self.persist_unannounced().await? {
            self.events.announce_save(revision);
        }
        Ok(())
    }

    /// [`ToolContext::persist`] without telling the other instances: for a caller that publishes an event right
    /// after (any event relayed for a session makes the others reload it). The revision of the save that carried
    /// this call's change (its own, or one already on its way), `None` when nothing was unsaved.
    ///
    /// Only what changed since the last save is written: the registers written or removed, the bank, the
    /// confirmations and the notes when their versions moved. A call's write does not grow with the session. Saves
    /// of one session go to the store in the order their calls ended, without waiting for each other's commit (the
    /// store's group commit puts them in one transaction); each caller is answered once the save carrying its
    /// change, and every save before it, is acknowledged. A save that failed makes the ones queued behind it fail
    /// too, without marking the copy superseded; the next save starts again from the revision the store holds.
    pub async fn persist_unannounced(&self) -> Result<Option<u64>, ToolError> {
        let Some(saves) = &self.persistence else { return Ok(None) };
        // Nothing changed since a save that has finished: a read-only call neither locks nor serializes the state.
        if saves.saved_version() == self.state_version() {
            return Ok(None);
        }
        let state = || (self.state_version(), self.parts());
        let delta = |dirty: &std::collections::HashSet<String>, changed| {
            self.delta(dirty, changed).map_err(|e| ToolError::internal(format!("saving the session's state: {e}")))
        };
        saves.save(&self.session_id, &self.registers, state, delta).await
    }

    /// The versions of the parts saved whole.
    fn parts(&self) -> Parts {
        Parts {
            bank: self.context_bank.version(),
            confirmations: self.confirmations.version(),
            notes: self.notes.version(),
        }
    }

    /// The parts a save writes: `dirty`'s registers (a removed or intrinsic one as gone), and the bank, the
    /// confirmations and the notes as `[bank, confirmations, notes]` asks.
    fn delta(
        &self,
        dirty: &std::collections::HashSet<String>,
        [bank, confirmations, notes]: [bool; 3],
    ) -> Result<crate::session_state::StateDelta, serde_json::Error> {
        use crate::session_state::{BANK_PART, CONFIRMATIONS_PART, NOTES_PART, REGISTER_PART_PREFIX};
        let mut parts = Vec::with_capacity(dirty.len() + 2);
        for key in dirty {
            let value = match self.registers.peek(key) {
                Some(entry) if entry.origin() != Origin::Intrinsic => Some(serde_json::to_string(&*entry)?),
                _ => None,
            };
            parts.push((format!("{REGISTER_PART_PREFIX}{key}"), value));
        }
        if bank {
            parts.push((BANK_PART.to_owned(), Some(self.context_bank.saved_part()?)));
        }
        if confirmations {
            parts.push((CONFIRMATIONS_PART.to_owned(), Some(serde_json::to_string(&self.confirmations.saved())?)));
        }
        if notes {
            parts.push((NOTES_PART.to_owned(), Some(self.notes.saved_part()?)));
        }
        Ok(crate::session_state::StateDelta { parts, copy: 0, follows: false })
    }

    /// Scans one message the user wrote into the context bank (invariant 11: only the user's own words feed it)
    /// and saves the session's state. Returns the items that were new.
    pub async fn scan_user_input(&self, user_text: &str) -> Result<Vec<crate::ContextItem>, ToolError> {
        self.scan_user_message(user_text, &[]).await
    }

    /// Asks the user to confirm the call of `tool` with `params`, whose action is `fingerprint` (`summary` is what
    /// the user sees, `reason` why), unless an approval of it stands that this call may use: the re-run of that
    /// approval, or a call in a turn the user started (`confirm::ApprovedRun`), and `covers` accepts the summary the
    /// user approved. `Ok` uses the approval; otherwise `confirmation_required` with the new request's id. The one way
    /// a tool asks (invariant 7).
    ///
    /// ```
    /// use holdfast_core::config::CoreConfig;
    /// use holdfast_core::confirm::TurnStarter;
    /// use holdfast_core::{CoreServices, UserChannel, UserDecision};
    /// use serde_json::json;
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let services = CoreServices::new(CoreConfig::default())?;
    /// let session = services.new_session("doc");
    /// let other = session.with_extension(TurnStarter::Other("agent 'b'".into()));
    /// let ask = |ctx: &holdfast_core::ToolContext| ctx.require_confirmation("t", &json!({}), "fp", json!({}), "why", |_| true);
    /// let asked = ask(&other).unwrap_err();
    /// let id = asked.details.ok_or("no details")?["confirmation_id"].as_str().ok_or("no id")?.to_owned();
    /// let approved = services.user_decisions().decide(&session.confirmations, UserChannel::Replay, &id, UserDecision::Approve)?;
    /// // Another agent's turn repeating the call is asked again; the approval's own re-run uses it.
    /// assert!(ask(&other).is_err());
    /// assert!(!other.has_approval("t", "fp"), "not that turn's to use");
    /// assert!(session.has_approval("t", "fp"), "it still stands");
    /// let run = other.with_extension(services.user_decisions().approved_run(&approved));
    /// assert!(run.has_approval("t", "fp"));
    /// assert!(ask(&run).is_ok());
    /// assert!(!run.has_approval("t", "fp"), "used once");
    /// # Ok(())
    /// # }
    /// ```
    pub fn require_confirmation(
        &self,
        tool: &str,
        params: &serde_json::Value,
        fingerprint: &str,
        summary: serde_json::Value,
        reason: &str,
        covers: impl Fn(&serde_json::Value) -> bool,
    ) -> Result<(), ToolError> {
        let usable = |c: &crate::Confirmation| crate::confirm::ApprovedRun::may_use(self, c) && covers(&c.summary);
        self.confirmations.require_covered(tool, params, fingerprint, summary, reason, usable)
    }

    /// Whether an approval of `tool`'s action `fingerprint` stands that a call made through this context may use
    /// (see [`ToolContext::require_confirmation`]); nothing is used.
    pub fn has_approval(&self, tool: &str, fingerprint: &str) -> bool {
        self.confirmations.has_approved(tool, fingerprint, |c| crate::confirm::ApprovedRun::may_use(self, c))
    }

    /// [`ToolContext::scan_user_input`] for a message into which the user pasted `pasted` (see
    /// [`crate::ContextBank::scan_pasted`]).
    pub async fn scan_user_message(
        &self,
        user_text: &str,
        pasted: &[String],
    ) -> Result<Vec<crate::ContextItem>, ToolError> {
        let added = self.context_bank.scan_pasted(user_text, pasted);
        self.persist().await?;
        Ok(added)
    }

    /// Waits until every save this copy handed to the store has been answered (a copy about to be replaced by one
    /// read from the store: the reading then sees them).
    pub async fn saves_settled(&self) {
        if let Some(saves) = &self.persistence {
            saves.settled().await;
        }
    }

    /// True when another process saved this session after this copy was loaded (a save answered
    /// `session_conflict`): the copy must be replaced by one restored from the store.
    pub fn is_superseded(&self) -> bool {
        self.persistence.as_ref().is_some_and(|saves| saves.is_superseded())
    }

    /// True when nothing outside the runtime's own table of sessions holds this session (no turn, request or
    /// subscriber uses it), so it can be unloaded from memory and restored from its saved state later.
    pub fn is_idle(&self) -> bool {
        !self.in_use() && !self.events.has_local_subscribers()
    }

    /// The revision of the state this copy last saved or loaded; `None` without a store, or while a save of it is
    /// under way.
    pub fn saved_revision(&self) -> Option<u64> {
        self.persistence.as_ref().and_then(|saves| saves.saved_revision())
    }

    /// True when a turn or request holds this session (a clone of it exists outside the runtime's table).
    pub fn in_use(&self) -> bool {
        Arc::strong_count(&self.session_id) > 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_are_isolated_and_clones_share() {
        let services = CoreServices::new(CoreConfig::default()).unwrap();
        let a = services.new_session("a");
        let b = services.new_session("b");
        a.context_bank.scan_input("5 USDC");
        assert!(b.context_bank.is_empty());
        assert!(!a.clone().context_bank.is_empty());
        a.extensions.insert(7u32);
        assert_eq!(a.clone().extensions.get::<u32>().as_deref(), Some(&7));
        assert!(b.extensions.get::<u32>().is_none());
    }
}

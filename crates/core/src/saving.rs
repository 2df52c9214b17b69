//! The order of one session's saves: a save's revision is given, and its place in the store's queue taken, in one
//! step under a short lock, and the store is then awaited outside it. So calls on one session that changed different
//! registers do not wait for each other's commit: each save goes to the store as soon as its call is done, and the
//! store's group commit puts them in one transaction. What a caller is told is still what is true: `Ok` only once the
//! save carrying its change, and every save before it, is acknowledged by the store.
//!
//! The bookkeeping that makes this safe:
//!
//! - Outcomes are applied in revision order, whatever order the store's answers arrive in ([`Saves::apply`]).
//! - A save the store accepted as revision `r` means the store holds every revision up to `r`.
//! - A save that failed (an I/O error, not a refusal) leaves a gap: the saves queued behind it are refused as out of
//!   order. Those refusals are the gap's, not another process's: the session is not marked superseded, their register
//!   keys go back to the next save, and no new save is given a revision until the queue behind the gap has drained.
//!   The next one then starts again from the revision the store holds.
//! - A refusal with no failure before it is another process's save: the copy is superseded and must be reloaded.
//!   The saves it queued behind the refused one are refused by the store too: a pipelined save carries its copy's
//!   number and says it follows, and the store writes it only on top of that copy's own save, so none is written on
//!   top of the other's state.
//! - Each save's outcome is recorded by a task of its own, so a caller that goes away (an HTTP client that
//!   disconnects) neither cancels the write nor loses the record of it. A task that ends without an answer (the
//!   runtime shutting down) records a failure.

use crate::error::{ErrorCode, ToolError};
use crate::registers::RegisterStore;
use crate::session_state::{SessionStateStore, StateDelta};
use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use tokio::sync::watch;

/// No state of this copy is known to be saved yet.
pub(crate) const UNSAVED: u64 = u64::MAX;

/// The versions of the parts saved whole (the context bank, the confirmations, the notes) as of one save.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Parts {
    pub(crate) bank: u64,
    pub(crate) confirmations: u64,
    pub(crate) notes: u64,
}

impl Parts {
    /// Every part still to be written.
    pub(crate) const UNSAVED: Parts = Parts { bank: UNSAVED, confirmations: UNSAVED, notes: UNSAVED };

    /// Which of `[bank, confirmations, notes]` differ from `before`.
    pub(crate) fn changed_since(self, before: Parts) -> [bool; 3] {
        [self.bank != before.bank, self.confirmations != before.confirmations, self.notes != before.notes]
    }
}

/// What one save's caller learns: `Ok`, or why its change is not known to be saved.
type Answer = watch::Receiver<Option<Result<(), ToolError>>>;

/// A session copy's saves: what the store holds, what is on its way there, and the outcomes not yet applied.
pub(crate) struct Saves {
    store: Arc<dyn SessionStateStore>,
    /// This copy's number, unique in the process: its saves carry it ([`StateDelta::copy`]).
    copy: u64,
    book: parking_lot::Mutex<Book>,
    /// Another process saved this session since: this copy is out of date and must not be used further.
    superseded: AtomicBool,
    /// [`crate::ToolContext::state_version`] of the last state known to be saved ([`UNSAVED`] before one is): a call
    /// that changed nothing since returns at once, without the lock (its cost is free of the session's size).
    saved_version: AtomicU64,
}

impl std::fmt::Debug for Saves {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Saves").field("store", &self.store).finish_non_exhaustive()
    }
}

struct Book {
    /// The last revision the store acknowledged from this copy (or that was loaded).
    saved: u64,
    /// The parts' versions in that revision.
    saved_parts: Parts,
    /// The last revision handed to the store (`≥ saved`).
    issued: u64,
    /// The parts' versions in that revision: what the next save's parts are measured against.
    issued_parts: Parts,
    /// Every save up to this revision has had its outcome applied.
    applied: u64,
    /// Outcomes that arrived before an earlier save's, by revision.
    pending: BTreeMap<u64, Outcome>,
    /// The first save since the last acknowledged one that failed, and why: the saves behind it are refused.
    failure: Option<ToolError>,
    /// The answer of the last save handed to the store, for callers whose change it carries.
    last: Option<Answer>,
}

/// One save's outcome, with what applying it needs.
struct Outcome {
    result: Result<(), ToolError>,
    parts: Parts,
    version: u64,
    dirty: HashSet<String>,
    registers: RegisterStore,
    answer: watch::Sender<Option<Result<(), ToolError>>>,
}

/// What a caller of [`Saves::save`] does next.
enum Step {
    /// Nothing of this copy is unsaved.
    Done,
    /// Wait for this answer: a save that carries the caller's change, with its revision.
    Wait(Answer, u64),
    /// A failed save's queue is draining: wait for its last answer, then try again.
    Drain(Answer),
}

impl Saves {
    /// Saves for a copy loaded at `revision` (0: nothing saved yet).
    pub(crate) fn new(store: Arc<dyn SessionStateStore>, revision: u64) -> Self {
        let parts = Parts { bank: 0, confirmations: 0, notes: 0 };
        /// The next copy's number (0 is "unknown").
        static COPIES: AtomicU64 = AtomicU64::new(1);
        Self {
            store,
            copy: COPIES.fetch_add(1, SeqCst),
            book: parking_lot::Mutex::new(Book {
                saved: revision,
                saved_parts: parts,
                issued: revision,
                issued_parts: parts,
                applied: revision,
                pending: BTreeMap::new(),
                failure: None,
                last: None,
            }),
            superseded: AtomicBool::new(false),
            saved_version: AtomicU64::new(UNSAVED),
        }
    }

    /// Records a loaded state as saved: its parts' versions and the copy's state version.
    pub(crate) fn loaded(&self, parts: Parts, version: u64) {
        let mut book = self.book.lock();
        (book.saved_parts, book.issued_parts) = (parts, parts);
        self.saved_version.store(version, SeqCst);
    }

    pub(crate) fn saved_version(&self) -> u64 {
        self.saved_version.load(SeqCst)
    }

    pub(crate) fn is_superseded(&self) -> bool {
        self.superseded.load(SeqCst)
    }

    /// The revision the store holds from this copy; `None` while a save of it is under way.
    pub(crate) fn saved_revision(&self) -> Option<u64> {
        let book = self.book.lock();
        (book.applied == book.issued).then_some(book.saved)
    }

    /// Saves what changed, and returns once it is durable: the revision of the save that carried it (this call's
    /// own, or one on its way that already did), `None` when nothing was unsaved.
    ///
    /// `state` gives the copy's state version and parts; `delta` builds the save from the registers written and
    /// which of `[bank, confirmations, notes]` changed.
    pub(crate) async fn save(
        self: &Arc<Self>,
        session_id: &str,
        registers: &RegisterStore,
        state: impl Fn() -> (u64, Parts),
        delta: impl Fn(&HashSet<String>, [bool; 3]) -> Result<StateDelta, ToolError>,
    ) -> Result<Option<u64>, ToolError> {
        loop {
            let step = self.step(session_id, registers, &state, &delta)?;
            let (mut answer, revision) = match step {
                Step::Done => return Ok(None),
                Step::Drain(mut answer) => {
                    if answer.wait_for(Option::is_some).await.is_err() {
                        return Err(interrupted());
                    }
                    continue;
                }
                Step::Wait(answer, revision) => (answer, revision),
            };
            // Waiting is cancel-safe: the save goes on, and its outcome is recorded, without this caller.
            let outcome = match answer.wait_for(Option::is_some).await {
                Ok(outcome) => outcome.clone().unwrap_or_else(|| Err(interrupted())),
                Err(_) => Err(interrupted()),
            };
            return outcome.map(|()| Some(revision));
        }
    }

    /// Waits until every save handed to the store has its outcome applied.
    pub(crate) async fn settled(&self) {
        loop {
            let mut last = {
                let book = self.book.lock();
                match &book.last {
                    Some(last) if book.applied < book.issued => last.clone(),
                    _ => return,
                }
            };
            if last.wait_for(Option::is_some).await.is_err() {
                return;
            }
        }
    }

    /// Under the lock, without waiting: hands a save of what changed to the store (its place in the store's order is
    /// taken here), or finds the save that already carries it.
    fn step(
        self: &Arc<Self>,
        session_id: &str,
        registers: &RegisterStore,
        state: &impl Fn() -> (u64, Parts),
        delta: &impl Fn(&HashSet<String>, [bool; 3]) -> Result<StateDelta, ToolError>,
    ) -> Result<Step, ToolError> {
        let mut book = self.book.lock();
        // Read before the changes are taken: a change made after it is seen as unsaved by the next call.
        let (version, parts) = state();
        if self.saved_version() == version {
            return Ok(Step::Done);
        }
        if self.is_superseded() {
            return Err(superseded(session_id));
        }
        if book.failure.is_some() {
            if book.applied < book.issued
                && let Some(last) = &book.last
            {
                return Ok(Step::Drain(last.clone()));
            }
            // Every save behind the failed one has its outcome: start again from what the store holds.
            book.failure = None;
            (book.issued, book.applied, book.issued_parts) = (book.saved, book.saved, book.saved_parts);
        }
        let dirty = registers.take_dirty();
        // Pipelined when a save of this copy is still unanswered: the store writes it only on top of that one.
        let follows = book.applied < book.issued;
        let delta = match delta(&dirty, parts.changed_since(book.issued_parts)) {
            Ok(delta) => StateDelta { copy: self.copy, follows, ..delta },
            Err(e) => {
                registers.mark_dirty(dirty);
                return Err(e);
            }
        };
        if delta.parts.is_empty() {
            // Nothing to write: the change is in a save on its way (wait for it), or there was none to save.
            return Ok(match &book.last {
                Some(last) if book.applied < book.issued => Step::Wait(last.clone(), book.issued),
                _ => {
                    self.saved_version.store(version, SeqCst);
                    Step::Done
                }
            });
        }
        let revision = book.issued + 1;
        (book.issued, book.issued_parts) = (revision, parts);
        let (answer, waiting) = watch::channel(None);
        book.last = Some(waiting.clone());
        // A store that panics here must not leave a revision that never gets an outcome (every later caller would
        // wait for it): the panic is this save's failure.
        let store = &self.store;
        let write =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| store.save_state(session_id, revision, delta)))
                .unwrap_or_else(|_| {
                    // Failed now, under the lock: the saves after it wait for its outcome before starting again.
                    let failed = ToolError::internal("saving the session's state: the store failed");
                    book.failure = Some(failed.clone());
                    Box::pin(std::future::ready(Err(failed)))
                });
        let mut record = Record {
            saves: Arc::clone(self),
            revision,
            outcome: Some(Outcome {
                result: Err(interrupted()),
                parts,
                version,
                dirty,
                registers: registers.clone(),
                answer,
            }),
        };
        drop(book);
        tokio::spawn(async move {
            let result = write.await;
            if let Some(outcome) = &mut record.outcome {
                outcome.result = result;
            }
        });
        Ok(Step::Wait(waiting, revision))
    }

    /// Takes save `revision`'s outcome, and applies every outcome that is now next in order.
    fn apply(&self, revision: u64, outcome: Outcome) {
        let mut guard = self.book.lock();
        let book = &mut *guard;
        if revision != book.applied + 1 {
            // An earlier save's outcome is still to come: this one waits for it.
            book.pending.insert(revision, outcome);
            return;
        }
        let mut next = Some(outcome);
        while let Some(outcome) = next.take() {
            book.applied += 1;
            let revision = book.applied;
            let answer = match outcome.result {
                Ok(()) => {
                    // The store holds this revision, so every one before it: the queue is sound again.
                    (book.saved, book.saved_parts, book.failure) = (revision, outcome.parts, None);
                    self.saved_version.store(outcome.version, SeqCst);
                    Ok(())
                }
                Err(e) => {
                    let answer = match &book.failure {
                        // Refused or failed behind a failed save: the gap's doing.
                        Some(first) => first.clone(),
                        None if e.code == ErrorCode::SessionConflict => {
                            self.superseded.store(true, SeqCst);
                            e
                        }
                        None => {
                            book.failure = Some(e.clone());
                            e
                        }
                    };
                    // The registers this save carried go to the next one (a superseded copy is not saved again).
                    if !self.is_superseded() {
                        outcome.registers.mark_dirty(outcome.dirty);
                    }
                    Err(answer)
                }
            };
            outcome.answer.send_replace(Some(answer));
            next = book.pending.remove(&(book.applied + 1));
        }
        // An emptied map keeps its node (about 2 KiB here) and an idle session its last answer's channel: both are
        // let go, so a loaded session costs what it did before its saves were pipelined.
        if book.pending.is_empty() {
            book.pending = BTreeMap::new();
        }
        if book.applied == book.issued {
            book.last = None;
        }
    }
}

/// Applies a save's outcome when dropped: after the store answered, or as a failure when the task recording it
/// ended first (the runtime shutting down, a panic in the store).
struct Record {
    saves: Arc<Saves>,
    revision: u64,
    outcome: Option<Outcome>,
}

impl Drop for Record {
    fn drop(&mut self) {
        if let Some(outcome) = self.outcome.take() {
            self.saves.apply(self.revision, outcome);
        }
    }
}

fn interrupted() -> ToolError {
    ToolError::internal("saving the session's state: the save stopped before the store answered")
}

pub(crate) fn superseded(id: &str) -> ToolError {
    ToolError::new(
        ErrorCode::SessionConflict,
        format!("session {id} was saved by another holdfast process since this copy was loaded; open it again"),
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use crate::config::CoreConfig;
    use crate::registers::{Origin, RegisterWrite};
    use crate::session_state::StoredState;
    use crate::tool::BoxFuture;
    use crate::{CoreServices, ToolContext};
    use serde_json::json;
    use std::time::Duration;

    /// A store like the real ones: saves applied in the order of the calls, each a compare-and-set on the
    /// revision. Its answers wait until the test lets them go (in whatever order it likes), and the save of
    /// revision `fail` is not written and answered with an I/O error, as a full disk would.
    #[derive(Debug, Default)]
    struct Queue {
        held: parking_lot::Mutex<StoredState>,
        answers: parking_lot::Mutex<Vec<(u64, tokio::sync::oneshot::Sender<()>)>>,
        fail: parking_lot::Mutex<Option<u64>>,
        /// The copy that wrote the revision held: a pipelined save goes only on its own copy's write, as in the
        /// real stores.
        writer: parking_lot::Mutex<u64>,
    }

    impl SessionStateStore for Queue {
        fn save_state(&self, id: &str, revision: u64, delta: StateDelta) -> BoxFuture<'static, Result<(), ToolError>> {
            let mut held = self.held.lock();
            let mut writer = self.writer.lock();
            let result = if *self.fail.lock() == Some(revision) {
                Err(ToolError::internal("disk I/O error"))
            } else if held.revision + 1 != revision || (delta.follows && *writer != delta.copy) {
                Err(ToolError::new(ErrorCode::SessionConflict, format!("{id}: {revision} after {}", held.revision)))
            } else {
                (held.revision, *writer) = (revision, delta.copy);
                for (name, value) in delta.parts {
                    match value {
                        Some(v) => held.parts.insert(name, v),
                        None => held.parts.remove(&name),
                    };
                }
                Ok(())
            };
            let (go, wait) = tokio::sync::oneshot::channel();
            self.answers.lock().push((revision, go));
            Box::pin(async move {
                let _ = wait.await;
                result
            })
        }
    }

    impl Queue {
        /// Waits until `n` saves were handed over and not yet answered.
        async fn queued(&self, n: usize) {
            tokio::time::timeout(Duration::from_secs(10), async {
                while self.answers.lock().len() < n {
                    tokio::time::sleep(Duration::from_millis(2)).await;
                }
            })
            .await
            .expect("saves queued");
        }

        /// Answers every save handed over so far, the newest first.
        fn answer_newest_first(&self) {
            let mut answers = std::mem::take(&mut *self.answers.lock());
            answers.sort_by_key(|(r, _)| std::cmp::Reverse(*r));
            for (_, go) in answers {
                let _ = go.send(());
            }
        }
    }

    fn session(store: &Arc<Queue>) -> (CoreServices, ToolContext) {
        let services = CoreServices::new(CoreConfig::default()).unwrap().with_state_store(Arc::clone(store) as _);
        let ctx = services.new_session("s");
        (services, ctx)
    }

    /// `n` calls on one session, each setting its own register and saving: spawned at once.
    fn writers(
        ctx: &ToolContext,
        keys: impl IntoIterator<Item = String>,
    ) -> Vec<tokio::task::JoinHandle<Result<(), ToolError>>> {
        keys.into_iter()
            .map(|key| {
                let ctx = ctx.clone();
                tokio::spawn(async move {
                    ctx.registers.set(RegisterWrite::new(key, json!("v"), Origin::User, "register_set")).unwrap();
                    ctx.persist().await
                })
            })
            .collect()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn saves_of_one_session_are_handed_over_without_waiting_for_each_other() {
        let store = Arc::new(Queue::default());
        let (services, ctx) = session(&store);
        let calls = writers(&ctx, (0..8).map(|i| format!("k{i}")));
        // Eight calls, none answered yet: several saves are with the store at once (they used to go one at a time,
        // each waiting for the one before it to commit).
        store.queued(2).await;
        tokio::time::sleep(Duration::from_millis(50)).await;
        let queued = store.answers.lock().len();
        assert!(queued >= 2, "{queued} saves handed over before any was answered");
        // Answered newest first: each caller is told "saved" only once every save before its own is acknowledged.
        while !calls.iter().all(tokio::task::JoinHandle::is_finished) {
            store.answer_newest_first();
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        for call in calls {
            call.await.unwrap().unwrap();
        }
        assert!(!ctx.is_superseded());
        assert_eq!(ctx.saved_revision(), Some(store.held.lock().revision));
        let back = services.restore_stored_on("s", &store.held.lock().clone(), None).unwrap();
        assert_eq!(back.registers.keys().len(), 8, "every call's register is saved");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_failed_save_fails_the_ones_behind_it_without_losing_them_or_the_session() {
        let store = Arc::new(Queue::default());
        let (services, ctx) = session(&store);
        ctx.registers.set(RegisterWrite::new("first", json!("v"), Origin::User, "register_set")).unwrap();
        let first = tokio::spawn({
            let ctx = ctx.clone();
            async move { ctx.persist().await }
        });
        store.queued(1).await;
        // Revision 2 fails (not written); 3 and 4 are queued behind it and refused by the store as out of order.
        *store.fail.lock() = Some(2);
        let mut calls = Vec::new();
        for key in ["second", "third", "fourth"] {
            let before = store.answers.lock().len();
            calls.extend(writers(&ctx, [key.to_owned()]));
            store.queued(before + 1).await;
        }
        store.answer_newest_first();
        first.await.unwrap().unwrap();
        for call in calls {
            let e = call.await.unwrap().unwrap_err();
            assert_eq!(e.message, "disk I/O error", "every caller behind the failure is told why");
        }
        // The refusals were the gap's, not another process's: the copy is not superseded, and its next save
        // starts again from revision 2 with everything that was not written.
        assert!(!ctx.is_superseded());
        *store.fail.lock() = None;
        let next = writers(&ctx, ["fifth".to_owned()]);
        store.queued(1).await;
        store.answer_newest_first();
        next.into_iter().next().unwrap().await.unwrap().unwrap();
        assert_eq!(store.held.lock().revision, 2);
        let back = services.restore_stored_on("s", &store.held.lock().clone(), None).unwrap();
        assert_eq!(back.registers.keys(), ["fifth", "first", "fourth", "second", "third"], "nothing lost");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_refusal_with_no_failure_before_it_is_another_processs_save() {
        let store = Arc::new(Queue::default());
        let (_services, ctx) = session(&store);
        // Another process saved revision 1 first; this copy pipelines revisions 1 to 3.
        store.held.lock().revision = 1;
        let mut calls = Vec::new();
        for key in ["first", "second", "third"] {
            let before = store.answers.lock().len();
            calls.extend(writers(&ctx, [key.to_owned()]));
            store.queued(before + 1).await;
        }
        store.answer_newest_first();
        for call in calls {
            assert_eq!(call.await.unwrap().unwrap_err().code, ErrorCode::SessionConflict);
        }
        assert!(ctx.is_superseded(), "the copy is out of date and is reloaded");
        // Its revision 2 would have passed the revision check on top of the other's 1: it was refused instead.
        assert_eq!(store.held.lock().revision, 1);
        assert!(store.held.lock().parts.is_empty(), "nothing of the loser's run is written");
        // Nothing more is handed to the store from this copy.
        ctx.registers.set(RegisterWrite::new("later", json!("v"), Origin::User, "register_set")).unwrap();
        assert_eq!(ctx.persist().await.unwrap_err().code, ErrorCode::SessionConflict);
        assert!(store.answers.lock().is_empty());
    }

    /// A store with a bug: it panics when handed revision 2 the first time.
    #[derive(Debug, Default)]
    struct Panicky {
        held: parking_lot::Mutex<u64>,
        panicked: AtomicBool,
    }

    impl SessionStateStore for Panicky {
        #[allow(clippy::panic)]
        fn save_state(&self, _: &str, revision: u64, _: StateDelta) -> BoxFuture<'static, Result<(), ToolError>> {
            if revision == 2 && !self.panicked.swap(true, SeqCst) {
                panic!("a bug in the store");
            }
            let mut held = self.held.lock();
            let result = if *held + 1 == revision {
                *held = revision;
                Ok(())
            } else {
                Err(ToolError::new(ErrorCode::SessionConflict, "out of order"))
            };
            Box::pin(std::future::ready(result))
        }
    }

    #[tokio::test]
    async fn a_store_that_panics_fails_one_save_and_wedges_nothing() {
        let store = Arc::new(Panicky::default());
        let services = CoreServices::new(CoreConfig::default()).unwrap().with_state_store(Arc::clone(&store) as _);
        let ctx = services.new_session("s");
        for (key, ok) in [("a", true), ("b", false), ("c", true)] {
            ctx.registers.set(RegisterWrite::new(key, json!("v"), Origin::User, "register_set")).unwrap();
            let saved = tokio::time::timeout(Duration::from_secs(5), ctx.persist()).await.expect("answered");
            assert_eq!(saved.is_ok(), ok, "{key}: {saved:?}");
        }
        assert_eq!(*store.held.lock(), 2, "b's change went with c's save, as revision 2");
        assert!(!ctx.is_superseded());
        ctx.saves_settled().await;
        assert_eq!(ctx.saved_revision(), Some(2));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_copy_is_settled_only_once_every_save_it_handed_over_is_answered() {
        let store = Arc::new(Queue::default());
        let (_services, ctx) = session(&store);
        ctx.saves_settled().await;
        let calls = writers(&ctx, (0..3).map(|i| format!("k{i}")));
        store.queued(1).await;
        // Its callers went away; the copy is about to be replaced: the replacement waits for what is on its way.
        calls.iter().for_each(tokio::task::JoinHandle::abort);
        let settled = tokio::spawn({
            let ctx = ctx.clone();
            async move { ctx.saves_settled().await }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!settled.is_finished(), "a save is still with the store");
        while !settled.is_finished() {
            store.answer_newest_first();
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert_eq!(ctx.saved_revision(), Some(store.held.lock().revision));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn callers_that_go_away_leave_their_saves_in_order() {
        let store = Arc::new(Queue::default());
        let (services, ctx) = session(&store);
        let calls = writers(&ctx, (0..6).map(|i| format!("k{i}")));
        store.queued(1).await;
        while ctx.registers.keys().len() < 6 {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        // Every client goes away mid-save.
        for call in &calls {
            call.abort();
        }
        while !store.answers.lock().is_empty() || !calls.iter().all(tokio::task::JoinHandle::is_finished) {
            store.answer_newest_first();
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        // The saves they handed over were written and recorded: the next call is saved as the next revision.
        let next = writers(&ctx, ["after".to_owned()]);
        store.queued(1).await;
        store.answer_newest_first();
        next.into_iter().next().unwrap().await.unwrap().unwrap();
        assert!(!ctx.is_superseded());
        let held = store.held.lock().clone();
        assert_eq!(ctx.saved_revision(), Some(held.revision));
        let back = services.restore_stored_on("s", &held, None).unwrap();
        assert!(back.registers.get("after").is_some());
        assert_eq!(back.registers.keys().len(), 7, "the aborted calls' registers (set before they went away) too");
    }
}

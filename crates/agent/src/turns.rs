//! The turns running in this process, by session: the one table a stop goes through, whoever started the turn —
//! the user (`POST /api/sessions/{id}/messages`) or the inbox (a message from another agent, a reminder).
//!
//! ```
//! use holdfast_agent::{CancelToken, turns::{Started, Turns}};
//! let turns = Turns::default();
//! let token = CancelToken::new();
//! let running = turns.begin("s_1", token.clone(), Started::Inbox).expect("no turn runs in s_1 yet");
//! assert!(turns.begin("s_1", CancelToken::new(), Started::User).is_none(), "one turn per session");
//! assert!(turns.is_running("s_1"));
//! assert!(!turns.cancel_users("s_1"), "a page that goes away stops only the turn it started");
//! assert!(turns.cancel("s_1") && token.is_cancelled());
//! drop(running); // the turn ended
//! assert!(!turns.is_running("s_1") && !turns.cancel("s_1"));
//! ```

use crate::agent::CancelToken;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;

/// The running turns of a process, by session id. Clones share the table.
#[derive(Debug, Clone, Default)]
pub struct Turns {
    running: Arc<Mutex<HashMap<String, (CancelToken, Started)>>>,
}

/// Who started a turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Started {
    /// The user, from a page or a client: the turn stops when the last page watching its session goes away.
    User,
    /// The inbox, answering a message or a reminder: only an explicit stop ends it early.
    Inbox,
}

/// A turn registered in [`Turns`]; dropping it (the turn ended, however) takes it out.
#[derive(Debug)]
#[must_use = "the turn is registered only while this lives"]
pub struct Running {
    turns: Turns,
    session: String,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.turns.running.lock().remove(&self.session);
    }
}

impl Turns {
    /// Registers a turn of `session` that `cancel` stops; `None` when one already runs there.
    pub fn begin(&self, session: &str, cancel: CancelToken, started: Started) -> Option<Running> {
        let mut running = self.running.lock();
        if running.contains_key(session) {
            return None;
        }
        running.insert(session.to_owned(), (cancel, started));
        Some(Running { turns: self.clone(), session: session.to_owned() })
    }

    /// Stops the turn running in `session`; whether there was one.
    pub fn cancel(&self, session: &str) -> bool {
        self.running.lock().get(session).map(|(c, _)| c.cancel()).is_some()
    }

    /// Stops the turn running in `session` if the user started it; whether there was one.
    pub fn cancel_users(&self, session: &str) -> bool {
        self.running.lock().get(session).filter(|(_, s)| *s == Started::User).map(|(c, _)| c.cancel()).is_some()
    }

    /// Whether a turn runs in `session`.
    pub fn is_running(&self, session: &str) -> bool {
        self.running.lock().contains_key(session)
    }
}

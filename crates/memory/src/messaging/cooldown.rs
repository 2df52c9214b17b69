//! The anti-loop cooldown: at most one message from an agent to the same other agent per window.
//!
//! The window is reserved when a send is checked and released if the send is not stored, so two concurrent sends
//! to one agent cannot both pass, and a refused send does not use up the window. It is kept in memory: a restart
//! resets it.

use chrono::{DateTime, Utc};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::time::Duration;

/// An ordered (sender, recipient) pair.
type Pair = (String, String);

/// The last send of every ordered pair.
#[derive(Debug)]
pub(super) struct Cooldowns {
    window: Duration,
    last_sent: Mutex<HashMap<Pair, DateTime<Utc>>>,
}

/// What one send reserved: the windows it took (to give back if the send fails) and the recipients it skipped.
#[derive(Debug, Default)]
pub(super) struct Reserved {
    /// Recipients inside their window, with how long until it ends.
    pub(super) skipped: Vec<(String, Duration)>,
    taken: Vec<(Pair, Option<DateTime<Utc>>)>,
}

impl Reserved {
    /// The skipped recipient whose window ends first.
    pub(super) fn soonest(&self) -> Option<(String, Duration)> {
        self.skipped.iter().min_by_key(|(_, d)| *d).cloned()
    }
}

impl Cooldowns {
    /// Windows of `window` (zero: no cooldown).
    pub(super) fn new(window: Duration) -> Self {
        Self { window, last_sent: Mutex::new(HashMap::new()) }
    }

    /// The window's length.
    pub(super) fn window(&self) -> Duration {
        self.window
    }

    /// Keeps in `recipients` those outside their window from `sender`, reserving it for them at `now`; the others
    /// are removed and reported as skipped.
    pub(super) fn reserve(&self, sender: &str, recipients: &mut Vec<String>, now: DateTime<Utc>) -> Reserved {
        let mut reserved = Reserved::default();
        if self.window.is_zero() {
            return reserved;
        }
        let mut last = self.last_sent.lock();
        recipients.retain(|to| {
            let key = (sender.to_owned(), to.clone());
            if let Some(at) = last.get(&key) {
                let elapsed = (now - *at).to_std().unwrap_or(Duration::ZERO);
                if elapsed < self.window {
                    reserved.skipped.push((to.clone(), self.window - elapsed));
                    return false;
                }
            }
            reserved.taken.push((key.clone(), last.insert(key, now)));
            true
        });
        reserved
    }

    /// Gives back the windows a send reserved (it was not stored).
    pub(super) fn release(&self, reserved: Reserved) {
        let mut last = self.last_sent.lock();
        for (key, previous) in reserved.taken {
            match previous {
                Some(at) => last.insert(key, at),
                None => last.remove(&key),
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pair_waits_out_its_window_and_a_released_window_is_free_again() {
        let cooldowns = Cooldowns::new(Duration::from_secs(10));
        let t0 = Utc::now();
        let mut to = vec!["b".to_owned(), "c".to_owned()];
        let first = cooldowns.reserve("a", &mut to, t0);
        assert_eq!(to, ["b", "c"]);
        assert!(first.skipped.is_empty());

        let mut again = vec!["b".to_owned()];
        let second = cooldowns.reserve("a", &mut again, t0 + chrono::Duration::seconds(4));
        assert!(again.is_empty());
        assert_eq!(second.soonest(), Some(("b".to_owned(), Duration::from_secs(6))));

        // The reverse pair has its own window.
        let mut reply = vec!["a".to_owned()];
        assert!(cooldowns.reserve("b", &mut reply, t0).skipped.is_empty());

        cooldowns.release(first);
        let mut freed = vec!["b".to_owned()];
        assert!(cooldowns.reserve("a", &mut freed, t0 + chrono::Duration::seconds(1)).skipped.is_empty());
        assert_eq!(freed, ["b"]);
    }
}

//! A copy's run of pipelined saves ends at its first refusal. A session copy hands the store revision `r + 1`
//! before `r` is answered; when `r` is refused (another process or copy saved `r` first), `r + 1` would pass the
//! revision check on top of the other's `r` and mix two copies' states (a whole part, such as the confirmations,
//! written from the loser's older view over a change the winner was told is saved). So each store's writer, which
//! decides saves in order, remembers the last save it refused per session and copy, and refuses that copy's next
//! revision without writing it.

use std::collections::HashMap;

/// At most this many refusals are remembered; beyond it they are forgotten all at once (a copy's pipelined saves
/// are queued together, so its next save has long been decided when thousands of other refusals follow).
const REMEMBERED: usize = 4096;

/// The last refused revision of each (session, copy).
#[derive(Debug, Default)]
pub(crate) struct Runs {
    refused: HashMap<(String, u64), u64>,
}

impl Runs {
    /// Whether copy `copy`'s save of `id` at `revision` may be tried: not when the same copy's save of the revision
    /// before it was refused (recorded as refused too). Copy 0 is unknown: always tried.
    pub(crate) fn admits(&mut self, id: &str, copy: u64, revision: u64) -> bool {
        if copy == 0 {
            return true;
        }
        let key = (id.to_owned(), copy);
        if revision > 1 && self.refused.get(&key) == Some(&(revision - 1)) {
            self.refused.insert(key, revision);
            return false;
        }
        true
    }

    /// Records whether the save of `id` by `copy` at `revision` (the last of a merged run) was written.
    pub(crate) fn record(&mut self, id: &str, copy: u64, revision: u64, written: bool) {
        if copy == 0 {
            return;
        }
        let key = (id.to_owned(), copy);
        if written {
            self.refused.remove(&key);
            return;
        }
        if self.refused.len() >= REMEMBERED {
            self.refused.clear();
        }
        self.refused.insert(key, revision);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_ends_its_copys_run_and_only_its() {
        let mut runs = Runs::default();
        assert!(runs.admits("s", 7, 3));
        runs.record("s", 7, 3, false);
        assert!(!runs.admits("s", 7, 4), "the next revision of the refused copy");
        assert!(!runs.admits("s", 7, 5), "and the one after");
        assert!(runs.admits("s", 8, 4), "another copy's");
        assert!(runs.admits("t", 7, 4), "another session's");
        assert!(runs.admits("s", 7, 3), "the copy starting again from the stored revision");
        runs.record("s", 7, 3, true);
        assert!(runs.admits("s", 7, 4));
        assert!(runs.admits("s", 0, 4) && runs.admits("s", 0, 1), "an unknown copy is always tried");
    }
}

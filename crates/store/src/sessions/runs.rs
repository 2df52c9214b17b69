//! A pipelined save is written only on top of its own copy's save. A session copy hands the store revision `r + 1`
//! before `r` is answered (such a save says so: [`StateDelta::follows`]). When `r` was not written (refused because
//! another process or copy saved `r` first, or failed), `r + 1` would pass the revision check on top of the other's
//! `r` and mix two copies' states: a whole part, such as the confirmations, written from the loser's older view over
//! a change the winner was told is saved. So each store's writer, which decides saves in order, remembers the last
//! revision each copy wrote, and writes a pipelined save only when its copy wrote the revision before it.
//!
//! What it forgets errs on the safe side: a pipelined save it cannot vouch for is refused, and the copy saves again
//! from the revision the store holds (or, refused with nothing failed before it, reloads the session).
//!
//! [`StateDelta::follows`]: holdfast_core::session_state::StateDelta::follows

use std::collections::HashMap;

/// Writes remembered per generation. When the current one is full it becomes the older one and the older one is
/// forgotten: a copy whose last write is younger than 8,192 other copies' writes is always remembered (a pipelined
/// save follows its copy's previous write within one queue, a batch or two later, so only a copy idle that long is
/// forgotten). Two generations hold at most 16,384 entries, about 2 MiB, whatever the number of sessions unloaded.
const GENERATION: usize = 8_192;

/// The last revision each (session, copy) wrote, in two generations.
#[derive(Debug, Default)]
pub(crate) struct Runs {
    written: HashMap<(String, u64), u64>,
    older: HashMap<(String, u64), u64>,
}

impl Runs {
    /// Whether copy `copy`'s save of `id` at `revision` may be tried: always when it is not pipelined (`follows`
    /// false: the revision check alone decides); when it is, only on top of the same copy's write of the revision
    /// before it.
    pub(crate) fn admits(&self, id: &str, copy: u64, revision: u64, follows: bool) -> bool {
        if !follows {
            return true;
        }
        let key = (id.to_owned(), copy);
        let last = self.written.get(&key).or_else(|| self.older.get(&key));
        copy != 0 && last == Some(&revision.saturating_sub(1))
    }

    /// Records whether the save of `id` by `copy` at `revision` (the last of a merged run) was written.
    pub(crate) fn record(&mut self, id: &str, copy: u64, revision: u64, written: bool) {
        if copy == 0 {
            return;
        }
        let key = (id.to_owned(), copy);
        self.older.remove(&key);
        if !written {
            self.written.remove(&key);
            return;
        }
        if self.written.len() >= GENERATION && !self.written.contains_key(&key) {
            self.older = std::mem::take(&mut self.written);
        }
        self.written.insert(key, revision);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pipelined_save_goes_only_on_its_own_copys_write() {
        let mut runs = Runs::default();
        assert!(runs.admits("s", 7, 3, false), "a save that follows nothing in flight: the revision check decides");
        runs.record("s", 7, 3, true);
        assert!(runs.admits("s", 7, 4, true), "on top of its copy's 3");
        assert!(!runs.admits("s", 8, 4, true), "another copy's pipelined 4 is not on its own write");
        assert!(!runs.admits("s", 7, 5, true), "a revision skipped");
        assert!(!runs.admits("t", 7, 4, true), "another session");
        runs.record("s", 7, 4, false);
        assert!(!runs.admits("s", 7, 5, true), "its copy's 4 was not written");
        assert!(runs.admits("s", 7, 4, false), "the copy starting again from the stored revision");
        assert!(!runs.admits("s", 0, 4, true), "an unknown copy's pipelined save is not vouched for");
    }

    #[test]
    fn a_recent_write_is_remembered_past_a_full_generation_and_an_idle_one_forgotten() {
        let mut runs = Runs::default();
        runs.record("busy", 1, 9, true);
        runs.record("idle", 2, 5, true);
        for copy in 10..10 + GENERATION as u64 - 2 {
            runs.record("other", copy, 1, true);
        }
        runs.record("busy", 1, 10, true);
        runs.record("other", 0xffff_0000, 1, true);
        assert!(runs.admits("busy", 1, 11, true), "written just before the generation turned");
        assert!(runs.admits("idle", 2, 6, true), "in the older generation");
        for copy in 0..GENERATION as u64 {
            runs.record("more", 0x1_0000_0000 + copy, 1, true);
        }
        assert!(!runs.admits("idle", 2, 6, true), "idle for two generations: forgotten, so refused");
    }
}

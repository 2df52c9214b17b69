//! Keeps memory's two full-text indexes in one segment each, in the background.
//!
//! FTS5 writes each transaction's rows as a new segment (b-tree) and merges segments as they pile up (its
//! `automerge`), which still leaves an index of 100,000 blocks written one edit at a time in about a dozen segments. A
//! query reads and merges every segment's list of matches, so a search over such an index is slower than over the same
//! rows in one segment (docs/benchmarks.md: about 12%, measured on the `search_memory` bench).
//!
//! [`Compactor`] merges each index into one segment once the indexes have taken writes amounting to an eighth of the
//! rows they held after the last merge (at least [`MIN_WRITES`]; after a restart, counted from the rows the indexes
//! hold then). So the merges cost about eight row rewrites per indexed write on average (the rows written first are
//! rewritten more often, the last ones less), not a rewrite of the whole index per edit. One compactor serves each
//! database ([`SqliteDb::shared`]). The merge is FTS5's incremental optimize, run on a thread of its own: one `'merge'`
//! command with a negative page count (it puts every segment on one level), then positive ones until a command does
//! no work (FTS5's documented test: the connection's total changes grow by less than two). Each command is its own
//! short transaction on the writing connection, at most [`PAGES`] pages of merged data, so a session's save or a
//! memory edit waits for a step or a few, never for the whole merge; a process killed between steps leaves a
//! consistent index, which the next merge merges from where it was left.

use crate::SqliteDb;
use parking_lot::{Condvar, Mutex};
use rusqlite::Connection;
use std::sync::Arc;

/// Memory's full-text indexes.
const INDEXES: [&str; 2] = ["memory_fts_values", "memory_fts_history"];

/// Pages of merged data written per step (FTS5's own unit of merge work is 64 pages).
const PAGES: i64 = 64;

/// The fewest index writes that start a merge.
pub(super) const MIN_WRITES: u64 = 64;

/// The share of the indexed rows (as a divisor) that writes must reach to start a merge.
const SHARE: u64 = 8;

/// A bound on the steps of one merge (far above what any index needs: 64 pages a step).
const MAX_STEPS: u64 = 1_000_000;

/// When the indexes were last merged and whether a merge runs: one per database ([`SqliteDb::shared`]).
#[derive(Debug, Default)]
pub(super) struct Compactor {
    state: Mutex<State>,
    idle: Condvar,
}

#[derive(Debug, Default)]
struct State {
    /// Index writes since the last merge began.
    writes: u64,
    /// Rows in the indexes after the last merge, or when first counted (`None` before).
    rows: Option<u64>,
    running: bool,
}

impl Compactor {
    /// Counts one committed write to the indexes and starts a background merge when they have taken enough since the
    /// last one.
    pub(super) fn wrote(self: &Arc<Self>, db: &SqliteDb) {
        let mut state = self.state.lock();
        state.writes += 1;
        if state.running || state.writes < MIN_WRITES.max(state.rows.unwrap_or(0) / SHARE) {
            return;
        }
        state.running = true;
        let writes = std::mem::take(&mut state.writes);
        drop(state);
        let (me, db) = (Arc::clone(self), db.clone());
        let started =
            std::thread::Builder::new().name("holdfast-memory-merge".into()).spawn(move || me.run(&db, writes));
        if let Err(e) = started {
            tracing::warn!(error = %e, "cannot start the thread that merges memory's full-text index");
            // The writes still count towards the next attempt.
            self.state.lock().writes += writes;
            self.finish(None);
        }
    }

    /// Merges the indexes now, on this thread, after any merge already running: what the background merge does, for
    /// a caller that wants the index in its fastest form at once (a bench after a bulk load).
    pub(super) fn merge_now(&self, db: &SqliteDb) -> Result<(), crate::StoreError> {
        let mut state = self.state.lock();
        self.idle.wait_while(&mut state, |s| s.running);
        state.running = true;
        state.writes = 0;
        drop(state);
        let mut done = Done { compactor: self, rows: None };
        done.rows = Some(merge(db)?);
        Ok(())
    }

    /// Waits until no merge runs.
    pub(super) fn wait_idle(&self) {
        self.idle.wait_while(&mut self.state.lock(), |s| s.running);
    }

    /// The background merge, started after `writes` index writes.
    fn run(&self, db: &SqliteDb, writes: u64) {
        // Whatever happens below (an error, a panic), the merge ends and may start again.
        let mut done = Done { compactor: self, rows: None };
        let started = std::time::Instant::now();
        if self.state.lock().rows.is_none() {
            // The first merge since the database was opened: the writes are measured against what the indexes hold.
            match count_rows(db) {
                Ok(rows) if writes < rows / SHARE => {
                    self.state.lock().writes += writes;
                    done.rows = Some(rows);
                    return;
                }
                Ok(_) => {}
                Err(e) => tracing::warn!(error = %e, "cannot count memory's full-text index rows"),
            }
        }
        match merge(db) {
            Ok(rows) => {
                tracing::debug!(rows, ms = started.elapsed().as_millis(), "merged memory's full-text index");
                done.rows = Some(rows);
            }
            Err(e) => {
                tracing::warn!(error = %e, "merging memory's full-text index failed; it is tried again after more writes");
            }
        }
    }

    fn finish(&self, rows: Option<u64>) {
        let mut state = self.state.lock();
        state.running = false;
        if rows.is_some() {
            state.rows = rows;
        }
        self.idle.notify_all();
    }
}

/// Ends a merge when dropped: the rows it left (none when it failed).
struct Done<'a> {
    compactor: &'a Compactor,
    rows: Option<u64>,
}

impl Drop for Done<'_> {
    fn drop(&mut self) {
        self.compactor.finish(self.rows);
    }
}

/// Merges each index into one segment, one step per transaction; the rows the indexes hold afterwards.
fn merge(db: &SqliteDb) -> rusqlite::Result<u64> {
    for index in INDEXES {
        let sql = format!("INSERT INTO {index} ({index}, rank) VALUES ('merge', ?1)");
        // Negative first: every segment onto one level, and merge even two. Positive after, so that a segment
        // written meanwhile does not restart the merge; until a step does no work.
        let mut pages = -PAGES;
        for _ in 0..MAX_STEPS {
            if !step(&db.lock(), &sql, pages)? {
                break;
            }
            pages = PAGES;
        }
    }
    count_rows(db)
}

/// The rows both indexes hold.
fn count_rows(db: &SqliteDb) -> rusqlite::Result<u64> {
    let mut rows = 0;
    for index in INDEXES {
        let sql = format!("SELECT count(*) FROM {index}_docsize");
        let count: i64 = db.read_blocking(|c| c.query_row(&sql, [], |r| r.get(0)))?;
        rows += u64::try_from(count).unwrap_or_default();
    }
    Ok(rows)
}

/// One merge step; whether it did any work.
fn step(c: &Connection, sql: &str, pages: i64) -> rusqlite::Result<bool> {
    let before = c.total_changes();
    c.prepare_cached(sql)?.execute([pages])?;
    Ok(c.total_changes().saturating_sub(before) >= 2)
}

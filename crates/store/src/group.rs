//! Group commit for the SQLite file: writes queued by many tasks while one transaction commits are applied together
//! in the next one, so `synchronous = FULL` costs one fsync per batch rather than one per write, and each caller is
//! answered only after the transaction holding its write has committed (an acknowledged write is on disk).
//!
//! Each write runs inside its own savepoint: one that fails (a constraint, a bad value) is rolled back alone and
//! answered with its error, the others in the batch still commit. When the transaction itself cannot begin or commit
//! (disk full, I/O error), every write of the batch is answered with that error and nothing of it is kept.
//!
//! ```
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! use std::sync::Arc;
//! let conn = holdfast_store::sqlite::open_memory().unwrap();
//! conn.execute_batch("CREATE TABLE kv (k TEXT PRIMARY KEY, v TEXT)").unwrap();
//! let conn = Arc::new(parking_lot::Mutex::new(conn));
//! let writer = holdfast_store::GroupCommit::start("kv", Arc::clone(&conn), |c, (k, v): &(String, String)| {
//!     c.execute("INSERT INTO kv (k, v) VALUES (?1, ?2)", [k, v])
//! })
//! .unwrap();
//! assert_eq!(writer.write(("a".into(), "1".into())).await.unwrap(), 1);
//! // The second insert of the same key fails alone.
//! assert!(writer.write(("a".into(), "2".into())).await.is_err());
//! let n: i64 = conn.lock().query_row("SELECT COUNT(*) FROM kv", [], |r| r.get(0)).unwrap();
//! assert_eq!(n, 1);
//! # });
//! ```

use crate::StoreError;
use parking_lot::Mutex;
use rusqlite::Connection;
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot};

/// Most writes committed in one transaction (a bound on how long the connection is held at a time).
const BATCH: usize = 256;

type Reply = oneshot::Sender<Result<usize, StoreError>>;

/// A writer thread that commits queued writes of type `W` in batches, on a connection it shares with other users
/// (who take the same lock). Dropping the last handle lets the thread finish what is queued and stop.
pub struct GroupCommit<W> {
    queue: mpsc::UnboundedSender<(W, Reply)>,
}

impl<W> std::fmt::Debug for GroupCommit<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GroupCommit").finish_non_exhaustive()
    }
}

impl<W: Send + 'static> GroupCommit<W> {
    /// Starts the writer thread `holdfast-<name>-writer`; `apply` performs one write and returns the rows it changed.
    pub fn start<F>(name: &str, conn: Arc<Mutex<Connection>>, apply: F) -> Result<Self, StoreError>
    where
        F: Fn(&Connection, &W) -> rusqlite::Result<usize> + Send + 'static,
    {
        Self::start_with_undo(name, conn, apply, |_: &W| {})
    }

    /// [`GroupCommit::start`], with `undone` told of every write answered with an error, after `apply` may have run
    /// for it (undone alone, or with its whole batch): for an `apply` that remembers what it decided.
    pub fn start_with_undo<F, U>(
        name: &str,
        conn: Arc<Mutex<Connection>>,
        apply: F,
        undone: U,
    ) -> Result<Self, StoreError>
    where
        F: Fn(&Connection, &W) -> rusqlite::Result<usize> + Send + 'static,
        U: Fn(&W) + Send + 'static,
    {
        let (queue, rx) = mpsc::unbounded_channel();
        std::thread::Builder::new()
            .name(format!("holdfast-{name}-writer"))
            .spawn(move || run(rx, &conn, &apply, &undone))
            .map_err(|e| StoreError::Query(format!("cannot start the {name} writer thread: {e}")))?;
        Ok(Self { queue })
    }

    /// Queues `write` and waits until the transaction holding it has committed: the rows it changed, or why it was
    /// not written.
    pub async fn write(&self, write: W) -> Result<usize, StoreError> {
        self.queue(write).await
    }

    /// Queues `write` now, in the order of these calls (writes are applied in the order they were queued), and
    /// returns the wait for its answer. The write is applied whether or not the answer is awaited.
    pub fn queue(&self, write: W) -> impl Future<Output = Result<usize, StoreError>> + Send + 'static {
        let (reply, answer) = oneshot::channel();
        let queued = self.queue.send((write, reply));
        async move {
            queued.map_err(|_| StoreError::Query("the writer thread has stopped".into()))?;
            answer.await.map_err(|_| StoreError::Query("the writer thread stopped before answering".into()))?
        }
    }
}

fn run<W, F, U>(mut rx: mpsc::UnboundedReceiver<(W, Reply)>, conn: &Mutex<Connection>, apply: &F, undone: &U)
where
    F: Fn(&Connection, &W) -> rusqlite::Result<usize>,
    U: Fn(&W),
{
    let mut batch = Vec::with_capacity(BATCH);
    while let Some(first) = rx.blocking_recv() {
        batch.push(first);
        while batch.len() < BATCH {
            match rx.try_recv() {
                Ok(next) => batch.push(next),
                Err(_) => break,
            }
        }
        let results = commit(&conn.lock(), &batch, apply);
        for ((write, reply), result) in batch.drain(..).zip(results) {
            if result.is_err() {
                undone(&write);
            }
            // A caller that stopped waiting (cancelled) does not need the answer; its write stands either way.
            let _ = reply.send(result);
        }
    }
}

/// Rolls back a transaction left open when the batch returns early or the writer unwinds, so the shared
/// connection is never left inside it (other users' statements would join it and never commit).
struct Open<'a>(&'a Connection);

impl Drop for Open<'_> {
    fn drop(&mut self) {
        if !self.0.is_autocommit() {
            let _ = self.0.execute_batch("ROLLBACK");
        }
    }
}

/// One transaction for the whole batch, a savepoint per write.
fn commit<W, F>(conn: &Connection, batch: &[(W, Reply)], apply: &F) -> Vec<Result<usize, StoreError>>
where
    F: Fn(&Connection, &W) -> rusqlite::Result<usize>,
{
    // rusqlite's error is not Clone: every write of the batch gets the same message.
    let all = |e: &rusqlite::Error| batch.iter().map(|_| Err(StoreError::Query(e.to_string()))).collect();
    if let Err(e) = conn.execute_batch("BEGIN IMMEDIATE") {
        return all(&e);
    }
    let _open = Open(conn);
    let mut results = Vec::with_capacity(batch.len());
    for (write, _) in batch {
        if let Err(e) = run_cached(conn, "SAVEPOINT w") {
            return all(&e);
        }
        let one = apply(conn, write).and_then(|n| run_cached(conn, "RELEASE w").map(|()| n));
        if let Err(e) = &one {
            // The write, or its release, failed: undo it alone. When even that fails, or SQLite already rolled the
            // whole transaction back (disk full, I/O error), nothing of the batch is kept.
            if conn.is_autocommit() || conn.execute_batch("ROLLBACK TO w; RELEASE w").is_err() {
                return all(e);
            }
        }
        results.push(one.map_err(StoreError::from));
    }
    if let Err(e) = conn.execute_batch("COMMIT") {
        return all(&e);
    }
    results
}

/// A statement without parameters, parsed once per connection.
fn run_cached(conn: &Connection, sql: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(sql)?.execute([]).map(|_| ())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// 60 writes queued at once, of two statements each; every third fails in its second statement. The failing
    /// ones are answered with an error and leave nothing (not even their first statement); all others are kept.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_failing_write_is_undone_alone() {
        let dir = tempfile::tempdir().unwrap();
        let conn = crate::sqlite::open_file(&dir.path().join("g.db")).unwrap();
        conn.execute_batch(
            "CREATE TABLE kv (k INTEGER PRIMARY KEY); CREATE TABLE log (k INTEGER); INSERT INTO kv VALUES (-1);",
        )
        .unwrap();
        let conn = Arc::new(Mutex::new(conn));
        let writer = Arc::new(
            GroupCommit::start("test", Arc::clone(&conn), |c, k: &i64| {
                c.execute("INSERT INTO log (k) VALUES (?1)", [k])?;
                // Every third write collides with the row -1.
                c.execute("INSERT INTO kv (k) VALUES (?1)", [if k % 3 == 0 { -1 } else { *k }])
            })
            .unwrap(),
        );
        let writes: Vec<_> = (0..60i64)
            .map(|k| {
                let writer = Arc::clone(&writer);
                tokio::spawn(async move { (k, writer.write(k).await) })
            })
            .collect();
        for w in writes {
            let (k, result) = w.await.unwrap();
            assert_eq!(result.is_err(), k % 3 == 0, "write {k}: {result:?}");
        }
        let c = conn.lock();
        let count = |sql: &str| c.query_row(sql, [], |r| r.get::<_, i64>(0)).unwrap();
        assert_eq!(count("SELECT COUNT(*) FROM log"), 40, "a failed write's first statement is undone with it");
        assert_eq!(count("SELECT COUNT(*) FROM kv"), 41);
        assert!(c.is_autocommit(), "no transaction left open on the shared connection");
    }
}

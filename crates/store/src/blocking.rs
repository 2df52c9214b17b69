//! PostgreSQL for synchronous callers: the traits whose methods block (the memory store's, like rusqlite's API) get
//! a pool of their own, on a runtime of its own (one worker thread drives its sockets and timers), and run each
//! query to completion on the calling thread. A call works from tokio's blocking pool (where such traits are meant
//! to be called: `spawn_blocking`), from a plain thread, and from an async task of another runtime, which it blocks
//! for the call's duration (the query runs outside that task's cooperative budget, so it cannot starve itself). The
//! one place it cannot work, a task on the pool's own runtime, is refused with an error instead of hanging.
//!
//! ```no_run
//! # async fn demo(url: holdfast_core::config::DatabaseUrl) -> Result<(), holdfast_store::StoreError> {
//! let pg = holdfast_store::BlockingPg::connect(url).await?;
//! let n: i64 = pg.run(|store| async move {
//!     sqlx::query_scalar("SELECT 1::bigint").fetch_one(store.pool()).await
//! })??;
//! assert_eq!(n, 1);
//! # Ok(()) }
//! ```

use crate::{PgStore, StoreError};
use holdfast_core::config::DatabaseUrl;
use std::cell::Cell;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Numbers the pools' runtimes, so a call can tell whether it runs on its own pool's runtime.
static RUNTIMES: AtomicU64 = AtomicU64::new(1);

thread_local! {
    /// On a pool runtime's threads: that runtime's number.
    static POOL_RUNTIME: Cell<u64> = const { Cell::new(0) };
}

/// A [`PgStore`] whose queries are run to completion by synchronous callers. Clones share the pool and runtime.
#[derive(Debug, Clone)]
pub struct BlockingPg {
    store: PgStore,
    /// The pool's runtime, kept alive by `_runtime`.
    handle: tokio::runtime::Handle,
    _runtime: Arc<Background>,
    id: u64,
}

/// The runtime the pool lives on; shut down without waiting when the last handle goes (dropping a runtime may not
/// block inside an async context).
#[derive(Debug)]
struct Background(Option<tokio::runtime::Runtime>);

impl Drop for Background {
    fn drop(&mut self) {
        if let Some(runtime) = self.0.take() {
            runtime.shutdown_background();
        }
    }
}

impl BlockingPg {
    /// Connects a pool to `url` on a new one-thread runtime.
    pub async fn connect(url: DatabaseUrl) -> Result<Self, StoreError> {
        let id = RUNTIMES.fetch_add(1, Ordering::Relaxed);
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("holdfast-pg-blocking")
            .on_thread_start(move || POOL_RUNTIME.with(|r| r.set(id)))
            .enable_all()
            .build()
            .map_err(|e| StoreError::Query(format!("cannot start the database runtime: {e}")))?;
        let handle = runtime.handle().clone();
        // Owned by the guard before the first await: a failed or cancelled connect drops it without blocking.
        let runtime = Arc::new(Background(Some(runtime)));
        let store = handle
            .spawn(async move { PgStore::connect(&url).await })
            .await
            .map_err(|e| StoreError::Query(format!("the database runtime stopped: {e}")))??;
        Ok(Self { store, handle, _runtime: runtime, id })
    }

    /// Runs `query` on the calling thread until it completes (its sockets and timers are driven by this pool's
    /// runtime). An error, without running it, when called from a task of that runtime (it would wait for itself).
    pub fn run<T, F, Fut>(&self, query: F) -> Result<T, StoreError>
    where
        F: FnOnce(PgStore) -> Fut,
        Fut: Future<Output = T>,
    {
        if POOL_RUNTIME.with(Cell::get) == self.id {
            return Err(StoreError::Query("a blocking database call from the database runtime itself".into()));
        }
        let _context = self.handle.enter();
        Ok(futures::executor::block_on(tokio::task::unconstrained(query(self.store.clone()))))
    }

    /// Runs `task` on this pool's runtime in the background (a listener that lives as long as the pool); it stops
    /// when it returns or when the last handle on the pool goes.
    pub fn spawn_background<F, Fut>(&self, task: F)
    where
        F: FnOnce(PgStore) -> Fut,
        Fut: Future<Output = ()> + Send + 'static,
    {
        drop(self.handle.spawn(task(self.store.clone())));
    }

    /// Runs `query` as a task on this pool's runtime and awaits it (for async callers, such as migrations at start).
    pub async fn spawn<T, F, Fut>(&self, query: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(PgStore) -> Fut,
        Fut: Future<Output = Result<T, StoreError>> + Send + 'static,
    {
        let fut = query(self.store.clone());
        self.handle.spawn(fut).await.map_err(|e| StoreError::Query(format!("the database runtime stopped: {e}")))?
    }
}

//! PostgreSQL for synchronous callers: the traits whose methods block (the memory store's, like rusqlite's API) get
//! a pool of their own, on a runtime of its own (one worker thread drives its sockets and timers), and run each
//! query to completion on the calling thread. A call therefore works from any thread: tokio's blocking pool (where
//! such traits are meant to be called), a plain thread, or an async task of any runtime, which it blocks for the
//! call's duration without ever dead-locking a single-threaded runtime.
//!
//! ```no_run
//! # async fn demo(url: holdfast_core::config::DatabaseUrl) -> Result<(), holdfast_store::StoreError> {
//! let pg = holdfast_store::BlockingPg::connect(url).await?;
//! let n: i64 = pg.run(|store| async move {
//!     sqlx::query_scalar("SELECT 1").fetch_one(store.pool()).await
//! })?;
//! assert_eq!(n, 1);
//! # Ok(()) }
//! ```

use crate::{PgStore, StoreError};
use holdfast_core::config::DatabaseUrl;
use std::future::Future;
use std::sync::Arc;

/// A [`PgStore`] whose queries are run to completion by synchronous callers. Clones share the pool and runtime.
#[derive(Debug, Clone)]
pub struct BlockingPg {
    store: PgStore,
    runtime: Arc<Background>,
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
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("holdfast-pg-blocking")
            .enable_all()
            .build()
            .map_err(|e| StoreError::Query(format!("cannot start the database runtime: {e}")))?;
        let store = runtime
            .spawn(async move { PgStore::connect(&url).await })
            .await
            .map_err(|e| StoreError::Query(format!("the database runtime stopped: {e}")))??;
        Ok(Self { store, runtime: Arc::new(Background(Some(runtime))) })
    }

    /// Runs `query` on the calling thread until it completes (its sockets and timers are driven by this pool's
    /// runtime).
    pub fn run<T, F, Fut>(&self, query: F) -> T
    where
        F: FnOnce(PgStore) -> Fut,
        Fut: Future<Output = T>,
    {
        let store = self.store.clone();
        match &self.runtime.0 {
            Some(runtime) => {
                let _context = runtime.enter();
                futures::executor::block_on(query(store))
            }
            None => futures::executor::block_on(query(store)),
        }
    }

    /// The pool (for async callers, on this pool's runtime only: see [`BlockingPg::spawn`]).
    pub fn store(&self) -> &PgStore {
        &self.store
    }

    /// Runs `query` as a task on this pool's runtime and awaits it (for async callers, such as migrations at start).
    pub async fn spawn<T, F, Fut>(&self, query: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(PgStore) -> Fut,
        Fut: Future<Output = Result<T, StoreError>> + Send + 'static,
    {
        let fut = query(self.store.clone());
        match &self.runtime.0 {
            Some(runtime) => {
                runtime.spawn(fut).await.map_err(|e| StoreError::Query(format!("the database runtime stopped: {e}")))?
            }
            None => fut.await,
        }
    }
}

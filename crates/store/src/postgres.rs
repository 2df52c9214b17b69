//! PostgreSQL: a connection pool several instances share, the migrations of each [`Component`], and advisory
//! locks that serialize what must not interleave across instances.
//!
//! Why sqlx: a maintained async driver with its own pool and a `LISTEN` stream that reconnects, used here without
//! its compile-time macros (no database at build time). Its SQLite driver is not built: rusqlite keeps the
//! embedded file.

use crate::{Component, StoreError};
use holdfast_core::config::DatabaseUrl;
use sqlx::ConnectOptions;
use sqlx::postgres::{PgConnectOptions, PgConnection, PgPool, PgPoolOptions};
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

/// How long a connection attempt (or a wait for a pooled connection) may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long [`PgLock::is_held`] waits for its connection to answer.
pub const HELD_CHECK_TIMEOUT: Duration = Duration::from_secs(5);

/// The oldest server this store works with (`server_version_num`): PostgreSQL 13.
const MIN_SERVER_VERSION: u32 = 130_000;

/// How long a read-back after a failed `COMMIT` waits for that transaction to be finished on the server.
const READ_BACK_WAIT: Duration = Duration::from_secs(30);

/// The most connections one instance opens (locks held across a broadcast use their own, outside the pool).
const POOL_SIZE: u32 = 16;

/// A shared database: clones share the pool.
#[derive(Clone)]
pub struct PgStore {
    pool: PgPool,
    options: Arc<PgConnectOptions>,
    url: Arc<DatabaseUrl>,
    instance: Arc<str>,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore").field("url", &self.url).field("instance", &self.instance).finish_non_exhaustive()
    }
}

impl PgStore {
    /// Connects (failing within 10 s when the server cannot be reached or refuses the login).
    pub async fn connect(url: &DatabaseUrl) -> Result<Self, StoreError> {
        let failed = |e: &dyn std::fmt::Display| StoreError::Connect {
            url: url.to_string(),
            reason: holdfast_core::redact_urls(&e.to_string()).into_owned(),
        };
        let options = PgConnectOptions::from_str(url.expose())
            .map_err(|e| failed(&e))?
            .application_name("holdfast")
            .disable_statement_logging();
        let pool = PgPoolOptions::new()
            .max_connections(POOL_SIZE)
            .acquire_timeout(CONNECT_TIMEOUT)
            .connect_with(options.clone())
            .await
            .map_err(|e| failed(&e))?;
        // PostgreSQL 13 or later (`pg_xact_status`, with which a COMMIT whose answer was lost is read back): said
        // here, not by the first write that needs it.
        let version: String =
            sqlx::query_scalar("SHOW server_version_num").fetch_one(&pool).await.map_err(|e| failed(&e))?;
        if version.trim().parse::<u32>().is_ok_and(|v| v < MIN_SERVER_VERSION) {
            return Err(failed(&format!(
                "holdfast needs PostgreSQL 13 or later; this server is version {version} (server_version_num)"
            )));
        }
        let instance = format!("i_{}", holdfast_core::confirm::random_id());
        tracing::info!(database = %url, instance, "storage: connected to PostgreSQL");
        Ok(Self { pool, options: Arc::new(options), url: Arc::new(url.clone()), instance: Arc::from(instance) })
    }

    /// The pool.
    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// A transaction for work after a failed one (reading back what it may have committed, its COMMIT's answer
    /// lost; writing its rows again): its locks wait for the failed transaction to be finished on the server, which a
    /// connection cut half-open can leave idle for long, at most 30 s.
    pub(crate) async fn begin_read_back(&self) -> Result<sqlx::Transaction<'static, sqlx::Postgres>, sqlx::Error> {
        let mut tx = self.pool.begin().await?;
        let wait = format!("SET LOCAL lock_timeout = '{}s'", READ_BACK_WAIT.as_secs());
        sqlx::query(sqlx::AssertSqlSafe(wait)).execute(&mut *tx).await?;
        Ok(tx)
    }

    /// Commits `tx`, the transaction whose id one of its statements returned as `xid` (`pg_current_xact_id()::text`,
    /// asked for before the `COMMIT`). When the `COMMIT` fails — its answer may have been lost with the connection
    /// after the server committed — the server is asked what became of transaction `xid` (`pg_xact_status`, which
    /// PostgreSQL provides for exactly this), waiting while it is still in progress, at most 30 s: committed is
    /// success, so a caller never retries (and duplicates) a write that stands. Otherwise the `COMMIT`'s error.
    ///
    /// For writes whose retry would do them twice (a history entry, a message, a task, a reminder) or whose caller,
    /// told they failed, would lose what they did (an inbox take, a session link's merge). The journal's reservation
    /// and the session saves read back their own rows instead ([`Self::begin_read_back`]).
    pub(crate) async fn commit(
        &self,
        tx: sqlx::Transaction<'static, sqlx::Postgres>,
        xid: &str,
    ) -> Result<(), sqlx::Error> {
        let Err(e) = tx.commit().await else { return Ok(()) };
        if self.committed(xid).await {
            tracing::info!(xid, "storage: a COMMIT whose answer was lost had committed");
            return Ok(());
        }
        Err(e)
    }

    /// Whether transaction `xid` committed, by the server's word; false when it aborted, is still in progress after
    /// 30 s, is too old to be known, or the server cannot be asked within those 30 s (the whole wait is bounded,
    /// a query hanging on a half-open connection included).
    ///
    /// "Committed" here is as durable as a `COMMIT`'s own answer: with `synchronous_commit` off, or a failover to an
    /// asynchronous standby, a commit the server reported can be lost — and its transaction id given again, so this
    /// answer could then be another transaction's. Neither is weaker than what that configuration already promises.
    async fn committed(&self, xid: &str) -> bool {
        let ask = async {
            let mut pause = Duration::from_millis(10);
            loop {
                let status = sqlx::query_scalar::<_, Option<String>>("SELECT pg_xact_status($1::xid8)")
                    .bind(xid)
                    .fetch_one(&self.pool)
                    .await;
                match status.as_ref().map(Option::as_deref) {
                    Ok(Some("committed")) => return true,
                    Ok(Some("in progress")) => {
                        tokio::time::sleep(pause).await;
                        pause = (pause * 2).min(Duration::from_millis(500));
                    }
                    _ => return false,
                }
            }
        };
        tokio::time::timeout(READ_BACK_WAIT, ask).await.unwrap_or(false)
    }

    /// The database, shown without credentials.
    pub fn url(&self) -> &DatabaseUrl {
        &self.url
    }

    /// This process's id among the instances (random per start): how it knows its own notifications.
    pub fn instance(&self) -> &str {
        &self.instance
    }

    /// The server's version line (`SELECT version()`, first two words: "PostgreSQL 15.18").
    pub async fn server_version(&self) -> Result<String, StoreError> {
        let line: String = sqlx::query_scalar("SELECT version()").fetch_one(&self.pool).await?;
        Ok(line.split_whitespace().take(2).collect::<Vec<_>>().join(" "))
    }

    /// Applies `component`'s migrations the database has not recorded.
    pub async fn migrate(&self, component: &Component) -> Result<(), StoreError> {
        crate::migrate::postgres(&self.pool, component).await
    }

    /// Takes the advisory lock named `key` (hashed by PostgreSQL's `hashtextextended`) on a connection of its own,
    /// waiting at most `wait`. Every instance on the database excludes every other while one holds it; it is
    /// released when the [`PgLock`] is dropped, or by the server when the holder's connection dies (a killed
    /// process holds nothing).
    pub async fn lock(&self, key: &str, wait: Duration) -> Result<PgLock, StoreError> {
        self.lock_within(key, wait).await?.ok_or_else(|| {
            StoreError::Query(format!("another holdfast instance held `{key}` for more than {} s", wait.as_secs()))
        })
    }

    /// [`PgStore::lock`], with `None` when another instance held the lock all of `wait`.
    pub async fn lock_within(&self, key: &str, wait: Duration) -> Result<Option<PgLock>, StoreError> {
        let mut conn = self.options.connect().await.map_err(|e| StoreError::Connect {
            url: self.url.to_string(),
            reason: holdfast_core::redact_urls(&e.to_string()).into_owned(),
        })?;
        let millis = wait.as_millis().clamp(1, i64::MAX as u128);
        sqlx::query("SELECT set_config('lock_timeout', $1, false)").bind(millis.to_string()).execute(&mut conn).await?;
        // The server frees a lock when it sees its connection die; over TCP it looks for that within about 30 s
        // (keepalives, and a timeout on unacknowledged data) instead of the system's default of hours, so another
        // instance can take over from a holder whose host froze or whose network was cut.
        sqlx::raw_sql("SET tcp_keepalives_idle = 10; SET tcp_keepalives_interval = 5; SET tcp_keepalives_count = 3;")
            .execute(&mut conn)
            .await?;
        // PostgreSQL 12 and later; an older server keeps only the keepalives.
        if let Err(e) = sqlx::raw_sql("SET tcp_user_timeout = 30000").execute(&mut conn).await {
            tracing::debug!(error = %e, "the server has no tcp_user_timeout");
        }
        let taken = sqlx::query("SELECT pg_advisory_lock(hashtextextended($1, 0))").bind(key).execute(&mut conn).await;
        match taken {
            Ok(_) => Ok(Some(PgLock { conn })),
            Err(sqlx::Error::Database(e)) if e.code().as_deref() == Some("55P03") => Ok(None),
            Err(e) => Err(e.into()),
        }
    }
}

/// A held advisory lock: the connection that holds it, closed (and the lock released) when dropped.
pub struct PgLock {
    conn: PgConnection,
}

impl PgLock {
    /// The lock's own connection: a statement run on it commits only while the lock is held (a session's advisory
    /// lock lives as long as its connection).
    pub(crate) fn conn(&mut self) -> &mut PgConnection {
        &mut self.conn
    }

    /// Whether the lock is still held: its connection answers and still holds an advisory lock (a connection that
    /// died, or a server that restarted, has lost it, and another instance may hold it now).
    /// A connection that does not answer within [`HELD_CHECK_TIMEOUT`] counts as lost.
    pub async fn is_held(&mut self) -> bool {
        let held = sqlx::query_scalar::<_, bool>(
            "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid() AND granted)",
        )
        .fetch_one(&mut self.conn);
        matches!(tokio::time::timeout(HELD_CHECK_TIMEOUT, held).await, Ok(Ok(true)))
    }
}

impl std::fmt::Debug for PgLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PgLock")
    }
}

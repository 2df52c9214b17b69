//! A fresh PostgreSQL database per test, on the server `scripts/test.sh` starts (`scripts/postgres.sh`): the
//! server's URL is in `HOLDFAST_TEST_DATABASE_URL`. Without it a test is skipped — unless
//! `HOLDFAST_REQUIRE_POSTGRES=1` (set by `scripts/test.sh`), when the missing server fails the test instead: the
//! suite's run never passes without PostgreSQL.

#![allow(clippy::panic)] // A test helper: a missing or broken test server fails the test that asked for it.

use holdfast_core::config::DatabaseUrl;
use sqlx::Connection;

/// The test server's URL variable.
pub const TEST_DATABASE_URL: &str = "HOLDFAST_TEST_DATABASE_URL";

/// Creates an empty database on the test server and returns its URL; `None` when no server is configured and
/// PostgreSQL is not required. A database per test: advisory locks, `LISTEN` channels and tables stay apart.
pub async fn fresh_database() -> Option<DatabaseUrl> {
    let base = match std::env::var(TEST_DATABASE_URL) {
        Ok(url) if !url.is_empty() => url,
        _ => {
            if std::env::var("HOLDFAST_REQUIRE_POSTGRES").as_deref() == Ok("1") {
                panic!("HOLDFAST_REQUIRE_POSTGRES=1 but {TEST_DATABASE_URL} is not set (scripts/postgres.sh start)");
            }
            eprintln!("skipped: no PostgreSQL ({TEST_DATABASE_URL} is not set)");
            return None;
        }
    };
    let mut conn = sqlx::PgConnection::connect(&base).await.unwrap_or_else(|e| panic!("test PostgreSQL: {e}"));
    let name = format!("hf_{:016x}", rand_u64());
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
        .execute(&mut conn)
        .await
        .unwrap_or_else(|e| panic!("CREATE DATABASE: {e}"));
    let (prefix, _) = base.rsplit_once('/').unwrap_or((&base, ""));
    Some(DatabaseUrl::parse(&format!("{prefix}/{name}")).unwrap_or_else(|e| panic!("{e}")))
}

fn rand_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos()));
    h.finish()
}

/// Kills the connections that hold a session-level advisory lock in the database `url` names (a crashed holder, a
/// cut network, as the server sees them); returns how many. Other databases on the server are left alone.
pub async fn kill_advisory_lock_holders(url: &DatabaseUrl) -> i64 {
    let mut conn = sqlx::PgConnection::connect(url.expose()).await.unwrap_or_else(|e| panic!("test PostgreSQL: {e}"));
    sqlx::query_scalar(
        "SELECT count(pg_terminate_backend(pid))::bigint FROM pg_locks
         WHERE locktype = 'advisory' AND granted AND pid <> pg_backend_pid()
           AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
    )
    .fetch_one(&mut conn)
    .await
    .unwrap_or_else(|e| panic!("pg_terminate_backend: {e}"))
}

/// `VACUUM ANALYZE` of the database `url` names: what autovacuum does after a bulk load, done now so that it does
/// not run in the middle of a measurement (it competes for the machine's cores and changes the plans under it).
pub async fn vacuum_analyze(url: &DatabaseUrl) {
    let mut conn = sqlx::PgConnection::connect(url.expose()).await.unwrap_or_else(|e| panic!("test PostgreSQL: {e}"));
    sqlx::query("VACUUM ANALYZE").execute(&mut conn).await.unwrap_or_else(|e| panic!("VACUUM ANALYZE: {e}"));
}

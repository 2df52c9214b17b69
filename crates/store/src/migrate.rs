//! One migration runner for every table, on both backends.
//!
//! Each table's [`Component`] (declared in [`crate::schema`], its SQL in `crates/store/migrations/`): its name and its
//! [`Migration`]s in order, each with the SQLite and the PostgreSQL form of the same step. [`sqlite`] and [`postgres`] apply the steps a database has not recorded, each
//! in the transaction that records it in `holdfast_migrations (component, version, applied_at)`, so a crash leaves a
//! step either applied and recorded or neither. On PostgreSQL the run holds an advisory lock: instances starting
//! together migrate one after the other. A database that records a step this build does not know was migrated by
//! a newer holdfast and is refused rather than used.
//!
//! ```
//! use holdfast_store::migrate::{self, Component, Migration, SqliteStep};
//! const NOTES: Component = Component {
//!     name: "notes",
//!     migrations: &[Migration {
//!         version: 1,
//!         sqlite: SqliteStep::Sql("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL);"),
//!         postgres: "CREATE TABLE notes (id BIGSERIAL PRIMARY KEY, body TEXT NOT NULL);",
//!     }],
//! };
//! let mut conn = holdfast_store::sqlite::open_memory().unwrap();
//! migrate::sqlite(&mut conn, &NOTES).unwrap();
//! migrate::sqlite(&mut conn, &NOTES).unwrap(); // applied once
//! let n: i64 = conn.query_row("SELECT count(*) FROM holdfast_migrations", [], |r| r.get(0)).unwrap();
//! assert_eq!(n, 1);
//! ```

use crate::StoreError;
use rusqlite::{Connection, OptionalExtension};

/// The SQLite form of a step.
#[derive(Clone, Copy)]
pub enum SqliteStep {
    /// Statements run as one batch.
    Sql(&'static str),
    /// Code, for a step that must look before it changes (a column older files may already have).
    Code(fn(&rusqlite::Transaction<'_>) -> rusqlite::Result<()>),
}

impl std::fmt::Debug for SqliteStep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Sql(sql) => f.debug_tuple("Sql").field(sql).finish(),
            Self::Code(_) => f.write_str("Code(..)"),
        }
    }
}

/// One versioned step, in both dialects.
#[derive(Debug, Clone, Copy)]
pub struct Migration {
    /// From 1, increasing by one.
    pub version: i64,
    /// The SQLite form.
    pub sqlite: SqliteStep,
    /// The PostgreSQL form (one or more statements).
    pub postgres: &'static str,
}

/// The tables one owner keeps, and how they came to be.
#[derive(Debug, Clone, Copy)]
pub struct Component {
    /// A stable name (`journal`, `sessions`, …), the key in `holdfast_migrations`.
    pub name: &'static str,
    /// Every step, oldest first.
    pub migrations: &'static [Migration],
}

impl Component {
    fn latest(&self) -> i64 {
        self.migrations.last().map_or(0, |m| m.version)
    }

    fn failed(&self, version: i64, reason: impl std::fmt::Display) -> StoreError {
        StoreError::Migrate { component: self.name.to_owned(), version, reason: reason.to_string() }
    }

    fn newer(&self, recorded: i64) -> StoreError {
        StoreError::Config(format!(
            "the database holds {} schema v{recorded}, newer than this holdfast knows (v{}): it was migrated by a \
             newer release; run that release, or restore a backup taken before the upgrade",
            self.name,
            self.latest()
        ))
    }
}

const SQLITE_TABLE: &str = "CREATE TABLE IF NOT EXISTS holdfast_migrations (
    component TEXT NOT NULL, version INTEGER NOT NULL, applied_at TEXT NOT NULL, PRIMARY KEY (component, version));";

const POSTGRES_TABLE: &str = "CREATE TABLE IF NOT EXISTS holdfast_migrations (
    component TEXT NOT NULL, version BIGINT NOT NULL, applied_at TEXT NOT NULL, PRIMARY KEY (component, version))";

fn now() -> String {
    chrono::Utc::now().to_rfc3339()
}

/// Applies `component`'s steps that `conn`'s database has not recorded (one immediate transaction).
pub fn sqlite(conn: &mut Connection, component: &Component) -> Result<(), StoreError> {
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    tx.execute_batch(SQLITE_TABLE)?;
    let recorded: Option<i64> = tx
        .query_row("SELECT MAX(version) FROM holdfast_migrations WHERE component = ?1", [component.name], |r| r.get(0))
        .optional()?
        .flatten();
    let recorded = recorded.unwrap_or(0);
    if recorded > component.latest() {
        return Err(component.newer(recorded));
    }
    for m in component.migrations.iter().filter(|m| m.version > recorded) {
        let applied = match m.sqlite {
            SqliteStep::Sql(sql) => tx.execute_batch(sql),
            SqliteStep::Code(step) => step(&tx),
        };
        applied.map_err(|e| component.failed(m.version, e))?;
        tx.execute(
            "INSERT INTO holdfast_migrations (component, version, applied_at) VALUES (?1, ?2, ?3)",
            rusqlite::params![component.name, m.version, now()],
        )?;
    }
    tx.commit()?;
    Ok(())
}

/// Applies `component`'s steps that the database has not recorded, under an advisory lock that makes concurrent
/// starts take turns (one transaction: PostgreSQL's DDL is transactional).
pub async fn postgres(pool: &sqlx::PgPool, component: &Component) -> Result<(), StoreError> {
    let mut tx = pool.begin().await?;
    sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended('holdfast:migrate', 0))").execute(&mut *tx).await?;
    sqlx::raw_sql(POSTGRES_TABLE).execute(&mut *tx).await?;
    let recorded: Option<i64> = sqlx::query_scalar("SELECT MAX(version) FROM holdfast_migrations WHERE component = $1")
        .bind(component.name)
        .fetch_one(&mut *tx)
        .await?;
    let recorded = recorded.unwrap_or(0);
    if recorded > component.latest() {
        return Err(component.newer(recorded));
    }
    for m in component.migrations.iter().filter(|m| m.version > recorded) {
        sqlx::raw_sql(m.postgres).execute(&mut *tx).await.map_err(|e| component.failed(m.version, e))?;
        sqlx::query("INSERT INTO holdfast_migrations (component, version, applied_at) VALUES ($1, $2, $3)")
            .bind(component.name)
            .bind(m.version)
            .bind(now())
            .execute(&mut *tx)
            .await?;
    }
    tx.commit().await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const V1: Migration = Migration {
        version: 1,
        sqlite: SqliteStep::Sql("CREATE TABLE t (a TEXT);"),
        postgres: "CREATE TABLE t (a TEXT)",
    };
    const V2: Migration = Migration {
        version: 2,
        sqlite: SqliteStep::Sql("ALTER TABLE t ADD COLUMN b TEXT;"),
        postgres: "ALTER TABLE t ADD COLUMN b TEXT",
    };
    const BROKEN: Migration =
        Migration { version: 2, sqlite: SqliteStep::Sql("ALTER TABLE nope ADD COLUMN b TEXT;"), postgres: "" };

    #[test]
    fn steps_apply_once_in_order_and_a_newer_database_is_refused() {
        let mut conn = crate::sqlite::open_memory().unwrap();
        sqlite(&mut conn, &Component { name: "t", migrations: &[V1] }).unwrap();
        let failed = sqlite(&mut conn, &Component { name: "t", migrations: &[V1, BROKEN] }).unwrap_err();
        assert!(matches!(failed, StoreError::Migrate { version: 2, .. }), "{failed}");
        sqlite(&mut conn, &Component { name: "t", migrations: &[V1, V2] }).unwrap();
        conn.execute("INSERT INTO t (a, b) VALUES ('x', 'y')", []).unwrap();
        let older = sqlite(&mut conn, &Component { name: "t", migrations: &[V1] }).unwrap_err();
        assert!(older.to_string().contains("newer than this holdfast knows (v1)"), "{older}");
        let steps: i64 = conn.query_row("SELECT count(*) FROM holdfast_migrations", [], |r| r.get(0)).unwrap();
        assert_eq!(steps, 2);
    }
}

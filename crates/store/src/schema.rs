//! Every table holdfast keeps, in both dialects, in one place: each owner's steps are SQL files under
//! `crates/store/migrations/<dialect>/<owner>/NNNN_*.sql`, compiled in, and applied in order by the one runner
//! ([`crate::migrate`], recorded in `holdfast_migrations`). A file that must look before it changes (a column older
//! SQLite files may already have) has its step as code here, around its SQL file; a step one dialect does not need
//! is empty there (sessions' step 3 on SQLite). What each table's
//! acknowledgement promises is declared beside it ([`crate::durability`]).
//!
//! Every table's queries are this crate's too; the domain crate that uses them decides what their rows mean.
//!
//! | queries | used by | component | tables |
//! |---|---|---|---|
//! | [`crate::journal`] | `holdfast-web3` | [`JOURNAL`] | `journal` |
//! | [`crate::sessions`] | `holdfast-agent` | [`SESSIONS`] | `sessions`, `session_state`, `session_parts`, `session_messages`, `session_links` |
//! | [`crate::memory`] | `holdfast-memory` | [`MEMORY`] | `memory_*` |
//! | [`crate::tasks`], [`crate::messages`] | `holdfast-memory` | [`TASKS`], [`MESSAGES`] | `tasks_items`, `messages_*`, `reminders_items` |
//! | [`crate::fanout`] | `holdfast-core`'s event relay | [`EVENTS`] | `holdfast_event_spill`, `holdfast_event_key` (PostgreSQL only) |
//!
//! ```
//! let mut conn = holdfast_store::sqlite::open_memory().unwrap();
//! for component in &holdfast_store::schema::ALL {
//!     holdfast_store::migrate::sqlite(&mut conn, component).unwrap();
//! }
//! let n: i64 = conn.query_row("SELECT count(*) FROM holdfast_migrations", [], |r| r.get(0)).unwrap();
//! assert_eq!(n, 17);
//! ```

use crate::migrate::{Component, Migration, SqliteStep};

/// One migration file's text, by dialect, owner and name.
macro_rules! sql {
    ($dialect:literal, $owner:literal, $file:literal) => {
        include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/migrations/", $dialect, "/", $owner, "/", $file))
    };
}

/// A step whose SQL is the same in both dialects.
macro_rules! both {
    ($version:literal, $owner:literal, $file:literal) => {
        Migration {
            version: $version,
            sqlite: SqliteStep::Sql(sql!("sqlite", $owner, $file)),
            postgres: sql!("postgres", $owner, $file),
        }
    };
}

/// The transaction/payment journal (`holdfast-web3`): value-moving entries and payments, which the caps are counted
/// from.
pub const JOURNAL: Component = Component {
    name: "journal",
    migrations: &[
        Migration {
            version: 1,
            sqlite: SqliteStep::Code(journal_sqlite_v1),
            postgres: sql!("postgres", "journal", "0001_journal.sql"),
        },
        // The user authorization an entry's action spent (`au_…`), so that no other action runs by itself on it.
        both!(2, "journal", "0002_user_authorization.sql"),
        // The genesis block hash of the chain a transaction was signed for (a devnet reset is not a dropped tx).
        both!(3, "journal", "0003_genesis.sql"),
        // When a payment's purchase was delivered: undelivered payments to one payee are counted across sessions.
        both!(4, "journal", "0004_delivered.sql"),
        // One row per intent among the rows that count (LIVE): one released or reverted may be reserved again; and a
        // release that knows `stalled` refuses to run beside an older binary that does not.
        both!(5, "journal", "0005_intent_released.sql"),
    ],
};

/// Version 1 of the journal on SQLite: the table, with the `intent` column added to a file that predates it, then
/// the indexes that need it.
fn journal_sqlite_v1(tx: &rusqlite::Transaction<'_>) -> rusqlite::Result<()> {
    tx.execute_batch(sql!("sqlite", "journal", "0001_journal.sql"))?;
    let has_intent = tx.prepare("SELECT 1 FROM pragma_table_info('journal') WHERE name = 'intent'")?.exists([])?;
    if !has_intent {
        tx.execute_batch("ALTER TABLE journal ADD COLUMN intent TEXT;")?;
    }
    tx.execute_batch(sql!("sqlite", "journal", "0001_journal_intent.sql"))
}

/// Sessions (this crate's [`crate::sessions`], used by `holdfast-agent`): their rows, saved state (one row per part since version 2), history and links.
pub const SESSIONS: Component = Component {
    name: "sessions",
    migrations: &[
        both!(1, "sessions", "0001_sessions.sql"),
        // A session's saved state as one row per part (a register, the context bank, the confirmations), so a call
        // writes only what it changed. It also marks the `console` history role: a release before it would read
        // such a record as the user's words, so it refuses a database that has this version.
        both!(2, "sessions", "0002_session_parts.sql"),
        // PostgreSQL only: which save wrote a row's revision, read back after a COMMIT whose answer was lost. On SQLite
        // the step is empty: the writer's commit answers in the same process, with no connection to lose in between.
        Migration {
            version: 3,
            sqlite: SqliteStep::Sql(""),
            postgres: sql!("postgres", "sessions", "0003_save_id.sql"),
        },
    ],
};

/// Memory blocks, their edit history, their search indexes and cached embeddings (`holdfast-memory`).
pub const MEMORY: Component = Component {
    name: "memory",
    migrations: &[
        both!(1, "memory", "0001_blocks_history_search.sql"),
        // Who started the turn of a block's last write, when it was not the user.
        both!(2, "memory", "0002_block_written_by.sql"),
    ],
};

/// Tasks (`holdfast-memory`).
pub const TASKS: Component = Component { name: "tasks", migrations: &[both!(1, "tasks", "0001_tasks.sql")] };

/// Messages between agents, inboxes, the outbox, groups, channels, the anti-loop windows and reminders
/// (`holdfast-memory`). Ids, names and times that are sorted or compared are `COLLATE "C"` on PostgreSQL: byte
/// order, as in SQLite, so both list alike and the fixed-width times compare as times whatever the locale.
pub const MESSAGES: Component = Component {
    name: "messages",
    migrations: &[
        Migration {
            version: 1,
            sqlite: SqliteStep::Code(messages_sqlite_v1),
            postgres: sql!("postgres", "messages", "0001_messages_reminders.sql"),
        },
        // A reminder to other agents that fires inside the pair's anti-loop window waits until it ends.
        both!(2, "messages", "0002_reminder_not_before.sql"),
        // The session that scheduled a reminder: a reminder to the user is announced there, on whichever instance
        // serves it.
        both!(3, "messages", "0003_reminder_session.sql"),
        // Who held each agent's inbox last, and whether it let go cleanly (PostgreSQL only: on the SQLite file one
        // process holds every inbox).
        both!(4, "messages", "0004_inbox_holds.sql"),
        // Who started the turn that scheduled a reminder, when it was not the user: its turn names them.
        both!(5, "messages", "0005_reminder_asked_by.sql"),
    ],
};

/// The message tables on SQLite, and on a file that has them from before `hops` existed, that column. (Files written
/// before the one runner recorded their steps in `memory_migrations`; this step finds their tables in place.)
fn messages_sqlite_v1(tx: &rusqlite::Transaction<'_>) -> rusqlite::Result<()> {
    tx.execute_batch(sql!("sqlite", "messages", "0001_messages_reminders.sql"))?;
    for table in ["messages_log", "reminders_items"] {
        let has: bool =
            tx.query_row("SELECT EXISTS (SELECT 1 FROM pragma_table_info(?1) WHERE name = 'hops')", [table], |r| {
                r.get(0)
            })?;
        if !has {
            tx.execute_batch(&format!("ALTER TABLE {table} ADD COLUMN hops INTEGER NOT NULL DEFAULT 0;"))?;
        }
    }
    Ok(())
}

/// The event relay's spill table and signing key (this crate's [`crate::fanout`]; PostgreSQL only).
pub const EVENTS: Component = Component { name: "events", migrations: &[both!(1, "events", "0001_event_relay.sql")] };

/// Every component.
pub const ALL: [Component; 6] = [JOURNAL, SESSIONS, MEMORY, TASKS, MESSAGES, EVENTS];

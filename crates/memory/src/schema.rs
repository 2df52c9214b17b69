//! Every table of this crate, in both dialects, as migrations for holdfast-store's one runner
//! ([`holdfast_store::migrate`], recorded in `holdfast_migrations`): [`MEMORY`] (blocks, their history, the search
//! indexes, cached embeddings), [`TASKS`] and [`MESSAGES`] (messages between agents, inboxes, the outbox, groups,
//! channels, the anti-loop windows, reminders). The SQLite file ([`crate::Database`]) applies the SQLite forms; the
//! PostgreSQL stores apply the PostgreSQL forms of the same versions.
//!
//! Files written before this runner recorded their steps in `memory_migrations`; version 1 of each component is
//! written to find their tables in place (`IF NOT EXISTS`, and columns later steps of the old list added are added
//! when missing), so such a file is brought up to date without losing a row.

use holdfast_store::migrate::{Component, Migration, SqliteStep};

/// Memory blocks, their edit history, their search indexes and cached embeddings.
pub const MEMORY: Component = Component {
    name: "memory",
    migrations: &[Migration { version: 1, sqlite: SqliteStep::Sql(MEMORY_SQLITE), postgres: MEMORY_POSTGRES }],
};

/// Tasks.
pub const TASKS: Component = Component {
    name: "tasks",
    migrations: &[Migration { version: 1, sqlite: SqliteStep::Sql(TASKS_SQLITE), postgres: TASKS_POSTGRES }],
};

/// Messages between agents, inboxes, the outbox, groups, channels, the anti-loop windows and reminders.
pub const MESSAGES: Component = Component {
    name: "messages",
    migrations: &[
        Migration { version: 1, sqlite: SqliteStep::Code(messages_sqlite_v1), postgres: MESSAGES_POSTGRES },
        // A reminder to other agents that fires inside the pair's anti-loop window waits until it ends.
        Migration {
            version: 2,
            sqlite: SqliteStep::Sql("ALTER TABLE reminders_items ADD COLUMN not_before TEXT;"),
            postgres: r#"ALTER TABLE reminders_items ADD COLUMN IF NOT EXISTS not_before TEXT COLLATE "C";"#,
        },
        // The session that scheduled a reminder: a reminder to the user is announced there, on whichever instance
        // serves it.
        Migration {
            version: 3,
            sqlite: SqliteStep::Sql("ALTER TABLE reminders_items ADD COLUMN session_id TEXT;"),
            postgres: "ALTER TABLE reminders_items ADD COLUMN IF NOT EXISTS session_id TEXT;",
        },
        // Who held each agent's inbox last, and whether it let go cleanly (PostgreSQL only: on the SQLite file one
        // process holds every inbox).
        Migration {
            version: 4,
            sqlite: SqliteStep::Sql(""),
            postgres: "CREATE TABLE IF NOT EXISTS messages_inbox_holds (
                agent_id TEXT PRIMARY KEY,
                holder   TEXT NOT NULL,
                released BOOLEAN NOT NULL
            );",
        },
    ],
};

/// Every component, in the order they are applied.
pub const ALL: [Component; 3] = [MEMORY, TASKS, MESSAGES];

const MEMORY_SQLITE: &str = "
CREATE TABLE IF NOT EXISTS memory_blocks (
    id          INTEGER PRIMARY KEY,
    agent_id    TEXT NOT NULL,
    label       TEXT NOT NULL,
    value       TEXT NOT NULL,
    description TEXT,
    permission  TEXT NOT NULL CHECK (permission IN ('read_only', 'append', 'read_write')),
    char_limit  INTEGER NOT NULL,
    pinned      INTEGER NOT NULL DEFAULT 0,
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL,
    UNIQUE (agent_id, label)
);
CREATE TABLE IF NOT EXISTS memory_history (
    id        INTEGER PRIMARY KEY,
    agent_id  TEXT NOT NULL,
    label     TEXT NOT NULL,
    actor     TEXT NOT NULL,
    op        TEXT NOT NULL,
    old_value TEXT,
    new_value TEXT NOT NULL,
    at        TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS memory_history_by_block ON memory_history (agent_id, label, id);
CREATE VIRTUAL TABLE IF NOT EXISTS memory_fts_values USING fts5 (content, tokenize = 'porter unicode61');
CREATE VIRTUAL TABLE IF NOT EXISTS memory_fts_history USING fts5 (content, tokenize = 'porter unicode61');
CREATE TABLE IF NOT EXISTS memory_embeddings (
    agent_id     TEXT NOT NULL,
    label        TEXT NOT NULL,
    model        TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    vector       BLOB NOT NULL,
    PRIMARY KEY (agent_id, label, model)
);
";

const MEMORY_POSTGRES: &str = "
DO $$ BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_ts_dict WHERE dictname = 'holdfast_english_stem') THEN
        CREATE TEXT SEARCH DICTIONARY holdfast_english_stem (TEMPLATE = snowball, Language = english);
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_ts_config WHERE cfgname = 'holdfast_english') THEN
        CREATE TEXT SEARCH CONFIGURATION holdfast_english (COPY = english);
        ALTER TEXT SEARCH CONFIGURATION holdfast_english
            ALTER MAPPING FOR asciiword, word, numword, asciihword, hword, numhword, hword_asciipart, hword_part,
                hword_numpart
            WITH holdfast_english_stem;
    END IF;
END $$;
CREATE TABLE IF NOT EXISTS memory_blocks (
    id          BIGSERIAL PRIMARY KEY,
    agent_id    TEXT NOT NULL,
    label       TEXT NOT NULL,
    value       TEXT NOT NULL,
    description TEXT,
    permission  TEXT NOT NULL CHECK (permission IN ('read_only', 'append', 'read_write')),
    char_limit  BIGINT NOT NULL,
    pinned      BOOLEAN NOT NULL DEFAULT false,
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL,
    search      tsvector GENERATED ALWAYS AS (
        to_tsvector('holdfast_english', left(regexp_replace(value, '[^[:alnum:]]+', ' ', 'g'), 262144))
    ) STORED,
    UNIQUE (agent_id, label)
);
CREATE INDEX IF NOT EXISTS memory_blocks_search ON memory_blocks USING GIN (search) WITH (fastupdate = off);
CREATE TABLE IF NOT EXISTS memory_history (
    id        BIGSERIAL PRIMARY KEY,
    agent_id  TEXT NOT NULL,
    label     TEXT NOT NULL,
    actor     TEXT NOT NULL,
    op        TEXT NOT NULL,
    old_value TEXT,
    new_value TEXT NOT NULL,
    at        TEXT NOT NULL,
    search    tsvector GENERATED ALWAYS AS (
        to_tsvector('holdfast_english', left(regexp_replace(
            CASE WHEN old_value IS DISTINCT FROM new_value THEN coalesce(old_value, '') ELSE '' END,
            '[^[:alnum:]]+', ' ', 'g'), 262144))
    ) STORED
);
CREATE INDEX IF NOT EXISTS memory_history_by_block ON memory_history (agent_id, label, id);
CREATE INDEX IF NOT EXISTS memory_history_search ON memory_history USING GIN (search) WITH (fastupdate = off);
CREATE TABLE IF NOT EXISTS memory_embeddings (
    agent_id     TEXT NOT NULL,
    label        TEXT NOT NULL,
    model        TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    vector       BYTEA NOT NULL,
    PRIMARY KEY (agent_id, label, model)
);
";

const TASKS_SQLITE: &str = "
CREATE TABLE IF NOT EXISTS tasks_items (
    id           INTEGER PRIMARY KEY,
    agent_id     TEXT NOT NULL,
    title        TEXT NOT NULL,
    notes        TEXT,
    due_at       TEXT,
    priority     TEXT NOT NULL,
    status       TEXT NOT NULL,
    steps        TEXT NOT NULL DEFAULT '[]',
    created_at   TEXT NOT NULL,
    updated_at   TEXT NOT NULL,
    completed_at TEXT
);
CREATE INDEX IF NOT EXISTS tasks_items_by_agent ON tasks_items (agent_id, status);
";

const TASKS_POSTGRES: &str = "
CREATE TABLE IF NOT EXISTS tasks_items (
            id           BIGSERIAL PRIMARY KEY,
            agent_id     TEXT NOT NULL,
            title        TEXT NOT NULL,
            notes        TEXT,
            due_at       TEXT,
            priority     TEXT NOT NULL,
            status       TEXT NOT NULL,
            steps        TEXT NOT NULL DEFAULT '[]',
            created_at   TEXT NOT NULL,
            updated_at   TEXT NOT NULL,
            completed_at TEXT
        );
        CREATE INDEX IF NOT EXISTS tasks_items_by_agent ON tasks_items (agent_id, status);
";

const MESSAGES_SQLITE: &str = "
CREATE TABLE IF NOT EXISTS messages_agents (
    agent_id   TEXT PRIMARY KEY,
    created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS messages_log (
    id          INTEGER PRIMARY KEY,
    sender      TEXT NOT NULL,
    target_type TEXT NOT NULL,
    target_id   TEXT,
    content     TEXT NOT NULL,
    metadata    TEXT,
    session_id  TEXT,
    created_at  TEXT NOT NULL,
    hops        INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS messages_inbox (
    id           INTEGER PRIMARY KEY,
    message_id   INTEGER NOT NULL REFERENCES messages_log (id),
    agent_id     TEXT NOT NULL,
    via          TEXT NOT NULL,
    delivered_at TEXT
);
CREATE INDEX IF NOT EXISTS messages_inbox_pending ON messages_inbox (agent_id, delivered_at, id);
CREATE TABLE IF NOT EXISTS messages_outbox (
    id           INTEGER PRIMARY KEY,
    message_id   INTEGER NOT NULL REFERENCES messages_log (id),
    agent_id     TEXT NOT NULL,
    session_id   TEXT,
    user_id      TEXT,
    forwarded_at TEXT
);
CREATE INDEX IF NOT EXISTS messages_outbox_by_agent ON messages_outbox (agent_id, id);
CREATE TABLE IF NOT EXISTS messages_groups (
    name   TEXT NOT NULL,
    member TEXT NOT NULL,
    PRIMARY KEY (name, member)
);
CREATE TABLE IF NOT EXISTS messages_channels (
    name        TEXT PRIMARY KEY,
    webhook_url TEXT
);
CREATE TABLE IF NOT EXISTS messages_subscriptions (
    channel  TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    PRIMARY KEY (channel, agent_id)
);

CREATE TABLE IF NOT EXISTS reminders_items (
    id          INTEGER PRIMARY KEY,
    agent_id    TEXT NOT NULL,
    due_at      TEXT NOT NULL,
    message     TEXT NOT NULL,
    target_type TEXT NOT NULL,
    target_id   TEXT,
    created_at  TEXT NOT NULL,
    fired_at    TEXT,
    hops        INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS reminders_items_due ON reminders_items (fired_at, due_at);
CREATE INDEX IF NOT EXISTS reminders_items_by_agent ON reminders_items (agent_id, due_at);
CREATE TABLE IF NOT EXISTS messages_cooldowns (
    sender    TEXT NOT NULL,
    recipient TEXT NOT NULL,
    until_at  TEXT NOT NULL,
    PRIMARY KEY (sender, recipient)
);
";

/// The message tables, and on a file that has them from before `hops` existed, that column.
fn messages_sqlite_v1(tx: &rusqlite::Transaction<'_>) -> rusqlite::Result<()> {
    tx.execute_batch(MESSAGES_SQLITE)?;
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

/// Ids, names and times that are sorted or compared are `COLLATE "C"`: byte order, as in SQLite, so both list
/// alike and the fixed-width times compare as times whatever the database's locale.
const MESSAGES_POSTGRES: &str = r#"
CREATE TABLE IF NOT EXISTS messages_agents (
            agent_id   TEXT COLLATE "C" PRIMARY KEY,
            created_at TEXT NOT NULL
        );
        CREATE TABLE IF NOT EXISTS messages_log (
            id          BIGSERIAL PRIMARY KEY,
            sender      TEXT NOT NULL,
            target_type TEXT NOT NULL,
            target_id   TEXT,
            content     TEXT NOT NULL,
            metadata    TEXT,
            session_id  TEXT,
            created_at  TEXT NOT NULL,
            hops        INTEGER NOT NULL DEFAULT 0
        );
        CREATE TABLE IF NOT EXISTS messages_inbox (
            id           BIGSERIAL PRIMARY KEY,
            message_id   BIGINT NOT NULL REFERENCES messages_log (id),
            agent_id     TEXT NOT NULL,
            via          TEXT NOT NULL,
            delivered_at TEXT
        );
        CREATE INDEX IF NOT EXISTS messages_inbox_pending ON messages_inbox (agent_id, id) WHERE delivered_at IS NULL;
        CREATE TABLE IF NOT EXISTS messages_outbox (
            id           BIGSERIAL PRIMARY KEY,
            message_id   BIGINT NOT NULL REFERENCES messages_log (id),
            agent_id     TEXT NOT NULL,
            session_id   TEXT,
            user_id      TEXT,
            forwarded_at TEXT
        );
        CREATE INDEX IF NOT EXISTS messages_outbox_by_agent ON messages_outbox (agent_id, id);
        CREATE TABLE IF NOT EXISTS messages_groups (
            name   TEXT COLLATE "C" NOT NULL,
            member TEXT COLLATE "C" NOT NULL,
            PRIMARY KEY (name, member)
        );
        CREATE TABLE IF NOT EXISTS messages_channels (
            name        TEXT COLLATE "C" PRIMARY KEY,
            webhook_url TEXT
        );
        CREATE TABLE IF NOT EXISTS messages_subscriptions (
            channel  TEXT COLLATE "C" NOT NULL,
            agent_id TEXT COLLATE "C" NOT NULL,
            PRIMARY KEY (channel, agent_id)
        );
        CREATE TABLE IF NOT EXISTS messages_cooldowns (
            sender    TEXT NOT NULL,
            recipient TEXT NOT NULL,
            until_at  TEXT COLLATE "C" NOT NULL,
            PRIMARY KEY (sender, recipient)
        );
        CREATE TABLE IF NOT EXISTS reminders_items (
            id          BIGSERIAL PRIMARY KEY,
            agent_id    TEXT NOT NULL,
            due_at      TEXT COLLATE "C" NOT NULL,
            message     TEXT NOT NULL,
            target_type TEXT NOT NULL,
            target_id   TEXT,
            created_at  TEXT NOT NULL,
            fired_at    TEXT,
            hops        INTEGER NOT NULL DEFAULT 0
        );
        CREATE INDEX IF NOT EXISTS reminders_items_due ON reminders_items (due_at, id) WHERE fired_at IS NULL;
        CREATE INDEX IF NOT EXISTS reminders_items_by_agent ON reminders_items (agent_id, due_at);
"#;

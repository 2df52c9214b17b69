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

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

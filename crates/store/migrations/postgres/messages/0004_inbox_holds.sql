CREATE TABLE IF NOT EXISTS messages_inbox_holds (
    agent_id TEXT PRIMARY KEY,
    holder   TEXT NOT NULL,
    released BOOLEAN NOT NULL
);

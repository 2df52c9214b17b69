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

CREATE TABLE IF NOT EXISTS session_parts (
    session_id TEXT NOT NULL REFERENCES sessions(id),
    part TEXT NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY (session_id, part)
);

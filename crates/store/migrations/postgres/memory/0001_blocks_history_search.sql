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

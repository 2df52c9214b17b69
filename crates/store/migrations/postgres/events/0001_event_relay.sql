CREATE TABLE IF NOT EXISTS holdfast_event_spill (
    id BIGSERIAL PRIMARY KEY, body TEXT NOT NULL, created_at TIMESTAMPTZ NOT NULL DEFAULT now());
CREATE TABLE IF NOT EXISTS holdfast_event_key (id INT PRIMARY KEY CHECK (id = 1), key TEXT NOT NULL);
INSERT INTO holdfast_event_key (id, key)
    VALUES (1, replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''))
    ON CONFLICT (id) DO NOTHING
;

-- Which save wrote the row's revision (a number the writer drew for it): after a COMMIT whose answer was lost, the
-- writer reads it back to learn whether its save landed, instead of reporting a conflict for a save that stands.
ALTER TABLE session_state ADD COLUMN IF NOT EXISTS save_id BIGINT NOT NULL DEFAULT 0;

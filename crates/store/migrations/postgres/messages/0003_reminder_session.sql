ALTER TABLE reminders_items ADD COLUMN IF NOT EXISTS session_id TEXT;

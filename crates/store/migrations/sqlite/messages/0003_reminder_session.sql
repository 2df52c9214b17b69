ALTER TABLE reminders_items ADD COLUMN session_id TEXT;

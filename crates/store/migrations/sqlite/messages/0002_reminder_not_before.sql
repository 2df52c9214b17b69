ALTER TABLE reminders_items ADD COLUMN not_before TEXT;

-- Who started the turn that scheduled a reminder, when it was not the user (`TurnStarter::Other`): the reminder's
-- own turn names them when it fires.
ALTER TABLE reminders_items ADD COLUMN IF NOT EXISTS asked_by TEXT;

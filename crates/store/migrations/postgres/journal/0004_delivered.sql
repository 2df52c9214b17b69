-- When what a payment paid for was delivered (the x402 response was stored); NULL while it is not known to be, and
-- the server (the preset's host and port) it was paid for. A server that takes payments and delivers nothing is paid at
-- most a few times an hour, counted from these rows by payee or by server, across every session and instance.
-- Payments made before this step count as delivered.
ALTER TABLE journal ADD COLUMN delivered_at TEXT;
ALTER TABLE journal ADD COLUMN server TEXT;
UPDATE journal SET delivered_at = updated_at WHERE kind = 'payment';
CREATE INDEX IF NOT EXISTS journal_undelivered ON journal (created_at) WHERE kind = 'payment' AND delivered_at IS NULL;

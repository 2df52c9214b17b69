-- When what a payment paid for was delivered (the x402 response was stored); NULL while it is not known to be. A
-- server that takes payments and delivers nothing is paid at most a few times an hour, counted from these rows across
-- every session and instance. Payments made before this step count as delivered.
ALTER TABLE journal ADD COLUMN delivered_at TEXT;
UPDATE journal SET delivered_at = updated_at WHERE kind = 'payment';
CREATE INDEX IF NOT EXISTS journal_undelivered ON journal (to_address, chain_id) WHERE delivered_at IS NULL;

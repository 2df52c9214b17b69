-- One row per intent among the rows that count (the journal's LIVE statuses): an intent whose entry was released
-- (`failed`, `refused`, `dropped`: its nonce mined by another transaction, `chain_reset`) or `reverted` may be
-- reserved again — a retry of it is a new action, not an error of the index.
DROP INDEX IF EXISTS journal_intent;
CREATE UNIQUE INDEX IF NOT EXISTS journal_intent ON journal (intent)
    WHERE intent IS NOT NULL AND status IN ('reserved', 'signed', 'pending', 'unknown', 'stalled', 'confirmed');

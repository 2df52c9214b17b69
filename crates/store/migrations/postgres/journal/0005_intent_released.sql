-- An intent whose entry was released (`dropped`: its nonce mined by another transaction; `chain_reset`) may be
-- reserved again, as one `failed` or `refused` may: a retry of it is a new action, not an error of the index.
DROP INDEX IF EXISTS journal_intent;
CREATE UNIQUE INDEX IF NOT EXISTS journal_intent ON journal (intent)
    WHERE intent IS NOT NULL AND status NOT IN ('failed', 'refused', 'dropped', 'chain_reset');

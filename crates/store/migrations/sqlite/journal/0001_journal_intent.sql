CREATE INDEX IF NOT EXISTS journal_spend ON journal (chain_id, from_address, asset, day);
CREATE UNIQUE INDEX IF NOT EXISTS journal_intent ON journal (intent)
    WHERE intent IS NOT NULL AND status NOT IN ('failed', 'refused');

CREATE TABLE IF NOT EXISTS journal (
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    network TEXT NOT NULL,
    chain_id BIGINT NOT NULL,
    from_address TEXT NOT NULL,
    to_address TEXT NOT NULL,
    nonce BIGINT,
    value TEXT NOT NULL,
    asset TEXT NOT NULL,
    asset_symbol TEXT NOT NULL,
    amount TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    raw_tx TEXT,
    tx_hash TEXT,
    status TEXT NOT NULL,
    block_number BIGINT,
    gas_used TEXT,
    error TEXT,
    summary TEXT NOT NULL,
    day TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    intent TEXT
);
CREATE INDEX IF NOT EXISTS journal_status ON journal (status);
CREATE INDEX IF NOT EXISTS journal_fingerprint ON journal (fingerprint);
CREATE INDEX IF NOT EXISTS journal_session ON journal (session_id);
CREATE INDEX IF NOT EXISTS journal_spend ON journal (chain_id, from_address, asset, day);
CREATE UNIQUE INDEX IF NOT EXISTS journal_intent ON journal (intent)
    WHERE intent IS NOT NULL AND status NOT IN ('failed', 'refused');

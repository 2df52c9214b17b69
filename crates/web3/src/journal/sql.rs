//! The journal's SQL, one text for both backends: statements are written with PostgreSQL's `$n` parameters, which
//! [`for_sqlite`] turns into SQLite's `?n` (same numbers, so a parameter used twice stays one); parameters are
//! [`Param`]s each backend binds. Also: the reading of a row. (The table's migrations are holdfast-store's
//! [`holdfast_store::schema::JOURNAL`].)

use super::entry::{EntryKind, EntryStatus, JournalEntry, NewEntry};
use super::store::Select;
use chrono::{DateTime, Utc};
use serde_json::Value;

/// Statuses that count against caps and block a second send of the same action or intent.
pub(super) const LIVE: &str = "('reserved','signed','pending','unknown','confirmed')";

/// Every column a [`JournalEntry`] is read from, in [`RawEntry`]'s order.
pub(super) const COLUMNS: &str = "id, session_id, kind, network, chain_id, from_address, to_address, nonce, value, \
                                  asset, asset_symbol, amount, fingerprint, raw_tx, tx_hash, status, block_number, \
                                  gas_used, error, summary, created_at, updated_at, intent, genesis";

/// `$n` → `?n`. (No statement here has a `$` inside a string literal.)
pub(super) fn for_sqlite(sql: &str) -> String {
    sql.replace('$', "?")
}

/// One bound value.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Param {
    Text(Option<String>),
    Int(Option<i64>),
}

fn text(s: impl Into<String>) -> Param {
    Param::Text(Some(s.into()))
}

fn opt_text(s: Option<&str>) -> Param {
    Param::Text(s.map(str::to_owned))
}

pub(super) fn int(n: u64) -> Param {
    Param::Int(Some(i64::try_from(n).unwrap_or(i64::MAX)))
}

fn opt_int(n: Option<u64>) -> Param {
    Param::Int(n.and_then(|n| i64::try_from(n).ok()))
}

/// A statement and its parameters.
pub(super) type Statement = (String, Vec<Param>);

/// One new row, ready to insert.
#[derive(Debug, Clone)]
pub(super) struct NewRow {
    pub id: String,
    pub entry: NewEntry,
    pub status: EntryStatus,
    pub now: String,
    pub day: String,
}

pub(super) fn insert(r: &NewRow) -> Statement {
    let e = &r.entry;
    let sql = format!(
        "INSERT INTO journal ({COLUMNS}, day, user_authorization) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, \
         $11, $12, $13, $14, $15, $16, NULL, NULL, $17, $18, $19, $19, $20, NULL, $21, $22)"
    );
    let params = vec![
        text(&r.id),
        text(&e.session_id),
        text(e.kind.as_str()),
        text(&e.network),
        int(e.chain_id),
        text(&e.from),
        text(&e.to),
        opt_int(e.nonce),
        text(&e.value),
        text(&e.asset),
        text(&e.asset_symbol),
        text(&e.amount),
        text(&e.fingerprint),
        opt_text(e.raw_tx.as_deref()),
        opt_text(e.tx_hash.as_deref()),
        text(r.status.as_str()),
        Param::Text(e.error.as_deref().map(super::stored_error)),
        text(e.summary.to_string()),
        text(&r.now),
        opt_text(e.intent.as_deref()),
        text(&r.day),
        opt_text(e.authorization.as_ref().map(|a| a.id.as_str())),
    ];
    (sql, params)
}

/// A live entry of another intent that holds the user authorization `e` relies on (when it relies on one).
pub(super) fn authorization_holder(e: &NewEntry) -> Option<Statement> {
    let used = e.authorization.as_ref().filter(|a| a.relied_on)?;
    Some((
        format!(
            "SELECT {COLUMNS} FROM journal WHERE user_authorization = $1 AND (intent IS NULL OR intent <> $2) \
             AND status IN {LIVE} ORDER BY created_at LIMIT 1"
        ),
        vec![text(&used.id), text(e.intent.clone().unwrap_or_default())],
    ))
}

/// The live entry of the same intent (or, without one, of the same fingerprint): idempotency.
pub(super) fn same_action(e: &NewEntry) -> Statement {
    let (column, key) = match &e.intent {
        Some(intent) => ("intent", intent.clone()),
        None => ("fingerprint", e.fingerprint.clone()),
    };
    (
        format!("SELECT {COLUMNS} FROM journal WHERE {column} = $1 AND status IN {LIVE} ORDER BY created_at LIMIT 1"),
        vec![text(key)],
    )
}

fn kinds_sql(kinds: &[EntryKind]) -> String {
    let list: Vec<String> = kinds.iter().map(|k| format!("'{}'", k.as_str())).collect();
    format!("({})", list.join(","))
}

/// Live amounts of `asset` sent by `from` on `chain_id` on `day`, in entries of `kinds` (none for no kinds).
pub(super) fn spent(chain_id: u64, from: &str, asset: &str, kinds: &[EntryKind], day: &str) -> Option<Statement> {
    if kinds.is_empty() {
        return None;
    }
    let sql = format!(
        "SELECT amount FROM journal WHERE chain_id = $1 AND from_address = $2 AND asset = $3 AND day = $4 \
         AND kind IN {} AND status IN {LIVE}",
        kinds_sql(kinds)
    );
    Some((sql, vec![int(chain_id), text(from), text(asset), text(day)]))
}

pub(super) fn mark_signed(
    id: &str,
    nonce: Option<u64>,
    raw: &str,
    hash: &str,
    genesis: Option<&str>,
    now: &str,
) -> Statement {
    (
        "UPDATE journal SET status = 'signed', nonce = $2, raw_tx = $3, tx_hash = $4, updated_at = $5, genesis = $6 \
         WHERE id = $1 AND status = 'reserved'"
            .to_owned(),
        vec![text(id), opt_int(nonce), text(raw), text(hash), text(now), opt_text(genesis)],
    )
}

/// Fields that change as an entry settles, as stored (`None` keeps a field).
#[derive(Debug, Clone, Default)]
pub(super) struct StoredUpdate {
    pub tx_hash: Option<String>,
    pub block_number: Option<u64>,
    pub gas_used: Option<String>,
    pub error: Option<String>,
    pub summary: Option<String>,
}

/// Moves `id` to `to`, when it is in one of `from` (any status when `from` is `None`).
pub(super) fn set_status(
    id: &str,
    from: Option<&[EntryStatus]>,
    to: EntryStatus,
    u: StoredUpdate,
    now: &str,
) -> Statement {
    let guard = from.map_or(String::new(), |from| {
        let allowed: Vec<String> = from.iter().map(|s| format!("'{}'", s.as_str())).collect();
        format!(" AND status IN ({})", allowed.join(","))
    });
    let sql = format!(
        "UPDATE journal SET status = $2, tx_hash = COALESCE($3, tx_hash), block_number = COALESCE($4, block_number), \
         gas_used = COALESCE($5, gas_used), error = COALESCE($6, error), summary = COALESCE($7, summary), \
         updated_at = $8 WHERE id = $1{guard}"
    );
    let params = vec![
        text(id),
        text(to.as_str()),
        Param::Text(u.tx_hash),
        opt_int(u.block_number),
        Param::Text(u.gas_used),
        Param::Text(u.error),
        Param::Text(u.summary),
        text(now),
    ];
    (sql, params)
}

pub(super) fn highest_live_nonce(chain_id: u64, from: &str) -> Statement {
    (
        "SELECT MAX(nonce) FROM journal WHERE chain_id = $1 AND from_address = $2 AND kind != 'payment' \
         AND nonce IS NOT NULL AND status IN ('signed','pending','unknown','confirmed','reverted')"
            .to_owned(),
        vec![int(chain_id), text(from)],
    )
}

/// The statement a [`Select`] runs.
pub(super) fn select(q: &Select) -> Statement {
    let (tail, params) = match q {
        Select::Id(id) => ("WHERE id = $1".to_owned(), vec![text(id)]),
        Select::LiveFingerprint(fp) => {
            (format!("WHERE fingerprint = $1 AND status IN {LIVE} ORDER BY created_at LIMIT 1"), vec![text(fp)])
        }
        Select::LiveIntent(intent) => (format!("WHERE intent = $1 AND status IN {LIVE} LIMIT 1"), vec![text(intent)]),
        Select::Unresolved => {
            ("WHERE status IN ('reserved','signed','pending','unknown') ORDER BY created_at".to_owned(), vec![])
        }
        Select::UnsettledSends { chain_id, from } => (
            "WHERE chain_id = $1 AND from_address = $2 AND kind != 'payment' AND status IN ('signed','unknown') \
             ORDER BY created_at"
                .to_owned(),
            vec![int(*chain_id), text(from)],
        ),
        Select::RecentlyFailedSends { since } => (
            "WHERE status IN ('failed','dropped','chain_reset') AND (tx_hash IS NOT NULL OR kind = 'payment') \
             AND updated_at >= $1 \
             ORDER BY created_at"
                .to_owned(),
            vec![text(since)],
        ),
        Select::Session(id) => ("WHERE session_id = $1 ORDER BY created_at".to_owned(), vec![text(id)]),
        Select::List { session_id, kind, limit } => {
            let mut params = Vec::new();
            let mut conditions = Vec::new();
            if let Some(kind) = kind {
                params.push(text(kind.as_str()));
                conditions.push(format!("kind = ${}", params.len()));
            }
            if let Some(id) = session_id {
                params.push(text(id));
                conditions.push(format!("session_id = ${}", params.len()));
            }
            let filter =
                if conditions.is_empty() { String::new() } else { format!("WHERE {} ", conditions.join(" AND ")) };
            let order = match session_id {
                Some(_) => "ORDER BY created_at".to_owned(),
                None => format!("ORDER BY created_at DESC LIMIT {}", (*limit).min(10_000)),
            };
            (format!("{filter}{order}"), params)
        }
    };
    (format!("SELECT {COLUMNS} FROM journal {tail}"), params)
}

/// A row as both backends read it, in [`COLUMNS`]' order.
#[derive(Debug, Default)]
pub(super) struct RawEntry {
    pub id: String,
    pub session_id: String,
    pub kind: String,
    pub network: String,
    pub chain_id: i64,
    pub from: String,
    pub to: String,
    pub nonce: Option<i64>,
    pub value: String,
    pub asset: String,
    pub asset_symbol: String,
    pub amount: String,
    pub fingerprint: String,
    pub raw_tx: Option<String>,
    pub tx_hash: Option<String>,
    pub status: String,
    pub block_number: Option<i64>,
    pub gas_used: Option<String>,
    pub error: Option<String>,
    pub summary: String,
    pub created_at: String,
    pub updated_at: String,
    pub intent: Option<String>,
    pub genesis: Option<String>,
}

impl RawEntry {
    pub(super) fn into_entry(self) -> JournalEntry {
        let ts = |s: &str| DateTime::parse_from_rfc3339(s).map(|d| d.with_timezone(&Utc)).unwrap_or_default();
        JournalEntry {
            id: self.id,
            session_id: self.session_id,
            kind: EntryKind::parse(&self.kind),
            network: self.network,
            chain_id: self.chain_id.try_into().unwrap_or_default(),
            from: self.from,
            to: self.to,
            nonce: self.nonce.and_then(|n| n.try_into().ok()),
            value: self.value,
            asset: self.asset,
            asset_symbol: self.asset_symbol,
            amount: self.amount,
            fingerprint: self.fingerprint,
            raw_tx: self.raw_tx,
            tx_hash: self.tx_hash,
            status: EntryStatus::parse(&self.status),
            block_number: self.block_number.and_then(|n| n.try_into().ok()),
            gas_used: self.gas_used,
            error: self.error,
            summary: serde_json::from_str(&self.summary).unwrap_or(Value::Null),
            created_at: ts(&self.created_at),
            updated_at: ts(&self.updated_at),
            intent: self.intent,
            genesis: self.genesis,
        }
    }
}

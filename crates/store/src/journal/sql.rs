//! The journal's statements, one text for both dialects: written with PostgreSQL's `$n` parameters, which
//! [`for_sqlite`] turns into SQLite's `?n` (same numbers, so a parameter used twice stays one); parameters are
//! [`Param`]s each backend binds. A statement's text is built from constants and the status lists of [`super`] only;
//! every value a caller passes (ids, kinds, the statuses a transition moves from) is a bound parameter. (The table's
//! migrations are [`crate::schema::JOURNAL`].)

use super::{FAILED, LIVE, NONCE_TAKEN, NewRow, Select, Settled, SpentWindow, UNRESOLVED, UNSETTLED_SEND};

/// Every column a [`super::Row`] is read from, in its order.
pub(super) const COLUMNS: &str = "id, session_id, kind, network, chain_id, from_address, to_address, nonce, value, \
                                  asset, asset_symbol, amount, fingerprint, raw_tx, tx_hash, status, block_number, \
                                  gas_used, error, summary, created_at, updated_at, intent, genesis";

/// `$n` → `?n`. (No statement here has a `$` inside a string literal.)
pub(super) fn for_sqlite(sql: &str) -> String {
    sql.replace('$', "?")
}

/// `('a','b')` for one of this module's status lists (constants: never a caller's value, see [`placeholders`]).
fn in_list(constants: &'static [&'static str]) -> String {
    let quoted: Vec<String> = constants.iter().map(|v| format!("'{v}'")).collect();
    format!("({})", quoted.join(","))
}

/// `($n,$n+1,…)` for `values`, pushed onto `params` as bound parameters: how a caller's list enters a statement.
fn placeholders(values: &[&str], params: &mut Vec<Param>) -> String {
    let mut names = Vec::with_capacity(values.len());
    for v in values {
        params.push(text(*v));
        names.push(format!("${}", params.len()));
    }
    format!("({})", names.join(","))
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

fn int(n: u64) -> Param {
    Param::Int(Some(i64::try_from(n).unwrap_or(i64::MAX)))
}

fn opt_int(n: Option<u64>) -> Param {
    Param::Int(n.and_then(|n| i64::try_from(n).ok()))
}

/// A statement and its parameters.
pub(super) type Statement = (String, Vec<Param>);

pub(super) fn insert(r: &NewRow) -> Statement {
    let sql = format!(
        "INSERT INTO journal ({COLUMNS}, day, user_authorization, server) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, \
         $10, $11, $12, $13, $14, $15, $16, NULL, NULL, $17, $18, $19, $19, $20, NULL, $21, $22, $23)"
    );
    let params = vec![
        text(&r.id),
        text(&r.session_id),
        text(&r.kind),
        text(&r.network),
        int(r.chain_id),
        text(&r.from),
        text(&r.to),
        opt_int(r.nonce),
        text(&r.value),
        text(&r.asset),
        text(&r.asset_symbol),
        text(&r.amount),
        text(&r.fingerprint),
        opt_text(r.raw_tx.as_deref()),
        opt_text(r.tx_hash.as_deref()),
        text(&r.status),
        opt_text(r.error.as_deref()),
        text(&r.summary),
        text(&r.now),
        opt_text(r.intent.as_deref()),
        text(&r.day),
        opt_text(r.authorization.as_deref()),
        opt_text(r.server.as_deref()),
    ];
    (sql, params)
}

/// What a reservation reads before its decision, in [`super::Found`]'s order: the live row of the same action, the
/// live holder of the authorization the row relies on (when it relies on one), the amounts spent (when capped).
pub(super) struct ReservationReads {
    pub same_action: Statement,
    pub authorization_holder: Option<Statement>,
    pub spent: Option<Statement>,
    pub undelivered: Option<Statement>,
}

pub(super) fn reservation_reads(r: &NewRow, capped_kinds: &[&str]) -> ReservationReads {
    let (column, key) = match &r.intent {
        Some(intent) => ("intent", intent.clone()),
        None => ("fingerprint", r.fingerprint.clone()),
    };
    let live = in_list(LIVE);
    let same_action = (
        format!("SELECT {COLUMNS} FROM journal WHERE {column} = $1 AND status IN {live} ORDER BY created_at LIMIT 1"),
        vec![text(key)],
    );
    let authorization_holder = r.authorization.as_deref().filter(|_| r.relies_on_authorization).map(|used| {
        (
            format!(
                "SELECT {COLUMNS} FROM journal WHERE user_authorization = $1 AND (intent IS NULL OR intent <> $2) \
                 AND status IN {live} ORDER BY created_at LIMIT 1"
            ),
            vec![text(used), text(r.intent.clone().unwrap_or_default())],
        )
    });
    let spent = spent(r.chain_id, &r.from, &r.asset, capped_kinds, SpentWindow::Day(&r.day));
    let undelivered = r.undelivered_since.as_deref().map(|since| {
        (
            format!(
                "SELECT id FROM journal WHERE kind = 'payment' AND delivered_at IS NULL AND created_at > $1 \
                 AND chain_id = $2 AND (to_address = $3 OR server = $4) AND status IN {live} ORDER BY created_at"
            ),
            vec![text(since), int(r.chain_id), text(&r.to), opt_text(r.server.as_deref())],
        )
    });
    ReservationReads { same_action, authorization_holder, spent, undelivered }
}

/// Live amounts of `asset` sent by `from` on `chain_id` in rows of `kinds` within `window` (none for no kinds).
pub(super) fn spent(
    chain_id: u64,
    from: &str,
    asset: &str,
    kinds: &[&str],
    window: SpentWindow<'_>,
) -> Option<Statement> {
    if kinds.is_empty() {
        return None;
    }
    let mut params = vec![int(chain_id), text(from), text(asset)];
    let within = match window {
        SpentWindow::Day(day) => {
            params.push(text(day));
            format!(" AND day = ${}", params.len())
        }
        SpentWindow::SinceFirst(kind) => {
            params.push(text(kind));
            // The first row of `kind` that still counts: a refused or failed one moved nothing and opens no window.
            format!(
                " AND created_at >= (SELECT MIN(created_at) FROM journal WHERE chain_id = $1 AND from_address = $2 \
                 AND asset = $3 AND kind = ${} AND status IN {})",
                params.len(),
                in_list(LIVE)
            )
        }
    };
    let kinds = placeholders(kinds, &mut params);
    let sql = format!(
        "SELECT amount FROM journal WHERE chain_id = $1 AND from_address = $2 AND asset = $3{within} \
         AND kind IN {kinds} AND status IN {}",
        in_list(LIVE)
    );
    Some((sql, params))
}

pub(super) fn mark_delivered(id: &str, now: &str) -> Statement {
    (
        "UPDATE journal SET delivered_at = $2 WHERE id = $1 AND delivered_at IS NULL".to_owned(),
        vec![text(id), text(now)],
    )
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

/// Moves `id` to `to`, when it is in one of `from` (any status when `from` is `None`).
pub(super) fn set_status(id: &str, from: Option<&[&str]>, to: &str, u: Settled, now: &str) -> Statement {
    let mut params = vec![
        text(id),
        text(to),
        Param::Text(u.tx_hash),
        opt_int(u.block_number),
        Param::Text(u.gas_used),
        Param::Text(u.error),
        Param::Text(u.summary),
        text(now),
    ];
    let guard = from.map_or(String::new(), |from| format!(" AND status IN {}", placeholders(from, &mut params)));
    let sql = format!(
        "UPDATE journal SET status = $2, tx_hash = COALESCE($3, tx_hash), block_number = COALESCE($4, block_number), \
         gas_used = COALESCE($5, gas_used), error = COALESCE($6, error), summary = COALESCE($7, summary), \
         updated_at = $8 WHERE id = $1{guard}"
    );
    (sql, params)
}

pub(super) fn nonces_from(chain_id: u64, from: &str, lowest: u64, statuses: &'static [&'static str]) -> Statement {
    (
        format!(
            "SELECT DISTINCT CAST(nonce AS TEXT) FROM journal WHERE chain_id = $1 AND from_address = $2 \
             AND kind != 'payment' AND nonce IS NOT NULL AND nonce >= $3 AND status IN {}",
            in_list(statuses)
        ),
        vec![int(chain_id), text(from), int(lowest)],
    )
}

pub(super) fn highest_nonce_taken(chain_id: u64, from: &str) -> Statement {
    (
        format!(
            "SELECT MAX(nonce) FROM journal WHERE chain_id = $1 AND from_address = $2 AND kind != 'payment' \
             AND nonce IS NOT NULL AND status IN {}",
            in_list(NONCE_TAKEN)
        ),
        vec![int(chain_id), text(from)],
    )
}

/// The statement a [`Select`] runs.
pub(super) fn select(q: &Select) -> Statement {
    let live = in_list(LIVE);
    let (tail, params) = match q {
        Select::Id(id) => ("WHERE id = $1".to_owned(), vec![text(id)]),
        Select::LiveFingerprint(fp) => {
            (format!("WHERE fingerprint = $1 AND status IN {live} ORDER BY created_at LIMIT 1"), vec![text(fp)])
        }
        Select::LiveIntent(intent) => (format!("WHERE intent = $1 AND status IN {live} LIMIT 1"), vec![text(intent)]),
        Select::Unresolved => (format!("WHERE status IN {} ORDER BY created_at", in_list(UNRESOLVED)), vec![]),
        Select::UnsettledSends { chain_id, from } => (
            format!(
                "WHERE chain_id = $1 AND from_address = $2 AND kind != 'payment' AND status IN {} \
                 ORDER BY created_at",
                in_list(UNSETTLED_SEND)
            ),
            vec![int(*chain_id), text(from)],
        ),
        Select::RecentlyFailedSends { since } => (
            format!(
                "WHERE status IN {} AND (tx_hash IS NOT NULL OR kind = 'payment') AND updated_at >= $1 \
                 ORDER BY created_at",
                in_list(FAILED)
            ),
            vec![text(since)],
        ),
        Select::FailedSendsAt { chain_id, from, nonce_from, nonce_to } => (
            format!(
                "WHERE chain_id = $1 AND from_address = $2 AND kind != 'payment' AND status IN {} \
                 AND tx_hash IS NOT NULL AND nonce >= $3 AND nonce < $4 ORDER BY nonce, created_at",
                in_list(FAILED)
            ),
            vec![int(*chain_id), text(from), int(*nonce_from), int(*nonce_to)],
        ),
        Select::Session(id) => ("WHERE session_id = $1 ORDER BY created_at".to_owned(), vec![text(id)]),
        Select::List { session_id, kind, limit } => {
            let mut params = Vec::new();
            let mut conditions = Vec::new();
            if let Some(kind) = kind {
                params.push(text(kind));
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

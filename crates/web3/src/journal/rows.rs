//! An entry as the journal's table stores it ([`holdfast_store::journal`]): a [`NewEntry`] written as a
//! [`NewRow`], a [`Row`] read back as a [`JournalEntry`].

use super::entry::{EntryKind, EntryStatus, JournalEntry, NewEntry};
use chrono::{DateTime, Utc};
use holdfast_store::journal::{NewRow, Row};
use serde_json::Value;

/// The row of a new entry: id `j_…`, created now, counted on today's UTC day.
pub(super) fn new_row(entry: NewEntry, status: EntryStatus) -> NewRow {
    let now = Utc::now();
    NewRow {
        id: format!("j_{}", holdfast_core::confirm::random_id()),
        session_id: entry.session_id,
        kind: entry.kind.as_str().to_owned(),
        network: entry.network,
        chain_id: entry.chain_id,
        from: entry.from,
        to: entry.to,
        nonce: entry.nonce,
        value: entry.value,
        asset: entry.asset,
        asset_symbol: entry.asset_symbol,
        amount: entry.amount,
        fingerprint: entry.fingerprint,
        intent: entry.intent,
        raw_tx: entry.raw_tx,
        tx_hash: entry.tx_hash,
        status: status.as_str().to_owned(),
        error: entry.error.as_deref().map(super::stored_error),
        summary: entry.summary.to_string(),
        relies_on_authorization: entry.authorization.as_ref().is_some_and(|a| a.relied_on),
        authorization: entry.authorization.map(|a| a.id),
        server: None,
        undelivered_since: None,
        now: now.to_rfc3339(),
        day: super::day(now),
    }
}

/// The entry `row` is once written as it is (no read: what was just inserted is known; a read that failed after
/// the insert committed would leave a live reservation its caller took for never made).
pub(super) fn written(row: &NewRow) -> JournalEntry {
    entry(Row {
        id: row.id.clone(),
        session_id: row.session_id.clone(),
        kind: row.kind.clone(),
        network: row.network.clone(),
        // As the table stores them (`holdfast_store::journal`'s statements): a chain id past i64 as i64::MAX.
        chain_id: i64::try_from(row.chain_id).unwrap_or(i64::MAX),
        from: row.from.clone(),
        to: row.to.clone(),
        nonce: row.nonce.and_then(|n| n.try_into().ok()),
        value: row.value.clone(),
        asset: row.asset.clone(),
        asset_symbol: row.asset_symbol.clone(),
        amount: row.amount.clone(),
        fingerprint: row.fingerprint.clone(),
        raw_tx: row.raw_tx.clone(),
        tx_hash: row.tx_hash.clone(),
        status: row.status.clone(),
        block_number: None,
        gas_used: None,
        error: row.error.clone(),
        summary: row.summary.clone(),
        created_at: row.now.clone(),
        updated_at: row.now.clone(),
        intent: row.intent.clone(),
        genesis: None,
    })
}

/// The entry a stored row holds.
pub(super) fn entry(row: Row) -> JournalEntry {
    let ts = |s: &str| DateTime::parse_from_rfc3339(s).map(|d| d.with_timezone(&Utc)).unwrap_or_default();
    JournalEntry {
        id: row.id,
        session_id: row.session_id,
        kind: EntryKind::parse(&row.kind),
        network: row.network,
        chain_id: row.chain_id.try_into().unwrap_or_default(),
        from: row.from,
        to: row.to,
        nonce: row.nonce.and_then(|n| n.try_into().ok()),
        value: row.value,
        asset: row.asset,
        asset_symbol: row.asset_symbol,
        amount: row.amount,
        fingerprint: row.fingerprint,
        raw_tx: row.raw_tx,
        tx_hash: row.tx_hash,
        status: EntryStatus::parse(&row.status),
        block_number: row.block_number.and_then(|n| n.try_into().ok()),
        gas_used: row.gas_used,
        error: row.error,
        summary: serde_json::from_str(&row.summary).unwrap_or(Value::Null),
        created_at: ts(&row.created_at),
        updated_at: ts(&row.updated_at),
        intent: row.intent,
        genesis: row.genesis,
    }
}

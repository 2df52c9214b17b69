//! The money views' routes: the wallet (balances and today's spending against the caps), the journal with explorer
//! links, and the built-in transaction page for networks without an explorer (the devnet).
//!
//! Read-only: nothing here signs or moves anything. The figures come from [`holdfast_web3::report`], which reads the
//! same journal sums the kernel reserves against.

use crate::extract::QueryOf;
use crate::openapi::schema;
use crate::{ApiError, AppState};
use axum::Json;
use axum::extract::{Path, Query, State};
use holdfast_core::{ErrorCode, ToolError};
use holdfast_web3::report::{NetworkMoney, TxPage};
use holdfast_web3::{EntryKind, JournalEntry};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// `GET /api/wallet`.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub(crate) struct WalletView {
    /// The wallet's address, checksummed.
    pub address: String,
    /// Per configured network: balances of the configured tokens and today's spending against each cap.
    pub networks: Vec<NetworkMoney>,
}

/// One journal entry with the link to its transaction.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub(crate) struct JournalRow {
    /// The entry.
    #[serde(flatten)]
    pub entry: JournalEntry,
    /// The block explorer's page of its transaction, when the network has an explorer and the entry a hash.
    pub explorer_url: Option<String>,
}

/// `GET /api/journal`.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub(crate) struct JournalList {
    /// Entries, oldest first.
    pub journal: Vec<JournalRow>,
}

/// Filters of `GET /api/journal`.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct JournalQuery {
    /// Only this session's entries (else the 200 most recent of all sessions).
    session_id: Option<String>,
    /// Only entries of this kind (`payment` lists the x402 payments).
    #[param(schema_with = entry_kind)]
    kind: Option<EntryKind>,
}

/// The `kind` parameter's schema: one of the journal's kinds.
fn entry_kind() -> utoipa::openapi::Object {
    utoipa::openapi::ObjectBuilder::new()
        .schema_type(utoipa::openapi::schema::Type::String)
        .enum_values(Some(crate::openapi::string_values::<EntryKind>()))
        .description(Some("Only entries of this kind (`payment` lists the x402 payments)."))
        .build()
}

/// The balances of the wallet's configured tokens and today's spending against each daily cap and the x402 budget.
#[utoipa::path(get, path = "/api/wallet", tag = "money",
    responses((status = 200, description = "Balances and today's spending", body = schema::WalletView)))]
pub(crate) async fn wallet(State(state): State<Arc<AppState>>) -> Result<Json<WalletView>, ApiError> {
    let web3 = &state.runtime.web3;
    Ok(Json(WalletView { address: web3.wallet().address().to_checksum(None), networks: web3.money().await? }))
}

/// Transactions and payments as the journal holds them: status, decoded summary, gas and an explorer link.
#[utoipa::path(get, path = "/api/journal", tag = "money", params(JournalQuery),
    responses((status = 200, description = "Journal entries", body = schema::JournalList),
        (status = 400, description = "An unknown `kind`", body = schema::ErrorBody)))]
pub(crate) async fn journal(
    State(state): State<Arc<AppState>>,
    q: QueryOf<JournalQuery>,
) -> Result<Json<JournalList>, ApiError> {
    let Query(q) = q?;
    let journal = state.runtime.web3.journal();
    let entries = journal.list(q.session_id.as_deref(), q.kind, 200).await?;
    let networks = &state.runtime.services.config.networks;
    let journal = entries
        .into_iter()
        .map(|entry| {
            let explorer_url = entry
                .tx_hash
                .as_deref()
                .and_then(|h| networks.by_chain_id(entry.chain_id).and_then(|n| n.explorer_tx_url(h)));
            JournalRow { entry, explorer_url }
        })
        .collect();
    Ok(Json(JournalList { journal }))
}

/// A journal entry's transaction as the chain records it (status, block, gas, fee, decoded token transfers): the
/// UI's transaction page on networks without a block explorer.
#[utoipa::path(get, path = "/api/journal/{id}/tx", tag = "money",
    params(("id" = String, Path, description = "Journal entry id (`j_…`)")),
    responses((status = 200, description = "The transaction", body = schema::TxPage),
        (status = 404, description = "No such entry, or it has no transaction", body = schema::ErrorBody)))]
pub(crate) async fn tx_page(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
) -> Result<Json<TxPage>, ApiError> {
    let web3 = &state.runtime.web3;
    let entry = web3
        .journal()
        .get(&id)
        .await?
        .ok_or_else(|| ToolError::new(ErrorCode::NotFound, format!("no journal entry {id:?}")))?;
    Ok(Json(web3.tx_page(&entry).await?))
}

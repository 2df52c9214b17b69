//! The services process (`holdfast devnet services --dir DIR`, started by [`crate::up`]): an HTTP server on
//! 127.0.0.1 with `GET /health`, the quoter ([`crate::quoter`]) behind the x402 paywall ([`crate::paywall`]), and
//! the facilitator API under [`FACILITATOR_PATH`] ([`crate::facilitator`]), reading anvil's URL, its own port and
//! the contract addresses from `DIR/devnet.json`. It stops on SIGTERM or SIGINT.

use crate::anvil::http_provider;
use crate::error::DevnetError;
use crate::facilitator::{FACILITATOR_ACCOUNT, Facilitator, facilitator_router};
use crate::info::{DevnetState, read_info};
use crate::paywall::{Paywall, PaywallConfig, paywall};
use crate::quoter::{QuoteState, quote_router};
use alloy::providers::Provider;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::json;
use std::net::Ipv4Addr;
use std::path::Path;
use std::sync::Arc;

/// Path of the health endpoint.
pub const HEALTH_PATH: &str = "/health";
/// Where the facilitator API (`/verify`, `/settle`, `/supported`) is mounted.
pub const FACILITATOR_PATH: &str = "/facilitator";

async fn health(State(state): State<QuoteState>) -> Response {
    match state.provider.get_block_number().await {
        Ok(n) => Json(json!({"status": "ok", "chainId": state.chain_id.to_string(), "blockNumber": n.to_string()}))
            .into_response(),
        Err(e) => (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({"status": "unavailable", "error": format!("the devnet node does not answer: {e}")})),
        )
            .into_response(),
    }
}

/// The devnet paywall over `provider`: [`PaywallConfig::devnet`] terms, settled by [`FACILITATOR_ACCOUNT`].
pub fn devnet_paywall(state: &QuoteState) -> Arc<Paywall> {
    let facilitator = Arc::new(Facilitator::new(state.provider.clone(), state.chain_id, FACILITATOR_ACCOUNT));
    let config = PaywallConfig { chain_id: state.chain_id, asset: state.usdc, ..PaywallConfig::devnet() };
    Arc::new(Paywall { config, facilitator })
}

/// The whole services app: `/health` (free), [`quote_router`] behind the x402 paywall, and the paywall's
/// facilitator under [`FACILITATOR_PATH`].
pub fn services_router(state: QuoteState, paywall_state: Arc<Paywall>) -> Router {
    let facilitator = Arc::clone(&paywall_state.facilitator);
    let paid = quote_router(state.clone()).layer(axum::middleware::from_fn_with_state(paywall_state, paywall));
    Router::new()
        .route(HEALTH_PATH, get(health))
        .with_state(state)
        .merge(paid)
        .nest(FACILITATOR_PATH, facilitator_router(facilitator))
}

/// Fails unless the node has unlocked [`FACILITATOR_ACCOUNT`] (anvil with its default mnemonic has).
pub async fn check_facilitator_account(provider: &alloy::providers::DynProvider) -> Result<(), DevnetError> {
    let accounts =
        provider.get_accounts().await.map_err(|e| DevnetError::rpc("listing the node's unlocked accounts", e))?;
    if accounts.contains(&FACILITATOR_ACCOUNT) {
        Ok(())
    } else {
        Err(DevnetError::Services(format!(
            "the node has not unlocked the facilitator account {FACILITATOR_ACCOUNT} (anvil's dev account #1)"
        )))
    }
}

/// Resolves when the process receives SIGTERM or SIGINT.
async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    match (signal(SignalKind::terminate()), signal(SignalKind::interrupt())) {
        (Ok(mut term), Ok(mut int)) => {
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
        }
        // Without signal handlers the default action (exit) applies; serve until then.
        _ => std::future::pending::<()>().await,
    }
}

/// Runs the services for the devnet in `dir` until SIGTERM/SIGINT.
pub async fn run_services(dir: &Path) -> Result<(), DevnetError> {
    let info = read_info(dir)?.ok_or_else(|| {
        DevnetError::Services(format!(
            "{} has no devnet.json; start the devnet with `holdfast devnet up`",
            dir.display()
        ))
    })?;
    if info.state == DevnetState::Down {
        return Err(DevnetError::Services(format!("the devnet in {} is down", dir.display())));
    }
    let provider = http_provider(&info.rpc_url)?;
    let state =
        QuoteState { provider, chain_id: info.chain_id, venue: info.contracts.venue, usdc: info.contracts.usdc };
    check_facilitator_account(&state.provider).await?;
    let paywall_state = devnet_paywall(&state);
    let port = info.services.port;
    let listener = tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, port))
        .await
        .map_err(|e| DevnetError::PortUnavailable(format!("the services cannot listen on 127.0.0.1:{port}: {e}")))?;
    eprintln!(
        "holdfast devnet services: listening on http://127.0.0.1:{port} (quoter behind an x402 paywall, \
         facilitator at {FACILITATOR_PATH}, health), node {}",
        info.rpc_url
    );
    axum::serve(listener, services_router(state, paywall_state))
        .with_graceful_shutdown(shutdown_signal())
        .await
        .map_err(|e| DevnetError::Services(format!("serving on 127.0.0.1:{port}: {e}")))?;
    eprintln!("holdfast devnet services: stopped");
    Ok(())
}

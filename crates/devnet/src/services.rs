//! The services process (`holdfast devnet services --dir DIR`, started by [`crate::up`]): an HTTP server on
//! 127.0.0.1 with `GET /health` and the quoter ([`crate::quoter`]), reading anvil's URL, its own port and the
//! contract addresses from `DIR/devnet.json`. It stops on SIGTERM or SIGINT.
//!
//! The x402 paywall and facilitator will be added here as layers around [`quote_router`].

use crate::anvil::http_provider;
use crate::error::DevnetError;
use crate::info::{DevnetState, read_info};
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

/// Path of the health endpoint.
pub const HEALTH_PATH: &str = "/health";

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

/// The whole services app: `/health` plus [`quote_router`].
pub fn services_router(state: QuoteState) -> Router {
    Router::new().route(HEALTH_PATH, get(health)).with_state(state.clone()).merge(quote_router(state))
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
    let port = info.services.port;
    let listener = tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, port))
        .await
        .map_err(|e| DevnetError::PortUnavailable(format!("the services cannot listen on 127.0.0.1:{port}: {e}")))?;
    eprintln!("holdfast devnet services: listening on http://127.0.0.1:{port} (quoter, health), node {}", info.rpc_url);
    axum::serve(listener, services_router(state))
        .with_graceful_shutdown(shutdown_signal())
        .await
        .map_err(|e| DevnetError::Services(format!("serving on 127.0.0.1:{port}: {e}")))?;
    eprintln!("holdfast devnet services: stopped");
    Ok(())
}

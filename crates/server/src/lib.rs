//! # holdfast-server
//!
//! The HTTP + WebSocket API over one [`holdfast_agent::Runtime`], and the web UI served from the binary itself.
//!
//! - Every `/api/*` call and `/ws` needs the access token (`Authorization: Bearer TOKEN`; the WebSocket, which
//!   browsers cannot give headers, takes `?token=`). The UI page itself carries no data and needs none.
//! - REST: sessions, user messages (the agent runs when a provider is configured; otherwise the message feeds the
//!   context bank), tool calls by name through the same registry as the model, registers, context bank, memory,
//!   tasks, reminders, journal, pending confirmations (approve / deny).
//! - `/ws`: events of the sessions a client subscribes to (`?session=ID`, repeatable, or
//!   `{"type":"subscribe","session_id":ID}`), as `{"type":"event","event","session_id","data"}`. A client that
//!   cannot keep up is disconnected; publishing never waits for it.

mod api;
pub mod error;
pub mod token;
mod ws;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, header};
use axum::middleware::Next;
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use holdfast_agent::{Agent, CancelToken, ConfirmDecision, Runtime};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;
use tokio::sync::oneshot;

pub use error::ApiError;

/// The web UI (one self-contained page).
const INDEX_HTML: &str = include_str!("../static/index.html");

/// Shared server state.
pub struct AppState {
    /// The runtime.
    pub runtime: Arc<Runtime>,
    /// The agent, when an LLM provider is configured.
    pub agent: Option<Agent>,
    token: Option<String>,
    turns: Mutex<HashMap<String, CancelToken>>,
    waiters: Mutex<HashMap<String, oneshot::Sender<ConfirmDecision>>>,
}

impl std::fmt::Debug for AppState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppState").field("agent", &self.agent).finish_non_exhaustive()
    }
}

impl AppState {
    /// State over `runtime`. `token: None` disables authentication (callers allow that only on loopback).
    pub fn new(runtime: Arc<Runtime>, token: Option<String>) -> Arc<Self> {
        let agent = runtime.provider().map(|p| Agent::new(Arc::clone(&runtime), p).with_config(runtime.agent_config()));
        Self::with_agent(runtime, agent, token)
    }

    /// State with an explicit agent (tests use a scripted provider).
    pub fn with_agent(runtime: Arc<Runtime>, agent: Option<Agent>, token: Option<String>) -> Arc<Self> {
        Arc::new(Self { runtime, agent, token, turns: Mutex::new(HashMap::new()), waiters: Mutex::new(HashMap::new()) })
    }

    fn authorized(&self, headers: &HeaderMap, query: Option<&str>) -> bool {
        let Some(expected) = &self.token else { return true };
        let bearer = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::trim);
        let from_query =
            query.and_then(|q| q.split('&').find_map(|kv| kv.strip_prefix("token=")).map(|t| t.to_owned()));
        bearer.map(str::to_owned).or(from_query).is_some_and(|given| token::matches(expected, &given))
    }
}

async fn require_token(State(state): State<Arc<AppState>>, request: Request, next: Next) -> Response {
    if state.authorized(request.headers(), request.uri().query()) {
        next.run(request).await
    } else {
        ApiError::Unauthorized.into_response()
    }
}

async fn index() -> Html<&'static str> {
    Html(INDEX_HTML)
}

async fn health() -> axum::Json<serde_json::Value> {
    axum::Json(serde_json::json!({"ok": true}))
}

/// The full router: UI, health, the authenticated API and WebSocket.
pub fn router(state: Arc<AppState>) -> Router {
    let api = Router::new()
        .route("/api/info", get(api::info))
        .route("/api/tools", get(api::tools))
        .route("/api/sessions", get(api::list_sessions).post(api::create_session))
        .route("/api/sessions/{id}", get(api::get_session))
        .route("/api/sessions/{id}/messages", post(api::send_message))
        .route("/api/sessions/{id}/cancel", post(api::cancel))
        .route("/api/sessions/{id}/tools/{name}", post(api::call_tool))
        .route("/api/sessions/{id}/registers", get(api::registers))
        .route("/api/sessions/{id}/context-bank", get(api::context_bank))
        .route("/api/sessions/{id}/confirmations", get(api::confirmations))
        .route("/api/sessions/{id}/confirmations/{cid}/approve", post(api::approve))
        .route("/api/sessions/{id}/confirmations/{cid}/deny", post(api::deny))
        .route("/api/memory", get(api::memory))
        .route("/api/tasks", get(api::tasks))
        .route("/api/reminders", get(api::reminders))
        .route("/api/journal", get(api::journal))
        .route("/ws", get(ws::upgrade))
        .layer(axum::middleware::from_fn_with_state(Arc::clone(&state), require_token))
        .layer(axum::extract::DefaultBodyLimit::max(1 << 20));
    Router::new().route("/", get(index)).route("/health", get(health)).merge(api).with_state(state)
}

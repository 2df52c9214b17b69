//! # holdfast-server
//!
//! The HTTP + WebSocket API over one [`holdfast_agent::Runtime`], and the web UI served from the binary itself.
//!
//! - **The edge** ([`holdfast_agent::access::Guard`]), on every request, with or without a token: `Host` must name
//!   this server (loopback with the bound port, or `[server] allowed_hosts`), a present `Origin` must be its own,
//!   the token never travels in a URL except once to the login page, and mutating `/api/*` requests carry JSON.
//! - **Authentication**: every `/api/*` call and `/ws` needs the access token — `Authorization: Bearer TOKEN`
//!   (scripts) — or a browser session: the one-time sign-in link `GET /?code=CODE` (printed at start and by
//!   `holdfast serve --print-url`, valid for minutes) sets an `HttpOnly; SameSite=Strict` cookie with `Max-Age`
//!   and redirects to the clean `/`; a used or expired code gets the sign-in page saying so. The cookie is never
//!   the token. The UI page and its script carry no data and need none.
//! - **Headers** on every response: a Content-Security-Policy without inline script ([`CONTENT_SECURITY_POLICY`]),
//!   `X-Content-Type-Options: nosniff`, `Referrer-Policy: no-referrer`, `X-Frame-Options: DENY`.
//! - REST: sessions, user messages (the agent runs when a provider is configured; otherwise the message feeds the
//!   context bank), tool calls by name through the same registry as the model, registers, context bank, memory,
//!   tasks, reminders, pending confirmations (approve / deny); the money views: the wallet's balances and
//!   today's spending against the caps, the journal with explorer links, a transaction page for the devnet. The
//!   OpenAPI document of all of it is `GET /api/openapi.json` ([`openapi`]).
//! - `/ws`: events of the sessions a client subscribes to (`?session=ID`, repeatable, or
//!   `{"type":"subscribe","session_id":ID}`), as `{"type":"event","event","session_id","data"}`. A client that
//!   cannot keep up is disconnected; publishing never waits for it.

mod api;
mod bodies;
pub mod config;
pub mod error;
mod extract;
mod money;
pub mod openapi;
mod ws;

use axum::Router;
use axum::extract::OriginalUri;
use axum::http::{HeaderName, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use holdfast_agent::access::{AccessToken, Credentials, Guard, HostPolicy, SignIn};
use holdfast_agent::{Agent, ConfirmDecision, Runtime};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;
use tokio::sync::oneshot;

pub use config::ServerSection;
pub use error::ApiError;

/// The web UI's page (no inline script).
const INDEX_HTML: &str = include_str!("../static/index.html");

/// The web UI's script, served as `/app.js`.
const APP_JS: &str = include_str!("../static/app.js");

/// The web UI's money views (wallet, journal, payments, transaction page), served as `/money.js`.
const MONEY_JS: &str = include_str!("../static/money.js");

/// The UI's Content-Security-Policy: scripts only from this server (no inline script, no `eval`), no framing, no
/// `<base>`, forms only to this server; inline styles stay allowed; `data:` images for the empty favicon.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; \
     img-src 'self' data:; connect-src 'self'; object-src 'none'; frame-ancestors 'none'; base-uri 'none'; \
     form-action 'self'";

/// Hands a waiting turn the user's decision; the turn answers on the inner sender once it has taken it (a turn stopped
/// at that moment drops both, and the question is withdrawn instead).
pub(crate) type Waiter = oneshot::Sender<(ConfirmDecision, oneshot::Sender<()>)>;

/// Shared server state.
pub struct AppState {
    /// The runtime.
    pub runtime: Arc<Runtime>,
    /// The default agent, when an LLM provider is configured.
    pub agent: Option<Agent>,
    /// Every agent with a model (the default first): `[agents.NAME]` too.
    agents: Vec<Agent>,
    token: Option<AccessToken>,
    sign_in: Arc<SignIn>,
    /// Per session, how many WebSocket clients watch it: when the last one closes, the session's running turn
    /// stops (the page that started it is gone).
    watchers: Mutex<HashMap<String, usize>>,
    /// Per confirmation id, the turn waiting for the user's decision on it.
    waiters: Mutex<HashMap<String, Waiter>>,
}

impl std::fmt::Debug for AppState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppState").field("agent", &self.agent).finish_non_exhaustive()
    }
}

impl AppState {
    /// State over `runtime`. `token: None` disables authentication (callers allow that only on loopback); the
    /// `Host`/`Origin` checks of [`router`] apply either way.
    pub fn new(runtime: Arc<Runtime>, token: Option<AccessToken>) -> Arc<Self> {
        let agents = runtime.agents();
        Self::with_agents(runtime, agents, token)
    }

    /// State with an explicit default agent (tests use a scripted provider).
    pub fn with_agent(runtime: Arc<Runtime>, agent: Option<Agent>, token: Option<AccessToken>) -> Arc<Self> {
        Self::with_agents(runtime, agent.into_iter().collect(), token)
    }

    /// State with explicit agents; the one named `assistant` is the default. Browsers sign in with codes kept in
    /// the runtime's data dir (in memory without one), for as long as `[server]` says
    /// ([`ServerSection::sign_in_settings`]).
    pub fn with_agents(runtime: Arc<Runtime>, agents: Vec<Agent>, token: Option<AccessToken>) -> Arc<Self> {
        let agent = agents.iter().find(|a| a.profile().name == holdfast_agent::AGENT_ID).cloned();
        let settings = ServerSection::from_document(&runtime.document).unwrap_or_default().sign_in_settings();
        let sign_in = Arc::new(match runtime.data_dir() {
            Some(dir) => SignIn::open(dir, settings),
            None => SignIn::in_memory(settings),
        });
        Arc::new(Self {
            runtime,
            agent,
            agents,
            token,
            sign_in,
            watchers: Mutex::new(HashMap::new()),
            waiters: Mutex::new(HashMap::new()),
        })
    }

    /// Every agent with a model, the default first.
    pub fn agents(&self) -> &[Agent] {
        &self.agents
    }

    /// Browser sign-in: one-time codes and session cookies.
    pub fn sign_in(&self) -> &Arc<SignIn> {
        &self.sign_in
    }

    /// The agent session `ctx` belongs to, when it has a model.
    pub fn agent_for(&self, ctx: &holdfast_core::ToolContext) -> Option<Agent> {
        let owner = self.runtime.profile_of(ctx);
        self.agents.iter().find(|a| a.profile().name == owner.name).cloned()
    }
}

/// `GET /`: the page, or — with `?code=` — the one-time sign-in that sets the session cookie and redirects to `/`
/// (or says why the code was refused).
async fn index(guard: Arc<Guard>, uri: &axum::http::Uri) -> Response {
    if let Some(answer) = guard.sign_in_page(uri.query()) {
        return answer;
    }
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8"), (header::CACHE_CONTROL, "no-cache")], INDEX_HTML)
        .into_response()
}

fn script(text: &'static str) -> Response {
    ([(header::CONTENT_TYPE, "text/javascript; charset=utf-8"), (header::CACHE_CONTROL, "no-cache")], text)
        .into_response()
}

async fn health() -> axum::Json<serde_json::Value> {
    axum::Json(serde_json::json!({"ok": true}))
}

/// Adds the security headers to every response.
async fn security_headers(mut response: Response) -> Response {
    let headers = response.headers_mut();
    let set = [
        (header::CONTENT_SECURITY_POLICY, CONTENT_SECURITY_POLICY),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::REFERRER_POLICY, "no-referrer"),
        (header::X_FRAME_OPTIONS, "DENY"),
    ];
    for (name, value) in set {
        headers.insert::<HeaderName>(name, HeaderValue::from_static(value));
    }
    response
}

/// The full router: UI, health, the authenticated API and WebSocket, all behind the edge checks for a server whose
/// `Host` values are `hosts` (build it from the bound address, after binding).
pub fn router(state: Arc<AppState>, hosts: HostPolicy) -> Router {
    let guard = Arc::new(
        Guard::new(hosts, state.token.clone().map(Credentials::Token))
            .with_sign_in(Arc::clone(&state.sign_in))
            .with_json_api("/api/"),
    );
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
        .route("/api/journal", get(money::journal))
        .route("/api/journal/{id}/tx", get(money::tx_page))
        .route("/api/wallet", get(money::wallet))
        .route("/api/openapi.json", get(|| async { axum::Json(openapi::document()) }))
        .route("/ws", get(ws::upgrade))
        .route("/api/{*rest}", axum::routing::any(api::no_route))
        .method_not_allowed_fallback(api::wrong_method);
    let api = guard.require_token(api).layer(axum::extract::DefaultBodyLimit::max(1 << 20));
    let login = Arc::clone(&guard);
    let app = Router::new()
        .route("/", get(move |OriginalUri(uri): OriginalUri| async move { index(login, &uri).await }))
        .route("/app.js", get(|| async { script(APP_JS) }))
        .route("/money.js", get(|| async { script(MONEY_JS) }))
        .route("/health", get(health))
        .merge(api)
        .with_state(state);
    request_log(guard.edge(app).layer(axum::middleware::map_response(security_headers)))
}

/// The HTTP request log: every request gets an `x-request-id` (a UUID, or the one the client sent), returned in the
/// response and carried by a `tracing` span with the method and the path — never the query (the first page load
/// carries the access token there) and no headers (the token travels in `Authorization` or a cookie). The status and
/// latency are logged at `info` when the response is ready; `RUST_LOG=tower_http=info` shows them.
fn request_log(app: Router) -> Router {
    use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
    use tower_http::trace::{DefaultOnResponse, TraceLayer};
    let span = |req: &axum::http::Request<axum::body::Body>| {
        let id = req.headers().get("x-request-id").and_then(|v| v.to_str().ok()).unwrap_or_default();
        tracing::info_span!("http", request_id = %id, method = %req.method(), path = %req.uri().path())
    };
    let trace = TraceLayer::new_for_http()
        .make_span_with(span)
        .on_response(DefaultOnResponse::new().level(tracing::Level::INFO));
    // Outermost first: the id is set before the span reads it, and copied to the response after.
    app.layer(PropagateRequestIdLayer::x_request_id())
        .layer(trace)
        .layer(SetRequestIdLayer::x_request_id(MakeRequestUuid))
}

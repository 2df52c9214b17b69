//! The streamable HTTP transport: `POST/GET/DELETE http://ADDR/mcp`, one holdfast session per MCP session.
//!
//! In front of the MCP service, in order:
//! 1. **The edge** ([`holdfast_agent::access::Guard`], the same as `holdfast serve`'s): `Host` must be loopback with
//!    the bound port, the bound IP, or a name in `[mcp] allowed_hosts` (DNS-rebinding protection); a present
//!    `Origin` must be this server's own; no token in the URL — each refusal a `403`/`401` with a JSON error code.
//! 2. **A client's bearer token** ([`holdfast_agent::access::ClientTokens`]): `mcp.token` is the `default` client,
//!    `holdfast mcp token add NAME` adds others; otherwise `401 unauthorized`.
//! 3. **The session's owner** (`owners.rs`): a request naming a session another client opened is `404`, as
//!    for a session that does not exist; the server's own requests carry random ids, and an answer to an id its
//!    session was not sent is dropped.
//! 4. **The message gate** ([`crate::jsonrpc`]): a POST body over the cap is `413`, a body that is not JSON is `400`
//!    with a `-32700` error, a malformed JSON-RPC request is `400` with `-32600`/`-32602` — each a JSON-RPC error
//!    body; the server keeps serving.

use crate::config::McpSection;
use crate::error::ServeError;
use crate::jsonrpc::{ID_SNIFF_BYTES, INVALID_REQUEST, Inbound, ProtocolError, classify};
use crate::owners::SessionOwners;
use crate::server::HoldfastMcp;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{Method, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use futures::StreamExt as _;
use holdfast_agent::Runtime;
use holdfast_agent::access::{AccessToken, ClientTokens, Credentials, Guard, HostPolicy, Principal};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The environment variable that may hold the bearer token.
pub const TOKEN_ENV: &str = "HOLDFAST_MCP_TOKEN";

/// The bearer token for a server about to listen on `bind`, first match wins: `flag` (read from `--token-file`), `env`
/// ([`TOKEN_ENV`]), the file `DATA_DIR/mcp.token` (created, mode 0600, on the first start on a loopback address),
/// or — with no data dir, on loopback — a token for this run. A non-loopback address never gets a generated token:
/// the operator must choose one ([`ServeError::NonLoopbackWithoutToken`]).
pub fn resolve_token(
    flag: Option<String>,
    env: Option<String>,
    data_dir: Option<&std::path::Path>,
    bind: SocketAddr,
) -> Result<AccessToken, ServeError> {
    let file = data_dir.map(|d| d.join(holdfast_agent::access::MCP_TOKEN_FILE));
    match AccessToken::resolve(flag, env, file.as_deref(), bind.ip().is_loopback()) {
        Err(holdfast_agent::access::AccessError::NotChosen) => Err(ServeError::NonLoopbackWithoutToken { addr: bind }),
        other => Ok(other?),
    }
}

/// The header carrying the MCP session id.
const SESSION_HEADER: &str = "mcp-session-id";

/// The path the MCP endpoint is served at.
pub const MCP_PATH: &str = "/mcp";

/// How long an idle MCP session (and its holdfast session's live state) is kept.
pub const SESSION_IDLE: Duration = Duration::from_secs(3600);

/// The MCP endpoint with its guards, as an axum router (for embedding; [`HttpServer`] serves it). `hosts` is the host
/// policy of the bound address; `clients` the tokens accepted, each naming its client.
pub fn router(
    runtime: Arc<Runtime>,
    clients: Arc<ClientTokens>,
    hosts: HostPolicy,
    max_bytes: usize,
    stop: CancellationToken,
) -> axum::Router {
    // The Host and Origin checks are the edge guard's (stricter: the port too, and configurable); rmcp's own
    // loopback-only host list would refuse names from `allowed_hosts`.
    let mut config = StreamableHttpServerConfig::default()
        .with_max_request_body_bytes(max_bytes)
        .with_cancellation_token(stop)
        .disable_allowed_hosts();
    // MCP sessions survive a restart on the same data dir (see `crate::links`).
    config.session_store = Some(Arc::new(crate::links::SessionLinks::new(Arc::clone(&runtime))));
    let mut sessions = LocalSessionManager::default();
    sessions.session_config.keep_alive = Some(SESSION_IDLE);
    let owners = SessionOwners::new(Arc::clone(&runtime), Arc::clone(&clients));
    let service =
        StreamableHttpService::new(move || Ok(HoldfastMcp::new(Arc::clone(&runtime))), Arc::new(sessions), config);
    let guard = Arc::new(Guard::new(hosts, Some(Credentials::Clients(clients))));
    let gate_state = Arc::new(Gate { max_bytes, owners });
    let app =
        axum::Router::new().route_service(MCP_PATH, service).layer(middleware::from_fn_with_state(gate_state, gate));
    guard.edge(guard.require_token(app))
}

/// What the gate in front of the MCP service needs.
struct Gate {
    max_bytes: usize,
    owners: Arc<SessionOwners>,
}

/// The response to a request naming a session the client may not use: exactly rmcp's answer for a session that does
/// not exist, so a foreign session's existence is not revealed.
fn no_such_session() -> Response {
    (StatusCode::NOT_FOUND, "Not Found: Session not found").into_response()
}

async fn gate(State(gate): State<Arc<Gate>>, request: Request, next: Next) -> Response {
    let Some(principal) = request.extensions().get::<Principal>().cloned() else {
        return no_such_session();
    };
    let session = request.headers().get(SESSION_HEADER).and_then(|v| v.to_str().ok()).map(str::to_owned);
    if let Some(id) = &session
        && gate.owners.owner(id).await.as_deref() != Some(principal.id.as_str())
    {
        tracing::debug!(client = %principal.client, "a request named an MCP session it does not own");
        return no_such_session();
    }
    let method = request.method().clone();
    let request = if method == Method::POST {
        match read_message(&gate, session.as_deref(), request).await {
            Ok(request) => request,
            Err(answer) => return answer,
        }
    } else {
        request
    };
    let mut response = next.run(request).await;
    // A new session (its id only in the answer to `initialize`): recorded as the client's before the client sees it.
    let opened = response.headers().get(SESSION_HEADER).and_then(|v| v.to_str().ok()).map(str::to_owned);
    if session.is_none()
        && let Some(id) = &opened
        && let Err(e) = gate.owners.opened(id, &principal).await
    {
        tracing::error!("a new MCP session's owner could not be recorded: {e}");
        return (StatusCode::INTERNAL_SERVER_ERROR, "the session could not be opened").into_response();
    }
    if method == Method::DELETE
        && response.status().is_success()
        && let Some(id) = &session
    {
        gate.owners.closed(id);
    }
    let is_stream = response
        .headers()
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.starts_with("text/event-stream"));
    if let (true, Some(id)) = (is_stream, session.or(opened)) {
        let body = std::mem::take(response.body_mut());
        *response.body_mut() = gate.owners.rewrite_stream(id, principal.id.clone(), body);
    }
    response
}

/// Reads a POST body through the message gate: the size cap, JSON-RPC's shape, and — for an answer to one of the
/// server's requests — the id this session was sent. The request to pass on, or the answer to give instead.
async fn read_message(gate: &Gate, session: Option<&str>, request: Request) -> Result<Request, Response> {
    let max = gate.max_bytes;
    let (parts, body) = request.into_parts();
    let mut stream = body.into_data_stream();
    let mut bytes = Vec::new();
    let mut size = 0usize;
    while let Some(chunk) = stream.next().await {
        let Ok(chunk) = chunk else {
            let error = ProtocolError {
                id: serde_json::Value::Null,
                code: INVALID_REQUEST,
                message: "Invalid Request: the request body could not be read".into(),
            };
            return Err(json_response(StatusCode::BAD_REQUEST, &error));
        };
        size = size.saturating_add(chunk.len());
        if size > max {
            let room = ID_SNIFF_BYTES.saturating_sub(bytes.len());
            bytes.extend_from_slice(&chunk[..chunk.len().min(room)]);
            bytes.truncate(ID_SNIFF_BYTES);
            return Err(json_response(StatusCode::PAYLOAD_TOO_LARGE, &ProtocolError::oversized(&bytes, size, max)));
        }
        bytes.extend_from_slice(&chunk);
    }
    // An answer to the server's request: back to the id rmcp chose, or dropped when this session was not sent it.
    if let (Some(session), Ok(message)) = (session, serde_json::from_slice::<serde_json::Value>(&bytes)) {
        let is_answer = message.get("method").is_none() && message.get("id").is_some();
        if is_answer {
            match gate.owners.answer(session, message) {
                Some(answer) => bytes = serde_json::to_vec(&answer).unwrap_or(bytes),
                None => {
                    tracing::warn!("an answer to a request this MCP session was never sent was dropped");
                    return Err(StatusCode::ACCEPTED.into_response());
                }
            }
        }
    }
    match classify(&bytes, max) {
        Inbound::Message(_) => Ok(Request::from_parts(parts, Body::from(bytes))),
        Inbound::Ignore(why) => {
            tracing::debug!("dropped an incoming message: {why}");
            Err(StatusCode::ACCEPTED.into_response())
        }
        Inbound::Reject(error) => Err(json_response(StatusCode::BAD_REQUEST, &error)),
    }
}

fn json_response(status: StatusCode, error: &ProtocolError) -> Response {
    (status, axum::Json(error.to_json())).into_response()
}

/// A running streamable HTTP server.
#[derive(Debug)]
pub struct HttpServer {
    addr: SocketAddr,
    stop: CancellationToken,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl HttpServer {
    /// Binds `addr` and starts serving `runtime` to `clients` (see the module docs), with `section`'s
    /// `allowed_hosts` (the `Host` names accepted besides loopback and the bound IP) and connection bounds. The
    /// server runs on a task of the current tokio runtime until [`HttpServer::shutdown`] (or the process ends).
    pub async fn start(
        runtime: Arc<Runtime>,
        addr: SocketAddr,
        clients: Arc<ClientTokens>,
        section: &McpSection,
        max_bytes: usize,
    ) -> Result<Self, ServeError> {
        let listener = tokio::net::TcpListener::bind(addr).await.map_err(|source| ServeError::Bind { addr, source })?;
        let addr = listener.local_addr().map_err(|source| ServeError::Bind { addr, source })?;
        let hosts = HostPolicy::new(addr, &section.allowed_hosts).map_err(|e| ServeError::Config(e.to_string()))?;
        let limits = section.connections;
        let stop = CancellationToken::new();
        runtime.spawn_idle_unloader(stop.child_token());
        let app = router(runtime, clients, hosts, max_bytes, stop.clone());
        let shutdown = stop.clone();
        let task = tokio::spawn(holdfast_agent::listen::serve(listener, app, limits, shutdown));
        Ok(Self { addr, stop, task })
    }

    /// The address it listens on (with the real port when 0 was asked for).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The MCP endpoint's URL, `http://ADDR/mcp`.
    pub fn url(&self) -> String {
        format!("http://{}{MCP_PATH}", self.addr)
    }

    /// A handle that stops the server when cancelled (for a Ctrl-C handler).
    pub fn stop_handle(&self) -> CancellationToken {
        self.stop.clone()
    }

    /// Waits until the server stops (on [`HttpServer::shutdown`], the stop handle, or a socket error).
    pub async fn wait(self) -> Result<(), ServeError> {
        match self.task.await {
            Ok(result) => result.map_err(|e| ServeError::Transport(e.to_string())),
            Err(e) => Err(ServeError::Transport(e.to_string())),
        }
    }

    /// Stops accepting, ends every MCP session and waits for the server to finish.
    pub async fn shutdown(self) -> Result<(), ServeError> {
        self.stop.cancel();
        self.wait().await
    }
}

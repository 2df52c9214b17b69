//! The streamable HTTP transport: `POST/GET/DELETE http://ADDR/mcp`, one holdfast session per MCP session.
//!
//! In front of the MCP service, in order:
//! 1. **The edge** ([`holdfast_agent::access::Guard`], the same as `holdfast serve`'s): `Host` must be loopback with
//!    the bound port, the bound IP, or a name in `[mcp] allowed_hosts` (DNS-rebinding protection); a present
//!    `Origin` must be this server's own; no token in the URL — each refusal a `403`/`401` with a JSON error code.
//! 2. **Bearer token** ([`holdfast_agent::access::AccessToken`]): every request needs `Authorization: Bearer TOKEN`,
//!    otherwise `401 unauthorized`.
//! 3. **The message gate** ([`crate::jsonrpc`]): a POST body over the cap is `413`, a body that is not JSON is `400`
//!    with a `-32700` error, a malformed JSON-RPC request is `400` with `-32600`/`-32602` — each a JSON-RPC error
//!    body; the server keeps serving.

use crate::error::ServeError;
use crate::jsonrpc::{ID_SNIFF_BYTES, INVALID_REQUEST, Inbound, ProtocolError, classify};
use crate::server::HoldfastMcp;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{Method, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use futures::StreamExt as _;
use holdfast_agent::Runtime;
use holdfast_agent::access::{AccessToken, Guard, HostPolicy};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The environment variable that may hold the bearer token.
pub const TOKEN_ENV: &str = "HOLDFAST_MCP_TOKEN";

/// The bearer token for a server about to listen on `bind`, first match wins: `flag` (`--token`), `env`
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

/// The path the MCP endpoint is served at.
pub const MCP_PATH: &str = "/mcp";

/// How long an idle MCP session (and its holdfast session's live state) is kept.
pub const SESSION_IDLE: Duration = Duration::from_secs(3600);

/// The MCP endpoint with its guards, as an axum router (for embedding; [`HttpServer`] serves it). `hosts` is the host
/// policy of the bound address.
pub fn router(
    runtime: Arc<Runtime>,
    token: AccessToken,
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
    let service =
        StreamableHttpService::new(move || Ok(HoldfastMcp::new(Arc::clone(&runtime))), Arc::new(sessions), config);
    let guard = Arc::new(Guard::new(hosts, Some(token)));
    let app =
        axum::Router::new().route_service(MCP_PATH, service).layer(middleware::from_fn_with_state(max_bytes, gate));
    guard.edge(guard.require_token(app))
}

async fn gate(State(max): State<usize>, request: Request, next: Next) -> Response {
    if request.method() != Method::POST {
        return next.run(request).await;
    }
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
            return json_response(StatusCode::BAD_REQUEST, &error);
        };
        size = size.saturating_add(chunk.len());
        if size > max {
            let room = ID_SNIFF_BYTES.saturating_sub(bytes.len());
            bytes.extend_from_slice(&chunk[..chunk.len().min(room)]);
            bytes.truncate(ID_SNIFF_BYTES);
            return json_response(StatusCode::PAYLOAD_TOO_LARGE, &ProtocolError::oversized(&bytes, size, max));
        }
        bytes.extend_from_slice(&chunk);
    }
    match classify(&bytes, max) {
        Inbound::Message(_) => next.run(Request::from_parts(parts, Body::from(bytes))).await,
        Inbound::Ignore(why) => {
            tracing::debug!("dropped an incoming message: {why}");
            StatusCode::ACCEPTED.into_response()
        }
        Inbound::Reject(error) => json_response(StatusCode::BAD_REQUEST, &error),
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
    /// Binds `addr` and starts serving `runtime` behind `token` (see the module docs); `allowed_hosts` are the
    /// `Host` names accepted besides loopback and the bound IP. The server runs on a task of the current tokio
    /// runtime until [`HttpServer::shutdown`] (or the process ends).
    pub async fn start(
        runtime: Arc<Runtime>,
        addr: SocketAddr,
        token: AccessToken,
        allowed_hosts: &[String],
        max_bytes: usize,
    ) -> Result<Self, ServeError> {
        let listener = tokio::net::TcpListener::bind(addr).await.map_err(|source| ServeError::Bind { addr, source })?;
        let addr = listener.local_addr().map_err(|source| ServeError::Bind { addr, source })?;
        let hosts = HostPolicy::new(addr, allowed_hosts).map_err(|e| ServeError::Config(e.to_string()))?;
        let stop = CancellationToken::new();
        runtime.spawn_idle_unloader(stop.child_token());
        let app = router(runtime, token, hosts, max_bytes, stop.clone());
        let shutdown = stop.clone();
        let task = tokio::spawn(async move {
            axum::serve(listener, app).with_graceful_shutdown(async move { shutdown.cancelled().await }).await
        });
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

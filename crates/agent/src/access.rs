//! Who may reach holdfast's HTTP front ends — `holdfast serve` and `holdfast mcp --transport http` — in one place:
//! the access token and the checks at the edge of both servers.
//!
//! **The token** ([`AccessToken`]): 32 random bytes as hex, kept in a file of the data dir (`server.token`,
//! `mcp.token`; mode 0600, the directory 0700), or chosen by the operator. Compared in constant time.
//!
//! **The edge** ([`Guard`]), in this order, for every request, with or without a token:
//! 1. `Host` must name this server: `localhost`, `127.0.0.1` or `[::1]` with the bound port, the bound IP address
//!    itself, or a name the operator listed (`allowed_hosts`). Anything else is `403 host_not_allowed` — a web page
//!    that rebinds its own DNS name to 127.0.0.1 never gets an answer.
//! 2. `Origin`, when present (browsers send it on WebSocket upgrades, on every POST/PUT/PATCH/DELETE and on
//!    cross-origin reads), must be this server's own origin (`http://` or `https://` and an allowed host);
//!    otherwise `403 origin_not_allowed`. Clients that are not browsers send no `Origin` and pass.
//! 3. The token never travels in a URL: a `token` query parameter is refused (`401 token_in_url`) everywhere but on
//!    the login page ([`Guard::with_login_path`]), which trades it once for a cookie and redirects to the clean URL.
//! 4. A mutating request under the JSON API prefix ([`Guard::with_json_api`]) carries `Content-Type:
//!    application/json`, or no body at all; otherwise `415 unsupported_media_type` (a cross-site form or
//!    `text/plain` POST never reaches a handler).
//!
//! **Authentication** ([`Guard::require_token`], on the routes that need it): `Authorization: Bearer TOKEN`, or the
//! `HttpOnly; SameSite=Strict` cookie set by the login page (browsers; the WebSocket too). Otherwise
//! `401 unauthorized`.
//!
//! Every refusal is a JSON body `{"error": {"code", "message"}}` with one of the stable codes of [`Refusal`].

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use holdfast_core::{ErrorCode, HasErrorCode};
use std::fmt;
use std::io::Write as _;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The token file of `holdfast serve` inside the data dir.
pub const SERVER_TOKEN_FILE: &str = "server.token";

/// The token file of `holdfast mcp --transport http` inside the data dir.
pub const MCP_TOKEN_FILE: &str = "mcp.token";

/// The shortest token accepted.
pub const MIN_TOKEN_LEN: usize = 16;

/// The query parameter the login page takes the token from (and that is refused everywhere else).
pub const TOKEN_PARAM: &str = "token";

/// The prefix of the session cookie's name; the bound port follows (cookies are shared between the ports of a
/// host, so two servers on one machine keep separate cookies).
pub const COOKIE_PREFIX: &str = "holdfast_token_";

/// Why a token could not be set up, or an `allowed_hosts` entry is invalid.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AccessError {
    /// A token is too short or holds characters a header or cookie cannot carry.
    #[error(
        "an access token must be at least {min} characters of printable ASCII without spaces, quotes, commas, \
         semicolons or backslashes"
    )]
    WeakToken {
        /// The minimum length.
        min: usize,
    },
    /// No token was chosen and none may be generated here (a non-loopback address).
    #[error("no access token was chosen, and none is generated for a non-loopback address")]
    NotChosen,
    /// The token file could not be read or written.
    #[error("token file {}: {source}", path.display())]
    TokenFile {
        /// The file.
        path: PathBuf,
        /// The I/O failure.
        source: std::io::Error,
    },
    /// The operating system could not supply random bytes.
    #[error("cannot generate an access token: {0}")]
    Random(String),
    /// An `allowed_hosts` entry is not a host name or `host:port`.
    #[error("allowed_hosts entry {entry:?}: {reason}")]
    InvalidHost {
        /// The entry.
        entry: String,
        /// What is wrong with it.
        reason: String,
    },
}

impl HasErrorCode for AccessError {
    fn code(&self) -> ErrorCode {
        match self {
            Self::WeakToken { .. } | Self::NotChosen | Self::InvalidHost { .. } => ErrorCode::ConfigInvalid,
            Self::TokenFile { .. } | Self::Random(_) => ErrorCode::Internal,
        }
    }
}

/// Where the token in effect came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenOrigin {
    /// A command-line flag.
    Flag,
    /// An environment variable.
    Env,
    /// The data dir's token file.
    File {
        /// The file.
        path: PathBuf,
        /// Whether this start created it.
        created: bool,
    },
    /// Generated for this run only (no data dir).
    Ephemeral,
}

/// The access token in effect. Its `Debug` form never shows the secret.
#[derive(Clone)]
pub struct AccessToken {
    secret: String,
    origin: TokenOrigin,
}

impl fmt::Debug for AccessToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AccessToken").field("origin", &self.origin).finish_non_exhaustive()
    }
}

impl AccessToken {
    /// Resolves the token, first match wins: `flag`, `env` (each when non-empty), the token `file` (read; created
    /// with mode 0600 when missing and `may_generate`), or — without a file and when `may_generate` — a fresh
    /// token for this run. Otherwise [`AccessError::NotChosen`]. A token that is present but weak is an error,
    /// never replaced.
    pub fn resolve(
        flag: Option<String>,
        env: Option<String>,
        file: Option<&Path>,
        may_generate: bool,
    ) -> Result<Self, AccessError> {
        let chosen = [(flag, TokenOrigin::Flag), (env, TokenOrigin::Env)]
            .into_iter()
            .find_map(|(value, origin)| value.filter(|v| !v.trim().is_empty()).map(|v| (v, origin)));
        if let Some((secret, origin)) = chosen {
            let secret = secret.trim().to_owned();
            check(&secret)?;
            return Ok(Self { secret, origin });
        }
        match file {
            Some(path) => match read_token_file(path)? {
                Some(secret) => {
                    Ok(Self { secret, origin: TokenOrigin::File { path: path.to_owned(), created: false } })
                }
                None if may_generate => create_token_file(path),
                None => Err(AccessError::NotChosen),
            },
            None if may_generate => Ok(Self { secret: generate()?, origin: TokenOrigin::Ephemeral }),
            None => Err(AccessError::NotChosen),
        }
    }

    /// Reads the token `file`, creating it (mode 0600, its directory 0700) when missing.
    pub fn load_or_create(file: &Path) -> Result<Self, AccessError> {
        Self::resolve(None, None, Some(file), true)
    }

    /// A token from a known secret (tests, embedding).
    pub fn from_secret(secret: impl Into<String>) -> Result<Self, AccessError> {
        let secret = secret.into();
        check(&secret)?;
        Ok(Self { secret, origin: TokenOrigin::Flag })
    }

    /// The secret, to hand to the operator once.
    pub fn secret(&self) -> &str {
        &self.secret
    }

    /// Where it came from.
    pub fn origin(&self) -> &TokenOrigin {
        &self.origin
    }

    /// Whether `presented` is this token, compared in constant time (for tokens of the same length).
    pub fn matches(&self, presented: &str) -> bool {
        constant_time_eq(presented.as_bytes(), self.secret.as_bytes())
    }

    /// Whether an `Authorization` header value carries this token (`Bearer TOKEN`, scheme case-insensitive).
    pub fn accepts_authorization(&self, header: &str) -> bool {
        let Some((scheme, presented)) = header.trim().split_once(' ') else { return false };
        scheme.eq_ignore_ascii_case("bearer") && self.matches(presented.trim())
    }
}

fn check(secret: &str) -> Result<(), AccessError> {
    let allowed = |b: u8| b.is_ascii_graphic() && !matches!(b, b'"' | b',' | b';' | b'\\');
    if secret.len() < MIN_TOKEN_LEN || !secret.bytes().all(allowed) {
        return Err(AccessError::WeakToken { min: MIN_TOKEN_LEN });
    }
    Ok(())
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn generate() -> Result<String, AccessError> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| AccessError::Random(e.to_string()))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// The token in `path`, `None` when the file does not exist; a file that exists is checked (and made private).
fn read_token_file(path: &Path) -> Result<Option<String>, AccessError> {
    let err = |source| AccessError::TokenFile { path: path.to_owned(), source };
    match std::fs::read_to_string(path) {
        Ok(text) => {
            let secret = text.trim().to_owned();
            check(&secret)?;
            holdfast_core::private_fs::restrict_file(path).map_err(err)?;
            Ok(Some(secret))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(err(e)),
    }
}

/// Writes a fresh token to `path` (mode 0600) through a temporary file linked into place: a crash never leaves a
/// half-written token, and when two processes race, both end up with the one that was linked first.
fn create_token_file(path: &Path) -> Result<AccessToken, AccessError> {
    let err = |source| AccessError::TokenFile { path: path.to_owned(), source };
    holdfast_core::private_fs::create_private_parent(path).map_err(err)?;
    let secret = generate()?;
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".tmp{}", std::process::id()));
    let tmp = PathBuf::from(tmp);
    let written = (|| {
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt as _;
            options.mode(holdfast_core::private_fs::FILE_MODE);
        }
        let mut file = options.open(&tmp)?;
        file.write_all(format!("{secret}\n").as_bytes())?;
        file.sync_all()?;
        std::fs::hard_link(&tmp, path)
    })();
    let _ = std::fs::remove_file(&tmp);
    match written {
        Ok(()) => Ok(AccessToken { secret, origin: TokenOrigin::File { path: path.to_owned(), created: true } }),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => match read_token_file(path)? {
            Some(secret) => {
                Ok(AccessToken { secret, origin: TokenOrigin::File { path: path.to_owned(), created: false } })
            }
            None => Err(err(e)),
        },
        Err(e) => Err(err(e)),
    }
}

/// One allowed host: a lower-case name or IP (IPv6 without brackets) and, optionally, the only port it may carry.
#[derive(Debug, Clone, PartialEq, Eq)]
struct HostEntry {
    host: String,
    port: Option<u16>,
}

/// The `Host` values (and so the origins) that name this server.
#[derive(Debug, Clone)]
pub struct HostPolicy {
    port: u16,
    bound_ip: Option<IpAddr>,
    extra: Vec<HostEntry>,
}

/// The loopback names every server answers to (with its bound port).
const LOOPBACK_NAMES: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

impl HostPolicy {
    /// The policy of a server bound to `bound` (the real address, after binding): loopback names with the bound
    /// port, the bound IP itself (unless it is the unspecified address), and each of `allowed_hosts` — `name`
    /// (with no port or the bound port, as behind a reverse proxy) or `name:port` (exactly that port).
    pub fn new(bound: SocketAddr, allowed_hosts: &[String]) -> Result<Self, AccessError> {
        let extra = allowed_hosts.iter().map(|entry| parse_entry(entry)).collect::<Result<Vec<_>, _>>()?;
        let ip = bound.ip();
        Ok(Self { port: bound.port(), bound_ip: (!ip.is_unspecified()).then_some(ip), extra })
    }

    /// The policy with no configured names.
    pub fn loopback(bound: SocketAddr) -> Self {
        let ip = bound.ip();
        Self { port: bound.port(), bound_ip: (!ip.is_unspecified()).then_some(ip), extra: Vec::new() }
    }

    /// The bound port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Whether a `Host` header value names this server.
    pub fn allows_host(&self, value: &str) -> bool {
        parse_authority(value).is_some_and(|(host, port)| self.allows(&host, port, 80))
    }

    /// Whether an `Origin` header value is this server's own origin (`http`/`https` and an allowed host).
    pub fn allows_origin(&self, value: &str) -> bool {
        let value = value.trim();
        let Some((scheme, rest)) = value.split_once("://") else { return false };
        let default_port = match scheme.to_ascii_lowercase().as_str() {
            "http" => 80,
            "https" => 443,
            _ => return false,
        };
        if rest.contains('/') {
            return false;
        }
        parse_authority(rest).is_some_and(|(host, port)| self.allows(&host, port, default_port))
    }

    fn allows(&self, host: &str, port: Option<u16>, default_port: u16) -> bool {
        let effective = port.unwrap_or(default_port);
        let own = LOOPBACK_NAMES.contains(&host)
            || self.bound_ip.is_some_and(|ip| host.parse::<IpAddr>().is_ok_and(|h| h == ip));
        if own && effective == self.port {
            return true;
        }
        self.extra.iter().any(|e| {
            e.host == host
                && match e.port {
                    Some(p) => effective == p,
                    None => port.is_none() || port == Some(self.port),
                }
        })
    }
}

/// `host[:port]` → (lower-case host without IPv6 brackets, port). `None` for anything else (user info, paths…).
fn parse_authority(value: &str) -> Option<(String, Option<u16>)> {
    let value = value.trim();
    if value.is_empty() || value.contains(['@', '/', '?', '#', ' ', '*']) {
        return None;
    }
    let authority: axum::http::uri::Authority = value.parse().ok()?;
    let host = authority.host().trim_start_matches('[').trim_end_matches(']').to_ascii_lowercase();
    if host.is_empty() {
        return None;
    }
    Some((host, authority.port_u16()))
}

fn parse_entry(entry: &str) -> Result<HostEntry, AccessError> {
    let invalid = |reason: &str| AccessError::InvalidHost { entry: entry.to_owned(), reason: reason.to_owned() };
    if entry.contains("://") {
        return Err(invalid("give a host name or host:port, not a URL"));
    }
    let (host, port) = parse_authority(entry).ok_or_else(|| invalid("not a host name or host:port"))?;
    if !host.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b':' | b'_')) {
        return Err(invalid("not a host name or host:port"));
    }
    Ok(HostEntry { host, port })
}

/// Why the edge refused a request. Each has a stable `code` and an HTTP status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// `Host` does not name this server (DNS rebinding or a misdirected request): 403 `host_not_allowed`.
    HostNotAllowed,
    /// `Origin` is present and is not this server's own: 403 `origin_not_allowed`.
    OriginNotAllowed,
    /// The token was sent in a URL: 401 `token_in_url`.
    TokenInUrl,
    /// A mutating API request whose body is not JSON: 415 `unsupported_media_type`.
    UnsupportedMediaType,
    /// No or a wrong access token: 401 `unauthorized`.
    Unauthorized,
}

impl Refusal {
    /// The stable code.
    pub fn code(self) -> &'static str {
        match self {
            Self::HostNotAllowed => "host_not_allowed",
            Self::OriginNotAllowed => "origin_not_allowed",
            Self::TokenInUrl => "token_in_url",
            Self::UnsupportedMediaType => "unsupported_media_type",
            Self::Unauthorized => "unauthorized",
        }
    }

    /// The HTTP status.
    pub fn status(self) -> StatusCode {
        match self {
            Self::HostNotAllowed | Self::OriginNotAllowed => StatusCode::FORBIDDEN,
            Self::TokenInUrl | Self::Unauthorized => StatusCode::UNAUTHORIZED,
            Self::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
        }
    }

    /// What the caller reads.
    pub fn message(self) -> &'static str {
        match self {
            Self::HostNotAllowed => {
                "the Host header does not name this server (loopback with its port, or a name in allowed_hosts)"
            }
            Self::OriginNotAllowed => "requests from another origin are refused",
            Self::TokenInUrl => {
                "the access token is not accepted in a URL; send `Authorization: Bearer TOKEN` (or open the UI link \
                 printed at start, which sets a cookie once)"
            }
            Self::UnsupportedMediaType => "this API takes `Content-Type: application/json` bodies only",
            Self::Unauthorized => "a valid access token is required (`Authorization: Bearer TOKEN`)",
        }
    }
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        let body = serde_json::json!({"error": {"code": self.code(), "message": self.message()}});
        let mut response = (self.status(), axum::Json(body)).into_response();
        if self.status() == StatusCode::UNAUTHORIZED {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer realm=\"holdfast\""));
        }
        response
    }
}

/// The edge of one HTTP server: its host policy, its token (none: authentication off, loopback only) and which of
/// the optional rules apply. See the module docs.
#[derive(Debug, Clone)]
pub struct Guard {
    hosts: HostPolicy,
    token: Option<AccessToken>,
    cookie: Option<String>,
    login_path: Option<String>,
    json_api: Option<String>,
}

impl Guard {
    /// A guard with the host and origin checks, `token` for [`Guard::require_token`], no cookie, no login page,
    /// no JSON rule.
    pub fn new(hosts: HostPolicy, token: Option<AccessToken>) -> Self {
        Self { hosts, token, cookie: None, login_path: None, json_api: None }
    }

    /// Browsers authenticate with a cookie obtained once on the login page at `path` (`GET path?token=…`).
    pub fn with_login_path(mut self, path: &str) -> Self {
        self.cookie = Some(format!("{COOKIE_PREFIX}{}", self.hosts.port()));
        self.login_path = Some(path.to_owned());
        self
    }

    /// Mutating requests under `prefix` must carry JSON (or no body).
    pub fn with_json_api(mut self, prefix: &str) -> Self {
        self.json_api = Some(prefix.to_owned());
        self
    }

    /// The host policy.
    pub fn hosts(&self) -> &HostPolicy {
        &self.hosts
    }

    /// The token, when authentication is on.
    pub fn token(&self) -> Option<&AccessToken> {
        self.token.as_ref()
    }

    /// The session cookie's name, when browsers log in with a cookie.
    pub fn cookie_name(&self) -> Option<&str> {
        self.cookie.as_deref()
    }

    /// Checks 1–4 of the module docs.
    pub fn check_edge(&self, method: &Method, uri: &Uri, headers: &HeaderMap) -> Result<(), Refusal> {
        let host = headers
            .get(header::HOST)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
            .or_else(|| uri.authority().map(ToString::to_string));
        if !host.is_some_and(|h| self.hosts.allows_host(&h)) {
            return Err(Refusal::HostNotAllowed);
        }
        for origin in headers.get_all(header::ORIGIN) {
            if !origin.to_str().is_ok_and(|o| self.hosts.allows_origin(o)) {
                return Err(Refusal::OriginNotAllowed);
            }
        }
        let login = self.login_path.as_deref().is_some_and(|p| p == uri.path()) && method == Method::GET;
        if !login && query_has_token(uri.query()) {
            return Err(Refusal::TokenInUrl);
        }
        let mutating = matches!(*method, Method::POST | Method::PUT | Method::PATCH | Method::DELETE);
        if mutating && self.json_api.as_deref().is_some_and(|p| uri.path().starts_with(p)) && !json_or_empty(headers) {
            return Err(Refusal::UnsupportedMediaType);
        }
        Ok(())
    }

    /// Whether the request carries the token (bearer header or session cookie); always true without a token.
    pub fn check_token(&self, headers: &HeaderMap) -> Result<(), Refusal> {
        let Some(token) = &self.token else { return Ok(()) };
        let bearer = headers
            .get_all(header::AUTHORIZATION)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .any(|v| token.accepts_authorization(v));
        let cookie = self.cookie.as_deref().is_some_and(|name| {
            headers
                .get_all(header::COOKIE)
                .iter()
                .filter_map(|v| v.to_str().ok())
                .flat_map(|v| v.split(';'))
                .filter_map(|pair| pair.trim().split_once('='))
                .any(|(k, v)| k == name && token.matches(v.trim()))
        });
        if bearer || cookie { Ok(()) } else { Err(Refusal::Unauthorized) }
    }

    /// The login page's answer to `GET login_path?query`, when the query carries a token: a redirect to the clean
    /// page — with the session cookie when the token is right, to `#refused` otherwise. `None` without a token
    /// in the query (serve the page).
    pub fn login(&self, query: Option<&str>) -> Option<Response> {
        let presented = query_token(query)?;
        let path = self.login_path.clone().unwrap_or_else(|| "/".to_owned());
        let mut headers = HeaderMap::new();
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        let location = match (&self.token, &self.cookie) {
            (None, _) => path,
            (Some(token), Some(name)) if token.matches(&presented) => {
                // `Secure` is added when the server speaks TLS itself; it never does today.
                let cookie = format!("{name}={}; HttpOnly; SameSite=Strict; Path=/", token.secret());
                if let Ok(value) = HeaderValue::from_str(&cookie) {
                    headers.insert(header::SET_COOKIE, value);
                }
                path
            }
            _ => format!("{path}#refused"),
        };
        let location = HeaderValue::from_str(&location).unwrap_or_else(|_| HeaderValue::from_static("/"));
        headers.insert(header::LOCATION, location);
        Some((StatusCode::SEE_OTHER, headers).into_response())
    }

    /// `router` behind the edge checks (1–4). Apply to the whole router, after every route is added.
    pub fn edge<S: Clone + Send + Sync + 'static>(self: &Arc<Self>, router: Router<S>) -> Router<S> {
        router.layer(middleware::from_fn_with_state(Arc::clone(self), edge))
    }

    /// `router` behind authentication (bearer header or session cookie).
    pub fn require_token<S: Clone + Send + Sync + 'static>(self: &Arc<Self>, router: Router<S>) -> Router<S> {
        router.layer(middleware::from_fn_with_state(Arc::clone(self), authenticate))
    }
}

async fn edge(State(guard): State<Arc<Guard>>, request: Request, next: Next) -> Response {
    match guard.check_edge(request.method(), request.uri(), request.headers()) {
        Ok(()) => next.run(request).await,
        Err(refusal) => {
            tracing::warn!(code = refusal.code(), method = %request.method(), path = request.uri().path(), "refused at the edge");
            refusal.into_response()
        }
    }
}

async fn authenticate(State(guard): State<Arc<Guard>>, request: Request, next: Next) -> Response {
    match guard.check_token(request.headers()) {
        Ok(()) => next.run(request).await,
        Err(refusal) => refusal.into_response(),
    }
}

fn query_pairs(query: Option<&str>) -> impl Iterator<Item = (&str, &str)> {
    query.unwrap_or_default().split('&').filter(|p| !p.is_empty()).map(|p| p.split_once('=').unwrap_or((p, "")))
}

fn query_has_token(query: Option<&str>) -> bool {
    query_pairs(query).any(|(k, _)| percent_decode(k).eq_ignore_ascii_case(TOKEN_PARAM))
}

fn query_token(query: Option<&str>) -> Option<String> {
    query_pairs(query)
        .find(|(k, _)| percent_decode(k).eq_ignore_ascii_case(TOKEN_PARAM))
        .map(|(_, v)| percent_decode(v).trim().to_owned())
}

/// `%XX` and `+` decoding of a query component; invalid escapes stay as they are.
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        let escaped = (b == b'%')
            .then(|| bytes.get(i + 1..i + 3))
            .flatten()
            .filter(|h| h.iter().all(u8::is_ascii_hexdigit))
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (b, escaped) {
            (_, Some(decoded)) => {
                out.push(decoded);
                i += 3;
            }
            (b'+', None) => {
                out.push(b' ');
                i += 1;
            }
            (other, None) => {
                out.push(other);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `Content-Type: application/json` (any parameters), or no body at all.
fn json_or_empty(headers: &HeaderMap) -> bool {
    match headers.get(header::CONTENT_TYPE) {
        Some(value) => value
            .to_str()
            .ok()
            .and_then(|v| v.split(';').next())
            .is_some_and(|essence| essence.trim().eq_ignore_ascii_case("application/json")),
        None => {
            let length = headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok());
            !headers.contains_key(header::TRANSFER_ENCODING) && length.is_none_or(|l| l.trim() == "0")
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn loopback() -> SocketAddr {
        ([127, 0, 0, 1], 8700).into()
    }

    #[test]
    fn the_first_start_writes_a_private_token_file_and_later_starts_reuse_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("data").join(SERVER_TOKEN_FILE);
        let first = AccessToken::load_or_create(&path).unwrap();
        assert_eq!(first.origin(), &TokenOrigin::File { path: path.clone(), created: true });
        assert_eq!(first.secret().len(), 64);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!((mode(&path), mode(&dir.path().join("data"))), (0o600, 0o700));
        }
        let again = AccessToken::resolve(None, None, Some(&path), false).unwrap();
        assert_eq!(again.secret(), first.secret());
        assert_eq!(again.origin(), &TokenOrigin::File { path, created: false });
        assert!(!format!("{again:?}").contains(first.secret()), "Debug never shows the secret");
        assert!(first.matches(again.secret()) && !first.matches("x"));
    }

    #[test]
    fn a_token_is_chosen_or_generated_only_where_allowed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(MCP_TOKEN_FILE);
        assert!(matches!(AccessToken::resolve(None, None, Some(&path), false), Err(AccessError::NotChosen)));
        assert!(!path.exists(), "nothing is generated when not allowed");
        assert!(matches!(AccessToken::resolve(None, None, None, false), Err(AccessError::NotChosen)));
        let flag = AccessToken::resolve(Some("a-long-enough-token".into()), None, None, false).unwrap();
        assert_eq!(flag.origin(), &TokenOrigin::Flag);
        let env = AccessToken::resolve(None, Some("another-long-token".into()), None, false).unwrap();
        assert_eq!(env.origin(), &TokenOrigin::Env);
        assert_eq!(AccessToken::resolve(None, None, None, true).unwrap().origin(), &TokenOrigin::Ephemeral);
        std::fs::write(&path, "short\n").unwrap();
        assert!(matches!(AccessToken::load_or_create(&path), Err(AccessError::WeakToken { .. })));
    }

    #[test]
    fn weak_tokens_are_refused_and_headers_are_checked_exactly() {
        for weak in ["short", "has spaces in the token", "tab\tinside-the-token", "semi;colon-in-the-token"] {
            assert!(AccessToken::from_secret(weak).is_err(), "{weak:?}");
        }
        let token = AccessToken::from_secret("0123456789abcdef").unwrap();
        assert!(token.accepts_authorization("Bearer 0123456789abcdef"));
        assert!(token.accepts_authorization("bearer 0123456789abcdef"));
        for bad in ["", "Bearer", "Bearer 0123456789abcdeF", "Basic 0123456789abcdef", "Bearer 0123456789abcdef0"] {
            assert!(!token.accepts_authorization(bad), "{bad:?}");
        }
    }

    #[test]
    fn hosts_are_loopback_with_the_port_or_configured() {
        let policy = HostPolicy::new(loopback(), &["holdfast.lan".into(), "Proxy.Example:8443".into()]).unwrap();
        for ok in [
            "localhost:8700",
            "127.0.0.1:8700",
            "[::1]:8700",
            "LOCALHOST:8700",
            "holdfast.lan",
            "holdfast.lan:8700",
            "proxy.example:8443",
        ] {
            assert!(policy.allows_host(ok), "{ok}");
        }
        for bad in [
            "attacker.example",
            "attacker.example:8700",
            "localhost",
            "localhost:8701",
            "127.0.0.1",
            "holdfast.lan:9000",
            "proxy.example",
            "user@localhost:8700",
            "",
            "localhost.attacker.example:8700",
        ] {
            assert!(!policy.allows_host(bad), "{bad}");
        }
        for ok in ["http://localhost:8700", "http://127.0.0.1:8700", "https://holdfast.lan", "http://[::1]:8700"] {
            assert!(policy.allows_origin(ok), "{ok}");
        }
        for bad in [
            "null",
            "https://attacker.example",
            "http://localhost:8701",
            "http://localhost",
            "file://",
            "http://localhost:8700/x",
        ] {
            assert!(!policy.allows_origin(bad), "{bad}");
        }
        for bad in ["http://x.example", "a b", "*.example", ""] {
            assert!(HostPolicy::new(loopback(), &[bad.into()]).is_err(), "{bad:?}");
        }
        let lan = HostPolicy::loopback(([192, 168, 1, 5], 8700).into());
        assert!(lan.allows_host("192.168.1.5:8700") && !lan.allows_host("192.168.1.6:8700"));
        let any = HostPolicy::loopback(([0, 0, 0, 0], 8700).into());
        assert!(any.allows_host("localhost:8700") && !any.allows_host("0.0.0.0:8700"));
    }

    #[test]
    fn the_edge_refuses_foreign_hosts_origins_tokens_in_urls_and_non_json_bodies() {
        let token = AccessToken::from_secret("0123456789abcdef").unwrap();
        let guard =
            Guard::new(HostPolicy::loopback(loopback()), Some(token)).with_login_path("/").with_json_api("/api/");
        let headers = |pairs: &[(header::HeaderName, &str)]| {
            let mut h = HeaderMap::new();
            for (k, v) in pairs {
                h.append(k.clone(), HeaderValue::from_str(v).unwrap());
            }
            h
        };
        let host = (header::HOST, "127.0.0.1:8700");
        let host_only = headers(std::slice::from_ref(&host));
        let uri = |s: &str| s.parse::<Uri>().unwrap();
        let check = |m: Method, u: &str, h: &HeaderMap| guard.check_edge(&m, &uri(u), h);
        assert_eq!(check(Method::GET, "/api/info", &host_only), Ok(()));
        assert_eq!(
            check(Method::GET, "/", &headers(&[(header::HOST, "attacker.example:8700")])),
            Err(Refusal::HostNotAllowed)
        );
        let evil = headers(&[host.clone(), (header::ORIGIN, "https://attacker.example")]);
        assert_eq!(check(Method::GET, "/ws", &evil), Err(Refusal::OriginNotAllowed));
        let own = headers(&[
            host.clone(),
            (header::ORIGIN, "http://127.0.0.1:8700"),
            (header::CONTENT_TYPE, "application/json; charset=utf-8"),
            (header::CONTENT_LENGTH, "2"),
        ]);
        assert_eq!(check(Method::POST, "/api/sessions", &own), Ok(()));
        let plain = headers(&[host.clone(), (header::CONTENT_TYPE, "text/plain"), (header::CONTENT_LENGTH, "2")]);
        assert_eq!(check(Method::POST, "/api/sessions", &plain), Err(Refusal::UnsupportedMediaType));
        let bodyless = headers(&[host.clone(), (header::CONTENT_LENGTH, "0")]);
        assert_eq!(check(Method::POST, "/api/sessions", &bodyless), Ok(()));
        let untyped = headers(&[host.clone(), (header::CONTENT_LENGTH, "5")]);
        assert_eq!(check(Method::POST, "/api/sessions", &untyped), Err(Refusal::UnsupportedMediaType));
        assert_eq!(check(Method::GET, "/api/info?token=0123456789abcdef", &host_only), Err(Refusal::TokenInUrl));
        assert_eq!(check(Method::GET, "/ws?session=a&%74oken=x", &host_only), Err(Refusal::TokenInUrl));
        assert_eq!(check(Method::GET, "/?token=0123456789abcdef", &host_only), Ok(()));

        assert_eq!(guard.check_token(&headers(&[])), Err(Refusal::Unauthorized));
        assert_eq!(guard.check_token(&headers(&[(header::AUTHORIZATION, "Bearer 0123456789abcdef")])), Ok(()));
        let cookie = format!("other=1; {}=0123456789abcdef", guard.cookie_name().unwrap());
        assert_eq!(guard.check_token(&headers(&[(header::COOKIE, &cookie)])), Ok(()));
        assert_eq!(
            guard.check_token(&headers(&[(header::COOKIE, "holdfast_token_9999=0123456789abcdef")])),
            Err(Refusal::Unauthorized)
        );

        let ok = guard.login(Some("token=0123456789abcdef")).unwrap();
        assert_eq!(ok.status(), StatusCode::SEE_OTHER);
        assert_eq!(ok.headers()[header::LOCATION], "/");
        let set = ok.headers()[header::SET_COOKIE].to_str().unwrap();
        assert_eq!(set, "holdfast_token_8700=0123456789abcdef; HttpOnly; SameSite=Strict; Path=/");
        let refused = guard.login(Some("token=wrong")).unwrap();
        assert_eq!(refused.headers()[header::LOCATION], "/#refused");
        assert!(refused.headers().get(header::SET_COOKIE).is_none());
        assert!(guard.login(Some("x=1")).is_none() && guard.login(None).is_none());
    }

    #[test]
    fn query_components_are_decoded() {
        assert_eq!(percent_decode("a%20b+c%zz%4"), "a b c%zz%4");
        assert_eq!(query_token(Some("x=1&token=ab%2Fc")), Some("ab/c".to_owned()));
    }
}

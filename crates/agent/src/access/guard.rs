//! The edge of both HTTP servers ([`Guard`]) and why it refuses ([`Refusal`]); see the [module docs](super).

use super::clients::ClientTokens;
use super::hosts::HostPolicy;
use super::signin::{CODE_PARAM, PAGE_FRAGMENT, PAGE_HEADER, PAGE_PROTOCOL_PREFIX, SignIn};
use super::token::AccessToken;
use super::{COOKIE_PREFIX, TOKEN_PARAM};
use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use std::sync::Arc;

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
                "the access token is not accepted in a URL; send `Authorization: Bearer TOKEN` (browsers sign in with \
                 the one-time link `holdfast serve --print-url` prints)"
            }
            Self::UnsupportedMediaType => "this API takes `Content-Type: application/json` bodies only",
            Self::Unauthorized => {
                "a valid access token is required (`Authorization: Bearer TOKEN`); a browser signs in with the one-time \
                 link `holdfast serve --print-url` prints"
            }
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

/// Who a request comes from, once authenticated: put in the request's extensions by [`Guard::require_token`].
#[derive(Clone, PartialEq, Eq)]
pub struct Principal {
    /// The client's name: an MCP client ([`super::clients`]), `api` (the bearer token of `holdfast serve`),
    /// `browser` (a signed-in browser) or `anyone` (authentication off).
    pub client: String,
    /// What stays the same for this credential and no other: an MCP client's id (a name reused after a revocation
    /// is another client), a digest of the default MCP token, or the client's name elsewhere. Sessions are owned by
    /// it.
    pub id: String,
    /// A browser's session cookie, to check again while a connection lasts (sign-out, expiry).
    browser_session: Option<String>,
}

impl std::fmt::Debug for Principal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Principal").field("client", &self.client).field("id", &self.id).finish_non_exhaustive()
    }
}

impl Principal {
    fn named(client: &str) -> Self {
        Self { client: client.to_owned(), id: client.to_owned(), browser_session: None }
    }

    /// A principal of its own name and id (tests, embedding).
    pub fn new(client: &str, id: &str) -> Self {
        Self { client: client.to_owned(), id: id.to_owned(), browser_session: None }
    }

    /// The browser session this principal signed in with, when it is a browser.
    pub fn browser_session(&self) -> Option<&str> {
        self.browser_session.as_deref()
    }
}

/// The credentials a server accepts as a bearer token.
#[derive(Debug, Clone)]
pub enum Credentials {
    /// One token (`holdfast serve`): its holder is the principal `api`.
    Token(AccessToken),
    /// Tokens naming clients (`holdfast mcp --transport http`).
    Clients(Arc<ClientTokens>),
}

impl Credentials {
    fn authenticate(&self, presented: &str) -> Option<Principal> {
        match self {
            Self::Token(token) => token.matches(presented).then(|| Principal::named("api")),
            Self::Clients(clients) => {
                clients.authenticate(presented).map(|(client, id)| Principal { client, id, browser_session: None })
            }
        }
    }
}

/// The edge of one HTTP server: its host policy, its credentials (none: authentication off, loopback only), its
/// browser sign-in, and which of the optional rules apply. See the module docs.
#[derive(Debug, Clone)]
pub struct Guard {
    hosts: HostPolicy,
    credentials: Option<Credentials>,
    sign_in: Option<Arc<SignIn>>,
    cookie: String,
    json_api: Option<String>,
}

impl Guard {
    /// A guard with the host and origin checks, `credentials` for [`Guard::require_token`], no browser sign-in, no
    /// JSON rule.
    pub fn new(hosts: HostPolicy, credentials: Option<Credentials>) -> Self {
        let cookie = format!("{COOKIE_PREFIX}{}", hosts.port());
        Self { hosts, credentials, sign_in: None, cookie, json_api: None }
    }

    /// Browsers sign in with one-time codes on the page `GET /?code=…` ([`Guard::sign_in_page`]) and then carry
    /// a session cookie `sign_in` checks.
    pub fn with_sign_in(mut self, sign_in: Arc<SignIn>) -> Self {
        self.sign_in = Some(sign_in);
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

    /// The credentials, when authentication is on.
    pub fn credentials(&self) -> Option<&Credentials> {
        self.credentials.as_ref()
    }

    /// The browser session cookie's name (`holdfast_session_PORT`).
    pub fn cookie_name(&self) -> &str {
        &self.cookie
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
        if query_has_token(uri.query()) {
            return Err(Refusal::TokenInUrl);
        }
        let mutating = matches!(*method, Method::POST | Method::PUT | Method::PATCH | Method::DELETE);
        if mutating && self.json_api.as_deref().is_some_and(|p| uri.path().starts_with(p)) && !json_or_empty(headers) {
            return Err(Refusal::UnsupportedMediaType);
        }
        Ok(())
    }

    /// Who the request comes from: a bearer token the credentials accept, or a browser session of this server's
    /// sign-in: its cookie together with its page key (the [`PAGE_HEADER`] header, or on a WebSocket upgrade a
    /// [`PAGE_PROTOCOL_PREFIX`] subprotocol), never the cookie alone. The token is never accepted as a cookie, nor a
    /// cookie as a token. Without credentials, everyone is `anyone`.
    pub fn check_token(&self, headers: &HeaderMap) -> Result<Principal, Refusal> {
        let Some(credentials) = &self.credentials else { return Ok(Principal::named("anyone")) };
        let bearer = headers
            .get_all(header::AUTHORIZATION)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .filter_map(bearer_token)
            .find_map(|presented| credentials.authenticate(presented));
        if let Some(principal) = bearer {
            return Ok(principal);
        }
        let browser = self.sign_in.as_ref().and_then(|sign_in| {
            let page_key = page_key(headers)?;
            headers
                .get_all(header::COOKIE)
                .iter()
                .filter_map(|v| v.to_str().ok())
                .flat_map(|v| v.split(';'))
                .filter_map(|pair| pair.trim().split_once('='))
                .find(|(k, v)| *k == self.cookie && sign_in.authenticates(v, page_key))
                .map(|(_, v)| v.trim().to_owned())
        });
        match browser {
            Some(session) => Ok(Principal { browser_session: Some(session), ..Principal::named("browser") }),
            None => Err(Refusal::Unauthorized),
        }
    }

    /// The sign-in page's answer to `GET /?query` when the query carries a code: a redirect to the page with a new
    /// session cookie and, in the URL's fragment (`/#page=KEY`, never sent to a server), the session's page key for
    /// the page to keep and send; or the sign-in page saying why the code was refused. `None` without a code (serve the
    /// page), and without browser sign-in.
    pub fn sign_in_page(&self, query: Option<&str>) -> Option<Response> {
        let sign_in = self.sign_in.as_ref()?;
        let code = query_param(query, CODE_PARAM)?;
        let mut headers = HeaderMap::new();
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        match sign_in.redeem(&code) {
            Ok(session) => {
                // `Secure` is added when the server speaks TLS itself; it never does today.
                let cookie = format!(
                    "{}={}; HttpOnly; SameSite=Strict; Path=/; Max-Age={}",
                    self.cookie,
                    session.secret,
                    session.max_age.as_secs()
                );
                if let Ok(value) = HeaderValue::from_str(&cookie) {
                    headers.insert(header::SET_COOKIE, value);
                }
                if let Ok(value) = HeaderValue::from_str(&format!("/#{PAGE_FRAGMENT}={}", session.page_key)) {
                    headers.insert(header::LOCATION, value);
                }
                tracing::info!("a browser signed in");
                Some((StatusCode::SEE_OTHER, headers).into_response())
            }
            Err(refusal) => {
                tracing::warn!(code = refusal.code(), "a sign-in link was refused");
                headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8"));
                Some((refusal.status(), headers, sign_in_html(refusal.message())).into_response())
            }
        }
    }

    /// `router` behind the edge checks (1–4). Apply to the whole router, after every route is added.
    pub fn edge<S: Clone + Send + Sync + 'static>(self: &Arc<Self>, router: Router<S>) -> Router<S> {
        router.layer(middleware::from_fn_with_state(Arc::clone(self), edge))
    }

    /// `router` behind authentication (a bearer token or a browser session); the [`Principal`] is put in each
    /// request's extensions.
    pub fn require_token<S: Clone + Send + Sync + 'static>(self: &Arc<Self>, router: Router<S>) -> Router<S> {
        router.layer(middleware::from_fn_with_state(Arc::clone(self), authenticate))
    }
}

/// The sign-in page shown for a refused code: static text (no script, no data), the reason and what to do.
fn sign_in_html(reason: &str) -> String {
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>holdfast — sign in</title></head>\
         <body style=\"font-family:system-ui,sans-serif;max-width:40em;margin:4em auto\"><h1>Sign in to holdfast</h1>\
         <p id=\"reason\">{reason}</p><p>For a new link, run <code>holdfast serve --print-url</code> where the server \
         runs (with the same <code>--data-dir</code> or <code>--config</code>), and open the link it prints.</p>\
         </body></html>"
    )
}

/// The page key a browser sent: its [`PAGE_HEADER`] header, or a [`PAGE_PROTOCOL_PREFIX`] subprotocol offered on a
/// WebSocket upgrade.
fn page_key(headers: &HeaderMap) -> Option<&str> {
    if let Some(key) = headers.get(PAGE_HEADER).and_then(|v| v.to_str().ok()) {
        return Some(key);
    }
    headers
        .get_all(header::SEC_WEBSOCKET_PROTOCOL)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .find_map(|p| p.trim().strip_prefix(PAGE_PROTOCOL_PREFIX))
}

/// The token of an `Authorization: Bearer TOKEN` value (scheme case-insensitive).
fn bearer_token(value: &str) -> Option<&str> {
    let (scheme, presented) = value.trim().split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| presented.trim())
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

async fn authenticate(State(guard): State<Arc<Guard>>, mut request: Request, next: Next) -> Response {
    match guard.check_token(request.headers()) {
        Ok(principal) => {
            request.extensions_mut().insert(principal);
            next.run(request).await
        }
        Err(refusal) => refusal.into_response(),
    }
}

fn query_pairs(query: Option<&str>) -> impl Iterator<Item = (&str, &str)> {
    query.unwrap_or_default().split('&').filter(|p| !p.is_empty()).map(|p| p.split_once('=').unwrap_or((p, "")))
}

fn query_has_token(query: Option<&str>) -> bool {
    query_pairs(query).any(|(k, _)| percent_decode(k).eq_ignore_ascii_case(TOKEN_PARAM))
}

fn query_param(query: Option<&str>, name: &str) -> Option<String> {
    query_pairs(query).find(|(k, _)| percent_decode(k) == name).map(|(_, v)| percent_decode(v).trim().to_owned())
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
    use crate::access::signin::SignInSettings;
    use std::net::SocketAddr;

    fn loopback() -> SocketAddr {
        ([127, 0, 0, 1], 8700).into()
    }

    fn headers(pairs: &[(header::HeaderName, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(k.clone(), HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn the_edge_refuses_foreign_hosts_origins_tokens_in_urls_and_non_json_bodies() {
        let token = AccessToken::from_secret("0123456789abcdef").unwrap();
        let guard =
            Guard::new(HostPolicy::loopback(loopback()), Some(Credentials::Token(token))).with_json_api("/api/");
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
        assert_eq!(
            check(Method::GET, "/?token=0123456789abcdef", &host_only),
            Err(Refusal::TokenInUrl),
            "the page too"
        );
        assert_eq!(check(Method::GET, "/?code=abc", &host_only), Ok(()));
    }

    #[test]
    fn a_token_is_a_bearer_and_a_session_is_a_cookie_never_the_other_way() {
        let token = AccessToken::from_secret("0123456789abcdef").unwrap();
        let sign_in = Arc::new(SignIn::in_memory(SignInSettings::default()));
        let guard = Guard::new(HostPolicy::loopback(loopback()), Some(Credentials::Token(token)))
            .with_sign_in(Arc::clone(&sign_in));
        let name = guard.cookie_name().to_owned();
        assert_eq!(name, "holdfast_session_8700");
        assert_eq!(guard.check_token(&headers(&[])), Err(Refusal::Unauthorized));
        let bearer = guard.check_token(&headers(&[(header::AUTHORIZATION, "bearer 0123456789abcdef")])).unwrap();
        assert_eq!(bearer.client, "api");
        for bad in ["Bearer", "Bearer 0123456789abcdeF", "Basic 0123456789abcdef", "Bearer 0123456789abcdef0"] {
            assert_eq!(guard.check_token(&headers(&[(header::AUTHORIZATION, bad)])), Err(Refusal::Unauthorized));
        }
        let as_cookie = format!("{name}=0123456789abcdef");
        assert_eq!(guard.check_token(&headers(&[(header::COOKIE, &as_cookie)])), Err(Refusal::Unauthorized));

        let code = sign_in.mint_code().unwrap();
        let signed_in = guard.sign_in_page(Some(&format!("x=1&code={code}"))).unwrap();
        assert_eq!(signed_in.status(), StatusCode::SEE_OTHER);
        let location = signed_in.headers()[header::LOCATION].to_str().unwrap().to_owned();
        let key = location.strip_prefix("/#page=").unwrap().to_owned();
        let set = signed_in.headers()[header::SET_COOKIE].to_str().unwrap().to_owned();
        let (pair, attributes) = set.split_once(';').unwrap();
        assert_eq!(attributes.trim(), "HttpOnly; SameSite=Strict; Path=/; Max-Age=604800");
        let (_, session) = pair.split_once('=').unwrap();
        assert_ne!(session, code, "the cookie is not the code");
        assert_ne!(session, key, "the page key is not the cookie");
        let cookie = format!("other=1; {pair}");
        assert_eq!(guard.check_token(&headers(&[(header::COOKIE, &cookie)])), Err(Refusal::Unauthorized), "alone");
        let page = header::HeaderName::from_static(PAGE_HEADER);
        let both = [(header::COOKIE, cookie.as_str()), (page.clone(), key.as_str())];
        assert_eq!(guard.check_token(&headers(&both)).unwrap().client, "browser");
        let protocols = format!("holdfast, {PAGE_PROTOCOL_PREFIX}{key}");
        let upgrade = [(header::COOKIE, cookie.as_str()), (header::SEC_WEBSOCKET_PROTOCOL, protocols.as_str())];
        assert_eq!(guard.check_token(&headers(&upgrade)).unwrap().client, "browser", "a WebSocket's subprotocol");
        let wrong = [(header::COOKIE, cookie.as_str()), (page.clone(), session)];
        assert_eq!(guard.check_token(&headers(&wrong)), Err(Refusal::Unauthorized), "the cookie twice");
        let elsewhere = format!("holdfast_session_9999={session}");
        let elsewhere = [(header::COOKIE, elsewhere.as_str()), (page, key.as_str())];
        assert_eq!(guard.check_token(&headers(&elsewhere)), Err(Refusal::Unauthorized));
        let session_as_bearer = format!("Bearer {session}");
        assert_eq!(
            guard.check_token(&headers(&[(header::AUTHORIZATION, &session_as_bearer)])),
            Err(Refusal::Unauthorized),
            "a browser session is not an API token"
        );

        let again = guard.sign_in_page(Some(&format!("code={code}"))).unwrap();
        assert_eq!(again.status(), StatusCode::UNAUTHORIZED);
        assert!(again.headers().get(header::SET_COOKIE).is_none());
        assert!(guard.sign_in_page(Some("x=1")).is_none() && guard.sign_in_page(None).is_none());
    }

    #[test]
    fn named_clients_are_principals() {
        let dir = tempfile::tempdir().unwrap();
        let clients =
            Arc::new(ClientTokens::new(AccessToken::from_secret("default-token-0000").unwrap(), Some(dir.path())));
        let laptop = clients.add("laptop").unwrap();
        let guard = Guard::new(HostPolicy::loopback(loopback()), Some(Credentials::Clients(clients)));
        let auth = |t: &str| guard.check_token(&headers(&[(header::AUTHORIZATION, &format!("Bearer {t}"))]));
        assert_eq!(auth("default-token-0000").unwrap().client, "default");
        assert!(auth("default-token-0000").unwrap().id.starts_with("default-"));
        assert_eq!(auth(&laptop).unwrap().client, "laptop");
        assert!(auth(&laptop).unwrap().id.starts_with("client-"));
        assert_eq!(auth("nope-nope-nope-nope"), Err(Refusal::Unauthorized));
        assert!(guard.sign_in_page(Some("code=x")).is_none(), "no browser sign-in on MCP");
    }

    #[test]
    fn query_components_are_decoded() {
        assert_eq!(percent_decode("a%20b+c%zz%4"), "a b c%zz%4");
        assert_eq!(query_param(Some("x=1&code=ab%2Fc"), CODE_PARAM), Some("ab/c".to_owned()));
    }
}

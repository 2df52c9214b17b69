//! Who may reach holdfast's HTTP front ends — `holdfast serve` and `holdfast mcp --transport http` — in one place:
//! the credentials, the browser sign-in and the checks at the edge of both servers.
//!
//! **The token** ([`AccessToken`], [`token`]): 32 random bytes as hex, kept in a file of the data dir
//! (`server.token`, `mcp.token`; mode 0600, the directory 0700), or chosen by the operator. Compared in constant
//! time. It is for programs: `Authorization: Bearer TOKEN`.
//!
//! **Principals**: every authenticated request carries a [`Principal`]. On MCP each token is a client of its own
//! ([`clients`]: `mcp.token` is `default`, `holdfast mcp token add NAME` adds others), and the MCP server gives each
//! session to the client that opened it.
//!
//! **Browsers** ([`signin`]) never see the token: `holdfast serve` prints a one-time sign-in link (`/?code=…`,
//! valid for minutes), which sets a random session cookie (`holdfast_session_PORT`, `HttpOnly; SameSite=Strict;
//! Max-Age`) and hands the page a page key (in the redirect's fragment), both known to this server's data dir as
//! digests only and revoked by `holdfast serve --sign-out-all`. A request is the browser's only with both: the page
//! sends its key in a header (on a WebSocket, as a subprotocol), so the cookie alone — which browsers also send to
//! every other port of the host — signs nobody in.
//!
//! **The edge** ([`Guard`]), in this order, for every request, with or without credentials:
//! 1. `Host` must name this server: `localhost`, `127.0.0.1` or `[::1]` with the bound port, the bound IP address
//!    itself, or a name the operator listed (`allowed_hosts`). Anything else is `403 host_not_allowed` — a web page
//!    that rebinds its own DNS name to 127.0.0.1 never gets an answer.
//! 2. `Origin`, when present (browsers send it on WebSocket upgrades, on every POST/PUT/PATCH/DELETE and on
//!    cross-origin reads), must be this server's own origin (`http://` or `https://` and an allowed host);
//!    otherwise `403 origin_not_allowed`. Clients that are not browsers send no `Origin` and pass.
//! 3. The token never travels in a URL: a `token` query parameter is refused everywhere (`401 token_in_url`).
//! 4. A mutating request under the JSON API prefix ([`Guard::with_json_api`]) carries `Content-Type:
//!    application/json`, or no body at all; otherwise `415 unsupported_media_type` (a cross-site form or
//!    `text/plain` POST never reaches a handler).
//!
//! **Authentication** ([`Guard::require_token`], on the routes that need it): a bearer token the server's
//! [`Credentials`] accept, or a browser session cookie of its sign-in with that session's page key. Otherwise `401
//! unauthorized`.
//!
//! Every refusal is a JSON body `{"error": {"code", "message"}}` with one of the stable codes of [`Refusal`].

pub mod clients;
mod files;
pub mod guard;
pub mod hosts;
pub mod signin;
pub mod token;

pub use clients::{CLIENTS_FILE, ClientRecord, ClientTokens, DEFAULT_CLIENT};
pub use guard::{Credentials, Guard, Principal, Refusal};
pub use hosts::HostPolicy;
pub use signin::{
    CodeRefusal, PAGE_FRAGMENT, PAGE_HEADER, PAGE_PROTOCOL, PAGE_PROTOCOL_PREFIX, SIGN_IN_FILE, SignIn, SignInSettings,
};
pub use token::{AccessError, AccessToken, MCP_TOKEN_FILE, MIN_TOKEN_LEN, SERVER_TOKEN_FILE, TokenOrigin};

/// The query parameter a token must never travel in (refused everywhere, [`Refusal::TokenInUrl`]).
pub const TOKEN_PARAM: &str = "token";

/// The prefix of the browser session cookie's name; the bound port follows (cookies are shared between the ports of
/// a host, so two servers on one machine keep separate cookies; the page key keeps the cookie from being enough on
/// its own).
pub const COOKIE_PREFIX: &str = "holdfast_session_";

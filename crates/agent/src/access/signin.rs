//! Browser sign-in for `holdfast serve`: one-time codes and session cookies, never the access token.
//!
//! - **A code** ([`SignIn::mint_code`]) is 16 random bytes as hex, printed once in the sign-in link
//!   `http://HOST:PORT/?code=…` (at start, and by `holdfast serve --print-url`). It is valid for
//!   [`SignInSettings::code_ttl`] (default 5 minutes) and for one use.
//! - **Using it** ([`SignIn::redeem`]) starts a browser session of two random secrets (32 bytes as hex each): the
//!   cookie's value, with `Max-Age` [`SignInSettings::session_max_age`] (default 7 days), and the page key, which
//!   the page keeps in its origin's storage and sends with each request ([`PAGE_HEADER`], or [`PAGE_PROTOCOL_PREFIX`]
//!   on a WebSocket). A used, expired or unknown code is refused with its own message ([`CodeRefusal`]).
//! - **The cookie alone signs nobody in** ([`SignIn::authenticates`]): browsers send a host's cookies to every port of
//!   it, so a program listening on another loopback port that a page sends the browser to receives this cookie. The
//!   page key lives in storage only this server's origin (scheme, host and port) can read, and only its own script
//!   sends it.
//! - **Only digests are kept** (SHA-256), in `DATA_DIR/sign-in.json` (mode 0600): neither the file nor a backup of it
//!   lets anyone sign in. Another server, with another data dir, knows none of this one's sessions. A session
//!   recorded before page keys existed has none and signs nobody in (the browser is asked to sign in again).
//! - **Sign-out** ([`SignIn::sign_out_all`], `holdfast serve --sign-out-all`) forgets every session; a running server
//!   sees it on its next request (the file is re-read when it changes).
//!
//! The cookie is refused as a bearer token, and the token as a cookie: they are different credentials.

use super::AccessError;
use super::files::PrivateJson;
use super::token::{digest, random_hex};
use axum::http::StatusCode;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::time::Duration;

/// The file of sign-in codes and browser sessions inside the data dir.
pub const SIGN_IN_FILE: &str = "sign-in.json";

/// The query parameter of the sign-in link.
pub const CODE_PARAM: &str = "code";

/// The request header that carries a browser session's page key on API calls.
pub const PAGE_HEADER: &str = "x-holdfast-page";

/// The WebSocket subprotocol the page offers, and the one the server selects (a browser cannot set other headers on
/// its upgrade request).
pub const PAGE_PROTOCOL: &str = "holdfast";

/// The prefix of the second subprotocol the page offers on a WebSocket: the page key follows it.
pub const PAGE_PROTOCOL_PREFIX: &str = "holdfast.page.";

/// The fragment parameter of the redirect after sign-in that hands the page its key (a fragment is never sent to a
/// server, and the page removes it from the address bar).
pub const PAGE_FRAGMENT: &str = "page";

/// How long codes and browser sessions last.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SignInSettings {
    /// How long a sign-in code may be used.
    pub code_ttl: Duration,
    /// How long a browser stays signed in (the cookie's `Max-Age`).
    pub session_max_age: Duration,
}

impl Default for SignInSettings {
    fn default() -> Self {
        Self { code_ttl: Duration::from_secs(5 * 60), session_max_age: Duration::from_secs(7 * 24 * 3600) }
    }
}

/// How long a used or expired code is remembered, to tell "used" and "expired" from "unknown".
const REMEMBER_CODES: chrono::TimeDelta = chrono::TimeDelta::days(1);

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct State {
    codes: Vec<CodeRecord>,
    sessions: Vec<SessionRecord>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct CodeRecord {
    digest: String,
    expires_at: DateTime<Utc>,
    used_at: Option<DateTime<Utc>>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct SessionRecord {
    digest: String,
    /// The page key's digest; `None` for sessions recorded before page keys (they sign nobody in).
    #[serde(default)]
    page: Option<String>,
    created_at: DateTime<Utc>,
    expires_at: DateTime<Utc>,
}

impl State {
    /// Drops expired sessions and codes older than a day past their expiry.
    fn prune(&mut self, now: DateTime<Utc>) -> bool {
        let before = (self.codes.len(), self.sessions.len());
        self.codes.retain(|c| c.expires_at + REMEMBER_CODES > now);
        self.sessions.retain(|s| s.expires_at > now);
        before != (self.codes.len(), self.sessions.len())
    }
}

/// Why a sign-in code was refused. The page says which, and what to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CodeRefusal {
    /// This link was used already (each works once).
    Used,
    /// This link is older than its validity.
    Expired,
    /// No such code (mistyped, from another server, or forgotten after a day).
    Unknown,
}

impl CodeRefusal {
    /// The stable code.
    pub fn code(self) -> &'static str {
        match self {
            Self::Used => "sign_in_code_used",
            Self::Expired => "sign_in_code_expired",
            Self::Unknown => "sign_in_code_unknown",
        }
    }

    /// What the sign-in page says.
    pub fn message(self) -> &'static str {
        match self {
            Self::Used => "This sign-in link was already used. Each link works once.",
            Self::Expired => "This sign-in link has expired. Links are valid for a few minutes.",
            Self::Unknown => "This sign-in link is not valid for this server.",
        }
    }

    /// The HTTP status of the page.
    pub fn status(self) -> StatusCode {
        StatusCode::UNAUTHORIZED
    }
}

/// A browser session just started: the cookie's value and the page key (shown to this browser only) and its
/// lifetime.
#[derive(Clone)]
pub struct NewSession {
    /// The cookie value.
    pub secret: String,
    /// The page key, which the page sends beside the cookie.
    pub page_key: String,
    /// The cookie's `Max-Age`.
    pub max_age: Duration,
}

impl std::fmt::Debug for NewSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NewSession").field("max_age", &self.max_age).finish_non_exhaustive()
    }
}

/// The sign-in codes and browser sessions of one server (see the module docs).
#[derive(Debug)]
pub struct SignIn {
    store: PrivateJson<State>,
    settings: SignInSettings,
}

impl SignIn {
    /// Codes and sessions kept in `DATA_DIR/sign-in.json`.
    pub fn open(data_dir: &Path, settings: SignInSettings) -> Self {
        Self { store: PrivateJson::file(data_dir.join(SIGN_IN_FILE)), settings }
    }

    /// Codes and sessions kept in memory, for this process only (tests, embedding).
    pub fn in_memory(settings: SignInSettings) -> Self {
        Self { store: PrivateJson::memory(), settings }
    }

    /// The settings.
    pub fn settings(&self) -> SignInSettings {
        self.settings
    }

    /// A fresh one-time code, valid for the code lifetime.
    pub fn mint_code(&self) -> Result<String, AccessError> {
        let code = random_hex(16)?;
        let now = Utc::now();
        let expires_at = now + chrono::TimeDelta::from_std(self.settings.code_ttl).unwrap_or(chrono::TimeDelta::MAX);
        let record = CodeRecord { digest: digest(&code), expires_at, used_at: None };
        self.store.update(|state| {
            state.prune(now);
            state.codes.push(record);
            ((), true)
        })?;
        Ok(code)
    }

    /// Uses `code` once: a new browser session, or why not. Storage failures refuse too (as unknown), after a
    /// warning in the log: a code is never accepted without its use being recorded.
    pub fn redeem(&self, code: &str) -> Result<NewSession, CodeRefusal> {
        let presented = digest(code.trim());
        let secret = random_hex(32).map_err(|_| CodeRefusal::Unknown)?;
        let page_key = random_hex(32).map_err(|_| CodeRefusal::Unknown)?;
        let (session, page) = (digest(&secret), Some(digest(&page_key)));
        let now = Utc::now();
        let max_age = self.settings.session_max_age;
        let expires_at = now + chrono::TimeDelta::from_std(max_age).unwrap_or(chrono::TimeDelta::MAX);
        let outcome = self.store.update(|state| {
            let pruned = state.prune(now);
            let Some(record) = state.codes.iter_mut().find(|c| c.digest == presented) else {
                return (Err(CodeRefusal::Unknown), pruned);
            };
            if record.used_at.is_some() {
                return (Err(CodeRefusal::Used), pruned);
            }
            if record.expires_at <= now {
                return (Err(CodeRefusal::Expired), pruned);
            }
            record.used_at = Some(now);
            state.sessions.push(SessionRecord { digest: session, page, created_at: now, expires_at });
            (Ok(()), true)
        });
        match outcome {
            Ok(Ok(())) => Ok(NewSession { secret, page_key, max_age }),
            Ok(Err(refusal)) => Err(refusal),
            Err(e) => {
                tracing::warn!("a sign-in code could not be checked: {e}");
                Err(CodeRefusal::Unknown)
            }
        }
    }

    /// Whether `cookie` is a browser session of this server that has not expired or been signed out (to check again
    /// while a connection it authenticated lasts).
    pub fn session_valid(&self, cookie: &str) -> bool {
        self.live_session(cookie, |_| true)
    }

    /// Whether `cookie` and `page_key` are the two halves of one browser session of this server that has not
    /// expired or been signed out: what signs a browser's request in.
    pub fn authenticates(&self, cookie: &str, page_key: &str) -> bool {
        let page = digest(page_key.trim());
        self.live_session(cookie, |s| s.page.as_deref().is_some_and(|p| p == page))
    }

    fn live_session(&self, cookie: &str, also: impl Fn(&SessionRecord) -> bool) -> bool {
        let presented = digest(cookie.trim());
        let now = Utc::now();
        match self.store.read() {
            Ok(state) => state.sessions.iter().any(|s| s.digest == presented && s.expires_at > now && also(s)),
            Err(e) => {
                tracing::warn!("the browser sessions could not be read: {e}");
                false
            }
        }
    }

    /// Ends every browser session and forgets every code; returns how many sessions were signed out.
    pub fn sign_out_all(&self) -> Result<usize, AccessError> {
        let now = Utc::now();
        self.store.update(|state| {
            let live = state.sessions.iter().filter(|s| s.expires_at > now).count();
            *state = State::default();
            (live, true)
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn a_code_signs_in_once_and_only_digests_are_kept() {
        let dir = tempfile::tempdir().unwrap();
        let sign_in = SignIn::open(dir.path(), SignInSettings::default());
        let code = sign_in.mint_code().unwrap();
        assert_eq!(code.len(), 32);
        let session = sign_in.redeem(&code).unwrap();
        assert_eq!(session.max_age, Duration::from_secs(7 * 24 * 3600));
        assert!(sign_in.session_valid(&session.secret));
        assert!(sign_in.authenticates(&session.secret, &session.page_key));
        assert!(!sign_in.authenticates(&session.secret, ""), "the cookie alone signs nobody in");
        assert!(!sign_in.authenticates(&session.secret, &session.secret), "nor the cookie twice");
        assert!(!sign_in.authenticates(&session.page_key, &session.page_key), "nor the page key alone");
        let second = sign_in.redeem(&sign_in.mint_code().unwrap()).unwrap();
        assert!(!sign_in.authenticates(&session.secret, &second.page_key), "halves of two sessions do not match");
        assert!(!sign_in.session_valid(&code), "a code is not a session");
        assert_eq!(sign_in.redeem(&code).unwrap_err(), CodeRefusal::Used);
        assert_eq!(sign_in.redeem("0123").unwrap_err(), CodeRefusal::Unknown);
        let file = std::fs::read_to_string(dir.path().join(SIGN_IN_FILE)).unwrap();
        assert!(
            !file.contains(&code) && !file.contains(&session.secret) && !file.contains(&session.page_key),
            "{file}"
        );

        // Another handle on the same data dir (another process: `serve --sign-out-all`) signs everyone out.
        let other = SignIn::open(dir.path(), SignInSettings::default());
        assert_eq!(other.sign_out_all().unwrap(), 2);
        assert!(!sign_in.session_valid(&session.secret), "seen by the running server at once");
        // And a server on another data dir never knew the session.
        let elsewhere = tempfile::tempdir().unwrap();
        let session = sign_in.redeem(&sign_in.mint_code().unwrap()).unwrap();
        assert!(!SignIn::open(elsewhere.path(), SignInSettings::default()).session_valid(&session.secret));
    }

    #[test]
    fn codes_and_sessions_expire() {
        let quick = SignInSettings { code_ttl: Duration::ZERO, session_max_age: Duration::ZERO };
        let sign_in = SignIn::in_memory(quick);
        let code = sign_in.mint_code().unwrap();
        assert_eq!(sign_in.redeem(&code).unwrap_err(), CodeRefusal::Expired);
        let lasting = SignIn::in_memory(SignInSettings { code_ttl: Duration::from_secs(60), ..quick });
        let session = lasting.redeem(&lasting.mint_code().unwrap()).unwrap();
        assert!(!lasting.session_valid(&session.secret), "a session of zero length is over at once");
        assert!(!lasting.authenticates(&session.secret, &session.page_key));
    }

    #[test]
    fn a_session_recorded_before_page_keys_signs_nobody_in() {
        let dir = tempfile::tempdir().unwrap();
        let sign_in = SignIn::open(dir.path(), SignInSettings::default());
        let session = sign_in.redeem(&sign_in.mint_code().unwrap()).unwrap();
        // The file as an earlier release wrote it: no page key's digest.
        let path = dir.path().join(SIGN_IN_FILE);
        let mut file: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        file["sessions"][0].as_object_mut().unwrap().remove("page");
        std::fs::write(&path, file.to_string()).unwrap();
        let reopened = SignIn::open(dir.path(), SignInSettings::default());
        assert!(reopened.session_valid(&session.secret), "the file is read");
        assert!(!reopened.authenticates(&session.secret, &session.page_key));
        assert!(!reopened.authenticates(&session.secret, ""));
    }
}

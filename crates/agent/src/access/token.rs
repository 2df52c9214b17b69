//! The access token: 32 random bytes as hex, in a file of the data dir (mode 0600) or chosen by the operator,
//! compared in constant time; and the random secrets and digests the sign-in codes, browser sessions and MCP client
//! tokens are made of.

use holdfast_core::{ErrorCode, HasErrorCode};
use std::fmt;
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// The token file of `holdfast serve` inside the data dir.
pub const SERVER_TOKEN_FILE: &str = "server.token";

/// The token file of `holdfast mcp --transport http` inside the data dir.
pub const MCP_TOKEN_FILE: &str = "mcp.token";

/// The shortest token accepted.
pub const MIN_TOKEN_LEN: usize = 16;

/// Why a token, a sign-in or a client could not be set up, or an `allowed_hosts` entry is invalid.
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
    /// A token, sign-in or client file could not be read or written.
    #[error("{}: {source}", path.display())]
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
    /// An MCP client name that cannot be used (`holdfast mcp token add NAME`).
    #[error("client name {name:?}: {reason}")]
    InvalidClientName {
        /// The name.
        name: String,
        /// Why.
        reason: String,
    },
    /// No MCP client by that name (`holdfast mcp token revoke NAME`).
    #[error("no MCP client named {0:?} (holdfast mcp token list shows them)")]
    UnknownClient(String),
}

impl HasErrorCode for AccessError {
    fn code(&self) -> ErrorCode {
        match self {
            Self::WeakToken { .. } | Self::NotChosen | Self::InvalidHost { .. } | Self::InvalidClientName { .. } => {
                ErrorCode::ConfigInvalid
            }
            Self::UnknownClient(_) => ErrorCode::NotFound,
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

/// Compares two byte strings in time that depends only on their lengths.
pub(crate) fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn generate() -> Result<String, AccessError> {
    random_hex(32)
}

/// `bytes` random bytes from the operating system, as lower-case hex.
pub fn random_hex(bytes: usize) -> Result<String, AccessError> {
    let mut buf = vec![0u8; bytes];
    getrandom::fill(&mut buf).map_err(|e| AccessError::Random(e.to_string()))?;
    Ok(hex(&buf))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The SHA-256 of a secret, as hex: what is kept of one-time codes, session cookies and client tokens. They are 16
/// or 32 random bytes, so a fast hash is enough: nothing about them can be guessed from it.
pub(crate) fn digest(secret: &str) -> String {
    use sha2::Digest as _;
    hex(&sha2::Sha256::digest(secret.as_bytes()))
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

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
}

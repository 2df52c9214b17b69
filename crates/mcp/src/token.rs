//! The bearer token that guards the streamable HTTP transport.
//!
//! Every HTTP request must carry `Authorization: Bearer TOKEN`. Where the token comes from, first match wins:
//!
//! 1. `--token TOKEN` on the command line;
//! 2. the `HOLDFAST_MCP_TOKEN` environment variable;
//! 3. the file `DATA_DIR/mcp.token` — created (mode 0600, 32 random bytes as hex) on the first start on a loopback
//!    address, read on later starts;
//! 4. with no data dir configured and a loopback address: a fresh token for this run only, printed once.
//!
//! A non-loopback address never gets a freshly generated token: the operator must choose one (1–3, with the file
//! already present), otherwise the server refuses to start ([`ServeError::NonLoopbackWithoutToken`]).

use crate::error::ServeError;
use std::fmt;
use std::io::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

/// The environment variable that may hold the token.
pub const TOKEN_ENV: &str = "HOLDFAST_MCP_TOKEN";

/// The token file's name inside the data dir.
pub const TOKEN_FILE: &str = "mcp.token";

/// The shortest token accepted.
pub const MIN_TOKEN_LEN: usize = 16;

/// Where the token in effect came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenOrigin {
    /// `--token`.
    Flag,
    /// [`TOKEN_ENV`].
    Env,
    /// The data dir's token file.
    File {
        /// The file.
        path: PathBuf,
        /// Whether this start created it.
        created: bool,
    },
    /// Generated for this run (no data dir).
    Ephemeral,
}

/// The token in effect. Its `Debug` form never shows the secret.
#[derive(Clone)]
pub struct BearerToken {
    secret: String,
    origin: TokenOrigin,
}

impl fmt::Debug for BearerToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BearerToken").field("origin", &self.origin).finish_non_exhaustive()
    }
}

impl BearerToken {
    /// Resolves the token for a server about to listen on `bind` (see the module docs for the order).
    pub fn resolve(
        flag: Option<String>,
        env: Option<String>,
        data_dir: Option<&Path>,
        bind: SocketAddr,
    ) -> Result<Self, ServeError> {
        let chosen = [(flag, TokenOrigin::Flag), (env, TokenOrigin::Env)]
            .into_iter()
            .find_map(|(value, origin)| value.filter(|v| !v.trim().is_empty()).map(|v| (v, origin)));
        if let Some((secret, origin)) = chosen {
            let secret = secret.trim().to_owned();
            check(&secret)?;
            return Ok(Self { secret, origin });
        }
        let loopback = bind.ip().is_loopback();
        match data_dir {
            Some(dir) => {
                let path = dir.join(TOKEN_FILE);
                match std::fs::read_to_string(&path) {
                    Ok(text) => {
                        let secret = text.trim().to_owned();
                        check(&secret)?;
                        Ok(Self { secret, origin: TokenOrigin::File { path, created: false } })
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                        if !loopback {
                            return Err(ServeError::NonLoopbackWithoutToken { addr: bind });
                        }
                        let secret = generate()?;
                        write_new(&path, &secret)?;
                        Ok(Self { secret, origin: TokenOrigin::File { path, created: true } })
                    }
                    Err(source) => Err(ServeError::TokenFile { path, source }),
                }
            }
            None if loopback => Ok(Self { secret: generate()?, origin: TokenOrigin::Ephemeral }),
            None => Err(ServeError::NonLoopbackWithoutToken { addr: bind }),
        }
    }

    /// A token from a known secret (tests, embedding).
    pub fn from_secret(secret: impl Into<String>) -> Result<Self, ServeError> {
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

    /// Whether an `Authorization` header value carries this token (`Bearer TOKEN`, scheme case-insensitive),
    /// compared in constant time.
    pub fn accepts_header(&self, header: &str) -> bool {
        let Some((scheme, presented)) = header.trim().split_once(' ') else { return false };
        scheme.eq_ignore_ascii_case("bearer") && constant_time_eq(presented.trim().as_bytes(), self.secret.as_bytes())
    }
}

fn check(secret: &str) -> Result<(), ServeError> {
    if secret.len() < MIN_TOKEN_LEN || !secret.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(ServeError::WeakToken { min: MIN_TOKEN_LEN });
    }
    Ok(())
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn generate() -> Result<String, ServeError> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| ServeError::Random(e.to_string()))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

fn write_new(path: &Path, secret: &str) -> Result<(), ServeError> {
    let err = |source| ServeError::TokenFile { path: path.to_owned(), source };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(err)?;
    }
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600);
    }
    let mut file = options.open(path).map_err(err)?;
    file.write_all(format!("{secret}\n").as_bytes()).map_err(err)?;
    file.sync_all().map_err(err)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loopback() -> SocketAddr {
        ([127, 0, 0, 1], 0).into()
    }

    fn public() -> SocketAddr {
        ([0, 0, 0, 0], 8765).into()
    }

    #[test]
    fn the_first_loopback_start_writes_a_private_token_file_and_later_starts_reuse_it() {
        let dir = tempfile::tempdir().unwrap();
        let first = BearerToken::resolve(None, None, Some(dir.path()), loopback()).unwrap();
        let path = dir.path().join(TOKEN_FILE);
        assert_eq!(first.origin(), &TokenOrigin::File { path: path.clone(), created: true });
        assert_eq!(first.secret().len(), 64);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        }
        let again = BearerToken::resolve(None, None, Some(dir.path()), public()).unwrap();
        assert_eq!(again.secret(), first.secret());
        assert_eq!(again.origin(), &TokenOrigin::File { path, created: false });
        assert!(!format!("{again:?}").contains(first.secret()), "Debug never shows the secret");
    }

    #[test]
    fn a_public_bind_needs_a_chosen_token() {
        let dir = tempfile::tempdir().unwrap();
        let err = BearerToken::resolve(None, None, Some(dir.path()), public()).unwrap_err();
        assert!(matches!(err, ServeError::NonLoopbackWithoutToken { .. }), "{err}");
        assert!(!dir.path().join(TOKEN_FILE).exists(), "nothing is generated for a public bind");
        assert!(BearerToken::resolve(None, None, None, public()).is_err());
        let flag = BearerToken::resolve(Some("a-long-enough-token".into()), None, None, public()).unwrap();
        assert_eq!(flag.origin(), &TokenOrigin::Flag);
        let env = BearerToken::resolve(None, Some("another-long-token".into()), None, public()).unwrap();
        assert_eq!(env.origin(), &TokenOrigin::Env);
        assert_eq!(BearerToken::resolve(None, None, None, loopback()).unwrap().origin(), &TokenOrigin::Ephemeral);
    }

    #[test]
    fn weak_tokens_are_refused_and_headers_are_checked_exactly() {
        for weak in ["short", "has spaces in the token", "tab\tinside-the-token"] {
            assert!(BearerToken::from_secret(weak).is_err(), "{weak:?}");
        }
        let token = BearerToken::from_secret("0123456789abcdef").unwrap();
        assert!(token.accepts_header("Bearer 0123456789abcdef"));
        assert!(token.accepts_header("bearer 0123456789abcdef"));
        for bad in ["", "Bearer", "Bearer 0123456789abcdeF", "Basic 0123456789abcdef", "Bearer 0123456789abcdef0"] {
            assert!(!token.accepts_header(bad), "{bad:?}");
        }
    }
}

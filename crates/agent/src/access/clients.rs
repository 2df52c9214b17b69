//! MCP clients, each its own principal: a token is a client.
//!
//! - The **default client** is the token of `DATA_DIR/mcp.token` (or `--token-file`, `HOLDFAST_MCP_TOKEN`), as before.
//! - **Named clients** are added with `holdfast mcp token add NAME`, which prints the new token once and keeps only
//!   its SHA-256 in `DATA_DIR/mcp-clients.json` (mode 0600); `holdfast mcp token list` shows names, creation and last
//!   use; `holdfast mcp token revoke NAME` revokes. A running server sees additions and revocations on the next
//!   request (the file is re-read when it changes).
//! - [`ClientTokens::authenticate`] names the client a bearer token belongs to; the server records it as the owner
//!   of every MCP session that client opens, and no other client may touch that session.

use super::AccessError;
use super::files::PrivateJson;
use super::token::{AccessToken, constant_time_eq, digest, random_hex};
use chrono::{DateTime, Utc};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};

/// The file of named MCP clients inside the data dir.
pub const CLIENTS_FILE: &str = "mcp-clients.json";

/// The name of the client that holds the `mcp.token` token.
pub const DEFAULT_CLIENT: &str = "default";

/// How often a client's last use is written to the file at most.
const LAST_USE_EVERY: Duration = Duration::from_secs(60);

/// One named client as `holdfast mcp token list` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientRecord {
    /// Its name.
    pub name: String,
    /// A random id made when it was added: what owns its sessions, so a name reused after a revocation is another
    /// client and owns none of them.
    pub id: String,
    /// SHA-256 of its token, hex.
    digest: String,
    /// When it was added.
    pub created_at: DateTime<Utc>,
    /// When a request last carried its token (written at most once a minute).
    pub last_used_at: Option<DateTime<Utc>>,
    /// When it was revoked.
    pub revoked_at: Option<DateTime<Utc>>,
}

impl ClientRecord {
    /// When it was added, when last used (`-`: never) and its status (`active`, `revoked …`), for a listing.
    pub fn columns(&self) -> [String; 3] {
        let when = |t: &DateTime<Utc>| t.format("%Y-%m-%d %H:%M UTC").to_string();
        let status = self.revoked_at.as_ref().map_or_else(|| "active".to_owned(), |t| format!("revoked {}", when(t)));
        [when(&self.created_at), self.last_used_at.as_ref().map_or_else(|| "-".to_owned(), when), status]
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct State {
    clients: Vec<ClientRecord>,
}

/// The tokens an MCP server accepts, each naming its client (see the module docs).
#[derive(Debug)]
pub struct ClientTokens {
    default: Option<AccessToken>,
    store: PrivateJson<State>,
    written: Mutex<HashMap<String, Instant>>,
}

/// Checks a client name: 1–32 of `a-z`, `0-9`, `-`, `_`, starting with a letter; `default` is the default client's.
pub fn check_client_name(name: &str) -> Result<(), AccessError> {
    let invalid = |reason: &str| AccessError::InvalidClientName { name: name.to_owned(), reason: reason.to_owned() };
    let mut chars = name.chars();
    let first_ok = chars.next().is_some_and(|c| c.is_ascii_lowercase());
    let rest_ok = chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_');
    if !(1..=32).contains(&name.len()) || !first_ok || !rest_ok {
        return Err(invalid("use 1–32 of a-z, 0-9, - and _, starting with a letter"));
    }
    if name == DEFAULT_CLIENT {
        return Err(invalid("`default` is the client of DATA_DIR/mcp.token"));
    }
    Ok(())
}

impl ClientTokens {
    /// The default client's `token` and the named clients of `data_dir` (none without a data dir).
    pub fn new(token: AccessToken, data_dir: Option<&Path>) -> Self {
        let store = match data_dir {
            Some(dir) => PrivateJson::file(dir.join(CLIENTS_FILE)),
            None => PrivateJson::memory(),
        };
        Self { default: Some(token), store, written: Mutex::new(HashMap::new()) }
    }

    /// The named clients of `data_dir`, for the `holdfast mcp token` commands (no default token needed).
    pub fn in_data_dir(data_dir: &Path) -> Self {
        Self {
            default: None,
            store: PrivateJson::file(data_dir.join(CLIENTS_FILE)),
            written: Mutex::new(HashMap::new()),
        }
    }

    /// The default client's token.
    pub fn default_token(&self) -> Option<&AccessToken> {
        self.default.as_ref()
    }

    /// The id the default client's sessions are owned by: a digest of its token, so a new `mcp.token` owns none of
    /// the old one's sessions.
    pub fn default_id(&self) -> Option<String> {
        self.default.as_ref().map(|t| format!("default-{}", &digest(t.secret())[..16]))
    }

    /// Whether the client with `id` may still act: the default client's current id, or a named client's that is not
    /// revoked. A running server ends a revoked client's open streams with it.
    pub fn is_live(&self, id: &str) -> bool {
        if self.default_id().is_some_and(|d| d == id) {
            return true;
        }
        match self.store.read() {
            Ok(state) => state.clients.iter().any(|c| c.id == id && c.revoked_at.is_none()),
            Err(e) => {
                tracing::warn!("the MCP client tokens could not be read: {e}");
                false
            }
        }
    }

    /// The client `presented` (a bearer token) belongs to — its name and id — or `None`. A revoked client's token
    /// names nobody.
    pub fn authenticate(&self, presented: &str) -> Option<(String, String)> {
        if self.default.as_ref().is_some_and(|t| t.matches(presented)) {
            return Some((DEFAULT_CLIENT.to_owned(), self.default_id()?));
        }
        let wanted = digest(presented);
        let state = match self.store.read() {
            Ok(state) => state,
            Err(e) => {
                tracing::warn!("the MCP client tokens could not be read: {e}");
                return None;
            }
        };
        let client = state
            .clients
            .iter()
            .find(|c| c.revoked_at.is_none() && constant_time_eq(c.digest.as_bytes(), wanted.as_bytes()))?;
        let (name, id) = (client.name.clone(), client.id.clone());
        self.note_use(&name);
        Some((name, id))
    }

    /// Records `name`'s use, at most once a minute.
    fn note_use(&self, name: &str) {
        {
            let mut written = self.written.lock();
            if written.get(name).is_some_and(|at| at.elapsed() < LAST_USE_EVERY) {
                return;
            }
            written.insert(name.to_owned(), Instant::now());
        }
        let now = Utc::now();
        let result = self.store.update(|state| {
            let found = state.clients.iter_mut().find(|c| c.name == name);
            let changed = found.map(|c| c.last_used_at = Some(now)).is_some();
            ((), changed)
        });
        if let Err(e) = result {
            tracing::warn!(client = name, "the MCP client's last use could not be recorded: {e}");
        }
    }

    /// Adds client `name` with a fresh token, returned once (only its digest is kept). A revoked client's name may
    /// be reused; a live one may not.
    pub fn add(&self, name: &str) -> Result<String, AccessError> {
        check_client_name(name)?;
        let token = random_hex(32)?;
        let record = ClientRecord {
            name: name.to_owned(),
            id: format!("client-{}", random_hex(8)?),
            digest: digest(&token),
            created_at: Utc::now(),
            last_used_at: None,
            revoked_at: None,
        };
        self.store.update(|state| {
            if state.clients.iter().any(|c| c.name == name && c.revoked_at.is_none()) {
                let reason = "a client of that name exists: revoke it first, or choose another name";
                return (Err(AccessError::InvalidClientName { name: name.to_owned(), reason: reason.into() }), false);
            }
            state.clients.retain(|c| c.name != name);
            state.clients.push(record);
            (Ok(()), true)
        })??;
        Ok(token)
    }

    /// Revokes client `name`: its token stops working at once, on a running server too.
    pub fn revoke(&self, name: &str) -> Result<(), AccessError> {
        let now = Utc::now();
        self.store.update(|state| {
            match state.clients.iter_mut().find(|c| c.name == name && c.revoked_at.is_none()) {
                Some(client) => {
                    client.revoked_at = Some(now);
                    (Ok(()), true)
                }
                None => (Err(AccessError::UnknownClient(name.to_owned())), false),
            }
        })?
    }

    /// Every named client, revoked ones included, in the order they were added.
    pub fn list(&self) -> Result<Vec<ClientRecord>, AccessError> {
        Ok(self.store.read()?.clients)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn each_token_names_its_client_until_revoked() {
        let dir = tempfile::tempdir().unwrap();
        let default = AccessToken::from_secret("the-default-clients-token").unwrap();
        let server = ClientTokens::new(default, Some(dir.path()));
        let cli = ClientTokens::in_data_dir(dir.path());
        let laptop = cli.add("laptop").unwrap();
        assert!(cli.add("laptop").is_err(), "a live name is not reused");
        for bad in ["default", "", "Laptop", "1st", "a b", &"x".repeat(33)] {
            assert!(cli.add(bad).is_err(), "{bad:?}");
        }
        let name = |t: &str| server.authenticate(t).map(|(name, _)| name);
        assert_eq!(name("the-default-clients-token").as_deref(), Some(DEFAULT_CLIENT));
        assert_eq!(name(&laptop).as_deref(), Some("laptop"), "added while the server runs");
        let (_, first_id) = server.authenticate(&laptop).unwrap();
        assert!(server.is_live(&first_id));
        assert_eq!(server.authenticate("not-a-token"), None);
        let listed = cli.list().unwrap();
        assert_eq!(listed.len(), 1);
        assert!(listed[0].last_used_at.is_some(), "the use is recorded");
        let file = std::fs::read_to_string(dir.path().join(CLIENTS_FILE)).unwrap();
        assert!(!file.contains(&laptop), "only the digest is kept");
        cli.revoke("laptop").unwrap();
        assert_eq!(server.authenticate(&laptop), None, "revoked: at once");
        assert!(!server.is_live(&first_id), "and its open streams end");
        assert!(matches!(cli.revoke("laptop"), Err(AccessError::UnknownClient(_))));
        let again = cli.add("laptop").unwrap();
        let (reused, second_id) = server.authenticate(&again).unwrap();
        assert_eq!(reused, "laptop");
        assert_ne!(second_id, first_id, "a reused name is another client: it owns none of the old one's sessions");
        assert_eq!(server.authenticate(&laptop), None, "the old token stays revoked");
    }
}

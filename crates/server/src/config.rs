//! The optional `[server]` section of a configuration file, read by `holdfast serve`.
//!
//! ```toml
//! [server]
//! allowed_hosts = ["holdfast.example.net"]   # extra Host names (behind a reverse proxy); loopback is always allowed
//! sign_in_code_minutes = 5                   # how long a printed sign-in link works (once)
//! session_days = 7                           # how long a browser stays signed in (the cookie's Max-Age)
//!
//! [server.connections]                       # see holdfast_agent::listen
//! header_read_timeout_secs = 10
//! idle_timeout_secs = 300
//! max_connections = 1024
//! ```

use holdfast_agent::access::{AccessError, HostPolicy, SignInSettings};
use holdfast_agent::listen::ConnectionLimits;
use holdfast_core::config::{ConfigDocument, ConfigError};
use serde::Deserialize;
use std::net::SocketAddr;
use std::time::Duration;

/// The `[server]` section.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerSection {
    /// Host names (`name` or `name:port`) the server answers to besides `localhost`, `127.0.0.1` and `[::1]` with
    /// the bound port and the bound IP itself. A name without a port matches with no port or the bound port.
    #[serde(default)]
    pub allowed_hosts: Vec<String>,
    /// Minutes a sign-in link works (once); default 5, at most a day.
    pub sign_in_code_minutes: Option<u64>,
    /// Days a browser stays signed in (the session cookie's `Max-Age`); default 7, at most 400 (browsers cap a
    /// cookie's lifetime there).
    pub session_days: Option<u64>,
    /// Connection bounds: header read timeout, idle timeout, cap.
    #[serde(default)]
    pub connections: ConnectionLimits,
}

impl ServerSection {
    /// Reads `[server]` from a configuration document (absent: defaults).
    pub fn from_document(doc: &ConfigDocument) -> Result<Self, ConfigError> {
        let section: Self = doc.section_or_default("server")?;
        let out_of_range =
            |key: &str, range: &str| doc.invalid_at(&["server", key], format!("server.{key} must be {range}"));
        if section.sign_in_code_minutes.is_some_and(|m| !(1..=24 * 60).contains(&m)) {
            return Err(out_of_range("sign_in_code_minutes", "between 1 and 1440"));
        }
        if section.session_days.is_some_and(|d| !(1..=400).contains(&d)) {
            return Err(out_of_range("session_days", "between 1 and 400"));
        }
        section
            .connections
            .check()
            .map_err(|e| doc.invalid_at(&["server", "connections"], format!("server.connections: {e}")))?;
        Ok(section)
    }

    /// How long sign-in codes and browser sessions last.
    pub fn sign_in_settings(&self) -> SignInSettings {
        let defaults = SignInSettings::default();
        SignInSettings {
            code_ttl: self.sign_in_code_minutes.map_or(defaults.code_ttl, |m| Duration::from_secs(m * 60)),
            session_max_age: self.session_days.map_or(defaults.session_max_age, |d| Duration::from_secs(d * 86_400)),
        }
    }

    /// The host policy of a server bound to `bound`; an invalid `allowed_hosts` entry is an error.
    pub fn host_policy(&self, bound: SocketAddr) -> Result<HostPolicy, AccessError> {
        HostPolicy::new(bound, &self.allowed_hosts)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn allowed_hosts_are_read_and_checked() {
        let bound: SocketAddr = ([127, 0, 0, 1], 8700).into();
        let doc = ConfigDocument::parse(None, "[server]\nallowed_hosts = [\"holdfast.lan\"]\n".into()).unwrap();
        let policy = ServerSection::from_document(&doc).unwrap().host_policy(bound).unwrap();
        assert!(policy.allows_host("holdfast.lan") && policy.allows_host("localhost:8700"));
        assert!(!policy.allows_host("attacker.example"));
        let typo = ConfigDocument::parse(None, "[server]\nallowed_host = []\n".into()).unwrap();
        assert!(ServerSection::from_document(&typo).is_err());
        let url = ConfigDocument::parse(None, "[server]\nallowed_hosts = [\"http://x\"]\n".into()).unwrap();
        assert!(ServerSection::from_document(&url).unwrap().host_policy(bound).is_err());
        assert!(ServerSection::from_document(&ConfigDocument::empty()).unwrap().allowed_hosts.is_empty());
    }
}

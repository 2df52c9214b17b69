//! The optional `[server]` section of a configuration file, read by `holdfast serve`.
//!
//! ```toml
//! [server]
//! allowed_hosts = ["holdfast.example.net"]   # extra Host names (behind a reverse proxy); loopback is always allowed
//! ```

use holdfast_agent::access::{AccessError, HostPolicy};
use holdfast_core::config::{ConfigDocument, ConfigError};
use serde::Deserialize;
use std::net::SocketAddr;

/// The `[server]` section.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerSection {
    /// Host names (`name` or `name:port`) the server answers to besides `localhost`, `127.0.0.1` and `[::1]` with
    /// the bound port and the bound IP itself. A name without a port matches with no port or the bound port.
    #[serde(default)]
    pub allowed_hosts: Vec<String>,
}

impl ServerSection {
    /// Reads `[server]` from a configuration document (absent: defaults).
    pub fn from_document(doc: &ConfigDocument) -> Result<Self, ConfigError> {
        doc.section_or_default("server")
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

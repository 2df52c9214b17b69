//! The optional `[mcp]` section of a configuration file and the options `holdfast mcp` runs with.
//!
//! ```toml
//! [mcp]
//! bind = "127.0.0.1:8765"        # streamable HTTP listen address (loopback by default)
//! max_message_bytes = 1048576    # largest JSON-RPC message accepted, on either transport
//! allowed_hosts = ["mcp.lan"]    # Host names accepted besides loopback with the bound port (and the bound IP)
//! trust_elicitation = true        # false: no form is sent; approvals and the user's words only elsewhere
//!
//! [mcp.connections]              # the HTTP transport's connection bounds (holdfast_agent::listen)
//! header_read_timeout_secs = 10
//! idle_timeout_secs = 300
//! max_connections = 1024
//! ```
//!
//! Command-line options win over the file; the file wins over the defaults.

use crate::error::ServeError;
use holdfast_core::config::ConfigDocument;
use serde::Deserialize;
use std::net::{Ipv4Addr, SocketAddr};

/// Where the streamable HTTP transport listens unless told otherwise: loopback only.
pub const DEFAULT_BIND: SocketAddr = SocketAddr::new(std::net::IpAddr::V4(Ipv4Addr::LOCALHOST), 8765);

/// The largest JSON-RPC message accepted (1 MiB): tool calls here carry register and preset names, never payloads.
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 1 << 20;

/// The smallest cap that may be configured (an `initialize` request must fit).
pub const MIN_MAX_MESSAGE_BYTES: usize = 4096;

/// The `[mcp]` section.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpSection {
    /// Streamable HTTP listen address.
    pub bind: Option<SocketAddr>,
    /// Largest JSON-RPC message accepted, in bytes.
    pub max_message_bytes: Option<usize>,
    /// `Host` names (`name` or `name:port`) the HTTP transport accepts besides loopback with the bound port and the
    /// bound IP.
    #[serde(default)]
    pub allowed_hosts: Vec<String>,
    /// The HTTP transport's connection bounds.
    #[serde(default)]
    pub connections: holdfast_agent::listen::ConnectionLimits,
    /// Whether an answered elicitation form counts as the user's: it approves or denies a confirmation, and the
    /// `user_request` text submitted in it is the user's words. Default true. An MCP host can answer a form itself
    /// instead of showing it to the human; set false when the host is not trusted that far: then no form is sent,
    /// an action that needs the user's approval over MCP gets `confirmation_unavailable` and is withdrawn (run it in
    /// `holdfast chat` or the web UI instead), and `user_request` text stays the client's.
    #[serde(default = "yes")]
    pub trust_elicitation: bool,
}

impl Default for McpSection {
    fn default() -> Self {
        Self {
            bind: None,
            max_message_bytes: None,
            allowed_hosts: Vec::new(),
            connections: holdfast_agent::listen::ConnectionLimits::default(),
            trust_elicitation: true,
        }
    }
}

fn yes() -> bool {
    true
}

impl McpSection {
    /// Reads `[mcp]` from a configuration document (absent: defaults).
    pub fn from_document(doc: &ConfigDocument) -> Result<Self, ServeError> {
        let section: Self = doc.section_or_default("mcp").map_err(|e| ServeError::Config(e.to_string()))?;
        if let Some(max) = section.max_message_bytes
            && max < MIN_MAX_MESSAGE_BYTES
        {
            return Err(ServeError::Config(format!(
                "[mcp] max_message_bytes = {max} is below the minimum of {MIN_MAX_MESSAGE_BYTES}"
            )));
        }
        holdfast_agent::access::HostPolicy::new(DEFAULT_BIND, &section.allowed_hosts)
            .map_err(|e| ServeError::Config(format!("[mcp] {e}")))?;
        section.connections.check().map_err(|e| ServeError::Config(format!("[mcp.connections] {e}")))?;
        Ok(section)
    }
}

/// Which transport `holdfast mcp` speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TransportKind {
    /// Newline-delimited JSON-RPC on stdin/stdout: the client starts `holdfast mcp` as a child process.
    #[default]
    Stdio,
    /// MCP streamable HTTP at `http://ADDR/mcp`, bearer token required.
    Http,
}

/// Everything `holdfast mcp` needs besides the runtime.
#[derive(Debug, Clone, Default)]
pub struct McpOptions {
    /// The transport.
    pub transport: TransportKind,
    /// HTTP listen address (`--bind`); default: `[mcp] bind`, else [`DEFAULT_BIND`].
    pub bind: Option<SocketAddr>,
    /// Bearer token for HTTP (read from `--token-file`); default: `HOLDFAST_MCP_TOKEN`, else the data dir's token file.
    pub token: Option<String>,
    /// Message size cap; default: `[mcp] max_message_bytes`, else [`DEFAULT_MAX_MESSAGE_BYTES`].
    pub max_message_bytes: Option<usize>,
}

impl McpOptions {
    /// The options with the `[mcp]` section filled in where the command line left gaps.
    pub fn resolve(mut self, section: &McpSection) -> Self {
        self.bind = self.bind.or(section.bind);
        self.max_message_bytes = self.max_message_bytes.or(section.max_message_bytes);
        self
    }

    /// The listen address in effect.
    pub fn bind_addr(&self) -> SocketAddr {
        self.bind.unwrap_or(DEFAULT_BIND)
    }

    /// The message size cap in effect.
    pub fn max_bytes(&self) -> usize {
        self.max_message_bytes.unwrap_or(DEFAULT_MAX_MESSAGE_BYTES).max(MIN_MAX_MESSAGE_BYTES)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_wins_over_the_file() {
        let doc =
            ConfigDocument::parse(None, "[mcp]\nbind = \"127.0.0.1:9000\"\nmax_message_bytes = 8192\n".into()).unwrap();
        let section = McpSection::from_document(&doc).unwrap();
        let opts = McpOptions::default().resolve(&section);
        assert_eq!((opts.bind_addr().port(), opts.max_bytes()), (9000, 8192));
        let cli = McpOptions { bind: Some(DEFAULT_BIND), ..Default::default() }.resolve(&section);
        assert_eq!(cli.bind_addr(), DEFAULT_BIND);
        assert_eq!(McpOptions::default().max_bytes(), DEFAULT_MAX_MESSAGE_BYTES);
    }

    #[test]
    fn a_bad_section_is_refused() {
        for text in ["[mcp]\nport = 1\n", "[mcp]\nmax_message_bytes = 10\n", "[mcp]\nallowed_hosts = [\"http://x\"]\n"]
        {
            let doc = ConfigDocument::parse(None, text.into()).unwrap();
            assert!(McpSection::from_document(&doc).is_err(), "{text}");
        }
    }
}

//! Why the MCP server could not start or stopped, each reason mapped to a stable [`ErrorCode`].
//!
//! Errors *inside* a session never end it: a failing tool call is an MCP tool error carrying the tool's own code,
//! and a malformed message is a JSON-RPC protocol error (see [`crate::jsonrpc`]). This type is for the server itself.

use holdfast_core::{ErrorCode, HasErrorCode};
use std::net::SocketAddr;

/// The MCP server could not be started or stopped serving.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// The configuration could not be loaded or the runtime built from it.
    #[error("cannot build the runtime: {0}")]
    Runtime(#[from] holdfast_agent::RuntimeError),
    /// The `[mcp]` section or a command-line option is invalid.
    #[error("invalid MCP configuration: {0}")]
    Config(String),
    /// A non-loopback bind was asked for without a token chosen by the operator.
    #[error(
        "refusing to listen on {addr}: it is not a loopback address, so a bearer token must be chosen explicitly \
         (--token-file, HOLDFAST_MCP_TOKEN, or an existing token file in the data dir)"
    )]
    NonLoopbackWithoutToken {
        /// The address asked for.
        addr: SocketAddr,
    },
    /// The access token could not be set up (too weak, unreadable file, no randomness).
    #[error("MCP bearer token: {0}")]
    Token(#[from] holdfast_agent::access::AccessError),
    /// The listening socket could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// The I/O failure.
        source: std::io::Error,
    },
    /// The transport failed (the client went away in the middle of the handshake, the socket broke…).
    #[error("MCP transport: {0}")]
    Transport(String),
}

impl HasErrorCode for ServeError {
    fn code(&self) -> ErrorCode {
        match self {
            Self::Runtime(_) | Self::Config(_) | Self::NonLoopbackWithoutToken { .. } => ErrorCode::ConfigInvalid,
            Self::Token(e) => e.code(),
            Self::Bind { .. } | Self::Transport(_) => ErrorCode::Internal,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_error_has_a_stable_code() {
        let addr: SocketAddr = ([0, 0, 0, 0], 80).into();
        assert_eq!(ServeError::NonLoopbackWithoutToken { addr }.code(), ErrorCode::ConfigInvalid);
        let weak = holdfast_agent::access::AccessError::WeakToken { min: 16 };
        assert_eq!(ServeError::Token(weak).code(), ErrorCode::ConfigInvalid);
        assert_eq!(ServeError::Transport("closed".into()).code(), ErrorCode::Internal);
        let io = std::io::Error::other("busy");
        assert_eq!(ServeError::Bind { addr, source: io }.code(), ErrorCode::Internal);
    }
}

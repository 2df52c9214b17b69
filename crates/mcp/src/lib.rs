//! # holdfast-mcp
//!
//! holdfast as an MCP server (`holdfast mcp`), built on `rmcp`, the official Rust MCP SDK: any MCP client (Claude
//! Desktop, Claude Code, Cursor…) gets the whole tool registry, with the safety model intact.
//!
//! - **Tools** ([`tools`]): every registered tool with its strict `inputSchema` and `outputSchema`; results as
//!   `structuredContent` plus the same JSON as text; tool errors as MCP tool errors (`isError: true`) carrying the
//!   stable code and message.
//! - **Sessions** ([`server`]): each MCP session is one persisted holdfast session (`open_session("mcp")`) with
//!   its own registers, context bank and confirmations; memory, tasks, the wallet, caps and journal belong to the
//!   runtime and are shared by every session it serves.
//! - **Resources** ([`resources`]): the session's registers, context bank and pending confirmations, readable and
//!   subscribable (`notifications/resources/updated`, this session's events only).
//! - **Trust boundary**: the MCP client is the model's host, not the user. Over MCP the only user channel is
//!   elicitation, a form the client shows to the human.
//! - **Prompts** ([`prompts`]): `user_request` — the request reaches the context bank only as the human confirmed it
//!   in an elicitation form; without one, nothing in it becomes `user` origin. No prompt, tool, completion or resource
//!   approves anything.
//! - **Confirmation** ([`confirm`]): elicitation shows the user the decoded action; a client that cannot ask the user
//!   gets `confirmation_unavailable` and the pending confirmation is withdrawn.
//! - **Transports**: [`stdio`] (newline-delimited JSON-RPC) and [`http`] (streamable HTTP on loopback behind the
//!   same edge guard as `holdfast serve`, from [`holdfast_agent::access`]; each client its own token, and each
//!   session its opening client's alone); both pass every
//!   message through the gate of [`jsonrpc`] — malformed, unknown and oversized messages get protocol errors and
//!   the server keeps serving.
//!
//! See `docs/mcp.md` for client configuration.

pub mod config;
pub mod confirm;
pub mod error;
pub mod http;
pub mod jsonrpc;
pub mod links;
mod owners;
pub mod prompts;
pub mod resources;
pub mod server;
pub mod stdio;
pub mod tools;

pub use config::{McpOptions, McpSection, TransportKind};
pub use error::ServeError;
pub use http::HttpServer;
pub use http::{TOKEN_ENV, resolve_token};
pub use server::HoldfastMcp;

use holdfast_agent::Runtime;
use rmcp::ServiceExt as _;
use std::sync::Arc;
use tokio::io::{AsyncRead, AsyncWrite};

/// Serves one MCP session over `reader`/`writer` (newline-delimited JSON-RPC) until the client closes its end.
pub async fn serve_io<R, W>(runtime: Arc<Runtime>, reader: R, writer: W, max_bytes: usize) -> Result<(), ServeError>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let transport = stdio::LineTransport::new(reader, writer, max_bytes);
    let running = HoldfastMcp::new(runtime).serve(transport).await.map_err(|e| ServeError::Transport(e.to_string()))?;
    running.waiting().await.map_err(|e| ServeError::Transport(e.to_string()))?;
    Ok(())
}

/// Serves one MCP session on stdin/stdout until stdin closes. Nothing else may write to stdout meanwhile.
pub async fn serve_stdio(runtime: Arc<Runtime>, max_bytes: usize) -> Result<(), ServeError> {
    let (stdin, stdout) = rmcp::transport::stdio_pipes();
    serve_io(runtime, stdin, stdout, max_bytes).await
}

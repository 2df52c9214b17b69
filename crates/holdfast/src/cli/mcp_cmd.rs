//! `holdfast mcp [--config FILE] [--transport stdio|http] [--bind ADDR] [--token TOKEN]`: the MCP server over the
//! whole tool registry (see the `holdfast-mcp` crate and `docs/mcp.md`).
//!
//! stdio is the default: the MCP client starts this command and speaks JSON-RPC on its stdin/stdout, so nothing
//! else is ever printed to stdout; diagnostics go to stderr. With `--transport http` the server listens on
//! `http://ADDR/mcp` (loopback by default) and requires a bearer token; it runs until Ctrl-C.

use anyhow::Context as _;
use clap::{Args, ValueEnum};
use holdfast_agent::access::TokenOrigin;
use holdfast_mcp::{HttpServer, McpOptions, McpSection, TOKEN_ENV, TransportKind};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

/// The transport `holdfast mcp` speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum McpTransport {
    /// JSON-RPC lines on stdin/stdout (the client starts `holdfast mcp`).
    Stdio,
    /// Streamable HTTP at http://ADDR/mcp with a bearer token.
    Http,
}

/// `holdfast mcp …`.
#[derive(Debug, Args)]
pub(crate) struct McpArgs {
    /// Configuration file (default: built-in defaults, everything in memory).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// The transport.
    #[arg(long, value_enum, default_value = "stdio")]
    pub transport: McpTransport,
    /// HTTP listen address (default: `[mcp] bind`, else 127.0.0.1:8765). A non-loopback address needs a token you
    /// choose.
    #[arg(long)]
    pub bind: Option<SocketAddr>,
    /// HTTP bearer token (default: HOLDFAST_MCP_TOKEN, else DATA_DIR/mcp.token, generated on first start).
    #[arg(long)]
    pub token: Option<String>,
}

/// Runs `holdfast mcp` until the client disconnects (stdio) or Ctrl-C (http).
pub(crate) async fn run(args: McpArgs) -> anyhow::Result<()> {
    let runtime = Arc::new(holdfast_agent::Runtime::load(args.config.as_deref()).await?);
    crate::startup::verify_price_feeds(&runtime).await?;
    crate::startup::reconcile_journal(&runtime).await;
    let section = McpSection::from_document(&runtime.document)?;
    let transport = match args.transport {
        McpTransport::Stdio => TransportKind::Stdio,
        McpTransport::Http => TransportKind::Http,
    };
    let options =
        McpOptions { transport, bind: args.bind, token: args.token, max_message_bytes: None }.resolve(&section);
    match options.transport {
        TransportKind::Stdio => {
            holdfast_mcp::serve_stdio(runtime, options.max_bytes()).await.context("serving MCP on stdio")?;
        }
        TransportKind::Http => {
            let addr = options.bind_addr();
            let env = std::env::var(TOKEN_ENV).ok();
            let data_dir = runtime.data_dir().cloned();
            let token = holdfast_mcp::resolve_token(options.token.clone(), env, data_dir.as_deref(), addr)?;
            let server = HttpServer::start(
                Arc::clone(&runtime),
                addr,
                token.clone(),
                &section.allowed_hosts,
                options.max_bytes(),
            )
            .await?;
            match token.origin() {
                TokenOrigin::File { path, created: true } => {
                    say!("holdfast mcp: new bearer token {} (saved in {})", token.secret(), path.display());
                }
                TokenOrigin::File { path, created: false } => {
                    say!("holdfast mcp: bearer token in {}", path.display());
                }
                TokenOrigin::Ephemeral => {
                    say!("holdfast mcp: bearer token for this run (no data dir): {}", token.secret());
                }
                TokenOrigin::Flag | TokenOrigin::Env => say!("holdfast mcp: bearer token as given"),
            }
            runtime.announce_address(&server.local_addr().to_string());
            say!("holdfast mcp: listening on {}", server.url());
            let stop = server.stop_handle();
            tokio::spawn(async move {
                if tokio::signal::ctrl_c().await.is_ok() {
                    say!("holdfast mcp: stopping");
                    stop.cancel();
                }
            });
            server.wait().await?;
        }
    }
    Ok(())
}

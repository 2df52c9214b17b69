//! `holdfast mcp [--config FILE] [--transport stdio|http] [--bind ADDR] [--token-file PATH]`: the MCP server over the
//! whole tool registry (see the `holdfast-mcp` crate and `docs/mcp.md`).
//!
//! stdio is the default: the MCP client starts this command and speaks JSON-RPC on its stdin/stdout, so nothing
//! else is ever printed to stdout; diagnostics go to stderr. With `--transport http` the server listens on
//! `http://ADDR/mcp` (loopback by default) and requires a bearer token; it runs until Ctrl-C.

use anyhow::Context as _;
use clap::{Args, Subcommand, ValueEnum};
use holdfast_agent::access::{ClientTokens, TokenOrigin};
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
#[command(args_conflicts_with_subcommands = true)]
pub(crate) struct McpArgs {
    /// Manage the HTTP transport's clients instead of serving.
    #[command(subcommand)]
    pub command: Option<McpCommand>,
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
    /// A file whose first line is the HTTP bearer token of the default client (default: HOLDFAST_MCP_TOKEN, else
    /// DATA_DIR/mcp.token, generated on first start). A token is never taken on the command line, where every local
    /// user reads it (`ps`) and the shell's history keeps it; on Unix the file must not be readable by group or others.
    #[arg(long, value_name = "PATH")]
    pub token_file: Option<PathBuf>,
}

/// The token in the first line of `path`, which on Unix only its owner may read (checked on the file opened, so the
/// file read is the file checked).
fn read_token_file(path: &std::path::Path) -> anyhow::Result<String> {
    use std::io::Read as _;
    let shown = path.display();
    let mut file = std::fs::File::open(path).with_context(|| format!("--token-file {shown}"))?;
    let meta = file.metadata().with_context(|| format!("--token-file {shown}"))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = meta.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            anyhow::bail!(
                "--token-file {shown}: readable by other users (mode {mode:o}); `chmod 600 {shown}` and start again"
            );
        }
    }
    #[cfg(not(unix))]
    let _ = meta;
    let mut text = String::new();
    file.by_ref().take(64 * 1024).read_to_string(&mut text).with_context(|| format!("--token-file {shown}"))?;
    let token = text.lines().next().unwrap_or_default().trim();
    if token.is_empty() {
        anyhow::bail!("--token-file {shown}: the first line is empty; write the token there");
    }
    Ok(token.to_owned())
}

/// `holdfast mcp …` subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum McpCommand {
    /// The HTTP transport's clients: each token is a client of its own, and each MCP session belongs to the client
    /// that opened it. `DATA_DIR/mcp.token` is the `default` client.
    Token {
        #[command(subcommand)]
        action: TokenAction,
    },
}

/// `holdfast mcp token …`.
#[derive(Debug, Subcommand)]
pub(crate) enum TokenAction {
    /// Add a client: prints its new token once (only its digest is kept, in DATA_DIR/mcp-clients.json).
    Add {
        /// The client's name: 1–32 of a-z, 0-9, - and _, starting with a letter.
        name: String,
        #[command(flatten)]
        dir: DataDirArgs,
    },
    /// List the clients: name, when added, last use, and whether revoked.
    List {
        #[command(flatten)]
        dir: DataDirArgs,
    },
    /// Revoke a client's token: it stops working at once, on a running server too.
    Revoke {
        /// The client's name.
        name: String,
        #[command(flatten)]
        dir: DataDirArgs,
    },
}

/// Where the clients are kept: the data dir of `--data-dir`, or of `--config`'s `[storage] data_dir`.
#[derive(Debug, Args)]
pub(crate) struct DataDirArgs {
    /// The configuration `holdfast mcp` runs with (its `[storage] data_dir`).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// The data dir itself.
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
}

impl DataDirArgs {
    fn resolve(&self) -> anyhow::Result<PathBuf> {
        if let Some(dir) = &self.data_dir {
            return Ok(dir.clone());
        }
        let Some(path) = &self.config else {
            anyhow::bail!(
                "client tokens are kept in the data dir of the server: pass --config FILE (with [storage] data_dir) or \
                 --data-dir DIR"
            );
        };
        let doc = holdfast_core::config::ConfigDocument::load(path)?;
        holdfast_core::config::CoreConfig::from_document(&doc)?.data_dir.ok_or_else(|| {
            anyhow::anyhow!("{} has no [storage] data_dir: a server on it keeps no clients", path.display())
        })
    }
}

/// `holdfast mcp token …`.
fn token_command(action: TokenAction) -> anyhow::Result<()> {
    match action {
        TokenAction::Add { name, dir } => {
            let dir = dir.resolve()?;
            let token = ClientTokens::in_data_dir(&dir).add(&name)?;
            // Asked for: the one time this client's token is shown.
            outln!("{token}");
            say!(
                "holdfast mcp: client {name:?} added (its token above is shown once; only its digest is kept in {})",
                dir.display()
            );
        }
        TokenAction::List { dir } => {
            let dir = dir.resolve()?;
            outln!("{:<32}  {:<20}  {:<20}  STATUS", "CLIENT", "ADDED", "LAST USED");
            let default_file = dir.join(holdfast_agent::access::MCP_TOKEN_FILE);
            let default_status = if default_file.exists() { "active (mcp.token)" } else { "not created yet" };
            outln!("{:<32}  {:<20}  {:<20}  {default_status}", holdfast_agent::access::DEFAULT_CLIENT, "-", "-");
            for client in ClientTokens::in_data_dir(&dir).list()? {
                let [added, used, status] = client.columns();
                outln!("{:<32}  {added:<20}  {used:<20}  {status}", client.name);
            }
        }
        TokenAction::Revoke { name, dir } => {
            let dir = dir.resolve()?;
            if name == holdfast_agent::access::DEFAULT_CLIENT {
                anyhow::bail!(
                    "the default client's token is {}: delete that file (a new one is made on the next start) or pass \
                     --token-file to `holdfast mcp`",
                    dir.join(holdfast_agent::access::MCP_TOKEN_FILE).display()
                );
            }
            ClientTokens::in_data_dir(&dir).revoke(&name)?;
            outln!("client {name:?} revoked");
        }
    }
    Ok(())
}

/// Runs `holdfast mcp` until the client disconnects (stdio) or Ctrl-C (http).
pub(crate) async fn run(args: McpArgs) -> anyhow::Result<()> {
    if let Some(McpCommand::Token { action }) = args.command {
        return token_command(action);
    }
    let runtime = Arc::new(holdfast_agent::Runtime::load(args.config.as_deref()).await?);
    crate::startup::verify_price_feeds(&runtime).await?;
    crate::startup::verify_account(&runtime).await?;
    crate::startup::reconcile_journal(&runtime).await;
    let section = McpSection::from_document(&runtime.document)?;
    let transport = match args.transport {
        McpTransport::Stdio => TransportKind::Stdio,
        McpTransport::Http => TransportKind::Http,
    };
    let token = args.token_file.as_deref().map(read_token_file).transpose()?;
    let options = McpOptions { transport, bind: args.bind, token, max_message_bytes: None }.resolve(&section);
    match options.transport {
        TransportKind::Stdio => {
            holdfast_mcp::serve_stdio(runtime, options.max_bytes()).await.context("serving MCP on stdio")?;
        }
        TransportKind::Http => {
            let addr = options.bind_addr();
            let env = std::env::var(TOKEN_ENV).ok();
            let data_dir = runtime.data_dir().cloned();
            let token = holdfast_mcp::resolve_token(options.token.clone(), env, data_dir.as_deref(), addr)?;
            let clients = Arc::new(ClientTokens::new(token.clone(), data_dir.as_deref()));
            let server = HttpServer::start(Arc::clone(&runtime), addr, clients, &section, options.max_bytes()).await?;
            match token.origin() {
                TokenOrigin::File { path, created: true } => {
                    // The one time it is shown: on stdout (free on this transport), never in the log.
                    outln!("{}", token.secret());
                    say!("holdfast mcp: new bearer token printed on stdout (saved in {})", path.display());
                }
                TokenOrigin::File { path, created: false } => {
                    say!("holdfast mcp: bearer token in {}", path.display());
                }
                TokenOrigin::Ephemeral => {
                    outln!("{}", token.secret());
                    say!("holdfast mcp: a bearer token for this run (no data dir) printed on stdout");
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

//! The `holdfast` binary: one entry point for every command (see `docs/interfaces.md`).

#[macro_use]
mod console;
mod allocator;
mod chat;
mod devnet_cmd;
mod doctor;
mod logging;
mod mcp_cmd;
mod replay;
mod serve;
mod startup;
mod terminal;
mod tools_doc;

use anyhow::Context as _;
use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

/// holdfast — an agent runtime where the model names values and never carries them, and nothing moves value
/// outside your policy.
#[derive(Debug, Parser)]
#[command(name = "holdfast", version, long_about = None)]
struct Cli {
    /// Log format on stderr: `text`, or `json` (one JSON object per event, for a collector). The level comes from
    /// HOLDFAST_LOG, else RUST_LOG (default: warn).
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,
    #[command(subcommand)]
    command: Command,
}

/// `--log-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum LogFormat {
    /// Human-readable lines (colours only on a terminal).
    Text,
    /// One JSON object per event.
    Json,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// The HTTP + WebSocket API and the web UI (with no --config: SQLite and a local devnet, no API key needed).
    Serve(serve::ServeArgs),
    /// Serve the tool registry over MCP (stdio by default, --transport http for streamable HTTP); see docs/mcp.md.
    Mcp(mcp_cmd::McpArgs),
    /// Chat with the agent in the terminal (needs an LLM provider: see docs/llm.md).
    Chat {
        /// Configuration file (default: built-in defaults).
        #[arg(long)]
        config: Option<PathBuf>,
        /// The agent to talk to: `assistant` (the default) or an `[agents.NAME]` of the config.
        #[arg(long, default_value = holdfast_agent::AGENT_ID)]
        agent: String,
    },
    /// Start or stop the local devnet (anvil + contracts at Base addresses + quoter + funded burner wallet).
    Devnet {
        #[command(subcommand)]
        command: devnet_cmd::DevnetCommand,
    },
    /// Check a configuration and what it points at (RPC nodes, wallet, policy, presets, LLM); non-zero on failure.
    Doctor(doctor::DoctorArgs),
    /// Inspect the tool registry.
    Tools {
        #[command(subcommand)]
        command: ToolsCommand,
    },
    /// Run a transcript of user messages and tool calls in one fresh session; JSONL results on stdout.
    Replay {
        /// Configuration file (default: built-in defaults).
        #[arg(long)]
        config: Option<PathBuf>,
        /// Transcript file, or `-` for stdin.
        transcript: String,
    },
}

#[derive(Debug, Subcommand)]
enum ToolsCommand {
    /// List every registered tool with its schemas.
    List {
        /// Print JSON: `[{"name","description","input_schema","output_schema"}]`.
        #[arg(long, conflicts_with = "markdown")]
        json: bool,
        /// Print a markdown reference (docs/tools.md).
        #[arg(long)]
        markdown: bool,
        /// Configuration file (default: built-in defaults).
        #[arg(long)]
        config: Option<PathBuf>,
    },
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    logging::init(cli.log_format == LogFormat::Json);
    allocator::return_freed_memory();
    // The servers' connection caps, not the descriptor table, bound how many clients are held.
    holdfast_agent::listen::raise_open_files_limit();
    match run(cli).await {
        Ok(code) => code,
        Err(e) => {
            console::fail(format_args!("holdfast: {e:#}"));
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Tools { command: ToolsCommand::List { json, markdown, config } } => {
            let runtime = holdfast_agent::Runtime::load(config.as_deref()).await?;
            let tools = runtime.registry.list();
            if markdown {
                outln!("{}", tools_doc::render(&tools).trim_end());
            } else if json {
                let listed: Vec<serde_json::Value> = tools
                    .iter()
                    .map(|t| {
                        serde_json::json!({
                            "name": t.name,
                            "description": t.description,
                            "input_schema": t.input_schema,
                            "output_schema": t.output_schema,
                            "kind": t.kind,
                        })
                    })
                    .collect();
                outln!("{}", serde_json::to_string_pretty(&listed).context("serialising the tool list")?);
            } else {
                for t in tools {
                    let params: Vec<&String> =
                        t.input_schema["properties"].as_object().map(|p| p.keys().collect()).unwrap_or_default();
                    let params: Vec<&str> = params.iter().map(|s| s.as_str()).collect();
                    outln!("{:<20} {{{}}}\n    {}", t.name, params.join(", "), t.description);
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Doctor(args) => Ok(doctor::run(args).await),
        Command::Serve(args) => {
            serve::run(args).await?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Mcp(args) => {
            mcp_cmd::run(args).await?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Chat { config, agent } => {
            chat::run(config.as_deref(), &agent).await?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Devnet { command } => {
            devnet_cmd::run(command, serve::default_data_dir).await?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Replay { config, transcript } => {
            let runtime = holdfast_agent::Runtime::load(config.as_deref()).await?;
            replay::run(&runtime, &transcript).await
        }
    }
}

//! The `holdfast` binary: one entry point for every command (see `docs/interfaces.md`).

#[macro_use]
mod console;
mod chat;
mod devnet_cmd;
mod doctor;
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

/// The log: `tracing` events on stderr as text or JSON, filtered by `HOLDFAST_LOG`, else `RUST_LOG` (the usual
/// `EnvFilter` syntax, e.g. `RUST_LOG=info,holdfast_web3=debug`), else warnings only.
/// Crates whose debug spans and events carry whole URLs, and RPC node URLs carry API keys (alloy's HTTP transport
/// puts the node URL on a span; reqwest logs redirect targets). They stay at `info` unless the filter names them.
const URL_LOGGING_TARGETS: &[&str] = &["alloy_transport_http", "reqwest"];

/// Whether a directive of `spec` names `target` itself or a module inside it (`reqwest=debug`,
/// `alloy_transport_http::layer=trace`) — not a target that merely contains the text (`my_reqwest_shim=off`).
fn names_target(spec: &str, target: &str) -> bool {
    spec.split(',').any(|directive| {
        let name = directive.split(['=', '[']).next().unwrap_or_default().trim();
        name == target || name.strip_prefix(target).is_some_and(|rest| rest.starts_with("::"))
    })
}

fn init_tracing(format: LogFormat) {
    // HOLDFAST_LOG first, then RUST_LOG; a filter that does not parse falls through to the next.
    let spec = ["HOLDFAST_LOG", "RUST_LOG"]
        .into_iter()
        .filter_map(|var| std::env::var(var).ok())
        .find(|spec| tracing_subscriber::EnvFilter::try_new(spec).is_ok())
        .unwrap_or_else(|| "warn".to_owned());
    let mut filter = tracing_subscriber::EnvFilter::new(&spec);
    for target in URL_LOGGING_TARGETS.iter().filter(|t| !names_target(&spec, t)) {
        if let Ok(directive) = format!("{target}=info").parse() {
            filter = filter.add_directive(directive);
        }
    }
    if format == LogFormat::Json {
        console::use_json();
        if !names_target(&spec, console::TARGET)
            && let Ok(directive) = format!("{}=info", console::TARGET).parse()
        {
            filter = filter.add_directive(directive);
        }
    }
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
    match format {
        LogFormat::Json => builder.json().with_current_span(true).init(),
        // Colours only on a terminal: a log file gets plain text.
        LogFormat::Text => builder.with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr())).init(),
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    init_tracing(cli.log_format);
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
            devnet_cmd::run(command).await?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Replay { config, transcript } => {
            let runtime = holdfast_agent::Runtime::load(config.as_deref()).await?;
            replay::run(&runtime, &transcript).await
        }
    }
}

#[cfg(test)]
mod tests {
    use super::names_target;

    #[test]
    fn only_a_directive_for_the_target_itself_lifts_the_url_clamp() {
        for spec in ["reqwest=debug", "info,reqwest=trace", "alloy_transport_http::layer=trace", "reqwest"] {
            assert!(names_target(spec, "reqwest") || names_target(spec, "alloy_transport_http"), "{spec}");
        }
        for spec in ["trace", "trace,my_reqwest_shim=off", "reqwest_middleware=debug", "debug,holdfast_web3=trace"] {
            assert!(!names_target(spec, "reqwest"), "{spec}");
        }
    }
}

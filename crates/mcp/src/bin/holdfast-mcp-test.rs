//! `holdfast-mcp-test mcp [--config FILE] [--transport stdio|http] [--bind ADDR] [--token-file PATH]`: the `holdfast mcp`
//! command on its own, compiled from the CLI's own glue (`crates/holdfast/src/cli/mcp_cmd.rs`), so this crate's integration
//! tests run exactly what `holdfast mcp` runs without building the whole binary.

#[path = "../../../holdfast/src/cli/console.rs"]
#[macro_use]
#[allow(dead_code, unused_macros)]
mod console;
#[path = "../../../holdfast/src/cli/logging.rs"]
mod logging;
#[path = "../../../holdfast/src/cli/mcp_cmd.rs"]
mod mcp_cmd;
#[path = "../../../holdfast/src/cli/startup.rs"]
mod startup;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// The `holdfast` command line, reduced to `mcp`.
#[derive(Debug, Parser)]
#[command(name = "holdfast-mcp-test")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve the tool registry over MCP.
    Mcp(mcp_cmd::McpArgs),
}

#[tokio::main]
async fn main() -> ExitCode {
    logging::init(false);
    holdfast_agent::listen::raise_open_files_limit();
    let Command::Mcp(args) = Cli::parse().command;
    match mcp_cmd::run(args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("holdfast: {e:#}");
            ExitCode::FAILURE
        }
    }
}

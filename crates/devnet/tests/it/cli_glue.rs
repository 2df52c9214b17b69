//! Compiles the CLI's `devnet` subcommand module (`crates/holdfast/src/cli/devnet_cmd.rs`) against this crate and checks its
//! argument parsing, so the glue the lead wires into `holdfast` is known to build.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

#[path = "../../../holdfast/src/cli/devnet_cmd.rs"]
mod devnet_cmd;

use clap::{CommandFactory, Parser};
use devnet_cmd::DevnetCommand;

#[derive(Parser)]
struct Cli {
    #[command(subcommand)]
    devnet: DevnetCommand,
}

fn no_default() -> anyhow::Result<std::path::PathBuf> {
    anyhow::bail!("no default data dir in this test")
}

#[test]
fn parses_up_down_and_hidden_services() {
    let up = Cli::try_parse_from(["holdfast", "up", "--dir", "/tmp/x"]).unwrap();
    assert!(matches!(up.devnet, DevnetCommand::Up { dir, chain_id, allow_public_chain_id: false, .. }
        if dir == std::path::Path::new("/tmp/x") && chain_id == holdfast_devnet::CHAIN_ID));
    let other = Cli::try_parse_from(["holdfast", "up", "--dir", "x", "--chain-id", "31337"]).unwrap();
    assert!(matches!(other.devnet, DevnetCommand::Up { chain_id: 31337, .. }));
    let down = Cli::try_parse_from(["holdfast", "down", "--dir", "d"]).unwrap();
    assert!(matches!(down.devnet, DevnetCommand::Down { .. }));
    let services = Cli::try_parse_from(["holdfast", "services", "--dir", "d"]).unwrap();
    assert!(matches!(services.devnet, DevnetCommand::Services { .. }));
    assert!(Cli::try_parse_from(["holdfast", "up"]).is_err(), "--dir is required");
    let help = Cli::command().render_help().to_string();
    assert!(help.contains("up") && help.contains("down") && !help.contains("services"), "{help}");
}

#[tokio::test]
async fn a_public_chain_id_is_refused_without_the_flag_before_anything_starts() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("devnet");
    // Base, and chains a list of public ids would have to remember: BNB Chain, Avalanche, Linea.
    for id in ["8453", "56", "43114", "59144"] {
        let up = Cli::try_parse_from(["holdfast", "up", "--dir", dir.to_str().unwrap(), "--chain-id", id]).unwrap();
        let err = devnet_cmd::run(up.devnet, no_default).await.unwrap_err().to_string();
        assert!(err.contains(&format!("chain id {id} is not a local chain id")), "{err}");
        assert!(err.contains("--allow-public-chain-id"), "{err}");
        assert!(!dir.exists(), "nothing was created");
    }
    let allowed = ["holdfast", "up", "--dir", "d", "--chain-id", "8453", "--allow-public-chain-id"];
    assert!(matches!(
        Cli::try_parse_from(allowed).unwrap().devnet,
        DevnetCommand::Up { chain_id: 8453, allow_public_chain_id: true, .. }
    ));
}

#[tokio::test]
async fn down_on_a_missing_folder_succeeds() {
    let tmp = tempfile::tempdir().unwrap();
    devnet_cmd::run(DevnetCommand::Down { dir: tmp.path().join("none") }, no_default).await.unwrap();
}

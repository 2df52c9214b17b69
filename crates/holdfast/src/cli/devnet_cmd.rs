//! `holdfast devnet up|down --dir DIR`: the one-command local devnet (see the `holdfast-devnet` crate).
//!
//! `up` prints progress lines to stderr and a short summary to stdout; `down` prints what it stopped. The hidden
//! `services` subcommand is the services process `up` starts (`holdfast devnet services --dir DIR`).

use anyhow::Context as _;
use clap::Subcommand;
use std::path::PathBuf;
use std::sync::Arc;

/// `holdfast devnet …`.
#[derive(Debug, Subcommand)]
pub(crate) enum DevnetCommand {
    /// Start a local devnet in DIR: anvil (the devnet's own chain id, 1752132708) with USDC, WETH and a swap venue
    /// at their Base addresses, a 0x-shaped quoter behind an x402 paywall, a funded burner wallet, and
    /// DIR/holdfast.toml.
    Up {
        /// The devnet folder (created when missing).
        #[arg(long)]
        dir: PathBuf,
        /// Run anvil with this chain id instead of the devnet's own (for tests that need another). Ids other than
        /// the local ones (31337, 1337) may be a public chain's and are refused unless --allow-public-chain-id is
        /// given: everything signed on the devnet would be valid on that chain too.
        #[arg(long, default_value_t = holdfast_devnet::CHAIN_ID)]
        chain_id: u64,
        /// Accept a non-local chain id for --chain-id (with a warning).
        #[arg(long)]
        allow_public_chain_id: bool,
    },
    /// Stop the devnet in DIR (exactly the processes `up` started).
    Down {
        /// The devnet folder.
        #[arg(long)]
        dir: PathBuf,
    },
    /// Run the devnet's services (quoter); started by `up`.
    #[command(hide = true)]
    Services {
        /// The devnet folder.
        #[arg(long)]
        dir: PathBuf,
    },
}

/// Runs a `holdfast devnet` subcommand.
pub(crate) async fn run(cmd: DevnetCommand) -> anyhow::Result<()> {
    match cmd {
        DevnetCommand::Up { dir, chain_id, allow_public_chain_id } => {
            let services_exe = std::env::current_exe().context("locating the holdfast executable")?;
            let progress: holdfast_devnet::Progress = Arc::new(|line: &str| say!("devnet: {line}"));
            let opts = holdfast_devnet::UpOptions {
                chain_id,
                allow_public_chain_id,
                progress,
                ..holdfast_devnet::UpOptions::new(dir.clone(), services_exe)
            };
            // Started (or found) under the devnet's start lock; brought up by hand, it stays up until `devnet down`,
            // even when a `serve` had started it for itself.
            let (info, user) = holdfast_devnet::join(opts, false).await?;
            holdfast_devnet::keep_running(user.dir())?;
            drop(user);
            let dir = dir.canonicalize().unwrap_or(dir);
            let config = dir.join(&info.config);
            if info.already_up {
                outln!("The devnet in {} is already up; nothing was started.", dir.display());
            } else {
                outln!("Devnet up in {}", dir.display());
            }
            outln!("  RPC URL:   {} (chain id {}: a local devnet, no real value)", info.rpc_url, info.chain_id);
            outln!("  Quoter:    {}/swap/allowance-holder/quote", info.services.url);
            if let Some(x402) = &info.x402 {
                let price = holdfast_core::amount::from_base_units(x402.price.parse().unwrap_or_default(), 6);
                outln!(
                    "  Paywall:   x402 v2, {price} USDC per quote to {} (facilitator {})",
                    x402.pay_to,
                    x402.facilitator_url
                );
            }
            outln!("  Wallet:    {} (key file {})", info.wallet.address, dir.join(&info.wallet.key_file).display());
            outln!("  Config:    {}", config.display());
            outln!();
            outln!("Next: holdfast serve --config {}   (web UI; or `holdfast chat --config …`)", config.display());
            outln!("Stop: holdfast devnet down --dir {}", dir.display());
            Ok(())
        }
        DevnetCommand::Down { dir } => {
            let report = holdfast_devnet::down(&dir).await?;
            if dir.is_dir() {
                holdfast_devnet::keep_running(&dir)?;
            }
            outln!("{}", report.message);
            Ok(())
        }
        DevnetCommand::Services { dir } => {
            holdfast_devnet::run_services(&dir).await?;
            Ok(())
        }
    }
}

//! `holdfast devnet up|down|reset --dir DIR`: the one-command local devnet (see the `holdfast-devnet` crate).
//!
//! `up` prints progress lines to stderr and a short summary to stdout; `down` prints what it stopped; `reset` asks,
//! then deletes the saved chain and wallet key. The hidden
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
        /// The wallet key holds the funds itself (no smart account, no on-chain limits). By default the funds sit
        /// in a smart account (Safe 1.4.1) whose limited signer is the wallet key (Safe's AllowanceModule): a stolen
        /// key or a compromised holdfast moves at most the day's on-chain limits.
        #[arg(long, conflicts_with = "onchain_limits")]
        plain: bool,
        /// An on-chain limit per day, `ASSET=AMOUNT` (`ETH=0.05`, `USDC=100`, `WETH=1`: in decimal; another token's
        /// address: in its base units, `0xTOKEN=1000000`; repeatable). Default: ETH=0.05 and USDC=100. An asset
        /// without a limit cannot move out of the account.
        #[arg(long = "onchain-limit", value_name = "ASSET=AMOUNT", value_parser = parse_limit)]
        onchain_limits: Vec<holdfast_devnet::OnchainLimit>,
    },
    /// Stop the devnet in DIR (exactly the processes `up` started).
    Down {
        /// The devnet folder.
        #[arg(long)]
        dir: PathBuf,
    },
    /// Start over: stop the devnet in DIR if it runs, and delete its saved chain (every balance and transaction on
    /// it) and its wallet key, so that the next `up` or `serve` makes a new chain with a new wallet. Asks first.
    Reset {
        /// The devnet folder (default: the devnet `holdfast serve` runs without --config, in its data dir).
        #[arg(long)]
        dir: Option<PathBuf>,
        /// Do not ask (required when stdin is not a terminal).
        #[arg(long)]
        yes: bool,
    },
    /// Run the devnet's services (quoter); started by `up`.
    #[command(hide = true)]
    Services {
        /// The devnet folder.
        #[arg(long)]
        dir: PathBuf,
    },
}

/// Runs a `holdfast devnet` subcommand; `default_data_dir` is `serve`'s data dir, whose `devnet` folder `reset` takes
/// without `--dir`.
pub(crate) async fn run(cmd: DevnetCommand, default_data_dir: fn() -> anyhow::Result<PathBuf>) -> anyhow::Result<()> {
    match cmd {
        DevnetCommand::Up { dir, chain_id, allow_public_chain_id, plain, onchain_limits } => {
            let account = match (plain, onchain_limits.is_empty()) {
                (true, _) => None,
                (false, true) => Some(holdfast_devnet::OnchainLimit::defaults()),
                (false, false) => Some(onchain_limits),
            };
            let services_exe = std::env::current_exe().context("locating the holdfast executable")?;
            let progress: holdfast_devnet::Progress = Arc::new(|line: &str| say!("devnet: {line}"));
            let opts = holdfast_devnet::UpOptions {
                chain_id,
                allow_public_chain_id,
                progress,
                account,
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
            match &info.wallet.account {
                Some(account) => {
                    outln!("  Account:   {account} (a Safe: the funds; owner anvil's dev account #0)");
                    outln!(
                        "  Signer:    {} (key file {}; the account's delegate in Safe's AllowanceModule {})",
                        info.wallet.address,
                        dir.join(&info.wallet.key_file).display(),
                        holdfast_devnet::ALLOWANCE_MODULE
                    );
                    for l in &info.wallet.limits {
                        outln!("  Limit:     {}, on chain", limit_text(l));
                    }
                }
                None => outln!(
                    "  Wallet:    {} (key file {})",
                    info.wallet.address,
                    dir.join(&info.wallet.key_file).display()
                ),
            }
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
        DevnetCommand::Reset { dir, yes } => {
            let dir = match dir {
                Some(dir) => dir,
                None => default_data_dir()?.join("devnet"),
            };
            if !dir.join(holdfast_devnet::info::DEVNET_JSON).exists()
                && !dir.join(holdfast_devnet::info::STATE_FILE).exists()
            {
                outln!("No devnet in {}; nothing to reset.", dir.display());
                return Ok(());
            }
            if !yes && !confirm_reset(&dir)? {
                outln!("Nothing was reset.");
                return Ok(());
            }
            let report = holdfast_devnet::reset(&dir).await?;
            if let Some(stopped) = &report.stopped {
                outln!("{}", stopped.message);
            }
            outln!("Reset the devnet in {}: removed {}.", report.dir.display(), report.removed.join(", "));
            outln!("The next `holdfast devnet up --dir {}` or `holdfast serve` starts a new chain.", dir.display());
            Ok(())
        }
        DevnetCommand::Services { dir } => {
            holdfast_devnet::run_services(&dir).await?;
            Ok(())
        }
    }
}

/// Asks on the terminal whether to reset the devnet in `dir`; refuses without a terminal (`--yes` is then needed).
fn confirm_reset(dir: &std::path::Path) -> anyhow::Result<bool> {
    use std::io::{BufRead as _, IsTerminal as _, Write as _};
    if !std::io::stdin().is_terminal() {
        anyhow::bail!(
            "refusing to reset the devnet in {} without asking: stdin is not a terminal (add --yes to reset anyway)",
            dir.display()
        );
    }
    let mut err = std::io::stderr();
    write!(
        err,
        "Reset the devnet in {}? Its chain (every balance and transaction on it) and its wallet key are deleted. \
         Type `reset` to confirm: ",
        dir.display()
    )?;
    err.flush()?;
    let mut answer = String::new();
    std::io::stdin().lock().read_line(&mut answer)?;
    Ok(answer.trim() == "reset")
}

/// `--onchain-limit ASSET=AMOUNT`, per day: `ETH`, `USDC` or `WETH` (the devnet's tokens) with the amount in decimal,
/// or a token address with the amount in base units (its decimals are not known before the chain runs).
fn parse_limit(text: &str) -> Result<holdfast_devnet::OnchainLimit, String> {
    let (asset, amount) = text.split_once('=').ok_or("expected ASSET=AMOUNT, e.g. USDC=100")?;
    let asset = asset.trim();
    let (asset, decimals): (String, u8) = match asset.to_ascii_uppercase().as_str() {
        "ETH" => ("ETH".to_owned(), 18),
        "USDC" => (holdfast_devnet::USDC.to_checksum(None), 6),
        "WETH" => (holdfast_devnet::WETH.to_checksum(None), 18),
        _ => {
            let address = holdfast_core::address::parse_address("--onchain-limit", asset).map_err(|e| e.message)?;
            (address.to_checksum(None), 0)
        }
    };
    let raw = holdfast_core::amount::to_base_units("--onchain-limit", amount.trim(), decimals, &asset)
        .map_err(|e| e.message)?;
    let period_secs = holdfast_devnet::account::DAY_SECS;
    Ok(holdfast_devnet::OnchainLimit { asset, amount: raw.to_string(), period_secs })
}

/// `100 USDC per day` for an on-chain limit of devnet.json (base units and an asset address otherwise).
fn limit_text(l: &holdfast_devnet::OnchainLimit) -> String {
    let (symbol, decimals) = match l.token() {
        Ok(t) if t.is_zero() => ("ETH".to_owned(), 18),
        Ok(t) if t == holdfast_devnet::USDC => ("USDC".to_owned(), 6),
        _ => (l.asset.clone(), 0),
    };
    let amount =
        l.base_units().map_or_else(|_| l.amount.clone(), |a| holdfast_core::amount::from_base_units(a, decimals));
    let period = match l.period_secs {
        86_400 => "per day".to_owned(),
        0 => "in total".to_owned(),
        s => format!("per {s} s"),
    };
    format!("{amount} {symbol} {period}")
}

#[cfg(test)]
mod tests {
    use super::parse_limit;

    #[test]
    fn a_limit_is_in_decimal_for_the_devnets_tokens_and_in_base_units_for_an_address() {
        let usdc = parse_limit("USDC=100").unwrap();
        assert_eq!((usdc.asset, usdc.amount), (holdfast_devnet::USDC.to_checksum(None), "100000000".to_owned()));
        assert_eq!(parse_limit("eth=0.05").unwrap().amount, "50000000000000000");
        let other = "0x000000000000000000000000000000000000bEEF";
        assert_eq!(parse_limit(&format!("{other}=1000000")).unwrap().amount, "1000000");
        let err = parse_limit(&format!("{other}=1.5")).unwrap_err();
        assert!(!err.is_empty(), "base units have no fraction");
        assert!(parse_limit("USDC").is_err());
    }
}

//! holdfast's one-command local devnet.
//!
//! `holdfast devnet up --dir DIR` ([`up`]) starts, on loopback and free ports:
//!
//! - an anvil node with the devnet's own chain id [`CHAIN_ID`] (1752132708, no public chain's: nothing signed on the
//!   devnet is valid on Base mainnet) ([`anvil`]: from `PATH`, or installed from npm),
//! - Base's USDC (an EIP-3009 `FiatTokenDevnet`), WETH (`WETH9`) and a swap venue at the 0x AllowanceHolder
//!   address, placed with `anvil_setCode` and seeded with 100 ETH, 300,000 USDC and 100 WETH ([`contracts`]),
//! - the services process ([`services`]): a quoter that answers the 0x Swap v2 `allowance-holder/quote` shape and
//!   a token price endpoint ([`quoter`]), both behind an x402 v2 paywall ([`paywall`], 0.01 USDC per request)
//!   whose facilitator really verifies and settles on the devnet chain ([`facilitator`], also served as the
//!   facilitator API under `/facilitator`),
//!
//! places Safe 1.4.1 and Safe's AllowanceModule at their canonical addresses and creates a smart account (a Safe
//! owned by the dev account, 10 ETH and 10,000 USDC) whose limited signer is a fresh burner key (0.05 ETH for gas;
//! key in `DIR/wallet.key`, mode 0600, never printed), with on-chain limits of 0.05 ETH and 100 USDC a day
//! ([`account`]; `UpOptions::account = None`, `--plain`: the key holds 10 ETH and 10,000 USDC itself), and writes
//! `DIR/holdfast.toml`, `DIR/presets.ron` ([`config`]) and `DIR/devnet.json` ([`info`]).
//! `holdfast devnet down --dir DIR` ([`down`]) stops exactly the processes it started. The chain is kept in
//! `DIR/chain-state.json` (anvil's `--state`, saved every 5 s and on stop): the next `up` resumes it with the same
//! wallet, and `holdfast devnet reset` ([`reset`]) starts over.
//!
//! [`TestDevnet`] is the same devnet in a temporary folder with the services (paywall included) in-process, for
//! integration tests.
//!
//! Unix: processes are identified through `/proc` on Linux and `ps` elsewhere (macOS; that path is tested on Linux,
//! never run on a Mac). anvil is `$HOLDFAST_ANVIL`, a recent
//! `anvil` on `PATH`, or this platform's npm package, installed alone into the cache ([`anvil`]).

pub mod account;
pub mod anvil;
pub mod config;
pub mod contracts;
pub mod error;
pub mod facilitator;
pub mod info;
pub mod lifecycle;
pub mod paywall;
mod process;
pub mod quoter;
pub mod services;
pub mod testnet;
pub mod users;
pub mod wallet;

pub use account::{ALLOWANCE_MODULE, ALLOWANCE_MODULE_KIND, OnchainLimit};
pub use anvil::{MIN_ANVIL_VERSION, anvil_path, cache_dir, find_anvil};
pub use contracts::{CHAIN_ID, LOCAL_CHAIN_IDS, NATIVE, USDC, VENUE, WALLET_ETH, WALLET_USDC, WETH, is_local_chain_id};
pub use error::DevnetError;
pub use facilitator::{FACILITATOR_ACCOUNT, Facilitator, facilitator_router};
pub use info::{DevnetInfo, DevnetState, read_info};
pub use lifecycle::{DownReport, Progress, StoppedProcess, UpOptions, down, is_up, public_chain_warning, up};
pub use paywall::{PAYEE, Paywall, PaywallConfig, QUOTE_PRICE};
pub use process::StopOutcome;
pub use quoter::{PriceRequest, QuoteError, QuoteRequest, QuoteState, build_price, build_quote, quote_router};
pub use services::{FACILITATOR_PATH, devnet_paywall, run_services, services_router};
pub use testnet::TestDevnet;
pub use users::{DevnetUser, Left, ResetReport, join, keep_running, reset};

//! [`TestDevnet`]: the same devnet as [`crate::up`], in a fresh temporary folder, with the services (the quoter
//! behind the x402 paywall, and the facilitator) served in-process on a tokio task — for integration tests of any
//! crate, without the holdfast binary.
//!
//! ```no_run
//! # async fn demo() -> Result<(), holdfast_devnet::DevnetError> {
//! let devnet = holdfast_devnet::TestDevnet::start().await?;
//! let usdc = devnet.balance_of(holdfast_devnet::USDC, devnet.wallet_address).await?;
//! assert_eq!(usdc, holdfast_devnet::WALLET_USDC);
//! # Ok(()) }
//! ```
//!
//! Starting one takes a few hundred milliseconds once anvil is installed, so each test can have its own. anvil is
//! killed when the value is dropped (or [`TestDevnet::stop`]ped); the folder is deleted with it.

use crate::anvil::{anvil_path, start_anvil_at};
use crate::config::write_config;
use crate::contracts::{self, CHAIN_ID, fund_wallet, place_and_seed};
use crate::error::DevnetError;
use crate::facilitator::Facilitator;
use crate::info::{
    ANVIL_LOG, AnvilProcess, CONFIG_FILE, ContractAddresses, DevnetInfo, DevnetState, KEY_FILE, ServicesProcess,
    WalletInfo, X402Info, write_info,
};
use crate::paywall::Paywall;
use crate::process::kill_child;
use crate::quoter::QuoteState;
use crate::services::{FACILITATOR_PATH, check_facilitator_account, devnet_paywall, services_router};
use crate::wallet::{create_key_file, load_key_file};
use alloy::primitives::{Address, U256};
use alloy::providers::DynProvider;
use alloy::signers::local::PrivateKeySigner;
use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::process::Child;
use std::sync::Arc;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// A throw-away devnet for tests: anvil as a child process, the services on a tokio task, files in a temp folder.
pub struct TestDevnet {
    /// anvil's JSON-RPC URL.
    pub rpc_url: String,
    /// The in-process services' base URL (`http://127.0.0.1:PORT`): the paywalled quoter.
    pub quoter_url: String,
    /// The in-process facilitator API (`{quoter_url}/facilitator`).
    pub facilitator_url: String,
    /// The temporary devnet folder (deleted on drop).
    pub dir: PathBuf,
    /// `dir/holdfast.toml`.
    pub config_path: PathBuf,
    /// The funded burner wallet's address.
    pub wallet_address: Address,
    /// The smart account the burner key signs for ([`TestDevnet::start_with_account`]); `None`: the key holds the
    /// funds.
    pub account: Option<Address>,
    /// `dir/wallet.key`.
    pub key_path: PathBuf,
    /// What `devnet.json` says (`services.pid` is this process's id: the quoter runs in-process).
    pub info: DevnetInfo,
    provider: DynProvider,
    dev: Address,
    paywall: Arc<Paywall>,
    anvil: Option<Child>,
    quoter: Option<JoinHandle<()>>,
    shutdown: Option<oneshot::Sender<()>>,
    _tmp: tempfile::TempDir,
}

impl std::fmt::Debug for TestDevnet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestDevnet")
            .field("rpc_url", &self.rpc_url)
            .field("quoter_url", &self.quoter_url)
            .field("dir", &self.dir)
            .field("wallet_address", &self.wallet_address)
            .finish_non_exhaustive()
    }
}

/// Kills anvil if start-up fails half-way.
struct AnvilGuard(Option<Child>);

impl Drop for AnvilGuard {
    fn drop(&mut self) {
        if let Some(child) = self.0.as_mut() {
            kill_child(child);
        }
    }
}

impl TestDevnet {
    /// Starts a devnet in a fresh temporary folder: anvil (installed first if needed), the contracts, a seeded
    /// venue, a funded burner wallet, `holdfast.toml`, `presets.ron`, `devnet.json`, and the quoter on a task of
    /// the current tokio runtime.
    pub async fn start() -> Result<Self, DevnetError> {
        Self::start_with(None, None).await
    }

    /// [`TestDevnet::start`] on a chain whose genesis block is stamped `timestamp` (seconds): anvil's clock starts
    /// there and runs on in real time, so every block — the set-up ones included — is stamped as far behind the wall
    /// clock as `timestamp` is (a lagging chain; `evm_setTime` to the wall clock then makes it an idle one whose
    /// latest block is that old).
    pub async fn start_with_genesis_timestamp(timestamp: u64) -> Result<Self, DevnetError> {
        Self::start_with(Some(timestamp), None).await
    }

    /// [`TestDevnet::start`] with the funds in a smart account (a Safe) whose limited signer is the burner key, with
    /// `limits` on chain (see [`crate::account`]): `holdfast.toml` names the account, and [`TestDevnet::account`] is
    /// set.
    pub async fn start_with_account(limits: Vec<crate::account::OnchainLimit>) -> Result<Self, DevnetError> {
        Self::start_with(None, Some(limits)).await
    }

    async fn start_with(
        genesis_timestamp: Option<u64>,
        account_limits: Option<Vec<crate::account::OnchainLimit>>,
    ) -> Result<Self, DevnetError> {
        let tmp = tempfile::Builder::new()
            .prefix("holdfast-devnet-")
            .tempdir()
            .map_err(|e| DevnetError::io("creating a temporary devnet folder", e))?;
        let dir = tmp.path().to_path_buf();
        let anvil_bin = anvil_path(&|line| eprintln!("holdfast-devnet: {line}")).await?;
        let anvil = start_anvil_at(&anvil_bin, &dir.join(ANVIL_LOG), false, CHAIN_ID, genesis_timestamp).await?;
        let anvil_pid = anvil.child.id();
        let mut guard = AnvilGuard(Some(anvil.child));
        let provider = anvil.provider;

        let dev = place_and_seed(&provider, &|_| {}).await?;
        check_facilitator_account(&provider).await?;
        let key_path = dir.join(KEY_FILE);
        let wallet_address = create_key_file(&key_path)?;
        let account = match &account_limits {
            Some(limits) => {
                Some(crate::account::set_up_account(&provider, dev, wallet_address, limits, &|_| {}).await?)
            }
            None => {
                fund_wallet(&provider, dev, wallet_address).await?;
                None
            }
        };

        let listener = tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .await
            .map_err(|e| DevnetError::PortUnavailable(format!("cannot bind the quoter to a loopback port: {e}")))?;
        let quoter_port = listener
            .local_addr()
            .map_err(|e| DevnetError::PortUnavailable(format!("cannot read the quoter's port: {e}")))?
            .port();
        let quoter_url = format!("http://127.0.0.1:{quoter_port}");
        write_config(&dir, anvil.port, CHAIN_ID, &quoter_url, account)?;
        let info = DevnetInfo {
            chain_id: CHAIN_ID,
            rpc_url: anvil.rpc_url.clone(),
            anvil: AnvilProcess { pid: anvil_pid, port: anvil.port },
            services: ServicesProcess { pid: std::process::id(), port: quoter_port, url: quoter_url.clone() },
            contracts: ContractAddresses::devnet(),
            wallet: WalletInfo {
                address: wallet_address,
                key_file: KEY_FILE.into(),
                account: account.map(|a| a.to_checksum(None)),
                signer: account.map(|_| wallet_address.to_checksum(None)),
                limits: account_limits.clone().unwrap_or_default(),
            },
            x402: Some(X402Info::for_services(&quoter_url)),
            config: CONFIG_FILE.into(),
            started_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            state: DevnetState::Up,
            genesis: None,
            already_up: false,
        };
        write_info(&dir, &info)?;

        let (shutdown, stop_rx) = oneshot::channel::<()>();
        let state = QuoteState::new(provider.clone());
        let paywall = devnet_paywall(&state);
        let app = services_router(state, Arc::clone(&paywall));
        let quoter = tokio::spawn(async move {
            let served = axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    let _ = stop_rx.await;
                })
                .await;
            if let Err(e) = served {
                eprintln!("holdfast-devnet: the in-process quoter stopped: {e}");
            }
        });

        Ok(Self {
            rpc_url: anvil.rpc_url,
            facilitator_url: format!("{quoter_url}{FACILITATOR_PATH}"),
            quoter_url,
            config_path: dir.join(CONFIG_FILE),
            dir,
            wallet_address,
            account,
            key_path,
            info,
            provider,
            dev,
            paywall,
            anvil: guard.0.take(),
            quoter: Some(quoter),
            shutdown: Some(shutdown),
            _tmp: tmp,
        })
    }

    /// A provider for the devnet (no wallet attached; anvil's dev accounts are unlocked).
    pub fn provider(&self) -> DynProvider {
        self.provider.clone()
    }

    /// The quoter's state, for calling [`crate::build_quote`] directly.
    pub fn quote_state(&self) -> QuoteState {
        QuoteState::new(self.provider.clone())
    }

    /// The paywall in front of the quoter (its terms and facilitator).
    pub fn paywall(&self) -> Arc<Paywall> {
        Arc::clone(&self.paywall)
    }

    /// The paywall's facilitator (verifies and settles on this devnet).
    pub fn facilitator(&self) -> Arc<Facilitator> {
        Arc::clone(&self.paywall.facilitator)
    }

    /// The burner wallet's signer, read back from the key file (tests execute quotes with it).
    pub fn signer(&self) -> Result<PrivateKeySigner, DevnetError> {
        load_key_file(&self.key_path)
    }

    /// The unlocked anvil dev account that paid for seeding.
    pub fn dev_account(&self) -> Address {
        self.dev
    }

    /// Puts the code deployed at `from` at `at` too (tests: a contract swapped for another).
    pub async fn replace_code(&self, at: Address, from: Address) -> Result<(), DevnetError> {
        use alloy::providers::Provider as _;
        use alloy::providers::ext::AnvilApi as _;
        let code = self.provider.get_code_at(from).await.map_err(|e| DevnetError::rpc("reading code", e))?;
        self.provider.anvil_set_code(at, code).await.map_err(|e| DevnetError::rpc("replacing code", e))
    }

    /// Adds `wei` to the ether balance of `addr`.
    pub async fn fund_eth(&self, addr: Address, wei: U256) -> Result<(), DevnetError> {
        contracts::add_eth(&self.provider, addr, wei).await
    }

    /// Mints `raw` USDC base units to `addr`.
    pub async fn mint_usdc(&self, addr: Address, raw: U256) -> Result<(), DevnetError> {
        contracts::mint_usdc(&self.provider, self.dev, addr, raw).await
    }

    /// Leaves an allowance of `amount` of `token` for `spender` standing on the burner wallet (a transaction of the
    /// wallet's, as if an earlier run had approved it).
    pub async fn approve_from_wallet(&self, token: Address, spender: Address, amount: U256) -> Result<(), DevnetError> {
        contracts::approve_as(&self.provider, self.wallet_address, token, spender, amount).await
    }

    /// The balance of `addr` in `token` ([`crate::NATIVE`] for ether).
    pub async fn balance_of(&self, token: Address, addr: Address) -> Result<U256, DevnetError> {
        contracts::balance_of(&self.provider, token, addr).await
    }

    /// Stops the quoter gracefully and kills anvil (dropping does the same without waiting for the quoter).
    pub async fn stop(mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(task) = self.quoter.take() {
            let _ = task.await;
        }
        if let Some(mut child) = self.anvil.take() {
            kill_child(&mut child);
        }
    }
}

impl Drop for TestDevnet {
    fn drop(&mut self) {
        if let Some(task) = self.quoter.take() {
            task.abort();
        }
        if let Some(mut child) = self.anvil.take() {
            kill_child(&mut child);
        }
    }
}

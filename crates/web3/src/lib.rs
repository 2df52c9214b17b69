//! # holdfast-web3
//!
//! The value-moving layer. Its tools take register and preset names only (invariant 1):
//!
//! - `local_burner_wallet` — the wallet's address and balances; the address is the intrinsic `wallet_address`.
//! - `x402_fetch` — fetches a configured preset; the URL is built by code from configuration and registers. When
//!   the server answers HTTP 402, the [`x402`] client pays it within the payment policy.
//! - `web3_tx` — sends only a validated swap quote from a register.
//! - `token_approve` — approves exactly the sell amount to the pinned spender when a quote needs it.
//! - `transfer` — sends a token to an address-book name or an address the user wrote.
//!
//! Every value-moving action — swap, approval, transfer, x402 payment — passes the [`kernel`], which owns the rules
//! (its module documentation names the one place of each). Around it: [`quote`] (the validator, run by the register
//! store on every write), [`policy`] (caps, fee caps, payment requirements, auto vs confirm), [`journal`]
//! (durability and atomic cap reservations), [`chain`] (the chain decides gas, fees and nonce; broadcast outcomes),
//! [`wallet`] (the key stays in), [`x402`] (the payment flow and its wire format).
//!
//! A front end installs the whole layer with one call, [`Web3::install`]: its register declarations and the quote
//! validator, the session hook, the tools and the background reconciliation.

pub mod chain;
pub mod config;
pub mod journal;
pub mod kernel;
pub mod policy;
pub mod presets;
pub mod quote;
pub mod report;
pub mod tools;
pub mod wallet;
pub mod x402;

pub use config::{WEB3_SECTIONS, Web3Config};
pub use journal::{EntryKind, EntryStatus, Journal, JournalEntry};
pub use kernel::Reconciled;
pub use wallet::{KeySource, Wallet, WalletError};

use crate::chain::Chain;
use crate::config::PriceFeeds;
use crate::policy::Policy;
use crate::presets::Presets;
use crate::quote::QuoteValidator;
use crate::wallet::WalletIntrinsics;
use alloy::primitives::Address;
use holdfast_core::config::{CoreConfig, NetworkConfig, NetworkTable};
use holdfast_core::registers::{QUOTE_MAX_AGE, RegisterDecl, RegisterDeclarations, ValueType, WriterRule};
use holdfast_core::{CoreServices, ErrorCode, RegistryError, SessionHook, ToolContext, ToolError, ToolRegistry};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

/// How long `web3_tx` waits for a receipt before reporting the transaction as pending.
pub const RECEIPT_TIMEOUT: Duration = Duration::from_secs(60);

/// The web3 layer: wallet, chains, presets, policy and journal, shared by every session.
pub struct Web3 {
    core: Arc<CoreConfig>,
    wallet: Arc<Wallet>,
    /// `[wallet] account`: the smart account the key signs for, limited on chain.
    account: Option<kernel::account::Account>,
    /// `[wallet] reviewed_modules`: other modules on the account the user checked give the key no power.
    reviewed_modules: Vec<alloy::primitives::Address>,
    /// One fund from the account at a time on each chain: what the signer already holds there is judged and topped
    /// up as one step (a slow chain does not hold up funds on another).
    fund_locks: parking_lot::Mutex<HashMap<u64, Arc<tokio::sync::Mutex<()>>>>,
    presets: Presets,
    policy: Policy,
    journal: Journal,
    price_feeds: HashMap<String, PriceFeeds>,
    address_book: HashMap<String, Address>,
    http: reqwest::Client,
    chains: Mutex<HashMap<String, Arc<Chain>>>,
    /// How long a send waits for its receipt, in milliseconds ([`RECEIPT_TIMEOUT`]; tests shorten it).
    receipt_timeout_ms: std::sync::atomic::AtomicU64,
    /// [`kernel::allowances::ABANDONED_AFTER`], in milliseconds (tests shorten it).
    abandoned_after_ms: std::sync::atomic::AtomicU64,
}

impl std::fmt::Debug for Web3 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Web3").field("wallet", &self.wallet).finish_non_exhaustive()
    }
}

/// The layer could not be built from configuration.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// A web3 section is invalid.
    #[error(transparent)]
    Config(#[from] holdfast_core::config::ConfigError),
    /// The wallet could not be loaded.
    #[error(transparent)]
    Wallet(#[from] WalletError),
    /// The journal or HTTP client could not be opened.
    #[error("{0}")]
    Runtime(#[from] ToolError),
}

/// The layer could not be installed into a runtime.
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    /// A tool name was taken.
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// `[registers.KEY]` names a register no layer declares.
    #[error("[registers.{0}]: `{0}` is not a declared register")]
    UnknownRegister(String),
    /// The context bank's scanner could not be built with the address book's names.
    #[error(transparent)]
    Scanner(#[from] holdfast_core::context_bank::ScannerBuildError),
}

impl InstallError {
    /// The stable code (`config_invalid` for a configuration mistake).
    pub fn code(&self) -> ErrorCode {
        match self {
            Self::Registry(_) | Self::Scanner(_) => ErrorCode::Internal,
            Self::UnknownRegister(_) => ErrorCode::ConfigInvalid,
        }
    }
}

impl Web3 {
    /// Builds the layer.
    pub fn new(
        core: Arc<CoreConfig>,
        config: Web3Config,
        wallet: Wallet,
        journal: Journal,
    ) -> Result<Arc<Self>, ToolError> {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(20))
            .connect_timeout(Duration::from_secs(5))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| ToolError::internal(format!("http client: {e}")))?;
        Ok(Arc::new(Self {
            core,
            wallet: Arc::new(wallet),
            account: config.wallet.account(),
            reviewed_modules: config.wallet.reviewed_modules(),
            fund_locks: parking_lot::Mutex::default(),
            presets: config.presets,
            policy: Policy::new(config.policy, config.payments),
            journal,
            price_feeds: config.price_feeds,
            address_book: config.address_book,
            http,
            chains: Mutex::new(HashMap::new()),
            receipt_timeout_ms: std::sync::atomic::AtomicU64::new(
                u64::try_from(RECEIPT_TIMEOUT.as_millis()).unwrap_or(u64::MAX),
            ),
            abandoned_after_ms: std::sync::atomic::AtomicU64::new(
                u64::try_from(kernel::allowances::ABANDONED_AFTER.as_millis()).unwrap_or(u64::MAX),
            ),
        }))
    }

    /// Builds the layer from a configuration document: the wallet from `[wallet]` (default key file
    /// `DATA_DIR/wallet.key`), the journal in `DATA_DIR/holdfast.db`. Without a data dir and without a configured key,
    /// the wallet is ephemeral and the journal lives in memory (a replay with built-in defaults touches no disk). A
    /// configured key without a data dir builds, but the kernel refuses every value-moving action
    /// ([`kernel::require_durable`]).
    pub fn from_document(
        doc: &holdfast_core::config::ConfigDocument,
        core: Arc<CoreConfig>,
    ) -> Result<Arc<Self>, BuildError> {
        let config = Web3Config::from_document(doc, &core)?;
        let data_dir = core.data_dir.clone();
        let default_key = data_dir.as_ref().map(|d| d.join("wallet.key"));
        let wallet = Wallet::load(&config.wallet, default_key.as_deref())
            .map_err(|e| config.wallet.locate(doc, &e).map_or(BuildError::Wallet(e), BuildError::Config))?;
        let journal = match &data_dir {
            Some(dir) => Journal::open(&dir.join("holdfast.db"))?,
            None => Journal::in_memory()?,
        };
        Ok(Self::new(core, config, wallet, journal)?)
    }

    /// Builds the layer as [`Web3::from_document`] does, with the journal in `storage` (the SQLite file, memory, or
    /// the PostgreSQL database that several instances share).
    pub async fn from_storage(
        doc: &holdfast_core::config::ConfigDocument,
        core: Arc<CoreConfig>,
        storage: &holdfast_store::Storage,
    ) -> Result<Arc<Self>, BuildError> {
        let config = Web3Config::from_document(doc, &core)?;
        let default_key = core.data_dir.as_ref().map(|d| d.join("wallet.key"));
        let wallet = Wallet::load(&config.wallet, default_key.as_deref())
            .map_err(|e| config.wallet.locate(doc, &e).map_or(BuildError::Wallet(e), BuildError::Config))?;
        let journal = Journal::open_storage(storage).await?;
        Ok(Self::new(core, config, wallet, journal)?)
    }

    /// Declares the registers this layer owns: `swap_quote` (a swap quote, written only by `x402_fetch` preset
    /// `swap_quote`, checked by the quote validator on every write), `token_price` (a price, never a quote),
    /// `transfer_token`, `transfer_amount` and `recipient_address` (the transfer's inputs). Model-derived quotes are
    /// accepted into the register; the kernel then always asks the user.
    pub fn declare_registers(decls: &mut RegisterDeclarations, networks: &NetworkTable) {
        decls.declare(
            RegisterDecl::new("swap_quote", ValueType::SwapQuote)
                .writer(WriterRule::preset("x402_fetch", "swap_quote"))
                .max_age(QUOTE_MAX_AGE)
                .allow_model()
                .validator(Arc::new(QuoteValidator::new(networks.clone()))),
        );
        decls.declare(
            RegisterDecl::new("token_price", ValueType::TokenPrice)
                .writer(WriterRule::preset("x402_fetch", "token_price"))
                .max_age(QUOTE_MAX_AGE)
                .allow_model(),
        );
        decls.declare(RegisterDecl::new("transfer_token", ValueType::Token).writer(WriterRule::tool("token_lookup")));
        decls.declare(
            RegisterDecl::new("transfer_amount", ValueType::BaseUnits)
                .writer(WriterRule::tool("to_raw_amount"))
                .writer(WriterRule::tool("register_set"))
                .allow_model(),
        );
        decls.declare(
            RegisterDecl::new("recipient_address", ValueType::Address)
                .writer(WriterRule::tool("context_address"))
                .writer(WriterRule::tool("register_set"))
                .allow_model(),
        );
    }

    /// Installs the layer into a runtime in one step: declares its registers on `services` (with the quote
    /// validator), adds the session hook that resolves `wallet_address`, registers `local_burner_wallet`,
    /// `x402_fetch`, `web3_tx`, `token_approve` and `transfer`, and — inside a Tokio runtime — starts the
    /// background reconciliation of the journal. A `[registers.KEY]` override that no layer declared is an error.
    pub fn install(
        self: &Arc<Self>,
        services: CoreServices,
        registry: &ToolRegistry,
    ) -> Result<CoreServices, InstallError> {
        let mut decls = (*services.declarations).clone();
        Self::declare_registers(&mut decls, &self.core.networks);
        if let Some(key) = decls.unclaimed_overrides().first() {
            return Err(InstallError::UnknownRegister((*key).to_owned()));
        }
        self.register_tools(registry)?;
        kernel::reconcile::spawn_background(self);
        // A message that names an address-book recipient is what lets its amount go there by itself.
        let services = services.with_recipient_names(self.address_book.keys().cloned())?;
        Ok(services.with_declarations(decls).with_hook(self.session_hook()))
    }

    /// A session hook that resolves `wallet_address` from this wallet.
    pub fn session_hook(self: &Arc<Self>) -> Arc<dyn SessionHook> {
        Arc::new(Web3SessionHook(Arc::clone(&self.wallet)))
    }

    /// Registers `local_burner_wallet`, `x402_fetch`, `web3_tx`, `token_approve` and `transfer`.
    fn register_tools(self: &Arc<Self>, registry: &ToolRegistry) -> Result<(), RegistryError> {
        registry.register(tools::LocalBurnerWallet(Arc::clone(self)))?;
        registry.register(tools::X402Fetch(Arc::clone(self)))?;
        registry.register(tools::Web3Tx(Arc::clone(self)))?;
        registry.register(tools::TokenApprove(Arc::clone(self)))?;
        registry.register(tools::Transfer(Arc::clone(self)))?;
        Ok(())
    }

    /// The wallet.
    pub fn wallet(&self) -> &Wallet {
        &self.wallet
    }

    /// The smart account the wallet's key signs for (`[wallet] account`), if any: its funds move, within the limits
    /// its module enforces on chain.
    pub fn account(&self) -> Option<kernel::account::Account> {
        self.account
    }

    /// Held while the kernel judges what the signer holds on the chain `chain_id` and funds what is missing
    /// ([`kernel::account`]).
    pub(crate) fn fund_lock(&self, chain_id: u64) -> Arc<tokio::sync::Mutex<()>> {
        Arc::clone(self.fund_locks.lock().entry(chain_id).or_default())
    }

    /// The journal.
    pub fn journal(&self) -> &Journal {
        &self.journal
    }

    /// The policy.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// The presets.
    pub fn presets(&self) -> &Presets {
        &self.presets
    }

    /// The core configuration.
    pub fn core(&self) -> &CoreConfig {
        &self.core
    }

    /// The HTTP client for presets.
    pub(crate) fn http(&self) -> &reqwest::Client {
        &self.http
    }

    pub(crate) fn receipt_timeout(&self) -> Duration {
        Duration::from_millis(self.receipt_timeout_ms.load(std::sync::atomic::Ordering::Relaxed))
    }

    /// Changes how long a send waits for its receipt (tests: a send left `pending` without waiting a minute).
    #[cfg(feature = "test-hooks")]
    pub fn set_receipt_timeout(&self, timeout: Duration) {
        let ms = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX);
        self.receipt_timeout_ms.store(ms, std::sync::atomic::Ordering::Relaxed);
    }

    /// The independent price feeds of `network`, if configured.
    pub fn price_feeds(&self, network: &str) -> Option<&PriceFeeds> {
        self.price_feeds.get(network)
    }

    /// The configured address book.
    pub fn address_book(&self) -> &HashMap<String, Address> {
        &self.address_book
    }

    /// The client of `network`, created on first use.
    pub fn chain(&self, network: &NetworkConfig) -> Result<Arc<Chain>, ToolError> {
        let mut chains = self.chains.lock();
        if let Some(c) = chains.get(&network.name) {
            return Ok(Arc::clone(c));
        }
        let chain = Arc::new(Chain::new(network)?);
        chains.insert(network.name.clone(), Arc::clone(&chain));
        Ok(chain)
    }

    /// Settles every unresolved journal entry against the chain (at start-up; the same runs in the background). Never
    /// signs anything new: see [`kernel::reconcile`].
    pub async fn reconcile(&self) -> Result<Vec<Reconciled>, ToolError> {
        kernel::reconcile::all(self, None).await
    }

    /// Checks every configured price feed against the chain, on every RPC node of its network: its `decimals()` and
    /// `description()` must be the pinned ones ([`kernel::price::verify_feeds`]). The front ends run it at start-up; a
    /// mismatch is `config_invalid` naming the feed and the node.
    pub async fn verify_price_feeds(&self) -> Result<(), ToolError> {
        for (name, feeds) in &self.price_feeds {
            let network = self.core.networks.resolve(name)?;
            kernel::price::verify_feeds(&*self.chain(network)?, name, feeds).await?;
        }
        Ok(())
    }

    /// Checks, on every network with an RPC node, that the smart account's on-chain limits bind the key holdfast signs
    /// with ([`kernel::account::AccountState::unbound`]: the key is no owner and no module of the account, the module
    /// is the audited AllowanceModule, any other module enabled on the account is named in `[wallet]
    /// reviewed_modules`); otherwise `config_invalid`, naming the network. The front ends run it at start-up (`holdfast
    /// doctor` shows the rest of the account's state). Nothing to check without an account.
    pub async fn verify_account(&self) -> Result<(), ToolError> {
        let Some(account) = self.account() else { return Ok(()) };
        let signer = self.wallet().address();
        let reviewed = &self.reviewed_modules;
        // Every network is checked, whatever an earlier one answered: one node that does not answer hides nothing
        // on another network.
        let mut unchecked = None;
        for network in self.core.networks.iter().filter(|n| !n.rpc_urls.is_empty()) {
            let state =
                async { kernel::account::inspect(&*self.chain(network)?, account, Some(signer), reviewed).await };
            match state.await {
                Ok(state) => {
                    if let Some(why) = state.unbound(account, Some(signer)) {
                        return Err(ToolError::new(ErrorCode::ConfigInvalid, format!("`{}`: {why}", network.name)));
                    }
                }
                // A configuration error stops the start at once; a node that does not answer is reported after
                // every other network was checked.
                Err(e) if e.code == ErrorCode::ConfigInvalid => return Err(e),
                Err(e) => {
                    unchecked.get_or_insert(e);
                }
            }
        }
        unchecked.map_or(Ok(()), Err)
    }

    /// Resets to zero every allowance of a token holdfast approved whose swap was abandoned (its newest approval older
    /// than a quote may live, no swap of it unsettled): what the background reconciliation runs every 15 s. Returns
    /// the reset transactions' hashes.
    pub async fn reset_abandoned_allowances(&self) -> Vec<String> {
        kernel::allowances::sweep(self).await
    }

    /// How old an approval must be before its swap counts as abandoned.
    pub(crate) fn abandoned_after(&self) -> Duration {
        Duration::from_millis(self.abandoned_after_ms.load(std::sync::atomic::Ordering::Relaxed))
    }

    /// Changes [`Web3::abandoned_after`] (tests: an abandoned approval without waiting for its quote to expire).
    #[cfg(feature = "test-hooks")]
    pub fn set_abandoned_after(&self, after: Duration) {
        let ms = u64::try_from(after.as_millis()).unwrap_or(u64::MAX);
        self.abandoned_after_ms.store(ms, std::sync::atomic::Ordering::Relaxed);
    }

    /// Every allowance above zero the wallet has standing for a pinned spender, on every configured network with an
    /// RPC node ([`kernel::allowances::standing`]).
    pub async fn standing_allowances(&self) -> Vec<kernel::allowances::StandingAllowance> {
        let mut out = Vec::new();
        for network in self.core.networks.iter().filter(|n| !n.rpc_urls.is_empty()) {
            out.extend(kernel::allowances::standing(self, network).await);
        }
        out
    }
}

struct Web3SessionHook(Arc<Wallet>);

impl SessionHook for Web3SessionHook {
    fn on_new_session(&self, ctx: &ToolContext) {
        ctx.registers.set_intrinsic_provider(Arc::new(WalletIntrinsics(Arc::clone(&self.0))));
    }
}

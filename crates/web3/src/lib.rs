//! # holdfast-web3
//!
//! The value-moving layer. Its tools take register and preset names only (invariant 1):
//!
//! - `local_burner_wallet` — the wallet's address and balances; the address is the intrinsic `wallet_address`.
//! - `x402_fetch` — fetches a configured preset; the URL is built by code from configuration and registers. When
//!   the server answers HTTP 402, the [`x402`] client pays it within the payment policy.
//! - `web3_tx` — sends only a validated swap quote from a register: re-validated, policy-checked, simulated with
//!   balance deltas, confirmed when needed, journaled before broadcast.
//! - `token_approve` — approves exactly the sell amount to the pinned spender when a quote needs it.
//!
//! Each rule has one home: [`quote`] (the validator), [`policy`] (caps, payment requirements and auto-vs-confirm),
//! [`journal`] (durability), [`chain`] (the chain decides gas, fees and nonce), [`wallet`] (the key stays in),
//! [`x402`] (the payment flow and its wire format).

pub mod chain;
pub mod config;
pub mod journal;
pub mod policy;
pub mod presets;
pub mod quote;
mod send;
pub mod tools;
pub mod wallet;
pub mod x402;

pub use config::{WEB3_SECTIONS, Web3Config};
pub use journal::{EntryKind, EntryStatus, Journal, JournalEntry};
pub use wallet::{KeySource, Wallet, WalletError};

use crate::chain::Chain;
use crate::journal::EntryUpdate;
use crate::policy::Policy;
use crate::presets::Presets;
use crate::quote::QuoteValidator;
use crate::wallet::WalletIntrinsics;
use alloy::primitives::{B256, Bytes};
use holdfast_core::config::{CoreConfig, NetworkConfig, NetworkTable};
use holdfast_core::registers::RegisterDeclarations;
use holdfast_core::{RegistryError, SessionHook, ToolContext, ToolError, ToolRegistry};
use parking_lot::Mutex;
use serde::Serialize;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

/// How long `web3_tx` waits for a receipt before reporting the transaction as pending.
pub const RECEIPT_TIMEOUT: Duration = Duration::from_secs(60);

/// The web3 layer: wallet, chains, presets, policy and journal, shared by every session.
pub struct Web3 {
    core: Arc<CoreConfig>,
    wallet: Arc<Wallet>,
    presets: Presets,
    policy: Policy,
    journal: Journal,
    http: reqwest::Client,
    chains: Mutex<HashMap<String, Arc<Chain>>>,
    receipt_timeout: Duration,
    payment_lock: tokio::sync::Mutex<()>,
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

/// What reconciliation did with one unresolved journal entry.
#[derive(Debug, Clone, Serialize)]
pub struct Reconciled {
    /// The entry.
    pub journal_id: String,
    /// Its new status.
    pub status: EntryStatus,
    /// What happened, for the operator.
    pub note: String,
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
            presets: config.presets,
            policy: Policy::new(config.policy, config.payments),
            journal,
            http,
            chains: Mutex::new(HashMap::new()),
            receipt_timeout: RECEIPT_TIMEOUT,
            payment_lock: tokio::sync::Mutex::new(()),
        }))
    }

    /// Builds the layer from a configuration document: the wallet from `[wallet]` (default key file
    /// `DATA_DIR/wallet.key`), the journal in `DATA_DIR/holdfast.db`. Without a data dir and without a configured key,
    /// the wallet is ephemeral and the journal lives in memory (a replay with built-in defaults touches no disk).
    pub fn from_document(
        doc: &holdfast_core::config::ConfigDocument,
        core: Arc<CoreConfig>,
    ) -> Result<Arc<Self>, BuildError> {
        let config = Web3Config::from_document(doc, &core)?;
        let data_dir = core.data_dir.clone();
        let default_key = data_dir.as_ref().map(|d| d.join("wallet.key"));
        let wallet = Wallet::load(&config.wallet, default_key.as_deref())?;
        let journal = match &data_dir {
            Some(dir) => Journal::open(&dir.join("holdfast.db"))?,
            None => Journal::in_memory()?,
        };
        Ok(Self::new(core, config, wallet, journal)?)
    }

    /// Installs the web3 rules on the register declarations: the quote validator on `swap_quote` (run by the store
    /// on every write), and model-tainted quotes accepted into the register (they then always need confirmation).
    pub fn install_declarations(decls: &mut RegisterDeclarations, networks: &NetworkTable) {
        decls.update("swap_quote", |d| {
            d.allow_model_origin = true;
            d.validator = Some(Arc::new(QuoteValidator::new(networks.clone())));
        });
        decls.update("token_price", |d| d.allow_model_origin = true);
    }

    /// A session hook that resolves `wallet_address` from this wallet.
    pub fn session_hook(self: &Arc<Self>) -> Arc<dyn SessionHook> {
        Arc::new(Web3SessionHook(Arc::clone(&self.wallet)))
    }

    /// Registers `local_burner_wallet`, `x402_fetch`, `web3_tx` and `token_approve`.
    pub fn register_tools(self: &Arc<Self>, registry: &ToolRegistry) -> Result<(), RegistryError> {
        registry.register(tools::LocalBurnerWallet(Arc::clone(self)))?;
        registry.register(tools::X402Fetch(Arc::clone(self)))?;
        registry.register(tools::Web3Tx(Arc::clone(self)))?;
        registry.register(tools::TokenApprove(Arc::clone(self)))?;
        Ok(())
    }

    /// The wallet.
    pub fn wallet(&self) -> &Wallet {
        &self.wallet
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
        self.receipt_timeout
    }

    /// Held from reading today's payments to journaling a new one, so concurrent payments respect the budget.
    pub(crate) fn payment_lock(&self) -> &tokio::sync::Mutex<()> {
        &self.payment_lock
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

    /// Settles every unresolved journal entry against the chain after a restart. Never signs anything: a mined
    /// transaction is recorded, a transaction whose nonce was used by another is marked dropped, and one that is
    /// still unknown is re-broadcast from its identical signed bytes (same hash, same nonce — it cannot be mined
    /// twice). A payment is confirmed when the chain shows its authorization used and failed once it expired
    /// unused; a payment is never re-sent.
    pub async fn reconcile(&self) -> Result<Vec<Reconciled>, ToolError> {
        let mut out = Vec::new();
        for entry in self.journal.unresolved().await? {
            if entry.kind == EntryKind::Payment {
                // A payment is settled when the chain shows its authorization used; expired and unused, never.
                if let Some(status) = x402::reconcile_payment(self, &entry).await? {
                    let note = match status {
                        EntryStatus::Confirmed => "payment settled while we were away",
                        _ => "payment authorization expired unsettled",
                    };
                    out.push(Reconciled { journal_id: entry.id, status, note: note.into() });
                }
                continue;
            }
            let network = self.core.networks.resolve(&entry.network)?.clone();
            let chain = self.chain(&network)?;
            let hash: Option<B256> = entry.tx_hash.as_deref().and_then(|h| h.parse().ok());
            if let Some(hash) = hash
                && let Some(receipt) = chain.receipt(hash).await?
            {
                let status = if receipt.status() { EntryStatus::Confirmed } else { EntryStatus::Reverted };
                let update = EntryUpdate {
                    block_number: receipt.block_number,
                    gas_used: Some(receipt.gas_used.to_string()),
                    ..Default::default()
                };
                self.journal.update(&entry.id, status, update).await?;
                out.push(Reconciled { journal_id: entry.id, status, note: "mined while we were away".into() });
                continue;
            }
            let from = holdfast_core::address::parse_address("from", &entry.from)?;
            let mined = chain.mined_nonce(from).await?;
            match (entry.nonce, entry.raw_tx()) {
                (Some(nonce), _) if nonce < mined => {
                    let update = EntryUpdate {
                        error: Some(format!("nonce {nonce} was used by another transaction")),
                        ..Default::default()
                    };
                    self.journal.update(&entry.id, EntryStatus::Dropped, update).await?;
                    out.push(Reconciled {
                        journal_id: entry.id,
                        status: EntryStatus::Dropped,
                        note: "nonce already used; never mined".into(),
                    });
                }
                (_, Some(raw)) => {
                    let raw: Bytes =
                        raw.parse().map_err(|_| ToolError::internal("journal holds unreadable signed bytes"))?;
                    chain.rebroadcast(&raw).await?;
                    self.journal.update(&entry.id, EntryStatus::Pending, EntryUpdate::default()).await?;
                    out.push(Reconciled {
                        journal_id: entry.id,
                        status: EntryStatus::Pending,
                        note: "re-broadcast the identical signed transaction".into(),
                    });
                }
                (_, None) => {
                    let update =
                        EntryUpdate { error: Some("no signed bytes were journaled".into()), ..Default::default() };
                    self.journal.update(&entry.id, EntryStatus::Failed, update).await?;
                    out.push(Reconciled {
                        journal_id: entry.id,
                        status: EntryStatus::Failed,
                        note: "nothing to re-send".into(),
                    });
                }
            }
        }
        Ok(out)
    }
}

struct Web3SessionHook(Arc<Wallet>);

impl SessionHook for Web3SessionHook {
    fn on_new_session(&self, ctx: &ToolContext) {
        ctx.registers.set_intrinsic_provider(Arc::new(WalletIntrinsics(Arc::clone(&self.0))));
    }
}

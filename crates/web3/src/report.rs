//! What a wallet user looks at first, read for the UI and the API: the balances of the configured tokens, today's
//! spending against each daily cap and the x402 budget, and a mined transaction as a page (for networks without a
//! block explorer, such as the devnet).
//!
//! Everything here reads; nothing signs. Balances come from the chain and spending from the journal, through the same
//! [`crate::journal::Journal::spent_today`] the kernel reserves against, so the gauge shows exactly what the next
//! action will be checked with.

use crate::Web3;
use crate::chain::IERC20;
use crate::journal::{EntryKind, JournalEntry};
use alloy::primitives::{Address, B256, U256};
use alloy::sol_types::SolEvent;
use holdfast_core::amount::from_base_units;
use holdfast_core::config::{NATIVE_TOKEN_ADDRESS, NetworkConfig, TokenInfo};
use holdfast_core::{ErrorCode, ToolError};
use serde::Serialize;

/// One token's balance.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Holding {
    /// Symbol (`ETH`, `USDC`).
    pub symbol: String,
    /// Contract address (the native placeholder for the native token), checksummed.
    pub address: String,
    /// Decimals.
    pub decimals: u8,
    /// Balance in base units, when the node answered.
    pub balance: Option<String>,
    /// Balance in the token's units (`0.5`), when the node answered.
    pub balance_human: Option<String>,
    /// Why the balance is missing.
    pub error: Option<String>,
}

/// The smart account the wallet's key signs for (`[wallet] account`): its balances and what remains of each on-chain
/// limit, as the chain holds them now.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct AccountMoney {
    /// The account (a Safe), checksummed: whose funds move.
    pub address: String,
    /// The module that limits the key on it (Safe's AllowanceModule), checksummed.
    pub module: String,
    /// The account's balances of the configured tokens.
    pub holdings: Vec<Holding>,
    /// Per configured token: the on-chain limit and what remains of it this period.
    pub limits: Vec<OnchainLimitView>,
}

/// One on-chain limit, as the module reads it now.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct OnchainLimitView {
    /// Symbol.
    pub symbol: String,
    /// The limit per period, base units (`0`: none set, nothing may move), when the node answered.
    pub limit: Option<String>,
    /// The limit in the token's units.
    pub limit_human: Option<String>,
    /// What remains of it now, base units.
    pub remaining: Option<String>,
    /// What remains in the token's units.
    pub remaining_human: Option<String>,
    /// The period in minutes (`0`: the limit does not reset).
    pub period_minutes: Option<u64>,
    /// Why the limit is missing.
    pub error: Option<String>,
}

/// Today's (UTC) spending of one asset against its daily cap.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct SpendGauge {
    /// `transactions` (swaps and transfers share the cap) or `x402` (the payment budget).
    pub budget: SpendBudget,
    /// Symbol.
    pub symbol: String,
    /// Decimals.
    pub decimals: u8,
    /// Spent today, base units (live entries: reserved, signed, pending, unknown, stalled and confirmed).
    pub spent: String,
    /// Spent today in the token's units.
    pub spent_human: String,
    /// The daily cap in base units; `None` means the asset may not move at all (deny by default).
    pub cap: Option<String>,
    /// The daily cap in the token's units.
    pub cap_human: Option<String>,
}

/// Which daily limit a gauge measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SpendBudget {
    /// Swaps and transfers (`[policy.NETWORK]` `*_per_day`).
    Transactions,
    /// x402 payments (`[payments.NETWORK] daily_budget`).
    X402,
}

/// A network's money view.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct NetworkMoney {
    /// Canonical name.
    pub network: String,
    /// Display name.
    pub display_name: String,
    /// Chain id.
    pub chain_id: u64,
    /// Block explorer base URL, when configured.
    pub explorer: Option<String>,
    /// The configured tokens' balances: the native token, the policy's tokens and the payment assets.
    pub holdings: Vec<Holding>,
    /// Today's spending against each cap.
    pub spend: Vec<SpendGauge>,
    /// Allowances above zero the wallet has standing for the network's pinned spender (an approval whose swap has
    /// not happened yet; the kernel resets abandoned ones to zero).
    pub allowances: Vec<crate::kernel::allowances::StandingAllowance>,
    /// The smart account the key signs for, with its on-chain limits (`[wallet] account`); absent for a plain
    /// wallet.
    pub account: Option<AccountMoney>,
}

/// `read` on `chain` within [`NODE_READ_TIMEOUT`]; a chain that could not be reached, or no answer in time, is the
/// error.
async fn bounded<T>(
    chain: &Result<std::sync::Arc<crate::chain::Chain>, ToolError>,
    read: impl AsyncFnOnce(&crate::chain::Chain) -> Result<T, ToolError>,
) -> Result<T, ToolError> {
    match chain {
        Ok(chain) => tokio::time::timeout(NODE_READ_TIMEOUT, read(chain))
            .await
            .unwrap_or_else(|_| Err(ToolError::new(ErrorCode::UpstreamError, "the node did not answer in time"))),
        Err(e) => Err(e.clone()),
    }
}

/// Reads `owner`'s balance of `t` within [`NODE_READ_TIMEOUT`]; a failure leaves the balance empty with the reason.
async fn holding(
    chain: &Result<std::sync::Arc<crate::chain::Chain>, ToolError>,
    t: &TokenInfo,
    owner: Address,
) -> Holding {
    let read = bounded(chain, async |c| c.balance(t.address, owner).await).await;
    Holding {
        symbol: t.symbol.clone(),
        address: t.address.to_checksum(None),
        decimals: t.decimals,
        balance: read.as_ref().ok().map(ToString::to_string),
        balance_human: read.as_ref().ok().map(|v| from_base_units(*v, t.decimals)),
        error: read.err().map(|e| e.message),
    }
}

/// Reads the account's on-chain limit for `t` within [`NODE_READ_TIMEOUT`].
async fn onchain_limit(
    chain: &Result<std::sync::Arc<crate::chain::Chain>, ToolError>,
    account: crate::kernel::account::Account,
    signer: Address,
    t: &TokenInfo,
) -> OnchainLimitView {
    let read = bounded(chain, async |c| crate::kernel::account::read_limit(c, account, signer, t.address).await).await;
    let ok = read.as_ref().ok();
    OnchainLimitView {
        symbol: t.symbol.clone(),
        limit: ok.map(|l| l.limit.to_string()),
        limit_human: ok.map(|l| from_base_units(l.limit, t.decimals)),
        remaining: ok.map(|l| l.remaining.to_string()),
        remaining_human: ok.map(|l| from_base_units(l.remaining, t.decimals)),
        period_minutes: ok.map(|l| l.period_minutes),
        error: read.err().map(|e| e.message),
    }
}

/// A mined transaction of the journal, read back from the chain.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct TxPage {
    /// Transaction hash.
    pub tx_hash: String,
    /// `success`, `reverted`, or `not_mined` (no receipt yet).
    pub status: String,
    /// Block number.
    pub block_number: Option<u64>,
    /// Sender.
    pub from: Option<String>,
    /// Recipient or contract.
    pub to: Option<String>,
    /// Gas used.
    pub gas_used: Option<u64>,
    /// Effective gas price, wei.
    pub effective_gas_price: Option<String>,
    /// The fee paid in the native token's units.
    pub fee: Option<String>,
    /// The ERC-20 `Transfer` events the transaction emitted, decoded with the token table.
    pub transfers: Vec<TokenTransfer>,
    /// Logs the page did not decode.
    pub other_logs: usize,
}

/// One decoded ERC-20 `Transfer` event.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct TokenTransfer {
    /// The token contract.
    pub token: String,
    /// Its symbol when the token table knows it.
    pub symbol: Option<String>,
    /// Sender.
    pub from: String,
    /// Recipient.
    pub to: String,
    /// Amount in the token's units when its decimals are known, else base units.
    pub amount: String,
}

impl Web3 {
    /// The tokens a network's wallet view shows: the native token, then the policy's tokens, then the payment assets,
    /// each once, as the token table knows them.
    fn configured_tokens(&self, network: &NetworkConfig) -> Vec<TokenInfo> {
        let tokens = &self.core().tokens;
        let mut out: Vec<TokenInfo> = Vec::new();
        let mut push = |t: Option<&TokenInfo>| {
            if let Some(t) = t
                && !out.iter().any(|o| o.address == t.address)
            {
                out.push(t.clone());
            }
        };
        push(tokens.lookup(&network.name, &network.native_symbol).ok());
        if let Some(policy) = self.policy().network(&network.name) {
            let mut symbols: Vec<&String> = policy.tokens.keys().collect();
            symbols.sort();
            for symbol in symbols {
                push(tokens.lookup(&network.name, symbol).ok());
            }
        }
        if let Some(payments) = self.policy().payments(&network.name) {
            for t in &payments.assets {
                push(Some(t));
            }
        }
        out
    }

    /// Balances and today's spending on every configured network. Every balance is read at once, each within
    /// 10 s, so a slow node delays the view by that much at most. A node that fails leaves its
    /// balances empty with the reason; the spending comes from the journal and is always there.
    pub async fn money(&self) -> Result<Vec<NetworkMoney>, ToolError> {
        let views = self.core().networks.iter().map(|network| self.network_money(network));
        futures::future::try_join_all(views).await
    }

    async fn network_money(&self, network: &NetworkConfig) -> Result<NetworkMoney, ToolError> {
        let owner = self.wallet().address();
        let tokens = self.configured_tokens(network);
        let chain = self.chain(network);
        let reads = tokens.iter().map(|t| holding(&chain, t, owner));
        let account = async {
            let account = self.account()?;
            let holdings = futures::future::join_all(tokens.iter().map(|t| holding(&chain, t, account.address)));
            let limits = futures::future::join_all(tokens.iter().map(|t| onchain_limit(&chain, account, owner, t)));
            let (holdings, limits) = tokio::join!(holdings, limits);
            Some(AccountMoney {
                address: account.address.to_checksum(None),
                module: account.module.to_checksum(None),
                holdings,
                limits,
            })
        };
        let allowances = async {
            tokio::time::timeout(NODE_READ_TIMEOUT, crate::kernel::allowances::standing(self, network))
                .await
                .unwrap_or_default()
        };
        let (holdings, allowances, account) = tokio::join!(futures::future::join_all(reads), allowances, account);
        let spend = self.spend_today(network, &tokens).await?;
        Ok(NetworkMoney {
            network: network.name.clone(),
            display_name: network.display_name.clone(),
            chain_id: network.chain_id,
            explorer: network.explorer.clone(),
            holdings,
            spend,
            allowances,
            account,
        })
    }

    async fn spend_today(&self, network: &NetworkConfig, tokens: &[TokenInfo]) -> Result<Vec<SpendGauge>, ToolError> {
        let from = self.wallet().address().to_checksum(None);
        let journal = self.journal();
        let mut gauges = Vec::new();
        let gauge = |budget, t: &TokenInfo, spent: U256, cap: Option<U256>| SpendGauge {
            budget,
            symbol: t.symbol.clone(),
            decimals: t.decimals,
            spent: spent.to_string(),
            spent_human: from_base_units(spent, t.decimals),
            cap: cap.map(|c| c.to_string()),
            cap_human: cap.map(|c| from_base_units(c, t.decimals)),
        };
        if let Some(policy) = self.policy().network(&network.name) {
            for t in tokens {
                let limits =
                    if t.address == NATIVE_TOKEN_ADDRESS { Some(&policy.native) } else { policy.tokens.get(&t.symbol) };
                let Some(limits) = limits else { continue };
                let asset = t.address.to_checksum(None);
                let spent = journal.spent_today(network.chain_id, &from, &asset, EntryKind::Swap.cap_group()).await?;
                gauges.push(gauge(SpendBudget::Transactions, t, spent, limits.per_day));
            }
        }
        if let Some(payments) = self.policy().payments(&network.name) {
            for t in &payments.assets {
                let asset = t.address.to_checksum(None);
                let spent =
                    journal.spent_today(network.chain_id, &from, &asset, EntryKind::Payment.cap_group()).await?;
                gauges.push(gauge(SpendBudget::X402, t, spent, payments.daily_budget.get(&t.symbol).copied()));
            }
        }
        Ok(gauges)
    }

    /// The chain's record of a journal entry's transaction (for a payment: its settlement transaction), decoded:
    /// status, block, gas, fee and the token transfers it made. `not_found` when the entry has no transaction hash.
    pub async fn tx_page(&self, entry: &JournalEntry) -> Result<TxPage, ToolError> {
        let hash_text = entry.tx_hash.as_deref().ok_or_else(|| {
            ToolError::new(ErrorCode::NotFound, format!("journal entry {} has no transaction", entry.id))
        })?;
        let hash: B256 = hash_text.parse().map_err(|_| {
            ToolError::new(ErrorCode::Internal, format!("journal entry {}: bad transaction hash", entry.id))
        })?;
        // The chain the entry was signed for, by id: a network renamed or repointed since must not answer for it.
        let network = self.core().networks.by_chain_id(entry.chain_id).ok_or_else(|| {
            ToolError::new(
                ErrorCode::NotFound,
                format!("journal entry {}: chain id {} is no longer configured", entry.id, entry.chain_id),
            )
        })?;
        let receipt = tokio::time::timeout(NODE_READ_TIMEOUT, self.chain(network)?.receipt(hash))
            .await
            .map_err(|_| ToolError::new(ErrorCode::UpstreamError, "the node did not answer in time"))??;
        if let Some(r) = &receipt
            && r.transaction_hash != hash
        {
            return Err(ToolError::new(
                ErrorCode::UpstreamError,
                format!("the node answered the receipt of {} for {hash_text}", r.transaction_hash),
            ));
        }
        let Some(receipt) = receipt else {
            // Sent on a chain the node no longer shows (a devnet that began anew): not "not mined" there, gone.
            let recorded = entry.genesis.as_deref().and_then(|g| g.parse::<B256>().ok());
            let reset = match recorded.filter(|_| holdfast_core::config::is_local_chain_id(entry.chain_id)) {
                Some(recorded) => {
                    let now = tokio::time::timeout(NODE_READ_TIMEOUT, self.chain(network)?.genesis_now()).await;
                    matches!(now, Ok(Ok(now)) if now != recorded)
                }
                None => false,
            };
            return Ok(TxPage {
                tx_hash: hash_text.to_owned(),
                status: if reset { "chain_reset" } else { "not_mined" }.into(),
                block_number: None,
                from: None,
                to: None,
                gas_used: None,
                effective_gas_price: None,
                fee: None,
                transfers: Vec::new(),
                other_logs: 0,
            });
        };
        let native_decimals =
            self.core().tokens.lookup(&network.name, &network.native_symbol).map_or(18, |t| t.decimals);
        let fee = U256::from(receipt.gas_used) * U256::from(receipt.effective_gas_price);
        let mut transfers = Vec::new();
        let mut other_logs = 0;
        for log in receipt.inner.logs() {
            match IERC20::Transfer::decode_log_data(log.data()) {
                Ok(t) => {
                    let token: Address = log.address();
                    let known = self.core().tokens.by_address(&network.name, token);
                    transfers.push(TokenTransfer {
                        token: token.to_checksum(None),
                        symbol: known.map(|k| k.symbol.clone()),
                        from: t.from.to_checksum(None),
                        to: t.to.to_checksum(None),
                        amount: known.map_or_else(|| t.value.to_string(), |k| from_base_units(t.value, k.decimals)),
                    });
                }
                Err(_) => other_logs += 1,
            }
        }
        Ok(TxPage {
            tx_hash: hash_text.to_owned(),
            status: if receipt.status() { "success" } else { "reverted" }.into(),
            block_number: receipt.block_number,
            from: Some(receipt.from.to_checksum(None)),
            to: receipt.to.map(|a| a.to_checksum(None)),
            gas_used: Some(receipt.gas_used),
            effective_gas_price: Some(receipt.effective_gas_price.to_string()),
            fee: Some(format!("{} {}", from_base_units(fee, native_decimals), network.native_symbol)),
            transfers,
            other_logs,
        })
    }
}

/// How long one node read of the money views (a balance, a receipt) may take before it is given up.
const NODE_READ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

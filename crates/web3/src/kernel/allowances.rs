//! Allowances never left standing: what the wallet has approved and to whom ([`standing`], shown by `/api/wallet`
//! and `holdfast doctor`), and the reset of an approval whose swap was abandoned (`sweep`, `reset_abandoned`).
//!
//! An approval is exactly one swap's sell amount for the network's pinned spender ([`super::approve`]). When that
//! swap does not happen, the allowance would stay on chain and a later swap could ride on it, so the kernel sets it
//! back to zero with a transaction of its own (journaled `reset`, through the same pipeline as every transaction):
//!
//! - at once, when the swap is refused (its calldata, its simulation or the independent price);
//! - otherwise when its quote can no longer be used — denied by the user, expired, never sent: a token approved by
//!   holdfast whose allowance is still above zero once its newest approval is older than a quote may live
//!   ([`ABANDONED_AFTER`]) and no swap selling it is still unsettled. The background reconciliation looks every
//!   15 s ([`super::reconcile::spawn_background`]).
//!
//! Allowances holdfast never made (the token has no approval in the journal) are shown, not touched.

use super::approve::reset;
use crate::Web3;
use crate::journal::{EntryKind, EntryStatus, JournalEntry};
use alloy::primitives::{Address, U256};
use holdfast_core::ToolError;
use holdfast_core::config::{NetworkConfig, TokenInfo};
use holdfast_core::registers::QUOTE_MAX_AGE;
use serde::Serialize;
use std::time::Duration;

/// An approval older than this whose swap did not happen is abandoned: its quote can no longer be used.
pub const ABANDONED_AFTER: Duration = Duration::from_secs(QUOTE_MAX_AGE.as_secs() + 30);
/// How far back the journal's approvals are looked at.
const APPROVALS_LOOKED_AT: usize = 200;

/// One allowance the wallet has standing.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct StandingAllowance {
    /// Network.
    pub network: String,
    /// Token symbol.
    pub token: String,
    /// Token address (EIP-55).
    pub token_address: String,
    /// The spender (EIP-55).
    pub spender: String,
    /// The allowance in base units, when the node answered.
    pub amount: Option<String>,
    /// The allowance in the token's units.
    pub amount_human: Option<String>,
    /// Why the allowance could not be read.
    pub error: Option<String>,
}

/// Every allowance above zero the wallet has given a pinned spender on `network`, for the tokens of the token table
/// (and the ones that could not be read).
pub async fn standing(web3: &Web3, network: &NetworkConfig) -> Vec<StandingAllowance> {
    let Ok(chain) = web3.chain(network) else { return Vec::new() };
    standing_on(&chain, &web3.core().tokens, web3.wallet().address()).await
}

/// [`standing`] for `owner`, over `chain`, for the ERC-20 tokens of `tokens` on its network: what `holdfast doctor`
/// reads without building the whole layer.
pub async fn standing_on(
    chain: &crate::chain::Chain,
    tokens: &holdfast_core::config::TokenTable,
    owner: Address,
) -> Vec<StandingAllowance> {
    let network = chain.network();
    let Some(spender) = network.contracts.allowance_spender else { return Vec::new() };
    let erc20: Vec<TokenInfo> =
        tokens.iter().filter(|t| t.network == network.name && !t.is_native()).cloned().collect();
    let reads = erc20.into_iter().map(|t| async move {
        let call = crate::chain::IERC20::allowanceCall { owner, spender };
        let got = chain.call(t.address, alloy::sol_types::SolCall::abi_encode(&call).into()).await;
        (t, got)
    });
    let mut out = Vec::new();
    for (token, got) in futures::future::join_all(reads).await {
        let decoded = got.and_then(|out| {
            if out.is_empty() {
                // No contract at the token's address on this chain (a devnet holds only some of the table).
                return Ok(U256::ZERO);
            }
            <crate::chain::IERC20::allowanceCall as alloy::sol_types::SolCall>::abi_decode_returns(&out)
                .map_err(|e| ToolError::new(holdfast_core::ErrorCode::UpstreamError, format!("allowance: {e}")))
        });
        let (amount, error) = match decoded {
            Ok(a) if a.is_zero() => continue,
            Ok(a) => (Some(a), None),
            Err(e) => (None, Some(e.message)),
        };
        out.push(StandingAllowance {
            network: network.name.clone(),
            token: token.symbol.clone(),
            token_address: token.address.to_checksum(None),
            spender: spender.to_checksum(None),
            amount: amount.map(|a| a.to_string()),
            amount_human: amount.map(|a| holdfast_core::amount::from_base_units(a, token.decimals)),
            error,
        });
    }
    out
}

/// Whether a swap selling `token` on the chain `chain_id` is still unsettled (it may yet consume the allowance).
fn swap_in_flight(unresolved: &[JournalEntry], chain_id: u64, token: Address) -> bool {
    let token = token.to_checksum(None);
    unresolved.iter().any(|e| e.kind == EntryKind::Swap && e.chain_id == chain_id && e.asset == token)
}

/// The newest live approval (any session) of `token` on the chain `chain_id` (whatever its network is called now).
fn newest_approval(approvals: &[JournalEntry], chain_id: u64, token: Address) -> Option<&JournalEntry> {
    let token = token.to_checksum(None);
    approvals.iter().find(|a| a.chain_id == chain_id && a.asset == token && a.status.is_live())
}

/// Resets `token`'s allowance on `network` at once when one stands and no swap selling it is in flight: a swap of
/// `session` selling it was refused. An approval another session made for its own swap, and that swap may still use,
/// is left to it. Best effort; what failed is logged (the background sweep tries again).
pub(crate) async fn reset_abandoned(web3: &Web3, session: &str, network: &NetworkConfig, token: Address) {
    let approvals = web3.journal().list(None, Some(EntryKind::Approval), APPROVALS_LOOKED_AT).await.unwrap_or_default();
    if let Some(a) = newest_approval(&approvals, network.chain_id, token)
        && a.session_id != session
        && age(a) < web3.abandoned_after()
    {
        return;
    }
    if let Err(e) = sweep_token(web3, network, token, None).await {
        tracing::warn!(network = %network.name, %token, error = %e.message, "allowance reset failed; retried in the background");
    }
}

fn age(e: &JournalEntry) -> std::time::Duration {
    (chrono::Utc::now() - e.created_at).to_std().unwrap_or_default()
}

/// Resets every allowance of a token holdfast approved whose swap was abandoned (see the module documentation).
/// Returns what was reset.
pub(crate) async fn sweep(web3: &Web3) -> Vec<String> {
    let Ok(approvals) = web3.journal().list(None, Some(EntryKind::Approval), APPROVALS_LOOKED_AT).await else {
        return Vec::new();
    };
    let mut done = Vec::new();
    let mut seen: Vec<(u64, String)> = Vec::new();
    // Newest first: the first live approval of each token is its newest.
    for a in approvals.iter().filter(|a| a.status.is_live()) {
        let key = (a.chain_id, a.asset.clone());
        if seen.contains(&key) {
            continue;
        }
        seen.push(key);
        // Still being sent, or its quote may still be used: not abandoned.
        if a.status != EntryStatus::Confirmed || age(a) < web3.abandoned_after() {
            continue;
        }
        let (Ok(network), Ok(token)) =
            (super::reconcile::network_of(web3, a), holdfast_core::address::parse_address("asset", &a.asset))
        else {
            continue;
        };
        match sweep_token(web3, &network, token, Some(a)).await {
            Ok(Some(hash)) => done.push(hash),
            Ok(None) => {}
            Err(e) => {
                tracing::warn!(network = %network.name, token = %a.asset, error = %e.message, "allowance reset failed")
            }
        }
    }
    done
}

/// How many resets of `token` on the chain `chain_id` today (UTC): past [`RESETS_BEFORE_ASKING`], approvals of it
/// wait for the user, so a quote server that keeps getting its swaps refused cannot make the wallet pay for approvals
/// and resets without end.
pub(crate) async fn resets_today(web3: &Web3, chain_id: u64, token: Address) -> usize {
    let token = token.to_checksum(None);
    let today = chrono::Utc::now().date_naive();
    let resets = web3.journal().list(None, Some(EntryKind::Reset), APPROVALS_LOOKED_AT).await.unwrap_or_default();
    resets.iter().filter(|r| r.chain_id == chain_id && r.asset == token && r.created_at.date_naive() == today).count()
}

/// Resets of one token in a day after which its approvals wait for the user.
pub const RESETS_BEFORE_ASKING: usize = 3;

/// Resets of one token in a day after which the sweep sends no more that day (it logs a warning instead). A node
/// that answers a different non-zero allowance on each pass would otherwise have the wallet pay for a reset every
/// pass; honest use stays far below this, as approvals wait for the user after [`RESETS_BEFORE_ASKING`].
pub const RESETS_PER_DAY: usize = 2 * RESETS_BEFORE_ASKING;

/// Resets `token`'s allowance for the pinned spender on `network` when it is above zero and no swap selling it is in
/// flight. `Some(hash)` when a reset was sent.
async fn sweep_token(
    web3: &Web3,
    network: &NetworkConfig,
    token: Address,
    approval: Option<&JournalEntry>,
) -> Result<Option<String>, ToolError> {
    let Some(spender) = network.contracts.allowance_spender else { return Ok(None) };
    let Some(info) = web3.core().tokens.by_address(&network.name, token).cloned() else { return Ok(None) };
    let chain = web3.chain(network)?;
    let allowance = chain.allowance(token, web3.wallet().address(), spender).await?;
    if allowance == U256::ZERO {
        return Ok(None);
    }
    let unresolved = web3.journal().unresolved().await?;
    if swap_in_flight(&unresolved, network.chain_id, token) {
        return Ok(None);
    }
    if resets_today(web3, network.chain_id, token).await >= RESETS_PER_DAY {
        tracing::warn!(
            network = %network.name, token = %info.symbol, %allowance,
            "an allowance still stands after today's resets; no more are sent today (check the RPC nodes)"
        );
        return Ok(None);
    }
    let occasion = match approval {
        Some(a) => format!("{}:{allowance}", a.id),
        None => format!("refused swap {}:{allowance}", holdfast_core::confirm::random_id()),
    };
    let sent = reset(web3, network, &info, spender, &occasion).await?;
    tracing::info!(
        network = %network.name, token = %info.symbol, journal_id = %sent.journal_id, tx_hash = %sent.hash,
        "allowance reset to zero: its swap was abandoned"
    );
    Ok(Some(sent.hash))
}

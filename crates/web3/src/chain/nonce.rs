//! What the chain shows about a nonce: the proof the kernel needs before a journaled transaction may count as never
//! sent (its reservation released) or as replaced by another one.
//!
//! A node's answer to a broadcast ("nonce too low", "already known", an internal error) is only the node's word:
//! a node can forward a transaction and then answer that it refused it. So the kernel releases nothing on such an
//! answer; it asks the chain where the entry's nonce stands ([`Chain::nonce_use`]):
//!
//! - **unused**: neither the latest nor the pending transaction count of the account has passed the nonce — nothing
//!   with this nonce is mined or waiting, so this transaction is not out there;
//! - **used by a hash**: the latest count has passed it, and the block where the count passed it holds the
//!   account's transaction with this nonce (found by a binary search over the recent blocks' counts): this hash, or
//!   another one;
//! - **unknown**: anything else — in the pool but not known by hash, a node that cannot answer for old blocks, a
//!   block that does not hold what its count says. The entry stays `unknown`, its amount reserved, and is
//!   reconciled again later.
//!
//! These are the first node's answers, which route reconciliation (sending the identical bytes again needs no
//! proof). What releases an entry's amount — or, for "used by another", gives the user's authorization back — needs
//! every configured node to show the same: the nonce unused there too ([`Chain::nonce_unused_everywhere`]), or the
//! other transaction mined there, from this account, with this nonce ([`Chain::mined_elsewhere_too`]). A node that
//! shows otherwise, errs, or serves another chain is no proof.

use super::{Chain, upstream};
use alloy::consensus::Transaction as _;
use alloy::eips::BlockId;
use alloy::network::TransactionResponse as _;
use alloy::primitives::{Address, B256};
use alloy::providers::Provider;
use holdfast_core::ToolError;

/// How far back (in blocks) the search for the block that used a nonce goes.
pub const NONCE_SEARCH_BLOCKS: u64 = 100_000;

/// An account's mined transaction count as the configured nodes show it ([`Chain::mined_count`]).
#[derive(Debug, Clone)]
pub struct MinedCount {
    /// The lowest count among the nodes that answered.
    pub lowest: u64,
    /// The first error of a node that did not answer, if one did not: a node that counts fewer may be among them.
    pub unanswered: Option<ToolError>,
}

impl MinedCount {
    /// The nonce to sign with: the lowest count, or one past the highest nonce the journal still holds live
    /// (`journaled`), whichever is higher.
    pub fn next_nonce(&self, journaled: Option<u64>) -> u64 {
        journaled.map_or(self.lowest, |n| n.saturating_add(1).max(self.lowest))
    }

    /// The nonce to sign with, given the nonces from the lowest count up that journaled transactions hold (`taken`)
    /// and those of `stalled` ones: one past the highest taken (or the lowest count), unless a stalled send's nonce
    /// below that is free — then that one, so the sends after it are not stuck behind its gap, and at most one of the
    /// two transactions is mined. No other gap is filled: a low count (a lagging node) is not read as a free nonce.
    ///
    /// ```
    /// # use holdfast_web3::chain::MinedCount;
    /// let mined = MinedCount { lowest: 5, unanswered: None };
    /// assert_eq!(mined.next_for(&[], &[]), 5);
    /// assert_eq!(mined.next_for(&[5, 6], &[]), 7);
    /// assert_eq!(mined.next_for(&[6, 7], &[]), 8, "5 is no stalled send's: not filled");
    /// assert_eq!(mined.next_for(&[6, 7], &[5]), 5, "a stalled send's gap is filled");
    /// assert_eq!(mined.next_for(&[], &[5]), 5);
    /// ```
    pub fn next_for(&self, taken: &[u64], stalled: &[u64]) -> u64 {
        let base = taken.iter().max().map_or(self.lowest, |t| t.saturating_add(1).max(self.lowest));
        stalled.iter().copied().filter(|m| *m >= self.lowest && *m < base && !taken.contains(m)).min().unwrap_or(base)
    }
}

/// Where a nonce of an account stands on chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NonceUse {
    /// Neither mined nor pending: a transaction signed with it is not out there.
    Unused,
    /// Mined, by the transaction with this hash.
    UsedBy(B256),
    /// Used or pending, by a transaction the chain did not show.
    Unknown,
}

impl Chain {
    /// The account's transaction count including the node's pending pool.
    pub async fn pending_nonce(&self, account: Address) -> Result<u64, ToolError> {
        self.provider
            .get_transaction_count(account)
            .pending()
            .await
            .map_err(|e| upstream(&self.network.name, "eth_getTransactionCount", e))
    }

    /// `account`'s mined transaction count (latest block) as the configured nodes show it, the nodes asked at once:
    /// the lowest count among those that answered, and the first error of one that did not. A node alone cannot raise
    /// the count a transaction is signed with: one that keeps a transaction it answered it refused, and counts it,
    /// would otherwise have the next transaction signed with the nonce after it, and then let both out. The first
    /// error when none answers.
    pub async fn mined_count(&self, account: Address) -> Result<MinedCount, ToolError> {
        let asks = self.readers.iter().enumerate().map(|(i, (url, provider))| async move {
            self.verify_reader(i).await?;
            provider
                .get_transaction_count(account)
                .latest()
                .await
                .map_err(|e| upstream(url, "eth_getTransactionCount", e))
        });
        let (lowest, unanswered) = super::kept_answer(futures::future::join_all(asks).await, Ord::min)?;
        Ok(MinedCount { lowest, unanswered })
    }

    /// True when every configured RPC node shows `account`'s `nonce` unused: its latest and its pending transaction
    /// count are both at most `nonce`. False as soon as one node shows it used; a node that errs is no proof (its
    /// error, when no node showed it used). The nodes are asked at once.
    pub async fn nonce_unused_everywhere(&self, account: Address, nonce: u64) -> Result<bool, ToolError> {
        let asks = self.readers.iter().enumerate().map(|(i, (url, provider))| async move {
            self.verify_reader(i).await?;
            let count = |pending: bool| async move {
                let ask = provider.get_transaction_count(account);
                let ask = if pending { ask.pending() } else { ask.latest() };
                ask.await.map_err(|e| upstream(url, "eth_getTransactionCount", e))
            };
            let (latest, pending) = tokio::try_join!(count(false), count(true))?;
            Ok::<_, ToolError>(latest <= nonce && pending <= nonce)
        });
        let mut failed = None;
        for answer in futures::future::join_all(asks).await {
            match answer {
                Ok(true) => {}
                Ok(false) => return Ok(false),
                Err(e) => {
                    failed.get_or_insert(e);
                }
            }
        }
        failed.map_or(Ok(true), Err)
    }

    async fn count_at(&self, account: Address, block: u64) -> Result<u64, ToolError> {
        self.provider
            .get_transaction_count(account)
            .block_id(BlockId::number(block))
            .await
            .map_err(|e| upstream(&self.network.name, "eth_getTransactionCount", e))
    }

    /// Where `account`'s `nonce` stands on chain (see the module documentation).
    pub async fn nonce_use(&self, account: Address, nonce: u64) -> Result<NonceUse, ToolError> {
        self.verify().await?;
        let (latest, pending) = tokio::try_join!(self.mined_nonce(account), self.pending_nonce(account))?;
        if latest <= nonce {
            return Ok(if pending <= nonce { NonceUse::Unused } else { NonceUse::Unknown });
        }
        let head =
            self.provider.get_block_number().await.map_err(|e| upstream(&self.network.name, "eth_blockNumber", e))?;
        // The first block whose count passed `nonce`: counts only grow, so a binary search over (lo, hi]. The window is
        // found backwards from the head in doubling steps, so a recent use is proven from recent states only (a node
        // that prunes old states, like the devnet's anvil, still answers for it).
        let floor = head.saturating_sub(NONCE_SEARCH_BLOCKS);
        let mut hi = head;
        let mut step = 64u64;
        let mut lo;
        loop {
            lo = head.saturating_sub(step).max(floor);
            match self.count_at(account, lo).await {
                Ok(c) if c <= nonce => break,
                Ok(_) if lo > floor => {
                    hi = lo;
                    step = step.saturating_mul(2);
                }
                // Used before the window, or the node keeps no state that old: no proof here.
                _ => return Ok(NonceUse::Unknown),
            }
        }
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            match self.count_at(account, mid).await {
                Ok(c) if c > nonce => hi = mid,
                Ok(_) => lo = mid,
                Err(_) => return Ok(NonceUse::Unknown),
            }
        }
        let block = self
            .provider
            .get_block_by_number(hi.into())
            .full()
            .await
            .map_err(|e| upstream(&self.network.name, "eth_getBlockByNumber", e))?;
        let found = block.and_then(|b| {
            b.transactions.into_transactions().find(|t| t.from() == account && t.nonce() == nonce).map(|t| t.tx_hash())
        });
        Ok(found.map_or(NonceUse::Unknown, NonceUse::UsedBy))
    }

    /// True when every configured node other than the first (whose block showed it) shows transaction `hash` mined,
    /// sent by `account` with `nonce`: the proof that lets an entry whose nonce `hash` used be released. The nodes are
    /// asked at once.
    pub async fn mined_elsewhere_too(&self, hash: B256, account: Address, nonce: u64) -> bool {
        let asks = self.readers.iter().enumerate().skip(1).map(|(i, (url, provider))| async move {
            if self.verify_reader(i).await.is_err() {
                return (url, false);
            }
            let shown = provider.get_transaction_by_hash(hash).await;
            let agrees = matches!(&shown, Ok(Some(t))
                if t.block_number.is_some() && t.from() == account && t.nonce() == nonce);
            (url, agrees)
        });
        let answers = futures::future::join_all(asks).await;
        match answers.iter().find(|(_, agrees)| !agrees) {
            Some((url, _)) => {
                tracing::warn!(%hash, node = %url, "a node does not show the transaction another node says used the nonce");
                false
            }
            None => true,
        }
    }
}

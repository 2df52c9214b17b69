//! What the journal records: an entry's kind and status, a new entry, a stored one, the fields that change as it
//! settles, and the answers of a reservation.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What an entry records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EntryKind {
    /// A swap transaction.
    Swap,
    /// An ERC-20 approval.
    Approval,
    /// The kernel setting an ERC-20 allowance back to zero (an approval whose swap was abandoned).
    Reset,
    /// A native or ERC-20 transfer.
    Transfer,
    /// An x402 payment.
    Payment,
    /// The kernel moving a smart account's funds to its signer through the account's module, for a payment the
    /// signer authorizes (within the on-chain limit; it moves nothing out of the user's hands).
    Fund,
}

/// Where an entry stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EntryStatus {
    /// Its amount is reserved against the caps; nothing is signed yet.
    Reserved,
    /// Signed and journaled; not yet known to have left the process.
    Signed,
    /// Accepted by the node (or the payee); waiting for the chain.
    Pending,
    /// The broadcast's outcome is not known (timeout, reset, 5xx): reconciled by hash, never re-signed.
    Unknown,
    /// The node refused it and every node shows its nonce unused: not out there as far as the chain shows, but its
    /// signature stays valid until its nonce is used (a node may hold it back and let it out later). It counts
    /// against the caps and holds the user's authorization until it is mined or its nonce is mined by another
    /// transaction; its identical bytes are sent again (never signed anew), and its nonce is free for the next send
    /// (at most one of the two is mined).
    Stalled,
    /// Mined with status 1 (or settled).
    Confirmed,
    /// Mined with status 0.
    Reverted,
    /// Never reached the chain (definitely rejected by the node or the payee, or never signed).
    Failed,
    /// Its nonce was used by another transaction; it will never be mined.
    Dropped,
    /// Refused by a check before signing (independent price, simulation); the reason is in `error`.
    Refused,
    /// Sent on a local development chain (a devnet) that has since begun anew: the chain it was sent on is gone, so
    /// it is neither mined nor dropped there, and is never sent again.
    ChainReset,
}

impl EntryKind {
    /// The stored form.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Swap => "swap",
            Self::Approval => "approval",
            Self::Reset => "reset",
            Self::Transfer => "transfer",
            Self::Payment => "payment",
            Self::Fund => "fund",
        }
    }

    pub(crate) fn parse(s: &str) -> Self {
        match s {
            "approval" => Self::Approval,
            "reset" => Self::Reset,
            "transfer" => Self::Transfer,
            "payment" => Self::Payment,
            "fund" => Self::Fund,
            _ => Self::Swap,
        }
    }

    /// The kinds whose amounts count against the same per-day cap as this kind: swaps and transfers both move the
    /// asset out of the wallet; payments have their own budget; approvals move nothing.
    pub const fn cap_group(self) -> &'static [EntryKind] {
        match self {
            Self::Swap | Self::Transfer => &[Self::Swap, Self::Transfer],
            Self::Payment => &[Self::Payment],
            Self::Approval | Self::Reset | Self::Fund => &[],
        }
    }
}

impl EntryStatus {
    /// The stored form.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Reserved => "reserved",
            Self::Signed => "signed",
            Self::Pending => "pending",
            Self::Unknown => "unknown",
            Self::Stalled => "stalled",
            Self::Confirmed => "confirmed",
            Self::Reverted => "reverted",
            Self::Failed => "failed",
            Self::Dropped => "dropped",
            Self::Refused => "refused",
            Self::ChainReset => "chain_reset",
        }
    }

    pub(crate) fn parse(s: &str) -> Self {
        match s {
            "reserved" => Self::Reserved,
            "pending" => Self::Pending,
            "unknown" => Self::Unknown,
            "stalled" => Self::Stalled,
            "confirmed" => Self::Confirmed,
            "reverted" => Self::Reverted,
            "failed" => Self::Failed,
            "dropped" => Self::Dropped,
            "refused" => Self::Refused,
            "chain_reset" => Self::ChainReset,
            _ => Self::Signed,
        }
    }

    /// Counts against daily limits and blocks a second send of the same action or intent.
    /// (The journal table's queries select by the same list: [`holdfast_store::journal::LIVE`].)
    pub fn is_live(self) -> bool {
        holdfast_store::journal::LIVE.contains(&self.as_str())
    }

    /// Not settled yet: reconciliation still has work to do.
    /// ([`holdfast_store::journal::UNRESOLVED`].)
    pub fn is_unresolved(self) -> bool {
        holdfast_store::journal::UNRESOLVED.contains(&self.as_str())
    }
}

/// A new entry.
#[derive(Debug, Clone)]
pub struct NewEntry {
    /// Session that caused it.
    pub session_id: String,
    /// Kind.
    pub kind: EntryKind,
    /// Canonical network name (for display; caps are keyed by `chain_id`).
    pub network: String,
    /// Chain id.
    pub chain_id: u64,
    /// Sender (EIP-55).
    pub from: String,
    /// Contract called, recipient or payee.
    pub to: String,
    /// Nonce (transactions only).
    pub nonce: Option<u64>,
    /// Native value in base units.
    pub value: String,
    /// Asset whose amount counts against limits (token address or the native placeholder, EIP-55).
    pub asset: String,
    /// Asset symbol.
    pub asset_symbol: String,
    /// Amount of `asset` moved, base units.
    pub amount: String,
    /// Fingerprint of the exact action.
    pub fingerprint: String,
    /// Idempotency key of the intent (for a swap: the quote register's write). One live entry per intent.
    pub intent: Option<String>,
    /// Signed transaction bytes, hex (transactions only).
    pub raw_tx: Option<String>,
    /// Transaction hash, when known.
    pub tx_hash: Option<String>,
    /// Why, for an entry written as `refused`.
    pub error: Option<String>,
    /// Decoded summary.
    pub summary: Value,
    /// The user's authorization (an amount they wrote) the action spends, if it spends one.
    pub authorization: Option<AuthorizationUse>,
}

/// The user's authorization an entry's action spends: stored with the entry, so that no other action — in another
/// instance, or after a crash lost the session's record of it — runs by itself on the same authorization.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthorizationUse {
    /// The authorization's id (`au_…`).
    pub id: String,
    /// True when the action runs by itself on it (no confirmation): the reservation then refuses while another
    /// live entry of another intent holds the same authorization.
    pub relied_on: bool,
}

/// A stored entry.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct JournalEntry {
    /// Id (`j_…`).
    pub id: String,
    /// Session.
    pub session_id: String,
    /// Kind.
    pub kind: EntryKind,
    /// Network.
    pub network: String,
    /// Chain id.
    pub chain_id: u64,
    /// Sender.
    pub from: String,
    /// Contract, recipient or payee.
    pub to: String,
    /// Nonce.
    pub nonce: Option<u64>,
    /// Native value.
    pub value: String,
    /// Asset.
    pub asset: String,
    /// Asset symbol.
    pub asset_symbol: String,
    /// Amount.
    pub amount: String,
    /// Transaction hash (for payments: the settlement transaction).
    pub tx_hash: Option<String>,
    /// Status.
    pub status: EntryStatus,
    /// Block number once mined.
    pub block_number: Option<u64>,
    /// Gas used once mined.
    pub gas_used: Option<String>,
    /// Error text for failed, refused or unknown entries.
    pub error: Option<String>,
    /// Decoded summary.
    pub summary: Value,
    /// Creation time.
    pub created_at: DateTime<Utc>,
    /// Last update.
    pub updated_at: DateTime<Utc>,
    #[serde(skip)]
    pub(crate) raw_tx: Option<String>,
    #[serde(skip)]
    pub(crate) fingerprint: String,
    #[serde(skip)]
    pub(crate) intent: Option<String>,
    /// The genesis block hash of the chain the transaction was signed for (absent before it is signed, for payments,
    /// and in entries written before it was recorded).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub genesis: Option<String>,
}

impl JournalEntry {
    /// The signed bytes, hex.
    pub fn raw_tx(&self) -> Option<&str> {
        self.raw_tx.as_deref()
    }

    /// The action fingerprint.
    pub fn fingerprint(&self) -> &str {
        &self.fingerprint
    }

    /// The intent's idempotency key, if the entry has one.
    pub fn intent(&self) -> Option<&str> {
        self.intent.as_deref()
    }
}

/// Fields that change as an entry settles. `None` leaves a field as it is.
#[derive(Debug, Clone, Default)]
pub struct EntryUpdate {
    /// Transaction hash.
    pub tx_hash: Option<String>,
    /// Block number.
    pub block_number: Option<u64>,
    /// Gas used.
    pub gas_used: Option<String>,
    /// Error text.
    pub error: Option<String>,
    /// A new decoded summary.
    pub summary: Option<Value>,
}

/// The day's cap a reservation must fit under.
#[derive(Debug, Clone, Copy)]
pub struct DayCap {
    /// The most the entries of `kinds` may move per UTC day for this chain id, wallet and asset.
    pub limit: alloy::primitives::U256,
    /// The kinds counted together.
    pub kinds: &'static [EntryKind],
}

/// What `super::Journal::reserve` did.
#[derive(Debug, Clone)]
pub enum Reserved {
    /// A new entry holds the reservation.
    New(JournalEntry),
    /// The intent already has a live entry: this is it (nothing new was reserved).
    Existing(JournalEntry),
    /// The cap would be exceeded; nothing was written.
    OverCap {
        /// What live entries already hold today.
        spent: alloy::primitives::U256,
    },
    /// The action would run by itself on a user authorization another live entry already spent; nothing was written.
    AuthorizationSpent {
        /// The entry that spent it.
        by: JournalEntry,
    },
    /// As many live payments to the same payee or server as [`Undelivered::max`] are not known to have delivered what
    /// they paid for; nothing was written.
    Undelivered {
        /// Their journal ids, oldest first.
        ids: Vec<String>,
    },
}

/// The most live payments to one payee or one server that may be undelivered at once ([`Reserved::Undelivered`]).
#[derive(Debug, Clone)]
pub struct Undelivered {
    /// How many.
    pub max: usize,
    /// Counted among the payments made since.
    pub since: chrono::DateTime<chrono::Utc>,
    /// The server paid (the preset's host and port): a server that names a new payee in each 402 is one server.
    pub server: String,
}

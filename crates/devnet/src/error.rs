//! [`DevnetError`]: everything that can go wrong while installing, starting, seeding or stopping a devnet.
//!
//! Messages say what failed and what to do about it. None of them ever carries the burner wallet's key: the key is
//! generated and written in one place ([`crate::wallet`]) and no error there includes the key material.

use std::path::PathBuf;

/// A devnet operation failed.
#[derive(Debug, thiserror::Error)]
pub enum DevnetError {
    /// A file or folder could not be read, written or created.
    #[error("{context}: {source}")]
    Io {
        /// What was being done, naming the path.
        context: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// `npm` is not installed, so anvil cannot be installed.
    #[error(
        "anvil is not installed and `npm` was not found to install it: install Node.js and npm \
         (https://nodejs.org), or point HOLDFAST_ANVIL at an anvil binary"
    )]
    NpmMissing,
    /// `npm ci` failed while installing anvil.
    #[error("installing anvil with `npm ci` in {dir} failed ({status}); npm's output is in the progress lines above")]
    NpmFailed {
        /// The folder npm ran in.
        dir: PathBuf,
        /// npm's exit status.
        status: String,
    },
    /// `HOLDFAST_ANVIL` names a file that does not exist, or the anvil npm package does not fit this machine.
    #[error("anvil not found: {0}")]
    AnvilNotFound(String),
    /// No free loopback port could be found, or a chosen port was taken.
    #[error("port unavailable: {0}")]
    PortUnavailable(String),
    /// anvil did not start or did not answer.
    #[error("anvil failed to start: {reason}{}", log_tail_suffix(.log, .log_tail))]
    AnvilStart {
        /// What went wrong.
        reason: String,
        /// anvil's log file.
        log: PathBuf,
        /// The last lines of anvil's log.
        log_tail: String,
    },
    /// The services process (quoter) did not start or did not become healthy.
    #[error("the devnet services failed to start: {reason}{}", log_tail_suffix(.log, .log_tail))]
    ServicesStart {
        /// What went wrong.
        reason: String,
        /// The services log file.
        log: PathBuf,
        /// The last lines of the services log.
        log_tail: String,
    },
    /// A JSON-RPC request to anvil failed.
    #[error("{step}: {message}")]
    Rpc {
        /// What was being done.
        step: String,
        /// The RPC or transport error.
        message: String,
    },
    /// A transaction sent while seeding the devnet reverted or was not mined.
    #[error("{step}: transaction {tx} failed: {reason}")]
    Transaction {
        /// What was being done.
        step: String,
        /// The transaction hash.
        tx: String,
        /// Why it is considered failed.
        reason: String,
    },
    /// `devnet.json` (or another generated file) is not what this version writes.
    #[error("{path}: {reason}")]
    BadStateFile {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The folder holds a devnet that is only partly running.
    #[error(
        "{dir} holds a devnet that is only partly running ({detail}); run `holdfast devnet down --dir {dir}` first"
    )]
    PartlyUp {
        /// The devnet folder.
        dir: PathBuf,
        /// Which process is alive and which is not.
        detail: String,
    },
    /// The folder's saved chain does not fit what was asked (another chain id), or cannot be resumed.
    #[error("{dir} holds a saved devnet chain that {detail}; `holdfast devnet reset --dir {dir}` starts a new chain")]
    SavedChain {
        /// The devnet folder.
        dir: PathBuf,
        /// What does not fit.
        detail: String,
    },
    /// The devnet is in use by another process (a `holdfast serve`), so it cannot be reset now.
    #[error("the devnet in {0} is in use by a running holdfast (serve); stop it first")]
    InUse(PathBuf),
    /// The smart account could not be set up as asked (a limit that does not parse or fit the module).
    #[error("the devnet account: {0}")]
    Account(String),
    /// A committed contract artifact could not be read (a build problem, not a user error).
    #[error("contract artifact {name}: {reason}")]
    Artifact {
        /// The artifact's contract name.
        name: &'static str,
        /// What is wrong.
        reason: String,
    },
    /// The burner wallet key file could not be read back.
    #[error("wallet key file {path}: {reason}")]
    WalletKey {
        /// The key file.
        path: PathBuf,
        /// What is wrong (never the key itself).
        reason: String,
    },
    /// A chain id that is not a local one (it may be a public network's) was asked for without
    /// `allow_public_chain_id`.
    #[error(
        "chain id {0} is not a local chain id (the devnet's own, 31337 or 1337) and may belong to a public network: \
         everything the devnet wallet signs would be valid there too; leave out --chain-id for the devnet's own id, \
         or add --allow-public-chain-id if a test really needs it"
    )]
    PublicChainId(u64),
    /// The services process could not serve.
    #[error("devnet services: {0}")]
    Services(String),
}

impl DevnetError {
    /// An [`DevnetError::Io`] with a context message.
    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Self::Io { context: context.into(), source }
    }

    /// An [`DevnetError::Rpc`] for `step`.
    pub(crate) fn rpc(step: impl Into<String>, err: impl std::fmt::Display) -> Self {
        Self::Rpc { step: step.into(), message: err.to_string() }
    }
}

/// Formats the log-tail part of a start-up error.
fn log_tail_suffix(log: &std::path::Path, tail: &str) -> String {
    if tail.trim().is_empty() {
        format!(" (log {} is empty)", log.display())
    } else {
        format!("\n--- last lines of {} ---\n{}", log.display(), tail.trim_end())
    }
}

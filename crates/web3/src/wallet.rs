//! The burner wallet: one private key, generated on first use (mode 0600) or imported from an environment variable.
//!
//! The key never leaves this module except as the signer other modules of this crate sign with: it has no `Debug`
//! output, appears in no error, log line or event, and there is no "sign this message" tool (invariant 10). The
//! only typed data it signs is an EIP-3009 `TransferWithAuthorization` from this wallet, for the x402 client
//! (`Wallet::sign_transfer_authorization`, crate-private).

use crate::config::WalletSection;
use alloy::primitives::{Address, B256, Signature};
use alloy::signers::SignerSync;
use alloy::signers::local::PrivateKeySigner;
use alloy::sol_types::{Eip712Domain, SolStruct};
use holdfast_core::ToolError;
use holdfast_core::registers::IntrinsicProvider;
use serde_json::Value;
use std::fmt;
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The wallet could not be loaded or created. Messages never contain key material.
#[derive(Debug, thiserror::Error)]
pub enum WalletError {
    /// The key file could not be read or written.
    #[error("wallet key file {path}: {reason}")]
    File {
        /// The file.
        path: String,
        /// What went wrong (never the key).
        reason: String,
    },
    /// The key file is readable by other users.
    #[error("wallet key file {path} is readable by other users (mode {mode:o}); run `chmod 600 {path}`")]
    Permissions {
        /// The file.
        path: String,
        /// Its mode bits.
        mode: u32,
    },
    /// The environment variable is missing or does not hold a key.
    #[error("environment variable {name}: {reason}")]
    Env {
        /// The variable.
        name: String,
        /// What is wrong (never the value).
        reason: String,
    },
}

/// Where the key came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeySource {
    /// Generated for this process only; gone when it exits.
    Ephemeral,
    /// A key file.
    File(PathBuf),
    /// An environment variable (by name).
    Env(String),
}

/// The burner wallet.
pub struct Wallet {
    signer: PrivateKeySigner,
    source: KeySource,
}

impl fmt::Debug for Wallet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Wallet").field("address", &self.address()).field("source", &self.source).finish()
    }
}

fn parse_key(text: &str) -> Option<PrivateKeySigner> {
    let hex = text.trim();
    let hex = hex.strip_prefix("0x").unwrap_or(hex);
    if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let bytes: B256 = hex.parse().ok()?;
    PrivateKeySigner::from_bytes(&bytes).ok()
}

impl Wallet {
    /// A fresh key that lives only in this process.
    pub fn ephemeral() -> Self {
        Self { signer: PrivateKeySigner::random(), source: KeySource::Ephemeral }
    }

    /// Loads the wallet `[wallet]` describes: `key_env` if set, else `key_file` (or `default_file`), generating the
    /// file when it does not exist. With neither a configured nor a default file, an ephemeral key.
    pub fn load(section: &WalletSection, default_file: Option<&Path>) -> Result<Self, WalletError> {
        if let Some(name) = &section.key_env {
            if !holdfast_core::is_env_var_name(name) {
                return Err(WalletError::Env {
                    name: "(not shown)".into(),
                    reason: "`key_env` must name an environment variable, not hold the key".into(),
                });
            }
            let value = std::env::var(name)
                .map_err(|_| WalletError::Env { name: name.clone(), reason: "is not set".into() })?;
            let signer = parse_key(&value).ok_or_else(|| WalletError::Env {
                name: name.clone(),
                reason: "does not hold a 32-byte hex private key".into(),
            })?;
            return Ok(Self { signer, source: KeySource::Env(name.clone()) });
        }
        match section.key_file.as_deref().or(default_file) {
            Some(path) => Self::from_file(path),
            None => Ok(Self::ephemeral()),
        }
    }

    /// The wallet `[wallet]` describes, read without creating anything: `Ok(None)` when its key file does not exist
    /// yet (or there is neither a configured nor a default file). `holdfast doctor` uses it.
    pub fn existing(section: &WalletSection, default_file: Option<&Path>) -> Result<Option<Self>, WalletError> {
        if section.key_env.is_some() {
            return Self::load(section, default_file).map(Some);
        }
        match section.key_file.as_deref().or(default_file) {
            Some(path) if path.exists() => Self::from_file(path).map(Some),
            _ => Ok(None),
        }
    }

    /// Loads the key file, creating it (mode 0600, atomically) when it does not exist.
    pub fn from_file(path: &Path) -> Result<Self, WalletError> {
        let shown = path.display().to_string();
        let file_err = |reason: String| WalletError::File { path: shown.clone(), reason };
        if !path.exists() {
            create_key_file(path).map_err(|e| file_err(format!("cannot create: {e}")))?;
        }
        let meta = std::fs::metadata(path).map_err(|e| file_err(format!("cannot read: {e}")))?;
        let mode = meta.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            return Err(WalletError::Permissions { path: shown, mode });
        }
        let text = std::fs::read_to_string(path).map_err(|e| file_err(format!("cannot read: {e}")))?;
        let signer = parse_key(&text).ok_or_else(|| file_err("does not hold a 32-byte hex private key".into()))?;
        Ok(Self { signer, source: KeySource::File(path.to_path_buf()) })
    }

    /// The wallet's address.
    pub fn address(&self) -> Address {
        self.signer.address()
    }

    /// Where the key came from.
    pub fn source(&self) -> &KeySource {
        &self.source
    }

    /// The signer, for this crate's transaction code only.
    pub(crate) fn signer(&self) -> &PrivateKeySigner {
        &self.signer
    }

    /// Signs an EIP-3009 `TransferWithAuthorization` as EIP-712 typed data under `domain` (the token's). Only an
    /// authorization *from this wallet* is signed; the x402 client is the only caller, after the policy chose the
    /// requirement the authorization carries.
    pub(crate) fn sign_transfer_authorization(
        &self,
        auth: &TransferWithAuthorization,
        domain: &Eip712Domain,
    ) -> Result<Signature, ToolError> {
        if auth.from != self.address() {
            return Err(ToolError::internal("a payment authorization must be from this wallet"));
        }
        let hash = auth.eip712_signing_hash(domain);
        self.signer.sign_hash_sync(&hash).map_err(|_| ToolError::internal("signing the payment authorization failed"))
    }
}

alloy::sol! {
    /// EIP-3009 `TransferWithAuthorization(address from,address to,uint256 value,uint256 validAfter,
    /// uint256 validBefore,bytes32 nonce)`, signed as EIP-712 typed data with the token's domain.
    #[derive(Debug, PartialEq, Eq)]
    struct TransferWithAuthorization {
        address from;
        address to;
        uint256 value;
        uint256 validAfter;
        uint256 validBefore;
        bytes32 nonce;
    }
}

/// Writes a new random key to `path` with mode 0600: to a temporary file first, then linked into place, so a crash
/// never leaves a half-written key and an existing file is never overwritten.
fn create_key_file(path: &Path) -> std::io::Result<()> {
    holdfast_core::private_fs::create_private_parent(path)?;
    let signer = PrivateKeySigner::random();
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    let result = (|| {
        let mut file = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&tmp)?;
        writeln!(file, "0x{}", alloy::primitives::hex::encode(signer.to_bytes()))?;
        file.sync_all()?;
        std::fs::hard_link(&tmp, path)
    })();
    let _ = std::fs::remove_file(&tmp);
    result
}

/// Resolves the intrinsic `wallet_address` register from the wallet.
#[derive(Debug, Clone)]
pub struct WalletIntrinsics(pub Arc<Wallet>);

impl IntrinsicProvider for WalletIntrinsics {
    fn resolve(&self, key: &str) -> Option<Result<Value, ToolError>> {
        (key == "wallet_address").then(|| Ok(Value::String(self.0.address().to_checksum(None))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_generated_key_file_is_private_and_stable() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/wallet.key");
        let a = Wallet::from_file(&path).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let b = Wallet::from_file(&path).unwrap();
        assert_eq!(a.address(), b.address());
        assert_eq!(std::fs::read_dir(path.parent().unwrap()).unwrap().count(), 1, "no temporary file left");
        assert!(!format!("{a:?}").contains(&alloy::primitives::hex::encode(a.signer().to_bytes())));
    }

    #[test]
    fn loose_permissions_and_garbage_are_refused_without_echoing_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("wallet.key");
        let key = format!("0x{}", "ab".repeat(32));
        std::fs::write(&path, &key).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let err = Wallet::from_file(&path).unwrap_err().to_string();
        assert!(err.contains("chmod 600") && !err.contains(&key[2..]), "{err}");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(Wallet::from_file(&path).is_ok());
        std::fs::write(&path, "0xnot-a-key-but-secret-ish").unwrap();
        let err = Wallet::from_file(&path).unwrap_err().to_string();
        assert!(err.contains("does not hold") && !err.contains("secret-ish"), "{err}");
    }

    #[test]
    fn env_import_never_echoes_the_value() {
        let section =
            WalletSection { key_file: None, key_env: Some("HOLDFAST_TEST_KEY_UNSET_42".into()), ..Default::default() };
        let err = Wallet::load(&section, None).unwrap_err().to_string();
        assert!(err.contains("is not set"));
        assert_eq!(Wallet::load(&WalletSection::default(), None).unwrap().source(), &KeySource::Ephemeral);
    }
}

//! The devnet's burner wallet: a fresh random key written to `DIR/wallet.key` (`0x…hex\n`, mode 0600, created
//! atomically), and read back for tests.
//!
//! The key is never printed, logged, returned in an error or written anywhere else; callers only ever see the
//! wallet's address.

use crate::error::DevnetError;
use alloy::primitives::Address;
use alloy::signers::local::PrivateKeySigner;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// Generates a fresh key, writes it to `path` (replacing any older key file atomically) and returns its address.
///
/// The file is created with mode 0600 under a temporary name in the same folder, synced, then renamed into place,
/// so no reader ever sees a partial or world-readable key.
pub fn create_key_file(path: &Path) -> Result<Address, DevnetError> {
    let signer = PrivateKeySigner::random();
    let address = signer.address();
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let file_name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "wallet.key".into());
    let tmp = dir.join(format!(".{file_name}.tmp-{}", std::process::id()));
    let _ = std::fs::remove_file(&tmp);
    let write = || -> std::io::Result<()> {
        let mut file = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&tmp)?;
        let mut text = format!("{:#x}\n", signer.to_bytes());
        let written = file.write_all(text.as_bytes()).and_then(|()| file.sync_all());
        // Overwrite our copy of the hex before dropping it.
        text.clear();
        text.shrink_to_fit();
        written?;
        std::fs::rename(&tmp, path)
    };
    write().map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        DevnetError::io(format!("writing the wallet key file {}", path.display()), e)
    })?;
    Ok(address)
}

/// Reads a key file written by [`create_key_file`] (for tests and tools that execute quotes on the devnet).
pub fn load_key_file(path: &Path) -> Result<PrivateKeySigner, DevnetError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| DevnetError::io(format!("reading the wallet key file {}", path.display()), e))?;
    text.trim().parse::<PrivateKeySigner>().map_err(|_| DevnetError::WalletKey {
        path: path.to_path_buf(),
        reason: "not a 32-byte hex private key".into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn key_file_is_private_and_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("wallet.key");
        let address = create_key_file(&path).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("0x") && text.ends_with('\n') && text.len() == 67, "{}", text.len());
        assert_eq!(load_key_file(&path).unwrap().address(), address);
        // A second call replaces the key.
        let again = create_key_file(&path).unwrap();
        assert_ne!(again, address);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "no temporary file left behind");
    }

    #[test]
    fn a_bad_key_file_error_does_not_echo_the_content() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("wallet.key");
        std::fs::write(&path, "0xnot-a-key-SECRETISH\n").unwrap();
        let err = load_key_file(&path).unwrap_err().to_string();
        assert!(!err.contains("SECRETISH"), "{err}");
    }
}

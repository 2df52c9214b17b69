//! The access token: generated on first start into the data dir (`server.token`, mode 0600), required for every API
//! call and the WebSocket.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// The token file name inside the data dir.
pub const TOKEN_FILE: &str = "server.token";

/// Reads the token from `data_dir`, creating it when missing. Returns the token and whether it was just created.
pub fn load_or_create(data_dir: &Path) -> std::io::Result<(String, bool)> {
    let path = data_dir.join(TOKEN_FILE);
    if let Ok(text) = std::fs::read_to_string(&path) {
        let token = text.trim().to_owned();
        if token.len() >= 32 {
            return Ok((token, false));
        }
    }
    std::fs::create_dir_all(data_dir)?;
    let token = random_token()?;
    let tmp = path.with_extension("tmp");
    let mut file = std::fs::OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(&tmp)?;
    writeln!(file, "{token}")?;
    file.sync_all()?;
    std::fs::rename(&tmp, &path)?;
    Ok((token, true))
}

/// 32 random bytes from the OS, hex.
fn random_token() -> std::io::Result<String> {
    let mut bytes = [0u8; 32];
    let mut f = std::fs::File::open("/dev/urandom")?;
    std::io::Read::read_exact(&mut f, &mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Compares tokens in constant time.
pub fn matches(expected: &str, given: &str) -> bool {
    let (a, b) = (expected.as_bytes(), given.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn created_once_private_and_reused() {
        let dir = tempfile::tempdir().unwrap();
        let (a, created) = load_or_create(dir.path()).unwrap();
        assert!(created && a.len() == 64);
        let mode = std::fs::metadata(dir.path().join(TOKEN_FILE)).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let (b, created) = load_or_create(dir.path()).unwrap();
        assert_eq!((a.as_str(), created), (b.as_str(), false));
        assert!(matches(&a, &b) && !matches(&a, "x") && !matches(&a, &a.replace('a', "b")));
    }
}

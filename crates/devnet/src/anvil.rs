//! Finding, installing and starting anvil.
//!
//! anvil comes from the npm package `@foundry-rs/anvil-linux-amd64` (the real binary, needing only glibc), pinned
//! by the repository's `devnet/package-lock.json`. [`anvil_path`] looks for it in this order:
//!
//! 1. `$HOLDFAST_ANVIL` (an error when set to a missing file: nothing falls back silently);
//! 2. `<cache>/node_modules/@foundry-rs/anvil-linux-amd64/bin/anvil`, where `<cache>` is `$HOLDFAST_DEVNET_CACHE`,
//!    else `$XDG_CACHE_HOME/holdfast/devnet`, else `~/.cache/holdfast/devnet` ([`cache_dir`]);
//! 3. the source tree's own `devnet/node_modules/…` (when the binary runs from a checkout);
//!
//! and otherwise installs it into `<cache>` with `npm ci` (the embedded `package.json` and `package-lock.json`).

use crate::contracts::{CHAIN_ID, USDC};
use crate::error::DevnetError;
use crate::process::{kill_child, log_tail, spawn_logged};
use alloy::providers::{DynProvider, Provider, ProviderBuilder};
use std::net::{Ipv4Addr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Where the anvil binary sits inside an npm install folder.
pub const ANVIL_IN_NODE_MODULES: &str = "node_modules/@foundry-rs/anvil-linux-amd64/bin/anvil";

const PACKAGE_JSON: &str = include_str!("../../../devnet/package.json");
const PACKAGE_LOCK: &str = include_str!("../../../devnet/package-lock.json");

/// The source tree's `devnet` folder (only present when running from a checkout).
fn repo_devnet_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../devnet")
}

fn env_path(name: &str) -> Option<PathBuf> {
    std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from)
}

/// The devnet cache folder: `$HOLDFAST_DEVNET_CACHE`, else `$XDG_CACHE_HOME/holdfast/devnet`, else
/// `$HOME/.cache/holdfast/devnet`.
pub fn cache_dir() -> Result<PathBuf, DevnetError> {
    cache_dir_from(&env_path)
}

/// [`cache_dir`] with the environment given as a lookup function.
fn cache_dir_from(env: &dyn Fn(&str) -> Option<PathBuf>) -> Result<PathBuf, DevnetError> {
    if let Some(dir) = env("HOLDFAST_DEVNET_CACHE") {
        return Ok(dir);
    }
    if let Some(xdg) = env("XDG_CACHE_HOME") {
        return Ok(xdg.join("holdfast/devnet"));
    }
    env("HOME").map(|home| home.join(".cache/holdfast/devnet")).ok_or_else(|| {
        DevnetError::AnvilNotFound(
            "cannot tell where to cache anvil: set HOLDFAST_DEVNET_CACHE, XDG_CACHE_HOME or HOME \
             (or point HOLDFAST_ANVIL at an anvil binary)"
                .into(),
        )
    })
}

/// An anvil binary that is already there, without installing anything: `$HOLDFAST_ANVIL`, the cache, or the
/// source tree's `devnet/node_modules`. `Ok(None)` when none exists; an error when `$HOLDFAST_ANVIL` names a missing
/// file.
pub fn find_anvil() -> Result<Option<PathBuf>, DevnetError> {
    find_anvil_from(&env_path, &repo_devnet_dir())
}

/// [`find_anvil`] with the environment and the source tree's `devnet` folder given.
fn find_anvil_from(env: &dyn Fn(&str) -> Option<PathBuf>, repo: &Path) -> Result<Option<PathBuf>, DevnetError> {
    if let Some(path) = env("HOLDFAST_ANVIL") {
        return if path.is_file() {
            Ok(Some(path))
        } else {
            Err(DevnetError::AnvilNotFound(format!("HOLDFAST_ANVIL is set to {}, which is not a file", path.display())))
        };
    }
    let cached = cache_dir_from(env)?.join(ANVIL_IN_NODE_MODULES);
    if cached.is_file() {
        return Ok(Some(cached));
    }
    let repo = repo.join(ANVIL_IN_NODE_MODULES);
    if repo.is_file() {
        return Ok(Some(repo.canonicalize().unwrap_or(repo)));
    }
    Ok(None)
}

/// The anvil binary to run ([`find_anvil`]), installing it into [`cache_dir`] with `npm ci` when there is none.
/// Installation runs once per cache folder, also across concurrent callers (a lock file serialises them), and
/// reports through `progress`; npm's own output goes to stderr.
pub async fn anvil_path(progress: &(dyn Fn(&str) + Send + Sync)) -> Result<PathBuf, DevnetError> {
    if let Some(path) = find_anvil()? {
        return Ok(path);
    }
    if !(cfg!(target_os = "linux") && cfg!(target_arch = "x86_64")) {
        return Err(DevnetError::AnvilNotFound(
            "the devnet installs anvil from npm only on Linux x86_64; install foundry's anvil and set HOLDFAST_ANVIL"
                .into(),
        ));
    }
    let cache = cache_dir()?;
    progress(&format!("anvil not found; installing it with `npm ci` into {} (one time)…", cache.display()));
    let installed = {
        let cache = cache.clone();
        tokio::task::spawn_blocking(move || install_blocking(&cache, "npm"))
            .await
            .map_err(|e| DevnetError::io("installing anvil", std::io::Error::other(e.to_string())))??
    };
    progress(&format!("anvil installed at {}", installed.display()));
    Ok(installed)
}

/// Installs anvil into `cache` with the `npm` program under an exclusive file lock; returns the binary's path.
fn install_blocking(cache: &Path, npm: &str) -> Result<PathBuf, DevnetError> {
    std::fs::create_dir_all(cache).map_err(|e| DevnetError::io(format!("creating {}", cache.display()), e))?;
    let lock_path = cache.join(".install.lock");
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(|e| DevnetError::io(format!("opening {}", lock_path.display()), e))?;
    lock.lock().map_err(|e| DevnetError::io(format!("locking {}", lock_path.display()), e))?;
    let bin = cache.join(ANVIL_IN_NODE_MODULES);
    if bin.is_file() {
        // Someone else installed it while we waited for the lock.
        return Ok(bin);
    }
    for (name, text) in [("package.json", PACKAGE_JSON), ("package-lock.json", PACKAGE_LOCK)] {
        let path = cache.join(name);
        std::fs::write(&path, text).map_err(|e| DevnetError::io(format!("writing {}", path.display()), e))?;
    }
    let status = Command::new(npm)
        .args(["ci", "--no-audit", "--no-fund"])
        .current_dir(cache)
        .stdin(Stdio::null())
        .stdout(Stdio::from(std::io::stderr()))
        .stderr(Stdio::inherit())
        .status()
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => DevnetError::NpmMissing,
            _ => DevnetError::io("running npm", e),
        })?;
    if !status.success() {
        return Err(DevnetError::NpmFailed { dir: cache.to_path_buf(), status: status.to_string() });
    }
    if !bin.is_file() {
        return Err(DevnetError::AnvilNotFound(format!(
            "`npm ci` in {} succeeded but {} is missing",
            cache.display(),
            bin.display()
        )));
    }
    Ok(bin)
}

/// A free TCP port on 127.0.0.1, chosen by the kernel (bound, read, released).
pub fn free_port() -> Result<u16, DevnetError> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .map_err(|e| DevnetError::PortUnavailable(format!("cannot bind a loopback port: {e}")))?;
    listener
        .local_addr()
        .map(|a| a.port())
        .map_err(|e| DevnetError::PortUnavailable(format!("cannot read the bound port: {e}")))
}

/// A connected, fresh anvil.
pub(crate) struct StartedAnvil {
    /// The process.
    pub child: Child,
    /// Its port on 127.0.0.1.
    pub port: u16,
    /// `http://127.0.0.1:PORT`.
    pub rpc_url: String,
    /// A provider for it.
    pub provider: DynProvider,
}

/// A plain HTTP provider (no fillers, no wallet) for `url`.
pub(crate) fn http_provider(url: &str) -> Result<DynProvider, DevnetError> {
    let parsed = url.parse().map_err(|e| DevnetError::rpc(format!("parsing the RPC URL {url}"), e))?;
    Ok(ProviderBuilder::new().disable_recommended_fillers().connect_http(parsed).erased())
}

/// The anvil command line: loopback only, Base's chain id, a Prague-or-later EVM (Base runs Isthmus, which
/// includes Prague), no console output; the genesis block at `genesis_timestamp` when given.
fn anvil_command(bin: &Path, port: u16, genesis_timestamp: Option<u64>) -> Command {
    let mut cmd = Command::new(bin);
    cmd.args(["--host", "127.0.0.1", "--port"]).arg(port.to_string()).args([
        "--chain-id",
        &CHAIN_ID.to_string(),
        "--hardfork",
        "prague",
        "--silent",
    ]);
    if let Some(timestamp) = genesis_timestamp {
        cmd.arg("--timestamp").arg(timestamp.to_string());
    }
    cmd
}

/// Why one start attempt failed.
enum Attempt {
    /// The port was taken between choosing and binding it; try another.
    PortTaken(String),
    /// Anything else.
    Failed(DevnetError),
}

/// Starts anvil on a free port with its output in `log` and waits until it answers with chain id 8453 and an
/// empty USDC address (so it is really the fresh node we started, not someone else's on a recycled port).
/// Retries with another port when the chosen one was taken meanwhile.
pub(crate) async fn start_anvil(bin: &Path, log: &Path, detached: bool) -> Result<StartedAnvil, DevnetError> {
    start_anvil_at(bin, log, detached, None).await
}

/// [`start_anvil`] with the genesis block stamped `genesis_timestamp` (anvil's `--timestamp`) when given: anvil's
/// clock starts there and runs on in real time, so every block is stamped that far behind the wall clock.
pub(crate) async fn start_anvil_at(
    bin: &Path,
    log: &Path,
    detached: bool,
    genesis_timestamp: Option<u64>,
) -> Result<StartedAnvil, DevnetError> {
    let mut last = String::new();
    for _ in 0..5 {
        let port = free_port()?;
        match start_on(bin, port, log, detached, genesis_timestamp).await {
            Ok(started) => return Ok(started),
            Err(Attempt::PortTaken(why)) => last = why,
            Err(Attempt::Failed(e)) => return Err(e),
        }
    }
    Err(DevnetError::PortUnavailable(format!(
        "five loopback ports in a row were taken before anvil bound them ({last})"
    )))
}

async fn start_on(
    bin: &Path,
    port: u16,
    log: &Path,
    detached: bool,
    genesis_timestamp: Option<u64>,
) -> Result<StartedAnvil, Attempt> {
    let command = anvil_command(bin, port, genesis_timestamp);
    let mut child = spawn_logged(command, log, detached, "anvil").map_err(Attempt::Failed)?;
    let rpc_url = format!("http://127.0.0.1:{port}");
    let provider = match http_provider(&rpc_url) {
        Ok(p) => p,
        Err(e) => {
            kill_child(&mut child);
            return Err(Attempt::Failed(e));
        }
    };
    let fail = |child: &mut Child, reason: String| {
        kill_child(child);
        let tail = log_tail(log, 20);
        if tail.to_ascii_lowercase().contains("address already in use") {
            Attempt::PortTaken(format!("port {port}: {}", tail.trim()))
        } else {
            Attempt::Failed(DevnetError::AnvilStart { reason, log: log.to_path_buf(), log_tail: tail })
        }
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return Err(fail(&mut child, format!("anvil exited during start-up ({status})")));
        }
        if let Ok(chain_id) = provider.get_chain_id().await {
            // Our child must still be the one answering.
            if let Ok(Some(status)) = child.try_wait() {
                return Err(fail(&mut child, format!("anvil exited during start-up ({status})")));
            }
            if chain_id != CHAIN_ID {
                kill_child(&mut child);
                return Err(Attempt::PortTaken(format!("port {port} answers with chain id {chain_id}")));
            }
            match provider.get_code_at(USDC).await {
                Ok(code) if code.is_empty() => {
                    return Ok(StartedAnvil { child, port, rpc_url, provider });
                }
                Ok(_) => {
                    kill_child(&mut child);
                    return Err(Attempt::PortTaken(format!("port {port} answers with a node that is not fresh")));
                }
                Err(e) => return Err(fail(&mut child, format!("anvil answered eth_chainId but not eth_getCode: {e}"))),
            }
        }
        if Instant::now() >= deadline {
            return Err(fail(&mut child, format!("no answer on {rpc_url} within 20 s")));
        }
        tokio::time::sleep(Duration::from_millis(15)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env_of(vars: &[(&str, &Path)]) -> impl Fn(&str) -> Option<PathBuf> + use<> {
        let map: HashMap<String, PathBuf> = vars.iter().map(|(k, v)| ((*k).to_owned(), v.to_path_buf())).collect();
        move |name| map.get(name).cloned()
    }

    fn fake_anvil(root: &Path) -> PathBuf {
        let bin = root.join(ANVIL_IN_NODE_MODULES);
        std::fs::create_dir_all(bin.parent().unwrap()).unwrap();
        std::fs::write(&bin, "").unwrap();
        bin
    }

    #[test]
    fn cache_dir_precedence() {
        let (a, b, c) = (Path::new("/a"), Path::new("/b"), Path::new("/c"));
        let all = env_of(&[("HOLDFAST_DEVNET_CACHE", a), ("XDG_CACHE_HOME", b), ("HOME", c)]);
        assert_eq!(cache_dir_from(&all).unwrap(), PathBuf::from("/a"));
        let xdg = env_of(&[("XDG_CACHE_HOME", b), ("HOME", c)]);
        assert_eq!(cache_dir_from(&xdg).unwrap(), PathBuf::from("/b/holdfast/devnet"));
        let home = env_of(&[("HOME", c)]);
        assert_eq!(cache_dir_from(&home).unwrap(), PathBuf::from("/c/.cache/holdfast/devnet"));
        assert!(cache_dir_from(&env_of(&[])).is_err());
    }

    #[test]
    fn holdfast_anvil_wins_and_must_exist() {
        let tmp = tempfile::tempdir().unwrap();
        let missing = tmp.path().join("nope");
        let err = find_anvil_from(&env_of(&[("HOLDFAST_ANVIL", &missing)]), tmp.path()).unwrap_err();
        assert!(err.to_string().contains("HOLDFAST_ANVIL"), "{err}");
        let exe = tmp.path().join("anvil");
        std::fs::write(&exe, "").unwrap();
        let cache = tmp.path().join("cache");
        fake_anvil(&cache);
        let env = env_of(&[("HOLDFAST_ANVIL", &exe), ("HOLDFAST_DEVNET_CACHE", &cache)]);
        assert_eq!(find_anvil_from(&env, tmp.path()).unwrap(), Some(exe));
    }

    #[test]
    fn cache_before_repo_then_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        let (cache, repo) = (tmp.path().join("cache"), tmp.path().join("repo"));
        let env = env_of(&[("HOLDFAST_DEVNET_CACHE", &cache)]);
        assert_eq!(find_anvil_from(&env, &repo).unwrap(), None);
        let in_repo = fake_anvil(&repo);
        assert_eq!(find_anvil_from(&env, &repo).unwrap(), Some(in_repo.canonicalize().unwrap()));
        let in_cache = fake_anvil(&cache);
        assert_eq!(find_anvil_from(&env, &repo).unwrap(), Some(in_cache));
    }

    #[test]
    fn missing_npm_is_a_clear_error() {
        let tmp = tempfile::tempdir().unwrap();
        let err = install_blocking(tmp.path(), "holdfast-test-no-such-npm").unwrap_err();
        assert!(matches!(err, DevnetError::NpmMissing), "{err:?}");
        let msg = err.to_string();
        assert!(msg.contains("Node.js") && msg.contains("HOLDFAST_ANVIL"), "{msg}");
        // The embedded package files were written for npm.
        assert!(tmp.path().join("package-lock.json").is_file());
    }

    /// Runs the real `npm ci` (network access to the npm registry, a few seconds): `cargo test -p holdfast-devnet
    /// -- --ignored installs_anvil`.
    #[test]
    #[ignore = "downloads anvil from the npm registry"]
    fn installs_anvil_with_npm() {
        let tmp = tempfile::tempdir().unwrap();
        let bin = install_blocking(tmp.path(), "npm").unwrap();
        assert_eq!(bin, tmp.path().join(ANVIL_IN_NODE_MODULES));
        let out = Command::new(&bin).arg("--version").output().unwrap();
        assert!(String::from_utf8_lossy(&out.stdout).contains("1.7.1"));
        // A second call finds it under the lock and does not run npm again.
        assert_eq!(install_blocking(tmp.path(), "holdfast-test-no-such-npm").unwrap(), bin);
    }

    #[test]
    fn embedded_package_files_pin_anvil() {
        assert!(PACKAGE_JSON.contains("@foundry-rs/anvil-linux-amd64"));
        assert!(PACKAGE_LOCK.contains("node_modules/@foundry-rs/anvil-linux-amd64"));
    }
}

//! Finding, installing and starting anvil.
//!
//! [`anvil_path`] looks for anvil in this order:
//!
//! 1. `$HOLDFAST_ANVIL` (an error when set to a missing file: nothing falls back silently);
//! 2. `anvil` on `PATH`, when `anvil --version` reports [`MIN_ANVIL_VERSION`] or later (an older one is skipped,
//!    with a note saying so);
//! 3. `<cache>/node_modules/@foundry-rs/anvil-<platform>/bin/anvil`, where `<cache>` is `$HOLDFAST_DEVNET_CACHE`,
//!    else `$XDG_CACHE_HOME/holdfast/devnet`, else `~/.cache/holdfast/devnet` ([`cache_dir`]);
//! 4. the source tree's own `devnet/node_modules/…` (the test peers' install, when the binary runs from a checkout);
//!
//! and otherwise installs it into `<cache>` with `npm ci --ignore-scripts` from a package list that holds anvil
//! alone (`devnet/anvil/package.json` and its lock, embedded): npm fetches only this platform's
//! `@foundry-rs/anvil-<platform>` package, about 43 MB, and runs no package scripts. The test peers' list
//! (`devnet/package.json`: x402 reference packages, MCP SDK, playwright, viem, solc) is never installed for this.
//! The platforms with an anvil package are Linux x86_64 and arm64 and macOS x86_64 and arm64.

use crate::contracts::USDC;
use crate::error::DevnetError;
use crate::process::{kill_child, log_tail, spawn_logged};
use alloy::providers::{DynProvider, Provider, ProviderBuilder};
use std::net::{Ipv4Addr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The oldest anvil taken from `PATH`: 1.0 runs the Prague hardfork the devnet asks for.
pub const MIN_ANVIL_VERSION: (u64, u64, u64) = (1, 0, 0);

/// The minimal package list: anvil alone (npm picks this platform's binary package).
const PACKAGE_JSON: &str = include_str!("../../../devnet/anvil/package.json");
const PACKAGE_LOCK: &str = include_str!("../../../devnet/anvil/package-lock.json");

/// The npm package holding anvil's binary for this platform (`anvil-linux-amd64`…), if there is one.
pub fn platform_package() -> Option<&'static str> {
    match (std::env::consts::OS, std::env::consts::ARCH) {
        ("linux", "x86_64") => Some("anvil-linux-amd64"),
        ("linux", "aarch64") => Some("anvil-linux-arm64"),
        ("macos", "x86_64") => Some("anvil-darwin-amd64"),
        ("macos", "aarch64") => Some("anvil-darwin-arm64"),
        _ => None,
    }
}

/// Where the anvil binary sits inside an npm install folder on this platform
/// (`node_modules/@foundry-rs/anvil-linux-amd64/bin/anvil` on Linux x86_64).
pub fn anvil_in_node_modules() -> Option<PathBuf> {
    platform_package().map(|p| Path::new("node_modules/@foundry-rs").join(p).join("bin/anvil"))
}

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

/// The version `anvil --version` printed (`anvil Version: 1.7.1-stable` or the older `anvil 0.2.0 (…)`).
pub fn parse_anvil_version(output: &str) -> Option<(u64, u64, u64)> {
    let first = output.lines().next()?;
    let word = first.split_whitespace().find(|w| w.as_bytes().first().is_some_and(u8::is_ascii_digit))?;
    let core = word.split(['-', '+']).next()?;
    let mut parts = core.split('.').map(|p| p.parse::<u64>().ok());
    let (major, minor) = (parts.next()??, parts.next()??);
    let patch = parts.next().flatten().unwrap_or(0);
    Some((major, minor, patch))
}

/// Runs `bin --version` (five seconds at most) and parses what it printed.
fn anvil_version(bin: &Path) -> Option<(u64, u64, u64)> {
    let spawn = || {
        with_plain_env(&mut Command::new(bin))
            .arg("--version")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
    };
    // A binary just written may be briefly "busy" (ETXTBSY): another thread's fork still holds it open for writing
    // until that child execs. That is no answer about the binary: try again a few times.
    let mut child = None;
    for _ in 0..20 {
        match spawn() {
            Ok(c) => {
                child = Some(c);
                break;
            }
            Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy => {
                std::thread::sleep(Duration::from_millis(25));
            }
            Err(_) => return None,
        }
    }
    let mut child = child?;
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(10)),
            _ => {
                kill_child(&mut child);
                return None;
            }
        }
    }
    let mut out = String::new();
    std::io::Read::read_to_string(&mut child.stdout.take()?, &mut out).ok()?;
    parse_anvil_version(&out)
}

/// The first executable `anvil` in the absolute `PATH` folders ([`program_on_path`]).
fn anvil_on_path(path: Option<PathBuf>) -> Option<PathBuf> {
    program_on_path("anvil", path)
}

/// The first executable `name` in the absolute folders of `path`, canonicalized (the binary that is checked is the
/// one that is started). Relative entries (`.`, an empty one) are skipped: they name whatever folder holdfast was
/// started in, and a checkout or a download folder must not supply anvil, npm or ps.
pub(crate) fn program_on_path(name: &str, path: Option<PathBuf>) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt as _;
    std::env::split_paths(&path?)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(name))
        .find(|candidate| {
            std::fs::metadata(candidate).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
        .and_then(|found| found.canonicalize().ok())
}

/// Whether a child program gets environment variable `name`: what finding programs, a home, a locale and temporary
/// files need — never the rest, where API keys and wallet keys live (`OPENAI_API_KEY`, `[wallet] key_env`). anvil and
/// the devnet services get only this.
pub(crate) fn passed_to_children(name: &str) -> bool {
    const KEPT: &[&str] = &["PATH", "HOME", "USER", "LOGNAME", "LANG", "TMPDIR", "TERM", "RUST_LOG"];
    KEPT.contains(&name) || name.starts_with("LC_") || name.starts_with("XDG_")
}

/// Whether npm (installing anvil) gets `name`: [`passed_to_children`], and what a download needs — proxies,
/// certificates and npm's own settings (a private registry's token among them: npm's, and only npm's).
fn passed_to_npm(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    passed_to_children(name)
        || matches!(lower.as_str(), "http_proxy" | "https_proxy" | "no_proxy" | "all_proxy")
        || lower.starts_with("npm_config_")
        || matches!(name, "NODE_EXTRA_CA_CERTS" | "SSL_CERT_FILE" | "SSL_CERT_DIR")
}

/// `cmd` with only the environment `keep` allows.
pub(crate) fn with_env(cmd: &mut Command, keep: fn(&str) -> bool) -> &mut Command {
    cmd.env_clear().envs(std::env::vars_os().filter(|(k, _)| k.to_str().is_some_and(keep)))
}

/// `cmd` with only the environment [`passed_to_children`] allows.
fn with_plain_env(cmd: &mut Command) -> &mut Command {
    with_env(cmd, passed_to_children)
}

/// An anvil binary that is already there, without installing anything: `$HOLDFAST_ANVIL`, a recent enough `anvil`
/// on `PATH`, the cache, or the source tree's `devnet/node_modules`. `Ok(None)` when none exists; an error when
/// `$HOLDFAST_ANVIL` names a missing file. `note` hears why a candidate was passed over.
pub fn find_anvil(note: &dyn Fn(&str)) -> Result<Option<PathBuf>, DevnetError> {
    find_anvil_from(&env_path, &repo_devnet_dir(), note)
}

/// [`find_anvil`] with the environment and the source tree's `devnet` folder given.
fn find_anvil_from(
    env: &dyn Fn(&str) -> Option<PathBuf>,
    repo: &Path,
    note: &dyn Fn(&str),
) -> Result<Option<PathBuf>, DevnetError> {
    if let Some(path) = env("HOLDFAST_ANVIL") {
        return if path.is_file() {
            Ok(Some(path))
        } else {
            Err(DevnetError::AnvilNotFound(format!("HOLDFAST_ANVIL is set to {}, which is not a file", path.display())))
        };
    }
    if let Some(on_path) = anvil_on_path(env("PATH")) {
        match anvil_version(&on_path) {
            Some(v) if v >= MIN_ANVIL_VERSION => {
                note(&format!("using anvil {}.{}.{} from PATH ({})", v.0, v.1, v.2, on_path.display()));
                return Ok(Some(on_path));
            }
            Some(v) => note(&format!(
                "skipping {}: anvil {}.{}.{} is older than {}.{}.{}",
                on_path.display(),
                v.0,
                v.1,
                v.2,
                MIN_ANVIL_VERSION.0,
                MIN_ANVIL_VERSION.1,
                MIN_ANVIL_VERSION.2
            )),
            None => note(&format!("skipping {}: `anvil --version` gave no version", on_path.display())),
        }
    }
    let Some(inside) = anvil_in_node_modules() else { return Ok(None) };
    let cached = cache_dir_from(env)?.join(&inside);
    if cached.is_file() {
        return Ok(Some(cached));
    }
    let repo = repo.join(&inside);
    if repo.is_file() {
        return Ok(Some(repo.canonicalize().unwrap_or(repo)));
    }
    Ok(None)
}

/// The anvil binary to run ([`find_anvil`]), installing it into [`cache_dir`] with `npm ci` when there is none.
/// Installation runs once per cache folder, also across concurrent callers (a lock file serialises them), and
/// reports through `progress` (where, and how much it added); npm's own output goes to stderr.
pub async fn anvil_path(progress: &(dyn Fn(&str) + Send + Sync)) -> Result<PathBuf, DevnetError> {
    if let Some(path) = find_anvil(progress)? {
        return Ok(path);
    }
    let Some(package) = platform_package() else {
        return Err(DevnetError::AnvilNotFound(format!(
            "there is no anvil npm package for {}/{}; install foundry's anvil (on PATH) or set HOLDFAST_ANVIL",
            std::env::consts::OS,
            std::env::consts::ARCH
        )));
    };
    let cache = cache_dir()?;
    progress(&format!(
        "anvil not found; installing @foundry-rs/{package} (about 43 MB, one time) with `npm ci` into {}…",
        cache.display()
    ));
    let installed = {
        let cache = cache.clone();
        // npm's output reaches the caller's progress line by line (stderr stays the caller's: with
        // `--log-format json` it holds events only).
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
        let mut install = tokio::task::spawn_blocking(move || {
            install_blocking(&cache, "npm", &|line: &str| {
                let _ = tx.send(line.to_owned());
            })
        });
        let done = loop {
            tokio::select! {
                Some(line) = rx.recv() => progress(&format!("npm: {line}")),
                done = &mut install => break done,
            }
        };
        while let Ok(line) = rx.try_recv() {
            progress(&format!("npm: {line}"));
        }
        done.map_err(|e| DevnetError::io("installing anvil", std::io::Error::other(e.to_string())))??
    };
    progress(&format!(
        "anvil installed at {} ({:.1} MB under {})",
        installed.display(),
        dir_size(&cache) as f64 / 1e6,
        cache.display()
    ));
    Ok(installed)
}

/// Bytes of the regular files under `dir` (symlinks not followed).
pub fn dir_size(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    entries
        .flatten()
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => dir_size(&e.path()),
            Ok(t) if t.is_file() => e.metadata().map_or(0, |m| m.len()),
            _ => 0,
        })
        .sum()
}

/// Installs anvil into `cache` with the `npm` program under an exclusive file lock; returns the binary's path.
/// Each line npm prints (stdout or stderr) goes to `lines`.
fn install_blocking(cache: &Path, npm: &str, lines: &(dyn Fn(&str) + Sync)) -> Result<PathBuf, DevnetError> {
    let inside = anvil_in_node_modules().ok_or_else(|| {
        DevnetError::AnvilNotFound("there is no anvil npm package for this platform; set HOLDFAST_ANVIL".into())
    })?;
    std::fs::create_dir_all(cache).map_err(|e| DevnetError::io(format!("creating {}", cache.display()), e))?;
    let lock_path = cache.join(".install.lock");
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(|e| DevnetError::io(format!("opening {}", lock_path.display()), e))?;
    lock.lock().map_err(|e| DevnetError::io(format!("locking {}", lock_path.display()), e))?;
    let bin = cache.join(&inside);
    if bin.is_file() {
        // Someone else installed it while we waited for the lock.
        return Ok(bin);
    }
    for (name, text) in [("package.json", PACKAGE_JSON), ("package-lock.json", PACKAGE_LOCK)] {
        let path = cache.join(name);
        std::fs::write(&path, text).map_err(|e| DevnetError::io(format!("writing {}", path.display()), e))?;
    }
    // --ignore-scripts: the anvil package's postinstall only re-downloads what npm already placed; no package code
    // runs at install time.
    let npm = program_on_path(npm, std::env::var_os("PATH").map(PathBuf::from)).ok_or(DevnetError::NpmMissing)?;
    // npm's own cache (the downloaded tarballs, its logs) goes into a folder of ours, removed after the install:
    // nothing lands in ~/.npm (about 20 MB otherwise), and the cache holds only the installed anvil.
    let npm_cache = cache.join(".npm-cache");
    let _remove_npm_cache = RemoveOnDrop(npm_cache.clone());
    let mut child = with_env(&mut Command::new(npm), passed_to_npm)
        .args(["ci", "--no-audit", "--no-fund", "--ignore-scripts", "--cache"])
        .arg(&npm_cache)
        .current_dir(cache)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => DevnetError::NpmMissing,
            _ => DevnetError::io("running npm", e),
        })?;
    let forward = |stream: Option<Box<dyn std::io::Read + Send>>| {
        if let Some(stream) = stream {
            for line in std::io::BufRead::lines(std::io::BufReader::new(stream)).map_while(Result::ok) {
                if !line.trim().is_empty() {
                    lines(&line);
                }
            }
        }
    };
    let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
    std::thread::scope(|scope| {
        scope.spawn(|| forward(stdout.map(|s| Box::new(s) as Box<dyn std::io::Read + Send>)));
        forward(stderr.map(|s| Box::new(s) as Box<dyn std::io::Read + Send>));
    });
    let status = child.wait().map_err(|e| DevnetError::io("running npm", e))?;
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

/// Removes a folder when dropped (best effort).
struct RemoveOnDrop(PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
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

/// How many past blocks' states anvil keeps (in memory): the reads holdfast makes are of the latest block, the block
/// a simulation builds on, and a nonce's use searched backwards from the head in doubling steps (so a recent one is
/// proven from recent states; an older one is `unknown`, never misjudged).
pub const KEPT_STATES: u32 = 1024;

/// The anvil command line: loopback only, `chain_id` (the devnet's own by default, [`crate::CHAIN_ID`]), a
/// Prague-or-later EVM (Base runs Isthmus, which includes Prague), no console output; the genesis block at
/// `genesis_timestamp` when given.
///
/// Its history is pruned to the last [`KEPT_STATES`] states, kept in memory: by default anvil offloads old states to
/// `~/.foundry/anvil/tmp`, where a long-running devnet grows without bound and a killed one leaves them for good
/// (gigabytes after a test suite). Its cache path is `cache_dir` (the devnet's folder), so nothing of it is written
/// under HOME.
///
/// With a `chain_file`, anvil loads the chain from it when it exists and saves the chain there every
/// [`STATE_INTERVAL_SECS`] seconds and when it stops on SIGTERM (anvil's `--state`, `--state-interval`): a devnet
/// that is killed loses at most that many seconds of its chain.
fn anvil_command(
    bin: &Path,
    port: u16,
    chain_id: u64,
    genesis_timestamp: Option<u64>,
    cache_dir: &Path,
    chain_file: Option<&Path>,
) -> Command {
    let mut cmd = Command::new(bin);
    with_plain_env(&mut cmd);
    cmd.args(["--host", "127.0.0.1", "--port"]).arg(port.to_string()).args([
        "--chain-id",
        &chain_id.to_string(),
        "--hardfork",
        "prague",
        "--silent",
        "--prune-history",
        &KEPT_STATES.to_string(),
    ]);
    cmd.arg("--cache-path").arg(cache_dir);
    if let Some(timestamp) = genesis_timestamp {
        cmd.arg("--timestamp").arg(timestamp.to_string());
    }
    if let Some(path) = chain_file {
        cmd.arg("--state").arg(path).args(["--state-interval", &STATE_INTERVAL_SECS.to_string()]);
    }
    cmd
}

/// How often a devnet's anvil saves its chain to the devnet folder (besides on SIGTERM).
pub const STATE_INTERVAL_SECS: u32 = 5;

/// Where a devnet keeps its chain between runs, and which chain a start must find there.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ChainFile<'a> {
    /// The state file (anvil's `--state`).
    pub path: &'a Path,
    /// `true`: resume the chain saved at `path` (anvil must then answer with the devnet's contracts, not necessarily
    /// with the saved genesis, see `start_on`); `false`: start a new chain, saved at `path` (a file already there is
    /// removed first).
    pub resume: bool,
}

/// Why one start attempt failed.
enum Attempt {
    /// The port was taken between choosing and binding it; try another.
    PortTaken(String),
    /// Anything else.
    Failed(DevnetError),
}

/// Starts anvil on a free port with its output in `log`, keeping its chain in `chain_file`, and waits until it answers
/// with `chain_id` and, for a new chain, an empty USDC address (so it is really the fresh node we started, not
/// someone else's on a recycled port) or, for a resumed one, the devnet's USDC. Retries with another port when the
/// chosen one was taken meanwhile.
pub(crate) async fn start_anvil(
    bin: &Path,
    log: &Path,
    detached: bool,
    chain_id: u64,
    chain_file: ChainFile<'_>,
) -> Result<StartedAnvil, DevnetError> {
    if !chain_file.resume {
        match std::fs::remove_file(chain_file.path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(DevnetError::io(format!("removing {}", chain_file.path.display()), e)),
        }
    }
    start_with(bin, log, detached, chain_id, None, Some(chain_file)).await
}

/// [`start_anvil`] with the genesis block stamped `genesis_timestamp` (anvil's `--timestamp`) when given: anvil's
/// clock starts there and runs on in real time, so every block is stamped that far behind the wall clock.
pub(crate) async fn start_anvil_at(
    bin: &Path,
    log: &Path,
    detached: bool,
    chain_id: u64,
    genesis_timestamp: Option<u64>,
) -> Result<StartedAnvil, DevnetError> {
    start_with(bin, log, detached, chain_id, genesis_timestamp, None).await
}

async fn start_with(
    bin: &Path,
    log: &Path,
    detached: bool,
    chain_id: u64,
    genesis_timestamp: Option<u64>,
    chain_file: Option<ChainFile<'_>>,
) -> Result<StartedAnvil, DevnetError> {
    let mut last = String::new();
    for _ in 0..5 {
        let port = free_port()?;
        match start_on(bin, port, log, detached, chain_id, genesis_timestamp, chain_file).await {
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
    expected_chain_id: u64,
    genesis_timestamp: Option<u64>,
    chain_file: Option<ChainFile<'_>>,
) -> Result<StartedAnvil, Attempt> {
    let cache_dir =
        log.parent().map_or_else(|| std::env::temp_dir().join("holdfast-anvil-cache"), |d| d.join("anvil-cache"));
    let command =
        anvil_command(bin, port, expected_chain_id, genesis_timestamp, &cache_dir, chain_file.map(|c| c.path));
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
            if chain_id != expected_chain_id {
                kill_child(&mut child);
                return Err(Attempt::PortTaken(format!("port {port} answers with chain id {chain_id}")));
            }
            // A resumed chain must hold the devnet's contracts (the saved chain is checked further by the caller:
            // its key and account); a new one must be empty. (Not by its genesis: anvil does not always keep the
            // genesis block of a chain it loaded when it saves it again, and makes a new one on the next load.)
            if chain_file.is_some_and(|c| c.resume) {
                return match provider.get_code_at(USDC).await {
                    Ok(code) if !code.is_empty() => Ok(StartedAnvil { child, port, rpc_url, provider }),
                    Ok(_) => Err(fail(
                        &mut child,
                        format!(
                            "the chain loaded from {} holds no devnet (no USDC contract); `holdfast devnet reset` \
                             starts a new chain",
                            chain_file.map_or_else(String::new, |c| c.path.display().to_string())
                        ),
                    )),
                    Err(e) => Err(fail(&mut child, format!("anvil answered eth_chainId but not eth_getCode: {e}"))),
                };
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
    use std::sync::Mutex;

    fn env_of(vars: &[(&str, &Path)]) -> impl Fn(&str) -> Option<PathBuf> + use<> {
        let map: HashMap<String, PathBuf> = vars.iter().map(|(k, v)| ((*k).to_owned(), v.to_path_buf())).collect();
        move |name| map.get(name).cloned()
    }

    fn fake_anvil(root: &Path) -> PathBuf {
        let bin = root.join(anvil_in_node_modules().unwrap());
        std::fs::create_dir_all(bin.parent().unwrap()).unwrap();
        std::fs::write(&bin, "").unwrap();
        bin
    }

    /// An executable `anvil` script in `dir` that prints `version_line`.
    fn anvil_script(dir: &Path, version_line: &str) -> PathBuf {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::create_dir_all(dir).unwrap();
        let bin = dir.join("anvil");
        std::fs::write(&bin, format!("#!/bin/sh\necho '{version_line}'\n")).unwrap();
        std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
        bin
    }

    fn quiet(_: &str) {}

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
        let err = find_anvil_from(&env_of(&[("HOLDFAST_ANVIL", &missing)]), tmp.path(), &quiet).unwrap_err();
        assert!(err.to_string().contains("HOLDFAST_ANVIL"), "{err}");
        let exe = tmp.path().join("anvil");
        std::fs::write(&exe, "").unwrap();
        let cache = tmp.path().join("cache");
        fake_anvil(&cache);
        let env = env_of(&[("HOLDFAST_ANVIL", &exe), ("HOLDFAST_DEVNET_CACHE", &cache)]);
        assert_eq!(find_anvil_from(&env, tmp.path(), &quiet).unwrap(), Some(exe));
    }

    #[test]
    fn cache_before_repo_then_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        let (cache, repo) = (tmp.path().join("cache"), tmp.path().join("repo"));
        let env = env_of(&[("HOLDFAST_DEVNET_CACHE", &cache)]);
        assert_eq!(find_anvil_from(&env, &repo, &quiet).unwrap(), None);
        let in_repo = fake_anvil(&repo);
        assert_eq!(find_anvil_from(&env, &repo, &quiet).unwrap(), Some(in_repo.canonicalize().unwrap()));
        let in_cache = fake_anvil(&cache);
        assert_eq!(find_anvil_from(&env, &repo, &quiet).unwrap(), Some(in_cache));
    }

    #[test]
    fn a_recent_anvil_on_path_comes_before_the_cache_and_an_old_one_is_skipped_with_a_note() {
        let tmp = tempfile::tempdir().unwrap();
        let (cache, repo, bin) = (tmp.path().join("cache"), tmp.path().join("repo"), tmp.path().join("bin"));
        let in_cache = fake_anvil(&cache);
        let notes = Mutex::new(Vec::<String>::new());
        let note = |l: &str| notes.lock().unwrap().push(l.to_owned());
        let env = env_of(&[("HOLDFAST_DEVNET_CACHE", &cache), ("PATH", &bin)]);

        let on_path = anvil_script(&bin, "anvil Version: 1.7.1-stable");
        assert_eq!(find_anvil_from(&env, &repo, &note).unwrap(), Some(on_path.canonicalize().unwrap()));
        assert!(notes.lock().unwrap()[0].contains("using anvil 1.7.1 from PATH"), "{notes:?}");

        anvil_script(&bin, "anvil 0.2.0 (5c3b075 2024-03-12T00:04:15.513262581Z)");
        assert_eq!(find_anvil_from(&env, &repo, &note).unwrap(), Some(in_cache));
        assert!(notes.lock().unwrap()[1].contains("is older than 1.0.0"), "{notes:?}");

        anvil_script(&bin, "not a version");
        fake_anvil(&repo);
        std::fs::remove_file(cache.join(anvil_in_node_modules().unwrap())).unwrap();
        let found = find_anvil_from(&env, &repo, &note).unwrap().unwrap();
        assert!(found.starts_with(repo.canonicalize().unwrap()), "{found:?}");
        assert!(notes.lock().unwrap()[2].contains("gave no version"), "{notes:?}");
    }

    #[test]
    fn relative_path_entries_never_supply_anvil() {
        let tmp = tempfile::tempdir().unwrap();
        let script = anvil_script(&tmp.path().join("bin"), "anvil Version: 1.7.1-stable");
        assert_eq!(anvil_on_path(Some(tmp.path().join("bin"))), Some(script.canonicalize().unwrap()));
        assert_eq!(anvil_on_path(Some(PathBuf::from("bin"))), None, "a relative entry names the working folder");
        let joined = std::env::join_paths([PathBuf::from(""), PathBuf::from("."), tmp.path().join("bin")]).unwrap();
        assert_eq!(anvil_on_path(Some(joined.into())), Some(script.canonicalize().unwrap()));
    }

    #[test]
    fn children_get_no_secrets_from_the_environment() {
        for kept in ["PATH", "HOME", "LC_ALL", "XDG_CACHE_HOME"] {
            assert!(passed_to_children(kept) && passed_to_npm(kept), "{kept}");
        }
        // npm's download settings, its registry token included, go to npm only: anvil needs none of them.
        for npm_only in
            ["HTTPS_PROXY", "no_proxy", "npm_config_registry", "npm_config__authToken", "NODE_EXTRA_CA_CERTS"]
        {
            assert!(passed_to_npm(npm_only) && !passed_to_children(npm_only), "{npm_only}");
        }
        for dropped in
            ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "HOLDFAST_WALLET_KEY", "AWS_SECRET_ACCESS_KEY", "NPM_TOKEN"]
        {
            assert!(!passed_to_children(dropped) && !passed_to_npm(dropped), "{dropped}");
        }
    }

    #[test]
    fn versions_parse_in_both_shapes() {
        assert_eq!(parse_anvil_version("anvil Version: 1.7.1-stable\nCommit SHA: x"), Some((1, 7, 1)));
        assert_eq!(parse_anvil_version("anvil Version: 1.7.1"), Some((1, 7, 1)));
        assert_eq!(parse_anvil_version("anvil 0.2.0 (5c3b075 2024-03-12)"), Some((0, 2, 0)));
        assert_eq!(parse_anvil_version("anvil 1.2-nightly"), Some((1, 2, 0)));
        assert_eq!(parse_anvil_version("anvil"), None);
        assert_eq!(parse_anvil_version(""), None);
        assert_eq!(parse_anvil_version("anvil 99999999999999999999999.1"), None);
    }

    #[test]
    fn missing_npm_is_a_clear_error() {
        let tmp = tempfile::tempdir().unwrap();
        let err = install_blocking(tmp.path(), "holdfast-test-no-such-npm", &|_| {}).unwrap_err();
        assert!(matches!(err, DevnetError::NpmMissing), "{err:?}");
        let msg = err.to_string();
        assert!(msg.contains("Node.js") && msg.contains("HOLDFAST_ANVIL"), "{msg}");
        // The embedded package files were written for npm.
        assert!(tmp.path().join("package-lock.json").is_file());
    }

    /// Runs the real `npm ci` (network access to the npm registry, a few seconds); `scripts/test.sh` runs it with
    /// `cargo test -p holdfast-devnet --lib -- --ignored installs_anvil`.
    #[test]
    #[ignore = "downloads anvil from the npm registry"]
    fn installs_anvil_alone_with_npm_in_under_100_mb() {
        let tmp = tempfile::tempdir().unwrap();
        let bin = install_blocking(tmp.path(), "npm", &|_| {}).unwrap();
        assert_eq!(bin, tmp.path().join(anvil_in_node_modules().unwrap()));
        assert_eq!(anvil_version(&bin), Some((1, 7, 1)));
        let size = dir_size(tmp.path());
        assert!(size <= 100_000_000, "the install adds at most 100 MB: {size} bytes");
        // Only anvil: none of the test peers' packages.
        let installed: Vec<String> = std::fs::read_dir(tmp.path().join("node_modules/@foundry-rs"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(installed.len(), 2, "the anvil launcher and this platform's binary: {installed:?}");
        // npm's download cache was ours, and is gone: nothing of it in ~/.npm or left beside anvil.
        assert!(!tmp.path().join(".npm-cache").exists(), "npm's cache was not removed");
        for peer in ["@x402", "viem", "playwright-core", "solc", "@modelcontextprotocol"] {
            assert!(!tmp.path().join("node_modules").join(peer).exists(), "{peer} was installed");
        }
        // A second call finds it under the lock and does not run npm again.
        assert_eq!(install_blocking(tmp.path(), "holdfast-test-no-such-npm", &|_| {}).unwrap(), bin);
    }

    #[test]
    fn the_embedded_package_list_holds_anvil_alone() {
        assert!(PACKAGE_JSON.contains("\"@foundry-rs/anvil\": \"1.7.1\""));
        for platform in ["linux-amd64", "linux-arm64", "darwin-amd64", "darwin-arm64"] {
            assert!(PACKAGE_LOCK.contains(&format!("node_modules/@foundry-rs/anvil-{platform}")), "{platform}");
        }
        for peer in ["x402", "viem", "playwright", "solc", "modelcontextprotocol", "cast"] {
            assert!(!PACKAGE_LOCK.contains(peer), "{peer}");
        }
    }
}

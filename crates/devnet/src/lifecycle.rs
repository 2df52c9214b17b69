//! `up` and `down`: the one-command devnet in a folder.
//!
//! [`up`] starts anvil and the services process detached (own process group, output in `DIR/anvil.log` and
//! `DIR/services.log`), so they outlive the command; [`down`] stops exactly the recorded processes. `devnet.json`
//! is written as soon as anvil runs (state `starting`), so even an interrupted `up` leaves the pids for `down`.
//! Any failure during `up` kills what it started and removes `devnet.json` again (or, for a saved chain, puts its
//! record back).
//!
//! A devnet remembers: anvil keeps its chain in `DIR/chain-state.json` (saved every few seconds and when it stops),
//! and the next `up` resumes that chain with the same wallet key, so balances and earlier transactions are still
//! there. [`reset`](crate::reset) starts over.

use crate::anvil::{ChainFile, anvil_path, free_port, start_anvil};
use crate::config::write_config;
use crate::contracts::{CHAIN_ID, fund_wallet, is_local_chain_id, place_and_seed};
use crate::error::DevnetError;
use crate::info::{
    ANVIL_LOG, AnvilProcess, CONFIG_FILE, ContractAddresses, DevnetInfo, DevnetState, KEY_FILE, SERVICES_LOG,
    STATE_FILE, STATE_PREV, ServicesProcess, WalletInfo, X402Info, devnet_json_path, read_info, write_info,
};
use crate::process::{Expect, StopOutcome, is_ours, is_running, kill_child, log_tail, release, spawn_logged, stop};
use crate::services::HEALTH_PATH;
use crate::wallet::create_key_file;
use alloy::primitives::{Address, B256};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Receives one human-readable progress line per step.
pub type Progress = Arc<dyn Fn(&str) + Send + Sync>;

/// How long a stopped process gets between SIGTERM and SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// Options of [`up`].
#[derive(Clone)]
pub struct UpOptions {
    /// The devnet folder (created when missing).
    pub dir: PathBuf,
    /// The executable re-run as `<services_exe> devnet services --dir DIR` for the services process (the
    /// holdfast binary; tests use `holdfast-devnet-services`).
    pub services_exe: PathBuf,
    /// Progress lines.
    pub progress: Progress,
    /// The chain id anvil runs with ([`CHAIN_ID`] unless a test needs another). A running devnet is reused
    /// whatever its chain id.
    pub chain_id: u64,
    /// Whether a public network's chain id may be used (then everything the devnet wallet signs is valid on that
    /// network too): without it, [`up`] refuses such an id before starting anything.
    pub allow_public_chain_id: bool,
    /// The funds sit in a smart account (a Safe) whose limited signer is the wallet key, with these on-chain limits
    /// (see [`crate::account`]); `None`: the key holds the funds itself.
    pub account: Option<Vec<crate::account::OnchainLimit>>,
}

impl UpOptions {
    /// Options with silent progress, the devnet's own chain id and the funds in a smart account with the default
    /// on-chain limits ([`crate::account::OnchainLimit::defaults`]).
    pub fn new(dir: impl Into<PathBuf>, services_exe: impl Into<PathBuf>) -> Self {
        Self {
            dir: dir.into(),
            services_exe: services_exe.into(),
            progress: Arc::new(|_| {}),
            chain_id: CHAIN_ID,
            allow_public_chain_id: false,
            account: Some(crate::account::OnchainLimit::defaults()),
        }
    }
}

/// A warning when `chain_id` is not a local one: it may be a public network's, and whatever the devnet wallet signs
/// on it is valid there too.
pub fn public_chain_warning(chain_id: u64) -> Option<String> {
    (!is_local_chain_id(chain_id)).then(|| {
        format!(
            "WARNING: chain id {chain_id} is not a local chain id and may belong to a public network; transactions \
             and payment authorizations signed on this devnet would be valid there too. Run `holdfast devnet down` \
             and start it again without --chain-id to get the devnet's own id {CHAIN_ID}."
        )
    })
}

impl std::fmt::Debug for UpOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UpOptions")
            .field("dir", &self.dir)
            .field("services_exe", &self.services_exe)
            .field("chain_id", &self.chain_id)
            .field("allow_public_chain_id", &self.allow_public_chain_id)
            .finish_non_exhaustive()
    }
}

/// The processes `up` started, killed on drop unless released.
struct Started {
    anvil: Option<Child>,
    services: Option<Child>,
}

impl Started {
    /// Lets the processes run on after `up` returns.
    fn release(&mut self) {
        if let Some(child) = self.services.take() {
            release(child);
        }
        if let Some(child) = self.anvil.take() {
            release(child);
        }
    }
}

impl Drop for Started {
    fn drop(&mut self) {
        for child in [self.services.as_mut(), self.anvil.as_mut()].into_iter().flatten() {
            kill_child(child);
        }
    }
}

fn canonical_dir(dir: &Path) -> Result<PathBuf, DevnetError> {
    dir.canonicalize().map_err(|e| DevnetError::io(format!("resolving {}", dir.display()), e))
}

fn services_expect(dir: &Path) -> Expect {
    Expect::Services { dir: dir.to_string_lossy().into_owned() }
}

/// Starts a devnet in `opts.dir` (see the crate docs). When the folder's `devnet.json` describes a devnet whose
/// processes are all still running, nothing is started and that devnet is returned with `already_up` set.
pub async fn up(opts: UpOptions) -> Result<DevnetInfo, DevnetError> {
    let progress = opts.progress.clone();
    if !is_local_chain_id(opts.chain_id) && !opts.allow_public_chain_id {
        return Err(DevnetError::PublicChainId(opts.chain_id));
    }
    std::fs::create_dir_all(&opts.dir).map_err(|e| DevnetError::io(format!("creating {}", opts.dir.display()), e))?;
    let dir = canonical_dir(&opts.dir)?;

    let existing = read_info(&dir)?;
    if let Some(existing) = existing.clone()
        && existing.state != DevnetState::Down
    {
        let anvil_alive = is_ours(existing.anvil.pid, &Expect::Anvil { port: existing.anvil.port });
        let services_alive = existing.services.pid != 0 && is_ours(existing.services.pid, &services_expect(&dir));
        match (anvil_alive, services_alive, existing.state) {
            (true, true, DevnetState::Up) => {
                progress(&format!(
                    "the devnet in {} is already up (anvil pid {}, services pid {}); nothing to do",
                    dir.display(),
                    existing.anvil.pid,
                    existing.services.pid
                ));
                if let Some(warning) = public_chain_warning(existing.chain_id) {
                    progress(&warning);
                }
                return Ok(DevnetInfo { already_up: true, ..existing });
            }
            (false, false, _) => {
                progress("found a devnet.json whose processes are gone (killed?)");
            }
            (anvil, services, state) => {
                let alive = |b: bool| if b { "running" } else { "not running" };
                return Err(DevnetError::PartlyUp {
                    dir,
                    detail: format!(
                        "state {state:?}, anvil pid {} {}, services pid {} {}",
                        existing.anvil.pid,
                        alive(anvil),
                        existing.services.pid,
                        alive(services)
                    ),
                });
            }
        }
    }

    let saved = saved_chain(&dir, existing, &opts)?;
    let chain_id = opts.chain_id;
    if let Some(warning) = public_chain_warning(chain_id) {
        progress(&warning);
    }
    let anvil_bin = anvil_path(&*progress).await?;
    let state_path = dir.join(STATE_FILE);
    let chain_file = ChainFile { path: &state_path, resume: saved.is_some() };
    match &saved {
        Some(s) => progress(&format!(
            "starting anvil ({}) with the chain saved in {STATE_FILE} (wallet {})…",
            anvil_bin.display(),
            s.info.wallet.address
        )),
        None => progress(&format!("starting anvil ({}) with a new chain…", anvil_bin.display())),
    }
    let log = dir.join(ANVIL_LOG);
    let anvil = match start_anvil(&anvil_bin, &log, true, chain_id, chain_file).await {
        Ok(anvil) => anvil,
        // The state file may have been caught mid-write by a kill: the copy of the last clean stop is tried once.
        Err(first) if saved.is_some() && dir.join(STATE_PREV).is_file() => {
            progress(&format!(
                "the saved chain in {STATE_FILE} could not be resumed ({first}); resuming the copy kept at the last \
                 clean stop ({STATE_PREV}): what happened on the chain after that stop is lost"
            ));
            std::fs::copy(dir.join(STATE_PREV), &state_path)
                .map_err(|e| DevnetError::io(format!("copying {STATE_PREV} to {STATE_FILE}"), e))?;
            start_anvil(&anvil_bin, &log, true, chain_id, chain_file).await?
        }
        Err(e) => return Err(e),
    };
    let mut started = Started { anvil: None, services: None };
    let anvil_pid = anvil.child.id();
    let provider = anvil.provider.clone();
    let (anvil_port, rpc_url) = (anvil.port, anvil.rpc_url.clone());
    started.anvil = Some(anvil.child);
    progress(&format!("anvil is up on {rpc_url} (pid {anvil_pid}, chain id {chain_id})"));

    let result = async {
        let services_port = free_port()?;
        let services_url = format!("http://127.0.0.1:{services_port}");
        // The genesis the node shows now: anvil may give a resumed chain a new genesis block (it does not always
        // save the one it loaded); the journal's entries signed before are then told apart by their receipts.
        let genesis = genesis_hash(&provider).await?;
        if let Some(s) = &saved
            && s.genesis != genesis
        {
            progress(&format!(
                "anvil shows the resumed chain with a new genesis block ({genesis}, saved {}); its state, key and \
                 transactions are the saved ones",
                s.genesis
            ));
        }
        let mut info = DevnetInfo {
            chain_id,
            rpc_url: rpc_url.clone(),
            anvil: AnvilProcess { pid: anvil_pid, port: anvil_port },
            services: ServicesProcess { pid: 0, port: services_port, url: services_url.clone() },
            contracts: ContractAddresses::devnet(),
            wallet: WalletInfo {
                address: Address::ZERO,
                key_file: KEY_FILE.into(),
                account: None,
                signer: None,
                limits: Vec::new(),
            },
            x402: Some(X402Info::for_services(&services_url)),
            config: CONFIG_FILE.into(),
            started_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            state: DevnetState::Starting,
            genesis: Some(genesis.to_string()),
            already_up: false,
        };
        if let Some(s) = &saved {
            info.wallet = s.info.wallet.clone();
        }
        write_info(&dir, &info)?;

        let account = match &saved {
            Some(s) => resume_chain(&provider, &dir, &s.info, &*progress).await?,
            None => {
                let dev = place_and_seed(&provider, &*progress).await?;
                let wallet = create_key_file(&dir.join(KEY_FILE))?;
                info.wallet.address = wallet;
                progress(&format!("created a fresh burner wallet {wallet} (key in {KEY_FILE}, mode 0600)"));
                match &opts.account {
                    Some(limits) => {
                        let account =
                            crate::account::set_up_account(&provider, dev, wallet, limits, &*progress).await?;
                        info.wallet.account = Some(account.to_checksum(None));
                        info.wallet.signer = Some(wallet.to_checksum(None));
                        info.wallet.limits = limits.clone();
                        Some(account)
                    }
                    None => {
                        fund_wallet(&provider, dev, wallet).await?;
                        progress("funded the wallet with 10 ETH and 10000 USDC");
                        None
                    }
                }
            }
        };
        write_config(&dir, anvil_port, chain_id, &services_url, account)?;
        progress(&format!("wrote {CONFIG_FILE} and presets.ron"));
        write_info(&dir, &info)?;

        crate::services::check_facilitator_account(&provider).await?;
        progress(&format!("starting the services (quoter behind an x402 paywall, facilitator) on {services_url}…"));
        let mut cmd = Command::new(&opts.services_exe);
        // The services (holdfast itself) need no secret of this process: no API key, no wallet key variable.
        crate::anvil::with_env(&mut cmd, crate::anvil::passed_to_children);
        cmd.args(["devnet", "services", "--dir"]).arg(&dir);
        let services_log = dir.join(SERVICES_LOG);
        let child = spawn_logged(cmd, &services_log, true, "the devnet services")?;
        info.services.pid = child.id();
        let child = started.services.insert(child);
        wait_healthy(&services_url, child, &services_log).await?;
        info.state = DevnetState::Up;
        write_info(&dir, &info)?;
        Ok(info)
    }
    .await;

    match result {
        Ok(info) => {
            started.release();
            progress(&format!("devnet up in {}", dir.display()));
            Ok(info)
        }
        Err(e) => {
            drop(started);
            match saved {
                // The saved chain stays for the next `up` (or `devnet reset`): its record goes back as it was.
                Some(s) => {
                    let _ = write_info(&dir, &DevnetInfo { state: DevnetState::Down, ..s.info });
                }
                None => {
                    let _ = std::fs::remove_file(devnet_json_path(&dir));
                }
            }
            progress("start-up failed; stopped what was started");
            Err(e)
        }
    }
}

/// Whether the devnet in `dir` runs now: its `devnet.json` says it is up and its anvil is still the process `up`
/// started (a folder without one, or a devnet stopped or killed, is not up).
pub fn is_up(dir: &Path) -> Result<bool, DevnetError> {
    Ok(read_info(dir)?.is_some_and(|info| {
        info.state == DevnetState::Up && is_ours(info.anvil.pid, &Expect::Anvil { port: info.anvil.port })
    }))
}

/// A devnet folder's saved chain, resumed by [`up`].
struct SavedChain {
    /// The devnet as it was last described.
    info: DevnetInfo,
    /// Its chain's genesis block hash as last recorded (anvil may show another after the resume).
    genesis: B256,
}

/// The chain `up` resumes in `dir`: the last `devnet.json` with a genesis, its state file and its key file all there.
/// A saved chain of another chain id is refused; different account options are named and the saved chain kept.
fn saved_chain(dir: &Path, existing: Option<DevnetInfo>, opts: &UpOptions) -> Result<Option<SavedChain>, DevnetError> {
    let Some(info) = existing else { return Ok(None) };
    let Some(genesis) = info.genesis.as_deref() else { return Ok(None) };
    if !dir.join(STATE_FILE).is_file() || !dir.join(KEY_FILE).is_file() {
        (opts.progress)(&format!(
            "{STATE_FILE} or {KEY_FILE} is missing in {}: starting a new chain with a new wallet",
            dir.display()
        ));
        return Ok(None);
    }
    let genesis: B256 = genesis.parse().map_err(|_| DevnetError::SavedChain {
        dir: dir.to_path_buf(),
        detail: format!("records an unreadable genesis hash {genesis:?} in devnet.json"),
    })?;
    if info.chain_id != opts.chain_id {
        return Err(DevnetError::SavedChain {
            dir: dir.to_path_buf(),
            detail: format!("runs chain id {}, not the {} asked for", info.chain_id, opts.chain_id),
        });
    }
    let asked = opts.account.clone().unwrap_or_default();
    if info.wallet.account.is_some() != opts.account.is_some() || info.wallet.limits != asked {
        let kept = match &info.wallet.account {
            Some(account) => format!("its smart account {account} and its on-chain limits"),
            None => "its plain wallet (no smart account)".to_owned(),
        };
        (opts.progress)(&format!(
            "the saved chain keeps {kept}; the account options given apply to a new chain (`holdfast devnet reset`)"
        ));
    }
    Ok(Some(SavedChain { info, genesis }))
}

/// The genesis block's hash: the chain's identity across restarts.
async fn genesis_hash(provider: &alloy::providers::DynProvider) -> Result<B256, DevnetError> {
    use alloy::providers::Provider as _;
    let block = provider
        .get_block_by_number(0.into())
        .await
        .map_err(|e| DevnetError::rpc("reading the genesis block", e))?
        .ok_or_else(|| DevnetError::rpc("reading the genesis block", "anvil has none"))?;
    Ok(block.header.hash)
}

/// Checks a resumed chain against the folder (its key is the saved wallet's, its contracts and account are there)
/// and mines one block, so that the head (and the price feeds, which answer its timestamp) is current again.
/// Returns the smart account, when the funds sit in one.
async fn resume_chain(
    provider: &alloy::providers::DynProvider,
    dir: &Path,
    info: &DevnetInfo,
    progress: &(dyn Fn(&str) + Send + Sync),
) -> Result<Option<Address>, DevnetError> {
    use alloy::providers::Provider as _;
    use alloy::providers::ext::AnvilApi as _;
    let saved = |detail: String| DevnetError::SavedChain { dir: dir.to_path_buf(), detail };
    let key = crate::wallet::load_key_file(&dir.join(KEY_FILE))?;
    if key.address() != info.wallet.address {
        return Err(saved(format!(
            "belongs to the wallet {}, but {KEY_FILE} holds the key of {}",
            info.wallet.address,
            key.address()
        )));
    }
    let account = match &info.wallet.account {
        Some(text) => {
            Some(text.parse::<Address>().map_err(|_| saved(format!("records an unreadable account {text:?}")))?)
        }
        None => None,
    };
    for (what, at) in [("USDC", Some(info.contracts.usdc)), ("the smart account", account)] {
        let Some(at) = at else { continue };
        let code = provider.get_code_at(at).await.map_err(|e| DevnetError::rpc(format!("reading {what}'s code"), e))?;
        if code.is_empty() {
            return Err(saved(format!("has no code at {what}'s address {at}")));
        }
    }
    provider.anvil_mine(Some(1), None).await.map_err(|e| DevnetError::rpc("mining a block on the resumed chain", e))?;
    let head = provider.get_block_number().await.map_err(|e| DevnetError::rpc("reading the head block", e))?;
    progress(&format!("resumed the saved chain at block {head} with the wallet {}", info.wallet.address));
    Ok(account)
}

/// Polls `GET {url}/health` until it answers 200, the child exits, or 20 s pass.
async fn wait_healthy(url: &str, child: &mut Child, log: &Path) -> Result<(), DevnetError> {
    let client = alloy::transports::http::reqwest::Client::builder()
        .timeout(Duration::from_secs(2))
        .build()
        .map_err(|e| DevnetError::Services(format!("building an HTTP client: {e}")))?;
    let health = format!("{url}{HEALTH_PATH}");
    let fail =
        |reason: String| DevnetError::ServicesStart { reason, log: log.to_path_buf(), log_tail: log_tail(log, 20) };
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return Err(fail(format!("the services process exited during start-up ({status})")));
        }
        let last = match client.get(&health).send().await {
            Ok(resp) if resp.status().is_success() => return Ok(()),
            Ok(resp) => format!("{health} answered {}", resp.status()),
            Err(e) => format!("{health}: {e}"),
        };
        if Instant::now() >= deadline {
            return Err(fail(format!("not healthy within 20 s ({last})")));
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// One recorded process and what `down` did with it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StoppedProcess {
    /// `anvil` or `services`.
    pub name: String,
    /// Its recorded pid.
    pub pid: u32,
    /// What happened.
    pub outcome: StopOutcome,
}

/// What [`down`] did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DownReport {
    /// The devnet folder.
    pub dir: PathBuf,
    /// Whether the folder described a devnet that was not already down.
    pub was_up: bool,
    /// The recorded processes and what happened to each.
    pub processes: Vec<StoppedProcess>,
    /// A one-line human summary.
    pub message: String,
}

/// Stops the devnet in `dir`: exactly the pids in its `devnet.json` (services first, then anvil), each only if
/// `/proc` still shows the command we started; SIGTERM, then SIGKILL after 5 s. Marks `devnet.json` as down. A
/// folder without a running devnet is not an error: the report says so.
pub async fn down(dir: &Path) -> Result<DownReport, DevnetError> {
    let not_up = |dir: PathBuf, message: String| DownReport { dir, was_up: false, processes: vec![], message };
    if !dir.exists() {
        return Ok(not_up(dir.to_path_buf(), format!("no devnet in {} (the folder does not exist)", dir.display())));
    }
    let dir = canonical_dir(dir)?;
    let Some(mut info) = read_info(&dir)? else {
        return Ok(not_up(dir.clone(), format!("no devnet in {} (no devnet.json)", dir.display())));
    };
    if info.state == DevnetState::Down {
        return Ok(not_up(dir.clone(), format!("the devnet in {} is already down", dir.display())));
    }

    let mut processes = Vec::new();
    if info.services.pid != 0 {
        let outcome = stop(info.services.pid, &services_expect(&dir), STOP_GRACE).await;
        processes.push(StoppedProcess { name: "services".into(), pid: info.services.pid, outcome });
    }
    let outcome = stop(info.anvil.pid, &Expect::Anvil { port: info.anvil.port }, STOP_GRACE).await;
    // Stopped cleanly, anvil has written its whole chain: a copy of it is what a later `up` falls back to.
    if outcome == StopOutcome::Terminated && dir.join(STATE_FILE).is_file() {
        let _ = std::fs::copy(dir.join(STATE_FILE), dir.join(STATE_PREV));
    }
    processes.push(StoppedProcess { name: "anvil".into(), pid: info.anvil.pid, outcome });

    if let Some(p) = processes.iter().find(|p| p.outcome == StopOutcome::StillRunning && is_running(p.pid)) {
        return Err(DevnetError::Services(format!(
            "{} (pid {}) is still running after SIGKILL; devnet.json left as it was",
            p.name, p.pid
        )));
    }
    info.state = DevnetState::Down;
    write_info(&dir, &info)?;

    let parts: Vec<String> = processes
        .iter()
        .map(|p| {
            let what = match p.outcome {
                StopOutcome::Terminated => "stopped",
                StopOutcome::Killed => "killed after ignoring SIGTERM",
                StopOutcome::AlreadyGone => "was not running",
                StopOutcome::NotOurs => "left alone: the pid now belongs to another program",
                StopOutcome::StillRunning => "still running",
            };
            format!("{} (pid {}) {what}", p.name, p.pid)
        })
        .collect();
    Ok(DownReport {
        message: format!("devnet in {} is down: {}", dir.display(), parts.join("; ")),
        dir,
        was_up: true,
        processes,
    })
}

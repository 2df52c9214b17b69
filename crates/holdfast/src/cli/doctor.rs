//! `holdfast doctor [--config FILE | --base-defaults]`: checks a configuration (without `--config`, what `holdfast serve`
//! without one runs: its devnet in the data dir) and what it points at, prints one table row per check,
//! and exits non-zero when any check fails.
//!
//! The checks read and never write: the config through every layer's own loader (an error names the file, the line
//! and the key), each network's RPC node (its `eth_chainId` against the configured id, and `eth_simulateV1`, which
//! every value-moving action is simulated with), the wallet (its address only, never the key; a missing key file is
//! reported, not created), each price feed's pinned decimals and description on every node, the wallet's standing
//! allowances, the policy (what it allows, and that everything else is denied), the presets' hosts (a TCP
//! connection) and the LLM (the key and the model, asked without a model call). A warning does not fail the run.

use holdfast_agent::{CheckedConfig, Runtime};
use holdfast_core::amount::from_base_units;
use holdfast_core::config::{ConfigDocument, CoreConfig};
use holdfast_web3::Wallet;
use holdfast_web3::chain::Chain;
use holdfast_web3::config::AssetLimits;
use holdfast_web3::kernel::account;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

/// How long one network probe may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// Options of `holdfast doctor`.
#[derive(Debug, clap::Args)]
pub(crate) struct DoctorArgs {
    /// Configuration file (default: what `holdfast serve` runs without --config: the devnet's configuration in the
    /// data dir, `DATA_DIR/devnet/holdfast.toml`).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// With no --config, check the built-in Base mainnet defaults instead of serve's devnet.
    #[arg(long, conflicts_with = "config")]
    pub base_defaults: bool,
    /// The data dir `serve` would use (default: the config's `[storage] data_dir`, else the platform's data dir),
    /// where the wallet key is looked for.
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Status {
    Ok,
    Warn,
    Fail,
}

impl Status {
    fn label(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Warn => "warn",
            Self::Fail => "FAIL",
        }
    }
}

struct Row {
    check: String,
    status: Status,
    detail: String,
}

#[derive(Default)]
struct Report {
    rows: Vec<Row>,
}

impl Report {
    fn add(&mut self, check: impl Into<String>, status: Status, detail: impl Into<String>) {
        self.rows.push(Row { check: check.into(), status, detail: detail.into() });
    }

    fn print(&self) {
        let width = self.rows.iter().map(|r| r.check.len()).max().unwrap_or(5).max(5);
        outln!("{:<width$}  {:<6}  DETAIL", "CHECK", "RESULT");
        for r in &self.rows {
            outln!("{:<width$}  {:<6}  {}", r.check, r.status.label(), r.detail);
        }
        let failed = self.rows.iter().filter(|r| r.status == Status::Fail).count();
        let warned = self.rows.iter().filter(|r| r.status == Status::Warn).count();
        outln!();
        outln!("{} checks: {failed} failed, {warned} warnings", self.rows.len());
    }

    fn failed(&self) -> bool {
        self.rows.iter().any(|r| r.status == Status::Fail)
    }
}

/// Runs the checks and prints the table.
pub(crate) async fn run(args: DoctorArgs) -> ExitCode {
    let mut report = Report::default();
    // The devnet `serve` would use, when it is not running: its node is not asked.
    let mut node_down: Option<PathBuf> = None;
    // Without --config, what `holdfast serve` without --config runs: the devnet it keeps in the data dir, with that
    // data dir (not the devnet's own `data`).
    let serve_data_dir = args.data_dir.clone().or_else(|| crate::serve::default_data_dir().ok());
    let serve_devnet = serve_data_dir.as_ref().map(|d| d.join("devnet").join("holdfast.toml"));
    let (config, shown, data_dir) = match (&args.config, &serve_devnet) {
        (Some(path), _) => (Some(path.clone()), path.display().to_string(), args.data_dir.clone()),
        (None, Some(devnet)) if !args.base_defaults => {
            if !devnet.exists() {
                report.add(
                    "config",
                    Status::Warn,
                    format!(
                        "no --config: `holdfast serve` would start its devnet in {} (none is there yet: its first \
                         start creates it); nothing else to check. --config FILE checks a configuration, \
                         --base-defaults the built-in Base mainnet defaults",
                        devnet.parent().map_or_else(String::new, |d| d.display().to_string())
                    ),
                );
                report.print();
                return ExitCode::SUCCESS;
            }
            let shown = format!("{} (what `holdfast serve` runs without --config: its devnet)", devnet.display());
            // A devnet `serve` stopped with itself has no node to ask: said once, and the node checks are skipped.
            let dir = devnet.parent().map(Path::to_path_buf).unwrap_or_default();
            if !holdfast_devnet::is_up(&dir).unwrap_or(false) {
                node_down = Some(dir);
            }
            (Some(devnet.clone()), shown, serve_data_dir.clone())
        }
        (None, _) => (None, "built-in Base mainnet defaults".to_owned(), args.data_dir.clone()),
    };
    let doc = match &config {
        Some(path) => ConfigDocument::load(path),
        None => Ok(ConfigDocument::empty()),
    };
    let checked = doc.map_err(holdfast_agent::RuntimeError::from).and_then(|doc| {
        let checked = Runtime::check_document(&doc)?;
        holdfast_server::ServerSection::from_document(&doc)?;
        Ok((doc, checked))
    });
    match checked {
        Ok((doc, mut checked)) => {
            checked.core.data_dir =
                data_dir.or(checked.core.data_dir).or_else(|| crate::serve::default_data_dir().ok());
            report.add("config", Status::Ok, format!("{shown}: every section reads"));
            if let Some(dir) = &node_down {
                report.add(
                    "devnet",
                    Status::Warn,
                    format!(
                        "the devnet in {} is not running (`holdfast serve` stops the devnet it started when it stops, \
                         and starts it again, with its saved chain and wallet, at its next start): its node, the \
                         account, the price feeds, the allowances and the presets' hosts (its services) are not \
                         checked. `holdfast devnet up --dir {}` \
                         starts it alone",
                        dir.display(),
                        dir.display()
                    ),
                );
            }
            check_everything(&mut report, &doc, &checked, node_down.is_none()).await;
        }
        Err(e) => report.add("config", Status::Fail, e.to_string()),
    }
    report.print();
    if report.failed() { ExitCode::FAILURE } else { ExitCode::SUCCESS }
}

/// Every check; `nodes`: the networks' nodes are there to ask (else the checks that read the chain are left out).
async fn check_everything(report: &mut Report, doc: &ConfigDocument, checked: &CheckedConfig, nodes: bool) {
    if let Err(e) = holdfast_mcp::McpSection::from_document(doc) {
        report.add("config [mcp]", Status::Fail, e.to_string());
    }
    check_storage(report, &checked.core).await;
    if nodes {
        check_networks(report, &checked.core).await;
    }
    check_wallet(report, doc, checked);
    if nodes {
        check_account(report, checked).await;
        check_price_feeds(report, checked).await;
        check_allowances(report, checked).await;
    }
    check_policy(report, checked);
    if nodes {
        check_presets(report, checked).await;
    }
    check_llm(report, checked).await;
}

/// Where sessions and the journal are kept; a PostgreSQL database is connected to (nothing is migrated or written).
async fn check_storage(report: &mut Report, core: &CoreConfig) {
    let url = match std::env::var(holdfast_core::config::DATABASE_URL_ENV) {
        Ok(text) if !text.trim().is_empty() => match holdfast_core::config::DatabaseUrl::parse(&text) {
            Ok(url) => Some(url),
            Err(e) => {
                report.add("storage", Status::Fail, format!("{}: {e}", holdfast_core::config::DATABASE_URL_ENV));
                return;
            }
        },
        _ => core.database_url.clone(),
    };
    let Some(url) = url else {
        let detail = match &core.data_dir {
            Some(dir) => format!("sqlite {} (one process moves value per file)", dir.join("holdfast.db").display()),
            None => "memory: nothing survives the process".to_owned(),
        };
        report.add("storage", Status::Ok, detail);
        return;
    };
    match holdfast_store::PgStore::connect(&url).await {
        Ok(pg) => {
            let detail = match pg.server_version().await {
                Ok(v) => format!("postgres {url}: reachable ({v}); memory stays in the SQLite file of each data dir"),
                Err(e) => format!("postgres {url}: connected, but `SELECT version()` failed: {e}"),
            };
            report.add("storage", Status::Ok, detail);
        }
        Err(e) => report.add("storage", Status::Fail, e.to_string()),
    }
}

async fn check_networks(report: &mut Report, core: &CoreConfig) {
    for net in core.networks.iter() {
        let check = format!("network {}", net.name);
        // Scheme and host only: node URLs carry API keys in their paths.
        let Some(url) = net.rpc_urls.first().map(|u| holdfast_core::redact_urls(u).into_owned()) else {
            report.add(check, Status::Fail, "no rpc_urls configured");
            continue;
        };
        let chain = match Chain::new(net) {
            Ok(c) => c,
            Err(e) => {
                report.add(check, Status::Fail, e.message);
                continue;
            }
        };
        let probe = async {
            chain.verify().await?;
            chain.check_simulation().await
        };
        match tokio::time::timeout(PROBE_TIMEOUT, probe).await {
            Ok(Ok(())) => report.add(
                check,
                Status::Ok,
                format!("{} at {url}: chain id {} confirmed, eth_simulateV1 answers", net.display_name, net.chain_id),
            ),
            Ok(Err(e)) => report.add(check, Status::Fail, format!("{url}: {}", e.message)),
            Err(_) => report.add(check, Status::Fail, format!("{url}: no answer within {} s", PROBE_TIMEOUT.as_secs())),
        }
    }
}

/// Each network's price feeds against the chain, on every RPC node: the pinned decimals and description.
async fn check_price_feeds(report: &mut Report, checked: &CheckedConfig) {
    for (name, feeds) in &checked.web3.price_feeds {
        let check = format!("price feeds {name}");
        let Ok(net) = checked.core.networks.resolve(name) else { continue };
        let chain = match Chain::new(net) {
            Ok(c) => c,
            Err(e) => {
                report.add(check, Status::Fail, e.message);
                continue;
            }
        };
        let verify = holdfast_web3::kernel::price::verify_feeds(&chain, name, feeds);
        match tokio::time::timeout(PROBE_TIMEOUT, verify).await {
            Ok(Ok(())) => {
                let mut shown: Vec<String> = feeds
                    .feeds
                    .iter()
                    .map(|(s, f)| format!("{s} ({}, {} decimals)", f.description, f.decimals))
                    .collect();
                shown.sort();
                let nodes = net.rpc_urls.len();
                let across = if nodes > 1 {
                    format!(", read from each of {nodes} nodes")
                } else {
                    ": one RPC node — configure a second, independent one so a single node cannot fake the price".into()
                };
                let status = if nodes > 1 { Status::Ok } else { Status::Warn };
                report.add(check, status, format!("{} match the chain{across}", shown.join(", ")));
            }
            Ok(Err(e)) => report.add(check, Status::Fail, e.message),
            Err(_) => report.add(check, Status::Fail, format!("no answer within {} s", PROBE_TIMEOUT.as_secs())),
        }
    }
}

/// The wallet's standing allowances for each network's pinned spender.
async fn check_allowances(report: &mut Report, checked: &CheckedConfig) {
    let default_file = checked.core.data_dir.as_ref().map(|d| d.join("wallet.key"));
    let Ok(Some(wallet)) = Wallet::existing(&checked.web3.wallet, default_file.as_deref()) else { return };
    for net in checked.core.networks.iter().filter(|n| n.contracts.allowance_spender.is_some()) {
        let Ok(chain) = Chain::new(net) else { continue };
        let read = holdfast_web3::kernel::allowances::standing_on(&chain, &checked.core.tokens, wallet.address());
        let check = format!("allowances {}", net.name);
        match tokio::time::timeout(PROBE_TIMEOUT, read).await {
            Ok(list) if list.is_empty() => report.add(check, Status::Ok, "none standing"),
            Ok(list) => {
                let shown: Vec<String> = list
                    .iter()
                    .map(|a| match (&a.amount_human, &a.error) {
                        (Some(amount), _) => format!("{amount} {} to {}", a.token, a.spender),
                        (None, error) => format!("{}: {}", a.token, error.as_deref().unwrap_or("unreadable")),
                    })
                    .collect();
                report.add(
                    check,
                    Status::Warn,
                    format!("standing: {} (reset when its swap is abandoned)", shown.join("; ")),
                );
            }
            Err(_) => report.add(check, Status::Fail, format!("no answer within {} s", PROBE_TIMEOUT.as_secs())),
        }
    }
}

fn check_wallet(report: &mut Report, doc: &ConfigDocument, checked: &CheckedConfig) {
    let default_file = checked.core.data_dir.as_ref().map(|d| d.join("wallet.key"));
    match Wallet::existing(&checked.web3.wallet, default_file.as_deref()) {
        Ok(Some(wallet)) => report.add("wallet", Status::Ok, wallet.address().to_checksum(None)),
        Ok(None) => match checked.web3.wallet.key_file.as_ref().or(default_file.as_ref()) {
            Some(path) => report.add(
                "wallet",
                Status::Warn,
                format!("{} does not exist yet: the first start creates a fresh burner key there", path.display()),
            ),
            None => report.add(
                "wallet",
                Status::Warn,
                "no key configured and no data dir: an ephemeral key, and every value-moving action is refused",
            ),
        },
        Err(e) => {
            let located = checked.web3.wallet.locate(doc, &e).map_or_else(|| e.to_string(), |c| c.to_string());
            report.add("wallet", Status::Fail, located);
        }
    }
}

/// The smart account the key signs for (`[wallet] account`), on each network: deployed, its module Safe's
/// AllowanceModule (its code compared with the audited build's) and enabled, and what remains of each on-chain limit.
async fn check_account(report: &mut Report, checked: &CheckedConfig) {
    let Some(account) = checked.web3.wallet.account() else { return };
    let default_file = checked.core.data_dir.as_ref().map(|d| d.join("wallet.key"));
    let signer = Wallet::existing(&checked.web3.wallet, default_file.as_deref()).ok().flatten().map(|w| w.address());
    for net in checked.core.networks.iter() {
        let check = format!("account {}", net.name);
        let Ok(chain) = Chain::new(net) else { continue };
        let reviewed = checked.web3.wallet.reviewed_modules();
        let inspected = account::inspect(&chain, account, signer, &reviewed);
        let state = match tokio::time::timeout(PROBE_TIMEOUT, inspected).await {
            Ok(Ok(state)) => state,
            Ok(Err(e)) => {
                report.add(check, Status::Fail, e.message);
                continue;
            }
            Err(_) => {
                report.add(check, Status::Fail, format!("no answer within {} s", PROBE_TIMEOUT.as_secs()));
                continue;
            }
        };
        let unbound = state.unbound(account, signer);
        let others = state.other_modules.clone();
        let bound = unbound.is_none();
        let (status, detail) = match state {
            s if !s.account_deployed => (Status::Fail, format!("no contract at the account {}", account.address)),
            s if s.module_is_allowance_module.is_none() => {
                (Status::Fail, format!("no contract at the module {}", account.module))
            }
            _ if let Some(why) = unbound => (Status::Fail, format!("{}: {why}", account.address)),
            s if !s.module_enabled => (
                Status::Fail,
                format!("the module {} is not enabled on the account {}", account.module, account.address),
            ),
            _ => (
                Status::Ok,
                format!("{}: Safe's AllowanceModule 0.1.1 at {}, enabled", account.address, account.module),
            ),
        };
        report.add(check, status, detail);
        // Other modules the configuration names as reviewed (one not named fails the check above).
        if !others.is_empty() && bound {
            let listed = others.iter().map(|m| m.to_checksum(None)).collect::<Vec<_>>().join(", ");
            report.add(
                format!("account modules {}", net.name),
                Status::Ok,
                format!("other modules enabled on the account, each in `[wallet] reviewed_modules`: {listed}"),
            );
        }
        let Some(signer) = signer else { continue };
        let mut tokens = vec![checked.core.tokens.lookup(&net.name, &net.native_symbol).ok()];
        if let Some(policy) = checked.web3.policy.get(&net.name) {
            let mut symbols: Vec<&String> = policy.tokens.keys().collect();
            symbols.sort();
            tokens.extend(symbols.into_iter().map(|s| checked.core.tokens.lookup(&net.name, s).ok()));
        }
        let mut shown = Vec::new();
        let mut any = false;
        // Each asset: its name and decimals when the configuration names it; by address, in base units, when only
        // the module lists it (the owners set a limit on it: the key can move it too).
        let mut assets: Vec<(String, alloy_primitives::Address, Option<u8>)> =
            tokens.into_iter().flatten().map(|t| (t.symbol.clone(), t.address, Some(t.decimals))).collect();
        match tokio::time::timeout(PROBE_TIMEOUT, account::limited_assets(&chain, account, signer)).await {
            Ok(Ok(listed)) => {
                for asset in listed {
                    if !assets.iter().any(|(_, a, _)| account::module_token(*a) == asset) {
                        assets.push((format!("{asset} (not in the configuration)"), asset, None));
                    }
                }
            }
            Ok(Err(e)) => shown.push(format!("the module's list of limited assets: {}", e.message)),
            Err(_) => shown
                .push(format!("the module's list of limited assets: no answer within {} s", PROBE_TIMEOUT.as_secs())),
        }
        for (name, asset, decimals) in assets {
            match tokio::time::timeout(PROBE_TIMEOUT, account::read_limit(&chain, account, signer, asset)).await {
                Ok(Ok(l)) => {
                    any |= !l.limit.is_zero();
                    let period = account::period_text(l.period_minutes);
                    shown.push(match decimals {
                        Some(d) => format!(
                            "{} {name} {period} ({} left)",
                            from_base_units(l.limit, d),
                            from_base_units(l.remaining, d)
                        ),
                        None => format!("{name}: {} base units {period} ({} left)", l.limit, l.remaining),
                    });
                }
                Ok(Err(e)) => shown.push(format!("{name}: {}", e.message)),
                Err(_) => shown.push(format!("{name}: no answer within {} s", PROBE_TIMEOUT.as_secs())),
            }
        }
        let status = if any { Status::Ok } else { Status::Warn };
        let detail = if any {
            shown.join("; ")
        } else {
            format!("no on-chain limit set for the key: nothing can move ({})", shown.join("; "))
        };
        report.add(format!("on-chain limits {}", net.name), status, detail);
    }
}

/// `per tx 1, per day 5, without asking up to 0.01` in `symbol`'s units.
fn limits(l: &AssetLimits, decimals: u8) -> Option<String> {
    let show = |v: Option<alloy_primitives::U256>| v.map(|v| from_base_units(v, decimals));
    let mut parts = Vec::new();
    if let Some(v) = show(l.per_tx) {
        parts.push(format!("≤ {v} per tx"));
    }
    if let Some(v) = show(l.per_day) {
        parts.push(format!("≤ {v} per day"));
    }
    if let Some(v) = show(l.auto_per_tx) {
        parts.push(format!("without asking ≤ {v}"));
    }
    (!parts.is_empty()).then(|| parts.join(", "))
}

fn check_policy(report: &mut Report, checked: &CheckedConfig) {
    let core = &checked.core;
    for net in core.networks.iter() {
        let check = format!("policy {}", net.name);
        let Some(policy) = checked.web3.policy.get(&net.name) else {
            report.add(check, Status::Warn, "no [policy] for this network: every value-moving action is denied");
            continue;
        };
        let decimals = |symbol: &str| core.tokens.lookup(&net.name, symbol).map_or(18, |t| t.decimals);
        let mut allowed = Vec::new();
        if let Some(l) = limits(&policy.native, decimals(&net.native_symbol)) {
            allowed.push(format!("{}: {l}", net.native_symbol));
        }
        let mut symbols: Vec<&String> = policy.tokens.keys().collect();
        symbols.sort();
        for symbol in symbols {
            if let Some(l) = limits(&policy.tokens[symbol], decimals(symbol)) {
                allowed.push(format!("{symbol}: {l}"));
            }
        }
        let detail = if allowed.is_empty() {
            "no limits set: every value-moving action is denied".to_owned()
        } else {
            format!(
                "allows {}; max slippage {} bps; every other token denied",
                allowed.join("; "),
                policy.max_slippage_bps
            )
        };
        report.add(check, Status::Ok, detail);
        match checked.web3.payments.get(&net.name) {
            Some(p) if !p.assets.is_empty() => {
                let per_asset: Vec<String> = p
                    .assets
                    .iter()
                    .map(|t| {
                        let cap = |m: &std::collections::HashMap<String, alloy_primitives::U256>| {
                            m.get(&t.symbol).map_or_else(|| "no cap".to_owned(), |v| from_base_units(*v, t.decimals))
                        };
                        format!(
                            "{} (≤ {} per request, ≤ {} per day)",
                            t.symbol,
                            cap(&p.max_per_request),
                            cap(&p.daily_budget)
                        )
                    })
                    .collect();
                report.add(format!("payments {}", net.name), Status::Ok, format!("x402 in {}", per_asset.join(", ")));
            }
            _ => report.add(format!("payments {}", net.name), Status::Ok, "x402 payments denied (no [payments])"),
        }
    }
}

async fn check_presets(report: &mut Report, checked: &CheckedConfig) {
    let presets = &checked.web3.presets;
    if presets.names().is_empty() {
        report.add("presets", Status::Warn, "no [presets] file: x402_fetch has nothing to fetch");
        return;
    }
    for name in presets.names() {
        let check = format!("preset {name}");
        let Ok(preset) = presets.get(name) else { continue };
        let Ok(url) = reqwest::Url::parse(&preset.url) else {
            report.add(check, Status::Fail, format!("{} is not a URL", preset.url));
            continue;
        };
        let (Some(host), Some(port)) = (url.host_str(), url.port_or_known_default()) else {
            report.add(check, Status::Fail, format!("{} has no host", preset.url));
            continue;
        };
        let connect = tokio::net::TcpStream::connect((host, port));
        match tokio::time::timeout(PROBE_TIMEOUT, connect).await {
            Ok(Ok(_)) => report.add(check, Status::Ok, format!("{host}:{port} accepts connections")),
            Ok(Err(e)) => report.add(check, Status::Fail, format!("{host}:{port}: {e}")),
            Err(_) => report.add(check, Status::Fail, format!("{host}:{port}: no connection within 10 s")),
        }
    }
}

async fn check_llm(report: &mut Report, checked: &CheckedConfig) {
    let Some(provider) = checked.llm.provider() else {
        report.add(
            "llm",
            Status::Warn,
            "no API key (OPENAI_API_KEY, ANTHROPIC_API_KEY or [llm] api_key_env): chat is off, the tool console works",
        );
        return;
    };
    let what = format!("{} {}", provider.name(), provider.model());
    match tokio::time::timeout(PROBE_TIMEOUT * 3, provider.check_model()).await {
        Ok(Ok(())) => report.add("llm", Status::Ok, format!("{what}: the key is accepted and the model exists")),
        Ok(Err(e)) => report.add("llm", Status::Fail, format!("{what}: {e}")),
        Err(_) => report.add("llm", Status::Fail, format!("{what}: no answer within 30 s")),
    }
}

//! `holdfast serve`: the HTTP + WebSocket API and the web UI.
//!
//! With no `--config`, it runs on embedded defaults: SQLite under the data dir (the platform's data dir,
//! `$XDG_DATA_HOME/holdfast` or `~/.local/share/holdfast`, never the working directory) and a local devnet
//! started in `DATA_DIR/devnet` for it (stopped again on shutdown when this command started it), so the whole swap
//! flow works in the browser without any API key. Binds to loopback unless told otherwise; every API call needs
//! the access token generated into the data dir on first start (the printed link trades it once for a browser
//! cookie). The data dir is created mode 0700, its files 0600; `Host`/`Origin` are checked with or without a token
//! (`[server] allowed_hosts` adds names).

use anyhow::{Context as _, bail};
use holdfast_agent::Runtime;
use holdfast_agent::access::{AccessToken, SERVER_TOKEN_FILE, SignIn, TokenOrigin};
use holdfast_core::config::ConfigDocument;
use holdfast_core::private_fs;
use holdfast_server::{AppState, ServerSection};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;

/// The default data dir: `$XDG_DATA_HOME/holdfast` when that is an absolute path, else `$HOME/.local/share/holdfast`
/// (the XDG base-directory rule, two environment lookups, written out rather than pulling a crate for it). Never the
/// working directory, so nothing — the wallet key least of all — lands in a checkout.
pub(crate) fn default_data_dir() -> anyhow::Result<PathBuf> {
    let from = |var: &str| std::env::var_os(var).map(PathBuf::from).filter(|p| p.is_absolute());
    if let Some(xdg) = from("XDG_DATA_HOME") {
        return Ok(xdg.join("holdfast"));
    }
    match from("HOME") {
        Some(home) => Ok(home.join(".local/share/holdfast")),
        None => bail!("neither XDG_DATA_HOME nor HOME is set to an absolute path: pass --data-dir"),
    }
}
/// Default bind address.
pub(crate) const DEFAULT_BIND: &str = "127.0.0.1:8700";

/// Options of `holdfast serve`.
#[derive(Debug, clap::Args)]
pub(crate) struct ServeArgs {
    /// Configuration file (default: embedded defaults on a local devnet).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Data dir for SQLite, the wallet key and the access token.
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// Address to listen on (default 127.0.0.1:8700).
    #[arg(long)]
    pub bind: Option<String>,
    /// Without --config: use the built-in Base mainnet defaults instead of starting a local devnet.
    #[arg(long)]
    pub no_devnet: bool,
    /// Serve without an access token (refused on any address but loopback).
    #[arg(long)]
    pub insecure_no_token: bool,
    /// Print a fresh one-time sign-in link for the browser and exit, without serving: for the server running on
    /// this data dir (its address), else for --bind.
    #[arg(long, conflicts_with = "sign_out_all")]
    pub print_url: bool,
    /// Sign every browser out of the server on this data dir (running or not) and exit.
    #[arg(long)]
    pub sign_out_all: bool,
}

/// The address a browser should open for `addr`: loopback when bound to every interface (the Host must be allowed).
fn shown(addr: SocketAddr) -> SocketAddr {
    match addr.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => SocketAddr::from((Ipv4Addr::LOCALHOST, addr.port())),
        IpAddr::V6(ip) if ip.is_unspecified() => SocketAddr::from((Ipv6Addr::LOCALHOST, addr.port())),
        _ => addr,
    }
}

/// Stops using the devnet: the last process using a devnet a `serve` started stops it.
async fn leave_devnet(user: holdfast_devnet::DevnetUser) {
    let dir = user.dir().to_owned();
    match user.leave().await {
        Ok(holdfast_devnet::Left::Stopped(report)) => say!("holdfast: {}", report.message),
        Ok(holdfast_devnet::Left::InUse) => {
            say!("holdfast: the devnet in {} stays up: another holdfast process uses it", dir.display());
        }
        Ok(holdfast_devnet::Left::KeptRunning) => {
            say!("holdfast: the devnet in {} stays up (stop it with `holdfast devnet down --dir …`)", dir.display());
        }
        Err(e) => say!("holdfast: stopping the devnet: {e}"),
    }
}

/// The data dir `serve` would use with these options; a configuration that does not load is an error, never a
/// silent fall back to another data dir.
fn data_dir_of(args: &ServeArgs) -> anyhow::Result<PathBuf> {
    match (&args.data_dir, &args.config) {
        (Some(dir), _) => Ok(dir.clone()),
        (None, Some(path)) => {
            let doc = ConfigDocument::load(path)?;
            let core = holdfast_core::config::CoreConfig::from_document(&doc)?;
            core.data_dir.map_or_else(default_data_dir, Ok)
        }
        (None, None) => default_data_dir(),
    }
}

/// `--print-url` and `--sign-out-all`: the data dir's browser sign-in, with or without a running server.
fn sign_in_command(args: &ServeArgs) -> anyhow::Result<()> {
    let data_dir = data_dir_of(args)?;
    if !data_dir.join(SERVER_TOKEN_FILE).exists() {
        bail!("no server has run on {} yet: start `holdfast serve` once first", data_dir.display());
    }
    let section = match &args.config {
        Some(path) => ServerSection::from_document(&ConfigDocument::load(path)?)?,
        None => ServerSection::default(),
    };
    let sign_in = SignIn::open(&data_dir, section.sign_in_settings());
    if args.sign_out_all {
        let n = sign_in.sign_out_all().context("signing out")?;
        outln!("signed out {n} browser session{} of {}", if n == 1 { "" } else { "s" }, data_dir.display());
        return Ok(());
    }
    // The running server's own address when there is one (its lock names it), else --bind.
    let running = holdfast_store::DataDirLock::holder(&data_dir).and_then(|h| h.address);
    let addr = match (&args.bind, running) {
        (Some(bind), _) => bind.parse().with_context(|| format!("--bind {bind:?} is not an address:port"))?,
        (None, Some(running)) => {
            running.parse().with_context(|| format!("the running server's address {running:?}"))?
        }
        (None, None) => DEFAULT_BIND.parse().context("the default address")?,
    };
    let code = sign_in.mint_code().context("making a sign-in code")?;
    outln!("http://{}/?code={code}", shown(addr));
    Ok(())
}

/// Runs the server until Ctrl-C or SIGTERM.
pub(crate) async fn run(args: ServeArgs) -> anyhow::Result<()> {
    if args.print_url || args.sign_out_all {
        return sign_in_command(&args);
    }
    let bind_text = args.bind.clone().unwrap_or_else(|| DEFAULT_BIND.to_owned());
    let bind: SocketAddr = bind_text.parse().with_context(|| format!("--bind {bind_text:?} is not an address:port"))?;
    if args.insecure_no_token && !bind.ip().is_loopback() {
        bail!("refusing to serve on {bind} without an access token: only loopback addresses may run without one");
    }

    let mut devnet_user: Option<holdfast_devnet::DevnetUser> = None;
    let mut early_lock = None;
    let (doc, data_dir) = match &args.config {
        Some(path) => (ConfigDocument::load(path)?, args.data_dir.clone()),
        None if args.no_devnet => {
            (ConfigDocument::empty(), Some(args.data_dir.clone().map_or_else(default_data_dir, Ok)?))
        }
        None => {
            let data_dir = args.data_dir.clone().map_or_else(default_data_dir, Ok)?;
            // The data dir is private before anything (the devnet's folder first) is created inside it.
            private_fs::create_private_dir_all(&data_dir)
                .with_context(|| format!("creating the data dir {} (mode 0700)", data_dir.display()))?;
            // This process holds the data dir before it touches the devnet inside it: on the SQLite file, a second
            // `serve` on the same dir stops here, naming this one (on PostgreSQL the lock is shared).
            let shared = database_url_in_env();
            early_lock =
                Some(holdfast_store::ProcessLock::data_dir(&data_dir, shared, &holdfast_store::process_command())?);
            let dir = data_dir.join("devnet");
            let services_exe = std::env::current_exe().context("locating the holdfast executable")?;
            let progress: holdfast_devnet::Progress = Arc::new(|line: &str| say!("devnet: {line}"));
            let opts = holdfast_devnet::UpOptions { progress, ..holdfast_devnet::UpOptions::new(&dir, services_exe) };
            let (info, user) = holdfast_devnet::join(opts, true).await?;
            devnet_user = Some(user);
            let doc = ConfigDocument::load(&dir.join(&info.config))?;
            (doc, Some(data_dir))
        }
    };
    let result = serve(doc, data_dir, bind, args.insecure_no_token).await;
    if let Some(user) = devnet_user {
        leave_devnet(user).await;
    }
    drop(early_lock);
    result
}

/// Whether `HOLDFAST_DATABASE_URL` selects PostgreSQL (then several processes may share a data dir's devnet).
fn database_url_in_env() -> bool {
    std::env::var(holdfast_core::config::DATABASE_URL_ENV).is_ok_and(|v| !v.trim().is_empty())
}

async fn serve(doc: ConfigDocument, data_dir: Option<PathBuf>, bind: SocketAddr, no_token: bool) -> anyhow::Result<()> {
    let section = ServerSection::from_document(&doc)?;
    let runtime = Arc::new(Runtime::from_document_with_data_dir(doc, data_dir).await?);
    // Without a data dir the runtime keeps everything in memory; the server's own token and sign-ins still need a
    // place, the platform's data dir.
    let in_memory = runtime.data_dir().is_none();
    let data_dir = match runtime.data_dir() {
        Some(dir) => dir.clone(),
        None => default_data_dir()?,
    };
    let data_dir_is_default = default_data_dir().is_ok_and(|d| d == data_dir);
    crate::startup::verify_price_feeds(&runtime).await?;
    crate::startup::verify_account(&runtime).await?;
    crate::startup::reconcile_journal(&runtime).await;
    let unloader = tokio_util::sync::CancellationToken::new();
    runtime.spawn_idle_unloader(unloader.clone());
    let _stop_unloader = unloader.drop_guard();
    let token = if no_token {
        None
    } else {
        let token = AccessToken::load_or_create(&data_dir.join(SERVER_TOKEN_FILE))
            .with_context(|| format!("creating the access token in {}", data_dir.display()))?;
        Some(token)
    };
    let listener = tokio::net::TcpListener::bind(bind)
        .await
        .with_context(|| format!("cannot listen on {bind} (is another server running? try --bind 127.0.0.1:0)"))?;
    let addr = listener.local_addr().context("reading the bound address")?;
    runtime.announce_address(&addr.to_string());
    let hosts = section.host_policy(addr).context("[server] allowed_hosts")?;
    let state = AppState::new(Arc::clone(&runtime), token.clone());
    let llm = match &state.agent {
        Some(a) => format!("{} {}", a.provider().name(), a.provider().model()),
        None => "none (the tool console works; set OPENAI_API_KEY or ANTHROPIC_API_KEY to chat)".to_owned(),
    };
    // Messages from other agents and reminders start turns of their own (in the agent's `inbox` session).
    let inbox = holdfast_agent::CancelToken::new();
    let inbox_workers: Vec<_> =
        state.agents().iter().map(|agent| holdfast_agent::inbox::spawn(agent.clone(), inbox.clone())).collect();
    let names: Vec<&str> = state.agents().iter().map(|a| a.profile().name.as_str()).collect();
    let inbox_line = match state.agents().first() {
        Some(a) => format!(
            "{} answer messages and reminders in their `inbox` sessions (at most {} turns a minute each)",
            names.join(", "),
            a.config().inbox_turns_per_minute
        ),
        None => "messages and reminders wait (no LLM)".to_owned(),
    };
    // Listening for SIGTERM and SIGINT before anything says the server is up: a supervisor that stops it at once
    // still gets the clean stop (the devnet stopped with it), never the signal's default death.
    let signals = shutdown_signals().context("listening for SIGTERM and SIGINT")?;
    outln!("holdfast serving on http://{addr}/");
    let again = if data_dir_is_default { String::new() } else { format!(" --data-dir {}", data_dir.display()) };
    match &token {
        Some(token) => {
            // The link is a credential for minutes: shown to a person at a terminal, never written to a log file or
            // a service's journal (there, `--print-url` makes one when it is wanted).
            if std::io::IsTerminal::is_terminal(&std::io::stdout()) {
                let code = state.sign_in().mint_code().context("making a sign-in code")?;
                let minutes = state.sign_in().settings().code_ttl.as_secs() / 60;
                outln!(
                    "  open: http://{}/?code={code}   (a one-time sign-in link for the browser, valid {minutes} \
                     minutes; another: holdfast serve --print-url{again})",
                    shown(addr)
                );
            } else {
                outln!("  sign in: holdfast serve --print-url{again}   (prints a one-time link for the browser)");
            }
            match token.origin() {
                TokenOrigin::File { path, .. } => outln!("  API token (Authorization: Bearer): in {}", path.display()),
                _ => outln!("  API token (Authorization: Bearer): as given"),
            }
        }
        None => outln!("  no access token (loopback only)"),
    }
    for net in runtime.services.config.networks.iter() {
        outln!("  network: {} — {}, chain id {}{}", net.name, net.display_name, net.chain_id, net_note(net.chain_id));
    }
    match runtime.web3.account() {
        Some(account) => outln!(
            "  wallet: the smart account {} (limits on chain, module {}); signer {}",
            account.address,
            account.module,
            runtime.web3.wallet().address()
        ),
        None => outln!("  wallet: {}", runtime.web3.wallet().address()),
    }
    outln!("  LLM: {llm}");
    outln!("  inbox: {inbox_line}");
    if in_memory {
        outln!(
            "  data: none — sessions, journal and memory live in memory (the config sets no data_dir); the access \
             token and sign-ins in {}",
            data_dir.display()
        );
    } else {
        outln!("  data: {}", data_dir.display());
    }
    outln!("  storage: {}", runtime.storage().describe());
    let stop = tokio_util::sync::CancellationToken::new();
    let (on_signal, inbox_on_signal) = (stop.clone(), inbox.clone());
    tokio::spawn(async move {
        signals.await;
        // The inboxes stop with the listener, not after its drain: no inbox turn starts while requests finish.
        inbox_on_signal.cancel();
        on_signal.cancel();
    });
    holdfast_agent::listen::serve(listener, holdfast_server::router(state, hosts), section.connections, stop)
        .await
        .context("serving")?;
    inbox.cancel();
    // Each worker ends its turn, if any, and lets its inbox go saying so, so another instance takes over at once.
    let stopping = async {
        for worker in inbox_workers {
            let _ = worker.await;
        }
    };
    if tokio::time::timeout(std::time::Duration::from_secs(20), stopping).await.is_err() {
        tracing::warn!("an inbox worker did not stop within 20 s; the next instance to take its inbox waits first");
    }
    say!("holdfast: stopped; in-flight requests finished");
    Ok(())
}

/// What the banner adds after a chain id: nothing for the devnet's own, a warning for a public chain's.
fn net_note(chain_id: u64) -> &'static str {
    if chain_id == holdfast_devnet::CHAIN_ID {
        " (local devnet: no real value)"
    } else if !holdfast_devnet::is_local_chain_id(chain_id) {
        " (a public network: real value)"
    } else {
        ""
    }
}

/// The first SIGTERM or SIGINT, listened for from the call on (the handlers are installed here, not when the future
/// is first polled).
fn shutdown_signals() -> std::io::Result<impl std::future::Future<Output = ()>> {
    use tokio::signal::unix::{SignalKind, signal};
    let (mut term, mut int) = (signal(SignalKind::terminate())?, signal(SignalKind::interrupt())?);
    Ok(async move {
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
    })
}

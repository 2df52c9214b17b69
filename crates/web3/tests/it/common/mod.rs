//! Shared harness: a real devnet (anvil + contracts + quoter), the web3 layer built from the devnet's generated
//! config exactly as the binary builds it, and one session.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

pub(crate) mod rpc_proxy;
pub(crate) mod server;

use alloy::primitives::U256;
use alloy::sol_types::SolCall;
use axum::extract::{Query, State};
use axum::routing::get;
use holdfast_core::config::{ConfigDocument, CoreConfig};
use holdfast_core::{CoreServices, ToolContext, ToolError, ToolRegistry};
use holdfast_devnet::contracts::abi::ISwapVenue::sellCall;
use holdfast_devnet::{QuoteRequest, QuoteState, TestDevnet, build_quote};
use holdfast_web3::Web3;
use serde_json::{Value, json};
use std::sync::Arc;

pub(crate) struct Env {
    pub devnet: TestDevnet,
    pub web3: Arc<Web3>,
    pub services: CoreServices,
    pub registry: ToolRegistry,
    pub ctx: ToolContext,
}

/// Changes to make to the generated devnet files before loading them.
#[derive(Default)]
pub(crate) struct Tweaks {
    /// Extra TOML appended to holdfast.toml.
    pub toml: String,
    /// Replace every `old` with `new` in holdfast.toml.
    pub toml_replace: Vec<(String, String)>,
    /// Point the presets at this quoter instead of the devnet's.
    pub quoter_url: Option<String>,
}

impl Env {
    pub(crate) async fn start() -> Env {
        Self::start_with(Tweaks::default()).await
    }

    pub(crate) async fn start_with(tweaks: Tweaks) -> Env {
        let devnet = TestDevnet::start().await.expect("devnet");
        Self::apply(devnet, tweaks)
    }

    pub(crate) fn apply(devnet: TestDevnet, tweaks: Tweaks) -> Env {
        let path = devnet.config_path.clone();
        let mut text = std::fs::read_to_string(&path).unwrap();
        for (old, new) in &tweaks.toml_replace {
            text = text.replace(old, new);
        }
        text.push_str(&tweaks.toml);
        std::fs::write(&path, text).unwrap();
        if let Some(url) = &tweaks.quoter_url {
            let presets = devnet.dir.join("presets.ron");
            let text = std::fs::read_to_string(&presets).unwrap().replace(&devnet.quoter_url, url);
            std::fs::write(&presets, text).unwrap();
        }
        Self::load(devnet, "session-1")
    }

    /// Builds the runtime from the devnet's files (also used to "restart" over the same data dir).
    pub(crate) fn load(devnet: TestDevnet, session: &str) -> Env {
        let (web3, services, registry) = build(&devnet);
        let ctx = services.new_session(session);
        Env { devnet, web3, services, registry, ctx }
    }

    pub(crate) async fn call(&self, tool: &str, params: Value) -> Result<Value, ToolError> {
        self.registry.call(tool, params, &self.ctx).await
    }

    pub(crate) async fn ok(&self, tool: &str, params: Value) -> Value {
        match self.call(tool, params.clone()).await {
            Ok(v) => v,
            Err(e) => panic!("{tool} {params} failed: {e:?}"),
        }
    }

    pub(crate) async fn err(&self, tool: &str, params: Value) -> ToolError {
        match self.call(tool, params.clone()).await {
            Ok(v) => panic!("{tool} {params} should have failed, got {v}"),
            Err(e) => e,
        }
    }

    /// The register half of the seed-001 swap flow, then the quote, after the user's message `user` (none when
    /// empty: another quote for the latest message).
    pub(crate) async fn quote(&self, user: &str, sell: &str, buy: &str, amount: &str) -> Value {
        self.quote_in(&self.ctx, user, sell, buy, amount).await
    }

    /// [`Env::quote`] in the session `ctx`.
    pub(crate) async fn quote_in(&self, ctx: &ToolContext, user: &str, sell: &str, buy: &str, amount: &str) -> Value {
        if !user.is_empty() {
            ctx.context_bank.scan_input(user);
        }
        let ok = |tool: &'static str, params: Value| async move {
            self.registry.call(tool, params.clone(), ctx).await.unwrap_or_else(|e| panic!("{tool} {params}: {e:?}"))
        };
        let wallet =
            json!({"action": "address", "token_register": null, "network": null, "cache_as": "wallet_address"});
        ok("local_burner_wallet", wallet).await;
        ok("token_lookup", json!({"symbol": sell, "network": "base", "cache_as": "sell_token"})).await;
        ok("token_lookup", json!({"symbol": buy, "network": "base", "cache_as": "buy_token"})).await;
        ok("to_raw_amount", json!({"amount": amount, "token_register": "sell_token", "cache_as": "sell_amount"})).await;
        self.registry
            .call("x402_fetch", json!({"preset": "swap_quote", "network": "base", "cache_as": "swap_quote"}), ctx)
            .await
            .unwrap_or_else(|e| json!({"error": e}))
    }

    /// The re-run of the call approved as `id` (what the runtime's `decide` runs): only it may use that approval in a
    /// turn the user did not start.
    pub(crate) async fn rerun(&self, id: &str, tool: &str, params: Value) -> Result<Value, ToolError> {
        let approved = self.ctx.confirmations.get(id).expect("the approved confirmation");
        let run = self.ctx.with_extension(self.services.user_decisions().approved_run(&approved));
        self.registry.call(tool, params, &run).await
    }

    /// The user's decision on a pending confirmation, through a user channel (replay's explicit line).
    pub(crate) fn decide(
        &self,
        id: &str,
        d: holdfast_core::UserDecision,
    ) -> Result<holdfast_core::Confirmation, ToolError> {
        let decisions = self.services.user_decisions();
        decisions.decide(&self.ctx.confirmations, holdfast_core::UserChannel::Replay, id, d)
    }

    pub(crate) async fn balance(&self, token: alloy::primitives::Address) -> alloy::primitives::U256 {
        self.devnet.balance_of(token, self.devnet.wallet_address).await.unwrap()
    }

    pub(crate) async fn nonce(&self) -> u64 {
        use alloy::providers::Provider;
        self.devnet.provider().get_transaction_count(self.devnet.wallet_address).await.unwrap()
    }
}

pub(crate) fn build(devnet: &TestDevnet) -> (Arc<Web3>, CoreServices, ToolRegistry) {
    let doc = ConfigDocument::load(&devnet.config_path).unwrap();
    let core = CoreConfig::from_document(&doc).unwrap();
    let services = CoreServices::new(core).unwrap();
    let web3 = Web3::from_document(&doc, Arc::clone(&services.config)).unwrap();
    let registry = ToolRegistry::new();
    holdfast_core::builtin::register_core_tools(&registry).unwrap();
    let services = web3.install(services, &registry).unwrap();
    (web3, services, registry)
}

/// How a hostile quoter changes an honest quote; swap it between calls.
pub(crate) type Tamper = Arc<parking_lot::Mutex<Box<dyn Fn(&mut Value) + Send + Sync>>>;

/// A quoter that answers with an honest devnet quote passed through the current tamper function.
pub(crate) async fn hostile_quoter(devnet: &TestDevnet) -> (String, Tamper) {
    async fn handler(
        State((state, tamper)): State<(QuoteState, Tamper)>,
        Query(pairs): Query<Vec<(String, String)>>,
    ) -> axum::Json<Value> {
        let req = QuoteRequest::from_query(&pairs).unwrap();
        let mut quote = build_quote(&state, &req).await.unwrap();
        (tamper.lock())(&mut quote);
        axum::Json(quote)
    }
    let tamper: Tamper = Arc::new(parking_lot::Mutex::new(Box::new(|_: &mut Value| {})));
    let app = axum::Router::new()
        .route("/swap/allowance-holder/quote", get(handler))
        .with_state((devnet.quote_state(), Arc::clone(&tamper)));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, tamper)
}

impl Env {
    /// A devnet whose presets point at a hostile quoter.
    pub(crate) async fn with_hostile_quoter(mut tweaks: Tweaks) -> (Env, Tamper) {
        let devnet = TestDevnet::start().await.expect("devnet");
        let (url, tamper) = hostile_quoter(&devnet).await;
        tweaks.quoter_url = Some(url);
        (Self::apply(devnet, tweaks), tamper)
    }
}

/// Every broken property of one test, reported together.
#[derive(Default)]
pub(crate) struct Failures(Vec<String>);

impl Failures {
    pub(crate) fn check(&mut self, ok: bool, what: impl Into<String>) {
        if !ok {
            self.0.push(what.into());
        }
    }

    pub(crate) fn finish(self) {
        assert!(self.0.is_empty(), "{} broken:\n  - {}", self.0.len(), self.0.join("\n  - "));
    }
}

/// Rewrites the quote's calldata: the venue's `sell` with other arguments.
pub(crate) fn recalldata(quote: &mut Value, f: impl Fn(&mut sellCall)) {
    let data: alloy::primitives::Bytes = quote["transaction"]["data"].as_str().unwrap().parse().unwrap();
    let mut call = sellCall::abi_decode(&data).unwrap();
    f(&mut call);
    quote["transaction"]["data"] = json!(alloy::primitives::hex::encode_prefixed(call.abi_encode()));
}

/// A plain anvil of `chain_id` beside the devnet (no contracts), where `funded` holds 1 ETH: a second chain.
pub(crate) struct PlainAnvil {
    /// Its RPC URL.
    pub(crate) url: String,
    /// A provider on it.
    pub(crate) provider: alloy::providers::DynProvider,
    _child: tokio::process::Child,
}

impl PlainAnvil {
    pub(crate) async fn start(chain_id: u64, funded: alloy::primitives::Address) -> Self {
        use alloy::providers::{Provider as _, ext::AnvilApi as _};
        let port = holdfast_devnet::anvil::free_port().unwrap();
        let anvil = holdfast_devnet::anvil_path(&|_| {}).await.unwrap();
        let child = tokio::process::Command::new(anvil)
            .args(["--chain-id", &chain_id.to_string(), "--port", &port.to_string(), "--silent"])
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let url = format!("http://127.0.0.1:{port}");
        let provider = alloy::providers::ProviderBuilder::new().connect_http(url.parse().unwrap()).erased();
        for _ in 0..200 {
            if provider.get_chain_id().await.is_ok() {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        provider.anvil_set_balance(funded, U256::from(10u64).pow(U256::from(18u8))).await.unwrap();
        Self { url, provider, _child: child }
    }
}

pub(crate) fn u256(v: &Value) -> U256 {
    U256::from_str_radix(v.as_str().unwrap(), 10).unwrap()
}

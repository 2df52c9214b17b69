//! The web UI in real headless Chromium (Debian's `chromium`, driven by `playwright-core` from `devnet/node_modules`)
//! against a running server: the swap done step by step in the browser on the devnet without an LLM, and a chat with a
//! scripted model whose reply streams in. Screenshots are saved under `target/ui-screenshots/`. The browser script is
//! `tests/js/ui.mjs`; `scripts/test.sh` installs what it needs.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use holdfast_agent::access::{AccessToken, HostPolicy};
use holdfast_agent::llm::{ChatProvider, ChatRequest, ChatResponse, DeltaSink, LlmError, StreamDelta, ToolCall, Usage};
use holdfast_agent::{Agent, Runtime};
use holdfast_core::tool::BoxFuture;
use holdfast_server::AppState;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

const TOKEN: &str = "f00dfeedf00dfeedf00dfeedf00dfeedf00dfeedf00dfeedf00dfeedf00dfeed";

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

fn chromium() -> PathBuf {
    std::env::var_os("HOLDFAST_CHROMIUM").map_or_else(|| PathBuf::from("/usr/bin/chromium"), PathBuf::from)
}

/// Everything the browser test needs, or a message saying what is missing and how to get it. Missing tools fail the
/// test: it must never pass without having run.
fn prerequisites(root: &Path) -> Result<(), String> {
    let node = std::process::Command::new("node").arg("--version").output();
    if !node.is_ok_and(|o| o.status.success()) {
        return Err(
            "`node` is not on PATH: the browser test needs Node.js (scripts/test.sh installs everything)".into()
        );
    }
    let chromium = chromium();
    if !chromium.exists() {
        return Err(format!(
            "Chromium is not installed at {}: run `apt-get install -y --no-install-recommends chromium` \
             (scripts/test.sh does this) or set HOLDFAST_CHROMIUM",
            chromium.display()
        ));
    }
    if !root.join("devnet/node_modules/playwright-core/package.json").exists() {
        return Err("playwright-core is missing from devnet/node_modules: run `npm ci --prefix devnet`".into());
    }
    Ok(())
}

fn screenshot_dir(root: &Path) -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| root.join("target"), |d| root.join(PathBuf::from(d)))
        .join("ui-screenshots")
}

/// Serves `state` on a free loopback port and runs the browser script's `scenario` against it; asserts it passed and
/// left the named screenshots.
async fn run_scenario(scenario: &str, state: Arc<AppState>, screenshots: &[&str]) {
    let root = repo_root();
    if let Err(missing) = prerequisites(&root) {
        panic!("browser test cannot run: {missing}");
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let url = format!("http://{addr}");
    let code = state.sign_in().mint_code().unwrap();
    let app = holdfast_server::router(state, HostPolicy::loopback(addr));
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });

    let out = screenshot_dir(&root);
    std::fs::create_dir_all(&out).unwrap();
    for name in screenshots {
        let _ = std::fs::remove_file(out.join(name));
    }

    let script = root.join("crates/server/tests/js/ui.mjs");
    let child = tokio::process::Command::new("node")
        .arg(&script)
        .args(["--url", &url, "--token", TOKEN, "--code", &code, "--scenario", scenario, "--out"])
        .arg(&out)
        .arg("--chromium")
        .arg(chromium())
        .env("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")
        .env_remove("HOLDFAST_UI_FILE")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let output = tokio::time::timeout(Duration::from_secs(300), child.wait_with_output())
        .await
        .expect("the browser script did not finish within 5 minutes")
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    println!("{stdout}");
    eprintln!("{stderr}");
    assert!(output.status.success(), "the browser test failed ({}):\n{stdout}\n{stderr}", output.status);
    let last: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(last["ok"], true, "{stdout}");
    for name in screenshots {
        let shot = out.join(name);
        let bytes = std::fs::metadata(&shot).map(|m| m.len()).unwrap_or(0);
        assert!(bytes > 10_000, "screenshot {} is missing or empty", shot.display());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_swap_step_by_step_in_a_real_browser() {
    if let Err(missing) = prerequisites(&repo_root()) {
        panic!("browser test cannot run: {missing}");
    }
    let devnet = holdfast_devnet::TestDevnet::start().await.unwrap();
    let runtime = Arc::new(Runtime::load(Some(&devnet.config_path)).await.unwrap());
    let state = AppState::with_agent(runtime, None, Some(AccessToken::from_secret(TOKEN).unwrap()));
    let shots = [
        "01-context-bank.png",
        "02-registers-after-quote.png",
        "02b-registers-panel.png",
        "03-confirmation-dialog.png",
        "04-receipt.png",
        "05-journal.png",
        "07-wallet.png",
        "08-tx-page.png",
        "06-stale-quote.png",
        "layout-390.png",
        "layout-1024.png",
        "layout-1440.png",
    ];
    run_scenario("swap", state, &shots).await;
    drop(devnet);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_swap_walkthrough_pre_fills_from_the_latest_message_only() {
    let runtime = Arc::new(Runtime::load(None).await.unwrap());
    let state = AppState::with_agent(runtime, None, Some(AccessToken::from_secret(TOKEN).unwrap()));
    run_scenario("walkthrough", state, &["walkthrough-1-latest.png"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_wallet_panel_shows_the_smart_account_and_its_onchain_limits() {
    let devnet =
        holdfast_devnet::TestDevnet::start_with_account(holdfast_devnet::OnchainLimit::defaults()).await.unwrap();
    let runtime = Arc::new(Runtime::load(Some(&devnet.config_path)).await.unwrap());
    let state = AppState::with_agent(runtime, None, Some(AccessToken::from_secret(TOKEN).unwrap()));
    run_scenario("account", state, &["account-1-wallet.png"]).await;
    drop(devnet);
}

/// A model that looks a token up, then answers, streaming its words with pauses so the browser sees a partial reply.
struct ScriptedModel {
    calls: AtomicUsize,
}

impl ScriptedModel {
    async fn stream(on_delta: DeltaSink<'_>, text: &str, pause: Duration) {
        for (i, word) in text.split(' ').enumerate() {
            on_delta(StreamDelta::Text(if i == 0 { word.to_owned() } else { format!(" {word}") }));
            tokio::time::sleep(pause).await;
        }
    }
}

impl ChatProvider for ScriptedModel {
    fn name(&self) -> &str {
        "scripted"
    }

    fn model(&self) -> &str {
        "browser-test"
    }

    fn check_model(&self) -> BoxFuture<'_, Result<(), LlmError>> {
        Box::pin(async { Ok(()) })
    }

    fn complete<'a>(
        &'a self,
        _request: &'a ChatRequest,
        on_delta: DeltaSink<'a>,
    ) -> BoxFuture<'a, Result<ChatResponse, LlmError>> {
        Box::pin(async move {
            let usage = Usage { input_tokens: 10, output_tokens: 10, ..Usage::default() };
            if self.calls.fetch_add(1, Ordering::SeqCst).is_multiple_of(2) {
                let text = "Let me look USDC up in the token table.";
                Self::stream(on_delta, text, Duration::from_millis(30)).await;
                Ok(ChatResponse {
                    text: text.to_owned(),
                    tool_calls: vec![ToolCall {
                        id: "call_1".into(),
                        name: "token_lookup".into(),
                        arguments: r#"{"symbol":"USDC","network":"base","cache_as":"buy_token"}"#.into(),
                    }],
                    usage,
                    stop_reason: Some("tool_calls".into()),
                })
            } else {
                let text = "USDC is in the register buy_token now (6 decimals, origin config). I pass its name; I never \
                            type its address.";
                Self::stream(on_delta, text, Duration::from_millis(150)).await;
                Ok(ChatResponse { text: text.to_owned(), tool_calls: vec![], usage, stop_reason: Some("stop".into()) })
            }
        })
    }
}

/// What the user pastes into the chat is sent as pasted with its message (the server reads it as quoted: someone
/// else's "send 7 USDC to 0x…" moves nothing by itself; `api::a_pasted_request_moves_nothing_by_itself`), and the
/// context bank the server fed reads it so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paste_into_the_chat_is_sent_as_pasted() {
    let runtime = Arc::new(Runtime::load(None).await.unwrap());
    let state = AppState::with_agent(Arc::clone(&runtime), None, Some(AccessToken::from_secret(TOKEN).unwrap()));
    run_scenario("paste", state, &[]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chat_with_a_model_streams_in_the_browser() {
    let runtime = Arc::new(Runtime::load(None).await.unwrap());
    let agent = Agent::new(Arc::clone(&runtime), Arc::new(ScriptedModel { calls: AtomicUsize::new(0) }));
    let state = AppState::with_agent(runtime, Some(agent), Some(AccessToken::from_secret(TOKEN).unwrap()));
    run_scenario("chat", state, &["chat-1-streaming.png", "chat-2-final.png"]).await;
}

/// A model that plays its replies in order, without streaming (each agent of the `agents` scenario has one).
struct Replies(parking_lot::Mutex<std::collections::VecDeque<ChatResponse>>);

impl Replies {
    fn new(replies: Vec<ChatResponse>) -> Arc<Self> {
        Arc::new(Self(parking_lot::Mutex::new(replies.into())))
    }

    fn text(text: &str) -> ChatResponse {
        ChatResponse { text: text.to_owned(), stop_reason: Some("stop".into()), ..ChatResponse::default() }
    }
}

impl ChatProvider for Replies {
    fn name(&self) -> &str {
        "scripted"
    }

    fn model(&self) -> &str {
        "browser-test"
    }

    fn check_model(&self) -> BoxFuture<'_, Result<(), LlmError>> {
        Box::pin(async { Ok(()) })
    }

    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest,
        _on_delta: DeltaSink<'a>,
    ) -> BoxFuture<'a, Result<ChatResponse, LlmError>> {
        // The researcher's inbox turn (the assistant's answer arrived) may ask before its user turn's last step: it is
        // answered by what it was shown, not by its place in the queue.
        // A turn answering this never ends by itself: only a stop does.
        if format!("{:?}", request.messages.last()).contains("please wait forever") {
            return Box::pin(std::future::pending());
        }
        if format!("{:?}", request.messages).contains("USDC is on Base.") {
            return Box::pin(async { Ok(Replies::text("The assistant says: Base.")) });
        }
        Box::pin(async move { Ok(self.0.lock().pop_front().unwrap_or_else(|| Replies::text("(nothing more)"))) })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn several_agents_and_the_messages_between_them_in_the_browser() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("holdfast.toml");
    std::fs::write(
        &config,
        "[memory]\nagent_cooldown_secs = 0\n\n[agents.researcher]\npersona = \"You research.\"\n\
         tools = [\"send_message\", \"token_lookup\"]\n",
    )
    .unwrap();
    let runtime = Arc::new(Runtime::load(Some(&config)).await.unwrap());
    // The researcher, asked by the user, messages the assistant; the assistant's inbox turn answers it.
    let ask = ToolCall {
        id: "call_1".into(),
        name: "send_message".into(),
        arguments:
            r#"{"target":{"type":"agent","id":"assistant"},"content":"Which network is USDC on?","metadata":null}"#
                .into(),
    };
    let wait = ToolCall {
        id: "call_2".into(),
        name: "send_message".into(),
        arguments: r#"{"target":{"type":"agent","id":"assistant"},"content":"please wait forever","metadata":null}"#
            .into(),
    };
    let researcher_model = Replies::new(vec![
        ChatResponse { tool_calls: vec![ask], stop_reason: Some("tool_calls".into()), ..ChatResponse::default() },
        Replies::text("I asked the assistant."),
        ChatResponse { tool_calls: vec![wait], stop_reason: Some("tool_calls".into()), ..ChatResponse::default() },
        Replies::text("I asked again."),
    ]);
    let assistant_model = Replies::new(vec![Replies::text("USDC is on Base.")]);
    let agent = |name: &str, model: Arc<Replies>| {
        Agent::for_profile(Arc::clone(&runtime), model, runtime.profile(name).unwrap())
    };
    let agents = vec![agent("assistant", assistant_model), agent("researcher", researcher_model)];
    let cancel = holdfast_agent::CancelToken::new();
    for a in &agents {
        holdfast_agent::inbox::spawn(a.clone(), cancel.clone());
    }
    let state = AppState::with_agents(Arc::clone(&runtime), agents, Some(AccessToken::from_secret(TOKEN).unwrap()));
    run_scenario("agents", state, &["agents-1-inbox.png"]).await;
    cancel.cancel();
}

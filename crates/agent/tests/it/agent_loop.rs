//! The tool loop against scripted models speaking the real OpenAI and Anthropic wire protocols over HTTP.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use holdfast_agent::llm::anthropic::AnthropicProvider;
use holdfast_agent::llm::openai::OpenAiProvider;
use holdfast_agent::llm::{ChatProvider, LlmErrorKind, RetryPolicy};
use holdfast_agent::{
    Agent, AgentConfig, AgentError, CancelToken, ConfirmDecision, MessageRole, NewMessage, NoObserver, Runtime,
    StopReason, ToolCallRecord, TurnObserver,
};
use holdfast_core::confirm::Confirmation;
use holdfast_core::tool::BoxFuture;
use holdfast_testkit::scripted::{Reply, Scripted, Wire, swap_script, tool};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

fn fast() -> RetryPolicy {
    RetryPolicy {
        max_retries: 2,
        initial_backoff: Duration::from_millis(10),
        max_backoff: Duration::from_millis(50),
        request_timeout: Duration::from_secs(20),
    }
}

fn provider(wire: Wire, s: &Scripted) -> Arc<dyn ChatProvider> {
    match wire {
        Wire::OpenAi => {
            Arc::new(OpenAiProvider::new(&s.url, Some("sk-test".into()), "scripted-model").with_retry(fast()))
        }
        Wire::Anthropic => {
            Arc::new(AnthropicProvider::new(&s.url, "sk-ant-test".into(), "scripted-model").with_retry(fast()))
        }
    }
}

async fn full_swap(wire: Wire) {
    let devnet = holdfast_devnet::TestDevnet::start().await.unwrap();
    let runtime = Arc::new(Runtime::load(Some(&devnet.config_path)).await.unwrap());
    let scripted = Scripted::start(wire, swap_script("0.001")).await;
    let agent = Agent::new(Arc::clone(&runtime), provider(wire, &scripted));
    let (info, ctx) = runtime.open_session("test").await.unwrap();
    let out = agent.run_turn(&ctx, "swap 0.001 ETH for USDC on base", &NoObserver, &CancelToken::new()).await.unwrap();
    assert_eq!(out.stopped, None, "{out:?}");
    assert_eq!(out.text, "Done: swapped 0.001 ETH for USDC.");
    assert_eq!((out.steps, out.tool_calls), (7, 7));
    assert!(out.usage.input_tokens > 0 && out.usage.output_tokens > 0);

    let journal = runtime.web3.journal().for_session(&info.id).await.unwrap();
    let swap = journal.iter().find(|e| e.kind == holdfast_web3::EntryKind::Swap).unwrap();
    assert_eq!(swap.status, holdfast_web3::EntryStatus::Confirmed);
    assert_eq!(ctx.registers.get("sell_amount").unwrap().origin(), holdfast_core::Origin::User);

    let history = runtime.sessions.history(&info.id).await.unwrap();
    assert_eq!(history.iter().filter(|m| m.role == MessageRole::Tool).count(), 7);
    assert!(
        history.iter().filter(|m| m.role == MessageRole::Tool).all(|m| !m.content.contains("\"error\"")),
        "{history:#?}"
    );

    let requests = scripted.requests.lock().clone();
    assert_eq!(requests.len(), 7);
    let (headers, first) = &requests[0];
    let (system, tools) = match wire {
        Wire::OpenAi => {
            assert_eq!(headers["authorization"], "Bearer sk-test");
            assert_eq!(first["stream"], true);
            let tools: Vec<Value> = first["tools"].as_array().unwrap().clone();
            assert!(tools.iter().all(
                |t| t["function"]["strict"] == true && t["function"]["parameters"]["additionalProperties"] == false
            ));
            (
                first["messages"][0]["content"].as_str().unwrap().to_owned(),
                tools.iter().map(|t| t["function"]["name"].as_str().unwrap().to_owned()).collect::<Vec<_>>(),
            )
        }
        Wire::Anthropic => {
            assert_eq!(headers["x-api-key"], "sk-ant-test");
            assert_eq!(headers["anthropic-version"], "2023-06-01");
            let tools: Vec<Value> = first["tools"].as_array().unwrap().clone();
            assert!(tools.iter().all(|t| t["input_schema"]["type"] == "object"));
            // The system prompt is one text block ending a prompt-cache breakpoint, as is the tool list.
            assert_eq!(first["system"][0]["cache_control"]["type"], "ephemeral");
            assert_eq!(tools.last().unwrap()["cache_control"]["type"], "ephemeral");
            (
                first["system"][0]["text"].as_str().unwrap().to_owned(),
                tools.iter().map(|t| t["name"].as_str().unwrap().to_owned()).collect::<Vec<_>>(),
            )
        }
    };
    assert!(system.contains("Amounts: 0.001 ETH"), "the context bank is in the system context:\n{system}");
    assert!(!tools.contains(&"web3_tx".to_owned()), "value-moving tools are hidden until the skill is loaded");
    // After use_skill the swap tools are offered and the skill's instructions are in context.
    let later = &requests[1].1;
    let later_system = later
        .pointer("/system/0/text")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .unwrap_or_else(|| later["messages"][0]["content"].as_str().unwrap().to_owned());
    assert!(later_system.contains("Active skill: swap"));
    assert!(later.to_string().contains("\"web3_tx\""));
    // Tool results travel back in the protocol's own shape.
    let last = requests.last().unwrap().1.to_string();
    match wire {
        Wire::OpenAi => assert!(last.contains("\"role\":\"tool\"") && last.contains("\"tool_call_id\"")),
        Wire::Anthropic => assert!(last.contains("\"type\":\"tool_result\"") && last.contains("\"tool_use_id\"")),
    }
}

#[tokio::test]
async fn a_full_swap_conversation_over_the_openai_protocol() {
    full_swap(Wire::OpenAi).await;
}

#[tokio::test]
async fn a_full_swap_conversation_over_the_anthropic_protocol() {
    full_swap(Wire::Anthropic).await;
}

/// One "swap 0.001 ETH for USDC", then three more turns in which the model fetches a fresh quote and sends it again,
/// with no amount in the user's words: the user's amount moves value once, across turns (judged by the chain).
#[tokio::test]
async fn one_swap_request_moves_value_once_across_turns() {
    let devnet = holdfast_devnet::TestDevnet::start().await.unwrap();
    let runtime = Arc::new(Runtime::load(Some(&devnet.config_path)).await.unwrap());
    let mut replies = swap_script("0.001");
    for i in 0..3 {
        replies.push(Reply::Tools(vec![tool(
            "x402_fetch",
            json!({"preset": "swap_quote", "network": "base", "cache_as": "swap_quote"}),
        )]));
        replies.push(Reply::Tools(vec![tool("web3_tx", json!({"from_register": "swap_quote", "network": "base"}))]));
        replies.push(Reply::Text(format!("Swapped again ({i}).")));
    }
    let scripted = Scripted::start(Wire::OpenAi, replies).await;
    let agent = Agent::new(Arc::clone(&runtime), provider(Wire::OpenAi, &scripted));
    let (info, ctx) = runtime.open_session("test").await.unwrap();
    let eth = || devnet.balance_of(holdfast_devnet::NATIVE, devnet.wallet_address);
    let before = eth().await.unwrap();
    for text in ["swap 0.001 ETH for USDC on base", "again", "once more please", "and again"] {
        agent.run_turn(&ctx, text, &NoObserver, &CancelToken::new()).await.unwrap();
    }
    let history = runtime.sessions.history(&info.id).await.unwrap();
    let sends: Vec<String> =
        tool_results(&history).into_iter().filter(|(name, _)| name == "web3_tx").map(|(_, code)| code).collect();
    assert_eq!(sends, ["ok", "confirmation_required", "confirmation_required", "confirmation_required"]);
    // Exactly one swap of 0.001 ETH left the wallet (plus its gas), not four.
    let spent = before - eth().await.unwrap();
    let one = holdfast_core::U256::from(1_000_000_000_000_000u64);
    assert!(spent >= one && spent < one + one, "one swap of 0.001 ETH across four turns: spent {spent} wei");
}

fn tool_results(history: &[holdfast_agent::StoredMessage]) -> Vec<(String, String)> {
    history
        .iter()
        .filter(|m| m.role == MessageRole::Tool)
        .map(|m| {
            let v: Value = serde_json::from_str(&m.content).unwrap();
            (m.name.clone().unwrap(), v["error"]["code"].as_str().unwrap_or("ok").to_owned())
        })
        .collect()
}

#[tokio::test]
async fn a_confused_model_gets_coded_errors_and_nothing_unsafe_happens() {
    let runtime = Arc::new(Runtime::load(None).await.unwrap());
    let scripted = Scripted::start(
        Wire::OpenAi,
        vec![
            Reply::Tools(vec![tool("web3_tx", json!({"from_register": "swap_quote", "network": "base"}))]),
            Reply::Tools(vec![tool("use_skill", json!({"name": "swap"}))]),
            Reply::Tools(vec![tool("web3_tx", json!({"to": "0x000000000000000000000000000000000000dEaD", "data": "0xa9059cbb", "value": "1000000000000000000", "network": "base"}))]),
            Reply::Tools(vec![tool("x402_fetch", json!({"url": "https://evil.example/quote", "preset": "swap_quote", "network": "base", "cache_as": "swap_quote"}))]),
            Reply::Tools(vec![tool("register_set", json!({"key": "sell_token", "value": "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"}))]),
            Reply::Tools(vec![tool("register_set", json!({"key": "swap_quote", "value": "{\"transaction\":{\"to\":\"0x000000000000000000000000000000000000dEaD\"}}"}))]),
            Reply::Tools(vec![tool("web3_tx", json!({"from_register": "my_own_quote", "network": "base"}))]),
            Reply::Text("I cannot do that safely.".into()),
        ],
    )
    .await;
    let agent = Agent::new(Arc::clone(&runtime), provider(Wire::OpenAi, &scripted));
    let (info, ctx) = runtime.open_session("test").await.unwrap();
    let out = agent
        .run_turn(
            &ctx,
            "send everything to 0x000000000000000000000000000000000000dEaD",
            &NoObserver,
            &CancelToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(out.text, "I cannot do that safely.");
    let results = tool_results(&runtime.sessions.history(&info.id).await.unwrap());
    assert_eq!(
        results,
        [
            ("web3_tx", "unknown_tool"),
            ("use_skill", "ok"),
            ("web3_tx", "invalid_params"),
            ("x402_fetch", "invalid_params"),
            ("register_set", "register_write_denied"),
            ("register_set", "register_write_denied"),
            ("web3_tx", "register_missing"),
        ]
        .map(|(a, b)| (a.to_owned(), b.to_owned()))
    );
    assert!(ctx.registers.keys().is_empty(), "nothing was written");
    assert!(runtime.web3.journal().for_session(&info.id).await.unwrap().is_empty(), "nothing was signed");
}

#[tokio::test]
async fn the_step_limit_stops_the_loop_and_says_so() {
    let runtime = Arc::new(Runtime::load(None).await.unwrap());
    let replies = (0..5)
        .map(|i| Reply::Tools(vec![tool("register_get", json!({"key": format!("k{i}"), "path": null}))]))
        .collect();
    let scripted = Scripted::start(Wire::Anthropic, replies).await;
    let agent = Agent::new(Arc::clone(&runtime), provider(Wire::Anthropic, &scripted))
        .with_config(AgentConfig { max_steps: 3, ..AgentConfig::default() });
    let (info, ctx) = runtime.open_session("test").await.unwrap();
    let out = agent.run_turn(&ctx, "look around", &NoObserver, &CancelToken::new()).await.unwrap();
    assert_eq!((out.stopped, out.steps), (Some(StopReason::StepLimit), 3));
    assert!(out.text.contains("step limit"));
    let history = runtime.sessions.history(&info.id).await.unwrap();
    assert_eq!(history.last().unwrap().role, MessageRole::System);
}

#[tokio::test]
async fn repeated_identical_calls_are_stopped() {
    let runtime = Arc::new(Runtime::load(None).await.unwrap());
    let call = || tool("register_get", json!({"key": "sell_amount", "path": null}));
    let same = || Reply::Tools(vec![call()]);
    let third_and_another = Reply::Tools(vec![call(), tool("use_skill", json!({"name": "swap"}))]);
    let scripted = Scripted::start(Wire::OpenAi, vec![same(), same(), third_and_another, same()]).await;
    let agent = Agent::new(Arc::clone(&runtime), provider(Wire::OpenAi, &scripted));
    let (info, ctx) = runtime.open_session("test").await.unwrap();
    let out = agent.run_turn(&ctx, "what is the amount?", &NoObserver, &CancelToken::new()).await.unwrap();
    assert_eq!(out.stopped, Some(StopReason::RepeatedCall), "{out:?}");
    assert_eq!(out.tool_calls, 2);
    // The call after the repeated one is answered as not run (not left for the model to take as of unknown outcome).
    let results = tool_results(&runtime.sessions.history(&info.id).await.unwrap());
    assert_eq!(results.last().unwrap(), &("use_skill".to_owned(), "cancelled".to_owned()), "{results:?}");
}

#[tokio::test]
async fn a_turn_can_be_cancelled_while_the_model_thinks() {
    let runtime = Arc::new(Runtime::load(None).await.unwrap());
    let scripted = Scripted::start(
        Wire::OpenAi,
        vec![Reply::Delay(Duration::from_secs(30), Box::new(Reply::Text("late".into())))],
    )
    .await;
    let agent = Agent::new(Arc::clone(&runtime), provider(Wire::OpenAi, &scripted));
    let (_, ctx) = runtime.open_session("test").await.unwrap();
    let cancel = CancelToken::new();
    let c = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        c.cancel();
    });
    let started = std::time::Instant::now();
    let out = agent.run_turn(&ctx, "hello", &NoObserver, &cancel).await.unwrap();
    assert_eq!(out.stopped, Some(StopReason::Cancelled));
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[tokio::test]
async fn rate_limits_are_retried_and_a_bad_key_is_a_clear_error() {
    let runtime = Arc::new(Runtime::load(None).await.unwrap());
    let scripted =
        Scripted::start(Wire::OpenAi, vec![Reply::Status(429, "slow down".into()), Reply::Text("hello".into())]).await;
    let agent = Agent::new(Arc::clone(&runtime), provider(Wire::OpenAi, &scripted));
    let (_, ctx) = runtime.open_session("test").await.unwrap();
    let out = agent.run_turn(&ctx, "hi", &NoObserver, &CancelToken::new()).await.unwrap();
    assert_eq!(out.text, "hello");
    assert_eq!(scripted.requests.lock().len(), 2);

    for (wire, status, kind) in [
        (Wire::OpenAi, 401, LlmErrorKind::Auth),
        (Wire::Anthropic, 401, LlmErrorKind::Auth),
        (Wire::OpenAi, 404, LlmErrorKind::UnknownModel),
    ] {
        let scripted = Scripted::start(wire, vec![Reply::Status(status, "Incorrect API key provided".into())]).await;
        let agent = Agent::new(Arc::clone(&runtime), provider(wire, &scripted));
        match agent.run_turn(&ctx, "hi", &NoObserver, &CancelToken::new()).await {
            Err(AgentError::Llm(e)) => {
                assert_eq!(e.kind, kind);
                assert!(e.message.contains(&status.to_string()), "{e}");
                if status == 404 {
                    assert!(e.message.contains("scripted-model"));
                }
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(scripted.requests.lock().len(), 1, "4xx are not retried");
    }
    let scripted = Scripted::start(Wire::OpenAi, vec![Reply::Status(503, "down".into()); 5]).await;
    let agent = Agent::new(Arc::clone(&runtime), provider(Wire::OpenAi, &scripted));
    assert!(
        matches!(agent.run_turn(&ctx, "hi", &NoObserver, &CancelToken::new()).await, Err(AgentError::Llm(e)) if e.kind == LlmErrorKind::Server)
    );
    assert_eq!(scripted.requests.lock().len(), 3, "first try + 2 retries");
}

#[tokio::test]
async fn malformed_tool_call_json_is_returned_to_the_model_as_a_coded_error() {
    let runtime = Arc::new(Runtime::load(None).await.unwrap());
    let scripted = Scripted::start(
        Wire::OpenAi,
        vec![
            Reply::Tools(vec![("register_set".into(), "{\"key\": \"note\", \"value\": ".into())]),
            Reply::Text("sorry".into()),
        ],
    )
    .await;
    let agent = Agent::new(Arc::clone(&runtime), provider(Wire::OpenAi, &scripted));
    let (info, ctx) = runtime.open_session("test").await.unwrap();
    let out = agent.run_turn(&ctx, "note this", &NoObserver, &CancelToken::new()).await.unwrap();
    assert_eq!(out.text, "sorry");
    let history = runtime.sessions.history(&info.id).await.unwrap();
    let result = history.iter().find(|m| m.role == MessageRole::Tool).unwrap();
    assert!(
        result.content.contains("invalid_params") && result.content.contains("not valid JSON"),
        "{}",
        result.content
    );
    // The second request still carries the malformed call, so the model sees what it sent.
    assert!(scripted.requests.lock()[1].1.to_string().contains("invalid_params"));
}

struct Answer(ConfirmDecision, parking_lot::Mutex<Vec<Value>>);

impl TurnObserver for Answer {
    fn confirm<'a>(&'a self, c: &'a Confirmation) -> BoxFuture<'a, ConfirmDecision> {
        self.1.lock().push(c.summary.clone());
        Box::pin(async move { self.0 })
    }

    fn channel(&self) -> Option<holdfast_core::UserChannel> {
        Some(holdfast_core::UserChannel::Terminal)
    }
}

/// An observer that is no user channel (a turn started by another agent or a reminder): it says "approve".
struct NotTheUser;

impl TurnObserver for NotTheUser {
    fn confirm<'a>(&'a self, _: &'a Confirmation) -> BoxFuture<'a, ConfirmDecision> {
        Box::pin(async { ConfirmDecision::Approve })
    }
}

#[tokio::test]
async fn confirmations_pause_the_loop_and_the_users_answer_decides() {
    let devnet = holdfast_devnet::TestDevnet::start().await.unwrap();
    let runtime = Arc::new(Runtime::load(Some(&devnet.config_path)).await.unwrap());
    for (decision, expect) in [(ConfirmDecision::Deny, "confirmation_denied"), (ConfirmDecision::Approve, "ok")] {
        let mut script = swap_script("0.001");
        // The model types the amount itself instead of using to_raw_amount: the swap needs the user's approval.
        script[3] =
            Reply::Tools(vec![tool("register_set", json!({"key": "sell_amount", "value": "1000000000000000"}))]);
        let scripted = Scripted::start(Wire::OpenAi, script).await;
        let agent = Agent::new(Arc::clone(&runtime), provider(Wire::OpenAi, &scripted));
        let (info, ctx) = runtime.open_session("test").await.unwrap();
        let observer = Answer(decision, Default::default());
        agent.run_turn(&ctx, "swap some ETH for USDC", &observer, &CancelToken::new()).await.unwrap();
        let summaries = observer.1.lock().clone();
        assert_eq!(summaries.len(), 1);
        assert_eq!(summaries[0]["sell"], "0.001 ETH", "the user sees the decoded action");
        let results = tool_results(&runtime.sessions.history(&info.id).await.unwrap());
        assert_eq!(results.last().unwrap(), &("web3_tx".to_owned(), expect.to_owned()));
        let swaps = runtime
            .web3
            .journal()
            .for_session(&info.id)
            .await
            .unwrap()
            .into_iter()
            .filter(|e| e.kind == holdfast_web3::EntryKind::Swap)
            .count();
        assert_eq!(swaps, usize::from(decision == ConfirmDecision::Approve));
    }
}

#[tokio::test]
async fn an_observer_that_is_no_user_channel_cannot_approve() {
    let devnet = holdfast_devnet::TestDevnet::start().await.unwrap();
    let runtime = Arc::new(Runtime::load(Some(&devnet.config_path)).await.unwrap());
    let mut script = swap_script("0.001");
    script[3] = Reply::Tools(vec![tool("register_set", json!({"key": "sell_amount", "value": "1000000000000000"}))]);
    let scripted = Scripted::start(Wire::OpenAi, script).await;
    let agent = Agent::new(Arc::clone(&runtime), provider(Wire::OpenAi, &scripted));
    let (info, ctx) = runtime.open_session("test").await.unwrap();
    agent.run_turn(&ctx, "swap some ETH for USDC", &NotTheUser, &CancelToken::new()).await.unwrap();
    let results = tool_results(&runtime.sessions.history(&info.id).await.unwrap());
    assert_eq!(results.last().unwrap(), &("web3_tx".to_owned(), "confirmation_required".to_owned()));
    assert_eq!(ctx.confirmations.pending().len(), 1, "still waiting for the user");
    let swaps = runtime.web3.journal().for_session(&info.id).await.unwrap();
    assert!(swaps.iter().all(|e| e.kind != holdfast_web3::EntryKind::Swap), "nothing sent: {swaps:?}");
}

#[tokio::test]
async fn both_retry_after_forms_are_honoured_on_both_wires() {
    let runtime = Arc::new(Runtime::load(None).await.unwrap());
    let (_, ctx) = runtime.open_session("test").await.unwrap();
    let past = (chrono::Utc::now() - chrono::Duration::seconds(5)).format("%a, %d %b %Y %H:%M:%S GMT").to_string();
    for wire in [Wire::OpenAi, Wire::Anthropic] {
        let replies = vec![Reply::Limited("0".into()), Reply::Limited(past.clone()), Reply::Text("hello".into())];
        let scripted = Scripted::start(wire, replies).await;
        let agent = Agent::new(Arc::clone(&runtime), provider(wire, &scripted));
        let out = agent.run_turn(&ctx, "hi", &NoObserver, &CancelToken::new()).await.unwrap();
        assert_eq!(out.text, "hello", "{wire:?}");
        assert_eq!(scripted.requests.lock().len(), 3, "{wire:?}: two 429s retried, seconds and HTTP date");
        // Prompt-cache tokens as each provider reports them.
        let cache = (out.usage.cache_read_tokens, out.usage.cache_write_tokens);
        assert_eq!(cache, if wire == Wire::OpenAi { (64, 0) } else { (900, 40) }, "{wire:?}");
    }
}

#[tokio::test]
async fn reasoning_models_get_max_completion_tokens_and_anthropic_tool_errors_say_so() {
    let runtime = Arc::new(Runtime::load(None).await.unwrap());
    let (_, ctx) = runtime.open_session("test").await.unwrap();
    let scripted = Scripted::start(Wire::OpenAi, vec![Reply::Text("ok".into())]).await;
    let gpt5 = OpenAiProvider::new(&scripted.url, Some("sk-test".into()), "gpt-5-mini").with_retry(fast());
    let agent = Agent::new(Arc::clone(&runtime), Arc::new(gpt5));
    agent.run_turn(&ctx, "hi", &NoObserver, &CancelToken::new()).await.unwrap();
    let body = scripted.requests.lock()[0].1.clone();
    assert!(body["max_completion_tokens"].is_u64(), "{body}");
    assert!(body.get("max_tokens").is_none(), "a gpt-5 request carries no max_tokens: {body}");

    let replies = vec![
        Reply::Tools(vec![
            tool("token_lookup", json!({"symbol": "DOGE", "network": "base", "cache_as": null})),
            tool("token_lookup", json!({"symbol": "USDC", "network": "base", "cache_as": null})),
        ]),
        Reply::Text("done".into()),
    ];
    let scripted = Scripted::start(Wire::Anthropic, replies).await;
    let agent = Agent::new(Arc::clone(&runtime), provider(Wire::Anthropic, &scripted));
    agent.run_turn(&ctx, "look up DOGE and USDC", &NoObserver, &CancelToken::new()).await.unwrap();
    let second = scripted.requests.lock()[1].1.clone();
    let results: Vec<Value> = second["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .filter(|b| b["type"] == "tool_result")
        .collect();
    assert_eq!(results.len(), 2, "{second}");
    assert_eq!(results[0]["is_error"], true, "the unknown token's lookup failed: {}", results[0]);
    assert!(results[1].get("is_error").is_none(), "the USDC lookup did not: {}", results[1]);
}

/// `holdfast doctor`'s model check: the model is one encoded path segment (OpenRouter's `openai/gpt-4o`), and a
/// server that only lists models (vLLM, llama.cpp) is asked for the list instead.
#[tokio::test]
async fn the_model_check_encodes_the_model_and_falls_back_to_the_model_list() {
    use axum::extract::OriginalUri;
    let seen = Arc::new(parking_lot::Mutex::new(Vec::<String>::new()));
    let log = Arc::clone(&seen);
    let app = axum::Router::new().fallback(move |OriginalUri(uri): OriginalUri| {
        let log = Arc::clone(&log);
        async move {
            log.lock().push(uri.path().to_owned());
            match uri.path() {
                "/v1/models" => (axum::http::StatusCode::OK, axum::Json(json!({"data": [{"id": "openai/gpt-4o"}]}))),
                _ => (axum::http::StatusCode::NOT_FOUND, axum::Json(json!({"error": {"message": "no route"}}))),
            }
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });

    let listed = OpenAiProvider::new(&url, Some("k".into()), "openai/gpt-4o").with_retry(fast());
    listed.check_model().await.unwrap();
    assert_eq!(*seen.lock(), ["/v1/models/openai%2Fgpt-4o", "/v1/models"]);
    let missing = OpenAiProvider::new(&url, Some("k".into()), "gpt-9").with_retry(fast());
    let err = missing.check_model().await.unwrap_err();
    assert_eq!(err.kind, LlmErrorKind::UnknownModel);
    assert!(err.message.contains("`gpt-9` is not in the provider's model list"), "{err}");
}

#[tokio::test]
async fn a_server_that_does_not_stream_is_understood_on_both_wires() {
    let args = json!({"symbol": "USDC", "network": "base", "cache_as": "buy_token"});
    for wire in [Wire::OpenAi, Wire::Anthropic] {
        // Recorded in each provider's documented non-streamed shape: a tool call, then the answer.
        let (call, answer) = match wire {
            Wire::OpenAi => (
                json!({"id": "chatcmpl-1", "object": "chat.completion", "model": "scripted",
                       "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": null,
                         "tool_calls": [{"id": "call_1", "type": "function",
                                         "function": {"name": "token_lookup", "arguments": args.to_string()}}]}}],
                       "usage": {"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60}}),
                json!({"id": "chatcmpl-2", "object": "chat.completion", "model": "scripted",
                       "choices": [{"index": 0, "finish_reason": "stop",
                                    "message": {"role": "assistant", "content": "USDC is in buy_token."}}],
                       "usage": {"prompt_tokens": 70, "completion_tokens": 6, "total_tokens": 76}}),
            ),
            Wire::Anthropic => (
                json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "scripted", "stop_reason": "tool_use",
                       "content": [{"type": "tool_use", "id": "toolu_1", "name": "token_lookup", "input": args}],
                       "usage": {"input_tokens": 50, "output_tokens": 10, "cache_read_input_tokens": 0}}),
                json!({"id": "msg_2", "type": "message", "role": "assistant", "model": "scripted", "stop_reason": "end_turn",
                       "content": [{"type": "text", "text": "USDC is in buy_token."}],
                       "usage": {"input_tokens": 70, "output_tokens": 6}}),
            ),
        };
        let runtime = Arc::new(Runtime::load(None).await.unwrap());
        let scripted = Scripted::start(wire, vec![Reply::Json(call), Reply::Json(answer)]).await;
        let agent = Agent::new(Arc::clone(&runtime), provider(wire, &scripted));
        let (_, ctx) = runtime.open_session("test").await.unwrap();
        let out = agent.run_turn(&ctx, "what is USDC on base?", &NoObserver, &CancelToken::new()).await.unwrap();
        assert_eq!((out.text.as_str(), out.steps, out.tool_calls), ("USDC is in buy_token.", 2, 1), "{wire:?}");
        assert_eq!((out.usage.input_tokens, out.usage.output_tokens), (120, 16), "{wire:?}");
        assert_eq!(ctx.registers.get("buy_token").unwrap().value["symbol"], "USDC", "{wire:?}");
    }
}

async fn runtime_in(dir: &std::path::Path) -> Arc<Runtime> {
    let doc = holdfast_core::config::ConfigDocument::empty();
    Arc::new(Runtime::from_document_with_data_dir(doc, Some(dir.to_path_buf())).await.unwrap())
}

/// The tool results of the last request the model got, as (call id, error code or "ok"), on either wire.
fn last_request_results(scripted: &Scripted) -> Vec<(String, String)> {
    let body = scripted.requests.lock().last().unwrap().1.clone();
    let code = |content: &str| {
        serde_json::from_str::<Value>(content).ok().and_then(|v| v["error"]["code"].as_str().map(str::to_owned))
    };
    let mut out = Vec::new();
    for m in body["messages"].as_array().unwrap() {
        if m["role"] == "tool" {
            let c = code(m["content"].as_str().unwrap()).unwrap_or_else(|| "ok".into());
            out.push((m["tool_call_id"].as_str().unwrap().to_owned(), c));
        }
        for b in m["content"].as_array().into_iter().flatten().filter(|b| b["type"] == "tool_result") {
            let c = code(b["content"].as_str().unwrap()).unwrap_or_else(|| "ok".into());
            out.push((b["tool_use_id"].as_str().unwrap().to_owned(), c));
        }
    }
    out
}

#[tokio::test]
async fn a_session_whose_process_stopped_during_a_tool_call_goes_on_after_a_restart() {
    for wire in [Wire::OpenAi, Wire::Anthropic] {
        let tmp = tempfile::tempdir().unwrap();
        let id = {
            // What a process killed while a tool ran leaves on disk: the model's call recorded, no result.
            let runtime = runtime_in(tmp.path()).await;
            let (info, _) = runtime.open_session("test").await.unwrap();
            let sessions = &runtime.sessions;
            sessions.append(&info.id, NewMessage::text(MessageRole::User, "pay the invoice")).await.unwrap();
            let call = ToolCallRecord { id: "call_stopped".into(), name: "web3_tx".into(), arguments: json!({}) };
            let asked = NewMessage { tool_calls: vec![call], ..NewMessage::text(MessageRole::Assistant, "") };
            sessions.append(&info.id, asked).await.unwrap();
            info.id
        };
        let runtime = runtime_in(tmp.path()).await;
        let ctx = runtime.session(&id).await.unwrap().unwrap();
        let scripted =
            Scripted::start(wire, vec![Reply::Text("It may have been paid; let me check first.".into())]).await;
        let agent = Agent::new(Arc::clone(&runtime), provider(wire, &scripted));
        let out = agent.run_turn(&ctx, "did it go through?", &NoObserver, &CancelToken::new()).await;
        let out = out.unwrap_or_else(|e| panic!("{wire:?}: the session is stuck: {e}"));
        assert_eq!(out.text, "It may have been paid; let me check first.");
        assert_eq!(
            last_request_results(&scripted),
            [("call_stopped".to_owned(), "outcome_unknown".to_owned())],
            "{wire:?}: the model is told the call's outcome is unknown"
        );
        let history = runtime.sessions.history(&id).await.unwrap();
        assert!(history.iter().all(|m| m.role != MessageRole::Tool), "the stored history is left as it was");
    }
}

#[tokio::test]
async fn a_result_that_cannot_be_saved_ends_the_turn_saying_what_the_call_did() {
    let tmp = tempfile::tempdir().unwrap();
    let runtime = runtime_in(tmp.path()).await;
    let (info, ctx) = runtime.open_session("test").await.unwrap();
    let db = holdfast_store::SqliteDb::open(&tmp.path().join("holdfast.db")).unwrap();
    db.lock()
        .execute_batch(
            "CREATE TRIGGER history_fault BEFORE INSERT ON session_messages WHEN NEW.role = 'tool'
             BEGIN SELECT RAISE(ABORT, 'disk full (injected by the test)'); END;",
        )
        .unwrap();
    let scripted = Scripted::start(
        Wire::OpenAi,
        vec![
            Reply::Tools(vec![tool("register_set", json!({"key": "invoice_note", "value": "paid by the agent"}))]),
            Reply::Text("It was written; I will check before doing it again.".into()),
        ],
    )
    .await;
    let agent = Agent::new(Arc::clone(&runtime), provider(Wire::OpenAi, &scripted));
    let err =
        agent.run_turn(&ctx, "note that the invoice is paid", &NoObserver, &CancelToken::new()).await.unwrap_err();
    let AgentError::Tool(err) = err else { panic!("a storage error: {err:?}") };
    assert!(err.message.contains("`register_set` ran"), "{}", err.message);
    let details = err.details.clone().unwrap();
    assert_eq!(details["tool"], "register_set");
    assert!(
        details["result"].as_str().unwrap().contains("invoice_note"),
        "the user is told what it answered: {details}"
    );
    assert!(!err.message.contains("invoice_note"), "what it answered stays out of the message logs show");
    assert_eq!(ctx.registers.get("invoice_note").unwrap().value, json!("paid by the agent"), "the call did run");
    assert_eq!(scripted.requests.lock().len(), 1, "the turn stopped instead of going on unrecorded");

    db.lock().execute_batch("DROP TRIGGER history_fault").unwrap();
    let out = agent.run_turn(&ctx, "was it written?", &NoObserver, &CancelToken::new()).await.unwrap();
    assert_eq!(out.text, "It was written; I will check before doing it again.");
    let results = last_request_results(&scripted);
    assert_eq!(results.len(), 1, "{results:?}");
    assert_eq!(results[0].1, "outcome_unknown", "the next turn tells the model the call's outcome is unknown");
    let history = runtime.sessions.history(&info.id).await.unwrap();
    assert_eq!(history.last().unwrap().content, out.text);
}

/// Who started a turn is the turn's own, not the session's: after a user's turn and an inbox turn, the session's
/// context holds neither, so a turn of another front end in the same session (or an embedder running both at once)
/// never reads another turn's starter (before: each turn wrote it into the session's shared extensions).
#[tokio::test]
async fn a_turns_starter_stays_with_that_turn() {
    use holdfast_core::confirm::TurnStarter;
    let runtime = Arc::new(Runtime::load(None).await.unwrap());
    let scripted = Scripted::start(Wire::OpenAi, vec![Reply::Text("hello".into()), Reply::Text("hi b".into())]).await;
    let agent = Agent::new(Arc::clone(&runtime), provider(Wire::OpenAi, &scripted));
    let (_, ctx) = runtime.open_session("test").await.unwrap();
    agent.run_turn(&ctx, "hi", &NoObserver, &CancelToken::new()).await.unwrap();
    assert!(ctx.extensions.get::<TurnStarter>().is_none(), "the user's turn left its starter on the session");
    agent.answer_message(&ctx, "agent 'b'", "m_1", "hello from b", &CancelToken::new()).await.unwrap();
    assert!(ctx.extensions.get::<TurnStarter>().is_none(), "the inbox turn left its starter on the session");
    assert_eq!(TurnStarter::not_user(&ctx), None);
}

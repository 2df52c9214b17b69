//! An agent turn over HTTP that waits for the user's approval: the turn pauses on `confirmation_required`, the UI's
//! approve call resumes it, and the swap is sent by the turn itself; a denial is reported to the model. A turn whose
//! tool call hangs is stopped by the UI's stop button, and by closing the last WebSocket that watched it, leaving no
//! register, payment or journal entry behind.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use holdfast_agent::access::{AccessToken, HostPolicy};
use holdfast_agent::llm::openai::OpenAiProvider;
use holdfast_agent::{Agent, Runtime};
use holdfast_server::AppState;
use holdfast_testkit::scripted::{Reply, Scripted, Wire, swap_script, tool};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

const TOKEN: &str = "0123456789abcdef0123456789abcdef0123456789abcdef";

/// One authenticated API call; the JSON answer.
async fn api(http: &reqwest::Client, method: reqwest::Method, url: String, body: Option<Value>) -> Value {
    let mut request = http.request(method, url).bearer_auth(TOKEN);
    if let Some(body) = body {
        request = request.json(&body);
    }
    request.send().await.unwrap().json().await.unwrap()
}

/// A server whose agent's turn waits for the user's approval of a 0.02 ETH swap.
struct Waiting {
    http: reqwest::Client,
    url: String,
    id: String,
    turn: tokio::task::JoinHandle<Value>,
    /// The pending confirmation.
    pending: Value,
    _devnet: holdfast_devnet::TestDevnet,
}

async fn waiting_turn() -> Waiting {
    let devnet = holdfast_devnet::TestDevnet::start().await.unwrap();
    let runtime = Arc::new(Runtime::load(Some(&devnet.config_path)).await.unwrap());
    let scripted = Scripted::start(Wire::OpenAi, swap_script("0.02")).await;
    let agent = Agent::new(Arc::clone(&runtime), Arc::new(OpenAiProvider::new(&scripted.url, None, "scripted")));
    let state = AppState::with_agent(Arc::clone(&runtime), Some(agent), Some(AccessToken::from_secret(TOKEN).unwrap()));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let url = format!("http://{addr}");
    let app = holdfast_server::router(state, HostPolicy::loopback(addr));
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let http = reqwest::Client::new();
    let session: Value =
        http.post(format!("{url}/api/sessions")).bearer_auth(TOKEN).send().await.unwrap().json().await.unwrap();
    let id = session["id"].as_str().unwrap().to_owned();

    let turn = {
        let (http, url, id) = (http.clone(), url.clone(), id.clone());
        tokio::spawn(async move {
            let message = json!({"content": "swap 0.02 ETH for USDC"});
            api(&http, reqwest::Method::POST, format!("{url}/api/sessions/{id}/messages"), Some(message)).await
        })
    };
    // 0.02 ETH is above the devnet's auto-approve limit: the turn waits for the user.
    let mut pending = Value::Null;
    for _ in 0..200 {
        let p = api(&http, reqwest::Method::GET, format!("{url}/api/sessions/{id}/confirmations"), None).await;
        if p["pending"].as_array().is_some_and(|a| !a.is_empty()) {
            pending = p["pending"][0].clone();
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(pending["summary"]["sell"], "0.02 ETH", "{pending}");
    Waiting { http, url, id, turn, pending, _devnet: devnet }
}

impl Waiting {
    /// `POST …/confirmations/{id}/{decision}` on the pending confirmation.
    async fn decide(&self, decision: &str) -> Value {
        let cid = self.pending["id"].as_str().unwrap();
        let url = format!("{}/api/sessions/{}/confirmations/{cid}/{decision}", self.url, self.id);
        api(&self.http, reqwest::Method::POST, url, None).await
    }

    /// The pending action's call again, from the tool console, with the same parameters.
    async fn call_again(&self) -> Value {
        let tool = self.pending["tool"].as_str().unwrap();
        let url = format!("{}/api/sessions/{}/tools/{tool}", self.url, self.id);
        api(&self.http, reqwest::Method::POST, url, Some(self.pending["params"].clone())).await
    }

    /// The turn's answer (within a minute).
    async fn turn_answer(&mut self) -> Value {
        tokio::time::timeout(Duration::from_secs(60), &mut self.turn).await.unwrap().unwrap()
    }

    async fn journal(&self) -> Value {
        api(&self.http, reqwest::Method::GET, format!("{}/api/journal?session_id={}", self.url, self.id), None).await
    }
}

async fn run(decision: &str) -> (Value, Value, String) {
    let mut w = waiting_turn().await;
    let resolved = w.decide(decision).await;
    assert_eq!(resolved["resumed"], "agent", "{resolved}");
    let outcome = w.turn_answer().await;
    let journal = w.journal().await;
    let session = api(&w.http, reqwest::Method::GET, format!("{}/api/sessions/{}", w.url, w.id), None).await;
    (outcome, journal, session["history"].to_string())
}

fn swaps(journal: &Value) -> Vec<&str> {
    journal["journal"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "swap")
        .map(|e| e["status"].as_str().unwrap())
        .collect()
}

#[tokio::test]
async fn an_approved_action_resumes_the_waiting_turn() {
    let (outcome, journal, _) = run("approve").await;
    assert_eq!(outcome["agent"]["text"], "Done: swapped 0.02 ETH for USDC.", "{outcome}");
    assert_eq!(swaps(&journal), ["confirmed"]);
}

#[tokio::test]
async fn a_denied_action_is_reported_to_the_model_and_nothing_is_sent() {
    let (outcome, journal, history) = run("deny").await;
    assert_eq!(outcome["agent"]["text"], "Done: swapped 0.02 ETH for USDC.", "{outcome}");
    assert!(swaps(&journal).is_empty());
    assert!(history.contains("confirmation_denied"), "the model was told: {history}");
}

/// A question whose turn was stopped while it waited is withdrawn: no longer listed, an approval of it refused, and
/// nothing is left behind for a later call of the same action — the model's next turn, another agent's turn in an
/// inbox session, a retry — to be sent without the user being asked.
#[tokio::test]
async fn a_question_whose_turn_was_stopped_is_withdrawn_and_leaves_nothing_for_a_later_call() {
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    let mut w = waiting_turn().await;
    // A page showing the question (its WebSocket) is told it is withdrawn.
    let mut request = format!("{}/ws?session={}", w.url.replace("http", "ws"), w.id).into_client_request().unwrap();
    request.headers_mut().insert("authorization", format!("Bearer {TOKEN}").parse().unwrap());
    let (mut ws, _) = tokio_tungstenite::connect_async(request).await.unwrap();
    // Subscribed before the stop, so the event cannot be missed.
    let first = futures::StreamExt::next(&mut ws).await.unwrap().unwrap();
    assert!(first.to_string().contains("subscribed"), "{first}");
    let stopped = api(&w.http, reqwest::Method::POST, format!("{}/api/sessions/{}/cancel", w.url, w.id), None).await;
    assert_eq!(stopped["cancelled"], true, "{stopped}");
    let outcome = w.turn_answer().await;
    assert_eq!(outcome["agent"]["stopped"], "cancelled", "{outcome}");
    let withdrawn = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            let frame = futures::StreamExt::next(&mut ws).await.unwrap().unwrap();
            let frame: Value = serde_json::from_str(frame.to_text().unwrap_or("{}")).unwrap_or_default();
            if frame["event"] == "confirmation.withdrawn" {
                return frame;
            }
        }
    })
    .await
    .expect("a confirmation.withdrawn event");
    assert_eq!(withdrawn["data"]["id"], w.pending["id"], "{withdrawn}");
    assert!(withdrawn["data"]["reason"].as_str().unwrap().contains("stopped"), "{withdrawn}");
    let pending =
        api(&w.http, reqwest::Method::GET, format!("{}/api/sessions/{}/confirmations", w.url, w.id), None).await;
    assert_eq!(pending["pending"], json!([]), "withdrawn: {pending}");
    // Before: `resumed`, and the approval stood (the turn's run of it ended at once) for the call below.
    let approved = w.decide("approve").await;
    assert_eq!(approved["error"]["code"], "confirmation_not_found", "{approved}");
    assert!(swaps(&w.journal().await).is_empty(), "the stopped run sent nothing");
    // The same call again, with the same registers (the quote is still fresh).
    let again = w.call_again().await;
    // Before: sent, on the approval the stopped run left unused.
    assert_eq!(again["error"]["code"], "confirmation_required", "the user is asked again: {again}");
    assert!(swaps(&w.journal().await).is_empty(), "nothing sent");
}

/// A question the turn waits on that a newer request of the same tool replaces (the tool console's, in the same
/// session) ends the turn's wait: before, the turn waited the confirmation's ten minutes for an answer nothing could
/// give, and approving the replaced question answered `resumed`.
#[tokio::test]
async fn a_question_replaced_while_its_turn_waits_ends_the_wait() {
    let mut w = waiting_turn().await;
    let again = w.call_again().await;
    assert_eq!(again["error"]["code"], "confirmation_required", "{again}");
    assert_ne!(again["error"]["details"]["confirmation_id"], w.pending["id"], "a new question: {again}");
    let outcome = w.turn_answer().await;
    assert!(outcome["agent"].is_object(), "the turn ended: {outcome}");
    let old = w.decide("approve").await;
    assert_eq!(old["error"]["code"], "confirmation_not_found", "{old}");
    assert!(swaps(&w.journal().await).is_empty(), "nothing sent");
}

/// A preset server that holds every request for a minute (a data source that hangs), counting the requests and
/// those that carried a payment.
async fn hanging_preset_server() -> (String, Arc<std::sync::atomic::AtomicUsize>, Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let (hits, paid) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let handler = {
        let (hits, paid) = (Arc::clone(&hits), Arc::clone(&paid));
        move |headers: axum::http::HeaderMap| {
            let (hits, paid) = (Arc::clone(&hits), Arc::clone(&paid));
            async move {
                hits.fetch_add(1, Ordering::SeqCst);
                if headers.contains_key("x-payment") || headers.contains_key("payment-signature") {
                    paid.fetch_add(1, Ordering::SeqCst);
                }
                tokio::time::sleep(Duration::from_secs(60)).await;
                axum::Json(json!({"price": "1"}))
            }
        }
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let app = axum::Router::new().route("/data", axum::routing::get(handler));
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, hits, paid)
}

/// A server whose agent calls `x402_fetch` on a preset that hangs; the session id and the preset server's counters.
struct Hanging {
    url: String,
    id: String,
    hits: Arc<std::sync::atomic::AtomicUsize>,
    paid: Arc<std::sync::atomic::AtomicUsize>,
    _dir: tempfile::TempDir,
}

async fn hanging_turn_server() -> Hanging {
    let (preset_url, hits, paid) = hanging_preset_server().await;
    let dir = tempfile::tempdir().unwrap();
    let presets = format!(
        "{{\n  \"slow_data\": (url: \"{preset_url}/data\", query: [], headers: [], writes: \"slow_data\", kind: Json, payees: []),\n}}\n"
    );
    std::fs::write(dir.path().join("presets.ron"), presets).unwrap();
    let config = dir.path().join("holdfast.toml");
    std::fs::write(&config, "[presets]\nfile = \"presets.ron\"\n").unwrap();
    let runtime = Arc::new(Runtime::load(Some(&config)).await.unwrap());
    let fetch = tool("x402_fetch", json!({"preset": "slow_data", "network": "base", "cache_as": "slow_data"}));
    // x402_fetch is offered while a skill that needs it is active.
    let skill = tool("use_skill", json!({"name": "swap"}));
    let script = vec![Reply::Tools(vec![skill]), Reply::Tools(vec![fetch]), Reply::Text("never".into())];
    let scripted = Scripted::start(Wire::OpenAi, script).await;
    let agent = Agent::new(Arc::clone(&runtime), Arc::new(OpenAiProvider::new(&scripted.url, None, "scripted")));
    let state = AppState::with_agent(Arc::clone(&runtime), Some(agent), Some(AccessToken::from_secret(TOKEN).unwrap()));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = holdfast_server::router(state, HostPolicy::loopback(addr));
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let url = format!("http://{addr}");
    let session = api(&reqwest::Client::new(), reqwest::Method::POST, format!("{url}/api/sessions"), None).await;
    Hanging { url, id: session["id"].as_str().unwrap().to_owned(), hits, paid, _dir: dir }
}

impl Hanging {
    /// Starts the turn; returns once the preset server holds the tool's request.
    async fn start_turn(&self) -> tokio::task::JoinHandle<Value> {
        let (http, url, id) = (reqwest::Client::new(), self.url.clone(), self.id.clone());
        let turn = tokio::spawn(async move {
            let message = json!({"content": "fetch the slow data"});
            api(&http, reqwest::Method::POST, format!("{url}/api/sessions/{id}/messages"), Some(message)).await
        });
        for _ in 0..600 {
            if self.hits.load(std::sync::atomic::Ordering::SeqCst) == 1 {
                return turn;
            }
            if turn.is_finished() {
                let url = format!("{}/api/sessions/{}", self.url, self.id);
                let session = api(&reqwest::Client::new(), reqwest::Method::GET, url, None).await;
                panic!("the turn ended before its tool call reached the preset server: {}", session["history"]);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("the tool's request never reached the preset server");
    }

    /// What the stop left behind: the turn's answer is `cancelled`, the tool's result says so, no register was
    /// written, nothing was paid or journaled, and the session takes the next call.
    async fn assert_stopped_cleanly(&self, turn: tokio::task::JoinHandle<Value>) {
        let http = reqwest::Client::new();
        // Well before the preset server's minute: the stop ended the call, it did not wait for it.
        let reply = tokio::time::timeout(Duration::from_secs(30), turn).await.unwrap().unwrap();
        assert_eq!(reply["agent"]["stopped"], "cancelled", "{reply}");
        assert_eq!(reply["agent"]["tool_calls"], 2, "{reply}");
        let session = api(&http, reqwest::Method::GET, format!("{}/api/sessions/{}", self.url, self.id), None).await;
        let results: Vec<&Value> = session["history"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] == "tool" && m["name"] == "x402_fetch")
            .collect();
        assert_eq!(results.len(), 1, "{session}");
        assert!(results[0]["content"].as_str().unwrap().contains("\"cancelled\""), "{}", results[0]);
        let registers =
            api(&http, reqwest::Method::GET, format!("{}/api/sessions/{}/registers", self.url, self.id), None).await;
        assert!(!registers.to_string().contains("slow_data"), "no half-written register: {registers}");
        let journal = api(&http, reqwest::Method::GET, format!("{}/api/journal", self.url), None).await;
        assert_eq!(journal["journal"].as_array().map(Vec::len), Some(0), "{journal}");
        assert_eq!(self.paid.load(std::sync::atomic::Ordering::SeqCst), 0, "nothing was paid");
        assert_eq!(self.hits.load(std::sync::atomic::Ordering::SeqCst), 1);
        // The session is not wedged: a direct tool call runs.
        let set = api(
            &http,
            reqwest::Method::POST,
            format!("{}/api/sessions/{}/tools/register_set", self.url, self.id),
            Some(json!({"key": "after_stop", "value": "ok"})),
        )
        .await;
        assert_eq!(set["output"]["key"], "after_stop", "{set}");
    }
}

#[tokio::test]
async fn the_stop_button_interrupts_a_hanging_tool_call_and_leaves_nothing_half_written() {
    let server = hanging_turn_server().await;
    let turn = server.start_turn().await;
    let http = reqwest::Client::new();
    let stopped =
        api(&http, reqwest::Method::POST, format!("{}/api/sessions/{}/cancel", server.url, server.id), None).await;
    assert_eq!(stopped["cancelled"], true, "{stopped}");
    server.assert_stopped_cleanly(turn).await;
}

#[tokio::test]
async fn closing_the_last_websocket_watching_a_session_stops_its_turn() {
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    let server = hanging_turn_server().await;
    let mut request =
        format!("{}/ws?session={}", server.url.replace("http", "ws"), server.id).into_client_request().unwrap();
    request.headers_mut().insert("authorization", format!("Bearer {TOKEN}").parse().unwrap());
    let (mut ws, _) = tokio_tungstenite::connect_async(request).await.unwrap();
    let first = futures::StreamExt::next(&mut ws).await.unwrap().unwrap();
    assert!(first.to_string().contains("subscribed"), "{first}");
    let turn = server.start_turn().await;
    ws.close(None).await.unwrap();
    drop(ws);
    server.assert_stopped_cleanly(turn).await;
}

/// The stop button works for a turn the inbox started (another agent's message): the session says a turn runs,
/// `POST …/cancel` stops it, and the message is taken as answered with that stop.
#[tokio::test]
async fn the_stop_button_stops_an_inbox_turn() {
    use holdfast_memory::{AgentId, MessageSender, MessageTarget, SendOrigin};
    let runtime = Arc::new(Runtime::load(None).await.unwrap());
    let slow = Reply::Delay(Duration::from_secs(120), Box::new(Reply::Text("too late".into())));
    let scripted = Scripted::start(Wire::OpenAi, vec![slow]).await;
    let agent = Agent::new(Arc::clone(&runtime), Arc::new(OpenAiProvider::new(&scripted.url, None, "scripted")));
    let cancel = holdfast_agent::CancelToken::new();
    let _worker = holdfast_agent::inbox::spawn(agent.clone(), cancel.clone());
    let state = AppState::with_agent(Arc::clone(&runtime), Some(agent), Some(AccessToken::from_secret(TOKEN).unwrap()));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let url = format!("http://{addr}");
    tokio::spawn(
        async move { axum::serve(listener, holdfast_server::router(state, HostPolicy::loopback(addr))).await },
    );

    let bob = AgentId::new("bob").unwrap();
    let router = runtime.agent.messages.router().clone();
    router.register_agent(&bob).await.unwrap();
    let to = MessageTarget::agent(runtime.agent.agent_id.as_str());
    MessageSender::new(bob, router).send(&to, "a long question".into(), None, SendOrigin::default()).await.unwrap();

    let http = reqwest::Client::new();
    let get = |path: String| {
        let (http, url) = (http.clone(), url.clone());
        async move { api(&http, reqwest::Method::GET, format!("{url}{path}"), None).await }
    };
    let mut id = String::new();
    for _ in 0..400 {
        let sessions = get("/api/sessions".into()).await;
        if let Some(s) = sessions["sessions"].as_array().unwrap().iter().find(|s| s["kind"] == "inbox")
            && get(format!("/api/sessions/{}", s["id"].as_str().unwrap())).await["turn_running"] == true
        {
            id = s["id"].as_str().unwrap().to_owned();
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(!id.is_empty(), "the inbox session shows its running turn");
    // A user's message there is refused before it can take the turn's place, and the inbox turn goes on.
    let refused = http
        .post(format!("{url}/api/sessions/{id}/messages"))
        .bearer_auth(TOKEN)
        .json(&json!({"content": "hello"}))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 409);
    assert_eq!(get(format!("/api/sessions/{id}")).await["turn_running"], true);
    // The stop lands while the model is answering (a turn runs a moment before its request reaches the model).
    for _ in 0..400 {
        if !scripted.requests.lock().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(scripted.requests.lock().len(), 1, "the model was asked");
    let stopped = api(&http, reqwest::Method::POST, format!("{url}/api/sessions/{id}/cancel"), None).await;
    assert_eq!(stopped["cancelled"], true, "{stopped}");
    let mut detail = Value::Null;
    for _ in 0..400 {
        detail = get(format!("/api/sessions/{id}")).await;
        if detail["turn_running"] == false {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(detail["turn_running"], false, "{detail}");
    assert!(detail["history"].to_string().contains("Cancelled by the user."), "{detail}");
    assert!(runtime.agent.inbox().pending().await.unwrap().is_empty(), "taken, not run again");
    assert_eq!(scripted.requests.lock().len(), 1);
    cancel.cancel();
}

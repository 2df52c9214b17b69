//! An agent turn over HTTP that waits for the user's approval: the turn pauses on `confirmation_required`, the UI's
//! approve call resumes it, and the swap is sent by the turn itself; a denial is reported to the model.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

#[path = "../../agent/tests/common/mod.rs"]
mod common;

use common::{Scripted, Wire, swap_script};
use holdfast_agent::access::{AccessToken, HostPolicy};
use holdfast_agent::llm::openai::OpenAiProvider;
use holdfast_agent::{Agent, Runtime};
use holdfast_server::AppState;
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

async fn run(decision: &str) -> (Value, Value, String) {
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
    let cid = pending["id"].as_str().unwrap();
    let resolved =
        api(&http, reqwest::Method::POST, format!("{url}/api/sessions/{id}/confirmations/{cid}/{decision}"), None)
            .await;
    assert_eq!(resolved["resumed"], "agent", "{resolved}");
    let outcome = tokio::time::timeout(Duration::from_secs(60), turn).await.unwrap().unwrap();
    let journal = api(&http, reqwest::Method::GET, format!("{url}/api/journal?session_id={id}"), None).await;
    let session = api(&http, reqwest::Method::GET, format!("{url}/api/sessions/{id}"), None).await;
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

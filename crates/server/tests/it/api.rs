//! The API over real HTTP and WebSocket against a running server on the devnet.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use futures::{SinkExt, StreamExt};
use holdfast_agent::Runtime;
use holdfast_agent::access::{AccessToken, HostPolicy};
use holdfast_server::AppState;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use tokio_tungstenite::tungstenite::Message;

const TOKEN: &str = "0123456789abcdef0123456789abcdef0123456789abcdef";

struct Server {
    url: String,
    http: reqwest::Client,
    runtime: Arc<Runtime>,
    _devnet: holdfast_devnet::TestDevnet,
}

impl Server {
    async fn start() -> Server {
        let devnet = holdfast_devnet::TestDevnet::start().await.unwrap();
        let runtime = Arc::new(Runtime::load(Some(&devnet.config_path)).await.unwrap());
        let state = AppState::with_agent(Arc::clone(&runtime), None, Some(AccessToken::from_secret(TOKEN).unwrap()));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let url = format!("http://{addr}");
        let app = holdfast_server::router(state, HostPolicy::loopback(addr));
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Server { url, http: reqwest::Client::new(), runtime, _devnet: devnet }
    }

    async fn req(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> (u16, Value) {
        let mut r = self.http.request(method, format!("{}{path}", self.url)).bearer_auth(TOKEN);
        if let Some(b) = body {
            r = r.json(&b);
        }
        let resp = r.send().await.unwrap();
        let status = resp.status().as_u16();
        (status, resp.json().await.unwrap_or(Value::Null))
    }

    async fn tool(&self, session: &str, name: &str, params: Value) -> (u16, Value) {
        self.req(reqwest::Method::POST, &format!("/api/sessions/{session}/tools/{name}"), Some(params)).await
    }

    /// Session `a` ready to swap `amount` ETH for USDC from the user's message ("swap AMOUNT ETH for USDC"): its
    /// registers filled through the console. The message's answer.
    async fn prepare_swap(&self, a: &str, amount: &str) -> Value {
        let message = json!({"content": format!("swap {amount} ETH for USDC")});
        let (status, answer) =
            self.req(reqwest::Method::POST, &format!("/api/sessions/{a}/messages"), Some(message)).await;
        assert_eq!(status, 200, "{answer}");
        self.prepare_registers(a, amount).await;
        answer
    }

    /// Session `a`'s registers filled through the console to swap `amount` ETH for USDC.
    async fn prepare_registers(&self, a: &str, amount: &str) {
        for (tool, params) in [
            (
                "local_burner_wallet",
                json!({"action": "address", "token_register": null, "network": null, "cache_as": "wallet_address"}),
            ),
            ("token_lookup", json!({"symbol": "ETH", "network": "base", "cache_as": "sell_token"})),
            ("token_lookup", json!({"symbol": "USDC", "network": "base", "cache_as": "buy_token"})),
            ("to_raw_amount", json!({"amount": amount, "token_register": "sell_token", "cache_as": "sell_amount"})),
        ] {
            let (status, body) = self.tool(a, tool, params).await;
            assert_eq!(status, 200, "{tool}: {body}");
            assert_eq!(body["ok"], true);
        }
    }

    async fn session(&self) -> String {
        let (status, body) = self.req(reqwest::Method::POST, "/api/sessions", None).await;
        assert_eq!(status, 201);
        body["id"].as_str().unwrap().to_owned()
    }

    async fn ws(
        &self,
        session: &str,
    ) -> tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>> {
        use tokio_tungstenite::tungstenite::client::IntoClientRequest;
        let mut request =
            format!("{}/ws?session={session}", self.url.replace("http", "ws")).into_client_request().unwrap();
        request.headers_mut().insert("authorization", format!("Bearer {TOKEN}").parse().unwrap());
        let (mut ws, _) = tokio_tungstenite::connect_async(request).await.unwrap();
        let first = next_json(&mut ws).await.unwrap();
        assert_eq!(first["type"], "subscribed");
        ws
    }
}

async fn next_json<S>(ws: &mut S) -> Option<Value>
where
    S: StreamExt<Item = Result<Message, tokio_tungstenite::tungstenite::Error>> + Unpin,
{
    loop {
        match tokio::time::timeout(Duration::from_millis(500), ws.next()).await {
            Ok(Some(Ok(Message::Text(t)))) => return Some(serde_json::from_str(&t).unwrap()),
            Ok(Some(Ok(_))) => continue,
            _ => return None,
        }
    }
}

/// Someone else's message pasted into the chat ("please swap 0.001 ETH for USDC", sent as pasted, no question around
/// it), as the web UI reports the paste: its amount is quoted and moves nothing by itself; the same words typed do.
#[tokio::test]
async fn a_pasted_request_moves_nothing_by_itself() {
    let s = Server::start().await;
    let swap = |a: String| {
        let s = &s;
        async move {
            let fetch = json!({"preset": "swap_quote", "network": "base", "cache_as": "swap_quote"});
            let (status, body) = s.tool(&a, "x402_fetch", fetch).await;
            assert_eq!(status, 200, "x402_fetch: {body}");
            s.tool(&a, "web3_tx", json!({"from_register": "swap_quote", "network": "base"})).await
        }
    };
    let pasted = "please swap 0.001 ETH for USDC";
    let a = s.session().await;
    let message = json!({"content": pasted, "pasted": [pasted]});
    let (status, answer) = s.req(reqwest::Method::POST, &format!("/api/sessions/{a}/messages"), Some(message)).await;
    assert_eq!(status, 200, "{answer}");
    s.prepare_registers(&a, "0.001").await;
    // Before: swapped by itself (the pasted words were read as the user's request).
    let (status, body) = swap(a.clone()).await;
    assert_eq!((status, body["error"]["code"].as_str()), (202, Some("confirmation_required")), "{body}");
    assert!(body["error"]["message"].as_str().unwrap().contains("you quoted"), "{body}");
    // The same words typed (no paste reported), and a pasted single word (the amount) beside typed ones: by itself.
    for (content, pasted) in [(pasted.to_owned(), json!([])), ("swap 0.001 ETH for USDC".to_owned(), json!(["0.001"]))]
    {
        let b = s.session().await;
        let message = json!({"content": content, "pasted": pasted});
        let (status, _) = s.req(reqwest::Method::POST, &format!("/api/sessions/{b}/messages"), Some(message)).await;
        assert_eq!(status, 200);
        s.prepare_registers(&b, "0.001").await;
        let (status, body) = swap(b).await;
        assert_eq!((status, body["output"]["status"].as_str()), (200, Some("confirmed")), "{content}: {body}");
    }
    // More pastes than the server takes: refused, nothing read.
    let many: Vec<&str> = vec!["a b"; 33];
    let message = json!({"content": "a b", "pasted": many});
    let (status, body) = s.req(reqwest::Method::POST, &format!("/api/sessions/{a}/messages"), Some(message)).await;
    assert_eq!((status, body["error"]["code"].as_str()), (422, Some("invalid_params")), "{body}");
}

#[tokio::test]
async fn no_token_no_access() {
    let s = Server::start().await;
    for path in ["/api/info", "/api/sessions", "/api/journal", "/api/wallet", "/api/openapi.json", "/ws"] {
        let resp = s.http.get(format!("{}{path}", s.url)).send().await.unwrap();
        assert_eq!(resp.status().as_u16(), 401, "{path}");
        let body: Value = resp.json().await.unwrap();
        assert_eq!(body["error"]["code"], "unauthorized");
        let resp = s.http.get(format!("{}{path}", s.url)).bearer_auth("wrong").send().await.unwrap();
        assert_eq!(resp.status().as_u16(), 401, "{path}");
    }
    let ws = tokio_tungstenite::connect_async(format!("{}/ws?session=x", s.url.replace("http", "ws"))).await;
    assert!(ws.is_err(), "the WebSocket needs the token too");
    assert_eq!(
        s.http.get(format!("{}/", s.url)).send().await.unwrap().status().as_u16(),
        200,
        "the page itself is public"
    );
}

#[tokio::test]
async fn the_swap_through_the_tool_endpoint_with_live_events_for_that_session_only() {
    let s = Server::start().await;
    let a = s.session().await;
    let b = s.session().await;
    let mut ws_a = s.ws(&a).await;
    let mut ws_b = s.ws(&b).await;

    let body = s.prepare_swap(&a, "0.02").await;
    assert_eq!(body["agent"], Value::Null);
    assert_eq!(body["context_bank"][0]["value"], "0.02");
    let (status, body) =
        s.tool(&a, "x402_fetch", json!({"preset": "swap_quote", "network": "base", "cache_as": "swap_quote"})).await;
    assert_eq!(status, 200, "x402_fetch: {body}");
    assert_eq!(body["ok"], true);
    // 0.02 ETH is above the devnet's auto-approve limit: the action waits for the user.
    let (status, body) = s.tool(&a, "web3_tx", json!({"from_register": "swap_quote", "network": "base"})).await;
    assert_eq!(status, 202, "{body}");
    assert_eq!(body["error"]["code"], "confirmation_required");
    let cid = body["error"]["details"]["confirmation_id"].as_str().unwrap().to_owned();
    let (_, pending) = s.req(reqwest::Method::GET, &format!("/api/sessions/{a}/confirmations"), None).await;
    assert_eq!(pending["pending"][0]["summary"]["sell"], "0.02 ETH");
    let (status, approved) =
        s.req(reqwest::Method::POST, &format!("/api/sessions/{a}/confirmations/{cid}/approve"), None).await;
    assert_eq!(status, 200, "{approved}");
    assert_eq!(approved["output"]["status"], "confirmed");
    // Decided once: a second approval (a double click, a replayed request) or a late denial changes nothing.
    for decision in ["approve", "deny"] {
        let (status, again) =
            s.req(reqwest::Method::POST, &format!("/api/sessions/{a}/confirmations/{cid}/{decision}"), None).await;
        assert_eq!((status, again["error"]["code"].as_str()), (404, Some("confirmation_not_found")), "{again}");
        assert!(again["error"]["message"].as_str().is_some_and(|m| m.contains("no longer pending")), "{again}");
    }

    let mut names = Vec::new();
    while let Some(msg) = next_json(&mut ws_a).await {
        assert_eq!(msg["session_id"], a.as_str());
        names.push(msg["event"].as_str().unwrap().to_owned());
    }
    let at = |n: &str| names.iter().position(|x| x == n).unwrap_or_else(|| panic!("no {n} in {names:?}"));
    assert!(at("context_bank.update") < at("register.update"));
    assert!(at("register.update") < at("confirmation.required"));
    assert!(at("confirmation.required") < at("confirmation.resolved"));
    assert!(at("confirmation.resolved") < at("tx.confirmed"));
    assert_eq!(next_json(&mut ws_b).await, None, "the other session's client receives none of it");

    let (_, regs) = s.req(reqwest::Method::GET, &format!("/api/sessions/{a}/registers"), None).await;
    assert_eq!(regs["registers"]["sell_amount"]["origin"], "user");
    assert_eq!(regs["registers"]["sell_token"]["declared"], true);
    let (_, regs_b) = s.req(reqwest::Method::GET, &format!("/api/sessions/{b}/registers"), None).await;
    assert_eq!(regs_b["registers"], json!({}));
    let (_, journal) = s.req(reqwest::Method::GET, &format!("/api/journal?session_id={a}"), None).await;
    let swaps: Vec<_> = journal["journal"].as_array().unwrap().iter().filter(|e| e["kind"] == "swap").collect();
    assert_eq!(swaps.len(), 1, "approved once, sent once: {swaps:?}");
    assert_eq!(swaps[0]["status"], "confirmed");
    let _ = ws_a.close(None).await;
    money_views_agree_with_the_node_and_the_journal(&s, &a).await;
}

/// A tool call that started runs to its end: a console swap whose client went away while the call waited for the
/// wallet (another send held it) is still sent once the wallet is free, and journaled.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_console_call_whose_client_went_away_runs_to_its_end() {
    let s = Server::start().await;
    let a = s.session().await;
    s.prepare_swap(&a, "0.001").await;
    let (status, _) =
        s.tool(&a, "x402_fetch", json!({"preset": "swap_quote", "network": "base", "cache_as": "swap_quote"})).await;
    assert_eq!(status, 200);
    let wallet = s.runtime.web3.wallet().address().to_checksum(None);
    let held = s.runtime.web3.journal().lock_wallet(holdfast_devnet::CHAIN_ID, &wallet).await.unwrap();
    let gone = s
        .http
        .post(format!("{}/api/sessions/{a}/tools/web3_tx", s.url))
        .bearer_auth(TOKEN)
        .json(&json!({"from_register": "swap_quote", "network": "base"}))
        .timeout(Duration::from_secs(1))
        .send()
        .await;
    assert!(gone.is_err(), "the client gave up while the call waited: {gone:?}");
    drop(held);
    // Before: the call was dropped with the request, and nothing was sent.
    let mut swaps = Vec::new();
    for _ in 0..300 {
        let (_, journal) = s.req(reqwest::Method::GET, &format!("/api/journal?session_id={a}&kind=swap"), None).await;
        swaps =
            journal["journal"].as_array().unwrap().iter().map(|e| e["status"].as_str().unwrap().to_owned()).collect();
        if swaps == ["confirmed"] {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(swaps, ["confirmed"], "the swap went out once the wallet was free");
}

/// The tool console (`POST /api/sessions/{id}/tools/{name}`) is no way around the user's authorization: one message's
/// amount moves value once, however many quotes are fetched and sent after it.
#[tokio::test]
async fn the_tool_console_spends_the_users_amount_once() {
    let s = Server::start().await;
    let a = s.session().await;
    s.prepare_swap(&a, "0.001").await;
    let rpc = |method: &'static str, params: Value| {
        let (http, url) = (s.http.clone(), s._devnet.rpc_url.clone());
        async move {
            let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
            let answer: Value = http.post(url).json(&body).send().await.unwrap().json().await.unwrap();
            answer["result"].clone()
        }
    };
    let wallet = s._devnet.wallet_address.to_string();
    let nonce0 = rpc("eth_getTransactionCount", json!([wallet, "latest"])).await;
    let mut outcomes = Vec::new();
    for _ in 0..3 {
        let (status, _) = s
            .tool(&a, "x402_fetch", json!({"preset": "swap_quote", "network": "base", "cache_as": "swap_quote"}))
            .await;
        assert_eq!(status, 200);
        let (status, body) = s.tool(&a, "web3_tx", json!({"from_register": "swap_quote", "network": "base"})).await;
        outcomes.push((
            status,
            body["error"]["code"]
                .as_str()
                .unwrap_or_else(|| body["output"]["status"].as_str().unwrap_or("?"))
                .to_owned(),
        ));
    }
    assert_eq!(
        outcomes,
        [
            (200, "confirmed".to_owned()),
            (202, "confirmation_required".to_owned()),
            (202, "confirmation_required".to_owned())
        ]
    );
    // Judged by the journal against the chain: one swap, mined.
    let (_, journal) = s.req(reqwest::Method::GET, &format!("/api/journal?session_id={a}&kind=swap"), None).await;
    let swaps = journal["journal"].as_array().unwrap();
    assert_eq!(swaps.len(), 1, "{journal}");
    let receipt = rpc("eth_getTransactionReceipt", json!([swaps[0]["tx_hash"]])).await;
    assert_eq!(receipt["status"], "0x1");
    let nonce1 = rpc("eth_getTransactionCount", json!([wallet, "latest"])).await;
    let n = |v: &Value| u64::from_str_radix(v.as_str().unwrap().trim_start_matches("0x"), 16).unwrap();
    assert_eq!(n(&nonce1), n(&nonce0) + 1, "one wallet transaction on chain");
}

/// A number a node answered (`0x…` quantity or 32-byte word), as decimal text.
fn quantity(v: &Value) -> String {
    u128::from_str_radix(v.as_str().unwrap().trim_start_matches("0x"), 16).unwrap().to_string()
}

/// The wallet view against the node itself (plain JSON-RPC, not the server's client) and the journal's sums; the
/// journal's payments filter and the transaction page of the swap.
async fn money_views_agree_with_the_node_and_the_journal(s: &Server, session: &str) {
    // An allowance left standing shows in the wallet view, with its token, spender and amount.
    let usdc = s._devnet.info.contracts.usdc;
    s._devnet.approve_from_wallet(usdc, holdfast_devnet::VENUE, holdfast_core::U256::from(3_000_000u64)).await.unwrap();
    let (_, wallet) = s.req(reqwest::Method::GET, "/api/wallet", None).await;
    let allowances = wallet["networks"][0]["allowances"].as_array().unwrap();
    assert_eq!(allowances.len(), 1, "{wallet}");
    assert_eq!(
        (allowances[0]["token"].as_str(), allowances[0]["amount_human"].as_str()),
        (Some("USDC"), Some("3")),
        "{wallet}"
    );
    assert_eq!(allowances[0]["spender"], holdfast_devnet::VENUE.to_checksum(None));
    let rpc = |method: &'static str, params: Value| {
        let (http, url) = (s.http.clone(), s._devnet.rpc_url.clone());
        async move {
            let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
            let answer: Value = http.post(url).json(&body).send().await.unwrap().json().await.unwrap();
            answer["result"].clone()
        }
    };
    let (status, wallet) = s.req(reqwest::Method::GET, "/api/wallet", None).await;
    assert_eq!(status, 200, "{wallet}");
    let owner = wallet["address"].as_str().unwrap().to_owned();
    let base = &wallet["networks"][0];
    assert_eq!((base["network"].as_str(), base["chain_id"].as_u64()), (Some("base"), Some(holdfast_devnet::CHAIN_ID)));
    let holding =
        |symbol: &str| base["holdings"].as_array().unwrap().iter().find(|h| h["symbol"] == symbol).unwrap().clone();
    let eth = quantity(&rpc("eth_getBalance", json!([owner, "latest"])).await);
    assert_eq!(holding("ETH")["balance"], eth.as_str());
    let usdc = s._devnet.info.contracts.usdc.to_string();
    let call = format!("0x70a08231{:0>64}", owner.trim_start_matches("0x").to_lowercase());
    let usdc_balance = quantity(&rpc("eth_call", json!([{"to": usdc, "data": call}, "latest"])).await);
    assert_eq!(holding("USDC")["balance"], usdc_balance.as_str());
    let gauge = |budget: &str, symbol: &str| {
        base["spend"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["budget"] == budget && g["symbol"] == symbol)
            .unwrap()
            .clone()
    };
    // The swap sold 0.02 ETH against the 5 ETH daily cap; the quote was paid from the 5 USDC x402 budget.
    let eth_day = gauge("transactions", "ETH");
    assert_eq!((eth_day["spent"].as_str(), eth_day["cap_human"].as_str()), (Some("20000000000000000"), Some("5")));
    let x402 = gauge("x402", "USDC");
    assert!(x402["spent"].as_str().unwrap().parse::<u64>().unwrap() > 0, "{x402}");
    assert_eq!(x402["cap"], "5000000");

    let (_, payments) = s.req(reqwest::Method::GET, "/api/journal?kind=payment", None).await;
    let payments = payments["journal"].as_array().unwrap();
    assert!(!payments.is_empty() && payments.iter().all(|e| e["kind"] == "payment"), "{payments:?}");
    let (status, bad) = s.req(reqwest::Method::GET, "/api/journal?kind=gift", None).await;
    assert_eq!(status, 400, "{bad}");

    let (_, mine) = s.req(reqwest::Method::GET, &format!("/api/journal?session_id={session}&kind=swap"), None).await;
    let swap = &mine["journal"][0];
    assert_eq!(swap["explorer_url"], Value::Null, "the devnet has no explorer");
    let (status, page) =
        s.req(reqwest::Method::GET, &format!("/api/journal/{}/tx", swap["id"].as_str().unwrap()), None).await;
    assert_eq!(status, 200, "{page}");
    assert_eq!((page["status"].as_str(), page["tx_hash"].as_str()), (Some("success"), swap["tx_hash"].as_str()));
    let receipt = rpc("eth_getTransactionReceipt", json!([swap["tx_hash"]])).await;
    assert_eq!(page["gas_used"].as_u64().map(|g| g.to_string()), Some(quantity(&receipt["gasUsed"])));
    let bought = page["transfers"].as_array().unwrap().iter().find(|t| t["symbol"] == "USDC").unwrap();
    assert_eq!(bought["to"].as_str(), Some(owner.as_str()));
    let (status, missing) = s.req(reqwest::Method::GET, "/api/journal/j_nope/tx", None).await;
    assert_eq!((status, missing["error"]["code"].as_str()), (404, Some("not_found")));

    // The OpenAPI document describes these routes, with the bearer token.
    let (status, doc) = s.req(reqwest::Method::GET, "/api/openapi.json", None).await;
    assert_eq!(status, 200);
    assert!(doc["openapi"].as_str().unwrap().starts_with("3.1"), "{}", doc["openapi"]);
    for path in ["/api/wallet", "/api/journal", "/api/journal/{id}/tx", "/api/sessions/{id}/tools/{name}"] {
        assert!(doc["paths"][path].is_object(), "{path} is not in the document");
    }
    assert_eq!(doc["components"]["securitySchemes"]["token"]["scheme"], "bearer");
}

#[tokio::test]
async fn errors_carry_tool_codes_and_statuses() {
    let s = Server::start().await;
    let a = s.session().await;
    let (status, body) = s.tool(&a, "nope", json!({})).await;
    assert_eq!((status, body["error"]["code"].as_str()), (404, Some("unknown_tool")));
    let (status, body) = s.tool(&a, "register_set", json!({"key": "sell_token", "value": "x"})).await;
    assert_eq!((status, body["error"]["code"].as_str()), (422, Some("register_write_denied")));
    let (status, body) = s.tool(&a, "token_lookup", json!({"symbol": 1})).await;
    assert_eq!((status, body["error"]["code"].as_str()), (422, Some("invalid_params")));
    let (status, body) = s.req(reqwest::Method::GET, "/api/sessions/s_missing/registers", None).await;
    assert_eq!((status, body["error"]["code"].as_str()), (404, Some("not_found")));
    let (status, _) =
        s.req(reqwest::Method::POST, &format!("/api/sessions/{a}/confirmations/cf_x/approve"), None).await;
    assert_eq!(status, 404);
    let (status, info) = s.req(reqwest::Method::GET, "/api/info", None).await;
    assert_eq!(status, 200);
    assert!(info["wallet_address"].as_str().unwrap().starts_with("0x"));
    assert!(info["relay_dropped_events"].is_null(), "one instance: no relay");
    assert!(info["relay_unwatched_events"].is_null(), "one instance: no relay");
    let (_, tools) = s.req(reqwest::Method::GET, "/api/tools", None).await;
    assert!(tools.as_array().unwrap().iter().any(|t| t["name"] == "web3_tx"));

    // What axum cannot read is answered in the same JSON shape: a body that is not JSON (400), one of the wrong
    // shape (422), a query that does not parse (400).
    let raw = |path: String, body: &'static str| {
        s.http.post(format!("{}{path}", s.url)).bearer_auth(TOKEN).header("content-type", "application/json").body(body)
    };
    for (path, body, want) in [
        (format!("/api/sessions/{a}/messages"), "{not json", 400),
        (format!("/api/sessions/{a}/messages"), r#"{"text": "hi"}"#, 422),
        (format!("/api/sessions/{a}/tools/register_get"), "[1, 2", 400),
    ] {
        let resp = raw(path.clone(), body).send().await.unwrap();
        assert_eq!(resp.status().as_u16(), want, "{path} {body}");
        assert!(resp.headers()["content-type"].to_str().unwrap().starts_with("application/json"));
        let answer: Value = resp.json().await.unwrap();
        assert_eq!(answer["error"]["code"], "invalid_params", "{path} {body}: {answer}");
        assert!(!answer["error"]["message"].as_str().unwrap().is_empty());
    }
    let (status, body) = s.req(reqwest::Method::GET, "/api/journal?kind=bribe", None).await;
    assert_eq!((status, body["error"]["code"].as_str()), (400, Some("invalid_params")));

    // No body where one is optional means "no options", whatever the Content-Type says; `null` params are none.
    let created = raw("/api/sessions".into(), "").send().await.unwrap();
    assert_eq!(created.status().as_u16(), 201, "an empty JSON body creates a default session");
    let created: Value = created.json().await.unwrap();
    assert!(created["id"].as_str().is_some_and(|id| !id.is_empty()), "{created}");
    let listed = raw(format!("/api/sessions/{a}/tools/list_memories"), "null").send().await.unwrap();
    assert_eq!(listed.status().as_u16(), 200, "a tool without parameters takes `null`");
    let listed = raw(format!("/api/sessions/{a}/tools/list_memories"), " ").send().await.unwrap();
    assert_eq!(listed.status().as_u16(), 200, "and no body");
    // Routes that do not exist, or a method a route does not take, answer in the same shape.
    let (status, body) = s.req(reqwest::Method::GET, "/api/nope", None).await;
    assert_eq!((status, body["error"]["code"].as_str()), (404, Some("not_found")), "{body}");
    let (status, body) = s.req(reqwest::Method::DELETE, "/api/info", None).await;
    assert_eq!((status, body["error"]["code"].as_str()), (405, Some("invalid_params")), "{body}");
    let anonymous = s.http.get(format!("{}/api/nope", s.url)).send().await.unwrap();
    assert_eq!(anonymous.status().as_u16(), 401, "an unknown route tells nothing before the token");
}

#[tokio::test]
async fn a_slow_websocket_client_is_dropped_and_never_blocks_the_session() {
    let s = Server::start().await;
    let a = s.session().await;
    let mut slow = s.ws(&a).await;
    // Flood the session with events without reading the socket: every write is answered (none waits on the client).
    for i in 0..3000 {
        let (status, _) =
            s.tool(&a, "register_set", json!({"key": format!("k{}", i % 200), "value": "x".repeat(2000)})).await;
        assert_eq!(status, 200);
    }
    // The client is either disconnected for being slow or told it lagged; it never stalled the writes above.
    let mut saw_end = false;
    for _ in 0..10_000 {
        match tokio::time::timeout(Duration::from_secs(2), slow.next()).await {
            Ok(Some(Ok(Message::Close(frame)))) => {
                assert_eq!(frame.map(|f| u16::from(f.code)), Some(1008));
                saw_end = true;
                break;
            }
            Ok(Some(Ok(Message::Text(t)))) if t.contains("\"lagged\"") => {
                saw_end = true;
                break;
            }
            Ok(Some(Ok(_))) => {}
            _ => break,
        }
    }
    assert!(saw_end, "a slow client is cut off or told it lagged");
    let _ = slow.send(Message::Close(None)).await;
}

#[tokio::test]
async fn tool_console_calls_are_recorded_in_the_history_only_when_asked_and_never_reach_the_model() {
    let s = Server::start().await;
    let a = s.session().await;
    let path = |tool: &str, record: &str| format!("/api/sessions/{a}/tools/{tool}{record}");
    let params = json!({"symbol": "USDC", "network": "base", "cache_as": "buy_token"});
    let (status, body) = s.req(reqwest::Method::POST, &path("token_lookup", ""), Some(params.clone())).await;
    assert_eq!(status, 200, "{body}");
    let (_, detail) = s.req(reqwest::Method::GET, &format!("/api/sessions/{a}"), None).await;
    assert!(detail["history"].as_array().unwrap().is_empty(), "not asked to record: {detail}");

    let (status, _) = s.req(reqwest::Method::POST, &path("token_lookup", "?record=true"), Some(params.clone())).await;
    assert_eq!(status, 200);
    let bad = json!({"key": "sell_token", "value": "x"});
    let (status, _) = s.req(reqwest::Method::POST, &path("register_set", "?record=true"), Some(bad)).await;
    assert_eq!(status, 422);
    let (status, body) = s.req(reqwest::Method::POST, &path("token_lookup", "?record=maybe"), Some(json!({}))).await;
    assert_eq!((status, body["error"]["code"].as_str()), (400, Some("invalid_params")), "{body}");

    let (_, detail) = s.req(reqwest::Method::GET, &format!("/api/sessions/{a}"), None).await;
    let history = detail["history"].as_array().unwrap();
    assert_eq!(history.len(), 2, "{detail}");
    assert!(history.iter().all(|m| m["role"] == "console"), "{detail}");
    let first: Value = serde_json::from_str(history[0]["content"].as_str().unwrap()).unwrap();
    assert_eq!((first["tool"].as_str(), first["ok"].as_bool()), (Some("token_lookup"), Some(true)));
    assert_eq!(first["params"], params);
    assert_eq!(first["output"]["cached_as"], "buy_token", "{first}");
    let second: Value = serde_json::from_str(history[1]["content"].as_str().unwrap()).unwrap();
    assert_eq!(
        (second["ok"].as_bool(), second["error"]["code"].as_str()),
        (Some(false), Some("register_write_denied"))
    );
}

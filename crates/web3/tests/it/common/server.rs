//! A scriptable x402 server on a loopback port: each request is handed to a script that answers it (a 402 offer,
//! a quote settled through the devnet facilitator, or anything hostile). Every payment header it receives is kept.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use axum::extract::{Query, Request, State};
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use holdfast_devnet::{Facilitator, PaywallConfig, QuoteRequest, QuoteState, TestDevnet, build_quote};
use parking_lot::Mutex;
use serde_json::{Value, json};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

/// One request as the script sees it.
#[derive(Clone)]
pub(crate) struct Call {
    /// 1-based request number.
    pub n: usize,
    /// The payment header's name and raw value, if any (`payment-signature` or `x-payment`).
    pub payment: Option<(String, String)>,
    /// The query pairs.
    pub query: Vec<(String, String)>,
}

impl Call {
    /// The decoded payment payload.
    pub(crate) fn payload(&self) -> Option<Value> {
        let (_, raw) = self.payment.as_ref()?;
        let bytes = base64::engine::general_purpose::STANDARD.decode(raw).ok()?;
        serde_json::from_slice(&bytes).ok()
    }
}

pub(crate) type Reply = Pin<Box<dyn Future<Output = Response> + Send>>;
pub(crate) type Script = Arc<dyn Fn(Call, Ctx) -> Reply + Send + Sync>;

/// What a script can use: the devnet's quoter and facilitator.
#[derive(Clone)]
pub(crate) struct Ctx {
    pub quotes: QuoteState,
    pub facilitator: Arc<Facilitator>,
}

#[derive(Clone)]
struct Shared {
    script: Script,
    ctx: Ctx,
    seen: Arc<Mutex<Vec<Call>>>,
}

pub(crate) struct X402Server {
    pub url: String,
    seen: Arc<Mutex<Vec<Call>>>,
}

impl X402Server {
    pub(crate) async fn start(devnet: &TestDevnet, script: Script) -> Self {
        async fn handle(State(s): State<Shared>, Query(query): Query<Vec<(String, String)>>, req: Request) -> Response {
            let payment = ["payment-signature", "x-payment"].iter().find_map(|name| {
                req.headers()
                    .get(*name)
                    .map(|v| ((*name).to_owned(), String::from_utf8_lossy(v.as_bytes()).into_owned()))
            });
            let call = {
                let mut seen = s.seen.lock();
                let call = Call { n: seen.len() + 1, payment, query };
                seen.push(call.clone());
                call
            };
            (s.script)(call, s.ctx.clone()).await
        }
        let shared = Shared {
            script,
            ctx: Ctx { quotes: devnet.quote_state(), facilitator: devnet.facilitator() },
            seen: Arc::new(Mutex::new(Vec::new())),
        };
        let seen = Arc::clone(&shared.seen);
        let app = axum::Router::new().fallback(handle).with_state(shared);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Self { url, seen }
    }

    /// Every request received.
    pub(crate) fn calls(&self) -> Vec<Call> {
        self.seen.lock().clone()
    }

    /// How many requests carried a payment header.
    pub(crate) fn payments_received(&self) -> usize {
        self.seen.lock().iter().filter(|c| c.payment.is_some()).count()
    }
}

pub(crate) fn b64(v: &Value) -> String {
    base64::engine::general_purpose::STANDARD.encode(v.to_string())
}

/// The devnet paywall's honest requirement (v2).
pub(crate) fn honest_requirement() -> Value {
    PaywallConfig::devnet().requirement()
}

/// The same requirement in v1 shape (`maxAmountRequired`, network `base`, `resource`).
pub(crate) fn v1_requirement(resource: &str) -> Value {
    let mut r = honest_requirement();
    let obj = r.as_object_mut().unwrap();
    let amount = obj.remove("amount").unwrap();
    obj.insert("maxAmountRequired".into(), amount);
    obj.insert("network".into(), json!("base"));
    obj.insert("resource".into(), json!(resource));
    obj.insert("description".into(), json!("quote"));
    obj.insert("mimeType".into(), json!("application/json"));
    r
}

/// A v2 402 offering `accepts` (an `error` when given).
pub(crate) fn offer_v2(url: &str, accepts: Vec<Value>, error: Option<&str>) -> Response {
    let mut doc = json!({"x402Version": 2, "resource": {"url": url, "description": "quote", "mimeType": "application/json"}, "accepts": accepts});
    if let Some(e) = error {
        doc["error"] = json!(e);
    }
    raw_402(Some(b64(&doc)), "{}".into())
}

/// A 402 with an arbitrary PAYMENT-REQUIRED header value and body.
pub(crate) fn raw_402(header: Option<String>, body: String) -> Response {
    let mut resp = (StatusCode::PAYMENT_REQUIRED, body).into_response();
    if let Some(h) = header {
        resp.headers_mut().insert("payment-required", HeaderValue::from_str(&h).unwrap());
    }
    resp
}

/// A v1 402: the offer is the JSON body.
pub(crate) fn offer_v1(accepts: Vec<Value>) -> Response {
    let doc = json!({"x402Version": 1, "error": "X-PAYMENT header is required", "accepts": accepts});
    (StatusCode::PAYMENT_REQUIRED, axum::Json(doc)).into_response()
}

/// An honest devnet quote for the call's query, or why there is none.
pub(crate) async fn try_quote(ctx: &Ctx, call: &Call) -> Result<Value, String> {
    let req = QuoteRequest::from_query(&call.query).map_err(|e| e.to_string())?;
    build_quote(&ctx.quotes, &req).await.map_err(|e| e.to_string())
}

/// An honest devnet quote for the call's query.
pub(crate) async fn quote(ctx: &Ctx, call: &Call) -> Value {
    try_quote(ctx, call).await.unwrap()
}

/// Settles the call's payment for `requirement` through the devnet facilitator, then answers with an honest quote
/// and the settlement header (`payment-response` or `x-payment-response`); a failed settlement → 402.
pub(crate) async fn settle_and_quote(ctx: &Ctx, call: &Call, requirement: &Value, url: &str) -> Response {
    let Some(payload) = call.payload() else { return offer_v2(url, vec![requirement.clone()], Some("no payment")) };
    // Like the reference server: the content first; a request that cannot be served is not charged.
    let body = match try_quote(ctx, call).await {
        Ok(body) => body,
        Err(e) => return (StatusCode::BAD_REQUEST, e).into_response(),
    };
    let settled = ctx.facilitator.settle(&payload, requirement).await;
    if !settled.success {
        return offer_v2(url, vec![requirement.clone()], settled.error_reason.as_deref());
    }
    let header = if call.payment.as_ref().is_some_and(|(n, _)| n == "x-payment") {
        "x-payment-response"
    } else {
        "payment-response"
    };
    let report = json!({"success": true, "transaction": settled.transaction, "network": settled.network, "payer": settled.payer});
    let mut resp = axum::Json(body).into_response();
    resp.headers_mut().insert(header, HeaderValue::from_str(&b64(&report)).unwrap());
    resp
}

/// Wraps an async closure as a [`Script`].
pub(crate) fn script<F, Fut>(f: F) -> Script
where
    F: Fn(Call, Ctx) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Response> + Send + 'static,
{
    Arc::new(move |call, ctx| Box::pin(f(call, ctx)))
}

//! `/ws`: a session's events, for clients subscribed to that session only (invariant 14).
//!
//! Each subscription forwards the session's broadcast into the client's bounded queue with `try_send`: the agent
//! never waits for a client. A client whose queue fills up is disconnected (close code 1008, "too slow"); a
//! subscription that lagged behind the broadcast buffer gets a `{"type":"lagged","missed":N}` notice. The server
//! pings every 30 s; a browser's sign-in is checked again every 5 s, and a socket whose browser was signed out (or
//! whose session expired) is closed (1008, "signed out").

use crate::AppState;
use axum::extract::ws::{CloseFrame, Message, Utf8Bytes, WebSocket, WebSocketUpgrade};
use axum::extract::{Query, State};
use axum::response::Response;
use futures::{SinkExt, StreamExt};
use holdfast_agent::access::{PAGE_PROTOCOL, Principal};
use serde_json::json;
use std::collections::HashSet;
use std::sync::Arc;
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::{Notify, mpsc};

/// Messages a client may fall behind before it is disconnected.
pub(crate) const CLIENT_QUEUE: usize = 512;

/// How often the server pings a WebSocket client.
const PING_EVERY: std::time::Duration = std::time::Duration::from_secs(30);

/// How often a browser's session is checked again while its socket is open.
const RECHECK_EVERY: std::time::Duration = std::time::Duration::from_secs(5);

/// Largest message a client may send.
const MAX_CLIENT_MESSAGE: usize = 64 * 1024;

pub(crate) async fn upgrade(
    State(state): State<Arc<AppState>>,
    Query(pairs): Query<Vec<(String, String)>>,
    principal: Option<axum::Extension<Principal>>,
    ws: WebSocketUpgrade,
) -> Response {
    let sessions: Vec<String> = pairs.into_iter().filter(|(k, _)| k == "session").map(|(_, v)| v).collect();
    // A browser's session is checked again while the socket lasts: signed out or expired, the socket closes.
    let browser = principal.and_then(|axum::Extension(p)| p.browser_session().map(str::to_owned));
    // The page offers its key as a second subprotocol (see `holdfast_agent::access::signin`); the one selected and
    // echoed is the plain name, never the key.
    ws.protocols([PAGE_PROTOCOL])
        .max_message_size(MAX_CLIENT_MESSAGE)
        .on_upgrade(move |socket| client(state, socket, sessions, browser))
}

async fn client(state: Arc<AppState>, socket: WebSocket, initial: Vec<String>, browser: Option<String>) {
    let (mut sink, mut stream) = socket.split();
    let (tx, mut rx) = mpsc::channel::<String>(CLIENT_QUEUE);
    let slow = Arc::new(Notify::new());
    let mut subscribed: HashSet<String> = HashSet::new();
    let mut forwarders = Vec::new();
    // The sessions this client watches (subscribed and found), counted in `AppState::watchers`.
    let mut watching = Vec::new();
    let mut watch = |id: Option<String>| {
        if let Some(id) = id {
            *state.watchers.lock().entry(id.clone()).or_insert(0) += 1;
            watching.push(id);
        }
    };

    for id in initial {
        let (forwarder, found) = subscribe(&state, &tx, &slow, &mut subscribed, id).await;
        forwarders.extend(forwarder);
        watch(found);
    }
    // A ping every 30 s keeps a quiet connection inside the server's idle timeout (the browser answers with a pong)
    // and finds a peer that has vanished.
    let mut ping = tokio::time::interval_at(tokio::time::Instant::now() + PING_EVERY, PING_EVERY);
    let mut recheck = tokio::time::interval_at(tokio::time::Instant::now() + RECHECK_EVERY, RECHECK_EVERY);
    loop {
        tokio::select! {
            _ = ping.tick() => {
                if sink.send(Message::Ping(axum::body::Bytes::new())).await.is_err() {
                    break;
                }
            }
            _ = recheck.tick(), if browser.is_some() => {
                if browser.as_deref().is_some_and(|b| !state.sign_in().session_valid(b)) {
                    let frame = CloseFrame { code: 1008, reason: Utf8Bytes::from_static("signed out") };
                    let _ = sink.send(Message::Close(Some(frame))).await;
                    break;
                }
            }
            out = rx.recv() => {
                let Some(text) = out else { break };
                if sink.send(Message::Text(Utf8Bytes::from(text))).await.is_err() {
                    break;
                }
            }
            incoming = stream.next() => {
                match incoming {
                    Some(Ok(Message::Text(text))) => {
                        let request: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
                        match (request["type"].as_str(), request["session_id"].as_str()) {
                            (Some("subscribe"), Some(id)) => {
                                let (forwarder, found) = subscribe(&state, &tx, &slow, &mut subscribed, id.to_owned()).await;
                                forwarders.extend(forwarder);
                                watch(found);
                            }
                            _ => {
                                let _ = tx.try_send(json!({"type": "error", "error": {"code": "invalid_params", "message": "expected {\"type\":\"subscribe\",\"session_id\":…}"}}).to_string());
                            }
                        }
                    }
                    Some(Ok(Message::Close(_))) | None | Some(Err(_)) => break,
                    Some(Ok(_)) => {}
                }
            }
            () = slow.notified() => {
                let frame = CloseFrame { code: 1008, reason: Utf8Bytes::from_static("too slow: events were not read in time") };
                let _ = sink.send(Message::Close(Some(frame))).await;
                break;
            }
        }
    }
    for f in forwarders {
        f.abort();
    }
    // The last page watching a session is gone: its running turn stops.
    let mut watchers = state.watchers.lock();
    for id in watching {
        if let Some(count) = watchers.get_mut(&id) {
            *count -= 1;
            if *count == 0 {
                watchers.remove(&id);
                if state.runtime.turns.cancel_users(&id) {
                    tracing::info!(session = %id, "the last WebSocket watching the session closed: its turn stops");
                }
            }
        }
    }
}

/// Starts forwarding session `id`'s events into the client's queue: the forwarding task and the session id, or
/// `(None, None)` when already subscribed or unknown (the client is told).
async fn subscribe(
    state: &AppState,
    tx: &mpsc::Sender<String>,
    slow: &Arc<Notify>,
    subscribed: &mut HashSet<String>,
    id: String,
) -> (Option<tokio::task::JoinHandle<()>>, Option<String>) {
    if !subscribed.insert(id.clone()) {
        return (None, None);
    }
    let Ok(Some(ctx)) = state.runtime.session(&id).await else {
        let error = json!({"type": "error", "error": {"code": "not_found", "message": format!("no session {id:?}")}});
        let _ = tx.try_send(error.to_string());
        return (None, None);
    };
    let mut events = ctx.events.subscribe();
    let _ = tx.try_send(json!({"type": "subscribed", "session_id": id}).to_string());
    let (tx, slow, found) = (tx.clone(), Arc::clone(slow), id.clone());
    let forwarder = tokio::spawn(async move {
        loop {
            let text = match events.recv().await {
                Ok(event) => event.envelope().to_string(),
                Err(RecvError::Lagged(missed)) => {
                    json!({"type": "lagged", "session_id": id, "missed": missed}).to_string()
                }
                Err(RecvError::Closed) => return,
            };
            match tx.try_send(text) {
                Ok(()) => {}
                Err(mpsc::error::TrySendError::Full(_)) => {
                    slow.notify_one();
                    return;
                }
                Err(mpsc::error::TrySendError::Closed(_)) => return,
            }
        }
    });
    (Some(forwarder), Some(found))
}

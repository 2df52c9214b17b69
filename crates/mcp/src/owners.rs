//! Each MCP session belongs to the client that opened it (streamable HTTP).
//!
//! A token is a client ([`holdfast_agent::access::clients`]). The [`Principal`] the edge authenticated opens a
//! session with `initialize`; the session's id (`Mcp-Session-Id`, a random UUID from rmcp) is then recorded with that
//! client's id as its owner — in memory and in the session's link (`mcp:<id>`, [`crate::links`]), so a restarted
//! server still knows it. Every later request naming the session must come from its owner; any other client gets the
//! same `404` as for a session that does not exist: it can neither read, write, subscribe, answer a form nor
//! `DELETE`, even holding the full session id. The owner is the client's id, not its name: a name reused after a
//! revocation, or a new `mcp.token`, owns none of the old sessions. A link written before owners were recorded
//! belongs to the default client (the only one there was). A client revoked while its streams are open loses them
//! within [`LIVENESS_EVERY`].
//!
//! **The server's own requests** (`elicitation/create` forms, pings) carry ids the client must echo in its answer.
//! rmcp numbers them 0, 1, 2… per session and offers no way to choose them, so this gate rewrites them on the way
//! out — in the SSE streams the server writes — to 128-bit random ids kept per session, and back on the way in. An
//! answer whose id is not one this session was sent is dropped before rmcp sees it: a guessed `0`, or an id from
//! another session, answers nothing. (A small SSE rewriter written here rather than a crate: it only replaces the
//! `id` of JSON-RPC requests in `data:` lines and passes every other byte through.)

use axum::body::{Body, Bytes};
use futures::StreamExt as _;
use holdfast_agent::Runtime;
use holdfast_agent::access::{ClientTokens, Principal};
use parking_lot::Mutex;
use serde_json::Value;
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

/// How many unanswered server requests a session keeps ids for (the oldest are forgotten first).
const MAX_PENDING_IDS: usize = 256;

/// How many sessions' owners are kept in memory (the others are read from their links again when asked).
const MAX_CACHED_OWNERS: usize = 4096;

/// How often an open stream checks that its client has not been revoked.
pub(crate) const LIVENESS_EVERY: std::time::Duration = std::time::Duration::from_secs(5);

/// Owners and server-request ids of the MCP sessions of one server.
pub(crate) struct SessionOwners {
    runtime: Arc<Runtime>,
    clients: Arc<ClientTokens>,
    owners: Mutex<HashMap<String, String>>,
    ids: Mutex<HashMap<String, PendingIds>>,
}

/// One session's outstanding server-request ids: random id → the id rmcp chose.
#[derive(Default)]
struct PendingIds {
    by_random: HashMap<String, Value>,
    order: VecDeque<String>,
}

impl std::fmt::Debug for SessionOwners {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionOwners").field("sessions", &self.owners.lock().len()).finish_non_exhaustive()
    }
}

impl SessionOwners {
    pub(crate) fn new(runtime: Arc<Runtime>, clients: Arc<ClientTokens>) -> Arc<Self> {
        Arc::new(Self { runtime, clients, owners: Mutex::new(HashMap::new()), ids: Mutex::new(HashMap::new()) })
    }

    fn remember(&self, id: &str, owner: &str) {
        let mut owners = self.owners.lock();
        if owners.len() >= MAX_CACHED_OWNERS && !owners.contains_key(id) {
            // Forget any one: it is read from its link again when asked.
            if let Some(old) = owners.keys().next().cloned() {
                owners.remove(&old);
            }
        }
        // What `opened` recorded wins over a lookup that read the link before it did.
        owners.entry(id.to_owned()).or_insert_with(|| owner.to_owned());
    }

    /// The id of the client that owns MCP session `id`, or `None` when there is no such session.
    pub(crate) async fn owner(&self, id: &str) -> Option<String> {
        if let Some(owner) = self.owners.lock().get(id) {
            return Some(owner.clone());
        }
        let link = match crate::links::link_of(&self.runtime, id).await {
            Ok(link) => link?,
            Err(e) => {
                tracing::warn!("an MCP session's owner could not be read: {e}");
                return None;
            }
        };
        let owner = match link.get("owner").and_then(Value::as_str) {
            Some(owner) => owner.to_owned(),
            // Linked before owners were recorded, when the default token was the only client.
            None => self.clients.default_id()?,
        };
        self.remember(id, &owner);
        self.owners.lock().get(id).cloned()
    }

    /// Records `principal` as the owner of the new session `id` (before its id reaches the client). When that
    /// fails, the session's link is removed, so nobody can take the session for the default client's.
    pub(crate) async fn opened(&self, id: &str, principal: &Principal) -> Result<(), holdfast_core::ToolError> {
        if let Err(e) = crate::links::set_owner(&self.runtime, id, &principal.id).await {
            let _ = self.runtime.sessions.link_delete(&format!("mcp:{id}")).await;
            return Err(e);
        }
        self.owners.lock().insert(id.to_owned(), principal.id.clone());
        Ok(())
    }

    /// Forgets a session that was deleted.
    pub(crate) fn closed(&self, id: &str) {
        self.owners.lock().remove(id);
        self.ids.lock().remove(id);
    }

    /// A random id standing for the server's request `original` in `session`.
    fn outgoing(&self, session: &str, original: Value) -> Option<String> {
        let random = format!("hf-{}", random_hex()?);
        let mut ids = self.ids.lock();
        let pending = ids.entry(session.to_owned()).or_default();
        // rmcp numbers a session's requests afresh when the session is restored (a restart, an hour idle): an older
        // id standing for the same number is dead, and must not answer the new request.
        let dead: Vec<String> =
            pending.by_random.iter().filter(|(_, v)| **v == original).map(|(k, _)| k.clone()).collect();
        for old in dead {
            pending.by_random.remove(&old);
            pending.order.retain(|r| *r != old);
        }
        pending.by_random.insert(random.clone(), original);
        pending.order.push_back(random.clone());
        while pending.order.len() > MAX_PENDING_IDS {
            if let Some(old) = pending.order.pop_front() {
                pending.by_random.remove(&old);
            }
        }
        Some(random)
    }

    /// The id rmcp chose for the request `random` stands for in `session` (used once), or `None`.
    fn incoming(&self, session: &str, random: &Value) -> Option<Value> {
        let random = random.as_str()?;
        let mut ids = self.ids.lock();
        let pending = ids.get_mut(session)?;
        let original = pending.by_random.remove(random)?;
        pending.order.retain(|r| r != random);
        if pending.by_random.is_empty() {
            ids.remove(session);
        }
        Some(original)
    }

    /// An incoming message of `session`: a response (to a request of the server) gets back rmcp's id, or is
    /// refused (`None`) when this session was never sent that id. Anything else passes unchanged.
    pub(crate) fn answer(&self, session: &str, mut message: Value) -> Option<Value> {
        let Some(object) = message.as_object_mut() else { return Some(message) };
        let is_response = !object.contains_key("method") && object.contains_key("id");
        if !is_response {
            return Some(message);
        }
        let original = self.incoming(session, object.get("id")?)?;
        object.insert("id".into(), original);
        Some(message)
    }

    /// `body` (an SSE stream the server writes to `session`, owned by client `owner`) with the ids of the server's
    /// requests replaced; it ends when the owner is revoked.
    pub(crate) fn rewrite_stream(self: &Arc<Self>, session: String, owner: String, body: Body) -> Body {
        let owners = Arc::clone(self);
        let clients = Arc::clone(&self.clients);
        let mut events = SseEvents::default();
        let revoked = async move {
            let mut tick = tokio::time::interval(LIVENESS_EVERY);
            loop {
                tick.tick().await;
                if !clients.is_live(&owner) {
                    tracing::info!("a revoked MCP client's stream was ended");
                    return;
                }
            }
        };
        let stream = body
            .into_data_stream()
            .map(move |chunk| {
                chunk.map(|bytes| {
                    let out = events.feed(&bytes, |data| owners.rewrite_data(&session, data));
                    Bytes::from(out)
                })
            })
            .take_until(Box::pin(revoked));
        Body::from_stream(stream)
    }

    /// One `data:` payload: a JSON-RPC request of the server gets a random id.
    fn rewrite_data(&self, session: &str, data: &str) -> Option<String> {
        let mut message: Value = serde_json::from_str(data).ok()?;
        let object = message.as_object_mut()?;
        if !object.contains_key("method") {
            return None;
        }
        let original = object.get("id")?.clone();
        let random = self.outgoing(session, original)?;
        object.insert("id".into(), Value::String(random));
        serde_json::to_string(&message).ok()
    }
}

fn random_hex() -> Option<String> {
    holdfast_agent::access::token::random_hex(16).ok()
}

/// Splits an SSE byte stream into events (ended by a blank line) and rewrites their `data:` lines.
#[derive(Default)]
struct SseEvents {
    pending: Vec<u8>,
}

impl SseEvents {
    /// The bytes of every event completed by `chunk`, each `data:` line passed through `rewrite` (`None`: unchanged).
    fn feed(&mut self, chunk: &[u8], rewrite: impl Fn(&str) -> Option<String>) -> Vec<u8> {
        self.pending.extend_from_slice(chunk);
        let mut out = Vec::with_capacity(self.pending.len());
        while let Some(end) = self.pending.windows(2).position(|w| w == b"\n\n") {
            let event: Vec<u8> = self.pending.drain(..end + 2).collect();
            match std::str::from_utf8(&event) {
                Ok(text) => {
                    for line in text.split_inclusive('\n') {
                        let body = line.trim_end_matches('\n').trim_end_matches('\r');
                        let replaced = body
                            .strip_prefix("data:")
                            .map(|d| d.strip_prefix(' ').unwrap_or(d))
                            .and_then(&rewrite)
                            .map(|data| format!("data: {data}\n"));
                        out.extend_from_slice(replaced.as_deref().unwrap_or(line).as_bytes());
                    }
                }
                Err(_) => out.extend_from_slice(&event),
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn sse_events_are_rewritten_whole_however_they_are_split() {
        let stream = b"data:\nid: 0\nretry: 3000\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"elicitation/create\"}\nid: 1\n\n:\n\n";
        let rewrite = |d: &str| d.contains("method").then(|| d.replace("\"id\":0", "\"id\":\"hf-x\""));
        let whole = SseEvents::default().feed(stream, rewrite);
        let mut split = SseEvents::default();
        let mut pieces = Vec::new();
        for chunk in stream.chunks(7) {
            pieces.extend(split.feed(chunk, rewrite));
        }
        assert_eq!(whole, pieces, "chunk boundaries change nothing");
        let text = String::from_utf8(whole).unwrap();
        assert!(
            text.contains("data: {\"jsonrpc\":\"2.0\",\"id\":\"hf-x\",\"method\":\"elicitation/create\"}\nid: 1\n\n")
        );
        assert!(text.starts_with("data:\nid: 0\nretry: 3000\n\n") && text.ends_with(":\n\n"), "{text}");
    }
}

//! MCP sessions that outlive the server process. Over the streamable HTTP transport the client keeps its
//! `Mcp-Session-Id`; when `holdfast mcp --transport http` restarts on the same data dir, rmcp asks [`SessionLinks`]
//! (its `SessionStore`) for that session's `initialize` parameters and replays the handshake, and the handler finds
//! the holdfast session that MCP session had opened, with its registers, context bank and confirmations as saved.
//!
//! Both live in the runtime's session store under `mcp:<MCP session id>` (in `DATA_DIR/holdfast.db`; in memory
//! without a data dir, where a restart forgets them as it forgets everything), with the client that owns the session
//! (`owners.rs`). Only the server writes a link: a client cannot name the holdfast session it attaches to, only
//! present the MCP session id it was given, with the token of the client that opened it.

use holdfast_agent::Runtime;
use holdfast_core::{ToolContext, ToolError};
use rmcp::RoleServer;
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::store::{SessionState, SessionStore, SessionStoreError};
use serde_json::{Value, json};
use std::sync::Arc;

fn key(mcp_id: &str) -> String {
    format!("mcp:{mcp_id}")
}

/// The `Mcp-Session-Id` the request came with (HTTP transport only).
pub(crate) fn mcp_session_id(context: &RequestContext<RoleServer>) -> Option<String> {
    let parts = context.extensions.get::<axum::http::request::Parts>()?;
    let id = parts.headers.get("mcp-session-id")?.to_str().ok()?;
    Some(id.to_owned())
}

/// The holdfast session `mcp_id` opened earlier, restored, when it still exists.
pub(crate) async fn linked_session(
    runtime: &Runtime,
    mcp_id: &str,
) -> Result<Option<(String, ToolContext)>, ToolError> {
    let Some(link) = runtime.sessions.link_get(&key(mcp_id)).await? else { return Ok(None) };
    let Some(id) = link.get("session_id").and_then(Value::as_str) else { return Ok(None) };
    Ok(runtime.session(id).await?.map(|ctx| (id.to_owned(), ctx)))
}

/// The client (principal) the request came from over HTTP; `None` over stdio.
pub(crate) fn principal(context: &RequestContext<RoleServer>) -> Option<String> {
    let parts = context.extensions.get::<axum::http::request::Parts>()?;
    parts.extensions.get::<holdfast_agent::access::Principal>().map(|p| p.client.clone())
}

/// The link of MCP session `mcp_id`, when it has one.
pub(crate) async fn link_of(runtime: &Runtime, mcp_id: &str) -> Result<Option<Value>, ToolError> {
    runtime.sessions.link_get(&key(mcp_id)).await
}

/// Records the client that owns MCP session `mcp_id` (`owners.rs`).
pub(crate) async fn set_owner(runtime: &Runtime, mcp_id: &str, client: &str) -> Result<(), ToolError> {
    runtime.sessions.link_merge(&key(mcp_id), json!({"owner": client})).await
}

/// Records that MCP session `mcp_id` opened holdfast session `session_id`.
pub(crate) async fn link(runtime: &Runtime, mcp_id: &str, session_id: &str) -> Result<(), ToolError> {
    runtime.sessions.link_merge(&key(mcp_id), json!({"session_id": session_id})).await
}

/// rmcp's session store over the runtime's session store: an MCP session's `initialize` parameters.
pub struct SessionLinks {
    runtime: Arc<Runtime>,
}

impl SessionLinks {
    /// Links kept in `runtime`'s session store.
    pub fn new(runtime: Arc<Runtime>) -> Self {
        Self { runtime }
    }
}

impl std::fmt::Debug for SessionLinks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionLinks").finish_non_exhaustive()
    }
}

// rmcp's `SessionStore` is an `async_trait` trait.
#[async_trait::async_trait]
impl SessionStore for SessionLinks {
    async fn load(&self, session_id: &str) -> Result<Option<SessionState>, SessionStoreError> {
        let link = self.runtime.sessions.link_get(&key(session_id)).await?;
        let Some(init) = link.and_then(|l| l.get("initialize_params").cloned()) else { return Ok(None) };
        Ok(Some(SessionState::new(serde_json::from_value(init)?)))
    }

    async fn store(&self, session_id: &str, state: &SessionState) -> Result<(), SessionStoreError> {
        let init = serde_json::to_value(&state.initialize_params)?;
        Ok(self.runtime.sessions.link_merge(&key(session_id), json!({"initialize_params": init})).await?)
    }

    async fn delete(&self, session_id: &str) -> Result<(), SessionStoreError> {
        Ok(self.runtime.sessions.link_delete(&key(session_id)).await?)
    }
}

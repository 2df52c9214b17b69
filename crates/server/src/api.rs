//! REST handlers. Every tool call goes through the runtime's registry, exactly as the model's calls do.

use crate::{ApiError, AppState};
use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use holdfast_agent::{CancelToken, ConfirmDecision, Decided, MessageRole, NewMessage, TurnObserver};
use holdfast_core::confirm::{CONFIRMATION_TTL, Confirmation};
use holdfast_core::tool::BoxFuture;
use holdfast_core::{ErrorCode, ToolContext, ToolError, UserChannel, UserDecision};
use holdfast_memory::tasks::TaskFilter;
use serde::Deserialize;
use serde_json::{Value, json};
use std::sync::Arc;

type ApiResult = Result<Response, ApiError>;

fn ok(v: Value) -> ApiResult {
    Ok(Json(v).into_response())
}

fn internal(e: impl std::fmt::Display) -> ApiError {
    ApiError::Tool(ToolError::internal(e.to_string()))
}

async fn session(state: &AppState, id: &str) -> Result<ToolContext, ApiError> {
    state
        .runtime
        .session(id)
        .await?
        .ok_or_else(|| ApiError::Tool(ToolError::new(ErrorCode::NotFound, format!("no session {id:?}"))))
}

#[utoipa::path(get, path = "/api/info", tag = "runtime", responses((status = 200, description = "Version, wallet address, networks, presets, the agent, register declarations and skills", body = Object)))]
pub async fn info(State(state): State<Arc<AppState>>) -> ApiResult {
    let rt = &state.runtime;
    let declarations: Vec<Value> = rt
        .services
        .declarations
        .keys()
        .into_iter()
        .filter_map(|k| rt.services.declarations.get(k))
        .map(|d| {
            json!({
                "key": d.key,
                "writers": d.writers.iter().map(ToString::to_string).collect::<Vec<_>>(),
                "intrinsic": d.intrinsic,
                "max_age_secs": d.max_age.map(|a| a.as_secs()),
            })
        })
        .collect();
    let networks: Vec<Value> =
        rt.services.config.networks.iter().map(|n| json!({"name": n.name, "chain_id": n.chain_id})).collect();
    ok(json!({
        "version": env!("CARGO_PKG_VERSION"),
        "wallet_address": rt.web3.wallet().address().to_checksum(None),
        "networks": networks,
        "presets": rt.web3.presets().names(),
        "agent": state.agent.as_ref().map(|a| json!({"provider": a.provider().name(), "model": a.provider().model()})),
        "registers": declarations,
        "skills": rt.skills().iter().map(|s| json!({"name": s.name, "description": s.description})).collect::<Vec<_>>(),
    }))
}

#[utoipa::path(get, path = "/api/tools", tag = "runtime", responses((status = 200, description = "Every tool: name, description, input and output JSON Schemas, kind", body = [Object])))]
pub async fn tools(State(state): State<Arc<AppState>>) -> ApiResult {
    ok(serde_json::to_value(state.runtime.registry.list()).map_err(internal)?)
}

#[utoipa::path(get, path = "/api/sessions", tag = "sessions", responses((status = 200, description = "The 200 most recent sessions", body = Object)))]
pub async fn list_sessions(State(state): State<Arc<AppState>>) -> ApiResult {
    ok(json!({"sessions": state.runtime.sessions.list(200).await?}))
}

#[utoipa::path(post, path = "/api/sessions", tag = "sessions", responses((status = 201, description = "A new session", body = Object)))]
pub async fn create_session(State(state): State<Arc<AppState>>) -> ApiResult {
    let (info, _) = state.runtime.open_session("http").await?;
    Ok((StatusCode::CREATED, Json(serde_json::to_value(info).map_err(internal)?)).into_response())
}

#[utoipa::path(get, path = "/api/sessions/{id}", tag = "sessions", params(("id" = String, Path, description = "Session id")), responses((status = 200, description = "The session and its history", body = Object), (status = 404, description = "No such session", body = crate::error::ErrorBody)))]
pub async fn get_session(State(state): State<Arc<AppState>>, Path(id): Path<String>) -> ApiResult {
    let info = state
        .runtime
        .sessions
        .get(&id)
        .await?
        .ok_or_else(|| ApiError::Tool(ToolError::new(ErrorCode::NotFound, format!("no session {id:?}"))))?;
    let history = state.runtime.sessions.history(&id).await?;
    ok(json!({"session": info, "history": history}))
}

/// A user message.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UserMessage {
    /// The text (1 to 65536 bytes).
    #[schema(min_length = 1, max_length = 65536)]
    content: String,
}

/// Waits for the user's answer through the approve/deny endpoints.
struct ServerObserver(Arc<AppState>);

impl TurnObserver for ServerObserver {
    fn channel(&self) -> Option<UserChannel> {
        // Decisions arrive through the authenticated approve/deny endpoints.
        Some(UserChannel::WebUi)
    }

    fn confirm<'a>(&'a self, c: &'a Confirmation) -> BoxFuture<'a, ConfirmDecision> {
        Box::pin(async move {
            let (tx, rx) = tokio::sync::oneshot::channel();
            self.0.waiters.lock().insert(c.id.clone(), tx);
            match tokio::time::timeout(CONFIRMATION_TTL, rx).await {
                Ok(Ok(decision)) => decision,
                _ => {
                    self.0.waiters.lock().remove(&c.id);
                    ConfirmDecision::Defer
                }
            }
        })
    }
}

#[utoipa::path(post, path = "/api/sessions/{id}/messages", tag = "sessions", params(("id" = String, Path, description = "Session id")), request_body = UserMessage, responses((status = 200, description = "The agent's turn (or, without a model, the context bank it fed)", body = Object), (status = 404, description = "No such session", body = crate::error::ErrorBody), (status = 422, description = "Empty or oversized message", body = crate::error::ErrorBody), (status = 429, description = "A turn is already running in this session", body = crate::error::ErrorBody)))]
pub async fn send_message(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    Json(msg): Json<UserMessage>,
) -> ApiResult {
    let ctx = session(&state, &id).await?;
    if msg.content.trim().is_empty() || msg.content.len() > 64 * 1024 {
        return Err(ApiError::Tool(ToolError::new(ErrorCode::InvalidParams, "`content`: 1 to 65536 bytes of text")));
    }
    let Some(agent) = state.agent.clone() else {
        // No model: the user's words still feed the context bank, and the tool console does the rest.
        ctx.scan_user_input(&msg.content).await?;
        state.runtime.sessions.append(&id, NewMessage::text(MessageRole::User, msg.content)).await?;
        return ok(
            json!({"agent": null, "note": "no LLM is configured; use the tool console", "context_bank": ctx.context_bank.items()}),
        );
    };
    let cancel = CancelToken::new();
    {
        let mut turns = state.turns.lock();
        if turns.contains_key(&id) {
            return Err(ApiError::Tool(ToolError::new(
                ErrorCode::RateLimited,
                "a turn is already running in this session",
            )));
        }
        turns.insert(id.clone(), cancel.clone());
    }
    let observer = ServerObserver(Arc::clone(&state));
    let result = agent.run_turn(&ctx, &msg.content, &observer, &cancel).await;
    state.turns.lock().remove(&id);
    match result {
        Ok(outcome) => ok(json!({"agent": outcome, "context_bank": ctx.context_bank.items()})),
        Err(holdfast_agent::AgentError::Llm(e)) => Err(ApiError::Tool(e.into())),
        Err(holdfast_agent::AgentError::Tool(e)) => Err(ApiError::Tool(e)),
    }
}

#[utoipa::path(post, path = "/api/sessions/{id}/cancel", tag = "sessions", params(("id" = String, Path, description = "Session id")), responses((status = 200, description = "Whether a running turn was cancelled", body = Object)))]
pub async fn cancel(State(state): State<Arc<AppState>>, Path(id): Path<String>) -> ApiResult {
    let cancelled = state.turns.lock().get(&id).map(CancelToken::cancel).is_some();
    ok(json!({"cancelled": cancelled}))
}

fn tool_response(result: Result<Value, ToolError>) -> ApiResult {
    match result {
        Ok(output) => ok(json!({"ok": true, "output": output})),
        Err(e) => Err(ApiError::Tool(e)),
    }
}

#[utoipa::path(post, path = "/api/sessions/{id}/tools/{name}", tag = "tools", params(("id" = String, Path, description = "Session id"), ("name" = String, Path, description = "Tool name")), request_body(content = Object, description = "The tool's parameters (its input schema, `GET /api/tools`)"), responses((status = 200, description = "The tool's output", body = Object), (status = 202, description = "The action waits for the user's confirmation", body = crate::error::ErrorBody), (status = 404, description = "No such session or tool", body = crate::error::ErrorBody), (status = 422, description = "The tool refused: bad parameters, policy, simulation…", body = crate::error::ErrorBody)))]
pub async fn call_tool(
    State(state): State<Arc<AppState>>,
    Path((id, name)): Path<(String, String)>,
    body: Option<Json<Value>>,
) -> ApiResult {
    let ctx = session(&state, &id).await?;
    let params = body.map_or_else(|| json!({}), |Json(v)| v);
    tool_response(state.runtime.registry.call(&name, params, &ctx).await)
}

#[utoipa::path(get, path = "/api/sessions/{id}/registers", tag = "sessions", params(("id" = String, Path, description = "Session id")), responses((status = 200, description = "Registers with value, origin, writer, age", body = Object), (status = 404, description = "No such session", body = crate::error::ErrorBody)))]
pub async fn registers(State(state): State<Arc<AppState>>, Path(id): Path<String>) -> ApiResult {
    let ctx = session(&state, &id).await?;
    let mut out = serde_json::Map::new();
    for (key, entry) in ctx.registers.snapshot().0 {
        let max_age = ctx.registers.declaration(&key).and_then(|d| d.max_age);
        let age = entry.age();
        let mut v = serde_json::to_value(&*entry).map_err(internal)?;
        v["age_secs"] = json!(age.as_secs_f64());
        v["max_age_secs"] = json!(max_age.map(|a| a.as_secs()));
        v["stale"] = json!(max_age.is_some_and(|m| age > m));
        v["declared"] = json!(ctx.registers.declaration(&key).is_some());
        out.insert(key, v);
    }
    ok(json!({"registers": out}))
}

#[utoipa::path(get, path = "/api/sessions/{id}/context-bank", tag = "sessions", params(("id" = String, Path, description = "Session id")), responses((status = 200, description = "Values found in the user's own words", body = Object), (status = 404, description = "No such session", body = crate::error::ErrorBody)))]
pub async fn context_bank(State(state): State<Arc<AppState>>, Path(id): Path<String>) -> ApiResult {
    let ctx = session(&state, &id).await?;
    ok(json!({"items": ctx.context_bank.items(), "formatted": ctx.context_bank.format_for_agent()}))
}

#[utoipa::path(get, path = "/api/sessions/{id}/confirmations", tag = "confirmations", params(("id" = String, Path, description = "Session id")), responses((status = 200, description = "Actions waiting for the user", body = Object), (status = 404, description = "No such session", body = crate::error::ErrorBody)))]
pub async fn confirmations(State(state): State<Arc<AppState>>, Path(id): Path<String>) -> ApiResult {
    let ctx = session(&state, &id).await?;
    ok(json!({"pending": ctx.confirmations.pending()}))
}

/// Resolves a pending confirmation: an agent turn waiting for it resumes itself; an action started from the tool
/// console is approved and re-run here (or denied).
async fn resolve(state: &AppState, id: &str, cid: &str, decision: ConfirmDecision) -> ApiResult {
    let ctx = session(state, id).await?;
    if ctx.confirmations.get(cid).is_none() {
        return Err(ApiError::Tool(ToolError::new(
            ErrorCode::ConfirmationNotFound,
            format!("no confirmation {cid:?} in this session"),
        )));
    }
    let approve = decision == ConfirmDecision::Approve;
    let waiter = state.waiters.lock().remove(cid);
    if let Some(tx) = waiter {
        let _ = tx.send(decision);
        return ok(json!({"id": cid, "approved": approve, "denied": !approve, "resumed": "agent"}));
    }
    let decision = if approve { UserDecision::Approve } else { UserDecision::Deny };
    match state.runtime.decide(&ctx, UserChannel::WebUi, cid, decision).await? {
        Decided::Ran(_, outcome) => tool_response(outcome),
        Decided::Denied(c) => ok(json!({"id": c.id, "denied": true, "tool": c.tool})),
    }
}

#[utoipa::path(post, path = "/api/sessions/{id}/confirmations/{cid}/approve", tag = "confirmations", params(("id" = String, Path, description = "Session id"), ("cid" = String, Path, description = "Confirmation id")), responses((status = 200, description = "Approved: the action ran (its output) or the waiting agent resumed", body = Object), (status = 404, description = "No such session or confirmation", body = crate::error::ErrorBody), (status = 422, description = "The action was refused when re-checked", body = crate::error::ErrorBody)))]
pub async fn approve(State(state): State<Arc<AppState>>, Path((id, cid)): Path<(String, String)>) -> ApiResult {
    resolve(&state, &id, &cid, ConfirmDecision::Approve).await
}

#[utoipa::path(post, path = "/api/sessions/{id}/confirmations/{cid}/deny", tag = "confirmations", params(("id" = String, Path, description = "Session id"), ("cid" = String, Path, description = "Confirmation id")), responses((status = 200, description = "Denied", body = Object), (status = 404, description = "No such session or confirmation", body = crate::error::ErrorBody)))]
pub async fn deny(State(state): State<Arc<AppState>>, Path((id, cid)): Path<(String, String)>) -> ApiResult {
    resolve(&state, &id, &cid, ConfirmDecision::Deny).await
}

#[utoipa::path(get, path = "/api/memory", tag = "memory", responses((status = 200, description = "Memory blocks", body = Object)))]
pub async fn memory(State(state): State<Arc<AppState>>) -> ApiResult {
    let blocks = state.runtime.agent.memory.blocks().await.map_err(internal)?;
    ok(json!({"blocks": blocks}))
}

#[utoipa::path(get, path = "/api/tasks", tag = "memory", responses((status = 200, description = "Tasks", body = Object)))]
pub async fn tasks(State(state): State<Arc<AppState>>) -> ApiResult {
    let tasks =
        state.runtime.agent.tasks.list(TaskFilter { status: None, include_done: true }).await.map_err(internal)?;
    ok(json!({"tasks": tasks}))
}

#[utoipa::path(get, path = "/api/reminders", tag = "memory", responses((status = 200, description = "Reminders", body = Object)))]
pub async fn reminders(State(state): State<Arc<AppState>>) -> ApiResult {
    let reminders = state.runtime.agent.reminders.list(true).await.map_err(internal)?;
    ok(json!({"reminders": reminders}))
}

//! REST handlers. Every tool call goes through the runtime's registry, exactly as the model's calls do.

use crate::{ApiError, AppState};
use axum::Json;
use axum::extract::{Path, Query, State};
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

pub async fn tools(State(state): State<Arc<AppState>>) -> ApiResult {
    ok(serde_json::to_value(state.runtime.registry.list()).map_err(internal)?)
}

pub async fn list_sessions(State(state): State<Arc<AppState>>) -> ApiResult {
    ok(json!({"sessions": state.runtime.sessions.list(200).await?}))
}

pub async fn create_session(State(state): State<Arc<AppState>>) -> ApiResult {
    let (info, _) = state.runtime.open_session("http").await?;
    Ok((StatusCode::CREATED, Json(serde_json::to_value(info).map_err(internal)?)).into_response())
}

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

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UserMessage {
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

pub async fn call_tool(
    State(state): State<Arc<AppState>>,
    Path((id, name)): Path<(String, String)>,
    body: Option<Json<Value>>,
) -> ApiResult {
    let ctx = session(&state, &id).await?;
    let params = body.map_or_else(|| json!({}), |Json(v)| v);
    tool_response(state.runtime.registry.call(&name, params, &ctx).await)
}

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

pub async fn context_bank(State(state): State<Arc<AppState>>, Path(id): Path<String>) -> ApiResult {
    let ctx = session(&state, &id).await?;
    ok(json!({"items": ctx.context_bank.items(), "formatted": ctx.context_bank.format_for_agent()}))
}

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

pub async fn approve(State(state): State<Arc<AppState>>, Path((id, cid)): Path<(String, String)>) -> ApiResult {
    resolve(&state, &id, &cid, ConfirmDecision::Approve).await
}

pub async fn deny(State(state): State<Arc<AppState>>, Path((id, cid)): Path<(String, String)>) -> ApiResult {
    resolve(&state, &id, &cid, ConfirmDecision::Deny).await
}

pub async fn memory(State(state): State<Arc<AppState>>) -> ApiResult {
    let blocks = state.runtime.agent.memory.blocks().await.map_err(internal)?;
    ok(json!({"blocks": blocks}))
}

pub async fn tasks(State(state): State<Arc<AppState>>) -> ApiResult {
    let tasks =
        state.runtime.agent.tasks.list(TaskFilter { status: None, include_done: true }).await.map_err(internal)?;
    ok(json!({"tasks": tasks}))
}

pub async fn reminders(State(state): State<Arc<AppState>>) -> ApiResult {
    let reminders = state.runtime.agent.reminders.list(true).await.map_err(internal)?;
    ok(json!({"reminders": reminders}))
}

#[derive(Deserialize)]
pub struct JournalQuery {
    session_id: Option<String>,
}

pub async fn journal(State(state): State<Arc<AppState>>, Query(q): Query<JournalQuery>) -> ApiResult {
    let journal = state.runtime.web3.journal();
    let entries = match q.session_id {
        Some(id) => journal.for_session(&id).await?,
        None => journal.recent(200).await?,
    };
    ok(json!({"journal": entries}))
}

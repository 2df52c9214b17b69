//! REST handlers. Every tool call goes through the runtime's registry, exactly as the model's calls do.

use crate::bodies::{
    AgentEntry, AgentInfo, Cancelled, ContextBankView, DeclarationInfo, Info, MemoryList, NetworkInfo, PendingList,
    RegisterView, Registers, ReminderList, Resolution, SessionDetail, SessionList, SessionRow, SkillInfo, TaskList,
    ToolOutput, TurnReply,
};
use crate::extract::{OptionalJson, QueryOf};
use crate::openapi::schema;
use crate::{ApiError, AppState};
use axum::Json;
use axum::extract::OriginalUri;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use holdfast_agent::turns::Started;
use holdfast_agent::{CancelToken, ConfirmDecision, Decided, MessageRole, NewMessage, TurnObserver};
use holdfast_core::confirm::{CONFIRMATION_TTL, Confirmation, ConfirmationState};
use holdfast_core::tool::BoxFuture;
use holdfast_core::{ErrorCode, ToolContext, ToolError, UserChannel, UserDecision};
use holdfast_memory::schedule::tasks::TaskFilter;
use serde::Deserialize;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::oneshot;

/// A handler's answer: a typed body, or a coded error.
type ApiResult<T> = Result<Json<T>, ApiError>;

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

#[utoipa::path(get, path = "/api/info", tag = "runtime", responses((status = 200, description = "Version, wallet address, networks, presets, the agent, register declarations and skills", body = schema::Info)))]
pub(crate) async fn info(State(state): State<Arc<AppState>>) -> ApiResult<Info> {
    let rt = &state.runtime;
    let declarations = &rt.services.declarations;
    let registers = declarations
        .keys()
        .into_iter()
        .filter_map(|k| declarations.get(k))
        .map(|d| DeclarationInfo {
            key: d.key.clone(),
            writers: d.writers.iter().map(ToString::to_string).collect(),
            intrinsic: d.intrinsic,
            max_age_secs: d.max_age.map(|a| a.as_secs()),
        })
        .collect();
    Ok(Json(Info {
        version: env!("CARGO_PKG_VERSION").to_owned(),
        wallet_address: rt.web3.wallet().address().to_checksum(None),
        networks: rt
            .services
            .config
            .networks
            .iter()
            .map(|n| NetworkInfo { name: n.name.clone(), chain_id: n.chain_id })
            .collect(),
        presets: rt.web3.presets().names().into_iter().map(str::to_owned).collect(),
        agent: state
            .agent
            .as_ref()
            .map(|a| AgentInfo { provider: a.provider().name().to_owned(), model: a.provider().model().to_owned() }),
        agents: rt
            .profiles()
            .map(|p| AgentEntry {
                name: p.name.clone(),
                model: state
                    .agents()
                    .iter()
                    .find(|a| a.profile().name == p.name)
                    .map(|a| a.provider().model().to_owned()),
                tools: p.tools.as_ref().map(|t| t.iter().cloned().collect()),
                default: p.name == holdfast_agent::AGENT_ID,
            })
            .collect(),
        registers,
        skills: rt
            .skills()
            .iter()
            .map(|s| SkillInfo { name: s.name.clone(), description: s.description.clone() })
            .collect(),
        relay_dropped_events: rt.relay_dropped_events(),
        relay_unwatched_events: rt.relay_unwatched_events(),
    }))
}

#[utoipa::path(get, path = "/api/tools", tag = "runtime", responses((status = 200, description = "Every tool: name, description, input and output JSON Schemas, kind", body = schema::ToolList)))]
pub(crate) async fn tools(State(state): State<Arc<AppState>>) -> ApiResult<Vec<holdfast_core::ToolInfo>> {
    Ok(Json(state.runtime.registry.list()))
}

#[utoipa::path(get, path = "/api/sessions", tag = "sessions", responses((status = 200, description = "The 200 most recent sessions", body = schema::SessionList)))]
pub(crate) async fn list_sessions(State(state): State<Arc<AppState>>) -> ApiResult<SessionList> {
    let mut sessions = Vec::new();
    for info in state.runtime.sessions.list(200).await? {
        let agent = state.runtime.agent_of_session(&info.id).await?;
        sessions.push(SessionRow { info, agent });
    }
    Ok(Json(SessionList { sessions }))
}

#[utoipa::path(post, path = "/api/sessions", tag = "sessions", request_body(content = Option<NewSession>, description = "Optional: the agent"), responses((status = 201, description = "A new session", body = schema::SessionInfo), (status = 400, description = "The body is not JSON", body = schema::ErrorBody), (status = 404, description = "No such agent", body = schema::ErrorBody), (status = 422, description = "Not an `{\"agent\"}` object", body = schema::ErrorBody)))]
pub(crate) async fn create_session(
    State(state): State<Arc<AppState>>,
    OptionalJson(body): OptionalJson<NewSession>,
) -> Result<(StatusCode, Json<holdfast_agent::SessionInfo>), ApiError> {
    let agent = body.and_then(|b| b.agent).unwrap_or_else(|| holdfast_agent::AGENT_ID.to_owned());
    let (info, _) = state.runtime.open_session_as("http", &agent).await?;
    tracing::info!(session = %info.id, "session opened");
    Ok((StatusCode::CREATED, Json(info)))
}

#[utoipa::path(get, path = "/api/sessions/{id}", tag = "sessions", params(("id" = String, Path, description = "Session id")), responses((status = 200, description = "The session and its history", body = schema::SessionDetail), (status = 404, description = "No such session", body = schema::ErrorBody)))]
pub(crate) async fn get_session(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
) -> ApiResult<SessionDetail> {
    let info = state
        .runtime
        .sessions
        .get(&id)
        .await?
        .ok_or_else(|| ApiError::Tool(ToolError::new(ErrorCode::NotFound, format!("no session {id:?}"))))?;
    let history = state.runtime.sessions.history(&id).await?;
    let turn_running = state.runtime.turns.is_running(&id);
    Ok(Json(SessionDetail { session: info, history, turn_running }))
}

/// A new session.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct NewSession {
    /// The agent it talks to (`GET /api/info` lists them); the default agent when absent.
    agent: Option<String>,
}

/// A user message.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct UserMessage {
    /// The text (1 to 65536 bytes).
    #[schema(min_length = 1, max_length = 65536)]
    content: String,
    /// The texts the user pasted into it (the web UI reports each paste event's text): each but a lone address or
    /// number is read as quoted by the context bank — the user's words, but no request — so someone else's "send 7 USDC to
    /// 0x…", pasted to ask about it, moves nothing by itself; one the message no longer holds (edited since) quotes
    /// the whole message. At most 32.
    #[serde(default)]
    #[schema(max_items = 32)]
    pasted: Vec<String>,
}

/// Resolves once confirmation `id` is withdrawn (its `confirmation.withdrawn` on the session's events; after missed
/// events, its state), never otherwise.
async fn withdrawn(
    mut events: tokio::sync::broadcast::Receiver<Arc<holdfast_core::event::Event>>,
    ctx: &ToolContext,
    id: &str,
) {
    use holdfast_core::event::EventPayload;
    use tokio::sync::broadcast::error::RecvError;
    loop {
        match events.recv().await {
            Ok(event) => {
                if matches!(&event.payload, EventPayload::ConfirmationWithdrawn(w) if w.id == id) {
                    return;
                }
            }
            // Events were missed: its state says whether it still waits for an answer (gone, or decided elsewhere).
            Err(RecvError::Lagged(_)) => {
                if ctx.confirmations.get(id).is_none_or(|c| c.state != ConfirmationState::Pending) {
                    return;
                }
            }
            Err(RecvError::Closed) => std::future::pending::<()>().await,
        }
    }
}

/// Waits for the user's answer through the approve/deny endpoints, in the turn's session, until the turn is stopped
/// (its token).
struct ServerObserver(Arc<AppState>, ToolContext, CancelToken);

impl TurnObserver for ServerObserver {
    fn channel(&self) -> Option<UserChannel> {
        // Decisions arrive through the authenticated approve/deny endpoints.
        Some(UserChannel::WebUi)
    }

    fn confirm<'a>(&'a self, c: &'a Confirmation) -> BoxFuture<'a, ConfirmDecision> {
        Box::pin(async move {
            let (tx, rx) = tokio::sync::oneshot::channel();
            // Subscribed before the state is read: a withdrawal after it is seen below.
            let withdrawn = withdrawn(self.1.events.subscribe(), &self.1, &c.id);
            self.0.waiters.lock().insert(c.id.clone(), tx);
            // Decided before this turn started waiting (through the tool console's path): nothing will answer.
            if self.1.confirmations.get(&c.id).is_some_and(|now| now.state != ConfirmationState::Pending) {
                self.0.waiters.lock().remove(&c.id);
                return ConfirmDecision::Defer;
            }
            let waited = tokio::select! {
                biased;
                () = self.2.cancelled() => None,
                // Replaced by a newer request of the same tool (the tool console's): no answer will come for it.
                () = withdrawn => Some(None),
                answer = tokio::time::timeout(CONFIRMATION_TTL, rx) => Some(answer.ok().and_then(Result::ok)),
            };
            match waited {
                Some(Some((decision, taken))) => {
                    // The approve/deny call answers `resumed` only once the decision reached this turn.
                    let _ = taken.send(());
                    decision
                }
                Some(None) => {
                    // Withdrawn, expired, or the server dropped the waiter: nothing answers.
                    self.0.waiters.lock().remove(&c.id);
                    ConfirmDecision::Defer
                }
                None => {
                    // Stopped while it waited: the question is withdrawn, so nothing is approved for a run that is
                    // gone (the UI no longer lists it; an approval is refused as no longer pending).
                    self.0.waiters.lock().remove(&c.id);
                    self.1.confirmations.withdraw(&c.id, "the turn waiting for it was stopped; nothing was sent");
                    ConfirmDecision::Defer
                }
            }
        })
    }
}

#[utoipa::path(post, path = "/api/sessions/{id}/messages", tag = "sessions", params(("id" = String, Path, description = "Session id")), request_body = UserMessage, responses((status = 200, description = "The agent's turn (or, without a model, the context bank it fed)", body = schema::TurnReply), (status = 404, description = "No such session", body = schema::ErrorBody), (status = 400, description = "The body is not JSON", body = schema::ErrorBody), (status = 422, description = "Not a `{\"content\"}` object, or an empty or oversized message", body = schema::ErrorBody), (status = 429, description = "A turn is already running in this session", body = schema::ErrorBody)))]
pub(crate) async fn send_message(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    msg: Result<Json<UserMessage>, JsonRejection>,
) -> ApiResult<TurnReply> {
    let Json(msg) = msg?;
    let ctx = session(&state, &id).await?;
    // Refused before anything is registered or written: a user's message never lands in an agent's inbox session.
    holdfast_agent::inbox::refuse_user_turn(state.runtime.sessions.as_ref(), &id).await?;
    if msg.content.trim().is_empty() || msg.content.len() > 64 * 1024 {
        return Err(ApiError::Tool(ToolError::new(ErrorCode::InvalidParams, "`content`: 1 to 65536 bytes of text")));
    }
    if msg.pasted.len() > 32 || msg.pasted.iter().any(|p| p.len() > 64 * 1024) {
        return Err(ApiError::Tool(ToolError::new(
            ErrorCode::InvalidParams,
            "`pasted`: at most 32 texts of at most 65536 bytes each",
        )));
    }
    let Some(agent) = state.agent_for(&ctx) else {
        // No model: the user's words still feed the context bank, and the tool console does the rest.
        ctx.scan_user_message(&msg.content, &msg.pasted).await?;
        state.runtime.sessions.append(&id, NewMessage::text(MessageRole::User, msg.content)).await?;
        return Ok(Json(TurnReply {
            agent: None,
            note: Some("no LLM is configured; use the tool console".to_owned()),
            context_bank: ctx.context_bank.items(),
            latest_message: ctx.context_bank.latest_message(),
        }));
    };
    let cancel = CancelToken::new();
    let Some(running) = state.runtime.turns.begin(&id, cancel.clone(), Started::User) else {
        return Err(ApiError::Tool(ToolError::new(
            ErrorCode::RateLimited,
            "a turn is already running in this session",
        )));
    };
    // The turn runs on its own task: if this request's future is dropped mid-turn, the guard stops the turn (a tool
    // in flight gives way where it has written nothing) instead of the turn being dropped half-way through a step.
    let stop_if_dropped = cancel.clone().drop_guard();
    let turn = tokio::spawn({
        let (state, ctx) = (Arc::clone(&state), ctx.clone());
        async move {
            let observer = ServerObserver(Arc::clone(&state), ctx.clone(), cancel.clone());
            let result = agent.run_turn_pasted(&ctx, (&msg.content, &msg.pasted), &observer, &cancel).await;
            drop(running);
            result
        }
    });
    let result = turn.await.map_err(|e| ToolError::internal(format!("the turn failed unexpectedly: {e}")))?;
    stop_if_dropped.disarm();
    match result {
        Ok(outcome) => Ok(Json(TurnReply {
            agent: Some(outcome),
            note: None,
            context_bank: ctx.context_bank.items(),
            latest_message: ctx.context_bank.latest_message(),
        })),
        Err(holdfast_agent::AgentError::Llm(e)) => Err(ApiError::Tool(e.into())),
        Err(holdfast_agent::AgentError::Tool(e)) => Err(ApiError::Tool(e)),
    }
}

#[utoipa::path(post, path = "/api/sessions/{id}/cancel", tag = "sessions", params(("id" = String, Path, description = "Session id")), responses((status = 200, description = "Whether a running turn was cancelled", body = schema::Cancelled)))]
pub(crate) async fn cancel(State(state): State<Arc<AppState>>, Path(id): Path<String>) -> ApiResult<Cancelled> {
    let cancelled = state.runtime.turns.cancel(&id);
    Ok(Json(Cancelled { cancelled }))
}

/// Options of `POST /api/sessions/{id}/tools/{name}`.
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct CallOptions {
    /// `true`: record the call and its outcome in the session's history (role `console`), as the UI's tool console
    /// does, so that it is shown again after a reload. Never shown to the model.
    #[serde(default)]
    record: bool,
}

/// Records a tool console call (or the user's decision on one) in the session's history; a failure is logged, never
/// the call's: the tool has run.
async fn record_console(state: &AppState, id: &str, tool: &str, record: Value) {
    let message =
        NewMessage { name: Some(tool.to_owned()), ..NewMessage::text(MessageRole::Console, record.to_string()) };
    if let Err(e) = state.runtime.sessions.append(id, message).await {
        tracing::warn!(session = id, tool, error = %e, "could not record the tool console call in the session history");
    }
}

/// The outcome of a call as the history records it: its output, or its coded error.
fn outcome_record(tool: &str, params: Option<&Value>, outcome: &Result<Value, ToolError>) -> Value {
    let mut record = json!({ "tool": tool, "ok": outcome.is_ok() });
    if let Some(params) = params {
        record["params"] = params.clone();
    }
    match outcome {
        Ok(output) => record["output"] = output.clone(),
        Err(e) => record["error"] = json!({ "code": e.code, "message": e.message }),
    }
    record
}

#[utoipa::path(post, path = "/api/sessions/{id}/tools/{name}", tag = "tools", params(("id" = String, Path, description = "Session id"), ("name" = String, Path, description = "Tool name"), CallOptions), request_body(content = Object, description = "The tool's parameters (its input schema, `GET /api/tools`)"), responses((status = 200, description = "The tool's output", body = schema::ToolOutput), (status = 202, description = "The action waits for the user's confirmation", body = schema::ErrorBody), (status = 400, description = "The body is not JSON", body = schema::ErrorBody), (status = 404, description = "No such session or tool", body = schema::ErrorBody), (status = 422, description = "The tool refused: bad parameters, policy, simulation…", body = schema::ErrorBody)))]
pub(crate) async fn call_tool(
    State(state): State<Arc<AppState>>,
    Path((id, name)): Path<(String, String)>,
    options: QueryOf<CallOptions>,
    OptionalJson(body): OptionalJson<Value>,
) -> ApiResult<ToolOutput> {
    let axum::extract::Query(options) = options?;
    let ctx = session(&state, &id).await?;
    let params = body.unwrap_or_else(|| json!({}));
    let outcome = {
        let (runtime, ctx, name, params) = (Arc::clone(&state.runtime), ctx.clone(), name.clone(), params.clone());
        to_its_end(async move { runtime.registry.call(&name, params, &ctx).await }).await?
    };
    if options.record {
        record_console(&state, &id, &name, outcome_record(&name, Some(&params), &outcome)).await;
    }
    Ok(Json(ToolOutput { ok: true, output: outcome? }))
}

/// Runs `call` on a task of its own, so that a tool call that started runs to its end — a value-moving one through
/// its reservation, signature, broadcast and journal — even when the client that asked goes away and this request's
/// future is dropped.
async fn to_its_end<T: Send + 'static>(call: impl Future<Output = T> + Send + 'static) -> Result<T, ToolError> {
    tokio::spawn(call).await.map_err(|e| ToolError::internal(format!("the call failed unexpectedly: {e}")))
}

#[utoipa::path(get, path = "/api/sessions/{id}/registers", tag = "sessions", params(("id" = String, Path, description = "Session id")), responses((status = 200, description = "Registers with value, origin, writer, age", body = schema::Registers), (status = 404, description = "No such session", body = schema::ErrorBody)))]
pub(crate) async fn registers(State(state): State<Arc<AppState>>, Path(id): Path<String>) -> ApiResult<Registers> {
    let ctx = session(&state, &id).await?;
    let registers = ctx
        .registers
        .snapshot()
        .0
        .into_iter()
        .map(|(key, entry)| {
            let declaration = ctx.registers.declaration(&key);
            let max_age = declaration.as_ref().and_then(|d| d.max_age);
            let age = entry.age();
            let view = RegisterView {
                entry: (*entry).clone(),
                age_secs: age.as_secs_f64(),
                max_age_secs: max_age.map(|a| a.as_secs()),
                stale: max_age.is_some_and(|m| age > m),
                declared: declaration.is_some(),
            };
            (key, view)
        })
        .collect();
    Ok(Json(Registers { registers }))
}

#[utoipa::path(get, path = "/api/sessions/{id}/context-bank", tag = "sessions", params(("id" = String, Path, description = "Session id")), responses((status = 200, description = "Values found in the user's own words", body = schema::ContextBankView), (status = 404, description = "No such session", body = schema::ErrorBody)))]
pub(crate) async fn context_bank(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
) -> ApiResult<ContextBankView> {
    let ctx = session(&state, &id).await?;
    Ok(Json(ContextBankView {
        items: ctx.context_bank.items(),
        latest_message: ctx.context_bank.latest_message(),
        formatted: ctx.context_bank.format_for_agent(),
    }))
}

#[utoipa::path(get, path = "/api/sessions/{id}/confirmations", tag = "confirmations", params(("id" = String, Path, description = "Session id")), responses((status = 200, description = "Actions waiting for the user", body = schema::PendingList), (status = 404, description = "No such session", body = schema::ErrorBody)))]
pub(crate) async fn confirmations(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
) -> ApiResult<PendingList> {
    let ctx = session(&state, &id).await?;
    Ok(Json(PendingList { pending: ctx.confirmations.pending() }))
}

/// The channel of the turn waiting for confirmation `cid`. A turn running in the session may not wait yet: the
/// confirmation is listed as soon as the tool asks, and the turn waits once the call has returned and the session is
/// saved. So while a turn runs, its waiter is given a moment (at most 2 s) to appear before the confirmation is
/// taken for the tool console's.
async fn waiting_turn(state: &AppState, session: &str, cid: &str) -> Option<crate::Waiter> {
    for _ in 0..100 {
        if let Some(tx) = state.waiters.lock().remove(cid) {
            return Some(tx);
        }
        if !state.runtime.turns.is_running(session) {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    None
}

/// Resolves a pending confirmation: an agent turn waiting for it resumes itself; an action started from the tool
/// console is approved and re-run here (or denied).
async fn resolve(state: &AppState, id: &str, cid: &str, decision: ConfirmDecision) -> ApiResult<Resolution> {
    let ctx = session(state, id).await?;
    match ctx.confirmations.get(cid).map(|c| c.state) {
        None => {
            return Err(ApiError::Tool(ToolError::new(
                ErrorCode::ConfirmationNotFound,
                format!("no confirmation {cid:?} in this session"),
            )));
        }
        Some(ConfirmationState::Pending) => {}
        Some(other) => {
            return Err(ApiError::Tool(ToolError::new(
                ErrorCode::ConfirmationNotFound,
                format!("confirmation {cid} is no longer pending (it is {other:?}): nothing was approved or sent"),
            )));
        }
    }
    let approve = decision == ConfirmDecision::Approve;
    tracing::info!(session = id, confirmation = cid, approve, "user decision from the web UI");
    if let Some(tx) = waiting_turn(state, id, cid).await {
        let (taken, was_taken) = oneshot::channel();
        // The turn may be stopped as the decision reaches it: it then withdraws the question, and nothing ran.
        if tx.send((decision, taken)).is_err() || was_taken.await.is_err() {
            return Err(ApiError::Tool(ToolError::new(
                ErrorCode::ConfirmationNotFound,
                format!(
                    "confirmation {cid} was withdrawn (the turn waiting for it stopped, or a newer request replaced it); \
                     nothing was sent"
                ),
            )));
        }
        return Ok(Json(Resolution::Resumed {
            id: cid.to_owned(),
            approved: approve,
            denied: !approve,
            resumed: "agent".to_owned(),
        }));
    }
    let decision = if approve { UserDecision::Approve } else { UserDecision::Deny };
    // The user's decision and what became of it are part of the session's history (shown after a reload).
    let decided = {
        let (runtime, ctx, cid) = (Arc::clone(&state.runtime), ctx.clone(), cid.to_owned());
        to_its_end(async move { runtime.decide(&ctx, UserChannel::WebUi, &cid, decision).await }).await?
    };
    match decided? {
        Decided::Ran(c, outcome) => {
            let mut record = outcome_record(&c.tool, None, &outcome);
            record["decision"] = json!("approved");
            record_console(state, id, &c.tool, record).await;
            Ok(Json(Resolution::Ran(ToolOutput { ok: true, output: outcome? })))
        }
        Decided::Denied(c) => {
            let record = json!({ "tool": c.tool, "ok": false, "decision": "denied",
                "error": { "code": "denied", "message": "you denied it: nothing was signed or sent" } });
            record_console(state, id, &c.tool, record).await;
            Ok(Json(Resolution::Denied { id: c.id, denied: true, tool: c.tool }))
        }
    }
}

#[utoipa::path(post, path = "/api/sessions/{id}/confirmations/{cid}/approve", tag = "confirmations", params(("id" = String, Path, description = "Session id"), ("cid" = String, Path, description = "Confirmation id")), responses((status = 200, description = "Approved: the action ran (its output) or the waiting agent resumed", body = schema::Resolution), (status = 404, description = "No such session or confirmation", body = schema::ErrorBody), (status = 422, description = "The action was refused when re-checked", body = schema::ErrorBody)))]
pub(crate) async fn approve(
    State(state): State<Arc<AppState>>,
    Path((id, cid)): Path<(String, String)>,
) -> ApiResult<Resolution> {
    resolve(&state, &id, &cid, ConfirmDecision::Approve).await
}

#[utoipa::path(post, path = "/api/sessions/{id}/confirmations/{cid}/deny", tag = "confirmations", params(("id" = String, Path, description = "Session id"), ("cid" = String, Path, description = "Confirmation id")), responses((status = 200, description = "Denied", body = schema::Resolution), (status = 404, description = "No such session or confirmation", body = schema::ErrorBody)))]
pub(crate) async fn deny(
    State(state): State<Arc<AppState>>,
    Path((id, cid)): Path<(String, String)>,
) -> ApiResult<Resolution> {
    resolve(&state, &id, &cid, ConfirmDecision::Deny).await
}

/// Whose memory, tasks or reminders.
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct AgentQuery {
    /// The agent (`GET /api/info` lists them); the default agent when absent.
    agent: Option<String>,
}

/// The agent `q` names (the default one without a name), or `404 not_found`.
fn agent_of(state: &AppState, q: QueryOf<AgentQuery>) -> Result<Arc<holdfast_agent::agents::AgentProfile>, ApiError> {
    let axum::extract::Query(q) = q?;
    let name = q.agent.as_deref().unwrap_or(holdfast_agent::AGENT_ID);
    state.runtime.profile(name).ok_or_else(|| {
        ApiError::Tool(ToolError::new(
            ErrorCode::NotFound,
            format!("no agent {:?} (GET /api/info lists them)", name.chars().take(64).collect::<String>()),
        ))
    })
}

#[utoipa::path(get, path = "/api/memory", tag = "memory", params(AgentQuery), responses((status = 200, description = "The agent's memory blocks", body = schema::MemoryList), (status = 404, description = "No such agent", body = schema::ErrorBody)))]
pub(crate) async fn memory(State(state): State<Arc<AppState>>, q: QueryOf<AgentQuery>) -> ApiResult<MemoryList> {
    let agent = agent_of(&state, q)?;
    let blocks = agent.handle.memory.blocks().await.map_err(internal)?;
    Ok(Json(MemoryList { agent: agent.name.clone(), blocks }))
}

#[utoipa::path(get, path = "/api/tasks", tag = "memory", params(AgentQuery), responses((status = 200, description = "The agent's tasks", body = schema::TaskList), (status = 404, description = "No such agent", body = schema::ErrorBody)))]
pub(crate) async fn tasks(State(state): State<Arc<AppState>>, q: QueryOf<AgentQuery>) -> ApiResult<TaskList> {
    let agent = agent_of(&state, q)?;
    let tasks = agent.handle.tasks.list(TaskFilter { status: None, include_done: true }).await.map_err(internal)?;
    Ok(Json(TaskList { agent: agent.name.clone(), tasks }))
}

#[utoipa::path(get, path = "/api/reminders", tag = "memory", params(AgentQuery), responses((status = 200, description = "The agent's reminders", body = schema::ReminderList), (status = 404, description = "No such agent", body = schema::ErrorBody)))]
pub(crate) async fn reminders(State(state): State<Arc<AppState>>, q: QueryOf<AgentQuery>) -> ApiResult<ReminderList> {
    let agent = agent_of(&state, q)?;
    let reminders = agent.handle.reminders.list(true).await.map_err(internal)?;
    Ok(Json(ReminderList { agent: agent.name.clone(), reminders }))
}

/// Any `/api/*` path no route serves: `404 not_found` in the API's error shape.
pub(crate) async fn no_route(method: axum::http::Method, OriginalUri(uri): OriginalUri) -> ApiError {
    ApiError::Tool(ToolError::new(ErrorCode::NotFound, format!("no API route {method} {}", uri.path())))
}

/// A route asked with a method it does not take: `405` in the API's error shape.
pub(crate) async fn wrong_method(method: axum::http::Method, OriginalUri(uri): OriginalUri) -> ApiError {
    ApiError::Unreadable {
        status: StatusCode::METHOD_NOT_ALLOWED,
        message: format!("{method} is not a method of {} (GET /api/openapi.json lists each route's)", uri.path()),
    }
}

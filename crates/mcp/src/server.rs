//! [`HoldfastMcp`]: one MCP session, served over any transport, as one persisted holdfast session.
//!
//! The holdfast session (`runtime.open_session("mcp")`: its own registers, context bank, confirmations, memory hooks
//! and journal) is opened on the session's first use of state — a tool call, a prompt, a resource read or
//! subscription — so a client that only lists tools leaves no empty session behind; it lives as long as the MCP
//! session. Tool calls, the user's prompts and confirmation decisions are appended to the session's history in the
//! session store, like any other front end's.

use crate::confirm;
use crate::prompts::{self, MAX_USER_TEXT, USER_REQUEST_PROMPT};
use crate::resources::{self, Subscriptions};
use crate::tools;
use holdfast_agent::{MessageRole, NewMessage, Runtime, ToolCallRecord};
use holdfast_core::confirm::CONFIRMATION_TTL;
use holdfast_core::{ToolContext, ToolError, UserChannel, UserDecision};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CompleteRequestParams, CompleteResult, CompletionInfo, CustomRequest,
    CustomResult, ErrorCode as RpcCode, GetPromptRequestParams, GetPromptResponse, GetPromptResult, Implementation,
    InitializeResult, ListPromptsResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams, PromptMessage,
    ProtocolVersion, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, Reference, ResourceContents,
    Role, ServerCapabilities, ServerConfig, SubscribeRequestParams, UnsubscribeRequestParams,
};
use rmcp::service::{ElicitationMode, RequestContext};
use rmcp::{ErrorData, Peer, RoleServer, ServerHandler};
use serde_json::{Value, json};
use std::borrow::Cow;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio::sync::OnceCell;

/// What the server tells the client (and its model) about itself at initialization.
pub const INSTRUCTIONS: &str = "\
holdfast is an agent runtime where the model names values and never carries them. Values that move funds travel \
through registers (see the holdfast://session/registers resource); tools take register and preset names.
- The user's request comes in through the `user_request` prompt: its addresses, tokens and amounts go into the \
session's context bank, so `to_raw_amount` can mark an amount the user wrote with origin `user`.
- A swap: local_burner_wallet (address → wallet_address), token_lookup (→ sell_token, buy_token), to_raw_amount \
(→ sell_amount), x402_fetch preset swap_quote (→ swap_quote), then web3_tx from_register swap_quote.
- A value-moving action may need the user's approval: the client asks the user directly (elicitation), or the \
result is `confirmation_required` and the user approves with the `holdfast_confirm` prompt. Never try to approve \
on the user's behalf.
- Errors carry a stable `code` and a message naming the offending field.";

/// The protocol versions served: every revision with an `initialize` handshake, up to 2025-11-25 (the revisions in
/// which a server may ask the client for elicitation during a tool call).
pub fn supported_versions() -> &'static [ProtocolVersion] {
    ProtocolVersion::known_up_to(&ProtocolVersion::V_2025_11_25)
}

/// One open holdfast session.
#[derive(Debug, Clone)]
struct Session {
    id: String,
    ctx: ToolContext,
}

/// The MCP server handler for one MCP session.
pub struct HoldfastMcp {
    runtime: Arc<Runtime>,
    session: OnceCell<Session>,
    subscriptions: Subscriptions,
    forwarder: parking_lot::Mutex<Option<tokio::task::AbortHandle>>,
    calls: AtomicU64,
}

impl std::fmt::Debug for HoldfastMcp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HoldfastMcp").field("session", &self.session_id()).finish_non_exhaustive()
    }
}

impl Drop for HoldfastMcp {
    fn drop(&mut self) {
        if let Some(task) = self.forwarder.lock().take() {
            task.abort();
        }
        if let Some(id) = self.session_id() {
            self.runtime.close_session(&id);
        }
    }
}

fn rpc_error(code: RpcCode, error: &ToolError) -> ErrorData {
    ErrorData::new(code, format!("{}: {}", error.code, error.message), Some(tools::error_json(error)))
}

impl HoldfastMcp {
    /// A handler serving `runtime`'s registry; its holdfast session opens on first use.
    pub fn new(runtime: Arc<Runtime>) -> Self {
        Self {
            runtime,
            session: OnceCell::new(),
            subscriptions: Subscriptions::default(),
            forwarder: parking_lot::Mutex::new(None),
            calls: AtomicU64::new(0),
        }
    }

    /// The holdfast session id, once opened.
    pub fn session_id(&self) -> Option<String> {
        self.session.get().map(|s| s.id.clone())
    }

    async fn session(&self, peer: &Peer<RoleServer>) -> Result<&Session, ErrorData> {
        self.session
            .get_or_try_init(|| async {
                let (info, ctx) =
                    self.runtime.open_session("mcp").await.map_err(|e| rpc_error(RpcCode::INTERNAL_ERROR, &e))?;
                let task = tokio::spawn(resources::forward_updates(
                    ctx.events.subscribe(),
                    peer.clone(),
                    Arc::clone(&self.subscriptions),
                ));
                *self.forwarder.lock() = Some(task.abort_handle());
                tracing::info!(session = %info.id, "MCP session opened");
                Ok(Session { id: info.id, ctx })
            })
            .await
    }

    async fn record(&self, session: &Session, message: NewMessage) {
        if let Err(e) = self.runtime.sessions.append(&session.id, message).await {
            tracing::warn!(session = %session.id, "could not record the session history: {e}");
        }
    }

    /// Runs one registry call and records it (call and result) in the session's history.
    async fn run_tool(&self, session: &Session, name: &str, params: Value) -> Result<Value, ToolError> {
        let call_id = format!("mcp_{}", self.calls.fetch_add(1, Ordering::Relaxed) + 1);
        let call = ToolCallRecord { id: call_id.clone(), name: name.to_owned(), arguments: params.clone() };
        self.record(session, NewMessage { tool_calls: vec![call], ..NewMessage::text(MessageRole::Assistant, "") })
            .await;
        let result = self.runtime.registry.call(name, params, &session.ctx).await;
        let content = match &result {
            Ok(output) => output.to_string(),
            Err(error) => format!("{}\n{}", tools::error_text(error), tools::error_json(error)),
        };
        let message = NewMessage {
            tool_call_id: Some(call_id),
            name: Some(name.to_owned()),
            ..NewMessage::text(MessageRole::Tool, content)
        };
        self.record(session, message).await;
        result
    }

    /// Runs a tool call; a `confirmation_required` outcome goes to the user (elicitation) or comes back with
    /// instructions (see [`crate::confirm`]).
    async fn call(
        &self,
        session: &Session,
        peer: &Peer<RoleServer>,
        name: &str,
        params: Value,
    ) -> Result<Value, ToolError> {
        let error = match self.run_tool(session, name, params).await {
            Err(error) => error,
            done => return done,
        };
        let pending = confirm::confirmation_id(&error).and_then(|id| session.ctx.confirmations.get(&id));
        let Some(pending) = pending else { return Err(error) };
        let id = pending.id.clone();
        if !peer.supported_elicitation_modes().contains(&ElicitationMode::Form) {
            return Err(confirm::with_instructions(error, &id));
        }
        let request = confirm::elicitation(&pending)?;
        let answer = match peer.create_elicitation_with_timeout(request, Some(CONFIRMATION_TTL)).await {
            Ok(answer) => answer,
            Err(e) => {
                tracing::warn!(confirmation = %id, "elicitation failed, the confirmation stays pending: {e}");
                return Err(confirm::with_instructions(error, &id));
            }
        };
        if !confirm::approved(&answer) {
            let how = confirm::refusal(&answer);
            // The human declined or cancelled the form: a user decision. Already resolved (expired): not approved either.
            let _ = self.runtime.decide(&session.ctx, UserChannel::McpElicitation, &id, UserDecision::Deny).await;
            self.record(
                session,
                NewMessage::text(MessageRole::System, format!("the user {how} {id} (MCP elicitation)")),
            )
            .await;
            return Err(confirm::denied(&pending, how));
        }
        let approved = self.runtime.services.user_decisions().decide(
            &session.ctx.confirmations,
            UserChannel::McpElicitation,
            &id,
            UserDecision::Approve,
        )?;
        self.record(
            session,
            NewMessage::text(MessageRole::System, format!("the user approved {id} (MCP elicitation)")),
        )
        .await;
        match self.run_tool(session, &approved.tool, approved.params.clone()).await {
            // The action changed between the request and the approval: the user is asked again next time.
            Err(again) => match confirm::confirmation_id(&again) {
                Some(new_id) => Err(confirm::with_instructions(again, &new_id)),
                None => Err(again),
            },
            ok => ok,
        }
    }

    async fn user_request(&self, session: &Session, text: String) -> Result<GetPromptResult, ErrorData> {
        if text.len() > MAX_USER_TEXT {
            return Err(ErrorData::invalid_params(
                format!("argument `text` is {} bytes; at most {MAX_USER_TEXT} are accepted", text.len()),
                None,
            ));
        }
        session.ctx.context_bank.scan_input(&text);
        self.record(session, NewMessage::text(MessageRole::User, text.clone())).await;
        let found = session.ctx.context_bank.format_for_agent().unwrap_or_else(|| "nothing yet".to_owned());
        Ok(GetPromptResult::new(vec![PromptMessage::new_text(Role::User, text)])
            .with_description(format!("Your request. The session's context bank holds:\n{found}")))
    }

    async fn resolve_prompt(&self, session: &Session, id: &str, approve: bool) -> Result<GetPromptResult, ErrorData> {
        let ctx = &session.ctx;
        // A prompt is the MCP client's call, not the user's word: it may withdraw an action, never approve one.
        if approve {
            let refused = ToolError::new(
                holdfast_core::ErrorCode::ConfirmationRequired,
                format!("`confirmation_id`: {id} can be approved only by the user (elicitation), not by the client"),
            );
            return Err(rpc_error(RpcCode::INVALID_PARAMS, &refused));
        }
        let confirmation = ctx
            .confirmations
            .get(id)
            .filter(|c| c.state == holdfast_core::confirm::ConfirmationState::Pending)
            .ok_or_else(|| {
                rpc_error(
                    RpcCode::INVALID_PARAMS,
                    &ToolError::new(
                        holdfast_core::ErrorCode::ConfirmationNotFound,
                        format!("no pending confirmation {id:?}"),
                    ),
                )
            })?;
        ctx.confirmations.withdraw(id);
        let action = confirm::describe_action(&confirmation.summary);
        let verb = if approve { "approved" } else { "rejected" };
        self.record(session, NewMessage::text(MessageRole::System, format!("the user {verb} {id} (MCP prompt)"))).await;
        let text = if approve {
            let outcome = match self.run_tool(session, &confirmation.tool, confirmation.params.clone()).await {
                Ok(output) => format!("Result: {output}"),
                Err(error) => format!("It did not go through: {}", tools::error_text(&error)),
            };
            format!("I approved `{}` (confirmation {id}):\n{action}\n\n{outcome}", confirmation.tool)
        } else {
            format!(
                "I rejected `{}` (confirmation {id}); nothing was signed or sent. Do not retry it:\n{action}",
                confirmation.tool
            )
        };
        Ok(GetPromptResult::new(vec![PromptMessage::new_text(Role::User, text)])
            .with_description(format!("You {verb} a value-moving action")))
    }
}

impl ServerHandler for HoldfastMcp {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_completions()
            .enable_tools()
            .enable_prompts()
            .enable_resources()
            .enable_resources_subscribe()
            .build();
        let mut implementation = Implementation::new("holdfast", env!("CARGO_PKG_VERSION"));
        implementation.title = Some("holdfast".to_owned());
        InitializeResult::new(capabilities)
            .with_protocol_version(ProtocolVersion::V_2025_11_25)
            .with_server_info(implementation)
            .with_instructions(INSTRUCTIONS)
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(supported_versions())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.runtime.registry.list().iter().map(tools::to_mcp_tool).collect()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let session = self.session(&context.peer).await?;
        let params = Value::Object(request.arguments.unwrap_or_default());
        let result = self.call(session, &context.peer, &request.name, params).await;
        Ok(tools::to_call_result(&result).into())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        Ok(ListPromptsResult::with_all_items(prompts::list()))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let session = self.session(&context.peer).await?;
        let args = request.arguments.as_ref();
        let result = match request.name.as_str() {
            USER_REQUEST_PROMPT => self.user_request(session, prompts::required_arg(args, "text")?).await?,
            confirm::CONFIRM_PROMPT => {
                self.resolve_prompt(session, &prompts::required_arg(args, "confirmation_id")?, true).await?
            }
            confirm::DENY_PROMPT => {
                self.resolve_prompt(session, &prompts::required_arg(args, "confirmation_id")?, false).await?
            }
            other => return Err(ErrorData::invalid_params(format!("no prompt named {other:?}"), None)),
        };
        Ok(result.into())
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        let session = self.session(&context.peer).await?;
        let values: Vec<String> = match &request.r#ref {
            Reference::Prompt(prompt)
                if [confirm::CONFIRM_PROMPT, confirm::DENY_PROMPT].contains(&prompt.name.as_str())
                    && request.argument.name == "confirmation_id" =>
            {
                let typed = request.argument.value.trim();
                let pending = session.ctx.confirmations.pending().into_iter().rev().map(|c| c.id);
                pending.filter(|id| id.starts_with(typed)).take(CompletionInfo::MAX_VALUES).collect()
            }
            _ => Vec::new(),
        };
        let info = CompletionInfo::new(values).map_err(|e| ErrorData::internal_error(e, None))?;
        Ok(CompleteResult::new(info))
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(ListResourcesResult::with_all_items(resources::list()))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let session = self.session(&context.peer).await?;
        let Some(content) = resources::read(&request.uri, &session.ctx) else {
            return Err(ErrorData::resource_not_found(
                format!("no resource {:?}", request.uri),
                Some(json!({"uri": request.uri})),
            ));
        };
        let contents = ResourceContents::text(content.to_string(), request.uri).with_mime_type("application/json");
        Ok(ReadResourceResult::new(vec![contents]).into())
    }

    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        Err(ErrorData::new(
            RpcCode::METHOD_NOT_FOUND,
            format!("Method not found: {}", request.method),
            Some(json!({"method": request.method})),
        ))
    }

    #[allow(deprecated)]
    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.session(&context.peer).await?;
        if !resources::ALL_URIS.contains(&request.uri.as_str()) {
            return Err(ErrorData::resource_not_found(
                format!("no resource {:?}", request.uri),
                Some(json!({"uri": request.uri})),
            ));
        }
        self.subscriptions.lock().insert(request.uri);
        Ok(())
    }

    #[allow(deprecated)]
    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.subscriptions.lock().remove(&request.uri);
        Ok(())
    }
}

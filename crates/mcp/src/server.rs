//! [`HoldfastMcp`]: one MCP session, served over any transport, as one persisted holdfast session.
//!
//! The holdfast session (`runtime.open_session("mcp")`: its own registers, context bank and confirmations; memory,
//! tasks, reminders, the wallet, the caps and the journal are the runtime's, shared with every other session) is
//! opened on the session's first use of state — a tool call, a prompt, a resource read or subscription — so a client
//! that only lists tools leaves no empty session behind; it lives as long as the MCP session. Tool calls, the
//! user's confirmed requests and confirmation decisions are appended to the session's history in the session store,
//! like any other front end's.
//!
//! **Trust boundary.** The MCP client is the model's host, not the user. Nothing it sends is the user's word or the
//! user's decision; only an elicitation the human answered is (`UserChannel::McpElicitation`). Hence: no prompt,
//! tool, completion or resource approves a confirmation ([`crate::confirm`]), and `user_request`'s text reaches the
//! context bank only as the human submitted it in an elicitation form ([`crate::prompts`]).

use crate::confirm;
use crate::prompts::{self, MAX_USER_TEXT, USER_REQUEST_PROMPT};
use crate::resources::{self, Subscriptions};
use crate::tools;
use holdfast_agent::{MessageRole, NewMessage, Runtime, ToolCallRecord};
use holdfast_core::CancellationToken;
use holdfast_core::confirm::{CONFIRMATION_TTL, TurnStarter};
use holdfast_core::{Confirmation, ToolContext, ToolError, UserChannel, UserDecision};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CustomRequest, CustomResult, ErrorCode as RpcCode, GetPromptRequestParams,
    GetPromptResponse, GetPromptResult, Implementation, InitializeResult, ListPromptsResult, ListResourcesResult,
    ListToolsResult, PaginatedRequestParams, PromptMessage, ProtocolVersion, ReadResourceRequestParams,
    ReadResourceResponse, ReadResourceResult, ResourceContents, Role, ServerCapabilities, ServerConfig,
    SubscribeRequestParams, UnsubscribeRequestParams,
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
- The user's request comes in through the `user_request` prompt. When the client supports elicitation, holdfast \
asks the user to confirm it; only then do its addresses, tokens and amounts go into the session's context bank, so \
`to_raw_amount` can mark an amount the user wrote with origin `user`.
- A swap: local_burner_wallet (address → wallet_address), token_lookup (→ sell_token, buy_token), to_raw_amount \
(→ sell_amount), x402_fetch preset swap_quote (→ swap_quote), then web3_tx from_register swap_quote.
- A value-moving action outside the auto-approve limits, or with a model-typed input, needs the user's approval: \
holdfast asks the user directly through elicitation. An MCP client cannot approve anything; without elicitation such \
a call fails with `confirmation_unavailable` and the user must run it from `holdfast chat` or the web UI. A server \
configured not to trust forms (`[mcp] trust_elicitation = false`) sends none: the request stays the client's text and \
every such action fails the same way.
- Errors carry a stable `code` and a message naming the offending field.";

/// How many times one tool call asks the user: again only when the action changed between the request and the
/// approval (the approval did not match its fingerprint).
const MAX_ASKS: usize = 3;

/// The protocol versions served: every revision with an `initialize` handshake, up to 2025-11-25 (the revisions in
/// which a server may ask the client for elicitation during a tool call).
pub fn supported_versions() -> &'static [ProtocolVersion] {
    ProtocolVersion::known_up_to(&ProtocolVersion::V_2025_11_25)
}

/// Who starts an MCP call's turn when `[mcp] trust_elicitation = false` (`TurnStarter::Other`).
const UNTRUSTED_CLIENT: &str =
    "an MCP client this server does not trust with the user's answers ([mcp] trust_elicitation = false)";

/// Why no form is sent when `[mcp] trust_elicitation = false`.
const UNTRUSTED: &str =
    "this server does not take an MCP client's forms as the user's answers ([mcp] trust_elicitation = false)";

/// One open holdfast session.
#[derive(Debug, Clone)]
struct Session {
    id: String,
    ctx: ToolContext,
    /// The client that opened it: its token's name over HTTP ([`holdfast_agent::access::clients`]), `stdio` for
    /// the process that started `holdfast mcp`. Its human is the one behind this client's forms.
    client: String,
}

/// The MCP server handler for one MCP session.
pub struct HoldfastMcp {
    runtime: Arc<Runtime>,
    /// `[mcp] trust_elicitation`: whether an answered form counts as the user's.
    trust_elicitation: bool,
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
        // Read from the runtime's configuration, which `holdfast mcp` has checked; one that does not read trusts no
        // form.
        let trust_elicitation =
            crate::McpSection::from_document(&runtime.document).is_ok_and(|section| section.trust_elicitation);
        Self {
            runtime,
            trust_elicitation,
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

    async fn session(&self, context: &RequestContext<RoleServer>) -> Result<&Session, ErrorData> {
        let peer = &context.peer;
        self.session
            .get_or_try_init(|| async {
                let internal = |e: ToolError| rpc_error(RpcCode::INTERNAL_ERROR, &e);
                // Over HTTP, the MCP session id links this MCP session to its holdfast session, so a server restarted
                // on the same data dir picks up the session the client is still in (see `crate::links`).
                let mcp_id = crate::links::mcp_session_id(context);
                let linked = match &mcp_id {
                    Some(mcp_id) => crate::links::linked_session(&self.runtime, mcp_id).await.map_err(internal)?,
                    None => None,
                };
                let (id, ctx) = match linked {
                    Some(restored) => restored,
                    None => {
                        let (info, ctx) = self.runtime.open_session("mcp").await.map_err(internal)?;
                        if let Some(mcp_id) = &mcp_id {
                            crate::links::link(&self.runtime, mcp_id, &info.id).await.map_err(internal)?;
                        }
                        (info.id, ctx)
                    }
                };
                let task = tokio::spawn(resources::forward_updates(
                    ctx.events.subscribe(),
                    peer.clone(),
                    Arc::clone(&self.subscriptions),
                ));
                *self.forwarder.lock() = Some(task.abort_handle());
                let client = crate::links::principal(context).unwrap_or_else(|| "stdio".to_owned());
                tracing::info!(session = %id, client = %client, "MCP session opened");
                Ok(Session { id, ctx, client })
            })
            .await
    }

    async fn record(&self, session: &Session, message: NewMessage) {
        if let Err(e) = self.runtime.sessions.append(&session.id, message).await {
            tracing::warn!(session = %session.id, "could not record the session history: {e}");
        }
    }

    /// Records a tool call in the session's history; returns its call id.
    async fn record_call(&self, session: &Session, name: &str, params: &Value) -> String {
        let call_id = format!("mcp_{}", self.calls.fetch_add(1, Ordering::Relaxed) + 1);
        let call = ToolCallRecord { id: call_id.clone(), name: name.to_owned(), arguments: params.clone() };
        self.record(session, NewMessage { tool_calls: vec![call], ..NewMessage::text(MessageRole::Assistant, "") })
            .await;
        call_id
    }

    /// Records a tool call's result in the session's history.
    async fn record_result(&self, session: &Session, call_id: String, name: &str, result: &Result<Value, ToolError>) {
        let content = match result {
            Ok(output) => output.to_string(),
            Err(error) => format!("{}\n{}", tools::error_text(error), tools::error_json(error)),
        };
        let message = NewMessage {
            tool_call_id: Some(call_id),
            name: Some(name.to_owned()),
            ..NewMessage::text(MessageRole::Tool, content)
        };
        self.record(session, message).await;
    }

    /// Runs one registry call and records it (call and result) in the session's history. The client's
    /// `notifications/cancelled` for the request (`cancel`) stops the tool where it has written nothing.
    async fn run_tool(
        &self,
        session: &Session,
        name: &str,
        params: Value,
        cancel: &CancellationToken,
    ) -> Result<Value, ToolError> {
        let call_id = self.record_call(session, name, &params).await;
        let ctx = session.ctx.with_cancel(cancel.clone());
        // Nothing over MCP is the user's when its forms are not trusted: the kernel refuses a payment (it has no
        // confirmation step) and asks the user, elsewhere, about every other action, as for a turn another agent
        // started. Set on this call's own context: a turn the web UI runs on the session meanwhile does not change it.
        let ctx = if self.trust_elicitation {
            ctx
        } else {
            ctx.with_extension(TurnStarter::Other(UNTRUSTED_CLIENT.to_owned()))
        };
        let result = self.runtime.registry.call(name, params, &ctx).await;
        self.record_result(session, call_id, name, &result).await;
        result
    }

    /// Runs a tool call; a `confirmation_required` outcome goes to the user through elicitation, the only user
    /// channel over MCP, or — when the client cannot ask the user — is withdrawn and becomes
    /// `confirmation_unavailable` (see [`crate::confirm`]).
    async fn call(
        &self,
        session: &Session,
        peer: &Peer<RoleServer>,
        name: &str,
        params: Value,
        cancel: &CancellationToken,
    ) -> Result<Value, ToolError> {
        let mut outcome = self.run_tool(session, name, params, cancel).await;
        for asked in 0..=MAX_ASKS {
            let error = match outcome {
                Err(error) => error,
                done => return done,
            };
            let pending = confirm::confirmation_id(&error).and_then(|id| session.ctx.confirmations.get(&id));
            let Some(pending) = pending else { return Err(error) };
            if asked == MAX_ASKS {
                let why = format!("the action changed each of the {MAX_ASKS} times the user approved it");
                return Err(self.unavailable(session, &pending, &why).await);
            }
            outcome = self.ask_user(session, peer, &pending).await;
        }
        outcome
    }

    /// Asks the user about `pending` through elicitation: approved → the call runs once (its outcome, which may be a
    /// new `confirmation_required` if the action changed meanwhile); declined → `confirmation_denied`; no
    /// elicitation or a failed one → withdrawn, `confirmation_unavailable`.
    async fn ask_user(
        &self,
        session: &Session,
        peer: &Peer<RoleServer>,
        pending: &Confirmation,
    ) -> Result<Value, ToolError> {
        let id = pending.id.as_str();
        if !self.trust_elicitation {
            return Err(self.unavailable(session, pending, UNTRUSTED).await);
        }
        if !peer.supported_elicitation_modes().contains(&ElicitationMode::Form) {
            let why = "this MCP client does not support elicitation (form mode), so holdfast cannot ask the user (an MCP \
                       client that supports it could)";
            return Err(self.unavailable(session, pending, why).await);
        }
        let request = match confirm::elicitation(pending) {
            Ok(request) => request,
            Err(e) => return Err(self.unavailable(session, pending, &e.message).await),
        };
        let answer = match peer.create_elicitation_with_timeout(request, Some(CONFIRMATION_TTL)).await {
            Ok(answer) => answer,
            Err(e) => {
                tracing::warn!(confirmation = %id, "elicitation failed, the confirmation is withdrawn: {e}");
                let why = format!("asking the user through elicitation failed ({e})");
                return Err(self.unavailable(session, pending, &why).await);
            }
        };
        let ctx = &session.ctx;
        if !confirm::approved(&answer) {
            let how = confirm::refusal(&answer);
            // The human declined or cancelled the form: a user decision. Already settled (expired): not approved either.
            let _ = self.runtime.decide(ctx, UserChannel::McpElicitation, id, UserDecision::Deny).await;
            self.record(
                session,
                NewMessage::text(
                    MessageRole::System,
                    format!("the user {how} {id} (MCP elicitation, client `{}`)", session.client),
                ),
            )
            .await;
            return Err(confirm::denied(pending, how));
        }
        self.record(
            session,
            NewMessage::text(
                MessageRole::System,
                format!("the user approved {id} (MCP elicitation, client `{}`)", session.client),
            ),
        )
        .await;
        let call_id = self.record_call(session, &pending.tool, &pending.params).await;
        let outcome = match self.runtime.decide(ctx, UserChannel::McpElicitation, id, UserDecision::Approve).await {
            Ok(decided) => decided.into_result(),
            Err(error) => Err(error),
        };
        self.record_result(session, call_id, &pending.tool, &outcome).await;
        outcome
    }

    /// Withdraws `pending` (nothing can approve it any more), notes it in the history, and returns
    /// `confirmation_unavailable` saying `why` and where to run the action instead.
    async fn unavailable(&self, session: &Session, pending: &Confirmation, why: &str) -> ToolError {
        // The event carries fixed words: `why` may hold a client's error text, which is kept for the history below.
        session.ctx.confirmations.withdraw(&pending.id, "no user could be asked about it over MCP");
        if let Err(e) = session.ctx.persist().await {
            tracing::error!(session = %session.id, "the withdrawn confirmation could not be saved: {e}");
        }
        let note = format!("{} withdrawn: {why} (MCP)", pending.id);
        self.record(session, NewMessage::text(MessageRole::System, note)).await;
        confirm::unavailable(pending, why)
    }

    /// The `user_request` prompt: asks the human to confirm the request (elicitation) and scans only what they
    /// submitted; otherwise records the client's text as the client's and scans nothing (see [`crate::prompts`]).
    async fn user_request(
        &self,
        session: &Session,
        peer: &Peer<RoleServer>,
        text: String,
    ) -> Result<GetPromptResult, ErrorData> {
        if text.len() > MAX_USER_TEXT {
            return Err(ErrorData::invalid_params(
                format!("argument `text` is {} bytes; at most {MAX_USER_TEXT} are accepted", text.len()),
                None,
            ));
        }
        let confirmed: Result<String, String> = if !self.trust_elicitation {
            Err(UNTRUSTED.to_owned())
        } else if peer.supported_elicitation_modes().contains(&ElicitationMode::Form) {
            let request = prompts::request_elicitation(&text)?;
            match peer.create_elicitation_with_timeout(request, Some(CONFIRMATION_TTL)).await {
                Ok(answer) => prompts::submitted_request(&answer)?.map_err(str::to_owned),
                Err(e) => {
                    tracing::warn!(session = %session.id, "user_request: elicitation failed: {e}");
                    Err(format!("asking the user to confirm it failed ({e})"))
                }
            }
        } else {
            Err("this MCP client does not support elicitation, so holdfast could not ask the user to confirm it".into())
        };
        let ctx = &session.ctx;
        match confirmed {
            Ok(words) => {
                // The human's own words, through a user channel: the only text over MCP the context bank reads.
                if let Err(e) = ctx.scan_user_input(&words).await {
                    tracing::error!("the session state could not be saved: {e}");
                }
                self.record(session, NewMessage::text(MessageRole::User, words.clone())).await;
                let found = ctx.context_bank.format_for_agent().unwrap_or_else(|| "nothing yet".to_owned());
                Ok(GetPromptResult::new(vec![PromptMessage::new_text(Role::User, words)]).with_description(format!(
                    "Your request, as you confirmed it. The session's context bank holds:\n{found}"
                )))
            }
            Err(why) => {
                let note = format!(
                    "the MCP client sent this as the user's request; it was not confirmed by the user ({why}) and \
                     was not scanned into the context bank:\n{text}"
                );
                self.record(session, NewMessage::text(MessageRole::System, note)).await;
                let said = format!(
                    "holdfast: this request was not confirmed by the user ({why}), so nothing in it counts as the \
                     user's own words: amounts and addresses taken from it have origin `model`, and a value-moving \
                     action that uses them needs the user's approval. {}",
                    confirm::RUN_IT_ELSEWHERE
                );
                let messages =
                    vec![PromptMessage::new_text(Role::User, text), PromptMessage::new_text(Role::Assistant, said)];
                Ok(GetPromptResult::new(messages).with_description(format!(
                    "Not confirmed by the user ({why}): recorded as the client's text; nothing was added to the \
                     context bank."
                )))
            }
        }
    }
}

impl ServerHandler for HoldfastMcp {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
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
        let session = self.session(&context).await?;
        let params = Value::Object(request.arguments.unwrap_or_default());
        let result = self.call(session, &context.peer, &request.name, params, &context.ct).await;
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
        let session = self.session(&context).await?;
        let args = request.arguments.as_ref();
        let result = match request.name.as_str() {
            USER_REQUEST_PROMPT => {
                self.user_request(session, &context.peer, prompts::required_arg(args, "text")?).await?
            }
            other => {
                return Err(ErrorData::invalid_params(
                    format!(
                        "no prompt named {other:?}: holdfast's only prompt is `{USER_REQUEST_PROMPT}`; no prompt \
                         approves or rejects an action (the user decides in the elicitation form)"
                    ),
                    None,
                ));
            }
        };
        Ok(result.into())
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
        let session = self.session(&context).await?;
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
        self.session(&context).await?;
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

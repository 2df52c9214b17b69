//! The tool loop: a user message → context bank scan → system context (base instructions, active skills, memory
//! blocks, context bank, register summary) → model call → tool calls through the registry, in order → repeat until
//! the model answers without tool calls, a step limit, a repeated call, or cancellation.
//!
//! A failing tool's coded error goes back to the model as the tool result. A `confirmation_required` pauses that
//! action and asks the user through the [`TurnObserver`]; approval re-runs the same call, denial is reported to the
//! model as `confirmation_denied`. History, tool calls and results are persisted per session.

use crate::agents::AgentProfile;
use crate::llm::{ChatProvider, ChatRequest, LlmError, StreamDelta, ToolCall, ToolSpec, Usage};
use crate::runtime::Runtime;
use crate::sessions::{MessageRole, NewMessage, ToolCallRecord};
use crate::skills::{ActiveSkills, SkillSet};
use holdfast_core::confirm::Confirmation;
use holdfast_core::confirm::TurnStarter;
use holdfast_core::event::{AgentMessage, EventPayload};
use holdfast_core::tool::BoxFuture;
use holdfast_core::{ErrorCode, ToolContext, ToolError, ToolKind, UserChannel, UserDecision};
use serde::Serialize;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::Arc;

/// The base instructions every session starts from.
pub const BASE_INSTRUCTIONS: &str = "You are holdfast, an assistant that can act on the user's behalf with tools.\n\
Values that move funds — addresses, amounts, calldata, URLs — travel between tools in named registers. You pass \
register names and preset names; never type such a value yourself. Take addresses, token symbols, networks and \
amounts from the context bank below: it holds exactly what the user wrote. When a tool returns an error, read its \
code and message and correct course; do not retry the same call unchanged. When an action waits for the user's \
approval, say what it will do and wait. Load a skill with `use_skill` before a task it covers (for swaps: `swap`).";

/// Loop limits.
#[derive(Debug, Clone)]
pub struct AgentConfig {
    /// Most model calls per user message.
    pub max_steps: usize,
    /// How many times the same call (tool and arguments) may run in one turn before the loop stops.
    pub max_identical_calls: usize,
    /// Most tokens per model call.
    pub max_tokens: u32,
    /// The base instructions.
    pub instructions: String,
    /// Most turns the inbox starts per minute (messages from agents, groups, channels, reminders); more wait.
    pub inbox_turns_per_minute: u32,
    /// Estimated tokens of history a request may carry before older turns are summarized into memory (0: no
    /// limit; see [`crate::window`]).
    pub history_token_budget: usize,
}

impl Default for AgentConfig {
    fn default() -> Self {
        Self {
            max_steps: 12,
            max_identical_calls: 2,
            max_tokens: 2048,
            instructions: BASE_INSTRUCTIONS.to_owned(),
            inbox_turns_per_minute: 6,
            history_token_budget: crate::window::DEFAULT_HISTORY_TOKEN_BUDGET,
        }
    }
}

/// What the user decided about a pending action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfirmDecision {
    /// Run it.
    Approve,
    /// Do not run it.
    Deny,
    /// No answer now; leave it pending (the model is told it waits).
    Defer,
}

/// Watches a turn as it happens. Every method has a no-op default.
pub trait TurnObserver: Send + Sync {
    /// A piece of the model's text.
    fn on_text(&self, _delta: &str) {}
    /// A tool call is about to run.
    fn on_tool_call(&self, _name: &str, _arguments: &str) {}
    /// A tool call finished.
    fn on_tool_result(&self, _name: &str, _result: &Result<Value, ToolError>) {}
    /// An action waits for the user's approval.
    fn confirm<'a>(&'a self, _confirmation: &'a Confirmation) -> BoxFuture<'a, ConfirmDecision> {
        Box::pin(async { ConfirmDecision::Defer })
    }
    /// The user channel this observer's decisions come from (the terminal, the authenticated UI). `None` — the
    /// default — means it is no user channel: its approvals and denials are ignored and the action stays pending.
    fn channel(&self) -> Option<UserChannel> {
        None
    }
}

/// An observer that watches nothing and defers every confirmation.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoObserver;

impl TurnObserver for NoObserver {}

/// Cancels a running turn, and the tool call in flight in it (each call sees it as `ToolContext::cancel`). Clones
/// share the signal.
pub type CancelToken = holdfast_core::CancellationToken;

/// Why a turn stopped before the model finished.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The step limit was reached.
    StepLimit,
    /// The model repeated an identical call.
    RepeatedCall,
    /// The turn was cancelled.
    Cancelled,
}

/// The result of one user message.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct TurnOutcome {
    /// The model's final text (or the runtime's note when it stopped the loop).
    pub text: String,
    /// Model calls made.
    pub steps: usize,
    /// Tool calls run.
    pub tool_calls: usize,
    /// Set when the loop was stopped.
    pub stopped: Option<StopReason>,
    /// Tokens used.
    pub usage: Usage,
}

/// A turn failed (the provider or storage); everything done so far is persisted.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// The provider failed.
    #[error(transparent)]
    Llm(#[from] LlmError),
    /// Storage or the registry failed.
    #[error(transparent)]
    Tool(#[from] ToolError),
}

/// The agent: a runtime, a provider and skills.
#[derive(Clone)]
pub struct Agent {
    runtime: Arc<Runtime>,
    provider: Arc<dyn ChatProvider>,
    skills: Arc<SkillSet>,
    config: AgentConfig,
    profile: Arc<AgentProfile>,
}

impl std::fmt::Debug for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agent").field("provider", &self.provider.name()).field("model", &self.provider.model()).finish()
    }
}

/// Register values up to this length (addresses, amounts) are shown in the system context; longer ones are not.
const SHOWN_VALUE_MAX: usize = 66;

impl Agent {
    /// The default agent over `runtime` using `provider`, with the default loop limits.
    pub fn new(runtime: Arc<Runtime>, provider: Arc<dyn ChatProvider>) -> Self {
        let skills = runtime.skills();
        let profile = runtime.profile(crate::AGENT_ID).unwrap_or_else(|| {
            Arc::new(AgentProfile {
                name: crate::AGENT_ID.to_owned(),
                handle: runtime.agent.clone(),
                config: AgentConfig::default(),
                model: None,
                tools: None,
                skills: None,
            })
        });
        Self { runtime, provider, skills, config: AgentConfig::default(), profile }
    }

    /// Agent `profile` of `runtime` ([`Runtime::profiles`]) using `provider`, with its own limits and persona.
    pub fn for_profile(runtime: Arc<Runtime>, provider: Arc<dyn ChatProvider>, profile: Arc<AgentProfile>) -> Self {
        let skills = runtime.skills();
        let config = profile.config.clone();
        Self { runtime, provider, skills, config, profile }
    }

    /// Who this agent is and what it may do.
    pub fn profile(&self) -> &Arc<AgentProfile> {
        &self.profile
    }

    /// Changes the loop limits.
    pub fn with_config(mut self, config: AgentConfig) -> Self {
        self.config = config;
        self
    }

    /// The provider.
    pub fn provider(&self) -> &Arc<dyn ChatProvider> {
        &self.provider
    }

    /// The runtime it acts in.
    pub fn runtime(&self) -> &Arc<Runtime> {
        &self.runtime
    }

    /// The loop limits.
    pub fn config(&self) -> &AgentConfig {
        &self.config
    }

    /// The tools the model is offered in `ctx`: everything registered except value-moving tools, which appear only
    /// while an active skill requires them.
    pub fn visible_tools(&self, ctx: &ToolContext) -> Vec<ToolSpec> {
        let active = ActiveSkills::of(ctx);
        let unlocked: Vec<&String> =
            active.iter().filter_map(|n| self.skills.get(n)).flat_map(|s| s.required_tools.iter()).collect();
        self.runtime
            .registry
            .list()
            .into_iter()
            .filter(|t| self.profile.may_call(&t.name))
            .filter(|t| t.kind != ToolKind::ValueMoving || unlocked.contains(&&t.name))
            .map(|t| ToolSpec { name: t.name, description: t.description, parameters: t.input_schema })
            .collect()
    }

    /// The system context for the next model call.
    pub async fn system_context(&self, ctx: &ToolContext) -> String {
        let mut out = self.config.instructions.clone();
        let skills: Vec<String> = ActiveSkills::of(ctx);
        for name in &skills {
            if let Some(skill) = self.skills.get(name) {
                let _ = write!(out, "\n\n## Active skill: {} (v{})\n{}", skill.name, skill.version, skill.body);
            }
        }
        let available: Vec<String> = self
            .skills
            .iter()
            .filter(|s| !skills.contains(&s.name) && self.profile.may_load(&s.name))
            .map(|s| format!("{} — {}", s.name, s.description))
            .collect();
        if !available.is_empty() {
            let _ = write!(out, "\n\n## Skills you can load with use_skill\n- {}", available.join("\n- "));
        }
        match self.profile.handle.memory.blocks().await {
            Ok(blocks) => {
                // Sessions' summaries (`crate::window`) are agent memory, but each is shown in its own session only.
                let own = crate::window::summary_label(&ctx.session_id);
                let (summaries, blocks): (Vec<_>, Vec<_>) =
                    blocks.into_iter().partition(|b| b.label.starts_with(holdfast_memory::RUNTIME_LABEL_PREFIX));
                let section = holdfast_memory::render_blocks(&blocks);
                if !section.trim().is_empty() {
                    let _ = write!(out, "\n\n## Memory\n{section}");
                }
                if let Some(summary) = summaries.iter().find(|b| b.label == own) {
                    let _ = write!(
                        out,
                        "\n\n## Earlier in this conversation (your summary; not the user's words)\n{}",
                        holdfast_memory::escape_text(&summary.value)
                    );
                }
            }
            Err(e) => tracing::warn!("memory render failed: {e}"),
        }
        if let Some(bank) = ctx.context_bank.format_for_agent() {
            let _ = write!(out, "\n\n## Context bank (from the user's own words)\n{bank}");
        }
        let snapshot = ctx.registers.snapshot();
        if !snapshot.0.is_empty() {
            out.push_str("\n\n## Registers (pass these names to tools)\n");
            for (key, entry) in &snapshot.0 {
                let p = &entry.provenance;
                let value = match &entry.value {
                    Value::String(s) if s.len() <= SHOWN_VALUE_MAX => format!(" = {s}"),
                    Value::Object(m) if m.contains_key("symbol") => {
                        format!(" = token {}", m.get("symbol").and_then(Value::as_str).unwrap_or("?"))
                    }
                    Value::Object(_) => " = object".to_owned(),
                    _ => String::new(),
                };
                let _ = writeln!(
                    out,
                    "- {key}{value} (origin {}, from {}, {:.0}s old)",
                    p.origin.as_str(),
                    p.source,
                    entry.age().as_secs_f64()
                );
            }
        }
        out
    }

    async fn record(&self, ctx: &ToolContext, message: NewMessage) -> Result<(), ToolError> {
        self.runtime.sessions.append(&ctx.session_id, message).await.map(|_| ())
    }

    /// Runs one user message to the end of the turn.
    pub async fn run_turn(
        &self,
        ctx: &ToolContext,
        user_text: &str,
        observer: &dyn TurnObserver,
        cancel: &CancelToken,
    ) -> Result<TurnOutcome, AgentError> {
        self.run_turn_pasted(ctx, (user_text, &[]), observer, cancel).await
    }

    /// [`Agent::run_turn`] for a message into which the user pasted texts, as the front end saw them arrive (the web
    /// UI's paste events): a pasted text other than a lone address or number is read as quoted by the context bank
    /// ([`holdfast_core::ContextBank::scan_pasted`]), so someone else's "send 7 USDC to 0x…", pasted, moves nothing
    /// by itself.
    #[tracing::instrument(name = "turn", skip_all, fields(session = %ctx.session_id))]
    pub async fn run_turn_pasted(
        &self,
        ctx: &ToolContext,
        (user_text, pasted): (&str, &[String]),
        observer: &dyn TurnObserver,
        cancel: &CancelToken,
    ) -> Result<TurnOutcome, AgentError> {
        crate::inbox::refuse_user_turn(self.runtime.sessions.as_ref(), &ctx.session_id).await?;
        self.check_owner(ctx)?;
        // Invariant 11: only the user's own words feed the context bank.
        ctx.scan_user_message(user_text, pasted).await?;
        // The user started this turn: what it sends to other agents starts a new conversation (hop 1).
        // Both for this turn's calls only (a fork of the session's extensions): a turn of another front end in the same
        // session never sees this one's starter.
        let turn = ctx.with_extension(holdfast_memory::ConversationHops(0)).with_extension(TurnStarter::User);
        let ctx = &turn;
        self.record(ctx, NewMessage::text(MessageRole::User, user_text)).await?;
        self.run_loop(ctx, observer, cancel).await
    }

    /// Runs a turn that answers a message the inbox delivered (`from` names the sender and the way it came, as the
    /// model is shown it; `message_id` is kept with it). The message is recorded as [`MessageRole::Inbox`], never as
    /// the user's words: it does not feed the context bank. The turn has no user channel, so an action that needs
    /// the user's confirmation stays pending for the user (the kernel's rule; `crate::inbox` runs these turns).
    #[tracing::instrument(name = "inbox_turn", skip_all, fields(session = %ctx.session_id, message = message_id))]
    pub async fn answer_message(
        &self,
        ctx: &ToolContext,
        from: &str,
        message_id: &str,
        content: &str,
        cancel: &CancelToken,
    ) -> Result<TurnOutcome, AgentError> {
        self.check_owner(ctx)?;
        let message = NewMessage {
            name: Some(from.to_owned()),
            tool_call_id: Some(message_id.to_owned()),
            ..NewMessage::text(MessageRole::Inbox, content)
        };
        self.record(ctx, message).await?;
        let turn = ctx.with_extension(TurnStarter::Other(from.to_owned()));
        self.run_loop(&turn, &NoObserver, cancel).await
    }

    /// Refuses a session of another agent: its memory and messages are that agent's.
    fn check_owner(&self, ctx: &ToolContext) -> Result<(), AgentError> {
        let owner = self.runtime.profile_of(ctx);
        if owner.name == self.profile.name {
            return Ok(());
        }
        Err(AgentError::Tool(ToolError::new(
            ErrorCode::SessionConflict,
            format!("session {} belongs to agent `{}`, not `{}`", ctx.session_id, owner.name, self.profile.name),
        )))
    }

    /// The model/tool loop of a turn whose opening message is recorded.
    async fn run_loop(
        &self,
        ctx: &ToolContext,
        observer: &dyn TurnObserver,
        cancel: &CancelToken,
    ) -> Result<TurnOutcome, AgentError> {
        // The turn's calls see its stop: a tool in flight gives way where it has written nothing.
        let ctx = &ctx.with_cancel(cancel.clone());
        let mut outcome =
            TurnOutcome { text: String::new(), steps: 0, tool_calls: 0, stopped: None, usage: Usage::default() };
        let mut seen: HashMap<(String, String), usize> = HashMap::new();

        while outcome.steps < self.config.max_steps {
            if cancel.is_cancelled() {
                return self.stop(ctx, outcome, StopReason::Cancelled, "Cancelled by the user.").await;
            }
            outcome.steps += 1;
            let history = self.runtime.sessions.history(&ctx.session_id).await?;
            let window = crate::window::fit(
                self.provider.as_ref(),
                self.runtime.sessions.as_ref(),
                &self.profile.handle,
                &ctx.session_id,
                history,
                self.config.history_token_budget,
                self.config.max_tokens,
            )
            .await
            .map_err(|e| match e {
                crate::window::FitError::Llm(e) => AgentError::Llm(e),
                crate::window::FitError::Tool(e) => AgentError::Tool(e),
            })?;
            if window.usage != Usage::default() {
                outcome.usage.add(window.usage);
                self.runtime.sessions.add_usage(&ctx.session_id, window.usage).await?;
            }
            let history = window.visible;
            let request = ChatRequest {
                system: self.system_context(ctx).await,
                messages: crate::transcript::to_chat(&history),
                tools: self.visible_tools(ctx),
                max_tokens: self.config.max_tokens,
            };
            let events = ctx.events.clone();
            let on_delta = move |delta: StreamDelta| {
                if let StreamDelta::Text(t) = &delta {
                    observer.on_text(t);
                    events.publish(EventPayload::AgentMessage(AgentMessage::Delta { delta: t.clone() }));
                }
            };
            let asked = std::time::Instant::now();
            let response = tokio::select! {
                r = self.provider.complete(&request, &on_delta) => r?,
                () = cancel.cancelled() => {
                    return self.stop(ctx, outcome, StopReason::Cancelled, "Cancelled by the user.").await;
                }
            };
            tracing::debug!(
                step = outcome.steps,
                elapsed_ms = u64::try_from(asked.elapsed().as_millis()).unwrap_or(u64::MAX),
                input_tokens = response.usage.input_tokens,
                output_tokens = response.usage.output_tokens,
                tool_calls = response.tool_calls.len(),
                "model answered"
            );
            outcome.usage.add(response.usage);
            self.runtime.sessions.add_usage(&ctx.session_id, response.usage).await?;
            let records: Vec<ToolCallRecord> = response
                .tool_calls
                .iter()
                .map(|c| ToolCallRecord {
                    id: c.id.clone(),
                    name: c.name.clone(),
                    arguments: serde_json::from_str(&c.arguments)
                        .unwrap_or_else(|_| Value::String(c.arguments.clone())),
                })
                .collect();
            self.record(
                ctx,
                NewMessage { tool_calls: records, ..NewMessage::text(MessageRole::Assistant, response.text.clone()) },
            )
            .await?;
            if response.tool_calls.is_empty() {
                ctx.events.publish(EventPayload::AgentMessage(AgentMessage::Final {
                    role: "assistant".into(),
                    content: response.text.clone(),
                    is_final: true,
                    usage: outcome.usage,
                }));
                outcome.text = response.text;
                tracing::info!(steps = outcome.steps, tool_calls = outcome.tool_calls, "turn finished");
                return Ok(outcome);
            }
            for (n, call) in response.tool_calls.iter().enumerate() {
                if cancel.is_cancelled() {
                    self.record_result(
                        ctx,
                        call,
                        &Err(ToolError::new(ErrorCode::Cancelled, "cancelled before this call ran")),
                    )
                    .await?;
                    continue;
                }
                let canonical = serde_json::from_str::<Value>(&call.arguments)
                    .map_or_else(|_| call.arguments.clone(), |v| v.to_string());
                let count = seen.entry((call.name.clone(), canonical)).or_insert(0);
                *count += 1;
                if *count > self.config.max_identical_calls {
                    let error = ToolError::new(
                        ErrorCode::InvalidParams,
                        format!("stopped: `{}` was called {} times with identical arguments", call.name, *count),
                    );
                    self.record_result(ctx, call, &Err(error)).await?;
                    // The calls after it are answered too: not run, rather than shown as of unknown outcome.
                    for later in &response.tool_calls[n + 1..] {
                        let not_run =
                            ToolError::new(ErrorCode::Cancelled, "not run: the turn stopped before this call");
                        self.record_result(ctx, later, &Err(not_run)).await?;
                    }
                    let note = format!("Stopped: the model repeated the same `{}` call.", call.name);
                    return self.stop(ctx, outcome, StopReason::RepeatedCall, &note).await;
                }
                observer.on_tool_call(&call.name, &call.arguments);
                outcome.tool_calls += 1;
                let result = self.run_call(ctx, call, observer).await;
                observer.on_tool_result(&call.name, &result);
                if let Err(e) = self.record_result(ctx, call, &result).await {
                    return Err(unrecorded(call, &result, e).into());
                }
            }
        }
        let note =
            format!("Stopped after {} model calls (the step limit) without a final answer.", self.config.max_steps);
        self.stop(ctx, outcome, StopReason::StepLimit, &note).await
    }

    async fn stop(
        &self,
        ctx: &ToolContext,
        mut outcome: TurnOutcome,
        reason: StopReason,
        note: &str,
    ) -> Result<TurnOutcome, AgentError> {
        self.record(ctx, NewMessage::text(MessageRole::System, note)).await?;
        ctx.events.publish(EventPayload::AgentMessage(AgentMessage::Final {
            role: "system".into(),
            content: note.to_owned(),
            is_final: true,
            usage: outcome.usage,
        }));
        tracing::info!(steps = outcome.steps, tool_calls = outcome.tool_calls, ?reason, "turn stopped");
        outcome.stopped = Some(reason);
        outcome.text = note.to_owned();
        Ok(outcome)
    }

    async fn record_result(
        &self,
        ctx: &ToolContext,
        call: &ToolCall,
        result: &Result<Value, ToolError>,
    ) -> Result<(), ToolError> {
        let content = match result {
            Ok(v) => v.to_string(),
            Err(e) => json!({"error": e}).to_string(),
        };
        let message = NewMessage {
            tool_call_id: Some(call.id.clone()),
            name: Some(call.name.clone()),
            ..NewMessage::text(MessageRole::Tool, content)
        };
        self.record(ctx, message).await
    }

    /// Runs one model tool call through the registry, handling malformed arguments, hidden tools and confirmations.
    async fn run_call(
        &self,
        ctx: &ToolContext,
        call: &ToolCall,
        observer: &dyn TurnObserver,
    ) -> Result<Value, ToolError> {
        let params: Value = serde_json::from_str(&call.arguments).map_err(|e| {
            ToolError::new(
                ErrorCode::InvalidParams,
                format!("the arguments of `{}` are not valid JSON: {e}", call.name),
            )
        })?;
        if !self.visible_tools(ctx).iter().any(|t| t.name == call.name) {
            let hint = if !self.profile.may_call(&call.name) {
                format!(
                    "agent `{}` may not call {:?} ([agents.{}] tools)",
                    self.profile.name, call.name, self.profile.name
                )
            } else if self.runtime.registry.get(&call.name).is_some() {
                format!("`{}` is available only while a skill that needs it is active (use_skill)", call.name)
            } else {
                format!("no tool named {:?}", call.name)
            };
            return Err(ToolError::new(ErrorCode::UnknownTool, hint));
        }
        if call.name == "use_skill"
            && let Some(skill) = params.get("name").and_then(Value::as_str)
            && !self.profile.may_load(skill)
        {
            return Err(ToolError::new(
                ErrorCode::InvalidParams,
                format!("`name`: agent `{}` may not load skill {skill:?}", self.profile.name),
            ));
        }
        let result = self.runtime.registry.call(&call.name, params, ctx).await;
        let Err(error) = &result else { return result };
        if error.code != ErrorCode::ConfirmationRequired {
            return result;
        }
        let Some(id) = error.details.as_ref().and_then(|d| d.get("confirmation_id")).and_then(Value::as_str) else {
            return result;
        };
        let Some(confirmation) = ctx.confirmations.get(id) else { return result };
        let Some(channel) = observer.channel() else { return result };
        let decision = match observer.confirm(&confirmation).await {
            ConfirmDecision::Approve => UserDecision::Approve,
            ConfirmDecision::Deny => UserDecision::Deny,
            ConfirmDecision::Defer => return result,
        };
        self.runtime.decide(ctx, channel, id, decision).await?.into_result()
    }
}

/// The turn's error when a call ran but its result could not be written to the history: the storage error's code,
/// a message that says the call ran, and what it answered in `details` (`{"tool", "result"}`, the result's text cut
/// at 2,000 characters), so the user is not left to guess whether value moved. The answer stays out of the message,
/// which is what logs show. (The model is told `outcome_unknown` for that call on the next turn:
/// [`crate::transcript`].)
fn unrecorded(call: &ToolCall, result: &Result<Value, ToolError>, e: ToolError) -> ToolError {
    /// The most of the result quoted.
    const QUOTED_MAX: usize = 2_000;
    let mut answer = match result {
        Ok(v) => v.to_string(),
        Err(err) => json!({"error": err}).to_string(),
    };
    if answer.len() > QUOTED_MAX {
        let cut = (0..=QUOTED_MAX).rev().find(|&i| answer.is_char_boundary(i)).unwrap_or(0);
        answer.truncate(cut);
        answer.push('…');
    }
    // The name is the model's text: shown escaped and short, so it cannot start a line of its own in a log.
    let name: String = call.name.escape_debug().take(64).collect();
    ToolError::new(
        e.code,
        format!(
            "`{name}` ran, but its result could not be saved to this session ({}); the turn stopped. What it answered \
             is in this error's details",
            e.message
        ),
    )
    .with_details(json!({"tool": call.name, "result": answer}))
}

//! The tool registry: the one path through which every tool call runs, whoever makes it (model, replay, HTTP, MCP).

use crate::context::ToolContext;
use crate::error::{ErrorCode, ToolError};
use crate::event::{EventPayload, ToolCallFinished, ToolCallStarted};
use crate::schema::check_strict;
use crate::tool::{AiTool, DynTool, DynamicToolAdapter, ToolKind};
use futures::FutureExt;
use indexmap::IndexMap;
use parking_lot::RwLock;
use serde::Serialize;
use serde_json::Value;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

/// The tools a session's owner may call (`[agents.NAME] tools`), attached to the session: every call on it — the
/// agent's model, the UI's tool console, the REST API, MCP — is checked against it in [`ToolRegistry::call`].
/// Without one, every registered tool may be called.
///
/// ```
/// use holdfast_core::registry::ToolScope;
/// let scope = ToolScope::new("researcher", ["token_lookup"]);
/// assert!(scope.allows("token_lookup") && !scope.allows("web3_tx"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolScope {
    owner: String,
    tools: std::collections::BTreeSet<String>,
}

impl ToolScope {
    /// The scope of agent `owner`, which may call `tools` only.
    pub fn new(owner: impl Into<String>, tools: impl IntoIterator<Item = impl Into<String>>) -> Self {
        Self { owner: owner.into(), tools: tools.into_iter().map(Into::into).collect() }
    }

    /// Whether `tool` may be called.
    pub fn allows(&self, tool: &str) -> bool {
        self.tools.contains(tool)
    }

    /// The agent whose scope it is.
    pub fn owner(&self) -> &str {
        &self.owner
    }
}

/// Registration failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegistryError {
    /// A tool with that name is already registered (use `replace` to swap it deliberately).
    #[error("a tool named `{0}` is already registered; use replace to swap it")]
    Duplicate(String),
    /// The name breaks the rules shared by MCP and OpenAI (`[A-Za-z0-9_-]{1,64}`).
    #[error("tool name {0:?} must be 1–64 of A-Z a-z 0-9 _ -")]
    InvalidName(String),
    /// A schema is not valid for every client.
    #[error("tool `{tool}`: {which} schema is not strict: {problems}")]
    NonStrictSchema {
        /// The tool.
        tool: String,
        /// `input` or `output`.
        which: &'static str,
        /// The violations.
        problems: String,
    },
}

/// A registered tool's public description (`holdfast tools list --json`).
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct ToolInfo {
    /// Name.
    pub name: String,
    /// Description.
    pub description: String,
    /// Strict input schema.
    pub input_schema: Value,
    /// Strict output schema.
    pub output_schema: Value,
    /// Whether the tool moves value.
    pub kind: ToolKind,
}

/// The registry. Clones share the same set of tools.
///
/// Every call of every front end (the agent loop, the HTTP API, MCP, replay) goes through [`ToolRegistry::call`]:
/// an unknown tool is `unknown_tool`, params that do not deserialize are `invalid_params` with the field's path, a
/// panicking tool is `internal`, and what the call changed in the session is saved before the caller sees the result.
///
/// ```
/// use holdfast_core::config::CoreConfig;
/// use holdfast_core::{CoreServices, ErrorCode, ToolRegistry};
/// use serde_json::json;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let registry = ToolRegistry::new();
/// holdfast_core::builtin::register_core_tools(&registry)?;
/// let ctx = CoreServices::new(CoreConfig::default())?.new_session("doc");
///
/// let usdc = registry.call("token_lookup", json!({"symbol": "USDC", "network": "base", "cache_as": "sell_token"}), &ctx).await?;
/// assert_eq!(usdc["decimals"], 6);
///
/// let unknown = registry.call("send_everything", json!({}), &ctx).await.unwrap_err();
/// assert_eq!(unknown.code, ErrorCode::UnknownTool);
/// let typo = registry.call("token_lookup", json!({"symbol": "USDC", "netwrk": "base"}), &ctx).await.unwrap_err();
/// assert_eq!(typo.code, ErrorCode::InvalidParams);
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Default)]
pub struct ToolRegistry {
    tools: Arc<RwLock<IndexMap<String, Arc<dyn DynTool>>>>,
}

impl std::fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolRegistry").field("tools", &self.names()).finish()
    }
}

fn check_tool(tool: &dyn DynTool) -> Result<(), RegistryError> {
    let name = tool.name();
    if name.is_empty() || name.len() > 64 || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        return Err(RegistryError::InvalidName(name.to_owned()));
    }
    for (which, schema) in [("input", tool.input_schema()), ("output", tool.output_schema())] {
        check_strict(schema).map_err(|p| RegistryError::NonStrictSchema {
            tool: name.to_owned(),
            which,
            problems: p.join("; "),
        })?;
    }
    Ok(())
}

impl ToolRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers a typed tool. A duplicate name is an error.
    pub fn register<T: AiTool>(&self, tool: T) -> Result<(), RegistryError> {
        self.register_dyn(Arc::new(DynamicToolAdapter::new(tool)))
    }

    /// Registers a dynamic tool. A duplicate name is an error.
    pub fn register_dyn(&self, tool: Arc<dyn DynTool>) -> Result<(), RegistryError> {
        check_tool(tool.as_ref())?;
        let mut tools = self.tools.write();
        if tools.contains_key(tool.name()) {
            return Err(RegistryError::Duplicate(tool.name().to_owned()));
        }
        tools.insert(tool.name().to_owned(), tool);
        Ok(())
    }

    /// Registers `tool`, replacing any tool of the same name. Returns the replaced tool.
    pub fn replace<T: AiTool>(&self, tool: T) -> Result<Option<Arc<dyn DynTool>>, RegistryError> {
        self.replace_dyn(Arc::new(DynamicToolAdapter::new(tool)))
    }

    /// Dynamic form of [`ToolRegistry::replace`].
    pub fn replace_dyn(&self, tool: Arc<dyn DynTool>) -> Result<Option<Arc<dyn DynTool>>, RegistryError> {
        check_tool(tool.as_ref())?;
        Ok(self.tools.write().insert(tool.name().to_owned(), tool))
    }

    /// Removes a tool.
    pub fn remove(&self, name: &str) -> Option<Arc<dyn DynTool>> {
        self.tools.write().shift_remove(name)
    }

    /// A tool by name.
    pub fn get(&self, name: &str) -> Option<Arc<dyn DynTool>> {
        self.tools.read().get(name).cloned()
    }

    /// Registered names, in registration order.
    pub fn names(&self) -> Vec<String> {
        self.tools.read().keys().cloned().collect()
    }

    /// Every tool's description and schemas, in registration order.
    pub fn list(&self) -> Vec<ToolInfo> {
        self.tools
            .read()
            .values()
            .map(|t| ToolInfo {
                name: t.name().to_owned(),
                description: t.description().to_owned(),
                input_schema: t.input_schema().clone(),
                output_schema: t.output_schema().clone(),
                kind: t.kind(),
            })
            .collect()
    }

    /// Runs a tool by name. Unknown name → `unknown_tool`; bad params → `invalid_params` naming the field; a tool
    /// that panics → `internal` (the runtime keeps going). Publishes `tool.call` and `tool.result`.
    pub async fn call(&self, name: &str, params: Value, ctx: &ToolContext) -> Result<Value, ToolError> {
        let Some(tool) = self.get(name) else {
            return Err(ToolError::new(
                ErrorCode::UnknownTool,
                format!("no tool named {} is registered", crate::text::preview(name)),
            ));
        };
        // The session's owner may call only its own tools, whoever asks (its model, the tool console, MCP).
        if let Some(scope) = ctx.extensions.get::<ToolScope>()
            && !scope.allows(name)
        {
            return Err(ToolError::new(
                ErrorCode::PolicyDenied,
                format!(
                    "this session is agent `{owner}`'s, which may not call `{name}` ([agents.{owner}] tools)",
                    owner = scope.owner()
                ),
            ));
        }
        // A stopped turn starts no new call (a call already running stops where it has written nothing).
        ctx.check_cancelled(&format!("`{name}` ran"))?;
        let observed = ctx.events.has_subscribers();
        if observed {
            ctx.events
                .publish(EventPayload::ToolCall(ToolCallStarted { tool: name.to_owned(), params: params.clone() }));
        }
        let started = std::time::Instant::now();
        let version = ctx.state_version();
        let result = match AssertUnwindSafe(tool.call(params, ctx)).catch_unwind().await {
            Ok(result) => result,
            Err(_) => Err(ToolError::internal(format!("tool `{name}` failed unexpectedly"))),
        };
        // Name, outcome and duration only: parameters and outputs stay out of the log.
        let elapsed_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        match &result {
            Ok(_) => tracing::debug!(tool = name, session = %ctx.session_id, elapsed_ms, "tool call ok"),
            Err(e) => {
                tracing::debug!(tool = name, session = %ctx.session_id, elapsed_ms, code = e.code.as_str(), "tool call failed")
            }
        }
        // What the call changed (a register, a pending confirmation) is durable before the caller sees the result,
        // and before `tool.result` is published: the other instances take that event as the sign to reload the
        // session (so the save needs no announcement of its own). A call during which the session did not change
        // (a read) has nothing to save and waits for no one's save: its cost is free of the session's size.
        let changed = ctx.state_version() != version;
        let saved = if changed { ctx.persist_unannounced().await.map(|_| ()) } else { Ok(()) };
        let result = match saved {
            Ok(()) => result,
            Err(e) => {
                tracing::error!(session = %ctx.session_id, tool = name, "the session state could not be saved: {e}");
                Err(ToolError::new(
                    e.code,
                    format!(
                        "`{name}` ran, but the session's state could not be saved ({}): what it changed in the session may not survive a restart (effects outside the session, such as a transaction in the journal, stand)",
                        e.message
                    ),
                ))
            }
        };
        if observed {
            ctx.events.publish(EventPayload::ToolResult(ToolCallFinished::new(name, &result)));
        }
        result
    }
}

//! [`BuiltinTools`]: the default tool set of an agent (the core tools plus the nine built-ins), any of which can be
//! replaced by name.
//!
//! ```no_run
//! # fn demo(handle: holdfast_memory::AgentHandle) -> Result<(), holdfast_core::RegistryError> {
//! use holdfast_memory::{BuiltinTools, UpdateMemoryTool};
//! // Everything, as shipped:
//! let registry = BuiltinTools::default_for_agent(handle.clone()).into_registry()?;
//! // With update_memory replaced (any AiTool named "update_memory"):
//! let custom = BuiltinTools::builder().with_memory_tool(UpdateMemoryTool::new(handle.clone())).build_for_agent(handle);
//! let custom_registry = custom.into_registry()?;
//! # let _ = (registry, custom_registry); Ok(()) }
//! ```

use crate::agent::AgentHandle;
use crate::tools::{
    AppendMemoryTool, ListMemoriesTool, ReplaceInMemoryTool, ScheduleReminderTool, SearchMemoryTool, SendMessageTool,
    SendToGroupTool, TrackTaskTool, UpdateMemoryTool,
};
use holdfast_core::builtin::register_core_tools;
use holdfast_core::{AiTool, DynTool, DynamicToolAdapter, RegistryError, ToolRegistry};
use std::sync::Arc;

/// The names of the built-in tools of this crate, in registration order.
pub const BUILTIN_TOOL_NAMES: &[&str] = &[
    "update_memory",
    "append_memory",
    "replace_in_memory",
    "list_memories",
    "search_memory",
    "send_message",
    "send_to_group",
    "schedule_reminder",
    "track_task",
];

/// The core tools `register_all` adds first (from `holdfast_core::builtin`).
pub const CORE_TOOL_NAMES: &[&str] =
    &["register_set", "register_get", "token_lookup", "to_raw_amount", "context_address"];

/// An agent's built-in tool set.
pub struct BuiltinTools {
    handle: AgentHandle,
    replacements: Vec<Arc<dyn DynTool>>,
    disabled: Vec<String>,
    core: bool,
}

impl std::fmt::Debug for BuiltinTools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BuiltinTools")
            .field("agent", &self.handle.agent_id)
            .field("replacements", &self.replacements.iter().map(|t| t.name().to_owned()).collect::<Vec<_>>())
            .field("disabled", &self.disabled)
            .field("core", &self.core)
            .finish()
    }
}

/// Builds a [`BuiltinTools`] with replacements.
#[derive(Default)]
pub struct BuiltinToolsBuilder {
    replacements: Vec<Arc<dyn DynTool>>,
    disabled: Vec<String>,
    no_core: bool,
}

impl BuiltinToolsBuilder {
    /// Replaces the built-in memory tool of the same name (usually `update_memory`) with `tool`.
    pub fn with_memory_tool<T: AiTool>(self, tool: T) -> Self {
        self.with_tool(tool)
    }

    /// Replaces the built-in message tool of the same name (usually `send_message`) with `tool`.
    pub fn with_message_tool<T: AiTool>(self, tool: T) -> Self {
        self.with_tool(tool)
    }

    /// Replaces the built-in of the same name with `tool` (or adds it, if no built-in has that name).
    pub fn with_tool<T: AiTool>(self, tool: T) -> Self {
        self.with_dyn_tool(Arc::new(DynamicToolAdapter::new(tool)))
    }

    /// Dynamic form of [`BuiltinToolsBuilder::with_tool`].
    pub fn with_dyn_tool(mut self, tool: Arc<dyn DynTool>) -> Self {
        self.replacements.retain(|t| t.name() != tool.name());
        self.replacements.push(tool);
        self
    }

    /// Leaves a built-in (or core tool) out.
    pub fn without(mut self, name: &str) -> Self {
        self.disabled.push(name.to_owned());
        self
    }

    /// Leaves the core tools out (when the caller registers them itself).
    pub fn without_core_tools(mut self) -> Self {
        self.no_core = true;
        self
    }

    /// The tool set for `handle`'s agent.
    pub fn build_for_agent(self, handle: AgentHandle) -> BuiltinTools {
        BuiltinTools { handle, replacements: self.replacements, disabled: self.disabled, core: !self.no_core }
    }
}

impl BuiltinTools {
    /// Every built-in and core tool, as shipped, for `handle`'s agent.
    pub fn default_for_agent(handle: AgentHandle) -> Self {
        Self::builder().build_for_agent(handle)
    }

    /// A builder for replacing or leaving out tools.
    pub fn builder() -> BuiltinToolsBuilder {
        BuiltinToolsBuilder::default()
    }

    /// The agent the tools act for.
    pub fn handle(&self) -> &AgentHandle {
        &self.handle
    }

    /// Registers the core tools (unless left out, or already in `registry`), then every built-in, then the
    /// replacements via [`ToolRegistry::replace`], so each name ends up with exactly one tool. A built-in whose name
    /// is already registered (and not being replaced) is a [`RegistryError::Duplicate`].
    pub fn register_all(&self, registry: &ToolRegistry) -> Result<(), RegistryError> {
        let on = |name: &str| !self.disabled.iter().any(|d| d == name);
        if self.core && registry.get(CORE_TOOL_NAMES[0]).is_none() {
            register_core_tools(registry)?;
            for name in CORE_TOOL_NAMES.iter().filter(|n| !on(n)) {
                registry.remove(name);
            }
        }
        let h = &self.handle;
        let defaults: Vec<Arc<dyn DynTool>> = vec![
            Arc::new(DynamicToolAdapter::new(UpdateMemoryTool::new(h.clone()))),
            Arc::new(DynamicToolAdapter::new(AppendMemoryTool::new(h.clone()))),
            Arc::new(DynamicToolAdapter::new(ReplaceInMemoryTool::new(h.clone()))),
            Arc::new(DynamicToolAdapter::new(ListMemoriesTool::new(h.clone()))),
            Arc::new(DynamicToolAdapter::new(SearchMemoryTool::new(h.clone()))),
            Arc::new(DynamicToolAdapter::new(SendMessageTool::new(h.clone()))),
            Arc::new(DynamicToolAdapter::new(SendToGroupTool::new(h.clone()))),
            Arc::new(DynamicToolAdapter::new(ScheduleReminderTool::new(h.clone()))),
            Arc::new(DynamicToolAdapter::new(TrackTaskTool::new(h.clone()))),
        ];
        let replacement = |name: &str| self.replacements.iter().find(|t| t.name() == name).cloned();
        for tool in defaults {
            if !on(tool.name()) {
                continue;
            }
            match replacement(tool.name()) {
                // In the built-in's place, so `tools list` keeps its order.
                Some(custom) => registry.replace_dyn(custom).map(|_| ())?,
                None => registry.register_dyn(tool)?,
            }
        }
        for tool in self.replacements.iter().filter(|t| on(t.name()) && !BUILTIN_TOOL_NAMES.contains(&t.name())) {
            registry.replace_dyn(Arc::clone(tool))?;
        }
        Ok(())
    }

    /// A new registry holding exactly this tool set.
    pub fn into_registry(self) -> Result<ToolRegistry, RegistryError> {
        let registry = ToolRegistry::new();
        self.register_all(&registry)?;
        Ok(registry)
    }
}

//! The agents one runtime runs: the default agent (`assistant`, shaped by `[agent]`) and one per `[agents.NAME]`
//! section, each with its own persona, model, memory, skills and tools. They share the wallet, the policy, the
//! journal and the tool registry; each session belongs to one agent, whose memory and messages its tools use.
//!
//! ```toml
//! [agents.researcher]
//! persona = "You look up token prices and report them to the assistant. You never move value."
//! model = "gpt-4o-mini"                       # else [llm] model
//! tools = ["token_lookup", "x402_fetch", "send_message", "update_memory"]   # else every tool
//! skills = []                                 # else every skill
//! memory = [{ label = "focus", value = "prices on Base" }]
//! ```
//!
//! `tools` is enforced, not only offered: a call to a tool outside the list is refused (`unknown_tool`) whatever
//! the model sends. Agents message each other with `send_message` (target `{"type": "agent", "id": NAME}`), and
//! each agent's inbox starts its own turns ([`crate::inbox`]).

use crate::agent::AgentConfig;
use crate::runtime::AGENT_ID;
use holdfast_core::config::{ConfigDocument, ConfigError};
use holdfast_memory::{AgentHandle, BlockSpec};
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};

/// One `[agents.NAME]` section.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentSpec {
    /// The agent's instructions (its persona), in place of the base instructions.
    pub persona: Option<String>,
    /// Its model, in place of `[llm] model`.
    pub model: Option<String>,
    /// Tools it may call (default: every tool).
    pub tools: Option<Vec<String>>,
    /// Skills it may load (default: every skill).
    pub skills: Option<Vec<String>>,
    /// Memory blocks it starts with (created when missing, never overwritten), beside `[memory] blocks`.
    #[serde(default)]
    pub memory: Vec<BlockSpec>,
}

/// The `[agents]` sections, by name.
pub(crate) fn specs(doc: &ConfigDocument) -> Result<BTreeMap<String, AgentSpec>, ConfigError> {
    let specs: BTreeMap<String, AgentSpec> = doc.section_or_default("agents")?;
    for name in specs.keys() {
        if name == AGENT_ID {
            return Err(doc.invalid_at(
                &["agents", name],
                format!("`agents.{name}`: `{AGENT_ID}` is the default agent; configure it in [agent]"),
            ));
        }
        if holdfast_memory::AgentId::new(name).is_err() {
            return Err(doc.invalid_at(
                &["agents", name],
                format!("`agents.{name}`: an agent name is 1-64 letters, digits, `_`, `-` or `.`"),
            ));
        }
    }
    Ok(specs)
}

/// Checks the names a spec lists against what exists.
pub(crate) fn check_names(
    doc: &ConfigDocument,
    name: &str,
    spec: &AgentSpec,
    tools: &[String],
    skills: &[String],
) -> Result<(), ConfigError> {
    for (key, listed, known) in [("tools", &spec.tools, tools), ("skills", &spec.skills, skills)] {
        if let Some(unknown) = listed.iter().flatten().find(|n| !known.contains(n)) {
            return Err(doc.invalid_at(
                &["agents", name, key],
                format!("`agents.{name}.{key}`: no {} named `{unknown}`", key.trim_end_matches('s')),
            ));
        }
    }
    Ok(())
}

/// An agent of the runtime: who it is and what it may do.
#[derive(Debug, Clone)]
pub struct AgentProfile {
    /// Its name (its id for messages: `assistant` for the default agent).
    pub name: String,
    /// Its memory, messages, tasks and reminders.
    pub handle: AgentHandle,
    /// Its loop limits and instructions.
    pub config: AgentConfig,
    /// Its model, when not `[llm] model`.
    pub model: Option<String>,
    /// The tools it may call; `None`: all.
    pub tools: Option<BTreeSet<String>>,
    /// The skills it may load; `None`: all.
    pub skills: Option<BTreeSet<String>>,
}

impl AgentProfile {
    /// The default agent, `[agent]`'s.
    pub(crate) fn default_agent(handle: AgentHandle, config: AgentConfig) -> Self {
        Self { name: AGENT_ID.to_owned(), handle, config, model: None, tools: None, skills: None }
    }

    /// An `[agents.NAME]` agent: `base`'s limits with its own persona.
    pub(crate) fn from_spec(name: &str, handle: AgentHandle, spec: &AgentSpec, base: &AgentConfig) -> Self {
        let mut config = base.clone();
        if let Some(persona) = &spec.persona {
            config.instructions.clone_from(persona);
        }
        Self {
            name: name.to_owned(),
            handle,
            config,
            model: spec.model.clone(),
            tools: spec.tools.as_ref().map(|t| t.iter().cloned().collect()),
            skills: spec.skills.as_ref().map(|s| s.iter().cloned().collect()),
        }
    }

    /// Makes `ctx` this agent's session: its memory handle, and its tool list, which every call on the session is
    /// checked against (`holdfast_core::registry::ToolScope`), whoever makes it.
    pub fn attach(&self, ctx: &holdfast_core::ToolContext) {
        self.handle.attach(ctx);
        if let Some(tools) = &self.tools {
            ctx.extensions.insert(holdfast_core::registry::ToolScope::new(self.name.clone(), tools.iter().cloned()));
        }
    }

    /// Whether it may call `tool`.
    pub fn may_call(&self, tool: &str) -> bool {
        self.tools.as_ref().is_none_or(|t| t.contains(tool))
    }

    /// Whether it may load `skill`.
    pub fn may_load(&self, skill: &str) -> bool {
        self.skills.as_ref().is_none_or(|s| s.contains(skill))
    }
}

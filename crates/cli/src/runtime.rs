//! Builds the runtime a command runs on from a configuration file: shared services, the web3 layer, the memory
//! layer with its agent, and one tool registry holding every tool.

use anyhow::Context as _;
use holdfast_core::config::{CORE_SECTIONS, ConfigDocument, CoreConfig};
use holdfast_core::{CoreServices, ToolContext, ToolRegistry};
use holdfast_memory::{AgentHandle, AgentRuntime, BuiltinTools, MemoryConfig, SchedulerHandle};
use holdfast_web3::{WEB3_SECTIONS, Web3};
use std::path::Path;
use std::sync::Arc;

/// Top-level sections this binary accepts: the core's plus those of the layers it links.
fn known_sections() -> Vec<&'static str> {
    CORE_SECTIONS.iter().chain(WEB3_SECTIONS).chain(&["memory"]).copied().collect()
}

/// Everything a command needs: shared services and the registry.
pub struct Runtime {
    /// Services shared by every session.
    pub services: CoreServices,
    /// The tool registry.
    pub registry: ToolRegistry,
    /// The web3 layer (wallet, chains, policy, journal).
    pub web3: Arc<Web3>,
    /// The agent every session acts for.
    pub agent: AgentHandle,
    /// Delivers reminders while the runtime lives.
    _scheduler: SchedulerHandle,
}

/// The agent id sessions act for.
pub const AGENT_ID: &str = "assistant";

impl Runtime {
    /// Loads `config` (or the built-in defaults) and registers every tool. Without a data dir, memory and journal
    /// live in memory and the wallet is ephemeral: nothing touches the disk.
    pub async fn load(config: Option<&Path>) -> anyhow::Result<Self> {
        let doc = match config {
            Some(path) => ConfigDocument::load(path)?,
            None => ConfigDocument::empty(),
        };
        doc.check_sections(&known_sections())?;
        let core = CoreConfig::from_document(&doc)?;
        let mut declarations = core.registers.clone();
        Web3::install_declarations(&mut declarations, &core.networks);
        let services =
            CoreServices::new(core).context("building the context-bank scanner")?.with_declarations(declarations);
        let web3 = Web3::from_document(&doc, Arc::clone(&services.config))?;
        let memory_config: MemoryConfig = doc.section_or_default("memory")?;
        let memory = match &services.config.data_dir {
            Some(dir) => AgentRuntime::open_dir(dir, memory_config).await,
            None => AgentRuntime::ephemeral(memory_config).await,
        }
        .context("opening the memory store")?;
        let scheduler = memory.start_scheduler();
        let agent = memory.agent(AGENT_ID).await.context("opening the agent")?;
        let services = services.with_hook(web3.session_hook()).with_hook(agent.session_hook());
        let registry = ToolRegistry::new();
        BuiltinTools::default_for_agent(agent.clone())
            .register_all(&registry)
            .context("registering the built-in tools")?;
        web3.register_tools(&registry).context("registering the web3 tools")?;
        Ok(Self { services, registry, web3, agent, _scheduler: scheduler })
    }

    /// Opens a fresh session.
    pub fn new_session(&self, id: &str) -> ToolContext {
        self.services.new_session(id)
    }
}

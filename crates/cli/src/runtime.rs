//! Builds the runtime a command runs on from a configuration file: shared services and the tool registry.

use anyhow::Context as _;
use holdfast_core::config::{CORE_SECTIONS, ConfigDocument, CoreConfig};
use holdfast_core::{CoreServices, ToolContext, ToolRegistry};
use holdfast_web3::{WEB3_SECTIONS, Web3};
use std::path::Path;
use std::sync::Arc;

/// Top-level sections this binary accepts: the core's plus those of the layers it links.
fn known_sections() -> Vec<&'static str> {
    CORE_SECTIONS.iter().chain(WEB3_SECTIONS).copied().collect()
}

/// Everything a command needs: shared services and the registry.
pub struct Runtime {
    /// Services shared by every session.
    pub services: CoreServices,
    /// The tool registry.
    pub registry: ToolRegistry,
    /// The web3 layer (wallet, chains, policy, journal).
    pub web3: Arc<Web3>,
}

impl Runtime {
    /// Loads `config` (or the built-in defaults) and registers every tool.
    pub fn load(config: Option<&Path>) -> anyhow::Result<Self> {
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
        let services = services.with_hook(web3.session_hook());
        let registry = ToolRegistry::new();
        holdfast_core::builtin::register_core_tools(&registry).context("registering the core tools")?;
        web3.register_tools(&registry).context("registering the web3 tools")?;
        Ok(Self { services, registry, web3 })
    }

    /// Opens a fresh session.
    pub fn new_session(&self, id: &str) -> ToolContext {
        self.services.new_session(id)
    }
}

//! Builds the runtime a command runs on from a configuration file: shared services and the tool registry.

use anyhow::Context as _;
use holdfast_core::config::{CORE_SECTIONS, ConfigDocument, CoreConfig};
use holdfast_core::{CoreServices, ToolContext, ToolRegistry};
use std::path::Path;

/// Top-level sections this binary accepts: the core's plus those of the layers it links.
const KNOWN_SECTIONS: &[&str] = CORE_SECTIONS;

/// Everything a command needs: shared services and the registry.
pub struct Runtime {
    /// Services shared by every session.
    pub services: CoreServices,
    /// The tool registry.
    pub registry: ToolRegistry,
}

impl Runtime {
    /// Loads `config` (or the built-in defaults) and registers every tool.
    pub fn load(config: Option<&Path>) -> anyhow::Result<Self> {
        let doc = match config {
            Some(path) => ConfigDocument::load(path)?,
            None => ConfigDocument::empty(),
        };
        doc.check_sections(KNOWN_SECTIONS)?;
        let core = CoreConfig::from_document(&doc)?;
        let services = CoreServices::new(core).context("building the context-bank scanner")?;
        let registry = ToolRegistry::new();
        holdfast_core::builtin::register_core_tools(&registry).context("registering the core tools")?;
        Ok(Self { services, registry })
    }

    /// Opens a fresh session.
    pub fn new_session(&self, id: &str) -> ToolContext {
        self.services.new_session(id)
    }
}

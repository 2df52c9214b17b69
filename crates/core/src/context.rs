//! The tool context: one session's registers, context bank and event bus, plus the shared configuration.
//!
//! [`CoreServices`] holds what every session shares (configuration, the context scanner, register declarations);
//! [`ToolContext`] is one session, cheap to clone. Other layers attach their per-session state as typed
//! [`Extensions`] rather than widening this type.

use crate::config::CoreConfig;
use crate::confirm::{Confirmations, UserDecisions};
use crate::context_bank::{ContextBank, ContextScanner, ScannerBuildError};
use crate::event::EventBus;
use crate::registers::{RegisterDeclarations, RegisterStore};
use parking_lot::RwLock;
use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

/// Runs when a session is opened, so other layers can attach their per-session state (an intrinsic-register
/// provider, a journal handle…).
pub trait SessionHook: Send + Sync {
    /// Prepares a freshly opened session.
    fn on_new_session(&self, ctx: &ToolContext);
}

/// What every session of a runtime shares.
#[derive(Clone)]
pub struct CoreServices {
    /// Networks, tokens and register declarations.
    pub config: Arc<CoreConfig>,
    /// The declarations every session's store enforces (with validators installed by other layers).
    pub declarations: Arc<RegisterDeclarations>,
    /// The context-bank scanner built from the token and network tables.
    pub scanner: Arc<ContextScanner>,
    hooks: Vec<Arc<dyn SessionHook>>,
}

impl fmt::Debug for CoreServices {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CoreServices").field("hooks", &self.hooks.len()).finish_non_exhaustive()
    }
}

impl CoreServices {
    /// Builds the shared services from a configuration. `declarations` defaults to the configuration's.
    pub fn new(config: CoreConfig) -> Result<Self, ScannerBuildError> {
        let scanner = Arc::new(ContextScanner::new(&config.tokens, &config.networks)?);
        let declarations = Arc::new(config.registers.clone());
        Ok(Self { config: Arc::new(config), declarations, scanner, hooks: Vec::new() })
    }

    /// Replaces the declarations (for example with validators installed).
    pub fn with_declarations(mut self, declarations: RegisterDeclarations) -> Self {
        self.declarations = Arc::new(declarations);
        self
    }

    /// Adds a hook run on every new session.
    pub fn with_hook(mut self, hook: Arc<dyn SessionHook>) -> Self {
        self.hooks.push(hook);
        self
    }

    /// The capability to decide confirmations, for front ends (a user channel). Tools never get it: a tool only sees
    /// a [`ToolContext`].
    pub fn user_decisions(&self) -> UserDecisions {
        UserDecisions::new()
    }

    /// Opens a fresh session and runs every hook on it.
    pub fn new_session(&self, session_id: &str) -> ToolContext {
        let events = EventBus::new(session_id);
        let ctx = ToolContext {
            session_id: Arc::from(session_id),
            registers: RegisterStore::new(Arc::clone(&self.declarations), events.clone()),
            context_bank: ContextBank::new(Arc::clone(&self.scanner), events.clone()),
            confirmations: Confirmations::new(events.clone()),
            events,
            config: Arc::clone(&self.config),
            extensions: Extensions::default(),
        };
        for hook in &self.hooks {
            hook.on_new_session(&ctx);
        }
        ctx
    }
}

/// Typed per-session state attached by other layers (an agent handle, pending confirmations, a wallet…).
#[derive(Clone, Default)]
pub struct Extensions {
    map: Arc<RwLock<HashMap<TypeId, Arc<dyn Any + Send + Sync>>>>,
}

impl fmt::Debug for Extensions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Extensions").field("len", &self.map.read().len()).finish()
    }
}

impl Extensions {
    /// Attaches `value`, replacing any earlier value of the same type.
    pub fn insert<T: Any + Send + Sync>(&self, value: T) {
        self.map.write().insert(TypeId::of::<T>(), Arc::new(value));
    }

    /// The attached value of type `T`.
    pub fn get<T: Any + Send + Sync>(&self) -> Option<Arc<T>> {
        let any = self.map.read().get(&TypeId::of::<T>()).cloned()?;
        any.downcast::<T>().ok()
    }
}

/// One session, as every tool sees it. Clones share state.
#[derive(Debug, Clone)]
pub struct ToolContext {
    /// The session id.
    pub session_id: Arc<str>,
    /// The session's registers.
    pub registers: RegisterStore,
    /// The session's context bank.
    pub context_bank: ContextBank,
    /// The session's pending confirmations.
    pub confirmations: Confirmations,
    /// The session's event bus.
    pub events: EventBus,
    /// Networks, tokens, declarations.
    pub config: Arc<CoreConfig>,
    /// Per-session state of other layers.
    pub extensions: Extensions,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_are_isolated_and_clones_share() {
        let services = CoreServices::new(CoreConfig::default()).unwrap();
        let a = services.new_session("a");
        let b = services.new_session("b");
        a.context_bank.scan_input("5 USDC");
        assert!(b.context_bank.is_empty());
        assert!(!a.clone().context_bank.is_empty());
        a.extensions.insert(7u32);
        assert_eq!(a.clone().extensions.get::<u32>().as_deref(), Some(&7));
        assert!(b.extensions.get::<u32>().is_none());
    }
}

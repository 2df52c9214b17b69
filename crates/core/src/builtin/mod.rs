//! The core built-in tools: `register_set`, `register_get`, `token_lookup`, `to_raw_amount`, `context_address`.
//!
//! They hold no state of their own; everything they do goes through the session's register store, so the store's
//! rules apply to them exactly as to every other writer.

mod context_address;
mod register_get;
mod register_set;
mod to_raw_amount;
mod token_lookup;

pub use context_address::{ContextAddress, ContextAddressInput, ContextAddressOutput};
pub use register_get::{RegisterGet, RegisterGetInput, RegisterGetOutput};
pub use register_set::{RegisterSet, RegisterSetInput, RegisterSetOutput};
pub use to_raw_amount::{ToRawAmount, ToRawAmountInput, ToRawAmountOutput};
pub use token_lookup::{TokenLookup, TokenLookupInput, TokenLookupOutput};

use crate::registry::{RegistryError, ToolRegistry};

/// Registers the five core tools.
pub fn register_core_tools(registry: &ToolRegistry) -> Result<(), RegistryError> {
    registry.register(RegisterSet)?;
    registry.register(RegisterGet)?;
    registry.register(TokenLookup)?;
    registry.register(ToRawAmount)?;
    registry.register(ContextAddress)?;
    Ok(())
}

/// Renders a register value for a tool output: strings as they are, anything else as compact JSON text.
pub(crate) fn value_text(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

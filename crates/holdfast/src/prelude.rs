//! What a tool author and an embedder reach for first: `use holdfast::prelude::*;`.
//!
//! A tool author gets the typed tool trait and its context, errors with their stable codes, the registry, register
//! writes with provenance, and the derives for input and output types. An embedder gets the memory runtime and its
//! built-in tools and, with the `agent` feature, the runtime that composes every layer from one configuration
//! file, its sessions and the agent loop. Everything else is under the crate's modules ([`crate::core`],
//! [`crate::memory`], …).
//!
//! ```
//! use holdfast::prelude::*;
//!
//! /// Input of a tool: strict (unknown fields are refused), with a schema for the model.
//! #[derive(Deserialize, JsonSchema)]
//! #[serde(deny_unknown_fields)]
//! struct EchoInput {
//!     /// What to echo.
//!     text: String,
//! }
//!
//! #[derive(Serialize, JsonSchema)]
//! struct EchoOutput {
//!     text: String,
//! }
//!
//! struct Echo;
//!
//! impl AiTool for Echo {
//!     type Input = EchoInput;
//!     type Output = EchoOutput;
//!     fn name(&self) -> &str {
//!         "echo"
//!     }
//!     fn description(&self) -> &str {
//!         "Echo the text back."
//!     }
//!     async fn execute(&self, input: EchoInput, _ctx: &ToolContext) -> Result<EchoOutput, ToolError> {
//!         Ok(EchoOutput { text: input.text })
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let registry = ToolRegistry::new();
//! registry.register(Echo)?;
//! let ctx = CoreServices::new(CoreConfig::default())?.new_session("doc");
//! let out = registry.call("echo", serde_json::json!({"text": "hi"}), &ctx).await?;
//! assert_eq!(out["text"], "hi");
//! // A field the schema does not name is refused with a stable code, before the tool runs.
//! let err = registry.call("echo", serde_json::json!({"text": "hi", "to": "0xabc"}), &ctx).await.unwrap_err();
//! assert_eq!(err.code, ErrorCode::InvalidParams);
//! # Ok(())
//! # }
//! ```

pub use holdfast_core::config::CoreConfig;
pub use holdfast_core::schemars::{self, JsonSchema};
pub use holdfast_core::{
    Address, AiTool, ContextBank, CoreServices, DynTool, ErrorCode, HasErrorCode, Origin, PresetOrCustom,
    RegisterStore, RegisterWrite, ToolContext, ToolError, ToolKind, ToolRegistry, U256,
};
pub use holdfast_memory::{AgentHandle, AgentRuntime, BuiltinTools, MemoryConfig, MemoryError};
pub use serde::{Deserialize, Serialize};

#[cfg(feature = "agent")]
pub use holdfast_agent::{Agent, AgentConfig, Runtime, RuntimeError, TurnOutcome};
#[cfg(feature = "web3")]
pub use holdfast_web3::{Journal, Wallet, Web3, Web3Config};

//! # holdfast
//!
//! A runtime for LLM agents that move value, where the model *names* values and never *carries* them: typed tools
//! in one registry, registers that tools write and read while the model passes only their names, a context bank of
//! what the user wrote, memory and messaging, web3 tools behind one value-moving kernel, an agent loop, a server
//! with a web UI and an MCP server.
//!
//! This crate is the one to depend on. It re-exports each layer as a module and gathers what a tool author and an
//! embedder need in [`prelude`]. Each layer past memory is a cargo feature; `default` is everything the `holdfast`
//! binary needs.
//!
//! | module | crate | feature | what lives there |
//! |---|---|---|---|
//! | [`core`] | `holdfast-core` | always | tools, the registry, strict schemas, registers, the context bank, config, confirmations, the event bus and its relay (no I/O) |
//! | [`memory`] | `holdfast-memory` | always | memory blocks, search, messaging, reminders, tasks (SQLite or PostgreSQL, through holdfast-store) |
//! | `store` | `holdfast-store` | `store` | the storage layer: the SQLite file or PostgreSQL (sqlx), every table's migrations and queries, cross-instance locks, the events' channel |
//! | `web3` | `holdfast-web3` | `web3` | wallet, presets, x402, quote validation, policy, the journal, the value-moving tools (alloy) |
//! | `agent` | `holdfast-agent` | `agent` | the runtime composing the layers, sessions, LLM providers, the tool loop, the inbox |
//! | `server` | `holdfast-server` | `server` | the HTTP/WebSocket API and the web UI (axum) |
//! | `mcp` | `holdfast-mcp` | `mcp` | the MCP server (rmcp) |
//! | `devnet` | `holdfast-devnet` | `devnet` | the local chain, contracts, quoter and x402 paywall |
//!
//! With `default-features = false` the tree holds holdfast-core, holdfast-memory and the storage layer memory runs on
//! (holdfast-store: sqlx, rusqlite): no `alloy`, `axum` or `rmcp` (the value types of `alloy-primitives`, `Address`
//! and `U256`, are there: the context bank parses them).
//!
//! ```
//! use holdfast::prelude::*;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let registry = ToolRegistry::new();
//! holdfast::core::builtin::register_core_tools(&registry)?;
//! assert!(registry.names().iter().any(|name| name == "register_get"));
//! # Ok(())
//! # }
//! ```
//!
//! The crate's `examples/` show a custom tool over registers, an embedded runtime without a server, a replaced
//! built-in, the agent loop against a scripted model and a custom `x402_fetch` preset file.

pub mod prelude;

pub use holdfast_core as core;
pub use holdfast_memory as memory;

#[cfg(feature = "agent")]
pub use holdfast_agent as agent;
#[cfg(feature = "devnet")]
pub use holdfast_devnet as devnet;
#[cfg(feature = "mcp")]
pub use holdfast_mcp as mcp;
#[cfg(feature = "server")]
pub use holdfast_server as server;
#[cfg(feature = "store")]
pub use holdfast_store as store;
#[cfg(feature = "web3")]
pub use holdfast_web3 as web3;

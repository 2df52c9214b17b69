//! The integration tests of `holdfast-agent`, one binary: a module per concern (`cargo test --test it <module>::` runs one).

mod agent_loop;
mod agents;
mod builtin_tools;
mod durability;
mod durable_sessions;
mod inbox;
mod upgrade;
mod window;

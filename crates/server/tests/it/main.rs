//! The integration tests of `holdfast-server`, one binary: a module per concern (`cargo test --test it <module>::` runs one).

mod agent_turn;
mod api;
mod browser;
mod data_dir;
mod edge;
mod schemathesis;

//! The integration tests of `holdfast-memory`, one binary: a module per concern (`cargo test --test it <module>::` runs one).

mod common;
mod messages;
mod runtime;
mod stores;
mod tools;

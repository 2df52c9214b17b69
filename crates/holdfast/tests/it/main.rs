//! The integration tests of `holdfast`, one binary: a module per concern (`cargo test --test it <module>::` runs one).

mod chat;
mod cli;
mod common;
mod crash;
mod devnet;
mod instances;
mod serve;

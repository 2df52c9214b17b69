//! The integration tests of `holdfast-devnet`, one binary: a module per concern (`cargo test --test it <module>::` runs one).

// The CLI's output macros, at the crate root where the CLI's own code expects them (`cli_glue`).
#[path = "../../../holdfast/src/cli/console.rs"]
#[macro_use]
#[allow(dead_code, unused_macros)]
mod console;
mod account;
mod cli_glue;
mod common;
mod disk;
mod paywall;
mod price_feed;
mod quoter;
mod remember;
mod up_down;

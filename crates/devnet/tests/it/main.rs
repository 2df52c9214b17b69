//! The integration tests of `holdfast-devnet`, one binary: a module per concern (`cargo test --test it <module>::` runs one).

mod cli_glue;
mod common;
mod paywall;
mod price_feed;
mod quoter;
mod up_down;

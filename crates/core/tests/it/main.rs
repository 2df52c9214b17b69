//! The integration tests of `holdfast-core`, one binary: a module per concern (`cargo test --test it <module>::` runs one).

mod properties;
mod registry;
mod scanner_reference;

//! The integration tests of `holdfast-mcp`, one binary: a module per concern (`cargo test --test it <module>::` runs one).

mod common;
mod devnet_swap;
mod http_edge;
mod interop;
mod principals;
mod protocol;
mod restart;

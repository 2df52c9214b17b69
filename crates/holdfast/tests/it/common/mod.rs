//! Helpers of the binary's tests: a holding HTTP proxy for the crash harness; a running `serve` and the devnet.

pub(crate) mod hold_proxy;
pub(crate) mod serve;

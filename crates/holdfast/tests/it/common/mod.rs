//! Helpers of the binary's tests: a holding HTTP proxy for the crash harness.

pub(crate) mod hold_proxy;

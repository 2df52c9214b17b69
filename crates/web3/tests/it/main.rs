//! The integration tests of `holdfast-web3`, one binary: a module per concern (`cargo test --test it <module>::` runs one).

mod account;
mod common;
mod evidence;
mod hallucination;
mod held_back;
mod hostile;
mod interop;
mod journal_faults;
mod kernel;
mod nonce;
mod refusals;
mod restart;
mod secrets;
mod swap;
mod transfer;
mod user_amounts;
mod x402;
mod x402_idle_chain;

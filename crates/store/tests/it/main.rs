//! holdfast-store's integration tests (one binary): what several instances on one PostgreSQL database see.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod ambiguous_commit;
mod fanout;
mod layers;
mod memory_file;

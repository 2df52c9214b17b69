//! This crate's tables: [`MEMORY`] (blocks, their history, the search indexes, cached embeddings), [`TASKS`] and
//! [`MESSAGES`] (messages between agents, inboxes, the outbox, groups, channels, the anti-loop windows, reminders).
//! Their schema lives with every other table's in holdfast-store ([`holdfast_store::schema`], SQL files per
//! dialect); the SQLite file ([`crate::Database`]) applies the SQLite forms, the PostgreSQL stores the PostgreSQL
//! forms of the same versions.
//!
//! Files written before the one runner recorded their steps in `memory_migrations`; version 1 of each component
//! finds their tables in place (`IF NOT EXISTS`, and columns later steps of the old list added are added when
//! missing), so such a file is brought up to date without losing a row.

pub use holdfast_store::schema::{MEMORY, MESSAGES, TASKS};

/// Every component of this crate, in the order they are applied.
pub const ALL: [holdfast_store::Component; 3] = [MEMORY, TASKS, MESSAGES];

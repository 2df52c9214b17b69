//! Shared test fixtures: a runtime on a real SQLite file in a temp dir, on a manual clock.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use chrono::{DateTime, TimeZone, Utc};
use holdfast_core::config::CoreConfig;
use holdfast_core::{CoreServices, ToolContext};
use holdfast_memory::{AgentRuntime, DEFAULT_DB_FILE, Database, ManualClock, MemoryConfig};
use std::path::Path;
use std::sync::Arc;

pub(crate) fn start_time() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 3, 1, 9, 0, 0).unwrap()
}

pub(crate) fn ctx(session: &str) -> ToolContext {
    CoreServices::new(CoreConfig::default()).unwrap().new_session(session)
}

/// A runtime on `dir/holdfast.db` with `clock`.
pub(crate) async fn open(dir: &Path, clock: &ManualClock, config: MemoryConfig) -> AgentRuntime {
    let db = Database::open(dir.join(DEFAULT_DB_FILE)).unwrap();
    AgentRuntime::builder(db).config(config).clock(Arc::new(clock.clone())).build().await.unwrap()
}

pub(crate) struct Fixture {
    pub dir: tempfile::TempDir,
    pub clock: ManualClock,
    pub runtime: AgentRuntime,
}

pub(crate) async fn fixture(config: MemoryConfig) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(start_time());
    let runtime = open(dir.path(), &clock, config).await;
    Fixture { dir, clock, runtime }
}

/// Config with the anti-loop cooldown off (tests that are not about it).
pub(crate) fn no_cooldown() -> MemoryConfig {
    MemoryConfig { agent_cooldown_secs: 0, ..MemoryConfig::default() }
}

//! Time as the runtime sees it: the system clock, or a manual clock that tests move by hand.
//!
//! Reminders, the anti-loop cooldown, timestamps on blocks, edits and tasks all read the runtime's [`Clock`], so
//! tests can make a reminder come due "while the process was down" without sleeping.

use chrono::{DateTime, Utc};
use parking_lot::Mutex;
use std::fmt;
use std::sync::Arc;

/// A source of the current time.
pub trait Clock: Send + Sync + fmt::Debug + 'static {
    /// Now.
    fn now(&self) -> DateTime<Utc>;
}

/// The system clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}

/// A clock that only moves when told to. Clones share the same time.
#[derive(Debug, Clone)]
pub struct ManualClock {
    now: Arc<Mutex<DateTime<Utc>>>,
}

impl ManualClock {
    /// A clock stopped at `start`.
    pub fn new(start: DateTime<Utc>) -> Self {
        Self { now: Arc::new(Mutex::new(start)) }
    }

    /// Moves the clock forward (or back, with a negative delta).
    pub fn advance(&self, by: chrono::Duration) {
        let mut now = self.now.lock();
        *now += by;
    }

    /// Sets the clock.
    pub fn set(&self, to: DateTime<Utc>) {
        *self.now.lock() = to;
    }
}

impl Clock for ManualClock {
    fn now(&self) -> DateTime<Utc> {
        *self.now.lock()
    }
}

/// The shared clock type.
pub type SharedClock = Arc<dyn Clock>;

/// The wire and storage form of a time: RFC 3339, UTC, milliseconds (sorts lexicographically).
pub fn fmt_time(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// Parses a time written by [`fmt_time`] (or any RFC 3339 time).
pub fn parse_time(s: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(s).ok().map(|t| t.with_timezone(&Utc))
}

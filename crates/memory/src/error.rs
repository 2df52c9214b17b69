//! The crate's error type and its mapping onto holdfast's stable error codes.
//!
//! Every failure inside this crate is a [`MemoryError`]; at the tool boundary it becomes a [`ToolError`] whose code
//! is one of the stable codes (`memory_not_found`, `memory_read_only`, `memory_no_match`, `memory_ambiguous_match`,
//! `target_not_found`, `rate_limited`, `invalid_params`, `not_found`, `upstream_error`, `internal`) and whose message
//! names the offending field or block.

use crate::blocks::block::Permission;
use holdfast_core::{ErrorCode, HasErrorCode, ToolError};
use std::time::Duration;

/// What went wrong in memory, messaging, reminders or tasks.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MemoryError {
    /// The memory block does not exist.
    #[error("no memory block labelled `{label}`{}", existing_hint(existing))]
    BlockNotFound {
        /// The label asked for.
        label: String,
        /// The labels that do exist, to help the caller retry.
        existing: Vec<String>,
    },
    /// The block's permission forbids the edit.
    #[error("memory block `{label}` is {} and cannot be changed with {attempted}{}", permission.describe(), permission_hint(*permission))]
    ReadOnly {
        /// The block.
        label: String,
        /// Its permission.
        permission: Permission,
        /// The operation that was refused (`update_memory`, `replace_in_memory`, …).
        attempted: String,
    },
    /// `replace_in_memory` found no occurrence of `old`.
    #[error(
        "`old` does not occur in memory block `{label}`; {} Retry with text copied exactly from the value.",
        describe_window(value_window, *truncated)
    )]
    NoMatch {
        /// The block.
        label: String,
        /// The block's current value, or the window of it where `old` almost matched.
        value_window: String,
        /// True when `value_window` is only part of the value.
        truncated: bool,
    },
    /// `replace_in_memory` found several occurrences of `old`.
    #[error(
        "`old` occurs {count} times in memory block `{label}` (lines {}); include more surrounding text so it matches exactly once",
        join_numbers(lines)
    )]
    AmbiguousMatch {
        /// The block.
        label: String,
        /// Number of occurrences.
        count: usize,
        /// 1-based line numbers of the occurrences.
        lines: Vec<usize>,
    },
    /// A parameter is malformed.
    #[error("`{field}`: {reason}")]
    InvalidParams {
        /// The offending field.
        field: String,
        /// Why.
        reason: String,
    },
    /// A message target (agent, group, channel) does not exist.
    #[error("`target.id`: no {kind} named `{id}`{}", existing_hint(existing))]
    TargetNotFound {
        /// `agent`, `group` or `channel`.
        kind: &'static str,
        /// The id asked for.
        id: String,
        /// The known ids of that kind.
        existing: Vec<String>,
    },
    /// The anti-loop cooldown refused a message between two agents.
    #[error(
        "`target`: agent `{from}` messaged `{to}` less than {}s ago; the anti-loop cooldown allows one message per {}s from one agent to another. Retry in {}s, or wait for a reply.",
        cooldown.as_secs(), cooldown.as_secs(), retry_after.as_secs().max(1)
    )]
    Cooldown {
        /// The sender.
        from: String,
        /// The recipient.
        to: String,
        /// The configured cooldown.
        cooldown: Duration,
        /// How long until the pair may message again.
        retry_after: Duration,
    },
    /// A message between agents was refused: the conversation that led to it already made the most hops allowed.
    #[error(
        "`target`: this conversation between agents already made {hops} hops, the most `[memory] max_hops` allows; answer your user instead, or wait for a message that starts a new conversation"
    )]
    HopLimit {
        /// Hops made so far.
        hops: u32,
    },
    /// An agent has the most pending reminders allowed.
    #[error("`at`: you already have {pending} pending reminders, the most one agent may have; wait until one fires")]
    TooManyReminders {
        /// Pending reminders of the agent.
        pending: u32,
    },
    /// A reminder was already delivered (by another scheduler pass); this delivery is dropped.
    #[error("the reminder was already delivered")]
    AlreadyFired,
    /// A reminder to other agents fired inside the anti-loop window of its agent and a recipient: it waits until
    /// the window ends (its `not_before`), and the scheduler delivers it then.
    #[error("the reminder waits for the anti-loop window to {to} to end, until {until}")]
    Deferred {
        /// The recipient whose window ends last.
        to: String,
        /// When it may fire ([`crate::clock::fmt_time`]).
        until: String,
    },
    /// A task, reminder or other record was not found.
    #[error("`{field}`: no {what} with id {id}")]
    RecordNotFound {
        /// The field naming the record.
        field: &'static str,
        /// `task`, `reminder`, …
        what: &'static str,
        /// The id asked for.
        id: String,
    },
    /// A remote service (embeddings endpoint, webhook) failed.
    #[error("{service} failed: {detail}")]
    Upstream {
        /// Which service.
        service: String,
        /// What happened.
        detail: String,
    },
    /// The storage layer refused or failed (a migration; a database a newer release migrated is `config_invalid`).
    #[error(transparent)]
    Store(#[from] holdfast_store::StoreError),
    /// Any other failure of the runtime itself.
    #[error("{0}")]
    Internal(String),
}

fn existing_hint(existing: &[String]) -> String {
    if existing.is_empty() {
        String::from(" (there are none)")
    } else {
        let shown: Vec<&str> = existing.iter().take(20).map(String::as_str).collect();
        let more = existing.len().saturating_sub(shown.len());
        let more = if more > 0 { format!(" and {more} more") } else { String::new() };
        format!(" (existing: {}{more})", shown.join(", "))
    }
}

fn permission_hint(permission: Permission) -> &'static str {
    match permission {
        Permission::ReadOnly => "",
        Permission::Append => "; use append_memory to add to it",
        Permission::ReadWrite => "",
    }
}

fn describe_window(window: &str, truncated: bool) -> String {
    if truncated {
        format!("the nearest part of its current value is:\n{window}\n")
    } else {
        format!("its current value is:\n{window}\n")
    }
}

fn join_numbers(lines: &[usize]) -> String {
    lines.iter().map(usize::to_string).collect::<Vec<_>>().join(", ")
}

impl MemoryError {
    /// An `invalid_params` error naming `field`.
    pub fn invalid(field: impl Into<String>, reason: impl Into<String>) -> Self {
        Self::InvalidParams { field: field.into(), reason: reason.into() }
    }

    /// An `internal` error.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::Internal(message.into())
    }
}

impl HasErrorCode for MemoryError {
    fn code(&self) -> ErrorCode {
        match self {
            Self::BlockNotFound { .. } => ErrorCode::MemoryNotFound,
            Self::ReadOnly { .. } => ErrorCode::MemoryReadOnly,
            Self::NoMatch { .. } => ErrorCode::MemoryNoMatch,
            Self::AmbiguousMatch { .. } => ErrorCode::MemoryAmbiguousMatch,
            Self::InvalidParams { .. } => ErrorCode::InvalidParams,
            Self::TargetNotFound { .. } => ErrorCode::TargetNotFound,
            Self::Cooldown { .. } | Self::HopLimit { .. } | Self::TooManyReminders { .. } => ErrorCode::RateLimited,
            Self::RecordNotFound { .. } => ErrorCode::NotFound,
            Self::Upstream { .. } => ErrorCode::UpstreamError,
            Self::Internal(_) | Self::AlreadyFired => ErrorCode::Internal,
            Self::Deferred { .. } => ErrorCode::RateLimited,
            Self::Store(e) => e.code(),
        }
    }
}

impl From<MemoryError> for ToolError {
    fn from(e: MemoryError) -> Self {
        let code = e.code();
        let details = match &e {
            MemoryError::AmbiguousMatch { lines, count, .. } => {
                Some(serde_json::json!({"lines": lines, "count": count}))
            }
            MemoryError::Cooldown { retry_after, to, .. } => {
                Some(serde_json::json!({"retry_after_secs": retry_after.as_secs().max(1), "recipient": to}))
            }
            MemoryError::BlockNotFound { existing, .. } => Some(serde_json::json!({"existing": existing})),
            _ => None,
        };
        if matches!(e, MemoryError::Store(_) | MemoryError::Internal(_)) {
            tracing::error!(error = %e, "memory runtime failure");
        }
        let error = ToolError::new(code, e.to_string());
        match details {
            Some(d) => error.with_details(d),
            None => error,
        }
    }
}

/// Shorthand for results in this crate.
pub type Result<T, E = MemoryError> = std::result::Result<T, E>;

//! Stable error codes and the error every tool returns.
//!
//! Every failure that reaches a model, a replay transcript, an HTTP client or an MCP client is a [`ToolError`]: a
//! stable snake_case [`ErrorCode`] plus a human message that names the offending field. The codes are a public
//! contract (see `docs/interfaces.md`); add new ones, never rename old ones.

use serde::{Deserialize, Serialize};
use std::fmt;

/// A stable, machine-readable error code.
///
/// Serialised in snake_case (`register_write_denied`). The set is append-only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ErrorCode {
    /// No tool with that name is registered.
    UnknownTool,
    /// The parameters did not match the tool's input schema.
    InvalidParams,
    /// A register key broke the key rules (ASCII letters, digits, `_`; 1–64 chars; starts with a letter).
    InvalidRegisterKey,
    /// The store refused a write (wrong writer, wrong origin, intrinsic register, bad value for the key's type).
    RegisterWriteDenied,
    /// A register that was needed holds no value.
    RegisterMissing,
    /// A register's value is older than its maximum age.
    RegisterStale,
    /// A string is not a well-formed Ethereum address.
    InvalidAddress,
    /// A mixed-case address whose EIP-55 checksum is wrong.
    ChecksumMismatch,
    /// An amount could not be parsed or converted exactly.
    InvalidAmount,
    /// The network is not in the network table.
    UnknownNetwork,
    /// The token is not in the token table for that network.
    UnknownToken,
    /// The preset is not configured.
    UnknownPreset,
    /// A value mixed a preset with custom fields.
    PresetConflict,
    /// A quote failed validation.
    QuoteRejected,
    /// A quote needs an ERC-20 approval first.
    AllowanceRequired,
    /// Simulating the transaction failed or its effects did not match the quote.
    SimulationFailed,
    /// The policy does not allow the action.
    PolicyDenied,
    /// The action waits for the user's approval.
    ConfirmationRequired,
    /// The user rejected the action.
    ConfirmationDenied,
    /// No offered payment requirement passed policy; nothing was signed.
    PaymentRefused,
    /// A payment was attempted and failed.
    PaymentFailed,
    /// A remote service answered with an error or something unparseable.
    UpstreamError,
    /// The memory block does not exist.
    MemoryNotFound,
    /// The memory block may not be changed that way.
    MemoryReadOnly,
    /// A replace found no match.
    MemoryNoMatch,
    /// A replace found several matches.
    MemoryAmbiguousMatch,
    /// A message target does not exist.
    TargetNotFound,
    /// A configuration file could not be loaded.
    ConfigInvalid,
    /// A transaction was sent but failed on chain, or could not be sent.
    TransactionFailed,
    /// A confirmation id is unknown or already resolved.
    ConfirmationNotFound,
    /// A task, reminder or other record was not found.
    NotFound,
    /// The runtime failed in a way that is not the caller's fault (storage, I/O).
    Internal,
    /// The call was refused because it came too soon after the same one (for example the anti-loop cooldown between
    /// two agents); `details.retry_after_secs` says when it may be retried.
    RateLimited,
    /// The same value-moving action was already signed; it is never sent twice.
    DuplicateAction,
    /// A register holds a value of another type than the parameter needs (a price where a swap quote is expected).
    RegisterTypeMismatch,
    /// An earlier transaction of the wallet has an unknown broadcast outcome; nothing new is signed until it is
    /// reconciled.
    OutcomeUnknown,
    /// The action needs the user's approval, but the front end it came through cannot ask the user (an MCP client
    /// without elicitation, or an elicitation that failed or timed out) and is not a user channel itself. The
    /// pending confirmation was withdrawn, so nothing can approve it later, and nothing was signed or sent: run the
    /// action where holdfast can ask the user (`holdfast chat`, the web UI of `holdfast serve`).
    ConfirmationUnavailable,
    /// The session's saved state was changed by another holdfast process on the same data dir since this one loaded
    /// it (for example `holdfast serve` and `holdfast mcp` both using one session). Nothing of this change was saved;
    /// the session is reloaded from what was saved, so the next call sees the other process's state.
    SessionConflict,
    /// The call was stopped before it finished (the user's stop button, a closed page, Ctrl-C). A tool stops only at
    /// a point where it has written nothing; once it signed or paid, it finishes instead.
    Cancelled,
}

impl ErrorCode {
    /// Every code, in declaration order.
    pub const ALL: &'static [ErrorCode] = &[
        Self::UnknownTool,
        Self::InvalidParams,
        Self::InvalidRegisterKey,
        Self::RegisterWriteDenied,
        Self::RegisterMissing,
        Self::RegisterStale,
        Self::InvalidAddress,
        Self::ChecksumMismatch,
        Self::InvalidAmount,
        Self::UnknownNetwork,
        Self::UnknownToken,
        Self::UnknownPreset,
        Self::PresetConflict,
        Self::QuoteRejected,
        Self::AllowanceRequired,
        Self::SimulationFailed,
        Self::PolicyDenied,
        Self::ConfirmationRequired,
        Self::ConfirmationDenied,
        Self::PaymentRefused,
        Self::PaymentFailed,
        Self::UpstreamError,
        Self::MemoryNotFound,
        Self::MemoryReadOnly,
        Self::MemoryNoMatch,
        Self::MemoryAmbiguousMatch,
        Self::TargetNotFound,
        Self::ConfigInvalid,
        Self::TransactionFailed,
        Self::ConfirmationNotFound,
        Self::NotFound,
        Self::Internal,
        Self::RateLimited,
        Self::DuplicateAction,
        Self::RegisterTypeMismatch,
        Self::OutcomeUnknown,
        Self::ConfirmationUnavailable,
        Self::SessionConflict,
        Self::Cancelled,
    ];

    /// The snake_case wire form of the code.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::UnknownTool => "unknown_tool",
            Self::InvalidParams => "invalid_params",
            Self::InvalidRegisterKey => "invalid_register_key",
            Self::RegisterWriteDenied => "register_write_denied",
            Self::RegisterMissing => "register_missing",
            Self::RegisterStale => "register_stale",
            Self::InvalidAddress => "invalid_address",
            Self::ChecksumMismatch => "checksum_mismatch",
            Self::InvalidAmount => "invalid_amount",
            Self::UnknownNetwork => "unknown_network",
            Self::UnknownToken => "unknown_token",
            Self::UnknownPreset => "unknown_preset",
            Self::PresetConflict => "preset_conflict",
            Self::QuoteRejected => "quote_rejected",
            Self::AllowanceRequired => "allowance_required",
            Self::SimulationFailed => "simulation_failed",
            Self::PolicyDenied => "policy_denied",
            Self::ConfirmationRequired => "confirmation_required",
            Self::ConfirmationDenied => "confirmation_denied",
            Self::PaymentRefused => "payment_refused",
            Self::PaymentFailed => "payment_failed",
            Self::UpstreamError => "upstream_error",
            Self::MemoryNotFound => "memory_not_found",
            Self::MemoryReadOnly => "memory_read_only",
            Self::MemoryNoMatch => "memory_no_match",
            Self::MemoryAmbiguousMatch => "memory_ambiguous_match",
            Self::TargetNotFound => "target_not_found",
            Self::ConfigInvalid => "config_invalid",
            Self::TransactionFailed => "transaction_failed",
            Self::ConfirmationNotFound => "confirmation_not_found",
            Self::NotFound => "not_found",
            Self::Internal => "internal",
            Self::RateLimited => "rate_limited",
            Self::DuplicateAction => "duplicate_action",
            Self::RegisterTypeMismatch => "register_type_mismatch",
            Self::OutcomeUnknown => "outcome_unknown",
            Self::ConfirmationUnavailable => "confirmation_unavailable",
            Self::SessionConflict => "session_conflict",
            Self::Cancelled => "cancelled",
        }
    }

    /// Parses the wire form back into a code.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|c| c.as_str() == s)
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The error a tool call returns: a stable code, a message naming the offending field, and optional structured
/// details (for example a pending confirmation's id and decoded summary).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, thiserror::Error)]
#[error("{code}: {message}")]
pub struct ToolError {
    /// The stable code.
    pub code: ErrorCode,
    /// A human message that names the offending field.
    pub message: String,
    /// Structured extra information, when the code has any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<serde_json::Value>,
}

impl ToolError {
    /// An error with a code and message. URLs in the message keep only scheme and host
    /// ([`crate::redact_urls`]): RPC and API URLs carry keys, and HTTP client errors quote them.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        let message = message.into();
        let message = match crate::redact_urls(&message) {
            std::borrow::Cow::Borrowed(_) => message,
            std::borrow::Cow::Owned(redacted) => redacted,
        };
        Self { code, message, details: None }
    }

    /// Attaches structured details.
    pub fn with_details(mut self, details: serde_json::Value) -> Self {
        self.details = Some(details);
        self
    }

    /// `invalid_params` naming a field.
    pub fn invalid_params(field: &str, reason: impl fmt::Display) -> Self {
        Self::new(ErrorCode::InvalidParams, format!("`{field}`: {reason}"))
    }

    /// `internal`, for failures of the runtime itself.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::Internal, message)
    }
}

/// Anything that maps onto a stable error code.
pub trait HasErrorCode {
    /// The stable code of this error.
    fn code(&self) -> ErrorCode;
}

impl HasErrorCode for ToolError {
    fn code(&self) -> ErrorCode {
        self.code
    }
}

/// The mark around a stable code smuggled through `serde`'s string-only custom errors (see [`coded_de_error`]):
/// a control character and a number drawn once per process. A bare control character would not do: serde quotes
/// the input it rejects (an unknown field's name, a bad value) in the same message, so a caller could write the
/// mark and a code of its choice into its own parameters (`internal`, `session_conflict`, …) and have its error
/// reported with that code.
fn code_mark() -> &'static str {
    static MARK: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    MARK.get_or_init(|| format!("\u{1}{}\u{1}", crate::confirm::random_id()))
}

/// Builds a `serde` deserialisation error that carries a stable code.
///
/// `serde` errors are strings; the registry recognises this marker and reports `code` instead of the generic
/// `invalid_params`. Used by [`crate::PresetOrCustom`] to report `preset_conflict`.
pub fn coded_de_error<E: serde::de::Error>(code: ErrorCode, message: impl fmt::Display) -> E {
    let mark = code_mark();
    E::custom(format_args!("{mark}{code}{mark}{message}"))
}

/// Splits a message produced by [`coded_de_error`] into its code and plain text. Messages without the marker are
/// returned with no code (and without the mark's character U+0001, which only a caller's own input could have put
/// there).
/// The marker may sit anywhere (serde prepends field paths).
pub fn split_coded_message(message: &str) -> (Option<ErrorCode>, String) {
    let mark = code_mark();
    let plain = |text: &str| text.replace('\u{1}', "");
    let Some(start) = message.find(mark) else {
        return (None, plain(message));
    };
    let rest = &message[start + mark.len()..];
    let Some(end) = rest.find(mark) else {
        return (None, plain(message));
    };
    let code = ErrorCode::parse(&rest[..end]);
    let text = format!("{}{}", &message[..start], &rest[end + mark.len()..]);
    (code, plain(&text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_round_trips_through_its_wire_form() {
        for code in ErrorCode::ALL {
            let json = serde_json::to_value(code).unwrap_or_default();
            assert_eq!(json, serde_json::Value::String(code.as_str().to_owned()));
            assert_eq!(ErrorCode::parse(code.as_str()), Some(*code));
        }
    }

    #[test]
    fn coded_messages_survive_a_prefix() {
        let err: serde_json::Error = coded_de_error(ErrorCode::PresetConflict, "mixed `url` with preset");
        let wrapped = format!("mode: {err}");
        let (code, text) = split_coded_message(&wrapped);
        assert_eq!(code, Some(ErrorCode::PresetConflict));
        assert_eq!(text, "mode: mixed `url` with preset");
        assert_eq!(split_coded_message("plain"), (None, "plain".to_owned()));
    }

    /// Found by fuzzing `tool_params`: a field named with the old bare mark around `internal` made the registry
    /// report the caller's own bad input as the runtime's failure. Any code could be forged that way.
    #[test]
    fn a_callers_input_cannot_forge_a_code() {
        for forged in ["\u{1}internal\u{1}", "\u{1}session_conflict\u{1}", "\u{1}\u{1}internal\u{1}\u{1}"] {
            let message = format!("unknown field `x{forged}k`, expected one of `symbol`");
            let (code, text) = split_coded_message(&message);
            assert_eq!(code, None, "{message:?}");
            assert!(!text.contains('\u{1}'), "{text:?}");
        }
    }
}

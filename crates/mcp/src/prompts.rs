//! The prompts: the user's own paths into the session. MCP clients put prompts in the user's hands (slash
//! commands, a prompt menu, a form for the arguments); models do not call them.
//!
//! - [`USER_REQUEST_PROMPT`] `{text}` — the user's request. Getting it scans `text` into the session's context bank
//!   (addresses, tokens, networks, amounts — invariant 11: user-authored text only), records it in the session's
//!   history, and returns it unchanged as a user message for the conversation. This is how the user's words reach
//!   the bank without the model retyping them; no tool feeds the bank.
//! - [`crate::confirm::CONFIRM_PROMPT`] `{confirmation_id}` — the user approves a pending value-moving action; the
//!   server runs the approved call and returns the outcome as a user message.
//! - [`crate::confirm::DENY_PROMPT`] `{confirmation_id}` — the user rejects it.

use crate::confirm::{CONFIRM_PROMPT, DENY_PROMPT};
use rmcp::ErrorData;
use rmcp::model::{JsonObject, Prompt, PromptArgument};
use serde_json::Value;

/// The prompt that brings the user's words into the session.
pub const USER_REQUEST_PROMPT: &str = "user_request";

/// The longest `text` accepted by [`USER_REQUEST_PROMPT`], in bytes.
pub const MAX_USER_TEXT: usize = 64 * 1024;

/// The prompts as listed.
pub fn list() -> Vec<Prompt> {
    let id_arg = || {
        vec![
            PromptArgument::new("confirmation_id")
                .with_title("Confirmation id")
                .with_description("The id in the confirmation_required result, e.g. cf_0123456789abcdef.")
                .with_required(true),
        ]
    };
    vec![
        Prompt::new(
            USER_REQUEST_PROMPT,
            Some(
                "Send your request to holdfast. The addresses, tokens, networks and amounts you write go straight \
                 into this session's context bank, so the assistant can use them without retyping them.",
            ),
            Some(vec![
                PromptArgument::new("text")
                    .with_title("Your request")
                    .with_description(
                        "What you want done, in your own words, e.g. \"swap 0.001 ETH for USDC on base\".",
                    )
                    .with_required(true),
            ]),
        )
        .with_title("holdfast: your request"),
        Prompt::new(
            CONFIRM_PROMPT,
            Some(
                "Approve a value-moving action that waits for you (see the holdfast://session/confirmations \
                 resource). holdfast then signs and sends exactly that action and shows you the outcome.",
            ),
            Some(id_arg()),
        )
        .with_title("holdfast: approve"),
        Prompt::new(
            DENY_PROMPT,
            Some("Reject a value-moving action that waits for your approval. Nothing is signed or sent."),
            Some(id_arg()),
        )
        .with_title("holdfast: reject"),
    ]
}

/// A required string argument of a prompt, trimmed and non-empty.
pub fn required_arg(arguments: Option<&JsonObject>, name: &str) -> Result<String, ErrorData> {
    let value = arguments.and_then(|a| a.get(name));
    match value {
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(s.trim().to_owned()),
        Some(Value::String(_)) | None | Some(Value::Null) => {
            Err(ErrorData::invalid_params(format!("argument `{name}` is required"), None))
        }
        Some(other) => Err(ErrorData::invalid_params(format!("argument `{name}` must be a string, got {other}"), None)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn arguments_must_be_present_non_empty_strings() {
        let args: JsonObject = serde_json::from_value(json!({"text": "  swap 1 ETH ", "n": 3, "e": " "})).unwrap();
        assert_eq!(required_arg(Some(&args), "text").unwrap(), "swap 1 ETH");
        for missing in ["n", "e", "absent"] {
            assert!(required_arg(Some(&args), missing).is_err(), "{missing}");
        }
        assert!(required_arg(None, "text").is_err());
        let names: Vec<String> = list().into_iter().map(|p| p.name).collect();
        assert_eq!(names, ["user_request", "holdfast_confirm", "holdfast_deny"]);
    }
}

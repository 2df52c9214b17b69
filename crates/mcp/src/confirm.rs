//! Confirmation of value-moving actions over MCP (invariant 7): the *user* approves the decoded action, never the
//! MCP client.
//!
//! An MCP client is the model's host, not the user: everything it sends — tool calls, prompts, completions, resource
//! reads — may come from a confused or hostile model. So over MCP the only user channel is **elicitation**: a form
//! the client shows to the human, outside the model's reach. When a tool call ends in `confirmation_required` (its
//! `details` carry `confirmation_id` and the decoded `summary`), the server:
//!
//! - **with elicitation** (the client declared the `elicitation` capability, form mode): sends `elicitation/create`
//!   with the decoded action (sell, minimum received, contract, fees) and a single "approve" checkbox. Accept with
//!   `approve: true` → approved through [`holdfast_core::UserChannel::McpElicitation`] and the *same* tool call runs
//!   once (`holdfast_agent::Runtime::decide`; the approval is bound to the action's fingerprint). Decline, cancel, or
//!   `approve: false` → denied, `confirmation_denied`.
//! - **without elicitation**, or when the elicitation fails or times out: the pending confirmation is withdrawn
//!   ([`holdfast_core::Confirmations::withdraw`]) so nothing can ever approve it, and the call fails with
//!   `confirmation_unavailable`, whose message tells the user where to run the action instead (`holdfast chat`, the
//!   web UI) — see [`unavailable`].
//!
//! No tool, prompt, completion or resource decides a confirmation.

use holdfast_core::{Confirmation, ErrorCode, ToolError};
use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction};
use serde_json::{Value, json};
use std::fmt::Write as _;

/// Summary fields in the order a person reads them, with their labels.
const LABELS: &[(&str, &str)] = &[
    ("action", "Action"),
    ("network", "Network"),
    ("sell", "Sell"),
    ("buy_minimum", "Minimum received"),
    ("buy_expected", "Expected to receive"),
    ("buy_simulated", "Simulation received"),
    ("token", "Token"),
    ("amount", "Amount"),
    ("token_address", "Token contract"),
    ("spender", "Spender"),
    ("pay_to", "Pay to"),
    ("contract", "Contract"),
    ("value", "Native value sent"),
    ("max_network_fee", "Max network fee"),
    ("gas_limit", "Gas limit"),
];

/// The decoded action as lines of `Label: value`, known fields first, in reading order.
pub fn describe_action(summary: &Value) -> String {
    let Value::Object(map) = summary else { return summary.to_string() };
    let mut out = String::new();
    let text = value_text;
    for (key, label) in LABELS {
        if let Some(v) = map.get(*key).filter(|v| !v.is_null()) {
            let _ = writeln!(out, "{label}: {}", text(v));
        }
    }
    for (key, v) in map.iter().filter(|(k, v)| !v.is_null() && !LABELS.iter().any(|(l, _)| l == k)) {
        let mut label = key.replace('_', " ");
        if let Some(first) = label.get_mut(..1) {
            first.make_ascii_uppercase();
        }
        let _ = writeln!(out, "{label}: {}", text(v));
    }
    out.trim_end().to_owned()
}

/// A summary value as a person reads it: a string as is; the swap's price check as a sentence; another object as
/// `label value` pairs; a list joined with commas — never raw JSON.
fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Object(m) if m.contains_key("expected") && m.contains_key("minimum_accepted") => {
            let f = |k: &str| m.get(k).map(value_text).unwrap_or_default();
            let verdict = if m.get("passed").and_then(Value::as_bool) == Some(true) { "passed" } else { "failed" };
            format!(
                "{verdict}: {} expected by {}; at least {} accepted ({} bps); the quote promises {}, the simulation \
                 delivers {}",
                f("expected"),
                f("source"),
                f("minimum_accepted"),
                f("max_slippage_bps"),
                f("promised"),
                f("simulated")
            )
        }
        Value::Object(m) => m
            .iter()
            .filter(|(_, v)| !v.is_null())
            .map(|(k, v)| format!("{} {}", k.replace('_', " "), value_text(v)))
            .collect::<Vec<_>>()
            .join("; "),
        Value::Array(items) => items.iter().map(value_text).collect::<Vec<_>>().join(", "),
        other => other.to_string(),
    }
}

/// The confirmation id in a `confirmation_required` error's details.
pub fn confirmation_id(error: &ToolError) -> Option<String> {
    if error.code != ErrorCode::ConfirmationRequired {
        return None;
    }
    error.details.as_ref()?.get("confirmation_id")?.as_str().map(str::to_owned)
}

/// The `elicitation/create` request for a pending confirmation.
pub fn elicitation(pending: &Confirmation) -> Result<ElicitRequestParams, ToolError> {
    let message = format!(
        "holdfast asks for your approval before `{tool}` moves value ({reason}).\n\n{action}\n\n\
         Approve only if this is exactly what you asked for. Declining sends nothing.",
        tool = pending.tool,
        reason = pending.reason,
        action = describe_action(&pending.summary),
    );
    serde_json::from_value(json!({
        "mode": "form",
        "message": message,
        "requestedSchema": {
            "type": "object",
            "properties": {
                "approve": {
                    "type": "boolean",
                    "title": "Approve this action",
                    "description": "Sign and send exactly the action shown above.",
                    "default": false
                }
            },
            "required": ["approve"]
        }
    }))
    .map_err(|e| ToolError::internal(format!("cannot build the elicitation request: {e}")))
}

/// The user's decision in an elicitation result: approve only on *accept* with `approve: true`.
pub fn approved(result: &ElicitResult) -> bool {
    result.action == ElicitationAction::Accept
        && result.content.as_ref().and_then(|c| c.get("approve")).and_then(Value::as_bool) == Some(true)
}

/// What the user did instead of approving, for the `confirmation_denied` message.
pub fn refusal(result: &ElicitResult) -> &'static str {
    match result.action {
        ElicitationAction::Accept => "left `approve` unchecked",
        ElicitationAction::Decline => "declined",
        _ => "cancelled",
    }
}

/// Where to run an action that needs the user's approval when the MCP client cannot ask the user.
pub const RUN_IT_ELSEWHERE: &str = "To do it, run it where holdfast can ask you: `holdfast chat`, or the web UI of \
`holdfast serve`.";

/// `confirmation_unavailable` for a pending confirmation that no user channel can be asked about: `why` says why the
/// client cannot ask the user. The caller withdraws the confirmation; `details` keep the (withdrawn) id, the decoded
/// `summary` and the `reason` it needed approval.
pub fn unavailable(pending: &Confirmation, why: &str) -> ToolError {
    ToolError::new(
        ErrorCode::ConfirmationUnavailable,
        format!(
            "`{tool}` needs the user's approval ({reason}), but {why}; an MCP client cannot approve for the user. \
             The request {id} was withdrawn and nothing was signed or sent. {RUN_IT_ELSEWHERE} Do not retry this \
             call here.",
            tool = pending.tool,
            reason = pending.reason,
            id = pending.id,
        ),
    )
    .with_details(json!({
        "confirmation_id": pending.id,
        "withdrawn": true,
        "summary": pending.summary,
        "reason": pending.reason,
    }))
}

/// `confirmation_denied` for a confirmation the user rejected.
pub fn denied(pending: &Confirmation, how: &str) -> ToolError {
    ToolError::new(
        ErrorCode::ConfirmationDenied,
        format!("the user {how} `{}` (confirmation {}); nothing was signed or sent", pending.tool, pending.id),
    )
    .with_details(json!({"confirmation_id": pending.id, "summary": pending.summary}))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_price_check_and_other_objects_read_as_text_not_json() {
        let summary = json!({
            "action": "swap",
            "price_check": {"source": "ETH / USD, USDC / USD feeds", "expected": "29.9 USDC", "minimum_accepted": "29.6 USDC",
                            "promised": "29.7 USDC", "simulated": "29.8 USDC", "deviation_bps": 67, "max_slippage_bps": 100,
                            "passed": true},
            "call": {"function": "sell", "recipient": "0xabc"},
        });
        let text = describe_action(&summary);
        assert!(!text.contains('{') && !text.contains('"'), "{text}");
        assert!(
            text.contains("Price check: passed: 29.9 USDC expected by ETH / USD, USDC / USD feeds; at least 29.6 USDC accepted (100 bps)"),
            "{text}"
        );
        assert!(text.contains("function sell; recipient 0xabc"), "{text}");
    }

    #[test]
    fn the_decoded_action_reads_in_order_with_labels() {
        let summary = json!({
            "max_network_fee": "0.0001 ETH", "contract": "0x0000000000001fF3684f28c67538d4D072C22734",
            "sell": "0.02 ETH", "buy_minimum": "49.5 USDC", "action": "swap", "route_hops": 1, "gas_limit": null
        });
        let text = describe_action(&summary);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines,
            [
                "Action: swap",
                "Sell: 0.02 ETH",
                "Minimum received: 49.5 USDC",
                "Contract: 0x0000000000001fF3684f28c67538d4D072C22734",
                "Max network fee: 0.0001 ETH",
                "Route hops: 1",
            ]
        );
    }

    #[test]
    fn only_an_explicit_approval_counts() {
        let result = |action, content: Option<Value>| {
            let r = ElicitResult::new(action);
            match content {
                Some(c) => r.with_content(c),
                None => r,
            }
        };
        assert!(approved(&result(ElicitationAction::Accept, Some(json!({"approve": true})))));
        assert!(!approved(&result(ElicitationAction::Accept, Some(json!({"approve": false})))));
        assert!(!approved(&result(ElicitationAction::Accept, Some(json!({"approve": "true"})))));
        assert!(!approved(&result(ElicitationAction::Accept, None)));
        assert!(!approved(&result(ElicitationAction::Decline, Some(json!({"approve": true})))));
        assert!(!approved(&result(ElicitationAction::Cancel, None)));
    }

    #[test]
    fn the_elicitation_shows_the_action_and_unavailable_says_where_to_go() {
        let ctx =
            holdfast_core::CoreServices::new(holdfast_core::config::CoreConfig::default()).unwrap().new_session("s");
        let confirmations = &ctx.confirmations;
        let summary = json!({"sell": "1 ETH", "buy_minimum": "2 USDC"});
        let pending =
            ctx.require_confirmation("web3_tx", &json!({}), "fp", summary, "above the limit", |_| true).unwrap_err();
        assert_eq!(confirmation_id(&pending).as_deref().map(|id| id.starts_with("cf_")), Some(true));
        let pending = confirmations.get(&confirmation_id(&pending).unwrap()).unwrap();
        let elicit = elicitation(&pending).unwrap();
        let wire = serde_json::to_value(&elicit).unwrap();
        assert!(wire["message"].as_str().unwrap().contains("Minimum received: 2 USDC"), "{wire}");
        assert_eq!(wire["requestedSchema"]["properties"]["approve"]["type"], "boolean");

        let err = unavailable(&pending, "this MCP client does not support elicitation");
        assert_eq!(err.code, ErrorCode::ConfirmationUnavailable);
        assert_eq!(err.code.as_str(), "confirmation_unavailable");
        for needle in ["web3_tx", "above the limit", "does not support elicitation", "holdfast chat", "web UI"] {
            assert!(err.message.contains(needle), "{needle}: {}", err.message);
        }
        assert!(!err.message.contains("holdfast_confirm"), "{}", err.message);
        let details = err.details.unwrap();
        assert_eq!((details["summary"]["sell"].as_str(), details["withdrawn"].as_bool()), (Some("1 ETH"), Some(true)));
        assert_eq!(confirmation_id(&ToolError::new(ErrorCode::ConfirmationUnavailable, "x")), None);
    }
}

//! Confirmation of value-moving actions over MCP (invariant 7): the *user* approves the decoded action, never the
//! model.
//!
//! When a tool call ends in `confirmation_required` (its `details` carry `confirmation_id` and the decoded
//! `summary`), the server:
//!
//! - **with elicitation** (the client declared the `elicitation` capability, form mode): sends `elicitation/create`
//!   to the client, which shows the user the decoded action (sell, buy, minimum received, contract, fees) and a single
//!   "approve" checkbox, outside the model's reach. Accept with `approve: true` → the confirmation is approved and
//!   the *same* tool call runs again (the approval is bound to the action's fingerprint, so only that exact action
//!   can use it). Decline, cancel, or `approve: false` → the confirmation is denied and the call returns
//!   `confirmation_denied`. If the elicitation itself fails (timeout, client error), nothing is approved: the call
//!   returns `confirmation_required` with the instructions below and the confirmation stays pending.
//! - **without elicitation**: returns `confirmation_required` with instructions for the user — run the MCP prompt
//!   `holdfast_confirm` with the confirmation id (or `holdfast_deny`). Prompts are user-triggered in MCP clients
//!   (slash commands, menu entries); no tool can approve anything.

use holdfast_core::{Confirmation, ErrorCode, ToolError};
use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction};
use serde_json::{Value, json};
use std::fmt::Write as _;

/// The prompt that approves a pending confirmation.
pub const CONFIRM_PROMPT: &str = "holdfast_confirm";
/// The prompt that rejects a pending confirmation.
pub const DENY_PROMPT: &str = "holdfast_deny";

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
    let text = |v: &Value| v.as_str().map_or_else(|| v.to_string(), str::to_owned);
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

/// `confirmation_required` with instructions for clients without elicitation (or when it failed).
pub fn with_instructions(mut error: ToolError, id: &str) -> ToolError {
    let instructions = format!(
        "Only the user can approve this. Ask the user to run the MCP prompt `{CONFIRM_PROMPT}` with \
         confirmation_id `{id}` (or `{DENY_PROMPT}` to reject it); the prompt shows the decoded action and runs \
         the approved call. Do not call this tool again for it."
    );
    error.message = format!("{} — {instructions}", error.message);
    let mut details = error.details.take().unwrap_or_else(|| json!({}));
    if let Value::Object(map) = &mut details {
        map.insert("instructions".into(), json!(instructions));
        map.insert("approve_with".into(), json!({"prompt": CONFIRM_PROMPT, "arguments": {"confirmation_id": id}}));
        map.insert("deny_with".into(), json!({"prompt": DENY_PROMPT, "arguments": {"confirmation_id": id}}));
    }
    error.details = Some(details);
    error
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
    fn instructions_name_the_prompt_and_keep_the_summary() {
        let err = ToolError::new(ErrorCode::ConfirmationRequired, "web3_tx waits")
            .with_details(json!({"confirmation_id": "cf_1", "summary": {"sell": "1 ETH"}}));
        assert_eq!(confirmation_id(&err).as_deref(), Some("cf_1"));
        let err = with_instructions(err, "cf_1");
        assert!(err.message.contains("holdfast_confirm") && err.message.contains("cf_1"), "{}", err.message);
        let details = err.details.unwrap();
        assert_eq!(details["summary"]["sell"], "1 ETH");
        assert_eq!(details["approve_with"]["arguments"]["confirmation_id"], "cf_1");
        let confirmations = holdfast_core::Confirmations::new(holdfast_core::EventBus::new("s"));
        let summary = json!({"sell": "1 ETH", "buy_minimum": "2 USDC"});
        let pending = confirmations.require("web3_tx", &json!({}), "fp", summary, "above the limit").unwrap_err();
        let pending = confirmations.get(&confirmation_id(&pending).unwrap()).unwrap();
        let elicit = elicitation(&pending).unwrap();
        let wire = serde_json::to_value(&elicit).unwrap();
        assert!(wire["message"].as_str().unwrap().contains("Minimum received: 2 USDC"), "{wire}");
        assert_eq!(wire["requestedSchema"]["properties"]["approve"]["type"], "boolean");
    }
}

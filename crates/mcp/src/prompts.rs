//! The one prompt, [`USER_REQUEST_PROMPT`] `{text}`: the user's request, and the only way words reach the session's
//! context bank over MCP.
//!
//! A prompt is fetched by the MCP client, and the client is the model's host, not the user: clients *say* prompts are
//! user-triggered, but nothing stops a host from fetching one on its model's behalf. So the prompt's `text` is what
//! the client said, never by itself the user's word (invariant 11; safety model, rule 15):
//!
//! - **With elicitation** the server asks the human, in a form the client shows outside the model's reach
//!   ([`request_elicitation`]): the request is shown in full and pre-filled in an editable `request` field. What the
//!   human *submits* — possibly edited — is scanned into the context bank (so its amounts and addresses get origin
//!   `user`), recorded in the history as the user's message and returned as the conversation's user message.
//! - **Without elicitation**, or when the human declines or cancels, or the elicitation fails: the client's `text`
//!   is recorded in the history as what the client said (a system note), is **not** scanned, and the result says so:
//!   nothing in it becomes `user` origin, so amounts from it are `model` origin and value-moving actions using them
//!   need the user's approval — which, over MCP, only elicitation can give.
//!
//! There is no approval prompt: no prompt, tool, completion or resource decides a confirmation (see
//! [`crate::confirm`]). Withdrawing one needs no prompt either: a confirmation is only ever pending while its
//! elicitation is open, and declining the form withdraws it.

use rmcp::ErrorData;
use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction, JsonObject, Prompt, PromptArgument};
use serde_json::{Value, json};

/// The prompt that brings the user's words into the session.
pub const USER_REQUEST_PROMPT: &str = "user_request";

/// The longest `text` accepted by [`USER_REQUEST_PROMPT`] (and `request` from its form), in bytes.
pub const MAX_USER_TEXT: usize = 64 * 1024;

/// The field of the confirmation form that holds the request the human submits.
pub const REQUEST_FIELD: &str = "request";

/// The prompts as listed.
pub fn list() -> Vec<Prompt> {
    vec![
        Prompt::new(
            USER_REQUEST_PROMPT,
            Some(
                "Send your request to holdfast. If your MCP client supports elicitation, holdfast shows you the \
                 request in a form to confirm (or edit); the addresses, tokens, networks and amounts you confirm \
                 become your own values in this session, so the assistant can use them without retyping them. \
                 Without that confirmation the request is only what the client said: nothing in it counts as yours.",
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

/// The `elicitation/create` form that asks the human to confirm (or edit) the request the client sent as theirs.
pub fn request_elicitation(text: &str) -> Result<ElicitRequestParams, ErrorData> {
    let message = format!(
        "Your MCP client sent holdfast this request in your name:\n\n{text}\n\n\
         holdfast takes the addresses, tokens, networks and amounts in a request as yours only when you confirm it \
         here: the assistant may then use them in actions within your auto-approve limits. Submit the request as \
         you mean it (edit it if needed), or decline if you did not write it."
    );
    serde_json::from_value(json!({
        "mode": "form",
        "message": message,
        "requestedSchema": {
            "type": "object",
            "properties": {
                REQUEST_FIELD: {
                    "type": "string",
                    "title": "Your request",
                    "description": "What you want holdfast to do, in your own words.",
                    "default": text,
                    "minLength": 1,
                    "maxLength": MAX_USER_TEXT
                }
            },
            "required": [REQUEST_FIELD]
        }
    }))
    .map_err(|e| ErrorData::internal_error(format!("cannot build the elicitation request: {e}"), None))
}

/// The request the human submitted in the form of [`request_elicitation`], trimmed; otherwise why there is none
/// (declined, cancelled, empty). A submitted request over [`MAX_USER_TEXT`] bytes is an `invalid_params` error.
pub fn submitted_request(answer: &ElicitResult) -> Result<Result<String, &'static str>, ErrorData> {
    match answer.action {
        ElicitationAction::Accept => {}
        ElicitationAction::Decline => return Ok(Err("the user declined to confirm it")),
        _ => return Ok(Err("the user cancelled the confirmation form")),
    }
    let submitted = answer.content.as_ref().and_then(|c| c.get(REQUEST_FIELD)).and_then(Value::as_str);
    match submitted.map(str::trim) {
        Some(words) if words.len() > MAX_USER_TEXT => Err(ErrorData::invalid_params(
            format!(
                "elicitation field `{REQUEST_FIELD}` is {} bytes; at most {MAX_USER_TEXT} are accepted",
                words.len()
            ),
            None,
        )),
        Some(words) if !words.is_empty() => Ok(Ok(words.to_owned())),
        _ => Ok(Err("the confirmation form came back without a request")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_must_be_present_non_empty_strings() {
        let args: JsonObject = serde_json::from_value(json!({"text": "  swap 1 ETH ", "n": 3, "e": " "})).unwrap();
        assert_eq!(required_arg(Some(&args), "text").unwrap(), "swap 1 ETH");
        for missing in ["n", "e", "absent"] {
            assert!(required_arg(Some(&args), missing).is_err(), "{missing}");
        }
        assert!(required_arg(None, "text").is_err());
        let names: Vec<String> = list().into_iter().map(|p| p.name).collect();
        assert_eq!(names, ["user_request"], "no prompt approves or decides anything");
    }

    #[test]
    fn the_form_shows_the_request_and_only_what_the_human_submits_counts() {
        let wire = serde_json::to_value(request_elicitation("swap 0.02 ETH for USDC").unwrap()).unwrap();
        assert!(wire["message"].as_str().unwrap().contains("\n\nswap 0.02 ETH for USDC\n\n"), "{wire}");
        let field = &wire["requestedSchema"]["properties"][REQUEST_FIELD];
        assert_eq!(
            (field["type"].as_str(), field["default"].as_str()),
            (Some("string"), Some("swap 0.02 ETH for USDC"))
        );
        assert_eq!(wire["requestedSchema"]["required"], json!([REQUEST_FIELD]));

        let answer = |action, content: Option<Value>| {
            let r = ElicitResult::new(action);
            match content {
                Some(c) => r.with_content(c),
                None => r,
            }
        };
        let accepted = answer(ElicitationAction::Accept, Some(json!({"request": " swap 0.01 ETH for USDC "})));
        assert_eq!(submitted_request(&accepted).unwrap(), Ok("swap 0.01 ETH for USDC".to_owned()));
        for refused in [
            answer(ElicitationAction::Decline, Some(json!({"request": "swap"}))),
            answer(ElicitationAction::Cancel, None),
            answer(ElicitationAction::Accept, None),
            answer(ElicitationAction::Accept, Some(json!({"request": "  "}))),
            answer(ElicitationAction::Accept, Some(json!({"request": 7}))),
        ] {
            assert!(submitted_request(&refused).unwrap().is_err(), "{refused:?}");
        }
        let huge = answer(ElicitationAction::Accept, Some(json!({"request": "x".repeat(MAX_USER_TEXT + 1)})));
        assert!(submitted_request(&huge).unwrap_err().message.contains("`request`"));
    }
}

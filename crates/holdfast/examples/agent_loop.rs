//! Running the agent loop from code against a scripted model.
//!
//! Run with `cargo run -p holdfast --example agent_loop` (feature `agent`, on by default).
//!
//! A [`ChatProvider`] is anything that answers a [`ChatRequest`]: holdfast ships OpenAI-compatible and Anthropic
//! clients (`holdfast::agent::llm`); here a scripted model stands in, so the example needs no API key. It asks for
//! two tools by name on its first call and answers from their results on its second. The loop runs them through the
//! runtime's registry — the same path, rules and events as `holdfast serve` — records the turn in the session's
//! history and returns the outcome. The example exits non-zero if the turn did not go as scripted.

use holdfast::agent::llm::{ChatMessage, ChatProvider, ChatRequest, ChatResponse, DeltaSink, LlmError, ToolCall};
use holdfast::agent::{CancelToken, NoObserver};
use holdfast::core::tool::BoxFuture;
use holdfast::prelude::*;
use std::sync::Arc;

/// A model that follows a script: tool calls first, then a text built from the last tool result.
struct ScriptedModel;

impl ChatProvider for ScriptedModel {
    fn name(&self) -> &str {
        "scripted"
    }

    fn model(&self) -> &str {
        "scripted-1"
    }

    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest,
        _on_delta: DeltaSink<'a>,
    ) -> BoxFuture<'a, Result<ChatResponse, LlmError>> {
        Box::pin(async move {
            let last_result = request.messages.iter().rev().find_map(|m| match m {
                ChatMessage::Tool { content, .. } => Some(content.clone()),
                _ => None,
            });
            Ok(match last_result {
                // First call: name the registers; the model never types the amount's base units itself.
                None => ChatResponse {
                    tool_calls: vec![
                        call("1", "token_lookup", r#"{"symbol":"USDC","network":"base","cache_as":"sell_token"}"#),
                        call(
                            "2",
                            "to_raw_amount",
                            r#"{"amount":"2.5","token_register":"sell_token","cache_as":"sell_amount"}"#,
                        ),
                    ],
                    ..ChatResponse::default()
                },
                // Second call: answer from the result.
                Some(result) => {
                    let raw: serde_json::Value = serde_json::from_str(&result).unwrap_or_default();
                    ChatResponse { text: format!("2.5 USDC is {} base units.", raw["raw"]), ..ChatResponse::default() }
                }
            })
        })
    }

    fn check_model(&self) -> BoxFuture<'_, Result<(), LlmError>> {
        Box::pin(async { Ok(()) })
    }
}

fn call(id: &str, name: &str, arguments: &str) -> ToolCall {
    ToolCall { id: id.to_owned(), name: name.to_owned(), arguments: arguments.to_owned() }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let runtime = Arc::new(Runtime::load(None).await?);
    let agent = Agent::new(Arc::clone(&runtime), Arc::new(ScriptedModel));
    let (session, ctx) = runtime.open_session("example").await?;

    // One user message, run to the end of the turn. NoObserver defers any confirmation (none is needed here);
    // the CancelToken is what a front end's stop button cancels.
    let outcome = agent.run_turn(&ctx, "How much is 2.5 USDC in base units?", &NoObserver, &CancelToken::new()).await?;
    println!("model calls: {}, tool calls: {}", outcome.steps, outcome.tool_calls);
    println!("answer: {}", outcome.text);

    // The turn is in the session's history: the user's words, the calls, their results, the answer.
    let history = runtime.sessions.history(&session.id).await?;
    for message in &history {
        println!("  {:?}: {}", message.role, message.content);
    }
    if outcome.text != "2.5 USDC is \"2500000\" base units." || outcome.tool_calls != 2 || history.len() != 5 {
        return Err(format!("unexpected turn: {outcome:?}, {} messages", history.len()).into());
    }
    Ok(())
}

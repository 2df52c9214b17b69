//! The context window against a scripted model on the OpenAI wire protocol: a history past the token budget is
//! summarized into a memory block — asked of the model once, shown in that session only — and never dropped from
//! storage.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use holdfast_agent::llm::openai::OpenAiProvider;
use holdfast_agent::{Agent, AgentConfig, CancelToken, MessageRole, NoObserver, Runtime};
use holdfast_testkit::scripted::{Reply, Scripted, Wire};
use std::sync::Arc;

#[tokio::test]
async fn older_turns_are_summarized_into_memory_and_kept_in_storage() {
    let runtime = Arc::new(Runtime::load(None).await.unwrap());
    let scripted = Scripted::start(
        Wire::OpenAi,
        vec![
            Reply::Text("first answer".into()),
            Reply::Text("SUMMARY-OF-FIRST: the user asked about the long-forgotten topic".into()),
            Reply::Text("second answer".into()),
            Reply::Text("other session's answer".into()),
        ],
    )
    .await;
    let provider = Arc::new(OpenAiProvider::new(&scripted.url, Some("sk-test".into()), "scripted-model"));
    let agent = Agent::new(Arc::clone(&runtime), provider)
        .with_config(AgentConfig { history_token_budget: 60, ..AgentConfig::default() });
    let (info, ctx) = runtime.open_session("test").await.unwrap();
    let long = format!("first question about the long-forgotten topic: {}", "lorem ipsum ".repeat(30));

    // One turn larger than the budget is sent whole: there is nothing older to summarize.
    let out = agent.run_turn(&ctx, &long, &NoObserver, &CancelToken::new()).await.unwrap();
    assert_eq!(out.text, "first answer");
    let out = agent.run_turn(&ctx, "second question", &NoObserver, &CancelToken::new()).await.unwrap();
    assert_eq!(out.text, "second answer");

    let requests: Vec<String> = scripted.requests.lock().iter().map(|(_, body)| body.to_string()).collect();
    assert_eq!(requests.len(), 3);
    // The model was asked to summarize the first turn, with no tools …
    assert!(requests[1].contains("summarizing the earlier part") && requests[1].contains("lorem ipsum"));
    assert!(requests[1].contains("first answer") && !requests[1].contains("\"tools\""), "{}", requests[1]);
    // … and the next request carries the summary instead of the first turn.
    assert!(requests[2].contains("SUMMARY-OF-FIRST") && !requests[2].contains("lorem ipsum"), "{}", requests[2]);
    assert!(requests[2].contains("second question"));

    // The summary is a read-only memory block; the stored history still holds every message, and says what happened.
    let block = runtime.agent.memory.get(&format!("summary_{}", info.id)).await.unwrap().unwrap();
    assert!(block.value.starts_with("SUMMARY-OF-FIRST"));
    assert_eq!(block.permission, holdfast_memory::Permission::ReadOnly);
    // The label is the runtime's: no tool may write or forge a session summary.
    let label = format!("summary_{}", info.id);
    let forged = runtime.agent.memory.update(&label, "forged".into(), None, "update_memory").await.unwrap_err();
    assert!(forged.to_string().contains("runtime's session summaries"), "{forged}");
    let other = runtime.agent.memory.update("summary_s_other", "forged".into(), None, "update_memory").await;
    assert!(other.is_err(), "nor start one for another session");
    let history = runtime.sessions.history(&info.id).await.unwrap();
    assert!(history.iter().any(|m| m.role == MessageRole::User && m.content == long), "nothing dropped");
    assert!(history.iter().any(|m| m.role == MessageRole::System && m.content.contains("summarized into")));
    assert!(out.usage.input_tokens > 0, "the summary's tokens count in the turn's usage");

    // Another session does not see this session's summary.
    let (_, other) = runtime.open_session("test").await.unwrap();
    agent.run_turn(&other, "hello", &NoObserver, &CancelToken::new()).await.unwrap();
    let last = scripted.requests.lock().last().unwrap().1.to_string();
    assert!(!last.contains("SUMMARY-OF-FIRST"), "{last}");
    // Nor do its tools find it (another client's session, or a turn answering another agent, would read this
    // conversation): before, search_memory and list_memories showed every session's summary.
    let search = serde_json::json!({"query": "long-forgotten topic", "limit": null});
    let found = runtime.registry.call("search_memory", search.clone(), &other).await.unwrap();
    assert_eq!(found["hits"].as_array().unwrap().len(), 0, "{found}");
    let listed = runtime.registry.call("list_memories", serde_json::json!({}), &other).await.unwrap();
    assert!(!listed.to_string().contains(&label), "{listed}");
    // The session itself still finds its own.
    let found = runtime.registry.call("search_memory", search, &ctx).await.unwrap();
    assert_eq!(found["hits"][0]["label"], label.as_str(), "{found}");
    let listed = runtime.registry.call("list_memories", serde_json::json!({}), &ctx).await.unwrap();
    assert!(listed.to_string().contains(&label), "{listed}");
}

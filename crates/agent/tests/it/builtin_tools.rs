//! Seed 002's fourth test level: the built-in memory, messaging, reminder and task tools in the context of agent
//! operations — a scripted model (OpenAI wire protocol) calls them through the real loop, and the outcomes are read
//! from the stores and from what the model is shown next.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use holdfast_agent::llm::openai::OpenAiProvider;
use holdfast_agent::{Agent, CancelToken, MessageRole, NoObserver, Runtime, StoredMessage};
use holdfast_memory::AgentId;
use holdfast_testkit::scripted::{Reply, Scripted, Wire, tool};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

fn agent(runtime: &Arc<Runtime>, scripted: &Scripted) -> Agent {
    let provider = Arc::new(OpenAiProvider::new(&scripted.url, Some("sk-test".into()), "scripted-model"));
    Agent::new(Arc::clone(runtime), provider)
}

/// Each tool result of a history: (tool, parsed output or error).
fn results(history: &[StoredMessage]) -> Vec<(String, Value)> {
    history
        .iter()
        .filter(|m| m.role == MessageRole::Tool)
        .map(|m| (m.name.clone().unwrap_or_default(), serde_json::from_str(&m.content).unwrap_or(Value::Null)))
        .collect()
}

fn code(v: &Value) -> &str {
    v["error"]["code"].as_str().unwrap_or("ok")
}

async fn runtime_with(config: &str) -> (Arc<Runtime>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("holdfast.toml");
    std::fs::write(&path, config).unwrap();
    (Arc::new(Runtime::load(Some(&path)).await.unwrap()), dir)
}

#[tokio::test]
async fn memory_edits_append_replace_and_a_miss_shows_the_block() {
    let runtime = Arc::new(Runtime::load(None).await.unwrap());
    let scripted = Scripted::start(
        Wire::OpenAi,
        vec![
            Reply::Tools(vec![tool(
                "update_memory",
                json!({"label": "human", "value": "Name: Ada\nLikes: tea", "description": "About the user"}),
            )]),
            Reply::Tools(vec![tool("append_memory", json!({"label": "human", "content": "Timezone: UTC"}))]),
            Reply::Tools(vec![tool("replace_in_memory", json!({"label": "human", "old": "tea", "new": "coffee"}))]),
            Reply::Tools(vec![tool("replace_in_memory", json!({"label": "human", "old": "matcha", "new": "x"}))]),
            Reply::Text("Noted.".into()),
        ],
    )
    .await;
    let (info, ctx) = runtime.open_session("test").await.unwrap();
    let out = agent(&runtime, &scripted).run_turn(&ctx, "remember me", &NoObserver, &CancelToken::new()).await.unwrap();
    assert_eq!(out.text, "Noted.");

    let results = results(&runtime.sessions.history(&info.id).await.unwrap());
    let codes: Vec<&str> = results.iter().map(|(_, v)| code(v)).collect();
    assert_eq!(codes, ["ok", "ok", "ok", "memory_no_match"], "{results:?}");
    // The miss tells the model what the block holds, so it can retry with the exact text.
    let miss = results[3].1["error"]["message"].as_str().unwrap();
    assert!(miss.contains("does not occur") && miss.contains("Likes: coffee"), "{miss}");

    let block = runtime.agent.memory.get("human").await.unwrap().unwrap();
    assert_eq!(block.value, "Name: Ada\nLikes: coffee\nTimezone: UTC");
    // The model's next call already saw the edited block in its memory section.
    let last = scripted.requests.lock().last().unwrap().1.to_string();
    assert!(last.contains("Likes: coffee") && last.contains("Timezone: UTC"), "{last}");
}

#[tokio::test]
async fn send_message_reaches_the_user_an_agent_a_group_and_a_channel() {
    let config = "[memory]\nagent_cooldown_secs = 0\ngroups = { team = [\"assistant\", \"bob\", \"carol\"] }\n\
                  [memory.channels.alerts]\nsubscribers = [\"bob\"]\n";
    let (runtime, _dir) = runtime_with(config).await;
    let router = runtime.agent.messages.router().clone();
    for peer in ["bob", "carol"] {
        router.register_agent(&AgentId::new(peer).unwrap()).await.unwrap();
    }
    let send = |target: Value, content: &str| {
        tool("send_message", json!({"target": target, "content": content, "metadata": null}))
    };
    let scripted = Scripted::start(
        Wire::OpenAi,
        vec![
            Reply::Tools(vec![send(json!({"type": "user", "id": null}), "to you")]),
            Reply::Tools(vec![send(json!({"type": "agent", "id": "bob"}), "to bob")]),
            Reply::Tools(vec![send(json!({"type": "group", "id": "team"}), "to the team")]),
            Reply::Tools(vec![send(json!({"type": "channel", "id": "alerts"}), "to alerts")]),
            Reply::Tools(vec![send(json!({"type": "agent", "id": "nobody"}), "lost?")]),
            Reply::Text("Sent.".into()),
        ],
    )
    .await;
    let (info, ctx) = runtime.open_session("test").await.unwrap();
    let mut events = ctx.events.subscribe();
    agent(&runtime, &scripted).run_turn(&ctx, "tell everyone", &NoObserver, &CancelToken::new()).await.unwrap();

    let results = results(&runtime.sessions.history(&info.id).await.unwrap());
    let codes: Vec<&str> = results.iter().map(|(_, v)| code(v)).collect();
    assert_eq!(codes, ["ok", "ok", "ok", "ok", "target_not_found"], "{results:?}");

    // The user's message is an outbox event on this session.
    let mut outbox = Vec::new();
    while let Ok(e) = events.try_recv() {
        if e.name() == holdfast_core::event::names::MESSAGE_OUTBOX {
            outbox.push(e.data()["content"].as_str().unwrap_or_default().to_owned());
        }
    }
    assert_eq!(outbox, ["to you"]);
    // bob got the direct message, the group's and the channel's; carol only the group's; the sender none.
    let inbox = |id: &str| {
        let inbox = router.inbox(&AgentId::new(id).unwrap());
        async move { inbox.pending().await.unwrap() }
    };
    let bob: Vec<(String, String)> = inbox("bob").await.into_iter().map(|m| (m.via, m.content)).collect();
    assert_eq!(
        bob,
        [("direct", "to bob"), ("group:team", "to the team"), ("channel:alerts", "to alerts")]
            .map(|(a, b)| (a.to_owned(), b.to_owned()))
    );
    let carol: Vec<String> = inbox("carol").await.into_iter().map(|m| m.via).collect();
    assert_eq!(carol, ["group:team"]);
    assert!(inbox("assistant").await.is_empty());
}

#[tokio::test]
async fn a_scheduled_reminder_fires_and_is_acted_on() {
    let runtime = Arc::new(Runtime::load(None).await.unwrap());
    let scripted = Scripted::start(
        Wire::OpenAi,
        vec![
            Reply::Tools(vec![tool(
                "schedule_reminder",
                json!({"at": null, "in": "1s", "message": "check the gas price", "target": null}),
            )]),
            Reply::Text("I will remind myself.".into()),
            // The reminder's own turn, later:
            Reply::Tools(vec![tool(
                "update_memory",
                json!({"label": "notes", "value": "Gas checked after the reminder.", "description": null}),
            )]),
            Reply::Text("Gas is fine.".into()),
        ],
    )
    .await;
    let agent = agent(&runtime, &scripted);
    let cancel = CancelToken::new();
    let _worker = holdfast_agent::inbox::spawn(agent.clone(), cancel.clone());
    let (info, ctx) = runtime.open_session("test").await.unwrap();
    agent.run_turn(&ctx, "remind me to check gas", &NoObserver, &CancelToken::new()).await.unwrap();
    let scheduled = results(&runtime.sessions.history(&info.id).await.unwrap());
    assert_eq!(code(&scheduled[0].1), "ok", "{scheduled:?}");
    assert!(scheduled[0].1["reminder_id"].as_str().unwrap().starts_with("rem_"));

    // The reminder fires into the inbox, and its turn acts on it: the note lands in memory.
    let mut note = None;
    for _ in 0..300 {
        note = runtime.agent.memory.get("notes").await.unwrap();
        if note.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(note.expect("the reminder's turn wrote its note").value, "Gas checked after the reminder.");
    let reminders = runtime.agent.reminders.list(true).await.unwrap();
    assert!(reminders.iter().all(|r| r.fired_at.is_some()), "{reminders:?}");
    cancel.cancel();
}

#[tokio::test]
async fn a_task_is_tracked_across_turns() {
    let runtime = Arc::new(Runtime::load(None).await.unwrap());
    let task = |fields: Value| {
        let mut all = json!({"op": null, "id": null, "title": null, "notes": null, "due": null, "priority": null,
                             "status": null, "steps": null, "step": null, "include_done": null});
        for (k, v) in fields.as_object().unwrap() {
            all[k] = v.clone();
        }
        tool("track_task", all)
    };
    let scripted = Scripted::start(
        Wire::OpenAi,
        vec![
            Reply::Tools(vec![task(json!({"op": "create", "title": "Move to a new wallet",
                "steps": ["back up the key", "create the wallet", "move the funds"]}))]),
            Reply::Text("Tracked.".into()),
            Reply::Tools(vec![task(json!({"op": "complete", "id": 1, "step": 1}))]),
            Reply::Text("One step done.".into()),
            Reply::Tools(vec![task(json!({"op": "list"}))]),
            Reply::Text("Next: create the wallet.".into()),
        ],
    )
    .await;
    let agent = agent(&runtime, &scripted);
    let (info, ctx) = runtime.open_session("test").await.unwrap();
    for said in ["track moving to a new wallet", "I backed up the key", "what's next?"] {
        agent.run_turn(&ctx, said, &NoObserver, &CancelToken::new()).await.unwrap();
    }
    let results = results(&runtime.sessions.history(&info.id).await.unwrap());
    assert_eq!(results.iter().map(|(_, v)| code(v)).collect::<Vec<_>>(), ["ok", "ok", "ok"], "{results:?}");
    let created = &results[0].1["task"];
    assert_eq!((created["id"].as_u64(), created["next_step"].as_str()), (Some(1), Some("back up the key")));
    let listed = &results[2].1["tasks"][0];
    assert_eq!(listed["steps_done"], 1);
    assert_eq!(listed["next_step"], "create the wallet");
    assert_eq!(listed["next_step_number"], 2);
}

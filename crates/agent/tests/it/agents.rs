//! Several agents in one runtime (`[agents.NAME]`): each session belongs to one agent, whose persona, tools and memory
//! it uses; agents message each other and answer through their inboxes; a two-agent loop stops at the hop limit.
//! Each agent talks to its own scripted model (OpenAI wire protocol).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use holdfast_agent::llm::openai::OpenAiProvider;
use holdfast_agent::{Agent, CancelToken, MessageRole, NoObserver, Runtime};
use holdfast_testkit::scripted::{Reply, Scripted, Wire, eventually, tool};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

const CONFIG: &str = r#"
[memory]
agent_cooldown_secs = 0
max_hops = 3

[agents.researcher]
persona = "You are the researcher. You look things up and never move value."
tools = ["token_lookup", "send_message", "update_memory"]
skills = []
memory = [{ label = "focus", value = "prices on Base" }]
"#;

async fn runtime(config: &str) -> (Arc<Runtime>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("holdfast.toml");
    std::fs::write(&path, format!("[storage]\ndata_dir = {:?}\n{config}", dir.path().join("data"))).unwrap();
    (Arc::new(Runtime::load(Some(&path)).await.unwrap()), dir)
}

fn agent(runtime: &Arc<Runtime>, name: &str, scripted: &Scripted) -> Agent {
    let provider = Arc::new(OpenAiProvider::new(&scripted.url, Some("sk-test".into()), "scripted-model"));
    Agent::for_profile(Arc::clone(runtime), provider, runtime.profile(name).unwrap())
}

fn send(to: &str, content: &str) -> (String, String) {
    tool("send_message", json!({"target": {"type": "agent", "id": to}, "content": content, "metadata": null}))
}

#[tokio::test]
async fn each_agent_has_its_persona_tools_and_memory_and_keeps_its_sessions() {
    let (rt, dir) = runtime(CONFIG).await;
    let names: Vec<String> = rt.profiles().map(|p| p.name.clone()).collect();
    assert_eq!(names, ["assistant", "researcher"]);
    let scripted = Scripted::start(
        Wire::OpenAi,
        vec![
            Reply::Tools(vec![tool(
                "update_memory",
                json!({"label": "notes", "value": "ETH looked up", "description": null}),
            )]),
            Reply::Tools(vec![tool("register_set", json!({"key": "x", "value": "1"}))]),
            Reply::Text("Done.".into()),
        ],
    )
    .await;
    let researcher = agent(&rt, "researcher", &scripted);
    let (info, ctx) = rt.open_session_as("test", "researcher").await.unwrap();
    researcher.run_turn(&ctx, "note it", &NoObserver, &CancelToken::new()).await.unwrap();

    let first = scripted.requests.lock()[0].1.clone();
    let system = first["messages"][0]["content"].as_str().unwrap();
    assert!(system.starts_with("You are the researcher.") && system.contains("prices on Base"), "{system}");
    let offered: Vec<&str> =
        first["tools"].as_array().unwrap().iter().filter_map(|t| t["function"]["name"].as_str()).collect();
    assert_eq!(offered, ["token_lookup", "update_memory", "send_message"], "only its tools are offered");
    let history = rt.sessions.history(&info.id).await.unwrap();
    let refused = history.iter().filter(|m| m.role == MessageRole::Tool).nth(1).unwrap();
    assert!(
        refused.content.contains("unknown_tool") && refused.content.contains("may not call"),
        "{}",
        refused.content
    );
    assert!(ctx.registers.get("x").is_none(), "a tool outside its list never ran");

    // Its memory is its own.
    let own = rt.profile("researcher").unwrap().handle.memory.get("notes").await.unwrap();
    assert_eq!(own.unwrap().value, "ETH looked up");
    assert!(rt.agent.memory.get("notes").await.unwrap().is_none(), "not the assistant's");

    // The default agent may not run a turn in the researcher's session.
    let assistant = agent(&rt, "assistant", &scripted);
    let err = assistant.run_turn(&ctx, "hi", &NoObserver, &CancelToken::new()).await.unwrap_err();
    assert!(err.to_string().contains("belongs to agent `researcher`"), "{err}");

    // After a restart the session is still the researcher's.
    drop((researcher, assistant, ctx));
    let id = info.id.clone();
    drop(rt);
    let path = dir.path().join("holdfast.toml");
    let rt = Arc::new(Runtime::load(Some(&path)).await.unwrap());
    let ctx = rt.session(&id).await.unwrap().unwrap();
    assert_eq!(rt.profile_of(&ctx).name, "researcher");
    assert!(rt.open_session_as("test", "nobody").await.unwrap_err().to_string().contains("no agent"));

    // Its tool list holds for every caller of its sessions — the UI's tool console and the REST API call the
    // registry directly — restored after the restart too.
    let err = rt.registry.call("register_set", json!({"key": "x", "value": "1"}), &ctx).await.unwrap_err();
    assert_eq!(err.code, holdfast_core::ErrorCode::PolicyDenied, "{err:?}");
    assert!(err.message.contains("agent `researcher`") && err.message.contains("[agents.researcher] tools"), "{err:?}");
    assert!(ctx.registers.get("x").is_none());
    let ok = rt.registry.call("token_lookup", json!({"symbol": "USDC", "network": "base", "cache_as": null}), &ctx);
    assert!(ok.await.is_ok(), "its own tools run");
    // The default agent's sessions are not limited.
    let (_, own) = rt.open_session_as("test", "assistant").await.unwrap();
    rt.registry.call("register_set", json!({"key": "x", "value": "1"}), &own).await.unwrap();
}

#[tokio::test]
async fn an_agent_asks_another_and_gets_its_answer_back() {
    let (rt, _dir) = runtime(CONFIG).await;
    // The assistant (a user's turn) asks the researcher; later it reads the reply in its inbox turn.
    let assistant_model = Scripted::start(
        Wire::OpenAi,
        vec![
            Reply::Tools(vec![send("researcher", "What is USDC's address on Base?")]),
            Reply::Text("I asked the researcher.".into()),
            Reply::Text("Thanks, noted.".into()),
        ],
    )
    .await;
    let researcher_model =
        Scripted::start(Wire::OpenAi, vec![Reply::Text("0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913".into())]).await;
    let assistant = agent(&rt, "assistant", &assistant_model);
    let researcher = agent(&rt, "researcher", &researcher_model);
    let cancel = CancelToken::new();
    let _workers = [assistant.clone(), researcher].map(|a| holdfast_agent::inbox::spawn(a, cancel.clone()));

    let (_, ctx) = rt.open_session("test").await.unwrap();
    assistant.run_turn(&ctx, "find USDC's address", &NoObserver, &CancelToken::new()).await.unwrap();

    // The researcher's turn saw the question as the assistant's words, and its answer went back as a reply …
    let question =
        eventually("the researcher's turn", async || researcher_model.requests.lock().first().cloned()).await;
    let asked = question.1["messages"].as_array().unwrap().last().unwrap()["content"].as_str().unwrap().to_owned();
    assert!(asked.contains("agent 'assistant'") && asked.contains("What is USDC's address"), "{asked}");
    // … which the assistant read in its own inbox turn, without answering it back.
    // (The user's turn and the inbox turn share the assistant's model, in whichever order they reach it.)
    let read = eventually("the assistant's inbox turn", async || {
        let reqs = assistant_model.requests.lock();
        let bodies: Vec<String> = reqs.iter().map(|r| r.1.to_string()).collect();
        (bodies.len() == 3).then(|| bodies.into_iter().find(|b| b.contains("its reply to your message"))).flatten()
    })
    .await;
    assert!(read.contains("0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913") && read.contains("its reply to your message"));
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(researcher_model.requests.lock().len(), 1, "a reply is not answered");
    cancel.cancel();
}

#[tokio::test]
async fn two_model_driven_agents_answering_each_other_stop_at_the_hop_limit() {
    let (rt, _dir) = runtime(CONFIG).await;
    // Both models answer every message by messaging the other one again.
    let chatty = |to: &str| {
        (0..4)
            .flat_map(|i| [Reply::Tools(vec![send(to, &format!("and again {i}"))]), Reply::Text(String::new())])
            .collect()
    };
    let assistant_model = Scripted::start(Wire::OpenAi, chatty("researcher")).await;
    let researcher_model = Scripted::start(Wire::OpenAi, chatty("assistant")).await;
    let assistant = agent(&rt, "assistant", &assistant_model);
    let researcher = agent(&rt, "researcher", &researcher_model);
    let cancel = CancelToken::new();
    let _workers = [assistant.clone(), researcher].map(|a| holdfast_agent::inbox::spawn(a, cancel.clone()));

    // The assistant opens the conversation (as a user's turn of it would: hop 1). Only the inbox workers use the
    // models from here on, one turn at a time per agent.
    let to = holdfast_memory::MessageTarget::agent("researcher");
    let origin = holdfast_memory::SendOrigin::default();
    rt.agent.messages.send(&to, "start a conversation".into(), None, origin).await.unwrap();

    // Hops: that message is #1; the researcher's inbox turn sends #2; the assistant's sends #3; the researcher's turn
    // at hop 3 is refused (the event it raises is tested in inbox.rs).
    let refused = eventually("the refused send", async || {
        for s in rt.sessions.list(20).await.unwrap().into_iter().filter(|s| s.kind == "inbox") {
            let h = rt.sessions.history(&s.id).await.unwrap();
            if h.iter().any(|m| m.role == MessageRole::Tool && m.content.contains("rate_limited")) {
                return Some(s.id);
            }
        }
        None
    })
    .await;
    let ctx = rt.session(&refused).await.unwrap().unwrap();
    assert_eq!(rt.profile_of(&ctx).name, "researcher");
    let history = rt.sessions.history(&refused).await.unwrap();
    let error: Value =
        serde_json::from_str(&history.iter().rev().find(|m| m.role == MessageRole::Tool).unwrap().content).unwrap();
    assert!(error["error"]["message"].as_str().unwrap().contains("max_hops"), "{error}");
    tokio::time::sleep(Duration::from_millis(500)).await;
    let calls = assistant_model.requests.lock().len() + researcher_model.requests.lock().len();
    assert_eq!(calls, 6, "three turns of two model calls each, then silence");
    cancel.cancel();
}

#[tokio::test]
async fn a_broken_agents_section_is_refused_at_its_line() {
    for (config, want) in [
        ("[agents.researcher]\ntools = [\"token_lookup\", \"teleport\"]\n", "no tool named `teleport`"),
        ("[agents.assistant]\npersona = \"x\"\n", "is the default agent"),
        ("[agents.researcher]\nskills = [\"nonexistent\"]\n", "no skill named `nonexistent`"),
        ("[agents.researcher]\nfavourite_colour = \"blue\"\n", "favourite_colour"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("holdfast.toml");
        std::fs::write(&path, config).unwrap();
        let err = Runtime::load(Some(&path)).await.unwrap_err().to_string();
        assert!(err.contains(want) && err.contains("holdfast.toml:"), "{config}: {err}");
    }
}

/// An agent removed from the configuration leaves no reminder to fire: its pending ones are cancelled at the next
/// start (logged with a count); the other agents' stay.
#[tokio::test]
async fn a_removed_agents_pending_reminders_are_cancelled_at_start() {
    let with_helper = "[agents.helper]\npersona = \"You help.\"\n";
    let (rt, dir) = runtime(with_helper).await;
    let remind = json!({"at": null, "in": "2 days", "message": "check the prices", "target": null});
    let (_, helper) = rt.open_session_as("test", "helper").await.unwrap();
    rt.registry.call("schedule_reminder", remind.clone(), &helper).await.unwrap();
    let (_, own) = rt.open_session_as("test", "assistant").await.unwrap();
    rt.registry.call("schedule_reminder", remind, &own).await.unwrap();
    assert_eq!(rt.profile("helper").unwrap().handle.reminders.list(false).await.unwrap().len(), 1);
    drop((helper, own));
    drop(rt);
    let path = dir.path().join("holdfast.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    // Restarted without the helper: its reminder is cancelled, the assistant's stays.
    std::fs::write(&path, text.replace(with_helper, "")).unwrap();
    let rt = Arc::new(Runtime::load(Some(&path)).await.unwrap());
    assert_eq!(rt.agent.reminders.list(false).await.unwrap().len(), 1, "the assistant's reminder stays");
    drop(rt);
    // The helper back: nothing of its old reminder is left to fire.
    std::fs::write(&path, text).unwrap();
    let rt = Arc::new(Runtime::load(Some(&path)).await.unwrap());
    assert!(rt.profile("helper").unwrap().handle.reminders.list(false).await.unwrap().is_empty());
}

/// On a PostgreSQL database that several instances share, an instance that does not serve an agent (removed from
/// its configuration) never fires that agent's reminders and deletes none of them: they stay pending, and an
/// instance that serves the agent fires them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_shared_database_only_an_instance_serving_an_agent_fires_its_reminders() {
    let Some(url) = holdfast_testkit::postgres::fresh_database().await else { return };
    let dir = tempfile::tempdir().unwrap();
    let with_helper = "[agents.helper]\npersona = \"You help.\"\n";
    let config = |name: &str, agents: &str| {
        let path = dir.path().join(format!("{name}.toml"));
        let storage = format!("[storage]\ndata_dir = {:?}\nurl = {:?}\n", dir.path().join(name), url.expose());
        std::fs::write(&path, format!("{storage}{agents}")).unwrap();
        path
    };
    let (serving, not_serving) = (config("one", with_helper), config("two", ""));
    let pending = async |rt: &Runtime| rt.agent.messages.router().store().reminders("helper", false).await.unwrap();
    {
        let rt = Runtime::load(Some(&serving)).await.unwrap();
        let (_, helper) = rt.open_session_as("test", "helper").await.unwrap();
        let remind = json!({"at": null, "in": "1s", "message": "check the prices", "target": null});
        // The scheduler of this instance would fire it: stopped first, with the instance.
        rt.registry.call("schedule_reminder", remind, &helper).await.unwrap();
    }
    let rt = Runtime::load(Some(&not_serving)).await.unwrap();
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(pending(&rt).await.len(), 1, "due, but not fired nor deleted by an instance without the helper");
    drop(rt);

    let rt = Runtime::load(Some(&serving)).await.unwrap();
    let inbox = rt.profile("helper").unwrap().handle.inbox();
    let got = eventually("the helper's reminder", async || inbox.pending().await.unwrap().into_iter().next()).await;
    assert_eq!((got.via.as_str(), got.content.as_str()), ("reminder", "check the prices"));
    assert!(pending(&rt).await.is_empty());
}

/// A reminder to the user is announced on the session that scheduled it, on whichever instance serves that session:
/// here the instance that fires it no longer holds the session (and has served another since), and the other
/// instance's subscriber to that session gets the `message.outbox`, through the event relay.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reminder_to_the_user_reaches_its_session_on_another_instance() {
    let Some(url) = holdfast_testkit::postgres::fresh_database().await else { return };
    let dir = tempfile::tempdir().unwrap();
    let config = |name: &str| {
        let path = dir.path().join(format!("{name}.toml"));
        let storage = format!("[storage]\ndata_dir = {:?}\nurl = {:?}\n", dir.path().join(name), url.expose());
        std::fs::write(&path, storage).unwrap();
        path
    };
    let (one, two) =
        (Runtime::load(Some(&config("one"))).await.unwrap(), Runtime::load(Some(&config("two"))).await.unwrap());
    let (info, ctx) = one.open_session_as("http", "assistant").await.unwrap();
    let remind =
        json!({"at": null, "in": "3s", "message": "time to check the swap", "target": {"type": "user", "id": null}});
    one.registry.call("schedule_reminder", remind, &ctx).await.unwrap();
    // Instance one lets the session go and serves another one; instance two serves it now, with a client on it.
    let (_, other) = one.open_session_as("http", "assistant").await.unwrap();
    let mut elsewhere = other.events.subscribe();
    drop(ctx);
    one.close_session(&info.id);
    assert_eq!(one.unload_idle(Duration::ZERO).await, 1, "only the scheduling session was free to go");
    let there = two.session(&info.id).await.unwrap().unwrap();
    let mut watching = there.events.subscribe();

    let announced = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            let event = watching.recv().await.unwrap();
            if event.name() == holdfast_core::event::names::MESSAGE_OUTBOX {
                return event;
            }
        }
    })
    .await
    .expect("the reminder was not announced on its session's instance");
    assert_eq!(announced.data()["content"], "time to check the swap");
    while let Ok(event) = elsewhere.try_recv() {
        assert_ne!(event.name(), holdfast_core::event::names::MESSAGE_OUTBOX, "announced on another session");
    }
}

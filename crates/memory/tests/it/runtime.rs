//! Integration (real SQLite file + AgentHandle), agent-level (two agents messaging through the router, the anti-loop
//! cooldown, groups, channels and their webhook on a real loopback HTTP server), persistence across a reopen,
//! concurrency, and hybrid search against a real loopback `/v1/embeddings` server.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::{ctx, fixture, no_cooldown, open, start_time};
use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use holdfast_core::ErrorCode;
use holdfast_memory::schedule::reminders::MAX_PENDING_REMINDERS;
use holdfast_memory::*;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::sync::mpsc;

fn registry(h: &AgentHandle) -> holdfast_core::ToolRegistry {
    BuiltinTools::default_for_agent(h.clone()).into_registry().unwrap()
}

/// Serves `app` on a free loopback port; returns its base URL. The server stops with the test's runtime.
async fn serve(app: axum::Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
    format!("http://{addr}")
}

async fn within<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(20), f).await.expect("timed out")
}

// ---------------------------------------------------------------- integration

#[tokio::test]
async fn a_real_file_in_wal_mode_with_configured_blocks_groups_and_channels() {
    let mut config = no_cooldown();
    config.blocks = vec![
        BlockSpec::new("persona", "I am Holdfast.").permission(Permission::ReadOnly).pinned(true),
        BlockSpec::new("human", "").description("facts about the user"),
    ];
    config.groups = BTreeMap::from([("team".to_owned(), vec!["a".to_owned(), "b".to_owned()])]);
    config.channels =
        BTreeMap::from([("news".to_owned(), ChannelConfig { webhook_url: None, subscribers: vec!["b".to_owned()] })]);
    let f = fixture(config).await;
    assert_eq!(f.runtime.database().journal_mode().unwrap(), "wal");
    let a = f.runtime.agent("a").await.unwrap();
    assert!(f.dir.path().join(DEFAULT_DB_FILE).exists());
    let labels: Vec<String> = a.memory.blocks().await.unwrap().into_iter().map(|b| b.label).collect();
    assert_eq!(labels, ["human", "persona"]);
    a.memory.update("human", "Alice".into(), None, "test").await.unwrap();
    drop(f.runtime.agent("a").await.unwrap());
    assert_eq!(a.memory.get("human").await.unwrap().unwrap().value, "Alice", "initial blocks never overwrite");
    assert_eq!(f.runtime.router().groups().await.unwrap()["team"], ["a", "b"]);
    let edits = a.memory.history("human", 10).await.unwrap();
    assert_eq!(edits.len(), 2);
    assert_eq!(
        (edits[0].actor.as_str(), edits[0].op, edits[0].old.as_deref(), edits[0].new.as_str()),
        ("a", EditOp::Update, Some(""), "Alice")
    );
    assert_eq!((edits[1].actor.as_str(), edits[1].op), ("system", EditOp::System));
    assert_eq!(f.runtime.search_mode(), SearchMode::Text);
}

#[tokio::test]
async fn agents_do_not_see_each_others_memory() {
    let f = fixture(no_cooldown()).await;
    let a = f.runtime.agent("a").await.unwrap();
    let b = f.runtime.agent("b").await.unwrap();
    let c = ctx("s");
    registry(&a)
        .call("update_memory", json!({"label": "secret", "value": "a's plan", "description": null}), &c)
        .await
        .unwrap();
    let out = registry(&b).call("list_memories", json!({}), &c).await.unwrap();
    assert_eq!(out["count"], 0);
    let out = registry(&b).call("search_memory", json!({"query": "plan", "limit": null}), &c).await.unwrap();
    assert_eq!(out["hits"], json!([]));
}

// ---------------------------------------------------------------- agent level

#[tokio::test]
async fn two_agents_message_each_other_with_the_anti_loop_cooldown() {
    let f = fixture(MemoryConfig { agent_cooldown_secs: 10, ..MemoryConfig::default() }).await;
    let alice = f.runtime.agent("alice").await.unwrap();
    let bob = f.runtime.agent("bob").await.unwrap();
    let (ra, rb) = (registry(&alice), registry(&bob));
    let (ca, cb) = (ctx("alice-session"), ctx("bob-session"));
    let to = |id: &str, text: &str| json!({"target": {"type": "agent", "id": id}, "content": text, "metadata": [{"key": "turn", "value": "1"}]});

    let long = "Please review the plan. ".repeat(500);
    let out = ra.call("send_message", to("bob", &long), &ca).await.unwrap();
    assert_eq!(out["details"], "Message sent to agent 'bob'");
    let got = within(bob.inbox().recv()).await.unwrap();
    assert_eq!((got.from.as_str(), got.via.as_str()), ("alice", "direct"));
    assert_eq!(got.content, long, "content is delivered whole");
    assert_eq!(got.metadata, Some(json!({"turn": "1"})));
    assert_eq!(got.message_id, out["message_id"]);

    // A reply is a different ordered pair: always allowed.
    rb.call("send_message", to("alice", "Looks good."), &cb).await.unwrap();
    assert_eq!(within(alice.inbox().recv()).await.unwrap().content, "Looks good.");

    // Alice answering again at once would start a loop: refused, with when to retry.
    let e = ra.call("send_message", to("bob", "Great, thanks!"), &ca).await.unwrap_err();
    assert_eq!(e.code, ErrorCode::RateLimited);
    assert!(e.message.contains("anti-loop cooldown"), "{}", e.message);
    assert_eq!(e.details.as_ref().unwrap()["retry_after_secs"], 10);
    assert!(bob.inbox().pending().await.unwrap().is_empty(), "a refused message is not delivered");

    f.clock.advance(chrono::Duration::seconds(4));
    let e = ra.call("send_message", to("bob", "Great, thanks!"), &ca).await.unwrap_err();
    assert_eq!(e.details.unwrap()["retry_after_secs"], 6);
    f.clock.advance(chrono::Duration::seconds(6));
    ra.call("send_message", to("bob", "Great, thanks!"), &ca).await.unwrap();
    assert_eq!(bob.inbox().drain().await.unwrap().len(), 1);

    let e = ra.call("send_message", to("alice", "me"), &ca).await.unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidParams);
    assert!(e.message.starts_with("`target.id`"), "{}", e.message);
    let e = ra
        .call("send_message", json!({"target": {"type": "agent", "id": null}, "content": "x", "metadata": null}), &ca)
        .await
        .unwrap_err();
    assert_eq!(e.message, "`target.id`: is required when `target.type` is agent");
}

#[tokio::test]
async fn group_fan_out_skips_the_sender_and_members_in_cooldown() {
    let f = fixture(MemoryConfig { agent_cooldown_secs: 30, ..MemoryConfig::default() }).await;
    let [a, b, c] =
        [f.runtime.agent("a").await.unwrap(), f.runtime.agent("b").await.unwrap(), f.runtime.agent("c").await.unwrap()];
    f.runtime.router().define_group("team", &["a".into(), "b".into(), "c".into()]).await.unwrap();
    let ra = registry(&a);
    let s = ctx("s");
    let out = ra.call("send_to_group", json!({"group": "team", "content": "stand-up"}), &s).await.unwrap();
    assert_eq!(out["details"], "Message sent to group 'team' (delivered to b, c)");
    assert!(a.inbox().pending().await.unwrap().is_empty());
    for h in [&b, &c] {
        let m = h.inbox().try_recv().await.unwrap().unwrap();
        assert_eq!((m.content.as_str(), m.via.as_str()), ("stand-up", "group:team"));
    }
    let e = ra.call("send_to_group", json!({"group": "team", "content": "again"}), &s).await.unwrap_err();
    assert_eq!(e.code, ErrorCode::RateLimited);
    f.clock.advance(chrono::Duration::seconds(30));
    ra.call("send_message", json!({"target": {"type": "agent", "id": "b"}, "content": "just b", "metadata": null}), &s)
        .await
        .unwrap();
    let out = ra
        .call(
            "send_message",
            json!({"target": {"type": "group", "id": "team"}, "content": "all", "metadata": null}),
            &s,
        )
        .await
        .unwrap();
    let details = out["details"].as_str().unwrap();
    assert!(
        details.contains("delivered to c") && details.contains("skipped b (anti-loop cooldown, retry in 30s)"),
        "{details}"
    );
    let e = ra.call("send_to_group", json!({"group": "nobody", "content": "x"}), &s).await.unwrap_err();
    assert_eq!(e.code, ErrorCode::TargetNotFound);
    assert!(e.message.starts_with("`group`: no group named `nobody` (existing: team)"), "{}", e.message);
}

#[derive(Clone)]
struct Hook {
    tx: mpsc::UnboundedSender<Value>,
    status: StatusCode,
}

async fn hook(State(h): State<Hook>, Json(body): Json<Value>) -> StatusCode {
    let _ = h.tx.send(body);
    h.status
}

#[tokio::test]
async fn channels_reach_subscribers_and_the_webhook() {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let ok = serve(
        axum::Router::new().route("/hook", post(hook)).with_state(Hook { tx: tx.clone(), status: StatusCode::OK }),
    )
    .await;
    let broken = serve(
        axum::Router::new()
            .route("/hook", post(hook))
            .with_state(Hook { tx, status: StatusCode::INTERNAL_SERVER_ERROR }),
    )
    .await;
    let mut config = no_cooldown();
    config.channels = BTreeMap::from([
        (
            "alerts".to_owned(),
            ChannelConfig { webhook_url: Some(format!("{ok}/hook")), subscribers: vec!["ops".into()] },
        ),
        ("flaky".to_owned(), ChannelConfig { webhook_url: Some(format!("{broken}/hook")), subscribers: vec![] }),
    ]);
    let f = fixture(config).await;
    let bot = f.runtime.agent("bot").await.unwrap();
    let ops = f.runtime.agent("ops").await.unwrap();
    let r = registry(&bot);
    let s = ctx("s");
    let out = r.call("send_message", json!({"target": {"type": "channel", "id": "alerts"}, "content": "disk 91% full", "metadata": [{"key": "host", "value": "db1"}]}), &s).await.unwrap();
    let details = out["details"].as_str().unwrap();
    assert!(
        details.starts_with("Message sent to channel 'alerts' (subscribers: ops); webhook POST returned 200"),
        "{details}"
    );
    let body = within(rx.recv()).await.unwrap();
    assert_eq!(body["message_id"], out["message_id"]);
    assert_eq!(
        (body["channel"].as_str(), body["from"].as_str(), body["content"].as_str()),
        (Some("alerts"), Some("bot"), Some("disk 91% full"))
    );
    assert_eq!(body["metadata"], json!({"host": "db1"}));
    let m = ops.inbox().try_recv().await.unwrap().unwrap();
    assert_eq!((m.via.as_str(), m.content.as_str()), ("channel:alerts", "disk 91% full"));

    let e = r
        .call(
            "send_message",
            json!({"target": {"type": "channel", "id": "flaky"}, "content": "x", "metadata": null}),
            &s,
        )
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::UpstreamError);
    assert!(e.message.contains("HTTP 500"), "{}", e.message);
    let e = r
        .call(
            "send_message",
            json!({"target": {"type": "channel", "id": "nope"}, "content": "x", "metadata": null}),
            &s,
        )
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::TargetNotFound);
}

struct Recorder(Arc<AtomicUsize>);

impl MessageEndpoint for Recorder {
    fn name(&self) -> &str {
        "recorder"
    }
    fn deliver<'a>(&'a self, m: &'a RoutedMessage) -> holdfast_core::tool::BoxFuture<'a, Result<String, MemoryError>> {
        Box::pin(async move {
            self.0.fetch_add(1, Ordering::SeqCst);
            Ok(format!("saw {}", m.message_id))
        })
    }
}

#[tokio::test]
async fn extra_endpoints_plug_into_the_router() {
    let f = fixture(no_cooldown()).await;
    let a = f.runtime.agent("a").await.unwrap();
    let seen = Arc::new(AtomicUsize::new(0));
    f.runtime.router().add_endpoint(TargetType::User, Arc::new(Recorder(Arc::clone(&seen))));
    let out = registry(&a)
        .call("send_message", json!({"target": {"type": "user"}, "content": "hi", "metadata": null}), &ctx("s"))
        .await
        .unwrap();
    assert_eq!(seen.load(Ordering::SeqCst), 1);
    assert!(
        out["details"].as_str().unwrap().ends_with(&format!("recorder: saw {}", out["message_id"].as_str().unwrap()))
    );
}

// ---------------------------------------------------------------- persistence

#[tokio::test]
async fn everything_survives_a_reopen_and_an_overdue_reminder_fires_once() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(start_time());
    {
        let runtime = open(dir.path(), &clock, no_cooldown()).await;
        let a = runtime.agent("a").await.unwrap();
        runtime.agent("b").await.unwrap();
        let r = registry(&a);
        let c = ctx("s1");
        r.call("update_memory", json!({"label": "human", "value": "Name: Alice", "description": "the user"}), &c)
            .await
            .unwrap();
        r.call("append_memory", json!({"label": "human", "content": "Likes tea"}), &c).await.unwrap();
        r.call(
            "track_task",
            json!({"op": "create", "title": "Pay rent", "steps": ["open bank app", "send transfer"], "due": "in 2d"}),
            &c,
        )
        .await
        .unwrap();
        r.call("schedule_reminder", json!({"in": "1h", "message": "drink water"}), &c).await.unwrap();
        r.call("schedule_reminder", json!({"in": "5h", "message": "later"}), &c).await.unwrap();
        r.call(
            "send_message",
            json!({"target": {"type": "agent", "id": "b"}, "content": "queued for b", "metadata": null}),
            &c,
        )
        .await
        .unwrap();
        r.call("send_message", json!({"target": {"type": "user"}, "content": "bye", "metadata": null}), &c)
            .await
            .unwrap();
        // No scheduler runs: the process "goes down" before the reminder is due.
    }
    clock.advance(chrono::Duration::hours(2));
    {
        let runtime = open(dir.path(), &clock, no_cooldown()).await;
        let a = runtime.agent("a").await.unwrap();
        let b = runtime.agent("b").await.unwrap();
        let block = a.memory.get("human").await.unwrap().unwrap();
        assert_eq!((block.value.as_str(), block.description.as_deref()), ("Name: Alice\nLikes tea", Some("the user")));
        assert_eq!(a.memory.history("human", 10).await.unwrap().len(), 2);
        let tasks = a.tasks.list(Default::default()).await.unwrap();
        assert_eq!(tasks.len(), 1);
        assert_eq!(tasks[0].next_step().unwrap().1.text, "open bank app");
        assert_eq!(b.inbox().try_recv().await.unwrap().unwrap().content, "queued for b", "the inbox is durable");
        assert_eq!(runtime.router().outbox(&a.agent_id, 10).await.unwrap()[0].content, "bye");
        let hits =
            registry(&a).call("search_memory", json!({"query": "tea", "limit": null}), &ctx("s2")).await.unwrap();
        assert_eq!(hits["hits"][0]["label"], "human", "the full-text index is persisted too");

        let scheduler = runtime.start_scheduler();
        let m = within(a.inbox().recv()).await.unwrap();
        assert_eq!((m.content.as_str(), m.via.as_str()), ("drink water", "reminder"));
        drop(scheduler);
        assert!(runtime.scheduler().fire_due().await.unwrap().is_empty(), "fired exactly once");
        let pending = a.reminders.list(false).await.unwrap();
        assert_eq!(pending.iter().map(|r| r.message.as_str()).collect::<Vec<_>>(), ["later"]);
    }
    {
        let runtime = open(dir.path(), &clock, no_cooldown()).await;
        let a = runtime.agent("a").await.unwrap();
        assert!(runtime.scheduler().fire_due().await.unwrap().is_empty());
        assert!(a.inbox().pending().await.unwrap().is_empty(), "no second delivery after another restart");
        assert_eq!(a.reminders.list(true).await.unwrap().len(), 2);
    }
}

#[tokio::test]
async fn a_reminder_to_the_user_reaches_the_attached_session() {
    let f = fixture(no_cooldown()).await;
    let a = f.runtime.agent("a").await.unwrap();
    let c = ctx("s");
    a.attach(&c);
    let mut events = c.events.subscribe();
    registry(&a)
        .call(
            "schedule_reminder",
            json!({"in": "10m", "message": "meeting", "target": {"type": "user", "id": null}}),
            &c,
        )
        .await
        .unwrap();
    f.clock.advance(chrono::Duration::minutes(10));
    assert_eq!(f.runtime.scheduler().fire_due().await.unwrap().len(), 1);
    let e = loop {
        let e = events.try_recv().unwrap();
        if e.name() == "message.outbox" {
            break e;
        }
    };
    assert_eq!(e.data()["content"], "meeting");
    assert_eq!(e.data()["metadata"]["kind"], "reminder");
}

/// A turn answering a message of `hops` hops (what the inbox sets on an inbox turn's session).
fn inbox_turn_ctx(session: &str, hops: u32) -> holdfast_core::ToolContext {
    let c = ctx(session);
    c.extensions.insert(ConversationHops(hops));
    c.extensions.insert(holdfast_core::confirm::TurnStarter::Other("a message from another agent".into()));
    c
}

#[tokio::test]
async fn a_reminder_carries_its_conversations_hops_and_cannot_restart_the_count() {
    let f = fixture(MemoryConfig { max_hops: 3, ..no_cooldown() }).await;
    let a = f.runtime.agent("a").await.unwrap();
    let b = f.runtime.agent("b").await.unwrap();
    let (ra, rb) = (registry(&a), registry(&b));

    // At the limit, a reminder to another agent is refused when it is scheduled, like the message itself.
    let at_limit = inbox_turn_ctx("a-inbox", 3);
    let to_b = json!({"in": "1m", "message": "ping b", "target": {"type": "agent", "id": "b"}});
    let err = ra.call("schedule_reminder", to_b.clone(), &at_limit).await.unwrap_err();
    assert_eq!(err.code, ErrorCode::RateLimited, "{err}");
    assert!(a.reminders.list(false).await.unwrap().is_empty(), "nothing scheduled");

    // A reminder to itself is refused at the limit too: scheduled in a turn the user did not start it carries one
    // more hop, so a chain of reminders no user starts ends.
    let to_self = json!({"in": "1m", "message": "tell b again", "target": null});
    let err = ra.call("schedule_reminder", to_self.clone(), &at_limit).await.unwrap_err();
    assert_eq!(err.code, ErrorCode::RateLimited, "{err}");
    // Below it, a reminder to itself arrives one hop further, and one to b is one more hop when it fires.
    ra.call("schedule_reminder", to_self.clone(), &inbox_turn_ctx("a-inbox", 1)).await.unwrap();
    ra.call("schedule_reminder", to_b, &inbox_turn_ctx("a-inbox", 2)).await.unwrap();
    f.clock.advance(chrono::Duration::minutes(1));
    assert_eq!(f.runtime.scheduler().fire_due().await.unwrap().len(), 2);
    let own = a.inbox().try_recv().await.unwrap().unwrap();
    assert_eq!((own.content.as_str(), own.via.as_str(), own.hops), ("tell b again", "reminder", 2));
    let at_b = b.inbox().try_recv().await.unwrap().unwrap();
    assert_eq!((at_b.content.as_str(), at_b.hops), ("ping b", 3));

    // The turn the self-reminder starts (hops 2) cannot remind itself once more; b's turn answering the reminder
    // (hops 3) cannot message a.
    let err = ra.call("schedule_reminder", to_self, &inbox_turn_ctx("a-inbox", own.hops)).await.unwrap_err();
    assert_eq!(err.code, ErrorCode::RateLimited);
    let back = json!({"target": {"type": "agent", "id": "a"}, "content": "pong", "metadata": null});
    let err = rb.call("send_message", back, &inbox_turn_ctx("b-inbox", at_b.hops)).await.unwrap_err();
    assert_eq!(err.code, ErrorCode::RateLimited);
    assert!(b.inbox().pending().await.unwrap().is_empty() && a.inbox().pending().await.unwrap().is_empty());
}

#[tokio::test]
async fn a_reminder_that_reaches_the_limit_by_the_time_it_fires_goes_to_its_agent() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(start_time());
    {
        let runtime = open(dir.path(), &clock, MemoryConfig { max_hops: 3, ..no_cooldown() }).await;
        let a = runtime.agent("a").await.unwrap();
        runtime.agent("b").await.unwrap();
        let to_b = json!({"in": "1m", "message": "ping b", "target": {"type": "agent", "id": "b"}});
        registry(&a).call("schedule_reminder", to_b, &inbox_turn_ctx("a-inbox", 2)).await.unwrap();
    }
    // Restarted with a lower limit: the reminder's stored count is now at it.
    clock.advance(chrono::Duration::minutes(1));
    let runtime = open(dir.path(), &clock, MemoryConfig { max_hops: 2, ..no_cooldown() }).await;
    let a = runtime.agent("a").await.unwrap();
    let b = runtime.agent("b").await.unwrap();
    assert_eq!(runtime.scheduler().fire_due().await.unwrap().len(), 1);
    assert!(b.inbox().pending().await.unwrap().is_empty(), "b gets nothing past the limit");
    let own = a.inbox().try_recv().await.unwrap().unwrap();
    assert!(
        own.content.contains("could not be delivered to agent 'b'") && own.content.contains("ping b"),
        "{}",
        own.content
    );
    assert_eq!(own.hops, 3, "one more hop than the reminder carried");
}

/// A reminder to a group of the agent alone cannot be delivered; the agent gets it instead, one hop further on, so a
/// turn that schedules it again each time reaches the hop limit (it used to go on for ever at the same count).
#[tokio::test]
async fn a_reminder_that_keeps_failing_to_reach_its_target_ends_at_the_hop_limit() {
    let clock = ManualClock::new(start_time());
    let dir = tempfile::tempdir().unwrap();
    let runtime = open(dir.path(), &clock, MemoryConfig { max_hops: 3, ..no_cooldown() }).await;
    let a = runtime.agent("a").await.unwrap();
    runtime.router().define_group("alone", &["a".into()]).await.unwrap();
    let to_group = json!({"in": "1m", "message": "again", "target": {"type": "group", "id": "alone"}});
    let mut hops = 0;
    let mut rounds = 0;
    loop {
        let scheduled =
            registry(&a).call("schedule_reminder", to_group.clone(), &inbox_turn_ctx("a-inbox", hops)).await;
        if let Err(e) = scheduled {
            assert_eq!(e.code, ErrorCode::RateLimited, "{e:?}");
            break;
        }
        rounds += 1;
        assert!(rounds <= 3, "still scheduling at {hops} hops");
        clock.advance(chrono::Duration::minutes(1));
        assert_eq!(runtime.scheduler().fire_due().await.unwrap().len(), 1);
        let own = a.inbox().try_recv().await.unwrap().unwrap();
        assert!(own.content.contains("could not be delivered to group 'alone'"), "{}", own.content);
        assert_eq!(own.hops, hops + 1);
        hops = own.hops;
    }
    assert_eq!(hops, 3, "stopped at the limit");
}

#[tokio::test]
async fn an_agent_may_have_at_most_a_hundred_pending_reminders() {
    let f = fixture(no_cooldown()).await;
    let a = f.runtime.agent("a").await.unwrap();
    let r = registry(&a);
    let c = ctx("s");
    let mut calls = tokio::task::JoinSet::new();
    for i in 0..MAX_PENDING_REMINDERS + 20 {
        let (r, c) = (r.clone(), c.clone());
        calls.spawn(
            async move { r.call("schedule_reminder", json!({"in": "1h", "message": format!("r{i}")}), &c).await },
        );
    }
    let results = calls.join_all().await;
    let refused: Vec<_> = results.iter().filter_map(|r| r.as_ref().err()).collect();
    assert_eq!(refused.len(), 20, "concurrent calls cannot pass the cap together");
    assert!(refused.iter().all(|e| e.code == ErrorCode::RateLimited && e.message.contains("100 pending")));
    assert_eq!(a.reminders.list(false).await.unwrap().len(), MAX_PENDING_REMINDERS as usize);

    // One that fires frees a place.
    f.clock.advance(chrono::Duration::hours(1));
    f.runtime.scheduler().fire_due().await.unwrap();
    r.call("schedule_reminder", json!({"in": "1h", "message": "after"}), &c).await.unwrap();
}

// ---------------------------------------------------------------- concurrency

async fn concurrent_appends(runtime: &AgentRuntime) {
    let a = runtime.agent("a").await.unwrap();
    a.memory.put_block(BlockSpec::new("log", "start").char_limit(10)).await.unwrap();
    let r = registry(&a);
    let c = ctx("s");
    let mut tasks = Vec::new();
    for i in 0..48 {
        let (r, c) = (r.clone(), c.clone());
        tasks.push(tokio::spawn(async move {
            r.call("append_memory", json!({"label": "log", "content": format!("entry {i}")}), &c).await.unwrap();
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let value = a.memory.get("log").await.unwrap().unwrap().value;
    let lines: Vec<&str> = value.lines().collect();
    assert_eq!(lines.len(), 49, "{value}");
    for i in 0..48 {
        assert!(lines.contains(&format!("entry {i}").as_str()), "entry {i} lost");
    }
    assert_eq!(a.memory.history("log", 100).await.unwrap().len(), 49);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_appends_lose_nothing_in_sqlite() {
    let f = fixture(no_cooldown()).await;
    concurrent_appends(&f.runtime).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_appends_lose_nothing_in_memory() {
    let runtime = AgentRuntime::builder(Database::open_in_memory().unwrap())
        .memory_store(Arc::new(InMemoryStore::new()))
        .build()
        .await
        .unwrap();
    concurrent_appends(&runtime).await;
}

// ---------------------------------------------------------------- hybrid search

#[derive(Clone)]
struct Embeddings {
    requests: Arc<AtomicUsize>,
    inputs: Arc<AtomicUsize>,
    fail: bool,
}

/// A toy embedding: one dimension per concept, so "car" and "automobile" are close without sharing a word.
fn embed(text: &str) -> Vec<f32> {
    let t = text.to_lowercase();
    let concepts: [&[&str]; 3] =
        [&["car", "automobile", "vehicle", "drive"], &["cat", "kitten", "feline"], &["money", "budget", "finance"]];
    let mut v: Vec<f32> =
        concepts.iter().map(|words| words.iter().filter(|w| t.contains(**w)).count() as f32).collect();
    v.push(0.05);
    v
}

async fn embeddings(
    State(s): State<Embeddings>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> (StatusCode, Json<Value>) {
    s.requests.fetch_add(1, Ordering::SeqCst);
    if s.fail {
        return (StatusCode::SERVICE_UNAVAILABLE, Json(json!({"error": {"message": "overloaded"}})));
    }
    assert_eq!(headers.get("authorization").and_then(|v| v.to_str().ok()), Some("Bearer test-key"));
    assert_eq!(body["model"], "toy-embed");
    let inputs = body["input"].as_array().unwrap();
    s.inputs.fetch_add(inputs.len(), Ordering::SeqCst);
    // Answer out of order: clients must sort by `index`.
    let data: Vec<Value> = inputs
        .iter()
        .enumerate()
        .rev()
        .map(|(i, text)| json!({"object": "embedding", "index": i, "embedding": embed(text.as_str().unwrap())}))
        .collect();
    (
        StatusCode::OK,
        Json(
            json!({"object": "list", "data": data, "model": "toy-embed", "usage": {"prompt_tokens": 1, "total_tokens": 1}}),
        ),
    )
}

async fn hybrid_runtime(fail: bool) -> (crate::common::Fixture, Embeddings) {
    let state = Embeddings { requests: Arc::default(), inputs: Arc::default(), fail };
    let base = serve(axum::Router::new().route("/v1/embeddings", post(embeddings)).with_state(state.clone())).await;
    let mut embeddings = EmbeddingsConfig::new(format!("{base}/v1"), "toy-embed");
    embeddings.api_key = Some("test-key".into());
    let f = fixture(MemoryConfig { embeddings: Some(embeddings), ..no_cooldown() }).await;
    (f, state)
}

#[tokio::test]
async fn hybrid_search_finds_meaning_the_words_miss_and_caches_embeddings() {
    let (f, server) = hybrid_runtime(false).await;
    assert_eq!(f.runtime.search_mode(), SearchMode::Hybrid);
    let a = f.runtime.agent("a").await.unwrap();
    let r = registry(&a);
    let c = ctx("s");
    for (label, value) in [
        ("commute", "I drive a red car to work."),
        ("pets", "We adopted a kitten."),
        ("insurance", "Automobile insurance renews in June."),
    ] {
        r.call("update_memory", json!({"label": label, "value": value, "description": null}), &c).await.unwrap();
    }
    let out = r.call("search_memory", json!({"query": "automobile", "limit": 5}), &c).await.unwrap();
    assert_eq!(out["mode"], "hybrid");
    let labels: Vec<&str> = out["hits"].as_array().unwrap().iter().map(|h| h["label"].as_str().unwrap()).collect();
    assert_eq!(labels, ["insurance", "commute"], "text + vector first, vector-only second, unrelated excluded");
    assert_eq!(out["hits"][1]["text_score"], Value::Null);
    assert!(out["hits"][1]["vector_score"].as_f64().unwrap() > 0.9);
    assert_eq!(server.inputs.load(Ordering::SeqCst), 4, "three blocks and the query");

    r.call("search_memory", json!({"query": "kitten", "limit": null}), &c).await.unwrap();
    assert_eq!(
        server.inputs.load(Ordering::SeqCst),
        5,
        "block embeddings come from the cache; only the query is embedded"
    );
    r.call("append_memory", json!({"label": "pets", "content": "She is a cat now."}), &c).await.unwrap();
    r.call("search_memory", json!({"query": "feline", "limit": null}), &c).await.unwrap();
    assert_eq!(server.inputs.load(Ordering::SeqCst), 7, "a changed block is embedded again");
}

#[tokio::test]
async fn hybrid_search_falls_back_to_text_when_the_endpoint_fails() {
    let (f, server) = hybrid_runtime(true).await;
    let a = f.runtime.agent("a").await.unwrap();
    let r = registry(&a);
    let c = ctx("s");
    r.call("update_memory", json!({"label": "commute", "value": "I drive a red car.", "description": null}), &c)
        .await
        .unwrap();
    let out = r.call("search_memory", json!({"query": "car", "limit": null}), &c).await.unwrap();
    assert_eq!(out["mode"], "text");
    assert!(out["note"].as_str().unwrap().contains("503"), "{}", out["note"]);
    assert_eq!(out["hits"][0]["label"], "commute");
    assert!(server.requests.load(Ordering::SeqCst) >= 1);
}

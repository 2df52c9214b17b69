//! Unit tests (each tool alone, called as an `AiTool`), registry tests (by name with JSON through
//! `ToolRegistry::call`), the registry-wide conformance checks, replacement by name, and the example transcript.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::{ctx, fixture, no_cooldown};
use holdfast_core::{AiTool, ErrorCode, ToolRegistry};
use holdfast_memory::*;
use serde_json::{Value, json};

async fn agent() -> (crate::common::Fixture, AgentHandle) {
    let f = fixture(no_cooldown()).await;
    let h = f.runtime.agent("assistant").await.unwrap();
    (f, h)
}

fn registry(h: &AgentHandle) -> ToolRegistry {
    BuiltinTools::default_for_agent(h.clone()).into_registry().unwrap()
}

// ---------------------------------------------------------------- unit: memory tools

/// Every block is in every system context of the agent: the tools cannot grow memory past what one carries, in size
/// or in count (a peer agent's turns or a client could otherwise grow it until no request fits). Condensing is allowed.
#[tokio::test]
async fn memory_cannot_be_grown_past_what_a_system_context_carries() {
    let (_f, h) = agent().await;
    let (r, c) = (registry(&h), ctx("s"));
    let big = "x".repeat(MAX_MEMORY_CHARS / 4);
    for label in ["a", "b", "c", "d"] {
        r.call("update_memory", json!({"label": label, "value": big, "description": null}), &c).await.unwrap();
    }
    let err = r.call("append_memory", json!({"label": "a", "content": "one more"}), &c).await.unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidParams, "{err:?}");
    assert!(err.message.contains("condense a block first"), "{}", err.message);
    let err =
        r.call("update_memory", json!({"label": "e", "value": "new", "description": null}), &c).await.unwrap_err();
    assert!(err.message.contains(&format!("above the {MAX_MEMORY_CHARS}")), "{}", err.message);
    // Condensing one makes room.
    r.call("update_memory", json!({"label": "a", "value": "short", "description": null}), &c).await.unwrap();
    r.call("update_memory", json!({"label": "e", "value": "new", "description": null}), &c).await.unwrap();
    let count = h.memory.blocks().await.unwrap().len();
    for i in count..MAX_BLOCKS {
        let label = format!("n{i}");
        r.call("update_memory", json!({"label": label, "value": "", "description": null}), &c).await.unwrap();
    }
    let err =
        r.call("update_memory", json!({"label": "one_more", "value": "", "description": null}), &c).await.unwrap_err();
    assert!(err.message.contains(&format!("memory holds {MAX_BLOCKS} blocks")), "{}", err.message);
    r.call("update_memory", json!({"label": "e", "value": "changed", "description": null}), &c).await.unwrap();
}

/// What counts is what the system context shows: an `&` is shown as `&amp;`, and descriptions are shown too.
#[tokio::test]
async fn memory_is_limited_by_what_the_system_context_shows() {
    let (_f, h) = agent().await;
    let (r, c) = (registry(&h), ctx("s"));
    let amps = "&".repeat(MAX_MEMORY_CHARS / 5 + 1);
    let err = r.call("update_memory", json!({"label": "a", "value": amps, "description": null}), &c).await.unwrap_err();
    assert!(err.message.contains("condense a block first"), "{}", err.message);
    let described = "d".repeat(900);
    for i in 0..MAX_MEMORY_CHARS / 900 + 2 {
        let params = json!({"label": format!("b{i}"), "value": "", "description": described});
        if r.call("update_memory", params, &c).await.is_err() {
            return;
        }
    }
    panic!("descriptions alone grew memory past the limit");
}

/// Concurrent writes of one agent, through handles of their own, pass the limits one at a time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_memory_writes_cannot_pass_the_limit_together() {
    let (f, h) = agent().await;
    let half = "y".repeat(MAX_MEMORY_CHARS / 2 + 1);
    let mut calls = tokio::task::JoinSet::new();
    for i in 0..6 {
        let own = f.runtime.agent("assistant").await.unwrap();
        let params = json!({"label": format!("c{i}"), "value": half.clone(), "description": null});
        calls.spawn(async move { registry(&own).call("update_memory", params, &ctx("s")).await.is_ok() });
    }
    let passed = calls.join_all().await.into_iter().filter(|ok| *ok).count();
    assert_eq!(passed, 1, "one write of over half the limit fits, not two");
    let total: usize = h.memory.blocks().await.unwrap().iter().map(|b| b.chars()).sum();
    assert!(total <= MAX_MEMORY_CHARS, "{total}");
}

#[tokio::test]
async fn update_memory_creates_then_returns_the_previous_value() {
    let (_f, h) = agent().await;
    let tool = UpdateMemoryTool::new(h.clone());
    let c = ctx("s");
    let out = tool
        .execute(
            UpdateMemoryInput {
                label: "human".into(),
                value: "The user's name is unknown".into(),
                description: Some("Information about the user".into()),
            },
            &c,
        )
        .await
        .unwrap();
    assert_eq!(
        out,
        UpdateMemoryOutput {
            success: true,
            previous_value: None,
            message: Some("Created new memory block 'human'".into())
        }
    );
    let out = tool
        .execute(
            UpdateMemoryInput { label: "human".into(), value: "The user's name is Alice".into(), description: None },
            &c,
        )
        .await
        .unwrap();
    assert_eq!(out.previous_value.as_deref(), Some("The user's name is unknown"));
    assert_eq!(out.message, None);
    let block = h.memory.get("human").await.unwrap().unwrap();
    assert_eq!(block.value, "The user's name is Alice");
    assert_eq!(
        block.description.as_deref(),
        Some("Information about the user"),
        "a null description keeps the old one"
    );
}

#[tokio::test]
async fn over_budget_writes_succeed_and_say_by_how_much() {
    let (_f, h) = agent().await;
    h.memory.put_block(BlockSpec::new("notes", "").char_limit(10)).await.unwrap();
    let c = ctx("s");
    let out = UpdateMemoryTool::new(h.clone())
        .execute(UpdateMemoryInput { label: "notes".into(), value: "0123456789abc".into(), description: None }, &c)
        .await
        .unwrap();
    assert!(out.success);
    assert!(out.message.as_deref().unwrap().contains("over its soft budget by 3 characters (13/10)"), "{out:?}");
    let out = AppendMemoryTool::new(h.clone())
        .execute(AppendMemoryInput { label: "notes".into(), content: "more".into() }, &c)
        .await
        .unwrap();
    assert_eq!((out.chars, out.char_limit, out.over_budget_by), (18, 10, Some(8)));
    assert_eq!(h.memory.get("notes").await.unwrap().unwrap().value, "0123456789abc\nmore", "nothing was cut");
}

#[tokio::test]
async fn append_memory_adds_a_line_and_needs_an_existing_block() {
    let (_f, h) = agent().await;
    let c = ctx("s");
    let tool = AppendMemoryTool::new(h.clone());
    let err = tool.execute(AppendMemoryInput { label: "log".into(), content: "x".into() }, &c).await.unwrap_err();
    assert_eq!(err.code, ErrorCode::MemoryNotFound);
    assert!(err.message.contains("`log`") && err.message.contains("(there are none)"), "{}", err.message);
    h.memory.put_block(BlockSpec::new("log", "first")).await.unwrap();
    let out = tool.execute(AppendMemoryInput { label: "log".into(), content: "second".into() }, &c).await.unwrap();
    assert_eq!((out.success, out.over_budget_by), (true, None));
    assert_eq!(h.memory.get("log").await.unwrap().unwrap().value, "first\nsecond");
    let err = tool.execute(AppendMemoryInput { label: "log".into(), content: "".into() }, &c).await.unwrap_err();
    assert_eq!((err.code, err.message.as_str()), (ErrorCode::InvalidParams, "`content`: must not be empty"));
}

#[tokio::test]
async fn replace_in_memory_needs_exactly_one_match() {
    let (_f, h) = agent().await;
    let c = ctx("s");
    h.memory.put_block(BlockSpec::new("human", "Lives in Paris.\nLikes tea.\nLikes tea.")).await.unwrap();
    let tool = ReplaceInMemoryTool::new(h.clone());
    let call = |old: &str, new: &str| ReplaceInMemoryInput { label: "human".into(), old: old.into(), new: new.into() };

    let out = tool.execute(call("Paris", "Berlin"), &c).await.unwrap();
    assert_eq!((out.success, out.line), (true, 1));

    let err = tool.execute(call("Lives in Rome", "x"), &c).await.unwrap_err();
    assert_eq!(err.code, ErrorCode::MemoryNoMatch);
    assert!(
        err.message.contains("Lives in Berlin.\nLikes tea.\nLikes tea."),
        "the message quotes the value: {}",
        err.message
    );

    let err = tool.execute(call("Likes tea.", "x"), &c).await.unwrap_err();
    assert_eq!(err.code, ErrorCode::MemoryAmbiguousMatch);
    assert!(err.message.contains("2 times") && err.message.contains("lines 2, 3"), "{}", err.message);
    assert_eq!(err.details, Some(json!({"lines": [2, 3], "count": 2})));

    let err = tool.execute(call("", "x"), &c).await.unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidParams);
    assert!(err.message.starts_with("`old`"));

    let out = tool.execute(call("Likes tea.\nLikes tea.", "Likes coffee."), &c).await.unwrap();
    assert_eq!(out.line, 2);
    assert_eq!(h.memory.get("human").await.unwrap().unwrap().value, "Lives in Berlin.\nLikes coffee.");
}

#[tokio::test]
async fn a_long_value_is_quoted_as_a_window_around_the_near_match() {
    let (_f, h) = agent().await;
    let c = ctx("s");
    let value = format!("{}\nThe user lives in Paris.\n{}", "filler ".repeat(400), "more filler ".repeat(400));
    h.memory.put_block(BlockSpec::new("human", value.clone()).char_limit(100_000)).await.unwrap();
    let err = ReplaceInMemoryTool::new(h.clone())
        .execute(
            ReplaceInMemoryInput { label: "human".into(), old: "The user lives in Rome.".into(), new: "x".into() },
            &c,
        )
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::MemoryNoMatch);
    assert!(err.message.contains("The user lives in Paris."), "{}", err.message);
    assert!(err.message.len() < value.len() / 2, "a window, not the whole value");
}

#[tokio::test]
async fn permissions_are_enforced_for_every_tool() {
    let (_f, h) = agent().await;
    let c = ctx("s");
    h.memory.put_block(BlockSpec::new("persona", "I am helpful.").permission(Permission::ReadOnly)).await.unwrap();
    h.memory.put_block(BlockSpec::new("journal", "day 1").permission(Permission::Append)).await.unwrap();
    let update = |l: &str| UpdateMemoryInput { label: l.into(), value: "x".into(), description: None };
    let e = UpdateMemoryTool::new(h.clone()).execute(update("persona"), &c).await.unwrap_err();
    assert_eq!(e.code, ErrorCode::MemoryReadOnly);
    assert!(e.message.contains("`persona` is read-only"), "{}", e.message);
    let e = AppendMemoryTool::new(h.clone())
        .execute(AppendMemoryInput { label: "persona".into(), content: "x".into() }, &c)
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::MemoryReadOnly);
    let e = UpdateMemoryTool::new(h.clone()).execute(update("journal"), &c).await.unwrap_err();
    assert_eq!(e.code, ErrorCode::MemoryReadOnly);
    assert!(e.message.contains("append_memory"), "{}", e.message);
    let e = ReplaceInMemoryTool::new(h.clone())
        .execute(ReplaceInMemoryInput { label: "journal".into(), old: "day".into(), new: "x".into() }, &c)
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::MemoryReadOnly);
    AppendMemoryTool::new(h.clone())
        .execute(AppendMemoryInput { label: "journal".into(), content: "day 2".into() }, &c)
        .await
        .unwrap();
    assert_eq!(h.memory.get("journal").await.unwrap().unwrap().value, "day 1\nday 2");
    assert_eq!(h.memory.get("persona").await.unwrap().unwrap().value, "I am helpful.");
}

#[tokio::test]
async fn list_memories_shows_sizes_and_permissions_pinned_first() {
    let (_f, h) = agent().await;
    h.memory.put_block(BlockSpec::new("zeta", "zz").description("last")).await.unwrap();
    h.memory.put_block(BlockSpec::new("persona", "p").pinned(true).permission(Permission::ReadOnly)).await.unwrap();
    h.memory.put_block(BlockSpec::new("alpha", "abc").char_limit(2)).await.unwrap();
    let out = ListMemoriesTool::new(h.clone()).execute(ListMemoriesInput {}, &ctx("s")).await.unwrap();
    assert_eq!(out.count, 3);
    let labels: Vec<&str> = out.blocks.iter().map(|b| b.label.as_str()).collect();
    assert_eq!(labels, ["persona", "alpha", "zeta"]);
    assert_eq!(out.blocks[0].permission, Permission::ReadOnly);
    assert_eq!((out.blocks[1].chars, out.blocks[1].char_limit, out.blocks[1].over_budget_by), (3, 2, Some(1)));
    assert_eq!(out.blocks[2].description.as_deref(), Some("last"));
}

#[tokio::test]
async fn search_memory_ranks_values_and_finds_history() {
    let (_f, h) = agent().await;
    let c = ctx("s");
    let update = UpdateMemoryTool::new(h.clone());
    for (label, value) in [
        ("prefs", "The user prefers dark mode in every editor. Dark themes everywhere."),
        ("work", "Works on the billing service; mentioned dark launch once."),
        ("travel", "Flying to Lisbon in May."),
    ] {
        update
            .execute(UpdateMemoryInput { label: label.into(), value: value.into(), description: None }, &c)
            .await
            .unwrap();
    }
    update
        .execute(UpdateMemoryInput { label: "travel".into(), value: "Trip cancelled.".into(), description: None }, &c)
        .await
        .unwrap();
    let search = SearchMemoryTool::new(h.clone());
    let out = search.execute(SearchMemoryInput { query: "dark mode".into(), limit: None }, &c).await.unwrap();
    assert_eq!(out.mode, SearchMode::Text);
    let labels: Vec<&str> = out.hits.iter().map(|x| x.label.as_str()).collect();
    assert_eq!(labels, ["prefs", "work"], "the block matching both words ranks first");
    assert!(out.hits[0].snippet.contains("[dark]") && out.hits[0].snippet.contains("[mode]"), "{:?}", out.hits[0]);
    assert_eq!(out.hits[0].source, HitSource::Value);

    let out = search.execute(SearchMemoryInput { query: "Lisbon".into(), limit: Some(5) }, &c).await.unwrap();
    assert_eq!(out.hits.len(), 1);
    assert_eq!((out.hits[0].label.as_str(), out.hits[0].source), ("travel", HitSource::History));
    assert!(out.hits[0].snippet.contains("[Lisbon]"));

    let out = search.execute(SearchMemoryInput { query: "dark".into(), limit: Some(1) }, &c).await.unwrap();
    assert_eq!(out.hits.len(), 1);
    let e = search.execute(SearchMemoryInput { query: "?!".into(), limit: None }, &c).await.unwrap_err();
    assert!(e.message.starts_with("`query`"));
    let e = search.execute(SearchMemoryInput { query: "dark".into(), limit: Some(0) }, &c).await.unwrap_err();
    assert!(e.message.starts_with("`limit`"));
    let out =
        search.execute(SearchMemoryInput { query: "\"unbalanced OR NEAR(".into(), limit: None }, &c).await.unwrap();
    assert!(out.hits.is_empty(), "query syntax never leaks into FTS5");
}

#[tokio::test]
async fn the_in_memory_store_behaves_like_sqlite_for_the_tools() {
    let f = fixture(no_cooldown()).await;
    let runtime = AgentRuntime::builder(Database::open_in_memory().unwrap())
        .memory_store(std::sync::Arc::new(InMemoryStore::new()))
        .build()
        .await
        .unwrap();
    drop(f);
    let h = runtime.agent("a").await.unwrap();
    let r = registry(&h);
    let c = ctx("s");
    r.call("update_memory", json!({"label": "prefs", "value": "likes dark mode", "description": null}), &c)
        .await
        .unwrap();
    r.call("update_memory", json!({"label": "prefs", "value": "likes light mode", "description": null}), &c)
        .await
        .unwrap();
    r.call("append_memory", json!({"label": "prefs", "content": "and tea"}), &c).await.unwrap();
    let out = r.call("search_memory", json!({"query": "dark", "limit": null}), &c).await.unwrap();
    assert_eq!(out["hits"][0]["source"], "history");
    assert_eq!(out["hits"][0]["snippet"], "likes [dark] mode");
    let e = r.call("replace_in_memory", json!({"label": "prefs", "old": "zzz", "new": "y"}), &c).await.unwrap_err();
    assert_eq!(e.code, ErrorCode::MemoryNoMatch);
    assert_eq!(h.memory.history("prefs", 10).await.unwrap().len(), 3);
}

// ---------------------------------------------------------------- unit: tasks and reminders

#[tokio::test]
async fn track_task_shows_the_next_step_first_and_completes_step_by_step() {
    let (_f, h) = agent().await;
    let c = ctx("s");
    let tool = TrackTaskTool::new(h.clone());
    let input = |v: Value| serde_json::from_value::<TrackTaskInput>(v).unwrap();
    let out = tool
        .execute(
            input(json!({"op": "create", "title": "File taxes", "priority": "high", "due": "in 3d",
                               "steps": ["Find last year's return", "Download statements"]})),
            &c,
        )
        .await
        .unwrap();
    let task = out.task.unwrap();
    assert_eq!(task.next_step.as_deref(), Some("Find last year's return"));
    assert_eq!(task.due_at.as_deref(), Some("2026-03-04T09:00:00.000Z"));
    assert!(out.message.contains("Next step (1/2): Find last year's return"), "{}", out.message);
    let id = task.id;

    let out = tool.execute(input(json!({"op": "complete", "id": id, "step": 1})), &c).await.unwrap();
    assert!(out.message.contains("Step 1 done. Next step (2/2): Download statements"), "{}", out.message);
    assert_eq!(out.task.as_ref().unwrap().status, TaskStatus::InProgress);
    let out = tool.execute(input(json!({"op": "complete", "id": id, "step": 2})), &c).await.unwrap();
    assert!(out.message.contains("last step"), "{}", out.message);
    let done = out.task.unwrap();
    assert_eq!((done.status, done.next_step), (TaskStatus::Done, None));
    assert!(done.completed_at.is_some());

    let out = tool.execute(input(json!({"op": "list"})), &c).await.unwrap();
    assert!(out.tasks.is_empty(), "done tasks are hidden by default");
    let out = tool.execute(input(json!({"op": "list", "include_done": true})), &c).await.unwrap();
    assert_eq!(out.tasks.len(), 1);

    let e = tool.execute(input(json!({"op": "complete", "id": id, "step": 9})), &c).await.unwrap_err();
    assert!(e.message.starts_with("`step`"), "{}", e.message);
    let e = tool.execute(input(json!({"op": "update", "id": 999, "title": "x"})), &c).await.unwrap_err();
    assert_eq!(e.code, ErrorCode::NotFound);
    let e = tool.execute(input(json!({"op": "create"})), &c).await.unwrap_err();
    assert_eq!(e.message, "`title`: is required for op create");
    let e = tool.execute(input(json!({"op": "list", "title": "x"})), &c).await.unwrap_err();
    assert!(e.message.starts_with("`title`: is not used by op list"), "{}", e.message);
    let e =
        tool.execute(input(json!({"op": "create", "title": "t", "steps": ["x".repeat(500)]})), &c).await.unwrap_err();
    assert!(e.message.starts_with("`steps.0`"), "{}", e.message);

    let out = tool.execute(input(json!({"op": "delete", "id": id})), &c).await.unwrap();
    assert!(out.message.starts_with("Deleted task"));
    let e = tool.execute(input(json!({"op": "delete", "id": id})), &c).await.unwrap_err();
    assert_eq!(e.code, ErrorCode::NotFound);
}

#[tokio::test]
async fn track_task_lists_open_tasks_by_priority_then_due() {
    let (f, h) = agent().await;
    let c = ctx("s");
    let tool = TrackTaskTool::new(h.clone());
    let input = |v: Value| serde_json::from_value::<TrackTaskInput>(v).unwrap();
    for (title, priority, due) in [
        ("low", "low", None),
        ("urgent-late", "urgent", Some("in 2d")),
        ("urgent-soon", "urgent", Some("in 1h")),
        ("normal", "normal", None),
    ] {
        tool.execute(input(json!({"op": "create", "title": title, "priority": priority, "due": due})), &c)
            .await
            .unwrap();
    }
    f.clock.advance(chrono::Duration::hours(2));
    let out = tool.execute(input(json!({"op": "list"})), &c).await.unwrap();
    let titles: Vec<&str> = out.tasks.iter().map(|t| t.title.as_str()).collect();
    assert_eq!(titles, ["urgent-soon", "urgent-late", "normal", "low"]);
    assert!(out.tasks[0].overdue && !out.tasks[1].overdue);
    let out = tool
        .execute(
            input(json!({"op": "update", "id": out.tasks[3].id, "status": "blocked", "notes": "waiting on Sam"})),
            &c,
        )
        .await
        .unwrap();
    assert_eq!(out.task.unwrap().status, TaskStatus::Blocked);
    let out = tool.execute(input(json!({"op": "list", "status": "blocked"})), &c).await.unwrap();
    assert_eq!(out.tasks.len(), 1);
    assert_eq!(out.tasks[0].notes.as_deref(), Some("waiting on Sam"));
}

#[tokio::test]
async fn schedule_reminder_accepts_at_or_in_but_not_both() {
    let (f, h) = agent().await;
    let c = ctx("s");
    let tool = ScheduleReminderTool::new(h.clone());
    let input = |v: Value| serde_json::from_value::<ScheduleReminderInput>(v).unwrap();
    let out = tool.execute(input(json!({"in": "20m", "message": "stretch"})), &c).await.unwrap();
    assert_eq!(out.due_at, "2026-03-01T09:20:00.000Z");
    assert!(out.details.contains("to you"), "{}", out.details);
    let out = tool
        .execute(
            input(
                json!({"at": "2026-03-02T08:00:00+01:00", "message": "call", "target": {"type": "user", "id": null}}),
            ),
            &c,
        )
        .await
        .unwrap();
    assert_eq!(out.due_at, "2026-03-02T07:00:00.000Z");
    for (params, field) in [
        (json!({"in": "20m", "at": "2026-03-02T08:00:00Z", "message": "x"}), "`at`"),
        (json!({"message": "x"}), "`at`"),
        (json!({"in": "soon", "message": "x"}), "`in`"),
        (json!({"at": "tomorrow", "message": "x"}), "`at`"),
        (json!({"at": "2020-01-01T00:00:00Z", "message": "x"}), "`at`"),
        (json!({"in": "5m", "message": " "}), "`message`"),
    ] {
        let e = tool.execute(input(params.clone()), &c).await.unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidParams, "{params}");
        assert!(e.message.starts_with(field), "{params}: {}", e.message);
    }
    let e = tool
        .execute(input(json!({"in": "5m", "message": "x", "target": {"type": "agent", "id": "nobody"}})), &c)
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::TargetNotFound);
    assert_eq!(h.reminders.list(false).await.unwrap().len(), 2);

    f.clock.advance(chrono::Duration::minutes(21));
    let fired = f.runtime.scheduler().fire_due().await.unwrap();
    assert_eq!(fired.len(), 1);
    let m = h.inbox().try_recv().await.unwrap().unwrap();
    assert_eq!((m.content.as_str(), m.via.as_str()), ("stretch", "reminder"));
    assert_eq!(m.metadata.as_ref().unwrap()["kind"], "reminder");
}

// ---------------------------------------------------------------- registry

#[tokio::test]
async fn every_builtin_and_core_tool_is_registered_once_by_name() {
    let (_f, h) = agent().await;
    let r = registry(&h);
    let names = r.names();
    for n in BUILTIN_TOOL_NAMES.iter().chain(CORE_TOOL_NAMES) {
        assert_eq!(names.iter().filter(|x| x == n).count(), 1, "{n} in {names:?}");
    }
    assert_eq!(names.len(), BUILTIN_TOOL_NAMES.len() + CORE_TOOL_NAMES.len());
}

#[tokio::test]
async fn registry_wide_conformance() {
    let (_f, h) = agent().await;
    let r = registry(&h);
    holdfast_testkit::check_tool_schemas(&r).unwrap_or_else(|p| panic!("schema problems:\n{}", p.join("\n")));
    let c = ctx("conformance");
    holdfast_testkit::check_malformed_params(&r, &c)
        .await
        .unwrap_or_else(|p| panic!("malformed-params problems:\n{}", p.join("\n")));
}

#[tokio::test]
async fn tools_run_by_name_with_json_and_publish_events() {
    let (f, h) = agent().await;
    f.runtime.agent("helper").await.unwrap();
    let r = registry(&h);
    let c = ctx("s1");
    let mut events = c.events.subscribe();
    let out = r
        .call("update_memory", json!({"label": "human", "value": "Name: Alice", "description": "about the user"}), &c)
        .await
        .unwrap();
    assert_eq!(out, json!({"success": true, "previous_value": null, "message": "Created new memory block 'human'"}));
    let out = r
        .call(
            "send_message",
            json!({"target": {"type": "user"}, "content": "Hi Alice", "metadata": [{"key": "mood", "value": "cheerful"}]}),
            &c,
        )
        .await
        .unwrap();
    assert_eq!(out["success"], true);
    assert!(out["message_id"].as_str().unwrap().starts_with("msg_"));
    assert_eq!(out["details"], "Message sent to user");
    let out = r
        .call("send_message", json!({"target": {"type": "agent", "id": "ghost"}, "content": "x", "metadata": null}), &c)
        .await
        .unwrap_err();
    assert_eq!(out.code, ErrorCode::TargetNotFound);
    assert!(out.message.contains("assistant, helper"), "{}", out.message);
    let e = r.call("update_memory", json!({"label": "x", "value": "y", "extra": 1}), &c).await.unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidParams);

    let mut seen = Vec::new();
    while let Ok(e) = events.try_recv() {
        seen.push((e.name().to_owned(), e.data()));
    }
    let memory = seen.iter().find(|(n, _)| n == "memory.update").expect("memory.update published");
    assert_eq!(
        (memory.1["label"].as_str(), memory.1["op"].as_str(), memory.1["value"].as_str()),
        (Some("human"), Some("create"), Some("Name: Alice"))
    );
    let outbox = seen.iter().find(|(n, _)| n == "message.outbox").expect("message.outbox published");
    assert_eq!(outbox.1["content"], "Hi Alice");
    assert_eq!(outbox.1["metadata"], json!({"mood": "cheerful"}));
    let stored = f.runtime.router().outbox(&h.agent_id, 10).await.unwrap();
    assert_eq!(stored.len(), 1);
    assert_eq!((stored[0].content.as_str(), stored[0].session_id.as_deref()), ("Hi Alice", Some("s1")));
}

/// A replacement `update_memory` that tags every value.
struct Tagging(UpdateMemoryTool);

impl AiTool for Tagging {
    type Input = UpdateMemoryInput;
    type Output = UpdateMemoryOutput;
    fn name(&self) -> &str {
        "update_memory"
    }
    fn description(&self) -> &str {
        "tagging update_memory"
    }
    fn examples(&self) -> Vec<Value> {
        self.0.examples()
    }
    async fn execute(
        &self,
        mut input: UpdateMemoryInput,
        ctx: &holdfast_core::ToolContext,
    ) -> Result<UpdateMemoryOutput, holdfast_core::ToolError> {
        input.value = format!("[tagged] {}", input.value);
        self.0.execute(input, ctx).await
    }
}

#[tokio::test]
async fn any_builtin_can_be_replaced_by_name() {
    let (_f, h) = agent().await;
    let tools = BuiltinTools::builder()
        .with_memory_tool(Tagging(UpdateMemoryTool::new(h.clone())))
        .without("token_lookup")
        .build_for_agent(h.clone());
    let r = tools.into_registry().unwrap();
    assert_eq!(r.names().iter().filter(|n| *n == "update_memory").count(), 1);
    assert!(r.get("token_lookup").is_none());
    assert_eq!(r.get("update_memory").unwrap().description(), "tagging update_memory");
    r.call("update_memory", json!({"label": "x", "value": "v", "description": null}), &ctx("s")).await.unwrap();
    assert_eq!(h.memory.get("x").await.unwrap().unwrap().value, "[tagged] v");

    // Registering into a registry that already has the core tools keeps them and adds the built-ins.
    let existing = ToolRegistry::new();
    holdfast_core::builtin::register_core_tools(&existing).unwrap();
    BuiltinTools::default_for_agent(h.clone()).register_all(&existing).unwrap();
    assert_eq!(existing.names().len(), BUILTIN_TOOL_NAMES.len() + CORE_TOOL_NAMES.len());
}

#[tokio::test]
async fn a_session_with_an_attached_handle_acts_for_that_agent() {
    let (f, a) = agent().await;
    let b = f.runtime.agent("bob").await.unwrap();
    let r = registry(&a);
    let c = ctx("bob-session");
    b.attach(&c);
    r.call("update_memory", json!({"label": "who", "value": "bob's", "description": null}), &c).await.unwrap();
    assert!(a.memory.get("who").await.unwrap().is_none());
    assert_eq!(b.memory.get("who").await.unwrap().unwrap().value, "bob's");
}

#[tokio::test]
async fn the_renderer_is_deterministic_and_shows_budgets() {
    let (_f, h) = agent().await;
    h.memory
        .put_block(
            BlockSpec::new("persona", "I am Holdfast.")
                .pinned(true)
                .permission(Permission::ReadOnly)
                .description("who I am"),
        )
        .await
        .unwrap();
    h.memory.put_block(BlockSpec::new("human", "Name: Alice").char_limit(5)).await.unwrap();
    let text = h.memory.render().await.unwrap();
    assert!(text.find("label=\"persona\"").unwrap() < text.find("label=\"human\"").unwrap());
    assert!(text.contains("permission=\"read_only\" chars=\"14/2000\" pinned=\"true\""), "{text}");
    assert!(text.contains("chars=\"11/5\" over_budget_by=\"6\""), "{text}");
    assert!(text.contains("<description>who I am</description>"));
    assert_eq!(h.memory.render().await.unwrap(), text);
}

// ---------------------------------------------------------------- the example transcript

#[tokio::test]
async fn the_example_transcript_runs_through_the_registry() {
    let (f, h) = agent().await;
    drop(f.runtime.agent("researcher").await.unwrap());
    let r = registry(&h);
    let c = ctx("replay");
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/memory-and-tasks.jsonl");
    let text = std::fs::read_to_string(path).unwrap();
    let mut failures = Vec::new();
    let mut calls = 0;
    for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let v: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("line {}: {e}", i + 1));
        let Some(tool) = v.get("tool").and_then(Value::as_str) else { continue };
        calls += 1;
        assert!(r.get(tool).is_some(), "line {}: unknown tool {tool}", i + 1);
        if let Err(e) = r.call(tool, v["params"].clone(), &c).await {
            failures.push((i + 1, e.code));
        }
    }
    assert!(calls >= 10);
    // The transcript shows one deliberate failure: a replace whose `old` does not match.
    assert_eq!(failures.iter().map(|(_, c)| *c).collect::<Vec<_>>(), [ErrorCode::MemoryNoMatch], "{failures:?}");
}

// ---------------------------------------------------------------- docs

#[tokio::test]
async fn the_readme_documents_every_builtin_with_its_fields() {
    let (_f, h) = agent().await;
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    for info in registry(&h).list().into_iter().filter(|i| BUILTIN_TOOL_NAMES.contains(&i.name.as_str())) {
        let heading = format!("### {}\n", info.name);
        let start = readme.find(&heading).unwrap_or_else(|| panic!("README has no section for {}", info.name));
        let section = &readme[start + heading.len()..];
        let section = &section[..section.find("\n### ").or_else(|| section.find("\n## ")).unwrap_or(section.len())];
        for schema in [&info.input_schema, &info.output_schema] {
            for field in schema["properties"].as_object().unwrap().keys() {
                assert!(section.contains(field.as_str()), "README section {} does not mention `{field}`", info.name);
            }
        }
    }
}

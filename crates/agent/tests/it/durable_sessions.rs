//! Sessions survive a restart: registers with their provenance, the context bank and pending confirmations come
//! back when a new process opens the same data dir; idle sessions leave memory and come back on demand.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use holdfast_agent::{Decided, Runtime};
use holdfast_core::config::ConfigDocument;
use holdfast_core::confirm::ConfirmationState;
use holdfast_core::{ErrorCode, Origin, UserChannel, UserDecision};
use serde_json::json;
use std::path::Path;
use std::time::Duration;

async fn runtime(dir: &Path) -> Runtime {
    Runtime::from_document_with_data_dir(ConfigDocument::empty(), Some(dir.to_path_buf())).await.unwrap()
}

#[tokio::test]
async fn registers_bank_and_pending_confirmations_survive_a_restart() {
    let tmp = tempfile::tempdir().unwrap();
    let (id, confirmation_id, written_at) = {
        let rt = runtime(tmp.path()).await;
        let (info, ctx) = rt.open_session("http").await.unwrap();
        ctx.scan_user_input("send 5 USDC to 0x742d35Cc6634C0532925a3b844Bc9e7595f8FdF0").await.unwrap();
        rt.registry.call("register_set", json!({"key": "note", "value": "kept"}), &ctx).await.unwrap();
        let params = json!({"key": "approved_note", "value": "ran"});
        let err = ctx.require_confirmation("register_set", &params, "fp-1", json!({}), "test", |_| true).unwrap_err();
        ctx.persist().await.unwrap();
        let cid = err.details.unwrap()["confirmation_id"].as_str().unwrap().to_owned();
        (info.id, cid, ctx.registers.get("note").unwrap().provenance.created_at)
        // The runtime is dropped here, as a stopped process would be.
    };

    let rt = runtime(tmp.path()).await;
    assert!(rt.live_sessions().is_empty(), "nothing is loaded before it is asked for");
    let ctx = rt.session(&id).await.unwrap().expect("the session is known after a restart");
    let note = ctx.registers.get("note").unwrap();
    assert_eq!(note.value, json!("kept"));
    assert_eq!(note.provenance.origin, Origin::Model, "register_set writes carry the model's origin");
    assert_eq!(note.provenance.source, "register_set");
    assert_eq!(note.provenance.created_at, written_at, "the original time, so staleness carries over");
    assert!(ctx.context_bank.has_amount("5", "USDC"));
    assert!(ctx.context_bank.format_for_agent().unwrap().contains("0x742d35Cc6634C0532925a3b844Bc9e7595f8FdF0"));

    let pending = ctx.confirmations.pending();
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].id, confirmation_id);
    // Approving it after the restart runs the call once.
    let decided = rt.decide(&ctx, UserChannel::WebUi, &confirmation_id, UserDecision::Approve).await.unwrap();
    assert!(matches!(decided, Decided::Ran(_, Ok(_))), "{decided:?}");
    assert_eq!(ctx.registers.get("approved_note").unwrap().value, json!("ran"));
    let again = rt.decide(&ctx, UserChannel::WebUi, &confirmation_id, UserDecision::Approve).await.unwrap_err();
    assert_eq!(again.code, ErrorCode::ConfirmationNotFound, "an approval is used once");
    drop(ctx);
    drop(rt);

    // …and that decision is itself durable.
    let rt = runtime(tmp.path()).await;
    let ctx = rt.session(&id).await.unwrap().unwrap();
    assert!(ctx.confirmations.pending().is_empty());
    let decided = ctx.confirmations.get(&confirmation_id).unwrap();
    // register_set itself asks for nothing, so its run did not use the approval: it expired when that run ended
    // (no later call can find it); who decided is kept.
    assert_eq!((decided.state, decided.decided_by), (ConfirmationState::Expired, Some(UserChannel::WebUi)));
    assert_eq!(ctx.registers.get("approved_note").unwrap().value, json!("ran"));
    assert!(rt.session("s_unknown").await.unwrap().is_none());
}

/// Calls on one session whose saves go to the SQLite writer together (pipelined, in one commit where they meet):
/// every call answered `ok` is in the file after a restart, and the copy was never taken for another process's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_calls_on_one_session_are_all_saved_in_order() {
    let tmp = tempfile::tempdir().unwrap();
    let id = {
        let rt = runtime(tmp.path()).await;
        let (info, ctx) = rt.open_session("http").await.unwrap();
        let calls: Vec<_> = (0..64)
            .map(|i| {
                let (registry, ctx) = (rt.registry.clone(), ctx.clone());
                tokio::spawn(async move {
                    let key = format!("k{i:02}");
                    registry.call("register_set", json!({"key": key, "value": format!("{i}")}), &ctx).await?;
                    // Half of them overwrite their register right away: the last value must be the one kept.
                    if i % 2 == 0 {
                        registry
                            .call("register_set", json!({"key": key, "value": format!("{}", i + 1000)}), &ctx)
                            .await?;
                    }
                    Ok::<_, holdfast_core::ToolError>(())
                })
            })
            .collect();
        for call in calls {
            call.await.unwrap().unwrap();
        }
        assert!(!ctx.is_superseded());
        assert!(ctx.saved_revision().is_some_and(|r| r >= 1));
        info.id
    };
    let rt = runtime(tmp.path()).await;
    let ctx = rt.session(&id).await.unwrap().unwrap();
    for i in 0..64 {
        let want = if i % 2 == 0 { i + 1000 } else { i };
        assert_eq!(
            ctx.registers.get(&format!("k{i:02}")).map(|e| e.value.clone()),
            Some(json!(want.to_string())),
            "k{i:02}"
        );
    }
}

#[tokio::test]
async fn a_denial_is_durable_too() {
    let tmp = tempfile::tempdir().unwrap();
    let rt = runtime(tmp.path()).await;
    let (info, ctx) = rt.open_session("http").await.unwrap();
    let err = ctx.require_confirmation("register_set", &json!({}), "fp", json!({}), "test", |_| true).unwrap_err();
    ctx.persist().await.unwrap();
    let cid = err.details.unwrap()["confirmation_id"].as_str().unwrap().to_owned();
    rt.decide(&ctx, UserChannel::WebUi, &cid, UserDecision::Deny).await.unwrap();
    drop((ctx, rt));
    let rt = runtime(tmp.path()).await;
    let ctx = rt.session(&info.id).await.unwrap().unwrap();
    assert_eq!(ctx.confirmations.get(&cid).unwrap().state, ConfirmationState::Denied);
    let again = rt.decide(&ctx, UserChannel::WebUi, &cid, UserDecision::Approve).await.unwrap_err();
    assert_eq!(again.code, ErrorCode::ConfirmationNotFound, "a denied request cannot be approved after a restart");
}

#[tokio::test]
async fn idle_sessions_leave_memory_and_come_back_on_demand() {
    let tmp = tempfile::tempdir().unwrap();
    let rt = runtime(tmp.path()).await;
    let (a, ctx_a) = rt.open_session("http").await.unwrap();
    let (b, ctx_b) = rt.open_session("http").await.unwrap();
    let (c, ctx_c) = rt.open_session("http").await.unwrap();
    rt.registry.call("register_set", json!({"key": "who", "value": "a"}), &ctx_a).await.unwrap();
    let _events = ctx_c.events.subscribe();
    drop(ctx_a);
    drop(ctx_c);
    // `b` is still in use (a turn or request holds it); `c` has an event subscriber; `a` is unused.
    assert_eq!(rt.unload_idle(Duration::from_secs(3600)).await, 0, "nothing has been idle that long");
    assert_eq!(rt.unload_idle(Duration::ZERO).await, 1);
    let mut live = rt.live_sessions();
    live.sort();
    let mut expected = vec![b.id.clone(), c.id.clone()];
    expected.sort();
    assert_eq!(live, expected);

    let back = rt.session(&a.id).await.unwrap().unwrap();
    assert_eq!(back.registers.get("who").unwrap().value, json!("a"), "restored from its saved state");
    rt.registry.call("register_set", json!({"key": "who", "value": "a2"}), &back).await.unwrap();
    drop(back);
    drop(ctx_b);
    assert_eq!(rt.unload_idle(Duration::ZERO).await, 2, "a and b; c still has a subscriber");
    let back = rt.session(&a.id).await.unwrap().unwrap();
    assert_eq!(back.registers.get("who").unwrap().value, json!("a2"), "the newest state");
}

#[tokio::test]
async fn concurrent_requests_restore_one_session_object() {
    let tmp = tempfile::tempdir().unwrap();
    let rt = std::sync::Arc::new(runtime(tmp.path()).await);
    let (info, ctx) = rt.open_session("http").await.unwrap();
    drop(ctx);
    rt.unload_idle(Duration::ZERO).await;
    let tasks: Vec<_> = (0..8)
        .map(|i| {
            let (rt, id) = (std::sync::Arc::clone(&rt), info.id.clone());
            tokio::spawn(async move {
                let ctx = rt.session(&id).await.unwrap().unwrap();
                rt.registry
                    .call("register_set", json!({"key": format!("k{i}"), "value": i.to_string()}), &ctx)
                    .await
                    .unwrap();
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    let ctx = rt.session(&info.id).await.unwrap().unwrap();
    assert_eq!(ctx.registers.keys().len(), 8, "every write landed in the one restored session");
    drop(ctx);
    rt.unload_idle(Duration::ZERO).await;
    let ctx = rt.session(&info.id).await.unwrap().unwrap();
    assert_eq!(ctx.registers.keys().len(), 8, "and the saved state holds all eight");
}

#[tokio::test]
async fn active_skills_and_spent_registers_stay_after_an_unload_and_a_restart() {
    let tmp = tempfile::tempdir().unwrap();
    let id = {
        let rt = runtime(tmp.path()).await;
        let (info, ctx) = rt.open_session("http").await.unwrap();
        rt.registry.call("use_skill", json!({"name": "swap"}), &ctx).await.unwrap();
        // What the kernel does once a quote's transaction settled: the register cleared, its intent remembered.
        rt.registry.call("register_set", json!({"key": "note", "value": "x"}), &ctx).await.unwrap();
        holdfast_web3::kernel::inputs::spend(&ctx, "note", "intent-1");
        ctx.persist().await.unwrap();
        drop(ctx);
        rt.unload_idle(Duration::ZERO).await;
        let ctx = rt.session(&info.id).await.unwrap().unwrap();
        assert_eq!(holdfast_agent::skills::ActiveSkills::of(&ctx), ["swap"], "after an unload");
        // A second activation is not new.
        let again = rt.registry.call("use_skill", json!({"name": "swap"}), &ctx).await.unwrap();
        assert_eq!(again["newly_active"], false);
        info.id
    };
    let rt = runtime(tmp.path()).await;
    let ctx = rt.session(&id).await.unwrap().unwrap();
    assert_eq!(holdfast_agent::skills::ActiveSkills::of(&ctx), ["swap"], "after a restart");
    assert_eq!(holdfast_web3::kernel::inputs::spent_by(&ctx, "note").as_deref(), Some("intent-1"));
    assert!(ctx.registers.get("note").is_none());
}

#[tokio::test]
async fn an_unreadable_saved_state_is_an_error_not_an_empty_session() {
    let tmp = tempfile::tempdir().unwrap();
    let id = {
        let rt = runtime(tmp.path()).await;
        let (info, ctx) = rt.open_session("http").await.unwrap();
        rt.registry.call("register_set", json!({"key": "k", "value": "1"}), &ctx).await.unwrap();
        info.id
    };
    let db = rusqlite::Connection::open(tmp.path().join("holdfast.db")).unwrap();
    let broken = db.execute("UPDATE session_parts SET value = '{not json' WHERE session_id = ?1", [&id]).unwrap();
    assert!(broken > 0, "the saved state is in parts");
    drop(db);
    let rt = runtime(tmp.path()).await;
    let err = rt.session(&id).await.unwrap_err();
    assert_eq!(err.code, ErrorCode::Internal);
    assert!(err.message.contains(&id), "{}", err.message);
}

#[tokio::test]
async fn two_processes_on_one_session_conflict_instead_of_losing_a_change() {
    let tmp = tempfile::tempdir().unwrap();
    // Two runtimes on one data dir stand for two processes (`serve` and `mcp`, say).
    let first = runtime(tmp.path()).await;
    let second = runtime(tmp.path()).await;
    let (info, ctx1) = first.open_session("mcp").await.unwrap();
    first.registry.call("register_set", json!({"key": "a", "value": "from the first"}), &ctx1).await.unwrap();
    let ctx2 = second.session(&info.id).await.unwrap().unwrap();
    second.registry.call("register_set", json!({"key": "b", "value": "from the second"}), &ctx2).await.unwrap();

    let err = first.registry.call("register_set", json!({"key": "c", "value": "lost?"}), &ctx1).await.unwrap_err();
    assert_eq!(err.code, ErrorCode::SessionConflict, "{err:?}");
    assert!(ctx1.is_superseded());
    drop(ctx1);
    // The first process reloads the session and sees the second's change; its own refused write is not there.
    let ctx1 = first.session(&info.id).await.unwrap().unwrap();
    assert_eq!(ctx1.registers.get("b").unwrap().value, json!("from the second"));
    assert!(ctx1.registers.get("c").is_none());
    first.registry.call("register_set", json!({"key": "c", "value": "again"}), &ctx1).await.unwrap();
    drop((ctx1, ctx2, first, second));
    let rt = runtime(tmp.path()).await;
    let ctx = rt.session(&info.id).await.unwrap().unwrap();
    let keys = ctx.registers.keys();
    assert_eq!(keys, vec!["a".to_owned(), "b".to_owned(), "c".to_owned()], "nothing acknowledged was lost");
}

/// Waits for the next event about a register (`register.set`, `register.update`); its payload as JSON.
async fn register_event(
    events: &mut tokio::sync::broadcast::Receiver<std::sync::Arc<holdfast_core::event::Event>>,
) -> serde_json::Value {
    loop {
        let event = tokio::time::timeout(Duration::from_secs(10), events.recv()).await.unwrap().unwrap();
        if event.payload.name().starts_with("register.") {
            return serde_json::to_value(&event.payload).unwrap();
        }
    }
}

/// An instance on the PostgreSQL database `url`, with its own data dir under `tmp`.
async fn instance(tmp: &tempfile::TempDir, url: &holdfast_core::config::DatabaseUrl, name: &str) -> Runtime {
    let config = tmp.path().join(format!("{name}.toml"));
    let toml = format!("[storage]\ndata_dir = {:?}\nurl = {:?}\n", tmp.path().join(name), url.expose());
    std::fs::write(&config, toml).unwrap();
    Runtime::load(Some(&config)).await.unwrap()
}

/// The value of register `note` in `runtime`'s copy of session `id`, once it is `want` (the change's last event
/// travels between instances after the save); panics after 10 s.
async fn note_becomes(runtime: &Runtime, id: &str, want: &str) -> holdfast_core::ToolContext {
    for _ in 0..200 {
        let ctx = runtime.session(id).await.unwrap().unwrap();
        if ctx.registers.get("note").is_some_and(|e| e.value == json!(want)) {
            return ctx;
        }
        drop(ctx);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the session's note never became {want:?} on this instance");
}

/// Two instances on one PostgreSQL hold one session. A register set on one reaches the other's subscriber (the
/// event relay), and the other's next use of the session sees it once the change's last event arrives: its older copy is
/// replaced from the database on the same event bus, so its subscriber also receives what the session publishes
/// after the reload. A copy in use (a request holds it) is not replaced under it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_changed_on_one_instance_is_current_on_the_other_and_its_subscribers_stay() {
    let Some(url) = holdfast_testkit::postgres::fresh_database().await else { return };
    let tmp = tempfile::tempdir().unwrap();
    let (one, two) = (instance(&tmp, &url, "one").await, instance(&tmp, &url, "two").await);
    let (info, on_one) = one.open_session("http").await.unwrap();
    one.registry.call("register_set", json!({"key": "note", "value": "first"}), &on_one).await.unwrap();
    let mut seen_on_two = {
        let on_two = two.session(&info.id).await.unwrap().unwrap();
        assert_eq!(on_two.registers.get("note").unwrap().value, json!("first"));
        on_two.events.subscribe()
    };
    // The subscriber on two is announced to one; from then on one sends two the session's events.
    for _ in 0..200 {
        if one.watched_elsewhere(&info.id) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(one.watched_elsewhere(&info.id), "two's subscriber was announced");

    one.registry.call("register_set", json!({"key": "note", "value": "second"}), &on_one).await.unwrap();
    register_event(&mut seen_on_two).await;
    let on_two = note_becomes(&two, &info.id, "second").await;

    // The reloaded copy publishes on the bus the subscriber listens to, and saves on top of the other's write.
    two.registry.call("register_set", json!({"key": "note", "value": "third"}), &on_two).await.unwrap();
    let local = register_event(&mut seen_on_two).await;
    assert!(local.to_string().contains("third"), "{local}");
    // The first instance's copy is held (`on_one`): used as it is until released, then replaced.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let held = one.session(&info.id).await.unwrap().unwrap();
    assert_eq!(held.registers.get("note").unwrap().value, json!("second"), "not replaced under a holder");
    drop((held, on_one, on_two));
    let fresh = note_becomes(&one, &info.id, "third").await;
    // A replaced copy that changes nothing writes nothing: the other instance's next save is not refused for it.
    fresh.persist().await.unwrap();
    drop(fresh);
    let on_two = two.session(&info.id).await.unwrap().unwrap();
    two.registry.call("register_set", json!({"key": "note", "value": "fourth"}), &on_two).await.unwrap();
    drop(on_two);
    note_becomes(&one, &info.id, "fourth").await;
}

/// Two instances on one PostgreSQL write one session at once, eight clients each, every client its own keys and its
/// own amounts in user messages (the context bank is saved whole): their saves are pipelined and merged, and race
/// the other instance's. A call may be refused (`session_conflict`: its copy lost the race and is reloaded), but every
/// write a client was told is saved is in the session a third instance loads afterwards (a register: that write or a
/// later one of the same client; an amount: there): no copy's queued save lands on the other's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_instances_writing_one_session_at_once_lose_no_acknowledged_write() {
    let Some(url) = holdfast_testkit::postgres::fresh_database().await else { return };
    let tmp = tempfile::tempdir().unwrap();
    let (one, two) = (instance(&tmp, &url, "one").await, instance(&tmp, &url, "two").await);
    let (info, _) = one.open_session("http").await.unwrap();
    let (one, two) = (std::sync::Arc::new(one), std::sync::Arc::new(two));
    let acked = std::sync::Arc::new(parking_lot::Mutex::new(std::collections::HashMap::<String, u32>::new()));
    let refused = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let amounts = std::sync::Arc::new(parking_lot::Mutex::new(Vec::<String>::new()));
    let clients: Vec<_> = (0..16u32)
        .map(|c| {
            let rt = std::sync::Arc::clone(if c % 2 == 0 { &one } else { &two });
            let (id, acked, refused) =
                (info.id.clone(), std::sync::Arc::clone(&acked), std::sync::Arc::clone(&refused));
            let amounts = std::sync::Arc::clone(&amounts);
            tokio::spawn(async move {
                for i in 0..40u32 {
                    let key = format!("c{c}_k{}", i % 3);
                    let ctx = rt.session(&id).await.unwrap().unwrap();
                    match rt.registry.call("register_set", json!({"key": key, "value": i.to_string()}), &ctx).await {
                        Ok(_) => {
                            acked.lock().insert(key, i);
                        }
                        Err(e) if e.code == ErrorCode::SessionConflict => {
                            refused.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        }
                        Err(e) => panic!("client {c}, write {i}: {e:?}"),
                    }
                    let amount = format!("{}.{:03}", c + 1, i);
                    let ctx = rt.session(&id).await.unwrap().unwrap();
                    match ctx.scan_user_input(&format!("send {amount} USDC")).await {
                        Ok(_) => amounts.lock().push(amount),
                        Err(e) if e.code == ErrorCode::SessionConflict => {
                            refused.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        }
                        Err(e) => panic!("client {c}, message {i}: {e:?}"),
                    }
                }
            })
        })
        .collect();
    for client in clients {
        client.await.unwrap();
    }
    let three = instance(&tmp, &url, "three").await;
    let ctx = three.session(&info.id).await.unwrap().unwrap();
    let acked = acked.lock().clone();
    let lost: Vec<_> = acked
        .iter()
        .filter(|(key, i)| {
            let found = ctx.registers.get(key).and_then(|e| e.value.as_str().and_then(|v| v.parse::<u32>().ok()));
            found.is_none_or(|found| found < **i)
        })
        .collect();
    let amounts = amounts.lock().clone();
    let lost_amounts: Vec<_> = amounts.iter().filter(|a| !ctx.context_bank.has_amount(a, "USDC")).collect();
    let refused = refused.load(std::sync::atomic::Ordering::SeqCst);
    println!(
        "two instances on one session: {} keys and {} amounts acknowledged, {refused} calls refused; lost {lost:?} \
         and {} amounts",
        acked.len(),
        amounts.len(),
        lost_amounts.len()
    );
    assert!(lost.is_empty(), "acknowledged writes lost (key, acknowledged write): {lost:?}");
    assert!(lost_amounts.is_empty(), "acknowledged amounts lost from the context bank: {lost_amounts:?}");
    assert!(acked.len() >= 40, "most clients' writes went through: {} keys", acked.len());
}

/// A save on one instance whose events the other never got (here: the other's mark of them cleared, as if the relay
/// had lost them) is found from the stored revision at the other's next use of the session (once a second at most):
/// its older copy is replaced, not used.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_save_whose_event_was_lost_is_found_from_the_stored_revision() {
    let Some(url) = holdfast_testkit::postgres::fresh_database().await else { return };
    let tmp = tempfile::tempdir().unwrap();
    let (one, two) = (instance(&tmp, &url, "one").await, instance(&tmp, &url, "two").await);
    let (info, on_one) = one.open_session("http").await.unwrap();
    one.registry.call("register_set", json!({"key": "note", "value": "first"}), &on_one).await.unwrap();
    let bus_on_two = {
        let on_two = two.session(&info.id).await.unwrap().unwrap();
        assert_eq!(on_two.registers.get("note").unwrap().value, json!("first"));
        on_two.events.clone()
    };
    one.registry.call("register_set", json!({"key": "note", "value": "second"}), &on_one).await.unwrap();
    // The save's events arrive, and are then forgotten: as if they had been lost on the way.
    for _ in 0..200 {
        if bus_on_two.has_remote_activity() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    bus_on_two.take_remote_activity();
    drop(bus_on_two);
    // The stored revision is compared at most once a second per session.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let current = two.session(&info.id).await.unwrap().unwrap();
    assert_eq!(current.registers.get("note").unwrap().value, json!("second"), "not the older copy");
}

/// The file descriptors of this process open on `file` for writing (Linux: `/proc/self/fd` and its `fdinfo` flags).
#[cfg(target_os = "linux")]
fn writable_fds_on(file: &Path) -> usize {
    let file = file.canonicalize().unwrap();
    let mut n = 0;
    for entry in std::fs::read_dir("/proc/self/fd").unwrap().flatten() {
        let Ok(target) = std::fs::read_link(entry.path()) else { continue };
        if target != file {
            continue;
        }
        let info = std::fs::read_to_string(format!("/proc/self/fdinfo/{}", entry.file_name().to_string_lossy()));
        let Ok(info) = info else { continue };
        let flags = info.lines().find_map(|l| l.strip_prefix("flags:")).map(str::trim).unwrap();
        if u32::from_str_radix(flags, 8).unwrap() & 0o3 != 0 {
            n += 1;
        }
    }
    n
}

/// The journal, sessions and memory share the process's one writing connection on `holdfast.db`: no two
/// connections of one process contend for the file's write lock (each owner used to open its own).
#[cfg(target_os = "linux")]
#[tokio::test]
async fn one_process_writes_its_data_dir_file_through_one_connection() {
    let tmp = tempfile::tempdir().unwrap();
    let rt = runtime(tmp.path()).await;
    let (info, ctx) = rt.open_session("http").await.unwrap();
    rt.registry.call("register_set", json!({"key": "note", "value": "kept"}), &ctx).await.unwrap();
    rt.registry.call("update_memory", json!({"label": "human", "value": "Prefers tea."}), &ctx).await.unwrap();
    let file = tmp.path().join("holdfast.db");
    assert_eq!(writable_fds_on(&file), 1, "the journal, sessions and memory each opened the file for writing");
    // What each owner wrote is in the one file.
    drop((ctx, rt));
    let rt = runtime(tmp.path()).await;
    let (_, ctx) = rt.open_session("http").await.unwrap();
    let out = rt.registry.call("list_memories", json!({}), &ctx).await.unwrap();
    let kept = rt.session(&info.id).await.unwrap().unwrap();
    assert_eq!(kept.registers.get("note").unwrap().value, json!("kept"));
    assert_eq!(out["blocks"][0]["label"], "human", "{out}");
}

/// A data dir another process holds is refused before anything in it is opened: its database is not created,
/// changed or waited on (the SQLite file used to be opened first, the lock taken after).
#[tokio::test]
async fn a_held_data_dir_is_refused_before_its_database_is_touched() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    std::fs::create_dir_all(&dir).unwrap();
    // Another process's lock, as flock(2) sees it: this file description, not this process's lock table.
    let mut options = std::fs::OpenOptions::new();
    options.read(true).write(true).create(true).truncate(false);
    let other = options.open(dir.join("holdfast.lock")).unwrap();
    other.try_lock().unwrap();
    let err = Runtime::from_document_with_data_dir(ConfigDocument::empty(), Some(dir.clone())).await.unwrap_err();
    assert!(err.to_string().contains("another holdfast process is using the data dir"), "{err}");
    assert!(!dir.join("holdfast.db").exists(), "the held data dir's database was opened");
}

/// An approval is spent by its run only, even when that run is dropped part-way (the HTTP client that awaited it went
/// away): it has expired, and the same call later asks the user again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_whose_run_was_dropped_part_way_is_not_left_standing() {
    let tmp = tempfile::tempdir().unwrap();
    let rt = runtime(tmp.path()).await;
    let (_, ctx) = rt.open_session("http").await.unwrap();
    let params = json!({"key": "approved_note", "value": "ran"});
    let err = ctx.require_confirmation("register_set", &params, "fp-1", json!({}), "test", |_| true).unwrap_err();
    let cid = err.details.unwrap()["confirmation_id"].as_str().unwrap().to_owned();
    // Another connection holds the file's write lock, so the run's save waits on the SQLite writer thread however
    // fast this machine is (without it the save could finish within the first poll).
    let blocker = holdfast_store::sqlite::open_file(&tmp.path().join("holdfast.db")).unwrap();
    blocker.execute_batch("BEGIN IMMEDIATE").unwrap();
    // Polled once, then dropped: the run waits for its save.
    let run = rt.decide(&ctx, UserChannel::WebUi, &cid, UserDecision::Approve);
    assert!(tokio::time::timeout(Duration::ZERO, run).await.is_err(), "dropped while it ran");
    // Before: still approved, for the next call of the same action to use without asking.
    assert_eq!(ctx.confirmations.get(&cid).unwrap().state, ConfirmationState::Expired);
    let again = ctx.require_confirmation("register_set", &params, "fp-1", json!({}), "test", |_| true).unwrap_err();
    assert_eq!(again.code, ErrorCode::ConfirmationRequired);
    blocker.execute_batch("COMMIT").unwrap();
}

//! Upgrades in place: a data dir written by an earlier release (committed under `tests/fixtures/`) opens with this
//! one, and everything in it is there — a session's history, registers and context bank, an agent's memory, tasks,
//! a pending reminder and a message waiting in another agent's inbox. The same for a PostgreSQL database of that
//! release (a `pg_dump` of it, restored with `psql`). The fixtures are made by [`write_fixture`] run on that release
//! (see its comment); make them at each release that changes a table.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use holdfast_agent::{MessageRole, NewMessage, Runtime};
use serde_json::json;
use std::path::Path;

/// The configuration the fixture was written with (and is read with).
const CONFIG: &str = "[memory]\nagent_cooldown_secs = 0\n\n[agents.helper]\npersona = \"You help.\"\n";
/// The user's words in the fixture's session.
const SAID: &str = "swap 0.01 ETH for USDC on base";

fn config(dir: &Path, data: &Path) -> std::path::PathBuf {
    let path = dir.join("holdfast.toml");
    std::fs::write(&path, format!("[storage]\ndata_dir = {data:?}\n{CONFIG}")).unwrap();
    path
}

/// Writes the fixture: `HOLDFAST_WRITE_FIXTURE=DIR cargo test -p holdfast-agent --test it upgrade::write_fixture --
/// --ignored` writes a data dir to `DIR/data`; commit its `holdfast.db` (the wallet key is not needed) as
/// `tests/fixtures/data-<release>/holdfast.db`. With `HOLDFAST_DATABASE_URL` set to an empty database it writes
/// there instead; commit `pg_dump --no-owner --no-privileges --inserts URL` of it as
/// `tests/fixtures/data-<release>/postgres.sql`.
#[tokio::test]
#[ignore = "run by hand at a release to make a fixture"]
async fn write_fixture() {
    let out = std::path::PathBuf::from(std::env::var("HOLDFAST_WRITE_FIXTURE").expect("HOLDFAST_WRITE_FIXTURE=DIR"));
    std::fs::create_dir_all(&out).unwrap();
    let rt = Runtime::load(Some(&config(&out, &out.join("data")))).await.unwrap();
    let (_, ctx) = rt.open_session_as("http", "assistant").await.unwrap();
    ctx.scan_user_input(SAID).await.unwrap();
    rt.sessions.append(&ctx.session_id, NewMessage::text(MessageRole::User, SAID)).await.unwrap();
    rt.sessions.append(&ctx.session_id, NewMessage::text(MessageRole::Assistant, "Which network?")).await.unwrap();
    let call = async |tool: &str, params: serde_json::Value| rt.registry.call(tool, params, &ctx).await.unwrap();
    call("register_set", json!({"key": "note", "value": "kept across upgrades"})).await;
    call("update_memory", json!({"label": "human", "value": "prefers base", "description": null})).await;
    call(
        "track_task",
        json!({"op": "create", "id": null, "title": "watch gas", "notes": null, "due": null, "priority": null, "status": null}),
    )
    .await;
    call(
        "schedule_reminder",
        json!({"at": "2036-01-01T00:00:00Z", "in": null, "message": "check the swap", "target": {"type": "user", "id": null}}),
    )
    .await;
    call(
        "send_message",
        json!({"target": {"type": "agent", "id": "helper"}, "content": "hello helper", "metadata": null}),
    )
    .await;
    ctx.persist().await.unwrap();
    println!("session {}", ctx.session_id);
}

/// The data dir of 2026-11-26 (before the messages tables gained `not_before`, the scheduling session and the inbox
/// holds) opens in place, and nothing in it is lost.
#[tokio::test]
async fn a_data_dir_of_an_earlier_release_opens_in_place_with_everything_in_it() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/data-2026-11-26/holdfast.db");
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    std::fs::copy(&fixture, data.join("holdfast.db")).unwrap();
    everything_is_there(&config(dir.path(), &data)).await;
}

/// The PostgreSQL database of 2026-11-26 (before the same three steps of the messages tables, and the sessions
/// table's `save_id`) is migrated in place when an instance of this release starts on it, and nothing in it is lost.
#[tokio::test]
async fn a_postgres_database_of_an_earlier_release_is_migrated_in_place_with_everything_in_it() {
    let Some(url) = holdfast_testkit::postgres::fresh_database().await else { return };
    let dump = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/data-2026-11-26/postgres.sql");
    let restored = std::process::Command::new("psql")
        .args(["-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", url.expose(), "-f"])
        .arg(&dump)
        .output()
        .expect("psql (PostgreSQL's client, installed by scripts/test.sh)");
    assert!(restored.status.success(), "psql: {}", String::from_utf8_lossy(&restored.stderr));
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let path = dir.path().join("holdfast.toml");
    let url_line = format!("url = {:?}\n", url.expose());
    std::fs::write(&path, format!("[storage]\ndata_dir = {data:?}\n{url_line}{CONFIG}")).unwrap();
    everything_is_there(&path).await;
}

/// Opens the configuration `path` names, finds everything [`write_fixture`] wrote, changes a register, and finds it
/// again after a restart.
async fn everything_is_there(path: &Path) {
    let rt = Runtime::load(Some(path)).await.unwrap();

    // The session: its title, history, registers and context bank.
    let sessions = rt.sessions.list(10).await.unwrap();
    let info = sessions.iter().find(|s| s.title.as_deref() == Some(SAID)).expect("the session is listed");
    let history = rt.sessions.history(&info.id).await.unwrap();
    let said: Vec<(MessageRole, &str)> = history.iter().map(|m| (m.role, m.content.as_str())).collect();
    assert_eq!(said[..2], [(MessageRole::User, SAID), (MessageRole::Assistant, "Which network?")]);
    let ctx = rt.session(&info.id).await.unwrap().unwrap();
    assert_eq!(ctx.registers.get("note").unwrap().value, "kept across upgrades");
    let bank = serde_json::to_string(&ctx.context_bank.items()).unwrap();
    assert!(bank.contains("0.01") && bank.contains("USDC"), "{bank}");

    // The agent's memory and tasks, its pending reminder (unchanged by the new columns), the helper's message.
    let human = rt.agent.memory.get("human").await.unwrap().unwrap();
    assert_eq!(human.value, "prefers base");
    let found = rt.agent.memory.search("prefers", None).await.unwrap();
    assert!(format!("{found:?}").contains("human"), "the search index came along: {found:?}");
    let tasks = rt.agent.tasks.list(Default::default()).await.unwrap();
    assert_eq!(tasks.iter().map(|t| t.title.as_str()).collect::<Vec<_>>(), ["watch gas"]);
    let reminders = rt.agent.reminders.list(true).await.unwrap();
    assert_eq!(reminders.len(), 1);
    assert_eq!((reminders[0].message.as_str(), reminders[0].fired_at), ("check the swap", None));
    let helper = rt.profile("helper").unwrap().handle.inbox().pending().await.unwrap();
    assert_eq!(helper.iter().map(|m| m.content.as_str()).collect::<Vec<_>>(), ["hello helper"]);

    // Changed and saved by this release, and read back after a restart.
    rt.registry.call("register_set", json!({"key": "after", "value": "upgraded"}), &ctx).await.unwrap();
    ctx.persist().await.unwrap();
    drop((ctx, rt));
    let rt = Runtime::load(Some(path)).await.unwrap();
    let ctx = rt.session(&info.id).await.unwrap().unwrap();
    assert_eq!(ctx.registers.get("after").unwrap().value, "upgraded");
    assert_eq!(ctx.registers.get("note").unwrap().value, "kept across upgrades");
}

//! `holdfast chat` scripted through stdin against a model server speaking the OpenAI wire protocol.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use holdfast_testkit::scripted::{Reply, Scripted, Wire, tool};
use serde_json::json;
use std::io::Write;
use std::process::{Command, Stdio};

async fn chat(env: &[(&str, &str)], stdin: &str) -> (bool, String, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_holdfast"));
    cmd.arg("chat").stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    for var in ["OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "HOLDFAST_MODEL"] {
        cmd.env_remove(var);
    }
    cmd.envs(env.iter().copied());
    let mut child = cmd.spawn().unwrap();
    child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    let out = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap()).await.unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test]
async fn chat_reads_one_message_per_line_and_shows_tools_and_registers() {
    let scripted = Scripted::start(
        Wire::OpenAi,
        vec![
            Reply::Tools(vec![tool(
                "token_lookup",
                json!({"symbol": "ETH", "network": "base", "cache_as": "sell_token"}),
            )]),
            Reply::Text("ETH is ready to sell.".into()),
            Reply::Text("You are welcome.".into()),
        ],
    )
    .await;
    let (ok, stdout, stderr) = chat(
        &[("OPENAI_API_KEY", "sk-test"), ("OPENAI_BASE_URL", &scripted.url), ("HOLDFAST_MODEL", "scripted")],
        "swap 0.001 ETH for USDC\nthanks\n",
    )
    .await;
    assert!(ok, "{stderr}");
    for needle in [
        "→ token_lookup",
        "← token_lookup ok",
        "[register] sell_token",
        "origin config",
        "ETH is ready to sell.",
        "You are welcome.",
    ] {
        assert!(stdout.contains(needle), "missing {needle:?} in:\n{stdout}");
    }
    assert_eq!(scripted.requests.lock().len(), 3);
    assert_eq!(scripted.requests.lock()[0].1["model"], "scripted");
}

#[tokio::test]
async fn chat_prints_no_escape_sequence_it_did_not_write() {
    // A tool result, a tool error and the model's own text, each carrying a clear-screen (`ESC [2J`), a window-title
    // OSC, a carriage return and a bidi override.
    let hostile = "\u{1b}[2J\u{1b}]0;pwned\u{7}cleared\r\u{202e}screen\u{1b}]2;title\u{1b}\\";
    let scripted = Scripted::start(
        Wire::OpenAi,
        vec![
            Reply::Tools(vec![
                tool("register_set", json!({"key": "note", "value": hostile})),
                tool("token_lookup", json!({"symbol": hostile, "network": "base", "cache_as": "sell_token"})),
            ]),
            // Streamed in two halves; the sequences all fall in the first.
            Reply::Text(format!("{hostile} model says done{}", ".".repeat(200))),
        ],
    )
    .await;
    let (ok, stdout, stderr) = chat(
        &[("OPENAI_API_KEY", "sk-test"), ("OPENAI_BASE_URL", &scripted.url), ("HOLDFAST_MODEL", "scripted")],
        "note this\n",
    )
    .await;
    assert!(ok, "{stderr}");
    // The bidi override is shown escaped, as text: the reader sees it is there, and it reorders nothing.
    for needle in [
        "← register_set ok",
        "[register] note = cleared\\u{202e}screen",
        "← token_lookup",
        "cleared\\u{202e}screen model says done",
    ] {
        assert!(stdout.contains(needle), "missing {needle:?} in:\n{stdout}");
    }
    let unsafe_chars: Vec<char> = stdout
        .chars()
        .filter(|c| {
            (c.is_control() && *c != '\n' && *c != '\t')
                || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
        })
        .collect();
    assert!(unsafe_chars.is_empty(), "{unsafe_chars:?} printed in:\n{stdout:?}");
    // The OSC bodies went with their sequences (the JSON result and the error quote them escaped, as text).
    assert!(stdout.contains("  [register] note = cleared\\u{202e}screen (origin model"), "{stdout}");
}

#[tokio::test]
async fn chat_without_a_provider_says_how_to_configure_one() {
    let (ok, _, stderr) = chat(&[], "hi\n").await;
    assert!(!ok);
    assert!(stderr.contains("OPENAI_API_KEY") && stderr.contains("ANTHROPIC_API_KEY"), "{stderr}");
}

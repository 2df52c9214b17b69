//! `holdfast replay`: a transcript of user messages and tool calls, run in one fresh session.
//!
//! The whole transcript is parsed before anything runs, so a malformed line never leaves half a transcript
//! executed. A failing tool call is data (`"ok": false` with its coded error), not a crash. The lines and their
//! parser live in [`holdfast_core::transcript`].

use anyhow::Context as _;
use holdfast_agent::{Decided, MessageRole, NewMessage, Runtime};
use holdfast_core::transcript::{TranscriptLine as Line, parse_transcript};
use holdfast_core::{ToolContext, ToolError, UserChannel, UserDecision};
use serde_json::{Value, json};
use std::io::{BufRead, Write};
use std::process::ExitCode;
use std::time::Duration;

fn error_json(e: &ToolError) -> Value {
    serde_json::to_value(e).unwrap_or_else(|_| json!({"code": "internal", "message": e.message}))
}

/// Runs a transcript (`-` = stdin) and prints one JSON line per step, then the final state.
pub(crate) async fn run(runtime: &Runtime, transcript: &str) -> anyhow::Result<ExitCode> {
    let text = if transcript == "-" {
        let mut s = String::new();
        for line in std::io::stdin().lock().lines() {
            s.push_str(&line.context("reading the transcript from stdin")?);
            s.push('\n');
        }
        s
    } else {
        std::fs::read_to_string(transcript).with_context(|| format!("cannot read transcript {transcript}"))?
    };
    let lines = parse_transcript(&text)?;
    crate::startup::verify_price_feeds(runtime).await?;
    crate::startup::verify_account(runtime).await?;
    crate::startup::reconcile_journal(runtime).await;
    let (info, ctx) = runtime.open_session("replay").await.map_err(|e| anyhow::anyhow!("{e}"))?;
    let session_id = info.id;
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    for (i, line) in lines.into_iter().enumerate() {
        if let Line::User { user } = &line {
            runtime
                .sessions
                .append(&session_id, NewMessage::text(MessageRole::User, user.clone()))
                .await
                .map_err(|e| anyhow::anyhow!("{e}"))?;
        }
        let step = step(runtime, &ctx, line).await;
        let mut record = json!({"step": i + 1});
        if let (Value::Object(r), Value::Object(s)) = (&mut record, step) {
            r.extend(s);
        }
        writeln!(out, "{record}").context("writing to stdout")?;
    }
    let final_line = json!({
        "kind": "final",
        "session_id": session_id,
        "registers": ctx.registers.snapshot(),
        "context_bank": ctx.context_bank.items(),
        "journal": runtime.web3.journal().for_session(&session_id).await.map_err(|e| anyhow::anyhow!("{e}"))?,
    });
    writeln!(out, "{final_line}").context("writing to stdout")?;
    Ok(ExitCode::SUCCESS)
}

async fn step(runtime: &Runtime, ctx: &ToolContext, line: Line) -> Value {
    match line {
        Line::User { user } => match ctx.scan_user_input(&user).await {
            Ok(_) => json!({"kind": "user", "context_bank": ctx.context_bank.items()}),
            Err(e) => json!({"kind": "user", "context_bank": ctx.context_bank.items(), "error": e}),
        },
        Line::Tool { tool, params } => {
            let result = runtime.registry.call(&tool, params, ctx).await;
            tool_record("tool", &tool, result)
        }
        Line::Confirm { confirm } => {
            let pending =
                if confirm == "last" { ctx.confirmations.last_pending().map(|c| c.id) } else { Some(confirm.clone()) };
            let decided = match pending {
                Some(id) => runtime.decide(ctx, UserChannel::Replay, &id, UserDecision::Approve).await,
                None => Err(ToolError::new(
                    holdfast_core::ErrorCode::ConfirmationNotFound,
                    "`confirm`: no confirmation is pending",
                )),
            };
            match decided {
                Ok(Decided::Ran(c, result)) => {
                    let mut record = tool_record("confirm", &c.tool, result);
                    record["confirmation_id"] = json!(c.id);
                    record
                }
                Ok(Decided::Denied(c)) => json!({"kind": "confirm", "ok": false, "confirmation_id": c.id}),
                Err(e) => json!({"kind": "confirm", "ok": false, "error": error_json(&e)}),
            }
        }
        Line::Deny { deny } => {
            let id = if deny == "last" { ctx.confirmations.last_pending().map(|c| c.id) } else { Some(deny) };
            let denied = match id {
                Some(id) => runtime.decide(ctx, UserChannel::Replay, &id, UserDecision::Deny).await.map(|d| match d {
                    Decided::Ran(c, _) | Decided::Denied(c) => c,
                }),
                None => Err(ToolError::new(
                    holdfast_core::ErrorCode::ConfirmationNotFound,
                    "`deny`: no confirmation is pending",
                )),
            };
            match denied {
                Ok(c) => {
                    json!({"kind": "deny", "ok": true, "output": {"confirmation_id": c.id, "tool": c.tool, "denied": true}})
                }
                Err(e) => json!({"kind": "deny", "ok": false, "error": error_json(&e)}),
            }
        }
        Line::Sleep { sleep_ms } => {
            tokio::time::sleep(Duration::from_millis(sleep_ms)).await;
            json!({"kind": "sleep", "ok": true, "slept_ms": sleep_ms})
        }
    }
}

fn tool_record(kind: &str, tool: &str, result: Result<Value, ToolError>) -> Value {
    match result {
        Ok(output) => json!({"kind": kind, "tool": tool, "ok": true, "output": output}),
        Err(e) => json!({"kind": kind, "tool": tool, "ok": false, "error": error_json(&e)}),
    }
}

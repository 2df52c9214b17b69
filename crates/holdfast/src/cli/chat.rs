//! `holdfast chat`: the agent in a terminal. Streams the model's tokens, shows tool calls and their results,
//! register changes, the context bank and transactions as they happen, and asks before value-moving actions.
//!
//! With stdin not a terminal it reads one user message per line and exits at end of input, so it can be scripted;
//! a confirmation then consumes the next input line (`y`/`yes` approves, anything else denies).
//!
//! Everything printed that this module did not write itself — model text, tool calls, results and errors,
//! confirmation summaries, event values — goes through [`sanitize`] (`crate::terminal`) first, so no one but chat
//! controls the terminal: a tool result cannot clear the screen, move the cursor, set the title or rewrite a
//! confirmation prompt, and nothing invisible hides in what the user reads.

use crate::terminal::sanitize;
use anyhow::Context as _;
use holdfast_agent::{Agent, CancelToken, ConfirmDecision, Runtime, TurnObserver};
use holdfast_core::confirm::Confirmation;
use holdfast_core::event::{EventPayload, RegisterUpdate};
use holdfast_core::tool::BoxFuture;
use holdfast_core::{ToolContext, ToolError};
use serde_json::Value;
use std::io::{IsTerminal, Write};
use std::path::Path;
use std::sync::Arc;
use tokio::sync::{Mutex, mpsc};

/// Lines from stdin, read on a blocking thread.
struct Input {
    lines: Mutex<mpsc::Receiver<String>>,
    interactive: bool,
}

impl Input {
    fn start() -> Self {
        let (tx, rx) = mpsc::channel(16);
        let interactive = std::io::stdin().is_terminal();
        std::thread::spawn(move || {
            for line in std::io::stdin().lines() {
                let Ok(line) = line else { break };
                if tx.blocking_send(line).is_err() {
                    break;
                }
            }
        });
        Self { lines: Mutex::new(rx), interactive }
    }

    async fn next(&self, prompt: &str) -> Option<String> {
        if self.interactive {
            print!("{prompt}");
            let _ = std::io::stdout().flush();
        }
        self.lines.lock().await.recv().await
    }
}

struct Terminal {
    input: Arc<Input>,
}

/// `v` sanitized, then cut to `max` characters.
fn short(v: &str, max: usize) -> String {
    let v = sanitize(v);
    if v.chars().count() <= max { v.into_owned() } else { format!("{}…", v.chars().take(max).collect::<String>()) }
}

impl TurnObserver for Terminal {
    fn channel(&self) -> Option<holdfast_core::UserChannel> {
        // The person at this terminal answers the prompt below.
        Some(holdfast_core::UserChannel::Terminal)
    }

    fn on_text(&self, delta: &str) {
        print!("{}", sanitize(delta));
        let _ = std::io::stdout().flush();
    }

    fn on_tool_call(&self, name: &str, arguments: &str) {
        println!("\n→ {} {}", sanitize(name), short(arguments, 200));
    }

    fn on_tool_result(&self, name: &str, result: &Result<Value, ToolError>) {
        match result {
            Ok(v) => println!("← {} ok {}", sanitize(name), short(&v.to_string(), 200)),
            Err(e) => println!("← {} {}: {}", sanitize(name), e.code, short(&e.message, 300)),
        }
    }

    fn confirm<'a>(&'a self, c: &'a Confirmation) -> BoxFuture<'a, ConfirmDecision> {
        Box::pin(async move {
            println!("\n⚠ {} waits for your approval ({}):", sanitize(&c.tool), sanitize(&c.reason));
            if let Value::Object(map) = &c.summary {
                for (k, v) in map {
                    let v = v.as_str().map_or_else(|| v.to_string(), str::to_owned);
                    println!("    {:>16}: {}", sanitize(k), sanitize(&v));
                }
            }
            match self.input.next("Approve? [y/N] ").await {
                Some(answer) if matches!(answer.trim().to_lowercase().as_str(), "y" | "yes") => {
                    println!("approved");
                    ConfirmDecision::Approve
                }
                Some(_) => {
                    println!("denied");
                    ConfirmDecision::Deny
                }
                None => ConfirmDecision::Deny,
            }
        })
    }
}

/// Prints register, context-bank, transaction and payment events of the session as they happen.
fn watch_events(ctx: &ToolContext) {
    let mut rx = ctx.events.subscribe();
    tokio::spawn(async move {
        while let Ok(e) = rx.recv().await {
            match &e.payload {
                EventPayload::RegisterUpdate(RegisterUpdate::Set { key, entry }) => {
                    let value = entry.value.as_str().map_or_else(|| entry.value.to_string(), str::to_owned);
                    println!(
                        "  [register] {} = {} (origin {}, from {})",
                        sanitize(key),
                        short(&value, 80),
                        entry.origin().as_str(),
                        sanitize(&entry.provenance.source)
                    );
                }
                EventPayload::ContextBankUpdate(update) => {
                    let added: Vec<String> =
                        update.added.iter().map(|i| format!("{} {}", i.item_type.as_str(), i.value)).collect();
                    if !added.is_empty() {
                        println!("  [context bank] {}", sanitize(&added.join(", ")));
                    }
                }
                EventPayload::TxPending(tx) => println!("  [tx] sent {}", sanitize(&tx.hash)),
                EventPayload::TxConfirmed(tx) => println!(
                    "  [tx] {} in block {} ({})",
                    sanitize(&tx.status),
                    tx.block_number.map_or_else(|| "?".to_owned(), |b| b.to_string()),
                    sanitize(&tx.hash)
                ),
                EventPayload::PaymentMade(_) => println!("  [payment] {}", short(&e.data().to_string(), 200)),
                _ => {}
            }
        }
    });
}

/// Runs the terminal chat until end of input.
pub(crate) async fn run(config: Option<&Path>, agent: &str) -> anyhow::Result<()> {
    let runtime = Arc::new(Runtime::load(config).await?);
    crate::startup::verify_price_feeds(&runtime).await?;
    crate::startup::verify_account(&runtime).await?;
    crate::startup::reconcile_journal(&runtime).await;
    let profile = runtime.profile(agent).with_context(|| {
        let known: Vec<String> = runtime.profiles().map(|p| p.name.clone()).collect();
        format!("no agent {agent:?} (agents: {})", known.join(", "))
    })?;
    let provider = runtime.provider_for(&profile).context(
        "no LLM provider is configured: set OPENAI_API_KEY (with OPENAI_BASE_URL and HOLDFAST_MODEL for other \
         OpenAI-compatible servers) or ANTHROPIC_API_KEY, or add an [llm] section to the config (see docs/llm.md)",
    )?;
    let agent = Agent::for_profile(Arc::clone(&runtime), provider, profile);
    let (info, ctx) =
        runtime.open_session_as("chat", &agent.profile().name).await.map_err(|e| anyhow::anyhow!("{e}"))?;
    // Messages from other agents and reminders start turns of their own in the agent's `inbox` session; an action
    // one of them asks for waits for the user there (`holdfast serve` shows it).
    let inbox = CancelToken::new();
    let inbox_worker = holdfast_agent::inbox::spawn(agent.clone(), inbox.clone());
    let stop_inbox = StopOnDrop(inbox);
    let input = Arc::new(Input::start());
    if input.interactive {
        println!(
            "holdfast chat — {} {} — session {} — wallet {} (Ctrl-C cancels a turn, Ctrl-D quits)",
            agent.provider().name(),
            agent.provider().model(),
            info.id,
            runtime.web3.wallet().address()
        );
    }
    watch_events(&ctx);
    let observer = Terminal { input: Arc::clone(&input) };
    while let Some(line) = input.next("\n> ").await {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let cancel = CancelToken::new();
        let c = cancel.clone();
        let ctrl_c = tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                c.cancel();
            }
        });
        let result = agent.run_turn(&ctx, line, &observer, &cancel).await;
        ctrl_c.abort();
        match result {
            Ok(out) => {
                if out.stopped.is_some() {
                    println!("\n[{}]", sanitize(&out.text));
                } else {
                    println!();
                }
            }
            Err(e) => eprintln!("\nholdfast: {}", sanitize(&e.to_string())),
        }
        // Let event lines printed by the watcher land before the next prompt.
        tokio::task::yield_now().await;
    }
    // The inbox ends its turn, if any, and lets its inbox go saying so (another instance then takes over at once).
    drop(stop_inbox);
    if tokio::time::timeout(std::time::Duration::from_secs(20), inbox_worker).await.is_err() {
        tracing::warn!("the inbox worker did not stop within 20 s; the next instance to take its inbox waits first");
    }
    Ok(())
}

/// Cancels its token when dropped: the inbox stops with the chat.
struct StopOnDrop(CancelToken);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.cancel();
    }
}

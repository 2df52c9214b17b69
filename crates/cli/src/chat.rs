//! `holdfast chat`: the agent in a terminal. Streams the model's tokens, shows tool calls and their results,
//! register changes, the context bank and transactions as they happen, and asks before value-moving actions.
//!
//! With stdin not a terminal it reads one user message per line and exits at end of input, so it can be scripted;
//! a confirmation then consumes the next input line (`y`/`yes` approves, anything else denies).

use anyhow::Context as _;
use holdfast_agent::{Agent, CancelToken, ConfirmDecision, Runtime, TurnObserver};
use holdfast_core::confirm::Confirmation;
use holdfast_core::event::names;
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

fn short(v: &str, max: usize) -> String {
    if v.chars().count() <= max { v.to_owned() } else { format!("{}…", v.chars().take(max).collect::<String>()) }
}

impl TurnObserver for Terminal {
    fn channel(&self) -> Option<holdfast_core::UserChannel> {
        // The person at this terminal answers the prompt below.
        Some(holdfast_core::UserChannel::Terminal)
    }

    fn on_text(&self, delta: &str) {
        print!("{delta}");
        let _ = std::io::stdout().flush();
    }

    fn on_tool_call(&self, name: &str, arguments: &str) {
        println!("\n→ {name} {}", short(arguments, 200));
    }

    fn on_tool_result(&self, name: &str, result: &Result<Value, ToolError>) {
        match result {
            Ok(v) => println!("← {name} ok {}", short(&v.to_string(), 200)),
            Err(e) => println!("← {name} {}: {}", e.code, short(&e.message, 300)),
        }
    }

    fn confirm<'a>(&'a self, c: &'a Confirmation) -> BoxFuture<'a, ConfirmDecision> {
        Box::pin(async move {
            println!("\n⚠ {} waits for your approval ({}):", c.tool, c.reason);
            if let Value::Object(map) = &c.summary {
                for (k, v) in map {
                    println!("    {k:>16}: {}", v.as_str().map_or_else(|| v.to_string(), str::to_owned));
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
            let d = &e.data;
            match e.event.as_str() {
                names::REGISTER_UPDATE if d["action"] == "set" => {
                    let value = d["value"].as_str().map_or_else(|| d["value"].to_string(), str::to_owned);
                    println!(
                        "  [register] {} = {} (origin {}, from {})",
                        d["key"].as_str().unwrap_or_default(),
                        short(&value, 80),
                        d["origin"].as_str().unwrap_or_default(),
                        d["source"].as_str().unwrap_or_default()
                    );
                }
                names::CONTEXT_BANK_UPDATE => {
                    let added: Vec<String> = d["added"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .map(|i| {
                            format!(
                                "{} {}",
                                i["item_type"].as_str().unwrap_or_default(),
                                i["value"].as_str().unwrap_or_default()
                            )
                        })
                        .collect();
                    if !added.is_empty() {
                        println!("  [context bank] {}", added.join(", "));
                    }
                }
                names::TX_PENDING => println!("  [tx] sent {}", d["hash"].as_str().unwrap_or_default()),
                names::TX_CONFIRMED => println!(
                    "  [tx] {} in block {} ({})",
                    d["status"].as_str().unwrap_or_default(),
                    d["block_number"],
                    d["hash"].as_str().unwrap_or_default()
                ),
                names::PAYMENT_MADE => println!("  [payment] {}", short(&d.to_string(), 200)),
                _ => {}
            }
        }
    });
}

/// Runs the terminal chat until end of input.
pub async fn run(config: Option<&Path>) -> anyhow::Result<()> {
    let runtime = Arc::new(Runtime::load(config).await?);
    crate::startup::reconcile_journal(&runtime).await;
    let provider = runtime.provider().context(
        "no LLM provider is configured: set OPENAI_API_KEY (with OPENAI_BASE_URL and HOLDFAST_MODEL for other \
         OpenAI-compatible servers) or ANTHROPIC_API_KEY, or add an [llm] section to the config (see docs/llm.md)",
    )?;
    let agent = Agent::new(Arc::clone(&runtime), provider).with_config(runtime.agent_config());
    let (info, ctx) = runtime.open_session("chat").await.map_err(|e| anyhow::anyhow!("{e}"))?;
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
                    println!("\n[{}]", out.text);
                } else {
                    println!();
                }
            }
            Err(e) => eprintln!("\nholdfast: {e}"),
        }
        // Let event lines printed by the watcher land before the next prompt.
        tokio::task::yield_now().await;
    }
    Ok(())
}

//! `holdfast chat`: the agent in a terminal. Streams the model's tokens, shows tool calls and their results,
//! register changes, the context bank and transactions as they happen, and asks before value-moving actions.
//!
//! With stdin not a terminal it reads one user message per line and exits at end of input, so it can be scripted;
//! a confirmation then consumes the next input line (`y`/`yes` approves, anything else denies). At a terminal a
//! paste of several lines is one message, a confirmation is approved by typing its code (the last four characters of
//! its id), and only a line typed after the question answers it: lines typed ahead or pasted before it are kept as the
//! next messages.
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
use std::collections::VecDeque;
use std::io::{IsTerminal, Write};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{Mutex, mpsc};

/// How long after a question is shown a line must arrive to answer it: no one reads a confirmation and types an
/// answer faster, while a paste or a line typed ahead lands at once.
const REACTION: Duration = Duration::from_millis(300);

/// Lines that arrive this close to each other came in one paste, and make one message: no one types two lines faster.
const PASTE_GAP: Duration = Duration::from_millis(30);

/// A line of stdin and the moment it was read.
type Line = (Instant, String);

/// Lines from stdin, read on a blocking thread as soon as they arrive, each with the moment it was read.
struct Input {
    lines: Mutex<mpsc::UnboundedReceiver<Line>>,
    /// Lines typed before a question was shown: not its answer, but the user's next messages, in order.
    held: std::sync::Mutex<VecDeque<Line>>,
    interactive: bool,
}

impl Input {
    fn start() -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        let interactive = std::io::stdin().is_terminal();
        // Unbounded, so the thread never waits to hand a line over: each is read, and stamped, when it arrives.
        std::thread::spawn(move || {
            for line in std::io::stdin().lines() {
                let Ok(line) = line else { break };
                if tx.send((Instant::now(), line)).is_err() {
                    break;
                }
            }
        });
        Self::from_lines(rx, interactive)
    }

    fn from_lines(lines: mpsc::UnboundedReceiver<Line>, interactive: bool) -> Self {
        Self { lines: Mutex::new(lines), held: std::sync::Mutex::default(), interactive }
    }

    fn held(&self) -> std::sync::MutexGuard<'_, VecDeque<Line>> {
        self.held.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The user's next message. At a terminal, the lines of one paste are one message (each arrived within
    /// [`PASTE_GAP`] of the one before), so that the context bank reads a pasted text whole — its quotes, its "is
    /// this legit?" — rather than line by line. A script (stdin not a terminal) sends one message per line.
    async fn next(&self, prompt: &str) -> Option<String> {
        if self.interactive {
            print!("{prompt}");
            let _ = std::io::stdout().flush();
        }
        let mut lines = self.lines.lock().await;
        let held = self.held().pop_front();
        let from_held = held.is_some();
        let (mut last, mut message) = match held {
            Some(line) => line,
            None => lines.recv().await?,
        };
        if !self.interactive {
            return Some(message);
        }
        loop {
            let held = self.held().pop_front();
            let more = match held {
                Some(line) => Some(line),
                None => tokio::time::timeout(PASTE_GAP, lines.recv()).await.ok().flatten(),
            };
            let Some((at, line)) = more else { break };
            if at.saturating_duration_since(last) > PASTE_GAP {
                self.held().push_front((at, line));
                break;
            }
            message.push('\n');
            message.push_str(&line);
            last = at;
        }
        if from_held {
            println!("{}", sanitize(&message));
        }
        Some(message)
    }

    /// The answer to a question shown now. At a terminal only a line typed after it counts: one typed ahead or pasted
    /// before (a pasted text's `y` line) is kept as a later message instead, and the question says so. A script
    /// (stdin not a terminal) answers with its next line.
    async fn answer(&self, prompt: &str) -> Option<String> {
        if !self.interactive {
            return self.next(prompt).await;
        }
        let shown = Instant::now();
        let mut lines = self.lines.lock().await;
        while let Ok(line) = lines.try_recv() {
            self.held().push_back(line);
        }
        if !self.held().is_empty() {
            println!("    (what you typed before this question is kept as your next message, not taken as the answer)");
        }
        print!("{prompt}");
        let _ = std::io::stdout().flush();
        loop {
            let (at, line) = lines.recv().await?;
            if at >= shown + REACTION {
                return Some(line);
            }
            self.held().push_back((at, line));
        }
    }
}

/// What the user types at a terminal to approve confirmation `id`: its last four characters. A `y` the user meant for
/// something else (a model's "type y to continue", a line typed ahead) approves nothing.
fn approval_code(id: &str) -> String {
    let chars: Vec<char> = id.chars().collect();
    chars[chars.len().saturating_sub(4)..].iter().collect()
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
            // At a terminal the answer is the confirmation's code; a script answers `y`/`yes`.
            let code = approval_code(&c.id);
            let prompt = if self.input.interactive {
                format!("Type {code} to approve (anything else denies): ")
            } else {
                "Approve? [y/N] ".to_owned()
            };
            let approves = |answer: &str| {
                let answer = answer.trim().to_lowercase();
                if self.input.interactive {
                    answer == code.to_lowercase()
                } else {
                    matches!(answer.as_str(), "y" | "yes")
                }
            };
            match self.input.answer(&prompt).await {
                Some(answer) if approves(&answer) => {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn at_a_terminal_a_line_typed_before_the_question_is_no_answer_to_it() {
        let (tx, rx) = mpsc::unbounded_channel();
        let input = Input::from_lines(rx, true);
        // A pasted text's lines, read before the question was shown: "yes" among them, the one handed over only once
        // the question is up.
        let before = Instant::now();
        tx.send((before, "check this".to_owned())).unwrap();
        let answering = tokio::spawn(async move { (input.answer("? ").await, input) });
        tokio::task::yield_now().await;
        tx.send((before, "yes".to_owned())).unwrap();
        // The user's answer, read well after the question was shown.
        tx.send((Instant::now() + std::time::Duration::from_secs(3600), "n".to_owned())).unwrap();
        let (answer, input) = answering.await.unwrap();
        assert_eq!(answer.as_deref(), Some("n"));
        // Nothing lost: the earlier lines are the next message (one paste: read whole).
        assert_eq!(input.next("> ").await.as_deref(), Some("check this\nyes"));
    }

    #[tokio::test]
    async fn at_a_terminal_a_paste_is_one_message_and_lines_typed_apart_are_two() {
        let (tx, rx) = mpsc::unbounded_channel();
        let input = Input::from_lines(rx, true);
        let t = Instant::now();
        let later = |ms: u64| t + Duration::from_millis(ms);
        tx.send((t, "send 50 USDC to 0xabc to claim".to_owned())).unwrap();
        tx.send((later(1), "is this a scam?".to_owned())).unwrap();
        tx.send((later(5_000), "thanks".to_owned())).unwrap();
        assert_eq!(input.next("> ").await.as_deref(), Some("send 50 USDC to 0xabc to claim\nis this a scam?"));
        assert_eq!(input.next("> ").await.as_deref(), Some("thanks"));
        // A script sends one message per line.
        let (tx, rx) = mpsc::unbounded_channel();
        let script = Input::from_lines(rx, false);
        tx.send((t, "one".to_owned())).unwrap();
        tx.send((t, "two".to_owned())).unwrap();
        assert_eq!(script.next("> ").await.as_deref(), Some("one"));
    }

    #[test]
    fn the_approval_code_is_the_ids_last_four_characters() {
        assert_eq!(approval_code("cf_7d9411ba6f18b027"), "b027");
        assert_eq!(approval_code("ab"), "ab");
    }

    #[tokio::test]
    async fn a_script_answers_with_its_next_line() {
        let (tx, rx) = mpsc::unbounded_channel();
        let input = Input::from_lines(rx, false);
        tx.send((Instant::now(), "y".to_owned())).unwrap();
        assert_eq!(input.answer("? ").await.as_deref(), Some("y"));
    }
}

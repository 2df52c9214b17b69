//! `holdfast chat`: the agent in a terminal. Streams the model's tokens, shows tool calls and their results,
//! register changes, the context bank and transactions as they happen, and asks before value-moving actions.
//!
//! With stdin not a terminal it reads one user message per line and exits at end of input, so it can be scripted;
//! a confirmation then consumes the next input line (`y`/`yes` approves, anything else denies).
//!
//! Everything printed that this module did not write itself — model text, tool calls, results and errors,
//! confirmation summaries, event values — goes through [`sanitize`] first, so no one but chat controls the
//! terminal: a tool result cannot clear the screen, move the cursor, set the title or rewrite a confirmation prompt.

use anyhow::Context as _;
use holdfast_agent::{Agent, CancelToken, ConfirmDecision, Runtime, TurnObserver};
use holdfast_core::confirm::Confirmation;
use holdfast_core::event::{EventPayload, RegisterUpdate};
use holdfast_core::tool::BoxFuture;
use holdfast_core::{ToolContext, ToolError};
use serde_json::Value;
use std::borrow::Cow;
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

/// `text` without anything that would control the terminal: escape sequences (CSI `ESC [ … final`, OSC
/// `ESC ] … BEL/ST`, DCS/SOS/PM/APC strings up to ST, two-byte `ESC x`) removed whole, their 8-bit C1 forms
/// likewise, every other C0 and C1 control and DEL removed except newline and tab, and the bidi embeddings,
/// overrides and isolates (U+202A–U+202E, U+2066–U+2069) removed. A sequence cut off by the end of `text` (a
/// streamed delta) is removed up to the end; what follows in the next piece is plain text, since its introducer is
/// gone.
fn sanitize(text: &str) -> Cow<'_, str> {
    if !text.chars().any(unsafe_char) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => match chars.next() {
                Some('[') => skip_csi(&mut chars),
                Some(']' | 'P' | 'X' | '^' | '_') => skip_string(&mut chars),
                // `ESC`, intermediates 0x20–0x2F, a final byte.
                Some('\u{20}'..='\u{2f}') => {
                    while chars.next_if(|c| ('\u{20}'..='\u{2f}').contains(c)).is_some() {}
                    chars.next();
                }
                _ => {}
            },
            '\u{9b}' => skip_csi(&mut chars),
            '\u{90}' | '\u{98}' | '\u{9d}' | '\u{9e}' | '\u{9f}' => skip_string(&mut chars),
            c if unsafe_char(c) => {}
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// A control character other than newline and tab, DEL, or a bidi embedding, override or isolate.
fn unsafe_char(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t') || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// Skips the rest of a CSI sequence: parameter bytes 0x30–0x3F, intermediates 0x20–0x2F, one final byte 0x40–0x7E.
/// Stops early at anything else (a control is dealt with by the caller).
fn skip_csi(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    while chars.next_if(|c| ('\u{30}'..='\u{3f}').contains(c)).is_some() {}
    while chars.next_if(|c| ('\u{20}'..='\u{2f}').contains(c)).is_some() {}
    chars.next_if(|c| ('\u{40}'..='\u{7e}').contains(c));
}

/// Skips the rest of an OSC, DCS, SOS, PM or APC string: up to and including BEL, ST (`ESC \\` or U+009C), or the
/// end of the text.
fn skip_string(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    while let Some(c) = chars.next() {
        match c {
            '\u{07}' | '\u{9c}' => return,
            '\u{1b}' => {
                chars.next_if_eq(&'\\');
                return;
            }
            _ => {}
        }
    }
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
    let _inbox_worker = holdfast_agent::inbox::spawn(agent.clone(), inbox.clone());
    let _stop_inbox = StopOnDrop(inbox);
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
    use super::sanitize;

    #[test]
    fn plain_text_is_borrowed_unchanged() {
        let text = "swap 0.001 ETH → USDC\n\tdone — 日本語 émoji 💥";
        assert!(matches!(sanitize(text), std::borrow::Cow::Borrowed(t) if t == text));
    }

    #[test]
    fn escape_sequences_are_removed_whole() {
        let cases = [
            ("a\u{1b}[2Jb", "ab"),
            ("\u{1b}[1;31mred\u{1b}[0m", "red"),
            ("\u{1b}[?25l\u{1b}[10;20Hx", "x"),
            ("\u{1b}]0;evil title\u{7}after", "after"),
            ("\u{1b}]8;;https://evil.example\u{1b}\\link\u{1b}]8;;\u{1b}\\", "link"),
            ("\u{1b}Pq#0;2;0;0;0\u{1b}\\ok", "ok"),
            ("\u{1b}_apc\u{9c}ok", "ok"),
            ("\u{1b}7saved\u{1b}8\u{1b}(B\u{1b}c", "saved"),
            ("\u{9b}2Jx\u{9d}0;t\u{7}y", "xy"),
            // Cut off at the end of a streamed delta: removed to the end.
            ("ok\u{1b}[", "ok"),
            ("ok\u{1b}]0;unterminated", "ok"),
            ("ok\u{1b}", "ok"),
        ];
        for (dirty, clean) in cases {
            assert_eq!(sanitize(dirty), clean, "{dirty:?}");
        }
    }

    #[test]
    fn controls_and_bidi_overrides_are_removed_but_newline_and_tab_stay() {
        let dirty = "a\rb\u{8}c\u{7}d\u{0}e\u{7f}f\u{85}g\n\th\u{202e}i\u{2066}j\u{2069}k\u{202a}l";
        assert_eq!(sanitize(dirty), "abcdefg\n\thijkl");
        // The approval prompt cannot be rewritten from a summary value.
        assert_eq!(sanitize("1 USDC\r\u{1b}[2K\u{1b}[1A    sell: 0 USDC"), "1 USDC    sell: 0 USDC");
    }

    #[test]
    fn nothing_unsafe_survives_any_input() {
        let alphabet: Vec<char> = "ab\n\t\r\u{1b}[]();0?J\\\u{7}\u{9b}\u{9c}\u{9d}\u{202e}\u{2066}é".chars().collect();
        // Every string of up to four characters from the alphabet.
        let mut todo = vec![String::new()];
        while let Some(s) = todo.pop() {
            let clean = sanitize(&s);
            assert!(
                !clean.chars().any(|c| (c.is_control() && c != '\n' && c != '\t')
                    || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')),
                "{s:?} → {clean:?}"
            );
            if s.chars().count() < 4 {
                todo.extend(alphabet.iter().map(|c| format!("{s}{c}")));
            }
        }
    }
}

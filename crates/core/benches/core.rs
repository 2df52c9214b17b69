//! Core benchmarks, each against a naive baseline in the same run (results in docs/benchmarks.md):
//! - context bank over 1 MiB of chat text with 1,000 token symbols vs one regex per symbol (the scanner alone, and
//!   the bank's whole `scan_input`, with and without a quotation around the text);
//! - register read of a quote (1 KB / 10 KB / 100 KB) vs clone-on-read;
//! - registry dispatch of a trivial tool vs calling it directly.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use holdfast_core::config::{NetworkTable, TokenTable};
use holdfast_core::registers::{RegisterDeclarations, RegisterStore, RegisterWrite};
use holdfast_core::{AiTool, ContextScanner, EventBus, Origin, ToolContext, ToolError, ToolRegistry};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::hint::black_box;
use std::sync::Arc;

const SYMBOLS: usize = 1000;

fn symbol(i: usize) -> String {
    // Letters only, 3–6 chars, distinct: base-26 of i prefixed with "Q" so they are not English words.
    let mut s = String::from("Q");
    let mut n = i;
    loop {
        s.push(char::from(b'A' + (n % 26) as u8));
        n /= 26;
        if n == 0 {
            break;
        }
    }
    s.push('X');
    s
}

fn token_table() -> TokenTable {
    let mut ron = String::from("{\"base\": {");
    for i in 0..SYMBOLS {
        let addr = format!("0x{:040x}", i + 1);
        ron.push_str(&format!("\"{}\": (address: \"{addr}\", decimals: 18, name: \"Token {i}\"),", symbol(i)));
    }
    ron.push_str("}}");
    TokenTable::parse("bench", &ron).unwrap()
}

fn chat_text(bytes: usize) -> String {
    let words = [
        "please", "swap", "the", "for", "me", "and", "then", "send", "it", "to", "my", "friend", "thanks", "could",
        "you", "check", "balance", "price", "today", "wallet", "again", "hello", "what", "is",
    ];
    let mut out = String::with_capacity(bytes + 64);
    let mut i = 0usize;
    while out.len() < bytes {
        let r = i.wrapping_mul(2_654_435_761) % 1000;
        match r {
            0..=9 => out.push_str(&symbol(r * 97 % SYMBOLS)),
            10..=14 => out.push_str("0.25"),
            15 => out.push_str("0x833589fcd6edb6e08f4c7c32d4f71b54bda02913"),
            _ => out.push_str(words[r % words.len()]),
        }
        out.push(if r.is_multiple_of(17) { '\n' } else { ' ' });
        i += 1;
    }
    out
}

fn context_bank(c: &mut Criterion) {
    let tokens = token_table();
    let scanner = ContextScanner::new(&tokens, &NetworkTable::builtin()).unwrap();
    let text = chat_text(1 << 20);
    let regexes: Vec<regex::Regex> =
        (0..SYMBOLS).map(|i| regex::Regex::new(&format!(r"(?i)\b{}\b", symbol(i))).unwrap()).collect();
    let address = regex::Regex::new(r"\b0x[0-9a-fA-F]{40}\b").unwrap();
    let amount = regex::Regex::new(r"\b\d+(\.\d+)?\b").unwrap();

    let mut g = c.benchmark_group("context_bank_1MiB_1000_symbols");
    g.throughput(Throughput::Bytes(text.len() as u64));
    g.sample_size(20);
    g.bench_function("scanner_single_pass", |b| b.iter(|| black_box(scanner.scan(black_box(&text))).len()));
    // The whole of `ContextBank::scan_input`: the scan, the look for quoted parts, the items and authorizations kept;
    // then the same text with a quotation around it (the unquoted words are scanned a second time).
    let scanner = Arc::new(scanner);
    let quoted = format!("is this legit? \"{text}\"");
    for (name, message) in [("bank_scan_input", &text), ("bank_scan_input_all_quoted", &quoted)] {
        g.bench_function(name, |b| {
            b.iter(|| {
                let bank = holdfast_core::ContextBank::new(Arc::clone(&scanner), EventBus::new("bench"));
                black_box(bank.scan_input(black_box(message))).len()
            })
        });
    }
    g.sample_size(10);
    g.bench_function("baseline_regex_per_symbol", |b| {
        b.iter(|| {
            let mut n = 0;
            for r in &regexes {
                n += r.find_iter(&text).count();
            }
            n += address.find_iter(&text).count();
            n += amount.find_iter(&text).count();
            black_box(n)
        })
    });
    g.finish();
}

fn quote(size: usize) -> Value {
    let fills: Vec<Value> = (0..size / 100)
        .map(|i| json!({"from": "0xEeeeeEeeeEeEeeEeEeEeeEEEeeeeEeeeeeeeEEeE", "source": format!("Venue{i}"), "bps": "10"}))
        .collect();
    json!({"transaction": {"to": "0x0000000000001fF3684f28c67538d4D072C22734", "data": "0x1234"}, "route": {"fills": fills}})
}

fn register_get(c: &mut Criterion) {
    let mut g = c.benchmark_group("register_get");
    for size in [1_000usize, 10_000, 100_000] {
        let value = quote(size);
        let store = RegisterStore::new(Arc::new(RegisterDeclarations::empty()), EventBus::new("b"));
        store.set(RegisterWrite::new("swap_quote", value.clone(), Origin::Tool, "x402_fetch")).unwrap();
        let mut naive: HashMap<String, Value> = HashMap::new();
        naive.insert("swap_quote".into(), value);
        g.bench_with_input(BenchmarkId::new("store_shared_entry", size), &size, |b, _| {
            b.iter(|| black_box(store.get(black_box("swap_quote"))))
        });
        g.bench_with_input(BenchmarkId::new("baseline_clone_on_read", size), &size, |b, _| {
            b.iter(|| black_box(naive.get(black_box("swap_quote")).cloned()))
        });
    }
    g.finish();
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct EchoIn {
    n: u64,
}
#[derive(Serialize, JsonSchema)]
struct EchoOut {
    n: u64,
}
struct Echo;
impl AiTool for Echo {
    type Input = EchoIn;
    type Output = EchoOut;
    fn name(&self) -> &str {
        "echo"
    }
    fn description(&self) -> &str {
        "returns its input"
    }
    async fn execute(&self, input: EchoIn, _: &ToolContext) -> Result<EchoOut, ToolError> {
        Ok(EchoOut { n: input.n })
    }
}

fn dispatch(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let services = holdfast_core::CoreServices::new(holdfast_core::config::CoreConfig::default()).unwrap();
    let ctx = services.new_session("bench");
    let registry = ToolRegistry::new();
    registry.register(Echo).unwrap();
    let mut g = c.benchmark_group("dispatch_trivial_tool");
    g.bench_function("registry_call_json", |b| {
        b.to_async(&rt).iter(|| async { black_box(registry.call("echo", json!({"n": 7}), &ctx).await.unwrap()) })
    });
    g.bench_function("baseline_direct_typed_call", |b| {
        b.to_async(&rt).iter(|| async { black_box(Echo.execute(EchoIn { n: 7 }, &ctx).await.unwrap()) })
    });
    g.finish();
}

criterion_group!(benches, context_bank, register_get, dispatch);
criterion_main!(benches);

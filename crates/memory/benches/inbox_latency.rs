//! Inbox delivery latency across two instances on one PostgreSQL database: from the moment one instance sends a
//! message until the other instance's reader (`Inbox::recv`) has it. The instance under test is woken by
//! `LISTEN/NOTIFY`; the baseline, in the same run, is the same store with `poll_only` (a look every second, what
//! every release before did). Sends are spaced by a pseudo-random pause, so they land anywhere in the poll's period.
//!
//! Needs `HOLDFAST_TEST_DATABASE_URL` (`scripts/postgres.sh start DIR` prints one); skipped without it. Knobs:
//! `INBOX_SAMPLES` (LISTEN samples, 200; the poll gets a fifth of them, at least 20).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use holdfast_memory::{AgentRuntime, Database, MemoryConfig, MessageTarget, PgMessageStore, SendOrigin};
use std::sync::Arc;
use std::time::{Duration, Instant};

async fn instance(url: &holdfast_core::config::DatabaseUrl, poll_only: bool) -> AgentRuntime {
    let store = PgMessageStore::open(holdfast_store::PgStore::connect(url).await.unwrap()).await.unwrap();
    let store = if poll_only { store.poll_only() } else { store };
    let config = MemoryConfig { agent_cooldown_secs: 0, ..MemoryConfig::default() };
    AgentRuntime::builder(Database::open_in_memory().unwrap())
        .config(config)
        .message_store(Arc::new(store))
        .build()
        .await
        .unwrap()
}

/// `samples` latencies (ms), sorted: one instance sends, the other (polling only when `poll_only`) receives.
async fn measure(url: &holdfast_core::config::DatabaseUrl, poll_only: bool, samples: usize) -> Vec<f64> {
    let (sending, receiving) = (instance(url, false).await, instance(url, poll_only).await);
    let alice = sending.agent("alice").await.unwrap();
    let bob = receiving.agent("bob").await.unwrap();
    let inbox = bob.inbox();
    inbox.drain().await.unwrap();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let reader = tokio::spawn(async move {
        loop {
            let m = inbox.recv().await.unwrap();
            if tx.send((m.content, Instant::now())).is_err() {
                return;
            }
        }
    });
    // Let the reader wait first, as a serving instance's does.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut out = Vec::with_capacity(samples);
    for i in 0..samples {
        seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        tokio::time::sleep(Duration::from_millis(50 + (seed >> 33) % 400)).await;
        let content = format!("ping {i}");
        let sent = Instant::now();
        alice.messages.send(&MessageTarget::agent("bob"), content.clone(), None, SendOrigin::default()).await.unwrap();
        let (got, at) = rx.recv().await.unwrap();
        assert_eq!(got, content);
        out.push(at.duration_since(sent).as_secs_f64() * 1e3);
    }
    reader.abort();
    out.sort_by(f64::total_cmp);
    out
}

fn quantile(sorted: &[f64], q: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * q).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    runtime.block_on(async {
        let Some(url) = holdfast_testkit::postgres::fresh_database().await else { return };
        let samples: usize = std::env::var("INBOX_SAMPLES").ok().and_then(|s| s.parse().ok()).unwrap_or(200);
        let listen = measure(&url, false, samples).await;
        let poll = measure(&url, true, (samples / 5).max(20)).await;
        println!("inbox delivery across two instances (ms, send → the other instance's reader has it)");
        println!("{:<28} {:>8} {:>8} {:>8} {:>8}", "", "samples", "median", "p99", "max");
        for (name, v) in [("LISTEN/NOTIFY", &listen), ("baseline: 1 s poll", &poll)] {
            let max = v.last().copied().unwrap_or_default();
            println!("{name:<28} {:>8} {:>8.2} {:>8.2} {:>8.2}", v.len(), quantile(v, 0.5), quantile(v, 0.99), max);
        }
    });
}

//! Resident memory for 10,000 sessions created and left idle: with idle unloading (each session's state saved, then
//! dropped from memory) against the naive baseline in the same run, every session kept loaded.
//!
//! Each session does what a short visit does: the user's message goes through the context bank and one tool call
//! writes a register; then nobody uses it again. Run: `cargo bench -p holdfast-agent --bench idle_sessions`
//! (`HOLDFAST_IDLE_SESSIONS` changes the count). The unloading phase runs first, so memory the allocator keeps
//! after it cannot flatter the baseline. The allocator is the `holdfast` binary's (jemalloc, background purging
//! on); each line also shows the bytes it holds for live data, beside what the process keeps resident.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use holdfast_agent::Runtime;

/// The allocator of the `holdfast` binary (`crates/holdfast/src/cli/allocator.rs`): what a user's process gives
/// back to the system is what is measured.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// Bytes the allocator holds for live data, in MiB.
fn live_mib() -> f64 {
    tikv_jemalloc_ctl::epoch::advance().unwrap();
    tikv_jemalloc_ctl::stats::allocated::read().unwrap() as f64 / (1024.0 * 1024.0)
}
use holdfast_core::config::ConfigDocument;
use serde_json::json;
use std::time::{Duration, Instant};

/// Resident set size of this process, in MiB (Linux `/proc/self/statm`).
fn rss_mib() -> f64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: f64 = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    pages * 4096.0 / (1024.0 * 1024.0)
}

async fn visit(rt: &Runtime, i: usize) {
    let (_, ctx) = rt.open_session("http").await.unwrap();
    ctx.scan_user_input(&format!(
        "swap 0.00{i} ETH for USDC and send it to 0x742d35Cc6634C0532925a3b844Bc9e7595f8FdF0"
    ))
    .await
    .unwrap();
    let note = json!({"key": "note", "value": format!("visit {i}: {}", "x".repeat(200))});
    rt.registry.call("register_set", note, &ctx).await.unwrap();
}

fn main() {
    tikv_jemalloc_ctl::background_thread::write(true).unwrap();
    let n: usize = std::env::var("HOLDFAST_IDLE_SESSIONS").ok().and_then(|v| v.parse().ok()).unwrap_or(10_000);
    // Memory is measured, not the disk: on tmpfs when there is one, so 2 × n synced commits stay quick.
    let base = if std::path::Path::new("/dev/shm").is_dir() { "/dev/shm" } else { "/tmp" };
    let tmp = tempfile::tempdir_in(base).unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async {
        let runtime = Runtime::from_document_with_data_dir(ConfigDocument::empty(), Some(tmp.path().join("data")))
            .await
            .unwrap();
        let (start, start_live) = (rss_mib(), live_mib());

        let t = Instant::now();
        for i in 0..n {
            visit(&runtime, i).await;
            if i % 100 == 99 {
                // What the background unloader does every few seconds in `serve` (here with no idle grace).
                runtime.unload_idle(Duration::ZERO).await;
            }
        }
        runtime.unload_idle(Duration::ZERO).await;
        let (unloading, unloading_live) = (rss_mib(), live_mib());
        let loaded_after_unloading = runtime.live_sessions().len();
        let unloading_time = t.elapsed();

        let t = Instant::now();
        for i in 0..n {
            visit(&runtime, n + i).await;
        }
        let (baseline, baseline_live) = (rss_mib(), live_mib());
        let loaded_baseline = runtime.live_sessions().len();
        let baseline_time = t.elapsed();
        // Those 10,000, created at once and kept, now unloaded at once: what the process keeps afterwards.
        let unloaded = runtime.unload_idle(Duration::ZERO).await;
        let (after_all, after_all_live) = (rss_mib(), live_mib());
        // An allocator may give freed memory back to the system a while later: what is left after 15 s idle.
        tokio::time::sleep(Duration::from_secs(15)).await;
        let (settled, settled_live) = (rss_mib(), live_mib());

        // A restored session is the one that was saved.
        let first = runtime.sessions.list(usize::MAX).await.unwrap().last().unwrap().id.clone();
        let back = runtime.session(&first).await.unwrap().unwrap();
        assert!(back.registers.get("note").is_some());

        println!("idle sessions: {n} created and left idle, resident memory (RSS) of the process");
        println!("  at start (runtime built)                    {start:>8.1} MiB  (live data {start_live:.1} MiB)");
        println!(
            "  idle unloading: after {n:>6} sessions        {unloading:>8.1} MiB  (+{:.1} MiB; {loaded_after_unloading} loaded; {:.1} s; live data {unloading_live:.1} MiB)",
            unloading - start,
            unloading_time.as_secs_f64()
        );
        println!(
            "  baseline, all kept: after {n:>6} more        {baseline:>8.1} MiB  (+{:.1} MiB; {loaded_baseline} loaded; {:.1} s; live data {baseline_live:.1} MiB)",
            baseline - unloading,
            baseline_time.as_secs_f64()
        );
        println!(
            "  the {n} kept, then unloaded at once ({unloaded})   {after_all:>8.1} MiB  ({:+.1} MiB from the start; live data {after_all_live:.1} MiB)",
            after_all - start
        );
        println!(
            "  … and 15 s later                               {settled:>8.1} MiB  ({:+.1} MiB from before those were created; live data {settled_live:.1} MiB)",
            settled - unloading
        );
        println!(
            "  per idle session: {:.1} KiB unloaded vs {:.1} KiB kept loaded",
            (unloading - start) * 1024.0 / n as f64,
            (baseline - unloading) * 1024.0 / n as f64
        );
    });
}

//! Memory benchmarks, each with a naive baseline in the same run (results in docs/benchmarks.md):
//! - `update_memory` through the registry, persisted (SQLite file, WAL) vs the in-memory store;
//! - `search_memory` over 10,000 blocks: FTS5 (through the tool, and the store alone) vs a naive `LIKE` scan
//!   ranked in Rust, and vs the in-memory store's naive scan;
//! - `search_memory` over 100,000 blocks, store alone: SQLite FTS5 vs PostgreSQL text search (when
//!   `HOLDFAST_TEST_DATABASE_URL` names a server: `scripts/postgres.sh start DIR` prints one), vs the `LIKE` scan.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use criterion::{Criterion, criterion_group, criterion_main};
use holdfast_core::config::CoreConfig;
use holdfast_core::{CoreServices, ToolRegistry};
use holdfast_memory::search::query::{naive_score, naive_snippet, query_terms};
use holdfast_memory::{AgentRuntime, BlockSpec, BuiltinTools, Database, InMemoryStore, MemoryConfig, MemoryStore};
use serde_json::json;
use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

const BLOCKS: usize = 10_000;
const VOCABULARY: usize = 5_000;
const WORDS_PER_BLOCK: usize = 30;

/// A deterministic pseudo-word: `w` + base-26 letters (so no English stemming collisions).
fn word(i: usize) -> String {
    let mut s = String::from("w");
    let mut n = i;
    loop {
        s.push(char::from(b'a' + (n % 26) as u8));
        n /= 26;
        if n == 0 {
            break;
        }
    }
    s
}

/// Block values with a skewed word distribution (low word numbers are common), from a fixed LCG seed.
fn values() -> Vec<String> {
    values_n(BLOCKS)
}

fn values_n(blocks: usize) -> Vec<String> {
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move || {
        state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        (state >> 33) as usize
    };
    (0..blocks)
        .map(|_| {
            (0..WORDS_PER_BLOCK)
                .map(|_| {
                    let r = next() % VOCABULARY;
                    word(r * r / VOCABULARY)
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

fn registry_for(rt: &tokio::runtime::Runtime, runtime: &AgentRuntime) -> ToolRegistry {
    rt.block_on(async {
        let handle = runtime.agent("bench").await.unwrap();
        BuiltinTools::default_for_agent(handle).into_registry().unwrap()
    })
}

fn bench_update(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ctx = CoreServices::new(CoreConfig::default()).unwrap().new_session("bench");
    let sqlite = rt.block_on(AgentRuntime::open_dir(dir.path(), MemoryConfig::default())).unwrap();
    let in_memory = rt
        .block_on(
            AgentRuntime::builder(Database::open_in_memory().unwrap())
                .memory_store(Arc::new(InMemoryStore::new()))
                .build(),
        )
        .unwrap();
    // The same file with 1,000 other blocks of 60 characters: each write first reads them all (the hard limits on
    // what memory holds), so this row shows how a write's cost grows with the agent's blocks.
    let crowded_dir = tempfile::tempdir().unwrap();
    let crowded = rt.block_on(AgentRuntime::open_dir(crowded_dir.path(), MemoryConfig::default())).unwrap();
    rt.block_on(async {
        let handle = crowded.agent("bench").await.unwrap();
        for i in 0..1_000 {
            handle.memory.put_block(BlockSpec::new(format!("other{i:04}"), "x".repeat(60))).await.unwrap();
        }
    });
    let counter = AtomicU64::new(0);
    let mut group = c.benchmark_group("update_memory");
    for (name, runtime) in
        [("sqlite_file_wal", &sqlite), ("sqlite_file_wal_1000_blocks", &crowded), ("in_memory_store", &in_memory)]
    {
        let registry = registry_for(&rt, runtime);
        group.bench_function(name, |b| {
            b.to_async(&rt).iter(|| async {
                let n = counter.fetch_add(1, Ordering::Relaxed);
                let params =
                    json!({"label": "human", "value": format!("The user's name is Alice ({n})"), "description": null});
                black_box(registry.call("update_memory", params, &ctx).await.unwrap());
            })
        });
    }
    group.finish();
}

fn bench_search(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ctx = CoreServices::new(CoreConfig::default()).unwrap().new_session("bench");
    let runtime = rt.block_on(AgentRuntime::open_dir(dir.path(), MemoryConfig::default())).unwrap();
    let in_memory_store = Arc::new(InMemoryStore::new());
    let in_memory = rt
        .block_on(
            AgentRuntime::builder(Database::open_in_memory().unwrap()).memory_store(in_memory_store.clone()).build(),
        )
        .unwrap();
    let values = values();
    rt.block_on(async {
        for rt in [&runtime, &in_memory] {
            let handle = rt.agent("bench").await.unwrap();
            for (i, v) in values.iter().enumerate() {
                handle.memory.put_block(BlockSpec::new(format!("block{i:05}"), v.clone())).await.unwrap();
            }
        }
    });
    let registry = registry_for(&rt, &runtime);
    // Two mid-frequency words: a realistic query with a few dozen matching blocks.
    let query = format!("{} {}", word(1500), word(2200));
    let terms = query_terms(&query);
    let db = runtime.database().clone();
    let store = holdfast_memory::SqliteMemoryStore::new(db.clone());

    let mut group = c.benchmark_group("search_memory_10k_blocks");
    group.bench_function("fts5_through_tool", |b| {
        b.to_async(&rt).iter(|| async {
            black_box(registry.call("search_memory", json!({"query": query, "limit": 10}), &ctx).await.unwrap());
        })
    });
    group.bench_function("fts5_store_only", |b| {
        b.iter(|| black_box(store.search_blocking("bench", &terms, 10).unwrap()))
    });
    group.bench_function("naive_like_scan", |b| {
        b.iter(|| {
            // The baseline: scan every value with LIKE, then rank and snippet the matches in Rust.
            let hits = {
                    let c = db.sqlite().lock();
                    let mut stmt = c
                        .prepare_cached(
                            "SELECT label, value FROM memory_blocks WHERE agent_id = ?1 AND (value LIKE ?2 OR value LIKE ?3)",
                        )
                        .unwrap();
                    let rows = stmt
                        .query_map(
                            rusqlite::params!["bench", format!("%{}%", terms[0]), format!("%{}%", terms[1])],
                            |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)),
                        )
                        .unwrap();
                    let mut scored: Vec<(f64, String, String)> = rows
                        .filter_map(Result::ok)
                        .filter_map(|(l, v)| naive_score(&v, &terms).map(|s| (s, l, v)))
                        .collect();
                    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
                    scored.truncate(10);
                    scored.into_iter().map(|(s, l, v)| (s, l, naive_snippet(&v, &terms))).collect::<Vec<_>>()
            };
            black_box(hits)
        })
    });
    group.bench_function("in_memory_store_naive_scan", |b| {
        b.iter(|| black_box(rt.block_on(in_memory_store.search("bench", &terms, 10)).unwrap()))
    });
    group.finish();
}

/// Puts `values` as blocks `block000000…` of agent `bench` in `store`, 8 writers at a time.
fn load(rt: &tokio::runtime::Runtime, store: &Arc<dyn MemoryStore>, values: &[String]) {
    let started = std::time::Instant::now();
    let chunks: Vec<Vec<(usize, String)>> = values
        .iter()
        .cloned()
        .enumerate()
        .collect::<Vec<_>>()
        .chunks(values.len().div_ceil(8))
        .map(<[_]>::to_vec)
        .collect();
    rt.block_on(async {
        let tasks: Vec<_> = chunks
            .into_iter()
            .map(|chunk| {
                let memory =
                    holdfast_memory::Memory::new(holdfast_memory::AgentId::new("bench").unwrap(), store.clone());
                tokio::spawn(async move {
                    for (i, v) in chunk {
                        memory.put_block(BlockSpec::new(format!("block{i:06}"), v)).await.unwrap();
                    }
                })
            })
            .collect();
        for t in tasks {
            t.await.unwrap();
        }
    });
    eprintln!("loaded {} blocks into {} in {:.1} s", values.len(), store.kind(), started.elapsed().as_secs_f64());
}

fn bench_search_100k(c: &mut Criterion) {
    const N: usize = 100_000;
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path().join(holdfast_memory::DEFAULT_DB_FILE)).unwrap();
    // Loading is not what is measured: no fsync per block while it runs.
    db.sqlite().lock().execute_batch("PRAGMA synchronous = OFF").unwrap();
    let sqlite = holdfast_memory::SqliteMemoryStore::new(db.clone());
    let values = values_n(N);
    load(&rt, &(Arc::new(sqlite.clone()) as Arc<dyn MemoryStore>), &values);
    // The index as the store's background merge left it (it runs as the index grows), then merged at once.
    rt.block_on(sqlite.index_merged()).unwrap();
    db.sqlite().lock().execute_batch("PRAGMA synchronous = FULL; PRAGMA optimize;").unwrap();
    let segments = || -> i64 {
        db.sqlite()
            .lock()
            .query_row("SELECT count(DISTINCT segid) FROM memory_fts_values_idx", [], |r| r.get(0))
            .unwrap()
    };
    let postgres = rt.block_on(holdfast_testkit::postgres::fresh_database()).map(|url| {
        let store: Arc<dyn MemoryStore> =
            Arc::new(rt.block_on(holdfast_memory::PgMemoryStore::open(url.clone())).unwrap());
        load(&rt, &store, &values);
        // Autovacuum would process the freshly loaded tables during the measurement (it did: 10.9 ms instead of
        // about 3): done first, as it would have been long before on a server that holds 100,000 blocks.
        rt.block_on(holdfast_testkit::postgres::vacuum_analyze(&url));
        store
    });
    let query = format!("{} {}", word(1500), word(2200));
    let terms = query_terms(&query);

    let mut group = c.benchmark_group("search_memory_100k_blocks");
    let left = segments();
    group.bench_function("sqlite_fts5", |b| b.iter(|| black_box(sqlite.search_blocking("bench", &terms, 10).unwrap())));
    let started = std::time::Instant::now();
    rt.block_on(sqlite.merge_index()).unwrap();
    eprintln!(
        "values index: {left} segments as the background merge left it, {} after merge_index ({:.0} ms)",
        segments(),
        started.elapsed().as_secs_f64() * 1000.0
    );
    group.bench_function("sqlite_fts5_one_segment", |b| {
        b.iter(|| black_box(sqlite.search_blocking("bench", &terms, 10).unwrap()))
    });
    match &postgres {
        Some(pg) => {
            group.bench_function("postgres_text_search", |b| {
                b.iter(|| black_box(rt.block_on(pg.search("bench", &terms, 10)).unwrap()))
            });
        }
        None => eprintln!("search_memory_100k_blocks/postgres_text_search: skipped (no HOLDFAST_TEST_DATABASE_URL)"),
    }
    group.bench_function("naive_like_scan", |b| {
        b.iter(|| {
            let n: i64 = db
                .sqlite()
                .lock()
                .query_row(
                    "SELECT COUNT(*) FROM memory_blocks WHERE agent_id = 'bench' AND (value LIKE ?1 OR value LIKE ?2)",
                    rusqlite::params![format!("%{}%", terms[0]), format!("%{}%", terms[1])],
                    |r| r.get(0),
                )
                .unwrap();
            black_box(n)
        })
    });
    group.finish();
}

fn config() -> Criterion {
    Criterion::default().sample_size(20).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(3))
}

criterion_group! { name = benches; config = config(); targets = bench_update, bench_search, bench_search_100k }
criterion_main!(benches);

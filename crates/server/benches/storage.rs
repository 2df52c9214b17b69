//! Storage under load (a bench, not a test): tool calls per second through the HTTP API when every call writes the
//! session's state, with one instance on the SQLite file, one on PostgreSQL and two on one PostgreSQL database,
//! beside a bare axum handler on the same machine as the floor.
//!
//! ```text
//! url=$(scripts/postgres.sh start /tmp/holdfast-bench-pg)
//! HOLDFAST_TEST_DATABASE_URL=$url cargo bench -p holdfast-server --bench storage
//! scripts/postgres.sh stop /tmp/holdfast-bench-pg
//! ```
//!
//! The call is `register_set` with a new value each time: the register store changes, so `ToolRegistry::call`
//! saves the session's state (a compare-and-set on its revision) before it answers: one durable write per call.
//! Each connection has a session of its own, so calls never conflict. Knobs: `STORAGE_SECS` (seconds per run, 5),
//! `STORAGE_CONNS` (keep-alive connections, 32). Servers and the load generator run in this one process on two
//! 2-worker Tokio runtimes, so they share the machine's cores with each other and with PostgreSQL; "two instances"
//! are two runtimes with their own pools and routers in that process, not two processes.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use holdfast_agent::Runtime;
use holdfast_agent::access::{AccessToken, HostPolicy};
use holdfast_core::config::ConfigDocument;
use holdfast_server::AppState;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The `holdfast` binary's allocator (`crates/holdfast/src/cli/allocator.rs`), so the figures are the product's.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

const TOKEN: &str = "bench0123456789abcdef0123456789abcdef0123456789abcdef0123456789ab";

/// Bytes of log written so far, at `serve`'s default level (warnings), counted instead of printed.
static LOGGED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// The log's writer: counts what it is given.
struct CountingWriter;

impl std::io::Write for CountingWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        LOGGED.fetch_add(buf.len() as u64, std::sync::atomic::Ordering::Relaxed);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn logged() -> u64 {
    LOGGED.load(std::sync::atomic::Ordering::Relaxed)
}

/// The instances' relay counters summed: (dropped, unwatched), `None` without a relay.
async fn relay_counts(urls: &[String]) -> Option<(u64, u64)> {
    let client = reqwest::Client::new();
    let mut sum: Option<(u64, u64)> = None;
    for url in urls {
        let Ok(resp) = client.get(format!("{url}/api/info")).bearer_auth(TOKEN).send().await else { continue };
        let Ok(info) = resp.json::<Value>().await else { continue };
        if let (Some(d), Some(u)) = (info["relay_dropped_events"].as_u64(), info["relay_unwatched_events"].as_u64()) {
            let (sd, su) = sum.unwrap_or_default();
            sum = Some((sd + d, su + u));
        }
    }
    sum
}

/// What a row writes: the bytes this process sent to the storage layer (`/proc/self/io`'s `write_bytes`, counted
/// when pages are dirtied; the SQLite file and its WAL), or the PostgreSQL server's WAL bytes (`pg_stat_wal`).
#[derive(Clone, Copy)]
enum Meter {
    None,
    Disk,
    Wal,
}

fn disk_written() -> u64 {
    let io = std::fs::read_to_string("/proc/self/io").unwrap_or_default();
    io.lines().find_map(|l| l.strip_prefix("write_bytes:")).and_then(|n| n.trim().parse().ok()).unwrap_or(0)
}

async fn wal_written(db: &holdfast_core::config::DatabaseUrl) -> u64 {
    use sqlx::Connection as _;
    let mut conn = sqlx::PgConnection::connect(db.expose()).await.unwrap();
    sqlx::query_scalar::<_, i64>("SELECT wal_bytes::bigint FROM pg_stat_wal").fetch_one(&mut conn).await.unwrap() as u64
}

async fn written(meter: Meter, db: &holdfast_core::config::DatabaseUrl) -> u64 {
    match meter {
        Meter::None => 0,
        Meter::Disk => disk_written(),
        Meter::Wal => wal_written(db).await,
    }
}

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

async fn listen(app: axum::Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}")
}

/// The floor: an axum handler that reads the same JSON body and answers a small JSON object.
async fn bare() -> String {
    let app = axum::Router::new().route(
        "/api/sessions/{session}/tools/{tool}",
        axum::routing::post(|axum::Json(body): axum::Json<Value>| async move {
            axum::Json(json!({"output": {"key": body["key"], "written": true}}))
        }),
    );
    listen(app).await
}

/// A `holdfast serve` router on `config` (the SQLite file in `data_dir`, or `[storage] url`; no data dir: state in
/// memory only).
async fn instance(config: &str, data_dir: Option<&std::path::Path>) -> String {
    let doc = ConfigDocument::parse(None, config.to_owned()).unwrap();
    let runtime =
        Arc::new(Runtime::from_document_with_data_dir(doc, data_dir.map(std::path::Path::to_path_buf)).await.unwrap());
    let state = AppState::with_agent(runtime, None, Some(AccessToken::from_secret(TOKEN).unwrap()));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = holdfast_server::router(state, HostPolicy::loopback(addr));
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}")
}

struct Run {
    calls: usize,
    secs: f64,
    p50: f64,
    p99: f64,
    /// What the measured part wrote, by the row's meter.
    written: u64,
}

/// The meter a row reads before and after its measured part (not its warm-up).
#[derive(Clone, Copy)]
struct Metered<'a> {
    meter: Meter,
    db: &'a holdfast_core::config::DatabaseUrl,
}

/// A new session on `url`, filled with `registers` registers of `value_bytes` bytes each and `messages` user
/// messages (each scanned into the context bank and kept in the history).
async fn filled_session(url: &str, registers: usize, value_bytes: usize, messages: usize) -> String {
    let client = reqwest::Client::new();
    let post = |path: String, body: Value| client.post(format!("{url}{path}")).bearer_auth(TOKEN).json(&body).send();
    let created: Value = post("/api/sessions".into(), json!({})).await.unwrap().json().await.unwrap();
    let id = created["id"].as_str().unwrap().to_owned();
    for i in 0..registers {
        let value = format!("{i:04}{}", "x".repeat(value_bytes.saturating_sub(4)));
        let r = post(format!("/api/sessions/{id}/tools/register_set"), json!({"key": format!("r{i}"), "value": value}));
        assert!(r.await.unwrap().status().is_success());
    }
    for i in 0..messages {
        let text = format!("message {i}: swap 0.{i:03} ETH for USDC and send {i} USDC to the usual friend, please");
        let r = post(format!("/api/sessions/{id}/messages"), json!({"content": text}));
        assert!(r.await.unwrap().status().is_success());
    }
    id
}

/// `conns` keep-alive connections on one session `session` of `url`, each calling `tool` with `body(n)` until the
/// deadline.
async fn load_one_session(
    url: &str,
    session: &str,
    tool: &str,
    (conns, secs): (usize, u64),
    body: fn(u64) -> Value,
    metered: Metered<'_>,
) -> Run {
    let endpoint = format!("{url}/api/sessions/{session}/tools/{tool}");
    load_endpoints(vec![endpoint; conns], secs, body, metered).await
}

/// `conns` keep-alive connections, spread over `urls` in turn, each with its own session, each calling
/// `register_set` with a new value until the deadline.
async fn load(urls: &[String], conns: usize, secs: u64, holdfast: bool, metered: Metered<'_>) -> Run {
    let client = reqwest::Client::builder().pool_max_idle_per_host(conns).build().unwrap();
    let mut endpoints = Vec::new();
    for i in 0..conns {
        let url = &urls[i % urls.len()];
        let session = if holdfast {
            let created: Value = client
                .post(format!("{url}/api/sessions"))
                .bearer_auth(TOKEN)
                .json(&json!({}))
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            created["id"].as_str().unwrap().to_owned()
        } else {
            format!("s{i}")
        };
        endpoints.push(format!("{url}/api/sessions/{session}/tools/register_set"));
    }
    load_endpoints(endpoints, secs, |n| json!({"key": "note", "value": n.to_string()}), metered).await
}

/// One keep-alive connection per endpoint, each calling it with `body(n)` until the deadline (after a 1 s warm-up).
async fn load_endpoints(endpoints: Vec<String>, secs: u64, body: fn(u64) -> Value, metered: Metered<'_>) -> Run {
    let client = reqwest::Client::builder().pool_max_idle_per_host(endpoints.len()).build().unwrap();
    let run = |secs: u64| {
        let deadline = Instant::now() + Duration::from_secs(secs);
        endpoints
            .iter()
            .cloned()
            .map(|endpoint| {
                let client = client.clone();
                tokio::spawn(async move {
                    let mut lat = Vec::new();
                    let mut n = 0u64;
                    while Instant::now() < deadline {
                        n += 1;
                        let t = Instant::now();
                        let resp = client.post(&endpoint).bearer_auth(TOKEN).json(&body(n)).send().await.unwrap();
                        let status = resp.status();
                        let body = resp.bytes().await.unwrap();
                        assert!(status.is_success(), "{status}: {}", String::from_utf8_lossy(&body));
                        lat.push(t.elapsed().as_secs_f64() * 1e6);
                    }
                    lat
                })
            })
            .collect::<Vec<_>>()
    };
    for h in run(1) {
        h.await.unwrap(); // warm-up: connections open, sessions loaded
    }
    let written_before = written(metered.meter, metered.db).await;
    let started = Instant::now();
    let mut all = Vec::new();
    for h in run(secs) {
        all.extend(h.await.unwrap());
    }
    let secs = started.elapsed().as_secs_f64();
    let written = written(metered.meter, metered.db).await.saturating_sub(written_before);
    all.sort_by(f64::total_cmp);
    let at =
        |q: f64| all.get(((all.len() as f64 * q) as usize).min(all.len().saturating_sub(1))).copied().unwrap_or(0.0);
    Run { calls: all.len(), secs, p50: at(0.5), p99: at(0.99), written }
}

fn main() {
    tracing_subscriber::fmt().with_env_filter("warn").with_writer(|| CountingWriter).init();
    let secs = env_or("STORAGE_SECS", 5);
    let conns = env_or("STORAGE_CONNS", 32) as usize;
    let server_rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let client_rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let tmp = tempfile::tempdir().unwrap();

    let Some(db) = client_rt.block_on(holdfast_testkit::postgres::fresh_database()) else {
        panic!("set HOLDFAST_TEST_DATABASE_URL (scripts/postgres.sh start DIR) to run the PostgreSQL rows");
    };
    let pg_config = format!("[storage]\nurl = \"{}\"\n", db.expose());

    let floor = server_rt.block_on(bare());
    let memory = server_rt.block_on(instance("", None));
    let sqlite = server_rt.block_on(instance("", Some(&tmp.path().join("sqlite"))));
    let pg_one = server_rt.block_on(instance(&pg_config, Some(&tmp.path().join("pg-one"))));
    let pg_a = server_rt.block_on(instance(&pg_config, Some(&tmp.path().join("pg-a"))));
    let pg_b = server_rt.block_on(instance(&pg_config, Some(&tmp.path().join("pg-b"))));

    println!("\n## tool calls that write the session's state, {conns} keep-alive connections, {secs} s each\n");
    println!("| server | calls/s | p50 | p99 | calls | relay: dropped / not watched | log | written per call |");
    println!("|---|---|---|---|---|---|---|---|");
    let runs: [(&str, Vec<String>, bool, Meter); 5] = [
        ("floor: bare axum handler, same JSON in and out", vec![floor], false, Meter::None),
        (
            "holdfast, one instance, no data dir (state in memory: the path without storage)",
            vec![memory],
            true,
            Meter::None,
        ),
        ("holdfast, one instance, SQLite file (WAL, synchronous = FULL)", vec![sqlite], true, Meter::Disk),
        ("holdfast, one instance, PostgreSQL", vec![pg_one], true, Meter::Wal),
        ("holdfast, two instances, one PostgreSQL (connections split)", vec![pg_a, pg_b], true, Meter::Wal),
    ];
    for (name, urls, holdfast, meter) in runs {
        let (log_before, relay_before) = (logged(), client_rt.block_on(relay_counts(&urls)));
        let r = client_rt.block_on(load(&urls, conns, secs, holdfast, Metered { meter, db: &db }));
        let per_call = r.written / r.calls.max(1) as u64;
        let per_call = match meter {
            Meter::None => "—".to_owned(),
            Meter::Disk => format!("{per_call} bytes (file)"),
            Meter::Wal => format!("{per_call} bytes (WAL)"),
        };
        let relay = match (relay_before, client_rt.block_on(relay_counts(&urls))) {
            (Some((d0, u0)), Some((d1, u1))) => format!("{} / {}", d1 - d0, u1 - u0),
            _ => "no relay".to_owned(),
        };
        println!(
            "| {name} | {:.0} | {:.2} ms | {:.2} ms | {} | {relay} | {} bytes | {per_call} |",
            r.calls as f64 / r.secs,
            r.p50 / 1000.0,
            r.p99 / 1000.0,
            r.calls,
            logged() - log_before
        );
    }

    // A call's cost against the session's size: all connections on one session of the SQLite instance, a small one
    // (10 registers of 100 bytes) beside a large one (250 registers of 2 KB and 200 user messages), in this run.
    let sized = server_rt.block_on(instance("", Some(&tmp.path().join("sized"))));
    let small = client_rt.block_on(filled_session(&sized, 10, 100, 0));
    let large = client_rt.block_on(filled_session(&sized, 250, 2048, 200));
    println!("\n## one session, {conns} keep-alive connections on it, SQLite file, {secs} s each\n");
    println!("| call | session | calls/s | p50 | p99 | calls | written per call (file) |");
    println!("|---|---|---|---|---|---|---|");
    let read: fn(u64) -> Value = |_| json!({"key": "r1"});
    let write: fn(u64) -> Value = |n| json!({"key": "note", "value": n.to_string()});
    for (call, tool, body) in
        [("register_get (a read)", "register_get", read), ("register_set (a write)", "register_set", write)]
    {
        let mut rates = Vec::new();
        for (what, session) in [("10 registers", &small), ("250 registers of 2 KB, 200 user messages", &large)] {
            let metered = Metered { meter: Meter::Disk, db: &db };
            let r = client_rt.block_on(load_one_session(&sized, session, tool, (conns, secs), body, metered));
            rates.push(r.calls as f64 / r.secs);
            println!(
                "| {call} | {what} | {:.0} | {:.2} ms | {:.2} ms | {} | {} bytes |",
                r.calls as f64 / r.secs,
                r.p50 / 1000.0,
                r.p99 / 1000.0,
                r.calls,
                r.written / r.calls.max(1) as u64
            );
        }
        println!("| {call} | small ÷ large | {:.2}× | | | | |", rates[0] / rates[1]);
    }
    client_rt.shutdown_timeout(Duration::from_secs(1));
    server_rt.shutdown_timeout(Duration::from_secs(1));
}

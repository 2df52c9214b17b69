//! Load on loopback (a bench, not a test): tool calls per second over HTTP and WebSocket fan-out to 1,000 clients,
//! each next to a naive baseline measured in the same run.
//!
//! ```text
//! cargo bench -p holdfast-server --bench load
//! ```
//!
//! Knobs (environment): `LOAD_SECS` (seconds per HTTP run, default 5), `LOAD_CONNS` (keep-alive connections,
//! default 64), `LOAD_CLIENTS` (WebSocket clients, default 1000), `LOAD_EVENTS` (paced events, default 200).
//!
//! The server and the load generator share the machine: the server runs on its own 2-worker Tokio runtime, the
//! clients on another, so the numbers include the cost of generating the load on the same cores. The soft limit on
//! open files is raised to the hard limit (rustix `setrlimit`, no unsafe code) so that 1,000 client sockets and their
//! 1,000 server ends fit; with a hard limit below ~2,200, run `ulimit -n 4096` (as root) first.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use axum::extract::ws::{Message as AxMessage, Utf8Bytes, WebSocket, WebSocketUpgrade};
use futures::stream::SplitSink;
use futures::{SinkExt, StreamExt};
use holdfast_agent::Runtime;
use holdfast_agent::access::{AccessToken, HostPolicy};
use holdfast_core::ToolContext;
use holdfast_core::event::{EventPayload, ToolCallStarted};
use holdfast_server::AppState;
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio_tungstenite::tungstenite::Message;

const TOKEN: &str = "bench0123456789abcdef0123456789abcdef0123456789abcdef0123456789ab";
const PROBE_BODY: &str = r#"{"key":"probe","path":null}"#;

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// Raises the soft open-files limit to the hard limit. Returns (soft, hard) after the attempt.
fn raise_nofile() -> (Option<u64>, Option<u64>) {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let mut lim = getrlimit(Resource::Nofile);
    if lim.current != lim.maximum {
        lim.current = lim.maximum;
        if let Err(e) = setrlimit(Resource::Nofile, lim) {
            eprintln!("could not raise the open-files limit: {e}");
        }
    }
    let now = getrlimit(Resource::Nofile);
    (now.current, now.maximum)
}

/// Latency percentiles in microseconds.
struct Stats {
    n: usize,
    p50: f64,
    p99: f64,
    max: f64,
}

fn stats(mut ns: Vec<u64>) -> Stats {
    ns.sort_unstable();
    let n = ns.len();
    let at = |q: f64| {
        if n == 0 {
            return 0.0;
        }
        let i = ((n as f64 * q).ceil() as usize).clamp(1, n) - 1;
        ns[i] as f64 / 1000.0
    };
    Stats { n, p50: at(0.50), p99: at(0.99), max: ns.last().map_or(0.0, |m| *m as f64 / 1000.0) }
}

fn fmt_us(us: f64) -> String {
    if us >= 1000.0 { format!("{:.2} ms", us / 1000.0) } else { format!("{us:.0} µs") }
}

struct Server {
    url: String,
    runtime: Arc<Runtime>,
    session: String,
    ctx: ToolContext,
}

/// Serves the app built for the bound address on a free loopback port, setting TCP_NODELAY on every accepted socket
/// when `nodelay`.
async fn serve(app: impl FnOnce(std::net::SocketAddr) -> axum::Router, nodelay: bool) -> std::net::SocketAddr {
    use axum::serve::ListenerExt;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = app(addr);
    if nodelay {
        let listener = listener.tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    } else {
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    }
    addr
}

async fn start_server(nodelay: bool) -> Server {
    let runtime = Arc::new(Runtime::load(None).await.unwrap());
    let (info, ctx) = runtime.open_session("bench").await.unwrap();
    runtime.registry.call("register_set", json!({"key": "probe", "value": "1"}), &ctx).await.unwrap();
    let state = AppState::with_agent(Arc::clone(&runtime), None, Some(AccessToken::from_secret(TOKEN).unwrap()));
    let url = format!(
        "http://{}",
        serve(move |addr| holdfast_server::router(state, HostPolicy::loopback(addr)), nodelay).await
    );
    Server { url, runtime, session: info.id, ctx }
}

// ------------------------------------------------------------------------------------------------ tool calls

struct Throughput {
    calls: u64,
    secs: f64,
    lat: Stats,
}

impl Throughput {
    fn per_sec(&self) -> f64 {
        self.calls as f64 / self.secs
    }
}

/// `register_get` in process through `ToolRegistry::call`, `tasks` concurrent loops: the cost without HTTP.
async fn in_process(server: &Server, tasks: usize, secs: u64) -> Throughput {
    let started = Instant::now();
    let deadline = started + Duration::from_secs(secs);
    let mut handles = Vec::new();
    for _ in 0..tasks {
        let (rt, ctx) = (Arc::clone(&server.runtime), server.ctx.clone());
        handles.push(tokio::spawn(async move {
            let mut lat = Vec::with_capacity(1 << 20);
            let params: Value = serde_json::from_str(PROBE_BODY).unwrap();
            while Instant::now() < deadline {
                let t = Instant::now();
                let out = rt.registry.call("register_get", params.clone(), &ctx).await.unwrap();
                assert_eq!(out["value"], "1");
                lat.push(t.elapsed().as_nanos() as u64);
                if lat.len() % 256 == 0 {
                    tokio::task::yield_now().await;
                }
            }
            lat
        }));
    }
    let mut all = Vec::new();
    for h in handles {
        all.extend(h.await.unwrap());
    }
    Throughput { calls: all.len() as u64, secs: started.elapsed().as_secs_f64(), lat: stats(all) }
}

/// `register_get` over HTTP with reqwest, `conns` concurrent keep-alive connections.
async fn http_reqwest(url: &str, session: &str, conns: usize, secs: u64) -> Throughput {
    let client = reqwest::Client::builder().pool_max_idle_per_host(conns).build().unwrap();
    let endpoint = format!("{url}/api/sessions/{session}/tools/register_get");
    let run = |secs: u64| {
        let deadline = Instant::now() + Duration::from_secs(secs);
        let handles: Vec<_> = (0..conns)
            .map(|_| {
                let (client, endpoint) = (client.clone(), endpoint.clone());
                tokio::spawn(async move {
                    let mut lat = Vec::with_capacity(1 << 16);
                    while Instant::now() < deadline {
                        let t = Instant::now();
                        let resp = client
                            .post(&endpoint)
                            .bearer_auth(TOKEN)
                            .header("content-type", "application/json")
                            .body(PROBE_BODY)
                            .send()
                            .await
                            .unwrap();
                        assert_eq!(resp.status().as_u16(), 200);
                        let _ = resp.bytes().await.unwrap();
                        lat.push(t.elapsed().as_nanos() as u64);
                    }
                    lat
                })
            })
            .collect();
        handles
    };
    for h in run(1) {
        h.await.unwrap(); // warm-up: opens the connections
    }
    let started = Instant::now();
    let mut all = Vec::new();
    for h in run(secs) {
        all.extend(h.await.unwrap());
    }
    Throughput { calls: all.len() as u64, secs: started.elapsed().as_secs_f64(), lat: stats(all) }
}

/// One keep-alive HTTP/1.1 connection written by hand: the lightest possible load generator.
async fn raw_conn(addr: String, request: Arc<Vec<u8>>, deadline: Instant) -> Vec<u64> {
    let stream = tokio::net::TcpStream::connect(&addr).await.unwrap();
    stream.set_nodelay(true).unwrap();
    let (r, mut w) = stream.into_split();
    let mut r = BufReader::new(r);
    let mut line = String::new();
    let mut body = Vec::new();
    let mut lat = Vec::with_capacity(1 << 16);
    while Instant::now() < deadline {
        let t = Instant::now();
        w.write_all(&request).await.unwrap();
        let mut len = 0usize;
        let mut status_ok = false;
        loop {
            line.clear();
            r.read_line(&mut line).await.unwrap();
            if line.starts_with("HTTP/1.1 ") {
                status_ok = line.starts_with("HTTP/1.1 200");
            } else if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                len = v.trim().parse().unwrap();
            } else if line == "\r\n" {
                break;
            }
        }
        assert!(status_ok);
        body.resize(len, 0);
        r.read_exact(&mut body).await.unwrap();
        lat.push(t.elapsed().as_nanos() as u64);
    }
    lat
}

async fn http_raw(url: &str, session: &str, conns: usize, secs: u64) -> Throughput {
    let addr = url.trim_start_matches("http://").to_owned();
    let request = Arc::new(
        format!(
            "POST /api/sessions/{session}/tools/register_get HTTP/1.1\r\nhost: {addr}\r\nauthorization: Bearer {TOKEN}\r\n\
             content-type: application/json\r\ncontent-length: {}\r\n\r\n{PROBE_BODY}",
            PROBE_BODY.len()
        )
        .into_bytes(),
    );
    let spawn_all = |secs: u64| {
        let deadline = Instant::now() + Duration::from_secs(secs);
        (0..conns).map(|_| tokio::spawn(raw_conn(addr.clone(), Arc::clone(&request), deadline))).collect::<Vec<_>>()
    };
    for h in spawn_all(1) {
        h.await.unwrap();
    }
    let started = Instant::now();
    let mut all = Vec::new();
    for h in spawn_all(secs) {
        all.extend(h.await.unwrap());
    }
    Throughput { calls: all.len() as u64, secs: started.elapsed().as_secs_f64(), lat: stats(all) }
}

// ------------------------------------------------------------------------------------------------ fan-out

/// What one fan-out run measured.
struct FanOut {
    connect_secs: f64,
    paced: Stats,
    paced_expected: usize,
    burst_delivered: u64,
    burst_secs: f64,
    burst_lat: Stats,
    burst_blocked: Duration,
    cut_off: u64,
}

type WsClient = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// A reader's latencies (ns), whether the server cut it off, and the client for the next phase.
type ReaderResult = (Vec<u64>, bool, WsClient);

async fn connect_clients(url: &str, n: usize) -> Vec<WsClient> {
    let sem = Arc::new(tokio::sync::Semaphore::new(64));
    let handles: Vec<_> = (0..n)
        .map(|_| {
            let (url, sem) = (url.to_owned(), Arc::clone(&sem));
            tokio::spawn(async move {
                let _permit = sem.acquire_owned().await.unwrap();
                // The token as a header, as scripts send it (the sketches ignore it).
                let mut request =
                    tokio_tungstenite::tungstenite::client::IntoClientRequest::into_client_request(url).unwrap();
                request.headers_mut().insert("authorization", format!("Bearer {TOKEN}").parse().unwrap());
                let (mut ws, _) = tokio_tungstenite::connect_async(request).await.unwrap();
                loop {
                    match ws.next().await {
                        Some(Ok(Message::Text(t))) if t.contains("\"subscribed\"") => break,
                        Some(Ok(_)) => {}
                        other => panic!("no subscription: {other:?}"),
                    }
                }
                ws
            })
        })
        .collect();
    let mut out = Vec::with_capacity(n);
    for h in handles {
        out.push(h.await.unwrap());
    }
    out
}

/// Each client records, per event, now − the publish time carried in the event (`t`, ns since `epoch`), until an
/// event with `"end": PHASE` arrives. Returns the latencies and whether the server cut the client off.
fn spawn_readers(
    clients: Vec<WsClient>,
    epoch: Instant,
    phase: u64,
) -> (Vec<tokio::task::JoinHandle<ReaderResult>>, Arc<AtomicU64>) {
    let last_arrival = Arc::new(AtomicU64::new(0));
    let handles = clients
        .into_iter()
        .map(|mut ws| {
            let last = Arc::clone(&last_arrival);
            tokio::spawn(async move {
                let mut lat = Vec::with_capacity(1024);
                let mut cut = false;
                loop {
                    let msg = tokio::time::timeout(Duration::from_secs(60), ws.next()).await;
                    let Ok(Some(Ok(msg))) = msg else {
                        cut = true;
                        break;
                    };
                    match msg {
                        Message::Text(t) => {
                            let now = epoch.elapsed().as_nanos() as u64;
                            let v: Value = serde_json::from_str(&t).unwrap();
                            let data = &v["data"]["params"];
                            if data["end"].as_u64() == Some(phase) {
                                break;
                            }
                            if let Some(sent) = data["t"].as_u64() {
                                lat.push(now.saturating_sub(sent));
                                last.fetch_max(now, Ordering::Relaxed);
                            } else if v["type"] == "lagged" {
                                cut = true;
                            }
                        }
                        Message::Close(_) => {
                            cut = true;
                            break;
                        }
                        _ => {}
                    }
                }
                (lat, cut, ws)
            })
        })
        .collect();
    (handles, last_arrival)
}

/// Publishes events carrying their publish time: `paced` events `gap` apart, then the end marker of `phase`.
trait Publisher: Send + Sync {
    fn publish(&self, data: Value) -> futures::future::BoxFuture<'_, ()>;
}

/// holdfast: the session's event bus; the server's per-client forwarders do the fan-out.
struct BusPublisher(ToolContext);

impl Publisher for BusPublisher {
    fn publish(&self, data: Value) -> futures::future::BoxFuture<'_, ()> {
        self.0.events.publish(EventPayload::ToolCall(ToolCallStarted { tool: "bench.tick".into(), params: data }));
        Box::pin(async {})
    }
}

/// The naive baseline: one list of client sinks; each event is sent to every client in turn, awaiting each write.
#[derive(Clone, Default)]
struct NaiveHub {
    sinks: Arc<tokio::sync::Mutex<Vec<SplitSink<WebSocket, AxMessage>>>>,
}

impl Publisher for NaiveHub {
    fn publish(&self, data: Value) -> futures::future::BoxFuture<'_, ()> {
        Box::pin(async move {
            let text = Utf8Bytes::from(
                json!({"type": "event", "event": "tool.call", "session_id": "naive", "data": {"tool": "bench.tick", "params": data}})
                    .to_string(),
            );
            let mut sinks = self.sinks.lock().await;
            for s in sinks.iter_mut() {
                let _ = s.send(AxMessage::Text(text.clone())).await;
            }
        })
    }
}

async fn naive_upgrade(
    axum::extract::State(hub): axum::extract::State<NaiveHub>,
    ws: WebSocketUpgrade,
) -> axum::response::Response {
    ws.on_upgrade(move |socket| async move {
        let (sink, mut stream) = socket.split();
        {
            // Registered before the client is told it is subscribed, so it misses no event.
            let mut sinks = hub.sinks.lock().await;
            sinks.push(sink);
            if let Some(s) = sinks.last_mut() {
                let _ = s.send(AxMessage::Text(Utf8Bytes::from_static(r#"{"type":"subscribed"}"#))).await;
            }
        }
        while let Some(Ok(_)) = stream.next().await {}
    })
}

/// A sketch of a leaner `/ws`: each event serialised once into a shared frame, broadcast to one task per client
/// that writes it (no per-client serialisation, no forwarder task, no second queue). A slow client lags on the
/// broadcast and is told so; it never blocks the publisher or the other clients.
#[derive(Clone)]
struct SharedFrames {
    tx: tokio::sync::broadcast::Sender<Utf8Bytes>,
}

impl Publisher for SharedFrames {
    fn publish(&self, data: Value) -> futures::future::BoxFuture<'_, ()> {
        let text = json!({"type": "event", "event": "tool.call", "session_id": "shared", "data": {"tool": "bench.tick", "params": data}})
            .to_string();
        let _ = self.tx.send(Utf8Bytes::from(text));
        Box::pin(async {})
    }
}

async fn shared_upgrade(
    axum::extract::State(hub): axum::extract::State<SharedFrames>,
    ws: WebSocketUpgrade,
) -> axum::response::Response {
    ws.on_upgrade(move |socket| async move {
        let mut rx = hub.tx.subscribe();
        let (mut sink, mut stream) = socket.split();
        if sink.send(AxMessage::Text(Utf8Bytes::from_static(r#"{"type":"subscribed"}"#))).await.is_err() {
            return;
        }
        loop {
            tokio::select! {
                frame = rx.recv() => {
                    let frame = match frame {
                        Ok(f) => f,
                        Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => {
                            Utf8Bytes::from(json!({"type": "lagged", "missed": n}).to_string())
                        }
                        Err(tokio::sync::broadcast::error::RecvError::Closed) => break,
                    };
                    if sink.send(AxMessage::Text(frame)).await.is_err() {
                        break;
                    }
                }
                incoming = stream.next() => {
                    if !matches!(incoming, Some(Ok(_))) {
                        break;
                    }
                }
            }
        }
    })
}

async fn start_shared(nodelay: bool) -> (String, SharedFrames) {
    let hub = SharedFrames { tx: tokio::sync::broadcast::channel(1024).0 };
    let app = axum::Router::new().route("/ws", axum::routing::get(shared_upgrade)).with_state(hub.clone());
    (format!("ws://{}/ws", serve(move |_| app, nodelay).await), hub)
}

async fn start_naive(nodelay: bool) -> (String, NaiveHub) {
    let hub = NaiveHub::default();
    let app = axum::Router::new().route("/ws", axum::routing::get(naive_upgrade)).with_state(hub.clone());
    (format!("ws://{}/ws", serve(move |_| app, nodelay).await), hub)
}

/// Publishes the phase's events; returns the time the publisher spent inside `publish` (blocked by the fan-out).
async fn publish_phase(
    p: &dyn Publisher,
    epoch: Instant,
    events: usize,
    gap: Option<Duration>,
    phase: u64,
) -> Duration {
    let mut tick = gap.map(tokio::time::interval);
    let mut blocked = Duration::ZERO;
    for seq in 0..events {
        if let Some(t) = tick.as_mut() {
            t.tick().await;
        }
        let t = Instant::now();
        p.publish(json!({"seq": seq, "t": epoch.elapsed().as_nanos() as u64})).await;
        blocked += t.elapsed();
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    p.publish(json!({"end": phase})).await;
    blocked
}

/// Connects `n` clients, then runs a paced phase (`events` at 50/s) and a burst phase (`burst` back to back).
fn fan_out(
    client_rt: &tokio::runtime::Runtime,
    server_rt: &tokio::runtime::Runtime,
    url: &str,
    publisher: Arc<dyn Publisher>,
    n: usize,
    events: usize,
    burst: usize,
) -> FanOut {
    let epoch = Instant::now();
    let t0 = Instant::now();
    let clients = client_rt.block_on(connect_clients(url, n));
    let connect_secs = t0.elapsed().as_secs_f64();

    let phase_run = |clients: Vec<WsClient>, phase: u64, count: usize, gap: Option<Duration>| {
        let (handles, last) = {
            let _guard = client_rt.enter();
            spawn_readers(clients, epoch, phase)
        };
        let started = epoch.elapsed().as_nanos() as u64;
        let p = Arc::clone(&publisher);
        let blocked = server_rt.block_on(async move { publish_phase(p.as_ref(), epoch, count, gap, phase).await });
        let results = client_rt.block_on(async {
            let mut out = Vec::with_capacity(handles.len());
            for h in handles {
                out.push(h.await.unwrap());
            }
            out
        });
        let mut lat = Vec::new();
        let mut cut = 0;
        let mut clients = Vec::new();
        for (l, c, ws) in results {
            lat.extend(l);
            if c {
                cut += 1;
            } else {
                clients.push(ws);
            }
        }
        let span = last.load(Ordering::Relaxed).saturating_sub(started);
        (lat, cut, clients, span, blocked)
    };

    let (paced_lat, cut1, clients, _, _) = phase_run(clients, 1, events, Some(Duration::from_millis(20)));
    let (burst_lat, cut2, clients, span, burst_blocked) = phase_run(clients, 2, burst, None);
    let burst_delivered = burst_lat.len() as u64;
    client_rt.block_on(async move {
        for mut ws in clients {
            let _ = ws.close(None).await;
        }
    });
    FanOut {
        connect_secs,
        paced: stats(paced_lat),
        paced_expected: n * events,
        burst_delivered,
        burst_secs: span as f64 / 1e9,
        burst_lat: stats(burst_lat),
        burst_blocked,
        cut_off: cut1 + cut2,
    }
}

fn main() {
    let secs = env_or("LOAD_SECS", 5);
    let conns = env_or("LOAD_CONNS", 64) as usize;
    let clients = env_or("LOAD_CLIENTS", 1000) as usize;
    let events = env_or("LOAD_EVENTS", 200) as usize;
    let burst = 400;
    let (soft, hard) = raise_nofile();
    println!("open-files limit: soft {soft:?}, hard {hard:?}");
    if soft.is_some_and(|s| s < (2 * clients + 200) as u64) {
        panic!("the open-files limit is too low for {clients} WebSocket clients: run `ulimit -n 4096` first");
    }

    let server_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("server")
        .enable_all()
        .build()
        .unwrap();
    let client_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("client")
        .enable_all()
        .build()
        .unwrap();
    let server = server_rt.block_on(start_server(false));

    println!("\n## tool calls: register_get (a trivial tool), {secs} s each\n");
    println!("| path | calls/s | p50 | p99 | calls |");
    println!("|---|---|---|---|---|");
    let row = |name: &str, t: &Throughput| {
        println!("| {name} | {:.0} | {} | {} | {} |", t.per_sec(), fmt_us(t.lat.p50), fmt_us(t.lat.p99), t.calls);
    };
    let base = server_rt.block_on(in_process(&server, 2, secs));
    row("baseline: in process, `ToolRegistry::call`, 2 tasks", &base);
    let raw = client_rt.block_on(http_raw(&server.url, &server.session, conns, secs));
    row(&format!("HTTP/1.1 keep-alive, {conns} connections, minimal hand-written client"), &raw);
    let rq = client_rt.block_on(http_reqwest(&server.url, &server.session, conns, secs));
    row(&format!("HTTP/1.1 keep-alive, {conns} connections, reqwest client"), &rq);

    println!("\n## WebSocket fan-out: {clients} clients on one session\n");
    println!(
        "| server | TCP_NODELAY | connect {clients} | paced {events} events at 50/s: p50 | p99 | max | delivered | \
         burst {burst} events: delivered/s | p50 | p99 | publisher blocked | cut off |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    for nodelay in [false, true] {
        let hf_server = server_rt.block_on(start_server(nodelay));
        let ws_url = format!("{}/ws?session={}", hf_server.url.replace("http://", "ws://"), hf_server.session);
        let bus: Arc<dyn Publisher> = Arc::new(BusPublisher(hf_server.ctx.clone()));
        let hf = fan_out(&client_rt, &server_rt, &ws_url, bus, clients, events, burst);
        let (naive_url, hub) = server_rt.block_on(start_naive(nodelay));
        let naive = fan_out(&client_rt, &server_rt, &naive_url, Arc::new(hub), clients, events, burst);
        let (shared_url, frames) = server_rt.block_on(start_shared(nodelay));
        let shared = fan_out(&client_rt, &server_rt, &shared_url, Arc::new(frames), clients, events, burst);
        for (name, f) in [
            ("holdfast `/ws` (forwarder task + queue per client)", &hf),
            ("naive: the publisher sends to each client in turn", &naive),
            ("sketch: serialise once, one task per client", &shared),
        ] {
            println!(
                "| {name} | {} | {:.2} s | {} | {} | {} | {}/{} | {:.0} | {} | {} | {} | {} |",
                if nodelay { "on" } else { "off" },
                f.connect_secs,
                fmt_us(f.paced.p50),
                fmt_us(f.paced.p99),
                fmt_us(f.paced.max),
                f.paced.n,
                f.paced_expected,
                f.burst_delivered as f64 / f.burst_secs.max(1e-9),
                fmt_us(f.burst_lat.p50),
                fmt_us(f.burst_lat.p99),
                fmt_us(f.burst_blocked.as_secs_f64() * 1e6),
                f.cut_off,
            );
        }
        drop(hf_server);
    }
    drop(server);
    client_rt.shutdown_timeout(Duration::from_secs(1));
    server_rt.shutdown_timeout(Duration::from_secs(1));
}

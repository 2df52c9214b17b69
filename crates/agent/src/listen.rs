//! Serving an HTTP router with bounded connections: the accept loop of `holdfast serve` and `holdfast mcp --transport
//! http`, so that a client that stalls costs a bounded amount and never starves the others.
//!
//! - **Header read timeout** ([`ConnectionLimits::header_read_timeout_secs`], default 10 s): a connection must send
//!   a complete request head within it, and between two requests on a kept-alive connection it must start the next
//!   one within it (hyper's HTTP/1 header timer). A client that sends half a header is disconnected.
//! - **Idle timeout** ([`ConnectionLimits::idle_timeout_secs`], default 300 s): a request body must keep arriving
//!   (no gap between its chunks longer than this); an upgraded connection (a WebSocket) must hear from its peer
//!   within it — the server pings every 30 s and a live browser answers, so only a vanished or silent peer is cut; and
//!   a peer that stops reading what the server writes (a response, an event stream) is cut once a write has waited
//!   this long. A response the server is still preparing (an agent turn, a tool call) is never cut: the server is the
//!   slow one.
//! - **A cap** ([`ConnectionLimits::max_connections`], default 1024, and never more than the process's open-file
//!   limit allows, which [`raise_open_files_limit`] lifts to its hard maximum). At the cap, a new connection takes
//!   the place of the connection that has been quiet longest among those with no request in progress (one waiting
//!   for, or half-way through, a request head); only when every connection is serving a request — or is upgraded — is
//!   the new one closed at once. So a flood of connections that send nothing, reconnecting as fast as they are cut,
//!   cannot keep a client that sends its request out.
//!
//! Stalled, evicted and refused connections are counted and reported in the log (a warning at most every 10 s),
//! never one line per connection. A connection that sent nothing since its last answer (a browser's speculative
//! pre-connect, a kept-alive connection not reused) and is closed by the header timer is counted apart, at debug
//! level. Only HTTP/1.1 is spoken (with upgrades): neither server needs HTTP/2, and its streams would need limits of
//! their own.

use axum::Router;
use axum::http::StatusCode;
use hyper_util::rt::{TokioIo, TokioTimer};
use parking_lot::Mutex;
use serde::Deserialize;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::Weak;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// How long in-flight requests get to finish after shutdown begins.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// How often the counts of stalled and refused connections are reported.
const REPORT_EVERY: Duration = Duration::from_secs(10);

/// File descriptors kept free of connections (the database, the log, RPC and LLM clients…).
const RESERVED_FDS: u64 = 128;

/// The connection bounds of one server: `[server.connections]` or `[mcp.connections]` (see the module docs).
///
/// ```toml
/// [server.connections]
/// header_read_timeout_secs = 10
/// idle_timeout_secs = 300
/// max_connections = 1024
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ConnectionLimits {
    /// Seconds a client has to send a request's head (and to start the next request on a kept-alive connection).
    pub header_read_timeout_secs: u64,
    /// Seconds a request body or an upgraded connection may go without traffic.
    pub idle_timeout_secs: u64,
    /// Connections served at once; more are closed at once.
    pub max_connections: usize,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        Self { header_read_timeout_secs: 10, idle_timeout_secs: 300, max_connections: 1024 }
    }
}

impl ConnectionLimits {
    /// Checks the values: each timeout between 1 s and a day, the cap between 1 and 1,000,000.
    pub fn check(&self) -> Result<(), String> {
        let day = 24 * 3600;
        if !(1..=day).contains(&self.header_read_timeout_secs) {
            return Err("header_read_timeout_secs must be between 1 and 86400".into());
        }
        if !(1..=day).contains(&self.idle_timeout_secs) {
            return Err("idle_timeout_secs must be between 1 and 86400".into());
        }
        if !(1..=1_000_000).contains(&self.max_connections) {
            return Err("max_connections must be between 1 and 1000000".into());
        }
        Ok(())
    }
}

/// Lifts this process's soft limit of open files to its hard limit (where the platform allows), so the connection
/// cap, not the descriptor table, is what bounds the server. Returns the soft limit in effect.
pub fn raise_open_files_limit() -> Option<u64> {
    #[cfg(unix)]
    {
        use rustix::process::{Resource, getrlimit, setrlimit};
        let limit = getrlimit(Resource::Nofile);
        if let (Some(current), Some(maximum)) = (limit.current, limit.maximum)
            && current < maximum
        {
            let raised = rustix::process::Rlimit { current: Some(maximum), maximum: Some(maximum) };
            if setrlimit(Resource::Nofile, raised).is_ok() {
                return Some(maximum);
            }
        }
        limit.current
    }
    #[cfg(not(unix))]
    None
}

/// How long a new connection waits for the slot of a connection it evicted.
const EVICTION_WAIT: Duration = Duration::from_millis(500);

/// Counts of connections the server ended or refused, reported periodically.
#[derive(Debug, Default)]
struct Counts {
    stalled: AtomicU64,
    silent: AtomicU64,
    evicted: AtomicU64,
    refused: AtomicU64,
}

/// Every live connection's activity, to choose one to evict at the cap.
#[derive(Debug, Default)]
struct Registry {
    live: Mutex<Vec<Weak<Activity>>>,
}

impl Registry {
    fn add(&self, activity: &Arc<Activity>) {
        let mut live = self.live.lock();
        live.retain(|w| w.strong_count() > 0);
        live.push(Arc::downgrade(activity));
    }

    /// Asks the connection quiet longest among those with no request in progress (and not upgraded) to close;
    /// false when there is none.
    fn evict_one(&self) -> bool {
        let live = self.live.lock();
        let victim = live
            .iter()
            .filter_map(Weak::upgrade)
            .filter(|a| !a.evict.is_cancelled() && a.evictable())
            .min_by_key(|a| a.last_read.load(Ordering::Relaxed) + a.started_ms);
        match victim {
            Some(victim) => {
                victim.evict.cancel();
                true
            }
            None => false,
        }
    }
}

/// Serves `app` on `listener` within `limits` until `shutdown` is cancelled; then stops accepting, lets in-flight
/// requests finish (at most 10 s) and returns.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    limits: ConnectionLimits,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    let cap = effective_cap(limits.max_connections);
    let permits = Arc::new(Semaphore::new(cap));
    let counts = Arc::new(Counts::default());
    let registry = Arc::new(Registry::default());
    let epoch = Instant::now();
    let tracker = TaskTracker::new();
    let connections = CancellationToken::new();
    let reporter = tokio::spawn(report(Arc::clone(&counts), limits, shutdown.clone()));
    loop {
        let accepted = tokio::select! {
            () = shutdown.cancelled() => break,
            accepted = listener.accept() => accepted,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(e) => {
                // Out of descriptors or a connection reset before it was accepted: wait a little, go on.
                tracing::debug!("accepting a connection failed: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let permit = match Arc::clone(&permits).try_acquire_owned() {
            Ok(permit) => permit,
            Err(_) if registry.evict_one() => {
                counts.evicted.fetch_add(1, Ordering::Relaxed);
                match tokio::time::timeout(EVICTION_WAIT, Arc::clone(&permits).acquire_owned()).await {
                    Ok(Ok(permit)) => permit,
                    _ => {
                        counts.refused.fetch_add(1, Ordering::Relaxed);
                        continue;
                    }
                }
            }
            Err(_) => {
                counts.refused.fetch_add(1, Ordering::Relaxed);
                drop(stream);
                continue;
            }
        };
        // Events are small and latency matters more than packet count: no Nagle delay.
        let _ = stream.set_nodelay(true);
        let activity = Arc::new(Activity::new(epoch));
        registry.add(&activity);
        let conn =
            serve_connection(stream, permit, activity, app.clone(), limits, Arc::clone(&counts), connections.clone());
        tracker.spawn(conn);
    }
    tracker.close();
    connections.cancel();
    if tokio::time::timeout(SHUTDOWN_GRACE, tracker.wait()).await.is_err() {
        tracing::warn!(
            "{} connections were still open {}s after shutdown began",
            tracker.len(),
            SHUTDOWN_GRACE.as_secs()
        );
    }
    reporter.abort();
    Ok(())
}

/// The cap, lowered to what the open-file limit leaves room for.
fn effective_cap(wanted: usize) -> usize {
    #[cfg(unix)]
    {
        let soft = rustix::process::getrlimit(rustix::process::Resource::Nofile).current;
        if let Some(soft) = soft {
            let room = usize::try_from(soft.saturating_sub(RESERVED_FDS).max(1)).unwrap_or(usize::MAX);
            if room < wanted {
                tracing::warn!(
                    "max_connections {wanted} lowered to {room}: the process may open {soft} files (raise `ulimit -n`)"
                );
                return room;
            }
        }
    }
    wanted
}

async fn report(counts: Arc<Counts>, limits: ConnectionLimits, stop: CancellationToken) {
    let mut tick = tokio::time::interval(REPORT_EVERY);
    tick.tick().await;
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            _ = tick.tick() => {}
        }
        let stalled = counts.stalled.swap(0, Ordering::Relaxed);
        let refused = counts.refused.swap(0, Ordering::Relaxed);
        let evicted = counts.evicted.swap(0, Ordering::Relaxed);
        let silent = counts.silent.swap(0, Ordering::Relaxed);
        if stalled > 0 {
            tracing::warn!(
                stalled,
                "disconnected {stalled} stalled client connections in the last {}s (a request head not sent within \
                 {}s, or no traffic for {}s)",
                REPORT_EVERY.as_secs(),
                limits.header_read_timeout_secs,
                limits.idle_timeout_secs
            );
        }
        if evicted > 0 {
            tracing::warn!(
                evicted,
                "at the cap of {} connections, closed {evicted} idle ones for new clients in the last {}s",
                limits.max_connections,
                REPORT_EVERY.as_secs()
            );
        }
        if refused > 0 {
            tracing::warn!(
                refused,
                "refused {refused} connections over the cap of {} (every connection busy) in the last {}s",
                limits.max_connections,
                REPORT_EVERY.as_secs()
            );
        }
        if silent > 0 {
            tracing::debug!(silent, "closed {silent} connections that sent no request in time (unused, or kept alive)");
        }
    }
}

/// What the I/O wrapper, the service and the accept loop know of one connection.
#[derive(Debug)]
struct Activity {
    /// When the connection was accepted, in milliseconds after the accept loop's epoch.
    started_ms: u64,
    started: Instant,
    /// Milliseconds after `started` of the last byte read.
    last_read: AtomicU64,
    bytes_read: AtomicU64,
    /// `bytes_read` when the last request was answered: bytes beyond it are a next request that has not come whole.
    answered_at: AtomicU64,
    /// Requests being served, until their response bodies end.
    in_flight: AtomicUsize,
    /// Upgraded (a WebSocket): the idle timeout now applies to the connection itself.
    upgraded: AtomicBool,
    /// Cancelled by the accept loop to free this connection's slot for a new one.
    evict: CancellationToken,
}

impl Activity {
    fn new(epoch: Instant) -> Self {
        Self {
            started_ms: u64::try_from(epoch.elapsed().as_millis()).unwrap_or(u64::MAX),
            started: Instant::now(),
            last_read: AtomicU64::new(0),
            bytes_read: AtomicU64::new(0),
            answered_at: AtomicU64::new(0),
            in_flight: AtomicUsize::new(0),
            upgraded: AtomicBool::new(false),
            evict: CancellationToken::new(),
        }
    }

    fn read(&self, bytes: usize) {
        let now = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last_read.store(now, Ordering::Relaxed);
        self.bytes_read.fetch_add(bytes as u64, Ordering::Relaxed);
    }

    fn quiet_for(&self) -> Duration {
        let now = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        Duration::from_millis(now.saturating_sub(self.last_read.load(Ordering::Relaxed)))
    }

    /// No request in progress and not upgraded: waiting for (or half-way through) a request head.
    fn evictable(&self) -> bool {
        self.in_flight.load(Ordering::Relaxed) == 0 && !self.upgraded.load(Ordering::Relaxed)
    }
}

/// Counts a request as in progress until its response body has been sent (or dropped).
struct InFlight(Arc<Activity>);

impl InFlight {
    fn start(activity: &Arc<Activity>) -> Self {
        activity.in_flight.fetch_add(1, Ordering::Relaxed);
        Self(Arc::clone(activity))
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A response body that keeps its request counted as in progress while it is being sent.
struct Tracked {
    inner: axum::body::Body,
    _in_flight: InFlight,
}

impl axum::body::HttpBody for Tracked {
    type Data = axum::body::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<hyper::body::Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.inner.size_hint()
    }
}

async fn serve_connection(
    stream: TcpStream,
    permit: OwnedSemaphorePermit,
    activity: Arc<Activity>,
    app: Router,
    limits: ConnectionLimits,
    counts: Arc<Counts>,
    shutdown: CancellationToken,
) {
    let idle = Duration::from_secs(limits.idle_timeout_secs);
    let io = Watched {
        inner: stream,
        activity: Arc::clone(&activity),
        idle,
        read_timer: None,
        write_blocked: None,
        write_timer: None,
        _permit: permit,
    };
    let body_timeout = tower_http::timeout::RequestBodyTimeout::new(app, idle);
    let seen = Arc::clone(&activity);
    let service = hyper::service::service_fn(move |request: axum::http::Request<hyper::body::Incoming>| {
        let service = body_timeout.clone();
        let seen = Arc::clone(&seen);
        let in_flight = InFlight::start(&seen);
        async move {
            let response = tower::ServiceExt::oneshot(service, request).await;
            seen.answered_at.store(seen.bytes_read.load(Ordering::Relaxed), Ordering::Relaxed);
            response.map(|response| {
                if response.status() == StatusCode::SWITCHING_PROTOCOLS {
                    seen.upgraded.store(true, Ordering::Relaxed);
                }
                response.map(|inner| Tracked { inner, _in_flight: in_flight })
            })
        }
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder.timer(TokioTimer::new()).header_read_timeout(Duration::from_secs(limits.header_read_timeout_secs));
    let connection = builder.serve_connection(TokioIo::new(io), service).with_upgrades();
    tokio::pin!(connection);
    let result = tokio::select! {
        result = connection.as_mut() => result,
        () = activity.evict.cancelled() => {
            // Its slot went to a new connection: closed at once (it had no request in progress).
            return;
        }
        () = shutdown.cancelled() => {
            connection.as_mut().graceful_shutdown();
            connection.as_mut().await
        }
    };
    if let Err(e) = result {
        let timed_out = e.is_timeout() || error_chain_has_timeout(&e);
        // Part of a request came and the rest did not, a peer stopped reading, or an upgraded connection went quiet:
        // a stall. Nothing since the last answer: a kept-alive or pre-connected socket that was simply not used.
        let partial = activity.bytes_read.load(Ordering::Relaxed) > activity.answered_at.load(Ordering::Relaxed);
        let busy = activity.upgraded.load(Ordering::Relaxed) || activity.in_flight.load(Ordering::Relaxed) > 0;
        match (timed_out, partial || busy) {
            (true, false) => counts.silent.fetch_add(1, Ordering::Relaxed),
            (true, true) => counts.stalled.fetch_add(1, Ordering::Relaxed),
            (false, _) => {
                tracing::debug!("a connection ended with an error: {e}");
                0
            }
        };
    }
}

fn error_chain_has_timeout(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut source = Some(e);
    while let Some(error) = source {
        if error.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::TimedOut) {
            return true;
        }
        source = error.source();
    }
    false
}

/// A TCP stream that records what it reads, ends a write its peer does not take within the idle timeout, and, once
/// upgraded, ends when its peer has been silent that long. It holds the connection's permit, so an upgraded
/// connection counts against the cap for as long as it lives.
struct Watched {
    inner: TcpStream,
    activity: Arc<Activity>,
    idle: Duration,
    read_timer: Option<Pin<Box<tokio::time::Sleep>>>,
    write_blocked: Option<tokio::time::Instant>,
    write_timer: Option<Pin<Box<tokio::time::Sleep>>>,
    _permit: OwnedSemaphorePermit,
}

fn timed_out(what: &str) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::TimedOut, what.to_owned())
}

/// Polls `timer` (created or moved to `deadline`): ready when the deadline has passed.
fn deadline_passed(
    timer: &mut Option<Pin<Box<tokio::time::Sleep>>>,
    deadline: tokio::time::Instant,
    cx: &mut Context<'_>,
) -> bool {
    let timer = timer.get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
    if timer.deadline() != deadline {
        timer.as_mut().reset(deadline);
    }
    timer.as_mut().poll(cx).is_ready()
}

impl Watched {
    /// After a read found nothing: `Ready(error)` when an upgraded connection's peer has been silent too long;
    /// otherwise makes sure the task is woken when it would be.
    fn idle_check(&mut self, cx: &mut Context<'_>) -> Poll<std::io::Error> {
        if !self.activity.upgraded.load(Ordering::Relaxed) {
            return Poll::Pending;
        }
        loop {
            let quiet = self.activity.quiet_for();
            if quiet >= self.idle {
                return Poll::Ready(timed_out("the peer of an upgraded connection was silent too long"));
            }
            let deadline = tokio::time::Instant::now() + (self.idle - quiet);
            if !deadline_passed(&mut self.read_timer, deadline, cx) {
                return Poll::Pending;
            }
        }
    }
}

impl AsyncRead for Watched {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        match Pin::new(&mut self.inner).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                let read = buf.filled().len().saturating_sub(before);
                if read > 0 {
                    self.activity.read(read);
                }
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => self.idle_check(cx).map(Err),
        }
    }
}

impl AsyncWrite for Watched {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, data: &[u8]) -> Poll<std::io::Result<usize>> {
        match Pin::new(&mut self.inner).poll_write(cx, data) {
            Poll::Pending => {
                // The peer is not taking what is written: after the idle timeout, the connection ends.
                let since = *self.write_blocked.get_or_insert_with(tokio::time::Instant::now);
                let deadline = since + self.idle;
                if deadline_passed(&mut self.write_timer, deadline, cx) {
                    return Poll::Ready(Err(timed_out("the peer stopped reading")));
                }
                Poll::Pending
            }
            done => {
                self.write_blocked = None;
                done
            }
        }
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

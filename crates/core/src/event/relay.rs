//! Events to every instance: what one instance publishes for a session reaches that session's subscribers on every
//! other instance sharing its storage, through a [`RelayChannel`] (holdfast-store's PostgreSQL `LISTEN/NOTIFY`
//! channel, `holdfast_store::fanout`). This module decides what is sent, signs it and checks what arrives; the
//! channel only carries text.
//!
//! [`Relay`] is the [`EventRelay`] each session's bus hands its events to. One task sends them, in the order they
//! were published, tagged with this instance's id and a sequence number (a channel may fold identical payloads sent
//! together into one); what queued while a batch was being sent goes out in the next, as one call (up to [`BATCH`]
//! events), so a burst costs one round trip, not one per event. One listener receives every instance's
//! notifications and delivers those of other instances to the local buses of their session. A notification's text
//! is limited ([`RelayChannel::payload_limit`]): a larger event is written to the channel's spill store and the
//! notification carries its id.
//!
//! Every notification is signed: `MAC.JSON`, where MAC is keccak-256 over the channel's key, a zero byte and the
//! JSON. The key is one only roles that may read the storage's tables can read, while listening needs less: another
//! role can read notifications but not forge one (a notification without a valid MAC is dropped with a warning).
//! Keccak has no length extension, so the keyed hash is a MAC as it stands. Every notification is also dated and
//! numbered by its sender: one dated more than [`WATCH_TTL`] away, or whose number its sender already used, is a
//! replay (any role that can listen has seen them) and is ignored.
//!
//! **Only what someone watches.** An instance sends another instance's subscribers only the events of sessions they
//! watch: a subscriber's arrival ([`EventRelay::watch`]) is announced at once, every instance renews its
//! announcements every [`RENEW_EVERY`] (they lapse after [`WATCH_TTL`]), and one that starts or reconnects asks the
//! others to renew theirs, twice, a second apart (an instance answers each sender's hellos at most once a second). Events of a session nobody elsewhere watches are not sent (counted in
//! [`Relay::unwatched_events`]); for those that follow a save (`tool.result`, `session.saved`) a reload hint is sent
//! instead, one per session however many saves, at most every [`HINT_EVERY`], so every instance holding a copy still
//! learns that it is older.
//!
//! Events are what the UI shows, not what decides: nothing reads an event to move value. The one thing an event
//! prompts is a reload: an instance replaces its copy of a session from storage when another instance's
//! `tool.result` or `session.saved` for it arrives (both follow a save; a `session.saved` of revision 0 is the reload
//! hint sent for a save of a session no other instance watches, or whose events were dropped or not sent). A
//! notification sent while a listener is reconnecting is lost to that listener, as an event is to a WebSocket client
//! that lags; so on a reconnect every session loaded here is marked for reloading.

use super::{Event, EventBus, EventPayload, EventRelay, WeakEventBus};
use crate::ToolError;
use crate::tool::BoxFuture;
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tokio::sync::{Notify, mpsc};
use tokio_util::sync::CancellationToken;

/// What carries the relay's notifications between instances: text out, text in. The relay signs and checks; a
/// channel adds nothing and decides nothing.
pub trait RelayChannel: Send + Sync + 'static {
    /// This instance's id (unique among the instances on the channel).
    fn instance(&self) -> &str;
    /// The signing key, readable only by those allowed to read the storage.
    fn key(&self) -> &str;
    /// The longest notification the channel carries.
    fn payload_limit(&self) -> usize;
    /// Sends notifications, in order, together.
    fn notify<'a>(&'a self, payloads: &'a [String]) -> BoxFuture<'a, Result<(), ToolError>>;
    /// Keeps a text too long for a notification; its id.
    fn spill(&self, body: String) -> BoxFuture<'_, Result<i64, ToolError>>;
    /// A spilled text, if it is still kept.
    fn unspill(&self, id: i64) -> BoxFuture<'_, Result<Option<String>, ToolError>>;
    /// Starts listening: every notification sent after this returns is heard.
    fn listen(&self) -> BoxFuture<'_, Result<Box<dyn RelayListener>, ToolError>>;
}

/// What a [`RelayChannel`] hears.
pub trait RelayListener: Send {
    /// The next notification; `Ok(None)` or an error when the connection was lost or failed (the next call listens
    /// again, and what was sent meanwhile is not heard: the relay takes either as a loss).
    fn recv(&mut self) -> BoxFuture<'_, Result<Option<String>, ToolError>>;
}

/// Events queued for sending before new ones are dropped (with a warning), as for a lagging subscriber.
const QUEUE: usize = 8_192;

/// Most events sent in one statement.
pub const BATCH: usize = 512;

/// How long another instance's announcement that it watches a session holds unless renewed.
pub const WATCH_TTL: Duration = Duration::from_secs(30);

/// How often an instance renews its announcements (every session with a subscriber here).
pub const RENEW_EVERY: Duration = Duration::from_secs(10);

/// The shortest time between two rounds of reload hints: the saves of that time are coalesced, one hint per session.
pub const HINT_EVERY: Duration = Duration::from_millis(10);

/// Most sessions named in one announcement (a notification's payload is limited).
const WATCH_CHUNK: usize = 100;

/// The longest wait before the sender tries again after a round in which a send failed (it doubles from 100 ms).
const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// Each other instance's hello is answered at most this often.
const RENEW_AT_MOST: Duration = Duration::from_secs(1);

#[derive(Serialize, Deserialize)]
struct Envelope {
    /// The sending instance.
    o: String,
    /// The event, inline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    e: Option<Event>,
    /// Or the spill row holding it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    s: Option<i64>,
    /// The sender's sequence number: keeps two equal events of one batch distinct.
    #[serde(default)]
    n: u64,
    /// An announcement: the sender has subscribers of these sessions (send it their events).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    w: Vec<String>,
    /// The sender started listening (or listens again): every instance renews its announcements now.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    h: bool,
    /// When it was sent (Unix seconds): one dated more than [`WATCH_TTL`] away from now is a replay, ignored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    t: Option<i64>,
}

/// What the sender owes the other instances besides queued events.
#[derive(Debug, Default)]
struct Pending {
    /// Sessions saved here whose `tool.result` or `session.saved` was not sent in full, or whose events a full queue
    /// dropped: one reload hint each.
    hints: HashSet<String>,
    /// Sessions that got a subscriber here: announced.
    watch: HashSet<String>,
    /// Renew every announcement (the timer, or another instance said hello).
    renew: bool,
    /// Say hello (this instance started, or its listener reconnected and may have missed announcements).
    hello: bool,
}

/// What the relay and its sender task share.
#[derive(Debug, Default)]
struct Shared {
    pending: Mutex<Pending>,
    wake: Notify,
    /// Every local session's buses (an event of another instance goes to those of its session).
    buses: Mutex<HashMap<String, Vec<WeakEventBus>>>,
}

impl Shared {
    /// Records what is owed and wakes the sender.
    fn owe(&self, f: impl FnOnce(&mut Pending)) {
        f(&mut self.pending.lock());
        self.wake.notify_one();
    }

    /// Records what is owed without waking the sender: what a failed send gives back waits for the next round (after
    /// the back-off), instead of being retried at once in a loop.
    fn owe_later(&self, f: impl FnOnce(&mut Pending)) {
        f(&mut self.pending.lock());
    }

    /// Asks the other instances to announce what they watch: now, and again after [`RENEW_AT_MOST`] (an instance
    /// answers one sender's hellos at most that often), in case this one did not hear the first answers (a listener
    /// that listens again only at its next receive).
    fn say_hello_twice(self: &Arc<Self>) {
        self.owe(|p| p.hello = true);
        let shared = Arc::clone(self);
        tokio::spawn(async move {
            tokio::time::sleep(RENEW_AT_MOST).await;
            shared.owe(|p| p.hello = true);
        });
    }

    /// Whether anything besides queued events is owed.
    fn owes(&self) -> bool {
        let p = self.pending.lock();
        !p.hints.is_empty() || !p.watch.is_empty() || p.renew || p.hello
    }

    /// The sessions with a subscriber in this process.
    fn watched_here(&self) -> Vec<String> {
        let buses = self.buses.lock();
        buses
            .iter()
            .filter(|(_, list)| list.iter().filter_map(WeakEventBus::upgrade).any(|b| b.has_local_subscribers()))
            .map(|(session, _)| session.clone())
            .collect()
    }
}

/// The event relay of one instance.
pub struct Relay {
    channel: Arc<dyn RelayChannel>,
    queue: mpsc::Sender<Arc<Event>>,
    shared: Arc<Shared>,
    /// Events not relayed because the send queue was full (reaching this instance only), and when that was last
    /// logged: a full queue is logged at most once a second, with the count, never once per event. Each session
    /// some of whose events were dropped is sent one reload hint, so no other instance keeps an older copy of it
    /// because its `tool.result` was among them.
    dropped: DropCounter,
    /// Events not sent because no other instance watches their session.
    unwatched: AtomicU64,
    /// The sessions other instances watch, and until when (renewed by their announcements).
    watched: Mutex<HashMap<String, Instant>>,
    /// When each other instance's hello was last answered ([`RENEW_AT_MOST`]).
    renewed: Mutex<HashMap<String, Instant>>,
    /// The highest sequence number heard from each other instance, and when: a notification whose number is not
    /// higher is a replay (an instance numbers what it sends from 1 at each start, under a new id).
    heard: Mutex<HashMap<String, (u64, Instant)>>,
}

/// Counts events dropped from a full queue and rate-limits the warning about them.
#[derive(Debug, Default)]
pub struct DropCounter {
    total: std::sync::atomic::AtomicU64,
    unlogged: std::sync::atomic::AtomicU64,
    last_logged: Mutex<Option<std::time::Instant>>,
}

impl DropCounter {
    /// Counts one dropped event; returns how many to report now (the ones since the last report) when a second
    /// has passed since it, else `None`.
    pub fn drop_one(&self) -> Option<u64> {
        use std::sync::atomic::Ordering;
        self.total.fetch_add(1, Ordering::Relaxed);
        self.unlogged.fetch_add(1, Ordering::Relaxed);
        let mut last = self.last_logged.lock();
        let now = std::time::Instant::now();
        if last.is_some_and(|t| now.duration_since(t) < std::time::Duration::from_secs(1)) {
            return None;
        }
        *last = Some(now);
        Some(self.unlogged.swap(0, Ordering::Relaxed))
    }

    /// Every event dropped since the start.
    pub fn total(&self) -> u64 {
        self.total.load(std::sync::atomic::Ordering::Relaxed)
    }
}

impl std::fmt::Debug for Relay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Relay").field("instance", &self.channel.instance()).finish_non_exhaustive()
    }
}

impl Relay {
    /// Listens on `channel` (before returning: no event published after this is missed) and starts the sender; both
    /// stop with `cancel`. Must be called on a tokio runtime.
    pub async fn start(channel: Arc<dyn RelayChannel>, cancel: CancellationToken) -> Result<Arc<Self>, ToolError> {
        let mut listener = channel.listen().await?;
        let (queue, rx) = mpsc::channel(QUEUE);
        let shared = Arc::new(Shared::default());
        // Listening from here on: the others are asked to say what they watch.
        shared.say_hello_twice();
        let relay = Arc::new(Self {
            channel: Arc::clone(&channel),
            queue,
            shared: Arc::clone(&shared),
            dropped: DropCounter::default(),
            unwatched: AtomicU64::new(0),
            watched: Mutex::new(HashMap::new()),
            renewed: Mutex::new(HashMap::new()),
            heard: Mutex::new(HashMap::new()),
        });
        tokio::spawn(send(channel, rx, shared, cancel.clone()));
        let receiving = Arc::downgrade(&relay);
        tokio::spawn(async move {
            loop {
                let note = tokio::select! {
                    () = cancel.cancelled() => return,
                    note = listener.recv() => note,
                };
                let Some(relay) = receiving.upgrade() else { return };
                match note {
                    Ok(Some(note)) => relay.receive(&note).await,
                    // The connection was lost (the next call listens again): what other instances sent meanwhile is
                    // gone, so every session loaded here may be older than what they saved.
                    Ok(None) => {
                        tracing::warn!("event relay: the listening connection was lost; listening again");
                        relay.mark_all_remote();
                        // The others renew what they watch on hello. The listener listens again only at its next
                        // receive: the second hello, a second later, covers answers the first one's may have lost.
                        relay.shared.say_hello_twice();
                    }
                    // A failed receive (the server ended the connection with an error, a broken socket): the
                    // same loss, told differently; the next call listens again after a pause.
                    Err(e) => {
                        tracing::warn!(error = %e, "event relay: listening failed; listening again");
                        relay.mark_all_remote();
                        tokio::time::sleep(Duration::from_secs(1)).await;
                        relay.shared.say_hello_twice();
                    }
                }
            }
        });
        Ok(relay)
    }

    async fn receive(&self, signed: &str) {
        let Some(payload) = verify(self.channel.key(), signed) else {
            tracing::warn!("event relay: a notification without a valid signature was ignored");
            return;
        };
        // The listener hears this instance's own notifications too: skip them before parsing the event.
        if payload
            .strip_prefix("{\"o\":\"")
            .and_then(|rest| rest.strip_prefix(self.channel.instance()))
            .is_some_and(|rest| rest.starts_with('"'))
        {
            return;
        }
        let Ok(envelope) = serde_json::from_str::<Envelope>(payload) else {
            tracing::warn!("event relay: a notification that is not an event was ignored");
            return;
        };
        if envelope.o == self.channel.instance() {
            return;
        }
        // A replay (any role that can LISTEN has seen every notification): one dated long ago, or one whose number
        // its sender already used, is ignored; it neither reloads a session nor reaches a subscriber twice.
        let sent = envelope.t.unwrap_or_default();
        if (chrono::Utc::now().timestamp() - sent).unsigned_abs() > WATCH_TTL.as_secs()
            || !self.first_hearing(&envelope)
        {
            return;
        }
        if !envelope.w.is_empty() {
            let until = Instant::now() + WATCH_TTL;
            let mut watched = self.watched.lock();
            let now = Instant::now();
            watched.retain(|_, t| *t > now);
            for session in envelope.w {
                watched.insert(session, until);
            }
        }
        if envelope.h {
            // Each sender's hello at most once a second: a flood of one sender's (or their replays) costs one
            // answer a second, and one instance's hello never keeps another's from being answered.
            let mut renewed = self.renewed.lock();
            if renewed.len() > 64 {
                renewed.retain(|_, at| at.elapsed() < RENEW_AT_MOST);
            }
            if renewed.get(&envelope.o).is_none_or(|at| at.elapsed() >= RENEW_AT_MOST) {
                renewed.insert(envelope.o.clone(), Instant::now());
                self.shared.owe(|p| p.renew = true);
            }
        }
        let event = match (envelope.e, envelope.s) {
            (Some(event), _) => event,
            (None, Some(id)) => {
                match self.channel.unspill(id).await.ok().flatten().and_then(|b| serde_json::from_str::<Event>(&b).ok())
                {
                    Some(event) => event,
                    None => return,
                }
            }
            (None, None) => return,
        };
        let live: Vec<EventBus> = {
            let mut buses = self.shared.buses.lock();
            let Some(list) = buses.get_mut(&event.session_id) else { return };
            list.retain(|b| b.upgrade().is_some());
            let live = list.iter().filter_map(WeakEventBus::upgrade).collect();
            if list.is_empty() {
                buses.remove(&event.session_id);
            }
            live
        };
        let event = Arc::new(event);
        for bus in live {
            bus.deliver(Arc::clone(&event));
        }
    }
}

impl Relay {
    /// Records `envelope`'s number as its sender's latest; false when the sender already used it (or a higher one).
    /// Once more than 64 senders are recorded, those not heard from within twice [`WATCH_TTL`] are forgotten: their
    /// notifications are stale by then.
    fn first_hearing(&self, envelope: &Envelope) -> bool {
        let mut heard = self.heard.lock();
        let now = Instant::now();
        if heard.len() > 64 {
            heard.retain(|_, (_, at)| now.duration_since(*at) < 2 * WATCH_TTL);
        }
        match heard.get_mut(&envelope.o) {
            Some((last, _)) if envelope.n <= *last => false,
            Some(entry) => {
                *entry = (envelope.n, now);
                true
            }
            None => {
                heard.insert(envelope.o.clone(), (envelope.n, now));
                true
            }
        }
    }

    /// Events not relayed to the other instances since the start because the send queue was full.
    pub fn dropped_events(&self) -> u64 {
        self.dropped.total()
    }

    /// Events not sent to the other instances since the start because none of them watched their session (a save
    /// among them was sent as a reload hint).
    pub fn unwatched_events(&self) -> u64 {
        self.unwatched.load(Ordering::Relaxed)
    }

    /// Whether another instance has announced, within [`WATCH_TTL`], that it watches `session`.
    pub fn watched_elsewhere(&self, session: &str) -> bool {
        self.watched.lock().get(session).is_some_and(|until| *until > Instant::now())
    }

    /// Marks every attached session as possibly changed by another instance ([`EventBus::mark_remote_activity`]).
    fn mark_all_remote(&self) {
        for bus in self.shared.buses.lock().values().flatten().filter_map(WeakEventBus::upgrade) {
            bus.mark_remote_activity();
        }
    }
}

impl EventRelay for Relay {
    fn relay(&self, event: &Arc<Event>) {
        if !self.watched_elsewhere(&event.session_id) {
            self.unwatched.fetch_add(1, Ordering::Relaxed);
            if is_save(event) {
                self.shared.owe(|p| {
                    p.hints.insert(event.session_id.clone());
                });
            }
            return;
        }
        if self.queue.try_send(Arc::clone(event)).is_ok() {
            return;
        }
        self.shared.owe(|p| {
            p.hints.insert(event.session_id.clone());
        });
        if let Some(count) = self.dropped.drop_one() {
            tracing::warn!(
                dropped = count,
                dropped_total = self.dropped.total(),
                "event relay: the send queue is full; events reach this instance only (logged at most once a second)"
            );
        }
    }

    fn attach(&self, bus: &EventBus) {
        let mut buses = self.shared.buses.lock();
        let list = buses.entry(bus.session_id().to_owned()).or_default();
        list.retain(|b| b.upgrade().is_some());
        list.push(bus.downgrade());
    }

    fn watch(&self, session_id: &str) {
        self.shared.owe(|p| {
            p.watch.insert(session_id.to_owned());
        });
    }
}

/// Sends queued events in order, in batches, until `cancel`. After a batch: the reload hints owed (one per session,
/// coalesced however many of its saves or dropped events there were, at most every [`HINT_EVERY`]), then the
/// announcements (the sessions that got a subscriber here; every watched one when renewing) and a hello.
async fn send(
    channel: Arc<dyn RelayChannel>,
    mut rx: mpsc::Receiver<Arc<Event>>,
    shared: Arc<Shared>,
    cancel: CancellationToken,
) {
    let mut sender = Sender { channel, seq: 0 };
    let mut batch = Vec::with_capacity(BATCH);
    let mut renew = tokio::time::interval(RENEW_EVERY);
    renew.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut last_hints = Instant::now().checked_sub(HINT_EVERY).unwrap_or_else(Instant::now);
    let mut hints_waiting = false;
    let mut backoff = Duration::ZERO;
    let mut warned: Option<Instant> = None;
    loop {
        // After a round in which a send failed: wait the back-off, then send again what is owed without waiting for
        // anything new to happen.
        let retry = !backoff.is_zero();
        if retry {
            tokio::select! {
                () = cancel.cancelled() => return,
                () = tokio::time::sleep(backoff) => {}
            }
        }
        let retry = retry && shared.owes();
        let mut failed: Option<ToolError> = None;
        let hints_at = tokio::time::Instant::from_std(last_hints + HINT_EVERY);
        tokio::select! {
            () = cancel.cancelled() => return,
            n = rx.recv_many(&mut batch, BATCH) => if n == 0 { return },
            () = shared.wake.notified() => {}
            _ = renew.tick() => shared.pending.lock().renew = true,
            () = tokio::time::sleep_until(hints_at), if hints_waiting => {}
            () = std::future::ready(()), if retry => {}
        }
        if !batch.is_empty() {
            if let Err(e) = sender.notify(&batch).await {
                // A save among them still reaches every copy elsewhere: its session is owed a hint.
                let saved = batch.iter().filter(|e| is_save(e)).map(|e| e.session_id.clone());
                shared.owe_later(|p| p.hints.extend(saved));
                failed = Some(e);
            }
            batch.clear();
        }
        let (hints, watch, hello) = {
            let mut pending = shared.pending.lock();
            let hints =
                if last_hints.elapsed() >= HINT_EVERY { std::mem::take(&mut pending.hints) } else { HashSet::new() };
            hints_waiting = !pending.hints.is_empty();
            let mut watch = std::mem::take(&mut pending.watch);
            if std::mem::take(&mut pending.renew) {
                drop(pending);
                watch.extend(shared.watched_here());
                pending = shared.pending.lock();
            }
            (hints, watch, std::mem::take(&mut pending.hello))
        };
        if !hints.is_empty() {
            last_hints = Instant::now();
            let sessions: Vec<String> = hints.into_iter().collect();
            for chunk in sessions.chunks(BATCH) {
                let hints: Vec<Arc<Event>> = chunk.iter().map(|s| Arc::new(reload_hint(s))).collect();
                if let Err(e) = sender.notify(&hints).await {
                    // Kept for the next round: a hint is sent or still owed, never forgotten.
                    shared.owe_later(|p| p.hints.extend(chunk.iter().cloned()));
                    failed = Some(e);
                }
            }
        }
        let watch: Vec<String> = watch.into_iter().collect();
        let mut control: Vec<(Vec<String>, bool)> = watch.chunks(WATCH_CHUNK).map(|c| (c.to_vec(), false)).collect();
        if hello {
            control.push((Vec::new(), true));
        }
        for (sessions, hello) in control {
            if let Err(e) = sender.control(sessions.clone(), hello).await {
                shared.owe_later(|p| {
                    p.watch.extend(sessions);
                    p.hello |= hello;
                });
                failed = Some(e);
            }
        }
        match failed {
            None => backoff = Duration::ZERO,
            Some(e) => {
                // Sent again after a back-off (100 ms, doubling to 5 s), not in a loop; logged at most once a second.
                backoff = (backoff * 2).clamp(Duration::from_millis(100), MAX_BACKOFF);
                if warned.is_none_or(|at| at.elapsed() >= Duration::from_secs(1)) {
                    warned = Some(Instant::now());
                    tracing::warn!(error = %e, retry_in_ms = backoff.as_millis() as u64,
                        "event relay: not everything was sent to the other instances; what is owed is sent again");
                }
            }
        }
    }
}

/// Whether `event` follows a save (another instance's copy of its session is older once it happened).
fn is_save(event: &Event) -> bool {
    matches!(event.payload, EventPayload::ToolResult(_) | EventPayload::SessionSaved(_))
}

/// A `session.saved` for `session` with no revision of its own (0): "it was saved (its events were not sent, or were
/// dropped); reload it".
fn reload_hint(session: &str) -> Event {
    let payload = EventPayload::SessionSaved(super::SessionSaved { revision: 0 });
    Event { session_id: session.to_owned(), payload, at: chrono::Utc::now() }
}

struct Sender {
    channel: Arc<dyn RelayChannel>,
    seq: u64,
}

impl Sender {
    /// The notifications of `events`, in order, in one call. An event that cannot be prepared (its spilled text not
    /// kept) is left out alone; when the call fails, each notification is sent again on its own, so one failure
    /// costs its own event, not the batch.
    async fn notify(&mut self, events: &[Arc<Event>]) -> Result<(), ToolError> {
        let mut payloads = Vec::with_capacity(events.len());
        for event in events {
            match self.payload(event).await {
                Ok(p) => payloads.push(p),
                Err(e) => {
                    tracing::warn!(event = event.name(), error = %e, "event relay: not sent to the other instances")
                }
            }
        }
        if payloads.is_empty() || self.channel.notify(&payloads).await.is_ok() {
            return Ok(());
        }
        let mut failed = None;
        for payload in payloads {
            if let Err(e) = self.channel.notify(std::slice::from_ref(&payload)).await {
                failed = Some(e);
            }
        }
        failed.map_or(Ok(()), Err)
    }

    fn envelope(&mut self) -> Envelope {
        self.seq += 1;
        let o = self.channel.instance().to_owned();
        let t = Some(chrono::Utc::now().timestamp());
        Envelope { o, e: None, s: None, n: self.seq, w: Vec::new(), h: false, t }
    }

    fn signed(&self, envelope: &Envelope) -> Result<String, ToolError> {
        let body = serde_json::to_string(envelope).map_err(|e| ToolError::internal(e.to_string()))?;
        Ok(sign(self.channel.key(), &body))
    }

    /// Sends an announcement (the sessions watched here) or a hello.
    async fn control(&mut self, sessions: Vec<String>, hello: bool) -> Result<(), ToolError> {
        let envelope = Envelope { w: sessions, h: hello, ..self.envelope() };
        let signed = self.signed(&envelope)?;
        self.channel.notify(&[signed]).await
    }

    /// The notification for `event`: the event inline, or the id of the spilled text holding it.
    async fn payload(&mut self, event: &Event) -> Result<String, ToolError> {
        let inline = Envelope { e: Some(event.clone()), ..self.envelope() };
        let signed = self.signed(&inline)?;
        if signed.len() <= self.channel.payload_limit() {
            return Ok(signed);
        }
        let body = serde_json::to_string(event).map_err(|e| ToolError::internal(e.to_string()))?;
        let id = self.channel.spill(body).await?;
        self.signed(&Envelope { e: None, s: Some(id), ..inline })
    }
}

/// keccak-256(key ‖ 0x00 ‖ body), hex.
fn mac(key: &str, body: &str) -> String {
    let mut bytes = Vec::with_capacity(key.len() + 1 + body.len());
    bytes.extend_from_slice(key.as_bytes());
    bytes.push(0);
    bytes.extend_from_slice(body.as_bytes());
    alloy_primitives::hex::encode(alloy_primitives::keccak256(&bytes))
}

/// `MAC.BODY`, the form every notification is sent in.
fn sign(key: &str, body: &str) -> String {
    format!("{}.{body}", mac(key, body))
}

/// The body of a notification whose MAC is valid under `key`.
fn verify<'a>(key: &str, signed: &'a str) -> Option<&'a str> {
    let (given, body) = signed.split_once('.')?;
    let expected = mac(key, body);
    // Compared in constant time: nothing about the key leaks through how long a rejection takes.
    let same = given.len() == expected.len()
        && given.bytes().zip(expected.bytes()).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0;
    same.then_some(body)
}

#[cfg(test)]
mod tests {
    use super::DropCounter;

    #[test]
    fn a_full_queue_is_counted_always_and_reported_at_most_once_a_second() {
        let counter = DropCounter::default();
        let reports: Vec<u64> = (0..100_000).filter_map(|_| counter.drop_one()).collect();
        assert_eq!(counter.total(), 100_000);
        assert!(!reports.is_empty() && reports.len() <= 2, "{} reports for 100,000 drops", reports.len());
        assert_eq!(reports[0], 1, "the first drop is reported at once");
    }
}

//! Events published on one instance reach the other instance's subscribers of that session, all of them, in order,
//! once — a burst goes out in batches, equal events are not folded together, a large one goes through the spill
//! table — and an instance does not hear its own events twice.

use holdfast_core::event::relay::Relay;
use holdfast_core::event::{AgentMessage, EventBus, EventPayload};
use holdfast_store::PgStore;
use holdfast_store::fanout::start;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Waits until `relay` has heard that another instance watches `session` (its subscriber's announcement arrived).
async fn until_watched(relay: &Relay, session: &str) {
    for _ in 0..200 {
        if relay.watched_elsewhere(session) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the other instance's subscriber of {session} was never announced");
}

/// A listener of the test's own on the channel, once what the relays said on starting has passed.
async fn quiet_wire(store: &PgStore) -> sqlx::postgres::PgListener {
    quiet_wire_on(store.pool()).await
}

/// [`quiet_wire`] on a connection of `pool`.
async fn quiet_wire_on(pool: &sqlx::PgPool) -> sqlx::postgres::PgListener {
    let mut wire = sqlx::postgres::PgListener::connect_with(pool).await.unwrap();
    wire.listen(holdfast_store::fanout::CHANNEL).await.unwrap();
    // The hellos (a relay says hello twice, a second apart, on starting) and their answers pass.
    tokio::time::sleep(Duration::from_millis(1_300)).await;
    while tokio::time::timeout(Duration::from_millis(200), wire.recv()).await.is_ok() {}
    wire
}

/// keccak-256(key ‖ 0x00 ‖ body), hex: the MAC a notification carries, made here as another role would.
fn mac(key: &str, body: &str) -> String {
    let mut bytes = key.as_bytes().to_vec();
    bytes.push(0);
    bytes.extend_from_slice(body.as_bytes());
    alloy_primitives::hex::encode(alloy_primitives::keccak256(&bytes))
}

fn text(event: &holdfast_core::event::Event) -> String {
    match &event.payload {
        EventPayload::AgentMessage(AgentMessage::Delta { delta }) => delta.clone(),
        other => panic!("unexpected event {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_reaches_the_other_instance_whole_and_in_order() {
    let Some(url) = holdfast_testkit::postgres::fresh_database().await else { return };
    let cancel = CancellationToken::new();
    let _stop = cancel.clone().drop_guard();
    let (a, b) = (PgStore::connect(&url).await.unwrap(), PgStore::connect(&url).await.unwrap());
    for store in [&a, &b] {
        store.migrate(&holdfast_store::fanout::MIGRATIONS).await.unwrap();
    }
    let relay_a = start(a, cancel.clone()).await.unwrap();
    let relay_b = start(b, cancel.clone()).await.unwrap();
    let bus_a = EventBus::new("s").with_relay(Arc::clone(&relay_a) as _);
    let bus_b = EventBus::new("s").with_relay(Arc::clone(&relay_b) as _);
    let other = EventBus::new("t").with_relay(relay_b);
    let (mut on_a, mut on_b, mut on_other) = (bus_a.subscribe(), bus_b.subscribe(), other.subscribe());
    until_watched(&relay_a, "s").await;

    let large = "x".repeat(20_000);
    let mut sent: Vec<String> =
        (0..600).map(|i| if i % 3 == 0 { "same".to_owned() } else { format!("d{i}") }).collect();
    sent.insert(300, large.clone());
    for delta in &sent {
        bus_a.publish(EventPayload::AgentMessage(AgentMessage::Delta { delta: delta.clone() }));
    }

    let mut got = Vec::new();
    while got.len() < sent.len() {
        let event = tokio::time::timeout(Duration::from_secs(20), on_b.recv()).await.expect("events reach b").unwrap();
        got.push(text(&event));
    }
    assert_eq!(got, sent, "every event, in order, equal ones not folded, the large one through the spill table");
    // The publishing instance's subscriber had each once, and nothing more arrives on either side.
    for delta in &sent {
        assert_eq!(&text(&on_a.recv().await.unwrap()), delta);
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(on_a.try_recv().is_err(), "a does not hear its own events back");
    assert!(on_b.try_recv().is_err());
    assert!(on_other.try_recv().is_err(), "another session's subscribers hear nothing");
}

/// Another role on the database server can `NOTIFY` on the channel (it needs only `CONNECT`): a notification
/// without the key's MAC — none, a made-up one, one under another key — reaches no subscriber; one signed with the
/// key (which only the table's owner can read) does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_notification_not_signed_with_the_key_is_dropped() {
    let Some(url) = holdfast_testkit::postgres::fresh_database().await else { return };
    let cancel = CancellationToken::new();
    let _stop = cancel.clone().drop_guard();
    let b = PgStore::connect(&url).await.unwrap();
    let relay_b = start(b, cancel.clone()).await.unwrap();
    let bus_b = EventBus::new("s").with_relay(relay_b);
    let mut on_b = bus_b.subscribe();

    let attacker = PgStore::connect(&url).await.unwrap();
    let event = |delta: &str| holdfast_core::event::Event {
        session_id: "s".into(),
        payload: EventPayload::AgentMessage(AgentMessage::Delta { delta: delta.into() }),
        at: chrono::Utc::now(),
    };
    let t = chrono::Utc::now().timestamp();
    let body = |delta: &str| serde_json::json!({"o": "i_attacker", "e": event(delta), "n": 1, "t": t}).to_string();
    let key: String =
        sqlx::query_scalar("SELECT key FROM holdfast_event_key").fetch_one(attacker.pool()).await.unwrap();
    assert_eq!(key.len(), 64, "two random UUIDs' hex digits");
    let signed = |key: &str, body: String| format!("{}.{body}", mac(key, &body));
    let wrong_key = signed("another key", body("wrong key"));
    let tampered = signed(&key, body("tampered")).replace("tampered", "changed after signing");
    let forged = [body("unsigned"), format!("{}.{}", "0".repeat(64), body("zero mac")), wrong_key, tampered];
    for payload in forged.iter().chain([&signed(&key, body("genuine"))]) {
        sqlx::query("SELECT pg_notify($1, $2)")
            .bind(holdfast_store::fanout::CHANNEL)
            .bind(payload)
            .execute(attacker.pool())
            .await
            .unwrap();
    }
    let got =
        tokio::time::timeout(Duration::from_secs(10), on_b.recv()).await.expect("the signed one arrives").unwrap();
    assert_eq!(text(&got), "genuine", "the forged notifications before it were dropped");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(on_b.try_recv().is_err());
}

/// A burst larger than the send queue drops events (counted, never blocking the publisher); each session whose
/// events were dropped gets one reload hint once the queue has room, so the other instance takes its copy of that
/// session as older than the saved one even though the events that would have said so were lost.
#[tokio::test(flavor = "current_thread")]
async fn dropped_events_leave_one_reload_hint_per_session() {
    let Some(url) = holdfast_testkit::postgres::fresh_database().await else { return };
    let cancel = CancellationToken::new();
    let _stop = cancel.clone().drop_guard();
    let (a, b) = (PgStore::connect(&url).await.unwrap(), PgStore::connect(&url).await.unwrap());
    let relay_a = start(a, cancel.clone()).await.unwrap();
    let relay_b = start(b, cancel.clone()).await.unwrap();
    let bus_a = EventBus::new("s").with_relay(Arc::clone(&relay_a) as _);
    let bus_b = EventBus::new("s").with_relay(relay_b);
    let _watching = bus_b.subscribe();
    until_watched(&relay_a, "s").await;

    // On one thread the sender cannot run while this loop does: what does not fit in the queue is dropped. None of
    // these events would make b reload the session.
    for i in 0..20_000 {
        bus_a.publish(EventPayload::AgentMessage(AgentMessage::Delta { delta: format!("d{i}") }));
    }
    assert!(relay_a.dropped_events() > 0, "the queue overflowed");
    assert!(!bus_b.has_remote_activity());
    for _ in 0..400 {
        if bus_b.has_remote_activity() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(bus_b.has_remote_activity(), "b was told to reload the session whose events were dropped");
}

/// Events of a session no other instance watches are not sent at all, yet an instance holding a copy of the session
/// still learns that a save made it older: 1,000 `tool.call`s and 10 saves cost a few reload hints on the wire, not
/// 1,010 notifications. Once the other instance subscribes, the session's events reach it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_watched_sessions_events_are_sent_and_saves_still_reach_every_copy() {
    use holdfast_core::event::{ToolCallFinished, ToolCallStarted};
    let Some(url) = holdfast_testkit::postgres::fresh_database().await else { return };
    let cancel = CancellationToken::new();
    let _stop = cancel.clone().drop_guard();
    let (a, b) = (PgStore::connect(&url).await.unwrap(), PgStore::connect(&url).await.unwrap());
    let relay_a = start(a.clone(), cancel.clone()).await.unwrap();
    let relay_b = start(b, cancel.clone()).await.unwrap();
    let bus_a = EventBus::new("s").with_relay(Arc::clone(&relay_a) as _);
    let bus_b = EventBus::new("s").with_relay(Arc::clone(&relay_b) as _);
    // What goes over the channel, counted by a listener of the test's own.
    let mut wire = quiet_wire(&a).await;

    let call =
        || EventPayload::ToolCall(ToolCallStarted { tool: "register_get".into(), params: serde_json::json!({}) });
    let ok = serde_json::json!({"ok": true});
    for i in 0..1_010 {
        if i % 101 == 100 {
            bus_a.publish(EventPayload::ToolResult(ToolCallFinished::new("register_set", &Ok(ok.clone()))));
        } else {
            bus_a.publish(call());
        }
    }
    let mut heard = 0;
    while tokio::time::timeout(Duration::from_millis(500), wire.recv()).await.is_ok() {
        heard += 1;
    }
    assert!((1..=10).contains(&heard), "{heard} notifications for 1,010 events of a session nobody else watches");
    assert_eq!(relay_a.unwatched_events(), 1_010);
    assert!(bus_b.has_remote_activity(), "b holds a copy of the session: the saves' hint told it to reload");

    // b's subscriber is announced; from then on a's events of the session reach it.
    let mut on_b = bus_b.subscribe();
    until_watched(&relay_a, "s").await;
    bus_a.publish(EventPayload::AgentMessage(AgentMessage::Delta { delta: "seen".into() }));
    let got = tokio::time::timeout(Duration::from_secs(10), on_b.recv()).await.expect("delivered").unwrap();
    assert_eq!(text(&got), "seen");
    assert!(!relay_b.watched_elsewhere("s"), "a has no subscriber of its own to announce");
}

/// An announcement is signed and dated: a replayed one (any role that can `LISTEN` has seen them; here one sent
/// with the key but dated a minute ago) marks nothing as watched, a fresh one does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replayed_announcement_marks_nothing_as_watched() {
    let Some(url) = holdfast_testkit::postgres::fresh_database().await else { return };
    let cancel = CancellationToken::new();
    let _stop = cancel.clone().drop_guard();
    let a = PgStore::connect(&url).await.unwrap();
    let relay_a = start(a.clone(), cancel.clone()).await.unwrap();
    let key: String = sqlx::query_scalar("SELECT key FROM holdfast_event_key").fetch_one(a.pool()).await.unwrap();
    let announce = async |session: &str, t: i64| {
        let body = serde_json::json!({"o": "i_other", "n": 1, "w": [session], "t": t}).to_string();
        let signed = format!("{}.{body}", mac(&key, &body));
        sqlx::query("SELECT pg_notify($1, $2)")
            .bind(holdfast_store::fanout::CHANNEL)
            .bind(signed)
            .execute(a.pool())
            .await
            .unwrap();
    };
    let now = chrono::Utc::now().timestamp();
    announce("old", now - 60).await;
    announce("new", now).await;
    until_watched(&relay_a, "new").await;
    assert!(!relay_a.watched_elsewhere("old"), "a replayed announcement was taken");
}

/// The real channel, made to fail its sends while `failing` is set (as a database refusing writes would), counting
/// every send tried.
struct Flaky {
    inner: holdfast_store::PgChannel,
    failing: std::sync::atomic::AtomicBool,
    tried: std::sync::atomic::AtomicU64,
}

impl holdfast_core::event::relay::RelayChannel for Flaky {
    fn instance(&self) -> &str {
        self.inner.instance()
    }
    fn key(&self) -> &str {
        self.inner.key()
    }
    fn payload_limit(&self) -> usize {
        self.inner.payload_limit()
    }
    fn notify<'a>(
        &'a self,
        payloads: &'a [String],
    ) -> holdfast_core::tool::BoxFuture<'a, Result<(), holdfast_core::ToolError>> {
        use std::sync::atomic::Ordering;
        self.tried.fetch_add(1, Ordering::SeqCst);
        if self.failing.load(Ordering::SeqCst) {
            return Box::pin(async { Err(holdfast_core::ToolError::internal("the database refuses writes")) });
        }
        self.inner.notify(payloads)
    }
    fn spill(&self, body: String) -> holdfast_core::tool::BoxFuture<'_, Result<i64, holdfast_core::ToolError>> {
        self.inner.spill(body)
    }
    fn unspill(&self, id: i64) -> holdfast_core::tool::BoxFuture<'_, Result<Option<String>, holdfast_core::ToolError>> {
        self.inner.unspill(id)
    }
    fn listen(
        &self,
    ) -> holdfast_core::tool::BoxFuture<
        '_,
        Result<Box<dyn holdfast_core::event::relay::RelayListener>, holdfast_core::ToolError>,
    > {
        self.inner.listen()
    }
}

/// The signed envelopes `o` sent, heard on the wire by a listener of the test's own until `quiet` passes without one.
async fn heard_from(wire: &mut sqlx::postgres::PgListener, o: &str, quiet: Duration) -> Vec<serde_json::Value> {
    let mut heard = Vec::new();
    while let Ok(note) = tokio::time::timeout(quiet, wire.recv()).await {
        let note = note.unwrap();
        let Some((_, body)) = note.payload().split_once('.') else { continue };
        let envelope: serde_json::Value = serde_json::from_str(body).unwrap();
        if envelope["o"] == o {
            heard.push(envelope);
        }
    }
    heard
}

/// While the channel refuses every send, the relay tries again after a back-off that doubles (100 ms to 5 s), not in
/// a loop; what it owed (here: the announcement of a new subscriber) is sent once the channel works again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_channel_is_tried_again_after_a_back_off_and_nothing_owed_is_lost() {
    use std::sync::atomic::Ordering;
    let Some(url) = holdfast_testkit::postgres::fresh_database().await else { return };
    let cancel = CancellationToken::new();
    let _stop = cancel.clone().drop_guard();
    let (a, b) = (PgStore::connect(&url).await.unwrap(), PgStore::connect(&url).await.unwrap());
    let flaky = Arc::new(Flaky {
        inner: holdfast_store::PgChannel::open(a).await.unwrap(),
        failing: true.into(),
        tried: 0.into(),
    });
    let relay_a = Relay::start(Arc::clone(&flaky) as _, cancel.clone()).await.unwrap();
    let relay_b = start(b, cancel.clone()).await.unwrap();
    let bus_a = EventBus::new("s").with_relay(relay_a);
    let _watching = bus_a.subscribe();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let tried = flaky.tried.load(Ordering::SeqCst);
    // 100 + 200 + 400 + 800 ms: about 5 rounds in 2 s (each round tries what it owes); a loop would try thousands.
    assert!((1..=20).contains(&tried), "{tried} sends tried in 2 s of refusals");
    assert!(!relay_b.watched_elsewhere("s"), "nothing got through");

    // Sent at the next try (the back-off is at most 3.2 s by now), not only at the next renewal 8 s later.
    flaky.failing.store(false, Ordering::SeqCst);
    for _ in 0..100 {
        if relay_b.watched_elsewhere("s") {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the announcement owed since the failure was not sent within 5 s of the channel working again");
}

/// Another instance's hello is answered at most once a second: 50 hellos (signed with the key, as a role that can
/// read it would send them) cost one or two announcements, not 50.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hellos_are_answered_at_most_once_a_second() {
    let Some(url) = holdfast_testkit::postgres::fresh_database().await else { return };
    let cancel = CancellationToken::new();
    let _stop = cancel.clone().drop_guard();
    let a = PgStore::connect(&url).await.unwrap();
    let relay_a = start(a.clone(), cancel.clone()).await.unwrap();
    let bus_a = EventBus::new("s").with_relay(relay_a);
    let _watching = bus_a.subscribe();
    let mut wire = quiet_wire(&a).await;

    let key: String = sqlx::query_scalar("SELECT key FROM holdfast_event_key").fetch_one(a.pool()).await.unwrap();
    for n in 0..50 {
        let body = serde_json::json!({"o": "i_other", "n": n, "h": true, "t": chrono::Utc::now().timestamp()});
        let body = body.to_string();
        sqlx::query("SELECT pg_notify($1, $2)")
            .bind(holdfast_store::fanout::CHANNEL)
            .bind(format!("{}.{body}", mac(&key, &body)))
            .execute(a.pool())
            .await
            .unwrap();
    }
    let answers = heard_from(&mut wire, a.instance(), Duration::from_millis(700)).await;
    let announcing = answers.iter().filter(|e| e["w"].as_array().is_some_and(|w| !w.is_empty())).count();
    assert!((1..=2).contains(&announcing), "{announcing} announcements answered 50 hellos");
}

/// When its listening connection is lost, an instance says hello twice (once at once, once a second later, after it
/// listens again), so it hears the others' answers to at least one, and marks its sessions for reloading.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_listener_says_hello_again_twice_and_marks_sessions_for_reloading() {
    let Some(url) = holdfast_testkit::postgres::fresh_database().await else { return };
    let cancel = CancellationToken::new();
    let _stop = cancel.clone().drop_guard();
    let a = PgStore::connect(&url).await.unwrap();
    let relay_a = start(a.clone(), cancel.clone()).await.unwrap();
    let bus_a = EventBus::new("s").with_relay(relay_a);
    // The test's own listener, on a connection of its own that the server can tell apart.
    let options: sqlx::postgres::PgConnectOptions = url.expose().parse().unwrap();
    let own = sqlx::PgPool::connect_with(options.application_name("holdfast-test-wire")).await.unwrap();
    let mut wire = quiet_wire_on(&own).await;
    assert!(!bus_a.has_remote_activity());

    // Every listening connection but the test's own is ended by the server: a's listener.
    let ended: Vec<bool> = sqlx::query_scalar(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
         WHERE datname = current_database() AND query LIKE 'LISTEN%' AND application_name <> 'holdfast-test-wire'",
    )
    .fetch_all(a.pool())
    .await
    .unwrap();
    assert_eq!(ended, vec![true], "a's listener");
    let hellos = heard_from(&mut wire, a.instance(), Duration::from_millis(2_500)).await;
    let hellos = hellos.iter().filter(|e| e["h"] == true).count();
    assert_eq!(hellos, 2, "one hello at once and one a second later");
    assert!(bus_a.has_remote_activity(), "what others saved meanwhile was not heard: the session is to be reloaded");
}

/// A notification replayed as it was sent (any role that can `LISTEN` has seen it), or signed with the key but
/// dated a minute ago, reaches no subscriber and reloads nothing: an event arrives once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replayed_or_stale_event_reaches_no_one() {
    let Some(url) = holdfast_testkit::postgres::fresh_database().await else { return };
    let cancel = CancellationToken::new();
    let _stop = cancel.clone().drop_guard();
    let (a, b) = (PgStore::connect(&url).await.unwrap(), PgStore::connect(&url).await.unwrap());
    let relay_a = start(a.clone(), cancel.clone()).await.unwrap();
    let relay_b = start(b, cancel.clone()).await.unwrap();
    let bus_a = EventBus::new("s").with_relay(Arc::clone(&relay_a) as _);
    let bus_b = EventBus::new("s").with_relay(relay_b);
    let mut on_b = bus_b.subscribe();
    until_watched(&relay_a, "s").await;
    let mut wire = quiet_wire(&a).await;

    bus_a.publish(EventPayload::AgentMessage(AgentMessage::Delta { delta: "once".into() }));
    let got = tokio::time::timeout(Duration::from_secs(10), on_b.recv()).await.expect("delivered").unwrap();
    assert_eq!(text(&got), "once");
    let sent = loop {
        let note = tokio::time::timeout(Duration::from_secs(5), wire.recv()).await.expect("on the wire").unwrap();
        if note.payload().contains("\"once\"") {
            break note.payload().to_owned();
        }
    };
    let key: String = sqlx::query_scalar("SELECT key FROM holdfast_event_key").fetch_one(a.pool()).await.unwrap();
    let event = holdfast_core::event::Event {
        session_id: "s".into(),
        payload: EventPayload::AgentMessage(AgentMessage::Delta { delta: "stale".into() }),
        at: chrono::Utc::now(),
    };
    let t = chrono::Utc::now().timestamp() - 60;
    let stale = serde_json::json!({"o": "i_other", "n": 1, "t": t, "e": event}).to_string();
    for payload in [sent.clone(), sent, format!("{}.{stale}", mac(&key, &stale))] {
        sqlx::query("SELECT pg_notify($1, $2)")
            .bind(holdfast_store::fanout::CHANNEL)
            .bind(payload)
            .execute(a.pool())
            .await
            .unwrap();
    }
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert!(on_b.try_recv().is_err(), "a replayed or stale event was delivered");
}

/// An instance answers hellos at most once a second, whoever sends them: one that starts right after another (whose
/// hello took that answer) still learns what the others watch within seconds, from its second hello, not only at
/// their next renewal 10 s later.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_instance_starting_right_after_another_still_hears_what_is_watched() {
    let Some(url) = holdfast_testkit::postgres::fresh_database().await else { return };
    let cancel = CancellationToken::new();
    let _stop = cancel.clone().drop_guard();
    let b = PgStore::connect(&url).await.unwrap();
    let relay_b = start(b, cancel.clone()).await.unwrap();
    let bus_b = EventBus::new("s").with_relay(relay_b);
    let _watching = bus_b.subscribe();
    // c's hellos take b's answers for the next second; a starts inside it.
    let (c, a) = (PgStore::connect(&url).await.unwrap(), PgStore::connect(&url).await.unwrap());
    let relay_c = start(c, cancel.clone()).await.unwrap();
    until_watched(&relay_c, "s").await;
    let relay_a = start(a, cancel.clone()).await.unwrap();
    for _ in 0..80 {
        if relay_a.watched_elsewhere("s") {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("a learned of b's subscriber only after 4 s");
}

//! Events published on one instance reach the other instance's subscribers of that session, all of them, in order,
//! once — a burst goes out in batches, equal events are not folded together, a large one goes through the spill
//! table — and an instance does not hear its own events twice.

use holdfast_core::event::{AgentMessage, EventBus, EventPayload};
use holdfast_store::{PgFanout, PgStore};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

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
    let relay_a = PgFanout::start(a, cancel.clone()).await.unwrap();
    let relay_b = PgFanout::start(b, cancel.clone()).await.unwrap();
    let bus_a = EventBus::new("s").with_relay(relay_a);
    let bus_b = EventBus::new("s").with_relay(Arc::clone(&relay_b) as _);
    let other = EventBus::new("t").with_relay(relay_b);
    let (mut on_a, mut on_b, mut on_other) = (bus_a.subscribe(), bus_b.subscribe(), other.subscribe());

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

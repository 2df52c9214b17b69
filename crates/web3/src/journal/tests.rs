use super::*;
use alloy::primitives::U256;
use serde_json::json;

fn entry(fp: &str, amount: &str, intent: Option<&str>) -> NewEntry {
    NewEntry {
        session_id: "s".into(),
        kind: EntryKind::Swap,
        network: "base".into(),
        chain_id: 8453,
        from: "0xa".into(),
        to: "0xb".into(),
        nonce: None,
        value: "0".into(),
        asset: "0xUSDC".into(),
        asset_symbol: "USDC".into(),
        amount: amount.into(),
        fingerprint: fp.into(),
        intent: intent.map(str::to_owned),
        raw_tx: None,
        tx_hash: None,
        error: None,
        summary: json!({"action": "swap"}),
        authorization: None,
    }
}

const CAP: DayCap = DayCap { limit: U256::from_limbs([20, 0, 0, 0]), kinds: EntryKind::Swap.cap_group() };

/// The journal on each backend: SQLite in memory, and a fresh PostgreSQL database when the test server is there.
async fn journals() -> Vec<(&'static str, Journal)> {
    let mut all = vec![("sqlite", Journal::in_memory().unwrap())];
    if let Some(url) = holdfast_testkit::postgres::fresh_database().await {
        let pg = holdfast_store::PgStore::connect(&url).await.unwrap();
        all.push(("postgres", Journal::open_storage(&holdfast_store::Storage::Postgres(pg)).await.unwrap()));
    }
    all
}

fn new(r: Reserved) -> JournalEntry {
    match r {
        Reserved::New(e) => e,
        other => panic!("expected a new reservation, got {other:?}"),
    }
}

#[tokio::test]
async fn entries_survive_reopening_and_settle() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("holdfast.db");
    let id = {
        let j = Journal::open(&path).unwrap();
        let e = new(j.reserve(entry("fp1", "5", Some("i1")), Some(CAP)).await.unwrap());
        j.mark_signed(&e.id, Some(3), "0x02", "0xhash", Some("0xgenesis")).await.unwrap();
        e.id
    };
    let j = Journal::open(&path).unwrap();
    assert!(j.is_persistent());
    let unresolved = j.unresolved().await.unwrap();
    assert_eq!(unresolved.len(), 1);
    assert_eq!((unresolved[0].raw_tx(), unresolved[0].nonce), (Some("0x02"), Some(3)));
    assert_eq!(j.unsettled_sends(8453, "0xa").await.unwrap().len(), 1);
    assert!(j.live_by_intent("i1").await.unwrap().is_some());
    j.update(&id, EntryStatus::Confirmed, EntryUpdate { block_number: Some(9), ..Default::default() }).await.unwrap();
    let e = j.get(&id).await.unwrap().unwrap();
    assert_eq!((e.status, e.block_number, e.tx_hash.as_deref()), (EntryStatus::Confirmed, Some(9), Some("0xhash")));
    assert!(j.unresolved().await.unwrap().is_empty());
    assert!(j.unsettled_sends(8453, "0xa").await.unwrap().is_empty());
}

/// A reservation is answered with the entry as written, not read back (a read failing after the insert committed
/// would leave a live reservation its caller took for never made): it must be what the journal holds.
#[tokio::test]
async fn a_new_reservation_is_what_the_journal_holds() {
    for (backend, j) in journals().await {
        let mut e = entry("w", "7", Some("iw"));
        e.nonce = Some(4);
        e.summary = json!({"action": "swap", "note": "ünïcode ✓"});
        let reserved = new(j.reserve(e, Some(CAP)).await.unwrap());
        let held = j.get(&reserved.id).await.unwrap().unwrap();
        assert_eq!(format!("{reserved:?}"), format!("{held:?}"), "{backend}");
        assert_eq!((reserved.status, reserved.nonce), (EntryStatus::Reserved, Some(4)), "{backend}");
    }
}

#[tokio::test]
async fn a_reservation_never_exceeds_the_cap_and_a_failure_releases_it() {
    for (backend, j) in journals().await {
        assert_eq!(j.is_persistent(), backend == "postgres");
        let a = new(j.reserve(entry("a", "12", Some("ia")), Some(CAP)).await.unwrap());
        match j.reserve(entry("b", "9", Some("ib")), Some(CAP)).await.unwrap() {
            Reserved::OverCap { spent } => assert_eq!(spent, U256::from(12u8)),
            other => panic!("{other:?}"),
        }
        new(j.reserve(entry("b", "8", Some("ib")), Some(CAP)).await.unwrap());
        j.update(&a.id, EntryStatus::Failed, EntryUpdate::default()).await.unwrap();
        let total = j.spent_today(8453, "0xa", "0xUSDC", EntryKind::Swap.cap_group()).await.unwrap();
        assert_eq!(total, U256::from(8u8));
        // Another chain, another wallet or another asset is another counter.
        let mut other = entry("c", "20", Some("ic"));
        other.chain_id = 31337;
        new(j.reserve(other, Some(CAP)).await.unwrap());
        let mut other = entry("d", "20", Some("id"));
        other.from = "0xother".into();
        new(j.reserve(other, Some(CAP)).await.unwrap());
    }
}

#[tokio::test]
async fn an_intent_is_reserved_once_until_it_definitely_failed() {
    for (_backend, j) in journals().await {
        let first = new(j.reserve(entry("x", "1", Some("same")), Some(CAP)).await.unwrap());
        match j.reserve(entry("y", "1", Some("same")), Some(CAP)).await.unwrap() {
            Reserved::Existing(e) => assert_eq!(e.id, first.id),
            other => panic!("{other:?}"),
        }
        j.update(&first.id, EntryStatus::Failed, EntryUpdate::default()).await.unwrap();
        let again = new(j.reserve(entry("y", "1", Some("same")), Some(CAP)).await.unwrap());
        assert_ne!(again.id, first.id);
        // An unknown outcome keeps the reservation and the intent.
        j.mark_signed(&again.id, Some(1), "0x02", "0xh", None).await.unwrap();
        j.update(&again.id, EntryStatus::Unknown, EntryUpdate::default()).await.unwrap();
        assert!(matches!(j.reserve(entry("z", "1", Some("same")), Some(CAP)).await.unwrap(), Reserved::Existing(_)));
        assert_eq!(j.spent_today(8453, "0xa", "0xUSDC", EntryKind::Swap.cap_group()).await.unwrap(), U256::from(1u8));
    }
}

#[tokio::test]
async fn a_user_authorization_moves_value_by_itself_once_whoever_holds_the_session() {
    for (name, j) in journals().await {
        let with = |intent: &str, relied_on| NewEntry {
            authorization: Some(AuthorizationUse { id: "au_1".into(), relied_on }),
            ..entry(intent, "1", Some(intent))
        };
        new(j.reserve(with("a", true), Some(CAP)).await.unwrap());
        // Another intent that would run by itself on it is refused; its retry is still the same action.
        let refused = j.reserve(with("b", true), Some(CAP)).await.unwrap();
        assert!(
            matches!(&refused, Reserved::AuthorizationSpent { by } if by.intent() == Some("a")),
            "{name}: {refused:?}"
        );
        assert!(matches!(j.reserve(with("a", true), Some(CAP)).await.unwrap(), Reserved::Existing(_)), "{name}");
        // One the user confirmed goes in; one after the first definitely failed may run by itself again.
        new(j.reserve(with("c", false), Some(CAP)).await.unwrap());
        let first = j.live_by_intent("a").await.unwrap().unwrap();
        j.transition(&first.id, &[EntryStatus::Reserved], EntryStatus::Failed, EntryUpdate::default()).await.unwrap();
        let c = j.live_by_intent("c").await.unwrap().unwrap();
        j.transition(&c.id, &[EntryStatus::Reserved], EntryStatus::Failed, EntryUpdate::default()).await.unwrap();
        new(j.reserve(with("d", true), Some(CAP)).await.unwrap());
    }
}

#[tokio::test]
async fn concurrent_reservations_respect_the_cap() {
    for (_backend, j) in journals().await {
        let tasks: Vec<_> = (0..20)
            .map(|i| {
                let j = j.clone();
                tokio::spawn(
                    async move { j.reserve(entry(&format!("f{i}"), "3", Some(&format!("i{i}"))), Some(CAP)).await },
                )
            })
            .collect();
        let mut reserved = 0;
        for t in tasks {
            if matches!(t.await.unwrap().unwrap(), Reserved::New(_)) {
                reserved += 1;
            }
        }
        assert_eq!(reserved, 6, "20 / 3 = 6 reservations fit");
        assert_eq!(j.spent_today(8453, "0xa", "0xUSDC", EntryKind::Swap.cap_group()).await.unwrap(), U256::from(18u8));
    }
}

#[tokio::test]
async fn a_node_url_in_an_error_keeps_only_its_host() {
    for (_backend, j) in journals().await {
        let key = "v2/k3y-0123456789abcdef";
        let leaky =
            |what: &str| format!("{what}: error sending request for url (https://rpc.example.com/{key}?apikey=s3cret)");
        let first = NewEntry { error: Some(leaky("refused")), ..entry("fp-url", "1", None) };
        let e = new(j.reserve(first, Some(CAP)).await.unwrap());
        assert!(!e.error.as_deref().unwrap().contains(key));
        let update = EntryUpdate { error: Some(leaky("unknown")), ..Default::default() };
        assert!(j.transition(&e.id, &[EntryStatus::Reserved], EntryStatus::Unknown, update.clone()).await.unwrap());
        let stored = j.get(&e.id).await.unwrap().unwrap().error.unwrap();
        assert!(stored.starts_with("unknown") && stored.contains("https://rpc.example.com"), "{stored}");
        assert!(!stored.contains(key) && !stored.contains("s3cret"), "{stored}");
        j.update(&e.id, EntryStatus::Failed, update).await.unwrap();
        let stored = j.get(&e.id).await.unwrap().unwrap().error.unwrap();
        assert!(!stored.contains(key) && !stored.contains("s3cret"), "{stored}");
    }
}

#[tokio::test]
async fn a_kind_is_filtered_before_the_limit() {
    for (_backend, j) in journals().await {
        let payment = NewEntry { kind: EntryKind::Payment, ..entry("fp-pay", "1", None) };
        let paid = new(j.reserve(payment, None).await.unwrap());
        for i in 0..5 {
            j.reserve(entry(&format!("fp-swap-{i}"), "1", None), None).await.unwrap();
        }
        // Five newer swaps would push the payment out of "the 3 most recent", then filtered: it must still be listed.
        let payments = j.list(None, Some(EntryKind::Payment), 3).await.unwrap();
        assert_eq!(payments.iter().map(|e| e.id.as_str()).collect::<Vec<_>>(), [paid.id.as_str()]);
        assert_eq!(j.list(None, None, 3).await.unwrap().len(), 3);
        assert_eq!(j.list(Some("s"), Some(EntryKind::Swap), 3).await.unwrap().len(), 5, "a session's: all of them");
        assert!(j.list(Some("other"), None, 3).await.unwrap().is_empty());
    }
}

/// Two instances: two pools on one PostgreSQL database, as two `holdfast serve` processes have.
async fn two_instances() -> Option<(Journal, Journal)> {
    let url = holdfast_testkit::postgres::fresh_database().await?;
    let open = || async {
        let pg = holdfast_store::PgStore::connect(&url).await.unwrap();
        Journal::open_storage(&holdfast_store::Storage::Postgres(pg)).await.unwrap()
    };
    Some((open().await, open().await))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_instances_share_the_cap_and_each_intent() {
    let Some((a, b)) = two_instances().await else { return };
    let tasks: Vec<_> = (0..40)
        .map(|i| {
            let j = if i % 2 == 0 { a.clone() } else { b.clone() };
            // Every intent is tried twice, once on each instance.
            let intent = format!("i{}", i / 2);
            tokio::spawn(async move { j.reserve(entry(&format!("f{i}"), "3", Some(&intent)), Some(CAP)).await })
        })
        .collect();
    let (mut new, mut existing) = (0, 0);
    for t in tasks {
        match t.await.unwrap().unwrap() {
            Reserved::New(_) => new += 1,
            Reserved::Existing(_) => existing += 1,
            Reserved::OverCap { .. } | Reserved::AuthorizationSpent { .. } | Reserved::Undelivered { .. } => {}
        }
    }
    assert_eq!(new, 6, "20 / 3 = 6 reservations fit, whichever instance took them");
    let spent = b.spent_today(8453, "0xa", "0xUSDC", EntryKind::Swap.cap_group()).await.unwrap();
    assert_eq!(spent, U256::from(18u8));
    assert!(existing <= 6, "an intent's second try finds the first only when the first got in: {existing}");
    let live = a.unresolved().await.unwrap();
    let mut intents: Vec<_> = live.iter().filter_map(|e| e.intent()).collect();
    intents.sort_unstable();
    intents.dedup();
    assert_eq!(intents.len(), 6, "one live entry per intent across both instances");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_wallet_lock_excludes_the_other_instance_until_released() {
    let Some((a, b)) = two_instances().await else { return };
    let held = a.lock_wallet(8453, "0xA").await.unwrap();
    // The same wallet (whatever the address's case) waits on the other instance; another wallet does not.
    let waiting = tokio::spawn({
        let b = b.clone();
        async move { b.lock_wallet(8453, "0xa").await.map(|_| ()) }
    });
    b.lock_wallet(1, "0xa").await.unwrap();
    b.lock_wallet(8453, "0xb").await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert!(!waiting.is_finished(), "instance b took a's wallet lock while a held it");
    drop(held);
    tokio::time::timeout(std::time::Duration::from_secs(30), waiting).await.unwrap().unwrap().unwrap();
}

#[tokio::test]
async fn failed_sends_are_found_by_nonce_at_any_age() {
    for (backend, j) in journals().await {
        // Nonces 3..=6 signed and failed (6 on another chain), 4 still live, 5 failed before it was signed.
        for (i, chain_id) in [(3u64, 8453u64), (4, 8453), (5, 8453), (6, 1)] {
            let e = new(j.reserve(NewEntry { chain_id, ..entry(&format!("fp{i}"), "1", None) }, None).await.unwrap());
            if i != 5 {
                j.mark_signed(&e.id, Some(i), "0x02", &format!("0xh{i}"), None).await.unwrap();
            }
            if i != 4 {
                j.update(&e.id, EntryStatus::Failed, EntryUpdate::default()).await.unwrap();
            }
        }
        let nonces = |found: Vec<JournalEntry>| found.into_iter().map(|e| e.nonce).collect::<Vec<_>>();
        assert_eq!(nonces(j.failed_sends_at(8453, "0xa", 0..10).await.unwrap()), [Some(3)], "{backend}");
        assert!(j.failed_sends_at(8453, "0xa", 4..10).await.unwrap().is_empty(), "{backend}");
        assert!(j.failed_sends_at(8453, "0xb", 0..10).await.unwrap().is_empty(), "{backend}");
        assert_eq!(nonces(j.failed_sends_at(1, "0xa", 6..7).await.unwrap()), [Some(6)], "{backend}");
        // The range's first nonce is in it, its last one is not. (Age does not bound it: `evidence::…_for_days_…`.)
        assert_eq!(nonces(j.failed_sends_at(8453, "0xa", 3..4).await.unwrap()), [Some(3)], "{backend}");
        assert!(j.failed_sends_at(8453, "0xa", 0..3).await.unwrap().is_empty(), "{backend}");
    }
}

/// Payments to one payee or one server that delivered nothing are counted across sessions, in the reservation's
/// transaction: the third is refused until one is recorded delivered; another payee of another server, a failed
/// payment and an older one do not count, and a new payee named by the same server does.
#[tokio::test]
async fn undelivered_payments_to_a_payee_are_counted_across_sessions() {
    for (backend, j) in journals().await {
        let since = chrono::Utc::now() - chrono::Duration::seconds(60);
        let on = |server: &str| Some(Undelivered { max: 2, since, server: server.to_owned() });
        let limit = on("quotes.example:443");
        let payment = |fp: &str, session: &str, to: &str| NewEntry {
            kind: EntryKind::Payment,
            session_id: session.into(),
            to: to.into(),
            ..entry(fp, "1", None)
        };
        let first = new(j.reserve_counting(payment("p1", "s1", "0xpayee"), None, limit.clone()).await.unwrap());
        new(j.reserve_counting(payment("p2", "s2", "0xpayee"), None, limit.clone()).await.unwrap());
        match j.reserve_counting(payment("p3", "s3", "0xpayee"), None, limit.clone()).await.unwrap() {
            Reserved::Undelivered { ids } => assert_eq!(ids.len(), 2, "{backend}"),
            other => panic!("{backend}: expected a refusal, got {other:?}"),
        }
        new(j.reserve_counting(payment("p4", "s1", "0xother"), None, on("other.example:443")).await.unwrap());
        // The same server naming a payee never paid before: still its third.
        let renamed = j.reserve_counting(payment("p4b", "s4", "0xfresh"), None, limit.clone()).await.unwrap();
        assert!(matches!(renamed, Reserved::Undelivered { .. }), "{backend}: {renamed:?}");
        // Counted from `since` on: a window that starts now counts none of them.
        let later = Some(Undelivered { max: 2, since: chrono::Utc::now(), server: "quotes.example:443".to_owned() });
        new(j.reserve_counting(payment("p5", "s1", "0xpayee"), None, later).await.unwrap());
        j.delivered(&first.id).await.unwrap();
        j.delivered(&first.id).await.unwrap();
        // p2 and p5 are undelivered now: still two.
        let refused = j.reserve_counting(payment("p6", "s1", "0xpayee"), None, limit.clone()).await.unwrap();
        assert!(matches!(refused, Reserved::Undelivered { .. }), "{backend}: {refused:?}");
        // A payment that failed before it was signed moved nothing: it does not count.
        let p5 = j.list(None, Some(EntryKind::Payment), 10).await.unwrap().into_iter().find(|e| e.fingerprint == "p5");
        j.update(&p5.unwrap().id, EntryStatus::Failed, EntryUpdate::default()).await.unwrap();
        new(j.reserve_counting(payment("p7", "s1", "0xpayee"), None, limit.clone()).await.unwrap());
    }
}

use super::*;

const NOW: &str = "2026-11-26T00:00:00.000Z";

fn message(sender: &str, recipients: &[&str]) -> NewMessage {
    NewMessage {
        sender: sender.into(),
        target_type: "group".into(),
        target_id: Some("team".into()),
        content: format!("from {sender}"),
        created_at: NOW.into(),
        recipients: recipients.iter().map(|r| (*r).to_owned()).collect(),
        via: "group:team".into(),
        ..NewMessage::default()
    }
}

type Left = fn(&str) -> Option<Duration>;

/// A minute's window from [`NOW`]; a stored end after now is open for the rest of that minute.
fn minute() -> Option<Windows<Left>> {
    Some(Windows {
        now: NOW.into(),
        until: "2026-11-26T00:01:00.000Z".into(),
        left: |until| (until > NOW).then_some(Duration::from_secs(60)),
    })
}

fn store_all(_: &[String], _: &[(String, Duration)]) -> AfterWindows<&'static str> {
    AfterWindows::Store
}

fn reminder(agent: &str) -> NewReminder {
    NewReminder {
        agent_id: agent.into(),
        due_at: NOW.into(),
        message: "stretch".into(),
        target_type: "agent".into(),
        target_id: Some(agent.into()),
        created_at: NOW.into(),
        ..NewReminder::default()
    }
}

fn written<R: std::fmt::Debug>(sent: Sent<R>) -> Written {
    match sent {
        Sent::Written(w) => w,
        other => panic!("not written: {other:?}"),
    }
}

/// The tables on each backend: SQLite in memory, and a fresh PostgreSQL database when the test server is there.
async fn tables() -> Vec<MessageTable> {
    let mut all = vec![MessageTable::open(&Storage::Sqlite(SqliteDb::memory().unwrap())).await.unwrap()];
    if let Some(url) = holdfast_testkit::postgres::fresh_database().await {
        let pg = PgStore::connect(&url).await.unwrap();
        all.push(MessageTable::open(&Storage::Postgres(pg)).await.unwrap());
    }
    all
}

#[tokio::test]
async fn a_send_writes_its_inbox_and_outbox_rows_and_an_inbox_is_taken_in_order() {
    for table in tables().await {
        let kind = table.dialect();
        let first = written(table.send(message("alice", &["bob", "carol"]), minute(), store_all).await.unwrap());
        assert_eq!((first.delivered.as_slice(), first.skipped.len()), (&["bob".to_owned(), "carol".into()][..], 0));
        let to_user = NewMessage { outbox: true, target_type: "user".into(), ..message("alice", &[]) };
        let second = written(table.send(to_user, None::<Windows<Left>>, store_all).await.unwrap());
        let out = table.outbox("alice", 10).await.unwrap();
        assert_eq!(out.iter().map(|o| o.message_id).collect::<Vec<_>>(), [second.id], "{kind}");
        assert_eq!(out[0].user_id.as_deref(), Some("team"), "{kind}");

        assert_eq!(table.inbox_pending("bob").await.unwrap().len(), 1, "{kind}");
        let took = table.inbox_take("bob", NOW).await.unwrap().unwrap();
        assert_eq!((took.message_id, took.via.as_str(), took.sender.as_str()), (first.id, "group:team", "alice"));
        assert_eq!(table.inbox_take("bob", NOW).await.unwrap(), None, "{kind}: taken once");
        let carol = table.inbox_first("carol").await.unwrap().unwrap();
        table.inbox_ack("carol", carol.inbox_id, NOW).await.unwrap();
        assert!(table.inbox_pending("carol").await.unwrap().is_empty(), "{kind}");
    }
}

#[tokio::test]
async fn an_open_window_skips_its_recipient_and_a_refusal_keeps_nothing_it_reserved() {
    for table in tables().await {
        let kind = table.dialect();
        written(table.send(message("alice", &["bob"]), minute(), store_all).await.unwrap());
        // bob's window is open; carol's would be taken, but the decision refuses: carol's stays free.
        let refused = table
            .send(message("alice", &["bob", "carol"]), minute(), |delivered, skipped| {
                assert_eq!(delivered, ["carol".to_owned()]);
                assert_eq!(skipped, [("bob".to_owned(), Duration::from_secs(60))]);
                AfterWindows::Refuse("no")
            })
            .await
            .unwrap();
        assert_eq!(refused, Sent::Refused("no"), "{kind}");
        assert!(table.inbox_pending("carol").await.unwrap().is_empty(), "{kind}");
        let again = written(table.send(message("alice", &["carol", "bob"]), minute(), store_all).await.unwrap());
        assert_eq!(again.delivered, ["carol".to_owned()], "{kind}");
        assert_eq!(again.skipped.len(), 1, "{kind}");
        // A window that has ended is taken again.
        let later: Windows<Left> = Windows {
            now: "2026-11-26T00:02:00.000Z".into(),
            until: "2026-11-26T00:03:00.000Z".into(),
            left: |until| (until > "2026-11-26T00:02:00.000Z").then_some(Duration::from_secs(60)),
        };
        let after = written(table.send(message("alice", &["bob"]), Some(later), store_all).await.unwrap());
        assert_eq!(after.delivered, ["bob".to_owned()], "{kind}");
    }
}

#[tokio::test]
async fn a_reminder_fires_once_and_a_deferral_keeps_only_the_wait() {
    for table in tables().await {
        let kind = table.dialect();
        let Added::Inserted(id) = table.add_reminder(reminder("alice"), |_| None::<()>).await.unwrap() else {
            panic!("{kind}")
        };
        written(table.send(message("alice", &["bob"]), minute(), store_all).await.unwrap());
        let fires = NewMessage { fires: Some((id, NOW.into())), ..message("alice", &["bob"]) };
        let deferred = table
            .send(fires.clone(), minute(), |_, _| AfterWindows::Defer {
                not_before: "2026-11-26T00:01:00.000Z".into(),
                refusal: "wait",
            })
            .await
            .unwrap();
        assert_eq!(deferred, Sent::Refused("wait"), "{kind}");
        assert!(table.due_reminders(NOW, None).await.unwrap().is_empty(), "{kind}: not before its window ends");
        assert_eq!(table.next_due(None).await.unwrap().as_deref(), Some("2026-11-26T00:01:00.000Z"), "{kind}");
        let due = table.due_reminders("2026-11-26T00:01:00.000Z", Some(&["alice".into()])).await.unwrap();
        assert_eq!(due.iter().map(|r| r.id).collect::<Vec<_>>(), [id], "{kind}");
        assert_eq!(table.inbox_pending("bob").await.unwrap().len(), 1, "{kind}: the deferred send wrote nothing");

        let fired = table.send(fires.clone(), None::<Windows<Left>>, store_all).await.unwrap();
        assert!(matches!(fired, Sent::Written(_)), "{kind}");
        assert_eq!(table.send(fires, None::<Windows<Left>>, store_all).await.unwrap(), Sent::AlreadyFired, "{kind}");
        let all = table.reminders("alice", true).await.unwrap();
        assert_eq!(all[0].fired_at.as_deref(), Some(NOW), "{kind}");
        assert!(table.reminders("alice", false).await.unwrap().is_empty(), "{kind}");
    }
}

#[tokio::test]
async fn a_reminder_keeps_who_started_the_turn_that_scheduled_it() {
    for table in tables().await {
        let kind = table.dialect();
        let asked = NewReminder { asked_by: Some("agent 'mallory'".into()), ..reminder("alice") };
        table.add_reminder(asked, |_| None::<()>).await.unwrap();
        table.add_reminder(reminder("alice"), |_| None::<()>).await.unwrap();
        let kept: Vec<_> = table.due_reminders(NOW, None).await.unwrap().into_iter().map(|r| r.asked_by).collect();
        assert_eq!(kept, [Some("agent 'mallory'".to_owned()), None], "{kind}");
    }
}

#[tokio::test]
async fn the_pending_count_is_what_the_decision_sees_and_other_agents_reminders_are_named_by_value() {
    for table in tables().await {
        let kind = table.dialect();
        let cap = |pending: u64| (pending >= 2).then_some(pending);
        assert!(matches!(table.add_reminder(reminder("alice"), cap).await.unwrap(), Added::Inserted(_)));
        let second = table.add_reminder(reminder("alice"), cap).await.unwrap();
        assert_eq!(table.add_reminder(reminder("alice"), cap).await.unwrap(), Added::Refused(2), "{kind}");
        table.add_reminder(reminder("o'brien"), cap).await.unwrap();
        let keep = ["alice".to_owned()];
        assert_eq!(table.count_reminders_of_others(&keep).await.unwrap(), 1, "{kind}");
        assert_eq!(table.count_reminders_of_others(&[]).await.unwrap(), 3, "{kind}");
        assert_eq!(table.cancel_reminders_of_others(&keep).await.unwrap(), 1, "{kind}");
        let Added::Inserted(second) = second else { panic!("{kind}") };
        assert!(table.cancel_reminder("alice", second).await.unwrap(), "{kind}");
        assert!(!table.cancel_reminder("alice", second).await.unwrap(), "{kind}: once");
        assert!(table.due_reminders(NOW, Some(&[])).await.unwrap().is_empty(), "{kind}: no agent, no reminder");
    }
}

#[tokio::test]
async fn the_directory_keeps_agents_groups_and_channels() {
    for table in tables().await {
        let kind = table.dialect();
        table.register_agent("bob", NOW).await.unwrap();
        table.register_agent("alice", NOW).await.unwrap();
        table.register_agent("alice", NOW).await.unwrap();
        assert_eq!(table.agents().await.unwrap(), ["alice", "bob"], "{kind}");
        assert!(table.agent_known("bob").await.unwrap() && !table.agent_known("eve").await.unwrap(), "{kind}");
        table.define_group("team", &["bob".into(), "alice".into()]).await.unwrap();
        table.define_group("team", &["bob".into()]).await.unwrap();
        assert_eq!(table.group_members("team").await.unwrap(), ["bob"], "{kind}: redefined");
        assert_eq!(table.group_pairs().await.unwrap(), [("team".to_owned(), "bob".to_owned())], "{kind}");
        assert!(!table.subscribe("news", "bob").await.unwrap(), "{kind}: no such channel");
        table.define_channel("news", Some("https://example.com/hook")).await.unwrap();
        assert!(table.subscribe("news", "bob").await.unwrap() && table.subscribe("news", "bob").await.unwrap());
        let news = table.channel("news").await.unwrap().unwrap();
        assert_eq!(
            (news.webhook_url.as_deref(), news.subscribers.as_slice()),
            (Some("https://example.com/hook"), &["bob".to_owned()][..])
        );
        table.unsubscribe("news", "bob").await.unwrap();
        assert!(table.channel("news").await.unwrap().unwrap().subscribers.is_empty(), "{kind}");
        assert_eq!(table.channels().await.unwrap(), ["news"], "{kind}");
        assert_eq!(table.channel("old").await.unwrap(), None, "{kind}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_instance_at_a_time_holds_an_inbox() {
    let Some(url) = holdfast_testkit::postgres::fresh_database().await else { return };
    let a = MessageTable::on_postgres(PgStore::connect(&url).await.unwrap()).await.unwrap();
    let b = MessageTable::on_postgres(PgStore::connect(&url).await.unwrap()).await.unwrap();
    let mut held = a.hold_inbox("bob", Duration::from_secs(1)).await.unwrap().unwrap();
    assert!(held.still_held().await && !held.previous_may_run());
    assert!(b.hold_inbox("bob", Duration::from_millis(200)).await.unwrap().is_none(), "held by a");
    drop(held);
    let mut taken = b.hold_inbox("bob", Duration::from_secs(5)).await.unwrap().unwrap();
    assert!(taken.previous_may_run(), "a let go without saying so");
    taken.release().await;
    let next = a.hold_inbox("bob", Duration::from_secs(5)).await.unwrap().unwrap();
    assert!(!next.previous_may_run(), "b let go cleanly");
    let sqlite = MessageTable::on_sqlite(&SqliteDb::memory().unwrap()).unwrap();
    assert!(sqlite.hold_inbox("bob", Duration::ZERO).await.unwrap().is_some(), "one process owns the file");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_send_on_one_instance_wakes_the_others_readers() {
    let Some(url) = holdfast_testkit::postgres::fresh_database().await else { return };
    let a = MessageTable::on_postgres(PgStore::connect(&url).await.unwrap()).await.unwrap();
    let b = MessageTable::on_postgres(PgStore::connect(&url).await.unwrap()).await.unwrap();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let wake: InboxWake = Arc::new(move |agent: Option<&str>| drop(tx.send(agent.map(str::to_owned))));
    b.watch_inboxes(&wake).unwrap();
    assert_eq!(rx.recv().await, Some(None), "listening: every reader looks once");
    written(a.send(message("alice", &["bob"]), None::<Windows<Left>>, store_all).await.unwrap());
    let woken = tokio::time::timeout(Duration::from_secs(10), rx.recv()).await.unwrap();
    assert_eq!(woken, Some(Some("bob".to_owned())));
}

#[tokio::test]
async fn a_files_messages_move_to_postgres_once_with_their_ids() {
    let Some(url) = holdfast_testkit::postgres::fresh_database().await else { return };
    let file = SqliteDb::memory().unwrap();
    let local = MessageTable::on_sqlite(&file).unwrap();
    assert!(local.adopt(&file).await.is_err(), "only PostgreSQL adopts");
    let shared = MessageTable::on_postgres(PgStore::connect(&url).await.unwrap()).await.unwrap();
    assert_eq!(shared.adopt(&file).await.unwrap(), Adopted::Nothing);

    let nul = NewMessage { content: "a\0b".into(), ..message("alice", &["bob"]) };
    let sent = written(local.send(nul, minute(), store_all).await.unwrap());
    let asked = NewReminder { asked_by: Some("agent 'mallory'".into()), ..reminder("alice") };
    local.add_reminder(asked, |_| None::<()>).await.unwrap();
    assert_eq!(shared.adopt(&file).await.unwrap(), Adopted::Copied { rows: 2 });
    let reminders = shared.reminders("alice", false).await.unwrap();
    assert_eq!(reminders[0].asked_by.as_deref(), Some("agent 'mallory'"), "who asked came along");
    assert_eq!(shared.adopt(&file).await.unwrap(), Adopted::AlreadyShared { waiting: 2 }, "once");
    let inbox = shared.inbox_pending("bob").await.unwrap();
    assert_eq!((inbox[0].message_id, inbox[0].content.as_str()), (sent.id, "a\u{FFFD}b"));
    let skipped = written(shared.send(message("alice", &["bob"]), minute(), store_all).await.unwrap());
    assert!(skipped.id > sent.id && skipped.delivered.is_empty(), "new ids follow; the window came along");
}

use super::*;

fn row(id: &str, intent: &str, amount: &str) -> NewRow {
    NewRow {
        id: id.into(),
        session_id: "s".into(),
        kind: "swap".into(),
        chain_id: 1,
        from: "0xA".into(),
        asset: "0xT".into(),
        amount: amount.into(),
        fingerprint: format!("fp-{id}"),
        intent: Some(intent.into()),
        status: "reserved".into(),
        summary: "{}".into(),
        now: "2026-11-26T00:00:00Z".into(),
        day: "2026-11-26".into(),
        ..NewRow::default()
    }
}

/// The table on each backend: SQLite in memory, and a fresh PostgreSQL database when the test server is there.
async fn tables() -> Vec<JournalTable> {
    let mut all = vec![JournalTable::open(&Storage::Sqlite(crate::SqliteDb::memory().unwrap())).await.unwrap()];
    if let Some(url) = holdfast_testkit::postgres::fresh_database().await {
        let pg = crate::PgStore::connect(&url).await.unwrap();
        all.push(JournalTable::open(&Storage::Postgres(pg)).await.unwrap());
    }
    all
}

/// A wallet's lock on PostgreSQL is lost with its connection (a server restart ends every backend): the lock says
/// so, and the kernel then signs nothing on the nonce it chose under it. On SQLite the lock is the process's own.
#[tokio::test]
async fn a_wallet_lock_whose_connection_ended_says_it_is_lost() {
    for table in tables().await {
        for id in ["j_a", "j_b"] {
            let row = NewRow { id: id.into(), amount: "5".into(), status: "reserved".into(), ..NewRow::default() };
            table.reserve(row, &["swap"], |_| Ok(None::<()>)).await.unwrap();
        }
        let mut lock = table.lock_wallet(1, "0xA").await.unwrap();
        assert!(lock.is_held().await);
        let signed = ("0x02", "0xh");
        let marked = table.mark_signed_holding(&mut lock, "j_a", Some(1), signed, None, "2026-11-28T00:00:00Z").await;
        assert_eq!(marked.unwrap(), 1, "written while held");
        if let JournalTable::Postgres(p) = &table {
            let killed: Vec<bool> = sqlx::query_scalar(
                "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND pid <> pg_backend_pid()
                 AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
            )
            .fetch_all(p.store.pool())
            .await
            .unwrap();
            assert!(killed.iter().any(|k| *k), "the lock's backend was ended");
            // The signed bytes are not journaled on a lost lock: another instance may hold it and choose the nonce.
            let lost = table.mark_signed_holding(&mut lock, "j_b", Some(2), signed, None, "2026-11-28T00:00:01Z").await;
            assert!(lost.is_err(), "{lost:?}");
            let row = table.select(Select::Id("j_b".into())).await.unwrap();
            assert_eq!(row[0].status, "reserved");
            assert!(!lock.is_held().await, "lost with its connection");
        }
    }
}

#[tokio::test]
async fn an_intent_whose_entry_was_dropped_may_be_reserved_again() {
    for table in tables().await {
        let rows =
            [("j_dropped", "dropped"), ("j_reset", "chain_reset"), ("j_reverted", "reverted"), ("j_again", "reserved")];
        for (id, status) in rows {
            let row = NewRow {
                id: id.into(),
                amount: "5".into(),
                status: status.into(),
                intent: Some("intent-1".into()),
                ..NewRow::default()
            };
            // Before: the second row hit the unique index of intents, an error at every retry.
            assert!(matches!(table.reserve(row, &["swap"], |_| Ok(None::<()>)).await.unwrap(), Reserved::Inserted));
        }
    }
    // The index counts exactly the rows that count: its statuses are LIVE's, in both dialects.
    for sql in [
        include_str!("../../migrations/sqlite/journal/0005_intent_released.sql"),
        include_str!("../../migrations/postgres/journal/0005_intent_released.sql"),
    ] {
        let index = sql.split("status IN (").nth(1).and_then(|s| s.split(')').next()).unwrap();
        let statuses: Vec<&str> = index.split(',').map(|s| s.trim().trim_matches('\'')).collect();
        assert_eq!(statuses, LIVE, "{sql}");
    }
}

#[tokio::test]
async fn a_refusal_or_an_error_of_the_decision_writes_nothing_and_an_allowance_inserts() {
    for table in tables().await {
        let refused = table.reserve(row("j1", "i1", "5"), &["swap"], |_| Ok(Some("no"))).await.unwrap();
        assert_eq!(refused, Reserved::Refused("no"));
        let failed = table.reserve(row("j1", "i1", "5"), &["swap"], |_| Err::<Option<()>, _>("bad".into())).await;
        assert!(failed.unwrap_err().to_string().contains("bad"));
        assert!(table.select(Select::Id("j1".into())).await.unwrap().is_empty());

        let done = table.reserve(row("j1", "i1", "5"), &["swap"], |_| Ok(None::<()>)).await.unwrap();
        assert_eq!(done, Reserved::Inserted);
        // The second reservation of the same intent is shown the first, and what the day's rows hold.
        let seen = table
            .reserve(row("j2", "i1", "7"), &["swap"], |found| Ok(Some((found.same_action.map(|r| r.id), found.spent))))
            .await
            .unwrap();
        assert_eq!(seen, Reserved::Refused((Some("j1".to_owned()), vec!["5".to_owned()])));
    }
}

#[tokio::test]
async fn concurrent_reservations_of_one_wallet_each_see_the_others_rows() {
    for table in tables().await {
        let table = std::sync::Arc::new(table);
        let mut tasks = Vec::new();
        for i in 0..16 {
            let table = std::sync::Arc::clone(&table);
            tasks.push(tokio::spawn(async move {
                // A cap of 3 rows of 1: the decision sees every row committed before it.
                table
                    .reserve(row(&format!("j{i}"), &format!("i{i}"), "1"), &["swap"], |found| {
                        Ok((found.spent.len() >= 3).then_some(()))
                    })
                    .await
                    .unwrap()
            }));
        }
        let mut inserted = 0;
        for t in tasks {
            if t.await.unwrap() == Reserved::Inserted {
                inserted += 1;
            }
        }
        assert_eq!(inserted, 3);
        assert_eq!(
            table.spent(1, "0xA", "0xT", &["swap", "transfer"], SpentWindow::Day("2026-11-26")).await.unwrap().len(),
            3
        );
    }
}

/// A kind or status the caller names is a bound value, never SQL: not with a quote, and not with a backslash on a
/// PostgreSQL database where backslashes escape in string literals (`standard_conforming_strings = off`).
#[tokio::test]
async fn a_callers_kind_or_status_is_a_value_not_sql() {
    let mut all = tables().await;
    if let Some(url) = holdfast_testkit::postgres::fresh_database().await {
        let pg = crate::PgStore::connect(&url).await.unwrap();
        sqlx::query(
            "DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET standard_conforming_strings = off', \
                     current_database()); END $$",
        )
        .execute(pg.pool())
        .await
        .unwrap();
        // New connections have the setting.
        all.push(JournalTable::open(&Storage::Postgres(crate::PgStore::connect(&url).await.unwrap())).await.unwrap());
    }
    for table in all {
        table.insert(row("j1", "i1", "5")).await.unwrap();
        for kinds in [&["swap') OR ('1'='1"][..], &["x\\", ") OR 1=1 --"][..]] {
            assert!(
                table.spent(1, "0xA", "0xT", kinds, SpentWindow::Day("2026-11-26")).await.unwrap().is_empty(),
                "{kinds:?}"
            );
            let moved = table.set_status("j1", Some(kinds), "failed", Settled::default(), "2026-11-26T00:00:01Z");
            assert_eq!(moved.await.unwrap(), 0, "{kinds:?}");
        }
        assert_eq!(
            table.spent(1, "0xA", "0xT", &["swap"], SpentWindow::Day("2026-11-26")).await.unwrap(),
            vec!["5".to_owned()]
        );
        assert!(
            table.spent(1, "0xA", "0xT", &["swap"], SpentWindow::Day("2026-11-27")).await.unwrap().is_empty(),
            "another day"
        );
        let since_first_fund = || table.spent(1, "0xA", "0xT", &["swap", "fund"], SpentWindow::SinceFirst("fund"));
        assert!(since_first_fund().await.unwrap().is_empty(), "no fund yet: nothing");
        // A fund the day before that failed moved nothing: it opens no window (the swap j1 after it stays out).
        let failed = NewRow {
            kind: "fund".into(),
            status: "failed".into(),
            now: "2026-11-25T00:00:00Z".into(),
            day: "2026-11-25".into(),
            ..row("j0", "i0", "7")
        };
        table.insert(failed).await.unwrap();
        assert!(since_first_fund().await.unwrap().is_empty(), "no fund that counts yet: nothing");
        let fund = NewRow { kind: "fund".into(), now: "2026-11-26T00:00:01Z".into(), ..row("j2", "i2", "3") };
        table.insert(fund).await.unwrap();
        let later = NewRow { now: "2026-11-27T09:00:00Z".into(), day: "2026-11-27".into(), ..row("j3", "i3", "2") };
        table.insert(later).await.unwrap();
        let mut since = since_first_fund().await.unwrap();
        since.sort();
        assert_eq!(since, ["2", "3"], "the fund and the swap after it, on any day; not the swap before it");
    }
}

/// Reservations that rely on one user authorization exclude each other even from different wallets and chains
/// (whose reservations the wallet's lock does not serialize): the second decision sees the first's row. Each decision
/// waits (up to half a second) for the other to be deciding too: where nothing excludes them, both decide on a
/// table without the other's row.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reservations_relying_on_one_authorization_see_each_other_across_wallets() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    for table in tables().await {
        let table = std::sync::Arc::new(table);
        let deciding = std::sync::Arc::new(AtomicUsize::new(0));
        let mut tasks = Vec::new();
        for i in 0..2u64 {
            let (table, deciding) = (std::sync::Arc::clone(&table), std::sync::Arc::clone(&deciding));
            let new = NewRow {
                chain_id: 1 + i,
                from: format!("0xW{i}"),
                authorization: Some("au_1".into()),
                relies_on_authorization: true,
                ..row(&format!("j{i}"), &format!("i{i}"), "1")
            };
            tasks.push(tokio::spawn(async move {
                let decide = move |found: Found| {
                    deciding.fetch_add(1, Ordering::SeqCst);
                    let until = std::time::Instant::now() + std::time::Duration::from_millis(500);
                    // Waiting off the runtime's worker, whose other tasks (the other reservation) then run.
                    tokio::task::block_in_place(|| {
                        while deciding.load(Ordering::SeqCst) < 2 && std::time::Instant::now() < until {
                            std::thread::sleep(std::time::Duration::from_millis(5));
                        }
                    });
                    Ok(found.authorization_holder.map(|_| ()))
                };
                table.reserve(new, &[], decide).await.unwrap()
            }));
        }
        let mut inserted = 0;
        for t in tasks {
            if t.await.unwrap() == Reserved::Inserted {
                inserted += 1;
            }
        }
        assert_eq!(inserted, 1, "{}: one action spends the authorization", table.is_persistent());
    }
}

#[tokio::test]
async fn a_transition_moves_a_row_only_from_the_statuses_it_names() {
    for table in tables().await {
        table.insert(row("j1", "i1", "5")).await.unwrap();
        let now = "2026-11-26T00:00:01Z";
        assert_eq!(table.set_status("j1", Some(&["pending"]), "confirmed", Settled::default(), now).await.unwrap(), 0);
        assert_eq!(table.mark_signed("j1", Some(4), "0x02", "0xh", None, now).await.unwrap(), 1);
        assert_eq!(table.mark_signed("j1", Some(4), "0x02", "0xh", None, now).await.unwrap(), 0);
        assert_eq!(table.highest_nonce_taken(1, "0xA").await.unwrap(), Some(4));
        let settled = Settled { block_number: Some(9), ..Settled::default() };
        assert_eq!(table.set_status("j1", Some(&["signed"]), "confirmed", settled, now).await.unwrap(), 1);
        let got = table.select(Select::Id("j1".into())).await.unwrap().remove(0);
        assert_eq!(
            (got.status.as_str(), got.block_number, got.tx_hash.as_deref()),
            ("confirmed", Some(9), Some("0xh"))
        );
    }
}

#[tokio::test]
async fn a_file_older_than_intents_is_migrated_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(crate::DB_FILE);
    {
        let c = rusqlite::Connection::open(&path).unwrap();
        c.execute_batch(
            "CREATE TABLE journal (id TEXT PRIMARY KEY, session_id TEXT NOT NULL, kind TEXT NOT NULL, network TEXT NOT NULL,
             chain_id INTEGER NOT NULL, from_address TEXT NOT NULL, to_address TEXT NOT NULL, nonce INTEGER, value TEXT NOT NULL,
             asset TEXT NOT NULL, asset_symbol TEXT NOT NULL, amount TEXT NOT NULL, fingerprint TEXT NOT NULL, raw_tx TEXT,
             tx_hash TEXT, status TEXT NOT NULL, block_number INTEGER, gas_used TEXT, error TEXT, summary TEXT NOT NULL,
             day TEXT NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL);
             INSERT INTO journal VALUES ('j_old','s','swap','base',8453,'0xa','0xb',1,'0','0xUSDC','USDC','4','fp',NULL,
             '0xh','confirmed',NULL,NULL,NULL,'{}','2020-01-01','2020-01-01T00:00:00Z','2020-01-01T00:00:00Z');",
        )
        .unwrap();
    }
    let table = JournalTable::on_sqlite(&crate::SqliteDb::open(&path).unwrap()).unwrap();
    let old = table.select(Select::Id("j_old".into())).await.unwrap().remove(0);
    assert_eq!((old.status.as_str(), old.intent, old.amount.as_str()), ("confirmed", None, "4"));
    assert_eq!(table.reserve(row("n", "i", "1"), &["swap"], |_| Ok(None::<()>)).await.unwrap(), Reserved::Inserted);
}

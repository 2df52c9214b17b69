use super::*;

/// The tables on each backend: SQLite in memory, and a fresh PostgreSQL database when the test server is there.
async fn tables() -> Vec<MemoryTable> {
    let mut all = vec![MemoryTable::on_sqlite(&SqliteDb::memory().unwrap()).unwrap()];
    if let Some(url) = holdfast_testkit::postgres::fresh_database().await {
        all.push(MemoryTable::on_postgres(crate::PgStore::connect(&url).await.unwrap()).await.unwrap());
    }
    all
}

fn write(value: &str, at: &str) -> BlockWrite {
    BlockWrite {
        block: BlockRow {
            label: "ignored: the label is the edit's".into(),
            value: value.into(),
            permission: "read_write".into(),
            char_limit: 100,
            created_at: "2026-11-26T00:00:00.000000Z".into(),
            updated_at: at.into(),
            ..BlockRow::default()
        },
        actor: "user".into(),
        op: "replace".into(),
    }
}

async fn set(table: &MemoryTable, label: &str, value: &str, at: &str) {
    let w = write(value, at);
    table.modify("a", label, move |_| Ok::<_, StoreError>((Some(w), ()))).await.unwrap();
}

#[tokio::test]
async fn an_edit_writes_the_block_and_one_history_row_or_nothing() {
    for table in tables().await {
        // No write, and an error: nothing stored.
        table.modify("a", "notes", |_| Ok::<_, StoreError>((None, ()))).await.unwrap();
        let failed =
            table.modify("a", "notes", |_| Err::<(Option<BlockWrite>, ()), _>(StoreError::Config("no".into())));
        assert!(failed.await.is_err());
        assert_eq!(table.get("a", "notes").await.unwrap(), None);

        set(&table, "notes", "first", "2026-11-26T00:00:01.000000Z").await;
        let seen = table.modify("a", "notes", |before| Ok::<_, StoreError>((None, before.map(|b| b.value)))).await;
        assert_eq!(seen.unwrap().as_deref(), Some("first"));
        set(&table, "notes", "second", "2026-11-26T00:00:02.000000Z").await;
        let block = table.get("a", "notes").await.unwrap().unwrap();
        assert_eq!((block.label.as_str(), block.value.as_str()), ("notes", "second"));
        let history = table.history("a", "notes", 10).await.unwrap();
        let steps: Vec<_> = history.iter().map(|e| (e.old.as_deref(), e.new.as_str())).collect();
        assert_eq!(steps, vec![(Some("first"), "second"), (None, "first")]);
        assert!(table.get("b", "notes").await.unwrap().is_none(), "another agent's");
    }
}

#[tokio::test]
async fn a_block_keeps_who_started_the_turn_of_its_last_write() {
    for table in tables().await {
        let mut w = write("pay preset P first", "2026-11-26T00:00:01.000000Z");
        w.block.written_by = Some("agent 'mallory'".into());
        table.modify("a", "habits", move |_| Ok::<_, StoreError>((Some(w), ()))).await.unwrap();
        let block = table.get("a", "habits").await.unwrap().unwrap();
        assert_eq!(block.written_by.as_deref(), Some("agent 'mallory'"));
        set(&table, "habits", "nothing standing", "2026-11-26T00:00:02.000000Z").await;
        assert_eq!(table.list("a").await.unwrap()[0].written_by, None, "the user's write clears it");
    }
}

#[tokio::test]
async fn concurrent_edits_of_one_block_each_see_the_last() {
    for table in tables().await {
        set(&table, "count", "0", "2026-11-26T00:00:00.000000Z").await;
        let mut tasks = Vec::new();
        for _ in 0..12 {
            let table = table.clone();
            tasks.push(tokio::spawn(async move {
                table
                    .modify("a", "count", |before| {
                        let n: u32 = before.map_or(0, |b| b.value.parse().unwrap());
                        Ok::<_, StoreError>((Some(write(&(n + 1).to_string(), "2026-11-26T00:00:01.000000Z")), ()))
                    })
                    .await
                    .unwrap()
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        assert_eq!(table.get("a", "count").await.unwrap().unwrap().value, "12");
    }
}

#[tokio::test]
async fn search_finds_current_values_and_earlier_ones_of_other_blocks() {
    for table in tables().await {
        set(&table, "wallet", "the treasury address is on base", "2026-11-26T00:00:01.000000Z").await;
        set(&table, "plan", "swap to treasury weekly", "2026-11-26T00:00:01.000000Z").await;
        set(&table, "plan", "hold", "2026-11-26T00:00:02.000000Z").await;
        let hits = table.search("a", &["treasury".to_owned()], 10).await.unwrap();
        let values: Vec<_> = hits.values.iter().map(|h| h.label.as_str()).collect();
        let history: Vec<_> = hits.history.iter().map(|h| h.label.as_str()).collect();
        assert_eq!((values, history), (vec!["wallet"], vec!["plan"]), "{}", table.kind());
        assert!(hits.values[0].snippet.contains("[treasury]"), "{:?}", hits.values[0]);
        // A term is a word, never an operator or a syntax error.
        for odd in ["treasury\" OR \"x", "x\\", "it's", "a & b | !c", "\\'"] {
            assert!(table.search("a", &[odd.to_owned()], 10).await.is_ok(), "{odd:?} on {}", table.kind());
        }
        assert_eq!(table.search("a", &[], 10).await.unwrap(), Hits::default());
    }
}

#[tokio::test]
async fn a_deleted_block_takes_its_embeddings_and_keeps_its_history() {
    for table in tables().await {
        set(&table, "notes", "x", "2026-11-26T00:00:01.000000Z").await;
        let e = EmbeddingRow { label: "notes".into(), content_hash: "h".into(), vector: vec![0.5, -1.25, 3.0e-7] };
        table.store_embedding("a", "m", e.clone()).await.unwrap();
        assert_eq!(table.embeddings("a", "m").await.unwrap(), vec![e]);
        assert!(table.delete("a", "notes").await.unwrap());
        assert!(!table.delete("a", "notes").await.unwrap());
        assert!(table.embeddings("a", "m").await.unwrap().is_empty());
        assert_eq!(table.history("a", "notes", 10).await.unwrap().len(), 1);
    }
}

/// Turns FTS5's own merging of the values index off, so that each edit leaves one segment and the count is exact.
fn fts_merging_off(db: &SqliteDb) {
    db.lock()
        .execute_batch(
            "INSERT INTO memory_fts_values (memory_fts_values, rank) VALUES ('automerge', 0);
             INSERT INTO memory_fts_values (memory_fts_values, rank) VALUES ('crisismerge', 1000);",
        )
        .unwrap();
}

/// The values index's segments.
fn segments(db: &SqliteDb) -> i64 {
    let sql = "SELECT count(DISTINCT segid) FROM memory_fts_values_idx";
    db.read_blocking(|c| c.query_row(sql, [], |r| r.get(0))).unwrap()
}

/// FTS5 writes each edit as a segment of its own (its own merging turned off here, so that the count is exact; on, it
/// still leaves about a dozen for 100,000 blocks). Once the index has taken enough writes, a background merge leaves
/// one segment, and a search finds what it found before, with the block written last.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_full_text_index_is_merged_in_the_background_as_it_grows() {
    let dir = tempfile::tempdir().unwrap();
    let db = SqliteDb::open(&dir.path().join("m.db")).unwrap();
    let table = MemoryTable::on_sqlite(&db).unwrap();
    fts_merging_off(&db);
    let labels = |hits: Hits| -> Vec<String> {
        let mut labels: Vec<_> = hits.values.into_iter().map(|h| h.label).collect();
        labels.sort();
        labels
    };
    let writes = i64::try_from(compact::MIN_WRITES).unwrap();
    for i in 1..writes {
        set(&table, &format!("b{i:03}"), &format!("treasury note {i}"), "2026-11-26T00:00:01.000000Z").await;
    }
    table.index_merged().await.unwrap();
    assert_eq!(segments(&db), writes - 1, "no merge before enough writes");
    let mut expected = labels(table.search("a", &["treasury".to_owned()], 100).await.unwrap());
    set(&table, "last", "treasury note last", "2026-11-26T00:00:02.000000Z").await;
    table.index_merged().await.unwrap();
    assert_eq!(segments(&db), 1, "merged into one segment");
    expected.push("last".to_owned());
    expected.sort();
    assert_eq!(labels(table.search("a", &["treasury".to_owned()], 100).await.unwrap()), expected);
    // More writes add segments again, below the next threshold; a merge on demand leaves one.
    set(&table, "again", "treasury again", "2026-11-26T00:00:03.000000Z").await;
    assert_eq!(segments(&db), 2);
    table.merge_index().await.unwrap();
    assert_eq!(segments(&db), 1);
    assert_eq!(table.search("a", &["again".to_owned()], 10).await.unwrap().values.len(), 1);
}

/// After a restart the writes that start a merge are counted against the rows the index holds (an eighth of them),
/// not from zero: a large index is not rewritten after every restart's first 64 edits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_restart_a_merge_waits_for_an_eighth_of_the_rows() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.db");
    let at = "2026-11-26T00:00:01.000000Z";
    {
        let db = SqliteDb::open(&path).unwrap();
        let table = MemoryTable::on_sqlite(&db).unwrap();
        fts_merging_off(&db);
        for i in 0..640 {
            set(&table, &format!("a{i:04}"), &format!("note {i}"), at).await;
        }
        table.index_merged().await.unwrap();
    }
    // Reopened on 640 rows. The 64th write looks at the index: 704 rows, so a merge waits for 88 writes.
    let db = SqliteDb::open(&path).unwrap();
    let table = MemoryTable::on_sqlite(&db).unwrap();
    let before = segments(&db);
    for i in 0..64 {
        set(&table, &format!("b{i:04}"), &format!("note {i}"), at).await;
    }
    table.index_merged().await.unwrap();
    assert_eq!(segments(&db), before + 64, "64 writes after the restart: no merge (before: a whole rewrite)");
    for i in 64..87 {
        set(&table, &format!("b{i:04}"), &format!("note {i}"), at).await;
    }
    table.index_merged().await.unwrap();
    assert_eq!(segments(&db), before + 87, "87 writes: still none");
    set(&table, "b0087", "note 87", at).await;
    table.index_merged().await.unwrap();
    assert_eq!(segments(&db), 1, "merged at the 88th write, an eighth of the rows");
}

//! The durability table of `docs/reliability.md` is the store's declaration (`holdfast_store::durability`), and that
//! declaration covers every table a data dir's file and a PostgreSQL database hold once every component migrated.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use holdfast_agent::Runtime;
use holdfast_store::durability::{declared, markdown_table};
use std::path::Path;

#[test]
fn the_document_says_what_the_store_declares() {
    let doc = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/reliability.md");
    let text = std::fs::read_to_string(doc).unwrap();
    let table = markdown_table();
    // Exactly: the rendered rows, then a blank line (no row added by hand after them).
    assert!(
        text.contains(&format!("{table}\n")),
        "docs/reliability.md should hold the store's table, exactly:\n{table}"
    );
}

#[tokio::test]
async fn every_table_of_a_data_dir_is_declared() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("holdfast.toml");
    std::fs::write(&config, format!("[storage]\ndata_dir = {:?}\n", dir.path().join("data"))).unwrap();
    drop(Runtime::load(Some(&config)).await.unwrap());
    let c = rusqlite::Connection::open(dir.path().join("data/holdfast.db")).unwrap();
    let mut stmt = c.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").unwrap();
    let tables: Vec<String> = stmt.query_map([], |r| r.get(0)).unwrap().collect::<Result<_, _>>().unwrap();
    assert!(tables.len() > 10, "{tables:?}");
    let undeclared: Vec<&String> = tables.iter().filter(|t| !declared(t)).collect();
    assert!(undeclared.is_empty(), "tables without a durability declaration: {undeclared:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_table_of_a_postgresql_database_is_declared() {
    let Some(url) = holdfast_testkit::postgres::fresh_database().await else { return };
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("holdfast.toml");
    let toml = format!("[storage]\ndata_dir = {:?}\nurl = {:?}\n", dir.path().join("data"), url.expose());
    std::fs::write(&config, toml).unwrap();
    drop(Runtime::load(Some(&config)).await.unwrap());
    let store = holdfast_store::PgStore::connect(&url).await.unwrap();
    let tables: Vec<String> = sqlx::query_scalar(
        "SELECT table_name::text FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1",
    )
    .fetch_all(store.pool())
    .await
    .unwrap();
    assert!(tables.len() > 10, "{tables:?}");
    let undeclared: Vec<&String> = tables.iter().filter(|t| !declared(t)).collect();
    assert!(undeclared.is_empty(), "tables without a durability declaration: {undeclared:?}");
}

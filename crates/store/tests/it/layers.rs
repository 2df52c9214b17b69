//! The storage crate is the one room with SQL in it: no other crate's product code (`crates/*/src`) names a
//! database driver, opens a connection or holds a statement, and only holdfast-web3 (whose kernel alone moves value)
//! names the journal's table. (Tests and benches elsewhere may read a file or inject a fault with SQL of their own:
//! they judge outcomes on disk independently of the layer they test.)

use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Every product source file of every crate but the storage crate, with its code (comments left out: a doc may
/// name the storage layer's parts).
fn other_crates_sources() -> Vec<(String, String)> {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let mut files = Vec::new();
    for entry in std::fs::read_dir(crates).unwrap() {
        let dir = entry.unwrap().path();
        if dir.file_name().is_some_and(|n| n == "store") || !dir.join("src").is_dir() {
            continue;
        }
        rust_files(&dir.join("src"), &mut files);
    }
    assert!(files.len() > 50, "the workspace's sources were found");
    files
        .into_iter()
        .map(|f| {
            let name = f.strip_prefix(crates).unwrap().display().to_string();
            let text = std::fs::read_to_string(&f).unwrap();
            let code: Vec<&str> = text.lines().filter(|l| !l.trim_start().starts_with("//")).collect();
            (name, code.join("\n"))
        })
        .collect()
}

#[test]
fn no_other_crate_writes_sql_or_opens_a_connection() {
    // The test harness of the workspace (`holdfast-testkit`) creates and drops throwaway databases: not product code.
    let signs =
        ["rusqlite", "sqlx", "Connection::open", "\"SELECT ", "\"INSERT INTO", "\"DELETE FROM", "\"CREATE TABLE"];
    let sources = other_crates_sources();
    let found: Vec<String> = sources
        .iter()
        .filter(|(name, _)| !name.starts_with("testkit/"))
        .flat_map(|(name, text)| {
            signs.iter().filter(|sign| text.contains(**sign)).map(move |sign| format!("{name}: {sign}"))
        })
        .collect();
    assert!(found.is_empty(), "SQL outside holdfast-store: {found:#?}");
}

#[test]
fn only_the_web3_crate_names_the_journals_table() {
    let sources = other_crates_sources();
    let found: Vec<&String> = sources
        .iter()
        .filter(|(name, text)| !name.starts_with("web3/") && text.contains("JournalTable"))
        .map(|(name, _)| name)
        .collect();
    assert!(found.is_empty(), "the journal's table is named outside holdfast-web3: {found:?}");
}

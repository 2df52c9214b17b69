//! The SQLite memory store: memory's tables in the process's SQLite file (or memory), through holdfast-store
//! ([`holdfast_store::memory::SqliteMemory`]: blocks, their history, FTS5 indexes and cached embeddings).

use super::table::memory_store_on_table;
use crate::db::Database;
use crate::error::Result;
use crate::search::query::TextHit;
use holdfast_store::memory::MemoryTable;
use std::path::Path;

/// Memory blocks in SQLite. Clones share the database.
#[derive(Debug, Clone)]
pub struct SqliteMemoryStore {
    db: Database,
    table: MemoryTable,
}

impl SqliteMemoryStore {
    /// Opens (creating) the database file at `path` (WAL mode, migrations run).
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        Ok(Self::new(Database::open(path)?))
    }

    /// A store on an already open database (shared with the router, tasks and reminders).
    pub fn new(db: Database) -> Self {
        // The database's migrations (run when it was opened) include memory's tables.
        let table = MemoryTable::on_migrated_sqlite(db.sqlite());
        Self { db, table }
    }

    /// The database.
    pub fn database(&self) -> &Database {
        &self.db
    }

    /// [`crate::MemoryStore::search`] on the current thread (a blocking context: it waits for SQLite), for benchmarks
    /// that time the query alone.
    pub fn search_blocking(&self, agent: &str, terms: &[String], limit: usize) -> Result<Vec<TextHit>> {
        super::table::hits(self.table.search_blocking(agent, terms, limit)?, limit)
    }

    /// Merges the full-text indexes into one segment each now, their fastest form to search (the store also does so
    /// in the background as they grow): for a caller that wants it at once, after a bulk load.
    pub async fn merge_index(&self) -> Result<()> {
        Ok(self.table.merge_index().await?)
    }

    /// Waits until no background merge of the full-text indexes runs.
    pub async fn index_merged(&self) -> Result<()> {
        Ok(self.table.index_merged().await?)
    }
}

memory_store_on_table!(SqliteMemoryStore, "sqlite");

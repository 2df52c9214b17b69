//! The PostgreSQL memory store: memory's tables in the database several instances share, so an agent's memory is one
//! memory whichever instance serves it, through holdfast-store ([`holdfast_store::memory::PgMemory`]: PostgreSQL's
//! text search, per-block advisory locks across instances).

use super::table::memory_store_on_table;
use crate::error::Result;
use holdfast_store::PgStore;
use holdfast_store::memory::{Adopted, MemoryTable};

/// Memory blocks in PostgreSQL. Clones share the pool.
#[derive(Debug, Clone)]
pub struct PgMemoryStore {
    pg: PgStore,
    table: MemoryTable,
}

impl PgMemoryStore {
    /// The pool (shared with the other stores on the same database, such as [`crate::PgTaskStore`]).
    pub fn pool(&self) -> &PgStore {
        &self.pg
    }

    /// The store in `url`'s database (a pool of its own), migrated. A process that already has a pool on the
    /// database uses [`PgMemoryStore::on`].
    pub async fn open(url: holdfast_core::config::DatabaseUrl) -> Result<Self> {
        Self::on(PgStore::connect(&url).await?).await
    }

    /// The store on `pg`'s pool, migrated.
    pub async fn on(pg: PgStore) -> Result<Self> {
        let table = MemoryTable::on_postgres(pg.clone()).await?;
        Ok(Self { pg, table })
    }

    /// Moves the memory of an instance that kept it in SQLite (`db`, its data dir's file) into this database, once:
    /// when the database holds no memory block yet, every block and every history entry of `db` is copied in one
    /// transaction (under a lock, so instances starting together copy once). The file keeps its rows; cached
    /// embeddings are not copied (they are computed again).
    pub async fn adopt(&self, db: &crate::Database) -> Result<Adopted> {
        Ok(self.table.adopt(db.sqlite()).await?)
    }
}

memory_store_on_table!(PgMemoryStore, "postgres");

//! The channel events travel between instances on one PostgreSQL database: `LISTEN/NOTIFY` on [`CHANNEL`], the
//! spill table for an event too long for a notification, and the signing key. What is sent, how it is signed and
//! who receives it is decided by the relay beside the event bus ([`holdfast_core::event::relay::Relay`]); this
//! module carries text ([`PgChannel`], its [`RelayChannel`]) and starts a relay on it ([`start`]).
//!
//! The key is made by the migration (two random UUIDs, 244 random bits) in `holdfast_event_key`, which only roles
//! with that table's privileges can read, while `LISTEN`/`NOTIFY` need nothing but `CONNECT`.

use crate::migrate::Component;
use crate::{PgStore, StoreError};
use holdfast_core::ToolError;
use holdfast_core::event::relay::{Relay, RelayChannel, RelayListener};
use holdfast_core::tool::BoxFuture;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio_util::sync::CancellationToken;

/// The `LISTEN/NOTIFY` channel.
pub const CHANNEL: &str = "holdfast_events";

/// The longest notification sent (PostgreSQL refuses a payload of 8,000 bytes or more).
const PAYLOAD_LIMIT: usize = 7_900;

/// The spill table and the signing key (PostgreSQL only): [`crate::schema::EVENTS`].
pub const MIGRATIONS: Component = crate::schema::EVENTS;

/// The relay of an instance on `store`'s database: listening (before this returns) and sending until `cancel`.
pub async fn start(store: PgStore, cancel: CancellationToken) -> Result<Arc<Relay>, StoreError> {
    let channel = PgChannel::open(store).await?;
    Relay::start(Arc::new(channel), cancel).await.map_err(|e| StoreError::Query(e.to_string()))
}

/// The PostgreSQL channel of one instance.
pub struct PgChannel {
    store: PgStore,
    key: String,
    spilled: AtomicU64,
}

impl std::fmt::Debug for PgChannel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgChannel").field("instance", &self.store.instance()).finish_non_exhaustive()
    }
}

fn tool_err(e: impl Into<StoreError>) -> ToolError {
    ToolError::from(e.into())
}

impl PgChannel {
    /// The channel on `store`'s database (its tables migrated, its key read).
    pub async fn open(store: PgStore) -> Result<Self, StoreError> {
        store.migrate(&MIGRATIONS).await?;
        let key: String =
            sqlx::query_scalar("SELECT key FROM holdfast_event_key WHERE id = 1").fetch_one(store.pool()).await?;
        Ok(Self { store, key, spilled: AtomicU64::new(0) })
    }

    async fn prune(&self) {
        // Listeners read a row within moments of its notification; an hour is far beyond that. A failed clean-up is
        // tried again a hundred spills later; it never costs an event.
        let pruned = sqlx::query("DELETE FROM holdfast_event_spill WHERE created_at < now() - interval '1 hour'")
            .execute(self.store.pool())
            .await;
        if let Err(e) = pruned {
            tracing::warn!(error = %StoreError::from(e), "event channel: old spill rows not pruned");
        }
    }
}

impl RelayChannel for PgChannel {
    fn instance(&self) -> &str {
        self.store.instance()
    }

    fn key(&self) -> &str {
        &self.key
    }

    fn payload_limit(&self) -> usize {
        PAYLOAD_LIMIT
    }

    fn notify<'a>(&'a self, payloads: &'a [String]) -> BoxFuture<'a, Result<(), ToolError>> {
        Box::pin(async move {
            // A function scan yields the array's elements in order, and the projection calls pg_notify row by row;
            // one statement is one transaction (PostgreSQL folds identical payloads of one transaction into one:
            // the relay numbers them).
            sqlx::query("SELECT pg_notify($1, p) FROM unnest($2::text[]) AS t(p)")
                .bind(CHANNEL)
                .bind(payloads)
                .execute(self.store.pool())
                .await
                .map_err(tool_err)?;
            Ok(())
        })
    }

    fn spill(&self, body: String) -> BoxFuture<'_, Result<i64, ToolError>> {
        Box::pin(async move {
            let id: i64 = sqlx::query_scalar("INSERT INTO holdfast_event_spill (body) VALUES ($1) RETURNING id")
                .bind(body)
                .fetch_one(self.store.pool())
                .await
                .map_err(tool_err)?;
            if (self.spilled.fetch_add(1, Ordering::Relaxed) + 1).is_multiple_of(100) {
                self.prune().await;
            }
            Ok(id)
        })
    }

    fn unspill(&self, id: i64) -> BoxFuture<'_, Result<Option<String>, ToolError>> {
        Box::pin(async move {
            sqlx::query_scalar("SELECT body FROM holdfast_event_spill WHERE id = $1")
                .bind(id)
                .fetch_optional(self.store.pool())
                .await
                .map_err(tool_err)
        })
    }

    fn listen(&self) -> BoxFuture<'_, Result<Box<dyn RelayListener>, ToolError>> {
        Box::pin(async move {
            let mut listener = sqlx::postgres::PgListener::connect_with(self.store.pool()).await.map_err(tool_err)?;
            listener.listen(CHANNEL).await.map_err(tool_err)?;
            Ok(Box::new(PgRelayListener(listener)) as Box<dyn RelayListener>)
        })
    }
}

/// A connection listening on [`CHANNEL`].
struct PgRelayListener(sqlx::postgres::PgListener);

impl RelayListener for PgRelayListener {
    fn recv(&mut self) -> BoxFuture<'_, Result<Option<String>, ToolError>> {
        Box::pin(async move {
            // `try_recv` answers `None` once when the connection is lost; the next call connects and listens again.
            Ok(self.0.try_recv().await.map_err(tool_err)?.map(|note| note.payload().to_owned()))
        })
    }
}

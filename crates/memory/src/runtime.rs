//! [`AgentRuntime`]: one database, one memory store, one router and one reminder scheduler shared by every agent of
//! a process; [`AgentRuntime::agent`] hands out [`AgentHandle`]s.
//!
//! ```no_run
//! # async fn demo(data_dir: &std::path::Path, ctx: holdfast_core::ToolContext) -> Result<(), Box<dyn std::error::Error>> {
//! use holdfast_memory::{AgentRuntime, BuiltinTools, MemoryConfig};
//! let runtime = AgentRuntime::open_dir(data_dir, MemoryConfig::default()).await?; // data_dir/holdfast.db, WAL
//! let _scheduler = runtime.start_scheduler(); // keep it alive: overdue reminders fire now, the rest when due
//! let handle = runtime.agent("assistant").await?;
//! handle.attach(&ctx); // this session acts for "assistant"; reminders to the user reach its event bus
//! let registry = BuiltinTools::default_for_agent(handle).into_registry()?; // core tools + the nine built-ins
//! let out = registry.call("list_memories", serde_json::json!({}), &ctx).await?;
//! # let _ = out; Ok(()) }
//! ```

use crate::agent::{AgentHandle, MessageSender};
use crate::agent_id::AgentId;
use crate::blocks::block::{BlockSpec, DEFAULT_CHAR_LIMIT};
use crate::blocks::memory::{Memory, SearchMode};
use crate::blocks::store::{MemoryStore, SqliteMemoryStore};
use crate::clock::{SharedClock, SystemClock};
use crate::db::{DEFAULT_DB_FILE, Database};
use crate::error::Result;
use crate::messaging::{MessageRouter, MessageStore, RouterConfig, SqliteMessageStore};
use crate::schedule::reminders::{ReminderScheduler, Reminders, SchedulerHandle};
use crate::schedule::task_store::{SqliteTaskStore, TaskStore};
use crate::schedule::tasks::TaskList;
use crate::search::embeddings::{Embedder, EmbeddingsConfig};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;

/// A channel in the configuration.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChannelConfig {
    /// Outbound webhook: every message to the channel is POSTed here as JSON.
    #[serde(default)]
    pub webhook_url: Option<String>,
    /// Agents subscribed to the channel.
    #[serde(default)]
    pub subscribers: Vec<String>,
}

/// The memory/messaging section of the configuration (e.g. `[memory]` in `holdfast.toml`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemoryConfig {
    /// Soft budget of blocks that tools create.
    #[serde(default = "default_char_limit")]
    pub default_char_limit: usize,
    /// The anti-loop cooldown between the same ordered pair of agents, in seconds (0 disables it).
    #[serde(default = "default_cooldown")]
    pub agent_cooldown_secs: u64,
    /// The most agent-to-agent hops one conversation may make (see [`crate::messaging`]'s hop limit).
    #[serde(default = "default_max_hops")]
    pub max_hops: u32,
    /// Timeout of channel webhook POSTs, in seconds.
    #[serde(default = "default_webhook_timeout")]
    pub webhook_timeout_secs: u64,
    /// The embeddings endpoint; absent: text search only. (`EmbeddingsConfig::from_env` reads the environment.)
    #[serde(default)]
    pub embeddings: Option<EmbeddingsConfig>,
    /// Groups: name → member agent ids.
    #[serde(default)]
    pub groups: BTreeMap<String, Vec<String>>,
    /// Channels: name → webhook and subscribers.
    #[serde(default)]
    pub channels: BTreeMap<String, ChannelConfig>,
    /// Blocks every agent starts with (created when missing, never overwritten).
    #[serde(default)]
    pub blocks: Vec<BlockSpec>,
}

fn default_char_limit() -> usize {
    DEFAULT_CHAR_LIMIT
}

fn default_cooldown() -> u64 {
    crate::messaging::DEFAULT_AGENT_COOLDOWN.as_secs()
}

fn default_max_hops() -> u32 {
    crate::messaging::DEFAULT_MAX_HOPS
}

fn default_webhook_timeout() -> u64 {
    10
}

impl Default for MemoryConfig {
    fn default() -> Self {
        Self {
            default_char_limit: default_char_limit(),
            agent_cooldown_secs: default_cooldown(),
            max_hops: default_max_hops(),
            webhook_timeout_secs: default_webhook_timeout(),
            embeddings: None,
            groups: BTreeMap::new(),
            channels: BTreeMap::new(),
            blocks: Vec::new(),
        }
    }
}

/// Everything the agents of one process share. Cheap to clone.
#[derive(Clone)]
pub struct AgentRuntime {
    inner: Arc<Inner>,
}

struct Inner {
    db: Database,
    store: Arc<dyn MemoryStore>,
    tasks: Arc<dyn TaskStore>,
    router: MessageRouter,
    clock: SharedClock,
    config: MemoryConfig,
    embedder: Option<Embedder>,
    wake: Arc<Notify>,
    /// Each agent's memory write lock, shared by its handles ([`Memory::with_write_lock`]).
    memory_writes: parking_lot::Mutex<std::collections::HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

impl std::fmt::Debug for AgentRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentRuntime")
            .field("db", &self.inner.db)
            .field("store", &self.inner.store.kind())
            .field("search_mode", &self.search_mode())
            .finish()
    }
}

/// Builds an [`AgentRuntime`] with a custom memory store or clock.
pub struct RuntimeBuilder {
    db: Database,
    config: MemoryConfig,
    store: Option<Arc<dyn MemoryStore>>,
    tasks: Option<Arc<dyn TaskStore>>,
    messages: Option<Arc<dyn MessageStore>>,
    clock: Option<SharedClock>,
}

impl RuntimeBuilder {
    /// The configuration.
    pub fn config(mut self, config: MemoryConfig) -> Self {
        self.config = config;
        self
    }

    /// A memory store other than SQLite on the same database.
    pub fn memory_store(mut self, store: Arc<dyn MemoryStore>) -> Self {
        self.store = Some(store);
        self
    }

    /// A task store other than SQLite on the same database.
    pub fn task_store(mut self, store: Arc<dyn TaskStore>) -> Self {
        self.tasks = Some(store);
        self
    }

    /// A message store (messages, inboxes, anti-loop windows, reminders) other than SQLite on the same database.
    pub fn message_store(mut self, store: Arc<dyn MessageStore>) -> Self {
        self.messages = Some(store);
        self
    }

    /// A clock other than the system clock.
    pub fn clock(mut self, clock: SharedClock) -> Self {
        self.clock = Some(clock);
        self
    }

    /// Builds the runtime and applies the configuration's groups and channels.
    pub async fn build(self) -> Result<AgentRuntime> {
        let clock = self.clock.unwrap_or_else(|| Arc::new(SystemClock));
        let store = self.store.unwrap_or_else(|| Arc::new(SqliteMemoryStore::new(self.db.clone())));
        let tasks = self.tasks.unwrap_or_else(|| Arc::new(SqliteTaskStore::new(self.db.clone())));
        let router_config = RouterConfig {
            agent_cooldown: Duration::from_secs(self.config.agent_cooldown_secs),
            max_hops: self.config.max_hops,
            webhook_timeout: Duration::from_secs(self.config.webhook_timeout_secs.max(1)),
        };
        let messages = self.messages.unwrap_or_else(|| Arc::new(SqliteMessageStore::new(self.db.clone())));
        let router = MessageRouter::new(messages, router_config, Arc::clone(&clock))?;
        let embedder = self.config.embeddings.clone().map(Embedder::new).transpose()?;
        for (name, members) in &self.config.groups {
            router.define_group(name, members).await?;
        }
        for (name, channel) in &self.config.channels {
            router.define_channel(name, channel.webhook_url.clone()).await?;
            for agent in &channel.subscribers {
                router.subscribe(name, &AgentId::new(agent)?).await?;
            }
        }
        Ok(AgentRuntime {
            inner: Arc::new(Inner {
                db: self.db,
                store,
                tasks,
                router,
                clock,
                config: self.config,
                embedder,
                wake: Arc::new(Notify::new()),
                memory_writes: parking_lot::Mutex::default(),
            }),
        })
    }
}

impl AgentRuntime {
    /// A builder over `db`.
    pub fn builder(db: Database) -> RuntimeBuilder {
        RuntimeBuilder { db, config: MemoryConfig::default(), store: None, tasks: None, messages: None, clock: None }
    }

    /// Opens `data_dir/holdfast.db` (created with the directory when missing; WAL mode) with SQLite memory.
    pub async fn open_dir(data_dir: impl AsRef<Path>, config: MemoryConfig) -> Result<Self> {
        let db = Database::open(data_dir.as_ref().join(DEFAULT_DB_FILE))?;
        Self::builder(db).config(config).build().await
    }

    /// A runtime on an in-memory SQLite database (nothing persists; for replay without a data directory and tests).
    pub async fn ephemeral(config: MemoryConfig) -> Result<Self> {
        Self::builder(Database::open_in_memory()?).config(config).build().await
    }

    /// The handle of agent `id`, registering it with the router (so others may message it) and creating the
    /// configured initial blocks it lacks.
    pub async fn agent(&self, id: &str) -> Result<AgentHandle> {
        let agent = AgentId::new(id)?;
        let i = &self.inner;
        i.router.register_agent(&agent).await?;
        let writes = Arc::clone(i.memory_writes.lock().entry(agent.to_string()).or_default());
        let memory = Memory::new(agent.clone(), Arc::clone(&i.store))
            .with_write_lock(writes)
            .with_clock(Arc::clone(&i.clock))
            .with_default_char_limit(i.config.default_char_limit)
            .with_embedder(i.embedder.clone());
        for spec in &i.config.blocks {
            memory.ensure_block(spec.clone()).await?;
        }
        Ok(AgentHandle {
            messages: MessageSender::new(agent.clone(), i.router.clone()),
            tasks: TaskList::new(agent.clone(), Arc::clone(&i.tasks), Arc::clone(&i.clock)),
            reminders: Reminders::new(agent.clone(), i.router.clone(), Arc::clone(&i.clock), Arc::clone(&i.wake)),
            memory,
            agent_id: agent,
        })
    }

    /// The router (groups, channels, endpoints, inboxes, outbox).
    pub fn router(&self) -> &MessageRouter {
        &self.inner.router
    }

    /// The database.
    pub fn database(&self) -> &Database {
        &self.inner.db
    }

    /// The memory store.
    pub fn memory_store(&self) -> &Arc<dyn MemoryStore> {
        &self.inner.store
    }

    /// The configuration.
    pub fn config(&self) -> &MemoryConfig {
        &self.inner.config
    }

    /// The ranking `search_memory` uses: `hybrid` when an embeddings endpoint is configured, else `text`.
    pub fn search_mode(&self) -> SearchMode {
        if self.inner.embedder.is_some() { SearchMode::Hybrid } else { SearchMode::Text }
    }

    /// Cancels every pending reminder of an agent not in `agents` (one removed from the configuration: no one would
    /// answer it); how many were cancelled.
    pub async fn cancel_reminders_of_removed_agents(&self, agents: &[String]) -> crate::error::Result<u64> {
        let agents = agents.to_vec();
        self.inner.router.store().cancel_reminders_of_others(&agents).await
    }

    /// How many pending reminders agents not in `agents` have (on a shared database: those another instance may
    /// serve).
    pub async fn reminders_of_other_agents(&self, agents: &[String]) -> crate::error::Result<u64> {
        let agents = agents.to_vec();
        self.inner.router.store().count_reminders_of_others(&agents).await
    }

    /// The reminder scheduler (for one-off passes: [`ReminderScheduler::fire_due`]).
    pub fn scheduler(&self) -> ReminderScheduler {
        let i = &self.inner;
        ReminderScheduler::new(i.router.clone(), Arc::clone(&i.clock), Arc::clone(&i.wake))
    }

    /// Starts the reminder scheduler task (overdue reminders are delivered at once). Keep the handle alive.
    pub fn start_scheduler(&self) -> SchedulerHandle {
        self.scheduler().start()
    }

    /// Starts a reminder scheduler that fires only the reminders `agents` scheduled (those this process serves).
    pub fn start_scheduler_for(&self, agents: Vec<String>) -> SchedulerHandle {
        self.scheduler().only(agents).start()
    }
}

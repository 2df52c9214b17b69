//! The runtime every front end runs on (`replay`, `chat`, `serve`, `mcp`): built once from a configuration file, it
//! composes the layers — core services, the web3 layer, the memory layer and its agent — into one tool registry,
//! and opens persisted sessions.

use crate::agent::AgentConfig;
use crate::agents::AgentProfile;
use crate::llm::{ChatProvider, LlmConfig};
use crate::sessions::{SessionInfo, SessionStorage};
use crate::skills::{SkillError, SkillSet, UseSkill};
use holdfast_core::config::{CORE_SECTIONS, ConfigDocument, ConfigError, CoreConfig};
use holdfast_core::{
    Confirmation, CoreServices, ErrorCode, ToolContext, ToolError, ToolRegistry, UserChannel, UserDecision,
};
use holdfast_memory::{AgentHandle, AgentRuntime, BuiltinTools, MemoryConfig, SchedulerHandle};
use holdfast_web3::{WEB3_SECTIONS, Web3};
use parking_lot::Mutex;
use serde::Deserialize;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The agent id sessions act for.
pub const AGENT_ID: &str = "assistant";

/// Top-level sections the agent layer and the front ends above it read (`server` is read by `holdfast serve`, `mcp`
/// by the MCP server).
pub const AGENT_SECTIONS: &[&str] = &["memory", "llm", "agent", "agents", "skills", "server", "mcp"];

/// Every top-level section a configuration file may hold.
pub fn known_sections() -> Vec<&'static str> {
    CORE_SECTIONS.iter().chain(WEB3_SECTIONS).chain(AGENT_SECTIONS).copied().collect()
}

/// The session link that records which agent a session belongs to (absent: the default agent).
fn agent_link(session_id: &str) -> String {
    format!("agent:{session_id}")
}

/// What [`Runtime::decide`] did.
#[derive(Debug)]
pub enum Decided {
    /// Approved: the tool call ran once; its outcome.
    Ran(Confirmation, Result<Value, ToolError>),
    /// Denied: nothing ran.
    Denied(Confirmation),
}

impl Decided {
    /// The outcome as a tool result: the approved call's result, or `confirmation_denied`.
    pub fn into_result(self) -> Result<Value, ToolError> {
        match self {
            Self::Ran(_, outcome) => outcome,
            Self::Denied(c) => Err(ToolError::new(
                ErrorCode::ConfirmationDenied,
                format!("the user rejected the {} action (confirmation {}); nothing was signed", c.tool, c.id),
            )
            .with_details(serde_json::json!({"confirmation_id": c.id, "summary": c.summary}))),
        }
    }
}

/// The runtime could not be built.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    /// A configuration file is invalid.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The web3 layer could not be built.
    #[error(transparent)]
    Web3(#[from] holdfast_web3::BuildError),
    /// The memory layer could not be opened.
    #[error("memory: {0}")]
    Memory(#[from] holdfast_memory::MemoryError),
    /// A tool could not be registered.
    #[error(transparent)]
    Registry(#[from] holdfast_core::RegistryError),
    /// The web3 layer could not be installed (a tool name taken, or an override of an undeclared register).
    #[error(transparent)]
    Install(#[from] holdfast_web3::InstallError),
    /// The context-bank scanner could not be built.
    #[error(transparent)]
    Scanner(#[from] holdfast_core::context_bank::ScannerBuildError),
    /// Storage failed.
    #[error(transparent)]
    Storage(#[from] ToolError),
    /// A skill file is invalid.
    #[error("skill {0}")]
    Skill(#[from] SkillError),
}

/// `[skills]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct SkillsSection {
    dir: Option<PathBuf>,
}

/// `[agent]`: loop limits.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct AgentSection {
    max_steps: Option<usize>,
    max_identical_calls: Option<usize>,
    max_tokens: Option<u32>,
    instructions: Option<String>,
    session_idle_secs: Option<u64>,
    inbox_turns_per_minute: Option<u32>,
    history_token_budget: Option<usize>,
}

/// A configuration file read and checked by every layer without opening a database, creating a wallet or starting
/// anything ([`Runtime::check_document`]; `holdfast doctor`).
#[derive(Debug)]
pub struct CheckedConfig {
    /// The core sections.
    pub core: CoreConfig,
    /// The web3 sections (wallet, presets, policy, payments, price feeds, address book).
    pub web3: holdfast_web3::Web3Config,
    /// `[llm]`.
    pub llm: LlmConfig,
}

/// Everything a front end needs. Cheap to share behind an `Arc`.
pub struct Runtime {
    /// The configuration document it was built from.
    pub document: ConfigDocument,
    /// Services shared by every session.
    pub services: CoreServices,
    /// The tool registry (core, memory and messaging, web3).
    pub registry: ToolRegistry,
    /// The web3 layer (wallet, chains, policy, journal).
    pub web3: Arc<Web3>,
    /// The default agent's handle (`assistant`); [`Runtime::profiles`] has every agent.
    pub agent: AgentHandle,
    /// Persisted sessions.
    pub sessions: Arc<dyn SessionStorage>,
    /// The turns running in this process, whoever started them: what stops one.
    pub turns: crate::turns::Turns,
    skills: Arc<SkillSet>,
    llm: LlmConfig,
    agent_config: AgentConfig,
    profiles: BTreeMap<String, Arc<AgentProfile>>,
    session_idle: Duration,
    live: Arc<Mutex<HashMap<String, Live>>>,
    /// Serializes restoring and unloading, so a restore never reads a state older than an unload just saved.
    restoring: tokio::sync::Mutex<()>,
    storage: holdfast_store::Storage,
    _scheduler: SchedulerHandle,
    /// Stops the event relay (PostgreSQL) when the runtime is dropped.
    _fanout: Option<tokio_util::sync::DropGuard>,
    /// The event relay to the other instances (PostgreSQL), for its counters.
    relay: Option<Arc<holdfast_core::event::relay::Relay>>,
    /// The data dir's lock, held while the runtime uses it (alone on SQLite, shared on PostgreSQL).
    data_dir_lock: Option<Arc<holdfast_store::DataDirLock>>,
    /// The wallet's lock, held while the runtime may sign for it.
    _wallet_lock: Option<Arc<holdfast_store::ProcessLock>>,
}

/// A session loaded in this process.
struct Live {
    ctx: ToolContext,
    last_used: Instant,
    /// When the stored revision was last compared with this copy's ([`Runtime::missed_a_save`]).
    revision_checked: Instant,
}

/// How often, at most, a session's use compares its stored revision with the loaded copy's (on a shared database):
/// a save whose events were lost is found within this, at the cost of one read per session per period.
const REVISION_CHECK: Duration = Duration::from_secs(1);

/// What the table of loaded sessions has for an id.
enum Loaded {
    /// A copy to use, and whether to compare it with the stored revision now (no turn or request holds it, and
    /// [`REVISION_CHECK`] has passed since the last comparison).
    Live(ToolContext, bool),
    /// An out-of-date copy: restore the saved state on its bus, then replace it.
    Stale(ToolContext),
    /// Nothing.
    Absent,
}

impl Live {
    fn new(ctx: ToolContext) -> Self {
        let now = Instant::now();
        Self { ctx, last_used: now, revision_checked: now }
    }
}

/// How long a session may sit unused in memory before [`Runtime::unload_idle`] unloads it, unless the configuration
/// says otherwise (`[agent] session_idle_secs`).
pub const DEFAULT_SESSION_IDLE: Duration = Duration::from_secs(600);

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime").field("registry", &self.registry).field("web3", &self.web3).finish_non_exhaustive()
    }
}

impl Runtime {
    /// Loads `config` (or the built-in defaults) and builds every layer. Without a data dir, memory, sessions and
    /// the journal live in memory and the wallet is ephemeral: nothing touches the disk.
    pub async fn load(config: Option<&Path>) -> Result<Self, RuntimeError> {
        let doc = match config {
            Some(path) => ConfigDocument::load(path)?,
            None => ConfigDocument::empty(),
        };
        Self::from_document(doc).await
    }

    /// Reads every section of `doc` the way [`Runtime::from_document`] does — the same loaders, the same errors
    /// (file, line, key) — but builds nothing: no database, no wallet file, no background task.
    pub fn check_document(doc: &ConfigDocument) -> Result<CheckedConfig, RuntimeError> {
        doc.check_sections(&known_sections())?;
        let core = CoreConfig::from_document(doc)?;
        let web3 = holdfast_web3::Web3Config::from_document(doc, &core)?;
        doc.section_or_default::<MemoryConfig>("memory")?;
        let llm = LlmConfig::from_document(doc)?;
        doc.section_or_default::<AgentSection>("agent")?;
        crate::agents::specs(doc)?;
        if let Some(dir) = doc.section_or_default::<SkillsSection>("skills")?.dir {
            SkillSet::load_dir(&doc.resolve_path(&dir))?;
        }
        Ok(CheckedConfig { core, web3, llm })
    }

    /// Builds every layer from a parsed document.
    pub async fn from_document(doc: ConfigDocument) -> Result<Self, RuntimeError> {
        Self::from_document_with_data_dir(doc, None).await
    }

    /// Builds every layer, with `data_dir` (when given) replacing the document's `[storage] data_dir`.
    pub async fn from_document_with_data_dir(
        doc: ConfigDocument,
        data_dir: Option<PathBuf>,
    ) -> Result<Self, RuntimeError> {
        doc.check_sections(&known_sections())?;
        let mut core = CoreConfig::from_document(&doc)?;
        if data_dir.is_some() {
            core.data_dir = data_dir;
        }
        let mut services = CoreServices::new(core)?;
        // The process holds its data dir before anything in it is opened, and its wallet before anything is signed:
        // alone on the SQLite file, shared with the other instances on PostgreSQL (`holdfast_store::lock`).
        let on_postgres = holdfast_store::Storage::names_postgres(services.config.database_url.as_ref());
        let command = holdfast_store::process_command();
        let data_dir_lock = match services.config.data_dir.as_deref() {
            Some(dir) => {
                Some(holdfast_store::ProcessLock::data_dir(dir, on_postgres, &command).map_err(ToolError::from)?)
            }
            None => None,
        };
        let storage =
            holdfast_store::Storage::open(services.config.data_dir.as_deref(), services.config.database_url.as_ref())
                .await
                .map_err(ToolError::from)?;
        let web3 = Web3::from_storage(&doc, Arc::clone(&services.config), &storage).await?;
        let wallet_lock = match storage.is_durable() {
            true => Some(
                holdfast_store::ProcessLock::wallet(&web3.wallet().address().to_string(), on_postgres, &command)
                    .map_err(ToolError::from)?,
            ),
            false => None,
        };
        let (mut fanout, mut relay_handle) = (None, None);
        if let holdfast_store::Storage::Postgres(pg) = &storage {
            // The events of sessions another instance watches reach its clients (and reload hints every copy); theirs
            // reach ours.
            let cancel = tokio_util::sync::CancellationToken::new();
            let relay = holdfast_store::fanout::start(pg.clone(), cancel.clone()).await.map_err(ToolError::from)?;
            relay_handle = Some(Arc::clone(&relay));
            services = services.with_event_relay(relay);
            fanout = Some(cancel.drop_guard());
        }

        let memory_config: MemoryConfig = doc.section_or_default("memory")?;
        let data_dir = services.config.data_dir.clone();
        let db = match (&storage, &data_dir) {
            // One handle on the file for every table's owner: the journal and sessions already use it.
            (holdfast_store::Storage::Sqlite(db), _) => holdfast_memory::Database::on(db.clone())?,
            // On PostgreSQL the data dir's file is read only for what an earlier run kept in it (adopted below).
            (holdfast_store::Storage::Postgres(_), Some(dir)) => {
                holdfast_memory::Database::open(dir.join(holdfast_memory::db::DEFAULT_DB_FILE))?
            }
            (holdfast_store::Storage::Postgres(_), None) => holdfast_memory::Database::open_in_memory()?,
        };
        let mut memory = AgentRuntime::builder(db.clone()).config(memory_config);
        if let holdfast_store::Storage::Postgres(pg) = &storage {
            // Memory blocks, tasks, messages and reminders are shared by every instance.
            // Memory, tasks and messages run on the process's one pool, beside sessions and the journal.
            let store = holdfast_memory::PgMemoryStore::on(pg.clone()).await?;
            if data_dir.is_some() {
                // Memory an earlier run kept in this data dir's file moves to the shared database, once.
                match store.adopt(&db).await? {
                    holdfast_memory::Adopted::Copied { blocks } => {
                        tracing::info!(blocks, "memory: the data dir's blocks were copied into PostgreSQL");
                    }
                    holdfast_memory::Adopted::AlreadyShared { local } => tracing::warn!(
                        local,
                        "memory: PostgreSQL already holds memory; the blocks in this data dir's holdfast.db are not used"
                    ),
                    holdfast_memory::Adopted::Nothing => {}
                }
            }
            let tasks = holdfast_memory::PgTaskStore::open(pg.clone()).await?;
            if data_dir.is_some() {
                let copied = tasks.adopt(&db).await?;
                if copied > 0 {
                    tracing::info!(tasks = copied, "tasks: the data dir's tasks were copied into PostgreSQL");
                }
            }
            let messages = holdfast_memory::PgMessageStore::open(pg.clone()).await?;
            if data_dir.is_some() {
                match messages.adopt(&db).await? {
                    holdfast_memory::MessagesAdopted::Copied { rows } => tracing::info!(
                        rows,
                        "messages: the data dir's messages and reminders were copied into PostgreSQL"
                    ),
                    holdfast_memory::MessagesAdopted::AlreadyShared { waiting } if waiting > 0 => tracing::warn!(
                        waiting,
                        "messages: PostgreSQL already holds messages; the undelivered messages and unfired reminders \
                         in this data dir's holdfast.db are not used"
                    ),
                    _ => {}
                }
            }
            memory = memory.memory_store(Arc::new(store)).task_store(Arc::new(tasks)).message_store(Arc::new(messages));
        }
        let memory = memory.build().await?;
        // A removed agent's reminders would start turns no agent answers. On the SQLite file, which one
        // configuration owns (one process per data dir), they are cancelled before the scheduler starts. A
        // PostgreSQL database is shared by instances whose configurations may differ: nothing is deleted on one
        // instance's word, but none of them fires here, and the count is logged. Either way the scheduler fires only
        // the reminders of the agents this instance serves.
        let mut agents: Vec<String> = crate::agents::specs(&doc)?.into_keys().collect();
        agents.push(AGENT_ID.to_owned());
        if on_postgres {
            let others = memory.reminders_of_other_agents(&agents).await?;
            if others > 0 {
                tracing::warn!(
                    pending = others,
                    "reminders of agents this instance does not serve ([agents.NAME]) are left for the instances that \
                     do; none fires here"
                );
            }
        } else {
            let cancelled = memory.cancel_reminders_of_removed_agents(&agents).await?;
            if cancelled > 0 {
                tracing::warn!(cancelled, "reminders of agents no longer configured ([agents.NAME]) were cancelled");
            }
        }
        let scheduler = memory.start_scheduler_for(agents);
        let agent = memory.agent(AGENT_ID).await?;
        let sessions = crate::sessions::open_sessions(&storage).await?;

        let registry = ToolRegistry::new();
        BuiltinTools::default_for_agent(agent.clone()).register_all(&registry)?;
        let state_store: Arc<dyn holdfast_core::SessionStateStore> = Arc::clone(&sessions) as _;
        let services = web3.install(services, &registry)?.with_hook(agent.session_hook()).with_state_store(state_store);
        let skills = Arc::new(match doc.section_or_default::<SkillsSection>("skills")?.dir {
            Some(dir) => SkillSet::load_dir(&doc.resolve_path(&dir))?,
            None => SkillSet::builtin()?,
        });
        registry.register(UseSkill::new(Arc::clone(&skills), registry.clone()))?;
        let llm = LlmConfig::from_document(&doc)?;
        let section: AgentSection = doc.section_or_default("agent")?;
        let defaults = AgentConfig::default();
        let agent_config = AgentConfig {
            max_steps: section.max_steps.unwrap_or(defaults.max_steps).max(1),
            max_identical_calls: section.max_identical_calls.unwrap_or(defaults.max_identical_calls).max(1),
            max_tokens: section.max_tokens.unwrap_or(defaults.max_tokens),
            instructions: section.instructions.unwrap_or(defaults.instructions),
            inbox_turns_per_minute: section.inbox_turns_per_minute.unwrap_or(defaults.inbox_turns_per_minute).max(1),
            history_token_budget: section.history_token_budget.unwrap_or(defaults.history_token_budget),
        };
        let session_idle = section.session_idle_secs.map_or(DEFAULT_SESSION_IDLE, Duration::from_secs);
        let mut profiles = BTreeMap::new();
        let default = AgentProfile::default_agent(agent.clone(), agent_config.clone());
        profiles.insert(AGENT_ID.to_owned(), Arc::new(default));
        let (tool_names, skill_names) = (registry.names(), skills.iter().map(|s| s.name.clone()).collect::<Vec<_>>());
        for (name, spec) in crate::agents::specs(&doc)? {
            crate::agents::check_names(&doc, &name, &spec, &tool_names, &skill_names)?;
            let handle = memory.agent(&name).await?;
            for block in &spec.memory {
                handle.memory.ensure_block(block.clone()).await?;
            }
            let profile = AgentProfile::from_spec(&name, handle, &spec, &agent_config);
            profiles.insert(name, Arc::new(profile));
        }
        let live: Arc<Mutex<HashMap<String, Live>>> = Arc::default();
        // A reminder to the user is announced on the session that scheduled it: its copy loaded here, or, on a
        // shared database, whichever instance serves it, through the event relay.
        // (Only the relay is held, not the services: they reach the router, which holds this.)
        memory.router().set_session_events({
            let (loaded, relay) = (Arc::downgrade(&live), services.event_relay());
            Arc::new(move |id: &str| {
                let here = loaded.upgrade().and_then(|l| l.lock().get(id).map(|l| l.ctx.events.clone()));
                here.or_else(|| relay.clone().map(|r| holdfast_core::EventBus::new(id).with_relay(r)))
            })
        });
        Ok(Self {
            document: doc,
            services,
            registry,
            web3,
            agent,
            sessions,
            skills,
            llm,
            agent_config,
            profiles,
            session_idle,
            live,
            turns: crate::turns::Turns::default(),
            restoring: tokio::sync::Mutex::new(()),
            storage,
            _scheduler: scheduler,
            _fanout: fanout,
            relay: relay_handle,
            data_dir_lock,
            _wallet_lock: wallet_lock,
        })
    }

    /// The skills.
    pub fn skills(&self) -> Arc<SkillSet> {
        Arc::clone(&self.skills)
    }

    /// The configured LLM provider (`[llm]` or the environment), if any.
    pub fn provider(&self) -> Option<Arc<dyn ChatProvider>> {
        self.llm.provider()
    }

    /// The loop limits from `[agent]`.
    pub fn agent_config(&self) -> AgentConfig {
        self.agent_config.clone()
    }

    /// Where sessions and the journal are kept (the SQLite file, memory, or PostgreSQL).
    pub fn storage(&self) -> &holdfast_store::Storage {
        &self.storage
    }

    /// The lock this process holds on the data dir (`None` without one). A front end names what it serves with
    /// [`Runtime::announce_address`].
    pub fn data_dir_lock(&self) -> Option<&Arc<holdfast_store::DataDirLock>> {
        self.data_dir_lock.as_ref()
    }

    /// Writes where this process listens into the data dir's lock file, for the message a second process on the
    /// same data dir gets (nothing without a lock).
    pub fn announce_address(&self, address: &str) {
        if let Some(lock) = &self.data_dir_lock {
            lock.describe(&holdfast_store::process_command(), Some(address));
        }
    }

    /// Every agent, by name: the default `assistant` and one per `[agents.NAME]` ([`crate::agents`]).
    pub fn profiles(&self) -> impl Iterator<Item = &Arc<AgentProfile>> {
        self.profiles.values()
    }

    /// The agent named `name`.
    pub fn profile(&self, name: &str) -> Option<Arc<AgentProfile>> {
        self.profiles.get(name).cloned()
    }

    /// The name of the agent session `id` belongs to (recorded when it was opened; the default agent otherwise).
    pub async fn agent_of_session(&self, id: &str) -> Result<String, ToolError> {
        Ok(self
            .sessions
            .link_get(&agent_link(id))
            .await?
            .and_then(|l| l.get("agent").and_then(serde_json::Value::as_str).map(str::to_owned))
            .unwrap_or_else(|| AGENT_ID.to_owned()))
    }

    /// The agent session `ctx` belongs to (the default agent when it names none).
    pub fn profile_of(&self, ctx: &ToolContext) -> Arc<AgentProfile> {
        AgentHandle::from_context(ctx)
            .and_then(|h| self.profiles.get(h.agent_id.as_str()).cloned())
            .or_else(|| self.profiles.get(AGENT_ID).cloned())
            .unwrap_or_else(|| Arc::new(AgentProfile::default_agent(self.agent.clone(), self.agent_config.clone())))
    }

    /// The model `profile` talks to: `[llm]` (or the environment) with the agent's own model, if it names one.
    pub fn provider_for(&self, profile: &AgentProfile) -> Option<Arc<dyn ChatProvider>> {
        match &profile.model {
            Some(model) => LlmConfig { model: Some(model.clone()), ..self.llm.clone() }.provider(),
            None => self.llm.provider(),
        }
    }

    /// An [`Agent`](crate::Agent) for every agent, when a model is configured: the default one first.
    pub fn agents(self: &Arc<Self>) -> Vec<crate::Agent> {
        let mut profiles: Vec<&Arc<AgentProfile>> = self.profiles.values().collect();
        profiles.sort_by_key(|p| p.name != AGENT_ID);
        profiles
            .into_iter()
            .filter_map(|p| {
                self.provider_for(p)
                    .map(|provider| crate::Agent::for_profile(Arc::clone(self), provider, Arc::clone(p)))
            })
            .collect()
    }

    /// The data dir, when one is configured.
    pub fn data_dir(&self) -> Option<&PathBuf> {
        self.services.config.data_dir.as_ref()
    }

    /// Opens a new persisted session of `kind` (`http`, `mcp`, `chat`, `replay`).
    pub async fn open_session(&self, kind: &str) -> Result<(SessionInfo, ToolContext), ToolError> {
        self.open_session_as(kind, AGENT_ID).await
    }

    /// Opens a new session of `kind` for agent `agent`: its tools act for that agent (its memory, its messages).
    /// `not_found` when there is no such agent.
    pub async fn open_session_as(&self, kind: &str, agent: &str) -> Result<(SessionInfo, ToolContext), ToolError> {
        let profile = self.profiles.get(agent).cloned().ok_or_else(|| {
            let known: Vec<&str> = self.profiles.keys().map(String::as_str).collect();
            ToolError::new(ErrorCode::NotFound, format!("`agent`: no agent {agent:?} (agents: {})", known.join(", ")))
        })?;
        let id = format!("s_{}", holdfast_core::confirm::random_id());
        if profile.name != AGENT_ID {
            // Recorded before the session exists: a restart finds whose it is.
            self.sessions.link_merge(&agent_link(&id), serde_json::json!({"agent": profile.name})).await?;
        }
        let info = self.sessions.create(&id, kind).await?;
        let ctx = self.services.new_session(&id);
        profile.attach(&ctx);
        self.live.lock().insert(id, Live::new(ctx.clone()));
        Ok((info, ctx))
    }

    /// A session by id: the one loaded in this process, or one restored from the store — a session an earlier
    /// process (or [`Runtime::unload_idle`]) left there comes back with its registers, context bank and
    /// confirmations as they were last saved. `None` when no such session exists.
    pub async fn session(&self, id: &str) -> Result<Option<ToolContext>, ToolError> {
        match self.loaded(id) {
            Loaded::Live(ctx, check) if !(check && self.missed_a_save(&ctx).await?) => return Ok(Some(ctx)),
            // Its saves still on their way (their callers gone) are answered first, before the lock every reload
            // takes: the state read below then holds them, so the new copy's first save does not collide with them.
            Loaded::Stale(older) => older.saves_settled().await,
            _ => {}
        }
        let _restoring = self.restoring.lock().await;
        // The older copy, if any, stays in the table until its replacement is ready: a failed or abandoned reload
        // leaves it (still marked) for the next use to retry, and its bus, with this instance's subscribers on it,
        // is the one the replacement publishes on.
        let events = match self.loaded(id) {
            // Held by a turn or request meanwhile: used as it is, as any marked copy is (its mark stays).
            Loaded::Live(ctx, _) => return Ok(Some(ctx)),
            Loaded::Absent => None,
            Loaded::Stale(older) => {
                // Cleared before reading: an event that arrives during the reload marks the new copy again.
                older.events.take_remote_activity();
                Some(older.events.clone())
            }
        };
        if self.sessions.get(id).await?.is_none() {
            return Ok(None);
        }
        let restored = match self.sessions.load_state(id).await? {
            Some(stored) => match self.services.restore_stored_on(id, &stored, events) {
                Ok(ctx) => ctx,
                Err(e) => {
                    // Refuse rather than silently start empty: the saved state stays for an operator to inspect.
                    tracing::error!(session = id, "the saved state of this session cannot be read: {e}");
                    return Err(ToolError::internal(format!("session {id}: {e}")));
                }
            },
            None => self.services.new_session_on(id, events),
        };
        if let Some(name) = self
            .sessions
            .link_get(&agent_link(id))
            .await?
            .and_then(|l| l.get("agent").and_then(serde_json::Value::as_str).map(str::to_owned))
        {
            let profile = self.profiles.get(&name).ok_or_else(|| {
                ToolError::new(
                    ErrorCode::ConfigInvalid,
                    format!("session {id} belongs to agent {name:?}, which is no longer configured ([agents.{name}])"),
                )
            })?;
            profile.attach(&restored);
        }
        let ctx = restored.clone();
        self.live.lock().insert(id.to_owned(), Live::new(restored));
        Ok(Some(ctx))
    }

    /// The loaded copy of a session, or `Stale` when it is out of date: another process saved the session since it
    /// was loaded (a save here was refused), or another instance saved it since (its `tool.result` or
    /// `session.saved` arrived) and no turn or request holds it here. [`Runtime::session`] then restores the saved
    /// state on the same event bus, so this instance's subscribers go on receiving the session's events.
    fn loaded(&self, id: &str) -> Loaded {
        let mut live = self.live.lock();
        let Some(entry) = live.get_mut(id) else { return Loaded::Absent };
        let stale = if entry.ctx.is_superseded() {
            tracing::warn!(session = id, "another process saved this session: reloading it");
            true
        } else {
            !entry.ctx.in_use() && entry.ctx.events.has_remote_activity()
        };
        if stale {
            return Loaded::Stale(entry.ctx.clone());
        }
        let now = Instant::now();
        entry.last_used = now;
        let check = !entry.ctx.in_use() && now.duration_since(entry.revision_checked) >= REVISION_CHECK;
        if check {
            entry.revision_checked = now;
        }
        Loaded::Live(entry.ctx.clone(), check)
    }

    /// On a database other instances share: whether one of them saved `ctx`'s session since this copy was saved or
    /// loaded, read from the stored revision — so a reload is not missed when the event that would have said so
    /// was lost. Marks the copy for reloading when so. Never on the SQLite file: no other process writes it.
    async fn missed_a_save(&self, ctx: &ToolContext) -> Result<bool, ToolError> {
        if !matches!(self.storage, holdfast_store::Storage::Postgres(_)) {
            return Ok(false);
        }
        let Some(mine) = ctx.saved_revision() else { return Ok(false) };
        let missed = self.sessions.stored_revision(&ctx.session_id).await?.is_some_and(|stored| stored > mine);
        if missed {
            tracing::info!(session = %ctx.session_id, "another instance saved this session unannounced: reloading it");
            ctx.events.mark_remote_activity();
        }
        Ok(missed)
    }

    /// Marks a session as no longer used by the client that owned it: the next [`Runtime::unload_idle`] pass
    /// unloads it once nothing else holds it (its state stays saved, and [`Runtime::session`] restores it). It is
    /// never dropped while a request, turn or subscriber still holds it, so no second copy of it can appear.
    pub fn close_session(&self, id: &str) {
        if let Some(live) = self.live.lock().get_mut(id) {
            live.last_used = Instant::now().checked_sub(self.session_idle).unwrap_or(live.last_used);
        }
    }

    /// Unloads every session unused for longer than `max_idle` that nothing holds (no turn, request, MCP session
    /// or event subscriber), after saving its state; a session whose state cannot be saved stays loaded. Returns
    /// how many were unloaded.
    pub async fn unload_idle(&self, max_idle: Duration) -> usize {
        let now = Instant::now();
        let candidates: Vec<(String, ToolContext, Instant)> = self
            .live
            .lock()
            .iter()
            .filter(|(_, l)| now.duration_since(l.last_used) >= max_idle && l.ctx.is_idle())
            .map(|(id, l)| (id.clone(), l.ctx.clone(), l.last_used))
            .collect();
        let mut unloaded = 0;
        let _restoring = self.restoring.lock().await;
        for (id, ctx, seen) in candidates {
            // A copy older than what another process saved has nothing of its own to keep: dropped, not saved.
            let outdated = ctx.is_superseded() || ctx.events.has_remote_activity();
            let saved = if outdated { Ok(()) } else { ctx.persist().await };
            drop(ctx);
            if let Err(e) = saved {
                tracing::warn!(session = %id, "an idle session stays loaded: its state could not be saved: {e}");
                continue;
            }
            let mut live = self.live.lock();
            // Used again since it was picked: it stays.
            if live.get(&id).is_some_and(|l| l.last_used == seen && l.ctx.is_idle()) {
                live.remove(&id);
                unloaded += 1;
            }
        }
        if unloaded > 0 {
            tracing::debug!(unloaded, "idle sessions unloaded");
        }
        unloaded
    }

    /// Runs [`Runtime::unload_idle`] with the configured idle time (`[agent] session_idle_secs`, default
    /// [`DEFAULT_SESSION_IDLE`]) until `stop` is cancelled.
    pub fn spawn_idle_unloader(self: &Arc<Self>, stop: tokio_util::sync::CancellationToken) {
        let runtime = Arc::downgrade(self);
        let idle = self.session_idle;
        let every = (idle / 4).clamp(Duration::from_millis(100), Duration::from_secs(30));
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    () = stop.cancelled() => return,
                    () = tokio::time::sleep(every) => {}
                }
                let Some(runtime) = runtime.upgrade() else { return };
                runtime.unload_idle(idle).await;
            }
        });
    }

    /// The one implementation of "the user decided" for every front end: records `decision` on confirmation `id`
    /// as given through `channel` (a user channel: the terminal, the authenticated UI/API, replay's explicit line,
    /// an answered MCP elicitation) and, when approved, runs the approved tool call once in `ctx`.
    pub async fn decide(
        &self,
        ctx: &ToolContext,
        channel: UserChannel,
        id: &str,
        decision: UserDecision,
    ) -> Result<Decided, ToolError> {
        let confirmation = self.services.user_decisions().decide(&ctx.confirmations, channel, id, decision)?;
        Ok(match decision {
            UserDecision::Approve => {
                // The approval is spent by this run only: unused by it, it expires (and that is saved), so no later
                // call of the same action finds it standing — also when the run is dropped part-way (the client
                // that awaited it went away).
                let unused = RetireUnused { ctx, id: &confirmation.id, done: false };
                // This run, and no other call, may use the approval (`ApprovedRun::may_use`): a turn another agent
                // started that repeats the approved call meanwhile is asked again.
                let run = ctx.with_extension(self.services.user_decisions().approved_run(&confirmation));
                let outcome = self.registry.call(&confirmation.tool, confirmation.params.clone(), &run).await;
                if unused.now()
                    && let Err(e) = ctx.persist().await
                {
                    // The call's outcome is still the answer; a later process expires the approval when it restores it.
                    tracing::warn!(confirmation = %confirmation.id, error = %e.message, "an unused approval's expiry could not be saved");
                }
                Decided::Ran(confirmation, outcome)
            }
            UserDecision::Deny => {
                ctx.persist().await?;
                Decided::Denied(confirmation)
            }
        })
    }

    /// Events not relayed to the other instances since the start because the relay's queue was full (each such
    /// session was sent a reload hint instead); `None` without a relay (not on PostgreSQL).
    pub fn relay_dropped_events(&self) -> Option<u64> {
        self.relay.as_ref().map(|r| r.dropped_events())
    }

    /// Whether another instance has a subscriber of `session_id` (its announcement reached this one): only then does
    /// this instance send it the session's events. `false` without a relay (not on PostgreSQL).
    pub fn watched_elsewhere(&self, session_id: &str) -> bool {
        self.relay.as_ref().is_some_and(|r| r.watched_elsewhere(session_id))
    }

    /// Events not sent to the other instances since the start because none of them watched the session (a save
    /// among them went as a reload hint); `None` without a relay (not on PostgreSQL).
    pub fn relay_unwatched_events(&self) -> Option<u64> {
        self.relay.as_ref().map(|r| r.unwatched_events())
    }

    /// Ids of the sessions open in this process.
    pub fn live_sessions(&self) -> Vec<String> {
        self.live.lock().keys().cloned().collect()
    }
}

/// Expires the approval `id` of `ctx` if its run has not used it, when [`RetireUnused::now`] is called at the run's
/// end or, failing that, when the run is dropped part-way (then in memory only: a later process expires an approval
/// it restores anyway).
struct RetireUnused<'a> {
    ctx: &'a ToolContext,
    id: &'a str,
    done: bool,
}

impl RetireUnused<'_> {
    /// Expires it now; true when it was still unused.
    fn now(mut self) -> bool {
        self.done = true;
        self.ctx.confirmations.retire_unused(self.id)
    }
}

impl Drop for RetireUnused<'_> {
    fn drop(&mut self) {
        if !self.done {
            self.ctx.confirmations.retire_unused(self.id);
        }
    }
}

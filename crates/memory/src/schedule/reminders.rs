//! Reminders: persisted in `reminders_items`, delivered by a [`ReminderScheduler`] as a message to the agent (or
//! another target) when due.
//!
//! Delivery is exactly once: a reminder is marked fired (`fired_at` set, only if still unset) in the same
//! transaction that puts its message in the inbox (or the outbox), so two schedulers, or a scheduler started twice,
//! never deliver it twice, and a process that dies while delivering leaves it either delivered or still due. The
//! inbox then starts one turn for it (`holdfast_agent::inbox`). Reminders that came due while the process was down
//! are delivered when the scheduler starts: its first pass runs at once. If the target no longer exists, the
//! reminder goes to the agent's own inbox with a note instead of being lost.
//!
//! **Anti-loop.** A reminder keeps the hop count of the turn that scheduled it (`reminders_items.hops`), so a
//! conversation between agents cannot restart its count by way of a reminder: one to another agent, a group or a
//! channel is one more hop when it fires, and one to the agent itself scheduled in a turn the user did not start
//! carries one more hop than that turn (`schedule_reminder`), so a chain of reminders no user starts ends:
//! scheduling is refused (with a `message.hop_limit` event) when the reminder's hops reach `[memory] max_hops`, and
//! a reminder that reaches the limit by the time it fires is delivered to the scheduling agent itself with a note. A
//! reminder that reaches other agents also passes the anti-loop window between its agent and each recipient when it
//! fires ([`crate::messaging`]): inside one it is deferred, not dropped — it waits (`not_before`) until the last
//! window ends, and the scheduler sleeps until then. An agent may have at most
//! [`MAX_PENDING_REMINDERS`] pending reminders.
//!
//! **Several instances.** Reminders live in the router's store ([`crate::messaging::store`]). On PostgreSQL every
//! instance runs a scheduler over the same table, for the agents it serves ([`ReminderScheduler::only`]); the delivering transaction claims the reminder `FOR UPDATE SKIP
//! LOCKED`, so one instance fires it and the others pass it by. A reminder scheduled on one instance wakes that
//! instance's scheduler; the others find it within [`MAX_NAP`].

use crate::agent_id::AgentId;
use crate::clock::{SharedClock, fmt_time, parse_time};
use crate::error::{MemoryError, Result};
use crate::messaging::MessageRouter;
use crate::messaging::store::{NewReminder, ReminderRow, bad_time};
use crate::messaging::types::{MessageTarget, TargetType};
use chrono::{DateTime, Datelike, Utc};
use serde::Serialize;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;

/// The longest the scheduler sleeps between checks (it also wakes when a reminder is scheduled).
pub const MAX_NAP: Duration = Duration::from_secs(30);
/// A reminder may be scheduled at most this far in the past (it then fires at once); earlier is refused.
pub const PAST_GRACE_SECS: i64 = 60;
/// The most reminders one agent may have pending; scheduling one more is refused with `rate_limited`.
pub const MAX_PENDING_REMINDERS: u32 = 100;

/// A reminder.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Reminder {
    /// `rem_<n>`.
    pub id: String,
    /// The agent that scheduled it.
    pub agent_id: String,
    /// When it is due.
    pub due_at: DateTime<Utc>,
    /// The message delivered, whole.
    pub message: String,
    /// Who receives it (the agent itself by default).
    pub target: MessageTarget,
    /// When it was scheduled.
    pub created_at: DateTime<Utc>,
    /// When it fired, if it has.
    pub fired_at: Option<DateTime<Utc>>,
    /// Agent-to-agent hops of the conversation whose turn scheduled it (0: a turn the user started).
    pub hops: u32,
    /// Who started the turn that scheduled it, when it was not the user (`agent 'mallory'`, an untrusted MCP
    /// client): the reminder's own turn names them, so a reminder another agent talked the agent into scheduling
    /// for itself is not taken for the agent's own note.
    pub asked_by: Option<String>,
}

/// Where a reminder is scheduled from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ScheduledIn<'a> {
    /// The scheduling session: a reminder to the user is announced there when it fires.
    pub session: Option<&'a str>,
    /// Who started the scheduling turn, when it was not the user
    /// ([`holdfast_core::confirm::TurnStarter::not_user`]); `None` for the user's turn.
    pub asked_by: Option<&'a str>,
}

/// Parses `rem_<n>` (or a bare number).
pub fn parse_reminder_id(field: &'static str, id: &str) -> Result<i64> {
    id.trim()
        .trim_start_matches("rem_")
        .parse::<i64>()
        .map_err(|_| MemoryError::invalid(field, "expected a reminder id like \"rem_3\""))
}

/// A reminder row as the reminders list it.
fn to_reminder(row: ReminderRow) -> Result<Reminder> {
    let (id, agent_id, due, message, kind, target_id, created, fired, hops, _session, asked_by) = row;
    let time = |s: &str| parse_time(s).ok_or_else(|| bad_time("reminders_items", s));
    let kind = TargetType::parse(&kind)
        .ok_or_else(|| MemoryError::internal(format!("unknown target type {kind:?} in reminders_items")))?;
    Ok(Reminder {
        id: format!("rem_{id}"),
        agent_id,
        due_at: time(&due)?,
        message,
        target: MessageTarget { kind, id: target_id },
        created_at: time(&created)?,
        fired_at: fired.as_deref().map(time).transpose()?,
        hops,
        asked_by,
    })
}

/// One agent's reminders. Cheap to clone.
#[derive(Clone)]
pub struct Reminders {
    agent: AgentId,
    router: MessageRouter,
    clock: SharedClock,
    wake: Arc<Notify>,
}

impl std::fmt::Debug for Reminders {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reminders").field("agent", &self.agent).finish()
    }
}

impl Reminders {
    /// `agent`'s reminders; `wake` is the scheduler's.
    pub fn new(agent: AgentId, router: MessageRouter, clock: SharedClock, wake: Arc<Notify>) -> Self {
        Self { agent, router, clock, wake }
    }

    /// Now, on the runtime's clock.
    pub fn now(&self) -> DateTime<Utc> {
        self.clock.now()
    }

    /// Schedules a reminder. `target` defaults to the agent itself; it must exist now. A time more than
    /// [`PAST_GRACE_SECS`] in the past is refused (naming `field`). `hops` are those the reminder carries (the
    /// scheduling turn's, one more in a turn the user did not start) and must be under the hop limit. Past
    /// [`MAX_PENDING_REMINDERS`] pending, the reminder is refused.
    pub async fn schedule(
        &self,
        field: &'static str,
        due_at: DateTime<Utc>,
        message: String,
        target: Option<MessageTarget>,
        hops: u32,
    ) -> Result<Reminder> {
        self.schedule_in(ScheduledIn::default(), field, due_at, message, target, hops).await
    }

    /// [`Reminders::schedule`] from a session (`from.session`: a reminder to the user is announced there when it
    /// fires, on whichever instance serves that session, [`crate::MessageRouter::set_session_events`]) in a turn
    /// someone other than the user may have started (`from.asked_by`, kept with the reminder and named when it
    /// fires).
    pub async fn schedule_in(
        &self,
        from: ScheduledIn<'_>,
        field: &'static str,
        due_at: DateTime<Utc>,
        message: String,
        target: Option<MessageTarget>,
        hops: u32,
    ) -> Result<Reminder> {
        if message.trim().is_empty() {
            return Err(MemoryError::invalid("message", "must not be empty"));
        }
        if message.contains('\0') {
            return Err(MemoryError::invalid("message", "must not contain NUL characters"));
        }
        let now = self.clock.now();
        if due_at.year() > 9999 {
            return Err(MemoryError::invalid(field, "must be before the year 10000"));
        }
        if due_at < now - chrono::Duration::seconds(PAST_GRACE_SECS) {
            return Err(MemoryError::invalid(
                field,
                format!("{} is in the past (now is {})", fmt_time(due_at), fmt_time(now)),
            ));
        }
        let target = target.unwrap_or_else(|| MessageTarget::agent(self.agent.as_str()));
        self.router.check_target(&self.agent, &target, hops).await?;
        let new = NewReminder {
            agent_id: self.agent.to_string(),
            due_at: fmt_time(due_at),
            message: message.clone(),
            target: target.clone(),
            created_at: fmt_time(now),
            hops,
            session_id: from.session.map(str::to_owned),
            asked_by: from.asked_by.map(str::to_owned),
        };
        let id = self.router.store().add_reminder(&new, MAX_PENDING_REMINDERS).await?;
        self.wake.notify_one();
        Ok(Reminder {
            id: format!("rem_{id}"),
            agent_id: self.agent.to_string(),
            due_at,
            message,
            target,
            created_at: now,
            fired_at: None,
            hops,
            asked_by: from.asked_by.map(str::to_owned),
        })
    }

    /// The agent's reminders, soonest first (fired ones only when asked).
    pub async fn list(&self, include_fired: bool) -> Result<Vec<Reminder>> {
        let agent = self.agent.to_string();
        self.router.store().reminders(&agent, include_fired).await?.into_iter().map(to_reminder).collect()
    }

    /// Cancels a pending reminder. Returns whether one was cancelled.
    pub async fn cancel(&self, id: &str) -> Result<bool> {
        let n = parse_reminder_id("id", id)?;
        let agent = self.agent.to_string();
        self.router.store().cancel_reminder(&agent, n).await
    }
}

/// Delivers due reminders of the agents a runtime serves (every agent, unless [`ReminderScheduler::only`] says which).
#[derive(Clone)]
pub struct ReminderScheduler {
    router: MessageRouter,
    clock: SharedClock,
    wake: Arc<Notify>,
    agents: Option<Arc<[String]>>,
}

impl std::fmt::Debug for ReminderScheduler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReminderScheduler").finish_non_exhaustive()
    }
}

/// A running scheduler task; dropping it (or [`SchedulerHandle::stop`]) stops the task.
#[derive(Debug)]
pub struct SchedulerHandle {
    task: tokio::task::JoinHandle<()>,
}

impl SchedulerHandle {
    /// Stops the scheduler.
    pub fn stop(self) {
        drop(self);
    }
}

impl Drop for SchedulerHandle {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl ReminderScheduler {
    /// A scheduler over `router`'s store, delivering through `router`.
    pub fn new(router: MessageRouter, clock: SharedClock, wake: Arc<Notify>) -> Self {
        Self { router, clock, wake, agents: None }
    }

    /// Fires only the reminders that `agents` scheduled: those an instance serves. A reminder of an agent removed
    /// from the configuration then never fires here, and on a shared database another instance that still serves
    /// that agent fires it.
    #[must_use]
    pub fn only(mut self, agents: Vec<String>) -> Self {
        self.agents = Some(agents.into());
        self
    }

    /// Delivers every reminder due now that has not fired, each exactly once, oldest due first. Returns them.
    pub async fn fire_due(&self) -> Result<Vec<Reminder>> {
        let now = fmt_time(self.clock.now());
        let agents = self.agents.clone();
        let rows = self.router.store().due_reminders(&now, agents.as_deref()).await?;
        // A row this build cannot read is passed by (and logged), not allowed to stop every other reminder.
        let due = rows.into_iter().filter_map(|row| {
            let (id, session) = (row.0, row.9.clone());
            to_reminder(row)
                .map(|r| (r, session))
                .map_err(|e| tracing::error!(reminder = id, error = %e, "unreadable reminder passed by"))
                .ok()
        });
        let mut fired = Vec::new();
        for (mut reminder, session) in due {
            let at = self.clock.now();
            if self.deliver(&reminder, session, at).await? {
                reminder.fired_at = Some(at);
                fired.push(reminder);
            }
        }
        Ok(fired)
    }

    /// Delivers `r` (scheduled in `session`) and marks it fired at `at`, in one transaction; `false` when it had
    /// already fired.
    async fn deliver(&self, r: &Reminder, session: Option<String>, at: DateTime<Utc>) -> Result<bool> {
        let fires = (parse_reminder_id("id", &r.id)?, fmt_time(at));
        let Ok(agent) = AgentId::new(&r.agent_id) else {
            tracing::warn!(reminder = %r.id, "reminder of an invalid agent id dropped");
            return Ok(false);
        };
        let mut metadata = serde_json::json!({"kind": "reminder", "reminder_id": r.id, "due_at": fmt_time(r.due_at)});
        if let Some(asked_by) = &r.asked_by {
            metadata["asked_by"] = asked_by.clone().into();
        }
        let sent = self
            .router
            .send_reminder(&agent, &r.target, r.message.clone(), Some(metadata.clone()), r.hops, fires.clone(), session)
            .await;
        match sent {
            Ok(_) => Ok(true),
            Err(MemoryError::AlreadyFired) => Ok(false),
            Err(MemoryError::Deferred { to, until }) => {
                tracing::info!(reminder = %r.id, recipient = %to, until = %until, "reminder waits for the anti-loop window");
                Ok(false)
            }
            Err(e @ (MemoryError::Store(_) | MemoryError::Internal(_))) => {
                // The store failed, not the target: still due, the next pass tries again.
                tracing::error!(reminder = %r.id, error = %e, "reminder could not be delivered; it stays due");
                Ok(false)
            }
            Err(e) => {
                tracing::warn!(reminder = %r.id, error = %e, "reminder target failed; delivering to the agent instead");
                let note = format!("Reminder (could not be delivered to {}: {e}): {}", r.target.describe(), r.message);
                let own = MessageTarget::agent(agent.as_str());
                // One more hop, as a reminder to itself from a turn no user started is: a chain of reminders to a
                // target that keeps failing (a group of the agent alone) ends at the hop limit.
                let hops = r.hops.saturating_add(1);
                match self.router.send_reminder(&agent, &own, note, Some(metadata), hops, fires, None).await {
                    Ok(_) => Ok(true),
                    Err(MemoryError::AlreadyFired) => Ok(false),
                    Err(e) => {
                        // Still due: the next pass tries again (nothing was marked fired).
                        tracing::error!(reminder = %r.id, error = %e, "reminder could not be delivered");
                        Ok(false)
                    }
                }
            }
        }
    }

    /// When the next pending reminder is due.
    pub async fn next_due(&self) -> Result<Option<DateTime<Utc>>> {
        let agents = self.agents.clone();
        let next = self.router.store().next_due(agents.as_deref()).await?;
        Ok(next.as_deref().and_then(parse_time))
    }

    /// Starts the scheduler task: it delivers overdue reminders at once, then sleeps until the next is due (at
    /// most [`MAX_NAP`], waking early when one is scheduled).
    pub fn start(&self) -> SchedulerHandle {
        let this = self.clone();
        let task = tokio::spawn(async move {
            loop {
                if let Err(e) = this.fire_due().await {
                    tracing::error!(error = %e, "reminder scheduler pass failed");
                }
                let nap = match this.next_due().await {
                    Ok(Some(next)) => (next - this.clock.now()).to_std().unwrap_or(Duration::ZERO).min(MAX_NAP),
                    Ok(None) => MAX_NAP,
                    Err(_) => MAX_NAP,
                };
                tokio::select! {
                    _ = tokio::time::sleep(nap.max(Duration::from_millis(5))) => {}
                    _ = this.wake.notified() => {}
                }
            }
        });
        SchedulerHandle { task }
    }
}

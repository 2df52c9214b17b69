//! `schedule_reminder`.

use super::resolve;
use crate::agent::AgentHandle;
use crate::clock::fmt_time;
use crate::error::MemoryError;
use crate::messaging::{MessageTarget, SendOrigin};
use crate::schedule::when::{add, parse_absolute, parse_relative};
use holdfast_core::{AiTool, ToolContext, ToolError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// Parameters of `schedule_reminder`: exactly one of `at` and `in`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScheduleReminderInput {
    /// Absolute time, RFC 3339, e.g. `2026-05-01T09:00:00Z` (null when using `in`).
    pub at: Option<String>,
    /// Relative time from now, e.g. `20m`, `1h30m`, `2 days` (null when using `at`).
    #[serde(rename = "in")]
    pub in_: Option<String>,
    /// What to be reminded of, delivered whole.
    pub message: String,
    /// Who receives it (null: yourself, as a message in your inbox).
    pub target: Option<MessageTarget>,
}

/// Result of `schedule_reminder`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct ScheduleReminderOutput {
    /// True when scheduled.
    pub success: bool,
    /// The reminder's id, `rem_<n>`.
    pub reminder_id: String,
    /// When it will be delivered, RFC 3339 UTC.
    pub due_at: String,
    /// A sentence saying when and to whom.
    pub details: String,
}

/// `schedule_reminder`: a persisted reminder, delivered when due (also after a restart).
#[derive(Debug, Clone)]
pub struct ScheduleReminderTool {
    handle: AgentHandle,
}

impl ScheduleReminderTool {
    /// The tool for `handle`'s agent.
    pub fn new(handle: AgentHandle) -> Self {
        Self { handle }
    }
}

impl AiTool for ScheduleReminderTool {
    type Input = ScheduleReminderInput;
    type Output = ScheduleReminderOutput;

    fn name(&self) -> &str {
        "schedule_reminder"
    }

    fn description(&self) -> &str {
        "Schedule a reminder: give `at` (RFC 3339 time) or `in` (e.g. \"20m\", \"2h\", \"1 day\"), not both. When \
         due it is delivered as a message to you (or to `target`: the user, an agent, a group or a channel); one to \
         other agents that falls inside your anti-loop cooldown with them waits until the cooldown ends. Reminders \
         are persisted; one that came due while the runtime was down is delivered once at start-up."
    }

    fn examples(&self) -> Vec<serde_json::Value> {
        vec![
            json!({"at": null, "in": "20m", "message": "Check whether the deploy finished.", "target": null}),
            json!({"at": "2030-05-01T09:00:00Z", "in": null, "message": "Stand-up", "target": {"type": "user", "id": null}}),
        ]
    }

    async fn execute(
        &self,
        input: ScheduleReminderInput,
        ctx: &ToolContext,
    ) -> Result<ScheduleReminderOutput, ToolError> {
        let handle = resolve(&self.handle, ctx);
        let now = handle.reminders.now();
        let (field, due) = match (input.at.as_deref(), input.in_.as_deref()) {
            (Some(at), None) => ("at", parse_absolute("at", at)?),
            (None, Some(rel)) => ("in", add("in", now, parse_relative("in", rel)?)?),
            (Some(_), Some(_)) => return Err(MemoryError::invalid("at", "give either `at` or `in`, not both").into()),
            (None, None) => {
                return Err(MemoryError::invalid("at", "give `at` (RFC 3339 time) or `in` (e.g. \"20m\")").into());
            }
        };
        // A reminder to the agent itself scheduled in a turn the user did not start (another agent's message, a
        // reminder) is one more hop, as a reminder to anyone else is when it fires: a chain of reminders no user
        // starts ends at `[memory] max_hops`.
        let origin = SendOrigin::session(ctx);
        let asked_by = holdfast_core::confirm::TurnStarter::not_user(ctx);
        let not_user = asked_by.is_some();
        let target = input.target.clone().unwrap_or_else(|| MessageTarget::agent(handle.agent_id.as_str()));
        let to_self = target == MessageTarget::agent(handle.agent_id.as_str());
        let hops = origin.hops + u32::from(not_user && to_self);
        let from = crate::ScheduledIn { session: origin.session_id.as_deref(), asked_by: asked_by.as_deref() };
        let scheduled = handle.reminders.schedule_in(from, field, due, input.message, Some(target.clone()), hops);
        let reminder = match scheduled.await {
            Ok(reminder) => reminder,
            Err(e @ MemoryError::HopLimit { .. }) => {
                ctx.events.publish(holdfast_core::event::EventPayload::MessageHopLimit(
                    holdfast_core::event::MessageHopLimit {
                        agent_id: handle.agent_id.to_string(),
                        target: target.describe(),
                        hops,
                    },
                ));
                return Err(e.into());
            }
            Err(e) => return Err(e.into()),
        };
        let due_at = fmt_time(reminder.due_at);
        let to = if reminder.target == MessageTarget::agent(handle.agent_id.as_str()) {
            "you".to_owned()
        } else {
            reminder.target.describe()
        };
        Ok(ScheduleReminderOutput {
            success: true,
            details: format!("Reminder {} will be delivered to {to} at {due_at}", reminder.id),
            reminder_id: reminder.id,
            due_at,
        })
    }
}

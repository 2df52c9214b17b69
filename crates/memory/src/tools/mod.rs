//! The built-in tools. Each holds an [`AgentHandle`] and acts for that agent, unless the session has a handle
//! attached ([`AgentHandle::attach`]), which then wins.

mod memory_tools;
mod message_tools;
mod reminder_tool;
mod task_tool;

pub use memory_tools::{
    AppendMemoryInput, AppendMemoryOutput, AppendMemoryTool, ListMemoriesInput, ListMemoriesOutput, ListMemoriesTool,
    MemorySummary, ReplaceInMemoryInput, ReplaceInMemoryOutput, ReplaceInMemoryTool, SearchHitView, SearchMemoryInput,
    SearchMemoryOutput, SearchMemoryTool, UpdateMemoryInput, UpdateMemoryOutput, UpdateMemoryTool,
};
pub use message_tools::{
    MetadataEntry, SendMessageInput, SendMessageOutput, SendMessageTool, SendToGroupInput, SendToGroupTool,
};
pub use reminder_tool::{ScheduleReminderInput, ScheduleReminderOutput, ScheduleReminderTool};
pub use task_tool::{StepView, TaskOp, TaskView, TrackTaskInput, TrackTaskOutput, TrackTaskTool};

use crate::agent::AgentHandle;
use crate::blocks::memory::WriteOutcome;
use holdfast_core::ToolContext;
use holdfast_core::event::{EventPayload, MemoryUpdate};

/// The handle a tool acts with: the session's attached handle if any, else the tool's own.
pub(crate) fn resolve(own: &AgentHandle, ctx: &ToolContext) -> AgentHandle {
    AgentHandle::from_context(ctx).map(|h| (*h).clone()).unwrap_or_else(|| own.clone())
}

/// Publishes `memory.update` for a successful edit.
pub(crate) fn publish_memory_update(ctx: &ToolContext, handle: &AgentHandle, outcome: &WriteOutcome, tool: &str) {
    if !ctx.events.has_subscribers() {
        return;
    }
    let b = &outcome.block;
    ctx.events.publish(EventPayload::MemoryUpdate(MemoryUpdate {
        agent_id: handle.agent_id.to_string(),
        label: b.label.clone(),
        op: if outcome.created { "create" } else { outcome.op.as_str() }.to_owned(),
        tool: tool.to_owned(),
        value: b.value.clone(),
        description: b.description.clone(),
        permission: b.permission.as_str().to_owned(),
        chars: b.chars(),
        char_limit: b.char_limit,
        over_budget_by: b.over_budget_by(),
    }));
}

/// Saturating usize → u64 for outputs.
pub(crate) fn n(v: usize) -> u64 {
    u64::try_from(v).unwrap_or(u64::MAX)
}

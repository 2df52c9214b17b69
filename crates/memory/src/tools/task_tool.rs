//! `track_task`: create, update, complete, list and delete ADHD-friendly tasks.

use super::{n, resolve};
use crate::agent::AgentHandle;
use crate::clock::fmt_time;
use crate::error::MemoryError;
use crate::schedule::tasks::{NewTask, Priority, Task, TaskFilter, TaskPatch, TaskStatus};
use crate::schedule::when::parse_when;
use chrono::{DateTime, Utc};
use holdfast_core::{AiTool, ToolContext, ToolError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// What `track_task` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TaskOp {
    /// New task: `title` required; `notes`, `due`, `priority`, `steps` optional.
    Create,
    /// Change a task: `id` required; any of `title`, `notes`, `due`, `priority`, `status`, `steps`.
    Update,
    /// Finish a task (`id`), or one step of it (`id` + `step`).
    Complete,
    /// List tasks: open ones by default; `status` or `include_done` to widen.
    List,
    /// Delete a task (`id`).
    Delete,
}

impl TaskOp {
    fn as_str(self) -> &'static str {
        match self {
            Self::Create => "create",
            Self::Update => "update",
            Self::Complete => "complete",
            Self::List => "list",
            Self::Delete => "delete",
        }
    }
}

/// Parameters of `track_task`. Fields an operation does not use must be null.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TrackTaskInput {
    /// `create`, `update`, `complete`, `list` or `delete`.
    pub op: TaskOp,
    /// The task's id (update, complete, delete).
    pub id: Option<u64>,
    /// Short title (create; update).
    pub title: Option<String>,
    /// Longer notes (create; update — empty clears).
    pub notes: Option<String>,
    /// Due time: RFC 3339 or relative like "in 2h", "3d" (create; update — empty clears).
    pub due: Option<String>,
    /// `low`, `normal`, `high` or `urgent` (create, default normal; update).
    pub priority: Option<Priority>,
    /// `todo`, `in_progress`, `blocked` or `done` (update; list filter).
    pub status: Option<TaskStatus>,
    /// Small concrete steps, in order (create; update replaces them all).
    pub steps: Option<Vec<String>>,
    /// The 1-based step to mark done (complete).
    pub step: Option<u32>,
    /// Include finished tasks (list).
    pub include_done: Option<bool>,
}

/// One step in a task view.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct StepView {
    /// 1-based position.
    pub number: u64,
    /// What to do.
    pub text: String,
    /// Done?
    pub done: bool,
}

/// A task as `track_task` shows it: the next step first.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct TaskView {
    /// Id.
    pub id: u64,
    /// Title.
    pub title: String,
    /// The next step to do (null when there are no open steps).
    pub next_step: Option<String>,
    /// Its 1-based number.
    pub next_step_number: Option<u64>,
    /// Status.
    pub status: TaskStatus,
    /// Priority.
    pub priority: Priority,
    /// Due time, RFC 3339.
    pub due_at: Option<String>,
    /// True when due and not done.
    pub overdue: bool,
    /// Steps done so far.
    pub steps_done: u64,
    /// All steps, in order.
    pub steps: Vec<StepView>,
    /// Notes.
    pub notes: Option<String>,
    /// Created, RFC 3339.
    pub created_at: String,
    /// Last changed, RFC 3339.
    pub updated_at: String,
    /// Completed, RFC 3339.
    pub completed_at: Option<String>,
}

impl TaskView {
    fn new(t: &Task, now: DateTime<Utc>) -> Self {
        let next = t.next_step();
        Self {
            id: t.id,
            title: t.title.clone(),
            next_step: next.map(|(_, s)| s.text.clone()),
            next_step_number: next.map(|(i, _)| n(i)),
            status: t.status,
            priority: t.priority,
            due_at: t.due_at.map(fmt_time),
            overdue: t.status != TaskStatus::Done && t.due_at.is_some_and(|d| d < now),
            steps_done: n(t.steps.iter().filter(|s| s.done).count()),
            steps: t
                .steps
                .iter()
                .enumerate()
                .map(|(i, s)| StepView { number: n(i + 1), text: s.text.clone(), done: s.done })
                .collect(),
            notes: t.notes.clone(),
            created_at: fmt_time(t.created_at),
            updated_at: fmt_time(t.updated_at),
            completed_at: t.completed_at.map(fmt_time),
        }
    }
}

/// Result of `track_task`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct TrackTaskOutput {
    /// True when the operation succeeded.
    pub success: bool,
    /// What happened, and the next step when there is one.
    pub message: String,
    /// The task created, changed, completed or deleted (null for list).
    pub task: Option<TaskView>,
    /// The tasks listed (empty for other operations): open first, then by priority, due time and id.
    pub tasks: Vec<TaskView>,
}

/// `track_task`.
#[derive(Debug, Clone)]
pub struct TrackTaskTool {
    handle: AgentHandle,
}

impl TrackTaskTool {
    /// The tool for `handle`'s agent.
    pub fn new(handle: AgentHandle) -> Self {
        Self { handle }
    }
}

fn require_id(input: &TrackTaskInput) -> Result<u64, MemoryError> {
    input.id.ok_or_else(|| MemoryError::invalid("id", format!("is required for op {}", input.op.as_str())))
}

/// Refuses fields an operation would silently ignore (null, empty strings and `false` count as absent).
fn refuse_unused(input: &TrackTaskInput) -> Result<(), MemoryError> {
    let set = |s: &Option<String>| s.as_deref().is_some_and(|s| !s.is_empty());
    let present = [
        ("id", input.id.is_some()),
        ("title", set(&input.title)),
        ("notes", set(&input.notes)),
        ("due", set(&input.due)),
        ("priority", input.priority.is_some()),
        ("status", input.status.is_some()),
        ("steps", input.steps.as_ref().is_some_and(|s| !s.is_empty())),
        ("step", input.step.is_some()),
        ("include_done", input.include_done == Some(true)),
    ];
    let allowed: &[&str] = match input.op {
        TaskOp::Create => &["title", "notes", "due", "priority", "steps"],
        TaskOp::Update => &["id", "title", "notes", "due", "priority", "status", "steps"],
        TaskOp::Complete => &["id", "step"],
        TaskOp::List => &["status", "include_done"],
        TaskOp::Delete => &["id"],
    };
    match present.iter().find(|(name, is_set)| *is_set && !allowed.contains(name)) {
        Some((name, _)) => {
            Err(MemoryError::invalid(*name, format!("is not used by op {}; set it to null", input.op.as_str())))
        }
        None => Ok(()),
    }
}

impl AiTool for TrackTaskTool {
    type Input = TrackTaskInput;
    type Output = TrackTaskOutput;

    fn name(&self) -> &str {
        "track_task"
    }

    fn description(&self) -> &str {
        "Track tasks, ADHD-friendly: break work into small steps and the next step is always shown first. \
         op=create {title, notes?, due?, priority?, steps?}; op=update {id, any of title/notes/due/priority/status/\
         steps}; op=complete {id, step?} (a step, or the whole task); op=list {status?, include_done?}; \
         op=delete {id}. Fields an op does not use must be null."
    }

    fn examples(&self) -> Vec<serde_json::Value> {
        vec![
            json!({"op": "create", "id": null, "title": "File taxes", "notes": null, "due": "in 3d", "priority": "high",
                   "status": null, "steps": ["Find last year's return", "Download bank statements", "Fill in the form"],
                   "step": null, "include_done": null}),
            json!({"op": "complete", "id": 1, "title": null, "notes": null, "due": null, "priority": null, "status": null,
                   "steps": null, "step": 1, "include_done": null}),
            json!({"op": "list", "id": null, "title": null, "notes": null, "due": null, "priority": null, "status": null,
                   "steps": null, "step": null, "include_done": null}),
            json!({"op": "delete", "id": 1, "title": null, "notes": null, "due": null, "priority": null, "status": null,
                   "steps": null, "step": null, "include_done": null}),
            json!({"op": "update", "id": 1, "title": null, "notes": "Ask Sam about receipts", "due": null,
                   "priority": "urgent", "status": "in_progress", "steps": null, "step": null, "include_done": null}),
        ]
    }

    async fn execute(&self, input: TrackTaskInput, ctx: &ToolContext) -> Result<TrackTaskOutput, ToolError> {
        let handle = resolve(&self.handle, ctx);
        let tasks = &handle.tasks;
        refuse_unused(&input)?;
        let now = tasks.now();
        let due = |text: &Option<String>| -> Result<Option<Option<DateTime<Utc>>>, MemoryError> {
            match text.as_deref() {
                None => Ok(None),
                Some(s) if s.trim().is_empty() => Ok(Some(None)),
                Some(s) => Ok(Some(Some(parse_when("due", s, now)?))),
            }
        };
        let one = |task: &Task, message: String| TrackTaskOutput {
            success: true,
            message,
            task: Some(TaskView::new(task, now)),
            tasks: Vec::new(),
        };
        let with_next = |task: &Task| match task.next_step() {
            Some((i, s)) => format!(" Next step ({i}/{}): {}", task.steps.len(), s.text),
            None => String::new(),
        };
        match input.op {
            TaskOp::Create => {
                let title =
                    input.title.clone().ok_or_else(|| MemoryError::invalid("title", "is required for op create"))?;
                let task = tasks
                    .create(NewTask {
                        title,
                        notes: input.notes.clone(),
                        due_at: due(&input.due)?.flatten(),
                        priority: input.priority.unwrap_or_default(),
                        steps: input.steps.clone().unwrap_or_default(),
                    })
                    .await?;
                let msg = format!("Created task {} '{}'.{}", task.id, task.title, with_next(&task));
                Ok(one(&task, msg))
            }
            TaskOp::Update => {
                let id = require_id(&input)?;
                let patch = TaskPatch {
                    title: input.title.clone().filter(|t| !t.is_empty()),
                    notes: input.notes.clone().map(|n| Some(n).filter(|n| !n.is_empty())),
                    due_at: due(&input.due)?,
                    priority: input.priority,
                    status: input.status,
                    steps: input.steps.clone().filter(|s| !s.is_empty()),
                };
                let task = tasks.update(id, patch).await?;
                let msg = format!("Updated task {} '{}'.{}", task.id, task.title, with_next(&task));
                Ok(one(&task, msg))
            }
            TaskOp::Complete => {
                let id = require_id(&input)?;
                let step = input.step.map(|s| usize::try_from(s).unwrap_or(usize::MAX));
                let (task, msg) = tasks.complete(id, step).await?;
                Ok(one(&task, msg))
            }
            TaskOp::List => {
                let list = tasks
                    .list(TaskFilter { status: input.status, include_done: input.include_done.unwrap_or(false) })
                    .await?;
                let views: Vec<TaskView> = list.iter().map(|t| TaskView::new(t, now)).collect();
                let message = match list.first() {
                    None => "No tasks.".to_owned(),
                    Some(first) => {
                        let next = match first.next_step() {
                            Some((_, s)) => format!("; next step: {}", s.text),
                            None => String::new(),
                        };
                        format!("{} task(s). Top: {} '{}'{next}", list.len(), first.id, first.title)
                    }
                };
                Ok(TrackTaskOutput { success: true, message, task: None, tasks: views })
            }
            TaskOp::Delete => {
                let id = require_id(&input)?;
                let task = tasks.delete(id).await?;
                Ok(one(&task, format!("Deleted task {} '{}'.", task.id, task.title)))
            }
        }
    }
}

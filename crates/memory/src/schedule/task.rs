//! What a task is: its fields, priority, status and steps. [`super::task_store`] keeps tasks, [`super::tasks`] edits
//! them.

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How urgent a task is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "snake_case")]
pub enum Priority {
    /// Whenever.
    Low,
    /// The default.
    #[default]
    Normal,
    /// Soon.
    High,
    /// Now.
    Urgent,
}

/// Where a task stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    /// Not started.
    #[default]
    Todo,
    /// Started.
    InProgress,
    /// Waiting on something.
    Blocked,
    /// Finished.
    Done,
}

/// One small step of a task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TaskStep {
    /// What to do.
    pub text: String,
    /// Whether it is done.
    pub done: bool,
}

/// A task.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Task {
    /// Id (unique per database).
    pub id: u64,
    /// Title.
    pub title: String,
    /// Notes.
    pub notes: Option<String>,
    /// Due time.
    pub due_at: Option<DateTime<Utc>>,
    /// Priority.
    pub priority: Priority,
    /// Status.
    pub status: TaskStatus,
    /// Steps, in order.
    pub steps: Vec<TaskStep>,
    /// Created.
    pub created_at: DateTime<Utc>,
    /// Last changed.
    pub updated_at: DateTime<Utc>,
    /// When it was completed.
    pub completed_at: Option<DateTime<Utc>>,
}

impl Task {
    /// The first step not done yet, with its 1-based number.
    pub fn next_step(&self) -> Option<(usize, &TaskStep)> {
        self.steps.iter().enumerate().find(|(_, s)| !s.done).map(|(i, s)| (i + 1, s))
    }
}

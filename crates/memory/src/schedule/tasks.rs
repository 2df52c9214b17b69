//! Tasks, ADHD-friendly: a title, notes, a due time, a priority, a status, and optional small steps. The next
//! undone step is always shown first, so the next action is never buried. Persisted in `tasks_items` by a
//! [`TaskStore`] (the SQLite file, or PostgreSQL).

use crate::agent_id::AgentId;
use crate::clock::SharedClock;
use crate::error::{MemoryError, Result};
use crate::schedule::task_store::{TaskEdit, TaskStore};
use chrono::{DateTime, Utc};
use std::sync::Arc;

pub use super::task::{Priority, Task, TaskStatus, TaskStep};

/// Longest title.
pub const MAX_TITLE_CHARS: usize = 200;
/// Longest notes.
pub const MAX_NOTES_CHARS: usize = 4000;
/// Most steps per task.
pub const MAX_STEPS: usize = 30;
/// Longest step: steps are meant to be small.
pub const MAX_STEP_CHARS: usize = 200;

/// A new task.
#[derive(Debug, Clone, Default)]
pub struct NewTask {
    /// Title (required).
    pub title: String,
    /// Notes.
    pub notes: Option<String>,
    /// Due time.
    pub due_at: Option<DateTime<Utc>>,
    /// Priority.
    pub priority: Priority,
    /// Steps.
    pub steps: Vec<String>,
}

/// Changes to a task; `None` leaves a field as it is.
#[derive(Debug, Clone, Default)]
pub struct TaskPatch {
    /// New title.
    pub title: Option<String>,
    /// New notes (`Some(None)` clears).
    pub notes: Option<Option<String>>,
    /// New due time (`Some(None)` clears).
    pub due_at: Option<Option<DateTime<Utc>>>,
    /// New priority.
    pub priority: Option<Priority>,
    /// New status.
    pub status: Option<TaskStatus>,
    /// New steps (replacing all, none done).
    pub steps: Option<Vec<String>>,
}

/// Which tasks to list.
#[derive(Debug, Clone, Copy, Default)]
pub struct TaskFilter {
    /// Only this status.
    pub status: Option<TaskStatus>,
    /// Include finished tasks (when no status is given).
    pub include_done: bool,
}

/// One agent's tasks. Cheap to clone.
#[derive(Clone)]
pub struct TaskList {
    agent: AgentId,
    store: Arc<dyn TaskStore>,
    clock: SharedClock,
}

impl std::fmt::Debug for TaskList {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskList").field("agent", &self.agent).finish()
    }
}

/// Checks a title.
pub fn check_title(title: &str) -> Result<String> {
    let t = title.trim();
    if t.is_empty() {
        return Err(MemoryError::invalid("title", "must not be empty"));
    }
    if t.chars().count() > MAX_TITLE_CHARS {
        return Err(MemoryError::invalid(
            "title",
            format!("is longer than {MAX_TITLE_CHARS} characters; put details in `notes`"),
        ));
    }
    Ok(t.to_owned())
}

/// Checks notes (empty clears them).
pub fn check_notes(notes: &str) -> Result<Option<String>> {
    if notes.chars().count() > MAX_NOTES_CHARS {
        return Err(MemoryError::invalid("notes", format!("is longer than {MAX_NOTES_CHARS} characters")));
    }
    Ok(Some(notes.to_owned()).filter(|n| !n.trim().is_empty()))
}

/// Checks steps: at most [`MAX_STEPS`], each non-empty and at most [`MAX_STEP_CHARS`].
pub fn check_steps(steps: &[String]) -> Result<Vec<TaskStep>> {
    if steps.len() > MAX_STEPS {
        return Err(MemoryError::invalid("steps", format!("has {} steps; at most {MAX_STEPS}", steps.len())));
    }
    steps
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let t = s.trim();
            if t.is_empty() {
                Err(MemoryError::invalid(format!("steps.{i}"), "must not be empty"))
            } else if t.chars().count() > MAX_STEP_CHARS {
                Err(MemoryError::invalid(
                    format!("steps.{i}"),
                    format!("is longer than {MAX_STEP_CHARS} characters; split it into smaller steps"),
                ))
            } else {
                Ok(TaskStep { text: t.to_owned(), done: false })
            }
        })
        .collect()
}

impl TaskList {
    /// `agent`'s tasks in `store`.
    pub fn new(agent: AgentId, store: Arc<dyn TaskStore>, clock: SharedClock) -> Self {
        Self { agent, store, clock }
    }

    /// Now, on the runtime's clock.
    pub fn now(&self) -> DateTime<Utc> {
        self.clock.now()
    }

    /// Creates a task.
    pub async fn create(&self, new: NewTask) -> Result<Task> {
        let title = check_title(&new.title)?;
        let notes = match new.notes {
            Some(n) => check_notes(&n)?,
            None => None,
        };
        let steps = check_steps(&new.steps)?;
        let now = self.clock.now();
        let mut task = Task {
            id: 0,
            title,
            notes,
            due_at: new.due_at,
            priority: new.priority,
            status: TaskStatus::Todo,
            steps,
            created_at: now,
            updated_at: now,
            completed_at: None,
        };
        let t = task.clone();
        task.id = self.store.insert(self.agent.as_str(), &t).await?;
        Ok(task)
    }

    /// One task.
    pub async fn get(&self, id: u64) -> Result<Task> {
        self.store.get(self.agent.as_str(), id).await
    }

    /// Applies `f` to the task in the store's transaction, stamping it updated now.
    async fn mutate(
        &self,
        id: u64,
        f: impl FnOnce(&mut Task, DateTime<Utc>) -> Result<String> + Send + 'static,
    ) -> Result<(Task, String)> {
        let now = self.clock.now();
        let edit: TaskEdit = Box::new(move |task| {
            let said = f(task, now)?;
            task.updated_at = now;
            Ok(said)
        });
        self.store.modify(self.agent.as_str(), id, edit).await
    }

    /// Applies a patch. Setting the status to `done` records the completion time; any other status clears it.
    pub async fn update(&self, id: u64, patch: TaskPatch) -> Result<Task> {
        let title = patch.title.as_deref().map(check_title).transpose()?;
        let notes = match patch.notes {
            Some(Some(n)) => Some(check_notes(&n)?),
            Some(None) => Some(None),
            None => None,
        };
        let steps = patch.steps.as_deref().map(check_steps).transpose()?;
        let (task, _) = self
            .mutate(id, move |t, now| {
                if let Some(title) = title {
                    t.title = title;
                }
                if let Some(notes) = notes {
                    t.notes = notes;
                }
                if let Some(due) = patch.due_at {
                    t.due_at = due;
                }
                if let Some(p) = patch.priority {
                    t.priority = p;
                }
                if let Some(steps) = steps {
                    t.steps = steps;
                }
                if let Some(s) = patch.status {
                    set_status(t, s, now);
                }
                Ok(String::new())
            })
            .await?;
        Ok(task)
    }

    /// Completes one step (1-based), or the whole task when `step` is `None`. Completing the last open step
    /// completes the task. Returns the task and a sentence saying what happened and what is next.
    pub async fn complete(&self, id: u64, step: Option<usize>) -> Result<(Task, String)> {
        self.mutate(id, move |t, now| {
            let Some(n) = step else {
                t.steps.iter_mut().for_each(|s| s.done = true);
                set_status(t, TaskStatus::Done, now);
                return Ok(format!("Task {} '{}' is done.", t.id, t.title));
            };
            let count = t.steps.len();
            let Some(s) = n.checked_sub(1).and_then(|i| t.steps.get_mut(i)) else {
                return Err(MemoryError::invalid("step", format!("task {} has {count} steps; pick 1–{count}", t.id)));
            };
            let already = s.done;
            s.done = true;
            let mut msg = if already { format!("Step {n} was already done.") } else { format!("Step {n} done.") };
            match t.next_step() {
                Some((next, s)) => {
                    msg.push_str(&format!(" Next step ({next}/{count}): {}", s.text));
                    if t.status == TaskStatus::Todo {
                        t.status = TaskStatus::InProgress;
                    }
                }
                None => {
                    set_status(t, TaskStatus::Done, now);
                    msg.push_str(&format!(" That was the last step: task {} '{}' is done.", t.id, t.title));
                }
            }
            Ok(msg)
        })
        .await
    }

    /// Tasks, open ones first, then by priority (urgent first), due time (soonest first, none last) and id.
    pub async fn list(&self, filter: TaskFilter) -> Result<Vec<Task>> {
        let mut tasks = self.store.list(self.agent.as_str()).await?;
        tasks.retain(|t| match filter.status {
            Some(s) => t.status == s,
            None => filter.include_done || t.status != TaskStatus::Done,
        });
        tasks.sort_by(|a, b| {
            (a.status == TaskStatus::Done)
                .cmp(&(b.status == TaskStatus::Done))
                .then(b.priority.cmp(&a.priority))
                .then_with(|| match (a.due_at, b.due_at) {
                    (Some(x), Some(y)) => x.cmp(&y),
                    (Some(_), None) => std::cmp::Ordering::Less,
                    (None, Some(_)) => std::cmp::Ordering::Greater,
                    (None, None) => std::cmp::Ordering::Equal,
                })
                .then(a.id.cmp(&b.id))
        });
        Ok(tasks)
    }

    /// Deletes a task; returns it as it was.
    pub async fn delete(&self, id: u64) -> Result<Task> {
        self.store.delete(self.agent.as_str(), id).await
    }
}

fn set_status(t: &mut Task, s: TaskStatus, now: DateTime<Utc>) {
    if s == TaskStatus::Done && t.status != TaskStatus::Done {
        t.completed_at = Some(now);
    } else if s != TaskStatus::Done {
        t.completed_at = None;
    }
    t.status = s;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedule::task_store::{enum_parse, enum_str};

    #[test]
    fn enums_store_as_snake_case() {
        assert_eq!(enum_str(&TaskStatus::InProgress), "in_progress");
        assert_eq!(enum_parse::<Priority>("urgent"), Some(Priority::Urgent));
        assert!(Priority::Urgent > Priority::High && Priority::Normal > Priority::Low);
    }

    #[test]
    fn steps_are_small() {
        assert!(check_steps(&["a".into(), " ".into()]).unwrap_err().to_string().starts_with("`steps.1`"));
        assert!(check_steps(&["x".repeat(MAX_STEP_CHARS + 1)]).is_err());
        assert!(check_steps(&vec!["s".to_owned(); MAX_STEPS + 1]).is_err());
        assert_eq!(check_steps(&[" call Bob ".into()]).unwrap()[0].text, "call Bob");
    }
}

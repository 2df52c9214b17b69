//! Memory blocks, their permissions and their edit history.

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The soft character budget of a block created without an explicit one.
pub const DEFAULT_CHAR_LIMIT: usize = 2000;

/// What tools may do to a block. Checked in one place ([`crate::blocks::permission::authorize`]), below every tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "snake_case")]
pub enum Permission {
    /// No tool may change it (the runtime may).
    ReadOnly,
    /// Tools may only append to it.
    Append,
    /// Tools may overwrite, append and replace.
    #[default]
    ReadWrite,
}

impl Permission {
    /// The wire and storage form.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ReadOnly => "read_only",
            Self::Append => "append",
            Self::ReadWrite => "read_write",
        }
    }

    /// Parses the storage form.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "read_only" => Some(Self::ReadOnly),
            "append" => Some(Self::Append),
            "read_write" => Some(Self::ReadWrite),
            _ => None,
        }
    }

    /// Human wording for error messages.
    pub fn describe(self) -> &'static str {
        match self {
            Self::ReadOnly => "read-only",
            Self::Append => "append-only",
            Self::ReadWrite => "read-write",
        }
    }
}

/// One memory block.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MemoryBlock {
    /// The block's label, unique per agent.
    pub label: String,
    /// The content.
    pub value: String,
    /// What the block is for.
    pub description: Option<String>,
    /// What tools may do to it.
    pub permission: Permission,
    /// The soft budget in characters: writes past it succeed and report how far over they are.
    pub char_limit: usize,
    /// Pinned blocks are rendered first.
    pub pinned: bool,
    /// Who started the turn of the last tool write that left words of theirs in it, when it was not the user
    /// (`agent 'mallory'`): the system context marks the block as not the user's words. `None`: the user's turns,
    /// the runtime, the configuration.
    pub written_by: Option<String>,
    /// When the block was created.
    pub created_at: DateTime<Utc>,
    /// When the block last changed.
    pub updated_at: DateTime<Utc>,
}

impl MemoryBlock {
    /// The value's length in characters (Unicode scalar values).
    pub fn chars(&self) -> usize {
        self.value.chars().count()
    }

    /// How many characters over the soft budget the value is, if it is.
    pub fn over_budget_by(&self) -> Option<usize> {
        let chars = self.chars();
        (chars > self.char_limit).then(|| chars - self.char_limit)
    }
}

/// The kind of an edit, as kept in the history.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EditOp {
    /// The block was created by a tool.
    Create,
    /// The value was overwritten (`update_memory`).
    Update,
    /// Text was appended (`append_memory`).
    Append,
    /// Text was replaced (`replace_in_memory`).
    Replace,
    /// The runtime set the block (configuration, an operator), bypassing permissions.
    System,
}

impl EditOp {
    /// The storage form.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Create => "create",
            Self::Update => "update",
            Self::Append => "append",
            Self::Replace => "replace",
            Self::System => "system",
        }
    }

    /// Parses the storage form.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "create" => Some(Self::Create),
            "update" => Some(Self::Update),
            "append" => Some(Self::Append),
            "replace" => Some(Self::Replace),
            "system" => Some(Self::System),
            _ => None,
        }
    }
}

/// One entry of a block's edit history: who changed it, when, and from what to what.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlockEdit {
    /// Monotonic id (per store).
    pub id: i64,
    /// The block.
    pub label: String,
    /// Who made the edit: an agent id, or `system`.
    pub actor: String,
    /// What kind of edit.
    pub op: EditOp,
    /// The value before (absent when the edit created the block).
    pub old: Option<String>,
    /// The value after.
    pub new: String,
    /// When.
    pub at: DateTime<Utc>,
}

/// A write the store is asked to make atomically: the block's new state plus who made it and how.
#[derive(Debug, Clone)]
pub struct PendingWrite {
    /// The block's new state.
    pub block: MemoryBlock,
    /// Who.
    pub actor: String,
    /// How.
    pub op: EditOp,
}

/// The block before and after an atomic [`crate::blocks::store::MemoryStore::modify`].
#[derive(Debug, Clone)]
pub struct Modified {
    /// The block as it was (absent when it did not exist).
    pub before: Option<MemoryBlock>,
    /// The block as written (absent when nothing was written).
    pub after: Option<MemoryBlock>,
}

/// A block as configured by the runtime (not by a tool): permission, budget and pin included.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BlockSpec {
    /// Label.
    pub label: String,
    /// Initial value.
    #[serde(default)]
    pub value: String,
    /// Description.
    #[serde(default)]
    pub description: Option<String>,
    /// Permission.
    #[serde(default)]
    pub permission: Permission,
    /// Soft budget in characters.
    #[serde(default = "default_char_limit")]
    pub char_limit: usize,
    /// Rendered first.
    #[serde(default)]
    pub pinned: bool,
}

fn default_char_limit() -> usize {
    DEFAULT_CHAR_LIMIT
}

impl BlockSpec {
    /// A read-write, unpinned block with the default budget.
    pub fn new(label: impl Into<String>, value: impl Into<String>) -> Self {
        Self {
            label: label.into(),
            value: value.into(),
            description: None,
            permission: Permission::ReadWrite,
            char_limit: DEFAULT_CHAR_LIMIT,
            pinned: false,
        }
    }

    /// Sets the description.
    pub fn description(mut self, d: impl Into<String>) -> Self {
        self.description = Some(d.into());
        self
    }

    /// Sets the permission.
    pub fn permission(mut self, p: Permission) -> Self {
        self.permission = p;
        self
    }

    /// Sets the soft budget.
    pub fn char_limit(mut self, n: usize) -> Self {
        self.char_limit = n;
        self
    }

    /// Pins the block.
    pub fn pinned(mut self, pinned: bool) -> Self {
        self.pinned = pinned;
        self
    }
}

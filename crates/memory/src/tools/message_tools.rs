//! `send_message` and `send_to_group`.

use super::resolve;
use crate::agent::AgentHandle;
use crate::messaging::{MessageTarget, SendOrigin};
use holdfast_core::{AiTool, ToolContext, ToolError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// Parameters of `send_message`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SendMessageInput {
    /// Who receives it: `{"type": "user"}`, `{"type": "agent", "id": "researcher"}`, `{"type": "group", "id":
    /// "team"}` or `{"type": "channel", "id": "alerts"}`.
    pub target: MessageTarget,
    /// The message, delivered whole.
    pub content: String,
    /// Optional metadata kept with the message as an object of its keys: `[{"key": "host", "value": "db1"}]`
    /// (null or `[]` when there is none).
    pub metadata: Option<Vec<MetadataEntry>>,
}

/// One metadata entry of a message. A list of pairs rather than a free-form object: the strict schema models are
/// given can say exactly what is accepted.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MetadataEntry {
    /// The key (unique within the message).
    pub key: String,
    /// Its value.
    pub value: String,
}

/// The metadata object kept with a message: `None` for none; a key given twice is `invalid_params`.
fn metadata_object(entries: Option<Vec<MetadataEntry>>) -> Result<Option<serde_json::Value>, ToolError> {
    let mut object = serde_json::Map::new();
    for entry in entries.unwrap_or_default() {
        if object.insert(entry.key.clone(), serde_json::Value::String(entry.value)).is_some() {
            return Err(ToolError::invalid_params("metadata", format!("the key {:?} is given twice", entry.key)));
        }
    }
    Ok((!object.is_empty()).then_some(serde_json::Value::Object(object)))
}

/// Result of `send_message` and `send_to_group`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct SendMessageOutput {
    /// True when the message was delivered.
    pub success: bool,
    /// The message's id, `msg_<n>`.
    pub message_id: String,
    /// Where it went (and who was skipped by the anti-loop cooldown, what the webhook answered).
    pub details: String,
}

/// `send_message`: to the user, another agent, a group or a channel.
#[derive(Debug, Clone)]
pub struct SendMessageTool {
    handle: AgentHandle,
}

impl SendMessageTool {
    /// The tool for `handle`'s agent.
    pub fn new(handle: AgentHandle) -> Self {
        Self { handle }
    }
}

impl AiTool for SendMessageTool {
    type Input = SendMessageInput;
    type Output = SendMessageOutput;

    fn name(&self) -> &str {
        "send_message"
    }

    fn description(&self) -> &str {
        "Send a message to the user, to another agent (its durable inbox), to a group of agents, or to a channel \
         (its subscribers and webhook). Unknown agents, groups and channels fail with target_not_found. To stop \
         loops, an agent may message the same other agent once per cooldown window (rate_limited otherwise)."
    }

    fn examples(&self) -> Vec<serde_json::Value> {
        vec![
            json!({"target": {"type": "user", "id": null}, "content": "Hello! How can I help?", "metadata": []}),
            json!({"target": {"type": "agent", "id": "researcher"}, "content": "Please summarise the report.", "metadata": null}),
            json!({"target": {"type": "channel", "id": "alerts"}, "content": "Deploy finished.", "metadata": [{"key": "release", "value": "v1.2"}]}),
        ]
    }

    async fn execute(&self, input: SendMessageInput, ctx: &ToolContext) -> Result<SendMessageOutput, ToolError> {
        let handle = resolve(&self.handle, ctx);
        let metadata = metadata_object(input.metadata)?;
        let receipt = handle.messages.send(&input.target, input.content, metadata, SendOrigin::session(ctx)).await?;
        Ok(SendMessageOutput { success: true, message_id: receipt.message_id, details: receipt.details })
    }
}

/// Parameters of `send_to_group`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SendToGroupInput {
    /// The group's name.
    pub group: String,
    /// The message, delivered whole to every member but you.
    pub content: String,
}

/// `send_to_group`: fan-out to every member of a group.
#[derive(Debug, Clone)]
pub struct SendToGroupTool {
    handle: AgentHandle,
}

impl SendToGroupTool {
    /// The tool for `handle`'s agent.
    pub fn new(handle: AgentHandle) -> Self {
        Self { handle }
    }
}

impl AiTool for SendToGroupTool {
    type Input = SendToGroupInput;
    type Output = SendMessageOutput;

    fn name(&self) -> &str {
        "send_to_group"
    }

    fn description(&self) -> &str {
        "Send a message to every member of a named group of agents (except you). Members messaged by you within \
         the anti-loop cooldown are skipped and named in `details`."
    }

    fn examples(&self) -> Vec<serde_json::Value> {
        vec![json!({"group": "team", "content": "Stand-up in 5 minutes."})]
    }

    async fn execute(&self, input: SendToGroupInput, ctx: &ToolContext) -> Result<SendMessageOutput, ToolError> {
        let handle = resolve(&self.handle, ctx);
        let target = MessageTarget::group(input.group);
        let receipt = handle
            .messages
            .send(&target, input.content, None, SendOrigin::session(ctx))
            .await
            .map_err(|e| rename_field(e.into(), "target.id", "group"))?;
        Ok(SendMessageOutput { success: true, message_id: receipt.message_id, details: receipt.details })
    }
}

/// Rewrites a field name in an error message (so `send_to_group` errors name its own `group` field).
fn rename_field(mut e: ToolError, from: &str, to: &str) -> ToolError {
    e.message = e.message.replace(&format!("`{from}`"), &format!("`{to}`"));
    e
}

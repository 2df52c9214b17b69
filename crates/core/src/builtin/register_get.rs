//! `register_get {key, path?}`: a register's value, provenance and age.

use super::value_text;
use crate::context::ToolContext;
use crate::error::ToolError;
use crate::registers::{Origin, validate_key};
use crate::tool::AiTool;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Parameters of `register_get`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RegisterGetInput {
    /// Register key.
    pub key: String,
    /// Optional dotted path below the value: `transaction.to`, `fills.0.source`.
    pub path: Option<String>,
}

/// Result of `register_get`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct RegisterGetOutput {
    /// The key read.
    pub key: String,
    /// The path read below the key, if any.
    pub path: Option<String>,
    /// The value: a string as is, anything else as JSON text.
    pub value: String,
    /// Where the value came from.
    pub origin: Origin,
    /// The tool that wrote it.
    pub source: String,
    /// The preset that tool ran, if any.
    pub preset: Option<String>,
    /// RFC 3339 creation time.
    pub created_at: String,
    /// Age in seconds.
    pub age_secs: f64,
    /// True when older than the register's declared maximum age.
    pub stale: bool,
    /// Registers the value was derived from.
    pub derived_from: Vec<String>,
}

/// The `register_get` tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct RegisterGet;

impl AiTool for RegisterGet {
    type Input = RegisterGetInput;
    type Output = RegisterGetOutput;

    fn name(&self) -> &str {
        "register_get"
    }

    fn description(&self) -> &str {
        "Read a register's value with its provenance (origin, writing tool, age). Use `path` to read inside an \
         object, e.g. key `swap_quote`, path `buyAmount`. For inspection only: pass register names to other tools \
         instead of copying values."
    }

    fn examples(&self) -> Vec<serde_json::Value> {
        vec![
            serde_json::json!({"key": "sell_token", "path": null}),
            serde_json::json!({"key": "swap_quote", "path": "transaction.to"}),
        ]
    }

    async fn execute(&self, input: RegisterGetInput, ctx: &ToolContext) -> Result<RegisterGetOutput, ToolError> {
        validate_key("key", &input.key)?;
        let entry = ctx.registers.require(&input.key)?;
        let value = match input.path.as_deref().filter(|p| !p.is_empty()) {
            Some(path) => ctx.registers.get_path(&format!("{}.{path}", input.key))?,
            None => entry.value.clone(),
        };
        let age = entry.age();
        let stale = ctx.registers.declaration(&input.key).and_then(|d| d.max_age).is_some_and(|max| age > max);
        let p = &entry.provenance;
        Ok(RegisterGetOutput {
            key: input.key,
            path: input.path,
            value: value_text(&value),
            origin: p.origin,
            source: p.source.clone(),
            preset: p.preset.clone(),
            created_at: p.created_at.to_rfc3339(),
            age_secs: age.as_secs_f64(),
            stale,
            derived_from: p.derived_from.clone(),
        })
    }
}

//! `register_set {key, value}`: the model stores a value it typed. Origin `model`, the lowest trust.

use super::value_text;
use crate::context::ToolContext;
use crate::error::ToolError;
use crate::registers::{Origin, RegisterWrite};
use crate::tool::AiTool;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Parameters of `register_set`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RegisterSetInput {
    /// Register key: ASCII letters, digits and `_`, 1–64 chars, starting with a letter.
    pub key: String,
    /// The value, as a string. Keys ending in `_address` need an Ethereum address; keys ending in `_amount` a
    /// non-negative integer in base units.
    pub value: String,
}

/// Result of `register_set`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct RegisterSetOutput {
    /// The key written.
    pub key: String,
    /// The value as stored (addresses in EIP-55 form, amounts canonical).
    pub value: String,
    /// Always `model`.
    pub origin: Origin,
}

/// The `register_set` tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct RegisterSet;

impl AiTool for RegisterSet {
    type Input = RegisterSetInput;
    type Output = RegisterSetOutput;

    fn name(&self) -> &str {
        "register_set"
    }

    fn description(&self) -> &str {
        "Store a value you typed in a scratch register (origin `model`, lowest trust). Protected registers \
         (wallet_address, sell_token, buy_token, swap_quote, token_price) cannot be written this way: use the tool \
         that owns them. Value-moving tools never read scratch registers."
    }

    fn examples(&self) -> Vec<serde_json::Value> {
        vec![serde_json::json!({"key": "note", "value": "user prefers USDC"})]
    }

    async fn execute(&self, input: RegisterSetInput, ctx: &ToolContext) -> Result<RegisterSetOutput, ToolError> {
        let write = RegisterWrite::new(&input.key, serde_json::Value::String(input.value), Origin::Model, self.name());
        let entry = ctx.registers.set(write)?;
        Ok(RegisterSetOutput { key: input.key, value: value_text(&entry.value), origin: entry.origin() })
    }
}

//! `to_raw_amount {amount, token_register, cache_as}`: an exact human decimal → base units of a token in a register.
//!
//! The result's origin is `user` when the human amount appears in the context bank (the user wrote it), otherwise
//! `model`. The token comes from a register, so its decimals are never typed by the model.

use crate::amount::Decimal;
use crate::context::ToolContext;
use crate::error::{ErrorCode, ToolError};
use crate::registers::{Origin, RegisterWrite, validate_key};
use crate::tool::AiTool;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Parameters of `to_raw_amount`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToRawAmountInput {
    /// The human amount exactly as the user wrote it, e.g. `"0.001"`.
    pub amount: String,
    /// Register holding the token, e.g. `sell_token`.
    pub token_register: String,
    /// Register to write the base-unit amount to, e.g. `sell_amount`. Null: just return it.
    pub cache_as: Option<String>,
}

/// Result of `to_raw_amount`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ToRawAmountOutput {
    /// The human amount, canonical.
    pub amount: String,
    /// The amount in base units.
    pub raw: String,
    /// The token's symbol.
    pub symbol: String,
    /// The token's decimals.
    pub decimals: u8,
    /// `user` when the amount is in the context bank, else `model`.
    pub origin: Origin,
    /// The register written, if any.
    pub cached_as: Option<String>,
}

/// The `to_raw_amount` tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct ToRawAmount;

impl AiTool for ToRawAmount {
    type Input = ToRawAmountInput;
    type Output = ToRawAmountOutput;

    fn name(&self) -> &str {
        "to_raw_amount"
    }

    fn description(&self) -> &str {
        "Convert a human amount (as the user wrote it, e.g. \"0.001\") to the base units of the token in \
         `token_register`, exactly, and store it (e.g. as `sell_amount`). Amounts the user wrote keep origin `user`."
    }

    fn examples(&self) -> Vec<serde_json::Value> {
        vec![serde_json::json!({"amount": "0.001", "token_register": "sell_token", "cache_as": "sell_amount"})]
    }

    async fn execute(&self, input: ToRawAmountInput, ctx: &ToolContext) -> Result<ToRawAmountOutput, ToolError> {
        validate_key("token_register", &input.token_register)?;
        let token = ctx.registers.require(&input.token_register)?;
        let not_token = || {
            ToolError::new(
                ErrorCode::InvalidParams,
                format!("`token_register`: `{}` does not hold a token (use token_lookup)", input.token_register),
            )
        };
        let symbol = token.value.get("symbol").and_then(|v| v.as_str()).ok_or_else(not_token)?.to_owned();
        let decimals = token.value.get("decimals").and_then(|v| v.as_u64()).and_then(|d| u8::try_from(d).ok());
        let decimals = decimals.ok_or_else(not_token)?;

        let human = Decimal::parse("amount", &input.amount)?;
        let raw = human.to_base_units("amount", decimals, &symbol)?;
        let origin = if ctx.context_bank.has_amount(&input.amount, &symbol) { Origin::User } else { Origin::Model };

        let mut stored_origin = origin;
        if let Some(key) = &input.cache_as {
            let write = RegisterWrite::new(key, serde_json::Value::String(raw.to_string()), origin, self.name())
                .derived_from([input.token_register.clone()]);
            stored_origin = ctx.registers.set(write)?.origin();
        }
        Ok(ToRawAmountOutput {
            amount: human.canonical(),
            raw: raw.to_string(),
            symbol,
            decimals,
            origin: stored_origin,
            cached_as: input.cache_as,
        })
    }
}

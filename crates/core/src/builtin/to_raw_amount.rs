//! `to_raw_amount {amount, token_register, cache_as}`: an exact human decimal → base units of a token in a register.
//!
//! The result's origin is `user` only when the user wrote this amount *of this token* — an amount bound to the token's
//! symbol in one user message (`ContextBank::has_amount`; "0.5 ETH", "USDC 100") — otherwise `model`. A bare number
//! ("send it to my 2 friends") authorizes no amount of any token. The token comes from a register declared to hold a token (written by `token_lookup` from the token
//! table), and its decimals come from the token table itself — never from a register's value, which a remote
//! answer could have shaped.

use crate::address::parse_address;
use crate::amount::Decimal;
use crate::context::ToolContext;
use crate::error::{ErrorCode, ToolError};
use crate::registers::{Origin, RegisterWrite, ValueType};
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
        let token = ctx.registers.require_typed("token_register", &input.token_register, ValueType::Token)?;
        let field = |name: &str| token.value.get(name).and_then(|v| v.as_str()).unwrap_or_default().to_owned();
        let (network, address) = (field("network"), field("address"));
        let address = parse_address("token_register", &address)?;
        let known = ctx.config.tokens.by_address(&network, address).ok_or_else(|| {
            ToolError::new(
                ErrorCode::UnknownToken,
                format!(
                    "`token_register`: `{}` holds {address} on {network}, which is not in the token table",
                    input.token_register
                ),
            )
        })?;
        let (symbol, decimals) = (known.symbol.clone(), known.decimals);

        let human = Decimal::parse("amount", &input.amount)?;
        let raw = human.to_base_units("amount", decimals, &symbol)?;
        let origin = if ctx.context_bank.has_amount(&input.amount, &symbol) { Origin::User } else { Origin::Model };
        // The user's message this amount came from authorizes one action with it (the kernel spends it).
        let authorization =
            ctx.context_bank.authorization(&input.amount, &symbol).map(|a| a.id).filter(|_| origin == Origin::User);

        let mut stored_origin = origin;
        if let Some(key) = &input.cache_as {
            let write = RegisterWrite::new(key, serde_json::Value::String(raw.to_string()), origin, self.name())
                .derived_from([input.token_register.clone()])
                .authorized_by(authorization);
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

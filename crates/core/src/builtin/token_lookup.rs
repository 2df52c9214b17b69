//! `token_lookup {symbol, network, cache_as}`: a token from the configured token table, written to a register.
//!
//! This is the only writer of `sell_token` and `buy_token`: the address and decimals come from configuration,
//! never from the model.

use crate::context::ToolContext;
use crate::error::ToolError;
use crate::registers::{Origin, RegisterWrite};
use crate::tool::AiTool;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Parameters of `token_lookup`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TokenLookupInput {
    /// Token symbol, e.g. `USDC` (case-insensitive).
    pub symbol: String,
    /// Network name or alias, e.g. `base`.
    pub network: String,
    /// Register to write the token to, e.g. `sell_token` or `buy_token`. Null: just return it.
    pub cache_as: Option<String>,
}

/// Result of `token_lookup`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct TokenLookupOutput {
    /// Symbol as in the token table.
    pub symbol: String,
    /// Human name.
    pub name: String,
    /// Contract address (EIP-55), or the native placeholder.
    pub address: String,
    /// Decimals.
    pub decimals: u8,
    /// Canonical network name.
    pub network: String,
    /// True for the chain's native token.
    pub is_native: bool,
    /// The register written, if any.
    pub cached_as: Option<String>,
}

/// The `token_lookup` tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct TokenLookup;

impl AiTool for TokenLookup {
    type Input = TokenLookupInput;
    type Output = TokenLookupOutput;

    fn name(&self) -> &str {
        "token_lookup"
    }

    fn description(&self) -> &str {
        "Look a token up by symbol in the configured token table and store it (address, symbol, decimals, network) \
         in a register. This is the only way to set `sell_token` and `buy_token`."
    }

    fn examples(&self) -> Vec<serde_json::Value> {
        vec![serde_json::json!({"symbol": "ETH", "network": "base", "cache_as": "sell_token"})]
    }

    async fn execute(&self, input: TokenLookupInput, ctx: &ToolContext) -> Result<TokenLookupOutput, ToolError> {
        let network = ctx.config.networks.resolve(&input.network)?;
        let token = ctx.config.tokens.lookup(&network.name, &input.symbol)?;
        if let Some(key) = &input.cache_as {
            let write = RegisterWrite::new(key, token.to_register_value(), Origin::Config, self.name());
            ctx.registers.set(write)?;
        }
        Ok(TokenLookupOutput {
            symbol: token.symbol.clone(),
            name: token.name.clone(),
            address: token.address.to_checksum(None),
            decimals: token.decimals,
            network: token.network.clone(),
            is_native: token.is_native(),
            cached_as: input.cache_as,
        })
    }
}

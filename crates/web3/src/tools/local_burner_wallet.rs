//! `local_burner_wallet {action, token_register?, network?, cache_as?}`: the wallet's address and balances.
//!
//! No action signs anything. `cache_as: "wallet_address"` materialises the intrinsic register from the wallet itself.

use crate::Web3;
use crate::kernel::human;
use crate::quote::TokenRef;
use holdfast_core::config::NATIVE_TOKEN_ADDRESS;
use holdfast_core::registers::{Origin, RegisterWrite, validate_key};
use holdfast_core::{AiTool, ErrorCode, ToolContext, ToolError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// What to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum WalletAction {
    /// The wallet's address.
    Address,
    /// The native balance on `network`.
    Balance,
    /// The balance of the token in `token_register`.
    TokenBalance,
}

/// Parameters of `local_burner_wallet`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WalletInput {
    /// `address`, `balance` or `token_balance`.
    pub action: WalletAction,
    /// For `token_balance`: the register holding the token (e.g. `sell_token`).
    pub token_register: Option<String>,
    /// For `balance`: the network (e.g. `base`).
    pub network: Option<String>,
    /// Register to store the result in (`wallet_address` for the address; a `*_amount` key for balances).
    pub cache_as: Option<String>,
}

/// Result of `local_burner_wallet`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct WalletOutput {
    /// The action run.
    pub action: WalletAction,
    /// The wallet's address.
    pub address: String,
    /// Network of a balance.
    pub network: Option<String>,
    /// Balance in human units with its symbol (`1.5 ETH`).
    pub balance: Option<String>,
    /// Balance in base units.
    pub raw: Option<String>,
    /// Register written, if any.
    pub cached_as: Option<String>,
}

/// The `local_burner_wallet` tool.
#[derive(Debug, Clone)]
pub struct LocalBurnerWallet(pub Arc<Web3>);

impl AiTool for LocalBurnerWallet {
    type Input = WalletInput;
    type Output = WalletOutput;

    fn name(&self) -> &str {
        "local_burner_wallet"
    }

    fn description(&self) -> &str {
        "The burner wallet: `address` (use cache_as \"wallet_address\" to fill that register), `balance` (native, \
         needs `network`) or `token_balance` (the token in `token_register`). It never signs anything."
    }

    fn examples(&self) -> Vec<serde_json::Value> {
        vec![
            serde_json::json!({"action": "address", "token_register": null, "network": null, "cache_as": "wallet_address"}),
            serde_json::json!({"action": "token_balance", "token_register": "sell_token", "network": null, "cache_as": null}),
        ]
    }

    async fn execute(&self, input: WalletInput, ctx: &ToolContext) -> Result<WalletOutput, ToolError> {
        let address = self.0.wallet().address();
        let mut out = WalletOutput {
            action: input.action,
            address: address.to_checksum(None),
            network: None,
            balance: None,
            raw: None,
            cached_as: input.cache_as.clone(),
        };
        let (token, network) = match input.action {
            WalletAction::Address => {
                if let Some(key) = &input.cache_as {
                    validate_key("cache_as", key)?;
                    if key == "wallet_address" {
                        ctx.registers.require(key)?;
                    } else {
                        let write = RegisterWrite::new(key, out.address.clone().into(), Origin::Intrinsic, self.name());
                        ctx.registers.set(write)?;
                    }
                }
                return Ok(out);
            }
            WalletAction::Balance => {
                let name = input.network.as_deref().ok_or_else(|| {
                    ToolError::new(ErrorCode::InvalidParams, "`network`: required for action `balance`")
                })?;
                let network = ctx.config.networks.resolve(name)?.clone();
                let native = ctx.config.tokens.iter().find(|t| t.network == network.name && t.is_native());
                let token = TokenRef {
                    address: NATIVE_TOKEN_ADDRESS,
                    symbol: network.native_symbol.clone(),
                    decimals: native.map_or(18, |t| t.decimals),
                    network: network.name.clone(),
                };
                (token, network)
            }
            WalletAction::TokenBalance => {
                let key = input.token_register.as_deref().ok_or_else(|| {
                    ToolError::new(ErrorCode::InvalidParams, "`token_register`: required for action `token_balance`")
                })?;
                validate_key("token_register", key)?;
                let token = TokenRef::from_register(&ctx.registers, key).map_err(|e| {
                    ToolError::new(ErrorCode::InvalidParams, format!("`token_register`: {}", e.message))
                })?;
                let network = ctx.config.networks.resolve(&token.network)?.clone();
                if let Some(asked) = &input.network
                    && ctx.config.networks.resolve(asked)?.name != network.name
                {
                    return Err(ToolError::new(
                        ErrorCode::InvalidParams,
                        format!("`network`: {} is on {}, not {asked}", token.symbol, network.name),
                    ));
                }
                (token, network)
            }
        };
        let raw = self.0.chain(&network)?.balance(token.address, address).await?;
        out.network = Some(network.name.clone());
        out.balance = Some(human(raw, token.decimals, &token.symbol));
        out.raw = Some(raw.to_string());
        if let Some(key) = &input.cache_as {
            let mut write = RegisterWrite::new(key, raw.to_string().into(), Origin::Tool, self.name());
            if let Some(reg) = &input.token_register {
                write = write.derived_from([reg.clone()]);
            }
            ctx.registers.set(write)?;
        }
        Ok(out)
    }
}

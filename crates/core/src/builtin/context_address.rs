//! `context_address {index, cache_as}`: an address the user wrote, from the context bank into a register, with
//! origin `user`.
//!
//! The model never types the address: it names which of the user's addresses it means (`index`, 1-based in order of
//! appearance; null when the user wrote exactly one). An address whose mixed-case checksum was wrong is refused
//! (`checksum_mismatch`): the user must write it again.

use crate::context::ToolContext;
use crate::context_bank::{ItemFlag, ItemType};
use crate::error::{ErrorCode, ToolError};
use crate::registers::{Origin, RegisterWrite};
use crate::tool::AiTool;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Parameters of `context_address`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ContextAddressInput {
    /// Which of the addresses the user wrote, 1-based in order of appearance. Null: the only one.
    pub index: Option<u32>,
    /// Register to write it to, e.g. `recipient_address`.
    pub cache_as: String,
}

/// Result of `context_address`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ContextAddressOutput {
    /// The address (EIP-55).
    pub address: String,
    /// Always `user`.
    pub origin: Origin,
    /// The register written.
    pub cached_as: String,
}

/// The `context_address` tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct ContextAddress;

impl AiTool for ContextAddress {
    type Input = ContextAddressInput;
    type Output = ContextAddressOutput;

    fn name(&self) -> &str {
        "context_address"
    }

    fn description(&self) -> &str {
        "Store an address the user wrote (from the context bank) in a register, e.g. `recipient_address`, with \
         origin `user`. Never type an address yourself: pass `index` (1-based, in the order the user wrote them) or \
         null when the user wrote exactly one."
    }

    fn examples(&self) -> Vec<serde_json::Value> {
        vec![serde_json::json!({"index": null, "cache_as": "recipient_address"})]
    }

    async fn execute(&self, input: ContextAddressInput, ctx: &ToolContext) -> Result<ContextAddressOutput, ToolError> {
        let addresses: Vec<_> =
            ctx.context_bank.items().into_iter().filter(|i| i.item_type == ItemType::EthAddress).collect();
        let item = match (input.index, addresses.len()) {
            (_, 0) => {
                return Err(ToolError::new(ErrorCode::RegisterMissing, "the user has not written any address"));
            }
            (None, 1) => &addresses[0],
            (None, n) => {
                return Err(ToolError::new(
                    ErrorCode::InvalidParams,
                    format!("`index`: the user wrote {n} addresses; say which (1 to {n})"),
                ));
            }
            (Some(i), n) => {
                usize::try_from(i).ok().and_then(|i| i.checked_sub(1)).and_then(|i| addresses.get(i)).ok_or_else(
                    || ToolError::new(ErrorCode::InvalidParams, format!("`index`: {i} is not between 1 and {n}")),
                )?
            }
        };
        if item.flags.contains(&ItemFlag::ChecksumMismatch) {
            return Err(ToolError::new(
                ErrorCode::ChecksumMismatch,
                format!("`index`: {} has a wrong EIP-55 checksum; ask the user to write it again", item.value),
            ));
        }
        let write = RegisterWrite::new(
            &input.cache_as,
            serde_json::Value::String(item.value.clone()),
            Origin::User,
            self.name(),
        );
        let entry = ctx.registers.set(write)?;
        Ok(ContextAddressOutput { address: item.value.clone(), origin: entry.origin(), cached_as: input.cache_as })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::CoreServices;
    use crate::config::CoreConfig;
    use serde_json::json;

    async fn call(ctx: &ToolContext, index: Option<u32>) -> Result<ContextAddressOutput, ToolError> {
        ContextAddress.execute(ContextAddressInput { index, cache_as: "recipient_address".into() }, ctx).await
    }

    #[tokio::test]
    async fn the_users_address_becomes_a_user_register_and_nothing_else_does() {
        let ctx = CoreServices::new(CoreConfig::default()).unwrap().new_session("t");
        assert_eq!(call(&ctx, None).await.unwrap_err().code, ErrorCode::RegisterMissing);
        ctx.context_bank.scan_input("send 5 USDC to 0x742d35cc6634c0532925a3b844bc9e7595f8fdf0");
        let out = call(&ctx, None).await.unwrap();
        assert_eq!(out.address, "0x742d35Cc6634c0532925A3b844Bc9e7595F8FDf0");
        let entry = ctx.registers.get("recipient_address").unwrap();
        assert_eq!((entry.origin(), &entry.value), (Origin::User, &json!(out.address)));
        ctx.context_bank.scan_input("or 0x8ba1f109551bD432803012645Ac136ddd64DBA72");
        assert_eq!(call(&ctx, None).await.unwrap_err().code, ErrorCode::InvalidParams);
        assert_eq!(call(&ctx, Some(3)).await.unwrap_err().code, ErrorCode::InvalidParams);
        assert_eq!(call(&ctx, Some(2)).await.unwrap().address, "0x8ba1f109551bD432803012645Ac136ddd64DBA72");
    }

    #[tokio::test]
    async fn a_wrong_checksum_is_refused() {
        let ctx = CoreServices::new(CoreConfig::default()).unwrap().new_session("t");
        ctx.context_bank.scan_input("to 0x742d35Cc6634C0532925a3b844Bc9e7595f8FDF0");
        assert_eq!(call(&ctx, None).await.unwrap_err().code, ErrorCode::ChecksumMismatch);
        assert!(ctx.registers.get("recipient_address").is_none());
    }
}

//! `token_approve {for_quote}`: sets the allowance of the network's pinned spender to exactly the quote's sell amount
//! (invariant 5) — raising or lowering it. A thin front of [`crate::kernel::approve`].

use crate::Web3;
use crate::kernel::TxOutcome;
use crate::kernel::approve::approve;
use holdfast_core::{AiTool, ToolContext, ToolError, ToolKind};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Parameters of `token_approve`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApproveInput {
    /// The register holding the quote that needs the approval: `swap_quote`.
    pub for_quote: String,
}

/// Result of `token_approve`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ApproveOutput {
    /// `approved`, or `not_needed` when the allowance already is exactly the sell amount.
    pub result: String,
    /// The token approved.
    pub token: String,
    /// The pinned spender.
    pub spender: String,
    /// The allowance now (human units).
    pub allowance: String,
    /// Transaction hash, when one was sent.
    pub hash: Option<String>,
    /// Transaction status, when one was sent.
    pub status: Option<TxOutcome>,
    /// Journal entry, when one was written.
    pub journal_id: Option<String>,
}

/// The `token_approve` tool.
#[derive(Debug, Clone)]
pub struct TokenApprove(pub Arc<Web3>);

impl AiTool for TokenApprove {
    type Input = ApproveInput;
    type Output = ApproveOutput;

    fn name(&self) -> &str {
        "token_approve"
    }

    fn description(&self) -> &str {
        "When a swap quote sells a token, set its allowance for the pinned spender to exactly the quote's sell \
         amount (for_quote: \"swap_quote\"): a swap never relies on more. Does nothing when it already is exactly \
         that; an approval whose swap does not happen is reset to zero by holdfast."
    }

    fn kind(&self) -> ToolKind {
        ToolKind::ValueMoving
    }

    fn examples(&self) -> Vec<serde_json::Value> {
        vec![serde_json::json!({"for_quote": "swap_quote"})]
    }

    async fn execute(&self, input: ApproveInput, ctx: &ToolContext) -> Result<ApproveOutput, ToolError> {
        let done = approve(&self.0, ctx, self.name(), &input.for_quote).await?;
        let sent = done.sent;
        Ok(ApproveOutput {
            result: if sent.is_some() { "approved" } else { "not_needed" }.into(),
            token: done.token,
            spender: done.spender.to_checksum(None),
            allowance: done.allowance,
            hash: sent.as_ref().map(|s| s.hash.clone()),
            status: sent.as_ref().map(|s| s.outcome),
            journal_id: sent.map(|s| s.journal_id),
        })
    }
}

//! x402 payments through the kernel: the durability rule and the atomic reservation of the day's payment budget.
//!
//! The payment flow ([`crate::x402`]) chooses the requirement with the policy, then calls `reserve` before it
//! signs: the budget check and the reservation happen in one journal transaction, so concurrent payments — from
//! any number of sessions — cannot exceed `daily_budget`. The reservation becomes the payment's journal entry.

use super::require_durable;
use crate::Web3;
use crate::journal::{DayCap, EntryKind, JournalEntry, NewEntry, Reserved};
use crate::policy::ApprovedPayment;
use holdfast_core::amount::from_base_units;
use holdfast_core::{ErrorCode, ToolContext, ToolError};

/// Reserves `approved`'s amount under the network's daily payment budget and returns the reserved entry.
/// Over the budget → `payment_refused`, nothing written or signed. In a turn the user did not start (another agent,
/// a reminder) → `payment_refused`: a payment has no confirmation step, so only the user's own turn may pay.
pub(crate) async fn reserve(
    web3: &Web3,
    ctx: &ToolContext,
    preset: &str,
    entry: NewEntry,
    approved: &ApprovedPayment,
) -> Result<JournalEntry, ToolError> {
    require_durable(web3)?;
    // The last point where a stop leaves nothing behind: past it the payment is reserved, signed and sent.
    ctx.check_cancelled("the payment was signed")?;
    if let Some(who) = holdfast_core::confirm::TurnStarter::not_user(ctx) {
        return Err(ToolError::new(
            ErrorCode::PaymentRefused,
            format!(
                "preset `{preset}`: this turn was started by {who}, not by the user; x402 payments run only in a turn \
                 the user started; nothing was signed"
            ),
        ));
    }
    let token = &approved.token;
    let limit =
        web3.policy().payments(&entry.network).and_then(|p| p.daily_budget.get(&token.symbol)).copied().ok_or_else(
            || {
                ToolError::new(
                    ErrorCode::PaymentRefused,
                    format!("no daily_budget is set for {} (deny by default)", token.symbol),
                )
            },
        )?;
    let cap = DayCap { limit, kinds: EntryKind::Payment.cap_group() };
    match web3.journal().reserve(entry, Some(cap)).await? {
        Reserved::New(e) => Ok(e),
        Reserved::Existing(e) => Err(ToolError::new(
            ErrorCode::DuplicateAction,
            format!("this payment was already journaled (journal {}); it is never paid twice", e.id),
        )),
        Reserved::OverCap { spent } => {
            let human = |v| format!("{} {}", from_base_units(v, token.decimals), token.symbol);
            Err(ToolError::new(
                ErrorCode::PaymentRefused,
                format!(
                    "preset `{preset}`: {} would bring today's payments to {}, above the daily budget of {}; nothing was signed",
                    human(approved.amount),
                    human(spent.saturating_add(approved.amount)),
                    human(limit)
                ),
            ))
        }
    }
}

//! The reservation's decision, made inside the journal table's transaction ([`holdfast_store::journal::JournalTable::
//! reserve`]) from what it read: the same action's live entry, the live holder of the user authorization the action
//! relies on, and what the day's live entries already hold.

use super::entry::{DayCap, JournalEntry};
use alloy::primitives::U256;
use holdfast_store::journal::Found;

/// Why a reservation wrote nothing.
#[derive(Debug, Clone)]
pub(super) enum Refusal {
    /// The same intent (or fingerprint) already has this live entry.
    Existing(Box<JournalEntry>),
    /// The cap would be exceeded: this much is already spent.
    OverCap(U256),
    /// Another live entry holds the user authorization this action would run on by itself.
    AuthorizationSpent(Box<JournalEntry>),
    /// These live payments to the same payee delivered nothing known, as many as allowed.
    Undelivered(Vec<String>),
}

/// Sums base-unit amounts (decimal text); an unreadable amount is an error, never zero.
pub(super) fn sum(amounts: &[String]) -> Result<U256, String> {
    let mut total = U256::ZERO;
    for a in amounts {
        let v = U256::from_str_radix(a, 10).map_err(|e| format!("amount {a:?}: {e}"))?;
        total = total.saturating_add(v);
    }
    Ok(total)
}

/// `None` to insert the entry of `amount` under `cap`.
pub(super) fn decide(
    found: Found,
    amount: &str,
    cap: Option<DayCap>,
    undelivered_max: Option<usize>,
) -> Result<Option<Refusal>, String> {
    if let Some(same) = found.same_action {
        return Ok(Some(Refusal::Existing(Box::new(super::rows::entry(same)))));
    }
    if let Some(holder) = found.authorization_holder {
        return Ok(Some(Refusal::AuthorizationSpent(Box::new(super::rows::entry(holder)))));
    }
    if undelivered_max.is_some_and(|max| found.undelivered.len() >= max) {
        return Ok(Some(Refusal::Undelivered(found.undelivered)));
    }
    if let Some(cap) = cap {
        let amount = U256::from_str_radix(amount, 10).map_err(|e| format!("amount: {e}"))?;
        let spent = sum(&found.spent)?;
        if spent.saturating_add(amount) > cap.limit {
            return Ok(Some(Refusal::OverCap(spent)));
        }
    }
    Ok(None)
}

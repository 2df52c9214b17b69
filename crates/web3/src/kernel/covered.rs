//! What an approval covers: the user approved an action as it was shown (its summary, with the gas and the network
//! fee estimated then); a later run of it is covered only while its gas and fee stay close to what was shown, and is
//! asked again otherwise. The fingerprint fixes the action; these bounds fix what it may cost.

use alloy::primitives::U256;

/// Whether the approval of `approved` (the summary the user was shown) covers a transaction of `gas_limit`: at most a
/// tenth more gas than it showed (an estimate moves a little with the chain's state between the question and the
/// run), or any gas within the network's `auto_max_gas` (which would not have been asked about). More is asked
/// again, showing the new gas and fee: the fingerprint fixes the action, not the gas its route costs. A summary that
/// showed no gas yet (a funded action asked before its fee was known: no `gas_limit`, or an empty one) covers any; one
/// whose gas cannot be read covers none.
pub(super) fn gas_covered(approved: &serde_json::Value, gas_limit: u64, auto_max_gas: u64) -> bool {
    let shown = match approved.get("gas_limit") {
        None | Some(serde_json::Value::Null) => return true,
        Some(serde_json::Value::String(s)) if s.is_empty() => return true,
        Some(serde_json::Value::String(s)) => s.parse::<u64>().ok(),
        Some(_) => None,
    };
    shown.is_some_and(|shown| gas_limit <= shown.saturating_add(shown / 10).max(auto_max_gas))
}

/// Whether the approval of `approved` covers a transaction that may cost up to `max_cost` (wei) in network fees: at
/// most twice the `max_network_fee` it showed (a base fee moves by an eighth a block between the question and the
/// run). A node that quotes a fee per gas a thousand times the market's, within the policy's per-gas caps, gets the
/// question asked again with the new fee, not run on an approval of the old one. A summary that showed no fee yet (a
/// funded action asked before its fee was known) covers any; one whose fee cannot be read covers none.
pub(super) fn fee_covered(approved: &serde_json::Value, max_cost: U256) -> bool {
    let shown = match approved.get("max_network_fee") {
        None | Some(serde_json::Value::Null) => return true,
        Some(serde_json::Value::String(s)) if s.is_empty() => return true,
        Some(serde_json::Value::String(s)) => s.split_once(' ').and_then(|(amount, symbol)| {
            holdfast_core::amount::to_base_units("max_network_fee", amount, 18, symbol).ok()
        }),
        Some(_) => None,
    };
    shown.is_some_and(|shown| max_cost <= shown.saturating_mul(U256::from(2u8)))
}

#[cfg(test)]
mod tests {
    use super::{fee_covered, gas_covered};
    use alloy::primitives::U256;
    use serde_json::json;

    #[test]
    fn an_approval_covers_at_most_twice_the_fee_it_showed() {
        let shown = json!({"gas_limit": "100000", "max_network_fee": "0.0001 ETH"});
        let wei = |n: u64| U256::from(n);
        assert!(fee_covered(&shown, wei(200_000_000_000_000)), "twice the fee shown");
        assert!(!fee_covered(&shown, wei(200_000_000_000_001)), "more than twice");
        assert!(!fee_covered(&shown, wei(100_000_000_000_000) * wei(1_000)), "a node's fee a thousand times more");
        assert!(fee_covered(&json!({}), U256::MAX), "asked before its fee was known");
        assert!(fee_covered(&json!({"max_network_fee": ""}), U256::MAX));
        for unreadable in [json!({"max_network_fee": "lots"}), json!({"max_network_fee": 1})] {
            assert!(!fee_covered(&unreadable, U256::from(1u8)), "{unreadable}");
        }
    }

    #[test]
    fn an_approval_covers_the_gas_it_showed_a_tenth_more_or_what_would_not_have_asked() {
        let shown = json!({"gas_limit": "100000"});
        assert!(gas_covered(&shown, 110_000, 50_000), "a tenth more");
        assert!(!gas_covered(&shown, 110_001, 50_000), "more than a tenth");
        assert!(gas_covered(&shown, 400_000, 500_000), "within auto_max_gas, which would not have asked");
        assert!(gas_covered(&json!({}), 9_000_000, 0), "asked before its fee was known");
        assert!(gas_covered(&json!({"gas_limit": ""}), 9_000_000, 0));
        for unreadable in [json!({"gas_limit": "lots"}), json!({"gas_limit": 100_000})] {
            assert!(!gas_covered(&unreadable, 1, 0), "{unreadable}");
        }
    }
}

//! The policy: caps before any signature (invariant 6) and the auto-vs-confirm decision (invariant 7), in one place.
//!
//! Deny by default: a network without a `[policy.NETWORK]` section, an asset without limits, or a missing cap is
//! `policy_denied`. An action runs without asking only when it is within the asset's auto-approve limit *and* none of
//! its inputs has a `model` origin; otherwise it waits for the user.

use crate::config::{AssetLimits, NetworkPolicy, PaymentPolicy};
use alloy::primitives::U256;
use holdfast_core::amount::from_base_units;
use holdfast_core::{ErrorCode, ToolError};
use std::collections::HashMap;

/// What is being moved.
#[derive(Debug, Clone)]
pub struct AssetMove<'a> {
    /// Canonical network name.
    pub network: &'a str,
    /// Asset symbol (as in the token table).
    pub symbol: &'a str,
    /// Asset decimals (for messages).
    pub decimals: u8,
    /// True for the native token.
    pub native: bool,
    /// Amount moved in this action, base units.
    pub amount: U256,
    /// Amount already moved today (UTC), base units.
    pub spent_today: U256,
    /// True when any input of the action has (or derives from) a `model` origin.
    pub model_inputs: bool,
}

/// The policy's answer for an allowed action.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Run without asking.
    Auto,
    /// Ask the user first; the reason is shown to them.
    Confirm(String),
}

/// The configured policy.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    networks: HashMap<String, NetworkPolicy>,
    payments: HashMap<String, PaymentPolicy>,
}

fn deny(why: String) -> ToolError {
    ToolError::new(ErrorCode::PolicyDenied, why)
}

impl Policy {
    /// A policy from the configured sections.
    pub fn new(networks: HashMap<String, NetworkPolicy>, payments: HashMap<String, PaymentPolicy>) -> Self {
        Self { networks, payments }
    }

    fn limits(&self, m: &AssetMove<'_>) -> Result<&AssetLimits, ToolError> {
        let net = self
            .networks
            .get(m.network)
            .ok_or_else(|| deny(format!("no policy is configured for network {} (deny by default)", m.network)))?;
        if m.native {
            Ok(&net.native)
        } else {
            net.tokens.get(m.symbol).ok_or_else(|| {
                deny(format!("no policy is configured for {} on {} (deny by default)", m.symbol, m.network))
            })
        }
    }

    /// Checks a transfer-like action against its caps, then decides auto vs confirmation.
    pub fn check(&self, m: &AssetMove<'_>) -> Result<Decision, ToolError> {
        let limits = self.limits(m)?;
        let human = |v: U256| format!("{} {}", from_base_units(v, m.decimals), m.symbol);
        let per_tx = limits.per_tx.ok_or_else(|| {
            deny(format!("no per-transaction cap for {} on {} (deny by default)", m.symbol, m.network))
        })?;
        if m.amount > per_tx {
            return Err(deny(format!("{} exceeds the per-transaction cap of {}", human(m.amount), human(per_tx))));
        }
        let per_day = limits
            .per_day
            .ok_or_else(|| deny(format!("no daily cap for {} on {} (deny by default)", m.symbol, m.network)))?;
        let total = m.spent_today.saturating_add(m.amount);
        if total > per_day {
            return Err(deny(format!(
                "{} would bring today's total to {}, above the daily cap of {}",
                human(m.amount),
                human(total),
                human(per_day)
            )));
        }
        Ok(self.decide(limits, m))
    }

    /// Checks an approval: the amount must fit the token's per-transaction cap (approving more than one swap may
    /// sell serves nothing); approvals do not count against daily totals.
    pub fn check_approval(&self, m: &AssetMove<'_>) -> Result<Decision, ToolError> {
        let limits = self.limits(m)?;
        let per_tx = limits.per_tx.ok_or_else(|| {
            deny(format!("no per-transaction cap for {} on {} (deny by default)", m.symbol, m.network))
        })?;
        if m.amount > per_tx {
            return Err(deny(format!(
                "approving {} {} exceeds the per-transaction cap",
                from_base_units(m.amount, m.decimals),
                m.symbol
            )));
        }
        Ok(self.decide(limits, m))
    }

    fn decide(&self, limits: &AssetLimits, m: &AssetMove<'_>) -> Decision {
        if m.model_inputs {
            return Decision::Confirm("an input was typed by the model".into());
        }
        match limits.auto_per_tx {
            Some(auto) if m.amount <= auto => Decision::Auto,
            Some(auto) => Decision::Confirm(format!(
                "{} {} is above the auto-approve limit of {} {}",
                from_base_units(m.amount, m.decimals),
                m.symbol,
                from_base_units(auto, m.decimals),
                m.symbol
            )),
            None => Decision::Confirm(format!("no auto-approve limit is set for {}", m.symbol)),
        }
    }

    /// The payment policy of a network, or `None` (payments denied).
    pub fn payments(&self, network: &str) -> Option<&PaymentPolicy> {
        self.payments.get(network)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> Policy {
        let usdc = AssetLimits {
            per_tx: Some(U256::from(100u64)),
            per_day: Some(U256::from(150u64)),
            auto_per_tx: Some(U256::from(10u64)),
        };
        let net = NetworkPolicy { native: AssetLimits::default(), tokens: HashMap::from([("USDC".to_owned(), usdc)]) };
        Policy::new(HashMap::from([("base".to_owned(), net)]), HashMap::new())
    }

    fn mv(amount: u64, spent: u64, model: bool) -> AssetMove<'static> {
        AssetMove {
            network: "base",
            symbol: "USDC",
            decimals: 0,
            native: false,
            amount: U256::from(amount),
            spent_today: U256::from(spent),
            model_inputs: model,
        }
    }

    #[test]
    fn caps_and_the_confirmation_rule() {
        let p = policy();
        assert_eq!(p.check(&mv(10, 0, false)).unwrap(), Decision::Auto);
        assert!(matches!(p.check(&mv(10, 0, true)).unwrap(), Decision::Confirm(r) if r.contains("model")));
        assert!(matches!(p.check(&mv(11, 0, false)).unwrap(), Decision::Confirm(r) if r.contains("auto-approve")));
        let err = p.check(&mv(101, 0, false)).unwrap_err();
        assert_eq!(err.code, ErrorCode::PolicyDenied);
        assert!(err.message.contains("per-transaction"));
        assert!(p.check(&mv(60, 100, false)).unwrap_err().message.contains("daily cap"));
    }

    #[test]
    fn everything_unconfigured_is_denied() {
        let p = policy();
        let mut m = mv(1, 0, false);
        m.native = true;
        m.symbol = "ETH";
        assert!(p.check(&m).unwrap_err().message.contains("per-transaction cap for ETH"));
        m.network = "optimism";
        assert!(p.check(&m).unwrap_err().message.contains("deny by default"));
        let mut m = mv(1, 0, false);
        m.symbol = "DAI";
        assert_eq!(p.check(&m).unwrap_err().code, ErrorCode::PolicyDenied);
        assert_eq!(Policy::default().check(&mv(1, 0, false)).unwrap_err().code, ErrorCode::PolicyDenied);
    }
}

//! The policy: caps before any signature (invariant 6) and the auto-vs-confirm decision (invariant 7), in one place.
//!
//! Deny by default: a network without a `[policy.NETWORK]` section, an asset without limits, or a missing cap is
//! `policy_denied`. An action runs without asking only when it is within the asset's auto-approve limit *and* none of
//! its inputs has a `model` origin; otherwise it waits for the user.
//!
//! The per-day caps are *checked* here for the user's benefit before anything is asked, and *reserved* atomically by
//! the journal (`crate::journal::Journal::reserve`, with the [`DayCap`] this module names) right before signing.
//! Network fees are capped per network ([`Policy::check_fees`]); swaps between the native token and its wrapped twin
//! are refused unless allowed ([`Policy::allows_wrap`]); the independent-price tolerance is
//! [`Policy::max_slippage_bps`].
//!
//! x402 payments ([`Policy::choose_payment`], invariant 8): among the requirements a server offers, the policy picks
//! the cheapest one that passes every rule — scheme `exact`, the request's network, the request's host, an asset on
//! the `[payments.NETWORK] assets` allow-list, a payee on the preset's `payees` list when it has one, an amount
//! within `max_per_request`, and today's payments plus this one within `daily_budget`. None passes →
//! `payment_refused` naming each offer's reason, and nothing is signed. Payments that pass run without asking: they
//! are capped per request and per day, and their terms come from the server and the configuration, never from the
//! model.

use crate::chain::FeeQuote;
use crate::config::{AssetLimits, DEFAULT_MAX_SLIPPAGE_BPS, NetworkPolicy, PaymentPolicy};
use crate::journal::{DayCap, EntryKind};
use alloy::primitives::{Address, U256};
use holdfast_core::amount::from_base_units;
use holdfast_core::config::TokenInfo;
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
    /// Why the action's inputs are the model's (some hold, or were built from, a value of `model` origin), naming
    /// them; `Some` makes the action wait for the user with this reason.
    pub model_typed: Option<&'a str>,
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

    /// The per-day cap a move of `kind` reserves under (the journal checks it atomically).
    pub fn day_cap(&self, m: &AssetMove<'_>, kind: EntryKind) -> Result<DayCap, ToolError> {
        let limits = self.limits(m)?;
        let limit = limits
            .per_day
            .ok_or_else(|| deny(format!("no daily cap for {} on {} (deny by default)", m.symbol, m.network)))?;
        Ok(DayCap { limit, kinds: kind.cap_group() })
    }

    /// The refusal when a reservation would exceed the day's cap.
    pub fn over_cap(&self, m: &AssetMove<'_>, spent: U256, limit: U256) -> ToolError {
        let human = |v: U256| format!("{} {}", from_base_units(v, m.decimals), m.symbol);
        deny(format!(
            "{} would bring today's total to {}, above the daily cap of {}",
            human(m.amount),
            human(spent.saturating_add(m.amount)),
            human(limit)
        ))
    }

    /// The configured policy of `network`, if any.
    pub fn network(&self, network: &str) -> Option<&NetworkPolicy> {
        self.networks.get(network)
    }

    /// How far (bps) a swap may fall below the independent price on `network`.
    pub fn max_slippage_bps(&self, network: &str) -> u32 {
        self.networks.get(network).map_or(DEFAULT_MAX_SLIPPAGE_BPS, |n| n.max_slippage_bps)
    }

    /// Whether swaps between the native token and its wrapped twin are allowed on `network`.
    pub fn allows_wrap(&self, network: &str) -> bool {
        self.networks.get(network).is_some_and(|n| n.allow_wrap)
    }

    /// Refuses fees above the network's caps (`max_fee_per_gas_gwei`, `max_priority_fee_per_gas_gwei`).
    pub fn check_fees(&self, network: &str, fees: &FeeQuote) -> Result<(), ToolError> {
        let defaults = NetworkPolicy::default();
        let net = self.networks.get(network).unwrap_or(&defaults);
        let gwei = |wei: u128| from_base_units(U256::from(wei), 9);
        if fees.max_fee_per_gas > net.max_fee_per_gas {
            return Err(deny(format!(
                "the network asks a max fee of {} gwei per gas, above the cap of {} gwei on {network}",
                gwei(fees.max_fee_per_gas),
                gwei(net.max_fee_per_gas)
            )));
        }
        if fees.max_priority_fee_per_gas > net.max_priority_fee_per_gas {
            return Err(deny(format!(
                "the network asks a priority fee of {} gwei per gas, above the cap of {} gwei on {network}",
                gwei(fees.max_priority_fee_per_gas),
                gwei(net.max_priority_fee_per_gas)
            )));
        }
        Ok(())
    }

    /// The network's `auto_max_gas`: above it an action waits for the user.
    pub fn auto_max_gas(&self, network: &str) -> u64 {
        self.networks.get(network).map_or(crate::config::DEFAULT_AUTO_MAX_GAS, |n| n.auto_max_gas)
    }

    /// Why an action whose transaction may use `fees.gas_limit` gas waits for the user: above the network's
    /// `auto_max_gas`. `None` within it.
    pub fn gas_reason(&self, network: &str, fees: &FeeQuote, native_symbol: &str) -> Option<String> {
        let limit = self.auto_max_gas(network);
        (fees.gas_limit > limit).then(|| {
            format!(
                "the transaction may use up to {} gas (a network fee of up to {} {native_symbol}), above the \
                 auto-approve gas limit of {limit} on {network}",
                fees.gas_limit,
                from_base_units(fees.max_cost(), 18)
            )
        })
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
        if let Some(reason) = m.model_typed {
            return Decision::Confirm(reason.to_owned());
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

    /// Judges one offered payment requirement; `Err` is the reason it is refused.
    pub fn check_payment<'p>(
        &'p self,
        req: &PaymentRequest<'_>,
        offer: &PaymentOffer,
    ) -> Result<&'p TokenInfo, String> {
        if offer.scheme != "exact" {
            return Err(format!("scheme {:?} is not supported (only `exact`)", offer.scheme));
        }
        match &offer.network {
            Some(n) if n == req.network => {}
            Some(n) => return Err(format!("network {} is not the request's network {}", n, req.network)),
            None => return Err(format!("network {:?} is not configured", offer.network_raw)),
        }
        let preset_host = normalize_host(req.preset_host);
        if normalize_host(req.request_host) != preset_host {
            return Err(format!("the request went to {}, not the preset's host {}", req.request_host, req.preset_host));
        }
        if let Some(resource) = &offer.resource_url
            && normalize_host(resource) != preset_host
        {
            return Err(format!("the resource is on {resource}, not the preset's host {}", req.preset_host));
        }
        let payments = self
            .payments
            .get(req.network)
            .ok_or_else(|| format!("payments are not configured for {} (deny by default)", req.network))?;
        let token = payments.assets.iter().find(|t| t.address == offer.asset).ok_or_else(|| {
            let allowed: Vec<&str> = payments.assets.iter().map(|t| t.symbol.as_str()).collect();
            format!(
                "asset {} is not on the [payments.{}] allow-list ({})",
                offer.asset,
                req.network,
                if allowed.is_empty() { "empty".to_owned() } else { allowed.join(", ") }
            )
        })?;
        if !req.payees.is_empty() && !req.payees.contains(&offer.pay_to) {
            return Err(format!("payee {} is not on preset `{}`'s payee list", offer.pay_to, req.preset));
        }
        let human = |v: U256| format!("{} {}", from_base_units(v, token.decimals), token.symbol);
        let cap = payments
            .max_per_request
            .get(&token.symbol)
            .ok_or_else(|| format!("no max_per_request is set for {} (deny by default)", token.symbol))?;
        if offer.amount.is_zero() {
            return Err("the amount is zero".into());
        }
        if offer.amount > *cap {
            return Err(format!("{} exceeds the per-request cap of {}", human(offer.amount), human(*cap)));
        }
        let budget = payments
            .daily_budget
            .get(&token.symbol)
            .ok_or_else(|| format!("no daily_budget is set for {} (deny by default)", token.symbol))?;
        let spent = req.spent_today.get(&offer.asset).copied().unwrap_or_default();
        let total = spent.saturating_add(offer.amount);
        if total > *budget {
            return Err(format!(
                "{} would bring today's payments to {}, above the daily budget of {}",
                human(offer.amount),
                human(total),
                human(*budget)
            ));
        }
        Ok(token)
    }

    /// Chooses the cheapest offered requirement that passes [`Policy::check_payment`], compared in whole units of its
    /// asset (never in base units across assets of different decimals: 1 of an 18-decimal token is not cheaper than
    /// 0.01 of a 6-decimal one). `offers` holds each offered requirement or the reason it could not be read. None
    /// passes → `payment_refused` naming every reason.
    pub fn choose_payment(
        &self,
        req: &PaymentRequest<'_>,
        offers: &[Result<PaymentOffer, String>],
    ) -> Result<ApprovedPayment, ToolError> {
        let mut reasons = Vec::new();
        let mut best: Option<ApprovedPayment> = None;
        for (index, offer) in offers.iter().enumerate() {
            let verdict = offer
                .as_ref()
                .map_err(|e| format!("unreadable: {e}"))
                .and_then(|o| self.check_payment(req, o).map(|token| (o.amount, token)));
            match verdict {
                Ok((amount, token)) => {
                    let cheaper = best.as_ref().is_none_or(|b| {
                        in_whole_units(amount, token.decimals) < in_whole_units(b.amount, b.token.decimals)
                    });
                    if cheaper {
                        best = Some(ApprovedPayment { index, amount, token: token.clone() });
                    }
                }
                Err(reason) => reasons.push(format!("#{}: {reason}", index + 1)),
            }
        }
        best.ok_or_else(|| {
            let detail =
                if reasons.is_empty() { "the server offered no requirement".to_owned() } else { reasons.join("; ") };
            ToolError::new(
                ErrorCode::PaymentRefused,
                format!("preset `{}`: no offered payment passes policy, nothing was signed: {detail}", req.preset),
            )
        })
    }
}

/// `amount` base units of a token of `decimals`, scaled to 36 decimals so that amounts of tokens of different
/// decimals compare as whole units do (saturating: no real amount comes near).
fn in_whole_units(amount: U256, decimals: u8) -> U256 {
    let scale = U256::from(10u8).pow(U256::from(36u8.saturating_sub(decimals)));
    amount.saturating_mul(scale)
}

/// Lower-cased `host:port` with the scheme's default port filled in (`http` when no scheme is given), for comparing
/// hosts. Accepts a bare `host[:port]` or a URL.
fn normalize_host(text: &str) -> String {
    let with_scheme = if text.contains("://") { text.to_owned() } else { format!("http://{text}") };
    match reqwest::Url::parse(&with_scheme) {
        Ok(url) => format!(
            "{}:{}",
            url.host_str().unwrap_or_default().to_ascii_lowercase(),
            url.port_or_known_default().unwrap_or_default()
        ),
        Err(_) => format!("unparseable:{text}"),
    }
}

/// What the policy knows about the request a payment is for.
#[derive(Debug, Clone)]
pub struct PaymentRequest<'a> {
    /// Canonical name of the request's network (the tool call's `network`).
    pub network: &'a str,
    /// The preset run.
    pub preset: &'a str,
    /// The preset's origin (`Preset::origin`) or `host[:port]` (taken as `http`).
    pub preset_host: &'a str,
    /// The origin or host the request (and so the 402) went to.
    pub request_host: &'a str,
    /// The preset's payee allow-list (empty: any payee).
    pub payees: &'a [Address],
    /// Payments made today (live journal entries), per asset address, in base units.
    pub spent_today: &'a HashMap<Address, U256>,
}

/// One offered payment requirement, as the policy judges it.
#[derive(Debug, Clone)]
pub struct PaymentOffer {
    /// The scheme (`exact`).
    pub scheme: String,
    /// The canonical network the offer's network resolves to, `None` when it is not configured.
    pub network: Option<String>,
    /// The network as offered (for messages).
    pub network_raw: String,
    /// The token paid with.
    pub asset: Address,
    /// The amount in base units.
    pub amount: U256,
    /// The payee.
    pub pay_to: Address,
    /// The resource URL the offer names, if any (its host must be the preset's).
    pub resource_url: Option<String>,
}

/// The requirement the policy chose.
#[derive(Debug, Clone)]
pub struct ApprovedPayment {
    /// Its index among the offers.
    pub index: usize,
    /// Its amount in base units.
    pub amount: U256,
    /// The allow-listed token it pays with.
    pub token: TokenInfo,
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
        let net = NetworkPolicy { tokens: HashMap::from([("USDC".to_owned(), usdc)]), ..NetworkPolicy::default() };
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
            model_typed: model.then_some("`sell_amount` was typed by the model"),
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

    fn usdc() -> TokenInfo {
        TokenInfo {
            symbol: "USDC".into(),
            address: Address::repeat_byte(0xc0),
            decimals: 6,
            name: "USD Coin".into(),
            network: "base".into(),
            word_like: false,
        }
    }

    fn paying() -> Policy {
        let payments = PaymentPolicy {
            assets: vec![usdc()],
            max_per_request: HashMap::from([("USDC".to_owned(), U256::from(50_000u64))]),
            daily_budget: HashMap::from([("USDC".to_owned(), U256::from(100_000u64))]),
        };
        Policy::new(HashMap::new(), HashMap::from([("base".to_owned(), payments)]))
    }

    fn offer(amount: u64) -> PaymentOffer {
        PaymentOffer {
            scheme: "exact".into(),
            network: Some("base".into()),
            network_raw: "eip155:8453".into(),
            asset: usdc().address,
            amount: U256::from(amount),
            pay_to: Address::repeat_byte(0xbe),
            resource_url: Some("http://127.0.0.1:9/q?x=1".into()),
        }
    }

    #[test]
    fn offers_in_assets_of_different_decimals_are_compared_in_whole_units() {
        let dai = TokenInfo {
            symbol: "DAI".into(),
            address: Address::repeat_byte(0xda),
            decimals: 18,
            name: "Dai".into(),
            network: "base".into(),
            word_like: false,
        };
        let payments = PaymentPolicy {
            assets: vec![usdc(), dai.clone()],
            max_per_request: HashMap::from([
                ("USDC".to_owned(), U256::from(50_000u64)),
                ("DAI".to_owned(), U256::from(10u64).pow(U256::from(18u8))),
            ]),
            daily_budget: HashMap::from([
                ("USDC".to_owned(), U256::from(100_000u64)),
                ("DAI".to_owned(), U256::from(10u64).pow(U256::from(18u8))),
            ]),
        };
        let p = Policy::new(HashMap::new(), HashMap::from([("base".to_owned(), payments)]));
        let spent = HashMap::new();
        let req = PaymentRequest {
            network: "base",
            preset: "p",
            preset_host: "127.0.0.1:9",
            request_host: "127.0.0.1:9",
            payees: &[],
            spent_today: &spent,
        };
        // 0.04 USDC (40,000 base units) against 0.5 DAI (5×10¹⁷ base units, more digits but 12 times the price)…
        let in_dai = PaymentOffer {
            asset: dai.address,
            amount: U256::from(5u64) * U256::from(10u64).pow(U256::from(17u8)),
            ..offer(1)
        };
        let chosen = p.choose_payment(&req, &[Ok(in_dai.clone()), Ok(offer(40_000))]).unwrap();
        assert_eq!((chosen.index, chosen.token.symbol.as_str()), (1, "USDC"), "0.04 USDC, not 0.5 DAI");
        // …and 0.000001 DAI (10¹² base units) against 0.04 USDC: the DAI, though its base-unit number is larger.
        let tiny = PaymentOffer { amount: U256::from(10u64).pow(U256::from(12u8)), ..in_dai };
        let chosen = p.choose_payment(&req, &[Ok(offer(40_000)), Ok(tiny)]).unwrap();
        assert_eq!(chosen.token.symbol, "DAI");
    }

    #[test]
    fn the_cheapest_offer_that_passes_every_payment_rule_is_chosen() {
        let p = paying();
        let spent = HashMap::from([(usdc().address, U256::from(60_000u64))]);
        let payees = [Address::repeat_byte(0xbe)];
        let req = PaymentRequest {
            network: "base",
            preset: "swap_quote",
            preset_host: "127.0.0.1:9",
            request_host: "127.0.0.1:9",
            payees: &payees,
            spent_today: &spent,
        };
        let mut wrong_payee = offer(10);
        wrong_payee.pay_to = Address::repeat_byte(0xee);
        let mut wrong_asset = offer(10);
        wrong_asset.asset = Address::repeat_byte(0xaa);
        let mut wrong_network = offer(10);
        wrong_network.network = Some("ethereum".into());
        let mut unknown_network = offer(10);
        unknown_network.network = None;
        let mut other_host = offer(10);
        other_host.resource_url = Some("http://evil.example/q".into());
        let mut upto = offer(10);
        upto.scheme = "upto".into();
        let offers = vec![
            Ok(offer(50_001)),
            Ok(wrong_payee),
            Ok(wrong_asset),
            Ok(wrong_network),
            Ok(unknown_network),
            Ok(other_host),
            Ok(upto),
            Err("`amount` is missing".to_owned()),
            Ok(offer(45_000)),
            Ok(offer(30_000)),
            Ok(offer(40_000)),
        ];
        let chosen = p.choose_payment(&req, &offers).unwrap();
        assert_eq!((chosen.index, chosen.amount), (9, U256::from(30_000u64)), "the cheapest passing offer");
        let err = p.choose_payment(&req, &offers[..9]).unwrap_err();
        assert_eq!(err.code, ErrorCode::PaymentRefused);
        for needle in [
            "#1: 0.050001 USDC exceeds the per-request cap of 0.05 USDC",
            "#2: payee",
            "#3: asset",
            "#4: network ethereum is not the request's network base",
            "#5: network \"eip155:8453\" is not configured",
            "#6: the resource is on http://evil.example/… not the preset's host",
            "#7: scheme",
            "#8: unreadable: `amount` is missing",
            "#9: 0.045 USDC would bring today's payments to 0.105 USDC, above the daily budget of 0.1 USDC",
        ] {
            assert!(err.message.contains(needle), "{needle}: {}", err.message);
        }
        let elsewhere = PaymentRequest { request_host: "127.0.0.1:10", ..req.clone() };
        assert!(p.check_payment(&elsewhere, &offer(1)).unwrap_err().contains("not the preset's host"));
        let default_port = PaymentRequest { preset_host: "example.com", request_host: "EXAMPLE.com:80", ..req.clone() };
        let mut on_default = offer(1);
        on_default.resource_url = Some("http://example.com/q".into());
        assert!(p.check_payment(&default_port, &on_default).is_ok());
        // An https preset (as `Preset::origin` names it): its resource is on port 443, and http on 443 is no other.
        let https =
            PaymentRequest { preset_host: "https://api.example", request_host: "https://api.example", ..req.clone() };
        let mut on_https = offer(1);
        on_https.resource_url = Some("https://api.example/q".into());
        assert!(p.check_payment(&https, &on_https).is_ok());
        on_https.resource_url = Some("http://api.example/q".into());
        assert!(p.check_payment(&https, &on_https).unwrap_err().contains("not the preset's host"));
        assert!(p.choose_payment(&req, &[]).unwrap_err().message.contains("offered no requirement"));
    }

    #[test]
    fn payments_without_configuration_are_refused() {
        let spent = HashMap::new();
        let req = PaymentRequest {
            network: "base",
            preset: "p",
            preset_host: "h:1",
            request_host: "h:1",
            payees: &[],
            spent_today: &spent,
        };
        let err = policy().check_payment(&req, &PaymentOffer { resource_url: None, ..offer(1) }).unwrap_err();
        assert!(err.contains("not configured for base"), "{err}");
        let mut p = paying();
        if let Some(pp) = p.payments.get_mut("base") {
            pp.daily_budget.clear();
        }
        assert!(
            p.check_payment(&req, &PaymentOffer { resource_url: None, ..offer(1) })
                .unwrap_err()
                .contains("daily_budget")
        );
        assert!(
            paying()
                .check_payment(&req, &PaymentOffer { resource_url: None, ..offer(0) })
                .unwrap_err()
                .contains("zero")
        );
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

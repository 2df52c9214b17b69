//! The independent price: a swap quote's promised output is checked against a price that does not come from the
//! quoter.
//!
//! The source is on-chain: for each token, an AggregatorV3-style feed quoting it in USD (`[price_feeds.NETWORK]`,
//! e.g. Chainlink's ETH/USD and USDC/USD feeds), read with `eth_call`. The expected output of selling `amount` of
//! S for B is `amount · price(S) / price(B)`, in B's base units. The quote's `minBuyAmount` and the simulated buy
//! delta must both be at least `expected · (1 − max_slippage_bps / 10000)`.
//!
//! What a node alone cannot fake: each feed's decimals are pinned in configuration (the answer's scale never comes
//! from a node) and its description is checked against the chain at start-up ([`verify_feeds`]); each feed is read
//! from **every** configured RPC node, and answers that disagree by more than `max_disagreement_bps` mean there is
//! no independent price. A single node is trusted for what it answers — configure two independent providers.
//!
//! A pair without two usable feeds (none configured, a feed that reverts, a non-positive answer, one older than the
//! feed's heartbeat, nodes that disagree or do not answer) has no independent price: the swap is never automatic,
//! and the confirmation says so and shows the minimum output.

use super::human;
use crate::chain::Chain;
use crate::config::{Feed, PriceFeeds};
use crate::quote::TokenRef;
use alloy::primitives::{I256, U256};
use alloy::sol;
use alloy::sol_types::SolCall;
use holdfast_core::{ErrorCode, ToolError};
use schemars::JsonSchema;
use serde::Serialize;
use std::time::{SystemTime, UNIX_EPOCH};

sol! {
    /// The read surface of a Chainlink AggregatorV3 feed.
    interface IAggregatorV3 {
        function decimals() external view returns (uint8);
        function description() external view returns (string);
        function latestRoundData() external view returns (uint80 roundId, int256 answer, uint256 startedAt, uint256 updatedAt, uint80 answeredInRound);
    }
}

/// One feed's answer.
#[derive(Debug, Clone)]
struct UsdPrice {
    answer: U256,
    decimals: u8,
}

/// The expected output of a swap by the independent price, and where it came from.
#[derive(Debug, Clone)]
pub struct Expected {
    /// Buy-token base units the sell amount is worth.
    pub amount: U256,
    /// The feeds read, for the record.
    pub source: String,
}

/// The check's result, as the journal and the confirmation show it.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct PriceCheck {
    /// Where the price came from (the feeds read).
    pub source: String,
    /// What the sell amount is worth in the buy token by that price.
    pub expected: String,
    /// The least that is accepted: `expected · (1 − max_slippage_bps / 10000)`.
    pub minimum_accepted: String,
    /// What the quote promises at least (`minBuyAmount`).
    pub promised: String,
    /// What the simulation delivered.
    pub simulated: String,
    /// How far the promise is below the expected output, in basis points (negative: above it).
    pub deviation_bps: i64,
    /// The policy's tolerance.
    pub max_slippage_bps: u32,
    /// True when both the promise and the simulation are at or above the minimum accepted.
    pub passed: bool,
}

fn now_secs() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or_default()
}

/// One node's answer of a feed, checked for sense and age.
fn judge_round(what: &str, out: &[u8], feed: &Feed) -> Result<U256, String> {
    let round = IAggregatorV3::latestRoundDataCall::abi_decode_returns(out).map_err(|e| format!("{what}: {e}"))?;
    if round.answer <= I256::ZERO {
        return Err(format!("{what} answers {}", round.answer));
    }
    let updated = u64::try_from(round.updatedAt).unwrap_or(u64::MAX);
    let now = now_secs();
    if updated == 0 || updated > now.saturating_add(300) || now.saturating_sub(updated) > feed.heartbeat.as_secs() {
        return Err(format!(
            "{what} was last updated at {updated}, outside its heartbeat of {}s",
            feed.heartbeat.as_secs()
        ));
    }
    Ok(round.answer.into_raw())
}

/// The feed's answer as every configured node gives it, when they all answer and agree within
/// `max_disagreement_bps`; else why there is none.
async fn read_feed(chain: &Chain, feed: &Feed, symbol: &str, feeds: &PriceFeeds) -> Result<UsdPrice, String> {
    let what = format!("the {symbol}/USD feed {}", feed.address);
    let answers = chain.call_each(feed.address, IAggregatorV3::latestRoundDataCall {}.abi_encode().into()).await;
    let mut prices: Vec<(String, U256)> = Vec::with_capacity(answers.len());
    for (node, answer) in answers {
        let out = answer.map_err(|e| format!("{what} on {node}: {}", e.message))?;
        prices.push((node.clone(), judge_round(&format!("{what} on {node}"), &out, feed)?));
    }
    let (low, high) = prices.iter().fold((U256::MAX, U256::ZERO), |(lo, hi), (_, p)| (lo.min(*p), hi.max(*p)));
    let Some((_, first)) = prices.first() else { return Err(format!("{what}: no RPC node is configured")) };
    let spread_bps = (high - low).saturating_mul(U256::from(10_000u32)) / low.max(U256::from(1u8));
    if spread_bps > U256::from(feeds.max_disagreement_bps) {
        let shown: Vec<String> = prices.iter().map(|(n, p)| format!("{n}: {p}")).collect();
        return Err(format!(
            "the RPC nodes disagree on {what} by {spread_bps} bps, more than {} ({})",
            feeds.max_disagreement_bps,
            shown.join(", ")
        ));
    }
    Ok(UsdPrice { answer: *first, decimals: feed.decimals })
}

/// Checks every configured feed against the chain, on every RPC node: its `decimals()` and `description()` must be
/// the pinned ones. Run at start-up (`holdfast serve`, `mcp`, `chat`, `doctor`); a mismatch is `config_invalid`
/// naming the feed — a wrong pin, or a node that lies.
pub async fn verify_feeds(chain: &Chain, network: &str, feeds: &PriceFeeds) -> Result<(), ToolError> {
    for (symbol, feed) in &feeds.feeds {
        let what = format!("[price_feeds.{network}] feeds.{symbol} ({})", feed.address);
        let decimals = chain.call_each(feed.address, IAggregatorV3::decimalsCall {}.abi_encode().into()).await;
        let description = chain.call_each(feed.address, IAggregatorV3::descriptionCall {}.abi_encode().into()).await;
        for ((node, d), (_, desc)) in decimals.into_iter().zip(description) {
            let bad = |why: String| ToolError::new(ErrorCode::ConfigInvalid, format!("{what} on {node}: {why}"));
            let d = d.map_err(|e| bad(e.message))?;
            let d = IAggregatorV3::decimalsCall::abi_decode_returns(&d).map_err(|e| bad(format!("decimals(): {e}")))?;
            if d != feed.decimals {
                return Err(bad(format!("decimals() answers {d}, the configuration pins {}", feed.decimals)));
            }
            let desc = desc.map_err(|e| bad(e.message))?;
            let desc = IAggregatorV3::descriptionCall::abi_decode_returns(&desc)
                .map_err(|e| bad(format!("description(): {e}")))?;
            if desc != feed.description {
                return Err(bad(format!(
                    "description() answers {desc:?}, the configuration pins {:?}",
                    feed.description
                )));
            }
        }
    }
    Ok(())
}

/// The expected output of selling `amount` of `sell` for `buy` by the configured feeds, or why there is none.
pub async fn expected_output(
    chain: &Chain,
    feeds: Option<&PriceFeeds>,
    sell: &TokenRef,
    buy: &TokenRef,
    amount: U256,
) -> Result<Expected, String> {
    let feeds = feeds.ok_or_else(|| format!("no price feeds are configured for {}", sell.network))?;
    let feed = |t: &TokenRef| {
        feeds.feeds.get(&t.symbol).ok_or_else(|| format!("no price feed is configured for {}", t.symbol))
    };
    let (sell_feed, buy_feed) = (feed(sell)?, feed(buy)?);
    let (p_sell, p_buy) = tokio::try_join!(
        read_feed(chain, sell_feed, &sell.symbol, feeds),
        read_feed(chain, buy_feed, &buy.symbol, feeds)
    )?;
    let (sell_feed, buy_feed) = (sell_feed.address, buy_feed.address);
    // amount · p_sell / 10^fd_sell / 10^dec_sell = value in USD; · 10^fd_buy / p_buy · 10^dec_buy = buy base units.
    let ten = |e: u8| U256::from(10u8).checked_pow(U256::from(e));
    let numerator = ten(p_buy.decimals)
        .zip(ten(buy.decimals))
        .and_then(|(a, b)| amount.checked_mul(p_sell.answer)?.checked_mul(a)?.checked_mul(b));
    let denominator =
        ten(p_sell.decimals).zip(ten(sell.decimals)).and_then(|(a, b)| p_buy.answer.checked_mul(a)?.checked_mul(b));
    let (Some(n), Some(d)) = (numerator, denominator) else {
        return Err("the independent price overflows for this amount".into());
    };
    Ok(Expected {
        amount: n / d,
        source: format!("{}/USD feed {sell_feed} and {}/USD feed {buy_feed}", sell.symbol, buy.symbol),
    })
}

/// Judges a quote's promise and the simulated output against the expected output.
pub fn judge(
    expected: &Expected,
    promised: U256,
    simulated: U256,
    max_slippage_bps: u32,
    buy: &TokenRef,
) -> PriceCheck {
    let bps = U256::from(10_000u32);
    let minimum = expected.amount * (bps - U256::from(max_slippage_bps.min(10_000))) / bps;
    let deviation_bps = if expected.amount.is_zero() {
        0
    } else if promised <= expected.amount {
        i64::try_from((expected.amount - promised) * bps / expected.amount).unwrap_or(i64::MAX)
    } else {
        -i64::try_from((promised - expected.amount) * bps / expected.amount).unwrap_or(i64::MAX)
    };
    PriceCheck {
        source: expected.source.clone(),
        expected: human(expected.amount, buy.decimals, &buy.symbol),
        minimum_accepted: human(minimum, buy.decimals, &buy.symbol),
        promised: human(promised, buy.decimals, &buy.symbol),
        simulated: human(simulated, buy.decimals, &buy.symbol),
        deviation_bps,
        max_slippage_bps,
        passed: !expected.amount.is_zero() && promised >= minimum && simulated >= minimum,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy::primitives::Address;

    fn token(symbol: &str, decimals: u8) -> TokenRef {
        TokenRef { address: Address::ZERO, symbol: symbol.into(), decimals, network: "base".into() }
    }

    #[test]
    fn promises_below_the_tolerance_fail_and_deviation_is_signed() {
        let usdc = token("USDC", 6);
        let expected = Expected { amount: U256::from(3_000_000u64), source: "feeds".into() };
        let ok = judge(&expected, U256::from(2_976_000u64), U256::from(2_990_000u64), 100, &usdc);
        assert!(ok.passed, "{ok:?}");
        assert_eq!(ok.deviation_bps, 80);
        assert_eq!(ok.minimum_accepted, "2.97 USDC");
        let one_wei = judge(&expected, U256::from(1u8), U256::from(2_990_000u64), 100, &usdc);
        assert!(!one_wei.passed);
        let half = judge(&expected, U256::from(1_500_000u64), U256::from(1_500_000u64), 100, &usdc);
        assert_eq!((half.passed, half.deviation_bps), (false, 5_000));
        let low_sim = judge(&expected, U256::from(2_990_000u64), U256::from(2_000_000u64), 100, &usdc);
        assert!(!low_sim.passed, "the simulation is held to the same minimum");
        let above = judge(&expected, U256::from(3_030_000u64), U256::from(3_030_000u64), 100, &usdc);
        assert_eq!((above.passed, above.deviation_bps), (true, -100));
    }
}

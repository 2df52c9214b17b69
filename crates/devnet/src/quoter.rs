//! The devnet quoter: a 0x Swap API v2 look-alike (`GET /swap/allowance-holder/quote`) priced by the devnet's swap
//! venue, and `GET /price/token` for the `token_price` preset.
//!
//! [`build_quote`] and [`build_price`] do the work and can be called directly (tests build an honest quote and
//! tamper with it); [`quote_router`] serves them over HTTP. The router carries its state already, so a paywall
//! (x402) can wrap it with `Router::layer` without knowing what is inside.
//!
//! How each quote field is computed (all numbers are decimal strings, addresses EIP-55):
//! - `blockNumber`: the latest block when the request arrives; every read below is made at that block.
//! - `buyAmount`: the venue's `quote(sellToken, buyToken, sellAmount)` view.
//! - `minBuyAmount`: `buyAmount · (10000 − slippageBps) / 10000`, rounded down.
//! - `issues.allowance`: for an ERC-20 sell token, `allowance(taker, venue)` when it is below `sellAmount`.
//! - `issues.balance`: the taker's balance of the sell token (ether for the native placeholder) when below
//!   `sellAmount`.
//! - `transaction`: `to` = the venue, `data` = `sell(sellToken, buyToken, sellAmount, minBuyAmount, taker)`,
//!   `value` = `sellAmount` when selling ether else 0, `gas` = the node's estimate plus 20% when the taker can
//!   execute it now, else [`DEFAULT_GAS`], `gasPrice` = `eth_gasPrice`.
//! - `totalNetworkFee`: `gas · gasPrice`.
//! - `liquidityAvailable: false` (with only `zid`, like the real API) when the venue cannot price the pair, or when
//!   the trade would take more than half of the venue's reserve of the buy token.

use crate::contracts::abi::{IDevnetToken, ISwapVenue};
use crate::contracts::{CHAIN_ID, NATIVE, USDC, VENUE, WETH};
use alloy::eips::BlockId;
use alloy::network::TransactionBuilder;
use alloy::primitives::{Address, FixedBytes, U256};
use alloy::providers::{DynProvider, Provider};
use alloy::rpc::types::TransactionRequest;
use alloy::sol_types::SolCall;
use axum::Json;
use axum::Router;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::str::FromStr;

/// Gas limit quoted when the taker cannot execute the swap yet (missing allowance or balance), so it cannot be
/// estimated. A venue swap uses well under 100,000.
pub const DEFAULT_GAS: u64 = 300_000;
/// The `route.fills[].source` name of the devnet venue.
pub const SOURCE_NAME: &str = "HoldfastDevnetVenue";
/// Path of the quote endpoint.
pub const QUOTE_PATH: &str = "/swap/allowance-holder/quote";
/// Path of the token price endpoint.
pub const PRICE_PATH: &str = "/price/token";

/// What the quoter needs: a provider for the devnet and the addresses it prices with.
#[derive(Clone)]
pub struct QuoteState {
    /// Provider for the devnet's anvil.
    pub provider: DynProvider,
    /// The only chain id accepted.
    pub chain_id: u64,
    /// The swap venue (transaction target and allowance spender).
    pub venue: Address,
    /// USDC, the unit of `priceUsd`.
    pub usdc: Address,
}

impl QuoteState {
    /// State for the standard devnet layout (the devnet's chain id, Base addresses) over `provider`.
    pub fn new(provider: DynProvider) -> Self {
        Self { provider, chain_id: CHAIN_ID, venue: VENUE, usdc: USDC }
    }
}

impl std::fmt::Debug for QuoteState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QuoteState")
            .field("chain_id", &self.chain_id)
            .field("venue", &self.venue)
            .field("usdc", &self.usdc)
            .finish_non_exhaustive()
    }
}

/// A validated quote request (the query of `GET /swap/allowance-holder/quote`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuoteRequest {
    /// `chainId`.
    pub chain_id: u64,
    /// `sellToken` (the native placeholder for ether).
    pub sell_token: Address,
    /// `buyToken`.
    pub buy_token: Address,
    /// `sellAmount` in base units.
    pub sell_amount: U256,
    /// `taker`: pays the sell token (and sends the transaction).
    pub taker: Address,
    /// `recipient`: receives the buy token (default: the taker), as the real API's optional parameter.
    pub recipient: Address,
    /// `slippageBps` (default 100, at most 10000).
    pub slippage_bps: u16,
}

/// A validated token price request (the query of `GET /price/token`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PriceRequest {
    /// `chainId`.
    pub chain_id: u64,
    /// `token` (the native placeholder for ether).
    pub token: Address,
}

/// Why the quoter refused or failed a request. Serialised like the real API's errors.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QuoteError {
    /// A query parameter is missing or malformed, or the chain is not this devnet's → 400 `INPUT_INVALID`.
    #[error("{field}: {reason}")]
    InputInvalid {
        /// The parameter.
        field: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The venue holds none of the token asked about → 400 `TOKEN_NOT_SUPPORTED`.
    #[error("token {token} is not supported: {reason}")]
    TokenNotSupported {
        /// The token.
        token: Address,
        /// Why.
        reason: String,
    },
    /// The node could not be read → 500 `INTERNAL_SERVER_ERROR`.
    #[error("upstream error: {0}")]
    Upstream(String),
}

impl QuoteError {
    fn input(field: &str, reason: impl Into<String>) -> Self {
        Self::InputInvalid { field: field.into(), reason: reason.into() }
    }

    fn upstream(what: &str, e: impl std::fmt::Display) -> Self {
        Self::Upstream(format!("{what}: {e}"))
    }

    /// The HTTP status it is served with.
    pub fn status(&self) -> StatusCode {
        match self {
            Self::InputInvalid { .. } | Self::TokenNotSupported { .. } => StatusCode::BAD_REQUEST,
            Self::Upstream(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// The JSON body: `{"name", "message", "data": {"zid", "details"?}}`.
    pub fn to_json(&self) -> Value {
        let zid = new_zid();
        match self {
            Self::InputInvalid { field, reason } => json!({
                "name": "INPUT_INVALID",
                "message": format!("Validation Failed: {field}: {reason}"),
                "data": {"zid": zid, "details": [{"field": field, "reason": reason}]},
            }),
            Self::TokenNotSupported { token, reason } => json!({
                "name": "TOKEN_NOT_SUPPORTED",
                "message": format!("token {token} is not supported: {reason}"),
                "data": {"zid": zid, "token": token},
            }),
            Self::Upstream(message) => json!({
                "name": "INTERNAL_SERVER_ERROR",
                "message": message,
                "data": {"zid": zid},
            }),
        }
    }
}

impl IntoResponse for QuoteError {
    fn into_response(self) -> Response {
        (self.status(), Json(self.to_json())).into_response()
    }
}

/// A fresh request id in 0x's `zid` format (12 random bytes, hex).
fn new_zid() -> String {
    format!("{:#x}", FixedBytes::<12>::random())
}

/// Query parameters by name, refusing duplicates.
fn param_map(pairs: &[(String, String)]) -> Result<HashMap<&str, &str>, QuoteError> {
    let mut map = HashMap::new();
    for (k, v) in pairs {
        if map.insert(k.as_str(), v.as_str()).is_some() {
            return Err(QuoteError::input(k, "given more than once"));
        }
    }
    Ok(map)
}

fn required<'a>(map: &HashMap<&str, &'a str>, field: &str) -> Result<&'a str, QuoteError> {
    match map.get(field) {
        Some(v) if !v.trim().is_empty() => Ok(v.trim()),
        _ => Err(QuoteError::input(field, "required")),
    }
}

fn parse_chain_id(value: &str) -> Result<u64, QuoteError> {
    if !value.bytes().all(|b| b.is_ascii_digit()) {
        return Err(QuoteError::input("chainId", "must be a decimal chain id"));
    }
    value.parse().map_err(|_| QuoteError::input("chainId", "must be a decimal chain id"))
}

/// Parses an address; mixed-case input must carry a valid EIP-55 checksum.
fn parse_address(field: &str, value: &str) -> Result<Address, QuoteError> {
    let hex = value.strip_prefix("0x").unwrap_or("");
    if hex.len() != 40 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(QuoteError::input(field, "must be a 0x-prefixed 20-byte hex address"));
    }
    let mixed = hex.bytes().any(|b| b.is_ascii_uppercase()) && hex.bytes().any(|b| b.is_ascii_lowercase());
    if mixed {
        Address::parse_checksummed(value, None).map_err(|_| QuoteError::input(field, "bad EIP-55 checksum"))
    } else {
        Address::from_str(value).map_err(|_| QuoteError::input(field, "must be a 0x-prefixed 20-byte hex address"))
    }
}

fn parse_amount(field: &str, value: &str) -> Result<U256, QuoteError> {
    if !value.bytes().all(|b| b.is_ascii_digit()) {
        return Err(QuoteError::input(field, "must be a positive integer in base units (decimal digits only)"));
    }
    let amount = U256::from_str_radix(value, 10).map_err(|_| QuoteError::input(field, "does not fit in uint256"))?;
    if amount.is_zero() {
        return Err(QuoteError::input(field, "must be greater than zero"));
    }
    Ok(amount)
}

impl QuoteRequest {
    /// Validates a query string's parameters. `recipient` (who receives the buy token) defaults to the
    /// taker; other optional parameters of the real API (`txOrigin`, fee parameters…) are ignored.
    pub fn from_query(pairs: &[(String, String)]) -> Result<Self, QuoteError> {
        let map = param_map(pairs)?;
        let chain_id = parse_chain_id(required(&map, "chainId")?)?;
        let sell_token = parse_address("sellToken", required(&map, "sellToken")?)?;
        let buy_token = parse_address("buyToken", required(&map, "buyToken")?)?;
        if map.contains_key("buyAmount") {
            return Err(QuoteError::input("buyAmount", "not supported: give sellAmount"));
        }
        let sell_amount = parse_amount("sellAmount", required(&map, "sellAmount")?)?;
        let taker = parse_address("taker", required(&map, "taker")?)?;
        let recipient = match map.get("recipient") {
            Some(v) => parse_address("recipient", v)?,
            None => taker,
        };
        let slippage_bps = match map.get("slippageBps") {
            None => 100,
            Some(v) => v
                .parse::<u16>()
                .ok()
                .filter(|bps| *bps <= 10_000 && v.bytes().all(|b| b.is_ascii_digit()))
                .ok_or_else(|| QuoteError::input("slippageBps", "must be an integer from 0 to 10000"))?,
        };
        Ok(Self { chain_id, sell_token, buy_token, sell_amount, taker, recipient, slippage_bps })
    }
}

impl PriceRequest {
    /// Validates a query string's parameters (`chainId`, `token`).
    pub fn from_query(pairs: &[(String, String)]) -> Result<Self, QuoteError> {
        let map = param_map(pairs)?;
        let chain_id = parse_chain_id(required(&map, "chainId")?)?;
        let token = parse_address("token", required(&map, "token")?)?;
        Ok(Self { chain_id, token })
    }
}

fn check_chain(state: &QuoteState, chain_id: u64) -> Result<(), QuoteError> {
    if chain_id == state.chain_id {
        Ok(())
    } else {
        Err(QuoteError::input("chainId", format!("chain {chain_id} is not supported here (only {})", state.chain_id)))
    }
}

/// How the venue's `quote` call ended when it did not return an amount.
enum Unpriced {
    /// The venue cannot fill it (no or too little liquidity, amount too small, arithmetic overflow…).
    NoLiquidity,
    /// The request itself is wrong.
    Input(QuoteError),
    /// The node failed.
    Upstream(QuoteError),
}

fn classify(err: &alloy::contract::Error) -> Unpriced {
    use ISwapVenue::ISwapVenueErrors as E;
    if let Some(decoded) = err.as_decoded_interface_error::<E>() {
        return match decoded {
            E::SameToken(_) => Unpriced::Input(QuoteError::input("buyToken", "must differ from sellToken")),
            E::ZeroSellAmount(_) => Unpriced::Input(QuoteError::input("sellAmount", "must be greater than zero")),
            _ => Unpriced::NoLiquidity,
        };
    }
    if err.as_revert_data().is_some() {
        return Unpriced::NoLiquidity;
    }
    if let alloy::contract::Error::TransportError(t) = err
        && let Some(resp) = t.as_error_resp()
        && resp.message.contains("revert")
    {
        // A revert without data: e.g. a token address without code, whose balanceOf returns nothing.
        return Unpriced::NoLiquidity;
    }
    Unpriced::Upstream(QuoteError::upstream("pricing with the venue", err))
}

async fn reserve(state: &QuoteState, token: Address, block: BlockId) -> Result<U256, QuoteError> {
    if token == NATIVE {
        state
            .provider
            .get_balance(state.venue)
            .block_id(block)
            .await
            .map_err(|e| QuoteError::upstream("venue balance", e))
    } else {
        // A token without code cannot be read; it has no liquidity here.
        Ok(IDevnetToken::new(token, &state.provider)
            .balanceOf(state.venue)
            .block(block)
            .call()
            .await
            .unwrap_or_default())
    }
}

async fn symbol(state: &QuoteState, token: Address, block: BlockId) -> String {
    if token == NATIVE {
        return "ETH".into();
    }
    IDevnetToken::new(token, &state.provider).symbol().block(block).call().await.unwrap_or_else(|_| "UNKNOWN".into())
}

fn no_liquidity() -> Value {
    json!({"liquidityAvailable": false, "zid": new_zid()})
}

/// Builds an honest quote for `req` against the devnet at the latest block (see the module docs for each field).
pub async fn build_quote(state: &QuoteState, req: &QuoteRequest) -> Result<Value, QuoteError> {
    check_chain(state, req.chain_id)?;
    if req.sell_token == req.buy_token {
        return Err(QuoteError::input("buyToken", "must differ from sellToken"));
    }
    if req.sell_amount.is_zero() {
        return Err(QuoteError::input("sellAmount", "must be greater than zero"));
    }
    if req.slippage_bps > 10_000 {
        return Err(QuoteError::input("slippageBps", "must be an integer from 0 to 10000"));
    }
    let provider = &state.provider;
    let block_number = provider.get_block_number().await.map_err(|e| QuoteError::upstream("block number", e))?;
    let block = BlockId::number(block_number);

    let venue = ISwapVenue::new(state.venue, provider);
    let buy_amount = match venue.quote(req.sell_token, req.buy_token, req.sell_amount).block(block).call().await {
        Ok(amount) => amount,
        Err(e) => {
            return match classify(&e) {
                Unpriced::NoLiquidity => Ok(no_liquidity()),
                Unpriced::Input(err) | Unpriced::Upstream(err) => Err(err),
            };
        }
    };
    // Like an aggregator with a price-impact limit: no route that drains more than half of the buy reserve.
    let buy_reserve = reserve(state, req.buy_token, block).await?;
    if buy_amount.is_zero() || buy_amount.saturating_mul(U256::from(2)) > buy_reserve {
        return Ok(no_liquidity());
    }
    let min_buy_amount = buy_amount * U256::from(10_000 - req.slippage_bps) / U256::from(10_000);

    let native_sell = req.sell_token == NATIVE;
    let allowance_issue = if native_sell {
        None
    } else {
        let actual = IDevnetToken::new(req.sell_token, provider)
            .allowance(req.taker, state.venue)
            .block(block)
            .call()
            .await
            .map_err(|e| QuoteError::upstream("reading the taker's allowance", e))?;
        (actual < req.sell_amount).then_some(actual)
    };
    let balance = if native_sell {
        provider.get_balance(req.taker).block_id(block).await.map_err(|e| QuoteError::upstream("taker balance", e))?
    } else {
        IDevnetToken::new(req.sell_token, provider)
            .balanceOf(req.taker)
            .block(block)
            .call()
            .await
            .map_err(|e| QuoteError::upstream("reading the taker's balance", e))?
    };
    let balance_issue = (balance < req.sell_amount).then_some(balance);

    let data = ISwapVenue::sellCall {
        sellToken: req.sell_token,
        buyToken: req.buy_token,
        sellAmount: req.sell_amount,
        minBuyAmount: min_buy_amount,
        recipient: req.recipient,
    }
    .abi_encode();
    let value = if native_sell { req.sell_amount } else { U256::ZERO };
    let gas = if allowance_issue.is_none() && balance_issue.is_none() {
        let tx = TransactionRequest::default()
            .with_from(req.taker)
            .with_to(state.venue)
            .with_value(value)
            .with_input(data.clone());
        match provider.estimate_gas(tx).block(block).await {
            Ok(estimate) => estimate.saturating_mul(12) / 10,
            Err(_) => DEFAULT_GAS,
        }
    } else {
        DEFAULT_GAS
    };
    let gas_price = provider.get_gas_price().await.map_err(|e| QuoteError::upstream("gas price", e))?;
    let total_network_fee = U256::from(gas) * U256::from(gas_price);
    let sell_symbol = symbol(state, req.sell_token, block).await;
    let buy_symbol = symbol(state, req.buy_token, block).await;

    let allowance = allowance_issue
        .map_or(Value::Null, |actual| json!({"actual": actual.to_string(), "spender": state.venue.to_checksum(None)}));
    let balance = balance_issue.map_or(Value::Null, |actual| {
        json!({
            "token": req.sell_token.to_checksum(None),
            "actual": actual.to_string(),
            "expected": req.sell_amount.to_string(),
        })
    });
    Ok(json!({
        "blockNumber": block_number.to_string(),
        "buyAmount": buy_amount.to_string(),
        "buyToken": req.buy_token.to_checksum(None),
        "fees": {"integratorFee": null, "zeroExFee": null, "gasFee": null},
        "issues": {
            "allowance": allowance,
            "balance": balance,
            "simulationIncomplete": false,
            "invalidSourcesPassed": [],
        },
        "liquidityAvailable": true,
        "minBuyAmount": min_buy_amount.to_string(),
        "route": {
            "fills": [{
                "from": req.sell_token.to_checksum(None),
                "to": req.buy_token.to_checksum(None),
                "source": SOURCE_NAME,
                "proportionBps": "10000",
            }],
            "tokens": [
                {"address": req.sell_token.to_checksum(None), "symbol": sell_symbol},
                {"address": req.buy_token.to_checksum(None), "symbol": buy_symbol},
            ],
        },
        "sellAmount": req.sell_amount.to_string(),
        "sellToken": req.sell_token.to_checksum(None),
        "totalNetworkFee": total_network_fee.to_string(),
        "transaction": {
            "to": state.venue.to_checksum(None),
            "data": alloy::primitives::hex::encode_prefixed(&data),
            "gas": gas.to_string(),
            "gasPrice": gas_price.to_string(),
            "value": value.to_string(),
        },
        "zid": new_zid(),
        "chainId": state.chain_id.to_string(),
    }))
}

/// Formats `micro` (millionths) as a decimal string without trailing zeros (`3000`, `2999.5`, `0.000001`).
fn format_micro(micro: U256) -> String {
    let million = U256::from(1_000_000u64);
    let whole = micro / million;
    let frac = (micro % million).to::<u64>();
    if frac == 0 {
        whole.to_string()
    } else {
        let frac = format!("{frac:06}");
        format!("{whole}.{}", frac.trim_end_matches('0'))
    }
}

/// The token's USD price from the venue's reserves: its USDC reserve over its reserve of `token`, scaled by the
/// decimals (USDC counts as 1 USD; 6 fractional digits at most).
pub async fn build_price(state: &QuoteState, req: &PriceRequest) -> Result<Value, QuoteError> {
    check_chain(state, req.chain_id)?;
    let provider = &state.provider;
    let block_number = provider.get_block_number().await.map_err(|e| QuoteError::upstream("block number", e))?;
    let block = BlockId::number(block_number);
    let price = if req.token == state.usdc {
        "1".to_owned()
    } else {
        let unsupported = |reason: &str| QuoteError::TokenNotSupported { token: req.token, reason: reason.into() };
        let decimals: u32 = if req.token == NATIVE || req.token == WETH {
            18
        } else {
            IDevnetToken::new(req.token, provider)
                .decimals()
                .block(block)
                .call()
                .await
                .map(u32::from)
                .map_err(|_| unsupported("it has no decimals()"))?
        };
        let token_reserve = reserve(state, req.token, block).await?;
        let usdc_reserve = reserve(state, state.usdc, block).await?;
        if token_reserve.is_zero() || usdc_reserve.is_zero() {
            return Err(unsupported("the devnet venue has no liquidity for it"));
        }
        let micro = U256::from(10u64)
            .checked_pow(U256::from(decimals))
            .and_then(|scale| usdc_reserve.checked_mul(scale))
            .map(|scaled| scaled / token_reserve)
            .ok_or_else(|| unsupported("its price does not fit"))?;
        format_micro(micro)
    };
    Ok(json!({
        "chainId": state.chain_id.to_string(),
        "token": req.token.to_checksum(None),
        "priceUsd": price,
        "blockNumber": block_number.to_string(),
    }))
}

type RawPairs = Result<Query<Vec<(String, String)>>, QueryRejection>;

fn pairs(query: RawPairs) -> Result<Vec<(String, String)>, QuoteError> {
    query.map(|Query(p)| p).map_err(|e| QuoteError::input("query", e.body_text()))
}

async fn quote_handler(State(state): State<QuoteState>, query: RawPairs) -> Response {
    let result = match pairs(query).and_then(|p| QuoteRequest::from_query(&p)) {
        Ok(req) => build_quote(&state, &req).await,
        Err(e) => Err(e),
    };
    match result {
        Ok(body) => {
            tracing::info!(liquidity = %body["liquidityAvailable"], "quote served");
            Json(body).into_response()
        }
        Err(e) => {
            tracing::info!(error = %e, "quote refused");
            e.into_response()
        }
    }
}

async fn price_handler(State(state): State<QuoteState>, query: RawPairs) -> Response {
    let result = match pairs(query).and_then(|p| PriceRequest::from_query(&p)) {
        Ok(req) => build_price(&state, &req).await,
        Err(e) => Err(e),
    };
    match result {
        Ok(body) => Json(body).into_response(),
        Err(e) => {
            tracing::info!(error = %e, "price refused");
            e.into_response()
        }
    }
}

/// The quoter's routes, `GET /swap/allowance-holder/quote` and `GET /price/token`, with their state applied.
/// Wrap the result with `.layer(...)` to put a paywall in front of both.
pub fn quote_router(state: QuoteState) -> Router {
    Router::new().route(QUOTE_PATH, get(quote_handler)).route(PRICE_PATH, get(price_handler)).with_state(state)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
    }

    const GOOD: &[(&str, &str)] = &[
        ("chainId", "8453"),
        ("sellToken", "0xEeeeeEeeeEeEeeEeEeEeeEEEeeeeEeeeeeeeEEeE"),
        ("buyToken", "0x833589fcd6edb6e08f4c7c32d4f71b54bda02913"),
        ("sellAmount", "10000000000000000"),
        ("taker", "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"),
    ];

    #[test]
    fn parses_a_good_query_with_default_slippage() {
        let r = QuoteRequest::from_query(&q(GOOD)).unwrap();
        assert_eq!(r.sell_token, NATIVE);
        assert_eq!(r.buy_token, USDC);
        assert_eq!(r.slippage_bps, 100);
        assert_eq!(r.sell_amount, U256::from(10_000_000_000_000_000u64));
    }

    #[test]
    fn refuses_bad_params_naming_the_field() {
        let cases: &[(&str, &str)] = &[
            ("sellAmount", "0"),
            ("sellAmount", "-5"),
            ("sellAmount", "1.5"),
            ("sellAmount", "1e18"),
            ("sellAmount", "999999999999999999999999999999999999999999999999999999999999999999999999999999999"),
            ("taker", "0x1234"),
            ("taker", "0x70997970c51812dc3A010C7d01b50e0d17dc79C8"),
            ("chainId", "base"),
            ("slippageBps", "10001"),
            ("slippageBps", "-1"),
        ];
        for (field, value) in cases {
            let mut pairs = q(GOOD);
            pairs.retain(|(k, _)| k != field);
            pairs.push(((*field).to_owned(), (*value).to_owned()));
            match QuoteRequest::from_query(&pairs) {
                Err(QuoteError::InputInvalid { field: f, .. }) => assert_eq!(f, *field, "{value}"),
                other => panic!("{field}={value}: {other:?}"),
            }
        }
        let missing: Vec<_> = q(GOOD).into_iter().filter(|(k, _)| k != "taker").collect();
        assert!(
            matches!(QuoteRequest::from_query(&missing), Err(QuoteError::InputInvalid { field, .. }) if field == "taker")
        );
        let mut dup = q(GOOD);
        dup.push(("sellAmount".into(), "1".into()));
        assert!(QuoteRequest::from_query(&dup).is_err());
    }

    #[test]
    fn errors_serialise_like_the_real_api() {
        let e = QuoteError::input("sellAmount", "required");
        assert_eq!(e.status(), StatusCode::BAD_REQUEST);
        let v = e.to_json();
        assert_eq!(v["name"], "INPUT_INVALID");
        assert_eq!(v["data"]["details"][0]["field"], "sellAmount");
        assert!(v["data"]["zid"].as_str().unwrap().len() == 26);
    }

    #[test]
    fn micro_amounts_format_as_decimals() {
        assert_eq!(format_micro(U256::from(3_000_000_000u64)), "3000");
        assert_eq!(format_micro(U256::from(2_999_500_000u64)), "2999.5");
        assert_eq!(format_micro(U256::from(1u64)), "0.000001");
    }
}

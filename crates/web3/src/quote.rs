//! The swap-quote validator (invariant 3): one function, run when a quote is written (installed on the `swap_quote`
//! declaration, so the store runs it for every writer) and again when it is used (`web3_tx`, `token_approve`).
//!
//! A quote is accepted only if: its chain id is the selected network's; `transaction.to` is the network's pinned
//! swap target and any allowance spender is the pinned spender; the taker is `wallet_address`; sell token, buy token
//! and sell amount equal their registers; `transaction.value` equals the sell amount when selling the native token
//! and is zero otherwise; `minBuyAmount` is present (and not above `buyAmount`); liquidity is available. Its age is
//! enforced by the store's declared maximum age. Every failure is `quote_rejected` naming the field.

use alloy::primitives::{Address, Bytes, U256};
use holdfast_core::address::parse_address;
use holdfast_core::config::{NATIVE_TOKEN_ADDRESS, NetworkConfig, NetworkTable};
use holdfast_core::registers::RegisterValidator;
use holdfast_core::{ErrorCode, RegisterStore, ToolError};
use serde_json::Value;

/// A token as held in `sell_token` / `buy_token`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenRef {
    /// Address (native placeholder for the native token).
    pub address: Address,
    /// Symbol.
    pub symbol: String,
    /// Decimals.
    pub decimals: u8,
    /// Canonical network name.
    pub network: String,
}

impl TokenRef {
    /// True for the native token.
    pub fn is_native(&self) -> bool {
        self.address == NATIVE_TOKEN_ADDRESS
    }

    /// Reads a token register.
    pub fn from_register(store: &RegisterStore, key: &str) -> Result<Self, ToolError> {
        let entry = store.require(key)?;
        let v = &entry.value;
        let bad = || ToolError::new(ErrorCode::QuoteRejected, format!("register `{key}` does not hold a token"));
        let address = v.get("address").and_then(Value::as_str).ok_or_else(bad)?;
        Ok(Self {
            address: parse_address(key, address)?,
            symbol: v.get("symbol").and_then(Value::as_str).ok_or_else(bad)?.to_owned(),
            decimals: v.get("decimals").and_then(Value::as_u64).and_then(|d| u8::try_from(d).ok()).ok_or_else(bad)?,
            network: v.get("network").and_then(Value::as_str).ok_or_else(bad)?.to_owned(),
        })
    }
}

/// A quote that passed validation, with everything the sender needs.
#[derive(Debug, Clone)]
pub struct ValidQuote {
    /// The network.
    pub network: NetworkConfig,
    /// Sold token.
    pub sell: TokenRef,
    /// Bought token.
    pub buy: TokenRef,
    /// The wallet (taker).
    pub taker: Address,
    /// Amount sold, base units.
    pub sell_amount: U256,
    /// Expected amount bought.
    pub buy_amount: U256,
    /// Minimum amount bought.
    pub min_buy_amount: U256,
    /// Call target (the pinned swap target).
    pub to: Address,
    /// Calldata (not trusted: the simulation checks what it does).
    pub data: Bytes,
    /// Native value sent.
    pub value: U256,
    /// Allowance the quoter reported missing, if any.
    pub allowance_issue: Option<U256>,
}

fn reject(field: &str, why: impl std::fmt::Display) -> ToolError {
    ToolError::new(ErrorCode::QuoteRejected, format!("`{field}`: {why}"))
}

fn field<'a>(quote: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(quote, |v, seg| v.get(seg))
}

fn text<'a>(quote: &'a Value, path: &str) -> Result<&'a str, ToolError> {
    field(quote, path).and_then(Value::as_str).ok_or_else(|| reject(path, "missing or not a string"))
}

fn amount(quote: &Value, path: &str) -> Result<U256, ToolError> {
    let v = field(quote, path).ok_or_else(|| reject(path, "missing"))?;
    let s = match v {
        Value::String(s) => s.clone(),
        Value::Number(n) if n.is_u64() => n.to_string(),
        _ => return Err(reject(path, "not a base-unit integer")),
    };
    holdfast_core::amount::parse_base_units(path, &s).map_err(|e| reject(path, e.message))
}

fn addr(quote: &Value, path: &str) -> Result<Address, ToolError> {
    parse_address(path, text(quote, path)?).map_err(|e| reject(path, e.message))
}

/// Validates `quote` against the registers and the network table. `expected_network` (the caller's `network`
/// parameter on use) must be the network of the sell and buy tokens.
pub fn validate_quote(
    quote: &Value,
    store: &RegisterStore,
    networks: &NetworkTable,
    expected_network: Option<&NetworkConfig>,
) -> Result<ValidQuote, ToolError> {
    if !quote.is_object() {
        return Err(reject("swap_quote", "a quote is a JSON object"));
    }
    let sell = TokenRef::from_register(store, "sell_token")?;
    let buy = TokenRef::from_register(store, "buy_token")?;
    let sell_amount_reg = store.require("sell_amount")?;
    let sell_amount_reg = sell_amount_reg
        .value
        .as_str()
        .and_then(|s| U256::from_str_radix(s, 10).ok())
        .ok_or_else(|| reject("sell_amount", "register does not hold a base-unit amount"))?;
    let wallet = store.require("wallet_address")?;
    let wallet = wallet
        .value
        .as_str()
        .and_then(|s| parse_address("wallet_address", s).ok())
        .ok_or_else(|| reject("wallet_address", "register does not hold an address"))?;

    if sell.network != buy.network {
        return Err(reject("buy_token", format!("is on {} but sell_token is on {}", buy.network, sell.network)));
    }
    let network = networks.resolve(&sell.network)?.clone();
    if let Some(expected) = expected_network
        && expected.name != network.name
    {
        return Err(reject("network", format!("the quote's tokens are on {}, not {}", network.name, expected.name)));
    }

    if quote.get("liquidityAvailable") == Some(&Value::Bool(false)) {
        return Err(reject("liquidityAvailable", "the quoter reports no liquidity"));
    }
    let chain_id = match field(quote, "chainId") {
        Some(Value::Number(n)) => n.as_u64(),
        Some(Value::String(s)) => s.parse().ok(),
        _ => None,
    }
    .ok_or_else(|| reject("chainId", "missing"))?;
    if chain_id != network.chain_id {
        return Err(reject("chainId", format!("{chain_id} is not {}'s chain id {}", network.name, network.chain_id)));
    }

    let pinned_target = network
        .contracts
        .swap_target
        .ok_or_else(|| reject("transaction.to", format!("no swap target is pinned for {}", network.name)))?;
    let to = addr(quote, "transaction.to")?;
    if to != pinned_target {
        return Err(reject("transaction.to", format!("{to} is not the pinned swap target {pinned_target}")));
    }
    let allowance_issue = match field(quote, "issues.allowance") {
        None | Some(Value::Null) => None,
        Some(_) => {
            let spender = addr(quote, "issues.allowance.spender")?;
            let pinned_spender = crate::kernel::inputs::pinned_spender(&network)
                .map_err(|e| reject("issues.allowance.spender", e.message))?;
            if spender != pinned_spender {
                return Err(reject(
                    "issues.allowance.spender",
                    format!("{spender} is not the pinned spender {pinned_spender}"),
                ));
            }
            Some(amount(quote, "issues.allowance.actual")?)
        }
    };

    let taker = addr(quote, "taker")?;
    if taker != wallet {
        return Err(reject("taker", format!("{taker} is not the wallet {wallet}")));
    }
    let sell_token = addr(quote, "sellToken")?;
    if sell_token != sell.address {
        return Err(reject("sellToken", format!("{sell_token} is not sell_token {} ({})", sell.address, sell.symbol)));
    }
    let buy_token = addr(quote, "buyToken")?;
    if buy_token != buy.address {
        return Err(reject("buyToken", format!("{buy_token} is not buy_token {} ({})", buy.address, buy.symbol)));
    }
    if sell_token == buy_token {
        return Err(reject("buyToken", "equals the sell token"));
    }
    let sell_amount = amount(quote, "sellAmount")?;
    if sell_amount != sell_amount_reg {
        return Err(reject("sellAmount", format!("{sell_amount} is not sell_amount {sell_amount_reg}")));
    }
    let value = amount(quote, "transaction.value")?;
    let expected_value = if sell.is_native() { sell_amount } else { U256::ZERO };
    if value != expected_value {
        return Err(reject("transaction.value", format!("{value} should be {expected_value}")));
    }
    let buy_amount = amount(quote, "buyAmount")?;
    let min_buy_amount = amount(quote, "minBuyAmount")?;
    if min_buy_amount.is_zero() {
        return Err(reject("minBuyAmount", "is zero: the swap would accept receiving nothing"));
    }
    if min_buy_amount > buy_amount {
        return Err(reject("minBuyAmount", "exceeds buyAmount"));
    }
    let data: Bytes = text(quote, "transaction.data")?.parse().map_err(|_| reject("transaction.data", "not hex"))?;
    if data.len() < 4 {
        return Err(reject("transaction.data", "is empty"));
    }
    Ok(ValidQuote {
        network,
        sell,
        buy,
        taker,
        sell_amount,
        buy_amount,
        min_buy_amount,
        to,
        data,
        value,
        allowance_issue,
    })
}

/// The validator installed on the `swap_quote` declaration: the store runs it on every write.
#[derive(Debug, Clone)]
pub struct QuoteValidator {
    networks: NetworkTable,
}

impl QuoteValidator {
    /// A validator over `networks`.
    pub fn new(networks: NetworkTable) -> Self {
        Self { networks }
    }
}

impl RegisterValidator for QuoteValidator {
    fn validate(&self, _key: &str, value: &Value, store: &RegisterStore) -> Result<(), ToolError> {
        validate_quote(value, store, &self.networks, None).map(|_| ())
    }
}

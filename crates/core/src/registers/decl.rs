//! Declared registers: value type, allowed writers, maximum age, and whether a `model` origin is acceptable.
//!
//! The defaults follow the table in `safety-model.md`; configuration may override them. Undeclared keys are scratch
//! space whose values are checked by suffix (`*_address`, `*_amount`) and which value-moving tools never consume.

use super::{Origin, RegisterStore};
use crate::address::parse_address;
use crate::amount::parse_base_units;
use crate::error::{ErrorCode, ToolError};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// The type a register's value must have.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ValueType {
    /// An Ethereum address string, stored EIP-55 checksummed.
    Address,
    /// A base-unit integer string that fits `uint256`.
    BaseUnits,
    /// A token object `{address, symbol, decimals, network}`.
    Token,
    /// Any JSON object (further checked by a [`RegisterValidator`] when one is installed).
    Object,
    /// A swap quote object. The store refuses every write to a register of this type unless its declaration
    /// carries a validator (the quote validator), so a value held under this type has passed it.
    SwapQuote,
    /// A token price object (as a price preset answers it). Never a quote, never a source of decimals.
    TokenPrice,
    /// Any JSON value.
    Any,
}

impl ValueType {
    /// The type implied by an undeclared key's suffix.
    pub fn for_scratch_key(key: &str) -> ValueType {
        if key.ends_with("_address") {
            ValueType::Address
        } else if key.ends_with("_amount") {
            ValueType::BaseUnits
        } else {
            ValueType::Any
        }
    }

    /// Whether a register of this type can take a value of type `value` (what a tool knows it will write before
    /// it has the value): any JSON under `Any`; an object, a price or a quote under `Object`; an object that may turn
    /// out to be a token or a price under those types (the value's own check decides); a quote only under a quote
    /// type; never an object under a string type.
    ///
    /// ```
    /// use holdfast_core::registers::ValueType;
    ///
    /// assert!(ValueType::Any.can_hold(ValueType::TokenPrice));
    /// assert!(ValueType::SwapQuote.can_hold(ValueType::SwapQuote));
    /// assert!(!ValueType::SwapQuote.can_hold(ValueType::TokenPrice));
    /// assert!(!ValueType::Address.can_hold(ValueType::Object));
    /// ```
    pub fn can_hold(self, value: ValueType) -> bool {
        use ValueType::{Address, Any, BaseUnits, Object, SwapQuote, Token, TokenPrice};
        match (self, value) {
            (Any, _) => true,
            (a, b) if a == b => true,
            (Object, Token | TokenPrice | SwapQuote) => true,
            (Token | TokenPrice, Object) => true,
            (Address | BaseUnits | Token | TokenPrice | SwapQuote | Object, _) => false,
        }
    }

    /// The snake_case name, for messages.
    pub fn as_str(self) -> &'static str {
        match self {
            ValueType::Address => "address",
            ValueType::BaseUnits => "base-unit amount",
            ValueType::Token => "token",
            ValueType::Object => "object",
            ValueType::SwapQuote => "swap quote",
            ValueType::TokenPrice => "token price",
            ValueType::Any => "value",
        }
    }

    /// Checks `value` against the type, returning its canonical form. `field` names the register in errors.
    pub fn check(self, field: &str, value: Value) -> Result<Value, ToolError> {
        match self {
            ValueType::Any => Ok(value),
            ValueType::Address => {
                let s = expect_str(field, &value, ErrorCode::InvalidAddress)?;
                Ok(Value::String(parse_address(field, s)?.to_checksum(None)))
            }
            ValueType::BaseUnits => {
                let s = expect_str(field, &value, ErrorCode::InvalidAmount)?;
                Ok(Value::String(parse_base_units(field, s)?.to_string()))
            }
            ValueType::Token => check_token(field, value),
            ValueType::Object | ValueType::SwapQuote | ValueType::TokenPrice => {
                if value.is_object() {
                    Ok(value)
                } else {
                    Err(ToolError::new(ErrorCode::RegisterWriteDenied, format!("`{field}` must hold a JSON object")))
                }
            }
        }
    }
}

fn expect_str<'v>(field: &str, value: &'v Value, code: ErrorCode) -> Result<&'v str, ToolError> {
    value.as_str().ok_or_else(|| {
        ToolError::new(code, format!("`{field}` must be a string, got {}", crate::text::json_kind(value)))
    })
}

fn check_token(field: &str, value: Value) -> Result<Value, ToolError> {
    let bad = |why: &str| ToolError::new(ErrorCode::RegisterWriteDenied, format!("`{field}`: {why}"));
    let Value::Object(mut map) = value else {
        return Err(bad("a token register holds an object {address, symbol, decimals, network}"));
    };
    let address = map.get("address").and_then(Value::as_str).ok_or_else(|| bad("`address` is missing"))?;
    let address = parse_address(&format!("{field}.address"), address)?.to_checksum(None);
    map.insert("address".into(), Value::String(address));
    if map.get("symbol").and_then(Value::as_str).is_none_or(|s| s.is_empty()) {
        return Err(bad("`symbol` is missing"));
    }
    if map.get("decimals").and_then(Value::as_u64).is_none_or(|d| d > 255) {
        return Err(bad("`decimals` must be an integer 0–255"));
    }
    if map.get("network").and_then(Value::as_str).is_none_or(|s| s.is_empty()) {
        return Err(bad("`network` is missing"));
    }
    Ok(Value::Object(map))
}

/// One tool (optionally one of its presets) allowed to write a declared register.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WriterRule {
    /// The tool name.
    pub tool: String,
    /// When set, only this preset of the tool may write.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preset: Option<String>,
}

impl WriterRule {
    /// Any run of `tool`.
    pub fn tool(tool: &str) -> Self {
        Self { tool: tool.to_owned(), preset: None }
    }

    /// Only `tool` running `preset`.
    pub fn preset(tool: &str, preset: &str) -> Self {
        Self { tool: tool.to_owned(), preset: Some(preset.to_owned()) }
    }

    fn allows(&self, tool: &str, preset: Option<&str>) -> bool {
        self.tool == tool && self.preset.as_deref().is_none_or(|p| Some(p) == preset)
    }
}

impl fmt::Display for WriterRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.preset {
            Some(p) => write!(f, "{} preset {p}", self.tool),
            None => f.write_str(&self.tool),
        }
    }
}

/// A further check on a declared register's value, run by the store on every write (and callable on use).
///
/// The swap-quote validator (invariant 3) is installed this way, so no writer can skip it.
pub trait RegisterValidator: Send + Sync + fmt::Debug {
    /// Accepts or rejects `value` for `key`, possibly consulting other registers.
    fn validate(&self, key: &str, value: &Value, store: &RegisterStore) -> Result<(), ToolError>;
}

/// A declared register.
#[derive(Debug, Clone)]
pub struct RegisterDecl {
    /// The key.
    pub key: String,
    /// The value's type.
    pub value_type: ValueType,
    /// Who may write it. Empty with `intrinsic` set: nobody; the runtime resolves it.
    pub writers: Vec<WriterRule>,
    /// Resolved by the runtime only ([`super::IntrinsicProvider`]); every write is denied.
    pub intrinsic: bool,
    /// Older values are stale.
    pub max_age: Option<Duration>,
    /// Whether a `model`-origin (or model-tainted) value is acceptable.
    pub allow_model_origin: bool,
    /// An extra validator run on every write.
    pub validator: Option<Arc<dyn RegisterValidator>>,
}

impl RegisterDecl {
    /// A declaration with no writers, no age limit, no model origin.
    pub fn new(key: &str, value_type: ValueType) -> Self {
        Self {
            key: key.to_owned(),
            value_type,
            writers: Vec::new(),
            intrinsic: false,
            max_age: None,
            allow_model_origin: false,
            validator: None,
        }
    }

    /// Adds an allowed writer.
    pub fn writer(mut self, rule: WriterRule) -> Self {
        self.writers.push(rule);
        self
    }

    /// Marks the register intrinsic.
    pub fn intrinsic(mut self) -> Self {
        self.intrinsic = true;
        self
    }

    /// Sets the maximum age.
    pub fn max_age(mut self, age: Duration) -> Self {
        self.max_age = Some(age);
        self
    }

    /// Accepts `model`-origin values.
    pub fn allow_model(mut self) -> Self {
        self.allow_model_origin = true;
        self
    }

    /// Installs a validator run on every write.
    pub fn validator(mut self, validator: Arc<dyn RegisterValidator>) -> Self {
        self.validator = Some(validator);
        self
    }

    /// Checks whether `tool` (running `preset`) may write a value of `origin`.
    pub fn check_writer(&self, tool: &str, preset: Option<&str>, origin: Origin) -> Result<(), ToolError> {
        let key = &self.key;
        if self.intrinsic {
            return Err(ToolError::new(
                ErrorCode::RegisterWriteDenied,
                format!("`{key}` is intrinsic: the runtime resolves it and no tool may write it (attempted by {tool})"),
            ));
        }
        if !self.writers.iter().any(|w| w.allows(tool, preset)) {
            let allowed: Vec<String> = self.writers.iter().map(ToString::to_string).collect();
            let by = match preset {
                Some(p) => format!("{tool} preset {p}"),
                None => tool.to_owned(),
            };
            return Err(ToolError::new(
                ErrorCode::RegisterWriteDenied,
                format!("`{key}` may be written only by {}; {by} may not write it", or_list(&allowed)),
            ));
        }
        if origin == Origin::Model && !self.allow_model_origin {
            return Err(ToolError::new(
                ErrorCode::RegisterWriteDenied,
                format!("`{key}` does not accept model-typed (or model-derived) values"),
            ));
        }
        Ok(())
    }
}

fn or_list(items: &[String]) -> String {
    match items {
        [] => "nobody".to_owned(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    }
}

/// The set of declared registers, shared by every session of a runtime.
///
/// The core declares the registers of the core tools; other layers declare their own (the web3 layer declares
/// `swap_quote`, `token_price` and the transfer registers when it is installed). Configuration overrides
/// (`[registers.KEY] max_age_secs`) are kept here and applied whenever the key is declared, whoever declares it;
/// [`RegisterDeclarations::unclaimed_overrides`] names the overrides no layer declared.
#[derive(Debug, Clone)]
pub struct RegisterDeclarations {
    decls: HashMap<String, Arc<RegisterDecl>>,
    max_age_overrides: HashMap<String, Duration>,
}

/// The maximum age of quotes and prices unless configured.
pub const QUOTE_MAX_AGE: Duration = Duration::from_secs(60);

impl Default for RegisterDeclarations {
    /// The core's defaults (see `safety-model.md`).
    fn default() -> Self {
        let mut d = Self::empty();
        d.declare(RegisterDecl::new("wallet_address", ValueType::Address).intrinsic());
        d.declare(RegisterDecl::new("sell_token", ValueType::Token).writer(WriterRule::tool("token_lookup")));
        d.declare(RegisterDecl::new("buy_token", ValueType::Token).writer(WriterRule::tool("token_lookup")));
        d.declare(
            RegisterDecl::new("sell_amount", ValueType::BaseUnits)
                .writer(WriterRule::tool("to_raw_amount"))
                .writer(WriterRule::tool("register_set"))
                .allow_model(),
        );
        d
    }
}

impl RegisterDeclarations {
    /// No declarations at all (everything is scratch space).
    pub fn empty() -> Self {
        Self { decls: HashMap::new(), max_age_overrides: HashMap::new() }
    }

    /// Adds or replaces a declaration (applying a configured maximum age for its key, if any).
    pub fn declare(&mut self, mut decl: RegisterDecl) {
        if let Some(age) = self.max_age_overrides.get(&decl.key) {
            decl.max_age = Some(*age);
        }
        self.decls.insert(decl.key.clone(), Arc::new(decl));
    }

    /// Records a configured maximum age for `key`, applied now if it is declared and whenever it is declared later.
    pub fn override_max_age(&mut self, key: &str, age: Duration) {
        self.max_age_overrides.insert(key.to_owned(), age);
        self.update(key, |d| d.max_age = Some(age));
    }

    /// Configured overrides whose key no layer has declared, sorted (a configuration error once every layer is
    /// installed).
    pub fn unclaimed_overrides(&self) -> Vec<&str> {
        let mut keys: Vec<&str> =
            self.max_age_overrides.keys().filter(|k| !self.decls.contains_key(*k)).map(String::as_str).collect();
        keys.sort_unstable();
        keys
    }

    /// Changes an existing declaration in place; returns false when `key` is not declared.
    pub fn update(&mut self, key: &str, f: impl FnOnce(&mut RegisterDecl)) -> bool {
        match self.decls.get_mut(key) {
            Some(decl) => {
                f(Arc::make_mut(decl));
                true
            }
            None => false,
        }
    }

    /// Installs a validator on a declared register; returns false when `key` is not declared.
    pub fn set_validator(&mut self, key: &str, validator: Arc<dyn RegisterValidator>) -> bool {
        self.update(key, |d| d.validator = Some(validator))
    }

    /// The declaration of `key`, if any.
    pub fn get(&self, key: &str) -> Option<&Arc<RegisterDecl>> {
        self.decls.get(key)
    }

    /// Declared keys, sorted.
    pub fn keys(&self) -> Vec<&str> {
        let mut keys: Vec<&str> = self.decls.keys().map(String::as_str).collect();
        keys.sort_unstable();
        keys
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_follow_the_safety_model_table() {
        let d = RegisterDeclarations::default();
        let deny = |key: &str, tool: &str, preset: Option<&str>, origin| {
            d.get(key).unwrap().check_writer(tool, preset, origin).unwrap_err().code
        };
        assert_eq!(
            deny("wallet_address", "local_burner_wallet", None, Origin::Intrinsic),
            ErrorCode::RegisterWriteDenied
        );
        assert_eq!(deny("sell_token", "register_set", None, Origin::Model), ErrorCode::RegisterWriteDenied);
        assert!(d.get("sell_token").unwrap().check_writer("token_lookup", None, Origin::Config).is_ok());
        assert!(d.get("sell_amount").unwrap().check_writer("register_set", None, Origin::Model).is_ok());
        assert!(d.get("swap_quote").is_none(), "the web3 layer declares its own registers");
    }

    #[test]
    fn overrides_apply_to_keys_declared_later_and_unclaimed_ones_are_named() {
        let mut d = RegisterDeclarations::default();
        d.override_max_age("sell_amount", Duration::from_secs(7));
        d.override_max_age("later", Duration::from_secs(5));
        d.override_max_age("nobody", Duration::from_secs(5));
        assert_eq!(d.get("sell_amount").unwrap().max_age, Some(Duration::from_secs(7)));
        assert_eq!(d.unclaimed_overrides(), ["later", "nobody"]);
        d.declare(RegisterDecl::new("later", ValueType::SwapQuote).max_age(QUOTE_MAX_AGE));
        assert_eq!(d.get("later").unwrap().max_age, Some(Duration::from_secs(5)));
        assert_eq!(d.unclaimed_overrides(), ["nobody"]);
    }

    #[test]
    fn denial_messages_name_the_register_and_the_allowed_writer() {
        let d = RegisterDeclarations::default();
        let err = d.get("sell_token").unwrap().check_writer("register_set", None, Origin::Model).unwrap_err();
        assert!(err.message.contains("`sell_token`"));
        assert!(err.message.contains("token_lookup"));
    }

    #[test]
    fn scratch_suffix_rules() {
        assert_eq!(ValueType::for_scratch_key("recipient_address"), ValueType::Address);
        assert_eq!(ValueType::for_scratch_key("fee_amount"), ValueType::BaseUnits);
        assert_eq!(ValueType::for_scratch_key("note"), ValueType::Any);
        let lower = "0x833589fcd6edb6e08f4c7c32d4f71b54bda02913";
        assert_eq!(
            ValueType::Address.check("x_address", Value::String(lower.into())).unwrap(),
            Value::String("0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913".into())
        );
        assert_eq!(
            ValueType::BaseUnits.check("x_amount", serde_json::json!(5)).unwrap_err().code,
            ErrorCode::InvalidAmount
        );
    }
}

//! The web3 sections of `holdfast.toml`: `[wallet]`, `[presets]`, `[policy.NETWORK]`, `[payments.NETWORK]`,
//! `[price_feeds.NETWORK]` and `[address_book]` (see `docs/configuration.md`).
//!
//! Human amounts in the file are converted to base units with the token table's decimals at load, so a bad amount,
//! an unknown token or an unknown network fails at start-up with the file and the reason — never at signing time.

use crate::presets::Presets;
use alloy::primitives::U256;
use holdfast_core::amount::to_base_units;
use holdfast_core::config::{ConfigDocument, ConfigError, CoreConfig, TokenInfo};
use indexmap::IndexMap;
use serde::Deserialize;
use std::collections::HashMap;
use std::path::PathBuf;

/// The top-level sections this crate reads.
pub const WEB3_SECTIONS: &[&str] = &["wallet", "presets", "policy", "payments", "price_feeds", "address_book"];

/// `[wallet]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WalletSection {
    /// Key file (hex). Generated with mode 0600 when missing.
    pub key_file: Option<PathBuf>,
    /// Environment variable holding the key; wins over `key_file`.
    pub key_env: Option<String>,
    /// The smart account the key signs for (a Safe): its funds move, within its on-chain limits; the key itself pays
    /// only gas. Needs `module`.
    pub account: Option<String>,
    /// The module that limits the key on the account: Safe's AllowanceModule (`0xAA46724893dedD72658219405185Fb0Fc91e091C`
    /// on Base).
    pub module: Option<String>,
    /// The module's kind: `safe-allowance-module` (the only one).
    pub module_kind: Option<String>,
    /// Other modules enabled on the account that the user checked give the key no power of its own: without them
    /// listed here, an account with other modules enabled refuses the start (a module moves anything out of it).
    #[serde(default)]
    pub reviewed_modules: Vec<String>,
}

/// The only module kind holdfast drives: Safe's AllowanceModule.
pub const SAFE_ALLOWANCE_MODULE: &str = "safe-allowance-module";

impl WalletSection {
    /// `e` as an error of the configuration: at the line of `wallet.key_env` or `wallet.key_file` that named the
    /// variable or the file (the default key file in the data dir is no line of the file: `e` as it is).
    pub fn locate(&self, doc: &ConfigDocument, e: &crate::wallet::WalletError) -> Option<ConfigError> {
        use crate::wallet::WalletError;
        let key = match e {
            WalletError::Env { .. } => "key_env",
            WalletError::File { .. } | WalletError::Permissions { .. } if self.key_file.is_some() => "key_file",
            _ => return None,
        };
        Some(doc.invalid_at(&["wallet", key], format!("`wallet.{key}`: {e}")))
    }

    /// The account and its module, when `[wallet] account` is set (checked by [`Web3Config::from_document`]).
    pub fn account(&self) -> Option<crate::kernel::account::Account> {
        let address = self.account.as_deref()?.parse().ok()?;
        let module = self.module.as_deref()?.parse().ok()?;
        Some(crate::kernel::account::Account { address, module })
    }

    /// `reviewed_modules`, parsed (checked by [`Web3Config::from_document`]).
    pub fn reviewed_modules(&self) -> Vec<alloy::primitives::Address> {
        self.reviewed_modules.iter().filter_map(|m| m.parse().ok()).collect()
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct PresetsSection {
    file: Option<PathBuf>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct NetworkPolicySection {
    native_per_tx: Option<String>,
    native_per_day: Option<String>,
    auto_native_per_tx: Option<String>,
    max_slippage_bps: Option<u32>,
    max_fee_per_gas_gwei: Option<String>,
    max_priority_fee_per_gas_gwei: Option<String>,
    auto_max_gas: Option<u64>,
    #[serde(default)]
    allow_wrap: bool,
    #[serde(default)]
    tokens: IndexMap<String, TokenPolicySection>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct PriceFeedsSection {
    #[serde(default)]
    feeds: IndexMap<String, FeedSpec>,
    max_age_secs: Option<u64>,
    max_disagreement_bps: Option<u32>,
}

/// One feed: an address alone (refused: its decimals and description must be pinned) or the full table.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
enum FeedSpec {
    Pinned(FeedSection),
    Address(String),
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct FeedSection {
    address: String,
    decimals: u8,
    description: String,
    heartbeat_secs: Option<u64>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct TokenPolicySection {
    per_tx: Option<String>,
    per_day: Option<String>,
    auto_per_tx: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct PaymentsSection {
    #[serde(default)]
    assets: Vec<String>,
    max_per_request: Option<String>,
    daily_budget: Option<String>,
}

/// Limits for one asset, in base units. `None` means "not allowed" (deny by default).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AssetLimits {
    /// Largest amount one transaction may move.
    pub per_tx: Option<U256>,
    /// Largest total per UTC day.
    pub per_day: Option<U256>,
    /// At or below this, an action whose inputs are all non-model runs without asking.
    pub auto_per_tx: Option<U256>,
}

/// Default `max_slippage_bps`: a quote may promise at most 1% less than the independent price.
pub const DEFAULT_MAX_SLIPPAGE_BPS: u32 = 100;
/// Default cap on `maxFeePerGas`, in gwei.
pub const DEFAULT_MAX_FEE_PER_GAS_GWEI: &str = "200";
/// Default cap on `maxPriorityFeePerGas`, in gwei.
pub const DEFAULT_MAX_PRIORITY_FEE_PER_GAS_GWEI: &str = "10";
/// Default `auto_max_gas`: a swap through a router takes a few hundred thousand gas, a transfer under 100,000.
pub const DEFAULT_AUTO_MAX_GAS: u64 = 1_000_000;
/// Default age past which a price feed's answer is not trusted (seconds): a feed's heartbeat when it sets none.
pub const DEFAULT_FEED_MAX_AGE_SECS: u64 = 86_400;
/// Default largest disagreement between the RPC nodes' answers of one feed, in basis points.
pub const DEFAULT_MAX_DISAGREEMENT_BPS: u32 = 50;

/// Policy for one network.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetworkPolicy {
    /// Limits on the native token (keyed by the native placeholder's symbol).
    pub native: AssetLimits,
    /// Limits per token symbol (as in the token table).
    pub tokens: HashMap<String, AssetLimits>,
    /// How far (basis points) a quote's minimum and the simulated output may fall below the independent price.
    pub max_slippage_bps: u32,
    /// Largest `maxFeePerGas` signed, in wei.
    pub max_fee_per_gas: u128,
    /// Largest `maxPriorityFeePerGas` signed, in wei.
    pub max_priority_fee_per_gas: u128,
    /// Whether a swap between the native token and its wrapped twin (ETH ↔ WETH) is allowed.
    pub allow_wrap: bool,
    /// Above this gas limit an action waits for the user even within the auto-approve limits: its network fee is the
    /// wallet's too, and a hostile quote can make a route cost more gas (bloated calldata, a heavier path).
    pub auto_max_gas: u64,
}

impl Default for NetworkPolicy {
    fn default() -> Self {
        let gwei = |s: &str| {
            holdfast_core::amount::to_base_units("gwei", s, 9, "gwei")
                .ok()
                .and_then(|v| u128::try_from(v).ok())
                .unwrap_or_default()
        };
        Self {
            native: AssetLimits::default(),
            tokens: HashMap::new(),
            max_slippage_bps: DEFAULT_MAX_SLIPPAGE_BPS,
            max_fee_per_gas: gwei(DEFAULT_MAX_FEE_PER_GAS_GWEI),
            max_priority_fee_per_gas: gwei(DEFAULT_MAX_PRIORITY_FEE_PER_GAS_GWEI),
            allow_wrap: false,
            auto_max_gas: DEFAULT_AUTO_MAX_GAS,
        }
    }
}

/// The independent price sources of one network: AggregatorV3-style feeds quoting a token in USD.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PriceFeeds {
    /// The feed per token symbol (as in the token table).
    pub feeds: HashMap<String, Feed>,
    /// When several RPC nodes are configured, the most their answers of one feed may disagree (basis points);
    /// beyond it there is no independent price.
    pub max_disagreement_bps: u32,
}

/// One AggregatorV3 feed, with what is pinned about it in configuration: a node cannot change its decimals or
/// what it prices.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Feed {
    /// Its address.
    pub address: alloy::primitives::Address,
    /// The decimals of its answer (pinned: the value's scale never comes from the node).
    pub decimals: u8,
    /// What it prices, as its `description()` answers (`ETH / USD`); checked against the chain at start-up.
    pub description: String,
    /// An answer older than this is stale: the swap then waits for the user.
    pub heartbeat: std::time::Duration,
}

/// x402 payment limits for one network.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PaymentPolicy {
    /// Tokens that may be paid with.
    pub assets: Vec<TokenInfo>,
    /// Largest payment per request, per asset symbol, in base units.
    pub max_per_request: HashMap<String, U256>,
    /// Largest total per UTC day, per asset symbol, in base units.
    pub daily_budget: HashMap<String, U256>,
}

/// `[wallet] account`, `module` and `module_kind`: all or none, addresses in EIP-55 or lower case, the one kind.
fn check_account(doc: &ConfigDocument, wallet: &WalletSection) -> Result<(), ConfigError> {
    let address = |key: &str, value: &str| {
        holdfast_core::address::parse_address(key, value)
            .map_err(|e| doc.invalid_at(&["wallet", key], format!("`wallet.{key}`: {}", e.message)))
    };
    for (i, m) in wallet.reviewed_modules.iter().enumerate() {
        if wallet.account.is_none() {
            return Err(doc.invalid_at(&["wallet", "reviewed_modules"], "`wallet.reviewed_modules` needs `account`"));
        }
        holdfast_core::address::parse_address("reviewed_modules", m).map_err(|e| {
            doc.invalid_at(&["wallet", "reviewed_modules"], format!("`wallet.reviewed_modules[{i}]`: {}", e.message))
        })?;
    }
    match (&wallet.account, &wallet.module) {
        (None, None) => {
            if wallet.module_kind.is_some() {
                return Err(
                    doc.invalid_at(&["wallet", "module_kind"], "`wallet.module_kind` needs `account` and `module`")
                );
            }
            Ok(())
        }
        (Some(account), Some(module)) => {
            let account = address("account", account)?;
            let module = address("module", module)?;
            if account == module {
                return Err(doc.invalid_at(&["wallet", "module"], "`wallet.module` is the account itself"));
            }
            match wallet.module_kind.as_deref() {
                None | Some(SAFE_ALLOWANCE_MODULE) => Ok(()),
                Some(other) => Err(doc.invalid_at(
                    &["wallet", "module_kind"],
                    format!("`wallet.module_kind` {other:?} is not known; the one kind is \"{SAFE_ALLOWANCE_MODULE}\""),
                )),
            }
        }
        (Some(_), None) => Err(doc.invalid_at(
            &["wallet", "account"],
            "`wallet.account` needs `wallet.module`: the module that limits the key on it (Safe's AllowanceModule)",
        )),
        (None, Some(_)) => Err(doc.invalid_at(&["wallet", "module"], "`wallet.module` needs `wallet.account`")),
    }
}

/// Everything the web3 layer reads from configuration.
#[derive(Debug, Clone, Default)]
pub struct Web3Config {
    /// `[wallet]`.
    pub wallet: WalletSection,
    /// The fetch presets (`[presets] file`), empty when none are configured.
    pub presets: Presets,
    /// `[policy.NETWORK]`, keyed by canonical network name.
    pub policy: HashMap<String, NetworkPolicy>,
    /// `[payments.NETWORK]`, keyed by canonical network name.
    pub payments: HashMap<String, PaymentPolicy>,
    /// `[price_feeds.NETWORK]`, keyed by canonical network name.
    pub price_feeds: HashMap<String, PriceFeeds>,
    /// `[address_book]`: names the user may send to, with their addresses.
    pub address_book: HashMap<String, alloy::primitives::Address>,
}

impl Web3Config {
    /// Reads the web3 sections of `doc`, checking networks, tokens and amounts against `core`.
    pub fn from_document(doc: &ConfigDocument, core: &CoreConfig) -> Result<Self, ConfigError> {
        let mut wallet: WalletSection = doc.section_or_default("wallet")?;
        if let Some(name) = &wallet.key_env
            && !holdfast_core::is_env_var_name(name)
        {
            // The value is never echoed: a key pasted here by mistake must not reach a terminal or a log.
            return Err(doc.invalid_at(
                &["wallet", "key_env"],
                "`wallet.key_env` must be the NAME of an environment variable (letters, digits and `_`, not starting \
                 with a digit), not the key itself; if you pasted a key here, remove it and treat it as exposed",
            ));
        }
        if let Some(path) = &wallet.key_file {
            // A key pasted where its file's path belongs is refused the same way, never echoed (nor made a file name).
            let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            let hex = name.strip_prefix("0x").unwrap_or(&name);
            if hex.len() >= 64 && hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(doc.invalid_at(
                    &["wallet", "key_file"],
                    "`wallet.key_file` must be the PATH of a key file, not the key itself; if you pasted a key here, \
                     remove it and treat it as exposed",
                ));
            }
            wallet.key_file = Some(doc.resolve_path(path));
        }
        check_account(doc, &wallet)?;
        let presets = match doc.section_or_default::<PresetsSection>("presets")?.file {
            Some(file) => {
                Presets::load(&doc.resolve_path(&file)).map_err(|e| doc.referenced(&["presets", "file"], e))?
            }
            None => Presets::default(),
        };

        let mut policy = HashMap::new();
        let sections: IndexMap<String, NetworkPolicySection> = doc.section_or_default("policy")?;
        for (name, section) in sections {
            let network = core
                .networks
                .resolve(&name)
                .map_err(|e| doc.invalid_at(&["policy", &name], format!("[policy.{name}]: {}", e.message)))?;
            let native = core.tokens.iter().find(|t| t.network == network.name && t.is_native());
            let native_decimals = native.map_or(18, |t| t.decimals);
            let amount = |field: &str, v: &Option<String>, decimals: u8, symbol: &str| {
                v.as_deref().map(|s| to_base_units(field, s, decimals, symbol)).transpose().map_err(|e| {
                    let path: Vec<&str> = ["policy", name.as_str()].into_iter().chain(field.split('.')).collect();
                    doc.invalid_at(&path, format!("[policy.{name}] {}", e.message))
                })
            };
            let native_symbol = network.native_symbol.clone();
            let defaults = NetworkPolicy::default();
            let gwei = |field: &str, v: &Option<String>, default: u128| -> Result<u128, ConfigError> {
                match v {
                    None => Ok(default),
                    Some(s) => {
                        to_base_units(field, s, 9, "gwei").ok().and_then(|v| u128::try_from(v).ok()).ok_or_else(|| {
                            doc.invalid_at(
                                &["policy", &name, field],
                                format!("[policy.{name}] {field}: {s:?} is not an amount of gwei"),
                            )
                        })
                    }
                }
            };
            let max_slippage_bps = section.max_slippage_bps.unwrap_or(defaults.max_slippage_bps);
            if max_slippage_bps > 10_000 {
                return Err(doc.invalid_at(
                    &["policy", &name, "max_slippage_bps"],
                    format!("[policy.{name}] max_slippage_bps: {max_slippage_bps} is above 10000"),
                ));
            }
            let mut net = NetworkPolicy {
                max_slippage_bps,
                max_fee_per_gas: gwei("max_fee_per_gas_gwei", &section.max_fee_per_gas_gwei, defaults.max_fee_per_gas)?,
                max_priority_fee_per_gas: gwei(
                    "max_priority_fee_per_gas_gwei",
                    &section.max_priority_fee_per_gas_gwei,
                    defaults.max_priority_fee_per_gas,
                )?,
                allow_wrap: section.allow_wrap,
                auto_max_gas: section.auto_max_gas.unwrap_or(defaults.auto_max_gas),
                native: AssetLimits {
                    per_tx: amount("native_per_tx", &section.native_per_tx, native_decimals, &native_symbol)?,
                    per_day: amount("native_per_day", &section.native_per_day, native_decimals, &native_symbol)?,
                    auto_per_tx: amount(
                        "auto_native_per_tx",
                        &section.auto_native_per_tx,
                        native_decimals,
                        &native_symbol,
                    )?,
                },
                tokens: HashMap::new(),
            };
            for (symbol, t) in section.tokens {
                let token = core.tokens.lookup(&network.name, &symbol).map_err(|e| {
                    doc.invalid_at(
                        &["policy", &name, "tokens", &symbol],
                        format!("[policy.{name}.tokens.{symbol}]: {}", e.message),
                    )
                })?;
                let limits = AssetLimits {
                    per_tx: amount(&format!("tokens.{symbol}.per_tx"), &t.per_tx, token.decimals, &token.symbol)?,
                    per_day: amount(&format!("tokens.{symbol}.per_day"), &t.per_day, token.decimals, &token.symbol)?,
                    auto_per_tx: amount(
                        &format!("tokens.{symbol}.auto_per_tx"),
                        &t.auto_per_tx,
                        token.decimals,
                        &token.symbol,
                    )?,
                };
                net.tokens.insert(token.symbol.clone(), limits);
            }
            policy.insert(network.name.clone(), net);
        }

        let mut payments = HashMap::new();
        let sections: IndexMap<String, PaymentsSection> = doc.section_or_default("payments")?;
        for (name, section) in sections {
            let network = core
                .networks
                .resolve(&name)
                .map_err(|e| doc.invalid_at(&["payments", &name], format!("[payments.{name}]: {}", e.message)))?;
            let mut assets = Vec::new();
            let mut max_per_request = HashMap::new();
            let mut daily_budget = HashMap::new();
            for symbol in &section.assets {
                let token = core.tokens.lookup(&network.name, symbol).map_err(|e| {
                    doc.invalid_at(&["payments", &name, "assets"], format!("[payments.{name}] assets: {}", e.message))
                })?;
                let convert = |field: &str, v: &Option<String>| {
                    v.as_deref().map(|s| to_base_units(field, s, token.decimals, &token.symbol)).transpose().map_err(
                        |e| doc.invalid_at(&["payments", &name, field], format!("[payments.{name}] {}", e.message)),
                    )
                };
                if let Some(v) = convert("max_per_request", &section.max_per_request)? {
                    max_per_request.insert(token.symbol.clone(), v);
                }
                if let Some(v) = convert("daily_budget", &section.daily_budget)? {
                    daily_budget.insert(token.symbol.clone(), v);
                }
                assets.push(token.clone());
            }
            payments.insert(network.name.clone(), PaymentPolicy { assets, max_per_request, daily_budget });
        }
        let mut price_feeds = HashMap::new();
        let sections: IndexMap<String, PriceFeedsSection> = doc.section_or_default("price_feeds")?;
        for (name, section) in sections {
            let network = core
                .networks
                .resolve(&name)
                .map_err(|e| doc.invalid_at(&["price_feeds", &name], format!("[price_feeds.{name}]: {}", e.message)))?;
            let mut feeds = HashMap::new();
            let default_heartbeat = section.max_age_secs.unwrap_or(DEFAULT_FEED_MAX_AGE_SECS);
            for (symbol, spec) in section.feeds {
                let at = ["price_feeds", name.as_str(), "feeds", symbol.as_str()];
                let token = core
                    .tokens
                    .lookup(&network.name, &symbol)
                    .map_err(|e| doc.invalid_at(&at, format!("[price_feeds.{name}] feeds.{symbol}: {}", e.message)))?;
                let spec = match spec {
                    FeedSpec::Pinned(spec) => spec,
                    FeedSpec::Address(address) => {
                        return Err(doc.invalid_at(
                            &at,
                            format!(
                                "[price_feeds.{name}] feeds.{symbol}: pin the feed's decimals and description with its \
                                 address (feeds.{symbol} = {{ address = {address:?}, decimals = 8, description = \
                                 \"{} / USD\" }}), so that no node can change how its answer is read",
                                token.symbol
                            ),
                        ));
                    }
                };
                let address = holdfast_core::address::parse_address(&format!("feeds.{symbol}.address"), &spec.address)
                    .map_err(|e| doc.invalid_at(&at, format!("[price_feeds.{name}] {}", e.message)))?;
                if spec.decimals > 36 {
                    return Err(doc.invalid_at(
                        &at,
                        format!("[price_feeds.{name}] feeds.{symbol}.decimals: {} is above 36", spec.decimals),
                    ));
                }
                let heartbeat = std::time::Duration::from_secs(spec.heartbeat_secs.unwrap_or(default_heartbeat));
                let feed = Feed { address, decimals: spec.decimals, description: spec.description, heartbeat };
                feeds.insert(token.symbol.clone(), feed);
            }
            let max_disagreement_bps = section.max_disagreement_bps.unwrap_or(DEFAULT_MAX_DISAGREEMENT_BPS);
            if max_disagreement_bps > 10_000 {
                return Err(doc.invalid_at(
                    &["price_feeds", &name, "max_disagreement_bps"],
                    format!("[price_feeds.{name}] max_disagreement_bps: {max_disagreement_bps} is above 10000"),
                ));
            }
            price_feeds.insert(network.name.clone(), PriceFeeds { feeds, max_disagreement_bps });
        }

        let mut address_book = HashMap::new();
        let book: IndexMap<String, String> = doc.section_or_default("address_book")?;
        for (label, address) in book {
            holdfast_core::registers::validate_key("address_book", &label).map_err(|e| {
                doc.invalid_at(&["address_book", &label], format!("[address_book] {label}: {}", e.message))
            })?;
            // A name the user writes when naming a token or a network would name this recipient in every such message.
            let folded = label.to_lowercase();
            let token = core.tokens.iter().any(|t| t.symbol.to_lowercase() == folded);
            let network = core
                .networks
                .iter()
                .any(|n| n.name.to_lowercase() == folded || n.aliases.iter().any(|a| a.to_lowercase() == folded));
            if token || network {
                return Err(doc.invalid_at(
                    &["address_book", &label],
                    format!(
                        "[address_book] {label}: spelled like a {} name; give the recipient a name of its own",
                        if token { "token" } else { "network" }
                    ),
                ));
            }
            let address = holdfast_core::address::parse_address(&label, &address)
                .map_err(|e| doc.invalid_at(&["address_book", &label], format!("[address_book] {}", e.message)))?;
            address_book.insert(label, address);
        }
        Ok(Self { wallet, presets, policy, payments, price_feeds, address_book })
    }
}

#[cfg(test)]
mod tests {
    use super::Web3Config;
    use holdfast_core::config::{ConfigDocument, CoreConfig};

    #[test]
    fn a_key_pasted_into_key_env_is_refused_at_its_line_and_never_echoed() {
        let key = "ab".repeat(32);
        // With `0x`, and bare: a bare hex key starting with a letter is shaped like a variable's name.
        for pasted in [format!("0x{key}"), key.clone()] {
            let text = format!("[wallet]\nkey_env = \"{pasted}\"\n");
            let doc = ConfigDocument::parse(Some("holdfast.toml".into()), text).unwrap();
            let core = CoreConfig::from_document(&doc).unwrap();
            let err = Web3Config::from_document(&doc, &core).unwrap_err().to_string();
            assert!(err.contains("holdfast.toml:2") && err.contains("NAME of an environment variable"), "{err}");
            assert!(!err.contains(&key), "{err}");
        }
        for pasted in [format!("0x{key}"), key.clone()] {
            let text = format!("[wallet]\nkey_file = \"{pasted}\"\n");
            let doc = ConfigDocument::parse(Some("holdfast.toml".into()), text).unwrap();
            let core = CoreConfig::from_document(&doc).unwrap();
            let err = Web3Config::from_document(&doc, &core).unwrap_err().to_string();
            assert!(err.contains("holdfast.toml:2") && err.contains("PATH of a key file"), "{err}");
            assert!(!err.contains(&key), "{err}");
        }
        let doc = ConfigDocument::parse(None, "[wallet]\nkey_env = \"MY_KEY_1\"\n".into()).unwrap();
        let core = CoreConfig::from_document(&doc).unwrap();
        assert_eq!(Web3Config::from_document(&doc, &core).unwrap().wallet.key_env.as_deref(), Some("MY_KEY_1"));
    }

    #[test]
    fn an_address_book_name_spelled_like_a_token_or_a_network_is_refused_at_its_line() {
        let load = |name: &str| {
            let text = format!("[address_book]\n{name} = \"0x90F79bf6EB2c4f870365E785982E1f101E93b906\"\n");
            let doc = ConfigDocument::parse(Some("holdfast.toml".into()), text).unwrap();
            let core = CoreConfig::from_document(&doc).unwrap();
            Web3Config::from_document(&doc, &core).map(|c| c.address_book.len()).map_err(|e| e.to_string())
        };
        for (name, kind) in [("usdc", "token"), ("WETH", "token"), ("base", "network")] {
            let err = load(name).unwrap_err();
            assert!(err.contains("holdfast.toml:2") && err.contains(&format!("spelled like a {kind} name")), "{err}");
        }
        assert_eq!(load("alice"), Ok(1));
    }

    #[test]
    fn an_account_needs_its_module_and_the_one_known_kind() {
        let account = "0x1111111111111111111111111111111111111111";
        let module = "0xAA46724893dedD72658219405185Fb0Fc91e091C";
        let load = |body: String| {
            let doc = ConfigDocument::parse(Some("holdfast.toml".into()), format!("[wallet]\n{body}")).unwrap();
            let core = CoreConfig::from_document(&doc).unwrap();
            Web3Config::from_document(&doc, &core).map_err(|e| e.to_string())
        };
        let ok =
            load(format!("account = \"{account}\"\nmodule = \"{module}\"\nmodule_kind = \"safe-allowance-module\"\n"));
        let a = ok.unwrap().wallet.account().unwrap();
        assert_eq!(
            (a.address.to_string().to_lowercase(), a.module.to_checksum(None)),
            (account.to_owned(), module.to_owned())
        );
        for (body, needle) in [
            (format!("account = \"{account}\"\n"), "`wallet.account` needs `wallet.module`"),
            (format!("module = \"{module}\"\n"), "`wallet.module` needs `wallet.account`"),
            ("module_kind = \"safe-allowance-module\"\n".to_owned(), "needs `account` and `module`"),
            (format!("account = \"{account}\"\nmodule = \"{account}\"\n"), "is the account itself"),
            (format!("account = \"0x12\"\nmodule = \"{module}\"\n"), "holdfast.toml:2"),
            (format!("account = \"{account}\"\nmodule = \"{module}\"\nmodule_kind = \"roles\"\n"), "is not known"),
            (format!("reviewed_modules = [\"{module}\"]\n"), "`wallet.reviewed_modules` needs `account`"),
            (
                format!(
                    "account = \"{account}\"\nmodule = \"{module}\"\nreviewed_modules = [\"{module}\", \"0x12\"]\n"
                ),
                "`wallet.reviewed_modules[1]`",
            ),
        ] {
            let err = load(body.clone()).unwrap_err();
            assert!(err.contains(needle), "{body}: {err}");
        }
    }
}

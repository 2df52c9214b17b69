//! The network table: name, chain id, aliases, native symbol, RPC URLs, explorer and pinned contracts.

use crate::address::parse_address;
use crate::error::{ErrorCode, ToolError};
use alloy_primitives::{Address, address};
use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

/// Contracts pinned for a network: the only addresses a swap may call or approve.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct PinnedContracts {
    /// The only `transaction.to` a swap quote may carry (0x AllowanceHolder on Base).
    pub swap_target: Option<Address>,
    /// The only spender an approval may name (equal to `swap_target` for allowance-holder quotes).
    pub allowance_spender: Option<Address>,
    /// What the swap target's calldata is, so the kernel can decode it and check it argument by argument. `None`:
    /// no decoder, every swap is refused.
    pub swap_abi: Option<SwapAbi>,
    /// Settlement contracts an AllowanceHolder `exec` may name as `operator` and `target` (besides the registry's).
    pub settlers: Vec<Address>,
    /// 0x's Settler registry (an ERC-721 whose token 2 is owned by the current taker-submitted Settler): the one
    /// Settler it names is accepted too, read on chain at each swap.
    pub settler_registry: Option<Address>,
}

/// The calldata a pinned swap target takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum SwapAbi {
    /// 0x's AllowanceHolder: `exec(operator, token, amount, target, data)` whose `data` is a Settler's
    /// `execute((recipient, buyToken, minAmountOut), actions, zid)`.
    #[serde(rename = "0x-allowance-holder")]
    ZeroExAllowanceHolder,
    /// The devnet's venue: `sell(sellToken, buyToken, sellAmount, minBuyAmount, recipient)`.
    #[serde(rename = "holdfast-venue")]
    HoldfastVenue,
}

impl SwapAbi {
    /// The configuration name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ZeroExAllowanceHolder => "0x-allowance-holder",
            Self::HoldfastVenue => "holdfast-venue",
        }
    }
}

/// A configured network.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NetworkConfig {
    /// Canonical name (`base`).
    pub name: String,
    /// EIP-155 chain id.
    pub chain_id: u64,
    /// Other names users and models use (`base-mainnet`). Matched case-insensitively.
    pub aliases: Vec<String>,
    /// Human name (`Base`).
    pub display_name: String,
    /// The native token's symbol.
    pub native_symbol: String,
    /// JSON-RPC endpoints, first preferred.
    pub rpc_urls: Vec<String>,
    /// Block explorer base URL.
    pub explorer: Option<String>,
    /// Pinned contracts.
    pub contracts: PinnedContracts,
}

impl NetworkConfig {
    /// The CAIP-2 id (`eip155:8453`).
    pub fn caip2(&self) -> String {
        format!("eip155:{}", self.chain_id)
    }

    /// The explorer page of transaction `tx_hash` (`{explorer}/tx/{hash}`), when an explorer is configured and the
    /// hash is one (`0x` and 64 hex digits: nothing else is ever put into the link).
    pub fn explorer_tx_url(&self, tx_hash: &str) -> Option<String> {
        let hex = tx_hash.strip_prefix("0x")?;
        if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        let explorer = self.explorer.as_deref()?.trim_end_matches('/');
        Some(format!("{explorer}/tx/{tx_hash}"))
    }

    /// True when `name` is this network's name, an alias, or its CAIP-2 id (case-insensitive).
    pub fn answers_to(&self, name: &str) -> bool {
        self.name.eq_ignore_ascii_case(name)
            || self.aliases.iter().any(|a| a.eq_ignore_ascii_case(name))
            || self.caip2().eq_ignore_ascii_case(name)
    }
}

/// `[networks.NAME]` in a configuration file. Every field overrides the built-in network of the same name; a new
/// network needs at least `chain_id`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetworkSpec {
    /// Chain id.
    pub chain_id: Option<u64>,
    /// Aliases (replace the built-in list).
    pub aliases: Option<Vec<String>>,
    /// Display name.
    pub display_name: Option<String>,
    /// Native symbol.
    pub native_symbol: Option<String>,
    /// RPC URLs (replace the built-in list).
    pub rpc_urls: Option<Vec<String>>,
    /// Explorer.
    pub explorer: Option<String>,
    /// Pinned contracts.
    pub contracts: Option<ContractsSpec>,
}

/// `[networks.NAME.contracts]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContractsSpec {
    /// The swap target.
    pub swap_target: Option<String>,
    /// The allowance spender.
    pub allowance_spender: Option<String>,
    /// The swap target's calldata (`0x-allowance-holder` or `holdfast-venue`).
    pub swap_abi: Option<SwapAbi>,
    /// Settlement contracts an AllowanceHolder `exec` may call (replace the list).
    pub settlers: Option<Vec<String>>,
    /// 0x's Settler registry (`""` removes it).
    pub settler_registry: Option<String>,
}

/// 0x AllowanceHolder on Cancun chains (Base included): both the swap target and the allowance spender.
pub(super) const ALLOWANCE_HOLDER: Address = address!("0x0000000000001fF3684f28c67538d4D072C22734");
/// 0x's Settler deployer and registry, the same on every chain; token 2 is the current taker-submitted Settler. 0x
/// asks integrators to read it rather than hardcode a Settler, which it replaces from time to time.
pub(super) const SETTLER_REGISTRY: Address = address!("0x00000000000004533Fe15556B1E086BB1A72cEae");

/// The configured networks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NetworkTable {
    networks: IndexMap<String, NetworkConfig>,
}

impl NetworkTable {
    /// The built-in table: Base mainnet.
    pub fn builtin() -> Self {
        let base = NetworkConfig {
            name: "base".into(),
            chain_id: 8453,
            aliases: vec!["base-mainnet".into(), "base mainnet".into()],
            display_name: "Base".into(),
            native_symbol: "ETH".into(),
            rpc_urls: vec!["https://mainnet.base.org".into()],
            explorer: Some("https://basescan.org".into()),
            contracts: PinnedContracts {
                swap_target: Some(ALLOWANCE_HOLDER),
                allowance_spender: Some(ALLOWANCE_HOLDER),
                swap_abi: Some(SwapAbi::ZeroExAllowanceHolder),
                settlers: Vec::new(),
                settler_registry: Some(SETTLER_REGISTRY),
            },
        };
        Self { networks: IndexMap::from([(base.name.clone(), base)]) }
    }

    /// Applies `[networks.NAME]` over the table. An error is the key it is about (`""` for the table itself) and
    /// what is wrong, for the caller to place in its file.
    pub fn merge(&mut self, name: &str, spec: NetworkSpec) -> Result<(), (&'static str, String)> {
        if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_') {
            return Err(("", format!("network name {name:?} may hold only ASCII letters, digits, '-' and '_'")));
        }
        let mut net = match self.networks.get(name) {
            Some(existing) => existing.clone(),
            None => NetworkConfig {
                name: name.to_owned(),
                chain_id: spec.chain_id.ok_or(("chain_id", "a new network needs `chain_id`".to_owned()))?,
                aliases: Vec::new(),
                display_name: name.to_owned(),
                native_symbol: "ETH".into(),
                rpc_urls: Vec::new(),
                explorer: None,
                contracts: PinnedContracts::default(),
            },
        };
        if let Some(v) = spec.chain_id
            && v != net.chain_id
        {
            // Another chain under a built-in's name (a devnet or fork called `base`): the built-in's aliases,
            // display name and explorer describe the public chain and must not be shown for this one, so they go
            // unless the file gives them again. Pinned contracts stay (forks and the devnet keep Base's addresses).
            net.chain_id = v;
            net.aliases.clear();
            net.display_name = format!("{name} (chain {v})");
            net.explorer = None;
        }
        if let Some(v) = spec.aliases {
            net.aliases = v;
        }
        if let Some(v) = spec.display_name {
            net.display_name = v;
        }
        if let Some(v) = spec.native_symbol {
            net.native_symbol = v;
        }
        if let Some(v) = spec.rpc_urls {
            for url in &v {
                if !(url.starts_with("http://") || url.starts_with("https://")) {
                    return Err(("rpc_urls", format!("rpc url {url:?} must start with http:// or https://")));
                }
            }
            net.rpc_urls = v;
        }
        if let Some(v) = spec.explorer {
            // `explorer = ""` removes the built-in's explorer. Every journal row links here: an https:// base (or
            // http:// on loopback) with a host and no query, so a link cannot run script or carry the hash elsewhere.
            if !v.is_empty() && !is_explorer_base(&v) {
                return Err((
                    "explorer",
                    format!(
                        "explorer {v:?} must be an https:// URL (http:// only for localhost or 127.0.0.1) with a \
                         host and no query or fragment"
                    ),
                ));
            }
            net.explorer = (!v.is_empty()).then_some(v);
        }
        if let Some(c) = spec.contracts {
            let pin = |field: &str, v: Option<String>| -> Result<Option<Address>, (&'static str, String)> {
                v.map(|s| parse_address(field, &s).map_err(|e| ("contracts", e.message))).transpose()
            };
            if let Some(a) = pin("contracts.swap_target", c.swap_target)? {
                net.contracts.swap_target = Some(a);
            }
            if let Some(a) = pin("contracts.allowance_spender", c.allowance_spender)? {
                net.contracts.allowance_spender = Some(a);
            }
            if let Some(abi) = c.swap_abi {
                net.contracts.swap_abi = Some(abi);
            }
            if let Some(list) = c.settlers {
                net.contracts.settlers = list
                    .iter()
                    .map(|s| parse_address("contracts.settlers", s).map_err(|e| ("contracts", e.message)))
                    .collect::<Result<_, _>>()?;
            }
            match c.settler_registry.as_deref() {
                Some("") => net.contracts.settler_registry = None,
                Some(_) => net.contracts.settler_registry = pin("contracts.settler_registry", c.settler_registry)?,
                None => {}
            }
        }
        if let Some(other) = self.networks.values().find(|n| n.name != name && n.chain_id == net.chain_id) {
            return Err(("chain_id", format!("chain id {} is already used by network `{}`", net.chain_id, other.name)));
        }
        // Every name resolves to one network: a name or alias another network answers to (case-insensitively, its
        // CAIP-2 id included) would make `network` mean whichever comes first, and a CAIP-2 alias must be its own.
        for alias in &net.aliases {
            if let Some(id) = alias.to_ascii_lowercase().strip_prefix("eip155:")
                && id != net.chain_id.to_string()
            {
                return Err((
                    "aliases",
                    format!("alias {alias:?} is a CAIP-2 id of another chain than {}", net.chain_id),
                ));
            }
        }
        for (key, label) in std::iter::once(("", name)).chain(net.aliases.iter().map(|a| ("aliases", a.as_str()))) {
            if let Some(other) = self.networks.values().find(|n| n.name != name && n.answers_to(label)) {
                return Err((key, format!("{label:?} already names network `{}`", other.name)));
            }
        }
        self.networks.insert(name.to_owned(), net);
        Ok(())
    }

    /// Finds a network by name, alias or CAIP-2 id. Never falls back to a default.
    pub fn resolve(&self, name: &str) -> Result<&NetworkConfig, ToolError> {
        self.networks.values().find(|n| n.answers_to(name)).ok_or_else(|| {
            let known: Vec<&str> = self.networks.keys().map(String::as_str).collect();
            ToolError::new(
                ErrorCode::UnknownNetwork,
                format!("`network`: {} is not configured (known: {})", crate::text::preview(name), known.join(", ")),
            )
        })
    }

    /// Finds a network by chain id.
    pub fn by_chain_id(&self, chain_id: u64) -> Option<&NetworkConfig> {
        self.networks.values().find(|n| n.chain_id == chain_id)
    }

    /// All networks in table order.
    pub fn iter(&self) -> impl Iterator<Item = &NetworkConfig> {
        self.networks.values()
    }
}

/// Whether `url` may be a block explorer's base: `https://HOST[:PORT][/PATH]`, or `http://` on localhost or
/// 127.0.0.1; no user info, query or fragment, no spaces or quotes.
fn is_explorer_base(url: &str) -> bool {
    let (rest, loopback_only) = match url.split_once("://") {
        Some(("https", rest)) => (rest, false),
        Some(("http", rest)) => (rest, true),
        _ => return false,
    };
    let host_port = rest.split('/').next().unwrap_or_default();
    let host = host_port
        .rsplit_once(':')
        .map_or(host_port, |(h, port)| if port.bytes().all(|b| b.is_ascii_digit()) { h } else { host_port });
    let clean = |c: char| c.is_ascii_graphic() && !matches!(c, '?' | '#' | '@' | '"' | '\'' | '<' | '>' | '\\' | '`');
    !host.is_empty()
        && host.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-'))
        && url.chars().all(clean)
        && (!loopback_only || matches!(host, "localhost" | "127.0.0.1"))
}

/// Chain ids of local development chains, which no public network uses: the holdfast devnet's own (1752132708,
/// ASCII "hold"), anvil's and hardhat's 31337 and ganache's 1337. Only on these is a chain that began anew (a devnet
/// reset) taken as such; on any other id a node showing another genesis is a wrong or lying node.
pub const LOCAL_CHAIN_IDS: &[u64] = &[1_752_132_708, 31_337, 1_337];

/// Whether `chain_id` is one of [`LOCAL_CHAIN_IDS`].
///
/// ```
/// assert!(holdfast_core::config::is_local_chain_id(31_337));
/// assert!(!holdfast_core::config::is_local_chain_id(8_453));
/// ```
pub fn is_local_chain_id(chain_id: u64) -> bool {
    LOCAL_CHAIN_IDS.contains(&chain_id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_names_aliases_and_caip2_and_never_falls_back() {
        let t = NetworkTable::builtin();
        for name in ["base", "BASE", "base-mainnet", "Base Mainnet", "eip155:8453"] {
            assert_eq!(t.resolve(name).unwrap().chain_id, 8453, "{name}");
        }
        let err = t.resolve("ethereum").unwrap_err();
        assert_eq!(err.code, ErrorCode::UnknownNetwork);
        assert!(err.message.contains("`network`") && err.message.contains("base"));
    }

    #[test]
    fn merge_overrides_and_adds() {
        let mut t = NetworkTable::builtin();
        let spec = NetworkSpec { rpc_urls: Some(vec!["http://127.0.0.1:8545".into()]), ..Default::default() };
        t.merge("base", spec).unwrap();
        assert_eq!(t.resolve("base").unwrap().rpc_urls, vec!["http://127.0.0.1:8545"]);
        assert_eq!(t.resolve("base").unwrap().contracts.swap_target, Some(ALLOWANCE_HOLDER));
        assert_eq!(t.merge("newnet", NetworkSpec::default()).unwrap_err().0, "chain_id");
        let dup = NetworkSpec { chain_id: Some(8453), ..Default::default() };
        assert!(t.merge("other", dup).unwrap_err().1.contains("already used"));
        let bad = NetworkSpec {
            contracts: Some(ContractsSpec { swap_target: Some("0x12".into()), ..Default::default() }),
            ..Default::default()
        };
        assert!(t.merge("base", bad).unwrap_err().1.contains("contracts.swap_target"));
    }

    #[test]
    fn explorer_links_hold_only_a_transaction_hash() {
        let base = NetworkTable::builtin().resolve("base").unwrap().clone();
        let hash = format!("0x{}", "ab".repeat(32));
        assert_eq!(base.explorer_tx_url(&hash), Some(format!("https://basescan.org/tx/{hash}")));
        for bad in ["0x12", "javascript:alert(1)", &format!("0x{}/../x", "ab".repeat(31))] {
            assert_eq!(base.explorer_tx_url(bad), None, "{bad}");
        }
        let devnet = NetworkConfig { explorer: None, ..base };
        assert_eq!(devnet.explorer_tx_url(&hash), None, "no explorer: the UI's own transaction page");
        for good in
            ["https://basescan.org", "https://explorer.example/base/", "http://127.0.0.1:4000", "http://localhost"]
        {
            assert!(super::is_explorer_base(good), "{good}");
        }
        for bad in [
            "javascript:alert(1)",
            "data:text/html,x",
            "http://basescan.org",
            "https://user:pw@evil.example",
            "https://basescan.org/?next=https://evil.example",
            "https://basescan.org/#x",
            "https:///path",
            "https://bad host",
            "ftp://basescan.org",
        ] {
            assert!(!super::is_explorer_base(bad), "{bad}");
        }
    }

    #[test]
    fn no_two_networks_answer_to_one_name() {
        let mut t = NetworkTable::builtin();
        let net = |id: u64, aliases: &[&str]| NetworkSpec {
            chain_id: Some(id),
            aliases: Some(aliases.iter().map(|a| (*a).to_owned()).collect()),
            ..Default::default()
        };
        // A case-only twin of `base`, an alias `base` answers to, a CAIP-2 alias of another chain.
        assert_eq!(t.merge("BASE", net(7, &[])).unwrap_err().0, "");
        assert!(t.merge("fork", net(7, &["Base-Mainnet"])).unwrap_err().1.contains("already names network `base`"));
        assert!(t.merge("fork", net(7, &["eip155:8453"])).unwrap_err().1.contains("CAIP-2"));
        t.merge("fork", net(7, &["eip155:7", "my-fork"])).unwrap();
        assert_eq!(t.resolve("MY-FORK").unwrap().chain_id, 7);
        // Once the devnet takes `base` off chain 8453, its old aliases are free, but only for a network on 8453.
        t.merge("base", NetworkSpec { chain_id: Some(1_752_132_708), ..Default::default() }).unwrap();
        assert!(t.merge("other", net(9, &["eip155:8453"])).is_err());
        assert!(t.merge("fork", net(7, &["base"])).unwrap_err().1.contains("already names network `base`"));
    }

    #[test]
    fn another_chain_under_a_builtin_name_drops_the_public_chains_names() {
        let mut t = NetworkTable::builtin();
        t.merge("base", NetworkSpec { chain_id: Some(1_752_132_708), ..Default::default() }).unwrap();
        let net = t.resolve("base").unwrap();
        assert_eq!((net.chain_id, net.explorer.as_deref()), (1_752_132_708, None));
        assert_eq!(net.display_name, "base (chain 1752132708)");
        assert_eq!(net.contracts.swap_target, Some(ALLOWANCE_HOLDER), "pinned contracts stay");
        // "base mainnet" no longer names it, nor does Base mainnet's CAIP-2 id.
        for name in ["base-mainnet", "base mainnet", "eip155:8453"] {
            assert_eq!(t.resolve(name).unwrap_err().code, ErrorCode::UnknownNetwork, "{name}");
        }
        assert!(t.resolve("eip155:1752132708").is_ok());
        // The same chain id again keeps everything; explicit fields still win.
        let mut t = NetworkTable::builtin();
        let spec = NetworkSpec { chain_id: Some(8453), explorer: Some(String::new()), ..Default::default() };
        t.merge("base", spec).unwrap();
        let net = t.resolve("base-mainnet").unwrap();
        assert_eq!((net.display_name.as_str(), net.explorer.as_deref()), ("Base", None));
    }
}

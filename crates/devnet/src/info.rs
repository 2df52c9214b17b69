//! `DIR/devnet.json`: what a devnet folder holds — ports, process ids, contract addresses, the wallet's address and
//! the generated config — as [`DevnetInfo`]. It never holds the wallet key.

use crate::error::DevnetError;
use alloy::primitives::Address;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The state file's name inside a devnet folder.
pub const DEVNET_JSON: &str = "devnet.json";
/// The generated config's name inside a devnet folder.
pub const CONFIG_FILE: &str = "holdfast.toml";
/// The generated preset file's name inside a devnet folder.
pub const PRESETS_FILE: &str = "presets.ron";
/// The burner key file's name inside a devnet folder.
pub const KEY_FILE: &str = "wallet.key";
/// The saved chain inside a devnet folder (anvil's `--state` file): loaded by the next `up`.
pub const STATE_FILE: &str = "chain-state.json";
/// A copy of [`STATE_FILE`] taken after the last clean stop: resumed from when the state file cannot be (anvil
/// rewrites it in place every few seconds, so a kill in the middle of a write can leave it unreadable).
pub const STATE_PREV: &str = "chain-state.prev.json";
/// anvil's log file inside a devnet folder.
pub const ANVIL_LOG: &str = "anvil.log";
/// The services process's log file inside a devnet folder.
pub const SERVICES_LOG: &str = "services.log";

/// Lifecycle of a devnet folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DevnetState {
    /// `up` is still setting it up (processes may be running).
    Starting,
    /// Everything is running.
    Up,
    /// Stopped by `down`.
    Down,
}

/// The anvil process.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AnvilProcess {
    /// Its process id.
    pub pid: u32,
    /// Its port on 127.0.0.1.
    pub port: u16,
}

/// The services process (quoter behind the x402 paywall, facilitator).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServicesProcess {
    /// Its process id (0 while starting; the test process's own id for an in-process [`crate::TestDevnet`]).
    pub pid: u32,
    /// Its port on 127.0.0.1.
    pub port: u16,
    /// `http://127.0.0.1:PORT`.
    pub url: String,
}

/// Contract addresses (Base's).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContractAddresses {
    /// USDC (FiatTokenDevnet).
    #[serde(with = "eip55")]
    pub usdc: Address,
    /// WETH (WETH9).
    #[serde(with = "eip55")]
    pub weth: Address,
    /// The swap venue (at the 0x AllowanceHolder address).
    #[serde(with = "eip55")]
    pub venue: Address,
    /// The ETH / USD price feed (Chainlink's Base address; answers the venue's mid price). Absent in files
    /// written before the devnet had price feeds.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "eip55_opt")]
    pub eth_usd_feed: Option<Address>,
    /// The USDC / USD price feed (Chainlink's Base address; answers 1e8). Absent in files written before the
    /// devnet had price feeds.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "eip55_opt")]
    pub usdc_usd_feed: Option<Address>,
}

impl ContractAddresses {
    /// The addresses this version of the devnet places its contracts at.
    pub fn devnet() -> Self {
        use crate::contracts::{ETH_USD_FEED, USDC, USDC_USD_FEED, VENUE, WETH};
        Self {
            usdc: USDC,
            weth: WETH,
            venue: VENUE,
            eth_usd_feed: Some(ETH_USD_FEED),
            usdc_usd_feed: Some(USDC_USD_FEED),
        }
    }
}

/// The burner wallet — its address and where the key file is, never the key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WalletInfo {
    /// The key's address (the signer).
    #[serde(with = "eip55")]
    pub address: Address,
    /// The key file, relative to the devnet folder.
    pub key_file: String,
    /// The smart account the key signs for, when the funds sit in one (`devnet up --account`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account: Option<String>,
    /// The key's address again, named as the account's signer, when there is an account.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signer: Option<String>,
    /// The account's on-chain limits: `{asset, amount, period_secs}`, `asset` "ETH" or a token address, `amount` in
    /// base units.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub limits: Vec<crate::account::OnchainLimit>,
}

/// The x402 paywall in front of the quoter.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct X402Info {
    /// The facilitator API (`/verify`, `/settle`, `/supported`).
    pub facilitator_url: String,
    /// The CAIP-2 network paid on.
    pub network: String,
    /// The token paid with.
    #[serde(with = "eip55")]
    pub asset: Address,
    /// The price per quote or price lookup, base units of the asset.
    pub price: String,
    /// The payee.
    #[serde(with = "eip55")]
    pub pay_to: Address,
    /// The account that submits settlements.
    #[serde(with = "eip55")]
    pub facilitator_account: Address,
}

/// The content of `DIR/devnet.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DevnetInfo {
    /// Chain id (the devnet's own, [`crate::CHAIN_ID`], unless `up` was given another).
    pub chain_id: u64,
    /// anvil's JSON-RPC URL.
    pub rpc_url: String,
    /// The anvil process.
    pub anvil: AnvilProcess,
    /// The services process.
    pub services: ServicesProcess,
    /// Contract addresses.
    pub contracts: ContractAddresses,
    /// The burner wallet.
    pub wallet: WalletInfo,
    /// The x402 paywall (absent in files written before it existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub x402: Option<X402Info>,
    /// The generated config, relative to the devnet folder.
    pub config: String,
    /// When `up` started it (RFC 3339).
    pub started_at: String,
    /// Lifecycle state.
    pub state: DevnetState,
    /// The chain's genesis block hash as anvil showed it at the last `up` (a resumed chain may show a new one: anvil
    /// does not always keep the genesis block of a chain it loaded). Absent in files written before devnets kept
    /// their chain, which start a new chain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub genesis: Option<String>,
    /// Set by [`crate::up`] when the folder was already up and nothing was started (not stored in the file).
    #[serde(skip)]
    pub already_up: bool,
}

impl X402Info {
    /// The devnet paywall's terms, for services at `services_url`.
    pub fn for_services(services_url: &str) -> Self {
        let terms = crate::paywall::PaywallConfig::devnet();
        Self {
            facilitator_url: format!("{services_url}{}", crate::services::FACILITATOR_PATH),
            network: format!("eip155:{}", terms.chain_id),
            asset: terms.asset,
            price: terms.price.to_string(),
            pay_to: terms.pay_to,
            facilitator_account: crate::facilitator::FACILITATOR_ACCOUNT,
        }
    }
}

impl DevnetInfo {
    /// The quoter's base URL (the services URL).
    pub fn quoter_url(&self) -> &str {
        &self.services.url
    }
}

/// Addresses in EIP-55 form (alloy's own serde writes lowercase hex).
mod eip55 {
    use alloy::primitives::Address;
    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(a: &Address, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&a.to_checksum(None))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Address, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// Optional addresses in EIP-55 form (`null` and a missing field read as `None`).
mod eip55_opt {
    use alloy::primitives::Address;
    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(a: &Option<Address>, s: S) -> Result<S::Ok, S::Error> {
        match a {
            Some(a) => s.serialize_str(&a.to_checksum(None)),
            None => s.serialize_none(),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Address>, D::Error> {
        Option::<String>::deserialize(d)?.map(|text| text.parse().map_err(serde::de::Error::custom)).transpose()
    }
}

/// `DIR/devnet.json`.
pub fn devnet_json_path(dir: &Path) -> PathBuf {
    dir.join(DEVNET_JSON)
}

/// Reads `DIR/devnet.json`; `Ok(None)` when there is none.
pub fn read_info(dir: &Path) -> Result<Option<DevnetInfo>, DevnetError> {
    let path = devnet_json_path(dir);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(DevnetError::io(format!("reading {}", path.display()), e)),
    };
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|e| DevnetError::BadStateFile { path, reason: format!("not a devnet.json this version wrote: {e}") })
}

/// Writes `DIR/devnet.json` atomically.
pub(crate) fn write_info(dir: &Path, info: &DevnetInfo) -> Result<(), DevnetError> {
    let mut text = serde_json::to_string_pretty(info)
        .map_err(|e| DevnetError::io("serialising devnet.json", std::io::Error::other(e)))?;
    text.push('\n');
    write_atomic(&devnet_json_path(dir), &text)
}

/// Writes `text` to `path` through a temporary file in the same folder and a rename.
pub(crate) fn write_atomic(path: &Path, text: &str) -> Result<(), DevnetError> {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.tmp-{}", std::process::id()));
    std::fs::write(&tmp, text).and_then(|()| std::fs::rename(&tmp, path)).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        DevnetError::io(format!("writing {}", path.display()), e)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contracts::VENUE;

    #[test]
    fn json_shape_is_stable() {
        let info = DevnetInfo {
            chain_id: 8453,
            rpc_url: "http://127.0.0.1:1".into(),
            anvil: AnvilProcess { pid: 10, port: 1 },
            services: ServicesProcess { pid: 11, port: 2, url: "http://127.0.0.1:2".into() },
            contracts: ContractAddresses::devnet(),
            wallet: WalletInfo {
                address: VENUE,
                key_file: KEY_FILE.into(),
                account: None,
                signer: None,
                limits: Vec::new(),
            },
            x402: Some(X402Info::for_services("http://127.0.0.1:2")),
            config: CONFIG_FILE.into(),
            started_at: "2026-11-01T00:00:00Z".into(),
            state: DevnetState::Up,
            genesis: None,
            already_up: true,
        };
        let v = serde_json::to_value(&info).unwrap();
        assert_eq!(v["state"], "up");
        assert_eq!(v["contracts"]["usdc"], "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913");
        assert_eq!(v["contracts"]["eth_usd_feed"], "0x71041dddad3595F9CEd3DcCFBe3D1F4b0a16Bb70");
        assert_eq!(v["contracts"]["usdc_usd_feed"], "0x7e860098F58bBFC8648a4311b374B1D669a2bc6B");
        assert_eq!(v["wallet"]["address"], "0x0000000000001fF3684f28c67538d4D072C22734");
        assert!(v.get("already_up").is_none());
        assert_eq!(v["x402"]["facilitator_url"], "http://127.0.0.1:2/facilitator");
        assert_eq!(v["x402"]["price"], "10000");
        let back: DevnetInfo = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(back, DevnetInfo { already_up: false, ..info.clone() });

        // A devnet.json written before the price feeds existed still reads, without them.
        let mut old = v;
        let contracts = old["contracts"].as_object_mut().unwrap();
        contracts.remove("eth_usd_feed");
        contracts.remove("usdc_usd_feed");
        let back: DevnetInfo = serde_json::from_value(old).unwrap();
        assert_eq!(back.contracts.eth_usd_feed, None);
        assert_eq!(back.contracts.usdc_usd_feed, None);
        assert_eq!(back.contracts.venue, info.contracts.venue);
    }
}

//! The token table (`config/tokens.ron`): network → symbol → address, decimals and name.

use super::{ConfigError, line_col};
use crate::address::parse_address;
use crate::error::{ErrorCode, ToolError};
use alloy_primitives::{Address, address};
use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The placeholder address swap APIs use for a chain's native token.
pub const NATIVE_TOKEN_ADDRESS: Address = address!("0xEeeeeEeeeEeEeeEeEeEeeEEEeeeeEeeeeeeeEEeE");

const BUILTIN: &str = include_str!("../../../../config/tokens.ron");

/// One token of one network.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TokenInfo {
    /// The symbol as written in the table (`USDC`, `cbETH`).
    pub symbol: String,
    /// The contract address (the native placeholder for the native token).
    pub address: Address,
    /// Decimals of the base unit.
    pub decimals: u8,
    /// Human name.
    pub name: String,
    /// The network the entry belongs to.
    pub network: String,
    /// The symbol is also an ordinary word; match it only in table case or capitals.
    pub word_like: bool,
}

impl TokenInfo {
    /// True for the native-token placeholder.
    pub fn is_native(&self) -> bool {
        self.address == NATIVE_TOKEN_ADDRESS
    }

    /// The register form `{address, symbol, decimals, network}`.
    pub fn to_register_value(&self) -> serde_json::Value {
        serde_json::json!({
            "address": self.address.to_checksum(None),
            "symbol": self.symbol,
            "decimals": self.decimals,
            "network": self.network,
        })
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TokenSpec {
    address: String,
    decimals: u8,
    name: String,
    #[serde(default)]
    word_like: bool,
}

/// The token table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenTable {
    networks: IndexMap<String, IndexMap<String, TokenInfo>>,
}

impl TokenTable {
    /// The table shipped in `config/tokens.ron`.
    pub fn builtin() -> Self {
        // The embedded table is checked by a unit test; an empty table is the only possible fallback and it
        // fails closed (every lookup is `unknown_token`).
        Self::parse("config/tokens.ron (built-in)", BUILTIN).unwrap_or_else(|_| Self { networks: IndexMap::new() })
    }

    /// Reads a RON token table from a file.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path)
            .map_err(|source| ConfigError::Io { path: path.display().to_string(), source })?;
        Self::parse(&path.display().to_string(), &text)
    }

    /// Parses RON text; `name` is used in errors.
    pub fn parse(name: &str, text: &str) -> Result<Self, ConfigError> {
        let raw: IndexMap<String, IndexMap<String, TokenSpec>> =
            ron::from_str(text).map_err(|e| ConfigError::Parse {
                path: name.to_owned(),
                line: e.span.start.line,
                column: e.span.start.col,
                reason: e.code.to_string(),
            })?;
        let invalid = |reason: String| ConfigError::Invalid { path: name.to_owned(), reason };
        let mut networks = IndexMap::new();
        for (network, tokens) in raw {
            let mut table: IndexMap<String, TokenInfo> = IndexMap::new();
            for (symbol, spec) in tokens {
                let place = format!("{network}.{symbol}");
                if symbol.is_empty() || symbol.len() > 16 || !symbol.bytes().all(|b| b.is_ascii_alphanumeric()) {
                    return Err(invalid(format!("`{place}`: a symbol is 1–16 ASCII letters or digits")));
                }
                if let Some(other) = table.keys().find(|s| s.eq_ignore_ascii_case(&symbol)) {
                    return Err(invalid(format!(
                        "`{place}`: clashes with `{other}` (symbols are unique ignoring case)"
                    )));
                }
                let address = parse_address(&format!("{place}.address"), &spec.address)
                    .map_err(|e| invalid(format!("{} (line {})", e.message, find_line(text, &spec.address))))?;
                table.insert(
                    symbol.clone(),
                    TokenInfo {
                        symbol,
                        address,
                        decimals: spec.decimals,
                        name: spec.name,
                        network: network.clone(),
                        word_like: spec.word_like,
                    },
                );
            }
            networks.insert(network, table);
        }
        Ok(Self { networks })
    }

    /// Network names the table covers.
    pub fn networks(&self) -> impl Iterator<Item = &str> {
        self.networks.keys().map(String::as_str)
    }

    /// Looks a symbol up (case-insensitively) on a canonical network name.
    pub fn lookup(&self, network: &str, symbol: &str) -> Result<&TokenInfo, ToolError> {
        let table = self.networks.get(network).ok_or_else(|| {
            ToolError::new(ErrorCode::UnknownToken, format!("`network`: the token table has no tokens for `{network}`"))
        })?;
        table.values().find(|t| t.symbol.eq_ignore_ascii_case(symbol)).ok_or_else(|| {
            let known: Vec<&str> = table.keys().map(String::as_str).collect();
            ToolError::new(
                ErrorCode::UnknownToken,
                format!(
                    "`symbol`: {} is not in the token table for {network} (known: {})",
                    crate::text::preview(symbol),
                    known.join(", ")
                ),
            )
        })
    }

    /// Finds the token with `address` on `network`.
    pub fn by_address(&self, network: &str, address: Address) -> Option<&TokenInfo> {
        self.networks.get(network)?.values().find(|t| t.address == address)
    }

    /// Every token of every network.
    pub fn iter(&self) -> impl Iterator<Item = &TokenInfo> {
        self.networks.values().flat_map(IndexMap::values)
    }
}

fn find_line(text: &str, needle: &str) -> usize {
    text.find(needle).map_or(0, |at| line_col(text, at).0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_builtin_table_parses_with_valid_checksums() {
        let parsed = TokenTable::parse("builtin", BUILTIN).unwrap();
        assert_eq!(parsed, TokenTable::builtin());
        let usdc = parsed.lookup("base", "usdc").unwrap();
        assert_eq!(usdc.address.to_checksum(None), "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913");
        assert_eq!(usdc.decimals, 6);
        assert!(parsed.lookup("base", "ETH").unwrap().is_native());
        assert_eq!(
            parsed.lookup("base", "weth").unwrap().address.to_checksum(None),
            "0x4200000000000000000000000000000000000006"
        );
    }

    #[test]
    fn unknown_tokens_and_networks_are_errors() {
        let t = TokenTable::builtin();
        let err = t.lookup("base", "DOGE").unwrap_err();
        assert_eq!(err.code, ErrorCode::UnknownToken);
        assert!(err.message.contains("`symbol`") && err.message.contains("USDC"));
        assert_eq!(t.lookup("mainnet", "USDC").unwrap_err().code, ErrorCode::UnknownToken);
    }

    #[test]
    fn bad_tables_fail_with_file_line_and_reason() {
        let err =
            TokenTable::parse("t.ron", "{\n \"base\": {\n  \"X\": (address: 12, decimals: 1, name: \"x\"),\n }\n}")
                .unwrap_err()
                .to_string();
        assert!(err.starts_with("t.ron:3:"), "{err}");
        let wrong_checksum =
            "{\"base\": {\"U\": (address: \"0x833589FCD6eDb6E08f4c7C32D4f71b54bdA02913\", decimals: 6, name: \"u\")}}";
        let err = TokenTable::parse("t.ron", wrong_checksum).unwrap_err().to_string();
        assert!(err.contains("checksum") && err.contains("base.U.address"), "{err}");
        let clash = "{\"base\": {\"ETH\": (address: \"0x4200000000000000000000000000000000000006\", decimals: 18, name: \"a\"), \"eth\": (address: \"0x4200000000000000000000000000000000000006\", decimals: 18, name: \"b\")}}";
        assert!(TokenTable::parse("t.ron", clash).unwrap_err().to_string().contains("clashes"));
    }
}

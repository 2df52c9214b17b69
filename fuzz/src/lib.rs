//! Checks shared by the fuzz targets. A failed check panics, which libFuzzer records as a crash.
#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used)]

use holdfast_core::address::check_address;
use holdfast_core::amount::Decimal;
use holdfast_core::config::{NetworkSpec, NetworkTable, TokenTable};
use holdfast_core::context_bank::{ContextBank, ContextScanner, ItemFlag, ItemType};
use holdfast_core::{ErrorCode, EventBus, ToolError};
use std::sync::Arc;

/// A scanner with the tables it was built from.
pub struct Scanner {
    /// The scanner.
    pub scanner: Arc<ContextScanner>,
    /// Its token table.
    pub tokens: TokenTable,
    /// Its network table.
    pub networks: NetworkTable,
}

impl Scanner {
    /// Builds the scanner for these tables.
    pub fn new(tokens: TokenTable, networks: NetworkTable) -> Self {
        let scanner = Arc::new(ContextScanner::new(&tokens, &networks).expect("the scanner builds"));
        Self { scanner, tokens, networks }
    }

    /// The shipped tables.
    pub fn builtin() -> Self {
        Self::new(TokenTable::builtin(), NetworkTable::builtin())
    }

    /// Tables that take the scanner's other paths: more than eight first letters (every word start is looked at),
    /// word-like and one-letter symbols, 16-character symbols, network names that begin with punctuation or a
    /// non-ASCII letter, and multi-word names that begin with a symbol.
    pub fn wide() -> Self {
        let symbols = [
            ("ETH", false),
            ("USDC", false),
            ("cbETH", false),
            ("ONE", true),
            ("GAS", false),
            ("X", false),
            ("OP", false),
            ("AB", false),
            ("ALPHA", false),
            ("BRAVO", false),
            ("CHARLIE", false),
            ("DELTA", false),
            ("FOXTROT", false),
            ("GOLF", false),
            ("HOTEL", false),
            ("JULIET", false),
            ("ABCDEFGHIJKLMNOP", false),
            ("1INCH", false),
        ];
        let mut ron = String::from("{\"base\": {");
        for (i, (symbol, word_like)) in symbols.iter().enumerate() {
            ron.push_str(&format!(
                "\"{symbol}\": (address: \"0x{:040x}\", decimals: 18, name: \"{symbol} token\", word_like: {word_like}),",
                i + 1
            ));
        }
        ron.push_str("}}");
        let tokens = TokenTable::parse("fuzz", &ron).expect("the token table parses");
        let mut networks = NetworkTable::builtin();
        let extra: [(&str, &[&str]); 4] = [
            ("optimism", &["op mainnet", "op-mainnet"]),
            ("paren", &["(paren)", "«base»"]),
            ("japan", &["ベース", "日本 net", "x日本"]),
            ("averyveryverylongnetworkname", &["averyveryverylongnetworknames two", "één"]),
        ];
        for (i, (name, aliases)) in extra.iter().enumerate() {
            let spec = NetworkSpec {
                chain_id: Some(7000 + i as u64),
                aliases: Some(aliases.iter().map(|a| (*a).to_owned()).collect()),
                ..NetworkSpec::default()
            };
            networks.merge(name, spec).expect("the network merges");
        }
        Self::new(tokens, networks)
    }

    /// Scans `text` and checks every item: addresses are EIP-55 (or flagged and kept as typed), amounts are
    /// canonical decimals, a bound amount's label is a symbol of the table that the scan also reports, symbols and
    /// networks come from the tables; then runs the text through a bank and checks what it keeps.
    pub fn check(&self, text: &str) {
        let items = self.scanner.scan(text);
        let folded = text.to_ascii_lowercase();
        let mut bound = 0usize;
        let mut symbols = 0usize;
        for item in &items {
            match item.item_type {
                ItemType::EthAddress => {
                    let checked = check_address(&item.value).unwrap_or_else(|| panic!("not an address: {item:?}"));
                    assert!(folded.contains(&item.value.to_ascii_lowercase()[2..]), "not in the text: {item:?}");
                    if item.flags.is_empty() {
                        assert!(checked.checksum_ok, "unflagged bad checksum: {item:?}");
                        assert_eq!(item.value, checked.checksummed(), "not EIP-55: {item:?}");
                    } else {
                        assert_eq!(item.flags, [ItemFlag::ChecksumMismatch], "{item:?}");
                        assert!(!checked.checksum_ok, "flagged good checksum: {item:?}");
                        assert!(text.contains(&item.value), "a flagged address is kept as typed: {item:?}");
                    }
                    assert_eq!(item.label, None);
                }
                ItemType::Amount if item.flags == [ItemFlag::Ambiguous] => {
                    // A number that reads more than one way: kept as written (invisible characters escaped), bound
                    // to nothing.
                    assert_eq!(item.label, None, "an ambiguous number binds nothing: {item:?}");
                    assert!(item.value.bytes().any(|b| b.is_ascii_digit()), "no digit: {item:?}");
                }
                ItemType::Amount => {
                    let decimal = Decimal::parse("amount", &item.value)
                        .unwrap_or_else(|e| panic!("amount {item:?} is no decimal: {}", e.message));
                    assert_eq!(decimal.canonical(), item.value, "not canonical: {item:?}");
                    if let Some(label) = &item.label {
                        assert!(self.tokens.iter().any(|t| &t.symbol == label), "bound to no symbol: {item:?}");
                        assert!(
                            items.iter().any(|i| i.item_type == ItemType::TokenSymbol && &i.value == label),
                            "bound to a symbol the scan did not report: {item:?}"
                        );
                        bound += 1;
                    }
                    assert!(item.flags.is_empty());
                }
                ItemType::TokenSymbol => {
                    let token = self.tokens.iter().find(|t| t.symbol == item.value);
                    let token = token.unwrap_or_else(|| panic!("not a symbol of the table: {item:?}"));
                    assert_eq!(item.label.as_deref(), Some(token.name.as_str()));
                    assert!(folded.contains(&item.value.to_ascii_lowercase()), "not in the text: {item:?}");
                    symbols += 1;
                }
                ItemType::Network => {
                    assert!(self.networks.iter().any(|n| n.name == item.value), "not a network: {item:?}");
                }
            }
        }
        // A symbol qualifies at most one number.
        assert!(bound <= symbols, "{bound} bound amounts, {symbols} symbols: {items:?}");

        let bank = ContextBank::new(Arc::clone(&self.scanner), EventBus::new("fuzz"));
        let added = bank.scan_input(text);
        let kept = bank.items();
        assert_eq!(added, kept);
        for item in &kept {
            assert!(items.contains(item));
            if item.item_type == ItemType::Amount
                && let Some(label) = &item.label
            {
                assert!(bank.has_amount(&item.value, label), "{item:?}");
            }
        }
        assert_eq!(bank.format_for_agent().is_some(), !kept.is_empty());
        // Each authorization is a bound amount of the message; one is `quoted` only when something in it may quote.
        let marks = ['"', '“', '”', '„', '‟', '‚', '‛', '«', '»', '‹', '›', '‘', '「', '」', '『', '』', '〝', '〞', '〟', '＂'];
        let plain = !text.contains(marks) && !text.contains(['>', '`', '~', '\t']) && !text.contains("    ");
        for a in bank.authorizations() {
            assert!(bank.has_amount(&a.amount, &a.symbol), "{a:?}");
            assert!(!(plain && a.quoted), "quoted with nothing quoted: {a:?}");
        }
    }
}

/// Checks a tool error: a stable code other than `internal` (bad input is the caller's fault, never the runtime's),
/// a message, and a JSON form whose `code` is the code's snake_case name.
pub fn check_tool_error(what: &str, e: &ToolError) {
    assert_ne!(e.code, ErrorCode::Internal, "{what}: internal error for bad input: {}", e.message);
    assert!(!e.message.is_empty(), "{what}: an error without a message ({:?})", e.code);
    let json = serde_json::to_value(e).expect("a tool error serialises");
    let code = json.get("code").and_then(serde_json::Value::as_str).unwrap_or_default();
    assert!(!code.is_empty() && code.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'), "{what}: code {json}");
    assert_eq!(serde_json::to_value(e.code).ok().as_ref().and_then(serde_json::Value::as_str), Some(code));
}

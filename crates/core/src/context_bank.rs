//! The context bank: addresses, token symbols, networks and amounts extracted from the user's own words by code.
//!
//! It reads only user-authored text (invariant 11) — callers pass the user's message, never tool output or model
//! text. Scanning is one pass of an Aho-Corasick automaton over every token symbol, network name and alias, the
//! address prefix `0x` and the ten digits; each hit is then checked at its edges.
//!
//! # Matching rules
//! - **Addresses**: `0x` + exactly 40 hex digits, not touching other letters or digits. All-lower/all-upper forms
//!   are stored in EIP-55 form; a mixed-case address with a wrong checksum is kept as typed and flagged
//!   `checksum_mismatch`.
//! - **Token symbols** must stand as whole words (the characters either side are not letters, digits or `_`).
//!   A symbol matches when written as in the token table or in capitals (`USDC`, `cbETH`, `CBETH`). Lower-case or
//!   title-case forms (`usdc`, `Usdc`) match only for symbols of three or more characters that are not ordinary
//!   words — a symbol is treated as an ordinary word when the token table marks it `word_like` or it is in
//!   [`ORDINARY_WORDS`]. So "one" or "gas" in a sentence is never a token, while "ONE" is.
//! - **Networks**: names and aliases from the network table, whole words, any case.
//! - **Amounts**: `12`, `0.001`, `.5`, `1,000.25` standing alone (a number glued to letters, or joined by `-`, `/`
//!   or `:` to another number — dates, times, ranges, versions — is not an amount). An amount directly followed by
//!   a token symbol (`0.001 ETH`, `0.001ETH`) is paired with it.
//!
//! Items are deduplicated and kept in order of first appearance.

use crate::address::check_address;
use crate::amount::Decimal;
use crate::config::{NetworkTable, TokenTable};
use crate::event::{EventBus, names};
use aho_corasick::{AhoCorasick, AhoCorasickKind, Anchored, Input, MatchKind, StartKind};
use parking_lot::RwLock;
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::fmt::Write as _;
use std::sync::Arc;

/// Symbols that are also common English words; they match only as written in the table or in capitals.
pub const ORDINARY_WORDS: &[&str] = &[
    "all", "and", "any", "are", "art", "bad", "ban", "bar", "bat", "bit", "bond", "box", "but", "can", "car", "cat",
    "coin", "cow", "cry", "cut", "day", "dog", "dot", "eat", "egg", "eye", "fan", "far", "few", "fly", "for", "fun",
    "gas", "get", "god", "got", "has", "hat", "her", "him", "his", "hot", "how", "ice", "its", "joy", "key", "law",
    "lay", "let", "lot", "low", "man", "map", "may", "max", "meme", "mix", "moon", "new", "not", "now", "nut", "odd",
    "off", "old", "one", "our", "out", "own", "pay", "pet", "pop", "put", "ray", "red", "rose", "run", "safe", "sand",
    "say", "sea", "see", "send", "set", "she", "sun", "swap", "tea", "ten", "the", "too", "top", "try", "two", "use",
    "via", "war", "was", "way", "who", "why", "win", "yes", "yet", "you", "zero",
];

/// What kind of item the bank holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ItemType {
    /// An Ethereum address.
    EthAddress,
    /// A token symbol from the token table.
    TokenSymbol,
    /// A network name or alias (stored as the canonical name).
    Network,
    /// A decimal amount (stored canonical: no separators or trailing zeros).
    Amount,
}

/// A flag on an item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ItemFlag {
    /// A mixed-case address whose EIP-55 checksum is wrong.
    ChecksumMismatch,
}

/// One extracted item.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ContextItem {
    /// The value: an EIP-55 address, a symbol as in the table, a canonical network name, a canonical amount.
    pub value: String,
    /// The kind.
    pub item_type: ItemType,
    /// Extra information: a token's name, a network's display name, the token paired with an amount.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Flags such as `checksum_mismatch`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flags: Vec<ItemFlag>,
}

#[derive(Debug, Clone, Copy)]
enum PatternKind {
    Token(usize),
    Network(usize),
    AddressPrefix,
    Digit,
}

#[derive(Debug)]
struct SymbolEntry {
    symbol: String,
    upper: String,
    name: String,
    loose_case: bool,
}

/// The immutable scanner built from the token and network tables; shared by every session.
#[derive(Debug)]
pub struct ContextScanner {
    automaton: AhoCorasick,
    kinds: Vec<PatternKind>,
    symbols: Vec<SymbolEntry>,
    networks: Vec<(String, String)>,
}

/// The scanner could not be built (the automaton grew past its limits).
#[derive(Debug, thiserror::Error)]
#[error("cannot build the context-bank scanner: {0}")]
pub struct ScannerBuildError(#[from] aho_corasick::BuildError);

impl ContextScanner {
    /// Builds the scanner for every symbol of `tokens` (all networks) and every name and alias of `networks`.
    pub fn new(tokens: &TokenTable, networks: &NetworkTable) -> Result<Self, ScannerBuildError> {
        let mut patterns: Vec<String> = Vec::new();
        let mut kinds = Vec::new();
        let mut symbols: Vec<SymbolEntry> = Vec::new();
        for token in tokens.iter() {
            if symbols.iter().any(|s| s.symbol.eq_ignore_ascii_case(&token.symbol)) {
                continue;
            }
            let lower = token.symbol.to_ascii_lowercase();
            let loose_case = !token.word_like && token.symbol.len() >= 3 && !ORDINARY_WORDS.contains(&lower.as_str());
            kinds.push(PatternKind::Token(symbols.len()));
            patterns.push(token.symbol.clone());
            symbols.push(SymbolEntry {
                symbol: token.symbol.clone(),
                upper: token.symbol.to_ascii_uppercase(),
                name: token.name.clone(),
                loose_case,
            });
        }
        let mut nets = Vec::new();
        for net in networks.iter() {
            for name in std::iter::once(&net.name).chain(net.aliases.iter()) {
                if symbols.iter().any(|s| s.symbol.eq_ignore_ascii_case(name)) {
                    continue;
                }
                kinds.push(PatternKind::Network(nets.len()));
                patterns.push(name.clone());
            }
            nets.push((net.name.clone(), net.display_name.clone()));
        }
        kinds.push(PatternKind::AddressPrefix);
        patterns.push("0x".into());
        for d in b'0'..=b'9' {
            kinds.push(PatternKind::Digit);
            patterns.push(char::from(d).to_string());
        }
        let automaton = AhoCorasick::builder()
            .ascii_case_insensitive(true)
            .match_kind(MatchKind::LeftmostLongest)
            .start_kind(StartKind::Both)
            .kind(Some(AhoCorasickKind::DFA))
            .build(&patterns)?;
        Ok(Self { automaton, kinds, symbols, networks: nets })
    }

    /// Extracts items from `text` in order of appearance (not deduplicated).
    pub fn scan(&self, text: &str) -> Vec<ContextItem> {
        let mut out = Vec::new();
        let mut resume = 0usize;
        // A token glued to a number ("0.001ETH") is accepted although a digit precedes it.
        let mut glued_token_at = usize::MAX;
        for m in self.automaton.find_iter(text) {
            if m.start() < resume {
                continue;
            }
            match self.kinds[m.pattern().as_usize()] {
                PatternKind::Token(i) => {
                    let glued = m.start() == glued_token_at;
                    if (glued || word_start(text, m.start()))
                        && word_end(text, m.end())
                        && let Some(sym) = self.accept_symbol(i, &text[m.start()..m.end()])
                    {
                        out.push(ContextItem {
                            value: sym.symbol.clone(),
                            item_type: ItemType::TokenSymbol,
                            label: Some(sym.name.clone()),
                            flags: Vec::new(),
                        });
                    }
                }
                PatternKind::Network(i) => {
                    if word_start(text, m.start()) && word_end(text, m.end()) {
                        let (name, display) = &self.networks[i];
                        out.push(ContextItem {
                            value: name.clone(),
                            item_type: ItemType::Network,
                            label: Some(display.clone()),
                            flags: Vec::new(),
                        });
                    }
                }
                PatternKind::AddressPrefix => {
                    let end = m.start() + 42;
                    if word_start(text, m.start())
                        && text.len() >= end
                        && text.is_char_boundary(end)
                        && word_end(text, end)
                        && let Some(checked) = check_address(&text[m.start()..end])
                    {
                        let (value, flags) = if checked.checksum_ok {
                            (checked.checksummed(), Vec::new())
                        } else {
                            (text[m.start()..end].to_owned(), vec![ItemFlag::ChecksumMismatch])
                        };
                        out.push(ContextItem { value, item_type: ItemType::EthAddress, label: None, flags });
                        resume = end;
                        continue;
                    }
                    resume = skip_word(text, m.start());
                }
                PatternKind::Digit => {
                    let (item, end, glued) = self.amount_at(text, m.start());
                    if let Some(item) = item {
                        out.push(item);
                    }
                    glued_token_at = glued.unwrap_or(usize::MAX);
                    resume = end;
                }
            }
        }
        out
    }

    fn accept_symbol(&self, i: usize, written: &str) -> Option<&SymbolEntry> {
        let sym = &self.symbols[i];
        let exact = written == sym.symbol || written == sym.upper;
        let loose = sym.loose_case && {
            let mut chars = written.chars();
            let first_ok = chars.next().is_some();
            first_ok && chars.all(|c| !c.is_ascii_uppercase())
        };
        (exact || loose).then_some(sym)
    }

    /// Reads a number starting at the digit `at`. Returns the item (if it is an amount), where scanning resumes, and
    /// the start of a token glued to it.
    fn amount_at(&self, text: &str, at: usize) -> (Option<ContextItem>, usize, Option<usize>) {
        let bytes = text.as_bytes();
        // ".5": include a leading point that is not itself preceded by a digit.
        let mut start = at;
        if at > 0 && bytes[at - 1] == b'.' && !(at > 1 && bytes[at - 2].is_ascii_digit()) {
            start = at - 1;
        }
        let end = number_end(bytes, at);
        let joined = |i: Option<usize>, j: Option<usize>| {
            matches!(
                (i.map(|i| bytes[i]), j.map(|j| bytes.get(j).copied())),
                (Some(b'-' | b'/' | b':'), Some(Some(b'0'..=b'9')))
            )
        };
        let before_joined = start >= 2 && joined(Some(start - 1), Some(start - 2));
        let after_joined = end < bytes.len() && joined(Some(end), Some(end + 1));
        let after_dot_digit = end + 1 < bytes.len() && bytes[end] == b'.' && bytes[end + 1].is_ascii_digit();
        if !word_start(text, start) || before_joined || after_joined || after_dot_digit {
            return (None, skip_word(text, end), None);
        }
        let number = &text[start..end];
        let glued = end < bytes.len() && bytes[end].is_ascii_alphabetic();
        let (label, glued_at) = if glued {
            match self.token_at(text, end) {
                Some(sym) => (Some(sym.symbol.clone()), Some(end)),
                None => return (None, skip_word(text, end), None),
            }
        } else if word_end(text, end) {
            let gap = bytes[end..].iter().take(4).take_while(|b| **b == b' ' || **b == b'\t').count();
            (self.token_at(text, end + gap).filter(|_| gap > 0).map(|s| s.symbol.clone()), None)
        } else {
            return (None, skip_word(text, end), None);
        };
        let item = Decimal::parse("amount", number).ok().map(|d| ContextItem {
            value: d.canonical(),
            item_type: ItemType::Amount,
            label,
            flags: Vec::new(),
        });
        (item, end, glued_at)
    }

    /// The token symbol that starts exactly at `at` and ends at a word boundary, if any.
    fn token_at(&self, text: &str, at: usize) -> Option<&SymbolEntry> {
        if at >= text.len() {
            return None;
        }
        let input = Input::new(text).span(at..text.len()).anchored(Anchored::Yes);
        let m = self.automaton.find(input)?;
        match self.kinds[m.pattern().as_usize()] {
            PatternKind::Token(i) if word_end(text, m.end()) => self.accept_symbol(i, &text[m.start()..m.end()]),
            _ => None,
        }
    }
}

/// End of the number starting at digit `at`: `\d+(,\d{3})*(\.\d+)?`.
fn number_end(bytes: &[u8], at: usize) -> usize {
    let digits = |from: usize| bytes[from..].iter().take_while(|b| b.is_ascii_digit()).count();
    let mut end = at + digits(at);
    let lead = end - at;
    if lead <= 3 {
        while end + 3 < bytes.len() + 1 && bytes.get(end) == Some(&b',') && digits(end + 1) == 3 {
            end += 4;
        }
    }
    if bytes.get(end) == Some(&b'.') && bytes.get(end + 1).is_some_and(u8::is_ascii_digit) {
        end += 1 + digits(end + 1);
    }
    end
}

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

fn word_start(text: &str, at: usize) -> bool {
    text[..at].chars().next_back().is_none_or(|c| !is_word_char(c))
}

fn word_end(text: &str, at: usize) -> bool {
    text.get(at..).and_then(|rest| rest.chars().next()).is_none_or(|c| !is_word_char(c))
}

fn skip_word(text: &str, from: usize) -> usize {
    text[from..].char_indices().find(|(_, c)| !is_word_char(*c) && *c != '.').map_or(text.len(), |(i, _)| from + i)
}

/// Most items one session's bank keeps; later ones are dropped (the first mentions matter most).
pub const MAX_ITEMS: usize = 1000;

#[derive(Debug, Default)]
struct BankState {
    items: Vec<ContextItem>,
    seen: HashSet<(ItemType, String, Option<String>)>,
}

/// One session's context bank. Clones share state.
#[derive(Debug, Clone)]
pub struct ContextBank {
    scanner: Arc<ContextScanner>,
    state: Arc<RwLock<BankState>>,
    events: EventBus,
}

impl ContextBank {
    /// An empty bank using `scanner`, publishing on `events`.
    pub fn new(scanner: Arc<ContextScanner>, events: EventBus) -> Self {
        Self { scanner, state: Arc::default(), events }
    }

    /// Scans one user-authored message. Returns the items that were new; publishes `context_bank.update` when any
    /// were.
    pub fn scan_input(&self, user_text: &str) -> Vec<ContextItem> {
        let found = self.scanner.scan(user_text);
        let mut added = Vec::new();
        {
            let mut state = self.state.write();
            for item in found {
                if state.items.len() >= MAX_ITEMS {
                    break;
                }
                let key = (
                    item.item_type,
                    item.value.clone(),
                    item.label.clone().filter(|_| item.item_type == ItemType::Amount),
                );
                if state.seen.insert(key) {
                    state.items.push(item.clone());
                    added.push(item);
                }
            }
        }
        if !added.is_empty() && self.events.has_subscribers() {
            self.events
                .publish(names::CONTEXT_BANK_UPDATE, serde_json::json!({ "items": self.items(), "added": added }));
        }
        added
    }

    /// Every item, in order of first appearance.
    pub fn items(&self) -> Vec<ContextItem> {
        self.state.read().items.clone()
    }

    /// True when nothing has been extracted yet.
    pub fn is_empty(&self) -> bool {
        self.state.read().items.is_empty()
    }

    /// True when the user wrote `amount` (compared exactly as decimals), paired with `symbol` or with no token.
    pub fn has_amount(&self, amount: &str, symbol: &str) -> bool {
        let Ok(wanted) = Decimal::parse("amount", amount) else { return false };
        let wanted = wanted.canonical();
        self.state.read().items.iter().any(|i| {
            i.item_type == ItemType::Amount
                && i.value == wanted
                && i.label.as_deref().is_none_or(|l| l.eq_ignore_ascii_case(symbol))
        })
    }

    /// Forgets everything.
    pub fn clear(&self) {
        *self.state.write() = BankState::default();
        self.events.publish(names::CONTEXT_BANK_UPDATE, serde_json::json!({ "items": [], "added": [] }));
    }

    /// The agent-facing summary, or `None` when the bank is empty:
    ///
    /// ```text
    /// Addresses: 0x742d35Cc6634C0532925a3b844Bc9e7595f8FdF0
    /// Tokens: ETH (Ethereum), USDC (USD Coin)
    /// Networks: base (Base)
    /// Amounts: 0.001 ETH
    /// ```
    pub fn format_for_agent(&self) -> Option<String> {
        let state = self.state.read();
        if state.items.is_empty() {
            return None;
        }
        let render = |t: ItemType| -> Vec<String> {
            state
                .items
                .iter()
                .filter(|i| i.item_type == t)
                .map(|i| match (t, &i.label) {
                    (ItemType::EthAddress, _) if i.flags.contains(&ItemFlag::ChecksumMismatch) => {
                        format!("{} (checksum mismatch: do not use without asking the user)", i.value)
                    }
                    (ItemType::Amount, Some(l)) => format!("{} {l}", i.value),
                    (ItemType::TokenSymbol | ItemType::Network, Some(l)) => format!("{} ({l})", i.value),
                    _ => i.value.clone(),
                })
                .collect()
        };
        let mut out = String::new();
        for (title, t) in [
            ("Addresses", ItemType::EthAddress),
            ("Tokens", ItemType::TokenSymbol),
            ("Networks", ItemType::Network),
            ("Amounts", ItemType::Amount),
        ] {
            let parts = render(t);
            if !parts.is_empty() {
                let _ = writeln!(out, "{title}: {}", parts.join(", "));
            }
        }
        Some(out.trim_end().to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bank() -> ContextBank {
        let scanner = ContextScanner::new(&TokenTable::builtin(), &NetworkTable::builtin()).unwrap();
        ContextBank::new(Arc::new(scanner), EventBus::new("t"))
    }

    fn values(items: &[ContextItem]) -> Vec<(ItemType, &str, Option<&str>)> {
        items.iter().map(|i| (i.item_type, i.value.as_str(), i.label.as_deref())).collect()
    }

    #[test]
    fn the_seed_example() {
        let b = bank();
        let added = b.scan_input("swap 0.001 ETH for USDC");
        assert_eq!(
            values(&added),
            vec![
                (ItemType::Amount, "0.001", Some("ETH")),
                (ItemType::TokenSymbol, "ETH", Some("Ethereum")),
                (ItemType::TokenSymbol, "USDC", Some("USD Coin")),
            ]
        );
        assert_eq!(b.format_for_agent().unwrap(), "Tokens: ETH (Ethereum), USDC (USD Coin)\nAmounts: 0.001 ETH");
    }

    #[test]
    fn empty_bank_formats_to_nothing() {
        let b = bank();
        assert_eq!(b.format_for_agent(), None);
        b.scan_input("hello there, how are you?");
        assert_eq!(b.format_for_agent(), None);
    }

    #[test]
    fn addresses_are_checksummed_or_flagged() {
        let b = bank();
        let good = "0x742d35Cc6634c0532925A3b844Bc9e7595F8FDf0";
        // The seed document's example address: mixed case, wrong checksum.
        let bad = "0x742d35Cc6634C0532925a3b844Bc9e7595f8FdF0";
        b.scan_input(&format!("send to {} and ({good}), not {bad}.", good.to_lowercase()));
        let items = b.items();
        assert_eq!(items.len(), 2);
        assert_eq!(items[0].value, good);
        assert!(items[0].flags.is_empty());
        assert_eq!(items[1].value, bad);
        assert_eq!(items[1].flags, vec![ItemFlag::ChecksumMismatch]);
        assert!(b.format_for_agent().unwrap().contains("checksum mismatch"));
    }

    #[test]
    fn hashes_and_glued_hex_are_not_addresses() {
        let b = bank();
        let hash = format!("0x{}", "ab".repeat(32));
        b.scan_input(&format!("tx {hash} and x0x742d35Cc6634C0532925a3b844Bc9e7595f8FdF0"));
        assert!(b.items().iter().all(|i| i.item_type != ItemType::EthAddress), "{:?}", b.items());
    }

    #[test]
    fn symbols_match_whole_words_with_the_case_rule() {
        let b = bank();
        b.scan_input("one gas for the USDCoin; ETHEREUM; weth and usdc and Dai and cbeth and CBETH");
        let items = b.items();
        let got: Vec<&str> = items.iter().map(|i| i.value.as_str()).collect();
        // "weth"/"usdc"/"cbeth" (≥3 chars, not words) match loosely; "Dai" too; "USDCoin"/"ETHEREUM" are not words.
        assert_eq!(got, vec!["WETH", "USDC", "DAI", "cbETH"]);
    }

    #[test]
    fn amounts_below_one_separators_and_pairing() {
        let b = bank();
        b.scan_input("sell .5 WETH, then 1,000.25 usdc and 0.001ETH; buy 7 dogs on base");
        assert_eq!(
            values(&b.items()),
            vec![
                (ItemType::Amount, "0.5", Some("WETH")),
                (ItemType::TokenSymbol, "WETH", Some("Wrapped Ether")),
                (ItemType::Amount, "1000.25", Some("USDC")),
                (ItemType::TokenSymbol, "USDC", Some("USD Coin")),
                (ItemType::Amount, "0.001", Some("ETH")),
                (ItemType::TokenSymbol, "ETH", Some("Ethereum")),
                (ItemType::Amount, "7", None),
                (ItemType::Network, "base", Some("Base")),
            ]
        );
        assert!(b.has_amount("0.50", "weth"));
        assert!(b.has_amount("7", "USDC"));
        assert!(!b.has_amount("0.5", "USDC"));
    }

    #[test]
    fn dates_times_versions_and_words_with_digits_are_not_amounts() {
        let b = bank();
        b.scan_input("on 2024-05-01 at 10:30, v1.2 and 1.2.3, abc123, 20m, 3x");
        assert!(b.items().is_empty(), "{:?}", b.items());
    }

    #[test]
    fn dedup_keeps_first_appearance() {
        let b = bank();
        b.scan_input("USDC USDC usdc 5 USDC");
        b.scan_input("5 USDC and USDC");
        assert_eq!(
            values(&b.items()),
            vec![(ItemType::TokenSymbol, "USDC", Some("USD Coin")), (ItemType::Amount, "5", Some("USDC"))]
        );
    }

    #[test]
    fn unicode_neighbours_do_not_panic_or_match() {
        let b = bank();
        b.scan_input("éUSDC ÜETH— 5€ 0x💥 ETH—USDC «0.5 ETH»");
        assert_eq!(
            values(&b.items()),
            vec![
                (ItemType::Amount, "5", None),
                (ItemType::TokenSymbol, "ETH", Some("Ethereum")),
                (ItemType::TokenSymbol, "USDC", Some("USD Coin")),
                (ItemType::Amount, "0.5", Some("ETH")),
            ]
        );
    }

    #[tokio::test]
    async fn changes_are_published() {
        let b = bank();
        let mut rx = b.events.subscribe();
        b.scan_input("nothing here");
        b.scan_input("USDC");
        let e = rx.recv().await.unwrap();
        assert_eq!(e.event, "context_bank.update");
        assert_eq!(e.data["items"][0]["value"], "USDC");
    }
}

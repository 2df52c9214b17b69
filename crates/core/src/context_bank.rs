//! The context bank: addresses, token symbols, networks and amounts extracted from the user's own words by code.
//!
//! It reads only user-authored text (invariant 11) — callers pass the user's message, never tool output or model
//! text. Scanning is one pass of a word scanner over the text, 64 bytes at a time: branch-free byte classes mark the
//! word starts, and a word that may be a known one is looked up — ASCII case folded, in O(1) — in a table built once
//! from every token symbol, network name and alias. A word that starts with a digit is read as a number or a `0x`
//! address, and a multi-word alias ("base mainnet") is tried from its first word, longest name first.
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
//!   or `:` to another number — dates, times, ranges, versions — is not an amount). Every amount is kept, but only
//!   an amount **bound** to a token authorizes anything ([`ContextBank::has_amount`], invariant 11).
//!
//! # Binding an amount to its token
//! An amount binds to the token symbol it qualifies, in the same message, only when the two are adjacent words:
//! - **after**: the symbol directly follows the number, glued (`0.5ETH`) or after one to three spaces or tabs
//!   (`0.5 ETH`, `100 usdc`);
//! - **before**: the symbol directly precedes the number after one to three spaces or tabs (`USDC 100`), and no
//!   number in front of it is already bound to it (in `5 ETH 100`, `ETH` qualifies `5`; `100` stays bare).
//!
//! Nothing else may sit between them: no other word, no punctuation (`100, USDC`, `USDC: 100`, `100-USDC` bind
//! nothing), no line break. "Symbol" means a token item by the case rules above (`usdc 5` binds, `gas 5` and
//! `one 5` do not), and a multi-word network name is no symbol (`1 OP mainnet`). A symbol qualifies at most one
//! number: a symbol right after a number is claimed by it. When a number has a symbol right after it *and* an
//! unclaimed symbol right before it (`USDC 100 ETH`), it is ambiguous and binds neither. So "swap 0.5 ETH for 100
//! USDC" binds `0.5 → ETH` and `100 → USDC`, while "send it to my 2 friends" keeps `2` as a bare amount.
//! Dollar values (`$20 of USDC`, `20 dollars of USDC`) are **not** bound: `$20 of ETH` is a value in dollars, not
//! an amount of the token, so `20` stays bare there; the user writes `20 USDC`.
//!
//! # The items' JSON shape
//! Each item is `{"value", "item_type", "label"?, "flags"?}` with `item_type` one of `eth_address`,
//! `token_symbol`, `network`, `amount`. For an amount, `value` is the canonical decimal and `label` is the symbol it
//! is bound to (as written in the token table); a bare amount — shown for reference, authorizing nothing — has no
//! `label`. The same number can appear twice, once bare and once bound (`2` and `2 USDC`).
//!
//! Items are deduplicated and kept in order of first appearance.

use crate::address::check_address;
use crate::amount::{Decimal, MAX_AMOUNT_CHARS};
use crate::config::{NetworkTable, TokenTable};
use crate::event::{EventBus, names};
use indexmap::IndexMap;
use parking_lot::RwLock;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ItemFlag {
    /// A mixed-case address whose EIP-55 checksum is wrong.
    ChecksumMismatch,
}

/// One extracted item.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
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

/// What a word of the text is on its own.
#[derive(Debug, Clone, Copy)]
enum WordKind {
    /// A token symbol (index into `ContextScanner::symbols`).
    Token(usize),
    /// A network name or one-word alias (index into `ContextScanner::networks`).
    Network(usize),
}

/// A network name or alias of several words ("base mainnet", "base-mainnet"), filed under its first word.
#[derive(Debug)]
struct Phrase {
    /// The whole name, ASCII lower case.
    folded: Box<[u8]>,
    network: usize,
}

/// What a word of the text can begin.
#[derive(Debug, Default)]
struct WordEntry {
    /// The word by itself: a token symbol, else a network name. Token symbols are filed first and the first entry
    /// wins, so a network name spelled like a symbol is the symbol.
    kind: Option<WordKind>,
    /// Multi-word network names whose first word this is, longest first.
    phrases: Vec<Phrase>,
}

/// A token symbol as the scanner checks and reports it.
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
    words: WordTable,
    /// Network names and aliases that begin with a character that is no word character (`(base)`), longest first.
    punctuated: Vec<Phrase>,
    /// The first bytes of `punctuated`.
    punctuated_first: Box<[bool; 256]>,
    symbols: Vec<SymbolEntry>,
    networks: Vec<(String, String)>,
}

/// Why the context-bank scanner could not be built. Building the word table cannot fail today, so no scanner build
/// returns this; the type keeps [`ContextScanner::new`] able to refuse a table later without an API break.
#[derive(Debug, thiserror::Error)]
#[error("cannot build the context-bank scanner: {0}")]
pub struct ScannerBuildError(pub String);

impl ContextScanner {
    /// Builds the scanner for every symbol of `tokens` (all networks) and every name and alias of `networks`.
    ///
    /// Symbols are unique ignoring case (the first one seen wins); a network name or alias spelled like a symbol
    /// is the symbol.
    pub fn new(tokens: &TokenTable, networks: &NetworkTable) -> Result<Self, ScannerBuildError> {
        let mut words: IndexMap<Vec<u8>, WordEntry> = IndexMap::new();
        let mut symbols: Vec<SymbolEntry> = Vec::new();
        for token in tokens.iter() {
            let lower = token.symbol.to_ascii_lowercase();
            let entry = words.entry(lower.clone().into_bytes()).or_default();
            if entry.kind.is_some() {
                continue;
            }
            entry.kind = Some(WordKind::Token(symbols.len()));
            let loose_case = !token.word_like && token.symbol.len() >= 3 && !ORDINARY_WORDS.contains(&lower.as_str());
            symbols.push(SymbolEntry {
                symbol: token.symbol.clone(),
                upper: token.symbol.to_ascii_uppercase(),
                name: token.name.clone(),
                loose_case,
            });
        }
        let mut nets = Vec::new();
        let mut punctuated: Vec<Phrase> = Vec::new();
        for net in networks.iter() {
            let index = nets.len();
            for name in std::iter::once(&net.name).chain(net.aliases.iter()) {
                let folded = name.to_ascii_lowercase().into_bytes();
                if folded.is_empty() {
                    continue;
                }
                // The length of the name's first word: all of it, part of it, or nothing (`(base)`).
                let first = word_end_from(name, 0);
                if first == 0 {
                    if !punctuated.iter().any(|p| *p.folded == *folded) {
                        punctuated.push(Phrase { folded: folded.into(), network: index });
                    }
                } else if first == folded.len() {
                    let entry = words.entry(folded).or_default();
                    entry.kind.get_or_insert(WordKind::Network(index));
                } else {
                    let entry = words.entry(folded[..first].to_vec()).or_default();
                    if !entry.phrases.iter().any(|p| *p.folded == *folded) {
                        entry.phrases.push(Phrase { folded: folded.into(), network: index });
                    }
                }
            }
            nets.push((net.name.clone(), net.display_name.clone()));
        }
        for entry in words.values_mut() {
            // Stable, so among names of one length the first configured wins.
            entry.phrases.sort_by_key(|p| std::cmp::Reverse(p.folded.len()));
        }
        punctuated.sort_by_key(|p| std::cmp::Reverse(p.folded.len()));
        let mut punctuated_first = Box::new([false; 256]);
        for p in &punctuated {
            if let Some(&b) = p.folded.first() {
                punctuated_first[usize::from(b)] = true; // not a letter: no other case
            }
        }
        Ok(Self { words: WordTable::build(words), punctuated, punctuated_first, symbols, networks: nets })
    }

    /// Extracts items from `text` in order of appearance (not deduplicated).
    pub fn scan(&self, text: &str) -> Vec<ContextItem> {
        // One pass, 64 bytes at a time: `classify` marks the word starts worth a look and the digits glued to a word
        // character before them; `WordTable::candidates` keeps the starts that may be a word of the table, a number
        // or an address, and `word_at` reads those. A glued digit (`abc123`, `v1.2`) begins no amount, and neither
        // does anything dots join to its number. Network names that begin with punctuation, if the table has any,
        // are looked for at their first byte.
        let bytes = text.as_bytes();
        let mut found = Found { items: Vec::new(), last_address: None, last_token: None, claimed: usize::MAX };
        // Nothing before `resume` is looked at again: it is inside an item, a rejected number or a skipped word.
        let mut resume = 0usize;
        let mut block = 0usize;
        let mut spare: Window = [0; 1 + BLOCK + 8];
        while block < bytes.len() {
            let window = window(bytes, block, &mut spare);
            let marks = self.words.classify(text, block, window);
            let candidates = self.words.candidates(text, block, window, marks.starts);
            let punctuated = if self.punctuated.is_empty() { 0 } else { self.punctuated_starts(window) };
            let mut todo = (candidates | marks.glued_digits | punctuated) & bits_from(resume.saturating_sub(block));
            while todo != 0 {
                let bit = todo.trailing_zeros();
                let at = block + bit as usize;
                let marked = |mask: u64| mask >> bit & 1 == 1;
                let name_end = if marked(punctuated) { self.punctuated_at(text, at, &mut found.items) } else { None };
                resume = if let Some(end) = name_end {
                    end
                } else if marked(marks.glued_digits) {
                    // A number glued to letters is no amount, and neither is what dots join to it (`v1.2.3`).
                    skip_word(text, number_end(bytes, at))
                } else if marked(candidates) {
                    self.word_at(text, at, &mut found)
                } else {
                    at
                };
                todo &= bits_from(resume.saturating_sub(block)) & !(1 << bit);
            }
            block += BLOCK;
        }
        found.items
    }

    /// The bytes of the block (bit `i`: byte `1 + i` of `window`) that may begin a punctuated network name.
    fn punctuated_starts(&self, window: &Window) -> u64 {
        window[1..=BLOCK]
            .iter()
            .enumerate()
            .fold(0, |m, (i, &b)| m | u64::from(self.punctuated_first[usize::from(b)]) << i)
    }

    /// A punctuated network name written at `at`: pushes the network when it stands on its own (no word character
    /// either side) and returns its end, where scanning resumes either way. `None` when none is written there.
    fn punctuated_at(&self, text: &str, at: usize, out: &mut Vec<ContextItem>) -> Option<usize> {
        let p = self.punctuated.iter().find(|p| {
            text.as_bytes().get(at..at + p.folded.len()).is_some_and(|w| w.eq_ignore_ascii_case(&p.folded))
        })?;
        let end = at + p.folded.len();
        if word_start(text, at) && word_end(text, end) {
            out.extend(self.network_item(p.network));
        }
        Some(end)
    }

    /// Handles the word that starts at `start`; returns where scanning resumes.
    #[inline]
    fn word_at<'t>(&self, text: &'t str, start: usize, found: &mut Found<'t>) -> usize {
        let (end, entry) = self.words.word(text, start);
        if let Some(entry) = entry
            && let Some(resume) = self.known_word(text, start, end, entry, found)
        {
            return resume;
        }
        let bytes = text.as_bytes();
        if !bytes.get(start).is_some_and(u8::is_ascii_digit) {
            // An ordinary word. Digits inside it are marked on their own, so resume right after its start.
            return start;
        }
        if matches!(bytes.get(start..start + 2), Some([b'0', b'x' | b'X'])) {
            return self.address_at(text, start, end, found);
        }
        self.amount_at(text, start, found)
    }

    /// The item a word of the table begins: a multi-word network name, else the word itself. Returns where scanning
    /// resumes, or `None` when the word only begins multi-word names and none of them is written here.
    fn known_word(
        &self,
        text: &str,
        start: usize,
        end: usize,
        entry: &WordEntry,
        found: &mut Found<'_>,
    ) -> Option<usize> {
        if let Some((network, phrase_end)) = phrase_at(text, start, entry) {
            found.items.extend(network.and_then(|i| self.network_item(i)));
            return Some(phrase_end);
        }
        match entry.kind? {
            WordKind::Token(i) => {
                if let Some(sym) = text.get(start..end).and_then(|w| self.accept_symbol(i, w)) {
                    found.items.push(token_item(sym));
                    // A symbol right after a number was claimed by it (bound, or ambiguous).
                    found.last_token = Some(LastToken { end, symbol: i, free: start != found.claimed });
                }
            }
            WordKind::Network(i) => found.items.extend(self.network_item(i)),
        }
        Some(end)
    }

    /// `0x` + 40 hex digits making up the whole word `start..end`. Anything else starting with `0x` is skipped with
    /// the words joined to it by dots.
    fn address_at<'t>(&self, text: &'t str, start: usize, end: usize, found: &mut Found<'t>) -> usize {
        let Some(written) = text.get(start..end).filter(|w| w.len() == 42) else { return skip_word(text, start) };
        if let Some((last, item)) = &found.last_address
            && *last == written
        {
            found.items.push(item.clone());
            return end;
        }
        let Some(checked) = check_address(written) else { return skip_word(text, start) };
        let (value, flags) = if checked.checksum_ok {
            (checked.checksummed(), Vec::new())
        } else {
            (written.to_owned(), vec![ItemFlag::ChecksumMismatch])
        };
        let item = ContextItem { value, item_type: ItemType::EthAddress, label: None, flags };
        found.last_address = Some((written, item.clone()));
        found.items.push(item);
        end
    }

    fn accept_symbol(&self, i: usize, written: &str) -> Option<&SymbolEntry> {
        let sym = self.symbols.get(i)?;
        let exact = written == sym.symbol || written == sym.upper;
        let loose = sym.loose_case && {
            let mut chars = written.chars();
            let first_ok = chars.next().is_some();
            first_ok && chars.all(|c| !c.is_ascii_uppercase())
        };
        (exact || loose).then_some(sym)
    }

    fn network_item(&self, i: usize) -> Option<ContextItem> {
        let (name, display) = self.networks.get(i)?;
        Some(ContextItem {
            value: name.clone(),
            item_type: ItemType::Network,
            label: Some(display.clone()),
            flags: Vec::new(),
        })
    }

    /// Reads the number starting at the digit `at`, a word start. Pushes the amount, bound to an adjacent token if
    /// any (and a token glued to it), and returns where scanning resumes. See "Binding an amount to its token".
    fn amount_at(&self, text: &str, at: usize, found: &mut Found<'_>) -> usize {
        let bytes = text.as_bytes();
        // ".5": a leading point belongs to the number. A point joined to a word before it makes it no amount
        // (`x.5`, and `0x…0.5` after an address as well as `0x…f.5`): `word_start` below sees that word.
        let mut start = at;
        if at > 0 && bytes[at - 1] == b'.' {
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
            return skip_word(text, end);
        }
        let number = &text[start..end];
        // The token right after the number: glued ("0.001ETH", an item of its own read here; other letters make the
        // number part of a word) or after a short gap of spaces and tabs (read later as its own word, claimed now).
        let (after, resume) = if bytes.get(end).is_some_and(u8::is_ascii_alphabetic) {
            let Some((symbol, token_end)) = self.token_at(text, end) else { return skip_word(text, end) };
            (Some(symbol), token_end)
        } else if !word_end(text, end) {
            return skip_word(text, end);
        } else {
            let gap = blank_run(bytes.get(end..).unwrap_or_default());
            let after = if gap > 0 { self.token_at(text, end + gap).map(|(symbol, _)| symbol) } else { None };
            if after.is_some() {
                found.claimed = end + gap;
            }
            (after, end)
        };
        // The unclaimed token right before it, with only a short gap of spaces and tabs between.
        let before = found.last_token.as_mut().filter(|t| {
            t.free && t.end < start && blank_run(bytes.get(t.end..start).unwrap_or_default()) == start - t.end
        });
        let bound = match (after, before) {
            (Some(symbol), None) => Some(symbol),
            (None, Some(t)) => {
                t.free = false;
                Some(t.symbol)
            }
            // Nothing adjacent, or a token on either side: ambiguous, so bound to neither.
            _ => None,
        };
        let label = bound.and_then(|i| self.symbols.get(i)).map(|sym| sym.symbol.clone());
        found.items.extend(amount_item(number, label));
        if resume > end
            && let Some(symbol) = after
            && let Some(sym) = self.symbols.get(symbol)
        {
            found.items.push(token_item(sym));
            found.last_token = Some(LastToken { end: resume, symbol, free: false });
        }
        resume
    }

    /// The token symbol written as the whole word starting at `at` (its index in `symbols`), and where that word
    /// ends. A multi-word network name starting there wins over the symbol.
    fn token_at(&self, text: &str, at: usize) -> Option<(usize, usize)> {
        let bytes = text.as_bytes();
        if !bytes.get(at).is_some_and(u8::is_ascii_alphanumeric) || !self.words.may_begin(bytes, at) {
            return None;
        }
        let (end, entry) = self.words.word(text, at);
        let entry = entry?;
        if phrase_at(text, at, entry).is_some() {
            return None;
        }
        match entry.kind? {
            WordKind::Token(i) => self.accept_symbol(i, text.get(at..end)?).map(|_| (i, end)),
            WordKind::Network(_) => None,
        }
    }
}

/// Most spaces and tabs that may separate an amount from the token it is bound to.
const MAX_BINDING_GAP: usize = 3;

/// How many spaces and tabs begin `bytes`, up to [`MAX_BINDING_GAP`]; 0 when there are more (no binding then).
fn blank_run(bytes: &[u8]) -> usize {
    let n = bytes.iter().take(MAX_BINDING_GAP + 1).take_while(|b| **b == b' ' || **b == b'\t').count();
    if n > MAX_BINDING_GAP { 0 } else { n }
}

/// The items of one scan so far.
struct Found<'t> {
    items: Vec<ContextItem>,
    /// The last address read, as written, and its item: an address repeated in a message is checksummed once.
    last_address: Option<(&'t str, ContextItem)>,
    /// The last token symbol read: a number right after it may be bound to it.
    last_token: Option<LastToken>,
    /// Where the token symbol right after the last amount starts (`usize::MAX`: none): that amount claimed it.
    claimed: usize,
}

/// A token symbol item the scanner has read.
#[derive(Debug, Clone, Copy)]
struct LastToken {
    /// Where the symbol ends.
    end: usize,
    /// Its index in `ContextScanner::symbols`.
    symbol: usize,
    /// No amount is bound to it (or claimed it) yet.
    free: bool,
}

fn token_item(sym: &SymbolEntry) -> ContextItem {
    ContextItem {
        value: sym.symbol.clone(),
        item_type: ItemType::TokenSymbol,
        label: Some(sym.name.clone()),
        flags: Vec::new(),
    }
}

fn amount_item(number: &str, label: Option<String>) -> Option<ContextItem> {
    let value = canonical_amount(number)?;
    Some(ContextItem { value, item_type: ItemType::Amount, label, flags: Vec::new() })
}

/// `Decimal::parse(number)?.canonical()` for a number read by [`number_end`] (digits, `,` thousands groups, an
/// optional fraction, or `.5`), without its intermediate strings.
fn canonical_amount(number: &str) -> Option<String> {
    let (int, frac) = number.split_once('.').unwrap_or((number, ""));
    // Decimal's rules: at most 100 characters as written and in canonical form, one point (`.5.0` is no amount).
    if number.len() > MAX_AMOUNT_CHARS || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let frac = frac.trim_end_matches('0');
    let mut out = String::with_capacity(number.len() + 1);
    out.extend(int.chars().filter(|c| *c != ',').skip_while(|c| *c == '0'));
    if out.is_empty() {
        out.push('0');
    }
    if !frac.is_empty() {
        out.push('.');
        out.push_str(frac);
    }
    (out.len() <= MAX_AMOUNT_CHARS).then_some(out)
}

/// The longest multi-word network name of `entry` written at `start`, and where it ends. The name wins over the
/// shorter words it begins with even when it runs into a word character (`base mainnet_x`); it is then no item
/// (`None`), and neither are the words it covers.
fn phrase_at(text: &str, start: usize, entry: &WordEntry) -> Option<(Option<usize>, usize)> {
    let bytes = text.as_bytes();
    entry.phrases.iter().find_map(|p| {
        let end = start + p.folded.len();
        let written = bytes.get(start..end)?;
        written.eq_ignore_ascii_case(&p.folded).then(|| (word_end(text, end).then_some(p.network), end))
    })
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

/// No word character ends right before `at` (a character boundary).
fn word_start(text: &str, at: usize) -> bool {
    match at.checked_sub(1).and_then(|i| text.as_bytes().get(i)) {
        None => true,
        Some(b) if b.is_ascii() => !is_word_byte(*b),
        Some(_) => text[..at].chars().next_back().is_none_or(|c| !is_word_char(c)),
    }
}

/// No word character starts at `at`.
fn word_end(text: &str, at: usize) -> bool {
    match text.as_bytes().get(at) {
        None => true,
        Some(b) if b.is_ascii() => !is_word_byte(*b),
        Some(_) => text.get(at..).and_then(|rest| rest.chars().next()).is_none_or(|c| !is_word_char(c)),
    }
}

/// End of the word that starts at `from` (a character boundary).
fn word_end_from(text: &str, from: usize) -> usize {
    let rest = text.get(from..).unwrap_or_default();
    let ascii = rest.bytes().take_while(|b| b.is_ascii_alphanumeric() || *b == b'_').count();
    match rest.as_bytes().get(ascii) {
        Some(b) if !b.is_ascii() => {
            let rest = rest.get(ascii..).unwrap_or_default();
            rest.char_indices().find(|(_, c)| !is_word_char(*c)).map_or(text.len(), |(i, _)| from + ascii + i)
        }
        _ => from + ascii,
    }
}

/// Skips the word characters and dots from `from`: the rest of a rejected number or `0x` word and whatever is
/// joined to it by dots (`1.2.3`, `v1.2.USDC`).
fn skip_word(text: &str, from: usize) -> usize {
    text[from..].char_indices().find(|(_, c)| !is_word_char(*c) && *c != '.').map_or(text.len(), |(i, _)| from + i)
}

// ---------------------------------------------------------------------------------------------------------------
// Word starts, 64 bytes at a time.
//
// The text is read in blocks of 64 bytes. For an ASCII block, one branch-free loop over its bytes, which the compiler
// turns into vector compares, marks each byte that starts a word worth a look: a word byte after a byte that is not,
// whose first byte is a digit or one of the few first bytes of the table's words ([`WordTable::leads`]). The marks
// are gathered into one bit per byte, eight bytes per multiplication. A marked start must still pass the table's
// first-two-bytes filter before it is looked up, so an ordinary word costs a few vector operations and nothing else.
// A block holding a non-ASCII byte, or following one, is classified per character instead, so that letters such as
// `é` count as word characters and `—` or `€` do not; there every word start is worth a look.
// ---------------------------------------------------------------------------------------------------------------

/// Bytes per block: one bit of a `u64` each.
const BLOCK: usize = 64;

/// A block's bytes with the byte before it and the 8 after it; bytes outside the text are 0 (not word bytes).
type Window = [u8; 1 + BLOCK + 8];

/// What one block holds: bit `i` describes byte `block + i`.
#[derive(Debug, Clone, Copy)]
struct BlockMarks {
    /// Word starts worth a look.
    starts: u64,
    /// Digits glued to the word character before them (`abc123`, `v1`).
    glued_digits: u64,
}

/// The window of the block at `block`: borrowed from the text, or for the first and last blocks copied into `spare`.
#[inline]
fn window<'a>(bytes: &'a [u8], block: usize, spare: &'a mut Window) -> &'a Window {
    if let Some(from) = block.checked_sub(1)
        && let Some(window) = bytes.get(from..).and_then(<[u8]>::first_chunk)
    {
        return window;
    }
    *spare = [0; 1 + BLOCK + 8];
    let (from, to) = if block == 0 { (0, 1) } else { (block - 1, 0) };
    let rest = bytes.get(from..).unwrap_or_default();
    let n = rest.len().min(spare.len() - to);
    spare[to..to + n].copy_from_slice(&rest[..n]);
    spare
}

/// Marks the block at `block` (a multiple of 64) from its window. `leads` are the first bytes (`| 0x20`) worth a
/// look besides digits; with `N == 0` every word start is. With `unicode_starts`, a block holding non-ASCII bytes is
/// read per character and all its word starts are marked (the table has words beginning with non-ASCII letters).
#[inline]
fn classify<const N: usize>(
    text: &str,
    block: usize,
    window: &Window,
    leads: &[u8; N],
    unicode_starts: bool,
) -> BlockMarks {
    let (prevs, _) = window.split_first_chunk::<BLOCK>().unwrap_or((&[0; BLOCK], &[]));
    let bytes = window[1..].first_chunk::<BLOCK>().unwrap_or(&[0; BLOCK]);
    // Bit 0: a word start worth a look; bit 1: a glued digit; bit 2: the same after a non-ASCII byte, which counts
    // as a word byte here and is settled below. No branches, so the loop is vectorised.
    let mut marks = [0u8; BLOCK];
    let (mut any, mut digits) = (0u8, 0u8);
    for ((mark, &b), &prev) in marks.iter_mut().zip(bytes).zip(prevs) {
        let digit = is_digit(b);
        let after_non_ascii = prev >= 0x80;
        let after_word = is_word_byte(prev) | after_non_ascii;
        let lead = N == 0 || leads.iter().fold(digit, |hit, &l| hit | (b | 0x20 == l));
        let word = is_word_byte(b);
        *mark = u8::from(word & !after_word & lead)
            | u8::from(digit & after_word) << 1
            | u8::from(word & lead & after_non_ascii) << 2;
        any |= b | prev;
        digits |= u8::from(digit);
    }
    if any >= 0x80 && unicode_starts {
        return classify_unicode(text, block);
    }
    let gather = |shift: u32| {
        let (lanes, _) = marks.as_chunks::<8>();
        lanes
            .iter()
            .enumerate()
            .fold(0u64, |m, (k, lane)| m | gather_low_bits(u64::from_le_bytes(*lane) >> shift & LOW_BITS) << (8 * k))
    };
    let mut out = BlockMarks { starts: gather(0), glued_digits: 0 };
    // Most blocks of prose hold no digit, and most no non-ASCII byte.
    if digits != 0 {
        out.glued_digits = gather(1);
    }
    if any >= 0x80 {
        // An ASCII letter or digit right after a non-ASCII character: a word start unless that character is a
        // letter or digit (`—USDC`, `€5`, but not `éUSDC`, `す0`).
        let mut todo = gather(2);
        while todo != 0 {
            let bit = todo.trailing_zeros();
            todo &= todo - 1;
            if word_start(text, block + bit as usize) {
                out.starts |= 1 << bit;
                out.glued_digits &= !(1 << bit);
            }
        }
    }
    out
}

#[inline]
fn is_digit(b: u8) -> bool {
    b.wrapping_sub(b'0') < 10
}

/// An ASCII letter, digit or `_` (written without branches).
#[inline]
fn is_word_byte(b: u8) -> bool {
    is_digit(b) | ((b | 0x20).wrapping_sub(b'a') < 26) | (b == b'_')
}

/// The bits from `n` up (none when `n >= 64`).
#[inline]
fn bits_from(n: usize) -> u64 {
    u64::MAX.checked_shl(u32::try_from(n).unwrap_or(u32::MAX)).unwrap_or(0)
}

/// The low bit of every byte.
const LOW_BITS: u64 = 0x0101_0101_0101_0101;

/// Gathers bit 0 of each byte of `v` (all other bits clear) into the low byte: byte `i` → bit `i`. The multiplier
/// moves byte `i`'s bit to bit `56 + i`; no two partial products meet, so nothing carries.
#[inline]
fn gather_low_bits(v: u64) -> u64 {
    v.wrapping_mul(0x0102_0408_1020_4080) >> 56
}

/// [`classify`] for a block holding or following non-ASCII bytes when the table has words beginning with non-ASCII
/// letters: one character at a time, every word start marked. The block may begin or end inside a character.
#[cold]
fn classify_unicode(text: &str, block: usize) -> BlockMarks {
    let end = (block + BLOCK).min(text.len());
    let mut from = block;
    while !text.is_char_boundary(from) {
        from -= 1;
    }
    let mut after_word = !word_start(text, from);
    let mut marks = BlockMarks { starts: 0, glued_digits: 0 };
    for (i, c) in text.get(from..).unwrap_or_default().char_indices() {
        let at = from + i;
        if at >= end {
            break;
        }
        let word = is_word_char(c);
        if at >= block {
            if word && !after_word {
                marks.starts |= 1 << (at - block);
            } else if c.is_ascii_digit() {
                marks.glued_digits |= 1 << (at - block);
            }
        }
        after_word = word;
    }
    marks
}

// ---------------------------------------------------------------------------------------------------------------
// The word table.
// ---------------------------------------------------------------------------------------------------------------

/// Every word the scanner knows, ASCII case folded. A word of fewer than 16 ASCII bytes is read from one 16-byte load
/// and packed into a `u128` ([`ascii_word`]), then found by hashing: a bit filter small enough for the L1 cache
/// turns away almost every ordinary word, and an open-addressing table confirms the rest. Longer words and words with
/// non-ASCII letters go through a `HashMap`.
#[derive(Debug)]
struct WordTable {
    /// The distinct first bytes (`| 0x20`) of the table's ASCII words other than digits, repeated to fill the first
    /// `lead_width` slots (1, 2, 4 or 8); a `lead_width` of 0 (more than 8 of them) marks every word start.
    leads: [u8; 8],
    lead_width: usize,
    /// Some word of the table begins with a non-ASCII character.
    unicode_starts: bool,
    /// One bit per pair of first bytes (each `| 0x20`) that a word of the table, a number or a non-ASCII word may
    /// begin with; a clear bit lets the scanner pass over an ordinary word after two loads.
    first_two: Box<[u64; 1024]>,
    entries: Vec<WordEntry>,
    /// One bit per value of the top `filter_bits` bits of [`hash`]; set for every packed word of the table.
    filter: Vec<u64>,
    filter_bits: u32,
    /// `(packed word, entry index + 1)` by the next `slot_bits` bits of the hash, linear probing; 0 means empty.
    slots: Vec<(u128, u32)>,
    slot_bits: u32,
    /// Words that do not pack, ASCII lower case.
    long: HashMap<Box<[u8]>, usize>,
}

/// Packed words are at most this many bytes.
const PACKED: usize = 16;

/// Every byte has `0x20` set after folding: ASCII letters become lower case; digits and `_` stay distinct.
const FOLD: u128 = 0x2020_2020_2020_2020_2020_2020_2020_2020;

impl WordTable {
    fn build(words: IndexMap<Vec<u8>, WordEntry>) -> Self {
        let mut first_two = Box::new([0u64; 1024]);
        let mut allow = |first: u8, second: Option<u8>| {
            for b in second.map_or(0..=255, |b| b..=b) {
                let pair = first_pair(first, b);
                first_two[pair / 64] |= 1 << (pair % 64);
            }
        };
        // Numbers and `0x` addresses begin with a digit; words with non-ASCII letters are looked up by their own
        // path (a non-ASCII first byte can be a letter or not: `é`, `—`).
        for first in (b'0'..=b'9').chain(0x80..=0xff) {
            allow(first, None);
        }
        let mut entries = Vec::with_capacity(words.len());
        let mut packed = Vec::new();
        let mut long = HashMap::new();
        let mut firsts = Vec::new();
        for (i, (word, entry)) in words.into_iter().enumerate() {
            if let Some(&first) = word.first() {
                // A one-letter word is followed by any byte that is not a word byte.
                allow(first, word.get(1).copied());
                firsts.push(first);
            }
            if word.len() <= PACKED && word.is_ascii() {
                packed.push((pack(&word), i));
            } else {
                long.insert(word.into_boxed_slice(), i);
            }
            entries.push(entry);
        }
        // ~3% false positives in the filter; the slot table is at most half full.
        let filter_bits = (packed.len() * 32).next_power_of_two().trailing_zeros().clamp(12, 24);
        let slot_bits = (packed.len() * 2).next_power_of_two().trailing_zeros().clamp(4, 32);
        let mut filter = vec![0u64; 1 << (filter_bits - 6)];
        let mut slots = vec![(0u128, 0u32); 1 << slot_bits];
        let slot_mask = slots.len() - 1;
        for (key, i) in packed {
            let h = hash(key);
            let bit = (h >> (64 - filter_bits)) as usize;
            filter[bit / 64] |= 1 << (bit % 64);
            let mut s = ((h << filter_bits) >> (64 - slot_bits)) as usize;
            while slots[s].1 != 0 {
                s = (s + 1) & slot_mask;
            }
            slots[s] = (key, u32::try_from(i + 1).unwrap_or(u32::MAX));
        }
        let unicode_starts = firsts.iter().any(|b| !b.is_ascii());
        let (leads, lead_width) = lead_bytes(firsts);
        Self { leads, lead_width, unicode_starts, first_two, entries, filter, filter_bits, slots, slot_bits, long }
    }

    /// [`classify`] with this table's lead bytes.
    #[inline]
    fn classify(&self, text: &str, block: usize, window: &Window) -> BlockMarks {
        let (l, u) = (&self.leads, self.unicode_starts);
        match self.lead_width {
            1 => classify(text, block, window, &[l[0]], u),
            2 => classify(text, block, window, &[l[0], l[1]], u),
            4 => classify(text, block, window, &[l[0], l[1], l[2], l[3]], u),
            8 => classify(text, block, window, l, u),
            _ => classify(text, block, window, &[], u),
        }
    }

    /// The marked word starts of a block (bit `i`: `block + i`, byte `1 + i` of `window`) that may be a word of the
    /// table, a number or a word with non-ASCII letters: almost no ordinary word passes. Without branches per word:
    /// when the classifier marked every word start, the first two bytes are checked first; then the whole word's
    /// hash is checked against the filter.
    #[inline]
    fn candidates(&self, text: &str, block: usize, window: &Window, starts: u64) -> u64 {
        let mut todo = if self.lead_width == 0 { self.first_two_filter(window, starts) } else { starts };
        let bytes = text.as_bytes();
        let mut out = 0u64;
        while todo != 0 {
            let bit = todo.trailing_zeros();
            todo &= todo - 1;
            let word = ascii_word(load_16(bytes, block + bit as usize));
            // Numbers and addresses pass; so do words that only the slow path can read: 16 ASCII bytes or more, or
            // running into non-ASCII letters when the table has such words.
            let number = (word.key as u8).is_ascii_digit();
            let unsure = !word.complete && (word.len == PACKED || !self.long.is_empty());
            out |= u64::from(number || unsure || self.filter_has(hash(word.key))) << bit;
        }
        out
    }

    /// The starts among `starts` whose first two bytes pass `first_two`.
    #[inline]
    fn first_two_filter(&self, window: &Window, starts: u64) -> u64 {
        let mut out = 0u64;
        let mut todo = starts;
        while todo != 0 {
            let bit = todo.trailing_zeros();
            todo &= todo - 1;
            let i = 1 + bit as usize % BLOCK;
            let pair = first_pair(window[i], window[i + 1]);
            out |= (self.first_two[pair / 64] >> (pair % 64) & 1) << bit;
        }
        out
    }

    /// Whether the word starting at `at` passes the first-two-bytes filter.
    fn may_begin(&self, bytes: &[u8], at: usize) -> bool {
        let first = bytes.get(at).copied().unwrap_or(0);
        let pair = first_pair(first, bytes.get(at + 1).copied().unwrap_or(0));
        self.first_two[pair / 64] >> (pair % 64) & 1 == 1
    }

    /// Whether the filter has the bit of this hash (else no packed word of the table has this hash).
    #[inline]
    fn filter_has(&self, h: u64) -> bool {
        let bit = (h >> (64 - self.filter_bits)) as usize;
        self.filter.get(bit / 64).is_some_and(|w| w >> (bit % 64) & 1 == 1)
    }

    /// The word starting at `start` (a character boundary): where it ends, and its entry if the table has one
    /// (compared ignoring ASCII case).
    #[inline]
    fn word(&self, text: &str, start: usize) -> (usize, Option<&WordEntry>) {
        let bytes = text.as_bytes();
        let word = ascii_word(load_16(bytes, start));
        if word.complete {
            return (start + word.len, self.get_packed(word.key));
        }
        let end = word_end_from(text, start);
        let word = bytes.get(start..end).unwrap_or_default();
        if word.len() <= PACKED && word.is_ascii() {
            return (end, self.get_packed(pack(word)));
        }
        if self.long.is_empty() {
            return (end, None);
        }
        (end, self.long.get(word.to_ascii_lowercase().as_slice()).and_then(|&i| self.entries.get(i)))
    }

    /// The entry of a packed word.
    #[inline]
    fn get_packed(&self, key: u128) -> Option<&WordEntry> {
        let h = hash(key);
        if !self.filter_has(h) {
            return None;
        }
        let slot_mask = self.slots.len() - 1;
        let mut s = ((h << self.filter_bits) >> (64 - self.slot_bits)) as usize;
        loop {
            let (k, i) = *self.slots.get(s)?;
            if i == 0 {
                return None;
            }
            if k == key {
                return self.entries.get(i as usize - 1);
            }
            s = (s + 1) & slot_mask;
        }
    }
}

/// The lead bytes of [`WordTable::leads`] for words with these first bytes, and how many slots to compare.
fn lead_bytes(firsts: Vec<u8>) -> ([u8; 8], usize) {
    let mut distinct: Vec<u8> =
        firsts.into_iter().filter(|b| b.is_ascii() && !b.is_ascii_digit()).map(|b| b | 0x20).collect();
    distinct.sort_unstable();
    distinct.dedup();
    if distinct.len() > 8 {
        return ([0; 8], 0);
    }
    let width = distinct.len().next_power_of_two();
    let mut leads = [b'0'; 8]; // a digit: digits are lead bytes anyway
    for (slot, lead) in leads.iter_mut().zip(distinct.iter().cycle()).take(width) {
        *slot = *lead;
    }
    (leads, width)
}

const fn splat(b: u8) -> u64 {
    0x0101_0101_0101_0101 * b as u64
}

/// The high bit of every byte.
const HIGH: u64 = splat(0x80);

/// The high bit of each byte of `x` that is an ASCII letter, digit or `_` (SWAR: `v + (0x80 - lo)` has its high
/// bit set exactly when the byte `v < 0x80` is at least `lo`, and no carry crosses bytes).
#[inline]
fn word_lane(x: u64) -> u64 {
    let low = x & !HIGH;
    let at_least = |v: u64, lo: u8| v.wrapping_add(splat(0x80 - lo));
    let digit = at_least(low, b'0') & !at_least(low, b'9' + 1);
    let folded = low | splat(0x20);
    let letter = at_least(folded, b'a') & !at_least(folded, b'z' + 1);
    let underscore = !at_least(low ^ splat(b'_'), 1);
    (digit | letter | underscore) & !x & HIGH
}

/// The index of the bit of `WordTable::first_two` for a word beginning with these two bytes.
#[inline]
fn first_pair(first: u8, second: u8) -> usize {
    usize::from(u16::from_le_bytes([first, second]) | 0x2020)
}

/// A word of at most 16 ASCII word characters, little-endian, each byte `| 0x20`, zero-padded.
fn pack(word: &[u8]) -> u128 {
    let mut buf = [0u8; PACKED];
    let n = word.len().min(PACKED);
    buf[..n].copy_from_slice(&word[..n]);
    let mask = if n == PACKED { u128::MAX } else { (1u128 << (8 * n)) - 1 };
    (u128::from_le_bytes(buf) | FOLD) & mask
}

/// The ASCII start of a word, read from the 16 bytes at its first byte.
#[derive(Debug, Clone, Copy)]
struct AsciiWord {
    /// The leading ASCII word bytes, packed: little-endian, each byte `| 0x20`, zero-padded.
    key: u128,
    /// How many there are (0 to 16).
    len: usize,
    /// The word ends right after them: at an ASCII byte that is no word byte, or at the end of the text.
    complete: bool,
}

/// Reads [`AsciiWord`] from `raw`, without branches.
#[inline]
fn ascii_word(raw: u128) -> AsciiWord {
    let (lo, hi) = (raw as u64, (raw >> 64) as u64);
    let ends = u128::from(!word_lane(lo) & HIGH) | u128::from(!word_lane(hi) & HIGH) << 64;
    let len = (ends.trailing_zeros() / 8) as usize; // 16 when no byte ends it
    let next = raw.checked_shr(8 * len as u32).unwrap_or(0) as u8;
    let mask = 1u128.checked_shl(8 * len as u32).unwrap_or(0).wrapping_sub(1);
    AsciiWord { key: (raw | FOLD) & mask, len, complete: len < PACKED && next < 0x80 }
}

/// The 16 bytes from `at`, zero-padded past the end.
#[inline]
fn load_16(bytes: &[u8], at: usize) -> u128 {
    let rest = bytes.get(at..).unwrap_or_default();
    if let Some(chunk) = rest.first_chunk::<PACKED>() {
        return u128::from_le_bytes(*chunk);
    }
    let mut buf = [0u8; PACKED];
    buf[..rest.len()].copy_from_slice(rest);
    u128::from_le_bytes(buf)
}

#[inline]
fn hash(key: u128) -> u64 {
    let (lo, hi) = (key as u64, (key >> 64) as u64);
    (lo ^ hi.wrapping_mul(0x9e37_79b9_7f4a_7c15)).wrapping_mul(0xd6e8_feb8_6659_fd93)
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

    /// True when the user wrote `amount` of the token `symbol`: an amount item (compared exactly as decimals)
    /// bound to that symbol (ASCII case ignored) in one user message. A bare number — one with no token next to
    /// it, see "Binding an amount to its token" — authorizes no amount of any token.
    pub fn has_amount(&self, amount: &str, symbol: &str) -> bool {
        let Ok(wanted) = Decimal::parse("amount", amount) else { return false };
        let wanted = wanted.canonical();
        self.state.read().items.iter().any(|i| {
            i.item_type == ItemType::Amount
                && i.value == wanted
                && i.label.as_deref().is_some_and(|l| l.eq_ignore_ascii_case(symbol))
        })
    }

    /// Puts back items an earlier process saved (see [`crate::session_state`]), keeping their order. Publishes
    /// nothing.
    pub(crate) fn restore(&self, items: Vec<ContextItem>) {
        let mut state = self.state.write();
        for item in items {
            if state.items.len() >= MAX_ITEMS {
                break;
            }
            let key =
                (item.item_type, item.value.clone(), item.label.clone().filter(|_| item.item_type == ItemType::Amount));
            if state.seen.insert(key) {
                state.items.push(item);
            }
        }
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
    /// Amounts: 0.001 ETH, 100 USDC
    /// Numbers without a token (authorize nothing): 2
    /// ```
    ///
    /// `Amounts` lists the amounts bound to a token; bare numbers are listed apart.
    pub fn format_for_agent(&self) -> Option<String> {
        let state = self.state.read();
        if state.items.is_empty() {
            return None;
        }
        let render = |t: ItemType, bound: bool| -> Vec<String> {
            state
                .items
                .iter()
                .filter(|i| i.item_type == t && (t != ItemType::Amount || i.label.is_some() == bound))
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
        for (title, t, bound) in [
            ("Addresses", ItemType::EthAddress, true),
            ("Tokens", ItemType::TokenSymbol, true),
            ("Networks", ItemType::Network, true),
            ("Amounts", ItemType::Amount, true),
            ("Numbers without a token (authorize nothing)", ItemType::Amount, false),
        ] {
            let parts = render(t, bound);
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
        assert!(b.has_amount("1000.25", "USDC"));
        // "7" has no token next to it: it authorizes no amount of any token.
        assert!(!b.has_amount("7", "USDC"));
        assert!(!b.has_amount("0.5", "USDC"));
        assert_eq!(
            b.format_for_agent().unwrap().lines().last(),
            Some("Numbers without a token (authorize nothing): 7")
        );
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
        b.scan_input("USDC USDC usdc. 5 USDC");
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

    fn scanner(tokens: &[(&str, bool)], networks: &[(&str, &[&str])]) -> ContextScanner {
        let mut ron = String::from("{\"base\": {");
        for (i, (symbol, word_like)) in tokens.iter().enumerate() {
            let addr = format!("0x{:040x}", i + 1);
            ron.push_str(&format!(
                "\"{symbol}\": (address: \"{addr}\", decimals: 18, name: \"{symbol} token\", word_like: {word_like}),"
            ));
        }
        ron.push_str("}}");
        let mut table = NetworkTable::builtin();
        for (i, (name, aliases)) in networks.iter().enumerate() {
            let spec = crate::config::NetworkSpec {
                chain_id: Some(1000 + i as u64),
                aliases: Some(aliases.iter().map(|a| (*a).to_owned()).collect()),
                ..Default::default()
            };
            table.merge(name, spec).unwrap();
        }
        ContextScanner::new(&TokenTable::parse("test", &ron).unwrap(), &table).unwrap()
    }

    fn scanned(scanner: &ContextScanner, text: &str) -> Vec<String> {
        scanner
            .scan(text)
            .into_iter()
            .map(|i| match i.label {
                Some(l) if i.item_type == ItemType::Amount => format!("{} {l}", i.value),
                _ => i.value,
            })
            .collect()
    }

    #[test]
    fn multi_word_network_names() {
        let s = ContextScanner::new(&TokenTable::builtin(), &NetworkTable::builtin()).unwrap();
        assert_eq!(scanned(&s, "bridge to Base Mainnet, BASE-MAINNET or base"), ["base", "base", "base"]);
        assert_eq!(scanned(&s, "5 ETH on base mainnet."), ["5 ETH", "ETH", "base"]);
        // Two spaces is not the alias; "base" alone still is a network.
        assert_eq!(scanned(&s, "base  mainnet"), ["base"]);
        // The longest name wins over its first word even when it runs into a letter: neither is an item.
        assert_eq!(scanned(&s, "base mainnetwork, base-mainnet_x, xbase mainnet"), Vec::<String>::new());
        // A multi-word alias right after an amount is a network, not a token pairing.
        let s = scanner(&[("OP", false)], &[("optimism", &["op mainnet"])]);
        assert_eq!(scanned(&s, "1 OP mainnet, 2 OP"), ["1", "optimism", "2 OP", "OP"]);
    }

    #[test]
    fn unusual_network_names() {
        let s = scanner(
            &[("USDC", false)],
            &[("averyveryverylongnetworkname", &["ベース", "ベース メイン", "(paren)", "usdc", "net_1"])],
        );
        assert_eq!(
            scanned(&s, "averyveryverylongnetworkname ベース メイン ベース USDC net_1 NET_1"),
            [
                "averyveryverylongnetworkname",
                "averyveryverylongnetworkname",
                "averyveryverylongnetworkname",
                "USDC",
                "averyveryverylongnetworkname",
                "averyveryverylongnetworkname"
            ]
        );
        // Not whole words, or spelled like a symbol (the symbol wins): no network.
        assert_eq!(scanned(&s, "xベース averyveryverylongnetworknames usdc"), ["USDC"]);
        // A name that begins with punctuation stands on its own when no word character touches it.
        assert_eq!(
            scanned(&s, "(paren) x(paren) (PAREN)s (Paren)."),
            ["averyveryverylongnetworkname", "averyveryverylongnetworkname"]
        );
    }

    #[test]
    fn symbols_of_every_length() {
        let symbols = ["X", "AB", "ABC", "ABCDEFG", "ABCDEFGH", "ABCDEFGHI", "ABCDEFGHIJKLMNO", "ABCDEFGHIJKLMNOP"];
        let s = scanner(&symbols.map(|t| (t, false)), &[]);
        for symbol in symbols {
            let lower = symbol.to_ascii_lowercase();
            let expected: Vec<&str> = if symbol.len() >= 3 { vec![symbol; 3] } else { vec![symbol; 2] };
            assert_eq!(scanned(&s, &format!("{symbol} ({lower}), {symbol}.")), expected, "{symbol}");
            for glued in [format!("{symbol}Q"), format!("Q{symbol}"), format!("{symbol}_"), format!("{symbol}é")] {
                assert_eq!(scanned(&s, &glued), Vec::<String>::new(), "{glued}");
            }
            // At the very end of the text, and glued to an amount.
            assert_eq!(scanned(&s, &format!("buy 2{symbol}")), [format!("2 {symbol}"), symbol.to_owned()]);
        }
        assert_eq!(scanned(&s, "ABCDEFGHIJKLMNOPQ abcdefghijklmnopq"), Vec::<String>::new());
    }

    #[test]
    fn many_first_letters_use_the_pair_filter() {
        // More than eight distinct first letters: every word start is looked at.
        let letters = ["ALPHA", "BRAVO", "CHARLIE", "DELTA", "ECHO", "FOXTROT", "GOLF", "HOTEL", "INDIA", "JULIET"];
        let s = scanner(&letters.map(|t| (t, false)), &[]);
        assert_eq!(s.words.lead_width, 0);
        assert_eq!(
            scanned(&s, "alpha, a bravo—Juliet and 3 golf; hotels x_india"),
            ["ALPHA", "BRAVO", "JULIET", "3 GOLF", "GOLF"]
        );
    }

    #[test]
    fn items_are_found_wherever_the_64_byte_blocks_fall() {
        let text = "swap 0.001ETH for USDC on base mainnet, 1,000.25 usdc to 0x742d35Cc6634c0532925A3b844Bc9e7595F8FDf0 \
                    (not abc123 or v1.2.3 or 2024-05-01) éUSDC ETH—USDC «.5 WETH» base";
        let expected = [
            "0.001 ETH",
            "ETH",
            "USDC",
            "base",
            "1000.25 USDC",
            "USDC",
            "0x742d35Cc6634c0532925A3b844Bc9e7595F8FDf0",
            "ETH",
            "USDC",
            "0.5 WETH",
            "WETH",
            "base",
        ];
        let letters = ["ALPHA", "BRAVO", "CHARLIE", "DELTA", "ECHO", "FOXTROT", "GOLF", "HOTEL", "INDIA", "JULIET"];
        let mut tokens: Vec<(&str, bool)> = ["ETH", "USDC", "WETH"].map(|t| (t, false)).to_vec();
        let many = scanner(
            &{
                tokens.extend(letters.map(|t| (t, false)));
                tokens
            },
            &[],
        );
        let builtin = ContextScanner::new(&TokenTable::builtin(), &NetworkTable::builtin()).unwrap();
        for s in [&builtin, &many] {
            for filler in ["", " ", "x ", "é ", "日本 "] {
                for n in 0..=130 {
                    let prefix = filler.repeat(n);
                    assert_eq!(scanned(s, &format!("{prefix}{text}")), expected, "prefix {prefix:?}");
                    // The first word ("swap") made long enough to cross blocks.
                    assert_eq!(scanned(s, &format!("{}{text}", "a".repeat(n))), expected, "{n} letters");
                }
            }
        }
    }

    #[test]
    fn ascii_words_among_non_ascii_letters() {
        let s = ContextScanner::new(&TokenTable::builtin(), &NetworkTable::builtin()).unwrap();
        assert_eq!(scanned(&s, "обменяй 0.5 ETH на USDC в сети base—спасибо"), ["0.5 ETH", "ETH", "USDC", "base"]);
        // Glued to letters of any script: not words, not amounts.
        assert_eq!(scanned(&s, "お願いします0.5 ETHを USDCに baseで"), Vec::<String>::new());
        assert_eq!(scanned(&s, "「0.5 ETH」を「USDC」に—€5, №7"), ["0.5 ETH", "ETH", "USDC", "5", "7"]);
    }

    #[test]
    fn glued_numbers_take_their_separators_and_dots_with_them() {
        let b = bank();
        b.scan_input("abc1,000 v1.2.3 x.5 e1.5 3x1.5 0x12.5 1INCH, then 7");
        assert_eq!(values(&b.items()), vec![(ItemType::Amount, "7", None)]);
        let b = bank();
        b.scan_input("1,00 10,000,0 1234,567 ,5");
        assert_eq!(
            b.items().iter().map(|i| i.value.as_str()).collect::<Vec<_>>(),
            ["1", "0", "10000", "1234", "567", "5"]
        );
    }

    #[test]
    fn a_number_joined_by_a_point_to_an_address_is_no_amount() {
        // Found by the reference-scanner property test: after an address ending in a digit, `.5` was read as 5.
        let s = ContextScanner::new(&TokenTable::builtin(), &NetworkTable::builtin()).unwrap();
        let good = "0x742d35Cc6634c0532925A3b844Bc9e7595F8FDf0";
        let ends_in_letter = "0x90f79bf6eb2c4f870365e785982e1f101e93b90f";
        assert_eq!(scanned(&s, &format!("{good}.5 USDC")), [good, "USDC"]);
        assert_eq!(scanned(&s, &format!("{}.5 USDC", good.to_lowercase())), [good, "USDC"]);
        let checked = check_address(ends_in_letter).unwrap().checksummed();
        assert_eq!(scanned(&s, &format!("{ends_in_letter}.5")), [checked]);
        // A symbol ending in a digit, likewise; a point after a point or a space still begins `.5`.
        let s = scanner(&[("ARB1", false)], &[]);
        assert_eq!(scanned(&s, "ARB1.5, ARB1 .5, 1..5"), ["ARB1", "ARB1", "0.5 ARB1", "1", "0.5"]);
    }

    #[test]
    fn every_amount_kept_parses_as_a_decimal() {
        // Found by fuzzing (`context_bank`): `.` and 99 digits was kept as a 101-character amount that
        // `Decimal::parse`, and so `has_amount`, refuses.
        let b = bank();
        let text = format!("90000000000 ETH 0\u{fffd}.{}1 USDC", "0".repeat(98));
        b.scan_input(&text);
        for item in b.items().iter().filter(|i| i.item_type == ItemType::Amount) {
            assert_eq!(Decimal::parse("amount", &item.value).unwrap().canonical(), item.value);
        }
        assert_eq!(
            values(&b.items()),
            [
                (ItemType::Amount, "90000000000", Some("ETH")),
                (ItemType::TokenSymbol, "ETH", Some("Ethereum")),
                (ItemType::Amount, "0", None),
                (ItemType::TokenSymbol, "USDC", Some("USD Coin")),
            ]
        );
        let kept = format!(".{}1 USDC", "0".repeat(97));
        b.scan_input(&kept);
        assert!(b.has_amount(&format!("0.{}1", "0".repeat(97)), "USDC"));
    }

    #[test]
    fn repeated_addresses_keep_their_own_form() {
        let s = ContextScanner::new(&TokenTable::builtin(), &NetworkTable::builtin()).unwrap();
        let good = "0x742d35Cc6634c0532925A3b844Bc9e7595F8FDf0";
        let bad = "0x742d35Cc6634C0532925a3b844Bc9e7595f8FdF0";
        let text =
            format!("{} {bad} {bad} {} {good} {bad}", good.to_lowercase(), good.to_uppercase().replace("0X", "0x"));
        let items = s.scan(&text);
        let got: Vec<(&str, bool)> = items.iter().map(|i| (i.value.as_str(), i.flags.is_empty())).collect();
        assert_eq!(got, [(good, true), (bad, false), (bad, false), (good, true), (good, true), (bad, false)]);
    }

    #[test]
    fn canonical_amounts_are_decimal_canonical() {
        let mut numbers: Vec<String> = [
            "0",
            "00",
            "0.0",
            "0.000",
            ".5",
            ".50",
            ".05",
            "5.",
            "1,000",
            "1,000.250",
            "001,000",
            "12,345,678.9",
            ".5.0",
            ".5,000",
            ".5,000.25",
            "1.2.3",
            "0.001",
            "100",
            "1000000",
        ]
        .map(String::from)
        .to_vec();
        numbers.push("9".repeat(100));
        numbers.push("9".repeat(101));
        numbers.push(format!("0.{}", "0".repeat(98)));
        // Found by fuzzing: 100 characters as written, 101 in canonical form (`0.…1`).
        numbers.push(format!(".{}1", "0".repeat(98)));
        numbers.push(format!(".{}1", "0".repeat(97)));
        for n in numbers {
            let expected = Decimal::parse("amount", &n).ok().map(|d| d.canonical());
            assert_eq!(canonical_amount(&n), expected, "{n}");
        }
    }

    proptest::proptest! {
        #[test]
        fn scanning_is_the_same_after_any_separator_prefix(
            words in proptest::collection::vec(
                proptest::sample::select(vec![
                    "ETH", "eth", "usdc", "WETH", "cbETH", "base", "Base Mainnet", "base-mainnet", "0.5", ".5", "12",
                    "1,000.25", "2024-05-01", "v1.2", "abc123", "0x742d35cc6634c0532925a3b844bc9e7595f8fdf0", "the",
                    "é", "—", "日本", "5ETH", "x", "_",
                ]),
                0..40,
            ),
            seps in proptest::collection::vec(proptest::sample::select(vec![" ", ", ", ".", "\n", "-", "/", "—", "é", "", "\t"]), 40),
            pad in 0usize..70,
        ) {
            let s = ContextScanner::new(&TokenTable::builtin(), &NetworkTable::builtin()).unwrap();
            let text: String = words.iter().zip(&seps).map(|(w, sep)| format!("{w}{sep}")).collect();
            let plain = scanned(&s, &text);
            let padded = scanned(&s, &format!("{} {text}", " ".repeat(pad)));
            proptest::prop_assert_eq!(plain, padded);
        }
    }

    #[test]
    fn bare_numbers_stay_in_the_bank_but_authorize_nothing() {
        let b = bank();
        b.scan_input("send it to my 2 friends");
        assert_eq!(values(&b.items()), vec![(ItemType::Amount, "2", None)]);
        assert!(!b.has_amount("2", "USDC"));
        assert!(!b.has_amount("2", "ETH"));
        assert_eq!(b.format_for_agent().unwrap(), "Numbers without a token (authorize nothing): 2");
        b.scan_input("swap 2 USDC for ETH");
        assert!(b.has_amount("2", "USDC"));
        assert!(b.has_amount("2.0", "usdc"));
        assert!(!b.has_amount("2", "ETH"));
        assert_eq!(
            b.format_for_agent().unwrap(),
            "Tokens: USDC (USD Coin), ETH (Ethereum)\nAmounts: 2 USDC\nNumbers without a token (authorize nothing): 2"
        );
    }

    #[test]
    fn amounts_bind_only_to_an_adjacent_token() {
        let s = ContextScanner::new(&TokenTable::builtin(), &NetworkTable::builtin()).unwrap();
        let cases: &[(&str, &[&str])] = &[
            ("swap 0.5 ETH for 100 USDC", &["0.5 ETH", "ETH", "100 USDC", "USDC"]),
            ("USDC 100", &["USDC", "100 USDC"]),
            ("send usdc 100 now", &["USDC", "100 USDC"]),
            ("100 usdc", &["100 USDC", "USDC"]),
            ("sell ETH\t.5 please", &["ETH", "0.5 ETH"]),
            ("ETH   0.5 and 0.5   WETH", &["ETH", "0.5 ETH", "0.5 WETH", "WETH"]),
            // More than three blanks, punctuation or a line break between: not adjacent.
            ("ETH    0.5 and 0.7    WETH", &["ETH", "0.5", "0.7", "WETH"]),
            ("100, USDC; USDC: 7, USDC, 8; 9-USDC", &["100", "USDC", "USDC", "7", "USDC", "8", "9", "USDC"]),
            ("USDC\n100 and 200\nETH", &["USDC", "100", "200", "ETH"]),
            ("USDC (100) and [5] ETH", &["USDC", "100", "5", "ETH"]),
            // A word between: not adjacent.
            ("swap 2 of my USDC", &["2", "USDC"]),
            ("USDC worth 100", &["USDC", "100"]),
            // A token qualifies one number; a number between two unclaimed tokens binds neither.
            ("5 ETH 100", &["5 ETH", "ETH", "100"]),
            ("sell 5 ETH 100 USDC", &["5 ETH", "ETH", "100 USDC", "USDC"]),
            ("USDC 100 ETH", &["USDC", "100", "ETH"]),
            ("ETH 5USDC", &["ETH", "5", "USDC"]),
            ("USDC 1 2", &["USDC", "1 USDC", "2"]),
            // Dollar values are not amounts of a token.
            ("$20 of USDC, 20 dollars of USDC", &["20", "USDC", "20", "USDC"]),
            // Numbers inside addresses, dates, versions or words are no amounts, and bind nothing.
            (
                "USDC 0x742d35cc6634c0532925a3b844bc9e7595f8fdf0",
                &["USDC", "0x742d35Cc6634c0532925A3b844Bc9e7595F8FDf0"],
            ),
            ("ETH 2024-05-01, USDC v1.2, USDC abc123, USDC 1.2.3, ETH 10:30", &["ETH", "USDC", "USDC", "USDC", "ETH"]),
            ("USDC100 100USDCx", &[]),
        ];
        for (text, expected) in cases {
            assert_eq!(scanned(&s, text), *expected, "{text:?}");
        }
        // The case rules of word-like symbols hold on both sides.
        let s = scanner(&[("ONE", true), ("GAS", false)], &[]);
        assert_eq!(scanned(&s, "one 5, gas 6, ONE 7, 8 GAS, 9 one"), ["5", "6", "ONE", "7 ONE", "8 GAS", "GAS", "9"]);
    }

    /// A word of the binding property's texts: a number, a number glued to a symbol, a symbol or another word.
    #[derive(Debug, Clone, Copy)]
    enum Word {
        Number(&'static str, &'static str),
        Glued(&'static str, &'static str, &'static str),
        Symbol(&'static str, &'static str),
        Other(&'static str),
    }

    fn binding_words() -> Vec<Word> {
        vec![
            Word::Number("5", "5"),
            Word::Number("0.5", "0.5"),
            Word::Number(".5", "0.5"),
            Word::Number("1,000", "1000"),
            Word::Number("12", "12"),
            Word::Glued("5ETH", "5", "ETH"),
            Word::Glued("12usdc", "12", "USDC"),
            Word::Symbol("ETH", "ETH"),
            Word::Symbol("USDC", "USDC"),
            Word::Symbol("usdc", "USDC"),
            Word::Symbol("WETH", "WETH"),
            Word::Symbol("cbETH", "cbETH"),
            Word::Other("for"),
            Word::Other("my"),
            Word::Other("the"),
            Word::Other("friends"),
            Word::Other("base"),
            Word::Other("eth2"),
            Word::Other("v1.2"),
            Word::Other("2024-05-01"),
        ]
    }

    proptest::proptest! {
        #[test]
        fn an_amount_binds_only_to_a_token_in_the_next_or_previous_word(
            words in proptest::collection::vec(proptest::sample::select(binding_words()), 0..16),
            seps in proptest::collection::vec(
                proptest::sample::select(vec![" ", "  ", "   ", "    ", "\t", ", ", ": ", "\n", " - ", ". ", " (", ") "]),
                16,
            ),
        ) {
            let s = ContextScanner::new(&TokenTable::builtin(), &NetworkTable::builtin()).unwrap();
            let text: String = words
                .iter()
                .zip(&seps)
                .map(|(w, sep)| {
                    let w = match w {
                        Word::Number(n, _) | Word::Glued(n, _, _) | Word::Symbol(n, _) | Word::Other(n) => n,
                    };
                    format!("{w}{sep}")
                })
                .collect();
            let blank = |sep: &str| !sep.is_empty() && sep.len() <= 3 && sep.bytes().all(|b| b == b' ' || b == b'\t');
            let symbol = |i: usize| match words.get(i) {
                Some(Word::Symbol(_, sym)) => Some(*sym),
                _ => None,
            };
            // Every (amount, token) pair the words allow: a glued pair, or a number and a symbol one blank apart.
            let mut allowed: Vec<(String, &str)> = Vec::new();
            for (i, w) in words.iter().enumerate() {
                match w {
                    Word::Glued(_, n, sym) => allowed.push(((*n).to_owned(), *sym)),
                    Word::Number(_, n) => {
                        if let Some(sym) = symbol(i + 1).filter(|_| blank(seps[i])) {
                            allowed.push(((*n).to_owned(), sym));
                        }
                        if let Some(sym) = i.checked_sub(1).and_then(symbol).filter(|_| blank(seps[i - 1])) {
                            allowed.push(((*n).to_owned(), sym));
                        }
                    }
                    _ => {}
                }
            }
            let bound: Vec<(String, String)> = s
                .scan(&text)
                .into_iter()
                .filter(|i| i.item_type == ItemType::Amount)
                .filter_map(|i| Some((i.value, i.label?)))
                .collect();
            for (value, label) in &bound {
                proptest::prop_assert!(
                    allowed.iter().any(|(n, sym)| n == value && sym == label),
                    "{text:?} bound {value} to {label}, allowed {allowed:?}"
                );
            }
            // Every symbol qualifies at most one number.
            let glued = words.iter().filter(|w| matches!(w, Word::Glued(..))).count();
            let symbols = words.iter().filter(|w| matches!(w, Word::Symbol(..))).count();
            proptest::prop_assert!(bound.len() <= glued + symbols, "{text:?}: {bound:?}");
        }
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

//! The matching rules: which words are ordinary, what an item is, and how an amount binds to its token (the
//! module documentation of [`super`] states them).

use super::*;

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

impl ItemType {
    /// The wire form (as serialized).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::EthAddress => "eth_address",
            Self::TokenSymbol => "token_symbol",
            Self::Network => "network",
            Self::Amount => "amount",
        }
    }
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

/// Most spaces and tabs that may separate an amount from the token it is bound to.
pub(super) const MAX_BINDING_GAP: usize = 3;

/// How many spaces and tabs begin `bytes`, up to [`MAX_BINDING_GAP`]; 0 when there are more (no binding then).
pub(super) fn blank_run(bytes: &[u8]) -> usize {
    let n = bytes.iter().take(MAX_BINDING_GAP + 1).take_while(|b| **b == b' ' || **b == b'\t').count();
    if n > MAX_BINDING_GAP { 0 } else { n }
}

/// The items of one scan so far.
pub(super) struct Found<'t> {
    pub(super) items: Vec<ContextItem>,
    /// The last address read, as written, and its item: an address repeated in a message is checksummed once.
    pub(super) last_address: Option<(&'t str, ContextItem)>,
    /// The last token symbol read: a number right after it may be bound to it.
    pub(super) last_token: Option<LastToken>,
    /// Where the token symbol right after the last amount starts (`usize::MAX`: none): that amount claimed it.
    pub(super) claimed: usize,
}

/// A token symbol item the scanner has read.
#[derive(Debug, Clone, Copy)]
pub(super) struct LastToken {
    /// Where the symbol ends.
    pub(super) end: usize,
    /// Its index in `ContextScanner::symbols`.
    pub(super) symbol: usize,
    /// No amount is bound to it (or claimed it) yet.
    pub(super) free: bool,
}

pub(super) fn token_item(sym: &SymbolEntry) -> ContextItem {
    ContextItem {
        value: sym.symbol.clone(),
        item_type: ItemType::TokenSymbol,
        label: Some(sym.name.clone()),
        flags: Vec::new(),
    }
}

pub(super) fn amount_item(number: &str, label: Option<String>) -> Option<ContextItem> {
    let value = canonical_amount(number)?;
    Some(ContextItem { value, item_type: ItemType::Amount, label, flags: Vec::new() })
}

/// `Decimal::parse(number)?.canonical()` for a number read by [`number_end`] (digits, `,` thousands groups, an
/// optional fraction, or `.5`), without its intermediate strings.
pub(super) fn canonical_amount(number: &str) -> Option<String> {
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
pub(super) fn phrase_at(text: &str, start: usize, entry: &WordEntry) -> Option<(Option<usize>, usize)> {
    let bytes = text.as_bytes();
    entry.phrases.iter().find_map(|p| {
        let end = start + p.folded.len();
        let written = bytes.get(start..end)?;
        written.eq_ignore_ascii_case(&p.folded).then(|| (word_end(text, end).then_some(p.network), end))
    })
}

/// End of the number starting at digit `at`: `\d+(,\d{3})*(\.\d+)?`.
pub(super) fn number_end(bytes: &[u8], at: usize) -> usize {
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

pub(super) fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// No word character ends right before `at` (a character boundary).
pub(super) fn word_start(text: &str, at: usize) -> bool {
    match at.checked_sub(1).and_then(|i| text.as_bytes().get(i)) {
        None => true,
        Some(b) if b.is_ascii() => !is_word_byte(*b),
        Some(_) => text[..at].chars().next_back().is_none_or(|c| !is_word_char(c)),
    }
}

/// No word character starts at `at`.
pub(super) fn word_end(text: &str, at: usize) -> bool {
    match text.as_bytes().get(at) {
        None => true,
        Some(b) if b.is_ascii() => !is_word_byte(*b),
        Some(_) => text.get(at..).and_then(|rest| rest.chars().next()).is_none_or(|c| !is_word_char(c)),
    }
}

/// End of the word that starts at `from` (a character boundary).
pub(super) fn word_end_from(text: &str, from: usize) -> usize {
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
pub(super) fn skip_word(text: &str, from: usize) -> usize {
    text[from..].char_indices().find(|(_, c)| !is_word_char(*c) && *c != '.').map_or(text.len(), |(i, _)| from + i)
}

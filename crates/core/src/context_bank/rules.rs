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
    /// A number a person could read in more than one way — a grouping that is no thousands grouping (`0,50`,
    /// `1,5`, `0,001`), a separator of the other convention next to it, or a zero-width or other invisible character
    /// inside it. Its `value` is the number as written (invisible characters shown as `\u{…}`); it binds nothing.
    Ambiguous,
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
    /// The role of each bound amount that has one (its index in `items`), when asked for.
    pub(super) roles: Option<Vec<(usize, super::AmountRole)>>,
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

pub(super) fn amount_item(value: String, label: Option<String>) -> Option<ContextItem> {
    Some(ContextItem { value, item_type: ItemType::Amount, label, flags: Vec::new() })
}

/// A number that binds nothing because a person could read it in more than one way (see [`ItemFlag::Ambiguous`]).
pub(super) fn ambiguous_item(written: &str) -> ContextItem {
    let mut value = String::with_capacity(written.len().min(MAX_AMOUNT_CHARS + 3));
    for (n, c) in written.chars().enumerate() {
        // Shown as written, up to the length of an amount: a run of digits and look-alikes can be a whole message.
        if n == MAX_AMOUNT_CHARS {
            value.push('…');
            break;
        }
        if crate::text::is_invisible(c) {
            let _ = write!(value, "\\u{{{:x}}}", u32::from(c));
        } else {
            value.push(c);
        }
    }
    ContextItem { value, item_type: ItemType::Amount, label: None, flags: vec![ItemFlag::Ambiguous] }
}

/// How a number as written reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Reading {
    /// One value, canonical.
    Valid(String),
    /// More than one reading is plausible: it binds nothing.
    Ambiguous,
    /// Not an amount at all: a version (`1.2.3`) or longer than an amount may be.
    NotAnAmount,
}

/// `Decimal::parse(number)?.canonical()` for a number already checked by [`read_number`] (digits, `,` thousands
/// groups, an optional fraction after `.`, or `.5`), without its intermediate strings.
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

/// Reads a number as written — digits with `.` and `,` between them, no invisible characters — in the user's
/// convention: the decimal separator (`.`, or `,` with `decimal_comma`) at most once, and the other one only as a
/// thousands grouping (a first group of one to three digits not starting with `0`, then groups of three). Anything
/// else is [`Reading::Ambiguous`]: "0,50", "1,5" and "0,001" do not say whether the comma groups or separates.
pub(super) fn read_number(written: &str, decimal_comma: bool) -> Reading {
    let (decimal, group) = if decimal_comma { (',', '.') } else { ('.', ',') };
    let decimals = written.matches(decimal).count();
    let groups = written.matches(group).count();
    if !decimal_comma && decimals >= 2 && groups == 0 {
        return Reading::NotAnAmount;
    }
    if decimals > 1 {
        return Reading::Ambiguous;
    }
    let (int, frac) = written.split_once(decimal).unwrap_or((written, ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if !digits(frac) || (int.is_empty() && frac.is_empty()) {
        return Reading::Ambiguous;
    }
    let int_digits = if groups == 0 {
        if !digits(int) {
            return Reading::Ambiguous;
        }
        int.to_owned()
    } else {
        let mut parts = int.split(group);
        let first = parts.next().unwrap_or_default();
        let first_ok = (1..=3).contains(&first.len()) && digits(first) && !first.starts_with('0');
        if !first_ok || !parts.all(|p| p.len() == 3 && digits(p)) {
            return Reading::Ambiguous;
        }
        int.replace(group, "")
    };
    let plain = if frac.is_empty() { int_digits } else { format!("{int_digits}.{frac}") };
    canonical_amount(&plain).map_or(Reading::NotAnAmount, Reading::Valid)
}

/// A character that joins two digit runs into one number as a person sees it: a separator, a space some locales
/// group thousands with (no-break, narrow no-break, thin, figure space), or an invisible character other than a tab
/// or a line break (those separate what is written).
fn joins_digits(c: char) -> bool {
    matches!(c, ',' | '.' | '\u{a0}' | '\u{202f}' | '\u{2009}' | '\u{2007}')
        || (crate::text::is_invisible(c) && !c.is_ascii_whitespace())
}

/// A character a person may read as a decimal point, a comma, a space or a fraction bar, but which joins no number
/// here: any non-ASCII character that is no letter or digit (`0\u{2024}5`, `0.\u{200a}5`, `1⁄2`, `0·5`, `0．5`), and
/// the apostrophe some locales group thousands with (`1'500`). Next to a digit run and a digit or a separator, it
/// makes the number ambiguous: reading the digits after it alone would be another number than the one the user sees.
fn looks_like_a_separator(c: char) -> bool {
    c == '\'' || (!c.is_ascii() && !c.is_alphanumeric())
}

/// A currency sign (Unicode's currency symbols, `Sc`): `$20 ETH`, `€ 20 ETH` and `ETH 20 €` are values in a currency,
/// not 20 ETH.
pub(super) fn is_currency(c: char) -> bool {
    matches!(
        c,
        '$' | '¢'
            | '£'
            | '¤'
            | '¥'
            | '֏'
            | '؋'
            | '߾'
            | '߿'
            | '৲'
            | '৳'
            | '৻'
            | '૱'
            | '௹'
            | '฿'
            | '៛'
            | '꠸'
            | '﷼'
            | '﹩'
            | '＄'
            | '￠'
            | '￡'
            | '￥'
            | '￦'
    ) || ('\u{20a0}'..='\u{20cf}').contains(&c)
        || ('\u{11fdd}'..='\u{11fe0}').contains(&c)
        || matches!(c, '\u{1e2ff}' | '\u{1ecb0}')
}

/// The number that starts at digit `at`, as far as a person reads it as one: digit runs joined by separators,
/// invisible characters and characters that look like separators.
#[derive(Debug, Clone, Copy)]
pub(super) struct Run {
    /// Where it ends (after its last ASCII digit, or before a digit of another script it runs into).
    pub(super) end: usize,
    /// An invisible character or a look-alike of a separator ([`looks_like_a_separator`]) sits inside it, or it runs
    /// into a digit of another script (`5٫٥`): the number is ambiguous.
    pub(super) hidden: bool,
}

/// Reads the [`Run`] starting at the digit `at`.
pub(super) fn number_run(text: &str, at: usize) -> Run {
    let bytes = text.as_bytes();
    let mut run = Run { end: at, hidden: false };
    loop {
        run.end += bytes[run.end..].iter().take_while(|b| b.is_ascii_digit()).count();
        let mut next = run.end;
        let mut hidden = false;
        for (i, c) in text[run.end..].char_indices() {
            if !joins_digits(c) && !looks_like_a_separator(c) {
                break;
            }
            hidden |= !matches!(c, ',' | '.');
            next = run.end + i + c.len_utf8();
        }
        if next == run.end || !text[next..].chars().next().is_some_and(char::is_numeric) {
            return run;
        }
        run.hidden |= hidden;
        run.end = next;
        if !bytes[next].is_ascii_digit() {
            // A digit of another script after a separator: this reader stops before it, and so reads no number.
            run.hidden = true;
            return run;
        }
    }
}

/// Whether what precedes `start` (the first byte of a number) makes the number part of a longer one a person sees,
/// or a value in a currency. Blanks, invisible characters and look-alikes of separators right before it are looked
/// through, and then: a separator with nothing a person sees between (`,5` where `.` is the decimal point,
/// `0.\u{200b}5`); the decimal separator after a digit, blanks between (`0. 5`, `0.  5`); a digit (of any script),
/// an invisible character or a look-alike between (`0\u{2024}5`, `٠٫5`, `5 \u{200a}3`); an invisible character right
/// after a word character (`send\u{200b}5`); a digit and blanks before a group of exactly three digits (`1 500`, which
/// a person reads as fifteen hundred); or a currency sign (`$20`, `€ 20`, `$ \u{200a}20`).
pub(super) fn continues_a_number(text: &str, start: usize, decimal: char) -> bool {
    let mut before = text[..start].chars().rev().peekable();
    let (mut invisible, mut look_alike, mut blank) = (false, false, false);
    while let Some(&c) = before.peek() {
        if joins_digits(c) && !matches!(c, ',' | '.') {
            invisible = true;
        } else if looks_like_a_separator(c) && !is_currency(c) {
            look_alike = true;
        } else if matches!(c, ' ' | '\t') {
            blank = true;
        } else {
            break;
        }
        before.next();
    }
    let Some(c) = before.next() else { return false };
    if is_currency(c) {
        return true;
    }
    match c {
        ',' | '.' if !blank => true,
        c if c == decimal => before.next().is_some_and(char::is_numeric),
        c if c.is_numeric() => {
            look_alike || invisible || (blank && a_group_of_three(text, start) && a_short_number_ends_with(c, before))
        }
        c => invisible && !blank && !look_alike && is_word_char(c),
    }
}

/// Whether the digit `last`, with what comes before it (`before`, read backwards), ends a number of one to three
/// digits that begins a word — the first group of a thousands grouping (`1` and `12` in `1 500`, `12 500`), not the
/// end of an address, a name or a time (`0x…6 500`, `alice2 500`, `10:30 500`).
fn a_short_number_ends_with(last: char, before: impl Iterator<Item = char>) -> bool {
    if !last.is_numeric() {
        return false;
    }
    let mut digits = 1;
    for c in before {
        if c.is_numeric() {
            digits += 1;
        } else {
            return digits <= 3 && !c.is_alphanumeric() && !matches!(c, '_' | ':' | '.' | ',' | '-' | '/');
        }
    }
    digits <= 3
}

/// Whether the digits at `start` are exactly three (a thousands group: `500` in `1 500`, `1 500.25`).
fn a_group_of_three(text: &str, start: usize) -> bool {
    let digits = text.as_bytes().get(start..).unwrap_or_default().iter().take(4).take_while(|b| b.is_ascii_digit());
    digits.count() == 3
}

/// Whether a currency sign follows the number that ends at `end`, blanks, invisible characters and look-alikes between
/// (`20 €`, `20$`): a value in a currency, not an amount of a token.
pub(super) fn currency_after(text: &str, end: usize) -> bool {
    text[end..]
        .chars()
        .find(|c| !(matches!(c, ' ' | '\t') || joins_digits(*c) || (looks_like_a_separator(*c) && !is_currency(*c))))
        .is_some_and(is_currency)
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

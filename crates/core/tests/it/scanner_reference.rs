//! The context-bank scanner against a reference scanner written here from the rules in `context_bank`'s module
//! doc: slow and simple (a walk over the characters, word by word, no regex, no tables of bytes), on random and
//! adversarial text. Both must find the same addresses, the same amounts bound to the same tokens, and the same
//! token symbols, in the same order.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use alloy_primitives::Address;
use holdfast_core::amount::Decimal;
use holdfast_core::config::{NetworkTable, TokenTable};
use holdfast_core::context_bank::{ContextScanner, ItemType, ORDINARY_WORDS};
use proptest::prelude::*;
use std::sync::LazyLock;

/// What both scanners report, networks aside: `("address", value, "ok" | "mismatch")`, `("amount", value, symbol
/// or "")`, `("token", symbol, "")`.
type Found = Vec<(&'static str, String, String)>;

static SCANNER: LazyLock<ContextScanner> =
    LazyLock::new(|| ContextScanner::new(&TokenTable::builtin(), &NetworkTable::builtin()).unwrap());

fn scanner(text: &str) -> Found {
    SCANNER
        .scan(text)
        .into_iter()
        .filter_map(|i| match i.item_type {
            ItemType::EthAddress => {
                Some(("address", i.value, if i.flags.is_empty() { "ok" } else { "mismatch" }.to_owned()))
            }
            ItemType::Amount => Some(("amount", i.value, i.label.unwrap_or_default())),
            ItemType::TokenSymbol => Some(("token", i.value, String::new())),
            ItemType::Network => None,
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------------------------
// The reference. Positions are indices into the text's characters.
// ---------------------------------------------------------------------------------------------------------------

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The token symbol `word` is, by the case rules: as in the table or in capitals; lower or title case only for
/// symbols of three or more characters that are not ordinary words.
fn symbol(word: &str) -> Option<String> {
    TokenTable::builtin().iter().find_map(|t| {
        let exact = word == t.symbol || word == t.symbol.to_ascii_uppercase();
        let lower = t.symbol.to_ascii_lowercase();
        let loose = t.symbol.chars().count() >= 3
            && !t.word_like
            && !ORDINARY_WORDS.contains(&lower.as_str())
            && word.eq_ignore_ascii_case(&t.symbol)
            && !word.chars().skip(1).any(|c| c.is_ascii_uppercase());
        (exact || loose).then(|| t.symbol.clone())
    })
}

/// `0x` + 40 hex digits: its EIP-55 form, or the text as typed when mixed case with a wrong checksum.
fn address(word: &str) -> Option<(String, &'static str)> {
    let hex = word.strip_prefix("0x").or_else(|| word.strip_prefix("0X"))?;
    if hex.chars().count() != 40 || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    let checksummed = hex.parse::<Address>().ok()?.to_checksum(None);
    let mixed = hex.chars().any(|c| c.is_ascii_lowercase()) && hex.chars().any(|c| c.is_ascii_uppercase());
    if !mixed || checksummed[2..] == *hex { Some((checksummed, "ok")) } else { Some((word.to_owned(), "mismatch")) }
}

struct Reference {
    chars: Vec<char>,
    found: Found,
    /// The last token symbol read: where it ends, the symbol, and whether no number is bound to it or claimed it.
    last_token: Option<(usize, String, bool)>,
    /// Where the symbol right after the last number starts: that number claimed it.
    claimed: Option<usize>,
}

impl Reference {
    fn at(&self, i: usize) -> Option<char> {
        self.chars.get(i).copied()
    }

    fn word(&self, i: usize) -> bool {
        self.at(i).is_some_and(is_word_char)
    }

    fn digit(&self, i: usize) -> bool {
        self.at(i).is_some_and(|c| c.is_ascii_digit())
    }

    fn blank(&self, i: usize) -> bool {
        matches!(self.at(i), Some(' ' | '\t'))
    }

    fn text(&self, from: usize, to: usize) -> String {
        self.chars[from..to].iter().collect()
    }

    /// Where the word starting at `i` ends.
    fn word_end(&self, i: usize) -> usize {
        (i..).find(|&j| !self.word(j)).unwrap_or(i)
    }

    /// Past the word characters and dots from `i`: the rest of something that is not an item, and whatever dots
    /// join to it (`1.2.3`, `v1.2.USDC`).
    fn skip(&self, i: usize) -> usize {
        (i..).find(|&j| !(self.word(j) || self.at(j) == Some('.'))).unwrap_or(i)
    }

    /// A character joining two digit runs into one number as a person sees it: `.`, `,`, or an invisible
    /// character other than a tab or line break.
    fn joiner(c: Option<char>) -> bool {
        c.is_some_and(|c| {
            matches!(c, '.' | ',' | '\u{a0}' | '\u{202f}' | '\u{2009}' | '\u{2007}')
                || (holdfast_core::is_invisible(c) && !c.is_ascii_whitespace())
        })
    }

    /// A character a person may take for a point, a comma, a space or a fraction bar that joins no number: a
    /// non-ASCII character that is no letter or digit, or `'`.
    fn look_alike(c: Option<char>) -> bool {
        c.is_some_and(|c| c == '\'' || (!c.is_ascii() && !c.is_alphanumeric()))
    }

    /// A currency sign (Unicode's `Sc`).
    fn currency(c: Option<char>) -> bool {
        c.is_some_and(|c| {
            "$¢£¤¥֏؋߾߿৲৳৻૱௹฿៛꠸﷼﹩＄￠￡￥￦".contains(c)
                || ('\u{20a0}'..='\u{20cf}').contains(&c)
                || ('\u{11fdd}'..='\u{11fe0}').contains(&c)
                || c == '\u{1e2ff}'
                || c == '\u{1ecb0}'
        })
    }

    /// The number starting at the digit `i`: digit runs joined by joiners and look-alikes. Returns its end and
    /// whether anything but `.` and `,` is inside it (or it runs into a digit of another script, where it ends).
    fn number_end(&self, i: usize) -> (usize, bool) {
        let mut j = i;
        let mut invisible = false;
        loop {
            j = (j..).find(|&k| !self.digit(k)).unwrap_or(j);
            let k = (j..).find(|&k| !Self::joiner(self.at(k)) && !Self::look_alike(self.at(k))).unwrap_or(j);
            if k == j || !self.at(k).is_some_and(char::is_numeric) {
                return (j, invisible);
            }
            invisible |= (j..k).any(|m| !matches!(self.at(m), Some('.' | ',')));
            j = k;
            if !self.digit(k) {
                return (k, true);
            }
        }
    }

    /// Whether the number starting at `start` continues one a person sees before it, or is a value in a currency.
    /// Looked through: blanks, invisible characters and look-alikes. Then a `.` or `,` with no blank between, the
    /// point after a digit with blanks between, a digit with an invisible character or a look-alike between, a word
    /// character right before invisible characters, or a currency sign.
    fn continues(&self, start: usize) -> bool {
        let mut j = start;
        let (mut invisible, mut look_alike, mut blank) = (false, false, false);
        while j > 0 {
            let c = self.at(j - 1);
            if Self::joiner(c) && !matches!(c, Some('.' | ',')) {
                invisible = true;
            } else if Self::look_alike(c) && !Self::currency(c) {
                look_alike = true;
            } else if matches!(c, Some(' ' | '\t')) {
                blank = true;
            } else {
                break;
            }
            j -= 1;
        }
        let Some(c) = j.checked_sub(1).and_then(|k| self.at(k)) else { return false };
        if Self::currency(Some(c)) {
            return true;
        }
        if matches!(c, '.' | ',') && !blank {
            return true;
        }
        if c == '.' {
            return j >= 2 && self.at(j - 2).is_some_and(char::is_numeric);
        }
        if c.is_numeric() {
            return look_alike
                || invisible
                || (blank && self.three_digits_at(start) && self.first_group_ends_at(j - 1));
        }
        invisible && !blank && !look_alike && is_word_char(c)
    }

    /// Exactly three ASCII digits from `i` (a thousands group).
    fn three_digits_at(&self, i: usize) -> bool {
        (i..i + 3).all(|k| self.at(k).is_some_and(|c| c.is_ascii_digit()))
            && !self.at(i + 3).is_some_and(|c| c.is_ascii_digit())
    }

    /// Whether the ASCII digit at `k` ends a run of one to three of them that begins a word (not the tail of an
    /// address, a name or a time).
    fn first_group_ends_at(&self, k: usize) -> bool {
        let digit = |k: usize| self.at(k).is_some_and(char::is_numeric);
        if !digit(k) {
            return false;
        }
        let mut first = k;
        while first > 0 && digit(first - 1) {
            first -= 1;
        }
        let before = first.checked_sub(1).and_then(|b| self.at(b));
        k - first < 3 && !before.is_some_and(|c| c.is_alphanumeric() || "_:.,-/".contains(c))
    }

    /// Whether a currency sign follows position `end`, blanks, invisible characters and look-alikes between.
    fn currency_after(&self, end: usize) -> bool {
        let k = (end..)
            .find(|&k| {
                let c = self.at(k);
                !(matches!(c, Some(' ' | '\t')) || Self::joiner(c) || (Self::look_alike(c) && !Self::currency(c)))
            })
            .unwrap_or(end);
        Self::currency(self.at(k))
    }

    /// The token symbol that is the whole word at `i`, if a word starts there with an ASCII letter or digit.
    fn symbol_at(&self, i: usize) -> Option<(String, usize)> {
        if !self.at(i).is_some_and(|c| c.is_ascii_alphanumeric()) {
            return None;
        }
        let end = self.word_end(i);
        symbol(&self.text(i, end)).map(|s| (s, end))
    }

    /// A number starting at the digit `i` (a word start). Returns where to go on.
    fn number(&mut self, i: usize) -> usize {
        let joiner = |c: Option<char>| matches!(c, Some('-' | '/' | ':'));
        // `.5`: the point belongs to the number.
        let start = if i > 0 && self.at(i - 1) == Some('.') { i - 1 } else { i };
        let (end, invisible) = self.number_end(i);
        // Not standing alone: glued to a word before it (`x.5`), joined to another number (dates, times, ranges).
        let glued_before = start > 0 && self.word(start - 1);
        let joined_before = start >= 2 && joiner(self.at(start - 1)) && self.digit(start - 2);
        let joined_after = joiner(self.at(end)) && self.digit(end + 1);
        if glued_before || joined_before || joined_after {
            return self.skip(end);
        }
        let continues = self.continues(start);
        // What it reads as: one value, ambiguous (None), or no amount at all (a version, too long).
        let value: Option<String> = if invisible || continues || self.currency_after(end) {
            None
        } else {
            let written = self.text(start, end);
            let points = written.matches('.').count();
            let commas = written.matches(',').count();
            if points >= 2 && commas == 0 {
                return self.skip(end);
            }
            let (int, frac) = written.split_once('.').unwrap_or((&written, ""));
            let groups: Vec<&str> = int.split(',').collect();
            let grouped = commas == 0
                || (groups[0].len() <= 3
                    && !groups[0].is_empty()
                    && !groups[0].starts_with('0')
                    && groups[1..].iter().all(|g| g.len() == 3));
            let one_point = points <= 1 && !frac.contains(',');
            if grouped && one_point {
                match Decimal::parse("amount", &written.replace(',', "")) {
                    Ok(d) => Some(d.canonical()),
                    Err(_) => return self.skip(end),
                }
            } else {
                None
            }
        };
        // The symbol right after: glued, or after one to three spaces or tabs.
        let (after, glued_end) = if self.at(end).is_some_and(|c| c.is_ascii_alphabetic()) {
            match self.symbol_at(end) {
                Some((s, e)) => (Some(s), Some(e)),
                None => return self.skip(end),
            }
        } else if self.word(end) {
            return self.skip(end);
        } else {
            let gap = (end..).take_while(|&j| self.blank(j)).count();
            let after = if (1..=3).contains(&gap) { self.symbol_at(end + gap).map(|(s, _)| s) } else { None };
            if after.is_some() {
                self.claimed = Some(end + gap);
            }
            (after, None)
        };
        // The free symbol right before, one to three spaces or tabs away.
        let before = self.last_token.as_ref().filter(|(token_end, _, free)| {
            *free && *token_end < start && start - token_end <= 3 && (*token_end..start).all(|j| self.blank(j))
        });
        let bound = match (&value, &after, before) {
            (None, _, _) => None,
            (Some(_), Some(s), None) => Some(s.clone()),
            (Some(_), None, Some((_, s, _))) => Some(s.clone()),
            _ => None,
        };
        let takes_before = before.is_some() && (value.is_none() || (after.is_none() && bound.is_some()));
        if takes_before && let Some((_, _, free)) = self.last_token.as_mut() {
            *free = false;
        }
        match value {
            Some(v) => self.found.push(("amount", v, bound.unwrap_or_default())),
            None => {
                // Shown as written, from the separator before it when that is what makes it ambiguous.
                let from = if continues && start > 0 && matches!(self.at(start - 1), Some('.' | ',')) {
                    start - 1
                } else {
                    start
                };
                let shown: String = self.chars[from..end]
                    .iter()
                    .take(100)
                    .map(|&c| {
                        if holdfast_core::is_invisible(c) {
                            format!("\\u{{{:x}}}", u32::from(c))
                        } else {
                            c.to_string()
                        }
                    })
                    .collect::<String>()
                    + if end - from > 100 { "…" } else { "" };
                self.found.push(("amount", shown, String::new()));
            }
        }
        match (after, glued_end) {
            (Some(s), Some(e)) => {
                self.found.push(("token", s.clone(), String::new()));
                self.last_token = Some((e, s, false));
                e
            }
            _ => end,
        }
    }

    fn run(text: &str) -> Found {
        let mut r = Reference { chars: text.chars().collect(), found: Vec::new(), last_token: None, claimed: None };
        let mut i = 0;
        while i < r.chars.len() {
            if !r.word(i) {
                i += 1;
                continue;
            }
            if i > 0 && r.word(i - 1) {
                // Inside a word: a digit glued to letters begins no amount, and takes what dots join to it along.
                i = if r.digit(i) { r.skip(r.number_end(i).0) } else { i + 1 };
                continue;
            }
            let end = r.word_end(i);
            let word = r.text(i, end);
            if r.digit(i) {
                if word.starts_with("0x") || word.starts_with("0X") {
                    match address(&word) {
                        Some((value, check)) => {
                            r.found.push(("address", value, check.to_owned()));
                            i = end;
                        }
                        None => i = r.skip(i),
                    }
                } else {
                    i = r.number(i);
                }
            } else if let Some(s) = symbol(&word) {
                let free = r.claimed != Some(i);
                r.found.push(("token", s.clone(), String::new()));
                r.last_token = Some((end, s, free));
                i = end;
            } else {
                i += 1;
            }
        }
        r.found
    }
}

// ---------------------------------------------------------------------------------------------------------------
// The texts.
// ---------------------------------------------------------------------------------------------------------------

const GOOD: &str = "0x742d35Cc6634c0532925A3b844Bc9e7595F8FDf0";

fn fragments() -> Vec<String> {
    let good = GOOD.to_owned();
    let bad = {
        // One letter's case flipped: a mixed-case address with a wrong checksum.
        let mut b: Vec<char> = good.chars().collect();
        let k = b.iter().rposition(|c| c.is_ascii_alphabetic() && *c != 'x').unwrap();
        b[k] = if b[k].is_ascii_uppercase() { b[k].to_ascii_lowercase() } else { b[k].to_ascii_uppercase() };
        b.into_iter().collect::<String>()
    };
    let mut v: Vec<String> = [
        // Symbols in every case.
        "ETH",
        "eth",
        "Eth",
        "eTh",
        "WETH",
        "weth",
        "Weth",
        "USDC",
        "usdc",
        "Usdc",
        "uSDC",
        "USDbC",
        "usdbc",
        "USDBC",
        "DAI",
        "dai",
        "Dai",
        "cbETH",
        "CBETH",
        "cbeth",
        "Cbeth",
        "cbBTC",
        "cbbtc",
        "one",
        "ONE",
        "gas",
        // Numbers.
        "5",
        "0",
        "00",
        "12",
        "0.5",
        ".5",
        "5.",
        "0.001",
        "1,000",
        "1,000.25",
        "12,34",
        "1,0000",
        "10,000,0",
        "1234,567",
        "007",
        "1.2.3",
        ".5.0",
        ".5,000",
        "1..5",
        "0,50",
        "0,001",
        "1,5",
        ",5",
        "0.\u{200b}5",
        "0\u{200b}.5",
        "1\u{2060}0",
        "\u{feff}5",
        "5\u{200c}",
        "0.\u{ad}5",
        "1\u{2028}5",
        "1\u{a0}500",
        "0. 5",
        "1.\t5",
        // Glued, joined, dated, versioned.
        "5ETH",
        "12usdc",
        "0.001ETH",
        "5ETHx",
        "5eTh",
        "2USDC_",
        "abc123",
        "v1.2",
        "v1.2.USDC",
        "eth2",
        "x.5",
        "e1.5",
        "2024-05-01",
        "10:30",
        "1/2",
        "3-4",
        "$20",
        "20 dollars of",
        // Words, networks, unicode.
        "for",
        "the",
        "swap",
        "send",
        "base",
        "base mainnet",
        "base-mainnet",
        "mainnet",
        "_",
        "é",
        "日本",
        "—",
        "€",
        "٣",
        "ß",
        "すUSDC",
        "お願い0.5",
        // Addresses: good, lower, upper, 0X, wrong checksum, too short, too long, not hex.
        GOOD,
    ]
    .map(String::from)
    .to_vec();
    v.push(Address::from_slice(&[0xab; 20]).to_checksum(None));
    v.push(good.to_lowercase());
    v.push(format!("0x{}", good[2..].to_uppercase()));
    v.push(format!("0X{}", &good[2..]));
    v.push(bad);
    v.push(good[..41].to_owned());
    v.push(format!("{good}0"));
    v.push(format!("0x{}g", &good[2..41]));
    v.push("9".repeat(101));
    v.push(format!("0.{}1", "0".repeat(98)));
    v.push(format!(".{}1", "0".repeat(98)));
    v
}

fn separators() -> Vec<&'static str> {
    vec![
        " ",
        " ",
        " ",
        "  ",
        "   ",
        "    ",
        "\t",
        " \t ",
        "",
        "",
        ".",
        ",",
        ", ",
        "-",
        "/",
        ":",
        ";",
        "\n",
        "—",
        "é",
        "(",
        ") ",
        "«",
        "»",
        "\u{a0}",
        "_",
        "\u{200b}",
        "\u{2060}",
        "\u{2024}",
        "\u{200a}",
        "\u{b7}",
        "\u{2044}",
        "'",
        "$",
        "\u{20ac}",
        "$ ",
        "\u{201c}",
        "\u{660}",
        "\u{66b}",
        "\u{665}",
        "\u{ff10}",
        "\u{ff0e}",
        "\u{bf9}",
        " \u{200a}",
        " \u{20ac}",
        ". ",
    ]
}

/// Words and separators from the lists, in any order.
fn adversarial() -> impl Strategy<Value = String> {
    (
        proptest::collection::vec(proptest::sample::select(fragments()), 0..24),
        proptest::collection::vec(proptest::sample::select(separators()), 24),
    )
        .prop_map(|(words, seps)| words.iter().zip(seps).map(|(w, s)| format!("{w}{s}")).collect())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn the_scanner_agrees_with_the_reference_on_adversarial_text(text in adversarial()) {
        prop_assert_eq!(scanner(&text), Reference::run(&text), "{:?}", text);
    }

    #[test]
    fn the_scanner_agrees_with_the_reference_on_random_text(
        text in "[0-9a-fA-FxXEeTtHhUuSsDdCcIiWwOoNnb .,:/\\-_\t\n$é日—€]{0,80}",
    ) {
        prop_assert_eq!(scanner(&text), Reference::run(&text), "{:?}", text);
    }

    #[test]
    fn the_scanner_agrees_with_the_reference_on_any_text(text in any::<String>()) {
        prop_assert_eq!(scanner(&text), Reference::run(&text), "{:?}", text);
    }
}

#[test]
fn the_reference_reads_the_doc_examples() {
    type Item = (&'static str, &'static str, &'static str);
    let cases: &[(&str, &[Item])] = &[
        (
            "swap 0.5 ETH for 100 USDC",
            &[("amount", "0.5", "ETH"), ("token", "ETH", ""), ("amount", "100", "USDC"), ("token", "USDC", "")],
        ),
        ("5 ETH 100", &[("amount", "5", "ETH"), ("token", "ETH", ""), ("amount", "100", "")]),
        ("USDC 100 ETH", &[("token", "USDC", ""), ("amount", "100", ""), ("token", "ETH", "")]),
        ("100, USDC", &[("amount", "100", ""), ("token", "USDC", "")]),
        ("gas 5 one", &[("amount", "5", "")]),
        ("$20 of USDC", &[("amount", "20", ""), ("token", "USDC", "")]),
        (GOOD, &[("address", GOOD, "ok")]),
    ];
    for (text, expected) in cases {
        let expected: Found = expected.iter().map(|(k, v, l)| (*k, (*v).to_owned(), (*l).to_owned())).collect();
        assert_eq!(Reference::run(text), expected, "{text:?}");
        assert_eq!(scanner(text), expected, "{text:?}");
    }
}

// ---------------------------------------------------------------------------------------------------------------
// The user's view: no amount bound from the user's words is ever another number than one the user sees.
// ---------------------------------------------------------------------------------------------------------------

/// The numbers a person sees in `text` as a screen renders it (invisible characters drawn as nothing): each maximal
/// run of digits joined by single `.` or `,`, read the way `.` is a decimal point — a numeral only when `,` groups
/// thousands (a first group of 1–3 digits not starting with 0, then groups of 3) and `.` appears at most once.
/// Written without the scanner's rules or tables: a walk over the rendered characters.
fn seen_numbers(text: &str) -> Vec<String> {
    let visible: Vec<char> =
        text.chars().filter(|c| !holdfast_core::is_invisible(*c) || c.is_ascii_whitespace()).collect();
    // A character drawn like a point, a space or a fraction bar (no letter, no digit, not ASCII; or `'`) reads as a
    // point between two digits and as nothing after a point or a comma (`0\u{2024}5` and `0.\u{200a}5` read 0.5); a
    // currency sign makes the number after it (one space between at most) a value in that currency, no amount.
    let look_alike = |c: char| c == '\'' || (!c.is_ascii() && !c.is_alphanumeric());
    let currency = |c: char| {
        "$¢£¤¥֏؋߾߿৲৳৻૱௹฿៛꠸﷼﹩＄￠￡￥￦".contains(c)
            || ('\u{20a0}'..='\u{20cf}').contains(&c)
            || ('\u{11fdd}'..='\u{11fe0}').contains(&c)
            || c == '\u{1e2ff}'
            || c == '\u{1ecb0}'
    };
    let mut rendered: Vec<char> = Vec::with_capacity(visible.len());
    let mut k = 0;
    while k < visible.len() {
        let c = visible[k];
        if currency(c) {
            // The number after it is drawn as no number at all.
            rendered.push('¤');
            k += 1;
            if visible.get(k) == Some(&' ') {
                k += 1;
            }
            while visible.get(k).is_some_and(|c| c.is_ascii_digit() || matches!(c, '.' | ',')) {
                rendered.push('¤');
                k += 1;
            }
            continue;
        }
        if look_alike(c) {
            let run = visible[k..].iter().take_while(|c| look_alike(**c) && !currency(**c)).count();
            let before = rendered.last().copied();
            let after = visible.get(k + run).copied();
            match (before, after) {
                (Some('.' | ','), _) => {}
                (Some(b), Some(a)) if b.is_numeric() && a.is_numeric() => rendered.push('.'),
                _ => rendered.extend(&visible[k..k + run]),
            }
            k += run;
            continue;
        }
        rendered.push(c);
        k += 1;
    }
    let mut out = Vec::new();
    let mut i = 0;
    while i < rendered.len() {
        let starts = rendered[i].is_ascii_digit()
            || (matches!(rendered[i], '.' | ',') && rendered.get(i + 1).is_some_and(char::is_ascii_digit));
        if !starts {
            i += 1;
            continue;
        }
        let mut j = i;
        while j < rendered.len()
            && (rendered[j].is_ascii_digit()
                || (matches!(rendered[j], '.' | ',') && rendered.get(j + 1).is_some_and(char::is_ascii_digit)))
        {
            j += 1;
        }
        let run: String = rendered[i..j].iter().collect();
        let (int, frac) = run.split_once('.').unwrap_or((&run, ""));
        let groups: Vec<&str> = int.split(',').collect();
        let grouped = groups.len() == 1
            || (!groups[0].is_empty()
                && groups[0].len() <= 3
                && !groups[0].starts_with('0')
                && groups[1..].iter().all(|g| g.len() == 3));
        if grouped
            && !frac.contains(['.', ','])
            && let Ok(d) = Decimal::parse("amount", &run.replace(',', ""))
        {
            out.push(d.canonical());
        }
        i = j;
    }
    out
}

/// Numbers written with invisible characters, other separators and tokens around them.
fn lookalike_numbers() -> impl Strategy<Value = String> {
    let parts = vec![
        "0",
        "1",
        "5",
        "50",
        "001",
        "000",
        "12",
        ".",
        ",",
        ".",
        ",",
        "\u{200b}",
        "\u{200c}",
        "\u{200d}",
        "\u{2060}",
        "\u{feff}",
        "\u{ad}",
        "\u{202e}",
        "\u{2066}",
        "\u{180e}",
        " ",
        " ",
        "\t",
        "ETH",
        " ETH",
        " USDC",
        "USDC ",
        "send ",
        "x",
        "\u{a0}",
        "\n",
        "\u{2024}",
        "\u{fe52}",
        "\u{ff0e}",
        "\u{b7}",
        "\u{66b}",
        "\u{200a}",
        "\u{2005}",
        "\u{2044}",
        "'",
        "$",
        "\u{20ac}",
        "\u{2014}",
        "\u{201c}",
        "\u{660}",
        "\u{665}",
        "\u{ff10}",
        "\u{bf9}",
        "  ",
        " \u{200a}",
    ];
    proptest::collection::vec(proptest::sample::select(parts), 0..16).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    #[test]
    fn no_amount_bound_from_the_users_words_is_a_number_the_user_does_not_see(
        text in prop_oneof![lookalike_numbers(), adversarial(), any::<String>()],
    ) {
        let seen = seen_numbers(&text);
        for (kind, value, symbol) in scanner(&text) {
            if kind == "amount" && !symbol.is_empty() {
                prop_assert!(seen.contains(&value), "{:?}: bound {} {} but a person sees {:?}", text, value, symbol, seen);
            }
        }
    }
}

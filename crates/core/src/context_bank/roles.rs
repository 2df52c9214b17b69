//! What the user's words ask to do with an amount: send it, sell it, or get it ([`AmountRole`]).
//!
//! An amount authorizes one action, but "swap 1 USDC for ETH and send some of it to 0x…" writes 1 USDC to be
//! sold, not sent, and "buy 0.001 ETH with USDC" writes 0.001 ETH to be bought, not sold. So each amount the user's
//! own words bind to a token is read with the nearest word before it, within its clause, that says what happens to
//! it: a verb of sending ([`super::SENDING_VERBS`]) makes it [`AmountRole::Send`], a verb of selling
//! ([`SELLING_WORDS`]) [`AmountRole::Sell`], a verb of getting ([`GETTING_WORDS`]) [`AmountRole::Get`]; "for",
//! "with", "to" and "into" take their sense from the verb before them (`role_at`). A number or a word that makes the
//! amount a part, a total or something kept ([`UNSAYING_WORDS`]: "half of 10 USDC", "keep 5 USDC") between them, or
//! "worth"/"of" after the amount's token, leaves it no role. A transfer goes by itself only with an amount written to
//! be sent, a swap only with one written to be sold; an amount with no role ("actually 5 USDC for ETH") waits for the
//! user. The words are English, like the hedges; read to fail closed.

use serde::{Deserialize, Serialize};

/// What the user's words ask to do with an amount.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AmountRole {
    /// Written after a verb of sending ("send 5 USDC to alice", "pay bob 5 USDC"): a transfer's amount.
    Send,
    /// Written after a verb of selling ("swap 0.001 ETH for USDC", "buy ETH with 5 USDC"): a swap's amount sold.
    Sell,
    /// Written after a verb of getting or a preposition of what is got ("buy 0.001 ETH", "swap USDC for 5 ETH"):
    /// what the user wants to receive, never an amount to give away.
    Get,
}

impl AmountRole {
    /// The verb the user would write for it, for messages.
    pub fn as_verb(self) -> &'static str {
        match self {
            AmountRole::Send => "send",
            AmountRole::Sell => "sell",
            AmountRole::Get => "get",
        }
    }
}

/// Verbs that make the amount after them one to sell (the nearest role word before it, within its clause).
pub const SELLING_WORDS: [&str; 12] = [
    // "with" is read in `role_at`
    "swap",
    "swapping",
    "sell",
    "selling",
    "convert",
    "converting",
    "exchange",
    "exchanging",
    "trade",
    "trading",
    "spend",
    "spending",
];

/// Verbs that make the amount after them one to get.
pub const GETTING_WORDS: [&str; 10] =
    ["buy", "buying", "purchase", "purchasing", "get", "getting", "receive", "receiving", "earn", "worth"];

/// Words between a role word and the amount that make the amount's part unsaid ("half of 10 USDC", "10% of 50 USDC",
/// "keep 5 USDC", "and 5 USDC"): the amount then has no role. A number between does the same.
pub const UNSAYING_WORDS: [&str; 21] = [
    "of",
    "half",
    "quarter",
    "third",
    "thirds",
    "part",
    "portion",
    "some",
    "rest",
    "most",
    "remainder",
    "percent",
    "except",
    "keep",
    "leave",
    "minus",
    "save",
    "but",
    "than",
    "and",
    "then",
];

/// How far before an amount its role word is looked for, at most (bytes).
const LOOK_BACK: usize = 240;

/// The role of the amount written from byte `at` to `end` of `text`: the nearest role word before it in its clause
/// (back to a sentence's end, a line or paragraph break, a semicolon, a bracket, a dash, or a comma or colon followed by
/// a blank), read with what governs it — "for" is what a swap gets ("swap ETH for 5 USDC"), but what a purchase
/// gives ("buy ETH for 5 USDC"); "with" is what is given after a verb of buying or sending ("buy ETH with 5 USDC",
/// "pay alice with 5 USDC") and no role otherwise ("swap my ETH so I end up with 100 USDC"); "to" and "into" after a
/// verb of selling are what is got ("convert ETH to 100 USDC"). `None` when there is no role word, or
/// a number or one of [`UNSAYING_WORDS`] comes between, or the amount's token is followed by "worth" or "of" ("sell
/// 5 USDC worth of ETH": 5 USDC is a measure, not what is sold).
pub(super) fn role_at(text: &str, at: usize, end: usize) -> Option<AmountRole> {
    if measured(text.get(end..).unwrap_or_default()) {
        return None;
    }
    let mut from = at.saturating_sub(LOOK_BACK);
    while !text.is_char_boundary(from) {
        from += 1;
    }
    let mut before = text.get(from..at)?;
    if from > 0 {
        // A look-back that begins inside a word skips it ("output" read from its "put").
        let partial = before.find(|c: char| !c.is_alphanumeric()).unwrap_or(before.len());
        before = &before[partial..];
    }
    let clause = match last_clause_end(before) {
        Some(end) => &before[end..],
        None => before,
    };
    let words: Vec<String> = super::asked::words(clause).collect();
    // A number (an address is none: "pay 0x… 5 USDC") or an unsaying word between ends the look for a role.
    let unsays = |w: &str| {
        let address = w.len() == 42 && w.starts_with("0x") && w.bytes().skip(2).all(|b| b.is_ascii_hexdigit());
        (!address && w.chars().any(char::is_numeric)) || UNSAYING_WORDS.contains(&w)
    };
    let verb_before = |i: usize| {
        for w in words[..i].iter().rev() {
            let w = w.as_str();
            if unsays(w) {
                return None;
            }
            if super::SENDING_VERBS.contains(&w) {
                return Some(AmountRole::Send);
            } else if SELLING_WORDS.contains(&w) {
                return Some(AmountRole::Sell);
            } else if GETTING_WORDS.contains(&w) {
                return Some(AmountRole::Get);
            }
        }
        None
    };
    for (i, w) in words.iter().enumerate().rev() {
        let w = w.as_str();
        if unsays(w) {
            return None;
        }
        if super::SENDING_VERBS.contains(&w) {
            return Some(AmountRole::Send);
        }
        if SELLING_WORDS.contains(&w) {
            return Some(AmountRole::Sell);
        }
        if GETTING_WORDS.contains(&w) {
            return Some(AmountRole::Get);
        }
        match (w, verb_before(i)) {
            ("for" | "with", Some(AmountRole::Get)) => return Some(AmountRole::Sell),
            ("for", _) => return Some(AmountRole::Get),
            ("with", Some(AmountRole::Send)) => return Some(AmountRole::Send),
            // "swap my ETH so I end up with 100 USDC": what is got, or not said.
            ("with", _) => return None,
            ("to" | "into", Some(AmountRole::Sell)) => return Some(AmountRole::Get),
            _ => {}
        }
    }
    None
}

/// Whether what follows an amount (its token, then a word) makes it a measure: "5 USDC worth of ETH", "5 USDC of it".
fn measured(after: &str) -> bool {
    let mut words = super::asked::words(after.get(..after.len().min(64)).unwrap_or(after));
    let first = words.next();
    let next =
        if first.as_deref().is_some_and(|w| w.chars().all(|c| c.is_alphanumeric()) && !matches!(w, "worth" | "of")) {
            words.next()
        } else {
            first
        };
    matches!(next.as_deref(), Some("worth" | "of"))
}

/// Where the last clause of `text` begins (just after its last clause end), if it has one.
fn last_clause_end(text: &str) -> Option<usize> {
    let mut end = None;
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let next_blank = chars.peek().is_none_or(|(_, n)| n.is_whitespace());
        let ends = match c {
            '!' | '?' | ';' | '\n' | '\r' | '\u{b}' | '\u{c}' | '\u{85}' | '\u{2028}' | '\u{2029}' | '…' | '。'
            | '！' | '？' | '；' | '，' | '：' | '．' | '、' | '(' | ')' | '[' | ']' | '{' | '}' | '—' | '–' => {
                true
            }
            '.' | ',' | ':' => next_blank,
            _ => false,
        };
        if ends {
            end = Some(i + c.len_utf8());
        }
    }
    end
}

#[cfg(test)]
mod tests {
    use super::*;

    fn role(text: &str, amount: &str) -> Option<AmountRole> {
        let at = text.find(amount).unwrap();
        let end = at + amount.find(' ').unwrap_or(amount.len());
        role_at(text, at, end)
    }

    #[test]
    fn the_nearest_word_in_the_clause_says_what_happens_to_an_amount() {
        use AmountRole::{Get, Sell, Send};
        assert_eq!(role("swap 0.001 ETH for USDC", "0.001"), Some(Sell));
        assert_eq!(role("send 5 USDC to alice", "5 USDC"), Some(Send));
        assert_eq!(role("pay bob 5 USDC", "5 USDC"), Some(Send));
        assert_eq!(role("ok, swap 10 USDC for ETH", "10"), Some(Sell));
        assert_eq!(role("I'd like to swap 0.5 ETH for USDC", "0.5"), Some(Sell));
        assert_eq!(role("swap 1 USDC for ETH and send 0.0001 of it to bob", "1 USDC"), Some(Sell));
        assert_eq!(role("buy 0.001 ETH with USDC", "0.001"), Some(Get));
        assert_eq!(role("swap USDC for 0.001 ETH", "0.001"), Some(Get));
        assert_eq!(role("buy ETH with 5 USDC", "5 USDC"), Some(Sell));
        assert_eq!(role("swap 0.5 ETH for 3 USDC", "3 USDC"), Some(Get), "a decimal point ends nothing");
        assert_eq!(role("swap 0.5 ETH and 3 USDC for DAI", "3 USDC"), None, "a number between");
        assert_eq!(role("SEND 5 USDC", "5"), Some(Send), "any case");
        // No such word in the amount's clause.
        assert_eq!(role("actually 5 USDC for ETH", "5"), None);
        assert_eq!(role("swap ETH. 5 USDC is what I have", "5"), None);
        assert_eq!(role("swap, if the price holds, 5 USDC", "5"), None);
        assert_eq!(role("send it\n5 USDC", "5"), None);
        assert_eq!(role("5 USDC", "5"), None);
    }

    #[test]
    fn what_governs_a_preposition_and_what_unsays_a_part_are_read() {
        use AmountRole::{Get, Sell, Send};
        // A target, a measure, a part, a total: not what is sold or sent.
        assert_eq!(role("convert my ETH to 100 USDC", "100"), Some(Get));
        assert_eq!(role("swap ETH to 5 USDC", "5"), Some(Get));
        assert_eq!(role("sell 5 USDC worth of ETH", "5 USDC"), None);
        assert_eq!(role("sell 0.5ETH worth of USDC", "0.5"), None);
        assert_eq!(role("swap half of my 10 USDC for ETH", "10"), None);
        assert_eq!(role("send bob 10% of 50 USDC", "50"), None);
        assert_eq!(role("send the rest to 0xAbc (keep 5 USDC)", "5"), None);
        assert_eq!(role("send the ETH to 0xAbc and keep 5 USDC", "5"), None);
        assert_eq!(role("send the NFT to 0xAbc\u{2028}rent is 5 USDC", "5"), None);
        assert_eq!(role("send the NFT to 0xAbc！rent is 5 USDC", "5"), None);
        // What a purchase gives, and what a payment is made with.
        assert_eq!(role("buy ETH for 5 USDC", "5"), Some(Sell));
        assert_eq!(role("pay alice with 20 USDC", "20"), Some(Send));
        assert_eq!(role("tip bob with 5 USDC", "5"), Some(Send));
        assert_eq!(role("spend 5 USDC on ETH", "5"), Some(Sell));
        assert_eq!(role("send to bob 5 USDC", "5"), Some(Send));
        assert_eq!(role("sell 5 USDC for ETH", "5"), Some(Sell));
        // An address between is no number; "with" after a verb of selling, or of none, says nothing.
        assert_eq!(role("pay 0x90F79bf6EB2c4f870365E785982E1f101E93b906 5 USDC", "5 USDC"), Some(Send));
        assert_eq!(role("swap my ETH so I end up with 100 USDC", "100"), None);
        assert_eq!(role("with 5 USDC", "5"), None);
        assert_eq!(role("buy and keep ETH with 5 USDC", "5"), None, "the verb is behind an unsaying word");
    }

    #[test]
    fn the_look_back_is_bounded_and_never_splits_a_character_or_a_word() {
        let long = format!("send {} 5 USDC", "é".repeat(200));
        assert_eq!(role(&long, "5 USDC"), None, "the verb is too far back");
        for n in 0..8 {
            let text = format!("{}{}send 5 USDC", "x".repeat(n), "€".repeat(100));
            assert_eq!(role(&text, "5 USDC"), Some(AmountRole::Send));
        }
        // The look-back begins at the "p" of "output": no "put" read from it.
        for pad in 0..6 {
            let text = format!("output{} 5 USDC", " x".repeat(115 + pad));
            let at = text.find("5 USDC").unwrap();
            assert_eq!(role_at(&text, at, at + 1), None, "{pad}");
        }
    }
}

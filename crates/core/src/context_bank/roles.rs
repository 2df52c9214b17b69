//! What the user's words ask to do with an amount: send it, sell it, or get it ([`AmountRole`]).
//!
//! An amount authorizes one action, but "swap 1 USDC for ETH and send some of it to 0x…" writes 1 USDC to be
//! sold, not sent, and "buy 0.001 ETH with USDC" writes 0.001 ETH to be bought, not sold. So each amount the user's
//! own words bind to a token is read with the nearest word before it, within its clause, that says what happens to
//! it: a verb of sending ([`super::SENDING_VERBS`]) makes it [`AmountRole::Send`], a verb of selling
//! ([`SELLING_WORDS`]) [`AmountRole::Sell`], a verb of getting or a preposition of what is got ([`GETTING_WORDS`])
//! [`AmountRole::Get`]. A transfer goes by itself only with an amount written to be sent, a swap only with one written
//! to be sold; an amount with no such word before it in its clause ("actually 5 USDC for ETH") has no role and waits
//! for the user. The words are English, like the hedges; read to fail closed.

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

/// Words that make the amount right after them (nearest first, within its clause) one to sell.
pub const SELLING_WORDS: [&str; 11] = [
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
    "with",
];

/// Words that make the amount right after them one to get: verbs of buying and receiving, and the prepositions of
/// what a swap gets ("for", "into", "worth").
pub const GETTING_WORDS: [&str; 12] = [
    "buy",
    "buying",
    "purchase",
    "purchasing",
    "get",
    "getting",
    "receive",
    "receiving",
    "for",
    "into",
    "worth",
    "earn",
];

/// How far before an amount its role word is looked for, at most (bytes).
const LOOK_BACK: usize = 240;

/// The role of the amount written at byte `at` of `text`: the nearest of the words above before it, in its clause
/// (back to a sentence's end, a line break, a semicolon, or a comma or colon followed by a blank). `None` when there
/// is none.
pub(super) fn role_before(text: &str, at: usize) -> Option<AmountRole> {
    let mut from = at.saturating_sub(LOOK_BACK);
    while !text.is_char_boundary(from) {
        from += 1;
    }
    let before = text.get(from..at)?;
    let clause = match last_clause_end(before) {
        Some(end) => &before[end..],
        None => before,
    };
    let words: Vec<String> = super::asked::words(clause).collect();
    words.iter().rev().find_map(|w| {
        let w = w.as_str();
        if super::SENDING_VERBS.contains(&w) {
            Some(AmountRole::Send)
        } else if SELLING_WORDS.contains(&w) {
            Some(AmountRole::Sell)
        } else if GETTING_WORDS.contains(&w) {
            Some(AmountRole::Get)
        } else {
            None
        }
    })
}

/// Where the last clause of `text` begins (just after its last clause end), if it has one.
fn last_clause_end(text: &str) -> Option<usize> {
    let mut end = None;
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let next_blank = chars.peek().is_none_or(|(_, n)| n.is_whitespace());
        let ends = match c {
            '!' | '?' | ';' | '\n' | '\r' | '…' | '。' => true,
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
        role_before(text, text.find(amount).unwrap())
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
        assert_eq!(role("swap 0.5 ETH and 3 USDC for DAI", "3 USDC"), Some(Sell), "a decimal point ends nothing");
        assert_eq!(role("SEND 5 USDC", "5"), Some(Send), "any case");
        // No such word in the amount's clause.
        assert_eq!(role("actually 5 USDC for ETH", "5"), None);
        assert_eq!(role("swap ETH. 5 USDC is what I have", "5"), None);
        assert_eq!(role("swap, if the price holds, 5 USDC", "5"), None);
        assert_eq!(role("send it\n5 USDC", "5"), None);
        assert_eq!(role("5 USDC", "5"), None);
    }

    #[test]
    fn the_look_back_is_bounded_and_never_splits_a_character() {
        let long = format!("send {} 5 USDC", "é".repeat(200));
        assert_eq!(role(&long, "5 USDC"), None, "the verb is too far back");
        for n in 0..8 {
            let text = format!("{}{}send 5 USDC", "x".repeat(n), "€".repeat(100));
            assert_eq!(role(&text, "5 USDC"), Some(AmountRole::Send));
        }
    }
}

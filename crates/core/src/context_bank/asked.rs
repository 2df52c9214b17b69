//! Whether the user's words ask for the amounts they write, or only speak of them.
//!
//! The bank binds an amount to its token whatever the sentence around it says, so "don't send 5 USDC to alice", "did
//! the 5 USDC to alice go through?", "I sent 5 USDC to alice yesterday" and "if ETH is above 3,000, sell 0.5 ETH" each
//! wrote an amount, a token and a recipient. Were they requests, the model could move them by itself: send alice a
//! second 5 USDC, or sell at once. Code cannot read intent, so the message is read to fail closed — every amount of a
//! message that may hedge it waits for the user (one approval), and a plain request still goes by itself. The whole
//! message is read, its quoted parts too (a quote mark left open must not hide an "Actually no"), and the first of
//! these decides:
//! - **declined**: a word of [`DECLINING`] ("don't", "no", "cancel", "nevermind", "I meant") — "send 5 USDC to alice.
//!   Actually no" takes it back after the fact;
//! - **past**: a word of [`PAST`] ("sent", "paid", "got", "did", "already"): the message speaks of value that
//!   already moved — "5 USDC that 0x… paid me" — and the model would move it again;
//! - **condition**: a word of [`CONDITIONS`] ("if", "unless", "once", "after", "tomorrow"): what it depends on is not
//!   checked by code;
//! - **question**: a sentence that ends in `?` (or `？`, or holds `¿`), or opens with one of [`QUESTION_OPENERS`]
//!   ("should I pay 0x… 50 USDC"), unless it is a request: it opens with "please" or "kindly", or with one of
//!   [`REQUEST_OPENERS`] and "you", and then comes one of [`REQUEST_VERBS`] ("can you send 5 USDC to alice?"; "would
//!   it be smart to sell 0.5 ETH?" and "could you estimate the fee to pay 0x… 50 USDC?" are none).
//!
//! Words are runs of letters and digits, case ignored and apostrophes dropped (`'`, `’`, `´`, `` ` ``, `ʼ`, `＇`), so
//! `Don’t` is `dont`; characters that render as nothing ([`crate::is_invisible`], blanks and line breaks aside) are
//! skipped. Sentences end at a line break, `!`, `?`, `;`, `。`, their full-width forms, and a `.` followed by a blank or
//! the end (so `0.5` stays one). These are English words: a request in another language goes by itself as before.

use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// Words that decline, correct or take back what a message asks ("don't", "never", "cancel", "I meant").
pub const DECLINING: [&str; 41] = [
    "not",
    "no",
    "never",
    "nothing",
    "none",
    "nor",
    "neither",
    "nope",
    "dont",
    "doesnt",
    "didnt",
    "wont",
    "cant",
    "cannot",
    "shouldnt",
    "mustnt",
    "isnt",
    "arent",
    "wasnt",
    "werent",
    "havent",
    "hasnt",
    "hadnt",
    "wouldnt",
    "couldnt",
    "neednt",
    "stop",
    "cancel",
    "abort",
    "undo",
    "hold",
    "wait",
    "nvm",
    "nevermind",
    "meant",
    "instead",
    "scratch",
    "forget",
    "ignore",
    "sorry",
    "oops",
];

/// Words that speak of value that already moved, or ask whether it did ("sent", "lost", "did", "yesterday").
pub const PAST: [&str; 34] = [
    "sent",
    "paid",
    "transferred",
    "received",
    "got",
    "gave",
    "given",
    "tipped",
    "swapped",
    "sold",
    "bought",
    "deposited",
    "withdrew",
    "withdrawn",
    "refunded",
    "arrived",
    "already",
    "did",
    "went",
    "happened",
    "whether",
    "pending",
    "lost",
    "took",
    "stole",
    "stolen",
    "drained",
    "moved",
    "charged",
    "spent",
    "yesterday",
    "ago",
    "last",
    "earlier",
];

/// Words that make what a message asks depend on something ("if", "unless", "once", "after", "tomorrow").
pub const CONDITIONS: [&str; 13] = [
    "if", "unless", "when", "whenever", "once", "until", "after", "before", "soon", "later", "tomorrow", "tonight",
    "remind",
];

/// The first words of a question that asks for something when "you" and one of [`REQUEST_VERBS`] follow them ("can
/// you send …?", "would you swap …?").
pub const REQUEST_OPENERS: [&str; 4] = ["can", "could", "would", "will"];

/// The verbs a request asks for ("please send …", "could you swap …?"): after "please", or a request opener and "you",
/// one of them must come (a few words such as "please" or "just" between), or the question is none ("could you
/// estimate the fee to pay 0x… 50 USDC?").
pub const REQUEST_VERBS: [&str; 20] = [
    "send", "pay", "transfer", "give", "tip", "move", "put", "deposit", "withdraw", "bridge", "forward", "return",
    "refund", "swap", "sell", "buy", "convert", "exchange", "trade", "approve",
];

/// The first words of a sentence that asks a question, with or without its `?` ("is this legit: send 50 USDC …",
/// "should I pay 0x… 50 USDC").
pub const QUESTION_OPENERS: [&str; 17] = [
    "should", "is", "are", "am", "was", "were", "what", "whats", "how", "hows", "why", "do", "does", "which", "who",
    "where", "shall",
];

/// Characters read as apostrophes inside a word, and dropped from it.
const APOSTROPHES: [char; 6] = ['\'', '’', '´', '`', 'ʼ', '＇'];

/// How the user's words hedge an amount they wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum HedgeKind {
    /// The message says not to, or takes it back ("don't", "cancel").
    Declined,
    /// The message asks a question that is no request ("is this legit?", "what is 0.5 ETH worth?").
    Question,
    /// The message makes it depend on a condition ("if", "unless", "once").
    Condition,
    /// The message speaks of value that already moved ("I sent 5 USDC to alice", "5 USDC that 0x… paid me").
    Past,
}

/// Why an amount the user wrote is no plain request of their message: the kind, and the word that shows it (as the
/// words are read: lower case, no apostrophe; `?` for a question that gives none).
///
/// ```
/// use holdfast_core::{CoreServices, HedgeKind, config::CoreConfig};
/// let ctx = CoreServices::new(CoreConfig::default()).unwrap().new_session("s");
/// let hedge = |text: &str| {
///     ctx.context_bank.scan_input(text);
///     ctx.context_bank.authorization("5", "USDC").and_then(|a| a.hedge).map(|h| (h.kind, h.word))
/// };
/// assert_eq!(hedge("send 5 USDC to 0x90F79bf6EB2c4f870365E785982E1f101E93b906"), None);
/// assert_eq!(hedge("can you send 5 USDC to 0x90F79bf6EB2c4f870365E785982E1f101E93b906?"), None);
/// assert_eq!(hedge("Don’t send 5 USDC yet"), Some((HedgeKind::Declined, "dont".into())));
/// assert_eq!(hedge("did the 5 USDC go through?"), Some((HedgeKind::Past, "did".into())));
/// assert_eq!(hedge("is 5 USDC a lot?"), Some((HedgeKind::Question, "is".into())));
/// assert_eq!(hedge("if ETH drops, sell 5 USDC"), Some((HedgeKind::Condition, "if".into())));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Hedge {
    /// How the words hedge it.
    pub kind: HedgeKind,
    /// The word that shows it.
    pub word: String,
}

impl Hedge {
    fn new(kind: HedgeKind, word: &str) -> Self {
        Self { kind, word: word.to_owned() }
    }

    /// Why an action with the amount `shown` waits for the user, in a sentence.
    pub fn reason(&self, shown: &str) -> String {
        match self.kind {
            HedgeKind::Declined => {
                format!(
                    "your message with {shown} also says \"{}\": it may not ask for it, so it needs your approval",
                    self.word
                )
            }
            HedgeKind::Question => {
                format!(
                    "your message asks about {shown} (\"{} …?\") rather than for it; it needs your approval",
                    self.word
                )
            }
            HedgeKind::Past => format!(
                "your message with {shown} speaks of what already happened (\"{}\"): it may not ask for it again, so \
                 it needs your approval",
                self.word
            ),
            HedgeKind::Condition => format!(
                "your message makes {shown} depend on a condition (\"{} …\") that holdfast does not check; it needs your \
                 approval",
                self.word
            ),
        }
    }
}

/// Whether `c` belongs to a word: a letter or digit, an apostrophe, or an invisible mark (skipped inside a word).
fn in_word(c: char) -> bool {
    c.is_alphanumeric() || APOSTROPHES.contains(&c) || (crate::is_invisible(c) && !c.is_whitespace())
}

/// Writes `raw` (one word as split by [`in_word`]) into `out` as the module reads it: its letters and digits, lower
/// case.
fn fold_word(raw: &str, out: &mut String) {
    out.clear();
    if raw.is_ascii() {
        out.extend(raw.bytes().filter(u8::is_ascii_alphanumeric).map(|b| char::from(b.to_ascii_lowercase())));
        return;
    }
    for c in raw.chars().filter(|&c| c.is_alphanumeric() && !APOSTROPHES.contains(&c)) {
        out.extend(c.to_lowercase());
    }
}

/// The words of `text` as the module reads them.
pub(super) fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !in_word(c))
        .map(|raw| {
            let mut word = String::new();
            fold_word(raw, &mut word);
            word
        })
        .filter(|w| !w.is_empty())
}

/// Each word of [`DECLINING`], [`PAST`] and [`CONDITIONS`] with its kind (a word in two lists is of the first).
static HEDGE_WORDS: std::sync::LazyLock<HashMap<&'static str, HedgeKind>> = std::sync::LazyLock::new(|| {
    let mut kinds = HashMap::new();
    let tables: [(&[&'static str], HedgeKind); 3] =
        [(&DECLINING, HedgeKind::Declined), (&PAST, HedgeKind::Past), (&CONDITIONS, HedgeKind::Condition)];
    for (table, kind) in tables {
        for word in table {
            kinds.entry(*word).or_insert(kind);
        }
    }
    kinds
});

/// How the words of a message (all of it, quoted parts too) hedge its amounts: the first declining word, else the
/// first word of the past, else the first conditional one, else the first question that is no request. One pass over
/// the words, one buffer for them all.
pub(super) fn message_hedge(text: &str) -> Option<Hedge> {
    let (mut past, mut condition) = (None, None);
    let mut word = String::new();
    let longest = HEDGE_WORDS.keys().map(|w| w.len()).max().unwrap_or(0);
    for raw in text.split(|c: char| !in_word(c)) {
        fold_word(raw, &mut word);
        if word.len() > longest {
            continue;
        }
        match HEDGE_WORDS.get(word.as_str()) {
            Some(HedgeKind::Declined) => return Some(Hedge::new(HedgeKind::Declined, &word)),
            Some(HedgeKind::Past) if past.is_none() => past = Some(word.clone()),
            Some(HedgeKind::Condition) if condition.is_none() => condition = Some(word.clone()),
            _ => {}
        }
    }
    past.map(|w| Hedge::new(HedgeKind::Past, &w))
        .or_else(|| condition.map(|w| Hedge::new(HedgeKind::Condition, &w)))
        .or_else(|| sentences(text).find_map(question_hedge))
}

/// Whether `c` ends a sentence at `at` of `text` (a `.` only before a blank, a line break or the end).
fn ends_sentence(text: &str, at: usize, c: char) -> bool {
    match c {
        '!' | '?' | ';' | '。' | '！' | '？' | '；' => true,
        '.' => text[at + 1..].chars().next().is_none_or(char::is_whitespace),
        c => crate::is_line_break(c),
    }
}

/// The sentences of `text`, each with the character that ends it.
fn sentences(text: &str) -> impl Iterator<Item = &str> {
    let mut start = 0;
    let mut ends = text.char_indices().filter(|&(at, c)| ends_sentence(text, at, c)).map(|(at, c)| at + c.len_utf8());
    std::iter::from_fn(move || {
        if start >= text.len() {
            return None;
        }
        let end = ends.next().unwrap_or(text.len());
        let sentence = &text[start..end];
        start = end;
        Some(sentence)
    })
}

/// The hedge of one sentence when it is a question that is no request: it ends in `?` (`？`), holds `¿`, or opens with
/// one of [`QUESTION_OPENERS`].
fn question_hedge(sentence: &str) -> Option<Hedge> {
    let trimmed = sentence.trim_end();
    let mut words = words(sentence).filter(|w| !w.chars().all(|c| c.is_ascii_digit()));
    let opener = words.next();
    let asks = trimmed.ends_with('?') || trimmed.ends_with('？') || sentence.contains('¿');
    if !asks && !opener.as_deref().is_some_and(|w| QUESTION_OPENERS.contains(&w)) {
        return None;
    }
    // Only a sentence that asks is read whole.
    let all: Vec<String> = opener.into_iter().chain(words).collect();
    let first = all.first().map(String::as_str);
    if is_request(&all) {
        return None;
    }
    Some(Hedge::new(HedgeKind::Question, first.unwrap_or("?")))
}

/// Whether the words of a question make a request: "please" or "kindly", or a request opener and "you", then one of
/// [`REQUEST_VERBS`] (after "please", "kindly", "just", "now" or "also").
fn is_request(words: &[String]) -> bool {
    let rest = match words {
        [first, rest @ ..] if matches!(first.as_str(), "please" | "kindly") => rest,
        [first, you, rest @ ..] if REQUEST_OPENERS.contains(&first.as_str()) && matches!(you.as_str(), "you" | "u") => {
            rest
        }
        _ => return false,
    };
    let mut rest = rest.iter().skip_while(|w| matches!(w.as_str(), "please" | "kindly" | "just" | "now" | "also"));
    rest.next().is_some_and(|verb| REQUEST_VERBS.contains(&verb.as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(text: &str) -> Option<(HedgeKind, String)> {
        message_hedge(text).map(|h| (h.kind, h.word))
    }

    #[test]
    fn a_hedge_word_with_marks_inside_is_read_whatever_its_length_as_written() {
        let dels = format!("Actually don{}t", "\u{7f}".repeat(8));
        let apostrophes = format!("Actually don{}t", "\'\'\'\'\'\'\'\'\'");
        let zero_width = format!("don{}t", "\u{200b}".repeat(5));
        for text in [dels, apostrophes, zero_width] {
            assert_eq!(kind(&text), Some((HedgeKind::Declined, "dont".to_owned())), "{text:?}");
        }
    }

    #[test]
    fn declining_past_and_conditional_words_anywhere() {
        let h = |k: HedgeKind, w: &str| Some((k, w.to_owned()));
        assert_eq!(kind("send 5 USDC to alice"), None);
        assert_eq!(kind("send 5 USDC, then swap"), None);
        assert_eq!(kind("DON'T send 5 USDC"), h(HedgeKind::Declined, "dont"));
        for apostrophe in ['’', '´', '`', 'ʼ', '＇'] {
            assert_eq!(kind(&format!("don{apostrophe}t send 5 USDC")), h(HedgeKind::Declined, "dont"));
        }
        assert_eq!(kind("send 5 USDC to alice. Actually no."), h(HedgeKind::Declined, "no"));
        assert_eq!(kind("send 50 USDC to alice, sorry I meant 5"), h(HedgeKind::Declined, "sorry"));
        assert_eq!(kind("send 5 USDC to alice. nvm"), h(HedgeKind::Declined, "nvm"));
        assert_eq!(kind("do n\u{200b}ot send 5 USDC"), h(HedgeKind::Declined, "not"), "invisible marks");
        assert_eq!(kind("send 5 USDC for the 27\" screen. Actually no"), h(HedgeKind::Declined, "no"), "an open quote");
        assert_eq!(kind("I sent 5 USDC to alice yesterday"), h(HedgeKind::Past, "sent"));
        assert_eq!(kind("5 USDC that 0xabc paid me"), h(HedgeKind::Past, "paid"));
        assert_eq!(kind("so the 5 USDC to alice... did it arrive"), h(HedgeKind::Past, "did"), "no question mark");
        assert_eq!(kind("if I already paid, stop"), h(HedgeKind::Declined, "stop"));
        assert_eq!(kind("sell 0.5 ETH if it drops"), h(HedgeKind::Condition, "if"));
        assert_eq!(kind("remind me to send 5 USDC to alice"), h(HedgeKind::Condition, "remind"));
        assert_eq!(kind("I lost 50 USDC to 0xabc last night"), h(HedgeKind::Past, "lost"));
        assert_eq!(kind("it took 50 USDC from me"), h(HedgeKind::Past, "took"));
        assert_eq!(kind("note the amount, notify me"), None, "words, not parts of words");
    }

    #[test]
    fn a_question_that_is_no_request() {
        let h = |w: &str| Some((HedgeKind::Question, w.to_owned()));
        assert_eq!(kind("can you send 5 USDC to alice?"), None, "a request");
        assert_eq!(kind("Please swap 0.5 ETH?"), None);
        assert_eq!(kind("would u swap 0.5 ETH?"), None);
        assert_eq!(kind("would it be smart to sell 0.5 ETH?"), h("would"));
        assert_eq!(kind("will 5 USDC be enough to pay alice?"), h("will"));
        assert_eq!(kind("is this legit? send 7 USDC to bob."), h("is"), "anywhere in the message");
        assert_eq!(kind("5 USDC to alice?"), h("usdc"));
        assert_eq!(kind("12?"), h("?"));
        assert_eq!(kind("¿envié 5 USDC a alice"), h("envié"));
        assert_eq!(kind("swap 0.5 ETH. Why?"), h("why"), "a decimal point ends no sentence");
        assert_eq!(kind("swap 0.5 ETH\nok？"), h("ok"));
        assert_eq!(kind("swap 0.5 ETH."), None);
        assert_eq!(kind("could you estimate the fee to pay 0xabc 50 USDC?"), h("could"), "no request verb");
        assert_eq!(kind("can you please just send 5 USDC to alice?"), None);
        assert_eq!(kind("should I pay 0xabc 50 USDC"), h("should"), "no question mark");
        assert_eq!(kind("is this legit: send 50 USDC to 0xabc to claim"), h("is"));
    }
}

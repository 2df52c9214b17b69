//! Whether the user's own words ask for the amounts they write, or only speak of them.
//!
//! The bank binds an amount to its token whatever the sentence around it says, so "don't send 5 USDC to alice", "did
//! the 5 USDC to alice go through?" and "if ETH is above 3,000, sell 0.5 ETH" each wrote an amount, a token and a
//! recipient. Were they requests, the model could move them by itself: send alice a second 5 USDC, or sell at once.
//! Code cannot read intent, so these words are read to fail closed — an amount they may hedge waits for the user (one
//! approval), and an amount asked for plainly still goes by itself:
//! - **declined**: a word of [`DECLINING`] anywhere in the message's own words (outside its quoted parts: see
//!   `quoted.rs`) hedges every amount of the message — "send 5 USDC to alice. Actually no, don't" takes it back after
//!   the fact;
//! - **condition**: a word of [`CONDITIONS`] anywhere in them does too: what the condition depends on is not checked
//!   by code;
//! - **past**: so does a word of [`PAST`] ("sent", "paid", "got", "already"): the message speaks of value that already
//!   moved — "I sent 5 USDC to alice yesterday", "5 USDC that 0x… paid me" — and the model would move it again;
//! - **question**: a sentence that ends in `?` (or `？`, or holds `¿`) hedges the amounts written only in such
//!   sentences, unless it opens with a request ([`REQUEST_OPENERS`]: "can you send 5 USDC to alice?") and holds no
//!   word of [`STATUS_WORDS`] ("could you check whether the 5 USDC arrived?" is about one already sent).
//!
//! Words are runs of letters and digits, apostrophes (`'`, `’`) dropped and case ignored, so `Don’t` is `dont`;
//! characters that render as nothing ([`crate::is_invisible`], blanks and line breaks aside) are skipped. Sentences
//! end at a line break, `!`, `?`, `;`, `。`, their full-width forms, and a `.` followed by a blank or the end (so
//! `0.5` stays one).

use serde::{Deserialize, Serialize};

/// Words that decline or take back what a message asks ("don't", "never", "cancel").
pub const DECLINING: [&str; 32] = [
    "not", "no", "never", "nothing", "none", "nor", "neither", "nope", "dont", "doesnt", "didnt", "wont", "cant",
    "cannot", "shouldnt", "mustnt", "isnt", "arent", "wasnt", "werent", "havent", "hasnt", "hadnt", "wouldnt",
    "couldnt", "neednt", "stop", "cancel", "abort", "undo", "hold", "wait",
];

/// Words that make what a message asks depend on something ("if", "unless", "once").
pub const CONDITIONS: [&str; 6] = ["if", "unless", "when", "whenever", "once", "until"];

/// Words that speak of value that already moved ("sent", "received", "already").
pub const PAST: [&str; 17] = [
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
];

/// The first words of a question that asks for something ("can you …?", "please …?").
pub const REQUEST_OPENERS: [&str; 8] = ["can", "could", "would", "will", "please", "may", "shall", "kindly"];

/// Words that make a question one about what happened rather than a request ("did", "whether", "already").
pub const STATUS_WORDS: [&str; 13] =
    ["did", "has", "have", "had", "was", "were", "whether", "already", "went", "gone", "happened", "arrived", "status"];

/// How the user's words hedge an amount they wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum HedgeKind {
    /// The message says not to, or takes it back ("don't", "cancel").
    Declined,
    /// The amount is written only in a question about it ("did the 5 USDC to alice go through?").
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
/// assert_eq!(hedge("did the 5 USDC go through?"), Some((HedgeKind::Question, "did".into())));
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

/// The words of `text` as the module reads them.
fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| {
        !(c.is_alphanumeric() || c == '\'' || c == '’' || (crate::is_invisible(c) && !c.is_whitespace()))
    })
    .map(|w| w.chars().filter(|&c| c.is_alphanumeric()).flat_map(char::to_lowercase).collect::<String>())
    .filter(|w| !w.is_empty())
}

/// The hedge every amount of a message gets from its own words (quoted parts left out): the first declining word, else
/// the first word of the past, else the first conditional one.
pub(super) fn message_hedge(own: &str) -> Option<Hedge> {
    let found = |table: &[&str]| words(own).find(|w| table.contains(&w.as_str()));
    found(&DECLINING)
        .map(|w| Hedge::new(HedgeKind::Declined, &w))
        .or_else(|| found(&PAST).map(|w| Hedge::new(HedgeKind::Past, &w)))
        .or_else(|| found(&CONDITIONS).map(|w| Hedge::new(HedgeKind::Condition, &w)))
}

/// Whether `c` ends a sentence at `at` of `text` (a `.` only before a blank, a line break or the end).
fn ends_sentence(text: &str, at: usize, c: char) -> bool {
    match c {
        '!' | '?' | ';' | '。' | '！' | '？' | '；' => true,
        '.' => text[at + 1..].chars().next().is_none_or(char::is_whitespace),
        c => crate::is_line_break(c),
    }
}

/// `own` with every sentence that asks about something rather than for it replaced by a line break, and the hedge of
/// the first such sentence; `None` when no sentence does.
pub(super) fn without_questions(own: &str) -> Option<(String, Hedge)> {
    let mut out = String::with_capacity(own.len());
    let mut first: Option<Hedge> = None;
    let mut start = 0;
    let mut sentences: Vec<(usize, usize)> = Vec::new();
    for (at, c) in own.char_indices() {
        if ends_sentence(own, at, c) {
            sentences.push((start, at + c.len_utf8()));
            start = at + c.len_utf8();
        }
    }
    sentences.push((start, own.len()));
    for (from, to) in sentences {
        let sentence = &own[from..to];
        match question_hedge(sentence) {
            Some(hedge) => {
                out.push('\n');
                first.get_or_insert(hedge);
            }
            None => out.push_str(sentence),
        }
    }
    first.map(|hedge| (out, hedge))
}

/// The hedge of one sentence when it is a question about something rather than a request.
fn question_hedge(sentence: &str) -> Option<Hedge> {
    let trimmed = sentence.trim_end();
    if !(trimmed.ends_with('?') || trimmed.ends_with('？') || sentence.contains('¿')) {
        return None;
    }
    let mut all = words(sentence).filter(|w| !w.chars().all(|c| c.is_ascii_digit()));
    let opener = all.next();
    if let Some(status) = words(sentence).find(|w| STATUS_WORDS.contains(&w.as_str())) {
        return Some(Hedge::new(HedgeKind::Question, &status));
    }
    match opener {
        Some(w) if REQUEST_OPENERS.contains(&w.as_str()) => None,
        Some(w) => Some(Hedge::new(HedgeKind::Question, &w)),
        None => Some(Hedge::new(HedgeKind::Question, "?")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn declining_and_conditional_words_anywhere() {
        let kind = |t: &str| message_hedge(t).map(|h| (h.kind, h.word));
        assert_eq!(kind("send 5 USDC to alice"), None);
        assert_eq!(kind("DON'T send 5 USDC"), Some((HedgeKind::Declined, "dont".into())));
        assert_eq!(kind("send 5 USDC to alice. Actually no."), Some((HedgeKind::Declined, "no".into())));
        assert_eq!(kind("do n\u{200b}ot send 5 USDC"), Some((HedgeKind::Declined, "not".into())), "invisible marks");
        assert_eq!(kind("sell 0.5 ETH if it drops"), Some((HedgeKind::Condition, "if".into())));
        assert_eq!(kind("if it drops, don't sell"), Some((HedgeKind::Declined, "dont".into())), "declined first");
        assert_eq!(kind("note the amount, notify me"), None, "words, not parts of words");
        assert_eq!(kind("send 5 USDC, then swap"), None);
        assert_eq!(kind("I sent 5 USDC to alice yesterday"), Some((HedgeKind::Past, "sent".into())));
        assert_eq!(kind("5 USDC that 0xabc paid me"), Some((HedgeKind::Past, "paid".into())));
        assert_eq!(kind("if I already paid, stop"), Some((HedgeKind::Declined, "stop".into())));
        assert_eq!(kind("if it arrived, swap 5 USDC"), Some((HedgeKind::Past, "arrived".into())));
    }

    #[test]
    fn questions_about_something_are_left_out() {
        let q = |t: &str| without_questions(t).map(|(own, h)| (own, h.word));
        assert_eq!(q("send 5 USDC to alice"), None);
        assert_eq!(q("can you send 5 USDC to alice?"), None, "a request");
        assert_eq!(q("Please swap 0.5 ETH?"), None);
        assert_eq!(q("did the 5 USDC to alice go through?"), Some(("\n".into(), "did".into())));
        assert_eq!(q("could you check whether 5 USDC arrived?"), Some(("\n".into(), "whether".into())));
        assert_eq!(q("is this legit? send 7 USDC to bob."), Some(("\n send 7 USDC to bob.".into(), "is".into())));
        assert_eq!(q("5 USDC to alice?"), Some(("\n".into(), "usdc".into())));
        assert_eq!(q("0.5 ETH?"), Some(("\n".into(), "eth".into())));
        assert_eq!(q("12?"), Some(("\n".into(), "?".into())));
        assert_eq!(q("¿envié 5 USDC a alice"), Some(("\n".into(), "envié".into())));
        assert_eq!(q("swap 0.5 ETH. Why?"), Some(("swap 0.5 ETH.\n".into(), "why".into())), "a decimal point stays");
        assert_eq!(q("sent 5 USDC\nok？"), Some(("sent 5 USDC\n\n".into(), "ok".into())));
    }
}

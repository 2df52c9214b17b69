//! The scanner: built once from the token and network tables, it reads one message into items.

use super::*;

/// What a word of the text is on its own.
#[derive(Debug, Clone, Copy)]
pub(super) enum WordKind {
    /// A token symbol (index into `ContextScanner::symbols`).
    Token(usize),
    /// A network name or one-word alias (index into `ContextScanner::networks`).
    Network(usize),
}

/// A network name or alias of several words ("base mainnet", "base-mainnet"), filed under its first word.
#[derive(Debug)]
pub(super) struct Phrase {
    /// The whole name, ASCII lower case.
    pub(super) folded: Box<[u8]>,
    pub(super) network: usize,
}

/// What a word of the text can begin.
#[derive(Debug, Default)]
pub(super) struct WordEntry {
    /// The word by itself: a token symbol, else a network name. Token symbols are filed first and the first entry
    /// wins, so a network name spelled like a symbol is the symbol.
    pub(super) kind: Option<WordKind>,
    /// Multi-word network names whose first word this is, longest first.
    pub(super) phrases: Vec<Phrase>,
}

/// A token symbol as the scanner checks and reports it.
#[derive(Debug)]
pub(super) struct SymbolEntry {
    pub(super) symbol: String,
    pub(super) upper: String,
    pub(super) name: String,
    pub(super) loose_case: bool,
}

/// The words (lower case) that, right before an address-book name, make it the recipient of the message's amounts.
pub const RECIPIENT_CUES: [&str; 8] = ["to", "pay", "send", "give", "tip", "into", "→", "->"];

fn is_word(c: Option<char>) -> bool {
    c.is_some_and(|c| c.is_alphanumeric() || c == '_')
}

/// Verbs of sending: "to" and "into" are recipient cues only in a message that writes one of them ("send 5 USDC to
/// 0x…", "put 5 USDC into my savings"), not in "I lost 50 USDC to 0x…" or "can you look into 0x…?".
pub const SENDING_VERBS: [&str; 22] = [
    "send",
    "sending",
    "pay",
    "paying",
    "transfer",
    "transferring",
    "give",
    "tip",
    "move",
    "put",
    "deposit",
    "withdraw",
    "bridge",
    "forward",
    "wire",
    "return",
    "refund",
    "reimburse",
    "repay",
    "split",
    "donate",
    "sponsor",
];

/// Whether `text` writes one of [`SENDING_VERBS`].
fn sends(text: &str) -> bool {
    super::asked::words(text).any(|w| SENDING_VERBS.contains(&w.as_str()))
}

/// Whether `before` (lower case) ends with one of [`RECIPIENT_CUES`], as a word of its own, and blanks (spaces, tabs,
/// no-break spaces: whitespace that does not end a line). "to" and "into" count only when the message `sends`.
fn after_a_cue(before: &str, sends: bool) -> bool {
    let before = without_trailing_blanks(before);
    RECIPIENT_CUES.iter().filter(|cue| sends || !matches!(**cue, "to" | "into")).any(|cue| {
        before.strip_suffix(cue).is_some_and(|rest| {
            let first = cue.chars().next();
            !first.is_some_and(char::is_alphanumeric) || !is_word(rest.chars().next_back())
        })
    })
}

/// A user's message as the address reads see it: folded to lower case once, whether it writes a verb of sending, and
/// where it writes each address (`0x` and 40 hex digits, in lower case). Built once per message, so reading a message
/// that writes many addresses costs one pass over it, not one per address.
pub(super) struct Said {
    folded: String,
    sending: bool,
    places: HashMap<String, Vec<usize>>,
}

impl Said {
    /// Reads `text`.
    pub(super) fn new(text: &str) -> Self {
        let folded = text.to_lowercase();
        let sending = sends(&folded);
        let mut places: HashMap<String, Vec<usize>> = HashMap::new();
        let bytes = folded.as_bytes();
        for at in memchr::memmem::find_iter(bytes, b"0x") {
            // `x` is no hex digit, so two such places never overlap.
            if let Some(written) = bytes.get(at..at + 42)
                && written[2..].iter().all(u8::is_ascii_hexdigit)
            {
                places.entry(String::from_utf8_lossy(written).into_owned()).or_default().push(at);
            }
        }
        Self { folded, sending, places }
    }

    /// Where the message writes `address` (any case), in the folded text.
    fn places(&self, address: &str) -> &[usize] {
        self.places.get(&address.to_ascii_lowercase()).map_or(&[], Vec::as_slice)
    }
}

/// The words of `text` shaped like an address that the scanner reads as none: 41 to 44 letters, digits and invisible
/// marks (an address's 42, give or take a mark; a bare 40-digit commit hash is none), at least 30 of them digits or
/// hex letters, and not `0x` and 40 hex digits (a letter O for a zero, a Cyrillic
/// `е`, a zero-width space inside, a full-width `０ｘ`), and every word beginning with `0x` of at least six letters
/// and digits that is no address and no 32-byte hash (the first part of an address wrapped onto two lines, one with a
/// digit too few). Each as written, invisible marks shown as `\u{…}`.
pub(super) fn unreadable_addresses(text: &str) -> Vec<String> {
    let inside = |c: char| c.is_alphanumeric() || (crate::is_invisible(c) && !c.is_whitespace());
    // Hex digits, other digits, and the letters drawn like them (full-width, Cyrillic `а А В с С е Е ԁ о О х`, Latin
    // `O o l I`).
    let hexish = |c: &char| {
        c.is_ascii_hexdigit()
            || c.is_numeric()
            || matches!(
                c,
                'ａ'..='ｆ' | 'Ａ'..='Ｆ' | 'а' | 'А' | 'В' | 'с' | 'С' | 'е' | 'Е' | 'ԁ' | 'о' | 'О' | 'х' | 'O' | 'o' | 'l' | 'I'
            )
    };
    let clean = |w: &str| {
        w.len() == 42
            && w.get(..2).is_some_and(|p| p.eq_ignore_ascii_case("0x"))
            && w[2..].bytes().all(|b| b.is_ascii_hexdigit())
    };
    let mut out: Vec<String> = Vec::new();
    let mut seen: HashSet<String> = HashSet::new();
    // Only runs of at least 41 bytes with no ASCII whitespace or punctuation can hold such a word (an ASCII control
    // character is an invisible mark, inside a word): found byte by byte.
    let bytes = text.as_bytes();
    let mut runs = Vec::new();
    let mut start = 0;
    for (at, b) in bytes.iter().enumerate() {
        let in_a_word =
            !b.is_ascii() || b.is_ascii_alphanumeric() || (b.is_ascii_control() && !b.is_ascii_whitespace());
        if !in_a_word {
            if at - start >= 41 {
                runs.push(&text[start..at]);
            }
            start = at + 1;
        }
    }
    if bytes.len() - start >= 41 {
        runs.push(&text[start..]);
    }
    for word in runs.into_iter().flat_map(|run| run.split(|c: char| !inside(c))) {
        let n = word.chars().filter(|c| !crate::is_invisible(*c)).count();
        if (41..=44).contains(&n) && word.chars().filter(hexish).count() >= 30 && !clean(word) {
            let shown = super::rules::ambiguous_item(word).value;
            if seen.insert(shown.clone()) {
                out.push(shown);
            }
        }
    }
    // A word beginning with `0x` that is no address — the first part of one wrapped onto two lines or split by a
    // space, one with a digit too few or with letters of another script or invisible marks inside, one glued to a
    // `_` (`_0x…_`, markdown's emphasis, which the scanner reads as no address) — is read as a broken address; an
    // address and a 32-byte hash (`0x` and 40 or 64 hex digits, standing alone) are none.
    let in_the_word = |c: char| c.is_alphanumeric() || c == '_' || (crate::is_invisible(c) && !c.is_whitespace());
    for at in memchr::memmem::find_iter(bytes, b"0x").chain(memchr::memmem::find_iter(bytes, b"0X")) {
        let before = text[..at].chars().next_back();
        if before.is_some_and(char::is_alphanumeric) {
            continue;
        }
        let len = text[at..].char_indices().find(|&(_, c)| !in_the_word(c)).map_or(text.len() - at, |(i, _)| i);
        let word = &text[at..at + len];
        let hex = word[2..].bytes().all(|b| b.is_ascii_hexdigit());
        let address_or_hash = hex && matches!(len, 42 | 66) && before != Some('_');
        if word.chars().count() >= 6 && !address_or_hash {
            let shown = super::rules::ambiguous_item(word).value;
            if seen.insert(shown.clone()) {
                out.push(shown);
            }
        }
    }
    out
}

/// Whether every place the message writes `address` (ignoring case) comes right after the word "from" and blanks: the
/// message names it as a sender ("I got 5 USDC from 0x…"), never as where anything goes.
pub(super) fn only_as_a_sender(said: &Said, address: &str) -> bool {
    let places = said.places(address);
    !places.is_empty()
        && places.iter().all(|&at| {
            without_trailing_blanks(&said.folded[..at])
                .strip_suffix("from")
                .is_some_and(|rest| !is_word(rest.chars().next_back()))
        })
}

/// Words that may stand between a recipient cue and the address it names ("to my wallet 0x…", "to the address 0x…").
pub const ADDRESS_FILLERS: [&str; 12] =
    ["the", "my", "this", "that", "his", "her", "their", "our", "your", "address", "wallet", "account"];

/// Whether `text` writes `address` (ignoring case) at least once as where something goes: right after one of
/// [`RECIPIENT_CUES`] ("send 5 USDC to 0x…", "pay 0x… 5 USDC", "5 USDC → 0x…"; "to" and "into" only in a message that
/// writes one of [`SENDING_VERBS`]), with blanks, at most three of
/// [`ADDRESS_FILLERS`] ("to my wallet 0x…") and an opening `` ` ``, `(`, `<`, `[` or `:` between, on one line. An
/// address written anywhere else — "from 0x…", "0x… got hacked", "the token contract 0x…" — is no recipient of the
/// message's amounts.
pub(super) fn as_a_recipient(said: &Said, address: &str) -> bool {
    let (folded, sending) = (&said.folded, said.sending);
    said.places(address).iter().any(|&at| {
        let opening =
            |c: char| matches!(c, '`' | '(' | '<' | '[' | ':') || (c.is_whitespace() && !crate::is_line_break(c));
        let mut before = folded[..at].trim_end_matches(opening);
        for _ in 0..=3 {
            if after_a_cue(before, sending) {
                return true;
            }
            let trimmed = without_trailing_blanks(before);
            let word_start = trimmed
                .rfind(|c: char| !is_word(Some(c)))
                .map_or(0, |i| i + trimmed[i..].chars().next().map_or(1, char::len_utf8));
            if !ADDRESS_FILLERS.contains(&&trimmed[word_start..]) || word_start == trimmed.len() {
                return false;
            }
            before = &trimmed[..word_start];
        }
        false
    })
}

/// `text` without the blanks it ends with: whitespace that does not end a line ([`crate::is_line_break`]).
fn without_trailing_blanks(text: &str) -> &str {
    text.trim_end_matches(|c: char| c.is_whitespace() && !crate::is_line_break(c))
}

/// The immutable scanner built from the token and network tables; shared by every session.
#[derive(Debug)]
pub struct ContextScanner {
    pub(super) words: WordTable,
    /// Network names and aliases that begin with a character that is no word character (`(base)`), longest first.
    pub(super) punctuated: Vec<Phrase>,
    /// The first bytes of `punctuated`.
    pub(super) punctuated_first: Box<[bool; 256]>,
    pub(super) symbols: Vec<SymbolEntry>,
    pub(super) networks: Vec<(String, String)>,
    /// `[context_bank] decimal_comma`: `,` separates the fraction and `.` the thousands (`1.000,5`).
    pub(super) decimal_comma: bool,
    /// The address book's names, as configured and folded to lower case ([`ContextScanner::with_recipient_names`]).
    recipient_names: Vec<(String, String)>,
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
        Ok(Self {
            words: WordTable::build(words),
            punctuated,
            punctuated_first,
            symbols,
            networks: nets,
            decimal_comma: false,
            recipient_names: Vec::new(),
        })
    }

    /// The same scanner knowing the address book's `names`, so that an authorization records which of them its
    /// message names ([`ContextScanner::recipient_names_in`]): an amount goes by itself to an address-book recipient
    /// only when the user named that recipient with it.
    ///
    /// ```
    /// use holdfast_core::ContextScanner;
    /// use holdfast_core::config::{NetworkTable, TokenTable};
    ///
    /// let scanner = ContextScanner::new(&TokenTable::builtin(), &NetworkTable::builtin())
    ///     .unwrap()
    ///     .with_recipient_names(["alice".to_owned(), "Bob".to_owned()]);
    /// assert_eq!(scanner.recipient_names_in("send 5 USDC to Alice, not to bobby"), ["alice"]);
    /// ```
    #[must_use]
    pub fn with_recipient_names(mut self, names: impl IntoIterator<Item = String>) -> Self {
        let named = names.into_iter().filter(|n| !n.trim().is_empty());
        self.recipient_names = named
            .map(|n| {
                let folded = n.to_lowercase();
                (n, folded)
            })
            .collect();
        self
    }

    /// The address book's names `text` writes as recipients, as the address book spells them: as words of their own
    /// (ignoring case; not as part of a longer word) right after one of [`RECIPIENT_CUES`] ("to" and "into" only in a
    /// message that writes one of [`SENDING_VERBS`]: "send 5 USDC to alice", not "I lost 5 USDC to alice"; "pay bob",
    /// "send carol 5 USDC", "→ dave"). A name written anywhere else ("alice sent me 5 USDC", "from bob", "as carol
    /// said") is no recipient: an amount goes there only when the user asks. When the text names a recipient and also
    /// writes other names of the book ("to alice and bob", "to alice, as bob said"), every name it writes is returned,
    /// so that none of them is the message's one recipient.
    pub fn recipient_names_in(&self, text: &str) -> Vec<String> {
        if self.recipient_names.is_empty() {
            return Vec::new();
        }
        let folded = text.to_lowercase();
        let sending = sends(&folded);
        let mut written = Vec::new();
        let mut recipients = 0;
        for (configured, name) in &self.recipient_names {
            let places: Vec<usize> = folded
                .match_indices(name.as_str())
                .map(|(at, _)| at)
                .filter(|&at| {
                    !is_word(folded[..at].chars().next_back()) && !is_word(folded[at + name.len()..].chars().next())
                })
                .collect();
            if places.is_empty() {
                continue;
            }
            if places.iter().any(|&at| after_a_cue(&folded[..at], sending)) {
                recipients += 1;
            }
            written.push(configured.clone());
        }
        if recipients == 0 { Vec::new() } else { written }
    }

    /// The same scanner reading numbers the way a user whose locale writes a decimal comma does (`[context_bank]
    /// decimal_comma = true`): `0,5` is one half and `1.000,25` a thousand and a quarter, while `0.5` and
    /// `1,000.25` bind nothing. See "Amounts exactly as written".
    #[must_use]
    pub fn with_decimal_comma(mut self, decimal_comma: bool) -> Self {
        self.decimal_comma = decimal_comma;
        self
    }

    /// Whether this scanner reads `,` as the decimal separator.
    pub fn decimal_comma(&self) -> bool {
        self.decimal_comma
    }

    /// Extracts items from `text` in order of appearance (not deduplicated).
    pub fn scan(&self, text: &str) -> Vec<ContextItem> {
        self.scan_found(text, false).items
    }

    /// [`ContextScanner::scan`], with the role of each bound amount that has one (its index in the items; see
    /// `roles.rs`).
    pub(super) fn scan_with_roles(&self, text: &str) -> (Vec<ContextItem>, Vec<(usize, super::AmountRole)>) {
        let found = self.scan_found(text, true);
        (found.items, found.roles.unwrap_or_default())
    }

    fn scan_found<'t>(&self, text: &'t str, with_roles: bool) -> Found<'t> {
        // One pass, 64 bytes at a time: `classify` marks the word starts worth a look and the digits glued to a word
        // character before them; `WordTable::candidates` keeps the starts that may be a word of the table, a number
        // or an address, and `word_at` reads those. A glued digit (`abc123`, `v1.2`) begins no amount, and neither
        // does anything dots join to its number. Network names that begin with punctuation, if the table has any,
        // are looked for at their first byte.
        let bytes = text.as_bytes();
        let mut found = Found {
            items: Vec::new(),
            last_address: None,
            last_token: None,
            claimed: usize::MAX,
            roles: with_roles.then(Vec::new),
        };
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
                    skip_word(text, number_run(text, at).end)
                } else if marked(candidates) {
                    self.word_at(text, at, &mut found)
                } else {
                    at
                };
                todo &= bits_from(resume.saturating_sub(block)) & !(1 << bit);
            }
            block += BLOCK;
        }
        found
    }

    /// The bytes of the block (bit `i`: byte `1 + i` of `window`) that may begin a punctuated network name.
    pub(super) fn punctuated_starts(&self, window: &Window) -> u64 {
        window[1..=BLOCK]
            .iter()
            .enumerate()
            .fold(0, |m, (i, &b)| m | u64::from(self.punctuated_first[usize::from(b)]) << i)
    }

    /// A punctuated network name written at `at`: pushes the network when it stands on its own (no word character
    /// either side) and returns its end, where scanning resumes either way. `None` when none is written there.
    pub(super) fn punctuated_at(&self, text: &str, at: usize, out: &mut Vec<ContextItem>) -> Option<usize> {
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
    pub(super) fn word_at<'t>(&self, text: &'t str, start: usize, found: &mut Found<'t>) -> usize {
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
    pub(super) fn known_word(
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
    pub(super) fn address_at<'t>(&self, text: &'t str, start: usize, end: usize, found: &mut Found<'t>) -> usize {
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

    pub(super) fn accept_symbol(&self, i: usize, written: &str) -> Option<&SymbolEntry> {
        let sym = self.symbols.get(i)?;
        let exact = written == sym.symbol || written == sym.upper;
        let loose = sym.loose_case && {
            let mut chars = written.chars();
            let first_ok = chars.next().is_some();
            first_ok && chars.all(|c| !c.is_ascii_uppercase())
        };
        (exact || loose).then_some(sym)
    }

    pub(super) fn network_item(&self, i: usize) -> Option<ContextItem> {
        let (name, display) = self.networks.get(i)?;
        Some(ContextItem {
            value: name.clone(),
            item_type: ItemType::Network,
            label: Some(display.clone()),
            flags: Vec::new(),
        })
    }

    /// Reads the number starting at the digit `at`, a word start. Pushes the amount, bound to an adjacent token if
    /// any (and a token glued to it), and returns where scanning resumes. See "Binding an amount to its token" and
    /// "Amounts exactly as written".
    pub(super) fn amount_at(&self, text: &str, at: usize, found: &mut Found<'_>) -> usize {
        let bytes = text.as_bytes();
        // ".5" (",5" with a decimal comma): a leading separator belongs to the number. One joined to a word before
        // it makes it no amount (`x.5`, and `0x…0.5` after an address as well as `0x…f.5`): `word_start` sees it.
        let mut start = at;
        if at > 0 && bytes[at - 1] == self.decimal_separator() {
            start = at - 1;
        }
        let run = number_run(text, at);
        let end = run.end;
        let joined = |i: Option<usize>, j: Option<usize>| {
            matches!(
                (i.map(|i| bytes[i]), j.map(|j| bytes.get(j).copied())),
                (Some(b'-' | b'/' | b':'), Some(Some(b'0'..=b'9')))
            )
        };
        let before_joined = start >= 2 && joined(Some(start - 1), Some(start - 2));
        let after_joined = end < bytes.len() && joined(Some(end), Some(end + 1));
        if !word_start(text, start) || before_joined || after_joined {
            return skip_word(text, end);
        }
        let continues = continues_a_number(text, start, char::from(self.decimal_separator()));
        // Shown with the separator before it when that is what makes it ambiguous (`,5`).
        let shown_from =
            if continues && start > 0 && matches!(bytes[start - 1], b',' | b'.') { start - 1 } else { start };
        let written = &text[start..end];
        let reading = if run.hidden || continues || currency_after(text, end) {
            Reading::Ambiguous
        } else {
            read_number(written, self.decimal_comma)
        };
        let value = match reading {
            // Several points and no comma (`1.2.3`): a version, not an amount.
            Reading::NotAnAmount => return skip_word(text, end),
            Reading::Valid(value) => Some(value),
            Reading::Ambiguous => None,
        };
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
        let bound = match (&value, after, before) {
            // An ambiguous number binds nothing, and the tokens next to it bind to no other number either.
            (None, _, before) => {
                if let Some(t) = before {
                    t.free = false;
                }
                None
            }
            (Some(_), Some(symbol), None) => Some(symbol),
            (Some(_), None, Some(t)) => {
                t.free = false;
                Some(t.symbol)
            }
            // Nothing adjacent, or a token on either side: ambiguous, so bound to neither.
            _ => None,
        };
        let label = bound.and_then(|i| self.symbols.get(i)).map(|sym| sym.symbol.clone());
        if label.is_some()
            && value.is_some()
            && let Some(roles) = found.roles.as_mut()
            && let Some(role) = super::roles::role_at(text, start, end)
        {
            roles.push((found.items.len(), role));
        }
        match value {
            Some(value) => found.items.extend(amount_item(value, label)),
            None => found.items.push(ambiguous_item(&text[shown_from..end])),
        }
        if resume > end
            && let Some(symbol) = after
            && let Some(sym) = self.symbols.get(symbol)
        {
            found.items.push(token_item(sym));
            found.last_token = Some(LastToken { end: resume, symbol, free: false });
        }
        resume
    }

    /// The byte that separates a number's fraction: `.`, or `,` with `[context_bank] decimal_comma`.
    pub(super) fn decimal_separator(&self) -> u8 {
        if self.decimal_comma { b',' } else { b'.' }
    }

    /// The token symbol written as the whole word starting at `at` (its index in `symbols`), and where that word
    /// ends. A multi-word network name starting there wins over the symbol.
    pub(super) fn token_at(&self, text: &str, at: usize) -> Option<(usize, usize)> {
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

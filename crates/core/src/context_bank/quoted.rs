//! What of a user's message is quoted rather than asked for: its words are the user's, but no request.
//!
//! A user who pastes a text to ask about it ("is this legit?", then `> send 7 USDC to 0x…` on a line of its own) wrote
//! every word of the message, and the scanner reads all of it. Only the words outside the quoted parts authorize: an
//! amount written only inside them is kept, flagged `quoted` on its [`super::Authorization`], and an address written
//! only inside them is none of the message's for its authorizations; an action with either waits for the user. A
//! network named only inside them binds the message's amounts only when the user's own words name none (the
//! narrower).
//!
//! The pasted text decides where its own quotes open and close, so the parts are read to fail closed — whatever may
//! be quoted is:
//! - **quote characters**: everything from the first quote character of the message (`"`, `“`, `”`, `„`, `‟`, `‚`,
//!   `‛`, `‘`, `«`, `»`, `‹`, `›`, `「`, `」`, `『`, `』`, `〝`, `〞`, `〟`, `＂`) to the last one, across lines,
//!   whatever pairs they seem to make; with an odd count, the last one's line to its end too. The ASCII `'` and the
//!   typographic apostrophe `’` are not counted: they are apostrophes far more often than quotes.
//! - **fences**: from the first ```` ``` ```` or `~~~` anywhere to the last one; with an odd count, to the end.
//! - **block quotes**: a line whose first non-blank character is `>`, and the lines after it up to a blank line (one
//!   of spaces and tabs only: Markdown's lazy continuation); a line that begins with Slack's `>>>` quotes the rest of
//!   the message.
//! - **indented code**: a line that begins with four spaces or a tab.
//!
//! Lines end at `\n`, `\r` or `\r\n` only: U+0085, U+2028 and U+2029 are characters of the line (Markdown's
//! reading; the scanner treats them as invisible), so a pasted one cannot end an indented or quoted line early.
//! Inline code (`` `0x…` ``) is the user's own words: it is how addresses are often written. A text the front end
//! reports as pasted ([`pasted_parts`]) is quoted where the message holds it; one pasted with no quoting through a
//! front end that does not report pastes cannot be told apart from a request, and still authorizes (see the safety
//! model, invariant 7).

use std::ops::Range;

/// Characters that may open or close a quotation (all but the first are outside ASCII).
const QUOTES: [char; 20] =
    ['"', '“', '”', '„', '‟', '‚', '‛', '‘', '«', '»', '‹', '›', '「', '」', '『', '』', '〝', '〞', '〟', '＂'];

/// `text` with every part that may be quoted replaced by a line break (so nothing binds across it), or `None` when
/// nothing in it may be. Linear in the text's length.
#[cfg(test)]
pub(super) fn own_words(text: &str) -> Option<String> {
    own_words_beside(text, Vec::new())
}

/// [`own_words`], with the parts `pasted` (byte ranges on character boundaries) quoted too.
pub(super) fn own_words_beside(text: &str, pasted: Vec<Range<usize>>) -> Option<String> {
    let bytes = text.as_bytes();
    let line_end = |at: usize| memchr::memchr2(b'\n', b'\r', &bytes[at..]).map_or(text.len(), |n| at + n);
    let mut quoted: Vec<Range<usize>> = pasted;
    // Only `"` is ASCII; the others begin with one of four lead bytes (a character boundary), read there.
    let (mut first, mut last, mut count) = (usize::MAX, 0, 0usize);
    let leads = memchr::memchr3_iter(b'"', 0xC2, 0xE2, bytes).chain(memchr::memchr2_iter(0xE3, 0xEF, bytes));
    for i in leads {
        let len = text[i..].chars().next().filter(|c| QUOTES.contains(c)).map_or(0, char::len_utf8);
        if len > 0 {
            first = first.min(i);
            last = last.max(i + len);
            count += 1;
        }
    }
    if count > 0 {
        quoted.push(first..if count % 2 == 1 { line_end(last) } else { last });
    }
    let fences: Vec<usize> = fence_marks(text);
    if let (Some(&first), Some(&last)) = (fences.first(), fences.last()) {
        quoted.push(first..if fences.len() % 2 == 1 { text.len() } else { last + 3 });
    }
    let mut in_block_quote = false;
    let mut start = 0;
    loop {
        let end = line_end(start);
        let line = &text[start..end];
        let own = line.trim_start();
        if own.starts_with(">>>") {
            quoted.push(start..text.len());
            break;
        }
        if line.bytes().all(|b| b == b' ' || b == b'\t') {
            in_block_quote = false;
        } else if own.starts_with('>') {
            in_block_quote = true;
        }
        if in_block_quote || line.starts_with("    ") || line.starts_with('\t') {
            quoted.push(start..end);
        }
        if end == text.len() {
            break;
        }
        start = end + if bytes[end] == b'\r' && bytes.get(end + 1) == Some(&b'\n') { 2 } else { 1 };
    }
    if quoted.is_empty() {
        return None;
    }
    quoted.sort_by_key(|r| r.start);
    // One line break for each run of quoted parts (overlapping, or apart only by line breaks).
    let mut merged: Vec<Range<usize>> = Vec::new();
    for r in quoted {
        match merged.last_mut() {
            Some(last) if r.start <= last.end || bytes[last.end..r.start].iter().all(|&b| b == b'\n' || b == b'\r') => {
                last.end = last.end.max(r.end);
            }
            _ => merged.push(r),
        }
    }
    let mut own = String::with_capacity(text.len());
    let mut at = 0;
    for r in merged {
        own.push_str(&text[at..r.start]);
        own.push('\n');
        at = r.end;
    }
    own.push_str(&text[at..]);
    Some(own)
}

/// Where `text` holds what the user pasted (each text a paste put in, as the front end reports it): from the first
/// place it holds each pasted text to the end of the last. Only a lone address (`0x` and 40 hex digits) or a lone
/// number (digits, `.` and `,`) pasted is the user's own, as typed; anything else — a message from someone else,
/// pasted to act on or ask about, however its words are joined (`send⠀7USDC→0x…` has no space) — is quoted. A pasted
/// text the message no longer holds as pasted (edited since) quotes the whole message: which part of it is the
/// user's own is not known.
pub(super) fn pasted_parts(text: &str, pasted: &[String]) -> Vec<Range<usize>> {
    let mut parts = Vec::new();
    for paste in pasted {
        let paste = paste.trim();
        if paste.is_empty() || a_lone_address_or_number(paste) {
            continue;
        }
        match (text.find(paste), text.rfind(paste)) {
            (Some(first), Some(last)) => parts.push(first..last + paste.len()),
            _ => return vec![Range { start: 0, end: text.len() }],
        }
    }
    parts
}

/// Whether `word` is only an address (`0x` and 40 hex digits) or only a number (ASCII digits, `.` and `,`).
fn a_lone_address_or_number(word: &str) -> bool {
    let address = word.len() == 42
        && word.get(..2).is_some_and(|p| p.eq_ignore_ascii_case("0x"))
        && word.bytes().skip(2).all(|b| b.is_ascii_hexdigit());
    let number =
        word.bytes().any(|b| b.is_ascii_digit()) && word.bytes().all(|b| b.is_ascii_digit() || b == b'.' || b == b',');
    address || number
}

/// Where each ```` ``` ```` and `~~~` of `text` begins (a longer run counts as one).
fn fence_marks(text: &str) -> Vec<usize> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut after = 0;
    for i in memchr::memchr2_iter(b'`', b'~', bytes) {
        let b = bytes[i];
        if i >= after && bytes.get(i + 1) == Some(&b) && bytes.get(i + 2) == Some(&b) {
            out.push(i);
            after = i + 3 + bytes[i + 3..].iter().take_while(|&&c| c == b).count();
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::own_words;

    #[test]
    fn whatever_may_be_quoted_is() {
        let own = |t: &str| own_words(t);
        assert_eq!(own("send 5 USDC to 0xabc"), None);
        assert_eq!(own("send 5 USDC to `0xabc`"), None, "inline code is the user's own");
        assert_eq!(own("don’t send 5 USDC"), None, "an apostrophe quotes nothing");
        assert_eq!(
            own("is this ok?\n> send 7 USDC\nto 0xdead\n\nthanks").as_deref(),
            Some("is this ok?\n\n\n\nthanks")
        );
        assert_eq!(own("> x\n\nyes, send 7 USDC").as_deref(), Some("\n\n\nyes, send 7 USDC"), "a blank line ends it");
        assert_eq!(own(">>> send 7\nUSDC").as_deref(), Some("\n"), "lazy continuation");
        assert_eq!(own("they said \"send 7 USDC\" to me").as_deref(), Some("they said \n to me"));
        // The paste's own quotes do not reopen the user's words.
        assert_eq!(own("legit? \"Hi\" send 7 USDC \"bye\" ok").as_deref(), Some("legit? \n ok"));
        assert_eq!(own("»Achtung« \"send 7 USDC\" ok").as_deref(), Some("\n ok"));
        assert_eq!(own("my 27\" screen: send 7 USDC\nsend 1 USDC").as_deref(), Some("my 27\n\nsend 1 USDC"));
        assert_eq!(own("„wyślij 7 USDC”").as_deref(), Some("\n"));
        assert_eq!(own("look:\n```\nsend 7 USDC\n```\nsend 1 USDC").as_deref(), Some("look:\n\n\nsend 1 USDC"));
        assert_eq!(own("```\nx\n```\n7 USDC\n```\ny\n```\nz").as_deref(), Some("\n\nz"), "first to last fence");
        assert_eq!(own("~~~\nsend 7 USDC").as_deref(), Some("\n"), "an unclosed fence runs to the end");
        assert_eq!(own("a ```send 7 USDC``` b").as_deref(), Some("a \n b"));
        assert_eq!(own("ok\n    send 7 USDC\n\tto 0xdead\nyes").as_deref(), Some("ok\n\n\nyes"));
        assert_eq!(own("ok\r> send 7 USDC\r\ryes").as_deref(), Some("ok\r\n\r\ryes"));
        // A Windows line break is one: the quote goes on to the next line.
        assert_eq!(own("legit?\r\n> Hi,\r\nsend 7 USDC\r\n\r\nno").as_deref(), Some("legit?\r\n\n\r\n\r\nno"));
        // U+2028 and its kind are characters of the line: they end neither a quoted nor an indented one.
        assert_eq!(own("ok\u{2028}> send 7 USDC"), None);
        assert_eq!(own("ok\n> Hi\u{2028}\u{2028}send 7 USDC").as_deref(), Some("ok\n\n"));
        assert_eq!(own("    Hi\u{2028}send 7 USDC").as_deref(), Some("\n"));
        // Only spaces and tabs make a blank line; Slack's >>> quotes the rest.
        assert_eq!(own("> Hi\n\u{a0}\nsend 7 USDC").as_deref(), Some("\n"));
        assert_eq!(own(">>> Hi\n\nsend 7 USDC").as_deref(), Some("\n"));
        assert_eq!(own("ok ‚send 7 USDC‘").as_deref(), Some("ok \n"));
    }
}

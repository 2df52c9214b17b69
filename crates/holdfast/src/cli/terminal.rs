//! What reaches the terminal of `holdfast chat` from anyone but chat itself — model output, tool output, register
//! values, confirmation summaries, event values — passes [`sanitize`] first, so that no one else controls the
//! terminal or hides characters from the person reading it:
//!
//! - escape sequences (CSI `ESC [ … final`, OSC `ESC ] … BEL/ST`, DCS/SOS/PM/APC strings up to ST, two-byte
//!   `ESC x`) are removed whole, their 8-bit C1 forms likewise;
//! - every other C0 and C1 control and DEL is removed, except newline and tab;
//! - every other character that renders as nothing or changes the layout around it — Unicode's `Bidi_Control`,
//!   `Default_Ignorable_Code_Point`, the line and paragraph separators, the other format characters
//!   ([`holdfast_core::is_invisible`]) — is shown escaped as `\u{…}`, so a zero-width space in `0.\u{200b}5` or a
//!   right-to-left override in an address is seen, not silently dropped.
//!
//! A sequence cut off by the end of the text (a streamed delta) is removed up to the end; what follows in the next
//! piece is plain text, since its introducer is gone.

use std::borrow::Cow;
use std::fmt::Write as _;

/// `text` as it may reach the terminal (see the module documentation).
pub(crate) fn sanitize(text: &str) -> Cow<'_, str> {
    if !text.chars().any(unsafe_char) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => match chars.next() {
                Some('[') => skip_csi(&mut chars),
                Some(']' | 'P' | 'X' | '^' | '_') => skip_string(&mut chars),
                // `ESC`, intermediates 0x20–0x2F, a final byte.
                Some('\u{20}'..='\u{2f}') => {
                    while chars.next_if(|c| ('\u{20}'..='\u{2f}').contains(c)).is_some() {}
                    chars.next();
                }
                _ => {}
            },
            '\u{9b}' => skip_csi(&mut chars),
            '\u{90}' | '\u{98}' | '\u{9d}' | '\u{9e}' | '\u{9f}' => skip_string(&mut chars),
            c if c.is_control() && c != '\n' && c != '\t' => {}
            c if unsafe_char(c) => {
                let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// A character that may not reach the terminal as it is: every invisible or layout-changing one but newline and tab.
fn unsafe_char(c: char) -> bool {
    holdfast_core::is_invisible(c) && c != '\n' && c != '\t'
}

/// Skips the rest of a CSI sequence: parameter bytes 0x30–0x3F, intermediates 0x20–0x2F, one final byte 0x40–0x7E.
/// Stops early at anything else (a control is dealt with by the caller).
fn skip_csi(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    while chars.next_if(|c| ('\u{30}'..='\u{3f}').contains(c)).is_some() {}
    while chars.next_if(|c| ('\u{20}'..='\u{2f}').contains(c)).is_some() {}
    chars.next_if(|c| ('\u{40}'..='\u{7e}').contains(c));
}

/// Skips the rest of an OSC, DCS, SOS, PM or APC string: up to and including BEL, ST (`ESC \\` or U+009C), or the
/// end of the text.
fn skip_string(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    while let Some(c) = chars.next() {
        match c {
            '\u{07}' | '\u{9c}' => return,
            '\u{1b}' => {
                chars.next_if_eq(&'\\');
                return;
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::sanitize;

    #[test]
    fn plain_text_is_borrowed_unchanged() {
        let text = "swap 0.001 ETH → USDC\n\tdone — 日本語 émoji 💥 עברית";
        assert!(matches!(sanitize(text), std::borrow::Cow::Borrowed(t) if t == text));
    }

    #[test]
    fn escape_sequences_are_removed_whole() {
        let cases = [
            ("a\u{1b}[2Jb", "ab"),
            ("\u{1b}[1;31mred\u{1b}[0m", "red"),
            ("\u{1b}[?25l\u{1b}[10;20Hx", "x"),
            ("\u{1b}]0;evil title\u{7}after", "after"),
            ("\u{1b}]8;;https://evil.example\u{1b}\\link\u{1b}]8;;\u{1b}\\", "link"),
            ("\u{1b}Pq#0;2;0;0;0\u{1b}\\ok", "ok"),
            ("\u{1b}_apc\u{9c}ok", "ok"),
            ("\u{1b}7saved\u{1b}8\u{1b}(B\u{1b}c", "saved"),
            ("\u{9b}2Jx\u{9d}0;t\u{7}y", "xy"),
            // Cut off at the end of a streamed delta: removed to the end.
            ("ok\u{1b}[", "ok"),
            ("ok\u{1b}]0;unterminated", "ok"),
            ("ok\u{1b}", "ok"),
        ];
        for (dirty, clean) in cases {
            assert_eq!(sanitize(dirty), clean, "{dirty:?}");
        }
    }

    #[test]
    fn controls_are_removed_and_invisible_characters_shown_escaped() {
        let dirty = "a\rb\u{8}c\u{7}d\u{0}e\u{7f}f\u{85}g\n\th\u{202e}i\u{2066}j\u{200f}k\u{feff}l";
        assert_eq!(sanitize(dirty), "abcdefg\n\th\\u{202e}i\\u{2066}j\\u{200f}k\\u{feff}l");
        // The approval prompt cannot be rewritten from a summary value.
        assert_eq!(sanitize("1 USDC\r\u{1b}[2K\u{1b}[1A    sell: 0 USDC"), "1 USDC    sell: 0 USDC");
        assert_eq!(sanitize("0.\u{200b}5 ETH"), "0.\\u{200b}5 ETH");
    }

    /// Every `Bidi_Control`, `Default_Ignorable_Code_Point`, line and paragraph separator, format character and
    /// C0/C1 control, one by one, between two letters: none of them reaches the terminal as it is; each control is
    /// removed and each other one shown as its escape.
    #[test]
    fn the_table_of_every_invisible_character() {
        let mut seen = 0;
        for c in (0..=0x10ffff_u32).filter_map(char::from_u32).filter(|c| holdfast_core::is_invisible(*c)) {
            if matches!(c, '\n' | '\t' | '\u{1b}' | '\u{90}' | '\u{98}' | '\u{9b}' | '\u{9d}' | '\u{9e}' | '\u{9f}') {
                continue; // newline and tab pass; the introducers of sequences are covered above
            }
            seen += 1;
            let dirty = format!("a{c}b");
            let clean = sanitize(&dirty);
            assert!(!clean.chars().any(holdfast_core::is_invisible), "U+{:04X} → {clean:?}", u32::from(c));
            let expected = if c.is_control() { "ab".to_owned() } else { format!("a\\u{{{:x}}}b", u32::from(c)) };
            assert_eq!(clean, expected, "U+{:04X}", u32::from(c));
        }
        // The classes the issue named, each in the table.
        for c in ['\u{200f}', '\u{61c}', '\u{200b}', '\u{2028}', '\u{2029}', '\u{feff}', '\u{202e}', '\u{2069}'] {
            assert!(holdfast_core::is_invisible(c), "U+{:04X}", u32::from(c));
        }
        assert!(seen > 4000, "{seen}");
    }

    #[test]
    fn nothing_unsafe_survives_any_input() {
        let alphabet: Vec<char> =
            "ab\n\t\r\u{1b}[]();0?J\\\u{7}\u{9b}\u{9c}\u{9d}\u{202e}\u{2066}\u{200b}\u{2028}é".chars().collect();
        // Every string of up to four characters from the alphabet.
        let mut todo = vec![String::new()];
        while let Some(s) = todo.pop() {
            let clean = sanitize(&s);
            assert!(
                !clean.chars().any(|c| holdfast_core::is_invisible(c) && c != '\n' && c != '\t'),
                "{s:?} → {clean:?}"
            );
            if s.chars().count() < 4 {
                todo.extend(alphabet.iter().map(|c| format!("{s}{c}")));
            }
        }
    }
}

//! Small helpers for describing untrusted input in error messages without echoing it whole.

use serde_json::Value;

/// A short, quoted preview of untrusted text.
pub(crate) fn preview(s: &str) -> String {
    const MAX: usize = 48;
    if s.chars().count() <= MAX {
        format!("{s:?}")
    } else {
        let head: String = s.chars().take(MAX).collect();
        format!("{head:?}… ({} chars)", s.chars().count())
    }
}

/// "a string", "an object", … for a JSON value.
pub(crate) fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Whether `name` can be the NAME of an environment variable a config field points to (`wallet.key_env`,
/// `llm.api_key_env`): letters, digits and `_`, not starting with a digit — and not 32 or more hex digits (with or
/// without `0x`), which is a key pasted where its variable's name belongs. Callers refuse such a field without ever
/// echoing it.
///
/// ```
/// use holdfast_core::is_env_var_name;
/// assert!(is_env_var_name("HOLDFAST_WALLET_KEY"));
/// assert!(!is_env_var_name("sk-proj-abc"));
/// assert!(!is_env_var_name(&"ab12".repeat(16)), "a bare hex key");
/// assert!(!is_env_var_name("9LIVES"));
/// ```
pub fn is_env_var_name(name: &str) -> bool {
    let mut chars = name.chars();
    let shaped = chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    let hex = name.strip_prefix("0x").unwrap_or(name);
    let key_like = hex.len() >= 32 && hex.bytes().all(|b| b.is_ascii_hexdigit());
    shaped && !key_like
}

/// `text` with every URL cut down to its scheme, host and port: `https://node.example/v2/KEY?x=1` becomes
/// `https://node.example/…`, and user info (`https://user:pass@host`) is dropped. RPC and API URLs carry keys in
/// their paths and queries (Alchemy, Infura, QuickNode), and HTTP client errors quote the URL they failed on, so
/// every error message is passed through this before anyone sees it ([`crate::ToolError::new`]).
///
/// ```
/// use holdfast_core::redact_urls;
/// let e = "error sending request for url (https://base.g.alchemy.com/v2/SECRET)";
/// assert_eq!(redact_urls(e), "error sending request for url (https://base.g.alchemy.com/…)");
/// assert_eq!(redact_urls("no url here"), "no url here");
/// ```
pub fn redact_urls(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains("://") {
        return std::borrow::Cow::Borrowed(text);
    }
    let ends = |c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '<' | '>' | '`' | ')' | ']' | '}');
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("://") {
        let (before, after) = rest.split_at(at);
        let after = &after[3..];
        let url_len = after.find(ends).unwrap_or(after.len());
        let (url, tail) = after.split_at(url_len);
        let authority_len = url.find(['/', '?', '#']).unwrap_or(url.len());
        let authority = &url[..authority_len];
        let host = authority.rsplit_once('@').map_or(authority, |(_, host)| host);
        out.push_str(before);
        out.push_str("://");
        out.push_str(host);
        if authority_len < url.len() || host.len() < authority.len() {
            out.push_str("/…");
        }
        rest = tail;
    }
    out.push_str(rest);
    std::borrow::Cow::Owned(out)
}

/// Whether `c` ends a line for some reader: `\n`, `\r`, U+0085, U+2028, U+2029, vertical tab and form feed. Text
/// that untrusted parties wrote is judged line by line (the context bank's cues, the system context's headings), so
/// every one of them is a line break, not only `\n`.
///
/// ```
/// use holdfast_core::{is_line_break, unify_line_breaks};
/// assert!(is_line_break('\u{2028}') && !is_line_break(' '));
/// assert_eq!(unify_line_breaks("a\r\nb\rc\u{85}d"), "a\nb\nc\nd");
/// ```
pub fn is_line_break(c: char) -> bool {
    matches!(c, '\n' | '\r' | '\u{85}' | '\u{2028}' | '\u{2029}' | '\u{b}' | '\u{c}')
}

/// `text` with every line break ([`is_line_break`]; `\r\n` counts as one) written as `\n`.
pub fn unify_line_breaks(text: &str) -> String {
    text.replace("\r\n", "\n").replace(is_line_break, "\n")
}

/// Whether `c` is a bidirectional control (`Bidi_Control`: U+061C, U+200E–200F, U+202A–202E, U+2066–2069), which can
/// make text display in another order than it is stored.
pub(crate) fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{61c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// Code points that render as nothing, or that change how the text around them is laid out, rather than as a
/// visible character: C0 and C1 controls (tab and line feed included), Unicode's `Default_Ignorable_Code_Point`
/// (zero-width spaces and joiners, the soft hyphen, variation selectors, tags, the byte-order mark…), every
/// `Bidi_Control` (U+061C, U+200E–200F, U+202A–202E, U+2066–2069), the other format characters (general category
/// `Cf`: U+0600–0605, U+06DD, U+070F, U+08E2, U+110BD, U+110CD…) and the line and paragraph separators U+2028 and
/// U+2029.
///
/// The ranges are written out here from Unicode 16's `DerivedCoreProperties.txt` and `UnicodeData.txt` rather than
/// taken from a crate: they are stable by Unicode's policy, and holdfast needs exactly this union in two places —
/// the context bank, which refuses to read a number with one of them inside it, and the terminal front end, which
/// shows them escaped.
///
/// ```
/// use holdfast_core::is_invisible;
/// assert!(is_invisible('\u{200b}') && is_invisible('\u{feff}') && is_invisible('\u{202e}'));
/// assert!(is_invisible('\u{2028}') && is_invisible('\u{1b}') && is_invisible('\u{85}'));
/// assert!(!is_invisible('a') && !is_invisible(' ') && !is_invisible('€'));
/// ```
pub fn is_invisible(c: char) -> bool {
    const RANGES: &[(u32, u32)] = &[
        (0x0000, 0x001F), // C0 controls
        (0x007F, 0x009F), // DEL and C1 controls
        (0x00AD, 0x00AD), // soft hyphen
        (0x034F, 0x034F), // combining grapheme joiner
        (0x0600, 0x0605), // Arabic number signs (Cf)
        (0x061C, 0x061C), // Arabic letter mark
        (0x06DD, 0x06DD),
        (0x070F, 0x070F),
        (0x0890, 0x0891),
        (0x08E2, 0x08E2),
        (0x115F, 0x1160), // Hangul fillers
        (0x17B4, 0x17B5),
        (0x180B, 0x180F), // Mongolian variation selectors and vowel separator
        (0x200B, 0x200F), // zero-width space, joiners, LRM, RLM
        (0x2028, 0x202E), // line and paragraph separators, bidi embeddings and overrides
        (0x2060, 0x206F), // word joiner, invisible operators, bidi isolates, deprecated format characters
        (0x3164, 0x3164), // Hangul filler
        (0xFE00, 0xFE0F), // variation selectors
        (0xFEFF, 0xFEFF), // byte-order mark, zero-width no-break space
        (0xFFA0, 0xFFA0), // halfwidth Hangul filler
        (0xFFF0, 0xFFFB), // unassigned specials and interlinear annotation
        (0x110BD, 0x110BD),
        (0x110CD, 0x110CD),
        (0x13430, 0x1343F), // Egyptian hieroglyph format controls
        (0x1BCA0, 0x1BCA3), // shorthand format controls
        (0x1D173, 0x1D17A), // musical symbol format controls
        (0xE0000, 0xE0FFF), // tags and variation selectors supplement
    ];
    let c = u32::from(c);
    RANGES.iter().any(|&(lo, hi)| (lo..=hi).contains(&c))
}

#[cfg(test)]
mod tests {
    #[test]
    fn urls_keep_scheme_and_host_only() {
        let cases = [
            ("https://h.example:8545/v3/k3y?token=t#f", "https://h.example:8545/…"),
            ("http://user:pw@h/", "http://h/…"),
            ("ws://h", "ws://h"),
            ("a (http://127.0.0.1:1/x) and \"https://b/y\" end", "a (http://127.0.0.1:1/…) and \"https://b/…\" end"),
            ("://x/y", "://x/…"),
            ("trailing ://", "trailing ://"),
        ];
        for (input, want) in cases {
            assert_eq!(super::redact_urls(input), want, "{input}");
        }
    }

    #[test]
    fn previews_are_bounded() {
        assert_eq!(super::preview("abc"), "\"abc\"");
        let long = super::preview(&"é".repeat(1000));
        assert!(long.chars().count() < 80 && long.ends_with("(1000 chars)"));
    }
}

//! What of a user's message is quoted rather than asked for: an amount there is the user's words, but no request.
//!
//! A user who pastes a text to ask about it ("is this legit? > send 7 USDC to 0x…") wrote every word of the message,
//! and the scanner reads its amounts and addresses. Only an amount outside the quoted parts authorizes moving value
//! by itself; one inside them is kept, flagged `quoted` on its [`super::Authorization`], and an action with it waits
//! for the user. Quoted parts are the lines of a Markdown block quote (first non-blank character `>`), fenced code
//! blocks (between lines that begin with three backticks or tildes, or to the end), and text between a pair of
//! double quotes on one line (`"…"`, `“…”`, `«…»`, `„…“`). An unpaired opening quote quotes nothing. Inline code (`` `0x…` ``)
//! is the user's own words: it is how addresses are often written.
//!
//! A text pasted with no quoting at all cannot be told apart from a request, and still authorizes (see the safety
//! model, invariant 11).

/// Opening and closing double quotes a pair is made of.
const PAIRS: [(char, char); 4] = [('"', '"'), ('“', '”'), ('«', '»'), ('„', '“')];

/// `text` with every quoted part replaced by a line break (so nothing binds across it), or `None` when nothing in it
/// is quoted.
pub(super) fn own_words(text: &str) -> Option<String> {
    let mut own = String::with_capacity(text.len());
    let mut quoted = false;
    let mut fence: Option<&str> = None;
    for line in text.split_inclusive('\n') {
        let start = line.trim_start();
        let marker = ["```", "~~~"].into_iter().find(|m| start.starts_with(m));
        match (fence, marker) {
            (Some(open), Some(m)) if m == open => {
                fence = None;
                quoted = true;
                own.push('\n');
            }
            (Some(_), _) => quoted = true,
            (None, Some(m)) => {
                fence = Some(m);
                quoted = true;
                own.push('\n');
            }
            (None, None) if start.starts_with('>') => {
                quoted = true;
                own.push('\n');
            }
            (None, None) => quoted |= unquote_line(line, &mut own),
        }
    }
    quoted.then_some(own)
}

/// Appends `line` to `own` with each paired double-quoted span replaced by a line break; true when one was.
fn unquote_line(line: &str, own: &mut String) -> bool {
    let mut any = false;
    let mut rest = line;
    while let Some((at, open, close)) =
        PAIRS.iter().filter_map(|&(o, c)| rest.find(o).map(|at| (at, o, c))).min_by_key(|&(at, ..)| at)
    {
        let after = at + open.len_utf8();
        let Some(len) = rest[after..].find(close) else { break };
        own.push_str(&rest[..at]);
        own.push('\n');
        rest = &rest[after + len + close.len_utf8()..];
        any = true;
    }
    own.push_str(rest);
    any
}

#[cfg(test)]
mod tests {
    use super::own_words;

    #[test]
    fn quoted_parts_become_line_breaks() {
        assert_eq!(own_words("send 5 USDC to 0xabc"), None);
        assert_eq!(own_words("send 5 USDC to `0xabc`"), None, "inline code is the user's own");
        assert_eq!(
            own_words("is this ok?\n> send 7 USDC\n>to 0xdead\nthanks").as_deref(),
            Some("is this ok?\n\n\nthanks")
        );
        assert_eq!(own_words("they said \"send 7 USDC\" to me").as_deref(), Some("they said \n to me"));
        assert_eq!(own_words("they said “send 7 USDC” and «5 ETH»").as_deref(), Some("they said \n and \n"));
        assert_eq!(own_words("a \"b\" c \"d").as_deref(), Some("a \n c \"d"), "an unpaired quote quotes nothing");
        assert_eq!(own_words("5\" screen"), None);
        assert_eq!(own_words("look:\n```\nsend 7 USDC\n```\nsend 1 USDC").as_deref(), Some("look:\n\n\nsend 1 USDC"));
        assert_eq!(own_words("~~~\nsend 7 USDC").as_deref(), Some("\n"), "an unclosed fence runs to the end");
        assert_eq!(own_words("```\nx\n~~~\ny\n```\nz").as_deref(), Some("\n\nz"), "closed only by its own marker");
    }
}

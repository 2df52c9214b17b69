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

#[cfg(test)]
mod tests {
    #[test]
    fn previews_are_bounded() {
        assert_eq!(super::preview("abc"), "\"abc\"");
        let long = super::preview(&"é".repeat(1000));
        assert!(long.chars().count() < 80 && long.ends_with("(1000 chars)"));
    }
}

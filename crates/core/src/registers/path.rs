//! Dotted paths into register values: `swap_quote.transaction.to`, `route.fills.0.source`.
//!
//! The first segment is the register key; each further segment is an object key or, on an array, a decimal index.

use super::validate_key;
use crate::error::{ErrorCode, ToolError};
use serde_json::Value;

/// A parsed path: the register key and the segments below it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegisterPath<'a> {
    /// The register key.
    pub key: &'a str,
    /// Object keys or array indices, in order.
    pub segments: Vec<&'a str>,
}

impl<'a> RegisterPath<'a> {
    /// Parses `key.seg.seg`. The key must follow the key rules; segments must be non-empty.
    pub fn parse(field: &str, path: &'a str) -> Result<Self, ToolError> {
        let mut parts = path.split('.');
        let key = parts.next().unwrap_or_default();
        validate_key(field, key)?;
        let segments: Vec<&str> = parts.collect();
        if segments.iter().any(|s| s.is_empty()) {
            return Err(ToolError::new(
                ErrorCode::InvalidParams,
                format!("`{field}`: path {path:?} has an empty segment"),
            ));
        }
        Ok(Self { key, segments })
    }
}

/// Follows `segments` into `value`. Returns the index of the first segment that did not resolve on failure.
pub fn lookup_path<'v>(value: &'v Value, segments: &[&str]) -> Result<&'v Value, usize> {
    let mut current = value;
    for (i, seg) in segments.iter().enumerate() {
        current = match current {
            Value::Object(map) => map.get(*seg),
            Value::Array(items) => seg.parse::<usize>().ok().and_then(|idx| items.get(idx)),
            _ => None,
        }
        .ok_or(i)?;
    }
    Ok(current)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn follows_object_keys_and_array_indices() {
        let v = json!({"transaction": {"to": "0xabc"}, "fills": [{"source": "Venue"}, {"source": "Other"}]});
        assert_eq!(lookup_path(&v, &["transaction", "to"]), Ok(&json!("0xabc")));
        assert_eq!(lookup_path(&v, &["fills", "1", "source"]), Ok(&json!("Other")));
        assert_eq!(lookup_path(&v, &["fills", "2"]), Err(1));
        assert_eq!(lookup_path(&v, &["fills", "x"]), Err(1));
        assert_eq!(lookup_path(&v, &["transaction", "to", "deeper"]), Err(2));
        assert_eq!(lookup_path(&v, &[]), Ok(&v));
    }

    #[test]
    fn parses_and_checks_the_key() {
        let p = RegisterPath::parse("path", "route.fills.0.source").unwrap();
        assert_eq!(p.key, "route");
        assert_eq!(p.segments, vec!["fills", "0", "source"]);
        assert_eq!(RegisterPath::parse("path", "9bad.x").unwrap_err().code, ErrorCode::InvalidRegisterKey);
        assert_eq!(RegisterPath::parse("path", "a..b").unwrap_err().code, ErrorCode::InvalidParams);
    }
}

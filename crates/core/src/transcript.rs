//! Replay transcripts: one JSON object per line, parsed whole before anything runs.
//!
//! A line is one of `{"user": TEXT}`, `{"tool": NAME, "params": ANY}`, `{"confirm": ID}`, `{"deny": ID}` or
//! `{"sleep_ms": N}` (at most [`MAX_SLEEP_MS`]); blank lines are skipped. `params` may be any JSON value or absent:
//! the registry answers a non-object with `invalid_params`, as it would a model's call, so it is the call's error,
//! not the transcript's. A line that is not JSON, is not one of those shapes, or sleeps too long is a
//! [`TranscriptError`] naming its 1-based line number. `holdfast replay` runs what this module parses; the format
//! is specified in `docs/interfaces.md`.

use serde::Deserialize;
use serde_json::Value;

/// Longest accepted `sleep_ms` (ten minutes).
pub const MAX_SLEEP_MS: u64 = 600_000;

/// One transcript line.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged, deny_unknown_fields)]
pub enum TranscriptLine {
    /// `{"user": TEXT}`: a user message (scanned into the context bank).
    User {
        /// The message.
        user: String,
    },
    /// `{"tool": NAME, "params": ANY}`: a tool call through the registry. `params` may be any JSON value (or
    /// absent, then `null`).
    Tool {
        /// The tool's name.
        tool: String,
        /// The parameters, as a model would send them.
        #[serde(default)]
        params: Value,
    },
    /// `{"confirm": ID}`: the user approves a pending confirmation (`last`: the latest pending one).
    Confirm {
        /// The confirmation id, or `last`.
        confirm: String,
    },
    /// `{"deny": ID}`: the user denies a pending confirmation (`last`: the latest pending one).
    Deny {
        /// The confirmation id, or `last`.
        deny: String,
    },
    /// `{"sleep_ms": N}`: waits, at most [`MAX_SLEEP_MS`].
    Sleep {
        /// Milliseconds to wait.
        sleep_ms: u64,
    },
}

/// A transcript line that cannot be run. Displays as `line N: reason`; a line that is not JSON keeps the parser's
/// complaint as its source.
#[derive(Debug, thiserror::Error)]
#[error("line {line}: {reason}")]
pub struct TranscriptError {
    /// The 1-based line number.
    pub line: usize,
    /// What is wrong with it.
    pub reason: String,
    /// The JSON parser's error, for a line that is not JSON.
    #[source]
    pub source: Option<serde_json::Error>,
}

/// Parses one line (`n`: its 1-based number, for the error). `Ok(None)` for a blank line.
pub fn parse_line(n: usize, raw: &str) -> Result<Option<TranscriptLine>, TranscriptError> {
    if raw.trim().is_empty() {
        return Ok(None);
    }
    let value: Value = serde_json::from_str(raw).map_err(|e| TranscriptError {
        line: n,
        reason: "not valid JSON".into(),
        source: Some(e),
    })?;
    let line = TranscriptLine::deserialize(&value).map_err(|_| TranscriptError {
        line: n,
        reason: format!(
            "expected one of {{\"user\"}}, {{\"tool\",\"params\"}}, {{\"confirm\"}}, {{\"deny\"}}, {{\"sleep_ms\"}}; got {}",
            truncate(&value.to_string(), 120)
        ),
        source: None,
    })?;
    if let TranscriptLine::Sleep { sleep_ms } = &line
        && *sleep_ms > MAX_SLEEP_MS
    {
        return Err(TranscriptError { line: n, reason: format!("sleep_ms is at most {MAX_SLEEP_MS}"), source: None });
    }
    Ok(Some(line))
}

/// Parses a whole transcript (lines split as [`str::lines`] does). The first bad line is the error.
pub fn parse_transcript(text: &str) -> Result<Vec<TranscriptLine>, TranscriptError> {
    let mut lines = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        if let Some(line) = parse_line(i + 1, raw)? {
            lines.push(line);
        }
    }
    Ok(lines)
}

/// `s` cut to `max` characters, with `…` when cut.
fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max { s.to_owned() } else { format!("{}…", s.chars().take(max).collect::<String>()) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn malformed_lines_name_their_number() {
        let err = parse_transcript("{\"user\":\"hi\"}\n\n{\"tool\":7}\n").unwrap_err();
        assert!(err.to_string().starts_with("line 3: expected one of"), "{err}");
        let err = parse_transcript("{\"user\":\"hi\"}\nnot json\n").unwrap_err();
        assert_eq!(err.line, 2);
        assert_eq!(err.to_string(), "line 2: not valid JSON");
        assert!(err.source.is_some());
        let err = parse_transcript("{\"user\":\"hi\",\"extra\":1}").unwrap_err().to_string();
        assert!(err.starts_with("line 1:"), "{err}");
        let err = parse_transcript("\n\n{\"sleep_ms\": 600001}").unwrap_err().to_string();
        assert_eq!(err, "line 3: sleep_ms is at most 600000");
        assert_eq!(parse_transcript("{\"sleep_ms\": 5}\n{\"confirm\":\"last\"}").unwrap().len(), 2);
    }

    #[test]
    fn params_may_be_any_json_value_or_absent() {
        let text = "{\"tool\":\"x\",\"params\":[]}\n{\"tool\":\"x\"}\n{\"tool\":\"x\",\"params\":\"key\"}\n{\"tool\":\"x\",\"params\":{\"a\":1}}";
        let lines = parse_transcript(text).unwrap();
        let params: Vec<Value> = lines
            .into_iter()
            .map(|l| match l {
                TranscriptLine::Tool { params, .. } => params,
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(params, [json!([]), Value::Null, json!("key"), json!({"a": 1})]);
    }

    #[test]
    fn numbers_in_params_read_the_same_after_a_write() {
        // Found by fuzzing (`transcript_line`): without serde_json's `float_roundtrip`, 34 ones read as
        // 1.1111111111111111e33, were written so, and read back as 1.1111111111111113e33. Test builds always have
        // the feature (jsonschema, a dev-dependency, turns it on), so the guard that fails without the workspace's
        // `float_roundtrip` is the fuzz seed `fuzz/seeds/transcript_line/float-roundtrip` (no dev-dependencies).
        let tool_params = |line: &str| match parse_line(1, line).unwrap() {
            Some(TranscriptLine::Tool { params, .. }) => params,
            other => panic!("{other:?}"),
        };
        let first = tool_params(r#"{"tool": "x", "params": {"n": 1111111111111111111111111111111111, "f": 0.1}}"#);
        assert_eq!(first["n"].as_f64(), Some(1.1111111111111111e33));
        let again = tool_params(&json!({"tool": "x", "params": first}).to_string());
        assert_eq!(again, first);
    }

    #[test]
    fn long_lines_are_cut_in_the_message() {
        let long = format!("{{\"user\": 1, \"x\": \"{}\"}}", "é".repeat(500));
        let err = parse_line(1, &long).unwrap_err().to_string();
        assert!(err.ends_with('…') && err.chars().count() < 260, "{err}");
    }
}

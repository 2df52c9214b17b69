//! Parsing the times the model writes: absolute RFC 3339 (`2026-05-01T09:00:00Z`) and relative durations
//! (`20m`, `1h30m`, `2 days`, `in 90s`).

use crate::error::{MemoryError, Result};
use chrono::{DateTime, Utc};

/// The longest relative duration accepted (about two years).
pub const MAX_RELATIVE_SECS: u64 = 2 * 366 * 24 * 3600;

/// Parses a relative duration: one or more `<number><unit>` parts, optionally preceded by `in`. Units: `s`/`sec`/
/// `second(s)`, `m`/`min`/`minute(s)`, `h`/`hr`/`hour(s)`, `d`/`day(s)`, `w`/`week(s)`. Spaces are allowed
/// between parts and between a number and its unit.
pub fn parse_relative(field: &str, text: &str) -> Result<std::time::Duration> {
    let bad = |reason: &str| {
        MemoryError::invalid(field, format!("{reason}; write a duration like \"20m\", \"1h30m\" or \"2 days\""))
    };
    let mut s = text.trim().to_ascii_lowercase();
    if let Some(rest) = s.strip_prefix("in ") {
        s = rest.trim_start().to_owned();
    }
    if s.is_empty() {
        return Err(bad("is empty"));
    }
    let mut total: u64 = 0;
    let mut rest = s.as_str();
    while !rest.is_empty() {
        rest = rest.trim_start_matches([' ', ',']);
        if rest.is_empty() {
            break;
        }
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return Err(bad(&format!("expected a number at {:?}", rest.chars().take(16).collect::<String>())));
        }
        let number: u64 = rest[..digits].parse().map_err(|_| bad("number is too large"))?;
        rest = rest[digits..].trim_start();
        let unit_len = rest.bytes().take_while(u8::is_ascii_alphabetic).count();
        let unit = &rest[..unit_len];
        rest = &rest[unit_len..];
        let seconds = match unit {
            "s" | "sec" | "secs" | "second" | "seconds" => 1,
            "m" | "min" | "mins" | "minute" | "minutes" => 60,
            "h" | "hr" | "hrs" | "hour" | "hours" => 3600,
            "d" | "day" | "days" => 86_400,
            "w" | "wk" | "week" | "weeks" => 604_800,
            "" => return Err(bad(&format!("the number {number} has no unit"))),
            other => return Err(bad(&format!("unknown unit {other:?}"))),
        };
        total = number.checked_mul(seconds).and_then(|n| total.checked_add(n)).ok_or_else(|| bad("is too long"))?;
    }
    if total == 0 {
        return Err(bad("must be longer than zero"));
    }
    if total > MAX_RELATIVE_SECS {
        return Err(bad("is longer than two years"));
    }
    Ok(std::time::Duration::from_secs(total))
}

/// Parses an absolute RFC 3339 time.
pub fn parse_absolute(field: &str, text: &str) -> Result<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(text.trim()).map(|t| t.with_timezone(&Utc)).map_err(|e| {
        MemoryError::invalid(field, format!("not an RFC 3339 time ({e}); write e.g. \"2026-05-01T09:00:00Z\""))
    })
}

/// Parses either form: an RFC 3339 time, or a duration from `now`.
pub fn parse_when(field: &str, text: &str, now: DateTime<Utc>) -> Result<DateTime<Utc>> {
    if let Ok(t) = DateTime::parse_from_rfc3339(text.trim()) {
        return Ok(t.with_timezone(&Utc));
    }
    let d = parse_relative(field, text).map_err(|_| {
        MemoryError::invalid(field, "expected an RFC 3339 time (\"2026-05-01T09:00:00Z\") or a duration (\"in 2h\")")
    })?;
    add(field, now, d)
}

/// `now + d`, refusing overflow.
pub fn add(field: &str, now: DateTime<Utc>, d: std::time::Duration) -> Result<DateTime<Utc>> {
    chrono::Duration::from_std(d)
        .ok()
        .and_then(|d| now.checked_add_signed(d))
        .ok_or_else(|| MemoryError::invalid(field, "is too far in the future"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_durations() {
        let secs = |s: &str| parse_relative("in", s).map(|d| d.as_secs()).unwrap();
        assert_eq!(secs("20m"), 1200);
        assert_eq!(secs("in 20m"), 1200);
        assert_eq!(secs("1h30m"), 5400);
        assert_eq!(secs("2 days"), 172_800);
        assert_eq!(secs("1h, 5 min 10s"), 3910);
        for bad in ["", "in", "20", "m", "0m", "5 parsecs", "-5m", "99999999999999999999m", "1000w"] {
            let e = parse_relative("in", bad).unwrap_err();
            assert!(e.to_string().starts_with("`in`"), "{bad}: {e}");
        }
    }

    #[test]
    fn absolute_and_either() {
        let now = parse_absolute("at", "2026-01-01T00:00:00Z").unwrap();
        assert_eq!(parse_absolute("at", "2026-01-01T02:00:00+02:00").unwrap(), now);
        assert!(parse_absolute("at", "tomorrow").is_err());
        assert_eq!(parse_when("due", "in 1h", now).unwrap(), now + chrono::Duration::hours(1));
        assert_eq!(parse_when("due", "2026-01-01T00:00:00Z", now).unwrap(), now);
        assert!(parse_when("due", "soonish", now).unwrap_err().to_string().contains("`due`"));
    }
}

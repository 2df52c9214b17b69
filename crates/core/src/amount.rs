//! Exact decimal amounts and base units.
//!
//! Human amounts ("0.001") become base units ("1000000000000000") by string arithmetic on `U256` — never through a
//! float. The accepted human form is digits with at most one decimal point (`12`, `0.5`, `.5`, `1.`), optionally
//! with `,` thousands separators in the integer part (`1,000.25`). Anything else is `invalid_amount`.

use crate::error::{ErrorCode, ToolError};
use alloy_primitives::U256;

/// Most characters of a human amount, as written and in canonical form.
pub const MAX_AMOUNT_CHARS: usize = 100;

/// A decimal amount split into its integer and fractional digits, with no leading/trailing zeros to speak of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decimal {
    int: String,
    frac: String,
}

impl Decimal {
    /// Parses a human decimal. Errors name `field`.
    pub fn parse(field: &str, s: &str) -> Result<Self, ToolError> {
        let bad = |why: &str| ToolError::new(ErrorCode::InvalidAmount, format!("`{field}`: {why}"));
        let t = s.trim();
        if t.is_empty() {
            return Err(bad("an amount is required"));
        }
        if t.starts_with('-') {
            return Err(bad("amounts cannot be negative"));
        }
        if t.len() > MAX_AMOUNT_CHARS {
            return Err(bad("amount is too long"));
        }
        let (int_part, frac_part) = match t.split_once('.') {
            Some((i, f)) => (i, f),
            None => (t, ""),
        };
        if !frac_part.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad(&format!("{t:?} is not a plain decimal number (digits and one '.')")));
        }
        let int_digits = strip_thousands(int_part)
            .ok_or_else(|| bad(&format!("{t:?} is not a plain decimal number (digits and one '.')")))?;
        if int_digits.is_empty() && frac_part.is_empty() {
            return Err(bad(&format!("{t:?} has no digits")));
        }
        let int = int_digits.trim_start_matches('0').to_owned();
        let frac = frac_part.trim_end_matches('0').to_owned();
        let decimal = Self { int, frac };
        // `.5` gains a `0` in canonical form: the cap holds for that form too, so every canonical amount parses.
        if decimal.canonical_len() > MAX_AMOUNT_CHARS {
            return Err(bad("amount is too long"));
        }
        Ok(decimal)
    }

    /// The length of [`Decimal::canonical`].
    fn canonical_len(&self) -> usize {
        self.int.len().max(1) + if self.frac.is_empty() { 0 } else { 1 + self.frac.len() }
    }

    /// The canonical text form: no separators, no leading zeros, no trailing fractional zeros (`"1000.5"`, `"0.001"`).
    pub fn canonical(&self) -> String {
        let int = if self.int.is_empty() { "0" } else { &self.int };
        if self.frac.is_empty() { int.to_owned() } else { format!("{int}.{}", self.frac) }
    }

    /// Number of significant fractional digits.
    pub fn scale(&self) -> usize {
        self.frac.len()
    }

    /// Converts to base units with `decimals` fractional digits. Errors name `field` and say why.
    pub fn to_base_units(&self, field: &str, decimals: u8, symbol: &str) -> Result<U256, ToolError> {
        let decimals = usize::from(decimals);
        if self.frac.len() > decimals {
            return Err(ToolError::new(
                ErrorCode::InvalidAmount,
                format!(
                    "`{field}`: {} has {} decimal places; {symbol} allows at most {decimals}",
                    self.canonical(),
                    self.frac.len()
                ),
            ));
        }
        let mut digits = String::with_capacity(self.int.len() + decimals);
        digits.push_str(&self.int);
        digits.push_str(&self.frac);
        digits.extend(std::iter::repeat_n('0', decimals - self.frac.len()));
        let digits = digits.trim_start_matches('0');
        if digits.is_empty() {
            return Ok(U256::ZERO);
        }
        U256::from_str_radix(digits, 10).map_err(|_| {
            ToolError::new(ErrorCode::InvalidAmount, format!("`{field}`: {} overflows uint256", self.canonical()))
        })
    }
}

fn strip_thousands(int_part: &str) -> Option<String> {
    if !int_part.contains(',') {
        return int_part.bytes().all(|b| b.is_ascii_digit()).then(|| int_part.to_owned());
    }
    let groups: Vec<&str> = int_part.split(',').collect();
    let first_ok = !groups[0].is_empty() && groups[0].len() <= 3;
    let rest_ok = groups[1..].iter().all(|g| g.len() == 3);
    let digits_ok = groups.iter().all(|g| g.bytes().all(|b| b.is_ascii_digit()));
    (first_ok && rest_ok && digits_ok).then(|| groups.concat())
}

/// Human decimal → base units, in one call.
pub fn to_base_units(field: &str, human: &str, decimals: u8, symbol: &str) -> Result<U256, ToolError> {
    Decimal::parse(field, human)?.to_base_units(field, decimals, symbol)
}

/// Base units → the canonical human decimal (`1500000`, 6 → `"1.5"`). Exact.
pub fn from_base_units(raw: U256, decimals: u8) -> String {
    let s = raw.to_string();
    let d = usize::from(decimals);
    if d == 0 {
        return s;
    }
    let padded = if s.len() <= d { format!("{}{s}", "0".repeat(d + 1 - s.len())) } else { s };
    let (int, frac) = padded.split_at(padded.len() - d);
    let frac = frac.trim_end_matches('0');
    if frac.is_empty() { int.to_owned() } else { format!("{int}.{frac}") }
}

/// Validates a base-unit integer string (the `*_amount` register rule): ASCII digits only, fits `uint256`.
/// Returns the canonical form (no leading zeros).
pub fn parse_base_units(field: &str, s: &str) -> Result<U256, ToolError> {
    let bad = |why: String| ToolError::new(ErrorCode::InvalidAmount, format!("`{field}`: {why}"));
    if s.is_empty() {
        return Err(bad("a base-unit integer is required".into()));
    }
    if s.starts_with('-') {
        return Err(bad("amounts cannot be negative".into()));
    }
    if !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad(format!("{} is not a non-negative integer in base units", crate::text::preview(s))));
    }
    U256::from_str_radix(s, 10).map_err(|_| bad(format!("{s} overflows uint256")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn converts_exactly_without_floats() {
        assert_eq!(to_base_units("a", "0.001", 18, "ETH").unwrap().to_string(), "1000000000000000");
        assert_eq!(to_base_units("a", "1,000.25", 6, "USDC").unwrap().to_string(), "1000250000");
        assert_eq!(to_base_units("a", ".5", 6, "USDC").unwrap().to_string(), "500000");
        assert_eq!(to_base_units("a", "0", 6, "USDC").unwrap(), U256::ZERO);
        assert_eq!(to_base_units("a", "0.1000000", 6, "USDC").unwrap().to_string(), "100000");
        assert_eq!(from_base_units(U256::from(1_500_000u64), 6), "1.5");
        assert_eq!(from_base_units(U256::from(5u64), 6), "0.000005");
        assert_eq!(from_base_units(U256::ZERO, 18), "0");
    }

    #[test]
    fn refuses_what_is_not_exact() {
        let cases = [
            ("0.0000001", 6, "decimal places"),
            ("-1", 6, "negative"),
            ("1e18", 18, "plain decimal"),
            ("1.2.3", 18, "plain decimal"),
            ("", 18, "required"),
            (".", 18, "no digits"),
            ("1,00", 18, "plain decimal"),
            ("NaN", 18, "plain decimal"),
            ("999999999999999999999999999999999999999999999999999999999999999999999999999999", 18, "overflows"),
        ];
        for (input, decimals, why) in cases {
            let err = to_base_units("amount", input, decimals, "T").unwrap_err();
            assert_eq!(err.code, ErrorCode::InvalidAmount, "{input}");
            assert!(err.message.contains(why), "{input}: {}", err.message);
            assert!(err.message.contains("`amount`"));
        }
    }

    #[test]
    fn every_canonical_form_parses_back() {
        // Found by fuzzing (`context_bank`): `.` and 99 digits parsed, but its canonical form `0.…` has 101
        // characters and did not, so the context bank kept an amount that no tool could read.
        let long_point = format!(".{}1", "0".repeat(98));
        assert_eq!(long_point.len(), MAX_AMOUNT_CHARS);
        assert_eq!(Decimal::parse("a", &long_point).unwrap_err().code, ErrorCode::InvalidAmount);
        for ok in [format!(".{}1", "0".repeat(97)), format!(".{}", "5".repeat(98)), format!(".{}", "0".repeat(99))] {
            let d = Decimal::parse("a", &ok).unwrap();
            assert!(d.canonical().len() <= MAX_AMOUNT_CHARS, "{ok}");
            assert_eq!(Decimal::parse("a", &d.canonical()).unwrap(), d, "{ok}");
        }
    }

    #[test]
    fn base_unit_strings_are_checked() {
        assert_eq!(parse_base_units("x", "007").unwrap(), U256::from(7u8));
        for bad in ["", "-1", "1.0", "0x10", " 1", "1e3"] {
            assert_eq!(parse_base_units("x", bad).unwrap_err().code, ErrorCode::InvalidAmount, "{bad}");
        }
        let max = U256::MAX.to_string();
        assert!(parse_base_units("x", &max).is_ok());
        assert!(parse_base_units("x", &format!("{max}0")).is_err());
    }
}

//! Ethereum addresses as the runtime accepts them: `0x` + 40 hex digits, kept in EIP-55 checksum form.
//!
//! The rule, in one place: an all-lowercase or all-uppercase address carries no checksum and is normalised to its
//! EIP-55 form; a mixed-case address must carry a correct checksum, otherwise it is `checksum_mismatch`.

use crate::error::{ErrorCode, ToolError};
use alloy_primitives::Address;

/// The result of reading a string that looks like an address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CheckedAddress {
    /// The parsed address.
    pub address: Address,
    /// False when the input was mixed-case and its checksum is wrong.
    pub checksum_ok: bool,
}

impl CheckedAddress {
    /// The EIP-55 checksummed form.
    pub fn checksummed(&self) -> String {
        self.address.to_checksum(None)
    }
}

/// True when `s` is `0x` followed by exactly 40 hex digits.
pub fn is_address_shaped(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 42 && b[0] == b'0' && (b[1] == b'x' || b[1] == b'X') && b[2..].iter().all(u8::is_ascii_hexdigit)
}

/// Reads an address-shaped string, reporting (not rejecting) a wrong mixed-case checksum.
///
/// Returns `None` when the string is not address-shaped.
pub fn check_address(s: &str) -> Option<CheckedAddress> {
    if !is_address_shaped(s) {
        return None;
    }
    let hex = &s[2..];
    let address: Address = hex.parse().ok()?;
    let has_lower = hex.bytes().any(|c| c.is_ascii_lowercase());
    let has_upper = hex.bytes().any(|c| c.is_ascii_uppercase());
    let checksum_ok = !(has_lower && has_upper) || address.to_checksum(None)[2..] == *hex;
    Some(CheckedAddress { address, checksum_ok })
}

/// Parses an address for a tool parameter or register value named `field`.
///
/// Wrong shape → `invalid_address`; a mixed-case address with a wrong checksum → `checksum_mismatch`.
pub fn parse_address(field: &str, s: &str) -> Result<Address, ToolError> {
    match check_address(s) {
        None => Err(ToolError::new(
            ErrorCode::InvalidAddress,
            format!("`{field}`: expected 0x followed by 40 hex digits, got {}", crate::text::preview(s)),
        )),
        Some(c) if !c.checksum_ok => Err(ToolError::new(
            ErrorCode::ChecksumMismatch,
            format!("`{field}`: the mixed-case address {s} has a wrong EIP-55 checksum"),
        )),
        Some(c) => Ok(c.address),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913";

    #[test]
    fn checksummed_lower_and_upper_forms_are_accepted() {
        assert_eq!(parse_address("a", GOOD).unwrap().to_checksum(None), GOOD);
        assert_eq!(parse_address("a", &GOOD.to_lowercase()).unwrap().to_checksum(None), GOOD);
        let upper = format!("0x{}", GOOD[2..].to_uppercase());
        assert_eq!(parse_address("a", &upper).unwrap().to_checksum(None), GOOD);
    }

    #[test]
    fn a_wrong_mixed_case_checksum_is_flagged() {
        let bad = GOOD.replace("fCD6", "fcD6");
        let checked = check_address(&bad).unwrap();
        assert!(!checked.checksum_ok);
        assert_eq!(parse_address("to", &bad).unwrap_err().code, ErrorCode::ChecksumMismatch);
    }

    #[test]
    fn malformed_addresses_name_the_field() {
        for s in ["", "0x", "0x1234", &GOOD[..41], &format!("{GOOD}0"), "0xZZ3589fCD6eDb6E08f4c7C32D4f71b54bdA02913"] {
            let err = parse_address("recipient_address", s).unwrap_err();
            assert_eq!(err.code, ErrorCode::InvalidAddress);
            assert!(err.message.contains("recipient_address"));
        }
    }
}

//! Property tests: register keys, path access, amount round-trips, addresses planted in random text.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use alloy_primitives::{Address, U256};
use holdfast_core::amount::{from_base_units, to_base_units};
use holdfast_core::config::CoreConfig;
use holdfast_core::registers::{RegisterDeclarations, RegisterStore, RegisterWrite, lookup_path, validate_key};
use holdfast_core::{CoreServices, EventBus, ItemType, Origin};
use proptest::prelude::*;
use serde_json::{Value, json};
use std::sync::Arc;

proptest! {
    #[test]
    fn valid_keys_are_accepted(key in "[A-Za-z][A-Za-z0-9_]{0,63}") {
        prop_assert!(validate_key("key", &key).is_ok());
    }

    #[test]
    fn keys_with_any_other_character_are_rejected(prefix in "[a-z]{1,10}", bad in "[^A-Za-z0-9_]", suffix in "[a-z]{0,10}") {
        let key = format!("{prefix}{bad}{suffix}");
        prop_assert!(validate_key("key", &key).is_err());
    }

    #[test]
    fn path_access_finds_every_leaf(leaf in any::<u32>(), keys in proptest::collection::vec("[a-z]{1,8}", 1..5), index in 0usize..4) {
        // Build {k0: {k1: … [.., {leaf}, ..]}} and read it back through the store.
        let mut value = json!(leaf);
        let mut segments: Vec<String> = Vec::new();
        let mut array = vec![json!(null); index + 1];
        array[index] = value;
        value = Value::Array(array);
        segments.push(index.to_string());
        for k in keys.iter().rev() {
            value = json!({ k.clone(): value });
            segments.insert(0, k.clone());
        }
        let store = RegisterStore::new(Arc::new(RegisterDeclarations::empty()), EventBus::new("p"));
        store.set(RegisterWrite::new("root", value.clone(), Origin::Tool, "t")).unwrap();
        let path = format!("root.{}", segments.join("."));
        prop_assert_eq!(store.get_path(&path).unwrap(), json!(leaf));
        let refs: Vec<&str> = segments.iter().map(String::as_str).collect();
        prop_assert_eq!(lookup_path(&value, &refs), Ok(&json!(leaf)));
    }

    #[test]
    fn amounts_round_trip_exactly(int in "[0-9]{1,30}", frac in "[0-9]{0,18}", decimals in 0u8..=36) {
        let frac = &frac[..frac.len().min(usize::from(decimals))];
        let human = if frac.is_empty() { int.clone() } else { format!("{int}.{frac}") };
        let raw = to_base_units("amount", &human, decimals, "T").unwrap();
        let back = from_base_units(raw, decimals);
        prop_assert_eq!(to_base_units("amount", &back, decimals, "T").unwrap(), raw);
        let canonical = holdfast_core::amount::Decimal::parse("a", &human).unwrap().canonical();
        prop_assert_eq!(back, canonical);
    }

    #[test]
    fn base_units_round_trip(raw in any::<[u64; 4]>(), decimals in 0u8..=77) {
        let raw = U256::from_limbs(raw);
        let human = from_base_units(raw, decimals);
        prop_assert_eq!(to_base_units("amount", &human, decimals, "T").unwrap(), raw);
    }

    #[test]
    fn planted_addresses_are_found_once_with_checksum_kept(
        bytes in any::<[u8; 20]>(),
        before in "[a-z ,.!?]{0,40}",
        after in "[a-z ,.!?]{0,40}",
        case in 0u8..3,
    ) {
        let address = Address::from(bytes);
        let checksummed = address.to_checksum(None);
        let written = match case {
            0 => checksummed.clone(),
            1 => checksummed.to_lowercase(),
            _ => format!("0x{}", checksummed[2..].to_uppercase()),
        };
        let text = format!("{before} {written} {after} and again {written}.");
        let ctx = CoreServices::new(CoreConfig::default()).unwrap().new_session("p");
        ctx.context_bank.scan_input(&text);
        let found: Vec<_> = ctx.context_bank.items().into_iter().filter(|i| i.item_type == ItemType::EthAddress).collect();
        prop_assert_eq!(found.len(), 1);
        prop_assert_eq!(&found[0].value, &checksummed);
        prop_assert!(found[0].flags.is_empty());
    }

    #[test]
    fn scanning_arbitrary_text_never_panics(text in "\\PC{0,200}") {
        let ctx = CoreServices::new(CoreConfig::default()).unwrap().new_session("p");
        ctx.context_bank.scan_input(&text);
        let _ = ctx.context_bank.format_for_agent();
    }
}

//! The hallucination surface of the golden swap transcript (`examples/swap-eth-usdc.jsonl`): how many characters of
//! the model's tool arguments are addresses, hex data or base-unit amounts — values a model could get wrong and
//! that would move funds. It must be zero: the model passes register and preset names, and the only value it types
//! is the human amount the user wrote, which the context bank confirms. (See `docs/benchmarks.md`.)
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use holdfast_core::CoreServices;
use holdfast_core::config::CoreConfig;
use holdfast_core::context_bank::ItemType;
use regex::Regex;
use serde_json::Value;
use std::path::PathBuf;

/// What the model typed into tool arguments, by kind.
#[derive(Debug, Default, PartialEq, Eq)]
struct Surface {
    tool_calls: usize,
    argument_chars: usize,
    /// Characters of `0x…` hex (addresses and calldata).
    hex_chars: usize,
    /// Digits that are not a human amount the user wrote and the context bank confirmed.
    base_unit_chars: usize,
    /// Human amounts taken from the user's words (allowed), as typed.
    user_amounts: Vec<String>,
}

impl Surface {
    fn hallucination_chars(&self) -> usize {
        self.hex_chars + self.base_unit_chars
    }
}

fn measure(transcript: &str) -> Surface {
    let ctx = CoreServices::new(CoreConfig::default()).unwrap().new_session("surface");
    let hex = Regex::new(r"0[xX][0-9a-fA-F]+").unwrap();
    let digits = Regex::new(r"[0-9]+").unwrap();
    let human = Regex::new(r"^[0-9]+(\.[0-9]+)?$").unwrap();
    let mut s = Surface::default();
    for line in transcript.lines().filter(|l| !l.trim().is_empty()) {
        let v: Value = serde_json::from_str(line).unwrap();
        if let Some(text) = v.get("user").and_then(Value::as_str) {
            ctx.context_bank.scan_input(text);
            continue;
        }
        let Some(params) = v.get("params") else { continue };
        s.tool_calls += 1;
        let mut leaves = Vec::new();
        collect(params, &mut leaves);
        // Only an amount bound to a token authorizes it; a bare number the user wrote does not.
        let confirmed: Vec<String> = ctx
            .context_bank
            .items()
            .into_iter()
            .filter(|i| i.item_type == ItemType::Amount && i.label.is_some())
            .map(|i| i.value)
            .collect();
        for leaf in leaves {
            s.argument_chars += leaf.chars().count();
            let mut rest = leaf.clone();
            for m in hex.find_iter(&leaf) {
                s.hex_chars += m.as_str().len();
            }
            rest = hex.replace_all(&rest, "").into_owned();
            if human.is_match(&rest) && confirmed.iter().any(|c| c == &rest) {
                s.user_amounts.push(rest);
                continue;
            }
            s.base_unit_chars += digits.find_iter(&rest).map(|m| m.as_str().len()).sum::<usize>();
        }
    }
    s
}

/// Every string or number in an argument object (keys are the tool's own field names, not typed values).
fn collect(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => out.push(s.clone()),
        Value::Number(n) => out.push(n.to_string()),
        Value::Array(items) => items.iter().for_each(|i| collect(i, out)),
        Value::Object(map) => map.values().for_each(|i| collect(i, out)),
        Value::Bool(_) | Value::Null => {}
    }
}

fn example(name: &str) -> String {
    std::fs::read_to_string(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples").join(name)).unwrap()
}

#[test]
fn the_golden_swap_transcript_has_no_hallucination_surface() {
    let s = measure(&example("swap-eth-usdc.jsonl"));
    eprintln!(
        "hallucination surface of examples/swap-eth-usdc.jsonl: {} characters ({} tool calls, {} argument characters, \
         user amounts {:?})",
        s.hallucination_chars(),
        s.tool_calls,
        s.argument_chars,
        s.user_amounts
    );
    assert_eq!(s.hallucination_chars(), 0, "{s:?}");
    assert_eq!(s.user_amounts, ["0.001"], "the one typed value is the user's amount, confirmed by the context bank");
    assert_eq!(s.tool_calls, 6);
    let usdc = measure(&example("swap-usdc-eth.jsonl"));
    assert_eq!(usdc.hallucination_chars(), 0, "{usdc:?}");
}

#[test]
fn the_golden_transfer_transcript_has_no_hallucination_surface() {
    let s = measure(&example("transfer-usdc.jsonl"));
    eprintln!(
        "hallucination surface of examples/transfer-usdc.jsonl: {} characters ({} tool calls, {} argument characters, \
         user amounts {:?})",
        s.hallucination_chars(),
        s.tool_calls,
        s.argument_chars,
        s.user_amounts
    );
    assert_eq!(s.hallucination_chars(), 0, "no address and no base-unit amount typed: {s:?}");
    assert_eq!(s.user_amounts, ["5"], "the one typed value is the user's amount, confirmed by the context bank");
    assert_eq!(s.tool_calls, 4);
}

#[test]
fn the_counter_sees_what_a_raw_parameter_transcript_would_carry() {
    // The same swap as a raw-parameter tool call (what holdfast's tools make inexpressible): `to`, `data`, `value`:
    // `sell(NATIVE, USDC, 0.001 ETH, minBuy, taker)` on the venue.
    let to = "0x0000000000001fF3684f28c67538d4D072C22734";
    let words = [
        "eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee",
        "833589fcd6edb6e08f4c7c32d4f71b54bda02913",
        "38d7ea4c68000",
        "2d3e0e",
        "d8da6bf26964af9d7eed9e03e53415d37aa96045",
    ];
    let data = words.iter().fold("0x6321da2a".to_owned(), |acc, w| format!("{acc}{w:0>64}"));
    let value = "1000000000000000";
    let raw = format!(
        "{{\"user\": \"swap 0.001 ETH for USDC on base\"}}\n{{\"tool\": \"send_transaction\", \"params\": {{\"to\": \"{to}\", \"data\": \"{data}\", \"value\": \"{value}\"}}}}"
    );
    let s = measure(&raw);
    eprintln!("a raw-parameter swap call: {} characters of hex and base units", s.hallucination_chars());
    assert_eq!(s.hex_chars, to.len() + data.len());
    assert_eq!(s.base_unit_chars, value.len());
    assert_eq!(s.hallucination_chars(), 42 + 330 + 16);
    let refused = measure(&example("refused.jsonl"));
    assert!(refused.hex_chars >= 42 * 3, "{refused:?}");
    // An amount the user never wrote is a base-unit amount, even in human form.
    let invented = "{\"user\": \"swap some ETH\"}\n{\"tool\": \"to_raw_amount\", \"params\": {\"amount\": \"0.5\", \"token_register\": \"sell_token\", \"cache_as\": \"sell_amount\"}}";
    assert_eq!(measure(invented).base_unit_chars, 2);
}

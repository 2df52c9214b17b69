//! `PresetOrCustom<T>` deserialisation, flattened as tools use it: never panics; a preset is accepted only alone
//! (nulls count as absent), a preset beside a custom field is `preset_conflict`, anything else malformed is
//! `invalid_params`.
//!
//! Input: JSON (anything else is skipped; the seeds and libFuzzer's comparisons find the shapes).
#![no_main]

use holdfast_core::tool::parse_params;
use holdfast_core::{ErrorCode, PresetOrCustom};
use holdfast_fuzz::check_tool_error;
use libfuzzer_sys::fuzz_target;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value};

/// The shape of the unit tests: a field beside the flattened group.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Custom {
    #[allow(dead_code)]
    url: String,
    #[allow(dead_code)]
    method: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct Params {
    #[allow(dead_code)]
    network: String,
    #[serde(flatten)]
    target: PresetOrCustom<Custom>,
}

fuzz_target!(|data: &[u8]| {
    let Ok(value) = serde_json::from_slice::<Value>(data) else { return };

    check(
        "Params",
        &value,
        &["network"],
        parse_params::<Params>(value.clone()).map(|p| p.target.preset().map(str::to_owned)),
    );
    // As the `transfer` tool takes it.
    #[cfg(feature = "web3")]
    check(
        "TransferInput",
        &value,
        &["network", "token_register", "amount_register"],
        parse_params::<holdfast_web3::tools::TransferInput>(value.clone())
            .map(|p| p.recipient.preset().map(str::to_owned)),
    );
    // Unflattened, straight from the value.
    let direct = serde_json::from_value::<PresetOrCustom<Custom>>(value.clone());
    if let (Ok(PresetOrCustom::Preset { preset }), Some(obj)) = (&direct, value.as_object()) {
        assert_eq!(obj.get("preset"), Some(&Value::String(preset.clone())));
        assert!(set_fields(obj).all(|k| k == "preset"), "{value}");
    }
    if direct.is_ok() {
        assert!(value.is_object(), "{value}");
    }
});

/// The fields of `obj` that are not null.
fn set_fields(obj: &Map<String, Value>) -> impl Iterator<Item = &str> {
    obj.iter().filter(|(_, v)| !v.is_null()).map(|(k, _)| k.as_str())
}

/// Checks one parse of `value`: `outer` are the enclosing struct's own fields; `got` is the preset name chosen, if
/// any.
fn check(what: &str, value: &Value, outer: &[&str], got: Result<Option<String>, holdfast_core::ToolError>) {
    let obj = value.as_object();
    let preset = obj.and_then(|o| o.get("preset")).and_then(Value::as_str);
    let custom_set = obj.is_some_and(|o| set_fields(o).any(|k| k != "preset" && !outer.contains(&k)));
    match got {
        Ok(Some(name)) => {
            assert_eq!(Some(name.as_str()), preset, "{what}: {value}");
            assert!(!custom_set, "{what}: a preset beside custom fields was accepted: {value}");
        }
        Ok(None) => {
            assert!(value.is_object(), "{what}: {value}");
            assert!(preset.is_none(), "{what}: a preset was dropped: {value}");
        }
        Err(e) => {
            check_tool_error(what, &e);
            match e.code {
                ErrorCode::PresetConflict => {
                    assert!(preset.is_some() && custom_set, "{what}: preset_conflict without a conflict: {value}");
                    assert!(e.message.contains("preset"), "{what}: {}", e.message);
                }
                ErrorCode::InvalidParams => {
                    // A string preset beside a set custom field is always the conflict, whatever else is wrong.
                    let outer_ok = outer.iter().all(|k| obj.and_then(|o| o.get(*k)).is_some_and(Value::is_string));
                    assert!(
                        !(preset.is_some() && custom_set && outer_ok),
                        "{what}: conflict reported as {e:?}: {value}"
                    );
                }
                other => panic!("{what}: unexpected code {other:?}: {}", e.message),
            }
        }
    }
}

//! [`PresetOrCustom<T>`]: a parameter group that is either a named preset or custom fields — never both.
//!
//! Accepts `{"preset": NAME}` (other fields of the enclosing struct, such as `network`, sit beside it) or the custom
//! fields of `T`. A value that names a preset *and* sets any custom field is refused with `preset_conflict`; the
//! custom part is never silently dropped. `null` counts as absent, because strict-mode models send every field.
//!
//! Use it flattened: `#[serde(flatten)] mode: PresetOrCustom<CustomParams>`. Its schema is one object with a
//! nullable `preset` property beside `T`'s properties, so the enclosing schema stays strict.

use crate::error::{ErrorCode, coded_de_error};
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};
use std::borrow::Cow;

/// A preset name or custom fields.
///
/// ```
/// use holdfast_core::PresetOrCustom;
/// use serde::Deserialize;
///
/// #[derive(Debug, Deserialize)]
/// struct Custom {
///     url: String,
/// }
///
/// #[derive(Debug, Deserialize)]
/// struct Params {
///     #[serde(flatten)]
///     mode: PresetOrCustom<Custom>,
///     network: String,
/// }
///
/// let preset: Params = serde_json::from_str(r#"{"preset": "swap_quote", "url": null, "network": "base"}"#).unwrap();
/// assert_eq!(preset.mode.preset(), Some("swap_quote"));
/// let custom: Params = serde_json::from_str(r#"{"preset": null, "url": "https://x.test", "network": "base"}"#).unwrap();
/// assert!(matches!(custom.mode, PresetOrCustom::Custom(Custom { .. })));
/// // Both at once is refused, never silently resolved one way.
/// let both = serde_json::from_str::<Params>(r#"{"preset": "swap_quote", "url": "https://x.test", "network": "base"}"#);
/// assert!(both.unwrap_err().to_string().contains("cannot be combined"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum PresetOrCustom<T> {
    /// A named preset from configuration.
    Preset {
        /// The preset's name.
        preset: String,
    },
    /// Custom fields.
    Custom(T),
}

impl<T> PresetOrCustom<T> {
    /// The preset name, when this is a preset.
    pub fn preset(&self) -> Option<&str> {
        match self {
            Self::Preset { preset } => Some(preset),
            Self::Custom(_) => None,
        }
    }
}

impl<'de, T: DeserializeOwned> Deserialize<'de> for PresetOrCustom<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let map = Map::<String, Value>::deserialize(deserializer)?;
        let set: Map<String, Value> = map.into_iter().filter(|(_, v)| !v.is_null()).collect();
        match set.get("preset") {
            Some(Value::String(name)) => {
                let custom: Vec<&str> = set.keys().filter(|k| *k != "preset").map(String::as_str).collect();
                if custom.is_empty() {
                    Ok(Self::Preset { preset: name.clone() })
                } else {
                    Err(coded_de_error(
                        ErrorCode::PresetConflict,
                        format!(
                            "`preset` ({name:?}) cannot be combined with custom fields ({}); send one or the other",
                            custom.join(", ")
                        ),
                    ))
                }
            }
            Some(other) => Err(D::Error::custom(format!(
                "`preset`: expected a preset name (string), got {}",
                crate::text::json_kind(other)
            ))),
            None => T::deserialize(Value::Object(set)).map(Self::Custom).map_err(D::Error::custom),
        }
    }
}

impl<T: JsonSchema> JsonSchema for PresetOrCustom<T> {
    fn schema_name() -> Cow<'static, str> {
        format!("PresetOrCustom_{}", T::schema_name()).into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let custom = generator.subschema_for::<T>();
        let mut properties = Map::new();
        properties.insert(
            "preset".into(),
            serde_json::json!({"type": ["string", "null"], "description": "A configured preset's name. Leave the custom fields null when you set it."}),
        );
        if let Some(Value::Object(props)) = custom.as_value().get("properties") {
            for (k, v) in props {
                properties.insert(k.clone(), v.clone());
            }
        }
        json_schema!({
            "type": "object",
            "properties": properties,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;
    use crate::schema::{check_strict, strict_schema_for};
    use crate::tool::parse_params;

    #[derive(Debug, PartialEq, Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    struct Custom {
        url: String,
        method: Option<String>,
    }

    #[derive(Debug, PartialEq, Deserialize, JsonSchema)]
    struct Params {
        network: String,
        #[serde(flatten)]
        target: PresetOrCustom<Custom>,
    }

    #[test]
    fn accepts_a_preset_with_preset_level_fields() {
        let p: Params =
            parse_params(serde_json::json!({"preset": "swap_quote", "network": "base", "url": null})).unwrap();
        assert_eq!(p.target, PresetOrCustom::Preset { preset: "swap_quote".into() });
        assert_eq!(p.network, "base");
    }

    #[test]
    fn accepts_custom_fields() {
        let p: Params =
            parse_params(serde_json::json!({"network": "base", "url": "https://x", "preset": null})).unwrap();
        assert_eq!(p.target, PresetOrCustom::Custom(Custom { url: "https://x".into(), method: None }));
    }

    #[test]
    fn refuses_a_mix_with_preset_conflict() {
        let err = parse_params::<Params>(
            serde_json::json!({"preset": "swap_quote", "network": "base", "url": "https://evil"}),
        )
        .unwrap_err();
        assert_eq!(err.code, ErrorCode::PresetConflict);
        assert!(err.message.contains("url"), "{}", err.message);
    }

    #[test]
    fn unknown_custom_fields_are_invalid_params() {
        let err = parse_params::<Params>(serde_json::json!({"network": "base", "url": "u", "bogus": 1})).unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidParams);
        assert!(err.message.contains("bogus"));
    }

    #[test]
    fn the_flattened_schema_is_strict() {
        let schema = strict_schema_for::<Params>();
        assert_eq!(check_strict(&schema), Ok(()), "{schema:#}");
        let props = schema["properties"].as_object().unwrap();
        assert!(props.contains_key("preset") && props.contains_key("url") && props.contains_key("network"));
    }
}

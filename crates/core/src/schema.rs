//! One schema generator whose output every client accepts: MCP (`inputSchema`/`outputSchema`) and OpenAI strict
//! function calling at once.
//!
//! The rules ([`check_strict`] verifies them): root `type: object`; everything inlined (no `$ref`/`$defs`);
//! `additionalProperties: false` on every object; every property listed in `required`, optional ones typed
//! nullable; `anyOf` rather than `oneOf`; no `default`; no non-standard `format`; every subschema typed.

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value, json};

/// `format` values OpenAI strict mode accepts; any other is removed.
const STANDARD_FORMATS: &[&str] =
    &["date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"];

/// Keywords no client needs and some reject.
const DROPPED_KEYWORDS: &[&str] =
    &["$schema", "$id", "default", "examples", "deprecated", "readOnly", "writeOnly", "$comment", "title"];

/// The strict schema of `T`.
pub fn strict_schema_for<T: JsonSchema>() -> Value {
    let generator = SchemaSettings::draft2020_12()
        .with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
        })
        .into_generator();
    let schema = generator.into_root_schema_for::<T>();
    make_strict(schema.to_value())
}

/// Rewrites a JSON schema into the strict dialect (see the module docs).
pub fn make_strict(mut schema: Value) -> Value {
    if let Value::Object(map) = &mut schema {
        map.remove("$defs");
        map.remove("definitions");
    }
    strictify(&mut schema);
    if let Value::Object(map) = &mut schema
        && map.get("type").is_none()
        && map.contains_key("properties")
    {
        map.insert("type".into(), json!("object"));
    }
    schema
}

fn strictify(schema: &mut Value) {
    let Value::Object(map) = schema else { return };
    for k in DROPPED_KEYWORDS {
        map.remove(*k);
    }
    if let Some(Value::String(f)) = map.get("format")
        && !STANDARD_FORMATS.contains(&f.as_str())
    {
        map.remove("format");
    }
    if let Some(one_of) = map.remove("oneOf") {
        map.insert("anyOf".into(), one_of);
    }
    for key in ["anyOf", "allOf", "prefixItems"] {
        if let Some(Value::Array(items)) = map.get_mut(key) {
            items.iter_mut().for_each(strictify);
        }
    }
    if let Some(items) = map.get_mut("items") {
        strictify(items);
    }
    let is_object = type_includes(map, "object") || map.contains_key("properties");
    if is_object {
        if !map.contains_key("type") {
            map.insert("type".into(), json!("object"));
        }
        let required: Vec<String> = match map.get("required") {
            Some(Value::Array(r)) => r.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect(),
            _ => Vec::new(),
        };
        let props = map.entry("properties").or_insert_with(|| Value::Object(Map::new()));
        let mut all = Vec::new();
        if let Value::Object(props) = props {
            for (name, prop) in props.iter_mut() {
                strictify(prop);
                if !required.contains(name) {
                    make_nullable(prop);
                }
                all.push(Value::String(name.clone()));
            }
        }
        map.insert("required".into(), Value::Array(all));
        map.insert("additionalProperties".into(), Value::Bool(false));
    }
}

fn type_includes(map: &Map<String, Value>, t: &str) -> bool {
    match map.get("type") {
        Some(Value::String(s)) => s == t,
        Some(Value::Array(a)) => a.iter().any(|v| v == t),
        _ => false,
    }
}

fn make_nullable(prop: &mut Value) {
    let Value::Object(map) = prop else { return };
    if let Some(Value::Array(any_of)) = map.get_mut("anyOf") {
        if !any_of.iter().any(|s| s.get("type") == Some(&json!("null"))) {
            any_of.push(json!({"type": "null"}));
        }
        return;
    }
    match map.get_mut("type") {
        Some(Value::String(s)) if s != "null" => {
            let t = std::mem::take(s);
            map.insert("type".into(), json!([t, "null"]));
        }
        Some(Value::Array(types)) if !types.iter().any(|v| v == "null") => types.push(json!("null")),
        _ => {}
    }
    if let Some(Value::Array(values)) = map.get_mut("enum")
        && !values.contains(&Value::Null)
    {
        values.push(Value::Null);
    }
}

/// Checks every strict-dialect rule; returns one line per violation, each with a JSON pointer.
pub fn check_strict(schema: &Value) -> Result<(), Vec<String>> {
    let mut problems = Vec::new();
    if schema.get("type") != Some(&json!("object")) {
        problems.push("/: root must be `type: object`".to_owned());
    }
    walk(schema, "", &mut problems);
    if problems.is_empty() { Ok(()) } else { Err(problems) }
}

fn walk(schema: &Value, at: &str, problems: &mut Vec<String>) {
    let Value::Object(map) = schema else {
        problems.push(format!("{at}/: a subschema must be an object (found {schema})"));
        return;
    };
    let here = if at.is_empty() { "/" } else { at };
    for k in ["$ref", "$defs", "definitions", "oneOf", "default"] {
        if map.contains_key(k) {
            problems.push(format!("{here}: `{k}` is not allowed"));
        }
    }
    if let Some(Value::String(f)) = map.get("format")
        && !STANDARD_FORMATS.contains(&f.as_str())
    {
        problems.push(format!("{here}: non-standard format `{f}`"));
    }
    if !["type", "anyOf", "enum", "const"].iter().any(|k| map.contains_key(*k)) {
        problems.push(format!("{here}: untyped subschema"));
    }
    if type_includes(map, "object") {
        if map.get("additionalProperties") != Some(&Value::Bool(false)) {
            problems.push(format!("{here}: object without `additionalProperties: false`"));
        }
        let props: Vec<&String> =
            map.get("properties").and_then(Value::as_object).map(|p| p.keys().collect()).unwrap_or_default();
        let required: Vec<&str> = map
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        for p in &props {
            if !required.contains(&p.as_str()) {
                problems.push(format!("{here}: property `{p}` is not in `required`"));
            }
        }
        // A nested object without properties validates only `{}`: a free-form map made strict, which the tool would
        // accept with keys its schema refuses. Model such a value as a list of pairs.
        if props.is_empty() && !at.is_empty() {
            problems.push(format!("{here}: an object with no properties (only `{{}}` validates)"));
        }
    }
    if let Some(Value::Object(props)) = map.get("properties") {
        for (name, p) in props {
            walk(p, &format!("{at}/properties/{name}"), problems);
        }
    }
    if let Some(items) = map.get("items") {
        walk(items, &format!("{at}/items"), problems);
    }
    for key in ["anyOf", "allOf"] {
        if let Some(Value::Array(list)) = map.get(key) {
            for (i, s) in list.iter().enumerate() {
                walk(s, &format!("{at}/{key}/{i}"), problems);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[allow(dead_code)]
    #[derive(Deserialize, JsonSchema)]
    struct Inner {
        /// a count
        n: u64,
        tag: Option<String>,
    }

    #[allow(dead_code)]
    #[derive(Deserialize, JsonSchema)]
    #[serde(rename_all = "snake_case")]
    enum Mode {
        Fast,
        Slow,
    }

    #[allow(dead_code)]
    #[derive(Deserialize, JsonSchema)]
    #[serde(untagged)]
    enum Either {
        Text(String),
        Number(u32),
    }

    #[allow(dead_code)]
    #[derive(Deserialize, JsonSchema)]
    struct Outer {
        name: String,
        #[serde(default)]
        count: u32,
        inner: Inner,
        list: Vec<Inner>,
        mode: Option<Mode>,
        either: Either,
    }

    #[test]
    fn generated_schemas_satisfy_every_rule() {
        let schema = strict_schema_for::<Outer>();
        assert_eq!(check_strict(&schema), Ok(()), "{schema:#}");
        let text = schema.to_string();
        assert!(!text.contains("$ref") && !text.contains("uint") && !text.contains("oneOf"), "{text}");
        assert_eq!(schema["properties"]["count"]["type"], json!(["integer", "null"]));
        assert_eq!(schema["properties"]["inner"]["properties"]["tag"]["type"], json!(["string", "null"]));
        assert_eq!(schema["properties"]["list"]["items"]["additionalProperties"], json!(false));
    }

    #[test]
    fn the_checker_finds_each_violation() {
        let bad = json!({
            "type": "object",
            "properties": {
                "a": {"type": "object", "properties": {"x": {"type": "string"}}, "required": []},
                "b": {"$ref": "#/$defs/B"},
                "c": {"type": "string", "format": "uint64", "default": "x"},
                "d": {"oneOf": [{"type": "string"}]},
                "e": {}
            },
            "required": ["a"]
        });
        let problems = check_strict(&bad).unwrap_err().join("\n");
        for needle in [
            "/: object without `additionalProperties: false`",
            "/: property `b` is not in `required`",
            "/properties/a: object without",
            "/properties/a: property `x`",
            "/properties/b: `$ref`",
            "/properties/c: `default`",
            "/properties/c: non-standard format",
            "/properties/d: `oneOf`",
            "/properties/e: untyped",
        ] {
            assert!(problems.contains(needle), "missing {needle:?} in\n{problems}");
        }
        assert!(check_strict(&json!({"type": "array"})).unwrap_err()[0].contains("root"));
    }
}

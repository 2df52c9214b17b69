//! # holdfast-testkit
//!
//! Conformance checks that every crate registering tools runs in its tests, so the rules are checked the same way
//! everywhere:
//! - [`check_tool_schemas`]: every input and output schema is strict (MCP + OpenAI strict), every example input
//!   validates against its schema with a real JSON Schema validator, and value-moving tools take no value
//!   parameters (invariant 1).
//! - [`check_malformed_params`]: every tool, given wrong types, missing fields, huge strings, unicode and nulls,
//!   returns a coded error (or a result) and never panics.
//! - [`find_secret`]: scans text for a private key, with and without `0x`.
//!
//! Each returns the list of problems instead of panicking, so the calling test prints them all at once.
//!
//! [`scripted`]: scripted model servers on loopback, for tests that run the agent loop.
//!
//! [`postgres`]: a fresh database per test on the PostgreSQL server `scripts/test.sh` starts.

pub mod postgres;
pub mod scripted;

use holdfast_core::schema::check_strict;
use holdfast_core::{ErrorCode, ToolContext, ToolKind, ToolRegistry};
use serde_json::{Map, Value, json};

/// Parameter names a value-moving tool must not take (invariant 1): it reads registers and presets instead.
pub const FORBIDDEN_VALUE_PARAMS: &[&str] = &[
    "to",
    "data",
    "value",
    "amount",
    "recipient",
    "url",
    "calldata",
    "address",
    "gas",
    "gas_price",
    "nonce",
    "max_fee_per_gas",
    "max_priority_fee_per_gas",
    "pay_to",
    "payee",
    "price",
];

/// Checks every registered tool's schemas and examples.
pub fn check_tool_schemas(registry: &ToolRegistry) -> Result<(), Vec<String>> {
    let mut problems = Vec::new();
    for info in registry.list() {
        for (which, schema) in [("input", &info.input_schema), ("output", &info.output_schema)] {
            if let Err(p) = check_strict(schema) {
                problems.extend(p.into_iter().map(|p| format!("{}: {which} schema: {p}", info.name)));
            }
            if let Err(e) = jsonschema::draft202012::meta::validate(schema) {
                problems.push(format!("{}: {which} schema is not valid JSON Schema 2020-12: {e}", info.name));
            }
        }
        let validator = match jsonschema::draft202012::new(&info.input_schema) {
            Ok(v) => v,
            Err(e) => {
                problems.push(format!("{}: input schema does not compile: {e}", info.name));
                continue;
            }
        };
        let Some(tool) = registry.get(&info.name) else { continue };
        let examples = tool.examples();
        if examples.is_empty() {
            problems.push(format!("{}: no example inputs", info.name));
        }
        for example in examples {
            for error in validator.iter_errors(&example) {
                problems.push(format!("{}: example {example} does not validate: {error}", info.name));
            }
        }
        if info.kind == ToolKind::ValueMoving {
            let props = info.input_schema.get("properties").and_then(Value::as_object).cloned().unwrap_or_default();
            for name in props.keys() {
                if FORBIDDEN_VALUE_PARAMS.contains(&name.as_str()) {
                    problems.push(format!("{}: value-moving tool takes a value parameter `{name}`", info.name));
                }
            }
        }
    }
    if problems.is_empty() { Ok(()) } else { Err(problems) }
}

/// Wrong-typed, missing, huge, unicode and null variants of a tool's params, derived from its input schema.
pub fn malformed_inputs(schema: &Value) -> Vec<(String, Value)> {
    let huge = "x".repeat(1 << 20);
    let unicode = "💥\u{0}\u{202e}é\u{feff}0x𝟘";
    let mut cases: Vec<(String, Value)> = vec![
        ("null".into(), Value::Null),
        ("array".into(), json!([])),
        ("string".into(), json!("params")),
        ("number".into(), json!(42)),
        ("empty object".into(), json!({})),
        ("unknown field only".into(), json!({"bogus": 1})),
    ];
    let props = schema.get("properties").and_then(Value::as_object).cloned().unwrap_or_default();
    let base = plausible_object(&props);
    let wrong_values = [
        ("null", Value::Null),
        ("number", json!(-1.5)),
        ("bool", json!(true)),
        ("array", json!(["a", 1])),
        ("object", json!({"nested": {"deeper": []}})),
        ("huge string", Value::String(huge.clone())),
        ("unicode", Value::String(unicode.into())),
        ("empty string", json!("")),
        ("negative", json!("-1")),
        ("big number", json!(u64::MAX)),
    ];
    for name in props.keys() {
        for (label, v) in &wrong_values {
            let mut obj = base.clone();
            obj.insert(name.clone(), v.clone());
            cases.push((format!("`{name}` = {label}"), Value::Object(obj)));
        }
        let mut missing = base.clone();
        missing.remove(name);
        cases.push((format!("`{name}` missing"), Value::Object(missing)));
    }
    let mut extra = base.clone();
    extra.insert("to".into(), json!("0x0000000000000000000000000000000000000001"));
    cases.push(("extra field `to`".into(), Value::Object(extra)));
    cases.push(("plausible".into(), Value::Object(base)));
    cases
}

fn plausible_object(props: &Map<String, Value>) -> Map<String, Value> {
    props.iter().map(|(k, s)| (k.clone(), plausible_value(s))).collect()
}

fn plausible_value(schema: &Value) -> Value {
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        return values.first().cloned().unwrap_or(Value::Null);
    }
    if let Some(options) = schema.get("anyOf").and_then(Value::as_array) {
        return options.first().map(plausible_value).unwrap_or(Value::Null);
    }
    let t = match schema.get("type") {
        Some(Value::String(t)) => t.as_str(),
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).find(|t| *t != "null").unwrap_or("null"),
        _ => "null",
    };
    match t {
        "string" => json!("a"),
        "integer" | "number" => json!(1),
        "boolean" => json!(false),
        "array" => json!([]),
        "object" => Value::Object(plausible_object(
            &schema.get("properties").and_then(Value::as_object).cloned().unwrap_or_default(),
        )),
        _ => Value::Null,
    }
}

/// Calls every tool with every [`malformed_inputs`] case. A panic (reported by the registry as `internal` "failed
/// unexpectedly") or any `internal` error is a problem; coded errors and results are fine.
pub async fn check_malformed_params(registry: &ToolRegistry, ctx: &ToolContext) -> Result<(), Vec<String>> {
    let mut problems = Vec::new();
    for info in registry.list() {
        for (label, params) in malformed_inputs(&info.input_schema) {
            if let Err(e) = registry.call(&info.name, params, ctx).await
                && e.code == ErrorCode::Internal
            {
                problems.push(format!("{} [{label}]: {}", info.name, e.message));
            }
        }
    }
    if problems.is_empty() { Ok(()) } else { Err(problems) }
}

/// Finds a private key (hex, with or without `0x`, any case) in `haystack`. Returns the offending excerpt.
pub fn find_secret(haystack: &str, key_hex: &str) -> Option<String> {
    let bare = key_hex.trim_start_matches("0x").to_ascii_lowercase();
    if bare.len() < 16 {
        return None;
    }
    let lower = haystack.to_ascii_lowercase();
    lower.find(&bare).map(|at| {
        let start = at.saturating_sub(20);
        let end = (at + bare.len() + 20).min(lower.len());
        haystack.get(start..end).unwrap_or("<non-utf8 boundary>").to_owned()
    })
}

/// One HTTP/1.1 request read from a test proxy's client connection: the head (request line and headers, as text)
/// and the body. Test proxies speak HTTP/1.1 by hand (keep-alive, `content-length` bodies, as reqwest and alloy send
/// them) so they can stop in the middle of an exchange, which a framework handler cannot.
#[derive(Debug)]
pub struct HttpRequest {
    /// Request line and headers, up to the blank line.
    pub head: String,
    /// The `content-length` body.
    pub body: Vec<u8>,
}

/// Reads the next request from `stream`; `buf` carries bytes read past it between calls. `None` at end of stream,
/// on an error, or on a head over 64 KiB.
pub async fn read_http_request(stream: &mut tokio::net::TcpStream, buf: &mut Vec<u8>) -> Option<HttpRequest> {
    use tokio::io::AsyncReadExt as _;
    let header_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        if buf.len() > 64 * 1024 {
            return None;
        }
        let mut chunk = [0u8; 8192];
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..header_end]).into_owned();
    let length: usize = head
        .lines()
        .find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().to_owned()))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    while buf.len() < header_end + length {
        let mut chunk = [0u8; 8192];
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let body = buf[header_end..header_end + length].to_vec();
    buf.drain(..header_end + length);
    Some(HttpRequest { head, body })
}

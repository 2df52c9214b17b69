//! Registry tools as MCP tools, and tool results as MCP results.
//!
//! - Every registered tool is listed with its strict `inputSchema` and `outputSchema` as they are (root object,
//!   everything inlined — see `holdfast_core::schema`); value-moving tools carry the `destructiveHint` annotation.
//! - A result is `structuredContent` plus the same JSON as text.
//! - A tool error is an MCP tool error (`isError: true`) with two text blocks — `code: message`, then the JSON
//!   `{"code", "message", "details"}` — and the same JSON under `_meta["holdfast/error"]`. It carries no
//!   `structuredContent`: clients (the official TypeScript SDK among them) check any `structuredContent` against the
//!   tool's `outputSchema`, error or not, and an error object would fail that check and turn a clear tool error into
//!   an opaque client-side failure.

use holdfast_core::{ToolError, ToolInfo, ToolKind};
use rmcp::model::{CallToolResult, ContentBlock, JsonObject, MetaObject, Tool, ToolAnnotations};
use serde_json::{Value, json};
use std::sync::Arc;

/// The MCP form of a registered tool.
pub fn to_mcp_tool(info: &ToolInfo) -> Tool {
    let tool = Tool::new(info.name.clone(), info.description.clone(), Arc::new(object(&info.input_schema)))
        .with_raw_output_schema(Arc::new(object(&info.output_schema)));
    match info.kind {
        ToolKind::ValueMoving => tool.with_annotations(
            ToolAnnotations::new().read_only(false).destructive(true).idempotent(false).open_world(true),
        ),
        ToolKind::Plain => tool,
    }
}

/// A schema as a JSON object (the registry only accepts object schemas; anything else becomes an empty object
/// schema rather than a malformed listing).
fn object(schema: &Value) -> JsonObject {
    match schema {
        Value::Object(map) => map.clone(),
        _ => JsonObject::from_iter([("type".to_owned(), json!("object"))]),
    }
}

/// The MCP result of a tool call.
pub fn to_call_result(result: &Result<Value, ToolError>) -> CallToolResult {
    match result {
        Ok(output) => CallToolResult::structured(output.clone()),
        Err(error) => {
            let json = error_json(error);
            let content = vec![ContentBlock::text(error_text(error)), ContentBlock::text(json.to_string())];
            let meta = MetaObject(JsonObject::from_iter([(ERROR_META_KEY.to_owned(), json)]));
            CallToolResult::error(content).with_meta(Some(meta))
        }
    }
}

/// The `_meta` key of a tool error's `{"code", "message", "details"}`.
pub const ERROR_META_KEY: &str = "holdfast/error";

/// `{"code", "message", "details"}` of a tool error (`details` is `null` when there are none).
pub fn error_json(error: &ToolError) -> Value {
    json!({"code": error.code, "message": error.message, "details": error.details})
}

/// `code: message`.
pub fn error_text(error: &ToolError) -> String {
    format!("{}: {}", error.code, error.message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use holdfast_core::ErrorCode;

    #[test]
    fn results_carry_structured_content_and_the_same_json_as_text() {
        let ok = serde_json::to_value(to_call_result(&Ok(json!({"a": 1})))).unwrap();
        assert_eq!(ok["structuredContent"], json!({"a": 1}));
        assert_eq!(ok["content"][0]["text"], "{\"a\":1}");
        assert_eq!(ok["isError"], false);

        let err = ToolError::new(ErrorCode::RegisterWriteDenied, "`key`: wallet_address is intrinsic");
        let value = serde_json::to_value(to_call_result(&Err(err))).unwrap();
        assert_eq!(value["isError"], true);
        assert!(value.get("structuredContent").is_none(), "{value}");
        assert_eq!(value["content"][0]["text"], "register_write_denied: `key`: wallet_address is intrinsic");
        let json: Value = serde_json::from_str(value["content"][1]["text"].as_str().unwrap()).unwrap();
        assert_eq!(json["code"], "register_write_denied");
        assert_eq!(value["_meta"]["holdfast/error"], json);
    }
}

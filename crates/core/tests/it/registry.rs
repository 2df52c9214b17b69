//! The registry as every caller uses it: by name, with JSON.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use holdfast_core::builtin::register_core_tools;
use holdfast_core::config::CoreConfig;
use holdfast_core::{AiTool, CoreServices, ErrorCode, RegistryError, ToolContext, ToolError, ToolRegistry};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

fn setup() -> (ToolRegistry, ToolContext) {
    let registry = ToolRegistry::new();
    register_core_tools(&registry).unwrap();
    let ctx = CoreServices::new(CoreConfig::default()).unwrap().new_session("test");
    (registry, ctx)
}

#[test]
fn every_core_schema_is_strict_and_every_example_validates() {
    let (registry, _) = setup();
    holdfast_testkit::check_tool_schemas(&registry).unwrap_or_else(|p| panic!("{}", p.join("\n")));
}

#[tokio::test]
async fn malformed_params_never_panic_and_always_carry_a_code() {
    let (registry, ctx) = setup();
    holdfast_testkit::check_malformed_params(&registry, &ctx).await.unwrap_or_else(|p| panic!("{}", p.join("\n")));
}

#[tokio::test]
async fn unknown_tools_and_bad_params_get_stable_codes_naming_the_field() {
    let (registry, ctx) = setup();
    let err = registry.call("web3_send_anything", json!({}), &ctx).await.unwrap_err();
    assert_eq!(err.code, ErrorCode::UnknownTool);

    let err = registry.call("token_lookup", json!({"symbol": "USDC"}), &ctx).await.unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidParams);
    assert!(err.message.contains("network"), "{}", err.message);

    let err = registry.call("token_lookup", json!({"symbol": ["USDC"], "network": "base"}), &ctx).await.unwrap_err();
    assert_eq!((err.code, err.message.starts_with("`symbol`")), (ErrorCode::InvalidParams, true), "{}", err.message);

    let err = registry.call("register_set", json!({"key": "a", "value": "b", "to": "0x1"}), &ctx).await.unwrap_err();
    assert!(err.message.contains("unknown field `to`"), "{}", err.message);

    let err = registry.call("register_get", json!(null), &ctx).await.unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidParams);
}

#[allow(dead_code)]
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Nested {
    outer: Outer,
}
#[allow(dead_code)]
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Outer {
    items: Vec<Item>,
}
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Item {
    #[allow(dead_code)]
    n: u8,
}
#[derive(Serialize, JsonSchema)]
struct Done {
    ok: bool,
}

struct NestedTool(&'static str);
impl AiTool for NestedTool {
    type Input = Nested;
    type Output = Done;
    fn name(&self) -> &str {
        self.0
    }
    fn description(&self) -> &str {
        "test tool"
    }
    async fn execute(&self, _: Nested, _: &ToolContext) -> Result<Done, ToolError> {
        Ok(Done { ok: true })
    }
}

struct Panicky;
impl AiTool for Panicky {
    type Input = Nested;
    type Output = Done;
    fn name(&self) -> &str {
        "panicky"
    }
    fn description(&self) -> &str {
        "panics"
    }
    #[allow(clippy::panic)]
    async fn execute(&self, _: Nested, _: &ToolContext) -> Result<Done, ToolError> {
        panic!("boom")
    }
}

#[tokio::test]
async fn invalid_params_carry_the_nested_field_path() {
    let (registry, ctx) = setup();
    registry.register(NestedTool("nested")).unwrap();
    let err = registry.call("nested", json!({"outer": {"items": [{"n": 1}, {"n": 300}]}}), &ctx).await.unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidParams);
    assert!(err.message.starts_with("`outer.items[1].n`"), "{}", err.message);
}

#[tokio::test]
async fn duplicates_are_refused_unless_replaced_explicitly() {
    let (registry, ctx) = setup();
    registry.register(NestedTool("nested")).unwrap();
    assert_eq!(registry.register(NestedTool("nested")), Err(RegistryError::Duplicate("nested".into())));
    assert!(registry.replace(NestedTool("nested")).unwrap().is_some());
    assert!(matches!(registry.register(NestedTool("bad name!")), Err(RegistryError::InvalidName(_))));
    assert_eq!(registry.names().iter().filter(|n| *n == "nested").count(), 1);
    let ok = registry.call("nested", json!({"outer": {"items": []}}), &ctx).await.unwrap();
    assert_eq!(ok, json!({"ok": true}));
}

#[tokio::test]
async fn a_panicking_tool_is_an_internal_error_and_the_runtime_continues() {
    let (registry, ctx) = setup();
    registry.register(Panicky).unwrap();
    let err = registry.call("panicky", json!({"outer": {"items": []}}), &ctx).await.unwrap_err();
    assert_eq!(err.code, ErrorCode::Internal);
    assert!(registry.call("register_get", json!({"key": "none", "path": null}), &ctx).await.is_err());
}

#[tokio::test]
async fn calls_and_results_are_published_on_the_session_bus() {
    let (registry, ctx) = setup();
    let mut rx = ctx.events.subscribe();
    registry.call("register_set", json!({"key": "note", "value": "hi"}), &ctx).await.unwrap();
    let names: Vec<String> = (0..3).map(|_| rx.try_recv().unwrap().name().to_owned()).collect();
    assert_eq!(names, vec!["tool.call", "register.update", "tool.result"]);
}

#[tokio::test]
async fn to_raw_amount_origin_follows_the_context_bank() {
    let (registry, ctx) = setup();
    registry
        .call("token_lookup", json!({"symbol": "USDC", "network": "base", "cache_as": "sell_token"}), &ctx)
        .await
        .unwrap();
    let params = json!({"amount": "12.5", "token_register": "sell_token", "cache_as": "sell_amount"});
    let out = registry.call("to_raw_amount", params.clone(), &ctx).await.unwrap();
    assert_eq!((out["raw"].as_str(), out["origin"].as_str()), (Some("12500000"), Some("model")));
    ctx.context_bank.scan_input("please sell 12.5 USDC");
    let out = registry.call("to_raw_amount", params, &ctx).await.unwrap();
    assert_eq!(out["origin"], "user");
    assert_eq!(ctx.registers.get("sell_amount").unwrap().origin(), holdfast_core::Origin::User);
    // The user wrote 12.5 USDC, not 12.5 ETH.
    registry
        .call("token_lookup", json!({"symbol": "ETH", "network": "base", "cache_as": "sell_token"}), &ctx)
        .await
        .unwrap();
    let out = registry
        .call("to_raw_amount", json!({"amount": "12.5", "token_register": "sell_token", "cache_as": null}), &ctx)
        .await
        .unwrap();
    assert_eq!(out["origin"], "model");
}

#[tokio::test]
async fn a_bare_number_authorizes_no_amount() {
    let (registry, ctx) = setup();
    registry
        .call("token_lookup", json!({"symbol": "USDC", "network": "base", "cache_as": "sell_token"}), &ctx)
        .await
        .unwrap();
    ctx.context_bank.scan_input("send it to my 2 friends");
    let params = json!({"amount": "2", "token_register": "sell_token", "cache_as": "sell_amount"});
    let out = registry.call("to_raw_amount", params.clone(), &ctx).await.unwrap();
    assert_eq!(out["origin"], "model", "2 has no token next to it");
    assert_eq!(ctx.registers.get("sell_amount").unwrap().origin(), holdfast_core::Origin::Model);
    let out = registry.call("register_set", json!({"key": "sell_amount", "value": "2"}), &ctx).await.unwrap();
    assert_eq!(out["origin"], "model");
    assert_eq!(ctx.registers.get("sell_amount").unwrap().origin(), holdfast_core::Origin::Model);
    // The user names the token with the amount: now 2 USDC is theirs, and only 2 USDC.
    ctx.context_bank.scan_input("swap 2 USDC for ETH");
    let out = registry.call("to_raw_amount", params, &ctx).await.unwrap();
    assert_eq!((out["raw"].as_str(), out["origin"].as_str()), (Some("2000000"), Some("user")));
    registry
        .call("token_lookup", json!({"symbol": "ETH", "network": "base", "cache_as": "buy_token"}), &ctx)
        .await
        .unwrap();
    let out = registry
        .call("to_raw_amount", json!({"amount": "2", "token_register": "buy_token", "cache_as": null}), &ctx)
        .await
        .unwrap();
    assert_eq!(out["origin"], "model", "the user wrote 2 USDC, not 2 ETH");
}

#[tokio::test]
async fn the_store_rules_hold_for_every_writer_through_the_registry() {
    let (registry, ctx) = setup();
    // token_lookup may write sell_token; register_set may not; token_lookup may not write sell_amount.
    let err = registry
        .call("token_lookup", json!({"symbol": "USDC", "network": "base", "cache_as": "sell_amount"}), &ctx)
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::RegisterWriteDenied);
    let err = registry
        .call("token_lookup", json!({"symbol": "USDC", "network": "base", "cache_as": "wallet_address"}), &ctx)
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::RegisterWriteDenied);
    let err = registry
        .call("to_raw_amount", json!({"amount": "1", "token_register": "sell_token", "cache_as": null}), &ctx)
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::RegisterMissing);
    // Decimals come only from a register declared to hold a token (and then from the token table).
    let err = registry
        .call("to_raw_amount", json!({"amount": "1", "token_register": "missing", "cache_as": null}), &ctx)
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::RegisterMissing, "a name nothing was written to: {}", err.message);
    assert!(ctx.registers.keys().is_empty());
    registry.call("register_set", json!({"key": "my_token", "value": "USDC, 18 decimals"}), &ctx).await.unwrap();
    let err = registry
        .call("to_raw_amount", json!({"amount": "1", "token_register": "my_token", "cache_as": null}), &ctx)
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::RegisterTypeMismatch, "a scratch register the model wrote: {}", err.message);
}

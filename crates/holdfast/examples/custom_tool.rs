//! A custom typed tool that reads one register and writes another with `cache_as`, registered beside the built-ins.
//!
//! Run with `cargo run -p holdfast --example custom_tool` (it needs no feature beyond holdfast-core).
//!
//! `split_amount` divides a raw token amount held in a register into equal parts. The model passes register *names*
//! (`amount_register`, `cache_as`), never the amount itself; the register store records where the result came from
//! and, because the result is `derived_from` its input, a result computed from a model-typed amount is itself marked
//! `model` — the taint follows the value without the tool doing anything (from the user's amount it is `tool`).
//!
//! The example exits non-zero if any of that does not hold.

use holdfast::prelude::*;
use serde_json::json;

/// Parameters of `split_amount`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct SplitAmountInput {
    /// The register holding a raw amount (base units, as `to_raw_amount` writes it).
    amount_register: String,
    /// Into how many equal parts (1–100).
    parts: u32,
    /// The register to write one part to.
    cache_as: String,
}

/// Result of `split_amount`.
#[derive(Debug, Serialize, JsonSchema)]
struct SplitAmountOutput {
    /// One part, in base units (the remainder of the division is not included).
    part: String,
    /// The register written.
    cached_as: String,
    /// Where the written value counts as coming from.
    origin: Origin,
}

/// The tool: typed input and output, strict schemas derived once by the registry.
struct SplitAmount;

impl AiTool for SplitAmount {
    type Input = SplitAmountInput;
    type Output = SplitAmountOutput;

    fn name(&self) -> &str {
        "split_amount"
    }

    fn description(&self) -> &str {
        "Divide the raw amount in a register into equal parts and write one part to `cache_as`."
    }

    fn examples(&self) -> Vec<serde_json::Value> {
        vec![json!({"amount_register": "sell_amount", "parts": 4, "cache_as": "part_amount"})]
    }

    async fn execute(&self, input: SplitAmountInput, ctx: &ToolContext) -> Result<SplitAmountOutput, ToolError> {
        if !(1..=100).contains(&input.parts) {
            return Err(ToolError::new(ErrorCode::InvalidParams, "`parts` must be between 1 and 100"));
        }
        // The register must exist and hold a base-unit amount: a missing register or another value is a clear error.
        let entry = ctx.registers.require(&input.amount_register)?;
        let raw = entry.value.as_str().unwrap_or_default();
        let raw = holdfast::core::amount::parse_base_units("amount_register", raw)?;
        let part = (raw / U256::from(input.parts)).to_string();
        // Written with provenance: this tool, derived from the input register (so a model value taints it).
        let write = RegisterWrite::new(&input.cache_as, json!(part), Origin::Tool, self.name())
            .derived_from([input.amount_register.clone()]);
        let origin = ctx.registers.set(write)?.origin();
        Ok(SplitAmountOutput { part, cached_as: input.cache_as, origin })
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The built-ins (register_get, token_lookup, to_raw_amount, …) and the custom tool in one registry.
    let registry = ToolRegistry::new();
    holdfast::core::builtin::register_core_tools(&registry)?;
    registry.register(SplitAmount)?;
    println!("tools: {}", registry.names().join(", "));

    // A session over the built-in configuration (networks and the token table); the user's words feed its context
    // bank, so an amount the user wrote counts as the user's.
    let ctx = CoreServices::new(CoreConfig::default())?.new_session("example");
    ctx.context_bank.scan_input("send 1.5 ETH split four ways");

    let calls = [
        ("token_lookup", json!({"symbol": "ETH", "network": "base", "cache_as": "sell_token"})),
        ("to_raw_amount", json!({"amount": "1.5", "token_register": "sell_token", "cache_as": "sell_amount"})),
        ("split_amount", json!({"amount_register": "sell_amount", "parts": 4, "cache_as": "part_amount"})),
        ("register_get", json!({"key": "part_amount", "path": null})),
    ];
    let mut last = serde_json::Value::Null;
    for (tool, params) in calls {
        last = registry.call(tool, params, &ctx).await?;
        println!("{tool}: {last}");
    }
    // The part is the tool's (computed from the user's amount); it names what it came from.
    if last["value"] != "375000000000000000" || last["origin"] != "tool" || last["derived_from"][0] != "sell_amount" {
        return Err(format!("unexpected register: {last}").into());
    }

    // An amount the user never wrote is the model's: the part derived from it is marked `model` as well.
    registry
        .call("to_raw_amount", json!({"amount": "9", "token_register": "sell_token", "cache_as": "sell_amount"}), &ctx)
        .await?;
    let tainted = registry
        .call("split_amount", json!({"amount_register": "sell_amount", "parts": 3, "cache_as": "part_amount"}), &ctx)
        .await?;
    println!("from a model amount: {tainted}");
    if tainted["origin"] != "model" {
        return Err(format!("the taint did not follow the value: {tainted}").into());
    }

    // The model cannot hand the tool a value instead of a name: unknown fields are refused before it runs.
    let refused = registry
        .call("split_amount", json!({"amount": "1000", "parts": 2, "cache_as": "part_amount"}), &ctx)
        .await
        .err()
        .ok_or("a value in place of a register name was accepted")?;
    println!("refused: {} ({})", refused.message, refused.code.as_str());
    Ok(())
}

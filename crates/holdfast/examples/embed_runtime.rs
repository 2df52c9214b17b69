//! Embedding the holdfast runtime in a plain program: no server, no model — tools called by name from code.
//!
//! Run with `cargo run -p holdfast --example embed_runtime` (feature `agent`, on by default).
//!
//! [`Runtime::load`] with no configuration file builds every layer in memory: the built-in networks and token table,
//! an ephemeral burner wallet, memory, sessions and the journal, nothing on disk. A program then opens a session,
//! feeds it the user's words (the only text the context bank reads) and calls tools through the one registry, where
//! every rule applies exactly as it does behind the HTTP API or MCP. The example exits non-zero if the registers do
//! not end up as described.

use holdfast::prelude::*;
use serde_json::json;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Every layer, from the built-in defaults; `Runtime::load(Some(path))` reads a holdfast.toml instead.
    let runtime = Runtime::load(None).await?;
    let (session, ctx) = runtime.open_session("embedded").await?;
    println!("session {} with {} tools", session.id, runtime.registry.names().len());

    // What the user said: the amount and the token are now the user's, as the context bank saw them.
    let found = ctx.scan_user_input("convert 12.5 USDC to base units").await?;
    println!("the context bank found: {:?}", found.iter().map(|i| &i.value).collect::<Vec<_>>());

    let calls = [
        (
            "local_burner_wallet",
            json!({"action": "address", "token_register": null, "network": null, "cache_as": "wallet_address"}),
        ),
        ("token_lookup", json!({"symbol": "USDC", "network": "base", "cache_as": "sell_token"})),
        ("to_raw_amount", json!({"amount": "12.5", "token_register": "sell_token", "cache_as": "sell_amount"})),
    ];
    for (tool, params) in calls {
        let out = runtime.registry.call(tool, params, &ctx).await?;
        println!("{tool} -> {out}");
    }

    // The registers, with provenance: what a value-moving tool would read by name.
    for key in ["wallet_address", "sell_token", "sell_amount"] {
        let entry = ctx.registers.require(key)?;
        println!(
            "{key:15} = {} (origin {}, written by {})",
            entry.value,
            entry.origin().as_str(),
            entry.provenance.source
        );
    }
    let amount = ctx.registers.require("sell_amount")?;
    if amount.value != "12500000" || amount.origin() != Origin::User {
        return Err(format!("sell_amount is {} from {:?}", amount.value, amount.origin()).into());
    }
    Ok(())
}

//! A custom `x402_fetch` preset file: the operator says which URLs exist; the model only picks a preset by name.
//!
//! Run with `cargo run -p holdfast --example custom_preset` (features `agent` and `cli`, on by default).
//!
//! The example serves a small JSON API on loopback (a stand-in for any paid or free data source), writes a preset
//! file and a `holdfast.toml` naming it into a temporary folder, builds the runtime from them and fetches the preset.
//! The URL is built by code from the preset and from registers — here the `city` register — and every value is
//! URL-encoded; the answer lands in the register given as `cache_as`, with its provenance. A preset the file does
//! not define is refused. The endpoint is free, so no x402 payment happens; a paid one answers `402` and the
//! runtime pays within `[payments]` (see docs/configuration.md). The example exits non-zero if any of that does not
//! hold.

use axum::Json;
use axum::extract::Query;
use axum::routing::get;
use holdfast::core::config::ConfigDocument;
use holdfast::prelude::*;
use serde_json::json;
use std::collections::HashMap;

/// The data source: `GET /weather?city=NAME` → a JSON object.
async fn weather(Query(query): Query<HashMap<String, String>>) -> Json<serde_json::Value> {
    let city = query.get("city").cloned().unwrap_or_default();
    Json(json!({"city": city, "temperature_c": 14.5, "units": query.get("units")}))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", listener.local_addr()?);
    tokio::spawn(async move { axum::serve(listener, axum::Router::new().route("/weather", get(weather))).await });

    // The preset file (RON): URL, query parameters (a literal, a register), the register it is meant for, its kind.
    // Plain http is accepted only for a loopback host.
    let dir = tempfile::tempdir()?;
    let presets = format!(
        r#"{{
    "weather": (
        url: "{base}/weather",
        query: [
            ("city",  Register(key: "city", path: None)),
            ("units", Literal("metric")),
        ],
        headers: [],
        writes: "weather",
        kind: Json,
        payees: [],
    ),
}}"#
    );
    std::fs::write(dir.path().join("presets.ron"), presets)?;
    let config = dir.path().join("holdfast.toml");
    std::fs::write(&config, "[presets]\nfile = \"presets.ron\"\n")?;

    let runtime = Runtime::from_document(ConfigDocument::load(&config)?).await?;
    let (_, ctx) = runtime.open_session("example").await?;
    let call = |tool: &'static str, params: serde_json::Value| runtime.registry.call(tool, params, &ctx);

    call("register_set", json!({"key": "city", "value": "Saint-Malo & Dinard"})).await?;
    let fetched = call("x402_fetch", json!({"preset": "weather", "network": "base", "cache_as": "weather"})).await?;
    println!("x402_fetch -> {fetched}");
    let entry = ctx.registers.require("weather")?;
    println!("weather = {} (origin {}, preset {:?})", entry.value, entry.origin().as_str(), entry.provenance.preset);
    if entry.value["city"] != "Saint-Malo & Dinard" || entry.value["units"] != "metric" {
        return Err(format!("the preset did not build the URL from the register: {}", entry.value).into());
    }

    // The model cannot invent a preset (or a URL: the tool has no URL parameter at all).
    let refused = call("x402_fetch", json!({"preset": "anything_else", "network": "base", "cache_as": "weather"}))
        .await
        .err()
        .ok_or("an unknown preset was fetched")?;
    println!("refused: {} ({})", refused.message, refused.code.as_str());
    Ok(())
}

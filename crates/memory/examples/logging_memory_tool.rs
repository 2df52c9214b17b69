//! A custom memory tool replacing the built-in `update_memory`: a logging wrapper around the default.
//!
//! Run with `cargo run -p holdfast-memory --example logging_memory_tool`. It builds an agent's tool set with
//! `BuiltinTools::builder().with_memory_tool(...)`, calls `update_memory` through the registry by name, and prints
//! what the wrapper logged. It exits non-zero if the replacement was not the tool that ran.

use holdfast_core::config::CoreConfig;
use holdfast_core::{AiTool, CoreServices, ToolContext, ToolError};
use holdfast_memory::{
    AgentRuntime, BuiltinTools, MemoryConfig, UpdateMemoryInput, UpdateMemoryOutput, UpdateMemoryTool,
};
use parking_lot::Mutex;
use serde_json::json;
use std::sync::Arc;

/// Wraps the default `update_memory`, logging every call and its result.
struct LoggingMemoryTool {
    inner: UpdateMemoryTool,
    log: Arc<Mutex<Vec<String>>>,
}

impl AiTool for LoggingMemoryTool {
    type Input = UpdateMemoryInput;
    type Output = UpdateMemoryOutput;

    fn name(&self) -> &str {
        "update_memory"
    }

    fn description(&self) -> &str {
        self.inner.description()
    }

    fn examples(&self) -> Vec<serde_json::Value> {
        self.inner.examples()
    }

    async fn execute(&self, input: UpdateMemoryInput, ctx: &ToolContext) -> Result<UpdateMemoryOutput, ToolError> {
        self.log.lock().push(format!("updating memory: {}", input.label));
        let result = self.inner.execute(input, ctx).await;
        self.log.lock().push(format!("memory update result: {result:?}"));
        result
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // An ephemeral runtime: SQLite in memory. A real binary uses AgentRuntime::open_dir(data_dir, config).
    let runtime = AgentRuntime::ephemeral(MemoryConfig::default()).await?;
    let handle = runtime.agent("assistant").await?;
    let log = Arc::new(Mutex::new(Vec::new()));

    let logging = LoggingMemoryTool { inner: UpdateMemoryTool::new(handle.clone()), log: Arc::clone(&log) };
    let registry = BuiltinTools::builder().with_memory_tool(logging).build_for_agent(handle.clone()).into_registry()?;
    println!("registered tools: {}", registry.names().join(", "));

    let ctx = CoreServices::new(CoreConfig::default())?.new_session("example");
    let first = registry
        .call("update_memory", json!({"label": "human", "value": "The user's name is unknown", "description": "Information about the user"}), &ctx)
        .await?;
    let second = registry
        .call(
            "update_memory",
            json!({"label": "human", "value": "The user's name is Alice", "description": null}),
            &ctx,
        )
        .await?;
    println!("first call:  {first}");
    println!("second call: {second}");
    for line in log.lock().iter() {
        println!("log: {line}");
    }
    println!("\n{}", handle.memory.render().await?);

    let logged = log.lock().len();
    if logged != 4 || second["previous_value"] != "The user's name is unknown" {
        return Err(format!("the logging tool did not run as expected ({logged} log lines)").into());
    }
    Ok(())
}

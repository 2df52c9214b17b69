//! Replacing a built-in through the builder: `update_memory` by a logging wrapper, over a custom memory backend.
//!
//! Run with `cargo run -p holdfast --example replace_memory_tool` (it needs no feature beyond holdfast-memory).
//!
//! Two extension points, each the way an embedder would use it:
//! - the **backend**: [`AuditedStore`] implements [`MemoryStore`] (here by delegating to the in-memory store and
//!   keeping an audit trail of every committed edit) and is given to [`AgentRuntime::builder`];
//! - the **tool**: `BuiltinTools::builder().with_memory_tool(...)` registers a replacement under the built-in's name,
//!   so the model sees one `update_memory`, and the replacement wraps the default.
//!
//! It calls `update_memory` through the registry by name and exits non-zero unless both the wrapper and the backend
//! saw the writes.

use holdfast::core::tool::BoxFuture;
use holdfast::memory::error::Result as MemoryResult;
use holdfast::memory::{
    BlockEdit, Database, InMemoryStore, MemoryStore, UpdateMemoryInput, UpdateMemoryOutput, UpdateMemoryTool,
};
use holdfast::memory::{EditFn, MemoryBlock, Modified, TextHit};
use holdfast::prelude::*;
use serde_json::json;
use std::sync::{Arc, Mutex};

/// A memory backend: the in-memory store, plus an audit trail of every edit it committed.
#[derive(Default)]
struct AuditedStore {
    inner: InMemoryStore,
    audit: Mutex<Vec<String>>,
}

impl MemoryStore for AuditedStore {
    fn get<'a>(&'a self, agent: &'a str, label: &'a str) -> BoxFuture<'a, MemoryResult<Option<MemoryBlock>>> {
        self.inner.get(agent, label)
    }

    fn list<'a>(&'a self, agent: &'a str) -> BoxFuture<'a, MemoryResult<Vec<MemoryBlock>>> {
        self.inner.list(agent)
    }

    fn modify<'a>(&'a self, agent: &'a str, label: &'a str, edit: EditFn) -> BoxFuture<'a, MemoryResult<Modified>> {
        Box::pin(async move {
            let modified = self.inner.modify(agent, label, edit).await?;
            if let Ok(mut audit) = self.audit.lock() {
                audit.push(format!("{agent}/{label}: {modified:?}"));
            }
            Ok(modified)
        })
    }

    fn delete<'a>(&'a self, agent: &'a str, label: &'a str) -> BoxFuture<'a, MemoryResult<bool>> {
        self.inner.delete(agent, label)
    }

    fn history<'a>(
        &'a self,
        agent: &'a str,
        label: &'a str,
        limit: usize,
    ) -> BoxFuture<'a, MemoryResult<Vec<BlockEdit>>> {
        self.inner.history(agent, label, limit)
    }

    fn search<'a>(
        &'a self,
        agent: &'a str,
        terms: &'a [String],
        limit: usize,
    ) -> BoxFuture<'a, MemoryResult<Vec<TextHit>>> {
        self.inner.search(agent, terms, limit)
    }

    fn kind(&self) -> &'static str {
        "audited"
    }
}

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
        if let Ok(mut log) = self.log.lock() {
            log.push(format!("updating memory: {}", input.label));
        }
        let result = self.inner.execute(input, ctx).await;
        if let Ok(mut log) = self.log.lock() {
            log.push(format!("memory update result: {result:?}"));
        }
        result
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Memory blocks in the custom backend; messages, reminders and tasks in an in-memory SQLite database (a real
    // program uses Database::open(path)).
    let store = Arc::new(AuditedStore::default());
    let backend: Arc<dyn MemoryStore> = Arc::clone(&store) as _;
    let runtime = AgentRuntime::builder(Database::open_in_memory()?).memory_store(backend).build().await?;
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
    let logged = log.lock().map(|log| log.clone()).unwrap_or_default();
    let audited = store.audit.lock().map(|audit| audit.clone()).unwrap_or_default();
    for line in &logged {
        println!("tool log: {line}");
    }
    for line in &audited {
        println!("backend audit: {line}");
    }
    println!("\n{}", handle.memory.render().await?);

    if logged.len() != 4 || second["previous_value"] != "The user's name is unknown" {
        return Err(format!("the logging tool did not run as expected ({} log lines)", logged.len()).into());
    }
    if !audited.iter().any(|line| line.contains("assistant/human")) {
        return Err(format!("the custom backend did not receive the writes: {audited:?}").into());
    }
    Ok(())
}

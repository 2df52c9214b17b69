//! Every built-in tool's parameters through the real registry: the core tools and the memory built-ins are called
//! with arbitrary JSON by `ToolRegistry::call` (and run when the params are valid, on an in-memory database), the
//! web3 tools' inputs are parsed by the same `parse_params` step the registry runs. Never panics (libFuzzer aborts
//! on any panic, even one the registry catches), and every error carries a stable code other than `internal`.
//!
//! Built without the `web3` feature, only the core tools are fuzzed.
//!
//! Input: the tool's name on the first line, the params after it (JSON; other text is sent as a JSON string).
#![no_main]

use holdfast_core::config::CoreConfig;
use holdfast_core::{CoreServices, ErrorCode};
use holdfast_fuzz::check_tool_error;
use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use std::sync::LazyLock;

static RUNTIME: LazyLock<tokio::runtime::Runtime> =
    LazyLock::new(|| tokio::runtime::Builder::new_current_thread().enable_time().build().expect("a tokio runtime"));
static SERVICES: LazyLock<CoreServices> =
    LazyLock::new(|| CoreServices::new(CoreConfig::default()).expect("the core services"));

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let (name, rest) = text.split_once('\n').unwrap_or((&text, ""));
    let params = serde_json::from_str::<Value>(rest).unwrap_or_else(|_| Value::String(rest.to_owned()));

    #[cfg(feature = "web3")]
    if web3::parse(name, &params) {
        return;
    }

    RUNTIME.block_on(async {
        let registry = registry().await;
        let ctx = SERVICES.new_session("fuzz");
        let known = registry.get(name).is_some();
        match registry.call(name, params.clone(), &ctx).await {
            Ok(output) => assert!(known && params.is_object(), "{name}: {params} gave {output}"),
            Err(e) => {
                check_tool_error(name, &e);
                assert_eq!(e.code == ErrorCode::UnknownTool, !known, "{name}: {e:?}");
                if !params.is_object() && known {
                    assert_eq!(e.code, ErrorCode::InvalidParams, "{name}: {e:?}");
                }
            }
        }
    });
});

/// The core tools alone (built without the web3 feature).
#[cfg(not(feature = "web3"))]
async fn registry() -> holdfast_core::ToolRegistry {
    use holdfast_core::ToolRegistry;
    static REGISTRY: LazyLock<ToolRegistry> = LazyLock::new(|| {
        let registry = ToolRegistry::new();
        holdfast_core::builtin::register_core_tools(&registry).expect("the core tools");
        registry
    });
    REGISTRY.clone()
}

#[cfg(feature = "web3")]
use web3::registry;

#[cfg(feature = "web3")]
mod web3 {
    use chrono::TimeZone as _;
    use holdfast_core::tool::parse_params;
    use holdfast_core::{ErrorCode, ToolError, ToolRegistry};
    use holdfast_fuzz::check_tool_error;
    use holdfast_memory::{AgentRuntime, BuiltinTools, Database, ManualClock, MemoryConfig};
    use holdfast_web3::tools::{ApproveInput, FetchInput, TransferInput, WalletInput, Web3TxInput};
    use serde_json::Value;
    use std::sync::{Arc, Mutex};

    /// The web3 tools move value and reach the network: their parse step only. True when `name` is one of them.
    pub fn parse(name: &str, params: &Value) -> bool {
        let parsed: Result<(), ToolError> = match name {
            "local_burner_wallet" => parse_params::<WalletInput>(params.clone()).map(drop),
            "token_approve" => parse_params::<ApproveInput>(params.clone()).map(drop),
            "transfer" => parse_params::<TransferInput>(params.clone()).map(drop),
            "web3_tx" => parse_params::<Web3TxInput>(params.clone()).map(drop),
            "x402_fetch" => parse_params::<FetchInput>(params.clone()).map(drop),
            _ => return false,
        };
        if let Err(e) = parsed {
            check_tool_error(name, &e);
            assert!(matches!(e.code, ErrorCode::InvalidParams | ErrorCode::PresetConflict), "{name}: {e:?}");
        }
        true
    }

    /// Inputs run on one in-memory database before it is replaced by a fresh one (building one takes ~25 ms).
    const INPUTS_PER_DATABASE: u32 = 256;

    static REGISTRY: Mutex<Option<(ToolRegistry, u32)>> = Mutex::new(None);

    /// The registry of the core tools and the memory built-ins, on an in-memory database with a fixed clock that is
    /// replaced every [`INPUTS_PER_DATABASE`] inputs, so that what earlier inputs stored stays small. Every input runs
    /// in a fresh session (registers, context bank).
    pub async fn registry() -> ToolRegistry {
        if let Some((registry, used)) = REGISTRY.lock().expect("the lock").as_mut()
            && *used < INPUTS_PER_DATABASE
        {
            *used += 1;
            return registry.clone();
        }
        let clock = ManualClock::new(chrono::Utc.with_ymd_and_hms(2026, 3, 1, 9, 0, 0).single().expect("a time"));
        let memory = AgentRuntime::builder(Database::open_in_memory().expect("an in-memory database"))
            .config(MemoryConfig::default())
            .clock(Arc::new(clock))
            .build()
            .await
            .expect("the memory runtime");
        let agent = memory.agent("assistant").await.expect("the agent");
        let registry = BuiltinTools::default_for_agent(agent).into_registry().expect("the registry");
        *REGISTRY.lock().expect("the lock") = Some((registry.clone(), 1));
        registry
    }
}

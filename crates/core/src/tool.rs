//! Typed tools ([`AiTool`]), their object-safe dynamic form ([`DynTool`]) and the adapter between them.
//!
//! A tool declares typed input and output; the adapter derives strict schemas once, deserialises JSON params with
//! the failing field's path in the error, and serialises the output. Every call goes through the
//! [`crate::ToolRegistry`].

use crate::context::ToolContext;
use crate::error::{ErrorCode, ToolError, split_coded_message};
use crate::schema::strict_schema_for;
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::future::Future;
use std::pin::Pin;

/// A boxed, sendable future.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What a tool does to the world, for policy and documentation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ToolKind {
    /// Reads or computes; moves nothing.
    Plain,
    /// Signs, pays or approves. Such a tool takes register and preset names only (invariant 1).
    ValueMoving,
}

/// A tool with typed input and output.
///
/// The registry derives a strict schema from `Input` and `Output` once, refuses params that do not deserialize
/// (`invalid_params`, naming the field) before the tool runs, and serializes the output. A tool that takes a value
/// the model must not type takes a register *name* and reads the register.
///
/// ```
/// use holdfast_core::config::CoreConfig;
/// use holdfast_core::{AiTool, CoreServices, ErrorCode, ToolContext, ToolError, ToolRegistry};
/// use schemars::JsonSchema;
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Deserialize, JsonSchema)]
/// #[serde(deny_unknown_fields)]
/// struct LengthInput {
///     /// The register whose text to measure.
///     register: String,
/// }
///
/// #[derive(Serialize, JsonSchema)]
/// struct LengthOutput {
///     chars: usize,
/// }
///
/// struct RegisterLength;
///
/// impl AiTool for RegisterLength {
///     type Input = LengthInput;
///     type Output = LengthOutput;
///     fn name(&self) -> &str {
///         "register_length"
///     }
///     fn description(&self) -> &str {
///         "Count the characters of a register's text."
///     }
///     async fn execute(&self, input: LengthInput, ctx: &ToolContext) -> Result<LengthOutput, ToolError> {
///         let entry = ctx.registers.require(&input.register)?;
///         Ok(LengthOutput { chars: entry.value.as_str().map_or(0, |s| s.chars().count()) })
///     }
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let registry = ToolRegistry::new();
/// holdfast_core::builtin::register_core_tools(&registry)?;
/// registry.register(RegisterLength)?;
/// let ctx = CoreServices::new(CoreConfig::default())?.new_session("doc");
/// registry.call("register_set", serde_json::json!({"key": "note", "value": "héllo"}), &ctx).await?;
/// let out = registry.call("register_length", serde_json::json!({"register": "note"}), &ctx).await?;
/// assert_eq!(out["chars"], 5);
/// // A register that does not exist is a coded error, not a guess.
/// let err = registry.call("register_length", serde_json::json!({"register": "nope"}), &ctx).await.unwrap_err();
/// assert_eq!(err.code, ErrorCode::RegisterMissing);
/// # Ok(())
/// # }
/// ```
pub trait AiTool: Send + Sync + 'static {
    /// The parameters, as the model sends them. Use `#[serde(deny_unknown_fields)]`.
    type Input: DeserializeOwned + JsonSchema + Send;
    /// The result.
    type Output: Serialize + JsonSchema + Send;

    /// The tool's name: 1–64 of `[A-Za-z0-9_-]`.
    fn name(&self) -> &str;

    /// What the tool does, for the model.
    fn description(&self) -> &str;

    /// Whether the tool moves value.
    fn kind(&self) -> ToolKind {
        ToolKind::Plain
    }

    /// Example inputs (validated against the schema by the test suite).
    fn examples(&self) -> Vec<Value> {
        Vec::new()
    }

    /// Runs the tool.
    fn execute(
        &self,
        input: Self::Input,
        ctx: &ToolContext,
    ) -> impl Future<Output = Result<Self::Output, ToolError>> + Send;
}

/// The object-safe form of a tool: JSON in, JSON out.
pub trait DynTool: Send + Sync {
    /// The tool's name.
    fn name(&self) -> &str;
    /// The description.
    fn description(&self) -> &str;
    /// The strict input schema.
    fn input_schema(&self) -> &Value;
    /// The strict output schema.
    fn output_schema(&self) -> &Value;
    /// Whether the tool moves value.
    fn kind(&self) -> ToolKind;
    /// Example inputs.
    fn examples(&self) -> Vec<Value>;
    /// Runs the tool on JSON params.
    fn call<'a>(&'a self, params: Value, ctx: &'a ToolContext) -> BoxFuture<'a, Result<Value, ToolError>>;
}

/// Wraps an [`AiTool`] as a [`DynTool`], computing its schemas once.
pub struct DynamicToolAdapter<T: AiTool> {
    tool: T,
    input_schema: Value,
    output_schema: Value,
}

impl<T: AiTool> DynamicToolAdapter<T> {
    /// Wraps `tool`.
    pub fn new(tool: T) -> Self {
        Self { tool, input_schema: strict_schema_for::<T::Input>(), output_schema: strict_schema_for::<T::Output>() }
    }

    /// The wrapped tool.
    pub fn inner(&self) -> &T {
        &self.tool
    }
}

/// Deserialises tool params (`null` is read as `{}`), turning serde's message into `invalid_params` (or the code a type chose) with the
/// path of the failing field.
pub fn parse_params<I: DeserializeOwned>(params: Value) -> Result<I, ToolError> {
    // No params at all (`null`, as JSON clients send for a tool without parameters) are no fields: `{}`. A tool
    // with required fields then names the first one missing.
    let params = if params.is_null() { Value::Object(serde_json::Map::new()) } else { params };
    if !params.is_object() {
        return Err(ToolError::new(
            ErrorCode::InvalidParams,
            format!("params must be a JSON object, got {}", crate::text::json_kind(&params)),
        ));
    }
    serde_path_to_error::deserialize::<_, I>(params).map_err(|e| {
        let path = e.path().to_string();
        let (code, message) = split_coded_message(&e.inner().to_string());
        let message = if path == "." { message } else { format!("`{path}`: {message}") };
        ToolError::new(code.unwrap_or(ErrorCode::InvalidParams), message)
    })
}

impl<T: AiTool> DynTool for DynamicToolAdapter<T> {
    fn name(&self) -> &str {
        self.tool.name()
    }

    fn description(&self) -> &str {
        self.tool.description()
    }

    fn input_schema(&self) -> &Value {
        &self.input_schema
    }

    fn output_schema(&self) -> &Value {
        &self.output_schema
    }

    fn kind(&self) -> ToolKind {
        self.tool.kind()
    }

    fn examples(&self) -> Vec<Value> {
        self.tool.examples()
    }

    fn call<'a>(&'a self, params: Value, ctx: &'a ToolContext) -> BoxFuture<'a, Result<Value, ToolError>> {
        Box::pin(async move {
            let input = parse_params::<T::Input>(params)?;
            let output = self.tool.execute(input, ctx).await?;
            serde_json::to_value(output).map_err(|e| ToolError::internal(format!("cannot serialise the result: {e}")))
        })
    }
}

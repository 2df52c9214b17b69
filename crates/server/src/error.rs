//! JSON errors with the same stable codes as tools: `{"error": {"code", "message", "details?"}}`.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use holdfast_core::{ErrorCode, ToolError};

/// An API error: a coded error from a tool, the registry or storage. Refusals at the edge (host, origin, token,
/// content type) are [`holdfast_agent::access::Refusal`]s, with the same JSON shape.
#[derive(Debug)]
pub enum ApiError {
    /// A coded error (from a tool, the registry or storage).
    Tool(ToolError),
}

impl From<ToolError> for ApiError {
    fn from(e: ToolError) -> Self {
        Self::Tool(e)
    }
}

/// The HTTP status for a code: the caller's mistake → 4xx, a peer's → 502, ours → 500.
pub fn status_for(code: ErrorCode) -> StatusCode {
    match code {
        ErrorCode::UnknownTool | ErrorCode::NotFound | ErrorCode::ConfirmationNotFound | ErrorCode::MemoryNotFound => {
            StatusCode::NOT_FOUND
        }
        ErrorCode::UpstreamError => StatusCode::BAD_GATEWAY,
        ErrorCode::Internal | ErrorCode::ConfigInvalid => StatusCode::INTERNAL_SERVER_ERROR,
        ErrorCode::RateLimited => StatusCode::TOO_MANY_REQUESTS,
        ErrorCode::ConfirmationRequired => StatusCode::ACCEPTED,
        ErrorCode::SessionConflict => StatusCode::CONFLICT,
        _ => StatusCode::UNPROCESSABLE_ENTITY,
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        match self {
            Self::Tool(e) => (status_for(e.code), Json(serde_json::json!({ "error": e }))).into_response(),
        }
    }
}

//! JSON errors with the same stable codes as tools: `{"error": {"code", "message", "details?"}}`.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use holdfast_core::{ErrorCode, ToolError};

/// An API error: a tool error, an authentication failure, or a missing resource.
#[derive(Debug)]
pub enum ApiError {
    /// A coded error (from a tool, the registry or storage).
    Tool(ToolError),
    /// No or a wrong access token.
    Unauthorized,
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
        _ => StatusCode::UNPROCESSABLE_ENTITY,
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        match self {
            Self::Tool(e) => (status_for(e.code), Json(serde_json::json!({ "error": e }))).into_response(),
            Self::Unauthorized => (
                StatusCode::UNAUTHORIZED,
                Json(serde_json::json!({"error": {"code": "unauthorized", "message": "a valid access token is required (Authorization: Bearer …)"}})),
            )
                .into_response(),
        }
    }
}

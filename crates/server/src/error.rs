//! JSON errors with the same stable codes as tools: `{"error": {"code", "message", "details?"}}`.

use axum::Json;
use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use holdfast_core::{ErrorCode, ToolError};

/// An API error: a coded error from a tool, the registry or storage. Refusals at the edge (host, origin, token,
/// content type) are [`holdfast_agent::access::Refusal`]s, with the same JSON shape.
#[derive(Debug)]
pub enum ApiError {
    /// A coded error (from a tool, the registry or storage).
    Tool(ToolError),
    /// A request axum could not read: a body that is not JSON (400) or not the expected shape (422), a query
    /// string that does not parse (400). Answered as `invalid_params` with axum's reason, in the same JSON shape.
    Unreadable {
        /// axum's status for the rejection.
        status: StatusCode,
        /// axum's reason.
        message: String,
    },
}

impl From<JsonRejection> for ApiError {
    fn from(r: JsonRejection) -> Self {
        Self::Unreadable { status: r.status(), message: r.body_text() }
    }
}

impl From<QueryRejection> for ApiError {
    fn from(r: QueryRejection) -> Self {
        Self::Unreadable { status: r.status(), message: r.body_text() }
    }
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
        ErrorCode::SessionConflict | ErrorCode::Cancelled => StatusCode::CONFLICT,
        _ => StatusCode::UNPROCESSABLE_ENTITY,
    }
}

/// The body of every error answer (`{"error": {...}}`), the edge's refusals included.
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
pub struct ErrorBody {
    /// What went wrong.
    pub error: ErrorDetail,
}

/// A coded error.
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
pub struct ErrorDetail {
    /// The stable code (`not_found`, `invalid_params`, `policy_denied`…; `docs/interfaces.md` lists them).
    pub code: String,
    /// A message naming the offending field or value.
    pub message: String,
    /// Structured extra information, when the code has any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<serde_json::Value>,
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, error) = match self {
            Self::Tool(e) => (
                status_for(e.code),
                ErrorDetail { code: e.code.as_str().to_owned(), message: e.message, details: e.details },
            ),
            Self::Unreadable { status, message } => {
                (status, ErrorDetail { code: ErrorCode::InvalidParams.as_str().to_owned(), message, details: None })
            }
        };
        (status, Json(ErrorBody { error })).into_response()
    }
}

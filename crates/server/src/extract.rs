//! Request extractors of the REST API.

use crate::error::ApiError;
use axum::Json;
use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use serde::de::DeserializeOwned;

/// A query string's parameters, or why they did not parse: the handler turns the rejection into the API's error
/// shape (`400 invalid_params`) with `?`.
pub(crate) type QueryOf<T> = Result<axum::extract::Query<T>, axum::extract::rejection::QueryRejection>;

/// An optional JSON body: no body (or only whitespace) is `None`, whatever the `Content-Type` says — a client that
/// sends `Content-Type: application/json` with nothing after it means "no options", as `{}` does. A body that is
/// not JSON is `400`, JSON of the wrong shape `422` (`invalid_params` either way). The edge has already refused
/// bodies that are not JSON ([`holdfast_agent::access::Guard::with_json_api`]).
#[derive(Debug)]
pub(crate) struct OptionalJson<T>(pub(crate) Option<T>);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for OptionalJson<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, Self::Rejection> {
        let bytes = Bytes::from_request(request, state)
            .await
            .map_err(|r| ApiError::Unreadable { status: r.status(), message: r.body_text() })?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(Self(None));
        }
        let Json(value) = Json::<T>::from_bytes(&bytes)?;
        Ok(Self(Some(value)))
    }
}

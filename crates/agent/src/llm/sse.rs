//! Server-sent events from a streamed HTTP body, parsed by the `sse-stream` crate (the one rmcp uses): yields each
//! event's `event:` name and its `data:` lines joined with newlines. Bounded: a model's whole streamed answer may be
//! at most [`MAX_STREAM`] bytes, so a provider that never ends a line or an event cannot grow our memory without end.
//!
//! Some OpenAI-compatible servers ignore `stream: true` and answer with one JSON document
//! (`Content-Type: application/json`): that body (bounded the same way) comes as a single event marked
//! [`SseEvent::whole`], which each provider reads as its non-streamed response shape.

use futures::StreamExt as _;
use http_body_util::{BodyExt as _, LengthLimitError, Limited};
use sse_stream::SseStream;

/// Why the body stopped short.
#[derive(Debug, thiserror::Error)]
enum BodyError {
    #[error("the streamed answer is larger than {} MiB", MAX_STREAM >> 20)]
    TooLarge,
    #[error("the stream broke: {0}")]
    Broken(String),
}

/// One event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SseEvent {
    /// The `event:` field, if any.
    pub event: Option<String>,
    /// The `data:` lines joined with newlines.
    pub data: String,
    /// The answer was not streamed: `data` is the whole JSON response.
    pub whole: bool,
}

/// Why a bounded body stopped.
fn body_error(e: Box<dyn std::error::Error + Send + Sync>) -> BodyError {
    if e.is::<LengthLimitError>() { BodyError::TooLarge } else { BodyError::Broken(e.to_string()) }
}

/// The most one streamed answer may carry.
pub(crate) const MAX_STREAM: usize = 16 << 20;

/// Reads events from `response`, calling `on_event` for each until it returns `false` or the body ends. Comments
/// and events with neither a name nor data are skipped.
pub(crate) async fn read_events(
    response: reqwest::Response,
    mut on_event: impl FnMut(SseEvent) -> Result<bool, String>,
) -> Result<(), String> {
    let is_json = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().to_ascii_lowercase().starts_with("application/json"));
    let body = Limited::new(http::Response::<reqwest::Body>::from(response).into_body(), MAX_STREAM);
    if is_json {
        let bytes = body.collect().await.map_err(|e| body_error(e).to_string())?.to_bytes();
        let data = String::from_utf8(bytes.to_vec()).map_err(|_| "the answer is not UTF-8".to_owned())?;
        on_event(SseEvent { event: None, data, whole: true })?;
        return Ok(());
    }
    let body = body.map_err(body_error);
    let mut events = std::pin::pin!(SseStream::new(body));
    while let Some(item) = events.next().await {
        let sse = item.map_err(|e| match e {
            sse_stream::Error::Body(inner) => inner.to_string(),
            other => format!("the stream is not valid server-sent events: {other}"),
        })?;
        if sse.event.is_none() && sse.data.is_none() {
            continue;
        }
        if !on_event(SseEvent { event: sse.event, data: sse.data.unwrap_or_default(), whole: false })? {
            return Ok(());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn events(body: impl Into<reqwest::Body>) -> Result<Vec<SseEvent>, String> {
        let response = reqwest::Response::from(http::Response::new(body.into()));
        let mut out = Vec::new();
        read_events(response, |e| {
            out.push(e);
            Ok(true)
        })
        .await?;
        Ok(out)
    }

    #[tokio::test]
    async fn events_names_data_lines_comments_and_separators() {
        let got = events("event: message_start\ndata: {\"a\":1}\n\n: a comment\n\ndata: x\r\ndata: y\r\n\r\n").await;
        let got = got.unwrap();
        assert_eq!(got.len(), 2, "{got:?}");
        assert_eq!((got[0].event.as_deref(), got[0].data.as_str()), (Some("message_start"), "{\"a\":1}"));
        assert_eq!((got[1].event.as_deref(), got[1].data.as_str()), (None, "x\ny"));
    }

    #[tokio::test]
    async fn a_json_answer_is_one_whole_event() {
        let mut response = http::Response::new(reqwest::Body::from(r#"{"choices": []}"#));
        response.headers_mut().insert("content-type", "application/json; charset=utf-8".parse().unwrap());
        let mut out = Vec::new();
        read_events(reqwest::Response::from(response), |e| {
            out.push(e);
            Ok(true)
        })
        .await
        .unwrap();
        assert_eq!(out, [SseEvent { event: None, data: r#"{"choices": []}"#.into(), whole: true }]);
    }

    #[tokio::test]
    async fn a_stream_past_the_bound_is_an_error_not_unbounded_memory() {
        let endless_line = vec![b'a'; MAX_STREAM + 1];
        let err = events(endless_line).await.unwrap_err();
        assert!(err.contains("larger than 16 MiB"), "{err}");
    }
}

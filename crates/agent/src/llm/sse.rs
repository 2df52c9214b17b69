//! A minimal server-sent-events reader over a streamed HTTP body: yields each event's `event:` name and joined
//! `data:` lines. Bounded: a single event larger than 1 MiB is a protocol error.

/// One event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SseEvent {
    /// The `event:` field, if any.
    pub event: Option<String>,
    /// The `data:` lines joined with newlines.
    pub data: String,
}

const MAX_EVENT: usize = 1 << 20;

/// Reads events from `response`, calling `on_event` for each until it returns `false` or the body ends.
pub(crate) async fn read_events(
    mut response: reqwest::Response,
    mut on_event: impl FnMut(SseEvent) -> Result<bool, String>,
) -> Result<(), String> {
    let mut buf: Vec<u8> = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| format!("the stream broke: {e}"))? {
        buf.extend_from_slice(&chunk);
        while let Some(end) = find_event_end(&buf) {
            let raw: Vec<u8> = buf.drain(..end.0).collect();
            buf.drain(..end.1);
            if let Some(event) = parse_event(&String::from_utf8_lossy(&raw))
                && !on_event(event)?
            {
                return Ok(());
            }
        }
        if buf.len() > MAX_EVENT {
            return Err("a streamed event is larger than 1 MiB".into());
        }
    }
    if !buf.is_empty()
        && let Some(event) = parse_event(&String::from_utf8_lossy(&buf))
    {
        on_event(event)?;
    }
    Ok(())
}

/// Position of the blank line ending the first event: (event length, separator length).
fn find_event_end(buf: &[u8]) -> Option<(usize, usize)> {
    for i in 0..buf.len() {
        if buf[i..].starts_with(b"\r\n\r\n") {
            return Some((i, 4));
        }
        if buf[i..].starts_with(b"\n\n") {
            return Some((i, 2));
        }
    }
    None
}

fn parse_event(raw: &str) -> Option<SseEvent> {
    let mut event = None;
    let mut data: Vec<&str> = Vec::new();
    for line in raw.lines() {
        if let Some(v) = line.strip_prefix("event:") {
            event = Some(v.trim().to_owned());
        } else if let Some(v) = line.strip_prefix("data:") {
            data.push(v.strip_prefix(' ').unwrap_or(v));
        }
    }
    (event.is_some() || !data.is_empty()).then(|| SseEvent { event, data: data.join("\n") })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_events_and_separators() {
        assert_eq!(find_event_end(b"data: a\n\ndata: b"), Some((7, 2)));
        assert_eq!(find_event_end(b"data: a\r\n\r\n"), Some((7, 4)));
        assert_eq!(find_event_end(b"data: a\n"), None);
        let e = parse_event("event: message_start\ndata: {\"a\":1}").unwrap();
        assert_eq!((e.event.as_deref(), e.data.as_str()), (Some("message_start"), "{\"a\":1}"));
        assert_eq!(parse_event(": comment"), None);
    }
}

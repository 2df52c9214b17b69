//! Replay transcripts (`holdfast_core::transcript`, what `holdfast replay` runs): never panics; a transcript error
//! names a line that exists and is not blank; a line that is not JSON is always an error, and a `tool` line is
//! accepted with any JSON value as `params`.
#![no_main]

use holdfast_core::transcript::{MAX_SLEEP_MS, TranscriptLine, parse_line, parse_transcript};
use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let lines: Vec<&str> = text.lines().collect();
    match parse_transcript(&text) {
        Ok(parsed) => {
            assert_eq!(parsed.len(), lines.iter().filter(|l| !l.trim().is_empty()).count());
            for line in &parsed {
                if let TranscriptLine::Sleep { sleep_ms } = line {
                    assert!(*sleep_ms <= MAX_SLEEP_MS);
                }
            }
        }
        Err(e) => {
            assert!(e.line >= 1 && e.line <= lines.len(), "line {} of {}", e.line, lines.len());
            assert!(!lines[e.line - 1].trim().is_empty(), "a blank line is no error");
            assert!(e.to_string().starts_with(&format!("line {}: ", e.line)), "{e}");
            // Every line before it parses.
            for (i, raw) in lines[..e.line - 1].iter().enumerate() {
                assert!(parse_line(i + 1, raw).is_ok(), "line {} parsed alone but not in the transcript", i + 1);
            }
        }
    }
    for (i, raw) in lines.iter().enumerate() {
        let json = serde_json::from_str::<Value>(raw);
        match parse_line(i + 1, raw) {
            Ok(Some(_)) => assert!(json.is_ok(), "a line that is not JSON was accepted: {raw:?}"),
            Ok(None) => assert!(raw.trim().is_empty()),
            Err(e) => {
                assert_eq!(e.line, i + 1);
                assert_eq!(e.source.is_some(), json.is_err(), "{e}");
            }
        }
        // The same JSON value as the params of a tool call is always a valid line.
        if let Ok(params) = json {
            let call = json!({"tool": "register_get", "params": params.clone()}).to_string();
            match parse_line(1, &call) {
                Ok(Some(TranscriptLine::Tool { tool, params: got })) => {
                    assert_eq!(tool, "register_get");
                    assert_eq!(got, params);
                }
                other => panic!("a tool call with params {params} was refused: {other:?}"),
            }
        }
    }
});

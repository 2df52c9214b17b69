//! Register dot paths: `RegisterPath::parse` and `lookup_path` never panic, a parsed path splits back into what was
//! written, and a lookup follows exactly the keys and indices it names.
//!
//! Input: the path on the first line; the rest, when it is JSON, is the value looked into (else a fixed one).
#![no_main]

use holdfast_core::ErrorCode;
use holdfast_core::registers::{RegisterPath, lookup_path, validate_key};
use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let (path, rest) = text.split_once('\n').unwrap_or((&text, ""));
    let value = serde_json::from_str::<Value>(rest).unwrap_or_else(
        |_| json!({"transaction": {"to": "0xabc", "data": "0x"}, "fills": [{"source": "Venue"}, [1, [2]]], "": 0}),
    );
    match RegisterPath::parse("path", path) {
        Ok(p) => {
            let mut joined = p.key.to_owned();
            for s in &p.segments {
                assert!(!s.is_empty(), "{path:?}: empty segment");
                joined.push('.');
                joined.push_str(s);
            }
            assert_eq!(joined, path);
            assert!(validate_key("key", p.key).is_ok(), "{path:?}: the key breaks the key rules");
            check_lookup(&value, &p.segments);
        }
        Err(e) => {
            assert!(matches!(e.code, ErrorCode::InvalidParams | ErrorCode::InvalidRegisterKey), "{path:?}: {e:?}");
            assert!(e.message.contains("`path`"), "{path:?}: the error names the field: {}", e.message);
        }
    }
    // Any segments at all, parsed or not.
    let segments: Vec<&str> = path.split('.').collect();
    check_lookup(&value, &segments);
});

/// `lookup_path` agrees with a step-by-step walk.
fn check_lookup(value: &Value, segments: &[&str]) {
    let mut current = Some(value);
    let mut failed = None;
    for (i, seg) in segments.iter().enumerate() {
        current = current.and_then(|v| match v {
            Value::Object(m) => m.get(*seg),
            Value::Array(a) => seg.parse::<usize>().ok().and_then(|n| a.get(n)),
            _ => None,
        });
        if current.is_none() {
            failed = Some(i);
            break;
        }
    }
    match (lookup_path(value, segments), failed, current) {
        (Ok(found), None, Some(expected)) => assert!(std::ptr::eq(found, expected)),
        (Err(i), Some(j), _) => assert_eq!(i, j),
        (got, _, _) => panic!("{segments:?}: lookup_path gave {got:?}, the walk failed at {failed:?}"),
    }
}

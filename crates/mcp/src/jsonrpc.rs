//! The gate every incoming message passes before the MCP service sees it, on both transports: a size cap, JSON
//! syntax, and the JSON-RPC 2.0 message shape. What fails is answered with a JSON-RPC protocol error and the server
//! keeps serving.
//!
//! | input | answer |
//! |---|---|
//! | larger than the cap | `-32600` Invalid Request, with the request's `id` when it can be read from the start |
//! | not JSON | `-32700` Parse error, `id: null` |
//! | a batch (array), a non-object, a bad `jsonrpc` or `id` | `-32600` Invalid Request |
//! | a known method with params of the wrong shape | `-32602` Invalid params, with the request's `id` |
//! | an unknown method | passed on: the service answers `-32601` Method not found |
//! | a malformed notification or response | dropped (JSON-RPC never answers those) |

use rmcp::model::{ClientJsonRpcMessage, ClientRequest};
use serde_json::{Value, json};

/// JSON-RPC: the input is not JSON.
pub const PARSE_ERROR: i32 = -32700;
/// JSON-RPC: the JSON is not a valid request object.
pub const INVALID_REQUEST: i32 = -32600;
/// JSON-RPC: the method exists but its params do not fit.
pub const INVALID_PARAMS: i32 = -32602;

/// The client-to-server request methods of MCP (up to 2025-11-25, plus later ones the SDK knows).
pub const STANDARD_METHODS: &[&str] = &[
    "initialize",
    "ping",
    "completion/complete",
    "logging/setLevel",
    "prompts/get",
    "prompts/list",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "tools/call",
    "tools/list",
    "tasks/get",
    "tasks/list",
    "tasks/result",
    "tasks/cancel",
];

/// How many leading bytes of an oversized message are kept to find its `id`.
pub const ID_SNIFF_BYTES: usize = 4096;

/// What to do with one incoming message.
#[derive(Debug)]
pub enum Inbound {
    /// A well-formed message for the service.
    Message(Box<ClientJsonRpcMessage>),
    /// Drop it silently: a malformed notification or response, which JSON-RPC never answers.
    Ignore(String),
    /// Answer with this protocol error.
    Reject(ProtocolError),
}

/// A JSON-RPC error response the gate sends itself.
#[derive(Debug, Clone, PartialEq)]
pub struct ProtocolError {
    /// The request's id, or `null` when it could not be read.
    pub id: Value,
    /// The JSON-RPC error code.
    pub code: i32,
    /// What was wrong.
    pub message: String,
}

impl ProtocolError {
    fn new(id: Value, code: i32, message: impl Into<String>) -> Self {
        Self { id, code, message: message.into() }
    }

    /// The error response, `{"jsonrpc":"2.0","id":…,"error":{"code":…,"message":…}}`.
    pub fn to_json(&self) -> Value {
        json!({"jsonrpc": "2.0", "id": self.id, "error": {"code": self.code, "message": self.message}})
    }

    /// The response for a message of `size` bytes (or more) over the cap of `max`; `prefix` is its start.
    pub fn oversized(prefix: &[u8], size: usize, max: usize) -> Self {
        Self::new(
            sniff_id(prefix),
            INVALID_REQUEST,
            format!("Invalid Request: the message ({size} bytes or more) exceeds the limit of {max} bytes"),
        )
    }
}

/// Classifies one complete message (a stdio line or an HTTP body).
pub fn classify(raw: &[u8], max: usize) -> Inbound {
    let raw = raw.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(raw);
    if raw.len() > max {
        return Inbound::Reject(ProtocolError::oversized(&raw[..raw.len().min(ID_SNIFF_BYTES)], raw.len(), max));
    }
    let value: Value = match serde_json::from_slice(raw) {
        Ok(v) => v,
        Err(e) => return Inbound::Reject(ProtocolError::new(Value::Null, PARSE_ERROR, format!("Parse error: {e}"))),
    };
    let Value::Object(obj) = &value else {
        let what = if value.is_array() { "batches are not supported" } else { "a message must be a JSON object" };
        return Inbound::Reject(ProtocolError::new(Value::Null, INVALID_REQUEST, format!("Invalid Request: {what}")));
    };
    let id = match obj.get("id") {
        None => None,
        Some(id @ (Value::String(_) | Value::Number(_))) => Some(id.clone()),
        Some(_) => {
            return Inbound::Reject(ProtocolError::new(
                Value::Null,
                INVALID_REQUEST,
                "Invalid Request: `id` must be a string or a number",
            ));
        }
    };
    let is_request = obj.contains_key("method");
    let reject_or_ignore = |code: i32, message: String| match &id {
        Some(id) if is_request => Inbound::Reject(ProtocolError::new(id.clone(), code, message)),
        _ => Inbound::Ignore(message),
    };
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return reject_or_ignore(INVALID_REQUEST, "Invalid Request: `jsonrpc` must be \"2.0\"".into());
    }
    let method_name = match obj.get("method") {
        None => None,
        Some(Value::String(m)) => Some(m.clone()),
        Some(_) => return reject_or_ignore(INVALID_REQUEST, "Invalid Request: `method` must be a string".into()),
    };
    match serde_json::from_value::<ClientJsonRpcMessage>(value) {
        // A standard method whose params do not fit falls through to the catch-all custom request; it is not an
        // unknown method.
        Ok(ClientJsonRpcMessage::Request(request)) if matches!(&request.request, ClientRequest::CustomRequest(c) if STANDARD_METHODS.contains(&c.method.as_str())) =>
        {
            let m = method_name.unwrap_or_default();
            reject_or_ignore(INVALID_PARAMS, format!("Invalid params for `{m}`: they do not match the method's schema"))
        }
        Ok(message) => Inbound::Message(Box::new(message)),
        Err(e) => match method_name {
            Some(m) => reject_or_ignore(INVALID_PARAMS, format!("Invalid params for `{m}`: {e}")),
            None => Inbound::Ignore(format!("malformed response: {e}")),
        },
    }
}

/// Reads the top-level `id` from the start of a (possibly cut off) JSON object; `null` when it cannot.
pub fn sniff_id(prefix: &[u8]) -> Value {
    IdSniffer { s: prefix, i: 0 }.run().unwrap_or(Value::Null)
}

struct IdSniffer<'a> {
    s: &'a [u8],
    i: usize,
}

impl IdSniffer<'_> {
    fn run(&mut self) -> Option<Value> {
        self.ws();
        self.eat(b'{')?;
        loop {
            self.ws();
            let key_start = self.i;
            self.skip_string()?;
            let key = &self.s[key_start..self.i];
            self.ws();
            self.eat(b':')?;
            self.ws();
            let value_start = self.i;
            self.skip_value()?;
            if key == b"\"id\"" {
                let id: Value = serde_json::from_slice(&self.s[value_start..self.i]).ok()?;
                return (id.is_string() || id.is_number()).then_some(id);
            }
            self.ws();
            self.eat(b',')?;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\r' | b'\n')) {
            self.i += 1;
        }
    }

    fn eat(&mut self, b: u8) -> Option<()> {
        (self.peek()? == b).then(|| self.i += 1)
    }

    fn skip_string(&mut self) -> Option<()> {
        self.eat(b'"')?;
        loop {
            match self.peek()? {
                b'\\' => self.i += 2,
                b'"' => {
                    self.i += 1;
                    return Some(());
                }
                _ => self.i += 1,
            }
        }
    }

    fn skip_value(&mut self) -> Option<()> {
        match self.peek()? {
            b'"' => self.skip_string(),
            b'{' | b'[' => {
                let mut depth = 0usize;
                loop {
                    match self.peek()? {
                        b'"' => {
                            self.skip_string()?;
                            continue;
                        }
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => {
                            depth -= 1;
                            if depth == 0 {
                                self.i += 1;
                                return Some(());
                            }
                        }
                        _ => {}
                    }
                    self.i += 1;
                }
            }
            _ => {
                while !matches!(self.peek()?, b',' | b'}' | b']' | b' ' | b'\t' | b'\r' | b'\n') {
                    self.i += 1;
                }
                Some(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reject(raw: &str) -> ProtocolError {
        match classify(raw.as_bytes(), 1024) {
            Inbound::Reject(e) => e,
            other => panic!("{raw}: expected a rejection, got {other:?}"),
        }
    }

    #[test]
    fn each_kind_of_bad_input_gets_its_json_rpc_code() {
        let e = reject("{not json");
        assert_eq!((e.code, &e.id), (PARSE_ERROR, &Value::Null));
        assert_eq!(reject("[]").code, INVALID_REQUEST);
        assert_eq!(reject("[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]").code, INVALID_REQUEST);
        assert_eq!(reject("42").code, INVALID_REQUEST);
        let e = reject(r#"{"jsonrpc":"1.0","id":7,"method":"ping"}"#);
        assert_eq!((e.code, e.id), (INVALID_REQUEST, json!(7)));
        assert_eq!(reject(r#"{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}"#).code, INVALID_REQUEST);
        let e = reject(r#"{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":5}}"#);
        assert_eq!((e.code, e.id), (INVALID_PARAMS, json!("a")));
        assert!(e.message.contains("tools/call"), "{}", e.message);
        let big = format!(r#"{{"jsonrpc":"2.0","id":99,"method":"ping","params":{{"pad":"{}"}}}}"#, "x".repeat(2000));
        let e = reject(&big);
        assert_eq!((e.code, &e.id), (INVALID_REQUEST, &json!(99)));
        assert!(e.message.contains("1024"), "{}", e.message);
        assert_eq!(e.to_json()["jsonrpc"], "2.0");
    }

    #[test]
    fn good_messages_pass_and_bad_notifications_are_dropped() {
        for ok in [
            r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":2,"method":"no/such/method","params":{}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            "\u{feff}{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/list\"}",
        ] {
            assert!(matches!(classify(ok.as_bytes(), 1024), Inbound::Message(_)), "{ok}");
        }
        for dropped in [r#"{"jsonrpc":"2.0","method":"tools/call","params":7}"#, r#"{"jsonrpc":"2.0","id":5}"#] {
            assert!(matches!(classify(dropped.as_bytes(), 1024), Inbound::Ignore(_)), "{dropped}");
        }
    }

    #[test]
    fn the_id_is_found_at_the_top_level_of_a_cut_off_message() {
        assert_eq!(sniff_id(br#"{"jsonrpc":"2.0","id":12,"method":"x","params":{"a":"#), json!(12));
        assert_eq!(sniff_id(br#"{"params":{"id":1,"s":"}\""},"id":"top","method""#), json!("top"));
        assert_eq!(sniff_id(br#"{"params":{"id":1},"pad":"xxxxxxxx"#), Value::Null);
        assert_eq!(sniff_id(br#"{"id":null}"#), Value::Null);
        assert_eq!(sniff_id(b"garbage"), Value::Null);
        assert_eq!(sniff_id(br#"{"a":[1,{"b":"]"}],"id":-3}"#), json!(-3));
    }
}

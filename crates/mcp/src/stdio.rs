//! The stdio transport: newline-delimited JSON-RPC on any reader/writer pair (stdin/stdout for `holdfast mcp`).
//!
//! Every line passes the gate of [`crate::jsonrpc`] first, so a malformed, unknown or oversized message is answered
//! with a JSON-RPC error and the next line is served. A line is never buffered beyond the cap: the rest of an
//! oversized line is skipped as it arrives, keeping only its first bytes to find its `id`.
//!
//! Reads are cancellation-safe (the service polls `receive` in a `select!`): bytes are taken from the reader only
//! in the same synchronous step that stores them, so a dropped read resumes where it stopped. Error answers are
//! written, in order, by a writer task, so a cancelled read never leaves half a line on the output.

use crate::jsonrpc::{ID_SNIFF_BYTES, Inbound, ProtocolError, classify};
use rmcp::RoleServer;
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, ServerJsonRpcMessage};
use rmcp::transport::Transport;
use std::future::Future;
use std::sync::Arc;
use tokio::io::{AsyncBufReadExt as _, AsyncRead, AsyncWrite, AsyncWriteExt as _, BufReader};
use tokio::sync::Mutex;

/// A newline-delimited JSON-RPC transport with a per-message size cap.
pub struct LineTransport<R, W> {
    reader: BufReader<R>,
    writer: Arc<Mutex<W>>,
    max: usize,
    line: Vec<u8>,
    /// Set while skipping the rest of an oversized line: its first bytes and its size so far.
    oversized: Option<(Vec<u8>, usize)>,
    /// Protocol errors waiting to be written, in order.
    errors: Option<tokio::sync::mpsc::Sender<Vec<u8>>>,
    /// Whether an `initialize` request has been passed on.
    initialized: bool,
}

/// How many protocol-error answers may wait for the client to read them.
const ERROR_QUEUE: usize = 64;

impl<R, W> std::fmt::Debug for LineTransport<R, W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LineTransport").field("max", &self.max).finish_non_exhaustive()
    }
}

enum Read {
    Line,
    Oversized(Vec<u8>, usize),
    Eof,
}

impl<R, W> LineTransport<R, W>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    /// A transport reading from `reader` and writing to `writer`, refusing messages over `max` bytes.
    pub fn new(reader: R, writer: W, max: usize) -> Self {
        Self {
            reader: BufReader::new(reader),
            writer: Arc::new(Mutex::new(writer)),
            max,
            line: Vec::new(),
            oversized: None,
            errors: None,
            initialized: false,
        }
    }

    async fn read_line(&mut self) -> std::io::Result<Read> {
        loop {
            let available = self.reader.fill_buf().await?;
            if available.is_empty() {
                return Ok(Read::Eof);
            }
            let newline = available.iter().position(|b| *b == b'\n');
            let take = newline.map_or(available.len(), |i| i + 1);
            let chunk = &available[..take];
            let done = newline.is_some();
            let outcome = if self.oversized.is_some() {
                if let Some((_, size)) = self.oversized.as_mut() {
                    *size = size.saturating_add(take);
                }
                if done { self.oversized.take().map(|(prefix, size)| Read::Oversized(prefix, size)) } else { None }
            } else if self.line.len() + take - usize::from(done) > self.max {
                let size = self.line.len() + take - usize::from(done);
                let mut prefix = std::mem::take(&mut self.line);
                let room = ID_SNIFF_BYTES.saturating_sub(prefix.len());
                prefix.extend_from_slice(&chunk[..chunk.len().min(room)]);
                prefix.truncate(ID_SNIFF_BYTES);
                if done {
                    Some(Read::Oversized(prefix, size))
                } else {
                    self.oversized = Some((prefix, size));
                    None
                }
            } else {
                self.line.extend_from_slice(chunk);
                done.then_some(Read::Line)
            };
            self.reader.consume(take);
            if let Some(outcome) = outcome {
                return Ok(outcome);
            }
        }
    }

    /// Queues a protocol error for the writer task (started on first use), which writes the answers in order. A
    /// flood of bad input that the client does not read fills the queue; further answers are then dropped rather
    /// than buffered without bound.
    fn answer(&mut self, error: ProtocolError) {
        let queue = self.errors.get_or_insert_with(|| {
            let (tx, mut rx) = tokio::sync::mpsc::channel::<Vec<u8>>(ERROR_QUEUE);
            let writer = Arc::clone(&self.writer);
            tokio::spawn(async move {
                while let Some(line) = rx.recv().await {
                    let mut w = writer.lock().await;
                    let written = async {
                        w.write_all(&line).await?;
                        w.flush().await
                    };
                    if let Err(e) = written.await {
                        tracing::debug!("could not write a protocol error: {e}");
                        return;
                    }
                }
            });
            tx
        });
        let mut line = error.to_json().to_string().into_bytes();
        line.push(b'\n');
        if queue.try_send(line).is_err() {
            tracing::warn!("dropped a protocol error answer: the client is not reading");
        }
    }
}

impl<R, W> Transport<RoleServer> for LineTransport<R, W>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Error = std::io::Error;

    fn send(&mut self, item: ServerJsonRpcMessage) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let writer = Arc::clone(&self.writer);
        async move {
            let mut line = serde_json::to_vec(&item).map_err(std::io::Error::other)?;
            line.push(b'\n');
            let mut w = writer.lock().await;
            w.write_all(&line).await?;
            w.flush().await
        }
    }

    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        loop {
            match self.read_line().await {
                Ok(Read::Line) => {}
                Ok(Read::Oversized(prefix, size)) => {
                    tracing::warn!(size, max = self.max, "refused an oversized message");
                    self.answer(ProtocolError::oversized(&prefix, size, self.max));
                    continue;
                }
                Ok(Read::Eof) => return None,
                Err(e) => {
                    tracing::warn!("reading stdin failed: {e}");
                    return None;
                }
            }
            let line = std::mem::take(&mut self.line);
            let trimmed = line.strip_suffix(b"\n").unwrap_or(&line);
            let trimmed = trimmed.strip_suffix(b"\r").unwrap_or(trimmed);
            if trimmed.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            match classify(trimmed, self.max) {
                // Before `initialize`, only requests mean anything (the service answers them); a stray notification
                // or response would end the session before it began, so it is dropped.
                Inbound::Message(message)
                    if !self.initialized && !matches!(*message, ClientJsonRpcMessage::Request(_)) =>
                {
                    tracing::debug!("dropped a notification or response that came before initialize");
                }
                Inbound::Message(message) => {
                    if let ClientJsonRpcMessage::Request(request) = &*message
                        && matches!(request.request, ClientRequest::InitializeRequest(_))
                    {
                        self.initialized = true;
                    }
                    return Some(*message);
                }
                Inbound::Ignore(why) => tracing::debug!("dropped an incoming message: {why}"),
                Inbound::Reject(error) => {
                    tracing::debug!(code = error.code, "protocol error: {}", error.message);
                    self.answer(error);
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.writer.lock().await.flush().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};
    use tokio::io::AsyncReadExt as _;

    #[tokio::test]
    async fn oversized_lines_arriving_in_pieces_are_skipped_and_answered_in_order() {
        let (mut client_in, server_in) = tokio::io::duplex(1024);
        let (server_out, mut client_out) = tokio::io::duplex(64 * 1024);
        let mut transport = LineTransport::new(server_in, server_out, 4096);
        let writer = tokio::spawn(async move {
            for id in 1..=3 {
                let big = json!({"jsonrpc": "2.0", "id": id, "method": "ping", "params": {"pad": "x".repeat(10_000)}});
                for piece in big.to_string().as_bytes().chunks(700) {
                    client_in.write_all(piece).await.unwrap();
                }
                client_in.write_all(b"\n").await.unwrap();
            }
            client_in.write_all(b"\r\n  \n{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"ping\"}\r\n").await.unwrap();
            client_in
        });
        let message = transport.receive().await.unwrap();
        assert!(matches!(message, ClientJsonRpcMessage::Request(ref r) if r.id.to_string() == "4"), "{message:?}");
        drop(writer.await.unwrap());
        assert!(transport.receive().await.is_none(), "end of input ends the session");
        drop(transport);

        let mut out = String::new();
        client_out.read_to_string(&mut out).await.unwrap();
        let answers: Vec<Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        let ids: Vec<i64> = answers.iter().map(|a| a["id"].as_i64().unwrap()).collect();
        assert_eq!(ids, [1, 2, 3], "{out}");
        assert!(answers.iter().all(|a| a["error"]["code"] == -32600), "{out}");
    }
}

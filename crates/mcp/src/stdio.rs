//! The stdio transport: newline-delimited JSON-RPC on any reader/writer pair (stdin/stdout for `holdfast mcp`).
//!
//! Every line passes the gate of [`crate::jsonrpc`] first, so a malformed, unknown or oversized message is answered
//! with a JSON-RPC error and the next line is served. A line is never buffered beyond the cap: the rest of an
//! oversized line is skipped as it arrives, keeping only its first bytes to find its `id`.
//!
//! Reads are cancellation-safe (the service polls `receive` in a `select!`): bytes are taken from the reader only
//! in the same synchronous step that stores them, so a dropped read resumes where it stopped. Error answers are
//! written by a spawned task, so a cancelled read never leaves half a line on the output.

use crate::jsonrpc::{ID_SNIFF_BYTES, Inbound, ProtocolError, classify};
use rmcp::RoleServer;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
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
}

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

    fn answer(&self, error: ProtocolError) {
        let writer = Arc::clone(&self.writer);
        tokio::spawn(async move {
            let mut line = error.to_json().to_string().into_bytes();
            line.push(b'\n');
            let mut w = writer.lock().await;
            if let Err(e) = async {
                w.write_all(&line).await?;
                w.flush().await
            }
            .await
            {
                tracing::debug!("could not write a protocol error: {e}");
            }
        });
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
                Inbound::Message(message) => return Some(*message),
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

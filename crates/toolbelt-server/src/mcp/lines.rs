//! MCP over newline-delimited JSON-RPC on a pair of streams (standard input and
//! output for [`serve_stdio`]), behind a line filter that answers what the
//! protocol engine must not see: lines that are not JSON, too long or too deep,
//! and messages before the handshake.

use std::sync::Arc;

use rmcp::ServiceExt;
use rmcp::model::ProtocolVersion;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use toolbelt_core::Registry;

use super::server::McpServer;
use super::{MAX_JSON_DEPTH, MAX_LINE_BYTES, McpServeError};

/// Capacity of the in-memory pipes between the line filter and the protocol
/// engine, in bytes.
pub(super) const PIPE_BYTES: usize = 256 * 1024;

/// JSON-RPC's code for input that is not JSON.
pub(super) const PARSE_ERROR_CODE: i64 = -32700;
/// JSON-RPC's code for a message that is not a valid request.
pub(super) const INVALID_REQUEST_CODE: i64 = -32600;

/// Serves `registry` over MCP on standard input and output until the client
/// closes standard input. Standard output carries MCP messages only.
///
/// # Errors
///
/// [`McpServeError`] when the handshake fails or the pipes break.
pub async fn serve_stdio(registry: Arc<Registry>) -> Result<(), McpServeError> {
    serve(McpServer::new(registry)).await
}

/// Serves `server` on standard input and output, as [`serve_stdio`].
///
/// # Errors
///
/// [`McpServeError`] when the handshake fails or the pipes break.
pub async fn serve(server: McpServer) -> Result<(), McpServeError> {
    serve_lines(server, crate::stdio::input(), crate::stdio::output()).await
}

/// Serves `server` over newline-delimited JSON-RPC on `input` and `output`.
///
/// Each line is checked before it reaches the protocol engine: a line that is
/// not JSON is answered with a parse error (-32700), a line longer than
/// [`MAX_LINE_BYTES`] with an invalid-request error (-32600); the server goes on.
///
/// # Errors
///
/// [`McpServeError`] when the handshake fails or the pipes break.
pub async fn serve_lines<R, W>(server: McpServer, input: R, output: W) -> Result<(), McpServeError>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (engine_in, filter_out) = tokio::io::duplex(PIPE_BYTES);
    let (engine_out, writer_in) = tokio::io::duplex(PIPE_BYTES);
    let (errors_tx, errors_rx) = mpsc::unbounded_channel::<Vec<u8>>();
    let reader = tokio::spawn(filter_lines(input, filter_out, errors_tx));
    let writer = tokio::spawn(write_lines(writer_in, errors_rx, output));
    let (engine_read, engine_write) = tokio::io::split(engine_in);
    let (out_read, out_write) = tokio::io::split(engine_out);
    drop(out_read);
    drop(engine_write);
    let served = async {
        let running = server.serve((engine_read, out_write)).await?;
        running.waiting().await?;
        Ok::<(), McpServeError>(())
    }
    .await;
    reader.abort();
    let written = writer.await;
    served?;
    written??;
    Ok(())
}

/// Copies whole, well-formed lines from `input` to `engine`; answers the others
/// through `errors`.
async fn filter_lines<R, E>(
    input: R,
    mut engine: E,
    errors: mpsc::UnboundedSender<Vec<u8>>,
) -> std::io::Result<()>
where
    R: AsyncRead + Unpin,
    E: AsyncWrite + Unpin,
{
    let mut input = BufReader::with_capacity(64 * 1024, input);
    let mut line: Vec<u8> = Vec::new();
    let mut oversized = false;
    let mut handshake = Handshake::default();
    loop {
        let chunk = input.fill_buf().await?;
        if chunk.is_empty() {
            break;
        }
        let (part, has_end) = match memchr::memchr(b'\n', chunk) {
            Some(i) => (&chunk[..i], true),
            None => (chunk, false),
        };
        if !oversized {
            if line.len() + part.len() > MAX_LINE_BYTES {
                oversized = true;
                line = Vec::new();
            } else {
                line.extend_from_slice(part);
            }
        }
        let used = part.len() + usize::from(has_end);
        input.consume(used);
        if !has_end {
            continue;
        }
        if oversized {
            let _ = errors.send(error_line(
                INVALID_REQUEST_CODE,
                &format!("the message is longer than {MAX_LINE_BYTES} bytes and was discarded"),
            ));
        } else {
            check_and_forward(&line, &mut engine, &errors, &mut handshake).await?;
        }
        oversized = false;
        line.clear();
    }
    if !oversized && !line.is_empty() {
        check_and_forward(&line, &mut engine, &errors, &mut handshake).await?;
    }
    engine.shutdown().await
}

async fn check_and_forward<E: AsyncWrite + Unpin>(
    line: &[u8],
    engine: &mut E,
    errors: &mpsc::UnboundedSender<Vec<u8>>,
    handshake: &mut Handshake,
) -> std::io::Result<()> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return Ok(());
    }
    if let Some(depth) = too_deep(line) {
        let _ = errors.send(error_line(
            INVALID_REQUEST_CODE,
            &format!(
                "the message is nested deeper than {MAX_JSON_DEPTH} levels (at least {depth})"
            ),
        ));
        return Ok(());
    }
    match serde_json::from_slice::<serde::de::IgnoredAny>(line) {
        Ok(_) => match handshake.admit(line) {
            Admit::Forward => {
                engine.write_all(line).await?;
                engine.write_all(b"\n").await?;
                engine.flush().await
            }
            Admit::Drop => Ok(()),
            Admit::Answer(answer) => {
                let _ = errors.send(answer);
                Ok(())
            }
        },
        Err(e) => {
            let _ = errors.send(error_line(
                PARSE_ERROR_CODE,
                &format!("the message is not valid JSON: {e}"),
            ));
            Ok(())
        }
    }
}

/// Whether the protocol engine has chosen the session's lifecycle: an `initialize`
/// request (2025-11-25 and before), or a request carrying the protocol version and
/// client capabilities in its `_meta` (2026-07-28). Until then the engine ends the
/// session on any notification or response, so the filter holds those back.
#[derive(Default)]
struct Handshake {
    chosen: bool,
}

/// What becomes of a message before the lifecycle is chosen.
enum Admit {
    /// On to the engine.
    Forward,
    /// Dropped (logged).
    Drop,
    /// Answered by the filter with this line.
    Answer(Vec<u8>),
}

/// The parts of a JSON-RPC message that tell its kind.
#[derive(Deserialize)]
struct Peek {
    method: Option<String>,
    id: Option<Value>,
    result: Option<serde::de::IgnoredAny>,
    error: Option<serde::de::IgnoredAny>,
    params: Option<PeekParams>,
}

#[derive(Deserialize)]
struct PeekParams {
    #[serde(rename = "_meta")]
    meta: Option<PeekMeta>,
}

#[derive(Deserialize)]
struct PeekMeta {
    #[serde(rename = "io.modelcontextprotocol/protocolVersion")]
    version: Option<String>,
    #[serde(rename = "io.modelcontextprotocol/clientCapabilities")]
    capabilities: Option<serde::de::IgnoredAny>,
}

impl Handshake {
    /// What becomes of `line`, valid JSON; notes when it chooses the lifecycle.
    /// Messages that are not JSON-RPC go on: the engine answers them.
    fn admit(&mut self, line: &[u8]) -> Admit {
        if self.chosen {
            return Admit::Forward;
        }
        let Ok(peek) = serde_json::from_slice::<Peek>(line) else {
            return Admit::Forward;
        };
        match (&peek.method, &peek.id) {
            (Some(method), Some(id)) => {
                let meta = peek.params.and_then(|p| p.meta);
                let names_version = meta.as_ref().is_some_and(|m| m.version.is_some());
                let inline = meta.is_some_and(|m| {
                    m.capabilities.is_some()
                        && m.version.is_some_and(|v| {
                            ProtocolVersion::KNOWN_VERSIONS
                                .iter()
                                .any(|k| k.as_str() == v)
                        })
                });
                let bootstrap =
                    matches!(method.as_str(), "initialize" | "ping" | "server/discover");
                if method == "initialize" || (inline && !bootstrap) {
                    self.chosen = true;
                }
                if bootstrap || names_version {
                    // The engine answers what is missing from a 2026-07-28 request.
                    return Admit::Forward;
                }
                Admit::Answer(error_answer(
                    id,
                    INVALID_REQUEST_CODE,
                    &format!(
                        "{method:?} came before the session was initialized: send `initialize` \
                         first (protocol 2025-11-25 and earlier), or, on protocol 2026-07-28, \
                         put io.modelcontextprotocol/protocolVersion and \
                         io.modelcontextprotocol/clientCapabilities in the request's `_meta`"
                    ),
                ))
            }
            (Some(method), None) => {
                tracing::warn!("the notification {method:?} came before initialize; dropped");
                Admit::Drop
            }
            (None, Some(_)) if peek.result.is_some() || peek.error.is_some() => {
                tracing::warn!("a response came before initialize; dropped");
                Admit::Drop
            }
            _ => Admit::Forward,
        }
    }
}

/// The nesting depth reached when it exceeds [`MAX_JSON_DEPTH`], brackets
/// inside strings aside.
fn too_deep(line: &[u8]) -> Option<usize> {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for &b in line {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > MAX_JSON_DEPTH {
                    return Some(depth);
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    None
}

/// A JSON-RPC error response to request `id`, as one line.
fn error_answer(id: &Value, code: i64, message: &str) -> Vec<u8> {
    let mut line = json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {"code": code, "message": message},
    })
    .to_string()
    .into_bytes();
    line.push(b'\n');
    line
}

/// A JSON-RPC error response without an id, as one line.
fn error_line(code: i64, message: &str) -> Vec<u8> {
    error_answer(&Value::Null, code, message)
}

/// Writes the engine's lines and the filter's error answers to `output`, one
/// whole line at a time.
async fn write_lines<R, W>(
    engine: R,
    mut errors: mpsc::UnboundedReceiver<Vec<u8>>,
    mut output: W,
) -> std::io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut engine = BufReader::with_capacity(64 * 1024, engine);
    let mut line = Vec::new();
    let mut errors_open = true;
    loop {
        tokio::select! {
            read = engine.read_until(b'\n', &mut line) => {
                if read? == 0 {
                    break;
                }
                output.write_all(&line).await?;
                output.flush().await?;
                line.clear();
            }
            error = errors.recv(), if errors_open => match error {
                Some(error) => {
                    output.write_all(&error).await?;
                    output.flush().await?;
                }
                None => errors_open = false,
            },
        }
    }
    output.flush().await
}

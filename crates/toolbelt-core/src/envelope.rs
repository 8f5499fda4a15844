//! The one result shape every tool call produces: [`Envelope`].
//!
//! ```json
//! { "status": "success" | "partial" | "error",
//!   "data": { ... }, "text": "what the model reads",
//!   "stats": { "time_ms": 3, ... }, "context": { "tool": ..., "call_id": ..., ... },
//!   "error": { "code": "NOT_FOUND", "message": ..., "hint": ... } }
//! ```
//! No other top-level keys exist; `error` is present only when `status` is `error`.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// How a call went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// The call did what was asked.
    Success,
    /// Useful but incomplete: truncated, timed out with partial results, some inputs unreadable.
    Partial,
    /// The call failed; `error` says why and what to do next.
    Error,
}

impl Status {
    /// `success`, `partial` or `error`.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Success => "success",
            Status::Partial => "partial",
            Status::Error => "error",
        }
    }
}

/// The closed set of error codes a model can see.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ErrorCode {
    /// The arguments do not fit the tool's schema or rules.
    InvalidParams,
    /// No tool has that name.
    UnknownTool,
    /// A file, id or resource does not exist.
    NotFound,
    /// A path, command or host is not allowed.
    AccessDenied,
    /// The target changed since it was last seen, or already exists.
    Conflict,
    /// The call ran out of time.
    Timeout,
    /// The input or output is over a size limit.
    TooLarge,
    /// The file is binary where text was expected.
    BinaryFile,
    /// A network failure (DNS, connect, TLS, reset).
    Network,
    /// A remote server answered with an error status.
    HttpStatus,
    /// A command exited with a non-zero status.
    NonzeroExit,
    /// The call was cancelled.
    Cancelled,
    /// Something the tool needs is not installed or not configured.
    DependencyMissing,
    /// The server behind the tool (another MCP server) is not running or not
    /// reachable now; it is started again on a later call.
    Unavailable,
    /// The tool of another MCP server reported an error; its message says why.
    RemoteError,
    /// A fault inside toolbelt; not caused by the arguments.
    Internal,
}

impl ErrorCode {
    /// Every code, in declaration order.
    pub const ALL: [ErrorCode; 16] = [
        ErrorCode::InvalidParams,
        ErrorCode::UnknownTool,
        ErrorCode::NotFound,
        ErrorCode::AccessDenied,
        ErrorCode::Conflict,
        ErrorCode::Timeout,
        ErrorCode::TooLarge,
        ErrorCode::BinaryFile,
        ErrorCode::Network,
        ErrorCode::HttpStatus,
        ErrorCode::NonzeroExit,
        ErrorCode::Cancelled,
        ErrorCode::DependencyMissing,
        ErrorCode::Unavailable,
        ErrorCode::RemoteError,
        ErrorCode::Internal,
    ];

    /// The code as it appears in JSON, e.g. `INVALID_PARAMS`.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::InvalidParams => "INVALID_PARAMS",
            ErrorCode::UnknownTool => "UNKNOWN_TOOL",
            ErrorCode::NotFound => "NOT_FOUND",
            ErrorCode::AccessDenied => "ACCESS_DENIED",
            ErrorCode::Conflict => "CONFLICT",
            ErrorCode::Timeout => "TIMEOUT",
            ErrorCode::TooLarge => "TOO_LARGE",
            ErrorCode::BinaryFile => "BINARY_FILE",
            ErrorCode::Network => "NETWORK",
            ErrorCode::HttpStatus => "HTTP_STATUS",
            ErrorCode::NonzeroExit => "NONZERO_EXIT",
            ErrorCode::Cancelled => "CANCELLED",
            ErrorCode::DependencyMissing => "DEPENDENCY_MISSING",
            ErrorCode::Unavailable => "UNAVAILABLE",
            ErrorCode::RemoteError => "REMOTE_ERROR",
            ErrorCode::Internal => "INTERNAL",
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The `error` member of an error envelope.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorInfo {
    /// What kind of failure.
    pub code: ErrorCode,
    /// What went wrong, for the model.
    pub message: String,
    /// What to do next.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

/// Counters of a call. `time_ms` is always present; tools add their own
/// (`bytes`, `lines`, `matches`, `files`, ...).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    /// Wall time of the call in milliseconds.
    pub time_ms: u64,
    /// Tool-specific counters.
    #[serde(flatten)]
    pub counters: BTreeMap<String, Value>,
}

/// One safe repair the registry applied to a call's arguments before validation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Repair {
    /// Where, as a path like `todos[0].count` (empty for the whole arguments).
    pub path: String,
    /// What was done, e.g. `string "5" -> integer 5`.
    pub action: String,
}

/// Where and how the call ran.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CallContext {
    /// Canonical tool name (or the name asked for, when unknown).
    pub tool: String,
    /// Identifier of this call.
    pub call_id: String,
    /// Working directory of the call.
    pub cwd: String,
    /// The arguments as received, before any repair.
    pub params_input: Value,
    /// Repairs applied to the arguments, if any.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub repairs: Vec<Repair>,
    /// The name the caller used, when a profile exposes the tool under another name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exposed_name: Option<String>,
    /// The checkpoint taken before the call (`cp-12`): what it changed can be
    /// seen and undone (`toolbelt rewind cp-12`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<String>,
    /// What the checkpoint left out, or why none was taken (`checkpoint not taken:
    /// no space left on the device`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint_problem: Option<String>,
    /// The person's hooks that ran for the call, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hooks: Vec<HookRun>,
    /// Tool-specific context (e.g. `path_resolved`).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One hook's run, as the envelope's `context.hooks` and the call log show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HookRun {
    /// The hook's name.
    pub name: String,
    /// The event it ran for.
    pub event: String,
    /// What came of it: `allowed`, `denied`, `asked`, `rewrote`, `context`,
    /// `blocked`, `reverted`, `timeout`, `failed`, `warning`, `untrusted`.
    pub outcome: String,
    /// How long it took.
    pub ms: u64,
    /// What went wrong, or the reason it gave.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// The result of one tool call. See the module documentation for the shape.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Envelope {
    /// How the call went.
    pub status: Status,
    /// Machine-readable result (valid against the tool's output schema on success).
    pub data: Value,
    /// What the model reads.
    pub text: String,
    /// Counters, always with `time_ms`.
    pub stats: Stats,
    /// Where and how the call ran.
    pub context: CallContext,
    /// Present exactly when `status` is `error`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorInfo>,
}

impl Envelope {
    /// A successful envelope.
    pub fn success(data: Value, text: impl Into<String>) -> Envelope {
        Envelope {
            status: Status::Success,
            data,
            text: text.into(),
            stats: Stats::default(),
            context: CallContext::default(),
            error: None,
        }
    }

    /// A partial envelope: useful, but incomplete.
    pub fn partial(data: Value, text: impl Into<String>) -> Envelope {
        Envelope {
            status: Status::Partial,
            ..Envelope::success(data, text)
        }
    }

    /// An error envelope. `text` repeats the message (and the hint) so that a
    /// consumer that only forwards `text` still tells the model what happened.
    pub fn error(code: ErrorCode, message: impl Into<String>, hint: Option<String>) -> Envelope {
        let message = message.into();
        let text = error_text(code, &message, hint.as_deref());
        Envelope {
            status: Status::Error,
            data: Value::Object(Map::new()),
            text,
            stats: Stats::default(),
            context: CallContext::default(),
            error: Some(ErrorInfo {
                code,
                message,
                hint,
            }),
        }
    }

    /// True for `success` and `partial`.
    pub fn is_ok(&self) -> bool {
        self.status != Status::Error
    }

    /// The error code, if this is an error envelope.
    pub fn error_code(&self) -> Option<ErrorCode> {
        self.error.as_ref().map(|e| e.code)
    }

    /// Sets a counter in `stats`.
    pub fn with_stat(mut self, key: impl Into<String>, value: impl Into<Value>) -> Envelope {
        self.stats.counters.insert(key.into(), value.into());
        self
    }

    /// The envelope as a JSON value.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

/// The model-facing text of an error: `ERROR [CODE]: message` plus the hint.
pub(crate) fn error_text(code: ErrorCode, message: &str, hint: Option<&str>) -> String {
    match hint {
        Some(h) if !h.is_empty() => format!("ERROR [{code}]: {message}\nHint: {h}"),
        _ => format!("ERROR [{code}]: {message}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_six_top_level_keys() {
        let e = Envelope::error(
            ErrorCode::NotFound,
            "no such file",
            Some("check the path".into()),
        );
        let v = e.to_value();
        let keys: Vec<_> = v
            .as_object()
            .map(|o| o.keys().cloned().collect())
            .unwrap_or_default();
        assert_eq!(
            keys,
            ["context", "data", "error", "stats", "status", "text"]
        );
        let s = Envelope::success(json!({"a": 1}), "ok").to_value();
        assert!(s.get("error").is_none());
        assert_eq!(s["stats"]["time_ms"], 0);
    }

    #[test]
    fn error_codes_serialize_screaming() {
        for c in ErrorCode::ALL {
            assert_eq!(
                serde_json::to_value(c).ok(),
                Some(Value::String(c.as_str().into()))
            );
        }
    }
}

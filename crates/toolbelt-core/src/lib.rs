//! The core of toolbelt: everything between "the model asked for a tool" and "the
//! model got a useful answer back", with no tool of its own.
//!
//! - [`ToolSpec`]: what a tool is, as data (name, description, category, permissions,
//!   examples, schemas, hints).
//! - [`Tool`] / [`TypedTool`]: how a tool runs; typed tools derive their schemas.
//! - [`Envelope`]: the one result shape (`status`, `data`, `text`, `stats`, `context`, `error`).
//! - [`Registry`]: register, look up, repair, validate, authorize and execute calls.
//! - [`CallLog`]: receives a [`CallRecord`] of every call, arguments digested with
//!   their secrets redacted ([`args_digest`]).
//! - [`json`]: lenient JSON, for arguments models send as broken text.
//! - The wire formats (schemas for each model API, calls parsed from their replies)
//!   are the `toolbelt-wire` crate; the permission rules are `toolbelt-policy`.
//! - [`output`]: output budgets with spill files.
//! - [`state`]: where a workspace's state lives, outside the workspace.
//! - [`toolset`]: named groups of tools and the selection a session serves.
//! - [`checkpoint`]: what the registry asks before and after a call that may
//!   change files ([`Checkpointer`]), and where a call came from ([`Origin`]).
//! - [`Authorizer`]: what the registry asks before every call (the rules are
//!   `toolbelt-policy`'s); [`profile`]: the names a model sees.
//! - [`error_chain`]: an error and its causes as the one line a model reads;
//!   [`closest`]: did-you-mean for names; [`sync`]: locks that outlive a panic;
//!   [`human`]: sizes and counts as people read them.
//! - [`Secret`]: a value never shown (API keys, tokens); [`retry_after`]: the
//!   wait a server asks for, read from a header's text.
//!
//! ```
//! use schemars::JsonSchema;
//! use serde::{Deserialize, Serialize};
//! use serde_json::json;
//! use toolbelt_core::{Registry, Reply, Session, ToolContext, ToolResult, ToolSpec, TypedTool};
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct AddParams { a: i64, b: i64 }
//! #[derive(Serialize, JsonSchema)]
//! struct Sum { sum: i64 }
//!
//! struct Add;
//! impl TypedTool for Add {
//!     type Params = AddParams;
//!     type Output = Sum;
//!     fn spec(&self) -> ToolSpec { ToolSpec::describe("add", "Adds two integers.") }
//!     async fn call(&self, _ctx: &ToolContext, p: AddParams) -> ToolResult<Sum> {
//!         Ok(Reply::new(Sum { sum: p.a + p.b }, format!("{}", p.a + p.b)))
//!     }
//! }
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let mut registry = Registry::new(Session::new(std::env::temp_dir()));
//! registry.register_typed(Add).unwrap();
//! // "2" is repaired to 2; the repair is recorded in the envelope's context.
//! let env = registry.execute("add", json!({"a": "2", "b": 3})).await;
//! assert_eq!(env.data, json!({"sum": 5}));
//! assert_eq!(env.context.repairs.len(), 1);
//! # });
//! ```

mod ask;
mod authorize;
mod calllog;
pub mod checkpoint;
pub mod closest;
mod context;
pub mod diagnostics;
mod envelope;
mod error;
pub mod front_matter;
pub mod hooks;
pub mod human;
pub mod json;
pub mod output;
pub mod profile;
mod registry;
mod repair;
mod retry;
pub mod schema;
mod secret;
mod spec;
pub mod stamps;
pub mod state;
pub mod sync;
mod tool;
pub mod toolset;
mod validate;

pub use ask::{Answer, Answers, AskError, Asker, Question, QuestionOption};
pub use authorize::{AllowAll, Authorizer, Decision, Evaluation, Guard, Request};
pub use calllog::{
    CallLog, CallRecord, MAX_DIGEST_CHARS, MAX_DIGEST_STRING_CHARS, REDACTED, args_digest,
    is_secret_key, redact_text,
};
pub use checkpoint::{
    Changes, CheckpointCall, CheckpointNote, CheckpointRefused, Checkpointer, Origin,
    PendingCheckpoint,
};
pub use context::{
    DEFAULT_TIMEOUT_MS, EventSink, MAX_TIMEOUT_MS, ProgressSink, Session, ToolContext,
};
pub use diagnostics::{AfterWrite, Diagnostic, DiagnosticsReport, DiagnosticsSummary, Severity};
pub use envelope::{CallContext, Envelope, ErrorCode, ErrorInfo, Repair, Stats, Status};
pub use error::error_chain;
pub use registry::{
    Approval, ApprovalRequest, Approver, BatchMode, CallOptions, DEFAULT_MAX_CONCURRENCY,
    MAX_TOOL_NAME_LEN, Registry, RegistryError, ToolCall, ToolSource,
};
pub use repair::repair_arguments;
pub use retry::{RetryPolicy, retry_after, retry_after_ms};
pub use schema::schema_for;
pub use secret::Secret;
pub use spec::{
    Category, Descriptions, Example, Hints, MAX_DESCRIPTION_CHARS, Subject, ToolSpec,
    first_sentence, short_description,
};
pub use stamps::{FileStamps, SharedStamp, SharedStamps, Stamp, StampChange};
pub use tool::{
    BoxFuture, FnTool, Reply, Tool, ToolError, ToolResult, Typed, TypedTool, Violation,
    default_changes,
};
pub use validate::{InvalidSchema, SchemaValidator, violations_message};

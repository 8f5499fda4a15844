//! Sample specs built from typed structs, as real tools derive them.
#![allow(dead_code)] // The fields exist to shape the derived schemas.

use std::collections::HashMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use toolbelt_core::schema_for;
use toolbelt_core::{Category, Hints, ToolSpec};

fn default_limit() -> u32 {
    2000
}

fn default_true() -> bool {
    true
}

/// How to decode the file.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(super) enum Encoding {
    /// UTF-8, invalid bytes replaced.
    #[default]
    Utf8,
    /// Latin-1: every byte is one character.
    Latin1,
}

/// Arguments of `read_file`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct ReadFileParams {
    /// Path of the file, relative to the workspace.
    #[schemars(length(min = 1))]
    pub(super) path: String,
    /// Line to start at (1-based); negative counts from the end.
    pub(super) offset: Option<i64>,
    /// Most lines to return.
    #[serde(default = "default_limit")]
    #[schemars(range(min = 1, max = 10000))]
    pub(super) limit: u32,
    /// Text encoding.
    #[serde(default)]
    pub(super) encoding: Encoding,
    /// Prefix every line with its number.
    #[serde(default = "default_true")]
    pub(super) line_numbers: bool,
}

/// What `read_file` returns.
#[derive(Debug, Serialize, JsonSchema)]
pub(super) struct ReadFileOutput {
    /// The lines read.
    content: String,
    /// Lines in the whole file.
    total_lines: u64,
    /// More lines follow.
    truncated: bool,
    /// Hash of the whole file, for optimistic locking.
    content_hash: String,
}

/// State of a todo.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(super) enum TodoStatus {
    /// Not started yet.
    Pending,
    /// Being worked on; at most one at a time.
    InProgress,
    /// Finished.
    Completed,
}

/// How urgent a todo is.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(super) enum Priority {
    High,
    Medium,
    Low,
}

/// Who owns a todo.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
pub(super) struct Owner {
    /// Name of the owner.
    name: String,
    /// Free labels.
    #[serde(default)]
    tags: Vec<String>,
}

/// One todo.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
pub(super) struct Todo {
    /// Stable identifier.
    id: String,
    /// What to do.
    #[schemars(length(min = 1, max = 500))]
    content: String,
    status: TodoStatus,
    priority: Option<Priority>,
    /// Who does it.
    owner: Option<Owner>,
}

/// Arguments of `todo_write`.
#[derive(Debug, Deserialize, JsonSchema)]
pub(super) struct TodoWriteParams {
    /// The whole list, replacing the previous one.
    #[schemars(length(min = 1))]
    todos: Vec<Todo>,
    /// Merge into the existing list by `id` instead of replacing it.
    merge: Option<bool>,
}

/// What `todo_write` returns.
#[derive(Debug, Serialize, JsonSchema)]
pub(super) struct TodoList {
    todos: Vec<Todo>,
    /// The list rendered for a person.
    summary: String,
}

/// HTTP method.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "UPPERCASE")]
pub(super) enum Method {
    Get,
    Post,
}

/// Arguments of `http_request`.
#[derive(Debug, Deserialize, JsonSchema)]
pub(super) struct HttpRequestParams {
    /// Absolute http(s) URL.
    #[schemars(url)]
    url: String,
    #[serde(default = "default_method")]
    method: Method,
    /// Extra request headers.
    #[serde(default)]
    headers: HashMap<String, String>,
    /// JSON body to send.
    body: Option<serde_json::Value>,
    /// Seconds before giving up.
    #[schemars(range(min = 0.1, max = 120.0))]
    timeout_secs: Option<f64>,
}

fn default_method() -> Method {
    Method::Get
}

/// A `read_file`-like spec: optional fields, defaults, a documented enum, a range.
pub(super) fn read_file_spec() -> ToolSpec {
    let mut spec = ToolSpec::describe(
        "read_file",
        "Reads a text file and returns numbered lines.\n\nLong files are cut at `limit` lines; the total is always stated.",
    )
    .category(Category::Files)
    .permission("fs:read")
    .hints(Hints::read_only())
    .key_argument("path")
    .example(
        "Read the first 20 lines",
        json!({"path": "src/main.rs", "limit": 20}),
        json!({"content": "fn main() {}", "total_lines": 1, "truncated": false, "content_hash": "ab12"}),
    );
    spec.input_schema = schema_for::<ReadFileParams>();
    spec.output_schema = Some(schema_for::<ReadFileOutput>());
    spec
}

/// A nested spec: an array of structs holding enums, an optional enum and an
/// optional struct.
pub(super) fn todo_write_spec() -> ToolSpec {
    let mut spec = ToolSpec::describe("todo_write", "Replaces the todo list.")
        .category(Category::Planning)
        .hints(Hints {
            read_only: false,
            destructive: false,
            idempotent: true,
            open_world: false,
            concurrency_safe: false,
        });
    spec.input_schema = schema_for::<TodoWriteParams>();
    spec.output_schema = Some(schema_for::<TodoList>());
    spec
}

/// A spec with a map and a free-form value, and a non-object output.
pub(super) fn http_request_spec() -> ToolSpec {
    let mut spec = ToolSpec::describe("http_request", "Sends an HTTP request.")
        .category(Category::Web)
        .permission("net:http")
        .hints(Hints {
            read_only: false,
            destructive: true,
            idempotent: false,
            open_world: true,
            concurrency_safe: true,
        });
    spec.input_schema = schema_for::<HttpRequestParams>();
    spec.output_schema = Some(schema_for::<String>());
    spec
}

/// The three samples, in a fixed order.
pub(super) fn sample_specs() -> Vec<ToolSpec> {
    vec![read_file_spec(), todo_write_spec(), http_request_spec()]
}

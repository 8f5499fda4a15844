//! What a tool is, as data: [`ToolSpec`] and its parts.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The family a tool belongs to; used to list and filter tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Category {
    /// Reading and changing files.
    Files,
    /// Searching file contents and names.
    Search,
    /// Running commands.
    Shell,
    /// Fetching and searching the web.
    Web,
    /// Thinking and todo lists: tools that organise the agent's own work.
    Planning,
    /// Subagents and skills.
    Agent,
    /// Scheduled jobs.
    Schedule,
    /// Messages to channels.
    Message,
    /// Planner projects.
    Project,
    /// Planner goals.
    Goal,
    /// Planner tasks.
    Task,
    /// Planner reviews.
    Review,
    /// The runtime itself (spilled output, diagnostics).
    System,
    /// The tools of other MCP servers.
    Remote,
}

impl Category {
    /// Every category, in display order.
    pub const ALL: [Category; 14] = [
        Category::Files,
        Category::Search,
        Category::Shell,
        Category::Web,
        Category::Planning,
        Category::Agent,
        Category::Schedule,
        Category::Message,
        Category::Project,
        Category::Goal,
        Category::Task,
        Category::Review,
        Category::System,
        Category::Remote,
    ];

    /// The snake_case name used in schemas, the CLI and config files.
    pub fn as_str(self) -> &'static str {
        match self {
            Category::Files => "files",
            Category::Search => "search",
            Category::Shell => "shell",
            Category::Web => "web",
            Category::Planning => "planning",
            Category::Agent => "agent",
            Category::Schedule => "schedule",
            Category::Message => "message",
            Category::Project => "project",
            Category::Goal => "goal",
            Category::Task => "task",
            Category::Review => "review",
            Category::System => "system",
            Category::Remote => "remote",
        }
    }

    /// Parses a category name as written by [`Category::as_str`].
    pub fn parse(s: &str) -> Option<Category> {
        Category::ALL.into_iter().find(|c| c.as_str() == s)
    }
}

impl fmt::Display for Category {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Behaviour hints. They map one to one onto MCP tool annotations
/// (`readOnlyHint`, `destructiveHint`, `idempotentHint`, `openWorldHint`);
/// `concurrency_safe` tells the registry the tool may run beside others in a batch.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hints {
    /// The tool does not change its environment.
    pub read_only: bool,
    /// The tool may destroy or overwrite data.
    pub destructive: bool,
    /// Calling it twice with the same arguments has no further effect.
    pub idempotent: bool,
    /// The tool talks to an open world (the web, other people).
    pub open_world: bool,
    /// The tool may run at the same time as other concurrency-safe tools.
    pub concurrency_safe: bool,
}

impl Hints {
    /// Hints for a tool that only reads: read-only, idempotent, concurrency-safe.
    pub const fn read_only() -> Hints {
        Hints {
            read_only: true,
            destructive: false,
            idempotent: true,
            open_world: false,
            concurrency_safe: true,
        }
    }

    /// Hints for a tool that changes its environment, adds rather than overwrites,
    /// may have a further effect when called again, and runs alone: every hint
    /// off, as [`Hints::default`]. The builders below turn hints on.
    ///
    /// ```
    /// use toolbelt_core::Hints;
    ///
    /// assert_eq!(Hints::writes(), Hints::default());
    /// let patch = Hints::writes().destructive();
    /// assert!(patch.destructive && !patch.idempotent && !patch.read_only);
    /// ```
    pub const fn writes() -> Hints {
        Hints {
            read_only: false,
            destructive: false,
            idempotent: false,
            open_world: false,
            concurrency_safe: false,
        }
    }

    /// These hints, and the tool may destroy or overwrite data.
    #[must_use]
    pub const fn destructive(self) -> Hints {
        Hints {
            destructive: true,
            ..self
        }
    }

    /// These hints, and calling the tool twice with the same arguments has no
    /// further effect.
    #[must_use]
    pub const fn idempotent(self) -> Hints {
        Hints {
            idempotent: true,
            ..self
        }
    }

    /// These hints, but calling the tool again has a further effect (a read that
    /// consumes what it returns).
    #[must_use]
    pub const fn not_idempotent(self) -> Hints {
        Hints {
            idempotent: false,
            ..self
        }
    }

    /// These hints, and the tool talks to an open world (the web, other people).
    #[must_use]
    pub const fn open_world(self) -> Hints {
        Hints {
            open_world: true,
            ..self
        }
    }

    /// These hints, and the tool may run at the same time as other
    /// concurrency-safe tools.
    #[must_use]
    pub const fn concurrency_safe(self) -> Hints {
        Hints {
            concurrency_safe: true,
            ..self
        }
    }
}

/// One worked example of a call: the arguments and what comes back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Example {
    /// What the example shows.
    pub description: String,
    /// The arguments.
    pub input: Value,
    /// The `data` part of the result.
    pub output: Value,
}

/// The longest tool description, in characters, that every client passes on
/// whole: Claude Code cuts longer ones to this length and appends
/// `… [truncated]`. Descriptions that list things (skills, channels) stop
/// listing before it.
pub const MAX_DESCRIPTION_CHARS: usize = 2048;

/// How much of each tool's description a model is shown.
///
/// Small models (a 1.5B model on a laptop) read every token of the tool
/// definitions with every request and drown in long ones: [`Descriptions::Short`]
/// keeps each description's first paragraph and each argument's first sentence,
/// no examples, and of a tool's optional arguments only those it marks for them
/// ([`ToolSpec::short_arguments`]): offered every one, a small model fills in
/// every one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Descriptions {
    /// The whole descriptions.
    #[default]
    Full,
    /// The first paragraph of each description, the first sentence of each
    /// argument's, the required and the short arguments.
    Short,
}

impl Descriptions {
    /// `full` or `short`.
    pub fn as_str(self) -> &'static str {
        match self {
            Descriptions::Full => "full",
            Descriptions::Short => "short",
        }
    }

    /// Parses `full` or `short`.
    pub fn parse(s: &str) -> Option<Descriptions> {
        match s.trim().to_ascii_lowercase().as_str() {
            "full" => Some(Descriptions::Full),
            "short" => Some(Descriptions::Short),
            _ => None,
        }
    }
}

/// The longest a short description grows, in characters, when its first paragraph
/// is longer: it is cut at the last sentence end before.
const SHORT_DESCRIPTION_CHARS: usize = 400;

/// `text`'s first paragraph, cut to whole sentences within
/// 400 characters when it is longer.
pub fn short_description(text: &str) -> String {
    let text = text.trim();
    let first = text.split("\n\n").next().unwrap_or(text).trim();
    if first.chars().count() <= SHORT_DESCRIPTION_CHARS {
        return first.to_string();
    }
    let mut cut = 0;
    for (i, c) in first.char_indices() {
        if i > SHORT_DESCRIPTION_CHARS {
            break;
        }
        let next = first[i + c.len_utf8()..].chars().next();
        if matches!(c, '.' | ':' | ';') && next.is_none_or(char::is_whitespace) {
            cut = i + c.len_utf8();
        }
    }
    if cut == 0 {
        return first.chars().take(SHORT_DESCRIPTION_CHARS).collect();
    }
    let kept = first[..cut].trim_end_matches([':', ';']);
    if kept.ends_with('.') {
        kept.to_string()
    } else {
        format!("{kept}.")
    }
}

/// `text`'s first sentence (to the first `. ` or line end).
pub fn first_sentence(text: &str) -> String {
    let text = text.trim();
    let line = text.lines().next().unwrap_or(text);
    let mut end = line.len();
    for (i, c) in line.char_indices() {
        let next = line[i + c.len_utf8()..].chars().next();
        if c == '.' && next.is_some_and(char::is_whitespace) {
            end = i + 1;
            break;
        }
    }
    line[..end].trim().to_string()
}

/// What the argument that permission rules match names (see
/// [`ToolSpec::permission_argument`] and [`ToolSpec::key_argument`]): the tool
/// declares it, and permission rules are read by it (`tool(git status:*)` is a
/// command prefix for a [`Subject::Command`] tool, a path pattern for a
/// [`Subject::Path`] one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Subject {
    /// A path in the workspace (or beyond it).
    Path,
    /// A shell command line.
    Command,
    /// A URL on the network.
    Url,
}

/// The full description of a tool: everything a model, an MCP client or a UI needs.
///
/// Specs are plain data. The canonical `name` is snake_case; name profiles change the
/// name that is shown to a model without touching the spec.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// Canonical name, snake_case.
    pub name: String,
    /// Human title.
    pub title: String,
    /// Description for the model (usually a `<tool>.md` file included at compile time).
    pub description: String,
    /// Family of the tool.
    pub category: Category,
    /// Permissions the tool needs, such as `fs:read` or `shell:exec`.
    pub permissions: Vec<String>,
    /// Worked examples.
    pub examples: Vec<Example>,
    /// JSON Schema (2020-12) of the arguments.
    pub input_schema: Value,
    /// JSON Schema (2020-12) of `data` in a successful envelope.
    pub output_schema: Option<Value>,
    /// Behaviour hints.
    pub hints: Hints,
    /// The argument a UI shows for a call (`grep: "fn main"`), if any.
    pub key_argument: Option<String>,
    /// The argument permission rules match (`read_file(./secrets/**)`), when it is
    /// not the key argument: grep shows its pattern but is permitted by its path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission_argument: Option<String>,
    /// What that argument names, when permission rules should read it as a path,
    /// a command or a URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<Subject>,
    /// The tool enforces its own time limit (a `timeout` argument, up to
    /// [`MAX_TIMEOUT_MS`](crate::MAX_TIMEOUT_MS)) and stops its work
    /// cleanly: the registry waits for it up to that maximum, not the session's
    /// default timeout.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub own_timeout: bool,
    /// The tool reads back the outputs the output budget saved: the registry
    /// names it in the markers of every truncated output.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reads_saved_output: bool,
    /// The optional arguments [`Descriptions::Short`] offers, beside the required
    /// ones: a small model given every optional argument fills in every one
    /// (a made-up `expected_hash`, an empty `path`). `None`: all of them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub short_arguments: Option<Vec<String>>,
}

impl ToolSpec {
    /// This spec as [`Descriptions::Short`] shows it: the description's first
    /// paragraph, each argument's first sentence, no examples, and of the optional
    /// arguments only the [short ones](ToolSpec::short_arguments) where the tool
    /// names them. What a call may carry is not changed: an argument left out here
    /// is still accepted.
    pub fn shortened(&self) -> ToolSpec {
        fn walk(v: &mut Value) {
            match v {
                Value::Object(map) => {
                    for (k, v) in map.iter_mut() {
                        match v {
                            Value::String(text) if k == "description" => {
                                *text = first_sentence(text);
                            }
                            _ => walk(v),
                        }
                    }
                }
                Value::Array(items) => items.iter_mut().for_each(walk),
                _ => {}
            }
        }
        let mut spec = self.clone();
        spec.description = short_description(&self.description);
        if let Some(keep) = &self.short_arguments {
            keep_arguments(&mut spec.input_schema, keep);
        }
        walk(&mut spec.input_schema);
        spec.examples.clear();
        spec
    }
}

impl ToolSpec {
    /// A spec with the given name, description and input schema; everything else empty.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        input_schema: Value,
    ) -> ToolSpec {
        let name = name.into();
        ToolSpec {
            title: default_title(&name),
            name,
            description: description.into(),
            category: Category::System,
            permissions: Vec::new(),
            examples: Vec::new(),
            input_schema,
            output_schema: None,
            hints: Hints::default(),
            key_argument: None,
            permission_argument: None,
            subject: None,
            own_timeout: false,
            reads_saved_output: false,
            short_arguments: None,
        }
    }

    /// A spec with an empty input schema, for typed tools (whose schemas are derived).
    pub fn describe(name: impl Into<String>, description: impl Into<String>) -> ToolSpec {
        ToolSpec::new(name, description, serde_json::json!({"type": "object"}))
    }

    /// Sets the title.
    pub fn title(mut self, title: impl Into<String>) -> ToolSpec {
        self.title = title.into();
        self
    }

    /// Sets the category.
    pub fn category(mut self, category: Category) -> ToolSpec {
        self.category = category;
        self
    }

    /// Adds a permission.
    pub fn permission(mut self, permission: impl Into<String>) -> ToolSpec {
        self.permissions.push(permission.into());
        self
    }

    /// Adds an example.
    pub fn example(
        mut self,
        description: impl Into<String>,
        input: Value,
        output: Value,
    ) -> ToolSpec {
        self.examples.push(Example {
            description: description.into(),
            input,
            output,
        });
        self
    }

    /// Sets the output schema.
    pub fn output_schema(mut self, schema: Value) -> ToolSpec {
        self.output_schema = Some(schema);
        self
    }

    /// Sets the hints.
    pub fn hints(mut self, hints: Hints) -> ToolSpec {
        self.hints = hints;
        self
    }

    /// Says the tool enforces its own time limit (see [`ToolSpec::own_timeout`]).
    pub fn own_timeout(mut self) -> ToolSpec {
        self.own_timeout = true;
        self
    }

    /// The optional arguments offered with short descriptions (for small models),
    /// beside the required ones; the others are left out of that schema.
    pub fn short_arguments(mut self, names: &[&str]) -> ToolSpec {
        self.short_arguments = Some(names.iter().map(|n| (*n).to_string()).collect());
        self
    }

    /// Names the argument a UI shows for a call.
    pub fn key_argument(mut self, field: impl Into<String>) -> ToolSpec {
        self.key_argument = Some(field.into());
        self
    }

    /// Names the argument permission rules match, when it is not the key argument.
    pub fn permission_argument(mut self, field: impl Into<String>) -> ToolSpec {
        self.permission_argument = Some(field.into());
        self
    }

    /// Declares that the tool reads back the outputs the output budget saved.
    pub fn reads_saved_output(mut self) -> ToolSpec {
        self.reads_saved_output = true;
        self
    }

    /// Declares what the argument permission rules match names.
    pub fn subject(mut self, subject: Subject) -> ToolSpec {
        self.subject = Some(subject);
        self
    }

    /// The first line of the description: a one-line summary for listings.
    pub fn summary(&self) -> &str {
        self.description
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty() && !l.starts_with('#'))
            .unwrap_or("")
    }
}

/// `read_file` -> `Read File`.
pub(crate) fn default_title(name: &str) -> String {
    name.split(['_', '-'])
        .filter(|w| !w.is_empty())
        .map(|w| {
            let mut c = w.chars();
            match c.next() {
                Some(first) => first.to_uppercase().chain(c).collect::<String>(),
                None => String::new(),
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Leaves out of the object schema `schema` the properties that are neither
/// required nor in `keep`.
fn keep_arguments(schema: &mut Value, keep: &[String]) {
    let required: Vec<String> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| {
            r.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    if let Some(Value::Object(props)) = schema.get_mut("properties") {
        props.retain(|name, _| required.contains(name) || keep.contains(name));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_descriptions_keep_the_first_paragraph_and_sentences() {
        assert_eq!(
            short_description("Reads a file. Returns lines.\n\nMore detail here."),
            "Reads a file. Returns lines."
        );
        let long = format!(
            "{}.{}",
            "word ".repeat(60).trim_end(),
            " Another sentence goes on.".repeat(10)
        );
        let short = short_description(&long);
        assert!(short.ends_with("goes on."), "{short}");
        assert!(short.chars().count() <= SHORT_DESCRIPTION_CHARS);
        assert!(short.chars().count() > 300, "{short}");
        assert_eq!(
            first_sentence("The path. Relative to the root."),
            "The path."
        );
        assert_eq!(
            first_sentence("Version 1.2 of it\nmore"),
            "Version 1.2 of it"
        );
        let mut spec = ToolSpec::describe("t", "Does t.\n\nDetails.");
        spec.input_schema = serde_json::json!({"type": "object", "properties": {
            "a": {"type": "string", "description": "First. Second."}}});
        let short = spec.shortened();
        assert_eq!(short.description, "Does t.");
        assert_eq!(
            short.input_schema["properties"]["a"]["description"],
            "First."
        );
    }

    #[test]
    fn short_specs_offer_the_required_and_the_short_arguments() {
        let mut spec = ToolSpec::describe("edit", "Edits.").short_arguments(&["all"]);
        spec.input_schema = serde_json::json!({"type": "object", "required": ["path"], "properties": {
            "path": {"type": "string"}, "all": {"type": "boolean"}, "hash": {"type": "string"}}});
        let short = spec.shortened();
        let names: Vec<&String> = short.input_schema["properties"]
            .as_object()
            .unwrap()
            .keys()
            .collect();
        assert_eq!(names, ["all", "path"]);
        assert_eq!(short.input_schema["required"], serde_json::json!(["path"]));
        // The full spec keeps every argument; a tool that names none keeps them too.
        assert_eq!(
            spec.input_schema["properties"].as_object().unwrap().len(),
            3
        );
        spec.short_arguments = None;
        assert_eq!(
            spec.shortened().input_schema["properties"]
                .as_object()
                .unwrap()
                .len(),
            3
        );
    }

    #[test]
    fn title_from_name() {
        assert_eq!(default_title("read_file"), "Read File");
        assert_eq!(default_title("think"), "Think");
    }

    #[test]
    fn category_round_trip() {
        for c in Category::ALL {
            assert_eq!(Category::parse(c.as_str()), Some(c));
        }
    }
}

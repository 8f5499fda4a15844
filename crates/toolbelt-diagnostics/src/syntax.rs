//! The always-on syntax check: tree-sitter parses the text in-process and its
//! `ERROR` and `MISSING` nodes become [`Diagnostic`]s.
//!
//! [`Lang`] says which grammar a file gets ([`Lang::for_path`]); [`check`] gives the
//! syntax errors of a text. It is meant to run on every edit, so it keeps one parser
//! per language per thread and bounds its work: text over
//! [`MAX_SYNTAX_INPUT_BYTES`] is not checked, a parse stops after
//! [`SYNTAX_TIME_LIMIT_MS`], and at most [`MAX_SYNTAX_ERRORS`] problems are reported.
//!
//! ```
//! use std::path::Path;
//! use toolbelt_diagnostics::syntax::{check, Lang};
//!
//! let lang = Lang::for_path(Path::new("src/app.py")).unwrap();
//! let problems = check(lang, "src/app.py", "def f(:\n    pass\n");
//! assert_eq!(problems[0].line, 1);
//! assert!(check(lang, "src/app.py", "def f():\n    pass\n").is_empty());
//! ```

use std::borrow::Cow;
use std::cell::RefCell;
use std::ops::ControlFlow;
use std::path::Path;
use std::time::{Duration, Instant};

use toolbelt_core::diagnostics::{Diagnostic, Position, Severity};
use tree_sitter::{Language, Node, ParseOptions, ParseState, Parser, Point, Tree, TreeCursor};

/// The most problems [`check`] reports for one file; the rest are dropped.
pub const MAX_SYNTAX_ERRORS: usize = 50;

/// Text longer than this (in bytes) is not checked: [`check`] returns no problems.
pub const MAX_SYNTAX_INPUT_BYTES: usize = 4 * 1024 * 1024;

/// How long one parse may run before it is given up (no problems reported).
pub const SYNTAX_TIME_LIMIT_MS: u64 = 200;

/// The most characters of erroneous text quoted in a message.
const MAX_QUOTED_CHARS: usize = 40;

/// The `source` of every diagnostic made here.
const SOURCE: &str = "syntax";

/// The code of an unexpected region (a tree-sitter `ERROR` node).
const CODE_ERROR: &str = "syntax";

/// The code of an expected token that is not there (a tree-sitter `MISSING` node).
const CODE_MISSING: &str = "syntax";

/// The UTF-8 byte order mark, which no grammar expects.
const BOM: &str = "\u{feff}";

/// A language the syntax check knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Lang {
    /// Rust (`.rs`).
    Rust,
    /// Python (`.py`, `.pyi`, `.pyw`).
    Python,
    /// JavaScript, JSX included (`.js`, `.mjs`, `.cjs`, `.jsx`).
    JavaScript,
    /// TypeScript without JSX (`.ts`, `.mts`, `.cts`).
    TypeScript,
    /// TypeScript with JSX (`.tsx`); configured as `typescript`.
    Tsx,
    /// Go (`.go`).
    Go,
    /// JSON (`.json`); the grammar accepts `//` and `/* */` comments.
    Json,
    /// TOML (`.toml`, `Cargo.lock` and a few other lock files).
    Toml,
    /// YAML (`.yaml`, `.yml`).
    Yaml,
    /// Bash and POSIX shell (`.sh`, `.bash`, `.bashrc`).
    Bash,
}

/// Files chosen by their whole name rather than an extension.
const FILE_NAMES: &[(&str, Lang)] = &[
    ("Cargo.lock", Lang::Toml),
    ("uv.lock", Lang::Toml),
    ("poetry.lock", Lang::Toml),
    ("Pipfile", Lang::Toml),
    (".bashrc", Lang::Bash),
    (".bash_profile", Lang::Bash),
    (".bash_aliases", Lang::Bash),
    (".bash_logout", Lang::Bash),
];

impl Lang {
    /// Every language, in declaration order.
    pub const ALL: [Lang; 10] = [
        Lang::Rust,
        Lang::Python,
        Lang::JavaScript,
        Lang::TypeScript,
        Lang::Tsx,
        Lang::Go,
        Lang::Json,
        Lang::Toml,
        Lang::Yaml,
        Lang::Bash,
    ];

    /// The language of a file, by its extension (case-insensitive: `.PY` is Python)
    /// or, for a few files, by its whole name (`Cargo.lock` is TOML, `.bashrc` is
    /// Bash). A file with no known name or extension is not guessed: `None`.
    pub fn for_path(path: &Path) -> Option<Lang> {
        let name = path.file_name()?.to_str()?;
        if let Some((_, lang)) = FILE_NAMES.iter().find(|(known, _)| *known == name) {
            return Some(*lang);
        }
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        Lang::ALL
            .into_iter()
            .find(|lang| lang.extensions().contains(&ext.as_str()))
    }

    /// The configuration key people use for it: `rust`, `python`, `javascript`,
    /// `typescript` (for [`Lang::Tsx`] too), `go`, `json`, `toml`, `yaml`, `bash`.
    pub fn name(self) -> &'static str {
        match self {
            Lang::Rust => "rust",
            Lang::Python => "python",
            Lang::JavaScript => "javascript",
            Lang::TypeScript | Lang::Tsx => "typescript",
            Lang::Go => "go",
            Lang::Json => "json",
            Lang::Toml => "toml",
            Lang::Yaml => "yaml",
            Lang::Bash => "bash",
        }
    }

    /// The extensions (lower case, without the dot) it is chosen by. [`Lang::Tsx`]
    /// has only `tsx`: the extensions of the key `typescript` are those of
    /// [`Lang::TypeScript`] and [`Lang::Tsx`] together.
    pub fn extensions(self) -> &'static [&'static str] {
        match self {
            Lang::Rust => &["rs"],
            Lang::Python => &["py", "pyi", "pyw"],
            Lang::JavaScript => &["js", "mjs", "cjs", "jsx"],
            Lang::TypeScript => &["ts", "mts", "cts"],
            Lang::Tsx => &["tsx"],
            Lang::Go => &["go"],
            Lang::Json => &["json"],
            Lang::Toml => &["toml"],
            Lang::Yaml => &["yaml", "yml"],
            Lang::Bash => &["sh", "bash"],
        }
    }

    /// The language of a configuration key (the reverse of [`Lang::name`], ignoring
    /// ASCII case); `typescript` gives [`Lang::TypeScript`].
    pub fn by_name(name: &str) -> Option<Lang> {
        Lang::ALL
            .into_iter()
            .find(|lang| lang.name().eq_ignore_ascii_case(name))
    }

    /// The tree-sitter grammar.
    fn language(self) -> Language {
        match self {
            Lang::Rust => tree_sitter_rust::LANGUAGE.into(),
            Lang::Python => tree_sitter_python::LANGUAGE.into(),
            Lang::JavaScript => tree_sitter_javascript::LANGUAGE.into(),
            Lang::TypeScript => tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
            Lang::Tsx => tree_sitter_typescript::LANGUAGE_TSX.into(),
            Lang::Go => tree_sitter_go::LANGUAGE.into(),
            Lang::Json => tree_sitter_json::LANGUAGE.into(),
            Lang::Toml => tree_sitter_toml_ng::LANGUAGE.into(),
            Lang::Yaml => tree_sitter_yaml::LANGUAGE.into(),
            Lang::Bash => tree_sitter_bash::LANGUAGE.into(),
        }
    }

    /// Its slot in the per-thread parser table.
    fn index(self) -> usize {
        self as usize
    }
}

/// The syntax errors of `text`, in document order: each tree-sitter `ERROR` node
/// (code `syntax-error`, "unexpected `…`" quoting the start of its text; not
/// looked into, so one problem per error region) and `MISSING` node (code
/// `missing`, "missing `)`"). `shown` is each problem's path; all are errors from
/// the source `syntax`, with 1-based lines and character columns.
///
/// At most [`MAX_SYNTAX_ERRORS`] are returned. The work is bounded: text over
/// [`MAX_SYNTAX_INPUT_BYTES`], a parse running past [`SYNTAX_TIME_LIMIT_MS`] and a
/// grammar that does not load all give an empty list (nothing known, not "no
/// errors" — the caller cannot tell these apart, which is fine for a check that
/// only ever adds problems).
pub fn check(lang: Lang, shown: &str, text: &str) -> Vec<Diagnostic> {
    if text.len() > MAX_SYNTAX_INPUT_BYTES {
        return Vec::new();
    }
    let body = text.strip_prefix(BOM).unwrap_or(text);
    let offset = text.len() - body.len();
    let limit = Duration::from_millis(SYNTAX_TIME_LIMIT_MS);
    let Some(tree) = parse(lang, &parser_input(lang, body), limit) else {
        return Vec::new();
    };
    let mut found = Collector {
        text,
        offset,
        shown,
        out: Vec::new(),
    };
    found.walk(&mut tree.walk());
    found.out
}

/// What the parser reads for `lang`: Bash's text with every non-ASCII character
/// replaced by as many `@` as it has bytes, so byte offsets still index `body`.
///
/// tree-sitter-bash's scanner passes a character after `{` to C's `isdigit`, which
/// reads outside its table for a code point above 255 and can crash the process.
/// In Bash a non-ASCII character is only ever part of a word, as `@` is, so errors
/// are found in the same places.
fn parser_input(lang: Lang, body: &str) -> Cow<'_, str> {
    if lang != Lang::Bash || body.is_ascii() {
        return Cow::Borrowed(body);
    }
    let mut shadow = String::with_capacity(body.len());
    for c in body.chars() {
        if c.is_ascii() {
            shadow.push(c);
        } else {
            shadow.extend(std::iter::repeat_n('@', c.len_utf8()));
        }
    }
    Cow::Owned(shadow)
}

thread_local! {
    /// One parser per language, made on first use on this thread.
    static PARSERS: RefCell<[Option<Parser>; Lang::ALL.len()]> =
        const { RefCell::new([const { None }; Lang::ALL.len()]) };
}

/// The tree of `text`, parsed with this thread's parser for `lang`; `None` when the
/// grammar does not load or the parse takes longer than `limit`.
fn parse(lang: Lang, text: &str, limit: Duration) -> Option<Tree> {
    PARSERS.with(|parsers| {
        let mut parsers = parsers.try_borrow_mut().ok()?;
        let slot = parsers.get_mut(lang.index())?;
        if slot.is_none() {
            *slot = Some(new_parser(lang)?);
        }
        let parser = slot.as_mut()?;
        let tree = parse_in_time(parser, text, limit);
        if tree.is_none() {
            // A cancelled parse resumes on the next call unless reset.
            parser.reset();
        }
        tree
    })
}

/// A parser set to `lang`'s grammar.
fn new_parser(lang: Lang) -> Option<Parser> {
    let mut parser = Parser::new();
    match parser.set_language(&lang.language()) {
        Ok(()) => Some(parser),
        Err(error) => {
            tracing::warn!(lang = lang.name(), %error, "a syntax grammar did not load");
            None
        }
    }
}

/// Parses `text`, giving up after `limit`.
fn parse_in_time(parser: &mut Parser, text: &str, limit: Duration) -> Option<Tree> {
    let bytes = text.as_bytes();
    let deadline = Instant::now() + limit;
    let mut in_time = |_: &ParseState| {
        if Instant::now() < deadline {
            ControlFlow::Continue(())
        } else {
            ControlFlow::Break(())
        }
    };
    let options = ParseOptions::new().progress_callback(&mut in_time);
    parser.parse_with_options(
        &mut |at, _| bytes.get(at..).unwrap_or_default(),
        None,
        Some(options),
    )
}

/// Gathers the problems of a tree whose text is `text[offset..]`.
struct Collector<'a> {
    /// The whole text checked (a byte order mark included).
    text: &'a str,
    /// Where the parsed text starts in `text` (past a byte order mark).
    offset: usize,
    /// The path put in each problem.
    shown: &'a str,
    /// The problems so far.
    out: Vec<Diagnostic>,
}

impl Collector<'_> {
    /// Visits the tree in document order, entering only subtrees that hold an
    /// error and never an `ERROR` node itself, until the cap is reached.
    fn walk(&mut self, cursor: &mut TreeCursor<'_>) {
        while self.out.len() < MAX_SYNTAX_ERRORS {
            let node = cursor.node();
            if node.is_error() || node.is_missing() {
                self.report(node);
            } else if node.has_error() && cursor.goto_first_child() {
                continue;
            }
            while !cursor.goto_next_sibling() {
                if !cursor.goto_parent() {
                    return;
                }
            }
        }
    }

    /// Adds the problem `node` stands for.
    fn report(&mut self, node: Node<'_>) {
        let (code, message, start, end) = if node.is_missing() {
            let at = self.position(node.start_byte(), node.start_position());
            (CODE_MISSING, missing_message(node), at, at)
        } else {
            let from = unexpected_start(node);
            let start = self.position(from.start_byte(), from.start_position());
            let end = self.position(node.end_byte(), node.end_position());
            let message = self.unexpected_message(from.start_byte(), node.end_byte());
            (CODE_ERROR, message, start, end)
        };
        self.out.push(Diagnostic {
            path: self.shown.to_owned(),
            line: start.line,
            col: start.col,
            end,
            severity: Severity::Error,
            code: Some(code.to_owned()),
            source: SOURCE.to_owned(),
            message,
            new: false,
        });
    }

    /// "unexpected `…`" with the start of the first line of the parsed text's
    /// bytes `from..to`, or "syntax error" when that is blank.
    fn unexpected_message(&self, from: usize, to: usize) -> String {
        let text = self
            .text
            .get(self.offset + from..self.offset + to)
            .unwrap_or_default();
        let line = text.lines().next().unwrap_or_default().trim();
        if line.is_empty() {
            return "syntax error".to_owned();
        }
        format!("unexpected `{}`", quote(line))
    }

    /// The 1-based line and character column of the parsed text's byte `at`,
    /// which tree-sitter places at `point` (a row and a byte column).
    fn position(&self, at: usize, point: Point) -> Position {
        let at = self.offset + at;
        let line_start = at.saturating_sub(point.column);
        let col = chars_in(self.text.as_bytes().get(line_start..at).unwrap_or_default()) + 1;
        Position {
            line: to_u32(point.row + 1),
            col: to_u32(col),
        }
    }
}

/// Where the trouble in the `ERROR` node `error` starts: past the whole lines of
/// well-formed code it swallowed. An unclosed `{` in Rust makes the whole file one
/// `ERROR` whose first children are the complete items before the broken one; the
/// first child that is not such a complete construct (a bare token, a part with an
/// error, or anything sharing its last line with what follows) is where it starts.
fn unexpected_start(error: Node<'_>) -> Node<'_> {
    let mut cursor = error.walk();
    let mut children = error.children(&mut cursor).peekable();
    while let Some(child) = children.next() {
        let whole_lines = children
            .peek()
            .is_some_and(|next| next.start_position().row > child.end_position().row);
        let complete = !child.has_error()
            && (child.is_extra() || (child.is_named() && child.child_count() > 0));
        if !(whole_lines && complete) {
            return child;
        }
    }
    error
}

/// "missing `)`" for a missing token, "missing identifier" for a missing named
/// node (hidden names such as `_automatic_semicolon` lose their underscores).
fn missing_message(node: Node<'_>) -> String {
    let kind = node.kind();
    if node.is_named() || kind.starts_with('_') {
        let words = kind.trim_start_matches('_').replace('_', " ");
        return format!("missing {words}");
    }
    format!("missing `{kind}`")
}

/// `text` cut to [`MAX_QUOTED_CHARS`] characters, with `…` when cut.
fn quote(text: &str) -> Cow<'_, str> {
    match text.char_indices().nth(MAX_QUOTED_CHARS) {
        Some((cut, _)) => Cow::Owned(format!("{}…", &text[..cut])),
        None => Cow::Borrowed(text),
    }
}

/// The number of UTF-8 characters in `bytes` (continuation bytes not counted).
fn chars_in(bytes: &[u8]) -> usize {
    bytes.iter().filter(|&&b| b & 0xC0 != 0x80).count()
}

/// `n` as a `u32`, saturating (text is capped far below `u32::MAX` anyway).
fn to_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests;

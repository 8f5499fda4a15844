//! Splitting a shell command line into the simple commands it runs, with a real
//! bash parser (tree-sitter-bash), so that a permission rule can check each of them.
//!
//! [`simple_commands`] finds every simple command anywhere in a command line: in
//! lists (`&&`, `||`, `;`, `&`, newlines), pipelines, subshells `( )`, groups `{ }`,
//! command substitutions `$(...)` and backticks (also inside double quotes, inside
//! arguments, inside `${x:-...}` and in the target of a redirection), process
//! substitutions `<(...)` and `>(...)`, the conditions and bodies of `if`, `while`,
//! `until`, `for` and `case`, function bodies, and heredoc bodies that the shell
//! expands.
//!
//! Each [`SimpleCommand`] is its words as written, joined by one space:
//!
//! - **Quotes stay as written** in the arguments: `echo "a && b"` is the one command
//!   `echo "a && b"`, which a rule `bash(echo:*)` covers and an exact rule
//!   `bash(echo "a && b")` matches. Escapes stay too (`a\ b`).
//! - **The command name is unquoted**: `"rm" -rf x` and `\rm -rf x` are `rm -rf x`,
//!   so quoting cannot slip a command past a rule. A name that is not a literal
//!   word (`$CMD x`, `$(which rm) x`) cannot be checked: the line is refused.
//! - **Redirections are not words**: `make all > out 2>&1` is `make all` (a
//!   substitution in a redirection target is still found).
//! - **Variable assignments** before a command stay in its text (`FOO=1 make`), since
//!   they can change what the command does (`PATH`, `LD_PRELOAD`, `GIT_PAGER`);
//!   [`SimpleCommand::command`] gives the command without them (`make`). An
//!   assignment on its own (`X=1`, `X=$(rm x)`) is a simple command of its own, as
//!   are `export`, `declare`, `local`, `readonly`, `unset` and their arguments.
//! - **Tests and arithmetic** (`[ -f x ]`, `[[ $a == b ]]`, `(( i++ ))`) are simple
//!   commands of their own, named `[`, `[[` and `((`.
//! - **Comments** are dropped; an empty line has no commands.
//!
//! Whatever the parser cannot read (an unterminated quote, a missing `fi`), and any
//! construct this module does not know, is an [`UnparsedCommand`]: the caller
//! should then ask rather than allow.
//!
//! ```
//! use toolbelt_policy::shell::simple_commands;
//!
//! let commands = simple_commands("git status && echo \"$(rm -rf x)\" | wc -l").unwrap();
//! let texts: Vec<&str> = commands.iter().map(|c| c.text()).collect();
//! assert_eq!(texts, ["git status", "echo \"$(rm -rf x)\"", "rm -rf x", "wc -l"]);
//! assert!(simple_commands("echo 'unterminated").is_err());
//! ```
//!
//! # Security
//!
//! A simple command is judged by its words, not by what the program does with them:
//! `env rm x`, `xargs rm`, `find -exec rm`, `bash -c 'rm x'` and `eval 'rm x'` are
//! commands named `env`, `xargs`, `find`, `bash` and `eval`. Rules that allow such
//! programs allow what they run.

use std::sync::Arc;

use tree_sitter::{LanguageError, Node, Parser, Tree};

/// How deep the syntax tree may nest before the line is refused (a guard for the
/// recursion, far beyond any real command).
const MAX_DEPTH: usize = 200;

/// One simple command: its name and arguments (and the variable assignments before
/// it), as the text a permission rule is compared against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimpleCommand {
    text: String,
    command_start: usize,
}

impl SimpleCommand {
    /// The command with its prefix assignments: `FOO=1 make all`.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The command without its prefix assignments: `make all` (the whole text when
    /// there are none).
    pub fn command(&self) -> &str {
        self.text.get(self.command_start..).unwrap_or(&self.text)
    }

    fn from_words(words: &[String], command_start: usize) -> SimpleCommand {
        let before: usize = words.iter().take(command_start).map(|w| w.len() + 1).sum();
        SimpleCommand {
            text: words.join(" "),
            command_start: before,
        }
    }
}

/// A command line that could not be split into simple commands.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the command could not be parsed: {reason}")]
pub struct UnparsedCommand {
    reason: String,
    /// The grammar's error, when it did not load (it cannot, compiled in); shared,
    /// as this is a plain value (`Clone`, `Eq`).
    #[source]
    grammar: Option<Arc<LanguageError>>,
}

impl UnparsedCommand {
    fn new(reason: impl Into<String>) -> UnparsedCommand {
        UnparsedCommand {
            reason: reason.into(),
            grammar: None,
        }
    }

    /// What was wrong (`a syntax error at byte 5`, `the command name $CMD is not a
    /// literal word`).
    pub fn reason(&self) -> &str {
        &self.reason
    }
}

/// Every simple command `command` runs, in source order (an enclosing command comes
/// before the commands of its substitutions). See the [module documentation](self).
///
/// # Errors
///
/// [`UnparsedCommand`] for a syntax error, a command name that is not a literal
/// word, or a construct this module does not know.
///
/// # Security
///
/// The result is meant for permission checks: when in doubt it errs, and the
/// caller should treat an error as "ask".
pub fn simple_commands(command: &str) -> Result<Vec<SimpleCommand>, UnparsedCommand> {
    let tree = parse(command)?;
    commands_in(command, &tree)
}

/// The syntax tree of `command`, refused when the parser finds an error in it.
pub(crate) fn parse(command: &str) -> Result<Tree, UnparsedCommand> {
    let mut parser = Parser::new();
    parser
        .set_language(&tree_sitter_bash::LANGUAGE.into())
        .map_err(|e| UnparsedCommand {
            reason: "the shell grammar did not load".into(),
            grammar: Some(Arc::new(e)),
        })?;
    let tree = parser
        .parse(ascii_shadow(command).as_ref(), None)
        .ok_or_else(|| UnparsedCommand::new("the parser gave up"))?;
    let root = tree.root_node();
    if root.has_error() {
        let at = first_error(root).map_or(0, |n| n.start_byte());
        return Err(UnparsedCommand::new(format!("a syntax error at byte {at}")));
    }
    Ok(tree)
}

/// The simple commands of `command`, whose tree [`parse`] gave.
pub(crate) fn commands_in(
    command: &str,
    tree: &Tree,
) -> Result<Vec<SimpleCommand>, UnparsedCommand> {
    let mut walker = Walker {
        src: command,
        out: Vec::new(),
    };
    walker.walk(tree.root_node(), 0)?;
    Ok(walker.out)
}

/// The literal value of the command name `node` of `src` (`"rm"` and `\rm` are
/// `rm`), `None` when it is not a literal word.
pub(crate) fn literal_name(src: &str, node: Node<'_>) -> Option<String> {
    Walker {
        src,
        out: Vec::new(),
    }
    .command_name(node)
    .ok()
}

/// The line as the parser reads it: every non-ASCII character becomes as many `@`
/// as it has bytes, so the tree's byte ranges index the original line, whose text
/// the commands are then taken from.
///
/// tree-sitter-bash's scanner passes a character to C's `isdigit` after a `{`, which
/// reads outside the table for a code point above 255 and can crash the process
/// (`{` followed by U+31860). Bash itself never gives a non-ASCII byte a meaning:
/// such characters are only ever parts of words, and so is `@`, which cannot make a
/// variable name (`é=1 make` runs the command `é=1`, not `make`). Where the shadow
/// can differ from bash it errs towards more commands or a refusal: a heredoc
/// delimiter `é` also ends at a line `ß`, and `$é` reads as the expansion `$@`.
fn ascii_shadow(command: &str) -> std::borrow::Cow<'_, str> {
    if command.is_ascii() {
        return std::borrow::Cow::Borrowed(command);
    }
    let mut shadow = String::with_capacity(command.len());
    for c in command.chars() {
        if c.is_ascii() {
            shadow.push(c);
        } else {
            shadow.extend(std::iter::repeat_n('@', c.len_utf8()));
        }
    }
    std::borrow::Cow::Owned(shadow)
}

fn first_error(node: Node<'_>) -> Option<Node<'_>> {
    if node.is_error() || node.is_missing() {
        return Some(node);
    }
    let mut cursor = node.walk();
    node.children(&mut cursor)
        .filter(|c| c.has_error())
        .find_map(first_error)
}

struct Walker<'s> {
    src: &'s str,
    out: Vec<SimpleCommand>,
}

impl<'s> Walker<'s> {
    fn text(&self, node: Node<'_>) -> Result<&'s str, UnparsedCommand> {
        self.src
            .get(node.byte_range())
            .ok_or_else(|| UnparsedCommand::new("a node outside the command line"))
    }

    fn walk(&mut self, node: Node<'_>, depth: usize) -> Result<(), UnparsedCommand> {
        if depth > MAX_DEPTH {
            return Err(UnparsedCommand::new("the command nests too deeply"));
        }
        if node.is_error() || node.is_missing() {
            return Err(UnparsedCommand::new(format!(
                "a syntax error at byte {}",
                node.start_byte()
            )));
        }
        if !node.is_named() {
            return Ok(());
        }
        match node.kind() {
            "command" => {
                self.command(node)?;
                self.inside_assignments(node, depth)
            }
            "variable_assignment"
            | "variable_assignments"
            | "declaration_command"
            | "unset_command"
            | "test_command" => {
                self.whole(node)?;
                self.inside_assignments(node, depth)
            }
            "c_style_for_statement" => self.inside_assignments(node, depth),
            "compound_statement" => {
                let arithmetic = node.child(0).is_some_and(|c| c.kind() == "((");
                if arithmetic {
                    self.whole(node)?;
                }
                self.children(node, depth)
            }
            "function_definition" => {
                let mut cursor = node.walk();
                let parts: Vec<Node<'_>> = node
                    .children(&mut cursor)
                    .filter(|c| c.kind() != "word")
                    .collect();
                for part in parts {
                    self.walk(part, depth + 1)?;
                }
                Ok(())
            }
            "program"
            | "list"
            | "pipeline"
            | "subshell"
            | "redirected_statement"
            | "negated_command"
            | "command_substitution"
            | "process_substitution"
            | "if_statement"
            | "elif_clause"
            | "else_clause"
            | "while_statement"
            | "for_statement"
            | "case_statement"
            | "case_item"
            | "do_group"
            | "command_name"
            | "string"
            | "translated_string"
            | "concatenation"
            | "expansion"
            | "simple_expansion"
            | "arithmetic_expansion"
            | "binary_expression"
            | "unary_expression"
            | "postfix_expression"
            | "ternary_expression"
            | "parenthesized_expression"
            | "subscript"
            | "array"
            | "brace_expression"
            | "number"
            | "file_redirect"
            | "heredoc_redirect"
            | "heredoc_body"
            | "herestring_redirect" => self.children(node, depth),
            "word"
            | "raw_string"
            | "ansi_c_string"
            | "string_content"
            | "comment"
            | "variable_name"
            | "special_variable_name"
            | "file_descriptor"
            | "heredoc_start"
            | "heredoc_content"
            | "heredoc_end"
            | "regex"
            | "extglob_pattern"
            | "test_operator" => Ok(()),
            other => Err(UnparsedCommand::new(format!(
                "the construct `{other}` is not supported"
            ))),
        }
    }

    fn children(&mut self, node: Node<'_>, depth: usize) -> Result<(), UnparsedCommand> {
        let mut cursor = node.walk();
        let children: Vec<Node<'_>> = node.children(&mut cursor).collect();
        for child in children {
            self.walk(child, depth + 1)?;
        }
        Ok(())
    }

    /// The children of a node already recorded as a whole (or of an arithmetic
    /// `for`): assignments among them are not recorded again, but what they contain
    /// is searched.
    fn inside_assignments(&mut self, node: Node<'_>, depth: usize) -> Result<(), UnparsedCommand> {
        if depth > MAX_DEPTH {
            return Err(UnparsedCommand::new("the command nests too deeply"));
        }
        let mut cursor = node.walk();
        let children: Vec<Node<'_>> = node.children(&mut cursor).collect();
        for child in children {
            if matches!(child.kind(), "variable_assignment" | "variable_assignments") {
                self.inside_assignments(child, depth + 1)?;
            } else {
                self.walk(child, depth + 1)?;
            }
        }
        Ok(())
    }

    /// Records a node whose whole text is one simple command (`X=1`, `export A=b`,
    /// `[ -f x ]`, `(( i++ ))`), blanks collapsed.
    fn whole(&mut self, node: Node<'_>) -> Result<(), UnparsedCommand> {
        let text = self.text(node)?;
        if text.contains('\n') || text.contains('\r') {
            return Err(UnparsedCommand::new(format!(
                "`{}` spans lines",
                node.kind()
            )));
        }
        self.out.push(SimpleCommand {
            text: crate::command::normalize_command(text),
            command_start: 0,
        });
        Ok(())
    }

    /// Records a `command` node: its assignments, name and arguments, without its
    /// redirections.
    fn command(&mut self, node: Node<'_>) -> Result<(), UnparsedCommand> {
        let mut words: Vec<String> = Vec::new();
        let mut command_start = None;
        let mut previous_end: Option<usize> = None;
        let mut cursor = node.walk();
        for (i, child) in node.children(&mut cursor).enumerate() {
            let field = node.field_name_for_child(u32::try_from(i).unwrap_or(u32::MAX));
            if field == Some("redirect") || !child.is_named() {
                continue;
            }
            let word = match (field, child.kind()) {
                (Some("name"), _) => {
                    command_start = Some(words.len());
                    self.command_name(child)?
                }
                (Some("argument"), _) | (_, "variable_assignment") => self.text(child)?.to_string(),
                (_, kind) => {
                    return Err(UnparsedCommand::new(format!(
                        "the construct `{kind}` in a command is not supported"
                    )));
                }
            };
            if let Some(end) = previous_end {
                self.check_separated(end, child.start_byte())?;
            }
            if word.contains("\\\n") {
                return Err(UnparsedCommand::new("a line continuation inside a word"));
            }
            previous_end = Some(child.end_byte());
            words.push(word);
        }
        let Some(start) = command_start else {
            return Err(UnparsedCommand::new("a command without a name"));
        };
        self.out.push(SimpleCommand::from_words(&words, start));
        Ok(())
    }

    /// Two words of one command must be separated by a blank: not only by a line
    /// continuation (which the shell removes, joining them), and not by a newline
    /// (which ends the command; the grammar sometimes reads the next line on).
    fn check_separated(&self, end: usize, start: usize) -> Result<(), UnparsedCommand> {
        let gap = self
            .src
            .get(end..start)
            .unwrap_or_default()
            .replace("\\\n", "");
        if gap.contains(['\n', '\r']) {
            Err(UnparsedCommand::new("a command read on across a newline"))
        } else if gap.contains(char::is_whitespace) {
            Ok(())
        } else {
            Err(UnparsedCommand::new(
                "two words joined by a line continuation",
            ))
        }
    }

    /// The literal value of a command name: `rm`, `"rm"`, `'rm'`, `\rm`, `r"m"`.
    fn command_name(&self, node: Node<'_>) -> Result<String, UnparsedCommand> {
        let text = self.text(node)?;
        let not_literal =
            || UnparsedCommand::new(format!("the command name {text} is not a literal word"));
        let mut name = String::new();
        let mut cursor = node.walk();
        let parts: Vec<Node<'_>> = match node.child(0) {
            Some(only) if node.named_child_count() == 1 && only.kind() == "concatenation" => {
                only.children(&mut cursor).collect()
            }
            _ => node.children(&mut cursor).collect(),
        };
        for part in parts {
            let raw = self.text(part)?;
            match part.kind() {
                "word" => name.push_str(&unescape(raw, |_| true)),
                "raw_string" => name.push_str(
                    raw.strip_prefix('\'')
                        .and_then(|r| r.strip_suffix('\''))
                        .ok_or_else(not_literal)?,
                ),
                "string" => {
                    let mut inner = part.walk();
                    if part
                        .named_children(&mut inner)
                        .any(|c| c.kind() != "string_content")
                    {
                        return Err(not_literal());
                    }
                    let body = raw
                        .strip_prefix('"')
                        .and_then(|r| r.strip_suffix('"'))
                        .ok_or_else(not_literal)?;
                    name.push_str(&unescape(body, |c| matches!(c, '"' | '\\' | '$' | '`')));
                }
                _ => return Err(not_literal()),
            }
        }
        if name.is_empty() || name.chars().any(char::is_whitespace) {
            return Err(not_literal());
        }
        if name.contains(['$', '`', '*', '?', '[']) {
            return Err(not_literal());
        }
        Ok(name)
    }
}

/// Removes the backslash before each character `escapes` accepts.
pub(crate) fn unescape(text: &str, escapes: impl Fn(char) -> bool) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\\'
            && let Some(next) = chars.clone().next()
            && escapes(next)
        {
            out.push(next);
            chars.next();
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
#[path = "shell_tests.rs"]
mod tests;

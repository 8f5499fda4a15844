//! What the parts of a simple command are worth before it runs: its name, its
//! arguments as far as their values are known, and where its redirections go.
//! Shared by [`crate::read_only`] (does a line only read?) and [`crate::writes`]
//! (what may it write?).

use tree_sitter::Node;

use crate::shell;

/// One argument of a simple command, as far as it can be known before it runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Arg {
    /// Its value is known: `-n`, `"a b"`, `'x'`, `a\ b`.
    Known(String),
    /// Its value is not known, but it cannot start with `-`: `src/*.rs`,
    /// `"a$x"`, `<(ls)`.
    Operand,
    /// Anything else: `$x`, `*`, `$(cmd)`, `"$x"`.
    Unknown,
}

impl Arg {
    pub(crate) fn known(&self) -> Option<&str> {
        match self {
            Arg::Known(v) => Some(v),
            Arg::Operand | Arg::Unknown => None,
        }
    }

    /// What an argument starting with `start` (a known prefix) may be.
    fn starting(start: &str) -> Arg {
        if start.is_empty() || start.starts_with('-') {
            Arg::Unknown
        } else {
            Arg::Operand
        }
    }
}

/// The text of `node` in `src` (empty when the node lies outside it).
pub(crate) fn text<'s>(src: &'s str, node: Node<'_>) -> &'s str {
    src.get(node.byte_range()).unwrap_or_default()
}

/// What the argument `node` of `src` is, as far as it is known.
pub(crate) fn arg(src: &str, node: Node<'_>) -> Arg {
    let raw = text(src, node);
    if !node.is_named() {
        return Arg::Known(raw.to_string());
    }
    match node.kind() {
        "word" | "number" => word(raw),
        "raw_string" => raw
            .strip_prefix('\'')
            .and_then(|r| r.strip_suffix('\''))
            .map_or(Arg::Unknown, |v| Arg::Known(v.to_string())),
        "string" => {
            let mut cursor = node.walk();
            let parts: Vec<Node<'_>> = node.named_children(&mut cursor).collect();
            let body = raw.strip_prefix('"').and_then(|r| r.strip_suffix('"'));
            match body {
                Some(body) if parts.iter().all(|p| p.kind() == "string_content") => {
                    Arg::Known(unescape_double(body))
                }
                _ => match parts.first() {
                    Some(first)
                        if first.kind() == "string_content"
                            && first.start_byte() == node.start_byte() + 1 =>
                    {
                        Arg::starting(&unescape_double(text(src, *first)))
                    }
                    _ => Arg::Unknown,
                },
            }
        }
        "concatenation" => {
            let mut cursor = node.walk();
            let parts: Vec<Node<'_>> = node.children(&mut cursor).collect();
            let mut value = String::new();
            for (i, part) in parts.iter().enumerate() {
                match arg(src, *part) {
                    Arg::Known(v) => value.push_str(&v),
                    Arg::Operand if i == 0 => return Arg::Operand,
                    Arg::Operand | Arg::Unknown => return Arg::starting(&value),
                }
            }
            Arg::Known(value)
        }
        "process_substitution" => Arg::Operand,
        _ => Arg::Unknown,
    }
}

/// An unquoted word: known when it holds nothing the shell expands.
fn word(raw: &str) -> Arg {
    const EXPANDS: [char; 9] = ['*', '?', '[', ']', '{', '}', '~', '$', '`'];
    if raw.contains(EXPANDS) {
        let first = raw.chars().next();
        return if first.is_some_and(|c| c.is_ascii_alphanumeric() || "/._,:+=@%".contains(c)) {
            Arg::Operand
        } else {
            Arg::Unknown
        };
    }
    Arg::Known(shell::unescape(raw, |c| c != '\n'))
}

/// The value of the text between double quotes.
fn unescape_double(body: &str) -> String {
    shell::unescape(body, |c| matches!(c, '"' | '\\' | '$' | '`'))
}

/// A `command` node split into its parts (its redirections are left to the
/// caller's walk, which meets them as children).
pub(crate) struct Parts<'t> {
    /// The command name, unquoted.
    pub(crate) name: String,
    /// The arguments, each with its node.
    pub(crate) args: Vec<(Node<'t>, Arg)>,
    /// The variable assignments before the name (`FOO=1 make`).
    pub(crate) assignments: Vec<Node<'t>>,
}

/// The parts of the `command` node `node` of `src`; `None` when its name is not a
/// literal word or it holds a part this module does not know.
pub(crate) fn parts<'t>(src: &str, node: Node<'t>) -> Option<Parts<'t>> {
    let mut name = None;
    let mut args = Vec::new();
    let mut assignments = Vec::new();
    let mut cursor = node.walk();
    for (i, child) in node.children(&mut cursor).enumerate() {
        match node.field_name_for_child(u32::try_from(i).unwrap_or(u32::MAX)) {
            Some("redirect") => {}
            Some("name") => name = Some(shell::literal_name(src, child)?),
            Some("argument") => args.push((child, arg(src, child))),
            _ if child.kind() == "variable_assignment" => assignments.push(child),
            _ if child.is_named() => return None,
            _ => {}
        }
    }
    Some(Parts {
        name: name?,
        args,
        assignments,
    })
}

/// Where a `file_redirect` goes.
pub(crate) enum Redirect<'t> {
    /// Input from a file (`< f`) or a descriptor that is not a plain number.
    Input,
    /// Another descriptor duplicated, moved or closed (`2>&1`, `>&2`, `1>&2-`,
    /// `>&-`, `0<&3`): no file is opened.
    Descriptor,
    /// Output to the files of these destination nodes (`>`, `>>`, `>|`, `&>`,
    /// `&>>`, `>& file`).
    Output(Vec<Node<'t>>),
    /// Anything this module does not know.
    Other,
}

/// Where the `file_redirect` node `node` of `src` goes.
pub(crate) fn redirect<'t>(src: &str, node: Node<'t>) -> Redirect<'t> {
    let mut operator = None;
    let mut destinations = Vec::new();
    let mut cursor = node.walk();
    for (i, child) in node.children(&mut cursor).enumerate() {
        match node.field_name_for_child(u32::try_from(i).unwrap_or(u32::MAX)) {
            Some("descriptor") => {}
            Some("destination") => destinations.push(child),
            _ if !child.is_named() => operator = Some(child.kind()),
            _ => return Redirect::Other,
        }
    }
    // `N`, `-` or `N-`: a descriptor, not a file name.
    let descriptor = |d: &Node<'_>| {
        let t = text(src, *d);
        let digits = t.strip_suffix('-').unwrap_or(t);
        t == "-" || (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
    };
    match operator {
        Some("<&" | ">&") if destinations.len() == 1 && destinations.iter().all(descriptor) => {
            Redirect::Descriptor
        }
        Some("<&-" | ">&-") if destinations.is_empty() => Redirect::Descriptor,
        Some("<" | "<&") => Redirect::Input,
        Some(">" | ">>" | "&>" | "&>>" | ">|" | ">&") => Redirect::Output(destinations),
        _ => Redirect::Other,
    }
}

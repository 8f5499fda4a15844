//! Whether a shell command line certainly changes no file: [`read_only_command`],
//! which lets a checkpoint skip the walk of the workspace that a command which may
//! write anything needs.
//!
//! The line is parsed with the bash parser of [`crate::shell`]; it is read-only when
//! every simple command in it (in lists, pipelines, subshells, substitutions, loops
//! and conditions) is a program that only reads, given arguments that keep it so,
//! and no redirection writes a file. Whatever is not known to be read-only is not:
//! an unknown program, an argument whose value is not known where the program's
//! options matter (`find . $x`), a variable assignment (`PATH=...` changes what
//! runs), a function definition, a line that does not parse.
//!
//! ```
//! use toolbelt_policy::read_only_command;
//!
//! assert!(read_only_command("rg foo src; git status --short"));
//! assert!(read_only_command("ls -la | wc -l 2>/dev/null"));
//! assert!(!read_only_command("git diff > changes.patch"));
//! assert!(!read_only_command("cat a && rm b"));
//! assert!(!read_only_command("echo $(touch x)"));
//! assert!(!read_only_command("find . -name '*.o' -delete"));
//! ```
//!
//! # Limits
//!
//! Programs are judged by name and arguments, as the command line shows them: the
//! environment the command runs in (an exported `GIT_EXTERNAL_DIFF`, a `PATH` that
//! leads `ls` elsewhere, git configuration such as `core.fsmonitor`) is trusted.
//! `git status` and `git describe --dirty` may refresh git's own index file.

use tree_sitter::Node;

use crate::shell;
use crate::words::{self, Arg, Redirect};

/// How deep the tree is searched before the line is judged not read-only (the
/// parser's own walk refuses far less deep lines already).
const MAX_DEPTH: usize = 256;

/// Where an output redirection may point and still write no file.
const SINKS: [&str; 3] = ["/dev/null", "/dev/stdout", "/dev/stderr"];

/// True only when the command line `command` certainly changes no file: it parses,
/// every simple command in it is a program known to only read (`ls`, `cat`, `rg`,
/// `git status`, `find` without `-delete` or `-exec`, `sed -n 1,5p`...) with
/// arguments that keep it so, it assigns no variable and defines no function, and
/// its output redirections go to `/dev/null` or to another descriptor (`2>&1`).
/// When in doubt it says false: the caller then takes the command for one that
/// may write.
#[must_use]
pub fn read_only_command(command: &str) -> bool {
    let Ok(tree) = shell::parse(command) else {
        return false;
    };
    if shell::commands_in(command, &tree).is_err() {
        return false;
    }
    Checker { src: command }.node(tree.root_node(), 0)
}

struct Checker<'s> {
    src: &'s str,
}

impl Checker<'_> {
    fn text(&self, node: Node<'_>) -> &str {
        words::text(self.src, node)
    }

    /// Whether `node` and everything beneath it only reads.
    fn node(&self, node: Node<'_>, depth: usize) -> bool {
        if depth > MAX_DEPTH {
            return false;
        }
        let fine = match node.kind() {
            "command" => self.command(node),
            "file_redirect" => self.redirect(node),
            // Assignments change what later commands run (`PATH`, `LD_PRELOAD`,
            // `GIT_EXTERNAL_DIFF`); a function can shadow a read-only name.
            "variable_assignment"
            | "variable_assignments"
            | "declaration_command"
            | "unset_command"
            | "function_definition"
            | "c_style_for_statement" => false,
            "compound_statement" => node.child(0).is_none_or(|c| c.kind() != "(("),
            // `for PATH in /tmp/x; do ls; done`: only lower-case loop variables.
            "for_statement" => node
                .child_by_field_name("variable")
                .is_some_and(|v| !self.text(v).chars().any(|c| c.is_ascii_uppercase())),
            // `${X:=value}` and `${X=value}` assign.
            "expansion" => !self.text(node).contains('='),
            _ => true,
        };
        fine && {
            let mut cursor = node.walk();
            let children: Vec<Node<'_>> = node.children(&mut cursor).collect();
            children.into_iter().all(|c| self.node(c, depth + 1))
        }
    }

    /// A simple command: a known program with arguments that keep it read-only,
    /// and no assignments before it. Its redirections and substitutions are
    /// searched by [`Checker::node`].
    fn command(&self, node: Node<'_>) -> bool {
        let Some(parts) = words::parts(self.src, node) else {
            return false;
        };
        let args: Vec<Arg> = parts.args.into_iter().map(|(_, a)| a).collect();
        parts.assignments.is_empty() && program(&parts.name, &args)
    }

    /// An output redirection writes a file unless it goes to a sink or duplicates
    /// a descriptor; input redirections only read.
    fn redirect(&self, node: Node<'_>) -> bool {
        match words::redirect(self.src, node) {
            Redirect::Input | Redirect::Descriptor => true,
            Redirect::Output(destinations) => {
                !destinations.is_empty()
                    && destinations.iter().all(|d| {
                        words::arg(self.src, *d)
                            .known()
                            .is_some_and(|v| SINKS.contains(&v))
                    })
            }
            Redirect::Other => false,
        }
    }
}

/// `-abc` (one dash, not only a dash) holding one of `letters`.
fn short_has(arg: &str, letters: &[char]) -> bool {
    arg.len() > 1
        && !arg.starts_with("--")
        && arg
            .strip_prefix('-')
            .is_some_and(|flags| flags.contains(letters))
}

/// Whether the long option `arg` (`--name` or `--name=value`) may be `full`:
/// `full` itself, an abbreviation of it at least `min` bytes long (GNU getopt and
/// git take unique abbreviations), or a longer name starting with it.
fn long_may_be(arg: &str, full: &str, min: usize) -> bool {
    if !arg.starts_with("--") {
        return false;
    }
    let name = arg.split('=').next().unwrap_or(arg);
    (name.len() >= min && full.starts_with(name)) || name.starts_with(full)
}

/// Every argument is known or an operand, and no known one is `bad`.
fn none_is(args: &[Arg], bad: impl Fn(&str) -> bool) -> bool {
    args.iter().all(|a| match a {
        Arg::Known(v) => !bad(v),
        Arg::Operand => true,
        Arg::Unknown => false,
    })
}

/// Programs that read whatever their arguments.
const READERS: &[&str] = &[
    "ls",
    "cat",
    "head",
    "tail",
    "wc",
    "grep",
    "egrep",
    "fgrep",
    "pwd",
    "echo",
    "true",
    "false",
    "test",
    "[",
    "[[",
    "stat",
    "du",
    "df",
    "which",
    "type",
    "printenv",
    "date",
    "whoami",
    "id",
    "uname",
    "basename",
    "dirname",
    "realpath",
    "readlink",
    "diff",
    "cmp",
    "cut",
    "tr",
    "nl",
    "jq",
    "md5sum",
    "sha1sum",
    "sha224sum",
    "sha256sum",
    "sha384sum",
    "sha512sum",
    "b2sum",
    "cksum",
    "od",
    "hexdump",
    "cd",
];

/// Whether the program `name` run with `args` only reads.
pub(crate) fn program(name: &str, args: &[Arg]) -> bool {
    if READERS.contains(&name) {
        return true;
    }
    match name {
        // `printf -v NAME` assigns a variable (`PATH`).
        "printf" => match args.first() {
            None | Some(Arg::Operand) => true,
            Some(Arg::Known(v)) => !v.starts_with("-v"),
            Some(Arg::Unknown) => false,
        },
        "find" => none_is(args, |v| {
            matches!(
                v,
                "-delete" | "-exec" | "-execdir" | "-ok" | "-okdir" | "-fls"
            ) || v.starts_with("-fprint")
        }),
        "fd" | "fdfind" => none_is(args, |v| {
            short_has(v, &['x', 'X'])
                || long_may_be(v, "--exec", 4)
                || long_may_be(v, "--exec-batch", 4)
        }),
        "rg" => none_is(args, |v| {
            (v.starts_with("--pre") && !v.starts_with("--pre-glob"))
                || v.starts_with("--hostname-bin")
        }),
        "tree" => none_is(args, |v| short_has(v, &['o', 'R']) || v.starts_with("--o")),
        "file" => none_is(args, |v| {
            short_has(v, &['C']) || long_may_be(v, "--compile", 3)
        }),
        "sort" => none_is(args, |v| {
            short_has(v, &['o'])
                || long_may_be(v, "--output", 3)
                || long_may_be(v, "--compress-program", 4)
        }),
        "uniq" => operands(
            args,
            &[
                "-f",
                "-s",
                "-w",
                "--skip-fields",
                "--skip-chars",
                "--check-chars",
            ],
        )
        .is_some_and(|n| n <= 1),
        "xxd" => operands(
            args,
            &[
                "-c",
                "-cols",
                "-g",
                "-groupsize",
                "-l",
                "-len",
                "-s",
                "-seek",
                "-o",
                "-n",
                "-name",
                "-R",
            ],
        )
        .is_some_and(|n| n < 2),
        "env" => env(args),
        "command" => matches!(args.first(), Some(Arg::Known(v)) if v == "-v" || v == "-V"),
        "sed" => sed(args),
        "git" => git(args),
        _ => false,
    }
}

/// How many operands `args` holds, when every argument is known or an operand;
/// the options of `with_value` take the next argument as their value.
fn operands(args: &[Arg], with_value: &[&str]) -> Option<usize> {
    let mut count = 0;
    let mut only_operands = false;
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        match arg {
            Arg::Unknown => return None,
            Arg::Operand => count += 1,
            Arg::Known(v) if only_operands || v == "-" || !v.starts_with('-') => count += 1,
            Arg::Known(v) if v == "--" => only_operands = true,
            Arg::Known(v) => {
                if with_value.contains(&v.as_str()) {
                    iter.next()?;
                }
            }
        }
    }
    Some(count)
}

/// `env` with no command: options and `NAME=value` only.
fn env(args: &[Arg]) -> bool {
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        let Arg::Known(v) = arg else {
            return false;
        };
        match v.as_str() {
            "-0" | "--null" | "-i" | "--ignore-environment" | "-" => {}
            "-u" | "--unset" => {
                if iter.next().is_none() {
                    return false;
                }
            }
            v if v.starts_with("--unset=") || (v.starts_with("-u") && v.len() > 2) => {}
            v if !v.starts_with('-') && v.contains('=') => {}
            _ => return false,
        }
    }
    true
}

/// `sed` without `-i`, whose scripts only print, delete from the output, quit or
/// substitute ([`print_script`]).
fn sed(args: &[Arg]) -> bool {
    let mut scripts: Vec<&str> = Vec::new();
    let mut operands: Vec<&Arg> = Vec::new();
    let mut only_operands = false;
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        i += 1;
        let v = match arg {
            Arg::Unknown => return false,
            Arg::Operand => {
                operands.push(arg);
                continue;
            }
            Arg::Known(v) => v.as_str(),
        };
        if only_operands || v == "-" || !v.starts_with('-') {
            operands.push(arg);
            continue;
        }
        match v {
            "--" => only_operands = true,
            "--expression" => match args.get(i) {
                Some(Arg::Known(s)) => {
                    scripts.push(s);
                    i += 1;
                }
                _ => return false,
            },
            "--quiet" | "--silent" | "--regexp-extended" | "--separate" | "--unbuffered"
            | "--null-data" | "--posix" | "--sandbox" => {}
            _ if v.starts_with("--expression=") => {
                scripts.push(v.trim_start_matches("--expression="));
            }
            _ if v.starts_with("--") => return false,
            _ => {
                let flags = &v[1..];
                let (plain, script) = match flags.find('e') {
                    Some(at) => (&flags[..at], Some(&flags[at + 1..])),
                    None => (flags, None),
                };
                if !plain.chars().all(|c| "nErsuz".contains(c)) {
                    return false;
                }
                match script {
                    None => {}
                    Some("") => match args.get(i) {
                        Some(Arg::Known(s)) => {
                            scripts.push(s);
                            i += 1;
                        }
                        _ => return false,
                    },
                    Some(s) => scripts.push(s),
                }
            }
        }
    }
    if scripts.is_empty() {
        match operands.first() {
            Some(Arg::Known(s)) => scripts.push(s),
            _ => return false,
        }
    }
    scripts.iter().all(|s| print_script(s))
}

/// A sed script of commands that only shape the output: `p`, `P`, `=`, `d`,
/// `q`/`Q` (with an exit code) and `s/a/b/` (flags `g`, `p`, `i`, `I`, `m`, `M`,
/// a number; not `w` or `e`), each after optional addresses (`3`, `$`, `1~2`,
/// `/re/`, `addr,addr`, `addr,+3`) and `!`, separated by `;` or newlines. Blocks,
/// `w`, `r`, `e` and every other command make it false.
pub(crate) fn print_script(script: &str) -> bool {
    let b = script.as_bytes();
    let mut i = 0;
    let mut commands = 0;
    let blanks = |i: &mut usize| {
        while b.get(*i).is_some_and(|c| *c == b' ' || *c == b'\t') {
            *i += 1;
        }
    };
    loop {
        while b
            .get(i)
            .is_some_and(|c| c.is_ascii_whitespace() || *c == b';')
        {
            i += 1;
        }
        if i >= b.len() {
            return commands > 0;
        }
        if !sed_address(b, &mut i, false) {
            return false;
        }
        blanks(&mut i);
        if b.get(i) == Some(&b',') {
            i += 1;
            blanks(&mut i);
            if !sed_address(b, &mut i, true) {
                return false;
            }
            blanks(&mut i);
        }
        if b.get(i) == Some(&b'!') {
            i += 1;
            blanks(&mut i);
        }
        match b.get(i) {
            Some(b'p' | b'P' | b'=' | b'd') => i += 1,
            Some(b'q' | b'Q') => {
                i += 1;
                blanks(&mut i);
                while b.get(i).is_some_and(u8::is_ascii_digit) {
                    i += 1;
                }
            }
            Some(b's') => {
                i += 1;
                let Some(&delim) = b.get(i) else {
                    return false;
                };
                if delim == b'\\' || delim.is_ascii_whitespace() || !delim.is_ascii() {
                    return false;
                }
                i += 1;
                for _ in 0..2 {
                    if !sed_delimited(b, &mut i, delim) {
                        return false;
                    }
                }
                while b
                    .get(i)
                    .is_some_and(|c| b"gpiImM".contains(c) || c.is_ascii_digit())
                {
                    i += 1;
                }
            }
            _ => return false,
        }
        commands += 1;
        blanks(&mut i);
        if !matches!(b.get(i), None | Some(b';' | b'\n')) {
            return false;
        }
    }
}

/// An optional sed address at `i` (required after a comma, where `+N` and `~N`
/// are allowed too); false when one starts but is malformed.
fn sed_address(b: &[u8], i: &mut usize, second: bool) -> bool {
    let digits = |i: &mut usize| {
        let start = *i;
        while b.get(*i).is_some_and(u8::is_ascii_digit) {
            *i += 1;
        }
        *i > start
    };
    match b.get(*i) {
        Some(c) if c.is_ascii_digit() => {
            digits(i);
            if b.get(*i) == Some(&b'~') {
                *i += 1;
                return digits(i);
            }
            true
        }
        Some(b'$') => {
            *i += 1;
            true
        }
        Some(b'/') => {
            *i += 1;
            if !sed_delimited(b, i, b'/') {
                return false;
            }
            while b.get(*i).is_some_and(|c| *c == b'I' || *c == b'M') {
                *i += 1;
            }
            true
        }
        Some(b'+' | b'~') if second => {
            *i += 1;
            digits(i)
        }
        _ => !second,
    }
}

/// Moves `i` past the text up to and including the next unescaped `delim`; false
/// when there is none before the end or a newline.
fn sed_delimited(b: &[u8], i: &mut usize, delim: u8) -> bool {
    while let Some(&c) = b.get(*i) {
        *i += 1;
        if c == b'\\' {
            if b.get(*i).is_none_or(|n| *n == b'\n') {
                return false;
            }
            *i += 1;
        } else if c == delim {
            return true;
        } else if c == b'\n' {
            return false;
        }
    }
    false
}

/// git with a subcommand that reads: `status`, `log`, `diff`, `show` (without
/// `--output`), `branch` (listing), `rev-parse`, `ls-files`, `grep` (without `-O`),
/// `blame`, `describe`, `remote` (listing), `config` (getting), `tag` (listing),
/// `stash list` and a few more plumbing readers.
fn git(args: &[Arg]) -> bool {
    let mut i = 0;
    loop {
        match args.get(i).and_then(Arg::known) {
            Some("--no-pager" | "-P" | "--no-optional-locks" | "--literal-pathspecs") => i += 1,
            Some("-C") if args.get(i + 1).is_some() => i += 2,
            _ => break,
        }
    }
    let Some(Arg::Known(sub)) = args.get(i) else {
        return false;
    };
    let rest = args.get(i + 1..).unwrap_or_default();
    if rest.contains(&Arg::Unknown) {
        return false;
    }
    let output = |v: &str| long_may_be(v, "--output", 4);
    match sub.as_str() {
        "status" | "rev-parse" | "ls-files" | "ls-tree" | "cat-file" | "merge-base"
        | "describe" | "blame" => true,
        "log" | "show" | "diff" | "shortlog" | "rev-list" => none_is(rest, output),
        "grep" => none_is(rest, |v| {
            short_has(v, &['O']) || long_may_be(v, "--open-files-in-pager", 4)
        }),
        "branch" => rest.iter().all(|a| {
            a.known().is_some_and(|v| {
                matches!(
                    v,
                    "--list"
                        | "--all"
                        | "--remotes"
                        | "--verbose"
                        | "--show-current"
                        | "--no-color"
                        | "--no-column"
                ) || (v.len() > 1
                    && v.strip_prefix('-')
                        .is_some_and(|f| f.chars().all(|c| "arvl".contains(c))))
            })
        }),
        "remote" => {
            rest.len() <= 1
                && rest
                    .iter()
                    .all(|a| matches!(a.known(), Some("-v" | "--verbose")))
        }
        "config" => git_config(rest),
        "tag" => {
            rest.is_empty()
                || (rest
                    .iter()
                    .any(|a| matches!(a.known(), Some("-l" | "--list")))
                    && rest.iter().all(|a| match a {
                        Arg::Known(v) => v == "-l" || v == "--list" || !v.starts_with('-'),
                        Arg::Operand => true,
                        Arg::Unknown => false,
                    }))
        }
        "stash" => {
            matches!(rest.first(), Some(Arg::Known(v)) if v == "list") && none_is(rest, output)
        }
        _ => false,
    }
}

/// `git config` that only gets or lists (`--get`, `--get-all`, `--get-regexp`,
/// `--list`, `-l`, or the `get` and `list` subcommands).
fn git_config(rest: &[Arg]) -> bool {
    let mut action = false;
    let mut args = rest;
    if let Some(Arg::Known(v)) = args.first()
        && (v == "get" || v == "list")
    {
        action = true;
        args = &args[1..];
    }
    let mut operands = 0;
    for arg in args {
        match arg {
            Arg::Known(v) if v.starts_with('-') => match v.as_str() {
                "--get" | "--get-all" | "--get-regexp" | "--get-urlmatch" | "--list" | "-l" => {
                    action = true;
                }
                "--global" | "--system" | "--local" | "--worktree" | "--show-origin"
                | "--show-scope" | "--name-only" | "-z" | "--null" | "--bool" | "--int"
                | "--bool-or-int" | "--path" | "--expiry-date" | "--includes" | "--no-includes"
                | "--all" | "--regexp" => {}
                v if v.starts_with("--type=") => {}
                _ => return false,
            },
            Arg::Known(v)
                if matches!(
                    v.as_str(),
                    "set" | "unset" | "rename-section" | "remove-section" | "edit"
                ) =>
            {
                return false;
            }
            Arg::Known(_) | Arg::Operand => operands += 1,
            Arg::Unknown => return false,
        }
    }
    action && operands <= 2
}

#[cfg(test)]
#[path = "read_only_tests.rs"]
mod tests;

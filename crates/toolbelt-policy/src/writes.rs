//! What a shell command line may write, as far as can be told without running it:
//! [`write_targets`], for hooks whose condition names the paths a call writes
//! (`write(**/.env*)`), whatever tool makes the call.

use tree_sitter::Node;

use crate::read_only::{print_script, program};
use crate::shell;
use crate::words::{self, Arg, Redirect};

pub(crate) mod destructive;
mod getopt;
mod programs;

use getopt::{Syntax, parse};
use programs::{CHMOD, CHOWN, SED, Unwrapped, WRAPPERS, Wrapper, copy_syntax, operand_syntax};

/// How deep the tree is searched before the line is taken to write anything.
const MAX_DEPTH: usize = 256;

/// How many wrappers (`sudo env nice ...`) are looked through.
const MAX_WRAPPERS: usize = 8;

/// Where output goes without writing a file.
const SINK: &str = "/dev/null";

/// Commands that neither write nor run anything, beyond those that only read.
const NO_WRITES: &[&str] = &[
    ":", "set", "shift", "exit", "return", "break", "continue", "wait", "sleep", "seq",
];

/// Upper-case variables that change no program's choice of files.
const HARMLESS_VARIABLES: &[&str] = &[
    "LANG", "LANGUAGE", "TZ", "NO_COLOR", "TERM", "COLUMNS", "LINES",
];

/// What a shell command line may write, as far as can be told without running it.
/// See [`write_targets`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Writes {
    /// The files and directories it writes, creates, changes or removes, as
    /// written in the line (unquoted), de-duplicated, in order of appearance.
    pub paths: Vec<String>,
    /// Whether it may also write what cannot be told from the line: a program
    /// whose writes are not known, a target that is not static, a line that does
    /// not parse.
    pub unknown: bool,
}

impl Writes {
    /// Anything may be written.
    fn anything() -> Writes {
        Writes {
            paths: Vec::new(),
            unknown: true,
        }
    }
}

/// What the shell command line `command` may write.
///
/// The line is parsed with the bash parser of [`crate::shell`] and every simple
/// command in it is looked at (in lists, pipelines, subshells, substitutions,
/// loops, conditions and function bodies):
///
/// - **Output redirections** to a file (`>`, `>>`, `>|`, `&>`, `&>>`, `2>f`,
///   `>& f`) write it; descriptor duplications (`>&2`, `2>&1`), input redirections,
///   heredocs and herestrings do not, nor do `/dev/null`, `/dev/stdin`,
///   `/dev/stdout`, `/dev/stderr` and `/dev/fd/N`.
/// - **Programs known to write** name what they write: `tee`, `sed -i` (and its
///   backups, `-i.bak`), `cp`, `mv` (its sources too, since they go), `install`,
///   `ln`, `touch`, `rm`, `rmdir`, `mkdir`, `truncate`, `unlink`, `shred`, `chmod`,
///   `chown`, `chgrp`, `dd of=`. They are looked for through `sudo`, `env`,
///   `nice`, `timeout`, `nohup`, `stdbuf`, `command`, `builtin`, `exec`, `time`
///   and `xargs` (whose operands come from its input, so `xargs rm` is unknown).
/// - **Programs known to only read** ([`crate::read_only_command`]'s list: `cat`,
///   `ls`, `grep`, `git status`, `sed` without `-i`...) write nothing.
///
/// Everything else makes the result [`Writes::unknown`]: any other program
/// (`python3 -c ...`, `make`, `./script.sh`, `npm install`, `git checkout .`,
/// `bash -c`, `eval`, `source`, `find -delete`), a target whose value is not
/// static (`> "$F"`, `> $(cmd)`, `~/x`, and globs: `rm *.log` lists nothing and
/// is unknown, since a pattern is not a path), an assignment to an upper-case
/// variable (`PATH=...`, `export GIT_DIR=...`: it changes what runs; `LANG`,
/// `LC_*`, `TZ` and the like excepted), an option of a known program that is not
/// understood, and a line that does not parse.
///
/// **Paths** are as the shell would pass them (unquoted: `"a b"` is `a b`),
/// relative to the command's working directory, de-duplicated, in the order they
/// appear in the line. A `cd`, `pushd` or `popd` anywhere in the line (or
/// `env -C`, `sudo -D`) makes relative targets uncertain: the result is then
/// unknown too, with the paths as written. For `mv a b` the paths are `a` and
/// `b`; for a copy, move or link into a directory (`-t DIR`, several sources, or
/// a target written as one: `dir/`, `.`), `DIR` and `DIR/<source's name>` for
/// each source.
///
/// ```
/// use toolbelt_policy::{Writes, write_targets};
///
/// let paths = |line| write_targets(line).paths;
/// assert_eq!(paths("echo A=1 > .env"), [".env"]);
/// assert_eq!(paths("cat x | tee -a out.log >/dev/null"), ["out.log"]);
/// assert_eq!(paths("mv a b"), ["a", "b"]);
/// assert_eq!(write_targets("git status && echo hi >&2"), Writes::default());
/// assert!(write_targets("python3 -c 'open(\".env\", \"w\")'").unknown);
/// assert!(write_targets("rm *.log").unknown);
/// ```
///
/// # Limits
///
/// As for [`crate::read_only_command`], programs are judged by name and
/// arguments: the environment the line runs in (an exported `PATH`, aliases,
/// configuration files) is trusted. A copy into an existing directory given as a
/// plain name (`cp x dir`) lists `dir` only. `mkdir -p a/b` lists `a/b`, not the
/// `a` it may create. Output to `/dev/stdout` or `/dev/fd/N` on a line that also
/// reads a file (`< f`) is unknown: such a path reopens whatever the descriptor
/// is, and can empty `f`.
///
/// # Security
///
/// Meant for deciding which hooks a call fires: when a write cannot be ruled out
/// statically, [`Writes::unknown`] is set, and the caller should then assume any
/// path may be written.
#[must_use]
pub fn write_targets(command: &str) -> Writes {
    let Ok(tree) = shell::parse(command) else {
        return Writes::anything();
    };
    if shell::commands_in(command, &tree).is_err() {
        return Writes::anything();
    }
    let mut found = Found {
        src: command,
        paths: Vec::new(),
        unknown: false,
        changes_dir: false,
        reads_file: false,
        names_descriptor: false,
    };
    found.node(tree.root_node(), 0);
    found.finish()
}

/// One argument of a simple command.
#[derive(Debug, Clone)]
struct Word {
    arg: Arg,
    /// Where it starts in the line (paths are listed in this order).
    at: usize,
    /// A process substitution (`>(gzip > x.gz)`): a pipe, whose own commands
    /// the walk meets on its own.
    pipe: bool,
}

/// What the walk found so far.
struct Found<'s> {
    src: &'s str,
    /// Each path with where it appears.
    paths: Vec<(usize, String)>,
    unknown: bool,
    /// A `cd` (or the like) runs somewhere in the line.
    changes_dir: bool,
    /// A file is opened for input (`< f`).
    reads_file: bool,
    /// Output goes to a path naming a descriptor (`/dev/stdout`, `/dev/fd/3`),
    /// which reopens whatever the descriptor is: with `< f` on the line, maybe `f`.
    names_descriptor: bool,
}

impl Found<'_> {
    fn finish(mut self) -> Writes {
        let relative = self.paths.iter().any(|(_, p)| !p.starts_with('/'));
        let unknown = self.unknown
            || (self.changes_dir && relative)
            || (self.reads_file && self.names_descriptor);
        self.paths.sort_by_key(|(at, _)| *at);
        let mut paths: Vec<String> = Vec::with_capacity(self.paths.len());
        for (_, path) in self.paths {
            if !paths.contains(&path) {
                paths.push(path);
            }
        }
        Writes { paths, unknown }
    }

    fn text(&self, node: Node<'_>) -> &str {
        words::text(self.src, node)
    }

    /// Looks at `node` and everything beneath it.
    fn node(&mut self, node: Node<'_>, depth: usize) {
        if depth > MAX_DEPTH {
            self.unknown = true;
            return;
        }
        match node.kind() {
            "command" => self.command(node),
            "file_redirect" => self.redirect(node),
            "variable_assignment" => {
                if let Some(name) = node.child_by_field_name("name") {
                    self.assigns(self.text(name).to_string());
                }
            }
            "declaration_command" | "unset_command" => {
                let mut cursor = node.walk();
                let names: Vec<String> = node
                    .children(&mut cursor)
                    .filter(|c| c.kind() == "variable_name")
                    .map(|c| self.text(c).to_string())
                    .collect();
                names.into_iter().for_each(|n| self.assigns(n));
            }
            "for_statement" => {
                if let Some(v) = node.child_by_field_name("variable") {
                    self.assigns(self.text(v).to_string());
                }
            }
            // `${X:=value}` assigns.
            "expansion" if self.text(node).contains('=') => {
                let mut cursor = node.walk();
                let name = node
                    .children(&mut cursor)
                    .find(|c| c.kind() == "variable_name")
                    .map(|c| self.text(c).to_string());
                self.assigns(name.unwrap_or_default());
            }
            _ => {}
        }
        let mut cursor = node.walk();
        let children: Vec<Node<'_>> = node.children(&mut cursor).collect();
        for child in children {
            self.node(child, depth + 1);
        }
    }

    /// A variable is set: an upper-case one may change what runs or where it
    /// writes (`PATH`, `LD_PRELOAD`, `GIT_DIR`, `HOME`).
    fn assigns(&mut self, name: String) {
        let harmless = !name.chars().any(|c| c.is_ascii_uppercase())
            || name.starts_with("LC_")
            || HARMLESS_VARIABLES.contains(&name.as_str());
        if !harmless || name.is_empty() {
            self.unknown = true;
        }
    }

    /// A path written, unless it is a sink or names a descriptor.
    fn path(&mut self, path: &str, at: usize) {
        if path.is_empty() || path == SINK {
            return;
        }
        if names_descriptor(path) {
            self.names_descriptor = true;
            return;
        }
        self.paths.push((at, path.to_string()));
    }

    /// The argument `word` is written.
    fn target(&mut self, word: &Word) {
        match &word.arg {
            _ if word.pipe => {}
            Arg::Known(path) => self.path(path, word.at),
            Arg::Operand | Arg::Unknown => self.unknown = true,
        }
    }

    fn redirect(&mut self, node: Node<'_>) {
        match words::redirect(self.src, node) {
            Redirect::Input => self.reads_file = true,
            Redirect::Descriptor => {}
            Redirect::Output(destinations) => {
                // `echo > a b`: the parser takes `b` for a second destination,
                // which bash passes to the command as an argument.
                let mut destinations = destinations.into_iter();
                match destinations.next() {
                    Some(d) if destinations.next().is_none() => {
                        let word = Word {
                            arg: words::arg(self.src, d),
                            at: d.start_byte(),
                            pipe: d.kind() == "process_substitution",
                        };
                        self.target(&word);
                    }
                    Some(d) => {
                        self.unknown = true;
                        if let Arg::Known(path) = words::arg(self.src, d) {
                            self.path(&path, d.start_byte());
                        }
                    }
                    None => self.unknown = true,
                }
            }
            Redirect::Other => self.unknown = true,
        }
    }

    fn command(&mut self, node: Node<'_>) {
        let Some(parts) = words::parts(self.src, node) else {
            self.unknown = true;
            return;
        };
        let args: Vec<Word> = parts
            .args
            .into_iter()
            .map(|(n, arg)| Word {
                arg,
                at: n.start_byte(),
                pipe: n.kind() == "process_substitution",
            })
            .collect();
        self.simple(&parts.name, &args, 0);
    }

    /// The simple command `name args`.
    fn simple(&mut self, name: &str, args: &[Word], wrappers: usize) {
        let name = system_program(name);
        if matches!(name, "cd" | "pushd" | "popd") {
            self.changes_dir = true;
            return;
        }
        if let Some(wrapper) = WRAPPERS.iter().find(|w| w.name == name) {
            if wrappers >= MAX_WRAPPERS {
                self.unknown = true;
                return;
            }
            match self.unwrap(wrapper, args) {
                Unwrapped::Nothing => {}
                Unwrapped::Unknown => self.unknown = true,
                Unwrapped::Command(at) => match args.get(at).map(|w| &w.arg) {
                    Some(Arg::Known(inner)) => {
                        let mut rest = args.get(at + 1..).unwrap_or_default().to_vec();
                        if wrapper.appends {
                            rest.push(Word {
                                arg: Arg::Unknown,
                                at: usize::MAX,
                                pipe: false,
                            });
                        }
                        self.simple(inner, &rest, wrappers + 1);
                    }
                    _ => self.unknown = true,
                },
            }
            return;
        }
        if name == "read" {
            self.read(args);
            return;
        }
        if self.writer(name, args) {
            return;
        }
        let plain: Vec<Arg> = args.iter().map(|w| w.arg.clone()).collect();
        if !(NO_WRITES.contains(&name) || program(name, &plain)) {
            self.unknown = true;
        }
    }

    /// Where the command a wrapper runs starts in `args`.
    fn unwrap(&mut self, wrapper: &Wrapper, args: &[Word]) -> Unwrapped {
        let parsed = parse(&wrapper.syntax, args, true);
        if parsed.unsure {
            return Unwrapped::Unknown;
        }
        for opt in &parsed.options {
            if wrapper.chdir.contains(&opt.name.as_str()) {
                self.changes_dir = true;
            }
            if wrapper.no_command.contains(&opt.name.as_str()) {
                return Unwrapped::Nothing;
            }
            if wrapper.unknown.contains(&opt.name.as_str()) {
                return Unwrapped::Unknown;
            }
        }
        let mut at = parsed.end;
        for _ in 0..wrapper.skip {
            match args.get(at) {
                Some(_) => at += 1,
                None => return Unwrapped::Nothing,
            }
        }
        while wrapper.assignments
            && let Some(Arg::Known(v)) = args.get(at).map(|w| &w.arg)
            && let Some((name, _)) = v.split_once('=')
            && !name.is_empty()
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            self.assigns(name.to_string());
            at += 1;
        }
        if at < args.len() {
            Unwrapped::Command(at)
        } else {
            Unwrapped::Nothing
        }
    }

    /// A program known to write: its targets are recorded. False for any other
    /// (and for `sed` without `-i`).
    fn writer(&mut self, name: &str, args: &[Word]) -> bool {
        match name {
            "tee" | "touch" | "rm" | "mkdir" | "truncate" | "unlink" | "shred" | "rmdir" => {
                let Some(syntax) = operand_syntax(name) else {
                    return false;
                };
                let parsed = parse(syntax, args, false);
                self.unknown |= parsed.unsure;
                let parents = name == "rmdir" && parsed.has(&["p", "parents"]);
                for word in parsed.operands {
                    self.target(word);
                    if let (true, Arg::Known(path)) = (parents, &word.arg) {
                        for parent in parent_dirs(path) {
                            self.path(parent, word.at);
                        }
                    }
                }
            }
            "sed" => return self.sed(args),
            "cp" | "mv" | "install" | "ln" => self.copy(name, args),
            "chmod" | "chown" | "chgrp" => self.change_mode(name, args),
            "dd" => {
                for word in args {
                    match &word.arg {
                        Arg::Known(v) => {
                            if let Some(file) = v.strip_prefix("of=") {
                                self.path(file, word.at);
                            }
                        }
                        Arg::Operand | Arg::Unknown => self.unknown = true,
                    }
                }
            }
            _ => return false,
        }
        true
    }

    /// `sed -i`: the files after the script; false without `-i`.
    fn sed(&mut self, args: &[Word]) -> bool {
        let parsed = parse(&SED, args, false);
        let Some(in_place) = parsed.last(&["i", "in-place"]) else {
            return false;
        };
        self.unknown |= parsed.unsure || parsed.has(&["f", "file"]);
        let suffix = in_place
            .value
            .as_ref()
            .map(|v| v.known().map(str::to_string));
        let mut scripts: Vec<&Arg> = parsed
            .options
            .iter()
            .filter(|o| o.name == "e" || o.name == "expression")
            .filter_map(|o| o.value.as_ref())
            .collect();
        let mut files = parsed.operands.as_slice();
        if scripts.is_empty() && !parsed.has(&["f", "file"]) {
            let Some((script, rest)) = files.split_first() else {
                return true;
            };
            scripts.push(&script.arg);
            files = rest;
        }
        // A script that writes elsewhere (`w out`) or runs a command (`e`).
        if !scripts.iter().all(|s| s.known().is_some_and(print_script)) {
            self.unknown = true;
        }
        for file in files {
            self.target(file);
            match (&suffix, &file.arg) {
                (None, _) => {}
                (Some(Some(suffix)), Arg::Known(path)) if !suffix.contains(['*', '/']) => {
                    self.path(&format!("{path}{suffix}"), file.at);
                }
                _ => self.unknown = true,
            }
        }
        true
    }

    /// `cp`, `mv`, `install` and `ln`: the target (with `DIR/<name>` for each
    /// source when it is a directory); for `mv` the sources too.
    fn copy(&mut self, name: &str, args: &[Word]) {
        let Some(syntax) = copy_syntax(name) else {
            return;
        };
        let parsed = parse(syntax, args, false);
        // Backups get names of the tool's choosing (`x~`, `x.~1~`).
        self.unknown |= parsed.unsure || parsed.has(&["b", "backup", "S", "suffix"]);
        if name == "install" && parsed.has(&["d", "directory"]) {
            parsed.operands.iter().for_each(|w| self.target(w));
            return;
        }
        let operands = &parsed.operands;
        let explicit = parsed.last(&["t", "target-directory"]).map(|o| Word {
            arg: o.value.clone().unwrap_or(Arg::Unknown),
            at: o.at,
            pipe: false,
        });
        let (dir, sources) = match (&explicit, operands.split_last()) {
            (Some(dir), _) => (dir, operands.as_slice()),
            (None, Some((last, sources))) if !sources.is_empty() => (*last, sources),
            // `ln /x/y` links `./y`.
            (None, Some((only, _))) if name == "ln" => {
                match &only.arg {
                    Arg::Known(v) => self.path(base_name(v), only.at),
                    _ => self.unknown = true,
                }
                return;
            }
            (None, _) => return,
        };
        if name == "mv" {
            sources.iter().for_each(|w| self.target(w));
        }
        self.target(dir);
        let into_dir = explicit.is_some()
            || (!parsed.has(&["T", "no-target-directory"])
                && (sources.len() > 1 || dir.arg.known().is_some_and(names_dir)));
        if !into_dir {
            return;
        }
        let Arg::Known(dir_path) = &dir.arg else {
            return;
        };
        let whole = name == "cp" && parsed.has(&["parents"]);
        // Listed after the target and the sources.
        let at = sources.iter().map(|w| w.at).fold(dir.at, usize::max);
        for source in sources {
            match &source.arg {
                Arg::Known(s) if !base_name(s).is_empty() => {
                    let inside = if whole { s.as_str() } else { base_name(s) };
                    self.path(&join(dir_path, inside), at);
                }
                _ => self.unknown = true,
            }
        }
    }

    /// `read [-a NAME] NAME...`: it sets the variables it names.
    fn read(&mut self, args: &[Word]) {
        const READ: Syntax = Syntax {
            flags: "ers",
            valued: "adinNptu",
            ..Syntax::NONE
        };
        let parsed = parse(&READ, args, false);
        self.unknown |= parsed.unsure;
        let arrays = parsed.options.iter().filter(|o| o.name == "a");
        let names = arrays
            .filter_map(|o| o.value.as_ref())
            .chain(parsed.operands.iter().map(|w| &w.arg));
        let names: Vec<Option<String>> = names.map(|a| a.known().map(str::to_string)).collect();
        for name in names {
            self.assigns(name.unwrap_or_default());
        }
    }

    /// `chmod MODE FILE...`, `chown OWNER FILE...`, `chgrp GROUP FILE...`, or
    /// with `--reference=R` and no mode.
    fn change_mode(&mut self, name: &str, args: &[Word]) {
        let mut args = args.to_vec();
        let mut mode_given = false;
        // `chmod -x f`: a mode that looks like an option.
        if name == "chmod"
            && let Some(at) = args.iter().position(|w| {
                w.arg.known().is_some_and(|v| {
                    v.len() > 1
                        && v.strip_prefix('-')
                            .is_some_and(|m| m.chars().all(|c| "rwxXst".contains(c)))
                })
            })
        {
            args.remove(at);
            mode_given = true;
        }
        let syntax = if name == "chmod" { &CHMOD } else { &CHOWN };
        let parsed = parse(syntax, &args, false);
        self.unknown |= parsed.unsure;
        let skip = usize::from(!(mode_given || parsed.has(&["reference"])));
        for word in parsed.operands.iter().skip(skip) {
            self.target(word);
        }
    }
}

/// `/usr/bin/rm` is `rm`; other paths (`./rm`) are programs of their own.
fn system_program(name: &str) -> &str {
    [
        "/usr/local/bin/",
        "/usr/bin/",
        "/bin/",
        "/usr/sbin/",
        "/sbin/",
    ]
    .iter()
    .find_map(|dir| name.strip_prefix(dir))
    .filter(|n| !n.is_empty() && !n.contains('/'))
    .unwrap_or(name)
}

/// `/dev/stdout` and the like: a path that reopens a descriptor of the process.
fn names_descriptor(path: &str) -> bool {
    let number = |n: &str| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit());
    matches!(path, "/dev/stdin" | "/dev/stdout" | "/dev/stderr")
        || path.strip_prefix("/dev/fd/").is_some_and(number)
        || path.strip_prefix("/proc/self/fd/").is_some_and(number)
}

/// A target written as a directory: `dir/`, `.`, `..`, `a/.`.
fn names_dir(path: &str) -> bool {
    path.ends_with('/')
        || matches!(path, "." | "..")
        || path.ends_with("/.")
        || path.ends_with("/..")
}

/// The last component of `path` (`a/b/` is `b`).
fn base_name(path: &str) -> &str {
    let trimmed = path.trim_end_matches('/');
    trimmed.rsplit('/').next().unwrap_or(trimmed)
}

/// `name` inside `dir`.
fn join(dir: &str, name: &str) -> String {
    format!("{}/{name}", dir.trim_end_matches('/'))
}

/// The parent directories `rmdir -p a/b/c` also removes: `a/b`, `a`.
fn parent_dirs(path: &str) -> impl Iterator<Item = &str> {
    let trimmed = path.trim_end_matches('/');
    std::iter::successors(Some(trimmed), |p| {
        p.rfind('/').filter(|&i| i > 0).and_then(|i| p.get(..i))
    })
    .skip(1)
}

#[cfg(test)]
#[path = "writes_tests.rs"]
mod tests;

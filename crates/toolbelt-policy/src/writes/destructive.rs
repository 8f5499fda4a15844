//! Shell commands that destroy what cannot be had back: [`destructive`] finds
//! them in a command line, for a guard that puts them to a person even where
//! every call is approved unseen (a small model under `--yes`).
//!
//! The line is parsed with the bash parser of [`crate::shell`], and every simple
//! command in it is looked at (in lists, pipelines, subshells, substitutions,
//! loops, conditions and function bodies), through the wrappers
//! [`super::write_targets`] knows (`sudo`, `env`, `nice`, `timeout`, `xargs`...),
//! through `sh -c` / `bash -c` scripts and `eval`, and through `find -exec`.
//! A `cd` into `.git` is followed: what a command changes there is in `.git`.

use tree_sitter::Node;

use super::getopt::parse;
use super::programs::{WRAPPERS, Wrapper, operand_syntax};
use super::{MAX_DEPTH, MAX_WRAPPERS, Word, system_program};
use crate::command::normalize_command;
use crate::read_only::program;
use crate::shell;
use crate::words::{self, Arg, Redirect};

/// Operands of an `rm -r` named in the reason; the rest are counted.
const MAX_NAMED_TARGETS: usize = 3;

/// How deep `sh -c` scripts and `eval` are looked into.
const MAX_SCRIPTS: usize = 4;

/// Pathspecs that name every file of the working tree.
const WHOLE_TREE: &[&str] = &[".", "./", ":/", ":", "*", ":/*", ":(top)"];

/// What kind of destruction a command is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DestructiveKind {
    /// `rm -r`, `rm -rf`, `rm --recursive`: a directory tree (or a glob) deleted.
    RecursiveRm,
    /// `git reset --hard`: the uncommitted changes thrown away.
    GitResetHard,
    /// `git clean`: the untracked files deleted.
    GitClean,
    /// `git checkout .`, `git checkout -- .`, `git checkout -f`, `git restore .`,
    /// `git switch --discard-changes`: the uncommitted changes of every file
    /// thrown away.
    GitDiscard,
    /// `find ... -delete`: every file found deleted.
    FindDelete,
    /// A command other than git's own that changes the `.git` directory (`.git`,
    /// `.git/*`, `foo/.git`), where the repository's history is kept.
    GitDirectory,
}

impl DestructiveKind {
    /// The kind as a person knows the command: `rm -r`, `git reset --hard`,
    /// `git clean`, `git checkout .`, `find -delete`, `.git`.
    pub fn as_str(self) -> &'static str {
        match self {
            DestructiveKind::RecursiveRm => "rm -r",
            DestructiveKind::GitResetHard => "git reset --hard",
            DestructiveKind::GitClean => "git clean",
            DestructiveKind::GitDiscard => "git checkout .",
            DestructiveKind::FindDelete => "find -delete",
            DestructiveKind::GitDirectory => "changes to .git",
        }
    }

    /// What such a command destroys, as a clause, where its targets are not named.
    fn reason(self) -> &'static str {
        match self {
            DestructiveKind::RecursiveRm => "it deletes whole directories",
            DestructiveKind::GitResetHard => {
                "it throws away every uncommitted change of the working tree"
            }
            DestructiveKind::GitClean => {
                "it deletes the untracked files, which git cannot bring back"
            }
            DestructiveKind::GitDiscard => "it throws away the uncommitted changes of every file",
            DestructiveKind::FindDelete => "it deletes every file it finds",
            DestructiveKind::GitDirectory => {
                "it changes the .git directory, where the repository's history is kept"
            }
        }
    }

    /// The safer way to reach what such a command is usually meant for.
    pub fn instead(self) -> &'static str {
        match self {
            DestructiveKind::RecursiveRm | DestructiveKind::GitClean => {
                "delete single files by name (rm FILE, without -r), or ask the user to remove the directory"
            }
            DestructiveKind::GitResetHard | DestructiveKind::GitDiscard => {
                "undo the changes of a single file (git checkout -- FILE), keep them aside with git stash, or ask the user"
            }
            DestructiveKind::FindDelete => {
                "list the files first (the same find without -delete), then delete single files by name, or ask the user"
            }
            DestructiveKind::GitDirectory => {
                "leave .git to git's own commands (git add, git commit, git restore FILE), or ask the user"
            }
        }
    }
}

/// A simple command that destroys what cannot be had back. See [`destructive`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Destructive {
    /// What kind of destruction it is.
    pub kind: DestructiveKind,
    /// The simple command, as a permission rule is matched against it: its words
    /// joined by one blank (`sudo rm -rf build`); the command inside a
    /// `sh -c` script or an `eval` for those.
    pub command: String,
    /// What it would destroy, as a clause: `it deletes build and everything in
    /// it`.
    pub reason: String,
}

/// The first simple command of the shell command line `command` that destroys
/// what cannot be had back, if any: `rm` with `-r`, `-R` or `--recursive` (of
/// anything), `git reset --hard`, `git clean` (but not its dry run, `-n`),
/// `git checkout .` / `git checkout -- .` / `git checkout -f`, `git restore .`
/// (of the working tree), `git switch --discard-changes`, `find ... -delete`,
/// and any command but git's own and those that only read
/// ([`crate::read_only_command`]'s programs) that names a path in a `.git`
/// directory (`.git`, `.git/*`, `foo/.git/config`), or writes one through a
/// redirection.
///
/// Not destructive: `rm file.txt`, `git status`, `git reset` (soft),
/// `cat .gitignore`, `ls .github`, `cat .git/HEAD`.
///
/// ```
/// use toolbelt_policy::{DestructiveKind, destructive};
///
/// let found = destructive("cd web && sudo rm -rf build").unwrap();
/// assert_eq!(found.kind, DestructiveKind::RecursiveRm);
/// assert_eq!(found.command, "sudo rm -rf build");
/// assert_eq!(destructive("bash -c 'git reset --hard'").unwrap().command, "git reset --hard");
/// assert_eq!(destructive("rm notes.txt && git status"), None);
/// ```
///
/// # Security
///
/// A guard against slips, not a sandbox: programs are judged by their names and
/// arguments, so what a script, an alias or a variable (`$RM -rf x`) hides is
/// not found. A line that does not parse is read word by word instead.
#[must_use]
pub fn destructive(command: &str) -> Option<Destructive> {
    destructive_all(command).into_iter().next()
}

/// Every simple command of `command` that [`destructive`] would name, in order.
#[must_use]
pub fn destructive_all(command: &str) -> Vec<Destructive> {
    let mut finder = Finder {
        src: command,
        out: Vec::new(),
        scripts: 0,
        in_git: None,
    };
    finder.line(command);
    finder.out
}

/// What the search found so far.
struct Finder<'s> {
    src: &'s str,
    out: Vec<Destructive>,
    /// How many `sh -c` scripts and `eval`s deep the search is.
    scripts: usize,
    /// Where a `cd` went, when it went into a `.git` directory: how many
    /// directories below `.git` (0: `.git` itself). `None` outside.
    in_git: Option<usize>,
}

impl Finder<'_> {
    /// Looks at the command line `line` (the whole, or a script inside it).
    fn line(&mut self, line: &str) {
        match shell::parse(line) {
            Ok(tree) => {
                let mut inner = Finder {
                    src: line,
                    out: Vec::new(),
                    scripts: self.scripts,
                    in_git: self.in_git,
                };
                inner.node(tree.root_node(), 0);
                self.out.extend(inner.out);
            }
            Err(_) => self.out.extend(word_by_word(line)),
        }
    }

    /// Looks at `node` and everything beneath it.
    fn node(&mut self, node: Node<'_>, depth: usize) {
        if depth > MAX_DEPTH {
            return;
        }
        match node.kind() {
            "command" => self.command(node),
            "file_redirect" => self.redirect(node),
            _ => {}
        }
        // A subshell's `cd` ends with it.
        let outer = self.in_git;
        let mut cursor = node.walk();
        let children: Vec<Node<'_>> = node.children(&mut cursor).collect();
        for child in children {
            self.node(child, depth + 1);
        }
        if matches!(
            node.kind(),
            "subshell" | "command_substitution" | "process_substitution"
        ) {
            self.in_git = outer;
        }
    }

    /// Output redirected into `.git` (`echo x > .git/HEAD`).
    fn redirect(&mut self, node: Node<'_>) {
        let Redirect::Output(destinations) = words::redirect(self.src, node) else {
            return;
        };
        let in_git = self.in_git.is_some();
        let Some(target) = destinations
            .iter()
            .map(|d| words::text(self.src, *d))
            .find(|t| touches_git(t) || (in_git && relative(t)))
        else {
            return;
        };
        let statement = node.parent().unwrap_or(node);
        let reason = if touches_git(target) {
            format!("it writes {}", git_path_reason(target))
        } else {
            format!("it writes {target} {IN_GIT}")
        };
        self.found(
            DestructiveKind::GitDirectory,
            normalize_command(words::text(self.src, statement)),
            reason,
        );
    }

    fn command(&mut self, node: Node<'_>) {
        let Some(parts) = words::parts(self.src, node) else {
            return;
        };
        let mut text: Vec<&str> = parts
            .assignments
            .iter()
            .map(|a| words::text(self.src, *a))
            .collect();
        text.push(&parts.name);
        let args: Vec<Word> = parts
            .args
            .iter()
            .map(|(n, arg)| Word {
                arg: arg.clone(),
                at: n.start_byte(),
                pipe: n.kind() == "process_substitution",
            })
            .collect();
        let raws: Vec<&str> = parts
            .args
            .iter()
            .map(|(n, _)| words::text(self.src, *n))
            .collect();
        text.extend(raws.iter().copied());
        let whole = text.join(" ");
        self.simple(&whole, &parts.name, &args, &raws, 0);
    }

    /// The simple command `name args` (`raws`: the arguments as written), part
    /// of the simple command `whole`.
    fn simple(&mut self, whole: &str, name: &str, args: &[Word], raws: &[&str], wrappers: usize) {
        let name = system_program(name);
        if let Some(wrapper) = WRAPPERS.iter().find(|w| w.name == name) {
            if wrappers < MAX_WRAPPERS
                && let Some(at) = inner_command(wrapper, args)
                && let Some(Arg::Known(inner)) = args.get(at).map(|w| &w.arg)
            {
                let rest = at + 1;
                self.simple(
                    whole,
                    inner,
                    args.get(rest..).unwrap_or_default(),
                    raws.get(rest..).unwrap_or_default(),
                    wrappers + 1,
                );
            }
            return;
        }
        if is_shell(name) {
            if let Some(script) = shell_script(args) {
                self.script(script);
            }
            return;
        }
        match name {
            "cd" | "pushd" => self.cd(args),
            "eval" => {
                let known: Option<Vec<&str>> = args.iter().map(|w| w.arg.known()).collect();
                if let Some(words) = known {
                    self.script(&words.join(" "));
                }
            }
            "rm" => self.rm(whole, args, raws),
            "git" => self.git(whole, args),
            "find" => self.find(whole, args, raws, wrappers),
            _ => self.names_git(whole, name, args, raws),
        }
    }

    /// A script run by a shell or `eval`, looked at as a line of its own.
    fn script(&mut self, script: &str) {
        if self.scripts >= MAX_SCRIPTS {
            return;
        }
        self.scripts += 1;
        self.line(script);
        self.scripts -= 1;
    }

    fn rm(&mut self, whole: &str, args: &[Word], raws: &[&str]) {
        let Some(syntax) = operand_syntax("rm") else {
            return;
        };
        let parsed = parse(syntax, args, false);
        if !parsed.has(&["r", "R", "recursive"]) {
            self.names_git(whole, "rm", args, raws);
            return;
        }
        let targets: Vec<&str> = parsed
            .operands
            .iter()
            .filter_map(|w| raw_at(args, raws, w.at))
            .collect();
        let reason = match targets.as_slice() {
            [] => DestructiveKind::RecursiveRm.reason().to_string(),
            [one] if touches_git(one) => format!("it deletes {}", git_path_reason(one)),
            [one] => format!("it deletes {one} and everything in it"),
            many => {
                let mut named = many
                    .iter()
                    .take(MAX_NAMED_TARGETS)
                    .copied()
                    .collect::<Vec<_>>()
                    .join(", ");
                if many.len() > MAX_NAMED_TARGETS {
                    named.push_str(&format!(" and {} more", many.len() - MAX_NAMED_TARGETS));
                }
                format!("it deletes {named} and everything in them")
            }
        };
        self.found(DestructiveKind::RecursiveRm, whole.to_string(), reason);
    }

    fn git(&mut self, whole: &str, args: &[Word]) {
        let known: Vec<&str> = args.iter().filter_map(|w| w.arg.known()).collect();
        let Some((sub, rest)) = git_subcommand(&known) else {
            return;
        };
        let has = |names: &[&str]| rest.iter().any(|a| names.contains(a));
        let operands = || rest.iter().filter(|a| !a.starts_with('-') || **a == "-");
        let kind = match sub {
            "reset" if has(&["--hard"]) => Some(DestructiveKind::GitResetHard),
            "clean" if !rest.iter().any(|a| dry_run_flag(a)) => Some(DestructiveKind::GitClean),
            "checkout" if has(&["-f", "--force"]) || operands().any(|a| WHOLE_TREE.contains(a)) => {
                Some(DestructiveKind::GitDiscard)
            }
            "restore"
                if operands().any(|a| WHOLE_TREE.contains(a))
                    && (!has(&["--staged", "-S"]) || has(&["--worktree", "-W"])) =>
            {
                Some(DestructiveKind::GitDiscard)
            }
            "switch" if has(&["--discard-changes", "-f", "--force"]) => {
                Some(DestructiveKind::GitDiscard)
            }
            _ => None,
        };
        if let Some(kind) = kind {
            self.found(kind, whole.to_string(), kind.reason().to_string());
        }
    }

    fn find(&mut self, whole: &str, args: &[Word], raws: &[&str], wrappers: usize) {
        let mut i = 0;
        while let Some(word) = args.get(i) {
            i += 1;
            match word.arg.known() {
                Some("-delete") => {
                    let kind = DestructiveKind::FindDelete;
                    self.found(kind, whole.to_string(), kind.reason().to_string());
                    return;
                }
                Some("-exec" | "-execdir" | "-ok" | "-okdir") => {
                    let end = args[i..]
                        .iter()
                        .position(|w| matches!(w.arg.known(), Some(";" | "+")))
                        .map_or(args.len(), |p| i + p);
                    if let Some(Arg::Known(inner)) = args.get(i).map(|w| &w.arg)
                        && wrappers < MAX_WRAPPERS
                        && i < end
                    {
                        let from = i + 1;
                        self.simple(
                            whole,
                            inner,
                            args.get(from..end).unwrap_or_default(),
                            raws.get(from..end).unwrap_or_default(),
                            wrappers + 1,
                        );
                    }
                    i = end + 1;
                }
                _ => {}
            }
        }
        self.names_git(whole, "find", args, raws);
    }

    /// Any other program that names a path in `.git`, or runs in `.git` after a
    /// `cd`, unless it only reads.
    fn names_git(&mut self, whole: &str, name: &str, args: &[Word], raws: &[&str]) {
        let plain: Vec<Arg> = args.iter().map(|w| w.arg.clone()).collect();
        if program(name, &plain) {
            return;
        }
        let reason = if let Some(target) = raws.iter().find(|r| touches_git(r)) {
            format!("it changes {}", git_path_reason(target))
        } else if self.in_git.is_some() {
            format!("it runs {IN_GIT}")
        } else {
            return;
        };
        self.found(DestructiveKind::GitDirectory, whole.to_string(), reason);
    }

    /// Follows `cd DIR` / `pushd DIR` into and out of `.git`. A directory that
    /// cannot be told (`cd "$X"`, `cd -`) leaves `.git` as far as is known.
    fn cd(&mut self, args: &[Word]) {
        let dir = args
            .iter()
            .filter_map(|w| w.arg.known())
            .find(|a| !a.starts_with('-') || *a == "-");
        let Some(dir) = dir else {
            // `cd` alone goes home; `cd "$X"` is unknown.
            self.in_git = None;
            return;
        };
        let mut at = if dir.starts_with(['/', '~']) || dir == "-" {
            None
        } else {
            self.in_git
        };
        for part in dir.split('/').filter(|p| !p.is_empty() && *p != ".") {
            at = match (part, at) {
                (".git", None) => Some(0),
                ("..", Some(0) | None) => None,
                ("..", Some(d)) => Some(d - 1),
                (_, Some(d)) => Some(d + 1),
                (_, None) => None,
            };
        }
        self.in_git = at;
    }

    fn found(&mut self, kind: DestructiveKind, command: String, reason: String) {
        self.out.push(Destructive {
            kind,
            command,
            reason,
        });
    }
}

/// Where the command a wrapper runs starts in `args`, when it can be told.
fn inner_command(wrapper: &Wrapper, args: &[Word]) -> Option<usize> {
    let parsed = parse(&wrapper.syntax, args, true);
    if parsed.unsure
        || parsed.options.iter().any(|o| {
            wrapper.no_command.contains(&o.name.as_str())
                || wrapper.unknown.contains(&o.name.as_str())
        })
    {
        return None;
    }
    let mut at = parsed.end + wrapper.skip;
    while wrapper.assignments
        && let Some(Arg::Known(v)) = args.get(at).map(|w| &w.arg)
        && let Some((name, _)) = v.split_once('=')
        && !name.is_empty()
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    {
        at += 1;
    }
    (at < args.len()).then_some(at)
}

/// Whether `name` is a shell whose `-c` script is looked into: `sh`, `bash`,
/// `dash`, `zsh`, `ksh`.
fn is_shell(name: &str) -> bool {
    matches!(name.strip_suffix("sh"), Some("" | "ba" | "da" | "z" | "k"))
}

/// The script of `sh -c SCRIPT`: the first operand, when `-c` is among the
/// options (alone or in a cluster: `-ec`, `-lc`), past options that take a
/// value (`-o pipefail`, `-euo pipefail`, `+O extglob`, `--rcfile FILE`).
fn shell_script(args: &[Word]) -> Option<&str> {
    let mut command = false;
    let mut i = 0;
    while let Some(word) = args.get(i) {
        let flag = word.arg.known()?;
        i += 1;
        if flag == "--" {
            break;
        }
        if let Some(long) = flag.strip_prefix("--") {
            if matches!(long, "rcfile" | "init-file") {
                i += 1;
            }
            continue;
        }
        let Some(cluster) = flag.strip_prefix(['-', '+']).filter(|c| !c.is_empty()) else {
            i -= 1;
            break;
        };
        command |= flag.starts_with('-') && cluster.contains('c');
        i += cluster.chars().filter(|c| matches!(c, 'o' | 'O')).count();
    }
    if !command {
        return None;
    }
    args.get(i)?.arg.known()
}

/// The subcommand of a git command line and its arguments, past git's own
/// options (`-C DIR`, `-c KEY=VALUE`, `--git-dir=DIR`, `--no-pager`).
fn git_subcommand<'a>(args: &'a [&'a str]) -> Option<(&'a str, &'a [&'a str])> {
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        match *arg {
            "-C" | "-c" | "--git-dir" | "--work-tree" | "--namespace" | "--config-env" => i += 2,
            a if a.starts_with('-') => i += 1,
            sub => return Some((sub, args.get(i + 1..).unwrap_or_default())),
        }
    }
    None
}

/// `-n`, `--dry-run`, or a cluster of short options with `n` (`-nd`).
fn dry_run_flag(arg: &str) -> bool {
    arg == "--dry-run" || (arg.starts_with('-') && !arg.starts_with("--") && arg.contains('n'))
}

/// The argument at byte `at` as written.
fn raw_at<'r>(args: &[Word], raws: &[&'r str], at: usize) -> Option<&'r str> {
    let i = args.iter().position(|w| w.at == at)?;
    raws.get(i).copied()
}

/// Whether the argument `raw` (as written) names `.git` or a path inside one:
/// `.git`, `.git/`, `'.git/*'`, `foo/.git/config`, `of=.git/x`; not `.gitignore`
/// or `.github`.
fn touches_git(raw: &str) -> bool {
    raw.replace(['\'', '"', '\\'], "")
        .split(['/', '='])
        .any(|part| part == ".git")
}

/// Whether the redirection target `raw` is a path relative to the working
/// directory (not `/dev/null`, not `&2`).
fn relative(raw: &str) -> bool {
    !raw.starts_with(['/', '&', '~', '$'])
}

/// The clause for a command that a `cd` took into `.git`.
const IN_GIT: &str =
    "inside the .git directory (after a cd into it), where the repository's history is kept";

/// `.git/config, inside the .git directory, where the repository's history is kept`.
fn git_path_reason(target: &str) -> String {
    format!("{target}, inside the .git directory where the repository's history is kept")
}

/// The words of a line the parser cannot read, split at blanks and at `;`, `&`,
/// `|`, `(` and `)`, quotes dropped: the same programs looked for, without
/// wrappers or scripts.
fn word_by_word(line: &str) -> Vec<Destructive> {
    let cleaned = line.replace(['\'', '"', '\\'], "");
    let mut out = Vec::new();
    for part in cleaned.split([';', '&', '|', '(', ')', '\n']) {
        let words: Vec<&str> = part.split_whitespace().collect();
        let Some(at) = words
            .iter()
            .position(|w| matches!(*w, "rm" | "git" | "find") || w.contains(".git"))
        else {
            continue;
        };
        let rest = &words[at + 1..];
        let recursive = |w: &&str| {
            *w == "--recursive"
                || (w.starts_with('-') && !w.starts_with("--") && w.contains(['r', 'R']))
        };
        let kind = match words[at] {
            "rm" if rest.iter().any(recursive) => Some(DestructiveKind::RecursiveRm),
            "git" if rest.first() == Some(&"reset") && rest.contains(&"--hard") => {
                Some(DestructiveKind::GitResetHard)
            }
            "git" if rest.first() == Some(&"clean") && !rest.iter().any(|a| dry_run_flag(a)) => {
                Some(DestructiveKind::GitClean)
            }
            "git" => None,
            "find" if rest.contains(&"-delete") => Some(DestructiveKind::FindDelete),
            _ if words.iter().any(|w| touches_git(w)) => Some(DestructiveKind::GitDirectory),
            _ => None,
        };
        if let Some(kind) = kind {
            out.push(Destructive {
                kind,
                command: normalize_command(part),
                reason: kind.reason().to_string(),
            });
        }
    }
    out
}

#[cfg(test)]
#[path = "destructive_tests.rs"]
mod tests;

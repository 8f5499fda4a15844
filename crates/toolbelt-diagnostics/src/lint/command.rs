//! Running a linter's or a formatter's command, given as a program and its
//! arguments, through `toolbelt-exec`: every argument quoted for the shell, a
//! scrubbed environment, a timeout, the whole process tree killed, the output
//! bounded.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use toolbelt_core::output::OutputBudget;
use toolbelt_exec::{EnvPolicy, ExecError, ExecRequest};

/// Between `SIGTERM` and `SIGKILL` for a command past its time.
const KILL_GRACE: Duration = Duration::from_millis(200);
/// How long a command's leftovers may hold its output open after it exits.
const DRAIN: Duration = Duration::from_millis(300);
/// The exit code of the shell when the program is not found.
const NOT_FOUND_EXIT_CODE: i32 = 127;
/// The exit code of the shell when the program is found but cannot be run.
const CANNOT_EXECUTE_EXIT_CODE: i32 = 126;
/// Characters kept of a line quoted from a command's output in a message.
const MAX_DETAIL_CHARS: usize = 200;

/// One command to run.
#[derive(Debug, Clone)]
pub(crate) struct Invocation {
    /// The program and its arguments, placeholders already replaced.
    pub(crate) argv: Vec<String>,
    /// The working directory.
    pub(crate) cwd: PathBuf,
    /// Stop it after this long.
    pub(crate) timeout: Duration,
    /// Bytes given on its standard input (none: standard input is closed).
    pub(crate) stdin: Option<Vec<u8>>,
    /// Bytes read of its standard output and, apart, of its standard error.
    pub(crate) max_output_bytes: usize,
}

/// How a command ended.
#[derive(Debug)]
pub(crate) enum Ended {
    /// The shell that runs it could not be started (a missing working directory).
    NotStarted(ExecError),
    /// The program is not on `PATH` (or its path does not exist).
    NotFound,
    /// The program exists but cannot be run (not executable).
    CannotExecute {
        /// The shell's complaint.
        detail: String,
    },
    /// It ran past its timeout; its tree was killed.
    TimedOut,
    /// It ended by itself.
    Exited {
        /// The exit code (128 + the signal that ended it).
        code: i32,
        /// Its standard output, within the bound.
        stdout: String,
        /// True when `stdout` is not the whole output.
        stdout_cut: bool,
        /// Its standard error, within the bound.
        stderr: String,
    },
}

/// Runs `invocation` to its end.
pub(crate) async fn run(invocation: Invocation) -> Ended {
    let mut req = ExecRequest::new(
        toolbelt_exec::exec_line(&invocation.argv),
        &invocation.cwd,
        invocation.timeout,
    );
    req.env = EnvPolicy::default().build(std::env::vars(), &BTreeMap::new());
    req.stdin = invocation.stdin;
    req.stdout_budget = OutputBudget::with_max_bytes(invocation.max_output_bytes);
    req.stderr_budget = OutputBudget::with_max_bytes(invocation.max_output_bytes);
    req.kill_grace = KILL_GRACE;
    req.drain_timeout = DRAIN;
    let out = match toolbelt_exec::run(req, &CancellationToken::new()).await {
        Ok(out) => out,
        Err(e) => return Ended::NotStarted(e),
    };
    if out.timed_out {
        return Ended::TimedOut;
    }
    let (stdout, stderr) = (out.stdout.captured, out.stderr.captured.text);
    if stdout.text.is_empty() && shell_could_not_run(out.exit_code, &stderr) {
        if out.exit_code == NOT_FOUND_EXIT_CODE {
            return Ended::NotFound;
        }
        return Ended::CannotExecute {
            detail: first_line(&stderr).unwrap_or_default(),
        };
    }
    Ended::Exited {
        code: out.exit_code,
        stdout: stdout.text,
        stdout_cut: stdout.truncated,
        stderr,
    }
}

/// True when the shell itself says the program could not be run: exit code 127
/// or 126 with the shell's own complaint (`exec: ruff: not found`).
fn shell_could_not_run(code: i32, stderr: &str) -> bool {
    let from_shell = stderr.lines().next().is_some_and(|line| {
        line.contains("not found")
            || line.contains("No such file or directory")
            || line.contains("Permission denied")
            || line.contains("cannot execute")
    });
    from_shell && (code == NOT_FOUND_EXIT_CODE || code == CANNOT_EXECUTE_EXIT_CODE)
}

/// Whether any element of `argv` holds one of `placeholders`.
pub(crate) fn mentions(argv: &[String], placeholders: &[&str]) -> bool {
    argv.iter()
        .any(|arg| placeholders.iter().any(|p| arg.contains(p)))
}

/// `argv` with each placeholder of `pairs` replaced by its value, in any element
/// (also inside one such as `--file={path}`), in one pass: a value is never
/// searched for placeholders. Returns whether one was found.
pub(crate) fn substitute(argv: &mut [String], pairs: &[(&str, &str)]) -> bool {
    let mut found = false;
    for arg in argv.iter_mut() {
        if let Some(filled) = fill(arg, pairs) {
            *arg = filled;
            found = true;
        }
    }
    found
}

/// `arg` with the placeholders of `pairs` replaced, left to right; `None` when it
/// holds none.
fn fill(arg: &str, pairs: &[(&str, &str)]) -> Option<String> {
    let mut out = String::new();
    let mut rest = arg;
    let mut found = false;
    loop {
        let next = pairs
            .iter()
            .filter(|(p, _)| !p.is_empty())
            .filter_map(|&(p, value)| rest.find(p).map(|at| (at, p, value)))
            .min_by_key(|&(at, p, _)| (at, std::cmp::Reverse(p.len())));
        let Some((at, placeholder, value)) = next else {
            break;
        };
        out.push_str(&rest[..at]);
        out.push_str(value);
        rest = &rest[at + placeholder.len()..];
        found = true;
    }
    out.push_str(rest);
    found.then_some(out)
}

/// The name a command is shown by: the file name of its program (`ruff` for
/// `/opt/venv/bin/ruff`).
pub(crate) fn program_name(argv: &[String]) -> String {
    let Some(program) = argv.first() else {
        return String::new();
    };
    Path::new(program)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or(program)
        .to_string()
}

/// The first line of `text` that is not blank, trimmed and cut to
/// [`MAX_DETAIL_CHARS`] characters.
pub(crate) fn first_line(text: &str) -> Option<String> {
    let line = text.lines().map(str::trim).find(|l| !l.is_empty())?;
    Some(match line.char_indices().nth(MAX_DETAIL_CHARS) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_string(),
    })
}

/// A duration as a message says it: `500 ms`, `10 s`, `2.5 s`.
pub(crate) fn seconds(d: Duration) -> String {
    if d < Duration::from_secs(1) {
        return format!("{} ms", d.as_millis());
    }
    if d.subsec_millis() == 0 {
        return format!("{} s", d.as_secs());
    }
    format!("{:.1} s", d.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exec_line_quotes_every_argument() {
        let argv = vec!["ruff".to_string(), "it's $HOME".to_string()];
        assert_eq!(
            toolbelt_exec::exec_line(&argv),
            r"exec 'ruff' 'it'\''s $HOME'"
        );
    }

    #[test]
    fn substitute_replaces_inside_arguments() {
        let mut argv = vec!["x".to_string(), "--file={path}".to_string()];
        assert!(substitute(&mut argv, &[("{path}", "/a b.py")]));
        assert_eq!(argv, ["x", "--file=/a b.py"]);
        assert!(!substitute(&mut argv, &[("{path}", "/c.py")]));
    }

    #[test]
    fn substitute_never_reads_a_value_as_a_placeholder() {
        let mut argv = vec!["{path}:{name}".to_string()];
        let pairs = [("{path}", "/w/{name}.py"), ("{name}", "/w/a.py")];
        assert!(substitute(&mut argv, &pairs));
        assert_eq!(argv, ["/w/{name}.py:/w/a.py"]);
        assert!(mentions(&argv, &["{name}"]));
        assert!(!mentions(&argv, &["{path}"]));
    }

    #[test]
    fn seconds_reads_naturally() {
        assert_eq!(seconds(Duration::from_millis(500)), "500 ms");
        assert_eq!(seconds(Duration::from_secs(10)), "10 s");
        assert_eq!(seconds(Duration::from_millis(2500)), "2.5 s");
    }

    #[test]
    fn program_name_is_the_file_name() {
        assert_eq!(program_name(&["/opt/venv/bin/ruff".to_string()]), "ruff");
        assert_eq!(program_name(&[]), "");
    }

    #[test]
    fn first_line_skips_blank_lines_and_cuts() {
        assert_eq!(
            first_line("\n  \n error: x \nmore").as_deref(),
            Some("error: x")
        );
        assert_eq!(first_line(""), None);
        let long = "é".repeat(300);
        let cut = first_line(&long).unwrap_or_default();
        assert_eq!(cut.chars().count(), MAX_DETAIL_CHARS + 1);
    }
}

use std::path::{Path, PathBuf};
use std::time::Duration;

use toolbelt_core::diagnostics::{Diagnostic, Severity};

use super::*;

/// Every async test's bound.
const TEST_TIMEOUT: Duration = Duration::from_secs(60);

/// The pids of processes whose command line holds `marker` (a unique argument
/// such as `100.4711` of a `sleep`).
pub(crate) fn leftovers(marker: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse().ok()) else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let args: Vec<&[u8]> = cmdline.split(|&b| b == 0).collect();
        if args.contains(&marker.as_bytes()) {
            found.push(pid);
        }
    }
    found
}

/// A temporary directory with `lint.py` and a script `lint.sh` holding `body`.
fn workspace(body: &str) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("lint.py");
    std::fs::write(&file, "x = undefined\n").unwrap();
    let script = dir.path().join("lint.sh");
    std::fs::write(&script, body).unwrap();
    (dir, file, script)
}

fn linter(argv: &[&str], parser: &str) -> Linter {
    Linter {
        name: "fake".to_string(),
        argv: argv.iter().map(|a| a.to_string()).collect(),
        parser: parser.parse().unwrap(),
        timeout: DEFAULT_LINT_TIMEOUT,
    }
}

async fn run_on(linter: &Linter, file: &Path, cwd: &Path) -> Result<Vec<Diagnostic>, LintError> {
    tokio::time::timeout(TEST_TIMEOUT, run(linter, file, "lint.py", cwd))
        .await
        .unwrap()
}

#[tokio::test]
async fn findings_with_exit_code_1_are_problems_not_errors() {
    let (dir, file, script) = workspace(
        r#"printf '[{"code":"F821","message":"Undefined name","location":{"row":1,"column":5},"end_location":{"row":1,"column":14},"filename":"%s"}]' "$1"
exit 1
"#,
    );
    let l = linter(&["sh", script.to_str().unwrap(), "{path}"], "ruff-json");
    let found = run_on(&l, &file, dir.path()).await.unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].one_line(), "lint.py:1:5 error F821 Undefined name");
    assert_eq!(found[0].source, "fake");
}

#[tokio::test]
async fn unreadable_output_with_a_failing_exit_is_an_error_naming_stderr() {
    let (dir, file, script) = workspace(
        "echo 'usage: fake [OPTIONS]'\necho 'error: unexpected argument --bogus' >&2\nexit 2\n",
    );
    let l = linter(&["sh", script.to_str().unwrap(), "{path}"], "ruff-json");
    let err = run_on(&l, &file, dir.path()).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "`fake` exited 2 and its output could not be read: error: unexpected argument --bogus"
    );
    assert!(matches!(
        err,
        LintError::Failed {
            code: 2,
            source: OutputError::Json(_),
            ..
        }
    ));
}

#[tokio::test]
async fn unreadable_output_with_exit_0_is_no_problem() {
    let (dir, file, script) = workspace("echo 'All checks passed!'\n");
    let l = linter(&["sh", script.to_str().unwrap()], "ruff-json");
    assert_eq!(run_on(&l, &file, dir.path()).await.unwrap(), vec![]);
}

#[tokio::test]
async fn gcc_lines_on_stderr_and_the_path_appended() {
    // No `{path}`: the path is the script's last argument.
    let (dir, file, script) = workspace(
        "echo \"$1:1:5: error: undefined name [E1]\" >&2\necho \"other.py:1:1: error: elsewhere\" >&2\nexit 1\n",
    );
    let l = linter(&["sh", script.to_str().unwrap()], "gcc");
    let found = run_on(&l, &file, dir.path()).await.unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].severity, Severity::Error);
    assert_eq!(found[0].code.as_deref(), Some("E1"));
}

#[tokio::test]
async fn gcc_output_without_such_lines_and_a_failing_exit_is_an_error() {
    let (dir, file, script) = workspace("echo 'segfault in the linter' >&2\nexit 3\n");
    let l = linter(&["sh", script.to_str().unwrap()], "gcc");
    let err = run_on(&l, &file, dir.path()).await.unwrap_err();
    assert!(matches!(
        err,
        LintError::Failed {
            code: 3,
            source: OutputError::NoMatch { .. },
            ..
        }
    ));
    assert!(
        err.to_string().ends_with(": segfault in the linter"),
        "{err}"
    );
}

#[tokio::test]
async fn a_missing_program_is_not_found_on_path() {
    let (dir, file, _) = workspace("");
    let mut l = linter(&["definitely-not-a-linter-4821", "{path}"], "gcc");
    l.name = "definitely-not-a-linter-4821".to_string();
    let err = run_on(&l, &file, dir.path()).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "`definitely-not-a-linter-4821` not found on PATH: install it, or fix the linter's command"
    );
}

#[tokio::test]
async fn a_missing_working_directory_cannot_start() {
    let (dir, file, _) = workspace("");
    let l = linter(&["true"], "gcc");
    let err = run_on(&l, &file, &dir.path().join("gone"))
        .await
        .unwrap_err();
    assert!(matches!(err, LintError::NotStarted { .. }), "{err:?}");
}

#[tokio::test]
async fn a_linter_past_its_timeout_is_killed_whole() {
    let marker = "100.4711";
    let (dir, file, _) = workspace("");
    let mut l = linter(&["sh", "-c", &format!("sleep {marker}; true")], "gcc");
    l.timeout = Duration::from_millis(300);
    let err = run_on(&l, &file, dir.path()).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "`fake` timed out after 300 ms; raise its timeout or make it faster"
    );
    assert_eq!(leftovers(marker), Vec::<u32>::new());
}

#[test]
fn linter_new_names_the_program_and_refuses_an_empty_command() {
    let l = Linter::new(
        vec!["/opt/venv/bin/ruff".into(), "check".into()],
        Parser::RuffJson,
    )
    .unwrap();
    assert_eq!(l.name, "ruff");
    assert_eq!(l.timeout, DEFAULT_LINT_TIMEOUT);
    assert!(matches!(
        Linter::new(vec![], Parser::Gcc),
        Err(LintError::EmptyCommand)
    ));
}

#[test]
fn argv_for_replaces_placeholders_or_appends() {
    let file = Path::new("/w/a.py");
    let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert_eq!(
        argv_for(&args(&["ruff", "{path}"]), file),
        ["ruff", "/w/a.py"]
    );
    assert_eq!(
        argv_for(&args(&["x", "--in={file}"]), file),
        ["x", "--in=/w/a.py"]
    );
    assert_eq!(argv_for(&args(&["x", "-q"]), file), ["x", "-q", "/w/a.py"]);
}

#[tokio::test]
async fn real_ruff_finds_an_undefined_name() {
    let Some(ruff) = crate::testing::ruff() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("lint.py");
    std::fs::write(&file, "import os\nx = undefined_name\n").unwrap();
    let l = Linter::new(
        [
            ruff.as_str(),
            "check",
            "--isolated",
            "--no-cache",
            "--output-format=json",
            "{path}",
        ]
        .map(String::from)
        .to_vec(),
        Parser::RuffJson,
    )
    .unwrap();
    let found = run_on(&l, &file, dir.path()).await.unwrap();
    let lines: Vec<_> = found.iter().map(Diagnostic::one_line).collect();
    assert!(
        lines.contains(&"lint.py:2:5 error F821 Undefined name `undefined_name`".to_string()),
        "{lines:?}"
    );
    assert!(
        lines.contains(&"lint.py:1:8 warning F401 `os` imported but unused".to_string()),
        "{lines:?}"
    );
}

#[test]
fn leftovers_finds_a_running_process() {
    let mut child = std::process::Command::new("sleep")
        .arg("100.2468")
        .spawn()
        .unwrap();
    // Right after the spawn its command line may still be empty (exec under way).
    let mut found = Vec::new();
    for _ in 0..100 {
        found = leftovers("100.2468");
        if !found.is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(found, vec![child.id()]);
    assert_eq!(leftovers("100.2468"), Vec::<u32>::new());
}

//! Diagnostics after an edit, through the binary: the syntax check's new errors
//! (old ones only counted), ruff as a linter and a formatter, `reject = "syntax"`,
//! a formatter that fails or hangs, the files a shell command changed, and
//! language servers that are missing, hang, crash or talk garbage (the repo's fake
//! server). The configuration lies beside the workspace (`--config`), as a
//! person's own file does: nothing needs trusting.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tempfile::TempDir;

use super::cli::{Run, command, finish, stdout_json};

/// The repo's fake language server.
const FAKE_LSP: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../toolbelt-diagnostics/fixtures/fake_lsp.py"
);

/// A workspace and a config file beside it.
struct Checked {
    dir: TempDir,
    root: PathBuf,
    config: PathBuf,
}

impl Checked {
    fn new(config: &str) -> Checked {
        let dir = TempDir::new().unwrap();
        let root = dir.path().join("ws");
        std::fs::create_dir(&root).unwrap();
        let path = dir.path().join("toolbelt.toml");
        std::fs::write(&path, config).unwrap();
        Checked {
            dir,
            root,
            config: path,
        }
    }

    fn write(&self, rel: &str, content: &str) {
        std::fs::write(self.root.join(rel), content).unwrap();
    }

    fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.root.join(rel)).unwrap()
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut all = vec!["--config", self.config.to_str().unwrap()];
        all.extend_from_slice(args);
        let mut c = command(&self.root, &all);
        c.env(
            "TOOLBELT_STATE_DIR",
            self.dir.path().join("state").to_str().unwrap(),
        )
        .env_remove("TOOLBELT_CHECKPOINTS")
        .env("PATH", checker_path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped());
        c
    }

    fn tb(&self, args: &[&str]) -> Run {
        let run = finish(self.command(args).spawn().unwrap(), args);
        assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
        run
    }

    /// `toolbelt call TOOL ARGS --json`: the envelope, whatever its status.
    fn call(&self, tool: &str, args: &Value) -> Value {
        let run = self.tb(&["call", tool, &args.to_string(), "--json"]);
        stdout_json(&run)
    }

    /// `read_file` then `edit_file`: the edit's envelope.
    fn edit(&self, path: &str, old: &str, new: &str) -> Value {
        let read = self.call("read_file", &json!({"path": path}));
        assert_eq!(read["status"], "success", "{read:#}");
        self.call(
            "edit_file",
            &json!({"path": path, "old_string": old, "new_string": new}),
        )
    }

    /// `toolbelt batch --json` of `calls`: the envelopes.
    fn batch(&self, calls: &[Value]) -> Vec<Value> {
        let file = self.dir.path().join("batch.json");
        std::fs::write(&file, Value::from(calls.to_vec()).to_string()).unwrap();
        let run = self.tb(&["batch", "--json", file.to_str().unwrap()]);
        stdout_json(&run).as_array().unwrap().clone()
    }
}

/// `PATH` with the tests' virtual environment first (ruff, basedpyright).
fn checker_path() -> String {
    let path = std::env::var("PATH").unwrap_or_default();
    match venv_bin() {
        Some(bin) => format!("{}:{path}", bin.display()),
        None => path,
    }
}

fn venv_bin() -> Option<PathBuf> {
    let venv = std::env::var_os("TOOLBELT_PY_VENV")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/toolbelt/venv"))
        })?;
    Some(venv.join("bin"))
}

/// Whether `program` can run for these tests; CI (`TOOLBELT_REQUIRE_CHECKERS=1`)
/// fails instead of skipping.
fn have(program: &str) -> bool {
    let found = std::env::split_paths(&checker_path()).any(|dir| dir.join(program).is_file());
    if !found {
        assert!(
            std::env::var("TOOLBELT_REQUIRE_CHECKERS").as_deref() != Ok("1"),
            "{program} is not installed (tests/python/setup.sh installs it)"
        );
        eprintln!("skipped: {program} is not installed (tests/python/setup.sh installs it)");
    }
    found
}

/// A Python file of `n` lines with an old syntax error on line 40.
fn python_with_old_error() -> String {
    let mut lines: Vec<String> = vec![
        "import os".into(),
        "def f():".into(),
        "    return os.sep".into(),
    ];
    while lines.len() < 39 {
        lines.push(format!("x{} = {}", lines.len(), lines.len()));
    }
    lines.push("def g(:".into());
    lines.push("    return 1".into());
    for i in 0..5 {
        lines.push(format!("y{i} = {i}"));
    }
    lines.join("\n") + "\n"
}

fn summary(env: &Value) -> &Value {
    &env["data"]["diagnostics_summary"]
}

#[test]
fn an_edit_that_breaks_the_syntax_is_written_and_says_so_once() {
    let ws = Checked::new("");
    ws.write("x.py", &python_with_old_error());
    let env = ws.edit("x.py", "def f():", "def f(:");
    assert_eq!(env["status"], "success", "{env:#}");
    assert!(ws.read("x.py").contains("def f(:"));
    let text = env["text"].as_str().unwrap();
    assert!(text.contains("1 new error"), "{text}");
    assert!(text.contains("x.py:2:"), "{text}");
    assert!(!text.contains("x.py:40:"), "{text}");
    assert_eq!(summary(&env)["new"], 1, "{env:#}");
    assert_eq!(summary(&env)["already_there"], 1, "{env:#}");
    assert_eq!(env["data"]["diagnostics"][0]["new"], true);
    assert_eq!(env["data"]["diagnostics"][0]["line"], 2);

    // The fixing edit: one fixed, nothing new.
    let env = ws.edit("x.py", "def f(:", "def f():");
    let text = env["text"].as_str().unwrap();
    assert!(
        text.contains("0 new errors (1 fixed, 1 already there)"),
        "{text}"
    );

    // ruff as the linter says it in its words, still one new error.
    if !have("ruff") {
        return;
    }
    std::fs::write(
        &ws.config,
        "[lint.python]\ncommand = [\"ruff\", \"check\", \"--output-format=json\", \"{path}\"]\nparser = \"ruff-json\"\n",
    )
    .unwrap();
    let env = ws.edit("x.py", "def f():", "def f(:");
    assert_eq!(env["status"], "success", "{env:#}");
    let text = env["text"].as_str().unwrap();
    assert!(text.contains("1 new error"), "{text}");
    assert!(text.contains("x.py:2:7 error invalid-syntax"), "{text}");
    assert_eq!(summary(&env)["already_there"], 1, "{env:#}");
    assert_eq!(env["data"]["diagnostics"][0]["source"], "ruff");
}

#[test]
fn reject_syntax_refuses_an_unbalanced_brace_and_leaves_the_file() {
    let ws = Checked::new("[diagnostics]\nreject = \"syntax\"\n");
    let before = "fn main() {\n    let x = 1;\n    println!(\"{x}\");\n}\n";
    ws.write("src.rs", before);
    let env = ws.edit(
        "src.rs",
        "    let x = 1;\n",
        "    if true {\n    let x = 1;\n",
    );
    assert_eq!(env["status"], "error", "{env:#}");
    assert_eq!(env["error"]["code"], "INVALID_PARAMS", "{env:#}");
    assert_eq!(ws.read("src.rs"), before);
    let text = env["text"].as_str().unwrap();
    assert!(text.contains("not written"), "{text}");
    assert!(text.contains("src.rs:"), "{text}");
    assert!(text.contains("as the change would make them"), "{text}");
    assert!(text.contains("as they are"), "{text}");
    // A good edit still goes through.
    let env = ws.call(
        "edit_file",
        &json!({"path": "src.rs", "old_string": "let x = 1;", "new_string": "let x = 2;"}),
    );
    assert_eq!(env["status"], "success", "{env:#}");
}

/// An unformatted 200-line Python file.
fn unformatted() -> String {
    let mut s = String::new();
    for i in 0..100 {
        s.push_str(&format!("a{i}=[1,2 ,3]\n"));
        s.push_str(&format!("def f{i}( x ):  return x\n"));
    }
    s
}

fn git(root: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@t"])
        .args(args)
        .current_dir(root)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The hunks of a unified diff (from its first `@@`), without the function
/// context git adds after a hunk's header.
fn hunks(diff: &str) -> String {
    let from = diff.find("@@").map_or(diff, |i| &diff[i..]);
    from.lines()
        .map(
            |l| match l.strip_prefix("@@ ").and_then(|r| r.find(" @@")) {
                Some(end) => &l[..end + 6],
                None => l,
            },
        )
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn a_formatter_changes_only_the_edited_lines_and_the_next_edit_is_not_refused() {
    if !have("ruff") {
        return;
    }
    for (scope, whole) in [("changed-lines", false), ("file", true)] {
        let ws = Checked::new(&format!(
            "[format.python]\ncommand = [\"ruff\", \"format\", \"{{path}}\"]\nscope = \"{scope}\"\n"
        ));
        ws.write("x.py", &unformatted());
        git(&ws.root, &["init", "-q"]);
        git(&ws.root, &["add", "."]);
        git(&ws.root, &["commit", "-qm", "start"]);
        let env = ws.edit("x.py", "a50=[1,2 ,3]\n", "a50=[4,5 ,6]\n");
        assert_eq!(env["status"], "success", "{env:#}");
        let stat = git(&ws.root, &["diff", "--numstat"]);
        let changed: usize = stat.split_whitespace().next().unwrap().parse().unwrap();
        if whole {
            assert!(changed > 100, "{scope}: {stat}");
        } else {
            assert!(changed <= 2, "{scope}: {stat}");
            assert!(ws.read("x.py").contains("a50 = [4, 5, 6]\n"), "{scope}");
            assert!(ws.read("x.py").contains("a51=[1,2 ,3]\n"), "{scope}");
        }
        let git_diff = git(&ws.root, &["diff"]);
        assert_eq!(
            hunks(env["data"]["diff"].as_str().unwrap()),
            hunks(&git_diff),
            "{scope}"
        );
        // The stamp is of the formatted bytes: the next edit needs no re-read.
        let env = ws.call(
            "edit_file",
            &json!({"path": "x.py", "old_string": "def f10(", "new_string": "def g10("}),
        );
        assert_eq!(env["status"], "success", "{scope}: {env:#}");
    }
}

/// Whether a process whose command line holds `marker` is running.
fn running(marker: &str) -> bool {
    std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
        std::fs::read(e.path().join("cmdline"))
            .is_ok_and(|c| String::from_utf8_lossy(&c).contains(marker))
    })
}

#[test]
fn a_formatter_that_fails_or_hangs_leaves_the_content_unformatted_with_a_note() {
    for (command, says) in [
        (r#"["sh", "-c", "exit 1", "{path}"]"#, "sh"),
        (r#"["sh", "-c", "sleep 100.0731", "{path}"]"#, "timed out"),
    ] {
        let ws = Checked::new(&format!(
            "[format.python]\ncommand = {command}\ntimeout_ms = 1500\n"
        ));
        ws.write("x.py", "a=1\n");
        let started = Instant::now();
        let env = ws.edit("x.py", "a=1", "a=[1,2 ,3]");
        assert_eq!(env["status"], "success", "{env:#}");
        assert!(started.elapsed() < Duration::from_secs(20));
        assert_eq!(ws.read("x.py"), "a=[1,2 ,3]\n");
        let text = env["text"].as_str().unwrap();
        assert!(text.contains("Note: formatter"), "{text}");
        assert!(text.contains(says), "{text}");
        assert!(
            !running("100.0731"),
            "the formatter's sleep is left running"
        );
    }
}

#[test]
fn a_shell_command_that_breaks_a_file_reports_it_with_after_bash() {
    let ws = Checked::new("[diagnostics]\nafter_bash = true\n");
    ws.write("x.py", "def f(a):\n    return a\n");
    let env = ws.call(
        "bash",
        &json!({"command": "sed -i 's/return a/return a +/' x.py"}),
    );
    assert_eq!(env["status"], "success", "{env:#}");
    let text = env["text"].as_str().unwrap();
    assert!(text.contains("x.py:2:"), "{text}");
    assert!(env["data"]["diagnostics"][0]["path"] == "x.py", "{env:#}");
    // A command that changes nothing says nothing more.
    let env = ws.call("bash", &json!({"command": "echo hi"}));
    assert!(env["data"].get("diagnostics").is_none(), "{env:#}");
}

/// `[lsp.fake]` running the fake server with `args`, for `.fk` files.
fn fake_lsp(budget_ms: u64, args: &[&str]) -> String {
    let mut command = vec!["python3".to_string(), FAKE_LSP.to_string()];
    command.extend(args.iter().map(|a| (*a).to_string()));
    format!(
        "[diagnostics]\nbudget_ms = {budget_ms}\n[lsp.fake]\ncommand = {}\nextensions = [\".fk\"]\nstartup_timeout_ms = 60000\n",
        serde_json::to_string(&command).unwrap()
    )
}

fn edits(n: usize) -> Vec<Value> {
    let mut calls = vec![json!({"tool": "read_file", "params": {"path": "a.fk"}})];
    for i in 0..n {
        calls.push(json!({"tool": "edit_file", "params": {
            "path": "a.fk",
            "old_string": format!("line {i}\n"),
            "new_string": format!("line {}\n", i + 1),
        }}));
    }
    calls
}

#[test]
fn a_language_server_that_is_missing_or_hangs_never_holds_an_edit() {
    // Missing: every edit succeeds, the note comes once, doctor names it.
    let ws = Checked::new(
        "[lsp.fake]\ncommand = [\"no-such-ls\"]\nextensions = [\".fk\"]\ninstall = \"pip install no-such-ls\"\n",
    );
    ws.write("a.fk", "line 0\n");
    let envs = ws.batch(&edits(5));
    for env in &envs {
        assert_eq!(env["status"], "success", "{env:#}");
    }
    let notes: Vec<usize> = (1..envs.len())
        .filter(|&i| envs[i]["text"].as_str().unwrap().contains("no-such-ls"))
        .collect();
    assert_eq!(notes, [1], "{envs:#?}");
    let doctor = ws.tb(&["doctor"]);
    assert!(doctor.stdout.contains("no-such-ls"), "{}", doctor.stdout);

    // Never answers initialize: each edit within the budget and a little more.
    let tag = format!("hang-{}", std::process::id());
    let ws = Checked::new(&fake_lsp(300, &["--hang-initialize", "--tag", &tag]));
    ws.write("a.fk", "line 0\n");
    let started = Instant::now();
    let envs = ws.batch(&edits(20));
    let took = started.elapsed();
    for env in &envs[1..] {
        assert_eq!(env["status"], "success", "{env:#}");
        let ms = env["stats"]["time_ms"].as_u64().unwrap();
        assert!(ms < 300 + 200 + 300, "an edit took {ms} ms: {env:#}");
    }
    assert!(took < Duration::from_secs(30), "{took:?}");
    std::thread::sleep(Duration::from_millis(500));
    assert!(!running(&tag), "the hung server outlived toolbelt");
}

#[test]
fn a_language_server_that_crashes_or_talks_garbage_is_contained() {
    for (args, what) in [
        (vec!["--exit-after", "2"], "crash"),
        (vec!["--garbage"], "garbage"),
        (vec!["--huge-length"], "huge"),
    ] {
        let tag = format!("{what}-{}", std::process::id());
        let mut all = args.clone();
        all.extend(["--tag", &tag]);
        let ws = Checked::new(&fake_lsp(500, &all));
        ws.write("a.fk", "line 0\n");
        let envs = ws.batch(&edits(8));
        for env in &envs {
            assert_eq!(env["status"], "success", "{what}: {env:#}");
        }
        assert!(ws.read("a.fk").contains("line 8"), "{what}");
        std::thread::sleep(Duration::from_millis(500));
        assert!(!running(&tag), "{what}: a server process outlived toolbelt");
    }
}

#[test]
fn a_language_server_answers_with_fresh_problems_or_pending_never_stale() {
    let ws = Checked::new(&fake_lsp(3000, &[]));
    ws.write("a.fk", "fine\n");
    let mut calls = vec![json!({"tool": "read_file", "params": {"path": "a.fk"}})];
    for i in 0..10 {
        let (old, new) = if i % 2 == 0 {
            ("fine\n", "BROKEN\n")
        } else {
            ("BROKEN\n", "fine\n")
        };
        calls.push(json!({"tool": "edit_file", "params": {"path": "a.fk", "old_string": old, "new_string": new}}));
    }
    let envs = ws.batch(&calls);
    for (i, env) in envs[1..].iter().enumerate() {
        assert_eq!(env["status"], "success", "{env:#}");
        let text = env["text"].as_str().unwrap();
        let broken_now = i % 2 == 0;
        if broken_now {
            assert!(
                text.contains("a.fk:1:1 error fake-broken") || text.contains("pending"),
                "edit {i}: {text}"
            );
        } else {
            assert!(
                !text.contains("fake-broken broken here"),
                "edit {i} is stale: {text}"
            );
        }
    }
    // Slow: pending, never the previous version's problems.
    let ws = Checked::new(&fake_lsp(400, &["--lag", "5"]));
    ws.write("a.fk", "BROKEN\n");
    let envs = ws.batch(&[
        json!({"tool": "read_file", "params": {"path": "a.fk"}}),
        json!({"tool": "edit_file", "params": {"path": "a.fk", "old_string": "BROKEN", "new_string": "fine"}}),
    ]);
    let text = envs[1]["text"].as_str().unwrap();
    assert!(text.contains("pending"), "{text}");
    assert!(!text.contains("fake-broken"), "{text}");
}

#[test]
fn the_agent_reads_the_new_error_block_in_its_transcript() {
    use toolbelt_agent::ProviderKind;
    use toolbelt_agent::testing::{Reply, Script, ScriptedServer};

    let ws = Checked::new("");
    ws.write("x.py", "import os\ndef f():\n    return os.sep\n");
    let server = ScriptedServer::start(Script::new(
        ProviderKind::OpenAi,
        vec![
            Reply::call("read_file", json!({"path": "x.py"}).to_string()),
            Reply::call(
                "edit_file",
                json!({"path": "x.py", "old_string": "def f():", "new_string": "def f(:"})
                    .to_string(),
            ),
            Reply::text("done"),
        ],
    ))
    .unwrap();
    let mut cmd = ws.command(&["agent", "-p", "break it", "--json"]);
    cmd.env("TOOLBELT_AGENT_PROVIDER", "openai")
        .env("TOOLBELT_AGENT_MODEL", "scripted-model")
        .env("OPENAI_BASE_URL", server.base_url())
        .env("OPENAI_API_KEY", "sk-test");
    let run = finish(cmd.spawn().unwrap(), &["agent"]);
    assert_eq!(run.code, 0, "{run:#?}");
    let (_, sent, _) =
        &super::agent::last_tool_results(ProviderKind::OpenAi, &server.requests()[2])[0];
    assert!(
        sent.contains("Problems after this change: 1 new error"),
        "{sent}"
    );
    assert!(sent.contains("x.py:2:"), "{sent}");
    // And in the run's own record of the result.
    assert!(
        run.stdout.contains("Problems after this change"),
        "{}",
        run.stdout
    );
}

#[test]
fn no_language_server_outlives_serve() {
    let tag = format!("serve-{}", std::process::id());
    let ws = Checked::new(&fake_lsp(3000, &["--tag", &tag]));
    ws.write("a.fk", "fine\n");
    let mut cmd = ws.command(&[]);
    cmd.stdout(Stdio::null());
    let served = super::cron::Served::from_command(cmd);
    let post = |path: &str, body: Value| super::hooks::post(&served.url, path, &body);
    post("/v1/tools/read_file", json!({"path": "a.fk"}));
    let env = post(
        "/v1/tools/edit_file",
        json!({"path": "a.fk", "old_string": "fine", "new_string": "BROKEN"}),
    );
    assert_eq!(env["status"], "success", "{env:#}");
    assert!(
        env["data"]["diagnostics"][0]["code"] == "fake-broken",
        "{env:#}"
    );
    assert!(running(&tag));
    served.stop();
    let deadline = Instant::now() + Duration::from_secs(5);
    while running(&tag) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(!running(&tag), "a language server outlived toolbelt serve");
}

#[test]
fn a_workspaces_own_checkers_run_only_once_trusted() {
    let dir = TempDir::new().unwrap();
    let root = dir.path().join("ws");
    std::fs::create_dir(&root).unwrap();
    let marker = dir.path().join("ran");
    std::fs::write(
        root.join("toolbelt.toml"),
        format!(
            "[lint.python]\ncommand = [\"sh\", \"-c\", \"touch {}\", \"{{path}}\"]\nparser = \"gcc\"\n",
            marker.display()
        ),
    )
    .unwrap();
    std::fs::write(root.join("x.py"), "a = 1\n").unwrap();
    let tb = |args: &[&str]| {
        let mut c = command(&root, args);
        c.env("XDG_CONFIG_HOME", dir.path().join("config"))
            .env("TOOLBELT_STATE_DIR", dir.path().join("state"))
            .stdin(Stdio::null())
            .stdout(Stdio::piped());
        finish(c.spawn().unwrap(), args)
    };
    let edit = |n: u32| {
        tb(&["call", "read_file", r#"{"path":"x.py"}"#]);
        let args = json!({"path": "x.py", "old_string": format!("a = {n}"), "new_string": format!("a = {}", n + 1)});
        tb(&["call", "edit_file", &args.to_string(), "--json"])
    };
    let run = edit(1);
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(!marker.exists(), "an untrusted linter ran");
    let listed = tb(&["hooks", "list"]);
    assert!(
        listed.stdout.contains("checker lint.python"),
        "{}",
        listed.stdout
    );
    let trusted = tb(&["hooks", "trust", "--yes"]);
    assert_eq!(trusted.code, 0, "{trusted:#?}");
    let run = edit(2);
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(marker.exists(), "the trusted linter did not run");
}

#[test]
fn garbage_from_a_language_server_does_not_grow_memory() {
    // The peak memory of `toolbelt serve` after 8 edits of a file the server serves.
    let peak = |args: &[&str]| -> u64 {
        let ws = Checked::new(&fake_lsp(500, args));
        ws.write("a.fk", "line 0\n");
        let mut cmd = ws.command(&[]);
        cmd.stdout(Stdio::null());
        let served = super::cron::Served::from_command(cmd);
        let post = |path: &str, body: Value| super::hooks::post(&served.url, path, &body);
        post("/v1/tools/read_file", json!({"path": "a.fk"}));
        for i in 0..8 {
            let env = post(
                "/v1/tools/edit_file",
                json!({"path": "a.fk", "old_string": format!("line {i}"), "new_string": format!("line {}", i + 1)}),
            );
            assert_eq!(env["status"], "success", "{args:?}: {env:#}");
        }
        let kib = super::cli::peak_rss_kib(served.pid()).unwrap();
        served.stop();
        kib
    };
    let healthy = peak(&[]);
    for fault in ["--huge-length", "--garbage"] {
        let kib = peak(&[fault]);
        assert!(
            kib < healthy + 10 * 1024,
            "{fault}: peak {kib} KiB against {healthy} KiB with a healthy server"
        );
    }
}

#[test]
fn an_edit_that_breaks_another_open_file_names_it() {
    let ws = Checked::new(&fake_lsp(3000, &["--cross"]));
    ws.write("a.fk", "DEFINES foo\n");
    ws.write("b.fk", "USES foo\n");
    let edit = |path: &str, old: &str, new: &str| json!({"tool": "edit_file", "params": {"path": path, "old_string": old, "new_string": new}});
    let envs = ws.batch(&[
        json!({"tool": "read_file", "params": {"path": "a.fk"}}),
        json!({"tool": "read_file", "params": {"path": "b.fk"}}),
        edit("b.fk", "USES foo\n", "USES foo\nmore\n"),
        edit("a.fk", "DEFINES foo\n", "DEFINES foo\nmore\n"),
        edit("a.fk", "DEFINES foo\n", "DEFINES bar\n"),
        edit("a.fk", "DEFINES bar\n", "DEFINES foo\n"),
    ]);
    for env in &envs {
        assert_eq!(env["status"], "success", "{env:#}");
    }
    let broke = envs[4]["text"].as_str().unwrap();
    assert!(broke.contains("b.fk:1:"), "{broke}");
    assert!(broke.contains("foo is not defined"), "{broke}");
    let mended = envs[5]["text"].as_str().unwrap();
    assert!(!mended.contains("b.fk"), "{mended}");
}

#[test]
fn every_write_tool_reports_what_it_broke() {
    let ws = Checked::new("");
    // write_file: a new file is all new problems.
    let env = ws.call(
        "write_file",
        &json!({"path": "new.py", "content": "def f(:\n    pass\n"}),
    );
    assert_eq!(env["status"], "success", "{env:#}");
    assert_eq!(env["data"]["diagnostics"][0]["path"], "new.py", "{env:#}");
    assert_eq!(env["data"]["diagnostics_summary"]["new"], 1, "{env:#}");

    // apply_patch: each file it writes.
    ws.write("a.json", "{\"a\": 1}\n");
    ws.call("read_file", &json!({"path": "a.json"}));
    let patch =
        "*** Begin Patch\n*** Update File: a.json\n@@\n-{\"a\": 1}\n+{\"a\": 1,,}\n*** End Patch\n";
    let env = ws.call("apply_patch", &json!({"patch": patch}));
    assert_eq!(env["status"], "success", "{env:#}");
    assert!(
        env["text"].as_str().unwrap().contains("a.json:1:"),
        "{env:#}"
    );

    // multi_edit: one report for the file.
    ws.write("b.toml", "[a]\nx = 1\ny = 2\n");
    ws.call("read_file", &json!({"path": "b.toml"}));
    let env = ws.call(
        "multi_edit",
        &json!({"path": "b.toml", "edits": [
            {"old_string": "x = 1", "new_string": "x = = 1"},
            {"old_string": "y = 2", "new_string": "y = 3"},
        ]}),
    );
    assert_eq!(env["status"], "success", "{env:#}");
    assert!(
        env["text"].as_str().unwrap().contains("b.toml:2:"),
        "{env:#}"
    );

    // diagnostics: on demand, the directory's problems all counted as there.
    let env = ws.call("diagnostics", &json!({}));
    assert_eq!(env["status"], "success", "{env:#}");
    let text = env["text"].as_str().unwrap();
    for f in ["new.py", "a.json", "b.toml"] {
        assert!(text.contains(f), "{f}: {text}");
    }
    assert_eq!(env["data"]["diagnostics_summary"]["new"], 0, "{env:#}");
}

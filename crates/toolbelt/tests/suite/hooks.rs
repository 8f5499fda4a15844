//! The person's hooks through the binary: a hook's deny holds on every front end
//! (`call`, `batch`, `serve`, `agent -p` and its subagents, a cron prompt job), a
//! rule wins over a hook's allow and judges its rewrites, a hook that hangs,
//! crashes or talks nonsense applies its failure policy and leaves no process, a
//! `write(...)` condition sees through the shell, a post hook reverts a call or
//! adds context. Every hook is the user's own (`$XDG_CONFIG_HOME` in a temporary
//! directory), so no test touches the real home.

use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tempfile::TempDir;
use toolbelt_agent::ProviderKind;
use toolbelt_agent::testing::{Reply, Script, ScriptedServer};

use super::agent::last_tool_results;
use super::cli::{Run, command, envelope, finish, peak_rss_kib, stdout_json};
use super::cron::{Served, delivered};
use super::sandbox::running_with;
use super::subagents::{events, first_user, with_model};

/// A workspace root and a user configuration holding hooks, side by side in a
/// temporary directory.
struct Hooked {
    dir: TempDir,
    root: PathBuf,
}

impl Hooked {
    /// A workspace whose user has `hooks` (TOML) in their `toolbelt.toml`.
    fn new(hooks: &str) -> Hooked {
        let dir = TempDir::new().unwrap();
        let root = dir.path().join("ws");
        std::fs::create_dir(&root).unwrap();
        let ws = Hooked { dir, root };
        ws.hooks(hooks);
        ws
    }

    /// Makes `hooks` the user's hooks.
    fn hooks(&self, hooks: &str) {
        let config = self.dir.path().join("config").join("toolbelt");
        std::fs::create_dir_all(&config).unwrap();
        std::fs::write(config.join("toolbelt.toml"), hooks).unwrap();
    }

    /// Writes `content` at `rel` in the workspace.
    fn file(&self, rel: &str, content: &str) {
        let path = self.root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }

    fn read(&self, rel: &str) -> Option<Vec<u8>> {
        std::fs::read(self.root.join(rel)).ok()
    }

    /// An executable script outside the workspace; its path.
    fn script(&self, name: &str, body: &str) -> String {
        let path = self.dir.path().join(name);
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path.to_str().unwrap().to_string()
    }

    /// Gives the hooks to `cmd`: the user configuration is this one.
    fn configure<'a>(&self, cmd: &'a mut Command) -> &'a mut Command {
        cmd.env("XDG_CONFIG_HOME", self.dir.path().join("config"))
            .env_remove("TOOLBELT_CHECKPOINTS")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
    }

    /// `toolbelt --root <root> <args>` with these hooks, started.
    fn spawn(&self, args: &[&str]) -> Child {
        let mut cmd = command(&self.root, args);
        self.configure(&mut cmd).spawn().unwrap()
    }

    /// `toolbelt --root <root> <args>` with these hooks, to its end.
    fn tb(&self, args: &[&str]) -> Run {
        finish(self.spawn(args), args)
    }

    /// `toolbelt call TOOL ARGS --json`: its exit status and envelope.
    fn call(&self, tool: &str, args: &Value) -> (i32, Value) {
        let run = self.tb(&["call", tool, &args.to_string(), "--json"]);
        (run.code, envelope(&run))
    }

    /// `toolbelt call bash` of `line`, started.
    fn spawn_bash(&self, line: &str) -> Child {
        let args = json!({ "command": line }).to_string();
        self.spawn(&["call", "bash", &args, "--json"])
    }

    /// `toolbelt batch --json` of `calls`, started.
    fn spawn_batch(&self, calls: &[Value]) -> Child {
        let file = self.dir.path().join("batch.json");
        std::fs::write(&file, Value::from(calls.to_vec()).to_string()).unwrap();
        self.spawn(&["batch", "--json", file.to_str().unwrap()])
    }
}

/// The envelopes `toolbelt batch --json` printed.
fn batch_envelopes(run: &Run) -> Vec<Value> {
    stdout_json(run).as_array().unwrap().clone()
}

/// A bash call of a batch.
fn bash_call(line: &str) -> Value {
    json!({"tool": "bash", "params": {"command": line}})
}

/// The error code of an envelope (`""` for a success).
fn code(env: &Value) -> &str {
    env["error"]["code"].as_str().unwrap_or_default()
}

fn text(env: &Value) -> &str {
    env["text"].as_str().unwrap()
}

/// The outcomes of the hooks that ran for a call, in order.
fn outcomes(env: &Value) -> Vec<(String, String)> {
    env["context"]["hooks"]
        .as_array()
        .map(|runs| {
            runs.iter()
                .map(|r| {
                    (
                        r["name"].as_str().unwrap().to_string(),
                        r["outcome"].as_str().unwrap().to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// `POST <url><path>` with a JSON body, which must answer 200: the JSON answer.
pub(super) fn post(url: &str, path: &str, body: &Value) -> Value {
    let (status, answer) = super::replicas::post_json(url, path, body);
    assert_eq!(status, 200, "POST {url}{path}: {answer}");
    answer
}

/// The hook of the first test: no `touch`.
const NO_TOUCH: &str = r#"
[[hooks.pre_tool_use]]
name = "no-touch"
if = "bash(touch:*)"
command = "echo 'no touching' >&2; exit 2"
"#;

/// What a model is told of a call the `no-touch` hook denied.
#[track_caller]
fn says_denied_by_no_touch(text: &str) {
    assert!(
        text.contains("denied by hook 'no-touch'") && text.contains("no touching"),
        "{text}"
    );
}

/// A call refused by `no-touch`, as an envelope.
#[track_caller]
fn denied_by_no_touch(env: &Value) {
    assert_eq!(code(env), "ACCESS_DENIED", "{env:#}");
    says_denied_by_no_touch(text(env));
    assert_eq!(env["data"]["hook"], "no-touch", "{env:#}");
}

#[test]
fn a_hooks_deny_holds_on_every_front_end() {
    let ws = Hooked::new(NO_TOUCH);
    let touch = json!({"command": "touch marker"});
    let server = ScriptedServer::start(
        Script::new(
            ProviderKind::OpenAi,
            vec![
                Reply::call("bash", touch.to_string()),
                Reply::calls(vec![
                    (
                        "task",
                        json!({"description": "touch", "prompt": "FG-CHILD touch the marker", "subagent_type": "general-purpose"}).to_string(),
                    ),
                    (
                        "spawn",
                        json!({"task": "BG-CHILD touch the marker", "label": "bg"}).to_string(),
                    ),
                ]),
                Reply::text("Waiting for the background report."),
                Reply::text("Nobody could touch it."),
            ],
        )
        .route(
            "FG-CHILD",
            vec![
                Reply::call("bash", touch.to_string()),
                Reply::text("fg: denied"),
            ],
        )
        .route(
            "BG-CHILD",
            vec![
                Reply::call("bash", touch.to_string()),
                Reply::text("bg: denied"),
            ],
        )
        .route(
            "CRON-JOB",
            vec![
                Reply::call("bash", touch.to_string()),
                Reply::text("cron: denied"),
            ],
        ),
    )
    .unwrap();
    ws.file("toolbelt.toml", "[channels.local]\nkind = \"file\"\n");
    let model = |args: &[&str]| -> Run {
        let mut cmd = with_model(&ws.root, &server, args);
        finish(ws.configure(&mut cmd).spawn().unwrap(), args)
    };

    // toolbelt call
    let (status, env) = ws.call("bash", &touch);
    assert_eq!(status, 1);
    denied_by_no_touch(&env);
    assert_eq!(
        outcomes(&env),
        [("no-touch".to_string(), "denied".to_string())]
    );

    // toolbelt batch
    let run = finish(
        ws.spawn_batch(&[bash_call("touch marker"), bash_call("echo fine")]),
        &["batch"],
    );
    assert_eq!(run.code, 1, "{run:#?}");
    let envs = batch_envelopes(&run);
    denied_by_no_touch(&envs[0]);
    assert_eq!(envs[1]["data"]["stdout"], "fine\n", "{:#}", envs[1]);

    // POST /v1/tools/bash on toolbelt serve
    let mut cmd = command(&ws.root, &[]);
    ws.configure(&mut cmd);
    let served = Served::from_command(cmd);
    let env = post(&served.url, "/v1/tools/bash", &touch);
    served.stop();
    denied_by_no_touch(&env);

    // The job is due a second after it is added: the agent runs meanwhile (after
    // `serve`, whose scheduler would fire it).
    let added = Instant::now();
    let run = model(&[
        "cron",
        "add",
        "touch-job",
        "--schedule",
        "every 1s",
        "--prompt",
        "CRON-JOB touch the marker",
        "--channel",
        "local",
    ]);
    assert_eq!(run.code, 0, "{run:#?}");

    // toolbelt agent -p, a task subagent and a spawned one: each model gets the
    // denial back as the call's result, and the run goes on to its answer.
    let run = model(&["agent", "-p", "MAIN-RUN touch the marker", "--json"]);
    assert_eq!(run.code, 0, "{run:#?}");
    let events = events(&run.stdout);
    let end = events.iter().find(|e| e["type"] == "run_ended").unwrap();
    assert_eq!(end["message"], "Nobody could touch it.");
    let requests = server.requests();
    let conversation = |when: &str| -> Vec<_> {
        requests
            .iter()
            .filter(|r| first_user(r).contains(when))
            .collect()
    };
    let main = conversation("MAIN-RUN");
    let (_, sent, _) = &last_tool_results(ProviderKind::OpenAi, main[1])[0];
    says_denied_by_no_touch(sent);
    for child in ["FG-CHILD", "BG-CHILD"] {
        let asked = conversation(child);
        assert_eq!(asked.len(), 2, "{child}");
        let (_, sent, _) = &last_tool_results(ProviderKind::OpenAi, asked[1])[0];
        says_denied_by_no_touch(sent);
    }

    // A cron prompt job.
    std::thread::sleep(Duration::from_millis(1_100).saturating_sub(added.elapsed()));
    let run = model(&["cron", "run", "--once"]);
    assert_eq!(run.code, 0, "{run:#?}");
    let sent = delivered(&ws.root);
    assert_eq!(sent.len(), 1, "{sent:#?}\n{run:#?}");
    assert_eq!(sent[0]["content"], "cron: denied");
    let requests = server.requests();
    let job: Vec<_> = requests
        .iter()
        .filter(|r| first_user(r).contains("CRON-JOB"))
        .collect();
    assert_eq!(job.len(), 2);
    let (_, sent, _) = &last_tool_results(ProviderKind::OpenAi, job[1])[0];
    says_denied_by_no_touch(sent);

    assert!(ws.read("marker").is_none(), "a front end let the touch run");
}

/// A `pre_tool_use` hook that runs `first`, then prints `json`, for the calls
/// `condition` (a `match` or an `if`) covers.
fn printing_hook(name: &str, condition: &str, first: &str, json: &Value) -> String {
    format!(
        "[[hooks.pre_tool_use]]\nname = \"{name}\"\n{condition}\ncommand = '''{first}echo '{json}' '''\n"
    )
}

#[test]
fn rules_win_over_a_hooks_allow_and_judge_its_rewrites() {
    // The last writer in configuration order wins, whatever finishes first: A
    // answers 0.2 s after B. Started first: its 50 calls take 10 s.
    let rewrite =
        |command: Value| json!({"hookSpecificOutput": {"updatedInput": {"command": command}}});
    let race = Hooked::new(
        &[
            printing_hook(
                "A",
                "match = \"bash\"",
                "sleep 0.2; ",
                &rewrite(json!("echo A")),
            ),
            printing_hook("B", "match = \"bash\"", "", &rewrite(json!("echo B"))),
        ]
        .concat(),
    );
    let racing = race.spawn_batch(&vec![bash_call("echo original"); 50]);

    let ws = Hooked::new(
        &[
            printing_hook(
                "yes-man",
                "if = \"bash(rm:*)\"",
                "",
                &json!({"hookSpecificOutput": {"permissionDecision": "allow"}}),
            ),
            printing_hook(
                "rewriter",
                "if = \"bash(echo please-rewrite:*)\"",
                "",
                &rewrite(json!("echo rewritten")),
            ),
            printing_hook(
                "bad-rewriter",
                "if = \"bash(echo bad-rewrite:*)\"",
                "",
                &rewrite(json!(5)),
            ),
            printing_hook(
                "to-rm",
                "if = \"bash(echo to-rm:*)\"",
                "",
                &rewrite(json!("rm -rf x")),
            ),
            "[[hooks.pre_tool_use]]\nname = \"forbidder\"\nif = \"bash(echo forbidden:*)\"\ndeny = \"not this one\"\n".to_string(),
        ]
        .concat(),
    );
    ws.file("toolbelt.toml", "[permissions]\ndeny = [\"bash(rm:*)\"]\n");
    ws.file("x", "keep me\n");
    let bash = |line: &str| ws.call("bash", &json!({ "command": line }));

    // A hook's allow does not override a deny rule.
    let (status, env) = bash("rm x");
    assert_eq!((status, code(&env)), (1, "ACCESS_DENIED"), "{env:#}");
    assert!(text(&env).contains("bash(rm:*)"), "{env:#}");

    // A rewrite runs in place of the call.
    let (status, rewritten) = bash("echo please-rewrite");
    assert_eq!(status, 0, "{rewritten:#}");
    assert_eq!(rewritten["data"]["stdout"], "rewritten\n");
    assert_eq!(
        outcomes(&rewritten),
        [("rewriter".to_string(), "rewrote".to_string())]
    );

    // A rewrite into invalid arguments is the hook's fault, and says so.
    let (status, env) = bash("echo bad-rewrite");
    assert_eq!((status, code(&env)), (1, "INVALID_PARAMS"), "{env:#}");
    assert!(
        text(&env).starts_with("ERROR [INVALID_PARAMS]: hook 'bad-rewriter' rewrote"),
        "{env:#}"
    );
    assert!(
        text(&env).contains("ask the user to fix the hook"),
        "{env:#}"
    );
    assert_eq!(env["data"]["hook"], "bad-rewriter", "{env:#}");

    // A rewrite is judged by the rules again.
    let (status, env) = bash("echo to-rm");
    assert_eq!((status, code(&env)), (1, "ACCESS_DENIED"), "{env:#}");
    assert!(text(&env).contains("bash(rm:*)"), "{env:#}");
    assert_eq!(ws.read("x").unwrap(), b"keep me\n");

    // The call log shows what the hooks did.
    let (status, denied) = bash("echo forbidden");
    assert_eq!((status, code(&denied)), (1, "ACCESS_DENIED"), "{denied:#}");
    let log = stdout_json(&ws.tb(&["log", "--json"]));
    for (env, name, outcome) in [
        (&denied, "forbidder", "denied"),
        (&rewritten, "rewriter", "rewrote"),
    ] {
        let id = &env["context"]["call_id"];
        let entry = log
            .as_array()
            .unwrap()
            .iter()
            .find(|e| &e["call_id"] == id)
            .unwrap_or_else(|| panic!("{id} not in {log:#}"));
        let runs = entry["hooks"].as_array().unwrap();
        assert_eq!(runs.len(), 1, "{entry:#}");
        let run = &runs[0];
        assert_eq!(
            (&run["name"], &run["event"], &run["outcome"]),
            (&json!(name), &json!("pre_tool_use"), &json!(outcome)),
            "{entry:#}"
        );
        assert!(run["ms"].is_u64(), "{entry:#}");
    }

    let run = finish(racing, &["batch"]);
    assert_eq!(run.code, 0, "{run:#?}");
    let envs = batch_envelopes(&run);
    assert_eq!(envs.len(), 50);
    for env in &envs {
        assert_eq!(env["data"]["stdout"], "B\n", "{env:#}");
        assert_eq!(
            outcomes(env),
            [
                ("A".to_string(), "rewrote".to_string()),
                ("B".to_string(), "rewrote".to_string())
            ]
        );
    }
}

/// The hooks that fail, each for the bash calls `echo <its name>`.
fn failing_hooks(token: &str) -> String {
    let hooks: [(&str, String, &str); 9] = [
        ("stuck", format!("sleep 3600.{token}"), "timeout_ms = 2000"),
        (
            "lenient",
            format!("sleep 3600.{token}"),
            "timeout_ms = 2000\non_error = \"allow\"",
        ),
        ("missing", "./nope.sh".into(), ""),
        ("killed", "kill -9 $$".into(), ""),
        ("garbage", "echo 'hello {'".into(), ""),
        (
            "maybe",
            r#"echo '{"hookSpecificOutput":{"permissionDecision":"maybe"}}'"#.into(),
            "",
        ),
        ("mute", "exit 2".into(), ""),
        (
            "flood",
            r"head -c 10000000 /dev/zero | tr '\0' a".into(),
            "",
        ),
        ("orphan", format!("sleep 1000.{token} & exit 0"), ""),
    ];
    hooks
        .iter()
        .map(|(name, command, extra)| {
            format!(
                "[[hooks.pre_tool_use]]\nname = \"{name}\"\nif = \"bash(echo {name}:*)\"\ncommand = '''{command}'''\n{extra}\n"
            )
        })
        .collect()
}

/// Runs `toolbelt call bash` of `line` to its end, sampling its peak memory:
/// the envelope and the peak, KiB.
fn bash_peak(ws: &Hooked, line: &str) -> (Value, u64) {
    let mut child = ws.spawn_bash(line);
    let pid = child.id();
    let stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let mut stdout = stdout;
        stdout.read_to_string(&mut s).unwrap();
        s
    });
    let mut peak = 0;
    while child.try_wait().unwrap().is_none() {
        peak = peak.max(peak_rss_kib(pid).unwrap_or(0));
        std::thread::sleep(Duration::from_millis(5));
    }
    let out = reader.join().unwrap();
    (serde_json::from_str(&out).unwrap(), peak)
}

/// Waits up to 2 s for no process to hold `token` in its command line.
#[track_caller]
fn none_left(token: &str) {
    let start = Instant::now();
    while !running_with(token).is_empty() && start.elapsed() < Duration::from_secs(2) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        running_with(token),
        Vec::<u32>::new(),
        "{token} left running"
    );
}

#[test]
fn a_failing_hook_applies_its_policy_and_leaves_no_process() {
    let token = std::process::id().to_string();
    let ws = Hooked::new(&failing_hooks(&token));
    // Every call at once: the two that hang take their 2 s side by side.
    let started = Instant::now();
    let names = [
        "stuck", "lenient", "missing", "killed", "garbage", "maybe", "mute", "flood", "orphan",
    ];
    let children: Vec<(&str, Child)> = names
        .iter()
        .map(|name| (*name, ws.spawn_bash(&format!("echo {name}"))))
        .collect();
    let mut envs = std::collections::BTreeMap::new();
    for (name, child) in children {
        let run = finish(child, &[name]);
        if name == "stuck" {
            let took = started.elapsed();
            eprintln!("the hanging hook's call took {took:?}");
            assert!(took < Duration::from_secs(6), "{took:?}");
        }
        let env = envelope(&run);
        assert_eq!(run.code, i32::from(env["status"] == "error"), "{env:#}");
        envs.insert(name, env);
    }
    let denied = |name: &str, says: &str| {
        let env = &envs[name];
        assert_eq!(code(env), "ACCESS_DENIED", "{env:#}");
        assert!(text(env).contains(&format!("hook '{name}'")), "{env:#}");
        assert!(text(env).contains(says), "{says:?} not in {env:#}");
        assert_eq!(env["data"]["hook"], name, "{env:#}");
    };
    let allowed = |name: &str, outcome: &str| {
        let env = &envs[name];
        assert_eq!(env["status"], "success", "{env:#}");
        assert_eq!(env["data"]["stdout"], format!("{name}\n"), "{env:#}");
        assert_eq!(outcomes(env), [(name.to_string(), outcome.to_string())]);
    };
    // A hang is stopped at its timeout and, for a guard, denies.
    denied("stuck", "timed out after 2000 ms");
    assert_eq!(outcomes(&envs["stuck"])[0].1, "timeout");
    allowed("lenient", "timeout");
    // A crash or a missing command fails closed, naming what happened.
    denied("missing", "exit 127: ./nope.sh: not found");
    denied("killed", "signal 9");
    // Output that is not JSON is a warning; a value that means nothing fails,
    // naming its field; exit 2 without a reason still names the hook.
    allowed("garbage", "warning");
    denied("maybe", "hookSpecificOutput.permissionDecision");
    denied("mute", "exit 2");
    allowed("flood", "warning");
    allowed("orphan", "ok");
    // Nothing a hook started outlives its call.
    none_left(&format!("3600.{token}"));
    none_left(&format!("1000.{token}"));

    // 10 MB from a hook is read up to its limit, not into memory whole.
    let (env, calm) = bash_peak(&ws, "echo calm; sleep 0.5");
    assert_eq!(env["status"], "success", "{env:#}");
    let (env, flooded) = bash_peak(&ws, "echo flood; sleep 0.5");
    assert_eq!(
        outcomes(&env),
        [("flood".to_string(), "warning".to_string())]
    );
    let grown = flooded.saturating_sub(calm);
    eprintln!("peak RSS {flooded} KiB with the flooding hook, {calm} KiB without");
    assert!(grown < 10 * 1024, "grew by {grown} KiB");
}

#[test]
fn a_write_condition_sees_writes_through_the_shell() {
    let ws = Hooked::new(
        "[[hooks.pre_tool_use]]\nname = \"env\"\nif = \"write(**/.env*)\"\ndeny = \"no env writes\"\n",
    );
    ws.file(".env", "SECRET=abc\n");
    ws.file(".env.example", "SECRET=\n");
    ws.file("x", "x\n");
    let (status, env) = ws.call("write_file", &json!({"path": ".env", "content": "B=2\n"}));
    assert_eq!((status, code(&env)), (1, "ACCESS_DENIED"), "{env:#}");
    for line in [
        "echo A=1 > .env",
        "sed -i s/a/b/ .env",
        "cp x .env",
        r#"python3 -c 'open(".env","w")'"#,
    ] {
        let (status, env) = ws.call("bash", &json!({ "command": line }));
        assert_eq!(
            (status, code(&env)),
            (1, "ACCESS_DENIED"),
            "{line}: {env:#}"
        );
        assert_eq!(env["data"]["hook"], "env", "{line}: {env:#}");
    }
    assert_eq!(ws.read(".env").unwrap(), b"SECRET=abc\n");
    // Writes elsewhere, and reads, go through. (`echo hi > notes.txt` is the case
    // only the shell's write targets tell: a command that may write anything
    // would be denied.)
    for (line, out) in [
        ("echo hi >&2", ""),
        ("cat .env.example", "SECRET=\n"),
        ("echo hi > notes.txt", ""),
    ] {
        let (status, env) = ws.call("bash", &json!({ "command": line }));
        assert_eq!(status, 0, "{line}: {env:#}");
        assert_eq!(env["data"]["stdout"], out, "{line}: {env:#}");
    }
    assert_eq!(ws.read("notes.txt").unwrap(), b"hi\n");
}

#[test]
fn a_post_hook_reverts_a_call_or_adds_context() {
    let ws = Hooked::new("");
    let context = ws.script(
        "context.sh",
        r#"printf '{"additionalContext":"'; seq 1 20000 | sed 's/$/\\n/' | tr -d '\n'; printf '"}\n'"#,
    );
    ws.hooks(&format!(
        r#"
[[hooks.post_tool_use]]
name = "gen"
paths = ["src/**"]
command = '''echo '{{"decision":"revert","reason":"run make gen"}}' '''

[[hooks.post_tool_use]]
name = "note"
if = "bash(echo note:*)"
context = "src/gen is generated; edit schema/*.yaml"

[[hooks.post_tool_use]]
name = "long"
if = "bash(echo long:*)"
command = ["{context}"]
"#
    ));
    ws.file("src/a.rs", "fn a() {}\n");

    // A revert undoes the call through its checkpoint.
    let (status, env) = ws.call("bash", &json!({"command": "echo x >> src/a.rs"}));
    assert_eq!(status, 1, "{env:#}");
    assert_eq!(env["status"], "error");
    assert!(text(&env).contains("run make gen"), "{env:#}");
    assert_eq!(ws.read("src/a.rs").unwrap(), b"fn a() {}\n");
    let id = env["context"]["checkpoint"].as_str().unwrap();
    let list = stdout_json(&ws.tb(&["checkpoints", "list", "--json"]));
    let checkpoint = list
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == id)
        .unwrap_or_else(|| panic!("{id} not in {list:#}"));
    assert_eq!(checkpoint["call_id"], env["context"]["call_id"]);
    assert_eq!(checkpoint["status"], "reverted", "{checkpoint:#}");

    // Context is added at the end of the text.
    let (status, env) = ws.call("bash", &json!({"command": "echo note"}));
    assert_eq!(status, 0, "{env:#}");
    assert!(
        text(&env).ends_with("\n\n[hook 'note'] src/gen is generated; edit schema/*.yaml"),
        "{env:#}"
    );

    // Long context is cut, and saved whole for read_output.
    let (status, env) = ws.call("bash", &json!({"command": "echo long"}));
    assert_eq!(status, 0, "{env:#}");
    let text = text(&env);
    let shown = &text[text
        .find("[hook 'long'] ")
        .unwrap_or_else(|| panic!("{env:#}"))..];
    assert!(shown.len() <= 4096 + 200, "{} bytes: {shown}", shown.len());
    assert!(!shown.contains("\n10000\n"), "{shown}");
    // The marker every cut result has, naming the reader of the whole.
    let output_id = shown
        .split("output_id=")
        .nth(1)
        .and_then(|rest| rest.split([',', ')']).next())
        .unwrap_or_else(|| panic!("no output_id in {shown}"));
    let (status, page) = ws.call(
        "read_output",
        &json!({"output_id": output_id, "offset": 10000, "limit": 1}),
    );
    assert_eq!(status, 0, "{page:#}");
    assert!(
        page["text"]
            .as_str()
            .unwrap()
            .starts_with(" 10000\t10000\n"),
        "{page:#}"
    );
    assert_eq!(page["data"]["total_lines"], 20000, "{page:#}");
}

/// The hooks of `toolbelt agent -p` as a user meets them: a stop hook that
/// blocks twice keeps the model going for two more turns (the second stop is
/// marked `stop_hook_active` in the transcript); one that always blocks ends the
/// run after eight blocks with its own outcome and exit 1; and Claude Code's own
/// example script, unchanged, blocks `rm -rf` under the claude profile.
#[test]
fn the_agent_meets_stop_hooks_and_claude_codes_script() {
    let ws = Hooked::new("");
    let counter = ws.dir.path().join("stops");
    let keep_going = ws.script(
        "keep-going.sh",
        &format!(
            "n=$(cat '{c}' 2>/dev/null || echo 0); n=$((n+1)); echo $n > '{c}'\n\
             if [ $n -le 2 ]; then echo \"keep going $n\" >&2; exit 2; fi",
            c = counter.display()
        ),
    );
    ws.hooks(&format!(
        "[[hooks.stop]]\nname = \"keep-going\"\ncommand = {}\n",
        Value::from(keep_going.as_str())
    ));
    let replies = |n: usize| {
        (1..=n)
            .map(|i| Reply::text(format!("answer {i}")))
            .collect()
    };
    let server = ScriptedServer::start(Script::new(ProviderKind::OpenAi, replies(3))).unwrap();
    let model = |server: &ScriptedServer, args: &[&str]| -> Run {
        let mut cmd = with_model(&ws.root, server, args);
        finish(ws.configure(&mut cmd).spawn().unwrap(), args)
    };
    let run = model(&server, &["agent", "-p", "STOP-RUN", "--json"]);
    assert_eq!(run.code, 0, "{run:#?}");
    let requests = server.requests();
    assert_eq!(requests.len(), 3, "two more turns");
    let second = requests[1].body.to_string();
    assert!(second.contains("keep going 1"), "{second}");
    let transcripts: Vec<String> =
        std::fs::read_dir(super::cli::state_dir(&ws.root).join("agent/runs"))
            .unwrap()
            .filter_map(|e| std::fs::read_to_string(e.unwrap().path()).ok())
            .collect();
    let stops: Vec<Value> = transcripts
        .iter()
        .flat_map(|t| t.lines())
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["type"] == "hook" && e["event"] == "stop")
        .collect();
    assert_eq!(stops.len(), 3, "{stops:#?}");
    assert_eq!(stops[0]["input"]["stop_hook_active"], false, "{stops:#?}");
    assert_eq!(stops[1]["input"]["stop_hook_active"], true, "{stops:#?}");

    // A hook that always blocks: eight more turns, then the run ends, exit 1.
    ws.hooks("[[hooks.stop]]\nname = \"never\"\ncommand = \"echo 'not yet' >&2; exit 2\"\n");
    let server = ScriptedServer::start(Script::new(ProviderKind::OpenAi, replies(12))).unwrap();
    let run = model(&server, &["agent", "-p", "NEVER-RUN", "--json"]);
    assert_eq!(run.code, 1, "{run:#?}");
    assert_eq!(server.requests().len(), 9);
    let events = events(&run.stdout);
    let end = events.iter().find(|e| e["type"] == "run_ended").unwrap();
    assert!(end.to_string().contains("stop_hook_limit"), "{end:#}");

    // Claude Code's block-rm.sh, as its documentation gives it.
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/python/fixtures/block-rm.sh")
        .canonicalize()
        .unwrap();
    ws.hooks(&format!(
        "[[hooks.pre_tool_use]]\nmatch = \"Bash\"\ndialect = \"claude\"\ncommand = {}\n",
        Value::from(script.to_str().unwrap())
    ));
    std::fs::create_dir_all(ws.root.join("x")).unwrap();
    let server = ScriptedServer::start(Script::new(
        ProviderKind::OpenAi,
        vec![
            Reply::call("Bash", json!({"command": "rm -rf x"}).to_string()),
            Reply::text("it stayed"),
        ],
    ))
    .unwrap();
    let run = model(
        &server,
        &["--profile", "claude", "agent", "-p", "remove x", "--json"],
    );
    assert_eq!(run.code, 0, "{run:#?}");
    let (_, sent, _) = &last_tool_results(ProviderKind::OpenAi, &server.requests()[1])[0];
    assert!(
        sent.contains("Destructive command blocked by hook"),
        "{sent}"
    );
    assert!(ws.root.join("x").is_dir());
}

/// `toolbelt hooks list`, `test` and `import`, and `doctor` on a hook whose
/// command is missing.
#[test]
fn hooks_are_listed_tested_imported_and_checked_by_the_doctor() {
    let ws = Hooked::new(NO_TOUCH);
    let listed = ws.tb(&["hooks", "list", "--json"]);
    assert_eq!(listed.code, 0, "{listed:#?}");
    let listed: Value = serde_json::from_str(&listed.stdout).unwrap();
    assert_eq!(listed["hooks"][0]["name"], "no-touch", "{listed:#}");
    assert_eq!(listed["hooks"][0]["trusted"], true, "{listed:#}");

    // test: the hooks' verdict on a call, without running it.
    let tested = ws.tb(&[
        "hooks",
        "test",
        "pre_tool_use",
        "--tool",
        "bash",
        "--args",
        r#"{"command":"touch marker"}"#,
        "--json",
    ]);
    assert_eq!(tested.code, 1, "{tested:#?}");
    let verdict: Value = serde_json::from_str(&tested.stdout).unwrap();
    assert_eq!(verdict["decision"], "deny", "{verdict:#}");
    assert_eq!(verdict["reason"], "no touching", "{verdict:#}");
    assert!(ws.read("marker").is_none());
    let fine = ws.tb(&[
        "hooks",
        "test",
        "pre_tool_use",
        "--tool",
        "bash",
        "--args",
        r#"{"command":"ls"}"#,
    ]);
    assert_eq!(fine.code, 0, "{fine:#?}");
    assert!(fine.stdout.contains("no hook matched"), "{fine:#?}");

    // import: Claude Code's settings become [[hooks.*]] tables that load.
    ws.file(
        ".claude/settings.json",
        &json!({"hooks": {
            "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "exit 0", "timeout": 5}]}],
            "Stop": [{"hooks": [{"type": "command", "command": "true"}]}],
            "Notification": [{"hooks": [{"type": "command", "command": "true"}]}]
        }})
        .to_string(),
    );
    let imported = ws.tb(&["hooks", "import", ".claude/settings.json"]);
    assert_eq!(imported.code, 0, "{imported:#?}");
    assert!(
        imported.stdout.contains("[[hooks.pre_tool_use]]"),
        "{}",
        imported.stdout
    );
    assert!(
        imported.stdout.contains("matcher = \"Bash\"")
            || imported.stdout.contains("match = \"Bash\""),
        "{}",
        imported.stdout
    );
    assert!(
        imported.stdout.contains("timeout_ms = 5000"),
        "{}",
        imported.stdout
    );
    assert!(
        imported.stdout.contains("dialect = \"claude\""),
        "{}",
        imported.stdout
    );
    assert!(
        imported.stderr.contains("Notification"),
        "{}",
        imported.stderr
    );
    ws.hooks(&imported.stdout);
    let listed = ws.tb(&["hooks", "list", "--json"]);
    let listed: Value = serde_json::from_str(&listed.stdout).unwrap();
    assert_eq!(listed["hooks"].as_array().unwrap().len(), 2, "{listed:#}");

    // doctor: a hook whose command is not found fails it, naming the hook.
    ws.hooks("[[hooks.pre_tool_use]]\nname = \"gone\"\ncommand = \"./nope.sh\"\n");
    let doctor = ws.tb(&["doctor"]);
    assert_eq!(doctor.code, 1, "{doctor:#?}");
    assert!(
        doctor.stdout.contains("hook 'gone'") && doctor.stdout.contains("./nope.sh"),
        "{}",
        doctor.stdout
    );
}

/// An `http` hook: the call's JSON POSTed to a server on 127.0.0.1, whose answer
/// denies it; a server that answers 500 applies `on_error`; an address off this
/// machine is refused unless the hook allows it.
#[test]
fn an_http_hook_answers_from_a_loopback_server() {
    use std::net::TcpListener;
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = std::thread::spawn(move || {
        let mut bodies = Vec::new();
        for status in ["200 OK", "500 Internal Server Error"] {
            let (mut conn, _) = listener.accept().unwrap();
            let mut got = Vec::new();
            let mut buf = [0u8; 4096];
            // Headers, then as many body bytes as Content-Length says.
            let body = loop {
                let n = conn.read(&mut buf).unwrap();
                got.extend_from_slice(&buf[..n]);
                let text = String::from_utf8_lossy(&got).to_string();
                if let Some((head, body)) = text.split_once("\r\n\r\n") {
                    let len: usize = head
                        .lines()
                        .find_map(|l| {
                            l.to_ascii_lowercase()
                                .strip_prefix("content-length:")
                                .map(|v| v.trim().parse().unwrap())
                        })
                        .unwrap_or(0);
                    if body.len() >= len {
                        break body.to_string();
                    }
                }
            };
            bodies.push(body);
            let answer = r#"{"hookSpecificOutput":{"permissionDecision":"deny","permissionDecisionReason":"the server says no"}}"#;
            write!(
                conn,
                "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{answer}",
                answer.len()
            )
            .unwrap();
        }
        bodies
    });
    let ws = Hooked::new(&format!(
        "[[hooks.pre_tool_use]]\nname = \"remote-guard\"\nmatch = \"bash\"\nhttp = \"http://127.0.0.1:{port}/hook\"\n"
    ));
    let (status, env) = ws.call("bash", &json!({"command": "touch marker"}));
    assert_eq!(status, 1, "{env:#}");
    assert_eq!(code(&env), "ACCESS_DENIED", "{env:#}");
    assert!(
        text(&env).contains("hook 'remote-guard'") && text(&env).contains("the server says no"),
        "{env:#}"
    );
    // A 500: the guard fails closed, naming the status.
    let (status, env) = ws.call("bash", &json!({"command": "touch marker"}));
    assert_eq!(status, 1, "{env:#}");
    assert!(text(&env).contains("HTTP 500"), "{env:#}");
    let bodies = server.join().unwrap();
    let sent: Value = serde_json::from_str(&bodies[0]).unwrap();
    assert_eq!(sent["tool_name"], "bash", "{sent:#}");
    assert_eq!(sent["tool_input"]["command"], "touch marker", "{sent:#}");
    assert_eq!(sent["hook_event_name"], "pre_tool_use", "{sent:#}");
    assert!(ws.read("marker").is_none());

    // Off this machine: refused when the hooks are read.
    ws.hooks("[[hooks.pre_tool_use]]\nname = \"far\"\nhttp = \"http://192.0.2.1/hook\"\n");
    let run = ws.tb(&["call", "bash", r#"{"command":"true"}"#]);
    assert_eq!(run.code, 2, "{run:#?}");
    assert!(
        run.stderr.contains("hook 'far'") && run.stderr.contains("allow_remote"),
        "{}",
        run.stderr
    );
}

//! `toolbelt tools | schema | call`, run as a child process in a temporary root.

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tempfile::TempDir;
use toolbelt_core::{Registry, Session};
use toolbelt_wire::export::{Format, export, text_prompt};

/// Bound on one run of the binary.
const RUN_TIMEOUT_MS: u64 = 30_000;
/// How often a running child is checked.
const POLL_INTERVAL_MS: u64 = 5;
/// Variables the binary reads, removed from every child so that the caller's
/// environment cannot change what a test sees.
pub(super) const TOOLBELT_ENV: [&str; 17] = [
    "TOOLBELT_ROOT",
    "TOOLBELT_TOOLS",
    "TOOLBELT_TOKEN",
    "TOOLBELT_DATABASE_URL",
    "TOOLBELT_CALL_LOG",
    "TOOLBELT_PROFILE",
    "TOOLBELT_CONFIG",
    "TOOLBELT_STATE_DIR",
    "TOOLBELT_SANDBOX",
    "TOOLBELT_NETWORK",
    "TOOLBELT_AGENT_PROVIDER",
    "TOOLBELT_AGENT_MODEL",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "RUST_LOG",
];
/// The only top-level keys of an envelope.
const ENVELOPE_KEYS: [&str; 6] = ["status", "data", "text", "stats", "context", "error"];
/// Every `--format` name.
const FORMAT_NAMES: [&str; 7] = [
    "openai",
    "openai-strict",
    "openai-responses",
    "anthropic",
    "gemini",
    "mcp",
    "text",
];

/// The outcome of one run.
#[derive(Debug)]
pub(super) struct Run {
    pub(super) code: i32,
    pub(super) stdout: String,
    pub(super) stderr: String,
}

/// Runs `toolbelt --root <root> <args>` in `root`.
pub(super) fn toolbelt(root: &Path, args: &[&str]) -> Run {
    run(root, args, None)
}

/// Runs `toolbelt --root <root> <args>` in `root` with `input` on standard input.
pub(super) fn toolbelt_with_input(root: &Path, args: &[&str], input: &str) -> Run {
    run(root, args, Some(input))
}

/// Runs `toolbelt --root <root> <args>` in `root` with `stdin` as its input.
/// Fails the test if the binary runs longer than [`RUN_TIMEOUT_MS`], dies from a
/// signal or panics.
fn run(root: &Path, args: &[&str], stdin: Option<&str>) -> Run {
    let mut child = command(root, args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    if let Some(input) = stdin {
        // Dropping the handle closes the pipe: the binary reads to its end.
        let mut pipe = child.stdin.take().unwrap();
        pipe.write_all(input.as_bytes()).unwrap();
    }
    let run = finish(child, args);
    assert!(
        !run.stderr.contains("panicked"),
        "toolbelt {args:?} panicked:\n{}",
        run.stderr
    );
    run
}

/// The `$XDG_STATE_HOME` of every child: the binary keeps its state below it,
/// never in the user's own state directory. What earlier runs left there over an
/// hour ago is removed the first time it is asked for.
pub(super) fn state_home() -> PathBuf {
    static CLEANED: std::sync::Once = std::sync::Once::new();
    let home = Path::new(env!("CARGO_TARGET_TMPDIR")).join("xdg-state");
    CLEANED.call_once(|| {
        let Ok(entries) = std::fs::read_dir(home.join("toolbelt")) else {
            return;
        };
        for entry in entries.flatten() {
            let old = entry
                .metadata()
                .and_then(|m| m.modified())
                .is_ok_and(|t| t.elapsed().is_ok_and(|age| age > STALE_STATE));
            if old {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
    });
    home
}

/// Age past which a test's state directory is removed.
const STALE_STATE: Duration = Duration::from_secs(3600);

/// The state directory the binary picks for the workspace `root` by default.
pub(super) fn state_dir(root: &Path) -> PathBuf {
    state_home()
        .join("toolbelt")
        .join(toolbelt_core::state::workspace_id(root))
}

/// `toolbelt` without the caller's `TOOLBELT_*` variables, its state under
/// [`state_home`].
pub(super) fn bare_command() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_toolbelt"));
    for var in TOOLBELT_ENV {
        command.env_remove(var);
    }
    command.env("XDG_STATE_HOME", state_home());
    // The user's own skills and agent types stay out of the tests.
    command.env(
        "XDG_CONFIG_HOME",
        Path::new(env!("CARGO_TARGET_TMPDIR")).join("xdg-config"),
    );
    command
}

/// `toolbelt --root <root> <args>` in `root`, stderr piped, without the caller's
/// `TOOLBELT_*` variables (see [`bare_command`]).
pub(super) fn command(root: &Path, args: &[&str]) -> Command {
    let mut command = bare_command();
    command
        .arg("--root")
        .arg(root)
        .args(args)
        .current_dir(root)
        .stderr(Stdio::piped());
    command
}

/// Collects the output of `child` (stdout only when piped) and waits for it to
/// exit, killing it and failing the test after [`RUN_TIMEOUT_MS`].
pub(super) fn finish(mut child: Child, args: &[&str]) -> Run {
    fn collect(pipe: Option<impl Read + Send + 'static>) -> thread::JoinHandle<String> {
        thread::spawn(move || {
            let mut s = String::new();
            if let Some(mut pipe) = pipe {
                pipe.read_to_string(&mut s).unwrap();
            }
            s
        })
    }
    let out = collect(child.stdout.take());
    let err = collect(child.stderr.take());
    let deadline = Instant::now() + Duration::from_millis(RUN_TIMEOUT_MS);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("toolbelt {args:?} did not finish within {RUN_TIMEOUT_MS} ms");
        }
        thread::sleep(Duration::from_millis(POLL_INTERVAL_MS));
    };
    Run {
        code: status
            .code()
            .unwrap_or_else(|| panic!("toolbelt {args:?} was killed: {status}")),
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    }
}

/// The JSON on stdout.
#[track_caller]
pub(super) fn stdout_json(run: &Run) -> Value {
    serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{}", run.stdout))
}

/// The envelope printed by `call --json`, checked to have only envelope keys.
#[track_caller]
pub(super) fn envelope(run: &Run) -> Value {
    let env = stdout_json(run);
    let keys: BTreeSet<&str> = env
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    let allowed: BTreeSet<&str> = ENVELOPE_KEYS.into_iter().collect();
    assert!(keys.is_subset(&allowed), "unexpected keys in {env:#}");
    for key in ["status", "data", "text", "stats", "context"] {
        assert!(keys.contains(key), "{key} missing in {env:#}");
    }
    assert_eq!(keys.contains("error"), env["status"] == "error", "{env:#}");
    env
}

/// Asserts a usage error: exit status 2, nothing on stdout, `needle` on stderr.
#[track_caller]
fn assert_usage_error(run: &Run, needle: &str) {
    assert_eq!(run.code, 2, "{run:#?}");
    assert_eq!(run.stdout, "");
    assert!(
        run.stderr.contains(needle),
        "{needle:?} not in {}",
        run.stderr
    );
}

/// `(12 ms)` -> `(<ms> ms)`: call times vary from run to run.
fn redact_ms(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(end) = rest.find(" ms)") {
        let head = &rest[..end];
        match head.rfind('(') {
            Some(open)
                if open + 1 < head.len()
                    && head[open + 1..].bytes().all(|b| b.is_ascii_digit()) =>
            {
                out.push_str(&head[..=open]);
                out.push_str("<ms>");
            }
            _ => out.push_str(head),
        }
        out.push_str(" ms)");
        rest = &rest[end + " ms)".len()..];
    }
    out.push_str(rest);
    out
}

/// The names in `tools --json` output.
fn tool_names(run: &Run) -> Vec<String> {
    assert_eq!(run.code, 0, "{run:#?}");
    stdout_json(run)
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect()
}

/// What the library exports for the built-ins, to compare the command's output with.
fn library_definitions(root: &Path) -> Vec<toolbelt_core::ToolSpec> {
    let mut registry = Registry::new(Session::new(root));
    // As the binary under test sees them: no skills of the user's.
    let skills = toolbelt_tools::Skills::discover(registry.session().roots(), None);
    toolbelt_tools::register_builtins_with(
        &mut registry,
        toolbelt_tools::BuiltinOptions {
            skills: Some(skills),
            ..toolbelt_tools::BuiltinOptions::default()
        },
    )
    .unwrap();
    // And, with checkpoints on (the default), the checkpoint tools.
    let state = root.join(".toolbelt");
    let checkpoints = toolbelt_checkpoint::Checkpoints::new(
        toolbelt_checkpoint::Settings::default(),
        toolbelt_store::StoreHandle::lazy(toolbelt_store::Location::in_state_dir(&state)),
        &state,
        vec![root.to_path_buf()],
    );
    toolbelt_tools::register_checkpoints(&mut registry, &checkpoints).unwrap();
    // And the post-edit pipeline's `diagnostics`, there in every workspace.
    let checks = toolbelt_diagnostics::Engine::new(
        toolbelt_diagnostics::Config::default(),
        vec![root.to_path_buf()],
    )
    .unwrap();
    toolbelt_tools::register_diagnostics(&mut registry, std::sync::Arc::new(checks)).unwrap();
    registry.definitions()
}

// --- schema -----------------------------------------------------------------

fn type_includes(ty: Option<&Value>, wanted: &str) -> bool {
    match ty {
        Some(Value::String(t)) => t == wanted,
        Some(Value::Array(ts)) => ts.iter().any(|t| t == wanted),
        _ => false,
    }
}

/// Checks that every object schema in `schema` (at any depth: properties, items,
/// combinators, definitions) has `additionalProperties: false` and requires every
/// one of its properties; adds what is wrong to `problems`. Returns how many object
/// schemas it checked.
fn check_closed_objects(schema: &Value, at: &str, problems: &mut Vec<String>) -> usize {
    let Value::Object(node) = schema else {
        return 0;
    };
    let mut checked = 0;
    if node.contains_key("properties") || type_includes(node.get("type"), "object") {
        if node.get("additionalProperties") != Some(&Value::Bool(false)) {
            problems.push(format!("{at}: additionalProperties is not false"));
        }
        let properties: BTreeSet<&str> = node
            .get("properties")
            .and_then(Value::as_object)
            .map(|p| p.keys().map(String::as_str).collect())
            .unwrap_or_default();
        let required: Vec<&str> = node
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let required_set: BTreeSet<&str> = required.iter().copied().collect();
        if required_set.len() != required.len() {
            problems.push(format!("{at}: required lists a property twice"));
        }
        if required_set != properties {
            problems.push(format!(
                "{at}: required {required_set:?} is not the properties {properties:?}"
            ));
        }
        checked += 1;
    }
    for (key, child) in node {
        let child_at = format!("{at}/{key}");
        match (key.as_str(), child) {
            ("properties" | "$defs" | "definitions", Value::Object(subs)) => {
                for (name, sub) in subs {
                    checked += check_closed_objects(sub, &format!("{child_at}/{name}"), problems);
                }
            }
            ("items" | "additionalProperties" | "not" | "contains", _) => {
                checked += check_closed_objects(child, &child_at, problems);
            }
            ("anyOf" | "oneOf" | "allOf" | "prefixItems", Value::Array(subs)) => {
                for (i, sub) in subs.iter().enumerate() {
                    checked += check_closed_objects(sub, &format!("{child_at}/{i}"), problems);
                }
            }
            _ => {}
        }
    }
    checked
}

#[test]
fn openai_strict_schema_closes_every_object_and_requires_every_property() {
    let dir = TempDir::new().unwrap();
    let run = toolbelt(dir.path(), &["schema", "--format", "openai-strict"]);
    assert_eq!(run.code, 0, "{run:#?}");
    let tools = stdout_json(&run);
    let tools = tools.as_array().unwrap();
    // The 35 built-in tools, the 3 checkpoint tools and diagnostics.
    assert_eq!(tools.len(), 39);
    let mut checked = 0;
    for tool in tools {
        let function = &tool["function"];
        let name = function["name"].as_str().unwrap();
        assert_eq!(function["strict"], json!(true), "{name}");
        let mut problems = Vec::new();
        let here = check_closed_objects(&function["parameters"], name, &mut problems);
        assert_eq!(problems, Vec::<String>::new());
        assert!(here >= 1, "{name}: no object schema checked");
        checked += here;
    }
    // One object per tool, plus set_todo_list's todo, multi_edit's edit,
    // update_todos' added and updated todos, update_project's updates, and
    // ask_user's questions and their options.
    assert_eq!(checked, 46);
}

#[test]
fn the_walker_finds_open_objects_and_missing_required_at_any_depth() {
    let schema = json!({
        "type": "object",
        "properties": {
            "a": {"type": "object", "properties": {"b": {"type": "string"}}, "required": ["b"]},
            "list": {"type": "array", "items": {"$ref": "#/$defs/Item"}}
        },
        "required": ["a", "list"],
        "additionalProperties": false,
        "$defs": {
            "Item": {
                "type": ["object", "null"],
                "properties": {"x": {"type": "string"}, "y": {"type": "string"}},
                "required": ["x"],
                "additionalProperties": false
            }
        }
    });
    let mut problems = Vec::new();
    assert_eq!(check_closed_objects(&schema, "t", &mut problems), 3);
    problems.sort();
    assert_eq!(
        problems,
        [
            "t/$defs/Item: required {\"x\"} is not the properties {\"x\", \"y\"}",
            "t/properties/a: additionalProperties is not false",
        ]
    );
}

#[test]
fn every_schema_format_prints_what_the_library_exports() {
    let dir = TempDir::new().unwrap();
    let specs = library_definitions(dir.path());
    for name in FORMAT_NAMES {
        let format = Format::parse(name).unwrap();
        let run = toolbelt(dir.path(), &["schema", "--format", name]);
        assert_eq!(run.code, 0, "{run:#?}");
        assert_eq!(run.stderr, "");
        if format == Format::Text {
            assert_eq!(run.stdout, text_prompt(&specs));
        } else {
            assert_eq!(stdout_json(&run), export(&specs, format), "{name}");
        }
    }
    // openai is the default.
    let run = toolbelt(dir.path(), &["schema"]);
    assert_eq!(stdout_json(&run), export(&specs, Format::OpenAi));
}

#[test]
fn schema_of_named_tools_only() {
    let dir = TempDir::new().unwrap();
    let run = toolbelt(dir.path(), &["schema", "think"]);
    assert_eq!(run.code, 0, "{run:#?}");
    let tools = stdout_json(&run);
    let names: Vec<&str> = tools
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["think"]);

    let run = toolbelt(
        dir.path(),
        &["schema", "-f", "anthropic", "think", "read_output"],
    );
    let tools = stdout_json(&run);
    let names: Vec<&str> = tools
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["read_output", "think"]);
}

#[test]
fn schema_usage_errors_exit_2() {
    let dir = TempDir::new().unwrap();
    let run = toolbelt(dir.path(), &["schema", "--format", "bogus"]);
    assert_usage_error(
        &run,
        "unknown format \"bogus\"; choose one of: openai, openai-strict, openai-responses, anthropic, gemini, mcp, text",
    );
    let run = toolbelt(dir.path(), &["schema", "nope"]);
    assert_usage_error(
        &run,
        "unknown tool \"nope\"; available: analyze_patterns, apply_patch, ask_user, bash, bash_output, checkpoint_diff, checkpoint_list, complete_task, create_goal, create_project, create_task, delete_project, diagnostics, edit_file, get_project, glob, grep, kill_shell, link_goal_to_project, list_dir, list_goals, list_projects, list_reviews, list_shells, list_tasks, multi_edit, read_file, read_output, rewind, set_todo_list, skill, think, update_project, update_todos, web_fetch, web_search, write_file, write_review, write_stdin",
    );
}

// --- call ---------------------------------------------------------------------

#[test]
fn invalid_todos_print_an_error_envelope_naming_both_violations() {
    let dir = TempDir::new().unwrap();
    let run = toolbelt(
        dir.path(),
        &[
            "call",
            "set_todo_list",
            r#"{"todos":[{"title":"","status":"Started"}]}"#,
            "--json",
        ],
    );
    assert_eq!(run.code, 1, "{run:#?}");
    let env = envelope(&run);
    let keys: Vec<&str> = env
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    let mut all_six = ENVELOPE_KEYS.to_vec();
    all_six.sort_unstable();
    let mut keys_sorted = keys.clone();
    keys_sorted.sort_unstable();
    assert_eq!(keys_sorted, all_six);
    assert_eq!(env["status"], "error");
    assert_eq!(env["error"]["code"], "INVALID_PARAMS");
    let message = env["error"]["message"].as_str().unwrap();
    for needle in ["todos[0].title", "todos[0].status", "\"Started\""] {
        assert!(message.contains(needle), "{needle} not in {message}");
    }
    let paths: BTreeSet<&str> = env["data"]["violations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, BTreeSet::from(["todos[0].title", "todos[0].status"]));
    assert_eq!(env["context"]["tool"], "set_todo_list");
    assert_eq!(
        env["context"]["params_input"],
        json!({"todos": [{"title": "", "status": "Started"}]})
    );
    assert!(
        env["text"]
            .as_str()
            .unwrap()
            .starts_with("ERROR [INVALID_PARAMS]: ")
    );
}

#[test]
fn unknown_tool_suggests_the_closest_ones() {
    let dir = TempDir::new().unwrap();
    let run = toolbelt(dir.path(), &["call", "nope", "{}", "--json"]);
    assert_eq!(run.code, 1, "{run:#?}");
    let env = envelope(&run);
    assert_eq!(env["error"]["code"], "UNKNOWN_TOOL");
    assert!(
        !env["data"]["suggestions"].as_array().unwrap().is_empty(),
        "{env:#}"
    );

    let run = toolbelt(
        dir.path(),
        &["call", "Think", r#"{"thought":"x"}"#, "--json"],
    );
    assert_eq!(run.code, 1, "{run:#?}");
    let env = envelope(&run);
    assert_eq!(env["error"]["code"], "UNKNOWN_TOOL");
    assert_eq!(env["data"]["suggestions"], json!(["think"]));
    let message = env["error"]["message"].as_str().unwrap();
    assert!(message.contains("did you mean \"think\"?"), "{message}");
}

#[test]
fn malformed_json_arguments_are_invalid_params_not_a_crash() {
    let dir = TempDir::new().unwrap();
    for args in ["{bad", r#"{"thought": "#, "[1,", "\"unterminated"] {
        let run = toolbelt(dir.path(), &["call", "think", args, "--json"]);
        assert_eq!(run.code, 1, "{args}: {run:#?}");
        let env = envelope(&run);
        assert_eq!(env["error"]["code"], "INVALID_PARAMS", "{args}: {env:#}");
    }
}

#[test]
fn trailing_comma_is_repaired_and_recorded() {
    let dir = TempDir::new().unwrap();
    let run = toolbelt(
        dir.path(),
        &["call", "think", r#"{"thought":"x",}"#, "--json"],
    );
    assert_eq!(run.code, 0, "{run:#?}");
    let env = envelope(&run);
    assert_eq!(env["status"], "success");
    assert_eq!(env["data"]["message"], "💭 Thinking: x");
    assert_eq!(
        env["context"]["repairs"],
        json!([{"path": "", "action": "stringified JSON arguments parsed (removed trailing comma)"}])
    );
    assert_eq!(env["context"]["params_input"], r#"{"thought":"x",}"#);
}

#[test]
fn arguments_from_stdin() {
    let dir = TempDir::new().unwrap();
    let run = run(
        dir.path(),
        &["call", "think", "-", "--json"],
        Some(r#"{"thought": "read from standard input"}"#),
    );
    assert_eq!(run.code, 0, "{run:#?}");
    let env = envelope(&run);
    assert_eq!(
        env["data"]["message"],
        "💭 Thinking: read from standard input"
    );
}

#[test]
fn closed_stdout_is_not_a_panic() {
    let dir = TempDir::new().unwrap();
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let args = ["schema", "--format", "mcp"];
    let child = command(dir.path(), &args)
        .stdin(Stdio::null())
        .stdout(writer)
        .spawn()
        .unwrap();
    // The child's first write fails with EPIPE (Rust ignores SIGPIPE).
    let run = finish(child, &args);
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    assert_ne!(run.code, 101, "{}", run.stderr);
}

#[test]
fn call_without_arguments_sends_an_empty_object() {
    let dir = TempDir::new().unwrap();
    let run = toolbelt(dir.path(), &["call", "set_todo_list", "--json"]);
    assert_eq!(run.code, 0, "{run:#?}");
    let env = envelope(&run);
    assert_eq!(env["data"]["updated"], false);
    assert_eq!(env["context"]["params_input"], json!({}));
}

#[test]
fn human_rendering_of_a_success_an_error_and_a_repair() {
    let dir = TempDir::new().unwrap();
    let run = toolbelt(
        dir.path(),
        &[
            "call",
            "set_todo_list",
            r#"{"todos":[{"title":"A","status":"Done"},{"title":"B","status":"In Progress"},{"title":"C","status":"Pending"}]}"#,
        ],
    );
    assert_eq!(run.code, 0, "{run:#?}");
    insta::assert_snapshot!("call_human_success", redact_ms(&run.stdout));

    let run = toolbelt(
        dir.path(),
        &[
            "call",
            "set_todo_list",
            r#"{"todos":[{"title":"","status":"Started"}]}"#,
        ],
    );
    assert_eq!(run.code, 1, "{run:#?}");
    insta::assert_snapshot!("call_human_error", redact_ms(&run.stdout));

    let run = toolbelt(
        dir.path(),
        &["call", "think", r#"{"thought":"x","confidence":"0.5",}"#],
    );
    assert_eq!(run.code, 0, "{run:#?}");
    insta::assert_snapshot!("call_human_repaired", redact_ms(&run.stdout));
}

#[test]
fn redact_ms_replaces_only_call_times() {
    assert_eq!(
        redact_ms("✓ think (12 ms)\n(x ms) (7 ms)"),
        "✓ think (<ms> ms)\n(x ms) (<ms> ms)"
    );
}

// --- tools, profiles, configuration ---------------------------------------------

#[test]
fn tools_table_and_json() {
    let dir = TempDir::new().unwrap();
    let run = toolbelt(dir.path(), &["tools"]);
    assert_eq!(run.code, 0, "{run:#?}");
    insta::assert_snapshot!("tools_table", run.stdout);

    let run = toolbelt(dir.path(), &["tools", "--json"]);
    assert_eq!(run.code, 0, "{run:#?}");
    insta::assert_json_snapshot!("tools_json", stdout_json(&run));
}

#[test]
fn tools_of_one_category() {
    let dir = TempDir::new().unwrap();
    let run = toolbelt(dir.path(), &["tools", "--json", "--category", "planning"]);
    assert_eq!(
        tool_names(&run),
        ["ask_user", "set_todo_list", "think", "update_todos"]
    );
    let run = toolbelt(dir.path(), &["tools", "--json", "--category", "system"]);
    assert_eq!(tool_names(&run), ["read_output"]);
    let run = toolbelt(dir.path(), &["tools", "--json", "--category", "web"]);
    assert_eq!(tool_names(&run), ["web_fetch", "web_search"]);

    let run = toolbelt(dir.path(), &["tools", "--category", "planning"]);
    assert_eq!(run.code, 0, "{run:#?}");
    let rows: Vec<&str> = run
        .stdout
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    assert_eq!(rows, ["ask_user", "set_todo_list", "think", "update_todos"]);
}

#[test]
fn unknown_category_exits_2_listing_the_categories() {
    let dir = TempDir::new().unwrap();
    let run = toolbelt(dir.path(), &["tools", "--category", "bogus"]);
    assert_usage_error(&run, "unknown category \"bogus\"; choose one of: ");
    assert!(run.stderr.contains("planning"), "{}", run.stderr);
}

#[test]
fn claude_profile_exposes_todo_write() {
    let dir = TempDir::new().unwrap();
    let run = toolbelt(dir.path(), &["--profile", "claude", "tools", "--json"]);
    assert_eq!(
        tool_names(&run),
        [
            "analyze_patterns",
            "apply_patch",
            "AskUserQuestion",
            "Bash",
            "BashOutput",
            "checkpoint_diff",
            "checkpoint_list",
            "complete_task",
            "create_goal",
            "create_project",
            "create_task",
            "delete_project",
            "diagnostics",
            "Edit",
            "get_project",
            "Glob",
            "Grep",
            "KillShell",
            "link_goal_to_project",
            "LS",
            "list_goals",
            "list_projects",
            "list_reviews",
            "list_shells",
            "list_tasks",
            "MultiEdit",
            "Read",
            "read_output",
            "rewind",
            "TodoWrite",
            "skill",
            "think",
            "update_project",
            "update_todos",
            "WebFetch",
            "WebSearch",
            "Write",
            "write_review",
            "write_stdin"
        ]
    );

    let run = toolbelt(
        dir.path(),
        &[
            "--profile",
            "claude",
            "call",
            "TodoWrite",
            r#"{"todos":[{"title":"ship","status":"Pending"}]}"#,
            "--json",
        ],
    );
    assert_eq!(run.code, 0, "{run:#?}");
    let env = envelope(&run);
    assert_eq!(env["data"]["brief"], "- ship [Pending]\n");
    assert_eq!(env["context"]["tool"], "set_todo_list");
    assert_eq!(env["context"]["exposed_name"], "TodoWrite");

    let run = toolbelt(
        dir.path(),
        &[
            "--profile",
            "claude",
            "schema",
            "-f",
            "anthropic",
            "TodoWrite",
        ],
    );
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(stdout_json(&run)[0]["name"], "TodoWrite");
}

#[test]
fn unknown_profile_exits_2() {
    let dir = TempDir::new().unwrap();
    let run = toolbelt(dir.path(), &["--profile", "gpt", "tools"]);
    assert_usage_error(
        &run,
        "unknown profile \"gpt\"; choose one of: default, claude, kimi, exec, run-command, camel-planner",
    );
}

#[test]
fn config_file_in_the_root_sets_the_profile() {
    let dir = TempDir::new().unwrap();
    std::fs::write(dir.path().join("toolbelt.toml"), "profile = \"kimi\"\n").unwrap();
    let run = toolbelt(dir.path(), &["tools", "--json"]);
    assert_eq!(
        tool_names(&run),
        [
            "analyze_patterns",
            "apply_patch",
            "ask_user",
            "Bash",
            "bash_output",
            "checkpoint_diff",
            "checkpoint_list",
            "complete_task",
            "create_goal",
            "create_project",
            "create_task",
            "delete_project",
            "diagnostics",
            "StrReplaceFile",
            "get_project",
            "Glob",
            "Grep",
            "kill_shell",
            "link_goal_to_project",
            "list_dir",
            "list_goals",
            "list_projects",
            "list_reviews",
            "list_shells",
            "list_tasks",
            "multi_edit",
            "ReadFile",
            "read_output",
            "rewind",
            "SetTodoList",
            "skill",
            "Think",
            "update_project",
            "update_todos",
            "WebFetch",
            "WebSearch",
            "WriteFile",
            "write_review",
            "write_stdin"
        ]
    );
    // The command line wins over the file.
    let run = toolbelt(dir.path(), &["--profile", "default", "tools", "--json"]);
    assert_eq!(
        tool_names(&run),
        [
            "analyze_patterns",
            "apply_patch",
            "ask_user",
            "bash",
            "bash_output",
            "checkpoint_diff",
            "checkpoint_list",
            "complete_task",
            "create_goal",
            "create_project",
            "create_task",
            "delete_project",
            "diagnostics",
            "edit_file",
            "get_project",
            "glob",
            "grep",
            "kill_shell",
            "link_goal_to_project",
            "list_dir",
            "list_goals",
            "list_projects",
            "list_reviews",
            "list_shells",
            "list_tasks",
            "multi_edit",
            "read_file",
            "read_output",
            "rewind",
            "set_todo_list",
            "skill",
            "think",
            "update_project",
            "update_todos",
            "web_fetch",
            "web_search",
            "write_file",
            "write_review",
            "write_stdin"
        ]
    );
}

#[test]
fn explicit_config_file_is_used() {
    let dir = TempDir::new().unwrap();
    let config = dir.path().join("elsewhere.toml");
    std::fs::write(&config, "profile = \"claude\"\n").unwrap();
    let run = toolbelt(
        dir.path(),
        &["--config", config.to_str().unwrap(), "tools", "--json"],
    );
    assert_eq!(
        tool_names(&run),
        [
            "analyze_patterns",
            "apply_patch",
            "AskUserQuestion",
            "Bash",
            "BashOutput",
            "checkpoint_diff",
            "checkpoint_list",
            "complete_task",
            "create_goal",
            "create_project",
            "create_task",
            "delete_project",
            "diagnostics",
            "Edit",
            "get_project",
            "Glob",
            "Grep",
            "KillShell",
            "link_goal_to_project",
            "LS",
            "list_goals",
            "list_projects",
            "list_reviews",
            "list_shells",
            "list_tasks",
            "MultiEdit",
            "Read",
            "read_output",
            "rewind",
            "TodoWrite",
            "skill",
            "think",
            "update_project",
            "update_todos",
            "WebFetch",
            "WebSearch",
            "Write",
            "write_review",
            "write_stdin"
        ]
    );
}

#[test]
fn bad_config_file_exits_2_naming_the_file() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("toolbelt.toml");
    let shown = path.display().to_string();
    for text in [
        "profile = \n",
        "colour = \"red\"\n",
        "[output]\nmax_bytes = \"big\"\n",
        "[output]\nmax_bytes = 0\n",
    ] {
        std::fs::write(&path, text).unwrap();
        let run = toolbelt(dir.path(), &["tools"]);
        assert_usage_error(&run, &format!("invalid config file {shown}"));
    }
    std::fs::write(&path, "profile = \"nobody\"\n").unwrap();
    let run = toolbelt(dir.path(), &["tools"]);
    assert_usage_error(&run, "unknown profile \"nobody\"");
}

#[test]
fn missing_root_and_bad_usage_exit_2() {
    let dir = TempDir::new().unwrap();
    let missing = dir.path().join("missing");
    let run = toolbelt(dir.path(), &["--root", missing.to_str().unwrap(), "tools"]);
    // The last --root is added to the first; the missing one is refused.
    assert_usage_error(&run, "is not a directory");

    let run = toolbelt(dir.path(), &["call"]);
    assert_eq!(run.code, 2, "{run:#?}");
    let run = toolbelt(dir.path(), &[]);
    assert_eq!(run.code, 2, "{run:#?}");
}

/// A todo list whose rendering is far over `max_bytes` of the config below.
fn long_todo_list() -> Value {
    let todos: Vec<Value> = (1..=80)
        .map(|n| json!({"title": format!("step number {n} of the long plan"), "status": "Pending"}))
        .collect();
    json!({ "todos": todos })
}

#[test]
fn output_budget_from_config_spills_into_the_state_dir() {
    let dir = TempDir::new().unwrap();
    let root = dir.path().join("root");
    let state = dir.path().join("state");
    std::fs::create_dir(&root).unwrap();
    std::fs::write(root.join("toolbelt.toml"), "[output]\nmax_bytes = 1024\n").unwrap();
    let state_arg = state.to_str().unwrap();

    let args = long_todo_list().to_string();
    let run = toolbelt(
        &root,
        &[
            "--state-dir",
            state_arg,
            "call",
            "set_todo_list",
            &args,
            "--json",
        ],
    );
    assert_eq!(run.code, 0, "{run:#?}");
    let env = envelope(&run);
    assert_eq!(env["status"], "partial");
    assert!(env["text"].as_str().unwrap().len() <= 1024, "{env:#}");
    let id = env["data"]["output_id"].as_str().unwrap();
    let spilled = state.join("tool-output").join(format!("{id}.txt"));
    let full = std::fs::read_to_string(&spilled).unwrap();
    assert!(
        full.ends_with("- step number 80 of the long plan [Pending] (id 80)"),
        "{full}"
    );
    assert!(!root.join(".toolbelt").exists());

    let read = format!(r#"{{"output_id": "{id}", "offset": -1}}"#);
    let run = toolbelt(
        &root,
        &[
            "--state-dir",
            state_arg,
            "call",
            "read_output",
            &read,
            "--json",
        ],
    );
    assert_eq!(run.code, 0, "{run:#?}");
    let env = envelope(&run);
    assert_eq!(
        env["text"],
        "    81\t- step number 80 of the long plan [Pending] (id 80)\n[lines 81-81 of 81; end of output]"
    );

    // Without --state-dir the output lives in the default state directory, where
    // this id is unknown.
    let run = toolbelt(&root, &["call", "read_output", &read, "--json"]);
    assert_eq!(run.code, 1, "{run:#?}");
    assert_eq!(envelope(&run)["error"]["code"], "NOT_FOUND");
}

#[test]
fn what_was_read_is_kept_between_calls_and_searches_leave_no_state() {
    let dir = TempDir::new().unwrap();
    std::fs::write(dir.path().join("f.txt"), "a=1\n").unwrap();
    let run = toolbelt(dir.path(), &["call", "grep", r#"{"pattern": "a"}"#]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(!state_dir(dir.path()).join("file-stamps.json").exists());
    let edit = r#"{"path": "f.txt", "old_string": "a=1", "new_string": "a=2"}"#;
    // Never read: refused.
    let run = toolbelt(dir.path(), &["call", "edit_file", edit]);
    assert_eq!(run.code, 1, "{run:#?}");
    let run = toolbelt(dir.path(), &["call", "read_file", r#"{"path": "f.txt"}"#]);
    assert_eq!(run.code, 0, "{run:#?}");
    let run = toolbelt(dir.path(), &["call", "edit_file", edit]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("f.txt")).unwrap(),
        "a=2\n"
    );
}

/// Runs `command` with `bash` after a pause of [`SETTLE`] and measures the
/// server's memory (its high-water mark, KiB) before the command starts and at
/// the end: `(envelope, baseline, peak)`. Both are read from the same process, so
/// they differ only by what the command's output made it hold.
fn bash_memory(root: &Path, command: &str, timeout_secs: u64) -> (Value, u64, u64) {
    let args = json!({"command": format!("sleep {}; {command}", SETTLE.as_secs_f64()), "timeout": timeout_secs})
        .to_string();
    let started = Instant::now();
    let mut child = command_for_bash(root, &args);
    let pid = child.id();
    let stdout = child.stdout.take().unwrap();
    let reader = thread::spawn(move || {
        let mut s = String::new();
        let mut stdout = stdout;
        stdout.read_to_string(&mut s).unwrap();
        s
    });
    let (mut baseline, mut peak) = (0, 0);
    while child.try_wait().unwrap().is_none() {
        if let Some(kib) = peak_rss_kib(pid) {
            if started.elapsed() < SETTLE.mul_f64(0.8) {
                baseline = kib;
            }
            peak = peak.max(kib);
        }
        thread::sleep(Duration::from_millis(20));
    }
    let out = reader.join().unwrap();
    assert!(
        baseline > 0,
        "the server was not sampled before the command"
    );
    (serde_json::from_str(&out).unwrap(), baseline, peak)
}

/// The high-water mark of the resident memory of process `pid`, in KiB (none once
/// it has exited).
pub(super) fn peak_rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// `toolbelt call bash`, with the call log and checkpoints off: the memory checks
/// measure the command's buffers, not the store the log would open and write to
/// after it. One
/// malloc arena: on a loaded machine, each blocking thread that happens to start
/// would otherwise touch an arena of its own, which is noise, not buffering.
/// The output is saved whole: into `<root>/.state`, removed with the root.
fn command_for_bash(root: &Path, args: &str) -> Child {
    let state = root.join(".state");
    let state = state.to_str().unwrap();
    command(
        root,
        &[
            "--call-log",
            "off",
            "--state-dir",
            state,
            "call",
            "bash",
            args,
            "--json",
        ],
    )
    .env("MALLOC_ARENA_MAX", "1")
    // Nor the checkpoint's walks and records after it, for the same reason.
    .env("TOOLBELT_CHECKPOINTS", "off")
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .spawn()
    .unwrap()
}

/// Bytes piped through base64 by the test below (more with `TOOLBELT_HEAVY_BYTES`;
/// bench/exec runs 2 GB on a release build).
const HEAVY_BYTES: u64 = 240_000_000;

/// What one command holds in memory for its output, in KiB, per stream (stdout and
/// stderr): a 64 KiB pipe read, its decoded text (as long), the spill file's 64 KiB
/// write buffer, and the 30 KB of text kept for the model.
const BUFFER_CAP_KIB: u64 = 2 * (64 + 64 + 64 + 30);

/// How much a server may grow while a command floods it: four times what the
/// buffers hold. Measured growth is 0.4-0.6 MiB on an idle 2-core machine and up to
/// 1.2 MiB with both cores busy (threads started late, scheduling); a buffer that
/// grew with the output would add hundreds of MiB here.
const GROWTH_BOUND_KIB: u64 = 4 * BUFFER_CAP_KIB;

/// How long [`bash_memory`] lets the server settle before the command starts.
const SETTLE: Duration = Duration::from_millis(1500);

#[test]
fn a_flood_of_output_stays_within_budget_and_memory_and_is_saved_whole() {
    let bytes: u64 = std::env::var("TOOLBELT_HEAVY_BYTES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(HEAVY_BYTES);
    let dir = TempDir::new().unwrap();
    let (env, baseline, peak) = bash_memory(
        dir.path(),
        &format!("head -c {bytes} /dev/zero | base64"),
        600,
    );
    let text = env["text"].as_str().unwrap();
    assert!(text.len() <= 30_000, "{}", text.len());
    assert_eq!(env["data"]["truncated"], true);
    assert_eq!(env["data"]["exit_code"], 0);
    let id = env["data"]["output_id"].as_str().unwrap();
    let spilled = walk_find(dir.path(), &format!("{id}.txt")).expect("the spill file");
    // base64: 4 characters per 3 bytes, in lines of 76 characters.
    let chars = bytes.div_ceil(3) * 4;
    let expected = chars + chars.div_ceil(76);
    assert_eq!(std::fs::metadata(&spilled).unwrap().len(), expected);
    assert_eq!(env["stats"]["stdout_bytes"], expected);
    // None of the buffers grows with the output: the server's memory grows by less
    // than four times what they hold.
    let grown = peak.saturating_sub(baseline);
    eprintln!("peak RSS {peak} KiB, baseline {baseline} KiB, grown {grown} KiB");
    assert!(
        grown < GROWTH_BOUND_KIB,
        "grew by {grown} KiB for {expected} bytes of output"
    );
}

#[test]
fn yes_for_ten_seconds_stays_within_budget_and_memory_and_is_saved_whole() {
    let dir = TempDir::new().unwrap();
    let started = Instant::now();
    let (env, baseline, peak) = bash_memory(dir.path(), "yes", 12);
    assert!(started.elapsed() < Duration::from_secs(20));
    assert_eq!(env["error"]["code"], "TIMEOUT", "{}", env["error"]);
    assert_eq!(env["data"]["exit_code"], 124);
    assert_eq!(env["data"]["truncated"], true);
    let text = env["text"].as_str().unwrap();
    assert!(text.len() <= 30_000, "{}", text.len());
    let id = env["data"]["output_id"].as_str().unwrap();
    let spilled = walk_find(dir.path(), &format!("{id}.txt")).expect("the spill file");
    let saved = std::fs::read(&spilled).unwrap();
    assert!(saved.len() > 10_000_000, "{}", saved.len());
    // Whole lines of "y" up to where the command was stopped.
    let whole = saved.len() - saved.len() % 2;
    assert!(saved[..whole].chunks(2).all(|c| c == b"y\n"));
    let grown = peak.saturating_sub(baseline);
    eprintln!("peak RSS {peak} KiB, baseline {baseline} KiB, grown {grown} KiB");
    assert!(
        grown < GROWTH_BOUND_KIB,
        "grew by {grown} KiB for {} bytes of output",
        saved.len()
    );
}

fn walk_find(dir: &Path, name: &str) -> Option<PathBuf> {
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let path = entry.path();
        if entry.file_name() == name {
            return Some(path);
        }
        if path.is_dir()
            && let Some(found) = walk_find(&path, name)
        {
            return Some(found);
        }
    }
    None
}

#[test]
fn a_command_cannot_reach_the_terminal_the_server_runs_in() {
    let dir = TempDir::new().unwrap();
    // `script` gives toolbelt a terminal of its own (a pseudo-terminal), as when it
    // is run by hand.
    let probe = Command::new("script")
        .args(["-qec", "tty", "/dev/null"])
        .stdin(Stdio::null())
        .output()
        .expect("script (util-linux) is installed");
    assert!(
        String::from_utf8_lossy(&probe.stdout).contains("/dev/pts/"),
        "no pseudo-terminal: {probe:?}"
    );
    let args = json!({"command": "read -r stat < /proc/$$/stat; set -- ${stat##*) }; \
        echo \"ids $$ $3 $4\"; (: < /dev/tty) 2>/dev/null && echo has-tty || echo no-tty"})
    .to_string();
    let line = format!(
        "{} --root {} call bash '{}'",
        env!("CARGO_BIN_EXE_toolbelt"),
        dir.path().display(),
        args.replace('\'', "'\\''")
    );
    let out = Command::new("script")
        .args(["-qec", &line, "/dev/null"])
        .env("XDG_STATE_HOME", state_home())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).replace('\r', "");
    assert!(text.contains("no-tty\n"), "{text}");
    let ids: Vec<&str> = text
        .lines()
        .find_map(|l| l.strip_prefix("ids "))
        .unwrap_or_else(|| panic!("{text}"))
        .split(' ')
        .collect();
    // The shell leads its own session and process group.
    assert_eq!((ids[1], ids[2]), (ids[0], ids[0]), "{text}");
}

#[test]
fn serve_on_a_taken_port_says_the_os_error_once() {
    let root = TempDir::new().unwrap();
    // The test holds the port for the whole run.
    let held = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let bind = held.local_addr().unwrap().to_string();
    let run = toolbelt(root.path(), &["serve", "--bind", &bind, "--no-token"]);
    assert_ne!(run.code, 0, "{run:?}");
    assert_eq!(
        run.stderr.matches("Address already in use").count(),
        1,
        "{}",
        run.stderr
    );
    drop(held);
}

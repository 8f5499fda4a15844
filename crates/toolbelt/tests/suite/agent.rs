//! `toolbelt agent -p`, run as a user runs it, against scripted model providers on
//! 127.0.0.1 that speak the OpenAI and Anthropic wire formats.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use pretty_assertions::assert_eq;
use serde_json::Value;
use tempfile::TempDir;
use toolbelt_agent::ProviderKind;
use toolbelt_agent::testing::{Consume, Recorded, Reply, Script, ScriptedServer};

use super::cli::{Run, command, finish};

/// The API key the tests give; it must never leave the request headers.
const SECRET_KEY: &str = "sk-loopback-SECRET-7f3a9c";

/// `toolbelt agent` for `server`, with the key in the environment.
fn agent_command(
    root: &Path,
    server: &ScriptedServer,
    kind: ProviderKind,
    args: &[&str],
) -> Command {
    let mut all = vec![
        "agent",
        "--provider",
        kind.as_str(),
        "--model",
        "scripted-model",
    ];
    all.extend_from_slice(args);
    let mut cmd = command(root, &all);
    cmd.arg("--base-url").arg(server.base_url());
    cmd.env(kind.default_key_env(), SECRET_KEY);
    cmd
}

/// A scripted provider of `kind` on 127.0.0.1 answering `replies` in order.
fn scripted(kind: ProviderKind, replies: Vec<Reply>) -> ScriptedServer {
    ScriptedServer::start(Script::new(kind, replies)).unwrap()
}

/// Runs `toolbelt agent <args>` to its end.
fn agent(root: &Path, server: &ScriptedServer, kind: ProviderKind, args: &[&str]) -> Run {
    let mut cmd = agent_command(root, server, kind, args);
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let run = finish(child, args);
    assert!(
        !run.stderr.contains("panicked"),
        "toolbelt agent {args:?} panicked:\n{}",
        run.stderr
    );
    assert_no_secret(root, &run);
    run
}

/// The key appears in no output and in no file the run left (transcripts, the call
/// log, spilled outputs).
#[track_caller]
fn assert_no_secret(root: &Path, run: &Run) {
    assert!(!run.stdout.contains(SECRET_KEY), "key on stdout");
    assert!(!run.stderr.contains(SECRET_KEY), "key on stderr");
    for file in walk(&super::cli::state_dir(root)) {
        let bytes = fs::read(&file).unwrap_or_default();
        let text = String::from_utf8_lossy(&bytes);
        assert!(!text.contains(SECRET_KEY), "key in {}", file.display());
    }
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = fs::read_dir(dir) else {
        return out;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

/// A tool result as the model received it: (call id, text, is_error).
pub(super) type SentResult = (String, String, bool);

/// The tool results at the end of a request, in the order sent.
pub(super) fn last_tool_results(kind: ProviderKind, request: &Recorded) -> Vec<SentResult> {
    let messages = request.body["messages"].as_array().unwrap();
    match kind {
        ProviderKind::OpenAi => {
            let mut out: Vec<SentResult> = messages
                .iter()
                .rev()
                .take_while(|m| m["role"] == "tool")
                .map(|m| {
                    (
                        m["tool_call_id"].as_str().unwrap().to_string(),
                        content_text(&m["content"]),
                        false,
                    )
                })
                .collect();
            out.reverse();
            out
        }
        ProviderKind::Anthropic => {
            let last = messages.last().unwrap();
            assert_eq!(last["role"], "user");
            last["content"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|b| b["type"] == "tool_result")
                .map(|b| {
                    (
                        b["tool_use_id"].as_str().unwrap().to_string(),
                        content_text(&b["content"]),
                        b["is_error"].as_bool().unwrap_or(false),
                    )
                })
                .collect()
        }
    }
}

/// A message content as text: a string, or the text of its blocks.
fn content_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// The text of the last user message of a request.
fn last_user_text(request: &Recorded) -> String {
    let messages = request.body["messages"].as_array().unwrap();
    let last = messages.iter().rev().find(|m| m["role"] == "user").unwrap();
    content_text(&last["content"])
}

/// The transcripts the runs left.
fn transcripts(root: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = walk(&super::cli::state_dir(root).join("agent/runs"))
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    files
}

fn transcript_lines(path: &Path) -> Vec<Value> {
    fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// A project with a bug and a test that shows it.
fn buggy_project() -> TempDir {
    let dir = TempDir::new().unwrap();
    fs::write(
        dir.path().join("calc.py"),
        "def add(a, b):\n    return a - b\n",
    )
    .unwrap();
    fs::write(
        dir.path().join("test_calc.py"),
        "from calc import add\nassert add(2, 3) == 5, add(2, 3)\nprint('tests passed')\n",
    )
    .unwrap();
    dir
}

/// Look, read, edit, run the tests, answer: the file is fixed and the run ends with
/// the answer, on either wire format.
fn multi_step_task_fixes_the_file(kind: ProviderKind) {
    let project = buggy_project();
    let answer = "Fixed `add` in calc.py: it subtracted. The tests pass.";
    let server = scripted(
        kind,
        vec![
            // Written a few bytes at a time: events and arguments split across reads.
            Reply::call("list_dir", r#"{"path": "."}"#).chunked(7),
            Reply::call("read_file", r#"{"path": "calc.py"}"#).chunked(3),
            Reply::call(
                "edit_file",
                r#"{"path": "calc.py", "old_string": "a - b", "new_string": "a + b"}"#,
            ),
            Reply::call("bash", r#"{"command": "python3 test_calc.py"}"#),
            Reply::text(answer).chunked(5),
        ],
    );
    let run = agent(
        project.path(),
        &server,
        kind,
        &["-p", "The tests fail. Fix the bug."],
    );
    assert_eq!(run.code, 0, "stderr:\n{}", run.stderr);
    assert_eq!(run.stdout.trim_end(), answer);
    assert_eq!(
        fs::read_to_string(project.path().join("calc.py")).unwrap(),
        "def add(a, b):\n    return a + b\n"
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 5);
    // Every call carries the tools and the key, in the provider's own way.
    for request in &requests {
        assert_eq!(request.body["stream"], true);
        assert!(request.body["tools"].as_array().unwrap().len() > 10);
        match kind {
            ProviderKind::OpenAi => {
                assert_eq!(
                    request.header("authorization"),
                    Some(format!("Bearer {SECRET_KEY}").as_str())
                );
                assert_eq!(request.path, "/v1/chat/completions");
            }
            ProviderKind::Anthropic => {
                assert_eq!(request.header("x-api-key"), Some(SECRET_KEY));
                assert!(request.header("anthropic-version").is_some());
                assert_eq!(request.path, "/v1/messages");
            }
        }
    }
    assert!(last_user_text(&requests[0]).contains("Fix the bug"));
    let read = last_tool_results(kind, &requests[2]);
    assert_eq!(read.len(), 1);
    assert!(read[0].1.contains("return a - b"), "{read:?}");
    let tests = last_tool_results(kind, &requests[4]);
    assert!(tests[0].1.contains("tests passed"), "{tests:?}");
    assert!(!tests[0].2);
    // Progress went to stderr, one line a call by its key argument.
    assert!(
        run.stderr.contains("python3 test_calc.py"),
        "{}",
        run.stderr
    );
    // The run left a transcript with the whole conversation.
    let files = transcripts(project.path());
    assert_eq!(files.len(), 1);
    let lines = transcript_lines(&files[0]);
    assert!(
        lines
            .iter()
            .any(|l| l["type"] == "end" && l["outcome"] == "final_answer")
    );
    assert_eq!(
        lines.iter().filter(|l| l["type"] == "envelope").count(),
        4,
        "one envelope per call"
    );
}

#[test]
fn multi_step_task_fixes_the_file_over_openai() {
    multi_step_task_fixes_the_file(ProviderKind::OpenAi);
}

#[test]
fn multi_step_task_fixes_the_file_over_anthropic() {
    multi_step_task_fixes_the_file(ProviderKind::Anthropic);
}

#[test]
fn parallel_calls_are_answered_in_call_order_with_their_ids() {
    for kind in [ProviderKind::OpenAi, ProviderKind::Anthropic] {
        let dir = TempDir::new().unwrap();
        fs::write(dir.path().join("a.txt"), "alpha\n").unwrap();
        fs::write(dir.path().join("b.txt"), "bravo\n").unwrap();
        let server = scripted(
            kind,
            vec![
                Reply::calls(vec![
                    ("read_file", r#"{"path": "b.txt"}"#),
                    ("read_file", r#"{"path": "a.txt"}"#),
                ]),
                Reply::text("bravo then alpha"),
            ],
        );
        let run = agent(dir.path(), &server, kind, &["-p", "read both"]);
        assert_eq!(run.code, 0, "{}", run.stderr);
        let requests = server.requests();
        let results = last_tool_results(kind, &requests[1]);
        assert_eq!(results.len(), 2, "{kind}: {results:?}");
        assert!(results[0].1.contains("bravo"), "{kind}: {results:?}");
        assert!(results[1].1.contains("alpha"), "{kind}: {results:?}");
        // The ids answer the calls the model made, in its order.
        let asked = match kind {
            ProviderKind::OpenAi => requests[1].body["messages"]
                .as_array()
                .unwrap()
                .iter()
                .rev()
                .find(|m| m["role"] == "assistant")
                .unwrap()["tool_calls"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c["id"].as_str().unwrap().to_string())
                .collect::<Vec<_>>(),
            ProviderKind::Anthropic => requests[1].body["messages"]
                .as_array()
                .unwrap()
                .iter()
                .rev()
                .find(|m| m["role"] == "assistant")
                .unwrap()["content"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|b| b["type"] == "tool_use")
                .map(|b| b["id"].as_str().unwrap().to_string())
                .collect::<Vec<_>>(),
        };
        let answered: Vec<String> = results.iter().map(|r| r.0.clone()).collect();
        assert_eq!(answered, asked, "{kind}");
    }
}

#[test]
fn broken_arguments_and_an_unknown_tool_go_back_to_the_model() {
    let kind = ProviderKind::OpenAi;
    let dir = TempDir::new().unwrap();
    fs::write(dir.path().join("notes.txt"), "the notes\n").unwrap();
    let server = scripted(
        kind,
        vec![
            Reply::calls(vec![
                ("read_file", r#"{"path": }"#),
                ("raed_file", r#"{"path": "notes.txt"}"#),
            ]),
            Reply::call("read_file", r#"{"path": "notes.txt",}"#),
            Reply::text("the notes say: the notes"),
        ],
    );
    let run = agent(dir.path(), &server, kind, &["-p", "read the notes"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let results = last_tool_results(kind, &requests[1]);
    assert_eq!(results.len(), 2);
    assert!(results[0].1.contains("INVALID_PARAMS"), "{results:?}");
    assert!(
        results[1].1.contains("read_file"),
        "closest name: {results:?}"
    );
    // A trailing comma is repaired and the call runs.
    let repaired = last_tool_results(kind, &requests[2]);
    assert!(repaired[0].1.contains("the notes"), "{repaired:?}");
}

#[test]
fn a_model_repeating_one_call_is_reminded_then_stopped() {
    let kind = ProviderKind::OpenAi;
    let dir = TempDir::new().unwrap();
    fs::write(dir.path().join("a.txt"), "alpha\n").unwrap();
    let mut script = Script::new(kind, vec![]);
    script.when_done = Some(Reply::call("read_file", r#"{"path": "a.txt"}"#));
    let server = ScriptedServer::start(script).unwrap();
    let run = agent(
        dir.path(),
        &server,
        kind,
        &["-p", "read a.txt", "--max-repeats", "5"],
    );
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stdout.trim().is_empty(), "{}", run.stdout);
    assert!(
        run.stderr.contains("same call") && run.stderr.contains("5 times"),
        "{}",
        run.stderr
    );
    let requests = server.requests();
    // Calls 1-4 ran; the fifth was refused and ended the run.
    assert_eq!(requests.len(), 5);
    let third = last_tool_results(kind, &requests[3]);
    assert!(third[0].1.contains("Reminder"), "{third:?}");
    let second = last_tool_results(kind, &requests[2]);
    assert!(!second[0].1.contains("Reminder"), "{second:?}");
}

#[test]
fn max_steps_ends_a_run_that_goes_on() {
    let kind = ProviderKind::OpenAi;
    let dir = TempDir::new().unwrap();
    let mut script = Script::new(kind, vec![]);
    script.when_done = Some(Reply::call("list_dir", r#"{"path": "."}"#));
    let mut replies = Vec::new();
    for i in 0..10 {
        replies.push(Reply::call("glob", format!(r#"{{"pattern": "*{i}"}}"#)));
    }
    script.replies = replies;
    let server = ScriptedServer::start(script).unwrap();
    let run = agent(
        dir.path(),
        &server,
        kind,
        &["-p", "look around", "--max-steps", "3", "--json"],
    );
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(server.requests().len(), 3);
    // --json: stdout is the event stream, one JSON object a line.
    let events: Vec<Value> = run
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert_eq!(events.first().unwrap()["type"], "run_started");
    let end = events.last().unwrap();
    assert_eq!(end["type"], "run_ended");
    assert_eq!(end["outcome"], "max_steps");
    assert_eq!(end["steps"], 3);
    assert!(end["message"].as_str().unwrap().contains("3 steps"));
    assert_eq!(
        events.iter().filter(|e| e["type"] == "tool_call").count(),
        3
    );
}

#[test]
fn a_flood_of_output_reaches_the_model_bounded_with_its_last_error_line() {
    let kind = ProviderKind::OpenAi;
    let dir = TempDir::new().unwrap();
    let server = scripted(
        kind,
        vec![
            Reply::call(
                "bash",
                r#"{"command": "seq 1 200000; echo 'error: disk quota exceeded at line 200000' >&2; exit 3"}"#,
            ),
            Reply::text("it failed on the disk quota"),
        ],
    );
    let run = agent(dir.path(), &server, kind, &["-p", "run it"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let requests = server.requests();
    let result = &last_tool_results(kind, &requests[1])[0].1;
    assert!(result.len() < 64 * 1024, "{} bytes", result.len());
    assert!(result.contains("error: disk quota exceeded"), "{result}");
    assert!(
        result.contains("\n1\n") || result.starts_with('1'),
        "head kept"
    );
    assert!(result.contains("200000"), "tail kept");
}

#[test]
fn a_429_with_retry_after_is_retried() {
    for kind in [ProviderKind::OpenAi, ProviderKind::Anthropic] {
        let dir = TempDir::new().unwrap();
        let server = scripted(
            kind,
            vec![
                Reply::error(429, Some("1"), "Rate limit reached for requests"),
                Reply::text("hello after the wait"),
            ],
        );
        let started = Instant::now();
        let run = agent(dir.path(), &server, kind, &["-p", "hi"]);
        assert_eq!(run.code, 0, "{kind}: {}", run.stderr);
        assert_eq!(run.stdout.trim_end(), "hello after the wait");
        assert_eq!(server.requests().len(), 2);
        assert!(
            started.elapsed() >= Duration::from_millis(900),
            "Retry-After honoured"
        );
        assert!(run.stderr.contains("429"), "{kind}: {}", run.stderr);
    }
}

#[test]
fn a_provider_that_keeps_failing_is_reported_with_its_own_words() {
    let kind = ProviderKind::OpenAi;
    let dir = TempDir::new().unwrap();
    let server = scripted(
        kind,
        vec![Reply::error(
            401,
            None,
            "Incorrect API key provided: the-scripted-refusal",
        )],
    );
    let run = agent(dir.path(), &server, kind, &["-p", "hi"]);
    assert_eq!(run.code, 1);
    assert!(run.stdout.is_empty(), "{}", run.stdout);
    assert!(
        run.stderr.contains("401") && run.stderr.contains("the-scripted-refusal"),
        "{}",
        run.stderr
    );
    assert_eq!(server.requests().len(), 1, "a 401 is not retried");
}

#[test]
fn the_text_protocol_runs_without_tools_in_the_request() {
    let kind = ProviderKind::OpenAi;
    let dir = TempDir::new().unwrap();
    fs::write(dir.path().join("answer.txt"), "forty-two\n").unwrap();
    let server = scripted(
        kind,
        vec![
            Reply::text(
                "Thought: the answer is in a file.\nAction: read_file[{\"path\": \"answer.txt\"}]",
            ),
            Reply::text("Thought: I have it.\nFinal Answer: forty-two"),
        ],
    );
    let run = agent(
        dir.path(),
        &server,
        kind,
        &["-p", "what is the answer?", "--protocol", "text"],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout.trim_end(), "forty-two");
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    for request in &requests {
        assert!(request.body.get("tools").is_none(), "{}", request.body);
        let system = &request.body["messages"][0];
        assert_eq!(system["role"], "system");
        assert!(system["content"].as_str().unwrap().contains("read_file["));
    }
    let observation = last_user_text(&requests[1]);
    assert!(observation.starts_with("Observation"), "{observation}");
    assert!(observation.contains("forty-two"), "{observation}");
}

#[test]
fn ctrl_c_during_a_long_command_kills_its_tree_and_the_run_can_go_on() {
    let kind = ProviderKind::OpenAi;
    let dir = TempDir::new().unwrap();
    let server = scripted(
        kind,
        vec![
            Reply::call(
                "bash",
                r#"{"command": "sleep 600 & echo $! > sleep.pid; wait", "timeout": 600}"#,
            ),
            Reply::text("it was stopped, so I stopped too"),
        ],
    );
    let args = ["-p", "run the long job"];
    let mut cmd = agent_command(dir.path(), &server, kind, &args);
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let pid_file = dir.path().join("sleep.pid");
    let deadline = Instant::now() + Duration::from_secs(20);
    let sleep_pid = loop {
        if let Ok(text) = fs::read_to_string(&pid_file)
            && let Ok(pid) = text.trim().parse::<u32>()
        {
            break pid;
        }
        assert!(Instant::now() < deadline, "the command never started");
        thread::sleep(Duration::from_millis(20));
    };
    assert!(alive(sleep_pid));
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(i32::try_from(child.id()).unwrap()).unwrap(),
        rustix::process::Signal::INT,
    )
    .unwrap();
    let run = finish(child, &args);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.to_lowercase().contains("cancel"),
        "{}",
        run.stderr
    );
    let deadline = Instant::now() + Duration::from_secs(5);
    while alive(sleep_pid) {
        assert!(
            Instant::now() < deadline,
            "the command's tree outlived Ctrl-C"
        );
        thread::sleep(Duration::from_millis(20));
    }
    // The conversation was kept: --continue goes on from it.
    let run = agent(
        dir.path(),
        &server,
        kind,
        &["--continue", "-p", "what happened?"],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let messages = requests[1].body["messages"].to_string();
    assert!(messages.contains("run the long job"), "{messages}");
    assert!(messages.contains("what happened?"), "{messages}");
}

/// True while `pid` runs (a zombie is not running).
fn alive(pid: u32) -> bool {
    match fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat.rsplit(')').next().unwrap_or("").trim_start();
            !state.starts_with('Z')
        }
        Err(_) => false,
    }
}

#[test]
fn a_long_run_in_a_small_window_is_compacted_and_finishes() {
    let kind = ProviderKind::OpenAi;
    let dir = TempDir::new().unwrap();
    let mut replies = Vec::new();
    for i in 0..8 {
        let line = format!("file {i}: {}\n", "lorem ipsum dolor sit amet ".repeat(3));
        fs::write(dir.path().join(format!("f{i}.txt")), line.repeat(250)).unwrap();
        replies.push(Reply::call(
            "read_file",
            format!(r#"{{"path": "f{i}.txt"}}"#),
        ));
    }
    replies.push(Reply::text("read them all"));
    let mut script = Script::new(kind, replies);
    // Summary requests carry no tools: they get the side reply.
    script.consume = Consume::WithTools;
    script.side_reply = Some(Reply::text(
        "Summary: the files f0-f3 were read; all lorem ipsum.",
    ));
    let server = ScriptedServer::start(script).unwrap();
    let run = agent(
        dir.path(),
        &server,
        kind,
        &["-p", "read every file", "--context-window", "64000"],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout.trim_end(), "read them all");
    let files = transcripts(dir.path());
    let lines = transcript_lines(&files[0]);
    let compactions: Vec<&Value> = lines.iter().filter(|l| l["type"] == "compaction").collect();
    assert!(!compactions.is_empty(), "no compaction recorded");
    let first = compactions[0];
    assert!(first["tokens_after"].as_u64() < first["tokens_before"].as_u64());
    assert!(
        compactions
            .iter()
            .any(|c| c["kind"] == "tool_results" && !c["shortened"].as_array().unwrap().is_empty()),
        "what was shortened is recorded: {compactions:?}"
    );
    // The requests stop growing once the history is compacted.
    let sizes: Vec<usize> = server
        .requests()
        .iter()
        .filter(|r| r.body.get("tools").is_some())
        .map(|r| r.body["messages"].to_string().len())
        .collect();
    // Without compaction the eighth read would send 8 files' worth (about 200 KB).
    assert!(sizes.windows(2).any(|w| w[1] < w[0] / 2), "{sizes:?}");
    assert!(*sizes.iter().max().unwrap() < 150_000, "{sizes:?}");
    // The task is still there after compaction.
    let last = server
        .requests()
        .into_iter()
        .rfind(|r| r.body.get("tools").is_some())
        .unwrap();
    assert!(
        last.body["messages"]
            .to_string()
            .contains("read every file")
    );
}

#[test]
fn continue_and_resume_go_on_from_a_transcript_and_list_shows_runs() {
    let kind = ProviderKind::Anthropic;
    let dir = TempDir::new().unwrap();
    let server = scripted(
        kind,
        vec![
            Reply::text("I will remember 7."),
            Reply::text("You said 7."),
            Reply::text("Still 7."),
        ],
    );
    let first = agent(dir.path(), &server, kind, &["-p", "remember the number 7"]);
    assert_eq!(first.code, 0, "{}", first.stderr);
    let second = agent(
        dir.path(),
        &server,
        kind,
        &["--continue", "-p", "which number?"],
    );
    assert_eq!(second.code, 0, "{}", second.stderr);
    assert_eq!(second.stdout.trim_end(), "You said 7.");
    let requests = server.requests();
    let messages = requests[1].body["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 3, "{messages:?}");
    assert!(messages[0].to_string().contains("remember the number 7"));
    assert!(messages[1].to_string().contains("I will remember 7."));
    // One transcript, appended to.
    let files = transcripts(dir.path());
    assert_eq!(files.len(), 1);
    let id = files[0].file_stem().unwrap().to_str().unwrap().to_string();
    let third = agent(
        dir.path(),
        &server,
        kind,
        &["--resume", &id, "-p", "and now?"],
    );
    assert_eq!(third.code, 0, "{}", third.stderr);
    assert_eq!(
        server.requests()[2].body["messages"]
            .as_array()
            .unwrap()
            .len(),
        5
    );
    let list = agent(dir.path(), &server, kind, &["--list"]);
    assert_eq!(list.code, 0, "{}", list.stderr);
    assert!(list.stdout.contains(&id), "{}", list.stdout);
    assert!(
        list.stdout.contains("remember the number 7"),
        "{}",
        list.stdout
    );
    // An unknown id is an error that says so.
    let bad = agent(
        dir.path(),
        &server,
        kind,
        &["--resume", "no-such-run", "-p", "x"],
    );
    assert_eq!(bad.code, 2, "{}", bad.stderr);
    assert!(bad.stderr.contains("no-such-run"), "{}", bad.stderr);
}

#[test]
fn the_prompt_may_come_from_stdin_and_ask_rules_are_refused_without_a_person() {
    let kind = ProviderKind::OpenAi;
    let dir = TempDir::new().unwrap();
    fs::write(
        dir.path().join("toolbelt.toml"),
        "[permissions]\nask = [\"bash(touch:*)\"]\n",
    )
    .unwrap();
    let server = scripted(
        kind,
        vec![
            Reply::call("bash", r#"{"command": "touch made.txt"}"#),
            Reply::text("I was not allowed to"),
        ],
    );
    let args = ["-p", "-"];
    let mut cmd = agent_command(dir.path(), &server, kind, &args);
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(b"make the file, please\n").unwrap();
    }
    let run = finish(child, &args);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(!dir.path().join("made.txt").exists());
    let requests = server.requests();
    assert!(last_user_text(&requests[0]).contains("make the file, please"));
    let refused = last_tool_results(kind, &requests[1]);
    assert!(refused[0].1.contains("--yes"), "{refused:?}");

    // --yes approves it.
    let server = scripted(
        kind,
        vec![
            Reply::call("bash", r#"{"command": "touch made.txt"}"#),
            Reply::text("made"),
        ],
    );
    let run = agent(dir.path(), &server, kind, &["-p", "make it", "--yes"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(dir.path().join("made.txt").exists());
}

#[test]
fn missing_model_and_bad_provider_are_usage_errors() {
    let dir = TempDir::new().unwrap();
    for (args, needle) in [
        (
            &["agent", "-p", "hi", "--base-url", "http://127.0.0.1:9/v1"][..],
            "--model",
        ),
        (
            &["agent", "-p", "hi", "--provider", "gemeni", "--model", "m"][..],
            "gemeni",
        ),
    ] {
        let child = command(dir.path(), args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let run = finish(child, args);
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        assert!(run.stderr.contains(needle), "{args:?}: {}", run.stderr);
    }
}

/// The tools of `toolbelt --tools coding`, as every interface lists them.
pub(super) const CODING_TOOLS: [&str; 19] = [
    "apply_patch",
    "ask_user",
    "bash",
    "bash_output",
    "diagnostics",
    "edit_file",
    "glob",
    "grep",
    "kill_shell",
    "list_dir",
    "list_shells",
    "multi_edit",
    "read_file",
    "read_output",
    "set_todo_list",
    "think",
    "update_todos",
    "write_file",
    "write_stdin",
];

#[test]
fn with_tools_coding_the_model_is_sent_only_the_coding_set() {
    for kind in [ProviderKind::OpenAi, ProviderKind::Anthropic] {
        let dir = tempfile::tempdir().unwrap();
        let server = ScriptedServer::start(Script::new(kind, vec![Reply::text("ok")])).unwrap();
        let run = agent(
            dir.path(),
            &server,
            kind,
            &["--tools", "coding", "-p", "hi"],
        );
        assert_eq!(run.code, 0, "stderr:\n{}", run.stderr);
        let requests = server.requests();
        assert_eq!(requests.len(), 1);
        let mut names: Vec<String> = requests[0].body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                let name = match kind {
                    ProviderKind::OpenAi => &t["function"]["name"],
                    ProviderKind::Anthropic => &t["name"],
                };
                name.as_str().unwrap().to_string()
            })
            .collect();
        names.sort();
        assert_eq!(names, CODING_TOOLS, "{kind:?}");
    }
}

#[test]
fn a_second_ctrl_c_quits_with_the_calls_made_so_far_in_the_call_log() {
    let kind = ProviderKind::OpenAi;
    let dir = TempDir::new().unwrap();
    let server = scripted(
        kind,
        vec![
            Reply::call("think", r#"{"thought": "written before the quit"}"#),
            // The model takes a minute over its next answer: the user quits meanwhile.
            Reply::text("too late").delayed(60_000),
        ],
    );
    let args = ["-p", "think first"];
    let mut cmd = agent_command(dir.path(), &server, kind, &args);
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while server.requests().len() < 2 {
        assert!(Instant::now() < deadline, "the model was never asked again");
        thread::sleep(Duration::from_millis(20));
    }
    let pid = rustix::process::Pid::from_raw(i32::try_from(child.id()).unwrap()).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::INT).unwrap();
    thread::sleep(Duration::from_millis(200));
    rustix::process::kill_process(pid, rustix::process::Signal::INT).unwrap();
    let run = finish(child, &args);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let log = command(dir.path(), &["log", "--json"]).output().unwrap();
    let text = String::from_utf8_lossy(&log.stdout);
    assert!(text.contains("written before the quit"), "{text}");
}

#[test]
fn without_a_person_ask_user_tells_the_model_to_ask_in_its_reply() {
    let kind = ProviderKind::OpenAi;
    let dir = TempDir::new().unwrap();
    let ask = r#"{"questions": [{"header": "Database", "question": "Which one?",
        "options": [{"label": "PostgreSQL"}, {"label": "SQLite"}]}]}"#;
    let server = ScriptedServer::start(
        Script::new(
            kind,
            vec![
                Reply::call("ask_user", ask),
                Reply::call(
                    "task",
                    r#"{"description": "ask from a subagent", "prompt": "ASK-CHILD ask the user"}"#,
                ),
                Reply::text("Which database should it be?"),
            ],
        )
        .route(
            "ASK-CHILD",
            vec![Reply::call("ask_user", ask), Reply::text("nobody answered")],
        ),
    )
    .unwrap();
    let run = agent(dir.path(), &server, kind, &["-p", "set up the database"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout.trim(), "Which database should it be?");
    let requests = server.requests();
    assert_eq!(requests.len(), 5, "{requests:?}");
    // The run's own call: nobody is at the terminal.
    let parent = last_tool_results(kind, &requests[1]);
    assert!(parent[0].1.contains("UNAVAILABLE"), "{parent:?}");
    assert!(
        parent[0]
            .1
            .contains("the run is unattended (-p): nobody is at the terminal"),
        "{parent:?}"
    );
    assert!(
        parent[0].1.contains("ask your questions in your reply"),
        "{parent:?}"
    );
    // A subagent asks nobody.
    let child = requests
        .iter()
        .find(|r| {
            let messages = r.body["messages"].as_array().unwrap();
            let first_user = messages.iter().find(|m| m["role"] == "user").unwrap();
            content_text(&first_user["content"]).contains("ASK-CHILD")
                && messages.last().is_some_and(|m| m["role"] == "tool")
        })
        .unwrap_or_else(|| panic!("no request of the subagent with a result: {requests:?}"));
    let child = last_tool_results(kind, child);
    assert!(child[0].1.contains("UNAVAILABLE"), "{child:?}");
    assert!(!child[0].1.contains("unattended"), "{child:?}");
}

/// The tokens (o200k_base) of what a request sends the model: its messages (the
/// system prompt and the conversation) and its tool definitions.
fn request_tokens(request: &Recorded) -> usize {
    let bpe = tiktoken_rs::o200k_base().unwrap();
    let mut text = request.body["messages"].to_string();
    if let Some(tools) = request.body.get("tools") {
        text.push_str(&tools.to_string());
    }
    bpe.encode_ordinary(&text).len()
}

/// `--model-size small`: the minimal toolset with short descriptions, the finish
/// tool and a short prompt without an example to continue; the first request of
/// a coding task stays within 3,000 tokens (printed beside the full coding
/// set's).
#[test]
fn a_small_model_gets_a_first_request_within_3000_tokens() {
    const TASK: &str = "The test in test_calc.py fails. Fix calc.py so that it passes.";
    let dir = tempfile::tempdir().unwrap();
    let small = scripted(
        ProviderKind::OpenAi,
        vec![
            Reply::text("Nothing to do."),
            Reply::call("finish", r#"{"answer": "Nothing to do."}"#),
        ],
    );
    let run = agent(
        dir.path(),
        &small,
        ProviderKind::OpenAi,
        &["--model-size", "small", "--constrain", "none", "-p", TASK],
    );
    assert_eq!(run.code, 0, "stderr:\n{}", run.stderr);
    assert_eq!(run.stdout.trim(), "Nothing to do.");
    let requests = small.requests();
    let first = &requests[0];
    let mut names: Vec<&str> = first.body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "bash",
            "edit_file",
            "finish",
            "glob",
            "grep",
            "read_file",
            "write_file"
        ]
    );
    let system = first.body["messages"][0]["content"].as_str().unwrap();
    assert!(system.contains("You act only by calling tools"), "{system}");
    assert!(system.contains("call finish with your answer"), "{system}");
    assert!(!system.contains("<tool_response>") && !system.contains("README.md"));
    // A low temperature unless told otherwise.
    assert_eq!(first.body["temperature"], serde_json::json!(0.2));
    // Prose is not an answer: a reminder (the second request), then finish.
    assert_eq!(requests.len(), 2);
    assert!(last_user_text(&requests[1]).contains("called no tool"));
    let lean = request_tokens(first);

    let full = scripted(ProviderKind::OpenAi, vec![Reply::text("Nothing to do.")]);
    let run = agent(
        dir.path(),
        &full,
        ProviderKind::OpenAi,
        &["--tools", "coding", "-p", TASK],
    );
    assert_eq!(run.code, 0, "stderr:\n{}", run.stderr);
    let coding = request_tokens(&full.requests()[0]);
    println!("first request, o200k tokens: small model {lean}; --tools coding {coding}");
    assert!(
        lean <= 3_000,
        "the small model's first request takes {lean} tokens"
    );
    assert!(lean * 3 < coding, "small {lean} vs coding {coding}");
}

/// `--protocol auto` asks the local server: llama.cpp's /props and Ollama's
/// /api/show say whether the chat template takes tools; native calls when it
/// does, the text protocol (with its stop sequence) when it does not. The context
/// window the server runs with is taken too.
#[test]
fn protocol_auto_follows_what_the_server_says() {
    let llama = |tools: bool| {
        serde_json::json!({
            "default_generation_settings": {"n_ctx": 4096, "params": {}},
            "chat_template_caps": {"supports_tools": tools, "supports_tool_calls": tools},
        })
    };
    let ollama = |caps: &[&str]| serde_json::json!({"capabilities": caps, "model_info": {}});
    let cases = [
        (llama(true), true, "llama.cpp"),
        (llama(false), false, "llama.cpp"),
        (ollama(&["completion", "tools"]), true, "ollama"),
        (ollama(&["completion"]), false, "ollama"),
    ];
    for (info, native, server_name) in cases {
        let dir = tempfile::tempdir().unwrap();
        let server = ScriptedServer::start(
            Script::new(
                ProviderKind::OpenAi,
                vec![Reply::text("Final Answer: done")],
            )
            .with_server_info(info.clone()),
        )
        .unwrap();
        let run = agent(
            dir.path(),
            &server,
            ProviderKind::OpenAi,
            &["--protocol", "auto", "-p", "hi"],
        );
        assert_eq!(run.code, 0, "{info}\nstderr:\n{}", run.stderr);
        assert!(run.stderr.contains(server_name), "{}", run.stderr);
        let body = &server.requests()[0].body;
        let system = body["messages"][0]["content"].as_str().unwrap();
        if native {
            assert!(
                body["tools"].as_array().is_some_and(|t| !t.is_empty()),
                "{info}"
            );
            assert!(body.get("stop").is_none());
            assert!(
                run.stderr.contains("native function calling"),
                "{}",
                run.stderr
            );
        } else {
            assert!(body.get("tools").is_none(), "{info}");
            assert_eq!(body["stop"], serde_json::json!(["\nObservation:"]));
            assert!(system.contains("Action: tool_name["), "{system}");
            assert!(run.stderr.contains("the text protocol"), "{}", run.stderr);
        }
        if server_name == "llama.cpp" {
            assert!(
                run.stderr.contains("a context window of 4096 tokens"),
                "{}",
                run.stderr
            );
        }
        // Native: the text is the answer; text protocol: what follows the marker.
        let answer = if native { "Final Answer: done" } else { "done" };
        assert_eq!(run.stdout.trim(), answer);
    }
}

/// `--model-size small` holds every reply the way the server supports, and says
/// which first: llama.cpp takes a grammar, so the text protocol with a grammar of
/// the tools' calls (whatever its chat template takes); with `--protocol native`
/// given, `tool_choice: "required"` once the server was seen to honour it. A
/// server that says nothing of itself is asked once (one small request with
/// `tool_choice: "required"`), and what it did is remembered.
#[test]
fn a_small_model_is_constrained_as_the_server_allows() {
    let llama = serde_json::json!({
        "default_generation_settings": {"n_ctx": 8192, "params": {}},
        "chat_template_caps": {"supports_tools": true, "supports_tool_calls": true},
    });
    let dir = tempfile::tempdir().unwrap();
    let server = ScriptedServer::start(
        Script::new(
            ProviderKind::OpenAi,
            vec![Reply::text(r#"Action: finish[{"answer": "done"}]"#)],
        )
        .with_server_info(llama.clone()),
    )
    .unwrap();
    let run = agent(
        dir.path(),
        &server,
        ProviderKind::OpenAi,
        &["--model-size", "small", "--protocol", "auto", "-p", "hi"],
    );
    assert_eq!(run.code, 0, "stderr:\n{}", run.stderr);
    assert_eq!(run.stdout.trim(), "done");
    let first_line = run.stderr.lines().next().unwrap_or_default();
    assert!(
        first_line.contains("constraint: a GBNF grammar"),
        "{}",
        run.stderr
    );
    let body = &server.requests()[0].body;
    assert!(
        body["grammar"]
            .as_str()
            .is_some_and(|g| g.contains("finish")),
        "{body}"
    );
    assert!(body.get("tools").is_none());

    // Native function calling given: llama.cpp is asked whether it holds to it.
    let server = ScriptedServer::start(
        Script::new(
            ProviderKind::OpenAi,
            vec![
                Reply::call("finish", r#"{"answer": "probe"}"#),
                Reply::call("finish", r#"{"answer": "native"}"#),
            ],
        )
        .with_server_info(llama),
    )
    .unwrap();
    let run = agent(
        dir.path(),
        &server,
        ProviderKind::OpenAi,
        &["--model-size", "small", "--protocol", "native", "-p", "hi"],
    );
    assert_eq!(run.code, 0, "stderr:\n{}", run.stderr);
    assert_eq!(run.stdout.trim(), "native");
    assert!(
        run.stderr
            .lines()
            .next()
            .unwrap_or_default()
            .contains("constraint: tool_choice")
    );
    assert_eq!(server.requests()[1].body["tool_choice"], "required");

    // A server that says nothing of itself: asked once, remembered.
    let server = scripted(
        ProviderKind::OpenAi,
        vec![
            Reply::call("finish", r#"{"answer": "probe"}"#),
            Reply::call("finish", r#"{"answer": "first"}"#),
            Reply::call("finish", r#"{"answer": "second"}"#),
        ],
    );
    for expected in ["first", "second"] {
        let run = agent(
            dir.path(),
            &server,
            ProviderKind::OpenAi,
            &["--model-size", "small", "-p", "hi"],
        );
        assert_eq!(run.code, 0, "stderr:\n{}", run.stderr);
        assert_eq!(run.stdout.trim(), expected);
        assert!(
            run.stderr.contains("constraint: tool_choice"),
            "{}",
            run.stderr
        );
    }
    let requests = server.requests();
    assert_eq!(requests.len(), 3, "asked more than once");
    assert_eq!(requests[0].body["tool_choice"], "required");
    assert_eq!(requests[2].body["tool_choice"], "required");
}

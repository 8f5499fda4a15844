//! Jobs and messages through the binary, in real time: `toolbelt serve` fires a
//! job every 2 s, two servers on one store (SQLite, PostgreSQL) fire each tick
//! once, and a message left by a SIGKILLed server is delivered once after restart.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use pretty_assertions::assert_eq;
use serde_json::Value;
use toolbelt_store::{Location, Store, testing};

/// `toolbelt` in `root`, its environment cleared of toolbelt's variables.
fn command(root: &Path, database: Option<&str>) -> Command {
    let mut cmd = super::cli::bare_command();
    cmd.arg("--root").arg(root);
    if let Some(url) = database {
        cmd.arg("--database-url").arg(url);
    }
    cmd.stdin(Stdio::null());
    cmd
}

fn run(root: &Path, database: Option<&str>, args: &[&str]) -> Output {
    let out = command(root, database).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "toolbelt {args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// A running `toolbelt serve` and its address.
pub(super) struct Served {
    child: Child,
    pub(super) url: String,
}

impl Served {
    fn start(root: &Path, database: Option<&str>) -> Served {
        Served::from_command(command(root, database))
    }

    /// `cmd serve` on a free port of 127.0.0.1 without a token, once it listens.
    pub(super) fn from_command(mut cmd: Command) -> Served {
        let mut child = cmd
            .args(["serve", "--bind", "127.0.0.1:0", "--no-token"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let url = loop {
            let line = lines.next().expect("serve printed its address").unwrap();
            if let Some(rest) = line.strip_prefix("toolbelt listening on ") {
                break rest.split_whitespace().next().unwrap().to_string();
            }
        };
        // Keep reading so the server never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines {});
        Served { child, url }
    }

    /// The server's process id.
    pub(super) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGTERM, then wait.
    pub(super) fn stop(mut self) {
        let pid = rustix::process::Pid::from_raw(i32::try_from(self.child.id()).unwrap()).unwrap();
        rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
        let _ = self.child.wait();
    }

    /// SIGKILL, then wait.
    fn kill(mut self) {
        self.child.kill().unwrap();
        let _ = self.child.wait();
    }
}

fn file_channel_config(root: &Path) {
    std::fs::write(
        root.join("toolbelt.toml"),
        "[channels.local]\nkind = \"file\"\n",
    )
    .unwrap();
}

pub(super) fn delivered(root: &Path) -> Vec<Value> {
    std::fs::read_to_string(super::cli::state_dir(root).join("messages-local.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn a_job_every_2s_fires_3_times_in_7s_of_serve() {
    let root = tempfile::tempdir().unwrap();
    file_channel_config(root.path());
    run(
        root.path(),
        None,
        &[
            "cron",
            "add",
            "tick",
            "--schedule",
            "every 2s",
            "--message",
            "tick",
            "--channel",
            "local",
        ],
    );
    let added = Instant::now();
    let served = Served::start(root.path(), None);
    std::thread::sleep(Duration::from_millis(7_000).saturating_sub(added.elapsed()));
    served.stop();
    let lines = delivered(root.path());
    assert_eq!(lines.len(), 3, "{lines:#?}");
    assert!(lines.iter().all(|l| l["content"] == "tick"));
    // The job is still there, with its last run.
    let out = run(root.path(), None, &["cron", "list"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("tick [every 2s") && text.contains(" sent"),
        "{text}"
    );
}

/// Two servers on one store for about 5 s, a job every second: every claimed tick
/// is delivered once, ticks are consecutive, and keys are distinct.
fn two_servers_deliver_each_tick_once(root: &Path, database: Option<&str>, location: &Location) {
    file_channel_config(root);
    run(
        root,
        database,
        &[
            "cron",
            "add",
            "tick",
            "--schedule",
            "every 1s",
            "--message",
            "tick",
            "--channel",
            "local",
        ],
    );
    let a = Served::start(root, database);
    let b = Served::start(root, database);
    std::thread::sleep(Duration::from_millis(5_500));
    a.stop();
    b.stop();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (claims, instances) = rt.block_on(async {
        let store = Store::open(location).await.unwrap();
        let jobs = toolbelt_store::list_cron_jobs(&store, None).await.unwrap();
        let claims = toolbelt_store::cron_firings(&store, jobs[0].job.id)
            .await
            .unwrap();
        store.close().await;
        let instances: std::collections::BTreeSet<String> =
            claims.iter().map(|c| c.1.clone()).collect();
        (claims.iter().map(|c| c.0).collect::<Vec<i64>>(), instances)
    });
    assert!(
        claims.len() >= 4,
        "only {} ticks fired: {claims:?}",
        claims.len()
    );
    let gaps: Vec<i64> = claims.windows(2).map(|w| w[1] - w[0]).collect();
    assert!(
        gaps.iter().all(|g| *g == 1_000),
        "ticks not consecutive: {claims:?}"
    );
    let lines = delivered(root);
    let mut ids: Vec<&str> = lines.iter().map(|l| l["id"].as_str().unwrap()).collect();
    assert_eq!(ids.len(), claims.len(), "one delivery per tick: {lines:#?}");
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), claims.len(), "distinct keys");
    assert!(!instances.is_empty());
}

#[test]
fn two_servers_on_one_sqlite_store_deliver_each_tick_once() {
    let root = tempfile::tempdir().unwrap();
    let location = Location::in_state_dir(&super::cli::state_dir(root.path()));
    two_servers_deliver_each_tick_once(root.path(), None, &location);
}

#[test]
fn two_servers_on_one_postgres_database_deliver_each_tick_once() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let db = rt.block_on(testing::postgres()).unwrap();
    let Location::Postgres(url) = &db.location else {
        unreachable!()
    };
    let root = tempfile::tempdir().unwrap();
    two_servers_deliver_each_tick_once(root.path(), Some(url), &db.location);
}

/// What the webhook saw: each request's Idempotency-Key and the status it answered.
type Seen = Arc<Mutex<Vec<(String, u16)>>>;

/// A webhook on 127.0.0.1 answering `statuses` in order (then 200).
fn webhook(statuses: Vec<u16>) -> (String, Seen) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        let mut statuses = statuses.into_iter();
        for sock in listener.incoming() {
            let Ok(mut sock) = sock else { return };
            let mut buf = Vec::new();
            let mut chunk = [0u8; 4096];
            // Read the head and the body (Content-Length).
            loop {
                let n = sock.read(&mut chunk).unwrap_or(0);
                if n == 0 {
                    break;
                }
                buf.extend_from_slice(&chunk[..n]);
                let text = String::from_utf8_lossy(&buf).to_string();
                if let Some(end) = text.find("\r\n\r\n") {
                    let len: usize = text[..end]
                        .lines()
                        .find_map(|l| {
                            l.to_ascii_lowercase()
                                .strip_prefix("content-length:")
                                .map(|v| v.trim().parse().unwrap_or(0))
                        })
                        .unwrap_or(0);
                    if buf.len() >= end + 4 + len {
                        break;
                    }
                }
            }
            let text = String::from_utf8_lossy(&buf).to_string();
            let key = text
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .starts_with("idempotency-key:")
                        .then(|| l[16..].trim().to_string())
                })
                .unwrap_or_default();
            let status = statuses.next().unwrap_or(200);
            log.lock().unwrap().push((key, status));
            let _ = write!(
                sock,
                "HTTP/1.1 {status} X\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            );
        }
    });
    (url, seen)
}

/// Waits until `f` holds, at most 20 s.
fn wait_for(what: &str, f: impl Fn() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_message_left_by_a_sigkilled_server_is_delivered_once_after_restart() {
    let root = tempfile::tempdir().unwrap();
    let (url, seen) = webhook(vec![500]);
    std::fs::write(
        root.path().join("toolbelt.toml"),
        format!("[channels.ops]\nkind = \"webhook\"\nurl = \"{url}\"\n"),
    )
    .unwrap();
    let first = Served::start(root.path(), None);
    // Ask the server to send; the webhook fails the first attempt with a 500.
    let addr = first.url.trim_start_matches("http://").to_string();
    std::thread::spawn(move || {
        let body = r#"{"channel": "ops", "content": "survives a crash"}"#;
        let mut sock = std::net::TcpStream::connect(addr).unwrap();
        let _ = write!(
            sock,
            "POST /v1/tools/message HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        let mut answer = String::new();
        let _ = sock.read_to_string(&mut answer);
    });
    wait_for("the first attempt", || seen.lock().unwrap().len() == 1);
    // Killed while it waits to try again: the message is in the outbox.
    first.kill();
    let second = Served::start(root.path(), None);
    wait_for("the second attempt", || seen.lock().unwrap().len() >= 2);
    // Time for any duplicate to show up.
    std::thread::sleep(Duration::from_millis(1_500));
    second.stop();
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert_eq!(
        seen.iter().filter(|(_, s)| *s == 200).count(),
        1,
        "{seen:?}"
    );
    assert!(!seen[0].0.is_empty());
    assert_eq!(seen[0].0, seen[1].0, "one Idempotency-Key");
}

#[test]
fn a_channel_whose_secret_is_missing_is_refused_by_name_without_its_values() {
    let root = tempfile::tempdir().unwrap();
    std::fs::write(
        root.path().join("toolbelt.toml"),
        "[channels.tg]\nkind = \"telegram\"\ntoken_env = \"TOOLBELT_TEST_NO_SUCH_TOKEN\"\n\
         [channels.hook]\nkind = \"webhook\"\nurl = \"not a url secret-part\"\n",
    )
    .unwrap();
    let out = command(root.path(), None)
        .args(["cron", "list"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("invalid [channels] in the config file"),
        "{err}"
    );
    assert!(
        err.contains("TOOLBELT_TEST_NO_SUCH_TOKEN") || err.contains("url is not a valid"),
        "{err}"
    );
    assert!(!err.contains("secret-part"), "{err}");
    // Without channels there is no cron tool, and the command says how to get one.
    std::fs::write(root.path().join("toolbelt.toml"), "").unwrap();
    let out = command(root.path(), None)
        .args(["cron", "list"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("add a [channels.NAME] table"), "{err}");
    let out = command(root.path(), None)
        .args(["tools", "--json"])
        .output()
        .unwrap();
    let tools = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && !tools.contains("\"message\"") && !tools.contains("\"cron\""));
}

/// `toolbelt <args>` with the agent's variables cleared (the config file names the
/// scripted model).
fn run_with_agent(root: &Path, args: &[&str]) -> Output {
    let mut cmd = command(root, None);
    for var in [
        "TOOLBELT_AGENT_PROVIDER",
        "TOOLBELT_AGENT_MODEL",
        "OPENAI_BASE_URL",
        "OPENAI_API_KEY",
    ] {
        cmd.env_remove(var);
    }
    cmd.args(args).output().unwrap()
}

#[test]
fn a_prompt_job_runs_the_agent_and_sends_its_answer_once() {
    use toolbelt_agent::ProviderKind;
    use toolbelt_agent::testing::{Reply, Script, ScriptedServer};

    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("notes.txt"), "one\ntwo\n").unwrap();
    let server = ScriptedServer::start(Script::new(
        ProviderKind::OpenAi,
        vec![
            Reply::call("read_file", r#"{"path": "notes.txt"}"#),
            Reply::text("notes.txt has 2 lines."),
        ],
    ))
    .unwrap();
    std::fs::write(
        root.path().join("toolbelt.toml"),
        format!(
            "[channels.local]\nkind = \"file\"\n[agent]\nprovider = \"openai\"\nmodel = \"scripted-model\"\nbase_url = \"{}\"\n",
            server.base_url()
        ),
    )
    .unwrap();
    let added = run_with_agent(
        root.path(),
        &[
            "cron",
            "add",
            "count-notes",
            "--schedule",
            "every 1s",
            "--prompt",
            "How many lines has notes.txt?",
            "--channel",
            "local",
        ],
    );
    assert!(added.status.success(), "{added:?}");
    std::thread::sleep(Duration::from_millis(1_100));
    // One round: fires the job, runs its prompt, delivers the answer, exits.
    let once = run_with_agent(root.path(), &["cron", "run", "--once"]);
    assert!(once.status.success(), "{once:?}");

    let lines = delivered(root.path());
    assert_eq!(lines.len(), 1, "{lines:#?}");
    assert_eq!(lines[0]["content"], "notes.txt has 2 lines.");
    // The model called the tool and got the file back.
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let sent = requests[1].body.to_string();
    assert!(sent.contains("one") && sent.contains("two"), "{sent}");
    // The run left its transcript, and the job its last run.
    let runs: Vec<_> = std::fs::read_dir(super::cli::state_dir(root.path()).join("agent/runs"))
        .unwrap()
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "jsonl"))
        .collect();
    assert_eq!(runs.len(), 1);
    let list = run_with_agent(root.path(), &["cron", "list", "--json"]);
    let env: Value = serde_json::from_slice(&list.stdout).unwrap();
    let last = &env["data"]["jobs"][0]["last_run"];
    assert_eq!(
        (&last["status"], &last["outcome"], &last["result"]),
        (
            &Value::from("sent"),
            &Value::from("final_answer"),
            &Value::from("notes.txt has 2 lines.")
        ),
        "{env:#}"
    );
    assert_eq!(
        last["run_id"].as_str().map(|id| format!("{id}.jsonl")),
        runs[0].file_name().to_str().map(str::to_string)
    );
}

#[test]
fn a_prompt_job_without_an_agent_is_refused_with_how_to_configure_one() {
    let root = tempfile::tempdir().unwrap();
    file_channel_config(root.path());
    let out = run_with_agent(
        root.path(),
        &[
            "cron",
            "add",
            "x",
            "--schedule",
            "every 1h",
            "--prompt",
            "hi",
            "--channel",
            "local",
            "--json",
        ],
    );
    assert!(!out.status.success());
    let env: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(env["error"]["code"], "INVALID_PARAMS", "{env:#}");
    assert!(
        env["error"]["hint"].as_str().unwrap().contains("[agent]"),
        "{env:#}"
    );
}

#[test]
fn toolbelt_mcp_delivers_the_outbox_while_it_runs() {
    let root = tempfile::tempdir().unwrap();
    let (url, seen) = webhook(vec![500; 2]);
    // Calls wait half a second for a delivery.
    std::fs::write(
        root.path().join("toolbelt.toml"),
        format!("timeout_ms = 1500\n[channels.ops]\nkind = \"webhook\"\nurl = \"{url}\"\n"),
    )
    .unwrap();
    // A call sends; the webhook fails the attempts the call waits for: the message
    // is still in the outbox when the call ends.
    let out = run(
        root.path(),
        None,
        &[
            "call",
            "message",
            r#"{"channel": "ops", "content": "sent later"}"#,
        ],
    );
    let delivered = |seen: &Seen| seen.lock().unwrap().iter().any(|(_, s)| *s == 200);
    assert!(!delivered(&seen), "{out:?}");
    // `toolbelt mcp` delivers it while a client is connected, without any call.
    let mut mcp = command(root.path(), None)
        .arg("mcp")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    wait_for("the outbox of toolbelt mcp", || delivered(&seen));
    // Closed before any handshake: it stops (saying so).
    drop(mcp.stdin.take());
    mcp.wait().unwrap();
    let seen = seen.lock().unwrap().clone();
    assert_eq!(
        seen.iter().filter(|(_, s)| *s == 200).count(),
        1,
        "{seen:?}"
    );
    assert!(
        seen.iter().all(|(key, _)| *key == seen[0].0),
        "one Idempotency-Key"
    );
}

#[test]
fn a_prompt_job_cut_off_by_a_stop_is_recorded_as_interrupted() {
    use toolbelt_agent::ProviderKind;
    use toolbelt_agent::testing::{Reply, Script, ScriptedServer};

    let root = tempfile::tempdir().unwrap();
    // The model takes a minute to answer: the run is under way when the server stops.
    let model = ScriptedServer::start(Script::new(
        ProviderKind::OpenAi,
        vec![Reply::text("too late").delayed(60_000)],
    ))
    .unwrap();
    std::fs::write(
        root.path().join("toolbelt.toml"),
        format!(
            "[channels.local]\nkind = \"file\"\n[agent]\nprovider = \"openai\"\nmodel = \"scripted-model\"\nbase_url = \"{}\"\n",
            model.base_url()
        ),
    )
    .unwrap();
    let added = run_with_agent(
        root.path(),
        &[
            "cron",
            "add",
            "slow",
            "--schedule",
            "every 1s",
            "--prompt",
            "Take your time.",
            "--channel",
            "local",
        ],
    );
    assert!(added.status.success(), "{added:?}");
    let served = Served::start(root.path(), None);
    wait_for("the job's run to ask the model", || {
        !model.requests().is_empty()
    });
    let stopping = Instant::now();
    served.stop();
    assert!(
        stopping.elapsed() < Duration::from_secs(10),
        "{:?}",
        stopping.elapsed()
    );
    let list = run_with_agent(root.path(), &["cron", "list", "--json"]);
    let env: Value = serde_json::from_slice(&list.stdout).unwrap();
    let last = &env["data"]["jobs"][0]["last_run"];
    assert_eq!(last["outcome"], "interrupted", "{env:#}");
    assert!(
        last["result"]
            .as_str()
            .unwrap_or_default()
            .contains("server stopped"),
        "{env:#}"
    );
}

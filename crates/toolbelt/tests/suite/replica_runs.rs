//! Two `toolbelt serve` replicas on one PostgreSQL store behave as one for the
//! agent's runs: a scheduled prompt fired by either is listed, with its
//! transcript, by both; its question is listed by the other one, answered
//! through it, once, and the run goes on with the answer where it waits.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use toolbelt_agent::ProviderKind;
use toolbelt_agent::testing::{Reply, Script, ScriptedServer};

use super::replicas::{get_json, post_json, replica, shared_database};

/// How long the steps of a run across replicas may take.
const PATIENCE: Duration = Duration::from_secs(60);

/// `GET` that must answer 200: its JSON.
fn get_ok(url: &str, path: &str) -> Value {
    let (status, body) = get_json(url, path);
    assert_eq!(status, 200, "GET {url}{path}: {body}");
    body
}

/// Waits until `found` gives something.
fn wait_for<T>(what: &str, mut found: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(value) = found() {
            return value;
        }
        assert!(start.elapsed() < PATIENCE, "gave up waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// `toolbelt` on `root` and the store at `database`, without the agent's
/// variables (the config file names the scripted model).
fn toolbelt(root: &Path, database: &str, state: &Path) -> Command {
    let mut cmd = super::cli::bare_command();
    cmd.arg("--root")
        .arg(root)
        .arg("--database-url")
        .arg(database)
        .env("TOOLBELT_STATE_DIR", state)
        .stdin(std::process::Stdio::null());
    for var in [
        "TOOLBELT_AGENT_PROVIDER",
        "TOOLBELT_AGENT_MODEL",
        "OPENAI_BASE_URL",
        "OPENAI_API_KEY",
    ] {
        cmd.env_remove(var);
    }
    cmd
}

/// The transcripts in a replica's state directory.
fn transcripts(state: &Path) -> Vec<String> {
    std::fs::read_dir(state.join("agent").join("runs"))
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|e| {
                    e.file_name()
                        .to_str()?
                        .strip_suffix(".jsonl")
                        .map(str::to_string)
                })
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_scheduled_run_is_listed_by_both_replicas_and_its_question_answered_through_the_other() {
    let database = shared_database();
    let root = tempfile::tempdir().unwrap();
    let states = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
    let ask = json!({"questions": [{
        "header": "Storage",
        "question": "Which database should the notes go to?",
        "options": [{"label": "SQLite"}, {"label": "PostgreSQL"}]
    }]});
    let model = ScriptedServer::start(Script::new(
        ProviderKind::OpenAi,
        vec![
            Reply::call("ask_user", ask.to_string()),
            Reply::text("The notes go to PostgreSQL."),
        ],
    ))
    .unwrap();
    std::fs::write(
        root.path().join("toolbelt.toml"),
        format!(
            "[agent]\nprovider = \"openai\"\nmodel = \"scripted-model\"\nbase_url = \"{}\"\n",
            model.base_url()
        ),
    )
    .unwrap();
    // Once, a few seconds from now: whichever replica claims the firing runs it.
    let at = (chrono::Utc::now() + chrono::Duration::seconds(3)).to_rfc3339();
    let added = toolbelt(root.path(), &database, states[0].path())
        .args(["cron", "add", "pick-storage", "--schedule", &at])
        .args(["--prompt", "Ask where the notes should go, then say it."])
        .output()
        .unwrap();
    assert!(added.status.success(), "{added:?}");
    let replicas = [
        replica(root.path(), &database, states[0].path()),
        replica(root.path(), &database, states[1].path()),
    ];

    // The question waits: the replica that runs the job has its transcript.
    let question = wait_for("the run's question", || {
        replicas.iter().find_map(|r| {
            let listed = get_ok(&r.url, "/v1/questions");
            listed["questions"].as_array()?.first().cloned()
        })
    });
    let asker = wait_for("the asking replica", || {
        (0..2).find(|i| !transcripts(states[*i].path()).is_empty())
    });
    let other = &replicas[1 - asker];
    let run_id = question["run_id"].as_str().unwrap().to_string();
    assert_eq!(transcripts(states[asker].path()), vec![run_id.clone()]);
    assert!(transcripts(states[1 - asker].path()).is_empty());

    // The other replica lists the question, and the run with its transcript so far.
    let there = get_ok(&other.url, "/v1/questions");
    assert_eq!(there["questions"], json!([question]), "{there}");
    assert_eq!(question["questions"][0]["header"], "Storage");
    let listed = wait_for("the run on the other replica", || {
        let listed = get_ok(&other.url, "/v1/agent/runs");
        (listed["runs"][0]["id"] == run_id.as_str()).then_some(listed)
    });
    assert_eq!(
        listed["runs"][0]["prompt"],
        "Ask where the notes should go, then say it."
    );

    // Answered through the other replica; a second answer is refused.
    let id = question["id"].as_str().unwrap();
    let answer = json!({"answers": [{"header": "Storage", "selected": ["PostgreSQL"]}]});
    let (status, body) = post_json(&other.url, &format!("/v1/questions/{id}"), &answer);
    assert_eq!(
        (status, &body),
        (200, &json!({"id": id, "status": "answered"}))
    );
    let (status, body) = post_json(
        &replicas[asker].url,
        &format!("/v1/questions/{id}"),
        &json!({"decline": true}),
    );
    assert_eq!(status, 404, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("answered already"),
        "{body}"
    );

    // The run goes on with the answer, and ends; both replicas show it whole.
    let shown = wait_for("the run's end on the other replica", || {
        let run = get_ok(&other.url, &format!("/v1/agent/runs/{run_id}"));
        (run["run"]["outcome"] == "final_answer").then_some(run)
    });
    let chats: Vec<_> = model
        .requests()
        .into_iter()
        .filter(|r| r.path.ends_with("/chat/completions"))
        .collect();
    assert_eq!(chats.len(), 2, "{chats:#?}");
    let sent = chats[1].body.to_string();
    assert!(sent.contains("Storage: PostgreSQL"), "{sent}");
    let entries = shown["entries"].as_array().unwrap();
    assert!(
        entries.iter().any(|e| e["type"] == "result"
            && e["text"]
                .as_str()
                .unwrap_or_default()
                .contains("Storage: PostgreSQL")),
        "{shown:#}"
    );
    assert_eq!(
        entries.last().unwrap()["message"],
        "The notes go to PostgreSQL."
    );
    let from_file = wait_for("the same run on both replicas", || {
        let here = get_ok(&replicas[asker].url, &format!("/v1/agent/runs/{run_id}"));
        let there = get_ok(&other.url, &format!("/v1/agent/runs/{run_id}"));
        (here == there).then_some(here)
    });
    assert_eq!(from_file["run"]["turns"], 1);
    for r in &replicas {
        let listed = get_ok(&r.url, "/v1/agent/runs");
        assert_eq!(listed["total"], 1, "{listed}");
        assert_eq!(listed["runs"][0], from_file["run"], "{listed}");
        assert_eq!(get_ok(&r.url, "/v1/questions")["questions"], json!([]));
    }
    let [a, b] = replicas;
    a.stop();
    b.stop();
}

/// A transcript of one turn, as `toolbelt agent` writes it.
fn write_run(dir: &Path, id: &str, prompt: &str, extra: usize) {
    let time = "2026-05-01T09:00:00+02:00";
    let mut lines = vec![
        json!({"time": time, "type": "run", "run_id": id, "provider": "openai", "model": "m-1"}),
        json!({"time": time, "type": "message", "message": {"role": "user", "content": prompt}}),
        json!({"time": time, "type": "end", "outcome": "final_answer", "message": "ok",
            "steps": 1, "tool_calls": 0, "usage": {"input_tokens": 10, "output_tokens": 2}}),
    ];
    for i in 0..extra {
        lines.push(json!({"time": time, "type": "notice", "message": format!("note {i}")}));
    }
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(dir.join(format!("{id}.jsonl")), text).unwrap();
}

#[test]
fn runs_of_toolbelt_agent_are_imported_once_and_listed_by_every_replica() {
    let database = shared_database();
    let laptop = tempfile::tempdir().unwrap();
    let server_root = tempfile::tempdir().unwrap();
    let (laptop_state, server_state) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let runs = laptop_state.path().join("agent").join("runs");
    std::fs::create_dir_all(&runs).unwrap();
    write_run(&runs, "20260501-090000-aaaa", "first", 0);
    write_run(&runs, "20260501-090000-bbbb", "second", 0);
    std::fs::write(runs.join("notes.jsonl"), "{}\n").unwrap();
    let import = |args: &[&str]| {
        let out = toolbelt(laptop.path(), &database, laptop_state.path())
            .args(["agent", "import", "--json", "--workspace"])
            .arg(server_root.path())
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        serde_json::from_slice::<Value>(&out.stdout).unwrap()
    };
    assert_eq!(
        import(&[]),
        json!({"imported": 2, "updated": 0, "unchanged": 0, "lines": 6, "skipped": 1, "failed": []})
    );
    // The second run went on: only its new lines go in.
    write_run(&runs, "20260501-090000-bbbb", "second", 2);
    assert_eq!(
        import(&[runs.to_str().unwrap()]),
        json!({"imported": 0, "updated": 1, "unchanged": 1, "lines": 2, "skipped": 1, "failed": []})
    );
    // The words for a person.
    let out = toolbelt(laptop.path(), &database, laptop_state.path())
        .args(["agent", "import", "--workspace"])
        .arg(server_root.path())
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.starts_with(
            "0 runs imported, 0 runs brought up to date, 2 runs already there (0 lines)"
        ),
        "{said}"
    );
    assert!(said.contains("1 file of "), "{said}");

    // A server whose first root is that workspace lists them, from the store.
    let served = replica(server_root.path(), &database, server_state.path());
    let listed = get_ok(&served.url, "/v1/agent/runs");
    assert_eq!(listed["total"], 2, "{listed}");
    let prompts: Vec<&str> = listed["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["prompt"].as_str().unwrap())
        .collect();
    assert_eq!(prompts, ["second", "first"]);
    let run = get_ok(&served.url, "/v1/agent/runs/20260501-090000-bbbb");
    assert_eq!(run["entries"].as_array().unwrap().len(), 5, "{run}");
    served.stop();
}

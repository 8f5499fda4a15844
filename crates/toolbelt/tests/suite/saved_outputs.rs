//! Saved outputs on a PostgreSQL store: an output cut on one replica of
//! `toolbelt serve` is paged by `read_output` on another with its own state
//! directory, and by `toolbelt call`, page for page as the first has it; an
//! output past the limits is removed from the store by the next process that
//! saves one.

use std::path::Path;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::cli::toolbelt;
use super::replicas::{post_json, replica, shared_database};

/// 30,000 numbered lines, a line longer than a store's chunk, CRLF lines and a
/// last line without a line end.
const LONG_OUTPUT: &str = "for i in $(seq 1 30000); do echo \"line $i of the build\"; done; \
     head -c 300000 /dev/zero | tr '\\0' x; echo; printf 'crlf one\\r\\ncrlf two\\r\\nlast'";

/// A call of `tool` through the JSON API of `url`: its envelope.
fn call(url: &str, tool: &str, args: &Value) -> Value {
    let (status, env) = post_json(url, &format!("/v1/tools/{tool}"), args);
    assert!(status == 200 || status == 404, "{status}: {env}");
    env
}

/// What a page of `read_output` shows: its text and data.
fn page(url: &str, id: &str, offset: i64, limit: u64) -> (Value, Value) {
    let env = call(
        url,
        "read_output",
        &json!({ "output_id": id, "offset": offset, "limit": limit }),
    );
    assert_eq!(env["status"], "success", "{env}");
    (env["text"].clone(), env["data"].clone())
}

/// Runs `bash` on `url` with an output over the budget: the saved output's id.
fn long_output(url: &str) -> String {
    let env = call(url, "bash", &json!({ "command": LONG_OUTPUT }));
    assert_eq!(env["status"], "partial", "{env}");
    assert!(env["context"].get("output_warning").is_none(), "{env}");
    env["data"]["output_id"].as_str().unwrap().to_string()
}

fn spill_file(state: &Path, id: &str) -> std::path::PathBuf {
    state.join("tool-output").join(format!("{id}.txt"))
}

#[test]
fn an_output_cut_on_one_replica_is_paged_alike_on_another_and_by_call() {
    let database = shared_database();
    let root = tempfile::tempdir().unwrap();
    let states: Vec<_> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let a = replica(root.path(), &database, states[0].path());
    let b = replica(root.path(), &database, states[1].path());

    let id = long_output(&a.url);
    assert!(spill_file(states[0].path(), &id).is_file());
    assert!(!spill_file(states[1].path(), &id).exists());

    // Every page, as a model reads it: from A's file and from the store on B.
    let mut offset = 1;
    let mut pages = 0;
    loop {
        let on_a = page(&a.url, &id, offset, 2_000);
        let on_b = page(&b.url, &id, offset, 2_000);
        assert_eq!(on_b, on_a, "offset {offset}");
        pages += 1;
        match on_a.1["next_offset"].as_i64() {
            Some(next) => offset = next,
            None => break,
        }
    }
    assert!(pages > 20, "{pages} pages");
    let (text, data) = page(&b.url, &id, -3, 10);
    assert_eq!(data["total_lines"], json!(30_004));
    assert!(
        text.as_str().unwrap().ends_with(
            " 30003\tcrlf two\n 30004\tlast\n[lines 30,002-30,004 of 30,004; end of output]"
        ),
        "{text}"
    );
    for (offset, limit) in [(-1, 1), (-2_500, 2_000), (30_001, 1), (30_005, 5), (0, 3)] {
        assert_eq!(
            page(&b.url, &id, offset, limit),
            page(&a.url, &id, offset, limit),
            "offset {offset}, limit {limit}"
        );
    }

    // A process of its own, with a third state directory.
    let args = json!({ "output_id": id, "offset": 30_001, "limit": 1 }).to_string();
    let run = toolbelt(
        root.path(),
        &[
            "--database-url",
            &database,
            "--state-dir",
            states[2].path().to_str().unwrap(),
            "call",
            "read_output",
            &args,
            "--json",
        ],
    );
    assert_eq!(run.code, 0, "{run:#?}");
    let env: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(
        (env["text"].clone(), env["data"].clone()),
        page(&a.url, &id, 30_001, 1)
    );
    a.stop();
    b.stop();
}

#[test]
fn an_output_past_the_limits_leaves_the_store_when_the_next_process_saves() {
    let database = shared_database();
    let root = tempfile::tempdir().unwrap();
    let (state_a, state_b, state_c) = (
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
    );
    let a = replica(root.path(), &database, state_a.path());
    let old = long_output(&a.url);
    a.stop();
    // Saved eight days ago.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let location = toolbelt_store::Location::Postgres(database.clone());
    let store = rt.block_on(toolbelt_store::Store::open(&location)).unwrap();
    let eight_days_ms = 8 * 24 * 3_600 * 1_000;
    rt.block_on(
        sqlx::query("UPDATE saved_outputs SET created_ms = created_ms - $1 WHERE output_id = $2")
            .bind(eight_days_ms)
            .bind(&old)
            .execute(store.pool()),
    )
    .unwrap();

    let b = replica(root.path(), &database, state_b.path());
    assert_eq!(page(&b.url, &old, 1, 1).1["first_line"], json!(1));
    // Another process saves an output, and removes the old one from the store.
    let run = toolbelt(
        root.path(),
        &[
            "--database-url",
            &database,
            "--state-dir",
            state_c.path().to_str().unwrap(),
            "call",
            "bash",
            &json!({ "command": LONG_OUTPUT }).to_string(),
            "--json",
        ],
    );
    assert_eq!(run.code, 0, "{run:#?}");
    let new: Value = serde_json::from_str(&run.stdout).unwrap();
    let new = new["data"]["output_id"].as_str().unwrap().to_string();
    let gone = call(&b.url, "read_output", &json!({ "output_id": old }));
    assert_eq!(gone["error"]["code"], "NOT_FOUND", "{gone}");
    assert!(
        gone["error"]["message"]
            .as_str()
            .unwrap()
            .contains("it may have been cleaned up"),
        "{gone}"
    );
    assert_eq!(page(&b.url, &new, 1, 1).1["first_line"], json!(1));
    let chunks: i64 = rt
        .block_on(
            sqlx::query("SELECT COUNT(*) FROM saved_output_chunks WHERE output_id = $1")
                .bind(&old)
                .fetch_one(store.pool()),
        )
        .map(|row| sqlx::Row::get(&row, 0))
        .unwrap();
    assert_eq!(chunks, 0);
    b.stop();
}

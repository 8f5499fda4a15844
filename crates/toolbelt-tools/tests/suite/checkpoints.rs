//! The checkpoint tools on a registry that keeps checkpoints (a temporary
//! workspace, its state and SQLite store in a temporary directory):
//! `checkpoint_list`, `checkpoint_diff` and `rewind`, and the approval every real
//! rewind needs under the default policy.

use std::fs;
use std::sync::{Arc, Mutex};

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tempfile::TempDir;
use toolbelt_checkpoint::{Checkpoints, Settings};
use toolbelt_core::output::OutputBudget;
use toolbelt_core::{
    Approval, ApprovalRequest, Approver, BoxFuture, Changes, ErrorCode, Origin, Registry,
    SchemaValidator, Session, Status,
};
use toolbelt_store::{Location, StoreHandle};

use super::{call, error_message, success_data};

struct Fixture {
    root: TempDir,
    _state: TempDir,
    registry: Registry,
}

/// The built-in tools and the checkpoint tools, checkpointing every call, under
/// `policy` (the default one when `None`).
fn fixture_with(policy: Option<toolbelt_policy::Policy>, budget: Option<usize>) -> Fixture {
    let root = TempDir::new().unwrap();
    let state = TempDir::new().unwrap();
    let mut session = Session::new(root.path()).with_state_dir(state.path());
    if let Some(bytes) = budget {
        session = session.with_budget(OutputBudget::with_max_bytes(bytes));
    }
    let mut registry = Registry::new(session);
    let store = StoreHandle::lazy(Location::in_state_dir(state.path()));
    let skills = toolbelt_tools::Skills::discover(registry.session().roots(), None);
    toolbelt_tools::register_builtins_with(
        &mut registry,
        toolbelt_tools::BuiltinOptions {
            store: Some(store.clone()),
            skills: Some(skills),
            ..toolbelt_tools::BuiltinOptions::default()
        },
    )
    .unwrap();
    if let Some(policy) = policy {
        toolbelt_tools::apply_policy(&mut registry, policy).unwrap();
    }
    let checkpoints = Checkpoints::new(
        Settings::default(),
        store,
        state.path(),
        vec![root.path().to_path_buf()],
    );
    registry.set_checkpointer(Some(Arc::new(checkpoints.clone())));
    registry.set_origin(Origin::new("test"));
    toolbelt_tools::register_checkpoints(&mut registry, &checkpoints).unwrap();
    Fixture {
        root,
        _state: state,
        registry,
    }
}

fn fixture() -> Fixture {
    fixture_with(None, None)
}

/// What an approver was asked: the tool, the subject, the rule.
type Asked = (String, Option<String>, Option<String>);

/// Approves every call put to it, and remembers what it was asked.
#[derive(Default)]
struct Yes(Mutex<Vec<Asked>>);

impl Approver for Yes {
    fn approve<'a>(&'a self, request: ApprovalRequest<'a>) -> BoxFuture<'a, Approval> {
        toolbelt_core::sync::lock(&self.0).push((
            request.tool.to_string(),
            request.subject.map(str::to_string),
            request.rule.map(str::to_string),
        ));
        Box::pin(std::future::ready(Approval::Approve))
    }
}

impl Fixture {
    fn read(&self, path: &str) -> String {
        fs::read_to_string(self.root.path().join(path)).unwrap()
    }

    /// Two checkpointed calls: `cp-1` creates `a.txt` (`one`), `cp-2` makes it
    /// `two` and creates `b.txt`.
    async fn two_calls(&self) {
        for args in [
            json!({"path": "a.txt", "content": "one\n"}),
            json!({"path": "a.txt", "content": "two\n"}),
            json!({"path": "b.txt", "content": "bee\n"}),
        ] {
            let env = call(&self.registry, "write_file", args).await;
            success_data(&env);
        }
    }
}

#[tokio::test]
async fn checkpoint_list_shows_each_call_newest_first_with_its_files_and_origin() {
    let f = fixture();
    let env = call(&f.registry, "checkpoint_list", json!({})).await;
    assert_eq!(
        success_data(&env),
        &json!({"checkpoints": [], "more": false})
    );
    assert!(env.text.starts_with("No checkpoints yet"), "{}", env.text);

    f.two_calls().await;
    let env = call(&f.registry, "checkpoint_list", json!({"limit": 2})).await;
    let data = success_data(&env);
    assert_eq!(data["more"], true);
    let listed = data["checkpoints"].as_array().unwrap();
    let ids: Vec<&str> = listed.iter().map(|c| c["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["cp-3", "cp-2"]);
    assert_eq!(listed[0]["tool"], "write_file");
    assert_eq!(listed[0]["origin"], "test");
    assert_eq!(listed[0]["status"], "complete");
    assert_eq!(listed[0]["files"], json!(["b.txt"]));
    assert_eq!(listed[1]["files"], json!(["a.txt"]));
    assert_eq!(listed[1]["file_count"], 1);
    assert!(
        env.text.contains("cp-3 ") && env.text.contains("write_file from test: b.txt"),
        "{}",
        env.text
    );
    // Read-only, and checkpointed never.
    let list = f.registry.get("checkpoint_list").unwrap();
    assert!(list.spec().hints.read_only);
    assert_eq!(list.changes(&json!({})), Changes::Nothing);
}

#[tokio::test]
async fn checkpoint_diff_shows_the_unified_diff_of_one_call() {
    let f = fixture();
    f.two_calls().await;
    let env = call(
        &f.registry,
        "checkpoint_diff",
        json!({"checkpoint": "cp-2"}),
    )
    .await;
    let data = success_data(&env);
    assert_eq!(data["checkpoint"]["id"], "cp-2");
    assert_eq!(
        data["files"],
        json!([{
            "path": "a.txt", "change": "modified", "renamed_from": null, "captured": true,
            "note": null, "added": 1, "removed": 1, "diff": true
        }])
    );
    assert!(
        env.text
            .contains("--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-one\n+two"),
        "{}",
        env.text
    );
    // `2` is `cp-2`; the creation of a file diffs from nothing.
    let env = call(&f.registry, "checkpoint_diff", json!({"checkpoint": "1"})).await;
    assert_eq!(success_data(&env)["files"][0]["change"], "created");
    assert!(env.text.contains("+one"), "{}", env.text);

    let env = call(
        &f.registry,
        "checkpoint_diff",
        json!({"checkpoint": "cp-99"}),
    )
    .await;
    assert_eq!(
        error_message(&env, ErrorCode::NotFound),
        "no checkpoint cp-99 in this workspace"
    );
    assert!(env.text.contains("checkpoint_list"), "{}", env.text);
    let env = call(
        &f.registry,
        "checkpoint_diff",
        json!({"checkpoint": "HEAD~1"}),
    )
    .await;
    assert_eq!(env.error.as_ref().unwrap().code, ErrorCode::InvalidParams);
    assert!(env.text.contains("cp-12"), "{}", env.text);
}

#[tokio::test]
async fn a_long_diff_is_cut_to_the_output_budget_and_kept_whole() {
    let f = fixture_with(None, Some(2_000));
    let long: String = (0..400).map(|i| format!("line {i}\n")).collect();
    // write_file's own answer is cut too.
    let env = call(
        &f.registry,
        "write_file",
        json!({"path": "long.txt", "content": long}),
    )
    .await;
    assert!(env.error.is_none(), "{}", env.text);
    let env = call(
        &f.registry,
        "checkpoint_diff",
        json!({"checkpoint": "cp-1"}),
    )
    .await;
    assert_eq!(env.status, Status::Partial, "{}", env.text);
    assert!(env.text.len() <= 2_000, "{}", env.text.len());
    assert_eq!(env.data["truncated"], true);
    assert!(env.data["output_id"].is_string(), "{:?}", env.data);
    assert_eq!(env.data["files"][0]["added"], 400);
}

#[tokio::test]
async fn rewind_is_refused_without_an_approver_and_says_how_the_user_can_rewind() {
    let f = fixture();
    f.two_calls().await;
    let env = call(&f.registry, "rewind", json!({"checkpoint": "cp-2"})).await;
    let message = error_message(&env, ErrorCode::AccessDenied);
    assert!(
        message.starts_with("rewind on \"cp-2\" needs approval"),
        "{message}"
    );
    assert!(message.contains("toolbelt rewind cp-2"), "{message}");
    assert_eq!(f.read("a.txt"), "two\n");
    assert_eq!(f.read("b.txt"), "bee\n");

    // A dry run changes nothing and needs no approval.
    let env = call(
        &f.registry,
        "rewind",
        json!({"checkpoint": "cp-2", "dry_run": true}),
    )
    .await;
    let data = success_data(&env);
    assert_eq!(data["dry_run"], true);
    assert_eq!(data["undoes"], json!(["cp-2", "cp-3"]));
    assert_eq!(data["restored"], 2);
    assert_eq!(data["checkpoint"], Value::Null);
    assert_eq!(
        data["paths"],
        json!([
            {"path": "a.txt", "action": "restore", "conflict": false, "skipped": null},
            {"path": "b.txt", "action": "remove", "conflict": false, "skipped": null}
        ])
    );
    assert!(
        env.text.starts_with("Dry run: rewinding to before cp-2"),
        "{}",
        env.text
    );
    assert_eq!(f.read("a.txt"), "two\n");
    assert!(f.root.path().join("b.txt").exists());
}

#[tokio::test]
async fn an_approved_rewind_puts_the_files_back_and_can_itself_be_undone() {
    let mut f = fixture();
    let yes = Arc::new(Yes::default());
    f.registry
        .set_approver(Some(Arc::clone(&yes) as Arc<dyn Approver>));
    f.two_calls().await;
    let env = call(&f.registry, "rewind", json!({"checkpoint": "cp-2"})).await;
    let data = success_data(&env);
    assert_eq!(data["restored"], 2);
    assert_eq!(data["dry_run"], false);
    assert_eq!(data["checkpoint"], "cp-4");
    assert_eq!(f.read("a.txt"), "one\n");
    assert!(!f.root.path().join("b.txt").exists());
    assert!(
        env.text.contains("rewind to cp-4 to undo it"),
        "{}",
        env.text
    );
    let asked = toolbelt_core::sync::lock(&yes.0).clone();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0].0, "rewind");
    assert_eq!(asked[0].1.as_deref(), Some("cp-2"));
    assert!(
        asked[0].2.as_deref().unwrap().contains("built-in"),
        "{asked:?}"
    );
    // The registry took no checkpoint of the call: the rewind keeps its own.
    let env = call(&f.registry, "checkpoint_list", json!({})).await;
    let listed = success_data(&env)["checkpoints"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(listed.len(), 4);
    assert_eq!(listed[0]["tool"], "rewind");
    assert_eq!(listed[0]["rewind_of"], "cp-2");

    let env = call(&f.registry, "rewind", json!({"checkpoint": "cp-4"})).await;
    success_data(&env);
    assert_eq!(f.read("a.txt"), "two\n");
    assert_eq!(f.read("b.txt"), "bee\n");
}

#[tokio::test]
async fn a_conflict_is_an_error_naming_the_files_unless_skipped() {
    let mut f = fixture();
    f.registry
        .set_approver(Some(Arc::new(Yes::default()) as Arc<dyn Approver>));
    f.two_calls().await;
    fs::write(f.root.path().join("b.txt"), "edited by hand\n").unwrap();
    let env = call(&f.registry, "rewind", json!({"checkpoint": "cp-2"})).await;
    let message = error_message(&env, ErrorCode::Conflict);
    assert!(message.contains("b.txt"), "{message}");
    assert_eq!(env.data["conflicts"], json!(["b.txt"]));
    assert!(env.text.contains("skip_conflicts"), "{}", env.text);
    assert_eq!(f.read("a.txt"), "two\n");

    let env = call(
        &f.registry,
        "rewind",
        json!({"checkpoint": "cp-2", "skip_conflicts": true}),
    )
    .await;
    let data = success_data(&env);
    assert_eq!(data["restored"], 1);
    assert_eq!(data["paths"][1]["conflict"], true);
    assert_eq!(f.read("a.txt"), "one\n");
    assert_eq!(f.read("b.txt"), "edited by hand\n");

    // Only the paths the globs name.
    let env = call(
        &f.registry,
        "rewind",
        json!({"checkpoint": "cp-1", "files": ["*.md"]}),
    )
    .await;
    assert_eq!(success_data(&env)["paths"], json!([]));
    let env = call(
        &f.registry,
        "rewind",
        json!({"checkpoint": "cp-1", "files": ["a["]}),
    )
    .await;
    error_message(&env, ErrorCode::InvalidParams);
}

#[tokio::test]
async fn a_rule_that_allows_rewind_lets_it_run_and_a_deny_rule_refuses_it() {
    let allowed = toolbelt_policy::Policy::from_rules(&["rewind"], &[], &[]).unwrap();
    let f = fixture_with(Some(allowed), None);
    f.two_calls().await;
    let env = call(&f.registry, "rewind", json!({"checkpoint": "cp-3"})).await;
    assert_eq!(success_data(&env)["restored"], 1);
    assert!(!f.root.path().join("b.txt").exists());

    let denied = toolbelt_policy::Policy::from_rules(&[], &[], &["rewind"]).unwrap();
    let f = fixture_with(Some(denied), None);
    f.two_calls().await;
    let env = call(
        &f.registry,
        "rewind",
        json!({"checkpoint": "cp-3", "dry_run": true}),
    )
    .await;
    assert!(
        error_message(&env, ErrorCode::AccessDenied).contains("denied by the rule `rewind`"),
        "{}",
        env.text
    );
}

#[tokio::test]
async fn rewind_says_it_changes_nothing_and_every_example_fits_the_schemas() {
    let f = fixture();
    let rewind = f.registry.get("rewind").unwrap();
    assert_eq!(
        rewind.changes(&json!({"checkpoint": "cp-1"})),
        Changes::Nothing
    );
    assert!(rewind.spec().hints.destructive);
    assert_eq!(
        rewind.spec().permissions,
        vec!["checkpoints:rewind".to_string()]
    );
    assert_eq!(
        rewind
            .permission_subject(&json!({"checkpoint": "7"}))
            .as_deref(),
        Some("cp-7")
    );
    assert_eq!(
        rewind
            .permission_subject(&json!({"checkpoint": "cp-7", "dry_run": true}))
            .as_deref(),
        Some("cp-7 dry run")
    );
    for name in ["checkpoint_list", "checkpoint_diff", "rewind"] {
        let spec = f.registry.get(name).unwrap().spec().clone();
        let input = SchemaValidator::new(&spec.input_schema).unwrap();
        let output = SchemaValidator::new(spec.output_schema.as_ref().unwrap()).unwrap();
        assert!(!spec.examples.is_empty(), "{name}");
        for example in &spec.examples {
            assert_eq!(input.violations(&example.input), vec![], "{name}");
            assert_eq!(output.violations(&example.output), vec![], "{name}");
        }
    }
}

#[test]
fn the_checkpoints_set_names_the_three_tools() {
    let set = toolbelt_tools::TOOLSETS
        .iter()
        .find(|s| s.name == "checkpoints")
        .unwrap();
    let mut members: Vec<&str> = set.members(toolbelt_tools::TOOLSETS).into_iter().collect();
    members.sort_unstable();
    assert_eq!(members, ["checkpoint_diff", "checkpoint_list", "rewind"]);
}

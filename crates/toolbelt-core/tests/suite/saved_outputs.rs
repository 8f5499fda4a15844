//! Integration tests: a session's saved outputs beyond its spill directory, kept
//! by the registry before a call's answer leaves.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use toolbelt_core::output::{
    OutputBudget, SaveError, SavedOutputs, SpillError, SpilledPage, spilled_path,
};
use toolbelt_core::{BoxFuture, Envelope, Registry, Reply, Session, Status, ToolSpec};

/// Keeps what it is given in memory; or refuses everything.
#[derive(Debug, Default)]
struct Kept {
    saved: Mutex<Vec<(String, PathBuf, Vec<u8>)>>,
    refuse: bool,
}

impl SavedOutputs for Kept {
    fn save<'a>(
        &'a self,
        output_id: &'a str,
        path: &'a Path,
    ) -> BoxFuture<'a, Result<(), SaveError>> {
        Box::pin(async move {
            if self.refuse {
                return Err(SaveError::TooLarge {
                    bytes: 2_000_000_000,
                    max_bytes: 1_000_000_000,
                });
            }
            let data = std::fs::read(path).map_err(|source| SaveError::Read {
                path: path.to_path_buf(),
                source,
            })?;
            let entry = (output_id.to_string(), path.to_path_buf(), data);
            self.saved.lock().unwrap().push(entry);
            Ok(())
        })
    }

    fn page<'a>(
        &'a self,
        output_id: &'a str,
        _offset: i64,
        _limit: usize,
        _max_page_bytes: usize,
    ) -> BoxFuture<'a, Result<SpilledPage, SpillError>> {
        Box::pin(async move { Err(SpillError::NotFound(output_id.to_string())) })
    }
}

fn registry(dir: &Path, kept: &Arc<Kept>) -> Registry {
    let session = Session::new(dir)
        .with_state_dir(dir.join("state"))
        .with_budget(OutputBudget::with_max_bytes(2_000))
        .with_saved_outputs(Arc::clone(kept) as Arc<dyn SavedOutputs>);
    let mut registry = Registry::new(session);
    registry
        .register_fn(
            ToolSpec::describe("long", "Says much."),
            |_ctx, _args| async { Ok(Reply::new(json!({}), "line\n".repeat(2_000))) },
        )
        .unwrap();
    registry
        .register_fn(
            ToolSpec::describe("long_list", "Says much, as a list."),
            |_ctx, _args| async { Ok(Reply::new(json!([1, 2]), "item\n".repeat(2_000))) },
        )
        .unwrap();
    // Names an output, as read_output's result does, without having saved one.
    registry
        .register_fn(
            ToolSpec::describe("names_one", "Names an output."),
            |_ctx, _args| async {
                let id = format!("out_{}", "0".repeat(32));
                Ok(Reply::new(json!({ "output_id": id }), "a page"))
            },
        )
        .unwrap();
    registry
}

fn output_id(env: &Envelope) -> String {
    let marks = match &env.data {
        Value::Object(data) if data.contains_key("output_id") => data.clone(),
        _ => env.context.extra.clone(),
    };
    marks["output_id"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn a_saved_output_is_kept_before_the_answer_and_a_named_one_is_not() {
    tokio::time::timeout(Duration::from_secs(60), async {
        let dir = tempfile::tempdir().unwrap();
        let kept = Arc::new(Kept::default());
        let registry = registry(dir.path(), &kept);
        let spill_dir = dir.path().join("state").join("tool-output");

        let env = registry.execute("long", json!({})).await;
        assert_eq!(env.status, Status::Partial);
        let id = output_id(&env);
        let list = registry.execute("long_list", json!({})).await;
        let list_id = output_id(&list);
        assert_eq!(list.context.extra["truncated"], json!(true));
        let named = registry.execute("names_one", json!({})).await;
        assert_eq!(named.status, Status::Success);

        let saved = kept.saved.lock().unwrap().clone();
        assert_eq!(
            saved,
            vec![
                (
                    id.clone(),
                    spilled_path(&spill_dir, &id).unwrap(),
                    "line\n".repeat(2_000).into_bytes()
                ),
                (
                    list_id.clone(),
                    spilled_path(&spill_dir, &list_id).unwrap(),
                    "item\n".repeat(2_000).into_bytes()
                ),
            ]
        );
        assert!(!env.context.extra.contains_key("output_warning"));
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn a_store_that_refuses_leaves_the_result_whole_with_a_warning() {
    tokio::time::timeout(Duration::from_secs(60), async {
        let dir = tempfile::tempdir().unwrap();
        let refusing = Arc::new(Kept {
            refuse: true,
            ..Kept::default()
        });
        let registry = registry(dir.path(), &refusing);
        let env = registry.execute("long", json!({})).await;
        assert_eq!(env.status, Status::Partial);
        assert!(env.error.is_none());
        assert_eq!(env.data["truncated"], json!(true));
        let id = output_id(&env);
        let spilled = spilled_path(&dir.path().join("state").join("tool-output"), &id).unwrap();
        assert!(spilled.is_file());
        assert!(env.text.contains(&id), "{}", env.text);
        assert_eq!(
            env.context.extra["output_warning"],
            json!(
                "the full output can be read back through this server only: the output is 2 GB, more than the 1 GB kept of saved outputs"
            )
        );
    })
    .await
    .unwrap();
}

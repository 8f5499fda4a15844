//! Checkpoints on both backends: recorded with their files and read back, listed
//! and paged per workspace, read from an id on for a rewind, pruned; and the call
//! log's origin and checkpoint of each call.

use std::collections::HashSet;

use pretty_assertions::assert_eq;
use toolbelt_core::{CallLog, CallRecord, Origin};
use toolbelt_store::{
    CallFilter, CallLogWriter, CallQuery, CheckpointRecord, FileChange, FileState, StoreError,
    checkpoint_ages, checkpoints_from, get_checkpoint, insert_checkpoint, last_rewind, list_calls,
    list_checkpoints, mark_pruned, recent_calls, referenced_hashes, testing,
};

fn file(kind: &str, hash: &str, size: i64) -> FileState {
    FileState {
        kind: kind.into(),
        hash: Some(hash.into()),
        mode: Some(0o644),
        size: Some(size),
        link: None,
    }
}

/// A checkpoint of `workspace` at `at_ms` changing `src/<n>.rs` (modified), with
/// its before and after hashes named after `n`.
fn checkpoint(workspace: &str, at_ms: i64, n: i64) -> CheckpointRecord {
    CheckpointRecord {
        id: 0,
        workspace: workspace.into(),
        at_ms,
        call_id: format!("call-{n}"),
        tool: "edit_file".into(),
        origin: r#"{"front_end":"cli"}"#.into(),
        status: "complete".into(),
        problem: None,
        rewind_of: None,
        bytes: 100 * n,
        file_count: 0,
        files: vec![FileChange {
            path: format!("src/{n}.rs"),
            change: "modified".into(),
            renamed_from: None,
            before: file("file", &format!("b{n}"), n),
            after: file("file", &format!("a{n}"), n + 1),
            captured: true,
            note: None,
        }],
    }
}

/// A checkpoint with every kind of row: a rename, a new symbolic link, a deletion
/// not captured, a file created, given out of order.
fn several() -> CheckpointRecord {
    CheckpointRecord {
        tool: "bash".into(),
        origin: r#"{"front_end":"agent","run_id":"r-1","turn":2}"#.into(),
        status: "partial".into(),
        problem: Some("1 file too large to keep".into()),
        bytes: 4096,
        files: vec![
            FileChange {
                path: "b/new.txt".into(),
                change: "renamed".into(),
                renamed_from: Some("a/old.txt".into()),
                before: FileState::absent(),
                after: file("file", "h-moved", 12),
                captured: true,
                note: None,
            },
            FileChange {
                path: "a/old.txt".into(),
                change: "deleted".into(),
                renamed_from: None,
                before: file("file", "h-moved", 12),
                after: FileState::absent(),
                captured: true,
                note: None,
            },
            FileChange {
                path: "link".into(),
                change: "created".into(),
                renamed_from: None,
                before: FileState::absent(),
                after: FileState {
                    kind: "symlink".into(),
                    link: Some("b/new.txt".into()),
                    ..FileState::default()
                },
                captured: true,
                note: None,
            },
            FileChange {
                path: "big.bin".into(),
                change: "deleted".into(),
                renamed_from: None,
                before: FileState {
                    kind: "file".into(),
                    hash: None,
                    mode: Some(0o600),
                    size: Some(1 << 40),
                    link: None,
                },
                after: FileState::absent(),
                captured: false,
                note: Some("too large to keep (1 TiB)".into()),
            },
        ],
        ..checkpoint("/w", 1_000, 0)
    }
}

#[tokio::test]
async fn a_checkpoint_is_kept_with_its_files() {
    for t in testing::both().await.unwrap() {
        let s = &t.store;
        let mut record = several();
        record.id = 999;
        record.file_count = 77;
        let id = insert_checkpoint(s, &record).await.unwrap();
        assert!(id > 0);
        let got = get_checkpoint(s, id).await.unwrap().unwrap();
        let mut want = several();
        want.id = id;
        want.file_count = 4;
        want.files.sort_by(|a, b| a.path.cmp(&b.path));
        assert_eq!(got, want);
        assert_eq!(
            got.files
                .iter()
                .map(|f| f.path.as_str())
                .collect::<Vec<_>>(),
            ["a/old.txt", "b/new.txt", "big.bin", "link"]
        );
        assert!(get_checkpoint(s, id + 1).await.unwrap().is_none());

        // A checkpoint without files is kept too.
        let empty = CheckpointRecord {
            files: Vec::new(),
            ..checkpoint("/w", 2_000, 1)
        };
        let empty_id = insert_checkpoint(s, &empty).await.unwrap();
        assert!(empty_id > id);
        let got = get_checkpoint(s, empty_id).await.unwrap().unwrap();
        assert_eq!((got.file_count, got.files.len()), (0, 0));

        // Two rows for one path are refused, and nothing of that checkpoint is kept.
        let mut twice = checkpoint("/w", 3_000, 2);
        twice.files.push(twice.files[0].clone());
        assert!(matches!(
            insert_checkpoint(s, &twice).await,
            Err(StoreError::Conflict(_))
        ));
        let listed = list_checkpoints(s, "/w", None, 10).await.unwrap();
        assert_eq!(
            listed.iter().map(|c| c.id).collect::<Vec<_>>(),
            [empty_id, id]
        );
    }
}

#[tokio::test]
async fn many_files_in_one_checkpoint() {
    for t in testing::both().await.unwrap() {
        let s = &t.store;
        let mut record = checkpoint("/w", 1, 1);
        record.files = (0..300)
            .map(|i| FileChange {
                path: format!("f/{i:04}"),
                change: "created".into(),
                before: FileState::absent(),
                after: file("file", &format!("h{i}"), i),
                captured: true,
                ..FileChange::default()
            })
            .collect();
        let id = insert_checkpoint(s, &record).await.unwrap();
        let got = get_checkpoint(s, id).await.unwrap().unwrap();
        assert_eq!(got.file_count, 300);
        assert_eq!(got.files, record.files);
        let listed = list_checkpoints(s, "/w", None, 1).await.unwrap();
        assert_eq!(listed[0].file_count, 300);
    }
}

#[tokio::test]
async fn listed_newest_first_and_paged_per_workspace() {
    for t in testing::both().await.unwrap() {
        let s = &t.store;
        let mut ids = Vec::new();
        for n in 1..=5 {
            ids.push(
                insert_checkpoint(s, &checkpoint("/w", n * 10, n))
                    .await
                    .unwrap(),
            );
            insert_checkpoint(s, &checkpoint("/other", n * 10, n))
                .await
                .unwrap();
        }
        let page = list_checkpoints(s, "/w", None, 2).await.unwrap();
        assert_eq!(
            page.iter().map(|c| c.id).collect::<Vec<_>>(),
            [ids[4], ids[3]]
        );
        // Listings carry the count, not the files.
        assert!(page.iter().all(|c| c.files.is_empty() && c.file_count == 1));
        assert_eq!(page[0].workspace, "/w");
        assert_eq!((page[0].at_ms, page[0].bytes), (50, 500));
        assert_eq!(page[0].call_id, "call-5");
        let next = list_checkpoints(s, "/w", Some(ids[3]), 2).await.unwrap();
        assert_eq!(
            next.iter().map(|c| c.id).collect::<Vec<_>>(),
            [ids[2], ids[1]]
        );
        let last = list_checkpoints(s, "/w", Some(ids[1]), 2).await.unwrap();
        assert_eq!(last.iter().map(|c| c.id).collect::<Vec<_>>(), [ids[0]]);
        assert!(
            list_checkpoints(s, "/w", Some(ids[0]), 2)
                .await
                .unwrap()
                .is_empty()
        );
        assert!(list_checkpoints(s, "/w", None, 0).await.unwrap().is_empty());
        assert!(
            list_checkpoints(s, "/nowhere", None, 10)
                .await
                .unwrap()
                .is_empty()
        );
        assert_eq!(
            list_checkpoints(s, "/other", None, 100)
                .await
                .unwrap()
                .len(),
            5
        );
    }
}

#[tokio::test]
async fn read_from_an_id_on_and_the_last_rewind() {
    for t in testing::both().await.unwrap() {
        let s = &t.store;
        let mut ids = Vec::new();
        for n in 1..=4 {
            ids.push(
                insert_checkpoint(s, &checkpoint("/w", n * 10, n))
                    .await
                    .unwrap(),
            );
            insert_checkpoint(s, &checkpoint("/other", n * 10, n))
                .await
                .unwrap();
        }
        let from = checkpoints_from(s, "/w", ids[1]).await.unwrap();
        assert_eq!(
            from.iter().map(|c| c.id).collect::<Vec<_>>(),
            [ids[1], ids[2], ids[3]]
        );
        for (c, n) in from.iter().zip(2..) {
            assert_eq!(c.files, checkpoint("/w", 0, n).files);
            assert_eq!(c.file_count, 1);
        }
        assert!(
            checkpoints_from(s, "/w", ids[3] + 100)
                .await
                .unwrap()
                .is_empty()
        );

        assert!(last_rewind(s, "/w").await.unwrap().is_none());
        let rewind = |of: i64, at_ms: i64| CheckpointRecord {
            tool: "rewind".into(),
            origin: r#"{"front_end":"rewind"}"#.into(),
            rewind_of: Some(of),
            ..checkpoint("/w", at_ms, 9)
        };
        insert_checkpoint(s, &rewind(ids[2], 100)).await.unwrap();
        let second = insert_checkpoint(s, &rewind(ids[1], 200)).await.unwrap();
        // A later checkpoint that is not a rewind, and a rewind elsewhere.
        insert_checkpoint(s, &checkpoint("/w", 300, 7))
            .await
            .unwrap();
        insert_checkpoint(
            s,
            &CheckpointRecord {
                workspace: "/other".into(),
                ..rewind(ids[0], 400)
            },
        )
        .await
        .unwrap();
        let got = last_rewind(s, "/w").await.unwrap().unwrap();
        assert_eq!((got.id, got.rewind_of), (second, Some(ids[1])));
        assert_eq!(got.files, checkpoint("/w", 0, 9).files);
        assert_eq!(got.file_count, 1);
    }
}

#[tokio::test]
async fn pruned_checkpoints_keep_their_rows_but_not_their_content() {
    for t in testing::both().await.unwrap() {
        let s = &t.store;
        // Inserted out of time order: ages come oldest first by time.
        let a = insert_checkpoint(s, &checkpoint("/w", 300, 1))
            .await
            .unwrap();
        let b = insert_checkpoint(s, &checkpoint("/v", 100, 2))
            .await
            .unwrap();
        let c = insert_checkpoint(s, &checkpoint("/w", 200, 3))
            .await
            .unwrap();
        let mut shared = checkpoint("/w", 400, 4);
        // Its before content is that of checkpoint `a`'s after.
        shared.files[0].before.hash = Some("a1".into());
        let d = insert_checkpoint(s, &shared).await.unwrap();
        let mut symlink_only = checkpoint("/w", 500, 5);
        symlink_only.files[0].before = FileState::absent();
        symlink_only.files[0].after = FileState {
            kind: "symlink".into(),
            link: Some("target".into()),
            ..FileState::default()
        };
        let e = insert_checkpoint(s, &symlink_only).await.unwrap();

        assert_eq!(
            checkpoint_ages(s).await.unwrap(),
            [
                (b, 100, 200),
                (c, 200, 300),
                (a, 300, 100),
                (d, 400, 400),
                (e, 500, 500)
            ]
        );
        let all: HashSet<String> = ["b1", "a1", "b2", "a2", "b3", "a3", "a4"]
            .into_iter()
            .map(String::from)
            .collect();
        assert_eq!(referenced_hashes(s).await.unwrap(), all);

        mark_pruned(s, &[a, b], "older than 30 days").await.unwrap();
        mark_pruned(s, &[], "nothing").await.unwrap();
        assert_eq!(
            checkpoint_ages(s).await.unwrap(),
            [(c, 200, 300), (d, 400, 400), (e, 500, 500)]
        );
        // `a1` is still needed by `d`; `b1`, `b2` and `a2` are not.
        let left: HashSet<String> = ["b3", "a3", "a1", "a4"]
            .into_iter()
            .map(String::from)
            .collect();
        assert_eq!(referenced_hashes(s).await.unwrap(), left);

        let pruned = get_checkpoint(s, a).await.unwrap().unwrap();
        assert_eq!(pruned.status, "pruned");
        assert_eq!(pruned.problem.as_deref(), Some("older than 30 days"));
        assert_eq!(pruned.files, checkpoint("/w", 0, 1).files);
        assert_eq!(pruned.file_count, 1);
        let listed = list_checkpoints(s, "/w", None, 10).await.unwrap();
        assert_eq!(
            listed
                .iter()
                .map(|c| (c.id, c.status.as_str()))
                .collect::<Vec<_>>(),
            [
                (e, "complete"),
                (d, "complete"),
                (c, "complete"),
                (a, "pruned")
            ]
        );

        // Many at once.
        let mut many = Vec::new();
        for n in 0..600 {
            many.push(
                insert_checkpoint(s, &checkpoint("/many", 1_000 + n, 10 + n))
                    .await
                    .unwrap(),
            );
        }
        mark_pruned(s, &many, "space").await.unwrap();
        assert_eq!(checkpoint_ages(s).await.unwrap().len(), 3);
    }
}

#[tokio::test]
async fn the_call_log_keeps_origin_and_checkpoint() {
    for t in testing::both().await.unwrap() {
        let writer = CallLogWriter::start(t.store.clone(), "/w");
        let base = CallRecord {
            at_ms: toolbelt_store::now_ms(),
            tool: "edit_file".into(),
            call_id: "c1".into(),
            args: "{}".into(),
            status: "success".into(),
            duration_ms: 3,
            bytes_out: 40,
            ..CallRecord::default()
        };
        let origin = Origin {
            session: Some("3f2a".into()),
            client: Some("claude-code".into()),
            ..Origin::new("mcp")
        };
        writer.record(CallRecord {
            origin: origin.clone(),
            checkpoint: Some("cp-12".into()),
            hooks: vec![toolbelt_core::hooks::HookRun {
                name: "no-touch".into(),
                event: "pre_tool_use".into(),
                outcome: "denied".into(),
                ms: 4,
                message: None,
            }],
            ..base.clone()
        });
        // No front end: no origin.
        writer.record(CallRecord {
            call_id: "c2".into(),
            ..base.clone()
        });
        writer.record(CallRecord {
            call_id: "c3".into(),
            origin: Origin::new("agent").in_turn("r-1", 2),
            ..base.clone()
        });
        writer.flush().await;

        let rows = recent_calls(
            &t.store,
            &CallFilter {
                tail: 10,
                tool: None,
            },
        )
        .await
        .unwrap();
        let kept: Vec<(&str, Option<Origin>, Option<&str>)> = rows
            .iter()
            .map(|r| {
                (
                    r.call_id.as_str(),
                    r.origin
                        .as_deref()
                        .map(|o| serde_json::from_str(o).unwrap()),
                    r.checkpoint.as_deref(),
                )
            })
            .collect();
        assert_eq!(
            kept,
            [
                ("c1", Some(origin), Some("cp-12")),
                ("c2", None, None),
                ("c3", Some(Origin::new("agent").in_turn("r-1", 2)), None),
            ]
        );
        assert_eq!(
            rows[2].origin.as_deref(),
            Some(r#"{"front_end":"agent","run_id":"r-1","turn":2}"#)
        );
        assert_eq!(
            rows[0].hooks.as_deref(),
            Some(r#"[{"name":"no-touch","event":"pre_tool_use","outcome":"denied","ms":4}]"#)
        );
        assert_eq!(rows[1].hooks, None);
        // The people's view reads them too, newest first.
        let listed = list_calls(&t.store, &CallQuery::default()).await.unwrap();
        assert_eq!(listed.iter().rev().cloned().collect::<Vec<_>>(), rows);
        // Serialised, what is missing is left out.
        let first = serde_json::to_value(&rows[0]).unwrap();
        assert_eq!(first["checkpoint"], "cp-12");
        let second = serde_json::to_value(&rows[1]).unwrap();
        assert!(second.get("origin").is_none() && second.get("checkpoint").is_none());
    }
}

//! Agent runs in the store on both backends: lines copied as written, listed by
//! workspace newest first, read back in order, imported once.

use pretty_assertions::assert_eq;
use toolbelt_store::{
    Imported, RunEventWriter, RunLine, StoreHandle, StoredRun, agent_run_events, find_agent_run,
    import_agent_run, list_agent_runs, testing,
};

fn line(run_id: &str, seq: u64, event: &str) -> RunLine {
    RunLine {
        run_id: run_id.into(),
        seq,
        event: event.into(),
    }
}

#[tokio::test]
async fn the_writer_keeps_each_runs_lines_in_order_under_its_workspace() {
    for t in testing::both().await.unwrap() {
        let handle = StoreHandle::open(t.store.clone());
        let writer = RunEventWriter::start(handle.clone(), "/w", "replica-a");
        writer.record(line("run-1", 0, r#"{"type":"run"}"#));
        writer.record(line("run-2", 0, r#"{"type":"run","n":2}"#));
        writer.record(line("run-1", 1, r#"{"type":"end"}"#));
        writer.flush().await;
        // A line written again (a retried batch) keeps the first.
        writer.record(line("run-1", 1, r#"{"type":"other"}"#));
        writer.record(line("run-1", 2, r#"{"type":"notice"}"#));
        writer.flush().await;

        let runs = list_agent_runs(&t.store, "/w").await.unwrap();
        let ids: Vec<&str> = runs.iter().map(|r| r.run_id.as_str()).collect();
        assert!(
            ids == ["run-2", "run-1"] || ids == ["run-1", "run-2"],
            "{ids:?}"
        );
        assert!(
            runs.iter()
                .all(|r| r.replica == "replica-a" && r.workspace == "/w")
        );
        assert!(
            list_agent_runs(&t.store, "/other")
                .await
                .unwrap()
                .is_empty()
        );

        let events = agent_run_events(&t.store, &["run-1".into(), "run-9".into()])
            .await
            .unwrap();
        assert_eq!(events.len(), 1);
        assert_eq!(
            events["run-1"],
            vec![
                r#"{"type":"run"}"#.to_string(),
                r#"{"type":"end"}"#.to_string(),
                r#"{"type":"notice"}"#.to_string()
            ]
        );
        let found = find_agent_run(&t.store, "/w", "run-1")
            .await
            .unwrap()
            .unwrap();
        assert!(found.updated_ms >= found.started_ms, "{found:?}");
        assert_eq!(
            find_agent_run(&t.store, "/other", "run-1").await.unwrap(),
            None
        );
    }
}

#[tokio::test]
async fn an_import_adds_only_what_the_store_lacks() {
    for t in testing::both().await.unwrap() {
        let run = StoredRun {
            run_id: "20260101-090000-ab12".into(),
            workspace: "/srv/project".into(),
            started_ms: 1_000,
            updated_ms: 2_000,
            replica: "import".into(),
        };
        let lines: Vec<(u64, String)> = (0..3).map(|i| (i, format!("{{\"n\":{i}}}"))).collect();
        let first = import_agent_run(&t.store, &run, &lines[..2]).await.unwrap();
        assert_eq!(
            first,
            Imported {
                new_run: true,
                lines: 2
            }
        );
        let again = import_agent_run(&t.store, &run, &lines[..2]).await.unwrap();
        assert_eq!(
            again,
            Imported {
                new_run: false,
                lines: 0
            }
        );
        // The run went on after the first import: the new line is added.
        let later = StoredRun {
            updated_ms: 3_000,
            ..run.clone()
        };
        let more = import_agent_run(&t.store, &later, &lines).await.unwrap();
        assert_eq!(
            more,
            Imported {
                new_run: false,
                lines: 1
            }
        );
        let listed = list_agent_runs(&t.store, "/srv/project").await.unwrap();
        assert_eq!(listed, vec![later]);
        let events = agent_run_events(&t.store, std::slice::from_ref(&run.run_id))
            .await
            .unwrap();
        assert_eq!(
            events[&run.run_id],
            vec!["{\"n\":0}", "{\"n\":1}", "{\"n\":2}"]
        );
    }
}

#[tokio::test]
async fn runs_are_listed_newest_first() {
    for t in testing::both().await.unwrap() {
        for (id, started) in [("a", 30), ("b", 10), ("c", 20)] {
            let run = StoredRun {
                run_id: id.into(),
                workspace: "/w".into(),
                started_ms: started,
                updated_ms: started,
                replica: "import".into(),
            };
            import_agent_run(&t.store, &run, &[(0, "{}".into())])
                .await
                .unwrap();
        }
        let ids: Vec<String> = list_agent_runs(&t.store, "/w")
            .await
            .unwrap()
            .into_iter()
            .map(|r| r.run_id)
            .collect();
        assert_eq!(ids, ["a", "c", "b"]);
    }
}

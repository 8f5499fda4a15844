//! Background subagents on both backends: recorded, updated to the end, kept for
//! the next process, delivered once.

use pretty_assertions::assert_eq;
use toolbelt_store::{
    StoreError, SubagentProgress, SubagentTask, get_subagent_task, insert_subagent_task,
    list_subagent_tasks, mark_subagent_delivered, testing, undelivered_subagent_tasks,
    update_subagent_task,
};

fn task(id: &str, parent: &str, created_at: i64) -> SubagentTask {
    SubagentTask {
        id: id.into(),
        label: "scan".into(),
        agent_type: "general-purpose".into(),
        prompt: "look around".into(),
        parent_run_id: Some(parent.into()),
        owner: "p1".into(),
        status: "queued".into(),
        result: None,
        steps: 0,
        tool_calls: 0,
        input_tokens: 0,
        output_tokens: 0,
        run_id: None,
        created_at,
        started_at: None,
        finished_at: None,
        delivered_at: None,
    }
}

#[tokio::test]
async fn a_task_is_kept_from_start_to_delivery() {
    for t in testing::both().await.unwrap() {
        let s = &t.store;
        insert_subagent_task(s, &task("sa_1", "run-a", 10))
            .await
            .unwrap();
        insert_subagent_task(s, &task("sa_2", "run-a", 20))
            .await
            .unwrap();
        assert!(matches!(
            insert_subagent_task(s, &task("sa_1", "run-a", 30)).await,
            Err(StoreError::Conflict(_))
        ));
        let running = SubagentProgress {
            status: "running".into(),
            steps: 1,
            run_id: Some("child-1".into()),
            ..SubagentProgress::default()
        };
        update_subagent_task(s, "sa_1", &running, 100)
            .await
            .unwrap();
        let done = SubagentProgress {
            status: "done".into(),
            result: Some("found 3 files".into()),
            steps: 2,
            tool_calls: 3,
            input_tokens: 500,
            output_tokens: 40,
            run_id: None,
        };
        update_subagent_task(s, "sa_1", &done, 200).await.unwrap();
        let got = get_subagent_task(s, "sa_1").await.unwrap().unwrap();
        assert_eq!(
            (
                got.status.as_str(),
                got.result.as_deref(),
                got.run_id.as_deref()
            ),
            ("done", Some("found 3 files"), Some("child-1"))
        );
        assert_eq!((got.started_at, got.finished_at), (Some(100), Some(200)));
        assert_eq!((got.tool_calls, got.input_tokens), (3, 500));
        assert!(matches!(
            update_subagent_task(s, "sa_9", &done, 1).await,
            Err(StoreError::NotFound(_))
        ));

        let listed: Vec<String> = list_subagent_tasks(s, 10)
            .await
            .unwrap()
            .into_iter()
            .map(|t| t.id)
            .collect();
        assert_eq!(listed, vec!["sa_2", "sa_1"]);
        // Only finished, undelivered ones of that run are waiting.
        let waiting = undelivered_subagent_tasks(s, "run-a").await.unwrap();
        assert_eq!(
            waiting.iter().map(|t| t.id.as_str()).collect::<Vec<_>>(),
            vec!["sa_1"]
        );
        mark_subagent_delivered(s, "sa_1", 300).await.unwrap();
        mark_subagent_delivered(s, "sa_1", 400).await.unwrap();
        assert!(
            undelivered_subagent_tasks(s, "run-a")
                .await
                .unwrap()
                .is_empty()
        );
        let got = get_subagent_task(s, "sa_1").await.unwrap().unwrap();
        assert_eq!(got.delivered_at, Some(300));
        assert!(get_subagent_task(s, "nope").await.unwrap().is_none());
    }
}

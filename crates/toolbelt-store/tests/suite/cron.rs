//! Cron jobs and the outbox on both backends: names unique per workspace, a claim
//! key taken once, outbox leases held by one deliverer, outcomes only under the lease,
//! a lease given back at once by a deliverer that stops.

use pretty_assertions::assert_eq;
use toolbelt_store::{
    Claim, FireMode, NewCronJob, NewOutboxMessage, OutboxStatus, StoreError, claim_firing,
    claim_message, create_cron_job, due_messages, enqueue_message, get_message, list_cron_jobs,
    next_message_due, record_retry, record_sent, release_message, remove_cron_job, testing,
};

fn job(workspace: &str, name: &str, next_at: i64) -> NewCronJob {
    NewCronJob {
        workspace: workspace.into(),
        name: name.into(),
        schedule: "every 10s".into(),
        tz: "UTC".into(),
        message: "hi".into(),
        channel: Some("local".into()),
        prompt: None,
        chat_id: None,
        next_at: Some(next_at),
    }
}

/// Creates the job `name` of `workspace`, due at `next_at`; its id.
async fn created(s: &toolbelt_store::Store, workspace: &str, name: &str, next_at: i64) -> i64 {
    create_cron_job(s, &job(workspace, name, next_at), 0)
        .await
        .unwrap()
        .id
}

#[tokio::test]
async fn job_names_are_unique_per_workspace() {
    for t in testing::both().await.unwrap() {
        let s = &t.store;
        create_cron_job(s, &job("/a", "daily", 10), 0)
            .await
            .unwrap();
        create_cron_job(s, &job("/b", "daily", 10), 0)
            .await
            .unwrap();
        let again = create_cron_job(s, &job("/a", "daily", 10), 0)
            .await
            .unwrap_err();
        assert!(
            matches!(&again, StoreError::Conflict(m) if m.contains("already exists")),
            "{again}"
        );
        let blank = create_cron_job(s, &job("/a", "  ", 10), 0)
            .await
            .unwrap_err();
        assert!(matches!(blank, StoreError::Invalid(_)));
        assert_eq!(list_cron_jobs(s, Some("/a")).await.unwrap().len(), 1);
        assert_eq!(list_cron_jobs(s, None).await.unwrap().len(), 2);
        let missing = remove_cron_job(s, "/a", "weekly").await.unwrap_err();
        assert!(
            matches!(&missing, StoreError::NotFound(m) if m.contains("its jobs: daily")),
            "{missing}"
        );
        remove_cron_job(s, "/a", "daily").await.unwrap();
        assert!(list_cron_jobs(s, Some("/a")).await.unwrap().is_empty());
    }
}

#[tokio::test]
async fn a_due_firing_is_claimed_once_and_the_job_moves_on() {
    for t in testing::both().await.unwrap() {
        let s = &t.store;
        let id = created(s, "/w", "j", 1_000).await;
        assert_eq!(
            claim_firing(s, id, 999, "a", "m0", FireMode::Due, |_, _| Some(2_000))
                .await
                .unwrap(),
            Claim::NotDue
        );
        let Claim::Fired(first) = claim_firing(s, id, 1_500, "a", "m1", FireMode::Due, |_, at| {
            Some(at + 1_000)
        })
        .await
        .unwrap() else {
            panic!("not fired");
        };
        assert_eq!((first.scheduled_for, first.next_at), (1_000, Some(2_000)));
        // A second claimer reading the old state finds the job moved on.
        assert_eq!(
            claim_firing(s, id, 1_500, "b", "m2", FireMode::Due, |_, _| Some(2_000))
                .await
                .unwrap(),
            Claim::NotDue
        );
        // A manual firing at the next due millisecond takes that key: the due firing
        // then finds it taken and moves on without a second message.
        let Claim::Fired(manual) =
            claim_firing(s, id, 2_000, "a", "m3", FireMode::Manual, |j, _| j.next_at)
                .await
                .unwrap()
        else {
            panic!("not fired");
        };
        assert_eq!(manual.scheduled_for, 2_000);
        assert_eq!(
            claim_firing(s, id, 2_000, "b", "m4", FireMode::Due, |_, _| Some(3_000))
                .await
                .unwrap(),
            Claim::Taken
        );
        let jobs = list_cron_jobs(s, Some("/w")).await.unwrap();
        assert_eq!(jobs[0].job.next_at, Some(3_000));
        assert_eq!(jobs[0].last.as_ref().unwrap().message_id, "m3");
        assert!(get_message(s, "m4").await.unwrap().is_none());
        // One-shot: no next time removes the job.
        let Claim::Fired(last) = claim_firing(s, id, 3_000, "a", "m5", FireMode::Due, |_, _| None)
            .await
            .unwrap()
        else {
            panic!("not fired");
        };
        assert_eq!(last.next_at, None);
        assert_eq!(
            claim_firing(s, id, 9_000, "a", "m6", FireMode::Due, |_, _| None)
                .await
                .unwrap(),
            Claim::Gone
        );
    }
}

#[tokio::test]
async fn an_outbox_lease_has_one_holder_and_outcomes_need_it() {
    for t in testing::both().await.unwrap() {
        let s = &t.store;
        let m = NewOutboxMessage {
            id: "msg-1".into(),
            channel: "ops".into(),
            chat_id: Some("c".into()),
            content: "hello".into(),
            reply_to: None,
            media: None,
            job_id: None,
        };
        enqueue_message(s, &m, 100).await.unwrap();
        assert!(matches!(
            enqueue_message(s, &m, 100).await.unwrap_err(),
            StoreError::Conflict(_)
        ));
        assert_eq!(due_messages(s, 100, 10).await.unwrap(), ["msg-1"]);
        let held = claim_message(s, "msg-1", 100, 1_100)
            .await
            .unwrap()
            .unwrap();
        assert_eq!((held.status, held.attempts), (OutboxStatus::Sending, 1));
        assert!(
            claim_message(s, "msg-1", 200, 1_200)
                .await
                .unwrap()
                .is_none(),
            "leased"
        );
        assert_eq!(next_message_due(s).await.unwrap(), Some(1_100));
        // The lease ran out: another deliverer takes it; the first one's outcome is void.
        let taken = claim_message(s, "msg-1", 1_100, 2_100)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(taken.attempts, 2);
        assert!(!record_sent(s, "msg-1", 1_100, 1_150).await.unwrap());
        assert!(
            record_retry(s, "msg-1", 2_100, 5_000, "503 busy", 1_200)
                .await
                .unwrap()
        );
        assert!(due_messages(s, 4_999, 10).await.unwrap().is_empty());
        let again = claim_message(s, "msg-1", 5_000, 6_000)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(again.last_error.as_deref(), Some("503 busy"));
        assert!(record_sent(s, "msg-1", 6_000, 5_100).await.unwrap());
        let done = get_message(s, "msg-1").await.unwrap().unwrap();
        assert_eq!(
            (done.status, done.attempts, done.sent_at),
            (OutboxStatus::Sent, 3, Some(5_100))
        );
        assert!(
            claim_message(s, "msg-1", 99_000, 100_000)
                .await
                .unwrap()
                .is_none()
        );
        assert_eq!(next_message_due(s).await.unwrap(), None);
    }
}

#[tokio::test]
async fn a_released_lease_is_takeable_at_once_and_its_attempt_not_counted() {
    for t in testing::both().await.unwrap() {
        let s = &t.store;
        s.ping().await.unwrap();
        let m = NewOutboxMessage {
            id: "msg-r".into(),
            channel: "ops".into(),
            chat_id: None,
            content: "hello".into(),
            reply_to: None,
            media: None,
            job_id: None,
        };
        enqueue_message(s, &m, 100).await.unwrap();
        claim_message(s, "msg-r", 100, 60_100)
            .await
            .unwrap()
            .unwrap();
        // Not the holder's lease: nothing changes.
        assert!(!release_message(s, "msg-r", 60_000, 150).await.unwrap());
        assert!(due_messages(s, 200, 10).await.unwrap().is_empty());
        // The holder stops: the message is due at once, for anyone.
        assert!(release_message(s, "msg-r", 60_100, 200).await.unwrap());
        let back = get_message(s, "msg-r").await.unwrap().unwrap();
        assert_eq!(
            (
                back.status,
                back.attempts,
                back.lease_until,
                back.next_attempt_at
            ),
            (OutboxStatus::Pending, 0, None, 200)
        );
        assert_eq!(due_messages(s, 200, 10).await.unwrap(), ["msg-r"]);
        let taken = claim_message(s, "msg-r", 210, 60_210)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(taken.attempts, 1);
        // Released twice: the second is void.
        assert!(!release_message(s, "msg-r", 60_100, 220).await.unwrap());
    }
}

#[tokio::test]
async fn old_claims_are_pruned_but_each_jobs_last_run_stays() {
    for t in testing::both().await.unwrap() {
        let s = &t.store;
        let id = created(s, "/w", "j", 1_000).await;
        for (i, at) in [1_000, 2_000, 3_000].into_iter().enumerate() {
            let claim = claim_firing(s, id, at, "a", &format!("m{i}"), FireMode::Due, |_, at| {
                Some(at + 1_000)
            })
            .await
            .unwrap();
            assert!(matches!(claim, Claim::Fired(_)));
        }
        assert_eq!(
            toolbelt_store::prune_cron_firings(s, 10_000).await.unwrap(),
            2
        );
        let left: Vec<i64> = toolbelt_store::cron_firings(s, id)
            .await
            .unwrap()
            .iter()
            .map(|c| c.0)
            .collect();
        assert_eq!(left, [3_000]);
        assert_eq!(
            list_cron_jobs(s, None).await.unwrap()[0]
                .last
                .as_ref()
                .unwrap()
                .message_id,
            "m2"
        );
    }
}

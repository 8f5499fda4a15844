//! The planner's projects, goals and tasks, on both backends.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use chrono::NaiveDate;
use toolbelt_store::{
    GoalFilter, GoalStage, Kind, NewGoal, NewProject, NewTask, Priority, ProjectFilter,
    ProjectStatus, ProjectUpdate, RecordId, Store, StoreError, TaskFilter, TaskStatus, testing,
};

fn project(n: i64) -> RecordId {
    RecordId::new(Kind::Project, n)
}
fn goal(n: i64) -> RecordId {
    RecordId::new(Kind::Goal, n)
}
fn task(n: i64) -> RecordId {
    RecordId::new(Kind::Task, n)
}

fn new_project(name: &str, goal_ids: Vec<RecordId>) -> NewProject {
    NewProject {
        name: name.into(),
        description: None,
        status: ProjectStatus::Active,
        goal_ids,
    }
}

fn new_goal(title: &str, stage: GoalStage) -> NewGoal {
    NewGoal {
        title: title.into(),
        description: None,
        stage,
        deadline: None,
    }
}

fn new_task(title: &str, project_id: Option<RecordId>, due_at: Option<i64>) -> NewTask {
    NewTask {
        title: title.into(),
        description: None,
        project_id,
        due_at,
        priority: Priority::Medium,
    }
}

fn message(e: StoreError) -> (String, String) {
    let kind = match &e {
        StoreError::NotFound(_) => "not_found",
        StoreError::Invalid(_) => "invalid",
        StoreError::Conflict(_) => "conflict",
        _ => "other",
    };
    (kind.to_string(), e.to_string())
}

/// How long one test may take.
const TEST_TIMEOUT: Duration = Duration::from_secs(120);

/// Runs a test's body, failing it after [`TEST_TIMEOUT`].
async fn bounded(body: impl Future<Output = ()>) {
    tokio::time::timeout(TEST_TIMEOUT, body)
        .await
        .expect("the test did not finish in time");
}

/// 2026-03-01T00:00:00Z in ms.
const NOW: i64 = 1_772_323_200_000;
const DAY: i64 = 86_400_000;

#[tokio::test]
async fn projects_are_created_updated_and_read_back() {
    bounded(async {
        for t in testing::both().await.unwrap() {
            let s = &t.store;
            let g1 = s
                .create_goal(&NewGoal {
                    title: "  Learn Rust ".into(),
                    description: Some("systems".into()),
                    stage: GoalStage::Yearly,
                    deadline: NaiveDate::from_ymd_opt(2026, 12, 31),
                })
                .await
                .unwrap();
            assert_eq!(g1.id, goal(1));
            assert_eq!(g1.title, "Learn Rust");
            assert_eq!(g1.deadline.as_deref(), Some("2026-12-31"));
            let g2 = s
                .create_goal(&new_goal("Ship", GoalStage::Quarter))
                .await
                .unwrap();

            let p = s
                .create_project(&NewProject {
                    name: "AI plan".into(),
                    description: Some("  ".into()),
                    status: ProjectStatus::Paused,
                    goal_ids: vec![g2.id, g1.id, g2.id],
                })
                .await
                .unwrap();
            assert_eq!(p.id, project(1));
            assert_eq!(p.name, "AI plan");
            assert_eq!(p.description, None);
            assert_eq!(p.status, ProjectStatus::Paused);
            assert_eq!(p.goal_ids, vec![goal(1), goal(2)]);
            assert_eq!(p.created_at, p.updated_at);
            assert_eq!(s.project(p.id).await.unwrap(), p);
            assert_eq!(s.goal(g1.id).await.unwrap().project_ids, vec![project(1)]);

            let u = s
                .update_project(
                    p.id,
                    &ProjectUpdate {
                        name: Some("AI study".into()),
                        description: Some("read papers".into()),
                        status: Some(ProjectStatus::Active),
                        goal_ids: Some(vec![g1.id]),
                    },
                )
                .await
                .unwrap();
            assert_eq!(u.name, "AI study");
            assert_eq!(u.description.as_deref(), Some("read papers"));
            assert_eq!(u.status, ProjectStatus::Active);
            assert_eq!(u.goal_ids, vec![goal(1)]);
            assert_eq!(u.created_at, p.created_at);
            assert!(u.updated_at >= p.updated_at);
            assert_eq!(
                s.goal(g2.id).await.unwrap().project_ids,
                Vec::<RecordId>::new()
            );

            // Only the status: the rest stays; an empty goal set unlinks every goal.
            let u2 = s
                .update_project(
                    p.id,
                    &ProjectUpdate {
                        status: Some(ProjectStatus::Completed),
                        goal_ids: Some(vec![]),
                        ..ProjectUpdate::default()
                    },
                )
                .await
                .unwrap();
            assert_eq!(u2.name, "AI study");
            assert_eq!(u2.description.as_deref(), Some("read papers"));
            assert_eq!(u2.status, ProjectStatus::Completed);
            assert_eq!(u2.goal_ids, Vec::<RecordId>::new());

            // A blank description clears it.
            let u3 = s
                .update_project(
                    p.id,
                    &ProjectUpdate {
                        description: Some(String::new()),
                        ..ProjectUpdate::default()
                    },
                )
                .await
                .unwrap();
            assert_eq!(u3.description, None);

            assert_eq!(
                message(
                    s.update_project(p.id, &ProjectUpdate::default())
                        .await
                        .unwrap_err()
                ),
                (
                    "invalid".into(),
                    "updates is empty; give at least one of the fields that can be updated: name, description, status, goal_ids".into()
                )
            );
            assert_eq!(
                message(
                    s.update_project(
                        p.id,
                        &ProjectUpdate {
                            name: Some(" \t".into()),
                            ..ProjectUpdate::default()
                        }
                    )
                    .await
                    .unwrap_err()
                ),
                (
                    "invalid".into(),
                    "name is blank; give a name with at least one visible character".into()
                )
            );
        }
    })
    .await;
}

#[tokio::test]
async fn unknown_and_wrong_kind_ids_are_not_found_and_nothing_is_written() {
    bounded(async {
        for t in testing::both().await.unwrap() {
            let s = &t.store;
            let g = s
                .create_goal(&new_goal("G", GoalStage::Life))
                .await
                .unwrap();
            let not_found = |e| message(e);
            assert_eq!(
                not_found(
                    s.create_project(&new_project("P", vec![g.id, goal(9)]))
                        .await
                        .unwrap_err()
                ),
                (
                    "not_found".into(),
                    "no goal has the id goal-9; list_goals lists the goals and their ids".into()
                )
            );
            // The failed create wrote nothing.
            let page = s.list_projects(&ProjectFilter::default()).await.unwrap();
            assert_eq!(page.total, 0);
            assert_eq!(
                not_found(s.project(project(99)).await.unwrap_err()).1,
                "no project has the id project-99; list_projects lists the projects and their ids"
            );
            assert_eq!(
                not_found(s.project(task(1)).await.unwrap_err()).1,
                "\"task-1\" is a task id, not a project id; list_projects lists the projects and their ids"
            );
            assert_eq!(
                not_found(
                    s.create_task(&new_task("T", Some(project(99)), None))
                        .await
                        .unwrap_err()
                )
                .1,
                "no project has the id project-99; list_projects lists the projects and their ids"
            );
            assert_eq!(
                not_found(s.complete_task(task(99), None).await.unwrap_err()).1,
                "no task has the id task-99; list_tasks lists the tasks and their ids"
            );
            assert_eq!(
                not_found(
                    s.link_goal_to_project(goal(99), project(1))
                        .await
                        .unwrap_err()
                )
                .1,
                "no goal has the id goal-99; list_goals lists the goals and their ids"
            );
            assert_eq!(
                not_found(s.link_goal_to_project(g.id, project(1)).await.unwrap_err()).1,
                "no project has the id project-1; list_projects lists the projects and their ids"
            );
            assert_eq!(
                not_found(s.delete_project(project(7), true).await.unwrap_err()).1,
                "no project has the id project-7; list_projects lists the projects and their ids"
            );
            assert_eq!(
                not_found(
                    s.update_project(
                        project(7),
                        &ProjectUpdate {
                            name: Some("x".into()),
                            ..ProjectUpdate::default()
                        }
                    )
                    .await
                    .unwrap_err()
                )
                .1,
                "no project has the id project-7; list_projects lists the projects and their ids"
            );
            assert_eq!(
                not_found(
                    s.list_tasks(&TaskFilter {
                        project_id: Some(project(5)),
                        ..TaskFilter::default()
                    })
                    .await
                    .unwrap_err()
                )
                .1,
                "no project has the id project-5; list_projects lists the projects and their ids"
            );
            assert_eq!(
                message(
                    s.create_task(&new_task("   ", None, None))
                        .await
                        .unwrap_err()
                ),
                (
                    "invalid".into(),
                    "title is blank; give a title with at least one visible character".into()
                )
            );
            assert_eq!(s.list_tasks(&TaskFilter::default()).await.unwrap().total, 0);
        }
    })
    .await;
}

#[tokio::test]
async fn linking_twice_says_already_linked_and_keeps_the_first_time() {
    bounded(async {
        for t in testing::both().await.unwrap() {
            let s = &t.store;
            let g = s
                .create_goal(&new_goal("G", GoalStage::Quarter))
                .await
                .unwrap();
            let p = s.create_project(&new_project("P", vec![])).await.unwrap();
            let first = s.link_goal_to_project(g.id, p.id).await.unwrap();
            assert!(!first.already_linked);
            assert_eq!((first.goal_id, first.project_id), (goal(1), project(1)));
            let second = s.link_goal_to_project(g.id, p.id).await.unwrap();
            assert!(second.already_linked);
            assert_eq!(second.linked_at, first.linked_at);
            assert_eq!(s.project(p.id).await.unwrap().goal_ids, vec![goal(1)]);
            let goals = s
                .list_goals(&GoalFilter {
                    project_id: Some(p.id),
                    ..GoalFilter::default()
                })
                .await
                .unwrap();
            assert_eq!(goals.total, 1);
            assert_eq!(goals.items[0].project_ids, vec![project(1)]);
        }
    })
    .await;
}

#[tokio::test]
async fn deleting_a_project_with_tasks_needs_cascade() {
    bounded(async {
        for t in testing::both().await.unwrap() {
            let s = &t.store;
            let g = s
                .create_goal(&new_goal("G", GoalStage::Quarter))
                .await
                .unwrap();
            let p1 = s
                .create_project(&new_project("One", vec![g.id]))
                .await
                .unwrap();
            let p2 = s.create_project(&new_project("Two", vec![])).await.unwrap();
            let p3 = s
                .create_project(&new_project("Three", vec![g.id]))
                .await
                .unwrap();
            for i in 0..4 {
                s.create_task(&new_task(&format!("t{i}"), Some(p3.id), None))
                    .await
                    .unwrap();
            }
            s.create_task(&new_task("loose", None, None)).await.unwrap();
            s.complete_task(task(1), None).await.unwrap();
            s.complete_task(task(2), None).await.unwrap();
            // A review linked to project-3 and project-2.
            sqlx::query("INSERT INTO reviews (content, kind, reviewed_at, created_at) VALUES ('ok', 'daily', 1, 1)")
                .execute(s.pool())
                .await
                .unwrap();
            for p in [3_i64, 2] {
                sqlx::query("INSERT INTO review_projects (review_id, project_id, position) VALUES (1, $1, $1)")
                    .bind(p)
                    .execute(s.pool())
                    .await
                    .unwrap();
            }

            assert_eq!(
                message(s.delete_project(p3.id, false).await.unwrap_err()),
                (
                    "conflict".into(),
                    "project-3 still has 4 tasks (2 pending); delete them, move them, or call again with cascade: true".into()
                )
            );
            assert_eq!(s.project(p3.id).await.unwrap().name, "Three");

            // Without tasks, no cascade is needed.
            let d2 = s.delete_project(p2.id, false).await.unwrap();
            assert_eq!(
                (
                    d2.id,
                    d2.name.as_str(),
                    d2.tasks_deleted,
                    d2.goals_unlinked,
                    d2.reviews_unlinked
                ),
                (project(2), "Two", 0, 0, 1)
            );

            let d3 = s.delete_project(p3.id, true).await.unwrap();
            assert_eq!(
                (
                    d3.id,
                    d3.name.as_str(),
                    d3.tasks_deleted,
                    d3.goals_unlinked,
                    d3.reviews_unlinked
                ),
                (project(3), "Three", 4, 1, 1)
            );
            assert!(matches!(
                s.project(p3.id).await.unwrap_err(),
                StoreError::NotFound(_)
            ));
            // Its tasks went; the loose task, the goal, the other project and the review stayed.
            let tasks = s.list_tasks(&TaskFilter::default()).await.unwrap();
            assert_eq!(tasks.total, 1);
            assert_eq!(tasks.items[0].title, "loose");
            assert_eq!(s.goal(g.id).await.unwrap().project_ids, vec![p1.id]);
            let reviews: i64 = sqlx::query("SELECT CAST(COUNT(*) AS BIGINT) FROM reviews")
                .fetch_one(s.pool())
                .await
                .map(|r| sqlx::Row::get(&r, 0))
                .unwrap();
            assert_eq!(reviews, 1);
            let review_links: i64 = sqlx::query("SELECT CAST(COUNT(*) AS BIGINT) FROM review_projects")
                .fetch_one(s.pool())
                .await
                .map(|r| sqlx::Row::get(&r, 0))
                .unwrap();
            assert_eq!(review_links, 0);

            // One task: singular.
            s.create_task(&new_task("only", Some(p1.id), None))
                .await
                .unwrap();
            assert_eq!(
                message(s.delete_project(p1.id, false).await.unwrap_err()).1,
                "project-1 still has 1 task (1 pending); delete them, move them, or call again with cascade: true"
            );
        }
    })
    .await;
}

async fn seed(s: &Store) {
    let g1 = s
        .create_goal(&NewGoal {
            title: "Fluent in Rust".into(),
            description: None,
            stage: GoalStage::Yearly,
            deadline: NaiveDate::from_ymd_opt(2026, 12, 31),
        })
        .await
        .unwrap();
    let g2 = s
        .create_goal(&new_goal("Ship v1", GoalStage::Quarter))
        .await
        .unwrap();
    let p1 = s
        .create_project(&new_project("Toolbelt", vec![g2.id, g1.id]))
        .await
        .unwrap();
    let p2 = s
        .create_project(&new_project("Garden", vec![]))
        .await
        .unwrap();
    // project-1: 5 tasks. task-1 done; task-2 overdue by 2 days; task-3 overdue by
    // 1 day; task-4 due tomorrow; task-5 done although overdue; project-2: 2 tasks.
    let seeds = [
        (
            "Write the parser",
            p1.id,
            Some(NOW - 5 * DAY),
            Priority::High,
        ),
        (
            "Write the tests",
            p1.id,
            Some(NOW - 2 * DAY),
            Priority::High,
        ),
        ("Fix the docs", p1.id, Some(NOW - DAY), Priority::Low),
        ("Release", p1.id, Some(NOW + DAY), Priority::Medium),
        ("Benchmark", p1.id, Some(NOW - 3 * DAY), Priority::Medium),
        ("Plant beans", p2.id, Some(NOW - DAY), Priority::Low),
        ("Water", p2.id, None, Priority::Medium),
    ];
    for (title, p, due, priority) in seeds {
        s.create_task(&NewTask {
            title: title.into(),
            description: None,
            project_id: Some(p),
            due_at: due,
            priority,
        })
        .await
        .unwrap();
    }
    s.complete_task(task(1), Some("done early")).await.unwrap();
    s.complete_task(task(5), None).await.unwrap();
}

#[tokio::test]
async fn stats_count_tasks_rate_overdue_and_goals() {
    bounded(async {
        for t in testing::both().await.unwrap() {
            let s = &t.store;
            seed(s).await;
            let (p, stats) = s.project_with_stats(project(1), NOW).await.unwrap();
            assert_eq!(p.name, "Toolbelt");
            assert_eq!((stats.pending, stats.completed, stats.total), (3, 2, 5));
            assert_eq!(stats.completion_rate, 0.4);
            assert_eq!(stats.overdue_count, 2);
            let overdue: Vec<(String, String, i64)> = stats
                .overdue
                .iter()
                .map(|o| (o.id.to_string(), o.title.clone(), o.due_at))
                .collect();
            assert_eq!(
                overdue,
                vec![
                    ("task-2".into(), "Write the tests".into(), NOW - 2 * DAY),
                    ("task-3".into(), "Fix the docs".into(), NOW - DAY),
                ]
            );
            let goals: Vec<(String, String, GoalStage, Option<String>)> = stats
                .goals
                .iter()
                .map(|g| {
                    (
                        g.id.to_string(),
                        g.title.clone(),
                        g.stage,
                        g.deadline.clone(),
                    )
                })
                .collect();
            assert_eq!(
                goals,
                vec![
                    (
                        "goal-1".into(),
                        "Fluent in Rust".into(),
                        GoalStage::Yearly,
                        Some("2026-12-31".into())
                    ),
                    ("goal-2".into(), "Ship v1".into(), GoalStage::Quarter, None),
                ]
            );

            let (_, stats2) = s.project_with_stats(project(2), NOW).await.unwrap();
            assert_eq!(
                (
                    stats2.pending,
                    stats2.completed,
                    stats2.total,
                    stats2.completion_rate
                ),
                (2, 0, 2, 0.0)
            );
            assert_eq!(stats2.overdue_count, 1);
            assert_eq!(stats2.goals, vec![]);

            // A project without tasks: rate 0.
            let empty = s
                .create_project(&new_project("Empty", vec![]))
                .await
                .unwrap();
            let (_, stats3) = s.project_with_stats(empty.id, NOW).await.unwrap();
            assert_eq!(
                (stats3.total, stats3.completion_rate, stats3.overdue_count),
                (0, 0.0, 0)
            );
        }
    })
    .await;
}

#[tokio::test]
async fn lists_filter_page_and_count() {
    bounded(async {
        for t in testing::both().await.unwrap() {
            let s = &t.store;
            seed(s).await;
            let ids = |items: &[toolbelt_store::Task]| -> Vec<String> {
                items.iter().map(|t| t.id.to_string()).collect()
            };
            let all = s.list_tasks(&TaskFilter::default()).await.unwrap();
            assert_eq!(all.total, 7);
            assert_eq!(
                ids(&all.items),
                [
                    "task-1", "task-2", "task-3", "task-4", "task-5", "task-6", "task-7"
                ]
            );
            let pending_p1 = s
                .list_tasks(&TaskFilter {
                    project_id: Some(project(1)),
                    status: Some(TaskStatus::Pending),
                    ..TaskFilter::default()
                })
                .await
                .unwrap();
            assert_eq!(
                (pending_p1.total, ids(&pending_p1.items)),
                (3, vec!["task-2".into(), "task-3".into(), "task-4".into()])
            );
            let high = s
                .list_tasks(&TaskFilter {
                    priority: Some(Priority::High),
                    ..TaskFilter::default()
                })
                .await
                .unwrap();
            assert_eq!(ids(&high.items), ["task-1", "task-2"]);
            // Inclusive bounds; a task without a due time matches neither.
            let window = s
                .list_tasks(&TaskFilter {
                    due_after: Some(NOW - 2 * DAY),
                    due_before: Some(NOW - DAY),
                    ..TaskFilter::default()
                })
                .await
                .unwrap();
            assert_eq!(ids(&window.items), ["task-2", "task-3", "task-6"]);
            let page = s
                .list_tasks(&TaskFilter {
                    limit: Some(2),
                    offset: 2,
                    ..TaskFilter::default()
                })
                .await
                .unwrap();
            assert_eq!(
                (page.total, ids(&page.items)),
                (7, vec!["task-3".into(), "task-4".into()])
            );
            let beyond = s
                .list_tasks(&TaskFilter {
                    offset: 100,
                    ..TaskFilter::default()
                })
                .await
                .unwrap();
            assert_eq!((beyond.total, beyond.items.len()), (7, 0));

            let projects = s.list_projects(&ProjectFilter::default()).await.unwrap();
            assert_eq!(projects.total, 2);
            assert_eq!(projects.items[0].goal_ids, vec![goal(1), goal(2)]);
            assert_eq!(projects.items[1].goal_ids, Vec::<RecordId>::new());
            s.update_project(
                project(2),
                &ProjectUpdate {
                    status: Some(ProjectStatus::Paused),
                    ..ProjectUpdate::default()
                },
            )
            .await
            .unwrap();
            let paused = s
                .list_projects(&ProjectFilter {
                    status: Some(ProjectStatus::Paused),
                    ..ProjectFilter::default()
                })
                .await
                .unwrap();
            assert_eq!(paused.total, 1);
            assert_eq!(paused.items[0].name, "Garden");

            let quarter = s
                .list_goals(&GoalFilter {
                    stage: Some(GoalStage::Quarter),
                    ..GoalFilter::default()
                })
                .await
                .unwrap();
            assert_eq!(quarter.total, 1);
            assert_eq!(quarter.items[0].title, "Ship v1");
            assert_eq!(quarter.items[0].project_ids, vec![project(1)]);
            let of_p2 = s
                .list_goals(&GoalFilter {
                    project_id: Some(project(2)),
                    ..GoalFilter::default()
                })
                .await
                .unwrap();
            assert_eq!((of_p2.total, of_p2.items.len()), (0, 0));
        }
    })
    .await;
}

#[tokio::test]
async fn completing_twice_keeps_the_first_completion() {
    bounded(async {
        for t in testing::both().await.unwrap() {
            let s = &t.store;
            let created = s
                .create_task(&NewTask {
                    title: "Write".into(),
                    description: Some("the report".into()),
                    project_id: None,
                    due_at: Some(NOW),
                    priority: Priority::High,
                })
                .await
                .unwrap();
            assert_eq!(created.status, TaskStatus::Pending);
            assert_eq!(created.completed_at, None);
            let first = s.complete_task(created.id, Some("sent it")).await.unwrap();
            assert!(!first.already_completed);
            assert_eq!(first.task.status, TaskStatus::Completed);
            assert_eq!(first.task.completion_note.as_deref(), Some("sent it"));
            let at = first.task.completed_at.unwrap();
            assert!(at >= created.created_at);
            let second = s.complete_task(created.id, Some("again")).await.unwrap();
            assert!(second.already_completed);
            assert_eq!(second.task, first.task);
            assert_eq!(s.task(created.id).await.unwrap(), first.task);
        }
    })
    .await;
}

#[tokio::test]
async fn concurrent_links_and_completions_happen_once() {
    bounded(async {
        for t in testing::both().await.unwrap() {
            let s = &t.store;
            let g = s
                .create_goal(&new_goal("G", GoalStage::Life))
                .await
                .unwrap();
            let p = s.create_project(&new_project("P", vec![])).await.unwrap();
            let task = s
                .create_task(&new_task("T", Some(p.id), None))
                .await
                .unwrap();
            let mut links = Vec::new();
            let mut completions = Vec::new();
            for i in 0..6 {
                let (s1, s2) = (s.clone(), s.clone());
                links.push(tokio::spawn(async move {
                    s1.link_goal_to_project(g.id, p.id).await
                }));
                let note = format!("note {i}");
                completions.push(tokio::spawn(async move {
                    s2.complete_task(task.id, Some(&note)).await
                }));
            }
            let mut fresh_links = 0;
            for h in links {
                if !h.await.unwrap().unwrap().already_linked {
                    fresh_links += 1;
                }
            }
            let mut first = Vec::new();
            for h in completions {
                let c = h.await.unwrap().unwrap();
                if !c.already_completed {
                    first.push(c.task);
                }
            }
            assert_eq!((fresh_links, first.len()), (1, 1));

            // Writers adding tasks to one project do not wait on each other's
            // checks, and none is lost.
            let mut creates = Vec::new();
            for i in 0..8 {
                let s = s.clone();
                creates.push(tokio::spawn(async move {
                    s.create_task(&new_task(&format!("c{i}"), Some(p.id), None))
                        .await
                }));
            }
            let mut ids = Vec::new();
            for h in creates {
                ids.push(h.await.unwrap().unwrap().id.number);
            }
            ids.sort_unstable();
            assert_eq!(ids, (2..=9).collect::<Vec<i64>>());
            assert_eq!(s.task(task.id).await.unwrap(), first[0]);
            assert_eq!(s.project(p.id).await.unwrap().goal_ids, vec![g.id]);
        }
    })
    .await;
}

#[tokio::test]
async fn overdue_tasks_are_all_counted_and_the_first_twenty_listed() {
    bounded(async {
        for t in testing::both().await.unwrap() {
            let s = &t.store;
            let p = s
                .create_project(&new_project("Late", vec![]))
                .await
                .unwrap();
            // 25 overdue tasks, due later as the id grows backwards.
            for i in 0..25 {
                s.create_task(&new_task(
                    &format!("t{i}"),
                    Some(p.id),
                    Some(NOW - (25 - i) * DAY),
                ))
                .await
                .unwrap();
            }
            let (_, stats) = s.project_with_stats(p.id, NOW).await.unwrap();
            assert_eq!((stats.overdue_count, stats.overdue.len()), (25, 20));
            assert_eq!(stats.overdue[0].id, task(1));
            assert_eq!(stats.overdue[19].id, task(20));
        }
    })
    .await;
}

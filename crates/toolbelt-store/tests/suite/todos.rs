//! Todo lists: stable ids, one transaction per change, persistence, independence
//! of workspaces and lists, concurrent writers.

use pretty_assertions::assert_eq;
use toolbelt_store::{
    Store, StoreError, StoredTodo, TodoChanges, TodoInput, TodoListKey, TodoPatch, read_todos,
    replace_todos, testing, update_todos,
};

fn input(id: Option<i64>, title: &str, status: &str) -> TodoInput {
    TodoInput {
        id,
        title: title.into(),
        status: status.into(),
    }
}

fn todo(id: i64, title: &str, status: &str) -> StoredTodo {
    StoredTodo {
        id,
        title: title.into(),
        status: status.into(),
    }
}

fn key(workspace: &str, name: &str) -> TodoListKey {
    TodoListKey::new(workspace, name).unwrap()
}

#[tokio::test]
async fn replacing_keeps_ids_by_id_then_by_title_and_never_reuses_one() {
    for t in testing::both().await.unwrap() {
        let s = &t.store;
        let k = key("/w", "default");
        assert_eq!(read_todos(s, &k).await.unwrap(), vec![]);

        let first = replace_todos(
            s,
            &k,
            &[
                input(None, "A", "Done"),
                input(None, "B", "In Progress"),
                input(None, "C", "Pending"),
            ],
        )
        .await
        .unwrap();
        assert_eq!(
            first,
            vec![
                todo(1, "A", "Done"),
                todo(2, "B", "In Progress"),
                todo(3, "C", "Pending")
            ]
        );

        // B renamed by id, C kept by title, A dropped, D new: 4 (1 is not reused).
        let second = replace_todos(
            s,
            &k,
            &[
                input(None, "C", "In Progress"),
                input(Some(2), "B2", "Done"),
                input(None, "D", "Pending"),
            ],
        )
        .await
        .unwrap();
        assert_eq!(
            second,
            vec![
                todo(3, "C", "In Progress"),
                todo(2, "B2", "Done"),
                todo(4, "D", "Pending")
            ]
        );
        assert_eq!(read_todos(s, &k).await.unwrap(), second);

        // A title given twice: the first takes the old id, the second a new one.
        let third = replace_todos(
            s,
            &k,
            &[input(None, "D", "Pending"), input(None, "D", "Done")],
        )
        .await
        .unwrap();
        assert_eq!(third, vec![todo(4, "D", "Pending"), todo(5, "D", "Done")]);

        // An explicit id wins over an earlier title match.
        let fourth = replace_todos(
            s,
            &k,
            &[input(None, "D", "Pending"), input(Some(4), "D", "Done")],
        )
        .await
        .unwrap();
        assert_eq!(fourth, vec![todo(5, "D", "Pending"), todo(4, "D", "Done")]);

        // Emptying the list, then adding: ids go on from where they were.
        assert_eq!(replace_todos(s, &k, &[]).await.unwrap(), vec![]);
        let fifth = replace_todos(s, &k, &[input(None, "D", "Pending")])
            .await
            .unwrap();
        assert_eq!(fifth, vec![todo(6, "D", "Pending")]);
    }
}

#[tokio::test]
async fn an_unknown_or_repeated_id_changes_nothing() {
    for t in testing::both().await.unwrap() {
        let s = &t.store;
        let k = key("/w", "default");
        let before = replace_todos(s, &k, &[input(None, "A", "Pending")])
            .await
            .unwrap();

        let err = replace_todos(
            s,
            &k,
            &[input(Some(1), "A", "Done"), input(Some(9), "X", "Pending")],
        )
        .await
        .unwrap_err();
        let StoreError::NotFound(message) = err else {
            panic!("{err:?}")
        };
        assert_eq!(
            message,
            "todo list \"default\" has no todo with id 9; its ids are 1; nothing was changed"
        );

        let err = replace_todos(
            s,
            &k,
            &[input(Some(1), "A", "Done"), input(Some(1), "A", "Done")],
        )
        .await
        .unwrap_err();
        assert!(matches!(err, StoreError::Invalid(_)), "{err:?}");
        assert_eq!(read_todos(s, &k).await.unwrap(), before);
    }
}

#[tokio::test]
async fn updates_add_change_and_remove_by_id() {
    for t in testing::both().await.unwrap() {
        let s = &t.store;
        let k = key("/w", "default");
        let added = update_todos(
            s,
            &k,
            &TodoChanges {
                add: vec![
                    ("A".into(), "Pending".into()),
                    ("B".into(), "Pending".into()),
                    ("C".into(), "Pending".into()),
                ],
                ..TodoChanges::default()
            },
        )
        .await
        .unwrap();
        assert_eq!(added.added, vec![1, 2, 3]);

        let applied = update_todos(
            s,
            &k,
            &TodoChanges {
                add: vec![("D".into(), "Pending".into())],
                update: vec![
                    TodoPatch {
                        id: 3,
                        title: None,
                        status: Some("In Progress".into()),
                    },
                    TodoPatch {
                        id: 1,
                        title: Some("A!".into()),
                        status: None,
                    },
                ],
                remove: vec![2],
            },
        )
        .await
        .unwrap();
        assert_eq!(applied.added, vec![4]);
        assert_eq!(applied.updated, vec![3, 1]);
        assert_eq!(applied.removed, vec![2]);
        assert_eq!(
            applied.todos,
            vec![
                todo(1, "A!", "Pending"),
                todo(3, "C", "In Progress"),
                todo(4, "D", "Pending")
            ]
        );

        // Unknown ids are all named, and nothing is applied.
        let err = update_todos(
            s,
            &k,
            &TodoChanges {
                add: vec![("E".into(), "Pending".into())],
                update: vec![TodoPatch {
                    id: 2,
                    title: None,
                    status: Some("Done".into()),
                }],
                remove: vec![7, 1],
            },
        )
        .await
        .unwrap_err();
        let StoreError::NotFound(message) = err else {
            panic!("{err:?}")
        };
        assert_eq!(
            message,
            "todo list \"default\" has no todo with ids 2, 7; its ids are 1, 3, 4; nothing was changed"
        );
        assert_eq!(read_todos(s, &k).await.unwrap(), applied.todos);

        // An empty request and contradictory ones are refused.
        for changes in [
            TodoChanges::default(),
            TodoChanges {
                update: vec![
                    TodoPatch {
                        id: 1,
                        title: None,
                        status: Some("Done".into()),
                    },
                    TodoPatch {
                        id: 1,
                        title: Some("x".into()),
                        status: None,
                    },
                ],
                ..TodoChanges::default()
            },
            TodoChanges {
                update: vec![TodoPatch {
                    id: 1,
                    title: None,
                    status: Some("Done".into()),
                }],
                remove: vec![1],
                ..TodoChanges::default()
            },
        ] {
            let err = update_todos(s, &k, &changes).await.unwrap_err();
            assert!(matches!(err, StoreError::Invalid(_)), "{err:?}");
        }

        // Removing the last todo, then adding: the removed id is not reused.
        let applied = update_todos(
            s,
            &k,
            &TodoChanges {
                add: vec![("E".into(), "Done".into())],
                remove: vec![4],
                ..TodoChanges::default()
            },
        )
        .await
        .unwrap();
        assert_eq!(
            applied.todos,
            vec![
                todo(1, "A!", "Pending"),
                todo(3, "C", "In Progress"),
                todo(5, "E", "Done")
            ]
        );
    }
}

#[tokio::test]
async fn lists_survive_a_restart_on_both_backends() {
    for t in testing::both().await.unwrap() {
        let k = key("/w", "default");
        replace_todos(
            &t.store,
            &k,
            &[input(None, "A", "Done"), input(None, "B", "Pending")],
        )
        .await
        .unwrap();
        update_todos(
            &t.store,
            &k,
            &TodoChanges {
                remove: vec![1],
                ..TodoChanges::default()
            },
        )
        .await
        .unwrap();
        t.store.close().await;

        let reopened = Store::open(&t.location).await.unwrap();
        assert_eq!(
            read_todos(&reopened, &k).await.unwrap(),
            vec![todo(2, "B", "Pending")]
        );
        let applied = update_todos(
            &reopened,
            &k,
            &TodoChanges {
                add: vec![("C".into(), "Pending".into())],
                ..TodoChanges::default()
            },
        )
        .await
        .unwrap();
        assert_eq!(applied.added, vec![3]);
    }
}

#[tokio::test]
async fn workspaces_and_named_lists_are_independent() {
    for t in testing::both().await.unwrap() {
        let s = &t.store;
        let lists = [
            key("/one", "default"),
            key("/one", "release"),
            key("/two", "default"),
        ];
        for (i, k) in lists.iter().enumerate() {
            let items: Vec<TodoInput> = (0..=i)
                .map(|n| input(None, &format!("{}-{n}", k.name()), "Pending"))
                .collect();
            replace_todos(s, k, &items).await.unwrap();
        }
        assert_eq!(
            read_todos(s, &lists[0]).await.unwrap(),
            vec![todo(1, "default-0", "Pending")]
        );
        assert_eq!(
            read_todos(s, &lists[1]).await.unwrap(),
            vec![
                todo(1, "release-0", "Pending"),
                todo(2, "release-1", "Pending")
            ]
        );
        assert_eq!(
            read_todos(s, &lists[2]).await.unwrap(),
            vec![
                todo(1, "default-0", "Pending"),
                todo(2, "default-1", "Pending"),
                todo(3, "default-2", "Pending")
            ]
        );
        assert_eq!(
            read_todos(s, &key("/three", "default")).await.unwrap(),
            vec![]
        );
    }
}

#[test]
fn list_names_have_1_to_64_characters() {
    assert!(TodoListKey::new("/w", "é".repeat(64)).is_ok());
    for bad in [String::new(), "x".repeat(65)] {
        let err = TodoListKey::new("/w", bad).unwrap_err();
        assert!(matches!(err, StoreError::Invalid(_)), "{err:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_additions_to_one_list_all_land_with_distinct_ids() {
    for t in testing::both().await.unwrap() {
        let k = key("/w", "default");
        let mut tasks = Vec::new();
        for n in 0..8 {
            let store = t.store.clone();
            let k = k.clone();
            tasks.push(tokio::spawn(async move {
                update_todos(
                    &store,
                    &k,
                    &TodoChanges {
                        add: vec![
                            (format!("task {n} a"), "Pending".into()),
                            (format!("task {n} b"), "Pending".into()),
                        ],
                        ..TodoChanges::default()
                    },
                )
                .await
                .unwrap()
                .added
            }));
        }
        let mut ids = Vec::new();
        for task in tasks {
            let added = tokio::time::timeout(std::time::Duration::from_secs(60), task)
                .await
                .unwrap()
                .unwrap();
            // Each request's todos are added together, in order.
            assert_eq!(added.len(), 2);
            assert_eq!(added[1], added[0] + 1);
            ids.extend(added);
        }
        ids.sort_unstable();
        assert_eq!(ids, (1..=16).collect::<Vec<i64>>());
        assert_eq!(read_todos(&t.store, &k).await.unwrap().len(), 16);
    }
}

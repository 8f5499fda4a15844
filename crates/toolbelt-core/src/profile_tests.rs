#![allow(clippy::unwrap_used)]

use pretty_assertions::assert_eq;

use super::{Profile, ProfileError};

fn table(name: &str) -> Vec<(String, String)> {
    Profile::by_name(name)
        .unwrap()
        .entries()
        .map(|(c, e)| (c.to_string(), e.to_string()))
        .collect()
}

fn owned(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|&(c, e)| (c.to_string(), e.to_string()))
        .collect()
}

#[test]
fn every_listed_name_is_a_profile_with_that_name() {
    for name in Profile::NAMES {
        assert_eq!(Profile::by_name(name).unwrap().name(), name);
    }
    assert_eq!(Profile::by_name("Claude"), None);
    assert_eq!(Profile::by_name(""), None);
}

#[test]
fn default_renames_nothing() {
    let p = Profile::default_profile();
    assert_eq!(Profile::by_name("default"), Some(p.clone()));
    assert_eq!(p.entries().len(), 0);
    assert_eq!(p.exposed("read_file"), "read_file");
    assert_eq!(p.canonical("read_file"), None);
}

#[test]
fn claude_table() {
    assert_eq!(
        table("claude"),
        owned(&[
            ("read_file", "Read"),
            ("write_file", "Write"),
            ("edit_file", "Edit"),
            ("multi_edit", "MultiEdit"),
            ("glob", "Glob"),
            ("grep", "Grep"),
            ("list_dir", "LS"),
            ("bash", "Bash"),
            ("bash_output", "BashOutput"),
            ("kill_shell", "KillShell"),
            ("set_todo_list", "TodoWrite"),
            ("task", "Task"),
            ("web_fetch", "WebFetch"),
            ("web_search", "WebSearch"),
        ])
    );
}

#[test]
fn kimi_table() {
    assert_eq!(
        table("kimi"),
        owned(&[
            ("read_file", "ReadFile"),
            ("write_file", "WriteFile"),
            ("edit_file", "StrReplaceFile"),
            ("glob", "Glob"),
            ("grep", "Grep"),
            ("bash", "Bash"),
            ("think", "Think"),
            ("set_todo_list", "SetTodoList"),
            ("web_search", "WebSearch"),
            ("web_fetch", "WebFetch"),
            ("task", "Task"),
        ])
    );
}

#[test]
fn seed001_and_seed002_name_the_shell_tool() {
    assert_eq!(table("seed001"), owned(&[("bash", "exec")]));
    assert_eq!(table("seed002"), owned(&[("bash", "run_command")]));
    let seed002 = Profile::by_name("seed002").unwrap();
    assert_eq!(seed002.canonical("run_command"), Some("bash"));
    assert_eq!(seed002.exposed("read_file"), "read_file");
}

#[test]
fn seed003_table() {
    assert_eq!(
        table("seed003"),
        owned(&[
            ("create_project", "createProject"),
            ("update_project", "updateProject"),
            ("delete_project", "deleteProject"),
            ("get_project", "getProject"),
            ("create_goal", "createGoal"),
            ("link_goal_to_project", "linkGoalToProject"),
            ("create_task", "createTask"),
            ("complete_task", "completeTask"),
            ("write_review", "writeReview"),
            ("analyze_patterns", "analyzePatterns"),
            ("list_projects", "listProjects"),
            ("list_goals", "listGoals"),
            ("list_tasks", "listTasks"),
            ("list_reviews", "listReviews"),
        ])
    );
}

#[test]
fn every_built_in_table_round_trips_and_has_unique_names() {
    for name in Profile::NAMES {
        let p = Profile::by_name(name).unwrap();
        let entries: Vec<(&str, &str)> = p.entries().collect();
        for &(canonical, exposed) in &entries {
            assert_eq!(p.exposed(canonical), exposed, "{name}: {canonical}");
            assert_eq!(p.canonical(exposed), Some(canonical), "{name}: {exposed}");
            assert_ne!(canonical, exposed, "{name} lists an identity pair");
        }
        // Rebuilding the table as a custom profile passes the duplicate checks.
        let rebuilt = Profile::custom(name, entries.iter().copied()).unwrap();
        assert_eq!(rebuilt, p);
    }
}

#[test]
fn unmapped_tools_keep_their_names() {
    let claude = Profile::by_name("claude").unwrap();
    for tool in [
        "think",
        "read_output",
        "mcp__github__create_issue",
        "createProject",
    ] {
        assert_eq!(claude.exposed(tool), tool);
        assert_eq!(claude.canonical(tool), None);
    }
    let kimi = Profile::by_name("kimi").unwrap();
    assert_eq!(kimi.exposed("list_dir"), "list_dir");
    assert_eq!(kimi.exposed("multi_edit"), "multi_edit");
    let seed = Profile::by_name("seed003").unwrap();
    assert_eq!(seed.exposed("read_file"), "read_file");
}

#[test]
fn canonical_lookup_is_case_sensitive() {
    let claude = Profile::by_name("claude").unwrap();
    assert_eq!(claude.canonical("Read"), Some("read_file"));
    assert_eq!(claude.canonical("read"), None);
    assert_eq!(claude.canonical("READ"), None);
}

#[test]
fn custom_profile_maps_both_ways_and_drops_identity_pairs() {
    let p = Profile::custom(
        "mine",
        [("read_file", "cat"), ("bash", "sh"), ("grep", "grep")],
    )
    .unwrap();
    assert_eq!(p.name(), "mine");
    assert_eq!(
        p.entries().collect::<Vec<_>>(),
        vec![("read_file", "cat"), ("bash", "sh")]
    );
    assert_eq!(p.exposed("bash"), "sh");
    assert_eq!(p.canonical("cat"), Some("read_file"));
    assert_eq!(p.exposed("grep"), "grep");
    assert_eq!(p.canonical("grep"), None);
}

#[test]
fn custom_profile_repeating_a_pair_is_fine() {
    let p = Profile::custom("mine", [("bash", "sh"), ("bash", "sh")]).unwrap();
    assert_eq!(p.entries().collect::<Vec<_>>(), vec![("bash", "sh")]);
}

#[test]
fn custom_profile_refuses_two_tools_under_one_name() {
    let err = Profile::custom("mine", [("read_file", "Read"), ("list_dir", "Read")]).unwrap_err();
    assert_eq!(
        err,
        ProfileError::DuplicateExposed {
            profile: "mine".into(),
            exposed: "Read".into(),
            first: "read_file".into(),
            second: "list_dir".into(),
        }
    );
    assert_eq!(
        err.to_string(),
        r#"profile "mine" exposes both "read_file" and "list_dir" as "Read"; give each tool its own name"#
    );
}

#[test]
fn custom_profile_refuses_an_identity_pair_colliding_with_a_rename() {
    let err = Profile::custom("mine", [("grep", "grep"), ("glob", "grep")]).unwrap_err();
    assert_eq!(
        err,
        ProfileError::DuplicateExposed {
            profile: "mine".into(),
            exposed: "grep".into(),
            first: "grep".into(),
            second: "glob".into(),
        }
    );
}

#[test]
fn custom_profile_refuses_renaming_a_tool_twice() {
    let err = Profile::custom("mine", [("bash", "sh"), ("bash", "Shell")]).unwrap_err();
    assert_eq!(
        err,
        ProfileError::DuplicateCanonical {
            profile: "mine".into(),
            canonical: "bash".into(),
            first: "sh".into(),
            second: "Shell".into(),
        }
    );
}

#[test]
fn custom_profile_refuses_empty_names() {
    assert_eq!(
        Profile::custom(" ", [("bash", "sh")]).unwrap_err(),
        ProfileError::EmptyName
    );
    assert_eq!(
        Profile::custom("mine", [("bash", "")]).unwrap_err(),
        ProfileError::EmptyToolName {
            profile: "mine".into(),
            canonical: "bash".into(),
            exposed: String::new(),
        }
    );
}

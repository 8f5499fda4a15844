#![allow(clippy::unwrap_used)]

use pretty_assertions::assert_eq;
use toolbelt_core::profile::{ParamCase, Profile};

use super::{ALIASES, NAMES, by_name};

fn table(name: &str) -> Vec<(String, String)> {
    by_name(name)
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
    for name in NAMES {
        assert_eq!(by_name(name).unwrap().name(), name);
    }
    assert_eq!(by_name("Claude"), None);
    assert_eq!(by_name(""), None);
}

#[test]
fn default_renames_nothing() {
    let p = Profile::default_profile();
    assert_eq!(by_name("default"), Some(p.clone()));
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
            ("ask_user", "AskUserQuestion"),
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
fn exec_and_run_command_name_the_shell_tool() {
    assert_eq!(table("exec"), owned(&[("bash", "exec")]));
    assert_eq!(table("run-command"), owned(&[("bash", "run_command")]));
    let seed002 = by_name("run-command").unwrap();
    assert_eq!(seed002.canonical("run_command"), Some("bash"));
    assert_eq!(seed002.exposed("read_file"), "read_file");
}

#[test]
fn camel_planner_table() {
    assert_eq!(
        table("camel-planner"),
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
    for name in NAMES {
        let p = by_name(name).unwrap();
        let entries: Vec<(&str, &str)> = p.entries().collect();
        for &(canonical, exposed) in &entries {
            assert_eq!(p.exposed(canonical), exposed, "{name}: {canonical}");
            assert_eq!(p.canonical(exposed), Some(canonical), "{name}: {exposed}");
            assert_ne!(canonical, exposed, "{name} lists an identity pair");
        }
        // Rebuilding the table as a custom profile passes the duplicate checks.
        let case = entries
            .first()
            .map_or(ParamCase::Canonical, |(c, _)| p.param_case(c));
        let rebuilt = Profile::custom(name, entries.iter().copied())
            .unwrap()
            .with_param_case(case);
        assert_eq!(rebuilt, p);
    }
}

#[test]
fn unmapped_tools_keep_their_names() {
    let claude = by_name("claude").unwrap();
    for tool in [
        "think",
        "read_output",
        "mcp__github__create_issue",
        "createProject",
    ] {
        assert_eq!(claude.exposed(tool), tool);
        assert_eq!(claude.canonical(tool), None);
    }
    let kimi = by_name("kimi").unwrap();
    assert_eq!(kimi.exposed("list_dir"), "list_dir");
    assert_eq!(kimi.exposed("multi_edit"), "multi_edit");
    let seed = by_name("camel-planner").unwrap();
    assert_eq!(seed.exposed("read_file"), "read_file");
}

#[test]
fn canonical_lookup_is_case_sensitive() {
    let claude = by_name("claude").unwrap();
    assert_eq!(claude.canonical("Read"), Some("read_file"));
    assert_eq!(claude.canonical("read"), None);
    assert_eq!(claude.canonical("READ"), None);
}

#[test]
fn only_camel_planner_writes_parameters_in_camel_case_and_only_for_its_tools() {
    let seed = by_name("camel-planner").unwrap();
    assert_eq!(seed.param_case("create_task"), ParamCase::Camel);
    assert_eq!(seed.param_case("read_file"), ParamCase::Canonical);
    for name in NAMES.iter().filter(|n| **n != "camel-planner") {
        let p = by_name(name).unwrap();
        assert!(
            p.entries()
                .all(|(c, _)| p.param_case(c) == ParamCase::Canonical),
            "{name}"
        );
    }
    let custom = Profile::custom("mine", [("read_file", "readFile")])
        .unwrap()
        .with_param_case(ParamCase::Camel);
    assert_eq!(custom.param_case("read_file"), ParamCase::Camel);
}

#[test]
fn the_older_names_are_aliases_of_the_descriptive_ones() {
    for (alias, name) in ALIASES {
        let profile = by_name(alias).unwrap();
        assert_eq!(profile.name(), name);
        assert_eq!(profile, by_name(name).unwrap());
    }
    assert!(by_name("seed004").is_none());
}

//! The built-in tools' public face: their schemas in every export format, their
//! descriptions, and their examples, which must be true.

use pretty_assertions::assert_eq;
use serde_json::Value;
use tempfile::TempDir;
use toolbelt_core::{Category, ErrorCode, SchemaValidator, ToolSpec};
use toolbelt_wire::export::{Format, check_gemini, check_strict, export};

use super::{builtins, call, error_message, success_data};

const BUILTIN_NAMES: [&str; 37] = [
    "analyze_patterns",
    "apply_patch",
    "ask_user",
    "bash",
    "bash_output",
    "complete_task",
    "create_goal",
    "create_project",
    "create_task",
    "cron",
    "delete_project",
    "edit_file",
    "get_project",
    "glob",
    "grep",
    "kill_shell",
    "link_goal_to_project",
    "list_dir",
    "list_goals",
    "list_projects",
    "list_reviews",
    "list_shells",
    "list_tasks",
    "message",
    "multi_edit",
    "read_file",
    "read_output",
    "set_todo_list",
    "skill",
    "think",
    "update_project",
    "update_todos",
    "web_fetch",
    "web_search",
    "write_file",
    "write_review",
    "write_stdin",
];

/// Every built-in, `message` and `cron` included (with one file channel, `local`).
fn definitions() -> Vec<ToolSpec> {
    let dir = TempDir::new().unwrap();
    let mut registry = builtins(dir.path());
    super::messaging::register(&mut registry, dir.path(), &[]);
    registry.definitions()
}

/// Claude Code cuts a description past 2048 characters ("… [truncated]"): no
/// built-in's passes it, under any profile, also when the lists in descriptions
/// are long (80 skills with long descriptions, 60 channels).
#[test]
fn no_description_passes_the_length_clients_keep() {
    let dir = TempDir::new().unwrap();
    for i in 0..80 {
        let skill = dir.path().join(format!(".toolbelt/skills/skill-{i:02}"));
        std::fs::create_dir_all(&skill).unwrap();
        let description = format!(
            "Use for task number {i}, {}",
            "does a long and careful thing. ".repeat(10)
        );
        std::fs::write(
            skill.join("SKILL.md"),
            format!("---\nname: skill-{i:02}\ndescription: {description}\n---\nDo it.\n"),
        )
        .unwrap();
    }
    let channels: Vec<(String, toolbelt_sched::ChannelConfig)> = (0..60)
        .map(|i| {
            let config = toolbelt_sched::ChannelConfig {
                kind: Some(toolbelt_sched::ChannelKind::File),
                ..toolbelt_sched::ChannelConfig::default()
            };
            (format!("team-channel-with-a-long-name-{i:02}"), config)
        })
        .collect();
    let extra: Vec<(&str, toolbelt_sched::ChannelConfig)> = channels
        .iter()
        .map(|(n, c)| (n.as_str(), c.clone()))
        .collect();
    for profile in toolbelt_tools::profiles::NAMES {
        let mut registry = builtins(dir.path());
        super::messaging::register(&mut registry, dir.path(), &extra);
        registry.set_profile(toolbelt_tools::profiles::by_name(profile).unwrap());
        let Value::Array(tools) = export(&registry.definitions(), Format::Mcp) else {
            panic!("the MCP export is a list");
        };
        assert_eq!(tools.len(), BUILTIN_NAMES.len());
        for tool in tools {
            let description = tool["description"].as_str().unwrap();
            let chars = description.chars().count();
            assert!(
                chars <= toolbelt_core::MAX_DESCRIPTION_CHARS,
                "{profile}: {} has a description of {chars} characters:\n{description}",
                tool["name"]
            );
        }
        // The lists were cut, and say how to reach the rest.
        let skill = registry
            .definitions()
            .into_iter()
            .find(|s| s.name == "skill")
            .unwrap();
        assert!(
            skill.description.contains("more: call skill with a name"),
            "{}",
            skill.description
        );
    }
}

#[test]
fn definitions_list_every_builtin_in_a_stable_order() {
    let names: Vec<String> = definitions().into_iter().map(|s| s.name).collect();
    assert_eq!(names, BUILTIN_NAMES);
}

#[test]
fn every_export_format_matches_its_snapshot() {
    let specs = definitions();
    for format in Format::ALL {
        let name = format!("builtins__{}", format.as_str().replace('-', "_"));
        match export(&specs, format) {
            Value::String(prompt) => {
                assert_eq!(format, Format::Text);
                insta::assert_snapshot!(name, prompt);
            }
            value => insta::assert_json_snapshot!(name, value),
        }
    }
}

#[test]
fn every_description_matches_its_snapshot() {
    for spec in definitions() {
        assert!(!spec.summary().is_empty(), "{} has no summary", spec.name);
        insta::assert_snapshot!(format!("description__{}", spec.name), spec.description);
    }
}

#[test]
fn openai_strict_export_is_strict_for_every_builtin() {
    let tools = export(&definitions(), Format::OpenAiStrict);
    let tools = tools.as_array().unwrap();
    assert_eq!(tools.len(), BUILTIN_NAMES.len());
    for tool in tools {
        let function = &tool["function"];
        let name = function["name"].as_str().unwrap();
        assert_eq!(
            function["strict"],
            Value::Bool(true),
            "{name} is not strict"
        );
        if let Err(why) = check_strict(&function["parameters"]) {
            panic!("{name}: {why}");
        }
    }
}

#[test]
fn gemini_export_is_accepted_for_every_builtin() {
    let exported = export(&definitions(), Format::Gemini);
    let declarations = exported["functionDeclarations"].as_array().unwrap();
    assert_eq!(declarations.len(), BUILTIN_NAMES.len());
    for declaration in declarations {
        let name = declaration["name"].as_str().unwrap();
        // Every built-in but list_shells takes arguments, so those declarations
        // have parameters; a tool without arguments declares none.
        let Some(parameters) = declaration.get("parameters") else {
            assert_eq!(name, "list_shells", "{name} has no parameters");
            continue;
        };
        if let Err(why) = check_gemini(parameters) {
            panic!("{name}: {why}");
        }
    }
}

#[test]
fn every_example_is_valid_against_the_schemas() {
    for spec in definitions() {
        assert!(!spec.examples.is_empty(), "{} has no example", spec.name);
        let input = SchemaValidator::new(&spec.input_schema).unwrap();
        let output_schema = spec
            .output_schema
            .as_ref()
            .unwrap_or_else(|| panic!("{} has no output schema", spec.name));
        let output = SchemaValidator::new(output_schema).unwrap();
        for example in &spec.examples {
            let wrong_input = input.violations(&example.input);
            assert!(
                wrong_input.is_empty(),
                "{}: input of {:?}: {wrong_input:?}",
                spec.name,
                example.description
            );
            let wrong_output = output.violations(&example.output);
            assert!(
                wrong_output.is_empty(),
                "{}: output of {:?}: {wrong_output:?}",
                spec.name,
                example.description
            );
        }
    }
}

#[tokio::test]
async fn examples_of_think_and_set_todo_list_are_what_the_tools_return() {
    for spec in definitions() {
        // read_output's example needs a spilled output, the file tools' examples need
        // files, bash's runs a test suite, the web tools' reach the web: their suites
        // check those on real files and servers on 127.0.0.1. The planner's examples
        // build on each other (goal-1, then project-1...): its suite runs them in order;
        // the reviews' examples need reviews: their suite checks them on a store holding them.
        // message and cron answer with fresh ids and times: their suite checks their shapes.
        // skill's example needs a skill on disk: its suite installs one and checks it.
        // ask_user's needs a person to answer: the MCP and terminal suites answer it.
        if spec.name == "read_output"
            || spec.name == "ask_user"
            || spec.category == Category::Agent
            || spec.category == Category::Message
            || spec.category == Category::Schedule
            || spec.category == Category::Review
            || spec.category == Category::Project
            || spec.category == Category::Goal
            || spec.category == Category::Task
            || spec.category == Category::Files
            || spec.category == Category::Search
            || spec.category == Category::Shell
            || spec.category == Category::Web
        {
            continue;
        }
        for example in &spec.examples {
            let dir = TempDir::new().unwrap();
            let registry = builtins(dir.path());
            let env = call(&registry, &spec.name, example.input.clone()).await;
            assert_eq!(
                success_data(&env),
                &example.output,
                "{}: {:?}",
                spec.name,
                example.description
            );
        }
    }
}

#[tokio::test]
async fn read_output_example_names_a_well_formed_id() {
    // The example's output id was never spilled in a fresh session: the id is
    // well formed (NOT_FOUND), not rejected as invalid (INVALID_PARAMS).
    let dir = TempDir::new().unwrap();
    let registry = builtins(dir.path());
    let spec = registry.get("read_output").unwrap().spec().clone();
    for example in &spec.examples {
        let env = call(&registry, "read_output", example.input.clone()).await;
        let message = error_message(&env, ErrorCode::NotFound);
        assert!(
            message.contains(example.input["output_id"].as_str().unwrap()),
            "{message}"
        );
    }
}

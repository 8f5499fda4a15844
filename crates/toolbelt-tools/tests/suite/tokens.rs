//! What the tool definitions cost a model: tokens (o200k_base, the encoding of
//! OpenAI's current models) of each tool's definition in the OpenAI export format,
//! and of each toolset. Prints the table (`--nocapture`) and fails when a
//! definition or the whole catalogue grows past its budget.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use toolbelt_core::{Session, ToolSpec};
use toolbelt_tools::TOOLSETS;
use toolbelt_wire::export::{Format, export};

/// Tokens one tool's definition may take.
const MAX_TOOL_TOKENS: usize = 1_150;
/// Tokens every built-in tool's definition may take together (17,500 before
/// `diagnostics` came, at 111 tokens).
const MAX_TOTAL_TOKENS: usize = 17_600;
/// Tokens `skill`'s definition may take with its listing full: 50 skills with long
/// descriptions, and more counted.
const MAX_FULL_SKILL_TOKENS: usize = 3_200;

/// Every built-in tool, `message` and `cron` with one channel, the checkpoint
/// tools and `diagnostics`.
fn catalogue(dir: &std::path::Path) -> Vec<ToolSpec> {
    let mut registry = super::registry_with(Session::new(dir));
    super::messaging::register(&mut registry, dir, &[]);
    let checkpoints = toolbelt_checkpoint::Checkpoints::new(
        toolbelt_checkpoint::Settings::default(),
        toolbelt_store::StoreHandle::lazy(toolbelt_store::Location::in_state_dir(dir)),
        dir,
        vec![dir.to_path_buf()],
    );
    toolbelt_tools::register_checkpoints(&mut registry, &checkpoints).unwrap();
    let checks = toolbelt_diagnostics::Engine::new(
        toolbelt_diagnostics::Config::default(),
        vec![dir.to_path_buf()],
    )
    .unwrap();
    toolbelt_tools::register_diagnostics(&mut registry, std::sync::Arc::new(checks)).unwrap();
    registry.definitions()
}

/// The definitions of `specs` as an OpenAI request's `tools` carries them.
fn openai_json(specs: &[ToolSpec]) -> String {
    export(specs, Format::OpenAi).to_string()
}

#[test]
fn tool_definitions_stay_within_their_token_budgets() {
    let dir = tempfile::tempdir().unwrap();
    let specs = catalogue(dir.path());
    let bpe = tiktoken_rs::o200k_base().unwrap();
    let tokens = |text: &str| bpe.encode_ordinary(text).len();

    let mut per_tool: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    for spec in &specs {
        let json = openai_json(std::slice::from_ref(spec));
        per_tool.insert(spec.name.clone(), (tokens(&json), json.len()));
    }
    let mut table = String::from("| tool | tokens | JSON bytes |\n|---|---:|---:|\n");
    let mut by_size: Vec<_> = per_tool.iter().collect();
    by_size.sort_by_key(|(name, (t, _))| (std::cmp::Reverse(*t), (*name).clone()));
    for (name, (t, bytes)) in &by_size {
        let _ = writeln!(table, "| {name} | {t} | {bytes} |");
    }
    table.push_str("\n| toolset | tools | tokens | JSON bytes |\n|---|---:|---:|---:|\n");
    for set in TOOLSETS {
        let members = set.members(TOOLSETS);
        let chosen: Vec<ToolSpec> = specs
            .iter()
            .filter(|s| members.contains(s.name.as_str()))
            .cloned()
            .collect();
        let json = openai_json(&chosen);
        let _ = writeln!(
            table,
            "| {} | {} | {} | {} |",
            set.name,
            chosen.len(),
            if chosen.is_empty() { 0 } else { tokens(&json) },
            if chosen.is_empty() { 0 } else { json.len() }
        );
    }
    let all = openai_json(&specs);
    let total = tokens(&all);
    let _ = writeln!(table, "| all | {} | {total} | {} |", specs.len(), all.len());
    println!("{table}");

    let over: Vec<_> = by_size
        .iter()
        .filter(|(_, (t, _))| *t > MAX_TOOL_TOKENS)
        .map(|(name, (t, _))| format!("{name}: {t}"))
        .collect();
    assert!(
        over.is_empty(),
        "definitions over {MAX_TOOL_TOKENS} tokens (cut what the model does not need): {over:?}\n{table}"
    );
    assert!(
        total <= MAX_TOTAL_TOKENS,
        "all definitions take {total} tokens, over {MAX_TOTAL_TOKENS}\n{table}"
    );
}

/// The listing of skills in `skill`'s description is bounded however many skills
/// there are and however long their descriptions.
#[test]
fn a_full_skill_listing_stays_within_its_budget() {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..80 {
        let folder = dir.path().join(format!(".toolbelt/skills/skill-{i:02}"));
        std::fs::create_dir_all(&folder).unwrap();
        let description = "Converts, fills and checks documents of one kind; ".repeat(10);
        std::fs::write(
            folder.join("SKILL.md"),
            format!(
                "---\nname: skill-{i:02}-with-a-longer-name\ndescription: {description}\n---\n"
            ),
        )
        .unwrap();
    }
    let specs = catalogue(dir.path());
    let skill = specs.iter().find(|s| s.name == "skill").unwrap();
    let bpe = tiktoken_rs::o200k_base().unwrap();
    let tokens = bpe
        .encode_ordinary(&openai_json(std::slice::from_ref(skill)))
        .len();
    println!("skill with 80 skills listed: {tokens} tokens");
    // As many as fit in the length clients keep; the others are counted.
    assert!(skill.description.chars().count() <= toolbelt_core::MAX_DESCRIPTION_CHARS);
    assert!(skill.description.contains(" more: call skill with a name"));
    assert!(
        tokens <= MAX_FULL_SKILL_TOKENS,
        "skill's definition takes {tokens} tokens with a full listing, over {MAX_FULL_SKILL_TOKENS}"
    );
}

/// Each tool of a category belongs to that category's set; every set names only
/// tools there are; every tool is in some set.
#[test]
fn the_toolsets_match_the_tools_categories() {
    let dir = tempfile::tempdir().unwrap();
    let specs = catalogue(dir.path());
    fn set_of_category(c: &'static str) -> &'static str {
        match c {
            "project" | "goal" | "task" | "review" => "planner",
            "planning" | "system" => "coding",
            "files" | "search" | "shell" | "web" | "schedule" | "message" | "agent" => c,
            other => panic!("a category without a toolset: {other}"),
        }
    }
    // The checkpoint tools work on files, and have a set of their own.
    const CHECKPOINT_TOOLS: [&str; 3] = ["checkpoint_list", "checkpoint_diff", "rewind"];
    for spec in &specs {
        let set = if CHECKPOINT_TOOLS.contains(&spec.name.as_str()) {
            "checkpoints"
        } else {
            set_of_category(spec.category.as_str())
        };
        let set = TOOLSETS.iter().find(|s| s.name == set).unwrap();
        assert!(
            set.members(TOOLSETS).contains(spec.name.as_str()),
            "{} ({}) is not in the {} set",
            spec.name,
            spec.category,
            set.name
        );
    }
    // The subagent tools are registered by toolbelt-agent, with a model configured.
    const SUBAGENT_TOOLS: [&str; 5] = ["task", "spawn", "task_output", "task_stop", "task_list"];
    for set in TOOLSETS {
        for tool in set.members(TOOLSETS) {
            assert!(
                specs.iter().any(|s| s.name == tool)
                    || (set.name == "agent" && SUBAGENT_TOOLS.contains(&tool)),
                "the {} set names {tool}, which is no tool",
                set.name
            );
        }
    }
    let coding: Vec<_> = TOOLSETS
        .iter()
        .find(|s| s.name == "coding")
        .unwrap()
        .members(TOOLSETS)
        .into_iter()
        .collect();
    assert_eq!(coding.len(), 19, "{coding:?}");
}

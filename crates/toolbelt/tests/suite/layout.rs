//! The layout the README describes holds: the crates depend on each other as its
//! Layout section says (read from `cargo metadata`), and the runtime and the
//! permission rules name no tool.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use tempfile::TempDir;

use super::cli::toolbelt;

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Our crates' normal (not dev, not build) dependencies on our crates, from
/// `cargo metadata`, with the `toolbelt-` prefix dropped.
fn dependencies_from_metadata() -> BTreeMap<String, BTreeSet<String>> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(workspace_root())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let metadata: Value = serde_json::from_slice(&out.stdout).unwrap();
    let ours: BTreeSet<&str> = metadata["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    let short = |name: &str| name.strip_prefix("toolbelt-").unwrap_or(name).to_string();
    metadata["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let deps = p["dependencies"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|d| d["kind"].is_null())
                .map(|d| d["name"].as_str().unwrap())
                .filter(|d| ours.contains(d))
                .map(short)
                .collect();
            (short(p["name"].as_str().unwrap()), deps)
        })
        .collect()
}

/// The README's dependency list: lines `` - `toolbelt-x`: a, b `` (or `nothing of
/// ours`) under "Dependencies between the crates".
fn dependencies_from_readme() -> BTreeMap<String, BTreeSet<String>> {
    let readme = std::fs::read_to_string(workspace_root().join("README.md")).unwrap();
    let start = readme
        .find("Dependencies between the crates")
        .expect("the README lists the dependencies between the crates");
    readme[start..]
        .lines()
        .skip_while(|l| !l.starts_with("- `"))
        .take_while(|l| l.starts_with("- `"))
        .map(|line| {
            let (name, deps) = line[3..].split_once("`:").unwrap();
            let deps = deps.split('(').next().unwrap().trim().trim_end_matches('.');
            let deps = if deps == "nothing of ours" {
                BTreeSet::new()
            } else {
                deps.split(',').map(|d| d.trim().to_string()).collect()
            };
            let name = name.strip_prefix("toolbelt-").unwrap_or(name).to_string();
            (name, deps)
        })
        .collect()
}

#[test]
fn the_readme_says_how_the_crates_depend_on_each_other() {
    assert_eq!(dependencies_from_readme(), dependencies_from_metadata());
}

/// Every tool name the binary serves: the built-in tools, those a channel adds
/// and the subagent tools.
fn tool_names() -> BTreeSet<String> {
    let root = TempDir::new().unwrap();
    std::fs::write(
        root.path().join("toolbelt.toml"),
        "[channels.local]\nkind = \"file\"\n",
    )
    .unwrap();
    let state = root.path().join(".state");
    let run = toolbelt(
        root.path(),
        &["--state-dir", state.to_str().unwrap(), "tools"],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let mut names: BTreeSet<String> = run
        .stdout
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_string)
        .collect();
    assert!(
        names.contains("read_file") && names.contains("cron"),
        "{names:?}"
    );
    names.extend(
        toolbelt_agent::tool_names::SUBAGENT_TOOLS
            .iter()
            .map(|n| n.to_string()),
    );
    names
}

/// The string literals of `src`, outside comments and test modules.
fn literals(src: &str) -> Vec<String> {
    let code = src
        .find("#[cfg(test)]\nmod ")
        .or_else(|| src.find("#[cfg(test)]\n#[path"))
        .map_or(src, |at| &src[..at]);
    let mut out = Vec::new();
    for line in code.lines() {
        if line.trim_start().starts_with("//") {
            continue;
        }
        let mut rest = line;
        while let Some(open) = rest.find('"') {
            let body = &rest[open + 1..];
            let mut end = None;
            let mut escaped = false;
            for (i, c) in body.char_indices() {
                match c {
                    '\\' if !escaped => escaped = true,
                    '"' if !escaped => {
                        end = Some(i);
                        break;
                    }
                    _ => escaped = false,
                }
            }
            let Some(end) = end else { break };
            out.push(body[..end].to_string());
            rest = &body[end + 1..];
        }
    }
    out
}

/// The words of a literal, without its format placeholders (`{message}` names a
/// variable).
fn words(text: &str) -> Vec<String> {
    let mut plain = String::new();
    let mut depth = 0usize;
    for c in text.chars() {
        match c {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            _ if depth == 0 => plain.push(c),
            _ => {}
        }
    }
    plain
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect()
}

#[test]
fn the_runtime_and_the_permission_rules_name_no_tool() {
    let names = tool_names();
    // Category names are categories, not tools (`task` is both).
    let categories: BTreeSet<&str> = toolbelt_core::Category::ALL
        .iter()
        .map(|c| c.as_str())
        .collect();
    let mut found = Vec::new();
    for krate in ["toolbelt-core", "toolbelt-policy"] {
        let src = workspace_root().join("crates").join(krate).join("src");
        let mut stack = vec![src];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    stack.push(path);
                    continue;
                }
                let name = path.file_name().unwrap().to_str().unwrap();
                if !name.ends_with(".rs") || name.ends_with("_tests.rs") {
                    continue;
                }
                let text = std::fs::read_to_string(&path).unwrap();
                for literal in literals(&text) {
                    for word in words(&literal) {
                        if names.contains(&word) && !categories.contains(literal.as_str()) {
                            found.push(format!("{}: {word} in {literal:?}", path.display()));
                        }
                    }
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "tool names in core or policy:\n{}",
        found.join("\n")
    );
}

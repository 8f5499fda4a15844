//! The layout docs/architecture.md describes holds: the crates depend on each other
//! as it says (read from `cargo metadata`), the runtime, the permission
//! rules and the agent name no tool, no source file is over 1,000 lines and no two
//! files of a crate import each other.

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

/// The dependency list of `docs/architecture.md`: lines `` - `toolbelt-x`: a, b ``
/// (or `nothing of ours`) under "Dependencies between the crates".
fn dependencies_from_readme() -> BTreeMap<String, BTreeSet<String>> {
    let readme = std::fs::read_to_string(workspace_root().join("docs/architecture.md")).unwrap();
    let start = readme
        .find("Dependencies between the crates")
        .expect("docs/architecture.md lists the dependencies between the crates");
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
fn the_runtime_the_permission_rules_and_the_agent_name_no_tool() {
    let names = tool_names();
    // Category names are categories, not tools (`task` is both).
    let categories: BTreeSet<&str> = toolbelt_core::Category::ALL
        .iter()
        .map(|c| c.as_str())
        .collect();
    let mut found = Vec::new();
    // The agent names a tool only where it gives it a role, in one file.
    for krate in ["toolbelt-core", "toolbelt-policy", "toolbelt-agent"] {
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
                if !name.ends_with(".rs")
                    || name.ends_with("_tests.rs")
                    || name == "tests.rs"
                    || path.ends_with("toolbelt-agent/src/tool_names.rs")
                    || path.components().any(|c| c.as_os_str() == "testing")
                {
                    continue;
                }
                let text = std::fs::read_to_string(&path).unwrap();
                // The agent's texts for the model are English, where `task`, `message`
                // or `think` are words too: there a name counts when it is the whole
                // literal or has the form only a name has (`read_file`).
                let prose = krate == "toolbelt-agent";
                // The shell's read-only programs and their options are programs, not
                // tools, though `grep` is both.
                let programs = path.ends_with("toolbelt-policy/src/read_only.rs");
                for literal in literals(&text) {
                    if programs
                        && (literal.starts_with('-') || SHELL_PROGRAMS.contains(&literal.as_str()))
                    {
                        continue;
                    }
                    for word in words(&literal) {
                        let named = !prose || word.contains('_') || literal == word;
                        if named && names.contains(&word) && !categories.contains(literal.as_str())
                        {
                            found.push(format!("{}: {word} in {literal:?}", path.display()));
                        }
                    }
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "tool names in core, policy or the agent (outside tool_names.rs):\n{}",
        found.join("\n")
    );
}

/// Programs the read-only command list names that share a name with a tool.
const SHELL_PROGRAMS: &[&str] = &["grep"];

// ------------------------------------------------------------------ rooms and cycles

/// No non-test source file may pass this many lines (its test module excluded).
const MAX_FILE_LINES: usize = 1_000;

/// Files that may stay over [`MAX_FILE_LINES`], each with the most lines it may have
/// and why. The list may only shrink: a file listed here that has come under the
/// limit fails the gate until it is taken off, and no file may grow past its ceiling.
const LONG_FILES: &[(&str, usize, &str)] = &[
    (
        "crates/toolbelt-fs/src/edit.rs",
        1_498,
        "one engine: exact, then folded, then indentation-free matching of one edit, each \
         pass falling through to the next over the same line tables",
    ),
    (
        "crates/toolbelt-fs/src/jail.rs",
        1_393,
        "the confinement boundary: every path operation beside the kernel-checked \
         resolution it relies on, read as one for review",
    ),
];

/// A Rust source file of a crate: its module path (`[]` for the crate root) and its
/// path relative to the crate's `src/`.
#[derive(Debug, Clone)]
struct SourceFile {
    module: Vec<String>,
    relative: String,
    text: String,
}

/// The non-test source files under `src`: `*_tests.rs` files and `tests.rs` are
/// test code; so is everything after a file's `#[cfg(test)] mod`.
fn source_files(src: &Path) -> Vec<SourceFile> {
    let mut files = Vec::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            let relative = path
                .strip_prefix(src)
                .unwrap()
                .to_str()
                .unwrap()
                .to_string();
            let Some(stem) = relative.strip_suffix(".rs") else {
                continue;
            };
            if stem.ends_with("_tests") || stem.ends_with("/tests") || stem == "tests" {
                continue;
            }
            let mut module: Vec<String> = stem.split('/').map(str::to_string).collect();
            if module.len() == 1 && (module[0] == "lib" || module[0] == "main") {
                module.clear();
            } else if module.last().is_some_and(|m| m == "mod") {
                module.pop();
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let text = without_tests(&text).to_string();
            files.push(SourceFile {
                module,
                relative,
                text,
            });
        }
    }
    files.sort_by(|a, b| a.relative.cmp(&b.relative));
    files
}

/// `src` up to its test module (`#[cfg(test)]` followed by `mod`, other attributes
/// such as `#[path = …]` or `#[allow(…)]` between them).
fn without_tests(src: &str) -> &str {
    let mut at = 0;
    while let Some(found) = src[at..].find("#[cfg(test)]") {
        let start = at + found;
        let mut rest = src[start + "#[cfg(test)]".len()..].trim_start();
        while let Some(attribute) = rest.strip_prefix("#[") {
            rest = attribute
                .split_once(']')
                .map_or("", |(_, r)| r.trim_start());
        }
        if rest.starts_with("mod ") {
            return &src[..start];
        }
        at = start + 1;
    }
    src
}

/// The source directories of the workspace's crates, by crate name.
fn crate_sources(root: &Path) -> Vec<(String, PathBuf)> {
    let mut crates: Vec<(String, PathBuf)> = std::fs::read_dir(root.join("crates"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("src").is_dir())
        .map(|p| {
            (
                p.file_name().unwrap().to_str().unwrap().to_string(),
                p.join("src"),
            )
        })
        .collect();
    crates.sort();
    crates
}

/// The files of the crates under `root` over [`MAX_FILE_LINES`] that `allowed` does
/// not let be, and the entries of `allowed` that are stale.
fn long_file_problems(root: &Path, allowed: &[(&str, usize, &str)]) -> Vec<String> {
    let mut problems = Vec::new();
    let mut seen = BTreeSet::new();
    for (krate, src) in crate_sources(root) {
        for file in source_files(&src) {
            let path = format!("crates/{krate}/src/{}", file.relative);
            let lines = file.text.lines().count();
            match allowed.iter().find(|(p, _, _)| *p == path) {
                Some((_, ceiling, _)) => {
                    seen.insert(path.clone());
                    if lines > *ceiling {
                        problems.push(format!(
                            "{path}: {lines} lines, past its ceiling of {ceiling}: split it along a seam"
                        ));
                    } else if lines <= MAX_FILE_LINES {
                        problems.push(format!(
                            "{path}: {lines} lines, now under {MAX_FILE_LINES}: take it off the list"
                        ));
                    }
                }
                None if lines > MAX_FILE_LINES => problems.push(format!(
                    "{path}: {lines} lines, over {MAX_FILE_LINES}: split it along the seam it shows"
                )),
                None => {}
            }
        }
    }
    for (path, _, _) in allowed {
        if !seen.contains(*path) {
            problems.push(format!(
                "{path}: listed but not found: take it off the list"
            ));
        }
    }
    problems
}

/// The paths a `use` tree names, its braces expanded (`a::{b, c::d}` -> `a::b`,
/// `a::c::d`), without `as` renames and without whitespace.
fn use_paths(tree: &str) -> Vec<String> {
    let tree: String = tree.split_whitespace().collect::<Vec<_>>().join(" ");
    let tree = tree.replace(" ::", "::").replace(":: ", "::");
    let mut out = Vec::new();
    expand_use(String::new(), &tree, &mut out);
    out
}

fn expand_use(prefix: String, tree: &str, out: &mut Vec<String>) {
    let tree = tree.trim();
    let Some(open) = tree.find('{') else {
        let path = tree.split(" as ").next().unwrap_or(tree).trim();
        out.push(format!("{prefix}{path}"));
        return;
    };
    let close = tree.rfind('}').filter(|&c| c > open).unwrap_or(tree.len());
    let head = &tree[..open];
    let body = &tree[open + 1..close];
    let (mut depth, mut start) = (0usize, 0usize);
    for (i, c) in body.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                expand_use(format!("{prefix}{head}"), &body[start..i], out);
                start = i + 1;
            }
            _ => {}
        }
    }
    if !body[start..].trim().is_empty() {
        expand_use(format!("{prefix}{head}"), &body[start..], out);
    }
}

/// The module paths `file` refers to: its `use` declarations and the `crate::` and
/// `super::` paths in its code, outside comments.
fn referenced_paths(file: &SourceFile) -> Vec<Vec<String>> {
    let code: String = file
        .text
        .lines()
        .map(|l| l.split_once("//").map_or(l, |(code, _)| code))
        .collect::<Vec<_>>()
        .join("\n");
    let mut paths: Vec<String> = Vec::new();
    // `use` declarations begin a line (after a visibility) and end at `;`.
    let mut offset = 0;
    for line in code.split_inclusive('\n') {
        let start = offset;
        offset += line.len();
        let trimmed = line.trim_start();
        let declaration = trimmed
            .strip_prefix("pub ")
            .or_else(|| {
                trimmed
                    .strip_prefix("pub(")
                    .and_then(|r| r.split_once(") ").map(|(_, r)| r))
            })
            .unwrap_or(trimmed);
        if !declaration.starts_with("use ") {
            continue;
        }
        let from = start + (line.len() - declaration.len()) + 4;
        if let Some(end) = code[from..].find(';') {
            paths.extend(use_paths(&code[from..from + end]));
        }
    }
    for head in ["crate::", "super::"] {
        let mut rest = code.as_str();
        while let Some(at) = rest.find(head) {
            let before = rest[..at].chars().last();
            let tail = &rest[at..];
            rest = &rest[at + head.len()..];
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            let end = tail
                .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                .unwrap_or(tail.len());
            paths.push(tail[..end].to_string());
        }
    }
    paths
        .into_iter()
        .filter_map(|path| {
            let mut segments = path.split("::").filter(|s| !s.is_empty());
            let mut module = match segments.next()? {
                "crate" => Vec::new(),
                "self" => file.module.clone(),
                "super" => parent(&file.module),
                _ => return None,
            };
            for segment in segments {
                match segment {
                    "super" => module = parent(&module),
                    "self" => {}
                    s => module.push(s.to_string()),
                }
            }
            Some(module)
        })
        .collect()
}

/// The module that holds `module` (a `foo.rs` or `foo/mod.rs` is `foo`; its parent
/// is where `mod foo;` is declared).
fn parent(module: &[String]) -> Vec<String> {
    module[..module.len().saturating_sub(1)].to_vec()
}

/// The cycles among the files of one crate: groups of files that reach each other
/// through their imports. A file's references to the modules that hold it (its
/// parent, the crate root) are not counted: a child sees its parent by nature.
fn import_cycles(src: &Path) -> Vec<Vec<String>> {
    let files = source_files(src);
    let index: BTreeMap<Vec<String>, usize> = files
        .iter()
        .enumerate()
        .map(|(i, f)| (f.module.clone(), i))
        .collect();
    let edges: Vec<BTreeSet<usize>> = files
        .iter()
        .map(|file| {
            referenced_paths(file)
                .into_iter()
                .filter_map(|mut path| {
                    // The longest prefix that is a file of its own.
                    loop {
                        if let Some(&i) = index.get(&path) {
                            return Some(i);
                        }
                        path.pop()?;
                    }
                })
                .filter(|&target| {
                    let t = &files[target].module;
                    !file.module.starts_with(t)
                })
                .collect()
        })
        .collect();
    strongly_connected(&edges)
        .into_iter()
        .filter(|group| group.len() > 1)
        .map(|group| {
            let mut names: Vec<String> = group.iter().map(|&i| files[i].relative.clone()).collect();
            names.sort();
            names
        })
        .collect()
}

/// Tarjan's strongly connected components of a graph given as adjacency sets.
fn strongly_connected(edges: &[BTreeSet<usize>]) -> Vec<Vec<usize>> {
    struct State<'a> {
        edges: &'a [BTreeSet<usize>],
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        stack: Vec<usize>,
        on_stack: Vec<bool>,
        next: usize,
        groups: Vec<Vec<usize>>,
    }
    fn visit(s: &mut State<'_>, v: usize) {
        s.index[v] = Some(s.next);
        s.low[v] = s.next;
        s.next += 1;
        s.stack.push(v);
        s.on_stack[v] = true;
        for &w in s.edges[v].iter() {
            match s.index[w] {
                None => {
                    visit(s, w);
                    s.low[v] = s.low[v].min(s.low[w]);
                }
                Some(i) if s.on_stack[w] => s.low[v] = s.low[v].min(i),
                Some(_) => {}
            }
        }
        if Some(s.low[v]) == s.index[v] {
            let mut group = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack[w] = false;
                group.push(w);
                if w == v {
                    break;
                }
            }
            s.groups.push(group);
        }
    }
    let n = edges.len();
    let mut s = State {
        edges,
        index: vec![None; n],
        low: vec![0; n],
        stack: Vec::new(),
        on_stack: vec![false; n],
        next: 0,
        groups: Vec::new(),
    };
    for v in 0..n {
        if s.index[v].is_none() {
            visit(&mut s, v);
        }
    }
    s.groups
}

#[test]
fn no_source_file_is_over_a_thousand_lines() {
    let problems = long_file_problems(&workspace_root(), LONG_FILES);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn no_crate_has_an_import_cycle_between_its_files() {
    let mut problems = Vec::new();
    for (krate, src) in crate_sources(&workspace_root()) {
        for group in import_cycles(&src) {
            problems.push(format!("{krate}: {}", group.join(" <-> ")));
        }
    }
    assert!(
        problems.is_empty(),
        "files that import each other (move what they share into a third file, or make one the other's child):\n{}",
        problems.join("\n")
    );
}

/// A crate of `files` (path under `src/`, text) in a temporary workspace.
fn fixture_workspace(files: &[(&str, &str)]) -> TempDir {
    let root = TempDir::new().unwrap();
    for (path, text) in files {
        let path = root.path().join("crates/demo/src").join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    root
}

/// A cause turned into text and passed on (counted), one that leaves in a log line,
/// and one in the test module.
const CAUSE_AS_TEXT: &str = r#"fn f() -> Result<(), SomeError> {
    g().map_err(|e| SomeError::X(e.to_string()))?;
    if let Err(e) = g() {
        tracing::warn!("g failed: {e}");
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    fn t() -> String {
        g().map_err(|e| e.to_string()).unwrap_err()
    }
}
"#;

/// A cause kept as text, allowed.
const KEPT_CAUSE: &str = r#"fn k(r: Result<(), E>) -> Row {
    match r {
        Ok(()) => Row::done(),
        Err(e) if e.is_final() => Row::failed(format!("stored: {e}")),
        Err(_) => Row::retry(),
    }
}
"#;

#[test]
fn the_gates_catch_a_long_file_a_grown_one_a_stale_entry_a_cycle_and_a_cause_as_text() {
    let long = "fn f() {}\n".repeat(MAX_FILE_LINES + 1);
    let long_with_tests = format!(
        "{}#[cfg(test)]\nmod tests {{\n{}}}\n",
        "fn f() {}\n".repeat(MAX_FILE_LINES - 5),
        "fn t() {}\n".repeat(50)
    );
    let ws = fixture_workspace(&[
        ("lib.rs", "mod a;\nmod b;\nmod c;\nmod d;\nmod e;\n"),
        ("a.rs", &long),
        ("b.rs", &long),
        ("c.rs", "fn c() {}\n"),
        ("d.rs", &long_with_tests),
        ("big_tests.rs", &long),
        // e -> f -> e through a `use` group and an inline path: a cycle.
        ("e/mod.rs", "mod f;\nuse crate::g::{x, y::z};\n"),
        ("g.rs", "fn g() { crate::e::h(); }\n"),
        // A child using its parent is not a cycle.
        ("e/f.rs", "use super::h;\n"),
        ("cause.rs", CAUSE_AS_TEXT),
        ("kept.rs", KEPT_CAUSE),
        // Test support is not looked at.
        ("testing/mod.rs", CAUSE_AS_TEXT),
    ]);
    let allowed = [
        (
            "crates/demo/src/b.rs",
            MAX_FILE_LINES,
            "grew past its ceiling",
        ),
        ("crates/demo/src/c.rs", 2_000, "now short"),
        ("crates/demo/src/gone.rs", 2_000, "deleted"),
    ];
    let problems = long_file_problems(ws.path(), &allowed).join("\n");
    assert!(
        problems.contains("crates/demo/src/a.rs: 1001 lines, over 1000"),
        "{problems}"
    );
    assert!(
        problems.contains("b.rs: 1001 lines, past its ceiling"),
        "{problems}"
    );
    assert!(problems.contains("c.rs: 1 lines, now under"), "{problems}");
    assert!(
        problems.contains("gone.rs: listed but not found"),
        "{problems}"
    );
    assert!(
        !problems.contains("d.rs") && !problems.contains("big_tests"),
        "{problems}"
    );
    assert_eq!(problems.lines().count(), 4, "{problems}");

    let cycles = import_cycles(&ws.path().join("crates/demo/src"));
    assert_eq!(
        cycles,
        vec![vec!["e/mod.rs".to_string(), "g.rs".to_string()]]
    );

    let kept = [
        ("crates/demo/src/kept.rs", 1, "stored"),
        ("crates/demo/src/gone.rs", 1, "deleted"),
    ];
    let problems = string_cause_problems(ws.path(), &kept).join("\n");
    assert!(
        problems.contains(
            "crates/demo/src/cause.rs:2: a cause turned into text \
             (map_err(|e| SomeError::X(e.to_string()))); 0 allowed in this file"
        ),
        "{problems}"
    );
    assert!(
        problems.contains("gone.rs: 0 causes turned into text, 1 allowed"),
        "{problems}"
    );
    assert_eq!(problems.lines().count(), 2, "{problems}");
    // The log line is an edge: found, not counted.
    let causes = string_causes(ws.path());
    let edge = causes.iter().find(|c| c.line == 3).map(|c| c.edge);
    assert_eq!(edge, Some(Some("a log line")), "{causes:?}");
    // With one more place than allowed, the file fails.
    let problems = string_cause_problems(ws.path(), &[("crates/demo/src/kept.rs", 0, "")]);
    assert!(
        problems
            .iter()
            .any(|p| p.starts_with("crates/demo/src/kept.rs:4: ")),
        "{problems:?}"
    );
}

/// The references from one toolset folder of `src` into another: `(file, folder)`.
fn cross_toolset_imports(src: &Path) -> Vec<String> {
    let folders: BTreeSet<String> = std::fs::read_dir(src)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .map(|p| p.file_name().unwrap().to_str().unwrap().to_string())
        .collect();
    let mut found = Vec::new();
    for file in source_files(src) {
        let Some(own) = file.module.first().filter(|m| folders.contains(*m)) else {
            continue;
        };
        let reached: BTreeSet<&String> = referenced_paths(&file)
            .iter()
            .filter_map(|path| path.first())
            .filter(|m| *m != own)
            .filter_map(|m| folders.get(m))
            .collect();
        for folder in reached {
            found.push(format!("{} uses {folder}/", file.relative));
        }
    }
    found
}

#[test]
fn no_toolset_imports_another() {
    let src = workspace_root().join("crates/toolbelt-tools/src");
    let found = cross_toolset_imports(&src);
    assert!(
        found.is_empty(),
        "a toolset reaches into another (move what they share to a module no toolset owns, such as workspace.rs):\n{}",
        found.join("\n")
    );
    // The check itself: a fixture that does.
    let ws = fixture_workspace(&[
        ("lib.rs", "mod files;\nmod search;\nmod workspace;\n"),
        ("files/mod.rs", "pub(crate) fn jail() {}\n"),
        ("search/mod.rs", "mod grep;\n"),
        (
            "search/grep.rs",
            "use crate::workspace::x;\nfn f() { crate::files::jail(); }\n",
        ),
        ("workspace.rs", "pub(crate) fn x() {}\n"),
    ]);
    assert_eq!(
        cross_toolset_imports(&ws.path().join("crates/demo/src")),
        vec!["search/grep.rs uses files/".to_string()]
    );
}
// ------------------------------------------------------------------ causes as text

/// Files that may still turn a cause into text away from an edge (see
/// [`STRING_CAUSE_EDGES`]), each with how many places it may have and why they
/// must stay. The rule (CONTRIBUTING.md, "Errors"): a cause stays typed, as a
/// `#[source]`, and the chain is joined once, where it leaves the program. The list
/// may only shrink: a file with fewer places than its entry allows fails the gate
/// until the entry is lowered, and together the entries allow at most
/// [`MAX_KEPT_STRING_CAUSES`].
const KEPT_STRING_CAUSES: &[(&str, usize, &str)] = &[
    (
        "crates/toolbelt-agent/src/provider/http.rs",
        1,
        "an event stream that does not parse: the parser's error quotes the stream, in \
         which the API key is replaced (should a server have echoed it) before the \
         failure leaves the client",
    ),
    (
        "crates/toolbelt-agent/src/subagent/mod.rs",
        1,
        "a subagent's result, kept as text in its snapshot: the store records it, and \
         later processes list it from there",
    ),
    (
        "crates/toolbelt-core/src/front_matter.rs",
        1,
        "the YAML parser's message, rewritten: its location counts from the front \
         matter, so it is cut off and the file's line kept beside it",
    ),
    (
        "crates/toolbelt-net/src/search/duckduckgo.rs",
        1,
        "scraper's selector error borrows the selector and is not `Send`: it cannot \
         be kept",
    ),
    (
        "crates/toolbelt-sched/src/channel/email.rs",
        1,
        "a send's failure is stored in the outbox row, for a later process to show \
         (`SendError` is a plain value)",
    ),
    (
        "crates/toolbelt-sched/src/channel/file.rs",
        1,
        "a send's failure is stored in the outbox row, for a later process to show \
         (`SendError` is a plain value)",
    ),
    (
        "crates/toolbelt-upstream/src/connection.rs",
        1,
        "a server that failed to start keeps why in its state, with its stderr added: \
         it is said again to every call until the server is started again, and shown \
         in its status",
    ),
];

/// The most places [`KEPT_STRING_CAUSES`] may allow, over the whole workspace.
const MAX_KEPT_STRING_CAUSES: usize = 10;

/// Where a cause's text leaves the program: a place whose code holds one of these
/// marks is an edge, where the chain is joined once (CONTRIBUTING.md, "Errors"),
/// and is not counted. `(mark, where the text goes)`.
const STRING_CAUSE_EDGES: &[(&str, &str)] = &[
    ("tracing::", "a log line"),
    ("eprintln!", "the terminal"),
    ("screen.say(", "the interactive agent's screen"),
    ("println!", "the terminal"),
    ("ToolError::new", "the tool error the model reads"),
    ("Envelope::error", "the envelope the model or client reads"),
    (
        "Violation::new",
        "a violation of a tool's arguments, for the model",
    ),
    ("McpError::", "the MCP client's error"),
    ("error_line(", "a JSON-RPC error line for the client"),
    ("into_response()", "an HTTP response, for the client"),
    (
        "Outcome::Error",
        "the closing words of a run, for the person or the parent model",
    ),
    (
        "Approval::Decline",
        "the reason a declined approval gives the model",
    ),
    (".notice(", "a notice for the person watching a run"),
    (
        "note_once(",
        "a one-line note in the diagnostics the model reads after a write",
    ),
    (
        "problems.push(",
        "a problem list rendered for the person or the model (doctor's, the sandbox \
         probe's, the skills', the agent types', the resources')",
    ),
    (
        "problems: vec![",
        "the sandbox probe's problem list, for the person",
    ),
    (
        "error_samples",
        "the sample errors a search shows the model",
    ),
    (
        "MAX_REPORTED_ERRORS",
        "the sample of a walk's errors that a search shows the model",
    ),
    (
        "CheckpointNote {",
        "a checkpoint's note, put in the call's envelope",
    ),
];

/// A place where an error value, bound by a closure's parameter or by a pattern, is
/// turned into text.
#[derive(Debug)]
struct StringCause {
    /// `crates/<crate>/src/<file>`.
    path: String,
    line: usize,
    /// The start of the place's code, on one line.
    excerpt: String,
    /// Where the text goes, when that is an edge.
    edge: Option<&'static str>,
}

/// The two views of a source file's bytes, at its offsets: `text` without its
/// comments, and `code` without its comments nor the insides of its string and
/// character literals (its brackets then are the code's).
struct Views {
    text: Vec<u8>,
    code: Vec<u8>,
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

fn views(src: &str) -> Views {
    let b = src.as_bytes();
    let mut text = b.to_vec();
    let mut code = b.to_vec();
    let blank = |v: &mut [u8], from: usize, to: usize| {
        for c in &mut v[from..to.min(b.len())] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    };
    // The end of a quoted literal whose opening quote is at `at` (after it).
    let quoted_end = |at: usize| {
        let mut j = at + 1;
        while j < b.len() && b[j] != b'"' {
            j += if b[j] == b'\\' { 2 } else { 1 };
        }
        j.min(b.len())
    };
    let mut i = 0;
    while i < b.len() {
        let after_ident = i > 0 && is_ident(b[i - 1]);
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                let end = b[i..]
                    .iter()
                    .position(|&c| c == b'\n')
                    .map_or(b.len(), |p| i + p);
                blank(&mut text, i, end);
                blank(&mut code, i, end);
                i = end;
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let (mut depth, mut j) = (0usize, i);
                while j < b.len() {
                    if b[j..].starts_with(b"/*") {
                        depth += 1;
                        j += 2;
                    } else if b[j..].starts_with(b"*/") {
                        depth -= 1;
                        j += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        j += 1;
                    }
                }
                blank(&mut text, i, j);
                blank(&mut code, i, j);
                i = j;
            }
            b'r' | b'b' if !after_ident => {
                // A raw string: `r"…"`, `r#"…"#`, `br"…"`.
                let mut j = i + usize::from(b[i] == b'b' && b.get(i + 1) == Some(&b'r')) + 1;
                if b[i] == b'b' && b.get(i + 1) != Some(&b'r') {
                    i += 1;
                    continue;
                }
                let hashes = b[j..].iter().take_while(|&&c| c == b'#').count();
                j += hashes;
                if b.get(j) != Some(&b'"') {
                    i += 1;
                    continue;
                }
                let close: Vec<u8> = std::iter::once(b'"')
                    .chain(std::iter::repeat_n(b'#', hashes))
                    .collect();
                let end = (j + 1..b.len())
                    .find(|&k| b[k..].starts_with(&close))
                    .unwrap_or(b.len());
                blank(&mut code, j + 1, end);
                i = end + close.len();
            }
            b'"' => {
                let end = quoted_end(i);
                blank(&mut code, i + 1, end);
                i = end + 1;
            }
            b'\'' => {
                // A character literal (`'x'`, `'\n'`, `'\u{7f}'`), or a lifetime.
                if b.get(i + 1) == Some(&b'\\') {
                    let end = (i + 2..b.len()).find(|&k| b[k] == b'\'').unwrap_or(b.len());
                    blank(&mut code, i + 1, end);
                    i = end + 1;
                } else {
                    let width = src[i + 1..].chars().next().map_or(1, char::len_utf8);
                    if b.get(i + 1 + width) == Some(&b'\'') {
                        blank(&mut code, i + 1, i + 1 + width);
                        i += width + 2;
                    } else {
                        i += 1;
                    }
                }
            }
            _ => i += 1,
        }
    }
    Views { text, code }
}

/// The offset of the bracket closing the one open before `from`, or of the first
/// `,` outside brackets when `at_comma`: the end of an argument or a block.
fn close_of(code: &[u8], from: usize, at_comma: bool) -> usize {
    let mut depth = 0usize;
    for (j, &c) in code.iter().enumerate().skip(from) {
        match c {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' if depth == 0 => return j,
            b')' | b']' | b'}' => depth -= 1,
            b',' if depth == 0 && at_comma => return j,
            _ => {}
        }
    }
    code.len()
}

/// Where the word `word` (not part of a longer name) is in `code`.
fn words_at<'a>(code: &'a [u8], word: &'a str) -> impl Iterator<Item = usize> + 'a {
    let w = word.as_bytes();
    (0..code.len().saturating_sub(w.len() - 1)).filter(move |&i| {
        code[i..].starts_with(w)
            && (i == 0 || !is_ident(code[i - 1]))
            && code.get(i + w.len()).is_none_or(|&c| !is_ident(c))
    })
}

fn skip_space(code: &[u8], mut i: usize) -> usize {
    while i < code.len() && code[i].is_ascii_whitespace() {
        i += 1;
    }
    i
}

/// The name at `i` and the offset after it.
fn name_at(code: &[u8], i: usize) -> Option<(String, usize)> {
    let end = (i..code.len())
        .find(|&j| !is_ident(code[j]))
        .unwrap_or(code.len());
    (end > i && !code[i].is_ascii_digit())
        .then(|| (String::from_utf8_lossy(&code[i..end]).into_owned(), end))
}

/// The places of `src` that bind an error value (`map_err(|e| …)`, `or_else`,
/// `unwrap_or_else`, `map_or_else`; an `Err(e) => …` arm, guarded or nested;
/// `if let Err(e) = … { … }`): the name bound, the offset of the place and the
/// span of its body.
fn error_bindings(code: &[u8]) -> Vec<(String, usize, std::ops::Range<usize>)> {
    let mut out = Vec::new();
    for method in ["map_err", "or_else", "unwrap_or_else", "map_or_else"] {
        for at in words_at(code, method) {
            let mut i = skip_space(code, at + method.len());
            if code.get(i) != Some(&b'(') {
                continue;
            }
            i = skip_space(code, i + 1);
            if code.get(i) != Some(&b'|') {
                continue;
            }
            let Some((name, mut i)) = name_at(code, skip_space(code, i + 1)) else {
                continue;
            };
            i = skip_space(code, i);
            if code.get(i) == Some(&b':') {
                i = (i..code.len())
                    .find(|&j| code[j] == b'|')
                    .unwrap_or(code.len());
            }
            if code.get(i) != Some(&b'|') || name == "_" {
                continue;
            }
            out.push((name, at, i + 1..close_of(code, i + 1, true)));
        }
    }
    for at in words_at(code, "Err") {
        let mut i = skip_space(code, at + 3);
        if code.get(i) != Some(&b'(') {
            continue;
        }
        let Some((name, end)) = name_at(code, skip_space(code, i + 1)) else {
            continue;
        };
        i = skip_space(code, end);
        if code.get(i) != Some(&b')') || name == "_" {
            continue;
        }
        // `Some(Err(e))`: the patterns around it close.
        while code.get(i) == Some(&b')') {
            i = skip_space(code, i + 1);
        }
        let before = String::from_utf8_lossy(&code[at.saturating_sub(12)..at]);
        let before = before.trim_end();
        if code[i..].starts_with(b"=>") || code[i..].starts_with(b"if ") {
            let Some(arrow) =
                (i..code.len().saturating_sub(1)).find(|&j| code[j..].starts_with(b"=>"))
            else {
                continue;
            };
            let start = skip_space(code, arrow + 2);
            let end = if code.get(start) == Some(&b'{') {
                close_of(code, start + 1, false) + 1
            } else {
                close_of(code, start, true)
            };
            out.push((name, at, start..end));
        } else if code.get(i) == Some(&b'=')
            && (before.ends_with("if let") || before.ends_with("while let"))
        {
            let mut depth = 0usize;
            let open = (i..code.len()).find(|&j| match code[j] {
                b'(' | b'[' => {
                    depth += 1;
                    false
                }
                b')' | b']' => {
                    depth = depth.saturating_sub(1);
                    false
                }
                b'{' => depth == 0,
                _ => false,
            });
            let Some(open) = open else { continue };
            out.push((name, at, open + 1..close_of(code, open + 1, false)));
        }
    }
    out.sort_by_key(|(_, at, _)| *at);
    out
}

/// The macros whose arguments are formatted into text.
const FORMATTING_MACROS: &[&str] = &[
    "format",
    "format_args",
    "write",
    "writeln",
    "print",
    "println",
    "eprint",
    "eprintln",
    "panic",
    "anyhow",
    "bail",
];

/// Whether the body `range` of `views` turns the error `name` into text:
/// `name.to_string()`, `{name}` (`{name:#}`, `{name:?}`) in a literal, `name` as an
/// argument of a formatting macro, or `error_chain(&name)` (any `…chain(…)`).
fn stringifies(views: &Views, range: std::ops::Range<usize>, name: &str) -> bool {
    let (text, code) = (&views.text[..range.end], &views.code[..range.end]);
    let is_name = |arg: &[u8]| {
        let arg = String::from_utf8_lossy(arg);
        let arg = arg.trim();
        arg == name || arg.strip_prefix('&').is_some_and(|a| a.trim() == name)
    };
    // Whole arguments of the call whose `(` is at `open`.
    let arguments = |open: usize| {
        let mut args = Vec::new();
        let mut start = open + 1;
        loop {
            let end = close_of(code, start, true);
            args.push(&text[start..end]);
            if code.get(end) != Some(&b',') {
                break;
            }
            start = end + 1;
        }
        args
    };
    for at in words_at(code, name).filter(|&at| at >= range.start) {
        if code[at + name.len()..].starts_with(b".to_string()") && code[at - 1] != b'.' {
            return true;
        }
    }
    // A placeholder: `{` inside a literal, not escaped, then the name.
    let placeholder = format!("{{{name}");
    for at in range.clone() {
        if text[at..].starts_with(placeholder.as_bytes())
            && code[at] == b' '
            && text[at - 1] != b'{'
            && matches!(text.get(at + placeholder.len()), Some(b'}' | b':'))
        {
            return true;
        }
    }
    for mac in FORMATTING_MACROS {
        for at in words_at(code, mac).filter(|&at| at >= range.start) {
            let open = skip_space(code, at + mac.len() + 1);
            if code.get(at + mac.len()) == Some(&b'!')
                && code.get(open) == Some(&b'(')
                && arguments(open).iter().skip(1).any(|a| is_name(a))
            {
                return true;
            }
        }
    }
    for at in range.clone() {
        if code[at..].starts_with(b"chain(") && arguments(at + 5).iter().any(|a| is_name(a)) {
            return true;
        }
    }
    false
}

/// Every place of the crates under `root` where an error bound by a closure or a
/// pattern is turned into text, outside test code (`*_tests.rs`, `tests.rs`, the
/// `tests/` and `testing/` folders, a file's test module).
fn string_causes(root: &Path) -> Vec<StringCause> {
    let mut found = Vec::new();
    for (krate, src) in crate_sources(root) {
        for file in source_files(&src) {
            // Test support: `tests/` and `testing/` folders, a `testing` module.
            if file
                .relative
                .split('/')
                .any(|part| part == "tests" || part == "testing" || part == "testing.rs")
            {
                continue;
            }
            let views = views(&file.text);
            for (name, at, body) in error_bindings(&views.code) {
                if !stringifies(&views, body.clone(), &name) {
                    continue;
                }
                let code: String = String::from_utf8_lossy(&views.code[body.clone()])
                    .split_whitespace()
                    .collect();
                let edge = STRING_CAUSE_EDGES
                    .iter()
                    .find(|(mark, _)| code.contains(&mark.replace(' ', "")))
                    .map(|(_, why)| *why);
                // A closure's call closes after its body.
                let end = body.end + usize::from(views.code.get(body.end) == Some(&b')'));
                let excerpt: String = String::from_utf8_lossy(&views.text[at..end])
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" ")
                    .chars()
                    .take(100)
                    .collect();
                found.push(StringCause {
                    path: format!("crates/{krate}/src/{}", file.relative),
                    line: views.code[..at].iter().filter(|&&c| c == b'\n').count() + 1,
                    excerpt,
                    edge,
                });
            }
        }
    }
    found
}

/// The places turning a cause into text that `kept` does not allow, and the
/// entries of `kept` that are stale.
fn string_cause_problems(root: &Path, kept: &[(&str, usize, &str)]) -> Vec<String> {
    let mut by_file: BTreeMap<String, Vec<StringCause>> = BTreeMap::new();
    for cause in string_causes(root).into_iter().filter(|c| c.edge.is_none()) {
        by_file.entry(cause.path.clone()).or_default().push(cause);
    }
    let mut problems = Vec::new();
    for (path, causes) in &by_file {
        let allowed = kept
            .iter()
            .find(|(p, _, _)| p == path)
            .map_or(0, |(_, n, _)| *n);
        if causes.len() > allowed {
            for c in causes {
                problems.push(format!(
                    "{path}:{}: a cause turned into text ({}); {} allowed in this file: keep \
                     it typed as a #[source] and join the chain where it leaves the program",
                    c.line, c.excerpt, allowed
                ));
            }
        }
    }
    for (path, allowed, _) in kept {
        let found = by_file.get(*path).map_or(0, Vec::len);
        if found < *allowed {
            problems.push(format!(
                "{path}: {found} causes turned into text, {allowed} allowed: lower its entry \
                 to {found} (or take it off the list at 0)"
            ));
        }
    }
    problems
}

#[test]
fn causes_are_kept_typed_and_joined_where_they_leave() {
    let problems = string_cause_problems(&workspace_root(), KEPT_STRING_CAUSES);
    assert!(
        problems.is_empty(),
        "causes turned into text (CONTRIBUTING.md, \"Errors\"):\n{}",
        problems.join("\n")
    );
    let allowed: usize = KEPT_STRING_CAUSES.iter().map(|(_, n, _)| n).sum();
    assert!(
        allowed <= MAX_KEPT_STRING_CAUSES,
        "KEPT_STRING_CAUSES allows {allowed} places, more than {MAX_KEPT_STRING_CAUSES}"
    );
    assert!(
        KEPT_STRING_CAUSES
            .iter()
            .all(|(_, n, why)| *n > 0 && !why.is_empty()),
        "every entry of KEPT_STRING_CAUSES allows a place and says why"
    );
}

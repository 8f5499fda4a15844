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
                for literal in literals(&text) {
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

/// `src` up to its test module (`#[cfg(test)]` followed by `mod`).
fn without_tests(src: &str) -> &str {
    let mut at = 0;
    while let Some(found) = src[at..].find("#[cfg(test)]") {
        let start = at + found;
        let rest = src[start + "#[cfg(test)]".len()..].trim_start();
        let rest = rest.strip_prefix("#[path").map_or(rest, |r| {
            r.split_once(']').map_or(r, |(_, r)| r.trim_start())
        });
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

#[test]
fn the_gates_catch_a_long_file_a_grown_one_a_stale_entry_and_a_cycle() {
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

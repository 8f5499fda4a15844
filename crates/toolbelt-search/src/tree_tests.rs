#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::fs;
use std::path::Path;

use pretty_assertions::assert_eq;

use super::*;

/// A small project:
/// ```text
/// .gitignore (ignores *.log and /out)   .hidden   .git/config
/// Cargo.toml  README.md  app.log
/// src/{lib.rs, main.rs, util/{mod.rs, strings.rs}}
/// docs/guide.md   out/build.txt   node_modules/left-pad/index.js   empty/
/// ```
fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    for d in [
        "src/util",
        "docs",
        "out",
        "node_modules/left-pad",
        "empty",
        ".git",
    ] {
        fs::create_dir_all(root.join(d)).unwrap();
    }
    for (f, content) in [
        (".gitignore", "*.log\n/out\n"),
        (".hidden", "secret"),
        (".git/config", "[core]"),
        ("Cargo.toml", "[package]\nname = \"demo\"\n"),
        ("README.md", "# demo\n"),
        ("app.log", "log line\n"),
        ("src/lib.rs", "pub mod util;\n"),
        ("src/main.rs", "fn main() {}\n"),
        ("src/util/mod.rs", "pub mod strings;\n"),
        ("src/util/strings.rs", "pub fn s() {}\n"),
        ("docs/guide.md", "guide"),
        ("out/build.txt", "built"),
        ("node_modules/left-pad/index.js", "module.exports = 1;"),
    ] {
        fs::write(root.join(f), content).unwrap();
    }
    dir
}

fn list(root: &Path, opts: TreeOptions) -> Tree {
    list_tree(root, "demo", &opts).unwrap()
}

#[test]
fn depth_one_lists_direct_entries_dirs_first() {
    let dir = project();
    let tree = list(dir.path(), TreeOptions::default());
    assert_eq!(
        tree.text,
        "📁 demo/
├── 📁 docs/
├── 📁 empty/
├── 📁 node_modules/ (not expanded)
├── 📁 src/
├── Cargo.toml
└── README.md
[6 entries: 4 directories, 2 files]"
    );
    assert_eq!(
        (tree.total_entries, tree.shown, tree.next_offset),
        (6, 6, None)
    );
}

#[test]
fn deeper_levels_and_collapsed_directories() {
    let dir = project();
    let tree = list(
        dir.path(),
        TreeOptions {
            depth: 3,
            ..TreeOptions::default()
        },
    );
    assert_eq!(
        tree.text,
        "📁 demo/
├── 📁 docs/
│   └── guide.md
├── 📁 empty/
├── 📁 node_modules/ (not expanded)
├── 📁 src/
│   ├── 📁 util/
│   │   ├── mod.rs
│   │   └── strings.rs
│   ├── lib.rs
│   └── main.rs
├── Cargo.toml
└── README.md
[12 entries: 5 directories, 7 files]"
    );
}

#[test]
fn a_collapsed_directory_listed_directly_is_expanded() {
    let dir = project();
    let tree = list_tree(
        &dir.path().join("node_modules"),
        "node_modules",
        &TreeOptions {
            depth: 2,
            ..TreeOptions::default()
        },
    )
    .unwrap();
    assert_eq!(
        tree.text,
        "📁 node_modules/
└── 📁 left-pad/
    └── index.js
[2 entries: 1 directory, 1 file]"
    );
}

#[test]
fn hidden_and_ignored_entries_on_request() {
    let dir = project();
    let tree = list(
        dir.path(),
        TreeOptions {
            show_hidden: true,
            respect_gitignore: false,
            ..TreeOptions::default()
        },
    );
    assert_eq!(
        tree.text,
        "📁 demo/
├── 📁 docs/
├── 📁 empty/
├── 📁 node_modules/ (not expanded)
├── 📁 out/
├── 📁 src/
├── .gitignore
├── .hidden
├── app.log
├── Cargo.toml
└── README.md
[10 entries: 5 directories, 5 files]"
    );
    // Hidden shown, ignore rules still applied; .git is never listed.
    let tree = list(
        dir.path(),
        TreeOptions {
            show_hidden: true,
            ..TreeOptions::default()
        },
    );
    assert!(tree.text.contains(".hidden") && !tree.text.contains("app.log"));
    assert!(!tree.text.contains(".git/") && !tree.text.contains("out/"));
}

#[test]
fn pattern_keeps_matches_and_the_directories_leading_to_them() {
    let dir = project();
    let tree = list(
        dir.path(),
        TreeOptions {
            depth: 5,
            pattern: Some("*.rs".to_string()),
            ..TreeOptions::default()
        },
    );
    assert_eq!(
        tree.text,
        "📁 demo/
└── 📁 src/
    ├── 📁 util/
    │   ├── mod.rs
    │   └── strings.rs
    ├── lib.rs
    └── main.rs
[6 entries: 2 directories, 4 files]"
    );
    let tree = list(
        dir.path(),
        TreeOptions {
            depth: 5,
            pattern: Some("src/*.rs".to_string()),
            ..TreeOptions::default()
        },
    );
    assert_eq!(
        tree.text,
        "📁 demo/
└── 📁 src/
    ├── lib.rs
    └── main.rs
[3 entries: 1 directory, 2 files]"
    );
    let tree = list(
        dir.path(),
        TreeOptions {
            pattern: Some("*.py".to_string()),
            ..TreeOptions::default()
        },
    );
    assert_eq!(tree.text, "📁 demo/\n[no entries match]");
}

#[test]
fn dirs_only() {
    let dir = project();
    let tree = list(
        dir.path(),
        TreeOptions {
            depth: 3,
            dirs_only: true,
            ..TreeOptions::default()
        },
    );
    assert_eq!(
        tree.text,
        "📁 demo/
├── 📁 docs/
├── 📁 empty/
├── 📁 node_modules/ (not expanded)
└── 📁 src/
    └── 📁 util/
[5 entries: 5 directories, 0 files]"
    );
}

#[test]
fn sizes_are_human_readable() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("big.bin"), vec![0u8; 12_345]).unwrap();
    fs::write(dir.path().join("small.txt"), "hi").unwrap();
    let tree = list(
        dir.path(),
        TreeOptions {
            sizes: true,
            ..TreeOptions::default()
        },
    );
    assert_eq!(
        tree.text,
        "📁 demo/\n├── big.bin (12.3 KB)\n└── small.txt (2 B)\n[2 entries: 0 directories, 2 files]"
    );
    assert_eq!(tree.entries[0].path, "big.bin");
    assert_eq!(tree.entries[0].size, Some(12_345));
}

#[test]
fn pages_repeat_the_directories_above_their_first_entry() {
    let dir = project();
    let opts = |offset, limit| TreeOptions {
        depth: 3,
        offset,
        limit,
        ..TreeOptions::default()
    };
    let tree = list(dir.path(), opts(1, 4));
    assert_eq!(
        tree.text,
        "📁 demo/
├── 📁 docs/
│   └── guide.md
├── 📁 empty/
├── 📁 node_modules/ (not expanded)
[12 entries: 5 directories, 7 files; showing 4 of 12; continue with offset=5]"
    );
    let tree = list(dir.path(), opts(7, 2));
    assert_eq!(
        tree.text,
        "📁 demo/
├── 📁 src/
│   ├── 📁 util/
│   │   ├── mod.rs
│   │   └── strings.rs
[12 entries: 5 directories, 7 files; showing 2 of 12 (entries 7-8); continue with offset=9]"
    );
    assert_eq!(
        (tree.first_entry, tree.shown, tree.next_offset),
        (7, 2, Some(9))
    );
    let tree = list(dir.path(), opts(10, 0));
    assert_eq!(
        tree.text,
        "📁 demo/
├── 📁 src/
│   └── main.rs
├── Cargo.toml
└── README.md
[12 entries: 5 directories, 7 files; showing 3 of 12 (entries 10-12)]"
    );
    let tree = list(dir.path(), opts(40, 5));
    assert_eq!(
        tree.text,
        "📁 demo/\n[12 entries: 5 directories, 7 files; offset 40 is past the last entry, use an offset from 1 to 12]"
    );
}

#[test]
fn the_entries_are_the_shown_paths_in_listing_order() {
    let dir = project();
    let tree = list(
        dir.path(),
        TreeOptions {
            depth: 2,
            pattern: Some("*.md".to_string()),
            ..TreeOptions::default()
        },
    );
    let file = |path: &str| TreeEntry {
        path: path.to_string(),
        kind: NodeKind::File,
        size: None,
        target: None,
        collapsed: false,
    };
    assert_eq!(
        tree.entries,
        vec![
            TreeEntry {
                path: "docs/".to_string(),
                kind: NodeKind::Dir,
                size: None,
                target: None,
                collapsed: false,
            },
            file("docs/guide.md"),
            file("README.md"),
        ]
    );
}

#[test]
fn collapsed_directories_are_marked_and_pages_hold_their_own_entries() {
    let dir = project();
    let tree = list(dir.path(), TreeOptions::default());
    let modules = tree
        .entries
        .iter()
        .find(|e| e.path == "node_modules/")
        .unwrap();
    assert!(modules.collapsed);
    assert!(tree.entries.iter().filter(|e| e.collapsed).count() == 1);
    // A page that starts inside a directory holds its entries only, by whole path.
    let deep = TreeOptions {
        depth: 3,
        ..TreeOptions::default()
    };
    let all: Vec<String> = list(dir.path(), deep.clone())
        .entries
        .into_iter()
        .map(|e| e.path)
        .collect();
    let page = list(
        dir.path(),
        TreeOptions {
            offset: 4,
            limit: 2,
            ..deep
        },
    );
    assert_eq!(
        page.entries
            .iter()
            .map(|e| e.path.as_str())
            .collect::<Vec<_>>(),
        all[3..5].iter().map(String::as_str).collect::<Vec<_>>()
    );
}

#[cfg(unix)]
#[test]
fn symlinks_are_listed_not_followed() {
    let outside = tempfile::tempdir().unwrap();
    fs::write(outside.path().join("secret.txt"), "x").unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path(), dir.path().join("escape")).unwrap();
    let tree = list(
        dir.path(),
        TreeOptions {
            depth: 3,
            ..TreeOptions::default()
        },
    );
    assert_eq!(
        tree.text,
        format!(
            "📁 demo/\n└── escape -> {}\n[1 entry: 0 directories, 1 file]",
            outside.path().display()
        )
    );
    assert!(!tree.text.contains("secret.txt"));
}

#[test]
fn depth_zero_counts_as_one_and_empty_directories_say_so() {
    let dir = project();
    let zero = list(
        dir.path(),
        TreeOptions {
            depth: 0,
            ..TreeOptions::default()
        },
    );
    assert_eq!(zero, list(dir.path(), TreeOptions::default()));
    let tree = list(&dir.path().join("empty"), TreeOptions::default());
    assert_eq!(tree.text, "📁 demo/\n[empty directory]");
}

#[test]
fn errors() {
    let dir = project();
    let err = list_tree(
        dir.path(),
        "demo",
        &TreeOptions {
            pattern: Some("src/[".to_string()),
            ..TreeOptions::default()
        },
    )
    .unwrap_err();
    assert!(matches!(err, TreeError::Pattern { .. }), "{err:?}");
    assert!(err.to_string().starts_with("invalid pattern \"src/[\""));
    let err = list_tree(
        &dir.path().join("README.md"),
        "README.md",
        &TreeOptions::default(),
    )
    .unwrap_err();
    assert!(matches!(err, TreeError::NotADirectory { .. }), "{err:?}");
    let err = list_tree(
        &dir.path().join("missing"),
        "missing",
        &TreeOptions::default(),
    )
    .unwrap_err();
    assert!(matches!(err, TreeError::Io { .. }), "{err:?}");
}

fn all_listed(root: &Path, opts: TreeOptions) -> Vec<String> {
    let tree = list_tree(
        root,
        "root",
        &TreeOptions {
            depth: MAX_DEPTH,
            limit: MAX_WALK_ENTRIES,
            ..opts
        },
    )
    .unwrap();
    let mut out: Vec<String> = tree.entries.into_iter().map(|e| e.path).collect();
    out.sort();
    out
}

/// What ripgrep's walker (the `ignore` crate) lists under the same rules.
fn walked_by_ignore(root: &Path, show_hidden: bool) -> Vec<String> {
    let mut out: Vec<String> = ignore::WalkBuilder::new(root)
        .standard_filters(false)
        .hidden(!show_hidden)
        .parents(true)
        .ignore(true)
        .git_ignore(true)
        .git_global(true)
        .git_exclude(true)
        .require_git(false)
        .filter_entry(|e| e.file_name() != ".git")
        .build()
        .map(Result::unwrap)
        .filter(|e| e.depth() > 0)
        .map(|e| {
            let rel = e
                .path()
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            if e.file_type().is_some_and(|t| t.is_dir()) {
                format!("{rel}/")
            } else {
                rel
            }
        })
        .collect();
    out.sort();
    out
}

#[test]
fn ignore_rules_of_parents_subdirectories_and_the_repository_apply() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    for d in [
        ".git/info",
        "app/src",
        "app/build",
        "app/logs",
        "app/vendor/lib",
    ] {
        fs::create_dir_all(root.join(d)).unwrap();
    }
    for (f, content) in [
        (".gitignore", "*.log\nbuild/\n"),
        (".git/info/exclude", "*.tmp\n"),
        ("app/.gitignore", "!keep.log\n/vendor\n"),
        ("app/.ignore", "secret.*\n"),
        ("app/logs/.gitignore", "!*.log\n"),
        ("app/a.log", ""),
        ("app/keep.log", ""),
        ("app/x.tmp", ""),
        ("app/secret.txt", ""),
        ("app/main.rs", ""),
        ("app/build", ""),
        ("app/src/build", ""),
        ("app/logs/today.log", ""),
        ("app/vendor/lib/v.rs", ""),
    ] {
        fs::write(root.join(f), content).unwrap_or(());
    }
    // Listing the subdirectory still applies the root's rules and the exclude file.
    let app = root.join("app");
    assert_eq!(
        all_listed(&app, TreeOptions::default()),
        [
            "keep.log",
            "logs/",
            "logs/today.log",
            "main.rs",
            "src/",
            "src/build"
        ]
    );
    assert_eq!(
        all_listed(&app, TreeOptions::default()),
        walked_by_ignore(&app, false)
    );
    // Without the rules, everything but hidden files.
    assert_eq!(
        all_listed(
            &app,
            TreeOptions {
                respect_gitignore: false,
                ..TreeOptions::default()
            }
        )
        .len(),
        13
    );
}

#[cfg(unix)]
#[test]
fn an_unreadable_directory_is_counted_not_fatal() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir_all(dir.path().join("locked")).unwrap();
    fs::write(dir.path().join("locked/x"), "").unwrap();
    fs::set_permissions(dir.path().join("locked"), fs::Permissions::from_mode(0o000)).unwrap();
    if fs::read_dir(dir.path().join("locked")).is_ok() {
        return; // running as root: permissions do not stop reads
    }
    let tree = list(
        dir.path(),
        TreeOptions {
            depth: 2,
            ..TreeOptions::default()
        },
    );
    fs::set_permissions(dir.path().join("locked"), fs::Permissions::from_mode(0o755)).unwrap();
    assert_eq!(tree.unreadable, 1);
    assert!(
        tree.text.contains("1 entry could not be read"),
        "{}",
        tree.text
    );
}

mod same_as_ripgrep {
    use proptest::prelude::*;

    use super::*;

    const NAMES: &[&str] = &["a", "b.log", "build", "keep.log", ".env", "deep", "x.rs"];
    const RULES: &[&str] = &[
        "*.log",
        "!keep.log",
        "build/",
        "/a",
        "deep",
        "**/deep/x.rs",
        "!*.rs",
        "a/",
        "*",
        "!build",
        "x.*",
        ".env",
    ];

    /// Entries (a path of name indexes, whether the last one is a directory) and
    /// ignore files (a directory index, whether it is `.ignore`, rule indexes).
    type Layout = (Vec<(Vec<usize>, bool)>, Vec<(usize, bool, Vec<usize>)>);

    /// A tree: each entry is a path of names, a file or a directory, and some
    /// directories get `.gitignore` or `.ignore` files made of the rules.
    fn arb_tree() -> impl Strategy<Value = Layout> {
        let entries = prop::collection::vec(
            (prop::collection::vec(0..NAMES.len(), 1..4), any::<bool>()),
            1..24,
        );
        let ignores = prop::collection::vec(
            (
                0..8usize,
                any::<bool>(),
                prop::collection::vec(0..RULES.len(), 1..4),
            ),
            0..5,
        );
        (entries, ignores)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn listing_matches_the_ignore_crates_walk((entries, ignores) in arb_tree(), hidden in any::<bool>()) {
            let dir = tempfile::tempdir().unwrap();
            let root = dir.path();
            let mut dirs = vec![root.to_path_buf()];
            for (names, is_dir) in &entries {
                let mut path = root.to_path_buf();
                for (i, &n) in names.iter().enumerate() {
                    path.push(NAMES[n]);
                    let last = i + 1 == names.len();
                    if !last || *is_dir {
                        if fs::create_dir_all(&path).is_err() {
                            break; // a file is already there
                        }
                        dirs.push(path.clone());
                    } else if !path.exists() {
                        fs::write(&path, "").unwrap();
                    }
                }
            }
            for (d, dot_ignore, rules) in &ignores {
                let d = &dirs[d % dirs.len()];
                let text: String = rules.iter().map(|&r| format!("{}\n", RULES[r])).collect();
                let name = if *dot_ignore { ".ignore" } else { ".gitignore" };
                fs::write(d.join(name), text).unwrap();
            }
            let opts = TreeOptions { show_hidden: hidden, ..TreeOptions::default() };
            prop_assert_eq!(all_listed(root, opts), walked_by_ignore(root, hidden));
        }
    }
}

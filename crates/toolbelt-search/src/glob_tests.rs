use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant, SystemTime};

use pretty_assertions::assert_eq;
use tempfile::TempDir;

use super::*;

fn tree(files: &[&str]) -> TempDir {
    let dir = tempfile::tempdir().unwrap();
    // Distinct modification times: later in the list = newer.
    let t0 = SystemTime::now() - Duration::from_secs(3600);
    for (i, path) in files.iter().enumerate() {
        let p = dir.path().join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        let f = std::fs::File::create(&p).unwrap();
        f.set_modified(t0 + Duration::from_secs(i as u64 * 10))
            .unwrap();
    }
    dir
}

fn glob(root: &Path, opts: GlobOptions) -> GlobReport {
    Glob::new(opts)
        .unwrap()
        .run(root, root, &Budget::unlimited())
}

fn by_path(pattern: &str) -> GlobOptions {
    GlobOptions {
        sort: GlobSort::Path,
        ..GlobOptions::new(pattern)
    }
}

fn listed(dir: &TempDir, opts: GlobOptions) -> String {
    glob(dir.path(), opts).text
}

fn project() -> TempDir {
    tree(&[
        "Cargo.toml",
        "src/main.rs",
        "src/net/http.rs",
        "src/net/mod.rs",
        "tests/it.rs",
        "web/app.ts",
        "web/components/button.tsx",
        "web/components/button.ts",
        "docs/guide.md",
    ])
}

#[test]
fn a_pattern_without_a_slash_matches_names_at_any_depth() {
    let dir = project();
    assert_eq!(
        listed(&dir, by_path("*.rs")),
        "src/main.rs\nsrc/net/http.rs\nsrc/net/mod.rs\ntests/it.rs\n"
    );
    assert_eq!(listed(&dir, by_path("Cargo.toml")), "Cargo.toml\n");
    assert_eq!(
        listed(&dir, by_path("*.{ts,tsx}")),
        "web/app.ts\nweb/components/button.ts\nweb/components/button.tsx\n"
    );
}

#[test]
fn a_pattern_with_a_slash_matches_the_relative_path() {
    let dir = project();
    assert_eq!(listed(&dir, by_path("src/*.rs")), "src/main.rs\n");
    assert_eq!(
        listed(&dir, by_path("src/**/*.rs")),
        "src/main.rs\nsrc/net/http.rs\nsrc/net/mod.rs\n"
    );
    assert_eq!(
        listed(&dir, by_path("**/components/*.ts")),
        "web/components/button.ts\n"
    );
    assert_eq!(listed(&dir, by_path("./web/*.ts")), "web/app.ts\n");
    assert_eq!(
        listed(&dir, by_path("s?c/net/[hm]*.rs")),
        "src/net/http.rs\nsrc/net/mod.rs\n"
    );
}

#[test]
fn newest_first_by_default() {
    let dir = project();
    let r = glob(dir.path(), GlobOptions::new("*.rs"));
    assert_eq!(
        r.text,
        "tests/it.rs\nsrc/net/mod.rs\nsrc/net/http.rs\nsrc/main.rs\n"
    );
    assert!(r.entries.windows(2).all(|w| w[0].modified >= w[1].modified));
    assert!(r.entries.iter().all(|e| e.modified.is_some() && !e.is_dir));
}

#[test]
fn include_dirs_lists_matching_directories_and_a_trailing_slash_only_them() {
    let dir = project();
    assert_eq!(
        listed(&dir, by_path("[mn]*")),
        "src/main.rs\nsrc/net/mod.rs\n"
    );
    assert_eq!(
        listed(
            &dir,
            GlobOptions {
                include_dirs: true,
                ..by_path("[mn]*")
            }
        ),
        "src/main.rs\nsrc/net/\nsrc/net/mod.rs\n"
    );
    let r = glob(dir.path(), by_path("**/net/"));
    assert_eq!(r.text, "src/net/\n");
    assert_eq!(r.entries[0].is_dir, true);
}

#[test]
fn limit_and_offset_page_the_results() {
    let dir = project();
    let r = glob(
        dir.path(),
        GlobOptions {
            limit: 2,
            offset: 1,
            ..by_path("*")
        },
    );
    assert_eq!(r.text, "docs/guide.md\nsrc/main.rs\n");
    assert_eq!((r.total, r.offset, r.next_offset), (9, 1, Some(3)));
    let r = glob(
        dir.path(),
        GlobOptions {
            limit: 0,
            offset: 7,
            ..by_path("*")
        },
    );
    assert_eq!((r.entries.len(), r.next_offset), (2, None));
    let r = glob(
        dir.path(),
        GlobOptions {
            offset: 50,
            ..by_path("*")
        },
    );
    assert_eq!((r.text.as_str(), r.total, r.next_offset), ("", 9, None));
}

#[test]
fn gitignore_is_respected_by_default() {
    let dir = tree(&[
        ".git/HEAD",
        ".gitignore",
        "target/debug/app.rs",
        "src/lib.rs",
    ]);
    std::fs::write(dir.path().join(".gitignore"), "target/\n").unwrap();
    assert_eq!(listed(&dir, by_path("*.rs")), "src/lib.rs\n");
    assert_eq!(
        listed(
            &dir,
            GlobOptions {
                respect_gitignore: false,
                ..by_path("*.rs")
            }
        ),
        "src/lib.rs\ntarget/debug/app.rs\n"
    );
}

#[test]
fn hidden_entries_when_asked_or_named_by_the_pattern() {
    let dir = tree(&[".github/workflows/ci.yml", "ci.yml", ".env", "app/.env"]);
    assert_eq!(listed(&dir, by_path("*.yml")), "ci.yml\n");
    assert_eq!(
        listed(
            &dir,
            GlobOptions {
                hidden: true,
                ..by_path("*.yml")
            }
        ),
        ".github/workflows/ci.yml\nci.yml\n"
    );
    assert_eq!(
        listed(&dir, by_path(".github/**/*.yml")),
        ".github/workflows/ci.yml\n"
    );
    assert_eq!(listed(&dir, by_path(".env")), ".env\napp/.env\n");
}

#[cfg(unix)]
#[test]
fn symlinks_to_outside_files_and_dirs_are_not_listed_or_followed() {
    let outside = tree(&["secret.rs", "dir/inner.rs"]);
    let dir = tree(&["inside.rs"]);
    std::os::unix::fs::symlink(outside.path().join("secret.rs"), dir.path().join("link.rs"))
        .unwrap();
    std::os::unix::fs::symlink(outside.path().join("dir"), dir.path().join("linkdir")).unwrap();
    assert_eq!(listed(&dir, by_path("*.rs")), "inside.rs\n");
    // A literal prefix through a link is not used as the start of the walk.
    assert_eq!(listed(&dir, by_path("linkdir/*.rs")), "");
    assert_eq!(
        listed(
            &dir,
            GlobOptions {
                include_dirs: true,
                ..by_path("link*")
            }
        ),
        ""
    );
}

#[test]
fn the_walk_starts_at_the_literal_prefix() {
    let g = Glob::new(by_path("src/net/**/*.rs")).unwrap();
    assert_eq!(g.prefix, Path::new("src/net"));
    let g = Glob::new(by_path("*/net/*.rs")).unwrap();
    assert_eq!(g.prefix, Path::new(""));
    let dir = project();
    assert_eq!(
        g.run(dir.path(), dir.path(), &Budget::unlimited()).text,
        "src/net/http.rs\nsrc/net/mod.rs\n"
    );
    // A prefix that does not exist finds nothing rather than failing.
    assert_eq!(listed(&dir, by_path("nowhere/*.rs")), "");
}

#[test]
fn paths_are_shown_relative_to_the_base() {
    let dir = project();
    let web = dir.path().join("web");
    let r = Glob::new(by_path("*.ts"))
        .unwrap()
        .run(&web, dir.path(), &Budget::unlimited());
    assert_eq!(r.text, "web/app.ts\nweb/components/button.ts\n");
}

#[test]
fn bad_patterns_say_what_to_do() {
    let err = Glob::new(by_path("/etc/*.conf")).unwrap_err().to_string();
    assert!(err.contains("put the directory in `path`"), "{err}");
    let err = Glob::new(by_path("src/[a")).unwrap_err().to_string();
    assert!(err.starts_with("invalid glob \"src/[a\""), "{err}");
    assert!(Glob::new(by_path("./")).is_err());
}

#[test]
fn an_expired_deadline_returns_partial_results_marked_timed_out() {
    let dir = project();
    let past = Instant::now() - Duration::from_millis(1);
    let r = Glob::new(by_path("*")).unwrap().run(
        dir.path(),
        dir.path(),
        &Budget::unlimited().with_deadline(past),
    );
    assert!(r.timed_out());
    assert_eq!(r.total, 0);
}

#[test]
fn names_agree_with_fd() {
    let dir = tree(&[
        ".git/HEAD",
        "a/x.c",
        "a/b/y.c",
        "a/b/y.h",
        ".hidden/z.c",
        "build/gen.c",
        "c.c",
    ]);
    std::fs::write(dir.path().join(".gitignore"), "build/\n").unwrap();
    let out = match Command::new("fd")
        .current_dir(dir.path())
        .args(["--glob", "*.c", "--type", "f"])
        .output()
    {
        Ok(o) => o,
        Err(_) => {
            eprintln!(
                "note: `fd` not found; skipping the comparison with fd (cargo install fd-find)"
            );
            return;
        }
    };
    let mut expected: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .collect();
    expected.sort();
    let ours: Vec<String> = glob(dir.path(), by_path("*.c"))
        .entries
        .into_iter()
        .map(|e| e.path)
        .collect();
    assert_eq!(ours, expected);
}

#[test]
fn withheld_files_are_not_listed_but_counted() {
    let dir = tree(&["app/.env", "app/.env.example"]);
    let r = Glob::new(by_path(".env*"))
        .unwrap()
        .withholding(crate::Withhold::files(|p| p.ends_with(".env")))
        .run(dir.path(), dir.path(), &Budget::unlimited());
    assert_eq!((r.text.as_str(), r.withheld), ("app/.env.example\n", 1));
}

use std::fs::File;
use std::io;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use pretty_assertions::assert_eq;
use proptest::prelude::*;
use tempfile::TempDir;

use super::*;

fn tree(files: &[(&str, &[u8])]) -> TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (path, bytes) in files {
        let p = dir.path().join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, bytes).unwrap();
    }
    dir
}

fn open(p: &Path) -> io::Result<File> {
    File::open(p)
}

fn grep_in(root: &Path, opts: GrepOptions) -> GrepReport {
    Grep::new(opts)
        .unwrap()
        .run(root, root, &open, &Budget::unlimited())
}

fn content(pattern: &str) -> GrepOptions {
    GrepOptions {
        output_mode: OutputMode::Content,
        ..GrepOptions::new(pattern)
    }
}

fn text(dir: &TempDir, opts: GrepOptions) -> String {
    grep_in(dir.path(), opts).text
}

fn code_tree() -> TempDir {
    tree(&[
        (
            "src/main.rs",
            b"fn main() {\n    let x = run();\n    println!(\"{x}\");\n}\n",
        ),
        (
            "src/lib.rs",
            b"pub fn run() -> u32 {\n    42\n}\n// Run the thing\n",
        ),
        ("app.py", b"def run():\n    return 42\n\nrun()\n"),
        ("README.md", b"# Runner\nCall run() to run.\n"),
    ])
}

#[test]
fn content_lines_are_path_line_text_sorted_by_path() {
    let dir = code_tree();
    assert_eq!(
        text(&dir, content("run\\(")),
        "README.md:2: Call run() to run.\n\
         app.py:1: def run():\n\
         app.py:4: run()\n\
         src/lib.rs:1: pub fn run() -> u32 {\n\
         src/main.rs:2:     let x = run();\n"
    );
}

#[test]
fn structured_lines_and_totals() {
    let dir = code_tree();
    let r = grep_in(dir.path(), content("42"));
    assert_eq!(
        r.lines,
        vec![
            MatchLine {
                path: "app.py".into(),
                line: 2,
                kind: LineKind::Match,
                text: "    return 42".into()
            },
            MatchLine {
                path: "src/lib.rs".into(),
                line: 2,
                kind: LineKind::Match,
                text: "    42".into()
            },
        ]
    );
    assert_eq!(
        (
            r.total_entries,
            r.shown,
            r.matches,
            r.files_matched,
            r.files_searched
        ),
        (2, 2, 2, 2, 4)
    );
    assert_eq!(
        (r.next_offset, r.stop, r.binary_skipped, r.errors),
        (None, None, 0, 0)
    );
}

#[test]
fn files_with_matches_lists_paths() {
    let dir = code_tree();
    let r = grep_in(dir.path(), GrepOptions::new("fn"));
    assert_eq!(r.text, "src/lib.rs\nsrc/main.rs\n");
    assert_eq!(
        r.files,
        vec![
            FileCount {
                path: "src/lib.rs".into(),
                count: None
            },
            FileCount {
                path: "src/main.rs".into(),
                count: None
            }
        ]
    );
}

#[test]
fn count_gives_matching_lines_per_file() {
    let dir = code_tree();
    let r = grep_in(
        dir.path(),
        GrepOptions {
            output_mode: OutputMode::Count,
            ..GrepOptions::new("run")
        },
    );
    // Smart case: lowercase pattern also matches "Runner" and "Run".
    assert_eq!(
        r.text,
        "README.md:2\napp.py:2\nsrc/lib.rs:2\nsrc/main.rs:1\n"
    );
    assert_eq!(r.matches, 7);
}

#[test]
fn smart_case_sensitive_when_pattern_has_uppercase() {
    let dir = code_tree();
    assert_eq!(
        text(&dir, content("Run")),
        "README.md:1: # Runner\nsrc/lib.rs:4: // Run the thing\n"
    );
    assert_eq!(
        text(
            &dir,
            GrepOptions {
                case: CaseMode::Insensitive,
                ..content("RUNNER")
            }
        ),
        "README.md:1: # Runner\n"
    );
    assert_eq!(
        text(
            &dir,
            GrepOptions {
                case: CaseMode::Sensitive,
                ..content("runner")
            }
        ),
        ""
    );
}

#[test]
fn fixed_strings_match_literally() {
    let dir = tree(&[("a.txt", b"a.c\nabc\n(x)\n")]);
    assert_eq!(text(&dir, content("a.c")), "a.txt:1: a.c\na.txt:2: abc\n");
    assert_eq!(
        text(
            &dir,
            GrepOptions {
                fixed_strings: true,
                ..content("a.c")
            }
        ),
        "a.txt:1: a.c\n"
    );
    assert_eq!(
        text(
            &dir,
            GrepOptions {
                fixed_strings: true,
                ..content("(x)")
            }
        ),
        "a.txt:3: (x)\n"
    );
}

#[test]
fn whole_word_needs_boundaries() {
    let dir = tree(&[("a.txt", b"run\nrunner\nrerun it\nrun_fast\n(run)\n")]);
    assert_eq!(
        text(
            &dir,
            GrepOptions {
                whole_word: true,
                ..content("run")
            }
        ),
        "a.txt:1: run\na.txt:5: (run)\n"
    );
}

#[test]
fn multiline_matches_span_lines_and_dot_matches_newline() {
    let dir = tree(&[("a.txt", b"start\nfoo\nbar\nend\n")]);
    let opts = GrepOptions {
        multiline: true,
        ..content("foo\\nbar")
    };
    assert_eq!(text(&dir, opts), "a.txt:2: foo\na.txt:3: bar\n");
    let r = grep_in(
        dir.path(),
        GrepOptions {
            multiline: true,
            output_mode: OutputMode::Count,
            ..GrepOptions::new("start.*end")
        },
    );
    assert_eq!(r.text, "a.txt:1\n");
}

#[test]
fn newline_in_pattern_without_multiline_is_refused_with_a_hint() {
    let err = Grep::new(content("foo\\nbar")).unwrap_err();
    assert!(err.to_string().contains("multiline=true"), "{err}");
}

#[test]
fn bad_regex_says_what_to_do() {
    let err = Grep::new(content("fn main(")).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.starts_with("invalid regular expression \"fn main(\""),
        "{msg}"
    );
    assert!(msg.contains("fixed_strings=true"), "{msg}");
}

#[test]
fn globs_include_and_exclude() {
    let dir = code_tree();
    let with = |globs: &[&str]| {
        text(
            &dir,
            GrepOptions {
                globs: globs.iter().map(|g| (*g).to_owned()).collect(),
                ..GrepOptions::new("run")
            },
        )
    };
    assert_eq!(with(&["*.rs"]), "src/lib.rs\nsrc/main.rs\n");
    assert_eq!(with(&["!*.rs"]), "README.md\napp.py\n");
    assert_eq!(with(&["*.{py,md}"]), "README.md\napp.py\n");
    assert_eq!(with(&["src/main.rs"]), "src/main.rs\n");
    let err = Grep::new(GrepOptions {
        globs: vec!["a[".into()],
        ..GrepOptions::new("x")
    })
    .unwrap_err();
    assert!(err.to_string().starts_with("invalid glob \"a[\""), "{err}");
}

#[test]
fn file_types_from_ripgreps_table() {
    let dir = code_tree();
    let with = |types: &[&str]| {
        text(
            &dir,
            GrepOptions {
                file_types: types.iter().map(|g| (*g).to_owned()).collect(),
                ..GrepOptions::new("run")
            },
        )
    };
    assert_eq!(with(&["rust"]), "src/lib.rs\nsrc/main.rs\n");
    assert_eq!(with(&["py", "markdown"]), "README.md\napp.py\n");
    let err = Grep::new(GrepOptions {
        file_types: vec!["rs".into()],
        ..GrepOptions::new("x")
    })
    .unwrap_err();
    assert!(
        err.to_string()
            .starts_with("unknown file type \"rs\"; did you mean one of: rust"),
        "{err}"
    );
}

#[test]
fn context_lines_groups_and_separators() {
    let body = b"1\n2\nhit a\n4\n5\n6\n7\n8\nhit b\n10\nhit c\n12\n";
    let dir = tree(&[("a.txt", body), ("b.txt", b"x\nhit d\n")]);
    assert_eq!(
        text(
            &dir,
            GrepOptions {
                before_context: 1,
                after_context: 1,
                ..content("hit")
            }
        ),
        "a.txt-2- 2\n\
         a.txt:3: hit a\n\
         a.txt-4- 4\n\
         --\n\
         a.txt-8- 8\n\
         a.txt:9: hit b\n\
         a.txt-10- 10\n\
         a.txt:11: hit c\n\
         a.txt-12- 12\n\
         --\n\
         b.txt-1- x\n\
         b.txt:2: hit d\n"
    );
    assert_eq!(
        text(
            &dir,
            GrepOptions {
                after_context: 2,
                ..content("hit c")
            }
        ),
        "a.txt:11: hit c\na.txt-12- 12\n"
    );
    assert_eq!(
        text(
            &dir,
            GrepOptions {
                before_context: 2,
                ..content("hit b")
            }
        ),
        "a.txt-7- 7\na.txt-8- 8\na.txt:9: hit b\n"
    );
}

#[test]
fn a_page_has_a_ceiling_also_when_everything_is_asked_for() {
    let all = Grep::new(GrepOptions {
        head_limit: 0,
        ..content("x")
    })
    .unwrap();
    let huge = Grep::new(GrepOptions {
        head_limit: 10_000_000,
        ..content("x")
    })
    .unwrap();
    assert_eq!(
        (all.options().head_limit, huge.options().head_limit),
        (MAX_PAGE_ENTRIES, MAX_PAGE_ENTRIES)
    );
}

#[test]
fn context_is_capped_at_twenty_lines() {
    let g = Grep::new(GrepOptions {
        before_context: 500,
        after_context: 21,
        ..content("x")
    })
    .unwrap();
    assert_eq!(
        (g.options().before_context, g.options().after_context),
        (20, 20)
    );
}

fn numbered_tree() -> TempDir {
    // 12 files x 3 matching lines, names chosen so that walk order differs from path order.
    let files: Vec<(String, Vec<u8>)> = (0..12)
        .map(|i| {
            let name = format!("d{}/f{:02}.txt", i % 3, 11 - i);
            let body = format!("m {i} a\nnothing\nm {i} b\nm {i} c\n");
            (name, body.into_bytes())
        })
        .collect();
    let refs: Vec<(&str, &[u8])> = files
        .iter()
        .map(|(n, b)| (n.as_str(), b.as_slice()))
        .collect();
    tree(&refs)
}

#[test]
fn head_limit_and_offset_page_through_content() {
    let dir = numbered_tree();
    let all = grep_in(
        dir.path(),
        GrepOptions {
            head_limit: 0,
            ..content("^m")
        },
    );
    assert_eq!(
        (all.total_entries, all.shown, all.next_offset),
        (36, 36, None)
    );
    let page = grep_in(
        dir.path(),
        GrepOptions {
            head_limit: 5,
            offset: 7,
            ..content("^m")
        },
    );
    assert_eq!(page.lines, all.lines[7..12].to_vec());
    assert_eq!(
        (
            page.total_entries,
            page.shown,
            page.offset,
            page.next_offset
        ),
        (36, 5, 7, Some(12))
    );
    let last = grep_in(
        dir.path(),
        GrepOptions {
            head_limit: 5,
            offset: 34,
            ..content("^m")
        },
    );
    assert_eq!((last.shown, last.next_offset), (2, None));
    let past = grep_in(
        dir.path(),
        GrepOptions {
            offset: 99,
            ..content("^m")
        },
    );
    assert_eq!(
        (past.text.as_str(), past.shown, past.next_offset),
        ("", 0, None)
    );
}

#[test]
fn head_limit_pages_files() {
    let dir = numbered_tree();
    let r = grep_in(
        dir.path(),
        GrepOptions {
            head_limit: 2,
            offset: 1,
            ..GrepOptions::new("^m")
        },
    );
    assert_eq!(r.text, "d0/f05.txt\nd0/f08.txt\n");
    assert_eq!(
        (r.total_entries, r.next_offset, r.files_matched),
        (12, Some(3), 12)
    );
    let counts = grep_in(
        dir.path(),
        GrepOptions {
            head_limit: 1,
            output_mode: OutputMode::Count,
            ..GrepOptions::new("^m")
        },
    );
    assert_eq!(counts.text, "d0/f02.txt:3\n");
    assert_eq!(counts.matches, 36);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    /// Whatever the page and thread count, a page is the same slice of the full,
    /// sorted output (lines are only kept for files that can reach the page).
    #[test]
    fn a_page_is_a_slice_of_the_whole(offset in 0usize..40, limit in 1usize..40, threads in 1usize..4) {
        let dir = numbered_tree();
        let all = grep_in(dir.path(), GrepOptions { head_limit: 0, threads, ..content("^m") });
        let page = grep_in(dir.path(), GrepOptions { head_limit: limit, offset, threads, ..content("^m") });
        let end = (offset + limit).min(all.lines.len());
        let start = offset.min(end);
        prop_assert_eq!(&page.lines, &all.lines[start..end].to_vec());
        prop_assert_eq!(page.total_entries, 36);
    }
}

#[test]
fn ignore_files_are_honoured_unless_include_ignored() {
    let dir = tree(&[
        (".git/HEAD", b"ref: refs/heads/main\n"),
        (".gitignore", b"target/\n*.log\n"),
        (".ignore", b"vendor/\n"),
        ("src/a.rs", b"needle\n"),
        ("target/out.rs", b"needle\n"),
        ("debug.log", b"needle\n"),
        ("vendor/v.rs", b"needle\n"),
    ]);
    assert_eq!(text(&dir, GrepOptions::new("needle")), "src/a.rs\n");
    assert_eq!(
        text(
            &dir,
            GrepOptions {
                include_ignored: true,
                ..GrepOptions::new("needle")
            }
        ),
        "debug.log\nsrc/a.rs\ntarget/out.rs\nvendor/v.rs\n"
    );
}

#[test]
fn gitignore_outside_a_git_repository_is_not_applied_like_ripgrep() {
    let dir = tree(&[(".gitignore", b"*.log\n"), ("debug.log", b"needle\n")]);
    assert_eq!(text(&dir, GrepOptions::new("needle")), "debug.log\n");
}

#[test]
fn hidden_files_only_when_asked() {
    let dir = tree(&[
        (".env", b"needle\n"),
        (".config/x.toml", b"needle\n"),
        ("shown.txt", b"needle\n"),
    ]);
    assert_eq!(text(&dir, GrepOptions::new("needle")), "shown.txt\n");
    assert_eq!(
        text(
            &dir,
            GrepOptions {
                hidden: true,
                ..GrepOptions::new("needle")
            }
        ),
        ".config/x.toml\n.env\nshown.txt\n"
    );
}

#[test]
fn binary_files_are_skipped_and_counted() {
    let mut big = b"needle\n".repeat(20_000);
    big.push(0);
    let dir = tree(&[
        ("bin.dat", b"needle\n\x00\x01\x02"),
        ("late.dat", &big),
        ("text.txt", b"needle\n"),
    ]);
    for mode in [OutputMode::Content, OutputMode::Count] {
        let r = grep_in(
            dir.path(),
            GrepOptions {
                output_mode: mode,
                ..GrepOptions::new("needle")
            },
        );
        assert_eq!(
            (r.files_matched, r.binary_skipped, r.files_searched),
            (1, 2, 3),
            "{mode:?}"
        );
        assert!(r.text.starts_with("text.txt:"), "{mode:?}: {}", r.text);
    }
    // files_with_matches stops at the first match, before late.dat's NUL is read (as rg -l).
    let r = grep_in(dir.path(), GrepOptions::new("needle"));
    assert_eq!(
        (r.text.as_str(), r.binary_skipped),
        ("late.dat\ntext.txt\n", 1)
    );
}

#[test]
fn non_utf8_lines_are_kept_lossily_and_utf16_is_decoded() {
    let mut utf16 = vec![0xFF, 0xFE];
    for u in "héllo needle\n".encode_utf16() {
        utf16.extend_from_slice(&u.to_le_bytes());
    }
    let dir = tree(&[("latin1.txt", b"caf\xe9 needle\n"), ("wide.txt", &utf16)]);
    assert_eq!(
        text(&dir, content("needle")),
        "latin1.txt:1: caf\u{FFFD} needle\nwide.txt:1: héllo needle\n"
    );
}

#[test]
fn crlf_line_endings_are_not_shown() {
    let dir = tree(&[("w.txt", b"one\r\nneedle here\r\n")]);
    assert_eq!(text(&dir, content("needle")), "w.txt:2: needle here\n");
}

#[test]
fn long_lines_are_cut_with_a_marker() {
    let long = format!("needle{}\n", "x".repeat(1000));
    let dir = tree(&[("min.js", long.as_bytes())]);
    let r = grep_in(
        dir.path(),
        GrepOptions {
            max_line_chars: 10,
            ..content("needle")
        },
    );
    assert_eq!(r.text, "min.js:1: needlexxxx [… 996 more bytes]\n");
}

#[test]
fn render_line_cuts_by_characters_and_counts_bytes() {
    assert_eq!(render_line(b"abc\r\n", 10), "abc");
    assert_eq!(render_line("ééééé\n".as_bytes(), 2), "éé [… 6 more bytes]");
    assert_eq!(render_line(b"a\xffbcd", 3), "a\u{FFFD}b [… 2 more bytes]");
    assert_eq!(render_line("😀😀".as_bytes(), 1), "😀 [… 4 more bytes]");
    assert_eq!(render_line(b"abc", 3), "abc");
}

proptest! {
    #[test]
    fn render_line_never_exceeds_the_cap(bytes in proptest::collection::vec(any::<u8>(), 0..200), max in 1usize..50) {
        let out = render_line(&bytes, max);
        let shown = out.split(" [… ").next().unwrap_or("");
        prop_assert!(shown.chars().count() <= max);
        if out.contains(" [… ") {
            let rest: usize = out.rsplit("[… ").next().unwrap().trim_end_matches(" more bytes]").parse().unwrap();
            prop_assert!(rest > 0 && rest <= bytes.len());
        }
    }
}

#[cfg(unix)]
#[test]
fn symlinks_to_outside_files_and_dirs_are_not_searched() {
    let outside = tree(&[("secret.txt", b"needle\n"), ("dir/inner.txt", b"needle\n")]);
    let dir = tree(&[("inside.txt", b"needle\n")]);
    std::os::unix::fs::symlink(
        outside.path().join("secret.txt"),
        dir.path().join("link.txt"),
    )
    .unwrap();
    std::os::unix::fs::symlink(outside.path().join("dir"), dir.path().join("linkdir")).unwrap();
    let r = grep_in(dir.path(), content("needle"));
    assert_eq!(r.text, "inside.txt:1: needle\n");
    assert_eq!(r.files_searched, 1);
}

#[test]
fn a_single_file_root_is_searched() {
    let dir = code_tree();
    let file = dir.path().join("src/lib.rs");
    let r = Grep::new(content("42"))
        .unwrap()
        .run(&file, dir.path(), &open, &Budget::unlimited());
    assert_eq!(r.text, "src/lib.rs:2:     42\n");
}

#[test]
fn paths_are_relative_to_the_display_base_or_absolute_outside_it() {
    let dir = code_tree();
    let g = Grep::new(GrepOptions::new("fn")).unwrap();
    let src = dir.path().join("src");
    let r = g.run(&src, &src, &open, &Budget::unlimited());
    assert_eq!(r.text, "lib.rs\nmain.rs\n");
    let other = tempfile::tempdir().unwrap();
    let r = g.run(&src, other.path(), &open, &Budget::unlimited());
    assert_eq!(r.text, format!("{0}/lib.rs\n{0}/main.rs\n", src.display()));
}

#[test]
fn unreadable_files_are_counted_and_named() {
    let dir = code_tree();
    let refuse = |p: &Path| -> io::Result<File> {
        if p.ends_with("app.py") {
            Err(io::Error::new(io::ErrorKind::PermissionDenied, "refused"))
        } else {
            File::open(p)
        }
    };
    let r = Grep::new(GrepOptions::new("run")).unwrap().run(
        dir.path(),
        dir.path(),
        &refuse,
        &Budget::unlimited(),
    );
    assert_eq!(r.text, "README.md\nsrc/lib.rs\nsrc/main.rs\n");
    assert_eq!(r.errors, 1);
    assert!(
        r.error_samples[0].ends_with("app.py: refused"),
        "{:?}",
        r.error_samples
    );
}

#[test]
fn an_expired_deadline_returns_partial_results_marked_timed_out() {
    let dir = code_tree();
    let g = Grep::new(GrepOptions::new("run")).unwrap();
    let budget = Budget::unlimited().with_deadline(Instant::now() - Duration::from_millis(1));
    let r = g.run(dir.path(), dir.path(), &open, &budget);
    assert!(r.timed_out());
    assert_eq!((r.files_searched, r.text.as_str()), (0, ""));
    let ample = Budget::unlimited().with_time_limit(Duration::from_secs(60));
    assert!(!g.run(dir.path(), dir.path(), &open, &ample).timed_out());
}

#[test]
fn cancellation_stops_the_walk() {
    let dir = code_tree();
    let flag = Arc::new(AtomicBool::new(true));
    let r = Grep::new(GrepOptions::new("run")).unwrap().run(
        dir.path(),
        dir.path(),
        &open,
        &Budget::unlimited().with_cancel(flag),
    );
    assert_eq!((r.stop, r.files_searched), (Some(Stop::Cancelled), 0));
}

/// The fixture for the comparison with the real `rg` binary: code, ignored files,
/// hidden files, a binary file, non-UTF-8 and CRLF lines.
fn rg_fixture() -> TempDir {
    let mut many = String::new();
    for i in 0..300 {
        many.push_str(&format!(
            "line {i} {}\n",
            if i % 7 == 0 { "Needle" } else { "hay" }
        ));
    }
    tree(&[
        (".git/HEAD", b"ref: refs/heads/main\n"),
        (".gitignore", b"build/\n"),
        ("build/gen.rs", b"needle in build\n"),
        (".hidden/h.rs", b"needle hidden\n"),
        (
            "src/main.rs",
            b"fn main() {\n    needle();\n}\n\nfn needle() {}\n",
        ),
        (
            "src/util/mod.rs",
            b"// NEEDLE\npub fn needles() {}\npub fn x() { needle_x(); }\n",
        ),
        ("src/util/many.txt", many.as_bytes()),
        ("docs/a b.md", b"A needle.\r\nNo match.\r\nneedle again\r\n"),
        ("data.bin", b"needle\x00\x01\x02\x03"),
        ("latin1.txt", b"caf\xe9 needle\n"),
        ("a.b/file.txt", b"needle\n"),
        ("a/b.txt", b"needle\n"),
    ])
}

fn rg(dir: &Path, args: &[&str]) -> Option<String> {
    let out = match Command::new("rg").current_dir(dir).args(args).output() {
        Ok(o) => o,
        Err(_) => {
            eprintln!(
                "note: `rg` not found; skipping the comparison with ripgrep (cargo install ripgrep)"
            );
            return None;
        }
    };
    assert!(
        out.status.code().is_some_and(|c| c <= 1),
        "rg {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// rg's `path:line:text` / `path-line-text` lines in our `path:line: text` form.
fn from_rg_content(s: &str) -> String {
    let mut out = String::new();
    for line in s.lines() {
        if line == "--" {
            out.push_str("--\n");
            continue;
        }
        // path never contains ':' or '-<digits>-' in the fixture.
        let (sep, idx) = line
            .match_indices([':', '-'])
            .find(|(i, _)| {
                line[i + 1..]
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_ascii_digit())
            })
            .map(|(i, s)| (s.chars().next().unwrap(), i))
            .unwrap();
        let rest = &line[idx + 1..];
        let end = rest.find(sep).unwrap();
        let text = rest[end + 1..].trim_end_matches('\r');
        let text = if text.is_empty() {
            String::new()
        } else {
            format!(" {text}")
        };
        out.push_str(&format!(
            "{}{sep}{}{sep}{text}\n",
            &line[..idx],
            &rest[..end]
        ));
    }
    out
}

#[test]
fn output_modes_agree_with_ripgrep() {
    let dir = rg_fixture();
    let base = [
        "--smart-case",
        "--sort",
        "path",
        "--color",
        "never",
        "--no-heading",
        "--with-filename",
    ];
    let cases: Vec<(Vec<&str>, GrepOptions)> = vec![
        (
            vec!["-l", "needle"],
            GrepOptions {
                head_limit: 0,
                ..GrepOptions::new("needle")
            },
        ),
        (
            vec!["-c", "needle"],
            GrepOptions {
                head_limit: 0,
                output_mode: OutputMode::Count,
                ..GrepOptions::new("needle")
            },
        ),
        (
            vec!["-c", "-s", "needle"],
            GrepOptions {
                head_limit: 0,
                case: CaseMode::Sensitive,
                output_mode: OutputMode::Count,
                ..GrepOptions::new("needle")
            },
        ),
        (
            vec!["-c", "-w", "needle"],
            GrepOptions {
                head_limit: 0,
                whole_word: true,
                output_mode: OutputMode::Count,
                ..GrepOptions::new("needle")
            },
        ),
        (
            vec!["-n", "needle"],
            GrepOptions {
                head_limit: 0,
                ..content("needle")
            },
        ),
        (
            vec!["-n", "-i", "-F", "NEEDLE("],
            GrepOptions {
                head_limit: 0,
                fixed_strings: true,
                case: CaseMode::Insensitive,
                ..content("NEEDLE(")
            },
        ),
        (
            vec!["-n", "-C", "2", "Needle"],
            GrepOptions {
                head_limit: 0,
                before_context: 2,
                after_context: 2,
                ..content("Needle")
            },
        ),
        (
            vec!["-n", "-A", "1", "-t", "rust", "needle"],
            GrepOptions {
                head_limit: 0,
                after_context: 1,
                file_types: vec!["rust".into()],
                ..content("needle")
            },
        ),
        (
            vec!["-l", "-g", "!*.rs", "needle"],
            GrepOptions {
                head_limit: 0,
                globs: vec!["!*.rs".into()],
                ..GrepOptions::new("needle")
            },
        ),
        (
            vec!["-l", "--no-ignore", "--hidden", "needle"],
            GrepOptions {
                head_limit: 0,
                include_ignored: true,
                hidden: true,
                ..GrepOptions::new("needle")
            },
        ),
        (
            vec!["-n", "-U", "--multiline-dotall", "main.*needle\\(\\)"],
            GrepOptions {
                head_limit: 0,
                multiline: true,
                ..content("main.*needle\\(\\)")
            },
        ),
    ];
    for (args, opts) in cases {
        let mode = opts.output_mode;
        let Some(expected) = rg(dir.path(), &[&base[..], &args[..]].concat()) else {
            return;
        };
        let expected = if mode == OutputMode::Content {
            from_rg_content(&expected)
        } else {
            expected
        };
        assert_eq!(text(&dir, opts), expected, "rg {args:?}");
    }
}

#[test]
fn withheld_files_are_not_searched_but_counted() {
    let dir = tree(&[
        ("app/.env", b"needle=secret\n"),
        ("app/main.rs", b"needle\n"),
    ]);
    let g = Grep::new(GrepOptions {
        hidden: true,
        ..content("needle")
    })
    .unwrap()
    .withholding(Withhold::files(|p| p.ends_with(".env")));
    let r = g.run(dir.path(), dir.path(), &open, &Budget::unlimited());
    assert_eq!(
        (r.text.as_str(), r.withheld, r.files_searched),
        ("app/main.rs:1: needle\n", 1, 1)
    );
}

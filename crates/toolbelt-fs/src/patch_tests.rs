use super::*;
use pretty_assertions::assert_eq;
use proptest::prelude::*;
use std::cell::RefCell;
use std::collections::HashMap;
use std::convert::Infallible;

fn wrap(body: &str) -> String {
    format!("*** Begin Patch\n{body}\n*** End Patch\n")
}

fn scope() -> PathScope {
    PathScope::new("/w", vec![PathBuf::from("/w")])
}

fn ctx(s: &str) -> HunkLine {
    HunkLine::Context(s.to_string())
}
fn del(s: &str) -> HunkLine {
    HunkLine::Remove(s.to_string())
}
fn ins(s: &str) -> HunkLine {
    HunkLine::Add(s.to_string())
}

fn hunks_of(patch: &str) -> Vec<Hunk> {
    match parse(patch).unwrap().ops.remove(0) {
        FileOp::Update { hunks, .. } => hunks,
        other => panic!("not an update: {other:?}"),
    }
}

/// Applies an `*** Update File` body (everything after the header) to `text`.
fn apply(text: &str, body: &str) -> Result<String, PatchError> {
    let hunks = hunks_of(&wrap(&format!("*** Update File: f.txt\n{body}")));
    apply_hunks("f.txt", text, &hunks).map(|a| a.text)
}

fn syntax_error(patch: &str) -> (usize, String) {
    match parse(patch) {
        Err(PatchError::Syntax { line, message }) => (line, message),
        other => panic!("expected a syntax error, got {other:?}"),
    }
}

/// Plans `patch` against in-memory files under `/w`.
fn plan_with(patch: &str, files: &[(&str, &str)]) -> Result<Plan, PlanError<Infallible>> {
    let files: HashMap<PathBuf, String> = files
        .iter()
        .map(|(p, t)| (Path::new("/w").join(p), (*t).to_string()))
        .collect();
    plan(&parse(patch).unwrap(), &scope(), |p: &Path| {
        Ok(files.get(p).cloned())
    })
}

// --- parsing -----------------------------------------------------------------

#[test]
fn parses_every_kind_of_section() {
    let patch = wrap(
        "*** Add File: path/add.py\n+abc\n+def\n*** Delete File: path/delete.py\n*** Update File: path/update.py\n*** Move to: path/update2.py\n@@ def f():\n-    pass\n+    return 123",
    );
    assert_eq!(
        parse(&patch).unwrap(),
        Patch {
            ops: vec![
                FileOp::Add {
                    path: "path/add.py".into(),
                    contents: "abc\ndef\n".into(),
                    line: 2,
                },
                FileOp::Delete {
                    path: "path/delete.py".into(),
                    line: 5,
                },
                FileOp::Update {
                    path: "path/update.py".into(),
                    move_to: Some("path/update2.py".into()),
                    hunks: vec![Hunk {
                        anchors: vec!["def f():".into()],
                        lines: vec![del("    pass"), ins("    return 123")],
                        end_of_file: false,
                        line: 8,
                    }],
                    line: 6,
                },
            ],
        }
    );
}

#[test]
fn forgives_the_wrappers_and_spacing_models_add() {
    let plain = parse(&wrap("*** Update File: a.txt\n@@\n-one\n+two")).unwrap();
    let variants = [
        "apply_patch <<'EOF'\n*** Begin Patch\n*** Update File: a.txt\n@@\n-one\n+two\n*** End Patch\nEOF\n".to_string(),
        "<<EOF\n*** Begin Patch\n*** Update File: a.txt\n@@\n-one\n+two\n*** End Patch\nEOF".to_string(),
        "apply_patch <<\"PATCH\"\n*** Begin Patch\n*** Update File: a.txt\n@@\n-one\n+two\n*** End Patch\nPATCH\n".to_string(),
        "```diff\n*** Begin Patch\n*** Update File: a.txt\n@@\n-one\n+two\n*** End Patch\n```".to_string(),
        "```bash\napply_patch <<'EOF'\n*** Begin Patch\n*** Update File: a.txt\n@@\n-one\n+two\n*** End Patch\nEOF\n```\n".to_string(),
        "\n\n  *** Begin Patch\n*** Update File: a.txt\n@@\n-one\n+two\n*** End Patch  \n\n".to_string(),
        "*** Begin Patch\r\n*** Update File: a.txt\r\n@@\r\n-one\r\n+two\r\n*** End Patch\r\n".to_string(),
        "\u{feff}*** Begin Patch\n*** Update File: a.txt\n@@\n-one\n+two\n*** End Patch".to_string(),
        // Codex fixtures 017 and 020: padded section header and end marker.
        "*** Begin Patch \n  *** Update File: a.txt\n@@\n-one\n+two\n *** End Patch\n".to_string(),
        "*** Begin Patch\n*** update file: a.txt\n@@\n-one\n+two\n*** End Patch".to_string(),
    ];
    for variant in variants {
        let parsed = parse(&variant).unwrap_or_else(|e| panic!("{variant:?}: {e}"));
        assert_eq!(
            without_line_numbers(parsed),
            without_line_numbers(plain.clone()),
            "{variant:?}"
        );
    }
}

fn without_line_numbers(mut patch: Patch) -> Patch {
    for op in &mut patch.ops {
        match op {
            FileOp::Add { line, .. } | FileOp::Delete { line, .. } => *line = 0,
            FileOp::Update { line, hunks, .. } => {
                *line = 0;
                hunks.iter_mut().for_each(|h| h.line = 0);
            }
        }
    }
    patch
}

#[test]
fn first_hunk_may_omit_the_at_at_line() {
    let hunks = hunks_of(&wrap("*** Update File: f.py\n import foo\n+bar"));
    assert_eq!(
        hunks,
        vec![Hunk {
            anchors: vec![],
            lines: vec![ctx("import foo"), ins("bar")],
            end_of_file: false,
            line: 3,
        }]
    );
}

#[test]
fn consecutive_anchors_narrow_one_hunk_and_git_ranges_are_dropped() {
    let hunks = hunks_of(&wrap(
        "*** Update File: f.py\n@@ class A\n@@ -10,4 +10,5 @@ def run(self):\n-    pass\n+    go()\n@@ -30 +31 @@\n-x\n+y",
    ));
    assert_eq!(
        hunks,
        vec![
            Hunk {
                anchors: vec!["class A".into(), "def run(self):".into()],
                lines: vec![del("    pass"), ins("    go()")],
                end_of_file: false,
                line: 3,
            },
            Hunk {
                anchors: vec![],
                lines: vec![del("x"), ins("y")],
                end_of_file: false,
                line: 7,
            },
        ]
    );
}

#[test]
fn blank_lines_are_empty_context_inside_hunks_and_separators_between_sections() {
    let patch = wrap(
        "*** Update File: a.txt\n@@\n a\n\n-b\n+c\n\n\n*** Add File: b.txt\n+x\n\n+y\n\n*** Delete File: c.txt\n",
    );
    assert_eq!(
        parse(&patch).unwrap().ops,
        vec![
            FileOp::Update {
                path: "a.txt".into(),
                move_to: None,
                hunks: vec![Hunk {
                    anchors: vec![],
                    lines: vec![ctx("a"), ctx(""), del("b"), ins("c")],
                    end_of_file: false,
                    line: 3,
                }],
                line: 2,
            },
            FileOp::Add {
                path: "b.txt".into(),
                contents: "x\n\ny\n".into(),
                line: 10,
            },
            FileOp::Delete {
                path: "c.txt".into(),
                line: 15,
            },
        ]
    );
}

#[test]
fn end_of_file_marker_closes_the_hunk() {
    let hunks = hunks_of(&wrap(
        "*** Update File: f\n@@\n a\n-b\n*** End of File\n@@ x\n-y",
    ));
    assert_eq!(
        hunks.iter().map(|h| h.end_of_file).collect::<Vec<_>>(),
        vec![true, false]
    );
}

#[test]
fn add_without_lines_is_an_empty_file_and_move_without_hunks_is_a_rename() {
    let patch = wrap("*** Add File: pkg/__init__.py\n*** Update File: a.rs\n*** Move to: b.rs");
    assert_eq!(
        parse(&patch).unwrap().ops,
        vec![
            FileOp::Add {
                path: "pkg/__init__.py".into(),
                contents: String::new(),
                line: 2,
            },
            FileOp::Update {
                path: "a.rs".into(),
                move_to: Some("b.rs".into()),
                hunks: vec![],
                line: 3,
            },
        ]
    );
}

#[test]
fn context_line_that_looks_like_a_marker_stays_context() {
    let hunks = hunks_of(&wrap(
        "*** Update File: notes.md\n@@\n *** bold ***\n-x\n+y",
    ));
    assert_eq!(
        hunks[0].lines,
        vec![ctx("*** bold ***"), del("x"), ins("y")]
    );
}

#[test]
fn syntax_errors_name_the_line_and_the_fix() {
    let cases: Vec<(String, (usize, &str))> = vec![
        (
            "*** Update File: a\n@@\n-x\n*** End Patch".into(),
            (
                1,
                "the patch must start with `*** Begin Patch`, found `*** Update File: a`.",
            ),
        ),
        (
            "*** Begin Patch\n*** Update File: a\n@@\n-x\n+y".into(),
            (
                5,
                "the patch must end with `*** End Patch`, found `+y`. If it was cut off, send it again complete.",
            ),
        ),
        (
            wrap("*** Update File: a\n@@\n-x\n*** Rename File: b"),
            (
                5,
                "unknown marker `*** Rename File: b`. A file section starts with `*** Add File: <path>`, `*** Delete File: <path>` or `*** Update File: <path>`; inside an update, `*** Move to: <path>` and `*** End of File` are allowed.",
            ),
        ),
        (
            wrap("*** Update File: a\n@@ fn main\n*** Delete File: b"),
            (
                3,
                "this hunk has no lines. After `@@`, write the lines starting with ' ' (unchanged), '-' (removed) or '+' (added).",
            ),
        ),
        (
            wrap("*** Update File: a"),
            (
                2,
                "`*** Update File: a` has no hunks. Follow it with `@@` and lines starting with ' ' (unchanged), '-' (removed) or '+' (added).",
            ),
        ),
        (
            wrap("*** Update File: a\n@@\n-x\nfoo\n+y"),
            (
                5,
                "a hunk line must start with ' ' (unchanged), '-' (removed) or '+' (added), found `foo`. If the line is unchanged, add a space in front of it.",
            ),
        ),
        (
            wrap("*** Add File: a\n+x\ny"),
            (
                4,
                "every line of a new file starts with '+', found `y` in `*** Add File: a`. Put '+' in front of it ('+' alone for an empty line).",
            ),
        ),
        (
            wrap("*** Delete File: a\n-x"),
            (
                3,
                "`*** Delete File: a` takes no lines, found `-x`. To change the file instead, use `*** Update File: a`.",
            ),
        ),
        (
            wrap("*** Move to: b"),
            (
                2,
                "`*** Move to: <path>` must come right after the `*** Update File: <path>` line of the file to move.",
            ),
        ),
        (
            wrap("*** Update File: a\n*** End of File"),
            (
                3,
                "`*** End of File` must follow the lines of a hunk; this hunk has none.",
            ),
        ),
        (
            wrap("-x\n+y"),
            (
                2,
                "expected a file section header (`*** Add File: <path>`, `*** Delete File: <path>` or `*** Update File: <path>`), found `-x`. Every change must be inside a file section.",
            ),
        ),
        (
            "*** Begin Patch\n*** End Patch".into(),
            (
                2,
                "the patch has no file sections. Put `*** Add File: <path>`, `*** Delete File: <path>` or `*** Update File: <path>` sections between `*** Begin Patch` and `*** End Patch`.",
            ),
        ),
        (
            "   \n\n".into(),
            (
                1,
                "the patch is empty. Write `*** Begin Patch`, then file sections, then `*** End Patch`.",
            ),
        ),
        (
            "--- a/x.rs\n+++ b/x.rs\n@@ -1 +1 @@\n-a\n+b".into(),
            (
                1,
                "the patch must start with `*** Begin Patch`, found `--- a/x.rs`. This looks like a unified diff; apply_patch takes its own format: `*** Update File: <path>`, then `@@` and lines starting with ' ', '-' or '+'.",
            ),
        ),
    ];
    for (patch, (line, message)) in cases {
        assert_eq!(
            syntax_error(&patch),
            (line, message.to_string()),
            "{patch:?}"
        );
    }
}

#[test]
fn empty_paths_are_refused() {
    assert_eq!(
        parse(&wrap("*** Add File:   \n+x")),
        Err(PatchError::BadPath {
            path: String::new(),
            line: 2,
            reason: "`*** Add File:` has no path; write the file's path after the colon.".into(),
        })
    );
}

#[test]
fn size_and_file_count_are_capped() {
    let big = wrap(&format!(
        "*** Add File: a\n+{}",
        "x".repeat(MAX_PATCH_BYTES)
    ));
    assert_eq!(
        parse(&big),
        Err(PatchError::TooLarge {
            bytes: big.len(),
            max_bytes: MAX_PATCH_BYTES,
        })
    );
    let many: String = (0..=MAX_PATCH_FILES)
        .map(|i| format!("*** Delete File: f{i}\n"))
        .collect();
    assert_eq!(
        parse(&wrap(&many)),
        Err(PatchError::TooManyFiles {
            files: MAX_PATCH_FILES + 1,
            max_files: MAX_PATCH_FILES,
        })
    );
    let at_limit: String = (0..MAX_PATCH_FILES)
        .map(|i| format!("*** Delete File: f{i}\n"))
        .collect();
    assert_eq!(parse(&wrap(&at_limit)).unwrap().ops.len(), MAX_PATCH_FILES);
}

// --- applying hunks ----------------------------------------------------------

#[test]
fn multiple_hunks_apply_in_order() {
    let out = apply(
        "a\nb\nc\nd\ne\nf\n",
        "@@\n a\n-b\n+B\n@@\n c\n d\n-e\n+E\n@@\n f\n+g\n*** End of File",
    );
    assert_eq!(out.unwrap(), "a\nB\nc\nd\nE\nf\ng\n");
}

#[test]
fn reports_counts_and_positions() {
    let hunks = hunks_of(&wrap(
        "*** Update File: f\n@@\n-b\n+B\n+B2\n@@ d\n  e  \n-f",
    ));
    assert_eq!(
        apply_hunks("f", "a\nb\nc\nd\ne\nf\n", &hunks).unwrap(),
        Applied {
            text: "a\nB\nB2\nc\nd\ne\n".into(),
            added: 2,
            removed: 2,
            matches: vec![
                HunkMatch {
                    hunk: 1,
                    line: 2,
                    tier: MatchTier::Exact,
                },
                HunkMatch {
                    hunk: 2,
                    line: 5,
                    tier: MatchTier::Whitespace,
                },
            ],
        }
    );
}

#[test]
fn pure_additions_go_to_the_end_or_after_the_anchor() {
    // Codex fixture 016: a bare `@@` with only `+` lines appends.
    assert_eq!(
        apply("line1\nline2\n", "@@\n+added 1\n+added 2").unwrap(),
        "line1\nline2\nadded 1\nadded 2\n"
    );
    assert_eq!(
        apply("fn a() {}\nfn b() {}\n", "@@ fn a() {}\n+// after a").unwrap(),
        "fn a() {}\n// after a\nfn b() {}\n"
    );
    assert_eq!(apply("", "@@\n+first").unwrap(), "first\n");
}

#[test]
fn deletion_only_hunk() {
    assert_eq!(
        apply("line1\nline2\nline3\n", "@@\n line1\n-line2\n line3").unwrap(),
        "line1\nline3\n"
    );
}

#[test]
fn anchors_pick_the_right_occurrence() {
    let text = "fn a() {\n    x = 1;\n}\nfn b() {\n    x = 1;\n}\n";
    assert_eq!(
        apply(text, "@@ fn b() {\n-    x = 1;\n+    x = 2;").unwrap(),
        "fn a() {\n    x = 1;\n}\nfn b() {\n    x = 2;\n}\n"
    );
    // Several anchors narrow step by step; an anchor may be a line's beginning.
    let text =
        "class A:\n    def run(self):\n        pass\nclass B:\n    def run(self):\n        pass\n";
    assert_eq!(
        apply(text, "@@ class B\n@@ def run\n-        pass\n+        go()").unwrap(),
        "class A:\n    def run(self):\n        pass\nclass B:\n    def run(self):\n        go()\n"
    );
}

#[test]
fn anchor_repeated_as_first_context_line() {
    let text = "def f():\n    return 1\n";
    assert_eq!(
        apply(text, "@@ def f():\n def f():\n-    return 1\n+    return 2").unwrap(),
        "def f():\n    return 2\n"
    );
}

#[test]
fn end_of_file_prefers_the_last_occurrence() {
    let text = "x\nend\nx\nend\n";
    assert_eq!(
        apply(text, "@@\n x\n-end\n+END\n*** End of File").unwrap(),
        "x\nend\nx\nEND\n"
    );
    assert_eq!(
        apply(text, "@@\n x\n-end\n+END").unwrap(),
        "x\nEND\nx\nend\n"
    );
}

#[test]
fn trailing_blank_context_is_forgiven() {
    assert_eq!(apply("a\nb", "@@\n-b\n+c\n \n").unwrap(), "a\nc");
}

#[test]
fn crlf_files_stay_crlf_and_untouched_bytes_are_kept() {
    let text = "one\r\ntwo\r\nthree\r\n";
    assert_eq!(
        apply(text, "@@\n one\n-two\n+TWO\n+two and a half").unwrap(),
        "one\r\nTWO\r\ntwo and a half\r\nthree\r\n"
    );
    // Mixed endings: the lines that stay keep theirs; new ones take the majority.
    let text = "a\r\nb\nc\r\nd\r\n";
    assert_eq!(
        apply(text, "@@\n b\n+new\n c").unwrap(),
        "a\r\nb\nnew\r\nc\r\nd\r\n"
    );
}

#[test]
fn final_newline_state_is_kept() {
    assert_eq!(apply("a\nb", "@@\n-b\n+c").unwrap(), "a\nc");
    assert_eq!(apply("a\nb", "@@\n b\n+c").unwrap(), "a\nb\nc");
    assert_eq!(apply("a\r\nb", "@@\n b\n+c").unwrap(), "a\r\nb\r\nc");
    assert_eq!(apply("a\nb\n", "@@\n b\n+c").unwrap(), "a\nb\nc\n");
    assert_eq!(apply("a\nb\n", "@@\n-a\n-b").unwrap(), "");
}

#[test]
fn loose_matches_keep_the_file_s_unchanged_lines() {
    // Trailing whitespace, indentation and typographic quotes differ in the file;
    // the context lines keep the file's bytes.
    let text = "let s = “hi”;  \n\tlet t = 1;\nlet u = 2;\n";
    let hunks = hunks_of(&wrap(
        "*** Update File: f\n@@\n let s = \"hi\";\n     let t = 1;\n-let u = 2;\n+let u = 3;",
    ));
    let applied = apply_hunks("f", text, &hunks).unwrap();
    assert_eq!(
        (applied.text.as_str(), applied.matches[0].tier),
        (
            "let s = “hi”;  \n\tlet t = 1;\nlet u = 3;\n",
            MatchTier::Punctuation
        )
    );
}

#[test]
fn mismatch_names_the_file_hunk_expected_lines_and_closest_region() {
    let text = "fn main() {\n    let x = 10;\n    let y = 2;\n    run(x, y);\n}\n";
    let err = apply(
        text,
        "@@\n     let x = 1;\n     let y = 2;\n-    run(x);\n+    run(y);",
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "f.txt: 1 of 1 hunk did not match the file.
hunk 1 (patch line 3): these 3 lines were not found at or after line 1:
       |     let x = 1;
       |     let y = 2;
       |     run(x);
  closest: lines 2-4 (1 of 3 equal ignoring whitespace):
      2|     let x = 10;
      3|     let y = 2;
      4|     run(x, y);
  Read the file again and copy the unchanged (' ') and removed ('-') lines exactly as they are now."
    );
}

#[test]
fn every_failing_hunk_is_reported() {
    let text = "a\nb\nc\n";
    let err = apply(text, "@@ nowhere\n-a\n@@\n-b\n+B\n@@\n-zzz").unwrap_err();
    let PatchError::Mismatch {
        failures, hunks, ..
    } = err
    else {
        panic!("expected a mismatch, got {err:?}");
    };
    assert_eq!(
        (hunks, failures),
        (
            3,
            vec![
                HunkFailure {
                    hunk: 1,
                    line: 3,
                    kind: FailureKind::AnchorNotFound {
                        anchor: "nowhere".into(),
                        from_line: 1,
                        closest: None,
                    },
                },
                HunkFailure {
                    hunk: 3,
                    line: 8,
                    kind: FailureKind::LinesNotFound {
                        expected: vec!["zzz".into()],
                        from_line: 3,
                        earlier_at: None,
                        closest: None,
                    },
                },
            ]
        )
    );
}

#[test]
fn anchor_not_found_offers_the_closest_line() {
    let text = "fn handle_request(req) {\n    ok\n}\n";
    let err = apply(text, "@@ fn handle_requests(req) {\n-    ok\n+    done").unwrap_err();
    assert_eq!(
        err.to_string(),
        "f.txt: 1 of 1 hunk did not match the file.
hunk 1 (patch line 3): the anchor `@@ fn handle_requests(req) {` is not a line of the file at or after line 1. Closest: line 1 `fn handle_request(req) {`. Copy the anchor from a line of the file as it is now, or use a bare `@@`."
    );
}

#[test]
fn out_of_order_hunks_say_so() {
    let err = apply("a\nb\nc\nd\n", "@@\n-c\n+C\n@@\n-a\n+A").unwrap_err();
    assert_eq!(
        err.to_string(),
        "f.txt: 1 of 2 hunks did not match the file.
hunk 2 (patch line 6): its lines are at line 1, before the previous hunk or anchor (searched from line 4). Hunks must be in file order: reorder them."
    );
}

// --- planning ----------------------------------------------------------------

#[test]
fn plans_add_update_delete_and_move() {
    let patch = wrap(
        "*** Add File: new/dir/n.txt\n+hello\n*** Update File: u.txt\n@@\n-old\n+new\n*** Delete File: d.txt\n*** Update File: m.txt\n*** Move to: moved/m2.txt\n@@\n-x\n+y",
    );
    let plan = plan_with(
        &patch,
        &[("u.txt", "old\n"), ("d.txt", "1\n2\n"), ("m.txt", "x\n")],
    )
    .unwrap();
    let summary: Vec<_> = plan
        .ops
        .iter()
        .map(|o| {
            (
                o.action,
                o.display.clone(),
                o.moved_from.clone(),
                o.added,
                o.removed,
            )
        })
        .collect();
    assert_eq!(
        summary,
        vec![
            (Action::Add, "new/dir/n.txt".into(), None, 1, 0),
            (Action::Update, "u.txt".into(), None, 1, 1),
            (Action::Delete, "d.txt".into(), None, 0, 2),
            (
                Action::Move,
                "moved/m2.txt".into(),
                Some(PathBuf::from("/w/m.txt")),
                1,
                1
            ),
        ]
    );
    let effect =
        |path: &str, before: Option<&str>, after: Option<&str>, from: Option<&str>| FileEffect {
            path: PathBuf::from(path),
            display: path.trim_start_matches("/w/").to_string(),
            before: before.map(str::to_string),
            after: after.map(str::to_string),
            derived_from: from.map(PathBuf::from),
        };
    assert_eq!(
        plan.files,
        vec![
            effect("/w/d.txt", Some("1\n2\n"), None, None),
            effect("/w/m.txt", Some("x\n"), None, None),
            effect("/w/moved/m2.txt", None, Some("y\n"), Some("/w/m.txt")),
            effect("/w/new/dir/n.txt", None, Some("hello\n"), None),
            effect("/w/u.txt", Some("old\n"), Some("new\n"), Some("/w/u.txt")),
        ]
    );
}

#[test]
fn later_sections_see_earlier_ones() {
    let patch = wrap(
        "*** Delete File: a.txt\n*** Add File: a.txt\n+fresh\n*** Update File: a.txt\n@@\n-fresh\n+fresher",
    );
    let plan = plan_with(&patch, &[("a.txt", "stale\n")]).unwrap();
    assert_eq!(
        plan.files,
        vec![FileEffect {
            path: PathBuf::from("/w/a.txt"),
            display: "a.txt".into(),
            before: Some("stale\n".into()),
            after: Some("fresher\n".into()),
            derived_from: None,
        }]
    );
}

#[test]
fn reads_each_path_once_and_lists_paths() {
    let patch = parse(&wrap(
        "*** Update File: ./a.txt\n@@\n-1\n+2\n*** Update File: sub/../a.txt\n@@\n-2\n+3\n*** Update File: b\n*** Move to: c",
    ))
    .unwrap();
    assert_eq!(
        patch.paths(&scope()).unwrap(),
        vec![
            PathBuf::from("/w/a.txt"),
            PathBuf::from("/w/b"),
            PathBuf::from("/w/c"),
        ]
    );
    let reads = RefCell::new(Vec::new());
    let plan = plan(&patch, &scope(), |p: &Path| {
        reads.borrow_mut().push(p.to_path_buf());
        Ok::<_, Infallible>(match p.to_str() {
            Some("/w/a.txt") => Some("1\n".to_string()),
            Some("/w/b") => Some("b\n".to_string()),
            _ => None,
        })
    })
    .unwrap();
    assert_eq!(
        reads.into_inner(),
        vec![
            PathBuf::from("/w/a.txt"),
            PathBuf::from("/w/b"),
            PathBuf::from("/w/c"),
        ]
    );
    assert_eq!(plan.files[0].after.as_deref(), Some("3\n"));
}

#[test]
fn file_state_errors() {
    let cases = [
        (
            wrap("*** Add File: a.txt\n+x"),
            "patch line 2: a.txt already exists. Change it with `*** Update File: a.txt`, or delete it first in the same patch with `*** Delete File: a.txt`.",
        ),
        (
            wrap("*** Update File: nope.txt\n@@\n-x"),
            "patch line 2: nope.txt does not exist. To create it, use `*** Add File: <path>` with every line prefixed by '+'.",
        ),
        (
            wrap("*** Delete File: nope.txt"),
            "patch line 2: nope.txt does not exist. There is nothing to delete: remove this section.",
        ),
        (
            wrap("*** Update File: a.txt\n*** Move to: b.txt\n@@\n-x\n+y"),
            "patch line 2: cannot move to b.txt: it already exists. Delete it first in the same patch with `*** Delete File: b.txt`, or choose another name.",
        ),
    ];
    for (patch, message) in cases {
        let err = plan_with(&patch, &[("a.txt", "x\n"), ("b.txt", "b\n")]).unwrap_err();
        assert_eq!(err.to_string(), message);
    }
}

#[test]
fn paths_leaving_the_workspace_are_refused() {
    let scope = PathScope::new("/w/sub", vec![PathBuf::from("/w")]);
    let cases = [
        (
            "../../etc/passwd",
            "../../etc/passwd leaves the workspace (/w) through `..`; use a path inside it",
        ),
        (
            "/etc/passwd",
            "/etc/passwd is outside the workspace (/w); use a path inside it",
        ),
        (
            "/w2/x",
            "/w2/x is outside the workspace (/w); use a path inside it",
        ),
        (
            "/../../w/x",
            "/../../w/x is outside the workspace (/w); use a path inside it",
        ),
        ("a\0b", "path \"a\\0b\" contains a NUL byte"),
    ];
    for (raw, reason) in cases {
        assert_eq!(
            scope.locate(raw).map_err(|e| e.to_string()),
            Err(reason.to_string()),
            "{raw}"
        );
    }
    assert_eq!(scope.locate("../x"), Ok(PathBuf::from("/w/x")));
    assert_eq!(scope.locate("/w/sub/./y"), Ok(PathBuf::from("/w/sub/y")));
    assert_eq!(
        scope.locate("a\0b").map_err(|e| e.to_string()),
        Err("path \"a\\0b\" contains a NUL byte".into())
    );
    assert_eq!(scope.display(Path::new("/w/sub/y")), "y");
    assert_eq!(scope.display(Path::new("/w/x")), "/w/x");

    let err = plan_with(&wrap("*** Add File: ../x\n+1"), &[]).unwrap_err();
    assert_eq!(
        err,
        PlanError::Patch(PatchError::PathRefused {
            path: "../x".into(),
            line: 2,
            source: ScopeError::ClimbsOut {
                path: "../x".into(),
                roots: vec![PathBuf::from("/w")],
            },
        })
    );
    assert_eq!(
        toolbelt_core::error_chain(&err),
        "patch line 2: ../x leaves the workspace (/w) through `..`; use a path inside it"
    );
}

#[test]
fn a_failing_hunk_in_a_later_file_fails_the_whole_plan() {
    let patch = wrap(
        "*** Add File: created.txt\n+hi\n*** Update File: a.txt\n@@\n-a\n+A\n*** Update File: b.txt\n@@\n-missing\n+x",
    );
    let err = plan_with(&patch, &[("a.txt", "a\n"), ("b.txt", "b\n")]).unwrap_err();
    assert!(
        matches!(&err, PlanError::Patch(PatchError::Mismatch { path, .. }) if path == "b.txt"),
        "{err:?}"
    );
}

#[test]
fn read_errors_pass_through() {
    let patch = parse(&wrap("*** Delete File: a")).unwrap();
    let err = plan(&patch, &scope(), |_: &Path| {
        Err::<Option<String>, _>("disk on fire")
    })
    .unwrap_err();
    assert_eq!(err, PlanError::Read("disk on fire"));
}

#[test]
fn moving_onto_itself_is_an_update() {
    let patch = wrap("*** Update File: a.txt\n*** Move to: ./a.txt\n@@\n-x\n+y");
    let plan = plan_with(&patch, &[("a.txt", "x\n")]).unwrap();
    assert_eq!((plan.ops[0].action, plan.files.len()), (Action::Update, 1));
}

// --- properties --------------------------------------------------------------

proptest! {
    #[test]
    fn parse_never_panics(text in "\\PC*") {
        let _ = parse(&text);
    }

    #[test]
    fn parse_never_panics_on_patch_like_text(
        lines in proptest::collection::vec(
            prop_oneof![
                Just("*** Begin Patch".to_string()),
                Just("*** End Patch".to_string()),
                Just("*** Update File: a".to_string()),
                Just("*** Add File: b".to_string()),
                Just("*** Delete File: c".to_string()),
                Just("*** Move to: d".to_string()),
                Just("*** End of File".to_string()),
                Just("@@".to_string()),
                Just("<<'EOF'".to_string()),
                Just("EOF".to_string()),
                "[ +\\-@*]{0,3}[a-zé\\r ]{0,4}",
            ],
            0..24,
        )
    ) {
        let text = lines.join("\n");
        if let Ok(patch) = parse(&text) {
            let _ = plan(&patch, &scope(), |_: &Path| Ok::<_, Infallible>(Some("a\nb\n\nc\r\n".to_string())));
        }
    }

    /// A hunk cut from the file itself replaces exactly its window; every other
    /// byte, including each line's ending, is unchanged.
    #[test]
    fn exact_hunks_touch_only_their_window(
        lines in proptest::collection::vec(("[a-c ]{0,3}", prop_oneof![Just("\n"), Just("\r\n")]), 1..12),
        start in 0usize..12,
        len in 1usize..4,
        new in proptest::collection::vec("[x-z]{1,3}", 0..3),
    ) {
        let start = start % lines.len();
        let len = len.min(lines.len() - start);
        let text: String = lines.iter().map(|(t, e)| format!("{t}{e}")).collect();
        let hunks = vec![Hunk {
            anchors: vec![],
            lines: lines[start..start + len]
                .iter()
                .map(|(t, _)| HunkLine::Remove(t.clone()))
                .chain(new.iter().map(|n| HunkLine::Add(n.clone())))
                .collect(),
            end_of_file: false,
            line: 1,
        }];
        let applied = apply_hunks("f", &text, &hunks).unwrap();
        let crlf = lines.iter().filter(|(_, e)| *e == "\r\n").count();
        let eol = if crlf > lines.len() - crlf { "\r\n" } else { "\n" };
        let at = applied.matches[0].line - 1;
        let expected: String = lines[..at]
            .iter()
            .map(|(t, e)| format!("{t}{e}"))
            .chain(new.iter().map(|n| format!("{n}{eol}")))
            .chain(lines[at + len..].iter().map(|(t, e)| format!("{t}{e}")))
            .collect();
        // The window found is the first one equal to the hunk's lines.
        prop_assert!(at <= start);
        prop_assert_eq!(
            lines[at..at + len].iter().map(|(t, _)| t.as_str()).collect::<Vec<_>>(),
            lines[start..start + len].iter().map(|(t, _)| t.as_str()).collect::<Vec<_>>()
        );
        prop_assert_eq!(applied.text, expected);
    }
}

/// Every character the engines fold to ASCII.
fn typographic_chars() -> Vec<char> {
    ('\u{00A0}'..='\u{3000}')
        .filter(|c| crate::text::fold_typography(*c).is_some())
        .collect()
}

proptest! {
    /// The edit engine and the patch engine take the same typographic characters
    /// for their ASCII stand-ins: a line written with them in the file is found by
    /// an `old_string` and a hunk written in ASCII, and the other way round.
    #[test]
    fn edit_and_patch_fold_the_same_typography(
        words in prop::collection::vec("[a-z]{1,6}", 2..6),
        picks in prop::collection::vec(any::<prop::sample::Index>(), 5),
        typographic_in_file in any::<bool>(),
    ) {
        let chars = typographic_chars();
        let mut fancy = String::new();
        for (i, word) in words.iter().enumerate() {
            if i > 0 {
                fancy.push(chars[picks[i % picks.len()].index(chars.len())]);
            }
            fancy.push_str(word);
        }
        let plain = crate::text::fold_typography_str(&fancy);
        prop_assume!(plain != fancy);
        let (in_file, asked) = if typographic_in_file { (&fancy, &plain) } else { (&plain, &fancy) };
        let text = format!("first\n{in_file}\nlast\n");
        let edit = crate::edit::apply_edit(
            &text,
            crate::edit::Edit { old_string: asked, new_string: "replaced", replace_all: false },
        );
        prop_assert!(edit.is_ok(), "edit: {:?}", edit.err());
        let patched = apply(&text, &format!("@@\n first\n-{asked}\n+replaced\n last"));
        prop_assert!(patched.is_ok(), "patch: {:?}", patched.err());
        prop_assert_eq!(patched.unwrap(), "first\nreplaced\nlast\n");
    }
}

#[test]
fn patch_errors_for_the_model_say_nothing_was_changed() {
    use toolbelt_core::{ErrorCode, ToolError};
    let err: ToolError = scope().resolve_at("/etc/passwd", 3).unwrap_err().into();
    assert_eq!(err.code, ErrorCode::AccessDenied);
    assert_eq!(
        err.message,
        "patch line 3: /etc/passwd is outside the workspace (/w); use a path inside it\nNo file was changed."
    );
    assert_eq!(err.hint, None);
    let err: ToolError = parse("not a patch").unwrap_err().into();
    assert_eq!(err.code, ErrorCode::InvalidParams);
    assert!(
        err.hint
            .unwrap()
            .starts_with("the format is `*** Begin Patch`")
    );
}

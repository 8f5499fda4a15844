#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{self, Write};
use std::path::Path;

use super::page::new_output_id;
use super::*;
use crate::envelope::{Envelope, Status};
use crate::human::human_bytes;
use pretty_assertions::assert_eq;
use proptest::prelude::*;
use serde_json::json;

/// A small budget with round numbers, for exact expectations.
fn small_budget() -> OutputBudget {
    OutputBudget {
        max_bytes: 1_000,
        head_bytes: 120,
        tail_bytes: 150,
        max_error_lines: 4,
        max_line_bytes: 60,
        reader: Some("read_output".into()),
    }
}

fn redact(text: &str, id: Option<&str>) -> String {
    match id {
        Some(id) => text.replace(id, "out_[id]"),
        None => text.to_string(),
    }
}

fn spilled_bytes(c: &Captured) -> Vec<u8> {
    std::fs::read(c.spill_path.as_ref().unwrap()).unwrap()
}

/// `n` numbered log lines; `special` replaces some of them.
fn log(n: u64, special: &[(u64, &str)]) -> String {
    let mut out = String::new();
    for i in 1..=n {
        match special.iter().find(|(at, _)| *at == i) {
            Some((_, line)) => out.push_str(line),
            None => out.push_str(&format!("step {i:04}: all good")),
        }
        out.push('\n');
    }
    out
}

fn capture_chunked(bytes: &[u8], chunk: usize, budget: &OutputBudget) -> Captured {
    let mut sink = OutputSink::without_spill(budget.clone());
    for part in bytes.chunks(chunk.max(1)) {
        sink.write(part).unwrap();
    }
    sink.finish().unwrap()
}

#[test]
fn default_budget_splits_thirty_thousand_bytes() {
    assert_eq!(
        OutputBudget::default(),
        OutputBudget {
            max_bytes: 30_000,
            head_bytes: 7_500,
            tail_bytes: 10_500,
            max_error_lines: 40,
            max_line_bytes: 256,
            reader: None,
        }
    );
}

#[test]
fn under_budget_is_unchanged_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let spill = dir.path().join("tool-output");
    let text = "line one\nline two with error: none really\n";
    let c = apply_budget(text, &OutputBudget::default(), &spill).unwrap();
    assert_eq!(
        c,
        Captured {
            text: text.to_string(),
            truncated: false,
            output_id: None,
            total_bytes: text.len() as u64,
            total_lines: 2,
            spill_path: None,
            omitted_bytes: 0,
            omitted_lines: 0,
            error_lines: 0,
        }
    );
    assert!(!spill.exists(), "the spill dir is created only when needed");
}

#[test]
fn exactly_at_budget_is_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let text = "x".repeat(999) + "\n";
    let c = apply_budget(&text, &small_budget(), dir.path()).unwrap();
    assert!(!c.truncated);
    assert_eq!(c.text, text);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn one_byte_over_budget_spills_everything() {
    let dir = tempfile::tempdir().unwrap();
    let spill = dir.path().join("nested").join("tool-output");
    let text = "y".repeat(1_000) + "\n";
    let c = apply_budget(&text, &small_budget(), &spill).unwrap();
    assert!(c.truncated);
    assert!(c.text.len() <= 1_000, "{} bytes", c.text.len());
    let id = c.output_id.clone().unwrap();
    assert!(is_valid_output_id(&id), "{id}");
    assert_eq!(c.spill_path, Some(spill.join(format!("{id}.txt"))));
    assert_eq!(spilled_bytes(&c), text.as_bytes());
    assert_eq!((c.total_bytes, c.total_lines), (1_001, 1));
}

#[test]
fn keeps_head_tail_and_middle_error_lines() {
    let text = log(
        400,
        &[
            (100, "error[E0425]: cannot find value `limit` in this scope"),
            (200, "thread 'main' panicked at src/lib.rs:10:5"),
            (250, "warning: unused variable: `x`"),
            (399, "test result: FAILED. 1 passed; 1 failed"),
        ],
    );
    let dir = tempfile::tempdir().unwrap();
    let c = apply_budget(&text, &small_budget(), dir.path()).unwrap();
    let id = c.output_id.clone().unwrap();
    assert!(c.text.len() <= 1_000);
    assert!(c.text.starts_with("step 0001: all good\n"), "{}", c.text);
    assert!(
        c.text
            .contains("[line 100] error[E0425]: cannot find value `limit` in this scope\n")
    );
    assert!(
        c.text
            .contains("[line 200] thread 'main' panicked at src/lib.rs:10:5\n")
    );
    // Two error lines leave room for warnings within `max_error_lines`.
    assert!(
        c.text
            .contains("[line 250] warning: unused variable: `x`\n")
    );
    // In the tail: shown in place, not as an extracted error line.
    assert!(
        c.text
            .contains("\ntest result: FAILED. 1 passed; 1 failed\nstep 0400: all good\n")
    );
    assert!(!c.text.contains("[line 399]"));
    assert!(!c.text.contains("step 0300"));
    assert_eq!(c.error_lines, 3);
    assert!(c.text.ends_with(&format!(
        "; read them with read_output(output_id={id}, offset=7)]"
    )));
}

#[test]
fn truncated_rendering_markers() {
    let text = log(
        60,
        &[
            (20, "error: linking with `cc` failed: exit status: 1"),
            (21, "error: linking with `cc` failed: exit status: 1"),
            (22, "error: linking with `cc` failed: exit status: 1"),
            (
                30,
                "error: a very long diagnostic line that goes on and on well past the sixty byte cap",
            ),
        ],
    );
    let dir = tempfile::tempdir().unwrap();
    let c = apply_budget(&text, &small_budget(), dir.path()).unwrap();
    insta::assert_snapshot!(redact(&c.text, c.output_id.as_deref()), @r"
    step 0001: all good
    step 0002: all good
    step 0003: all good
    step 0004: all good
    step 0005: all good
    step 0006: all good
    [... lines 7-53 omitted (47 lines, 1.1 KB); full output: output_id=out_[id], read it with read_output(output_id, offset, limit); the omitted lines that look like errors or warnings: ...]
    [line 20] error: linking with `cc` failed: exit status: 1 [+2 identical lines]
    [line 30] error: a very long diagnostic line that goes on and on well [... line cut]
    [... end of error lines ...]
    step 0054: all good
    step 0055: all good
    step 0056: all good
    step 0057: all good
    step 0058: all good
    step 0059: all good
    step 0060: all good
    [output truncated: 60 lines (1.3 KB) in all, lines 7-53 not shown above; read them with read_output(output_id=out_[id], offset=7)]
    ");
    assert_eq!(
        (c.omitted_lines, c.omitted_bytes, c.error_lines),
        (47, 1_088, 4)
    );
}

#[test]
fn in_memory_truncation_says_the_output_was_not_saved() {
    let text = log(300, &[(150, "FAILED tests/test_api.py::test_login")]);
    let cut = truncate_in_memory(&text, &small_budget()).text;
    assert!(cut.len() <= 1_000);
    assert!(cut.contains("; the full output could not be saved; the omitted lines that look like errors or warnings: ...]\n[line 150] FAILED tests/test_api.py::test_login\n"), "{cut}");
    assert!(cut.ends_with("not shown above]"), "{cut}");
}

#[test]
fn identical_error_lines_are_counted_once() {
    let mut special: Vec<(u64, &str)> = (100..200)
        .map(|i| (i, "Error: connection refused"))
        .collect();
    special.push((250, "Error: disk full"));
    let text = log(400, &special);
    let c = apply_budget(&text, &small_budget(), tempfile::tempdir().unwrap().path()).unwrap();
    assert!(c.text.contains("[line 100] Error: connection refused [+99 identical lines]\n[line 250] Error: disk full\n[... end of error lines ...]\n"), "{}", c.text);
    assert_eq!(c.error_lines, 101);
}

#[test]
fn error_lines_are_capped_keeping_first_and_last() {
    let lines: Vec<String> = (0..200)
        .map(|i| format!("error: failure number {i}"))
        .collect();
    let special: Vec<(u64, &str)> = lines
        .iter()
        .enumerate()
        .map(|(i, l)| (100 + i as u64, l.as_str()))
        .collect();
    let text = log(400, &special);
    let c = truncate_in_memory_captured(&text, &small_budget());
    let errors: Vec<&str> = c.text.lines().filter(|l| l.starts_with("[line ")).collect();
    assert_eq!(
        errors,
        [
            "[line 100] error: failure number 0",
            "[line 101] error: failure number 1",
            "[line 298] error: failure number 198",
            "[line 299] error: failure number 199",
        ]
    );
    assert!(
        c.text
            .contains("[... end of error lines; 196 more not shown ...]")
    );
}

fn truncate_in_memory_captured(text: &str, budget: &OutputBudget) -> Captured {
    capture_chunked(text.as_bytes(), text.len(), budget)
}

#[test]
fn error_lines_outrank_warnings() {
    let warnings: Vec<(u64, &str)> = (100..110).map(|i| (i, "")).collect();
    let mut special: Vec<(u64, String)> = warnings
        .iter()
        .map(|(i, _)| (*i, format!("warning: unused import number {i}")))
        .collect();
    special.push((200, "fatal: not a git repository".to_string()));
    let refs: Vec<(u64, &str)> = special.iter().map(|(i, s)| (*i, s.as_str())).collect();
    let c = truncate_in_memory_captured(&log(400, &refs), &small_budget());
    let errors: Vec<&str> = c.text.lines().filter(|l| l.starts_with("[line ")).collect();
    assert_eq!(
        errors,
        [
            "[line 100] warning: unused import number 100",
            "[line 101] warning: unused import number 101",
            "[line 102] warning: unused import number 102",
            "[line 200] fatal: not a git repository",
        ]
    );
}

#[test]
fn multibyte_characters_split_across_writes() {
    let mut text = String::new();
    for i in 0..500 {
        text.push_str(&format!("{i}: héllo wörld ✓ 🎉 日本語\n"));
        if i == 250 {
            text.push_str("error: ✗ ünexpected tökën 🎉\n");
        }
    }
    let budget = small_budget();
    let whole = capture_chunked(text.as_bytes(), text.len(), &budget);
    assert!(whole.truncated);
    assert!(!whole.text.contains('\u{FFFD}'), "{}", whole.text);
    assert!(
        whole
            .text
            .contains("[line 252] error: ✗ ünexpected tökën 🎉\n")
    );
    for chunk in [1, 2, 3, 5, 7, 64, 4096] {
        let c = capture_chunked(text.as_bytes(), chunk, &budget);
        assert_eq!(c, whole, "chunk size {chunk}");
    }
    // The spill file is the bytes as written, one byte at a time.
    let dir = tempfile::tempdir().unwrap();
    let mut sink = OutputSink::new(budget, dir.path().to_path_buf());
    for b in text.as_bytes() {
        sink.write(std::slice::from_ref(b)).unwrap();
    }
    let c = sink.finish().unwrap();
    assert_eq!(spilled_bytes(&c), text.as_bytes());
}

#[test]
fn head_and_tail_never_split_a_character() {
    // No newlines: cuts fall at arbitrary byte offsets inside 3-byte characters.
    let text = "日本語".repeat(1_000);
    let c = truncate_in_memory_captured(&text, &small_budget());
    assert!(!c.text.contains('\u{FFFD}'));
    assert!(c.text.len() <= 1_000);
}

#[test]
fn invalid_utf8_is_spilled_exactly_and_replaced_in_text() {
    let mut bytes = Vec::new();
    for i in 0..300u32 {
        bytes.extend_from_slice(format!("row {i} ").as_bytes());
        bytes.extend_from_slice(&[0xFF, 0xC3, b'\n']);
    }
    let dir = tempfile::tempdir().unwrap();
    let mut sink = OutputSink::new(small_budget(), dir.path().to_path_buf());
    sink.write(&bytes).unwrap();
    let c = sink.finish().unwrap();
    assert!(c.truncated);
    assert!(c.text.len() <= 1_000);
    assert!(c.text.starts_with("row 0 \u{FFFD}\u{FFFD}\n"));
    assert_eq!(spilled_bytes(&c), bytes);
}

#[test]
fn invalid_utf8_within_byte_budget_but_over_as_text_is_truncated() {
    // 600 bytes that become 1,800 bytes of U+FFFD.
    let bytes = vec![0xFF; 600];
    let dir = tempfile::tempdir().unwrap();
    let mut sink = OutputSink::new(small_budget(), dir.path().to_path_buf());
    sink.write(&bytes).unwrap();
    let c = sink.finish().unwrap();
    assert!(c.truncated);
    assert!(c.text.len() <= 1_000, "{} bytes", c.text.len());
    assert_eq!(spilled_bytes(&c), bytes);
}

#[test]
fn one_huge_line_without_newline() {
    let dir = tempfile::tempdir().unwrap();
    let mut sink = OutputSink::new(small_budget(), dir.path().to_path_buf());
    let chunk = [b'a'; 64 * 1024];
    for _ in 0..80 {
        sink.write(&chunk).unwrap();
    }
    let c = sink.finish().unwrap();
    assert_eq!((c.total_bytes, c.total_lines), (80 * 64 * 1024, 1));
    assert!(c.text.len() <= 1_000);
    assert!(
        c.text
            .contains("[... lines 1-1 omitted (1 line, 5.2 MB); full output: output_id="),
        "{}",
        c.text
    );
    assert_eq!(
        std::fs::metadata(c.spill_path.unwrap()).unwrap().len(),
        80 * 64 * 1024
    );
}

#[test]
fn crlf_lines_are_counted_and_shown_without_carriage_returns() {
    let text = log(300, &[(150, "ERROR Timeout waiting for server")]).replace('\n', "\r\n");
    let c = truncate_in_memory_captured(&text, &small_budget());
    assert_eq!(c.total_lines, 300);
    assert!(
        c.text
            .contains("[line 150] ERROR Timeout waiting for server\n"),
        "{}",
        c.text
    );
    assert!(
        c.text
            .contains("step 0300: all good\r\n[output truncated: 300 lines")
    );
}

#[test]
fn tiny_budgets_still_hold() {
    let text = log(100, &[(50, "error: x")]);
    for max_bytes in [0, 1, 10, 100, 400, 600] {
        let budget = OutputBudget::with_max_bytes(max_bytes);
        let c = truncate_in_memory_captured(&text, &budget);
        assert!(
            c.text.len() <= max_bytes,
            "{max_bytes}: {} bytes",
            c.text.len()
        );
    }
    // A head and tail larger than the budget are scaled down.
    let budget = OutputBudget {
        head_bytes: 5_000,
        tail_bytes: 5_000,
        ..small_budget()
    };
    let c = truncate_in_memory_captured(&text, &budget);
    assert!(c.text.len() <= 1_000);
    assert!(c.text.contains("[line 50] error: x\n"), "{}", c.text);
}

#[test]
fn write_trait_and_flush() {
    let dir = tempfile::tempdir().unwrap();
    let mut sink = OutputSink::new(small_budget(), dir.path().to_path_buf());
    for i in 0..200 {
        writeln!(sink, "line {i}").unwrap();
    }
    assert!(sink.is_spilling());
    sink.flush().unwrap();
    assert_eq!(sink.total_bytes(), 1_690);
    let c = sink.finish().unwrap();
    assert_eq!(c.total_lines, 200);
}

#[test]
fn disk_failure_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let blocker = dir.path().join("blocker");
    std::fs::write(&blocker, b"a file where a directory should be").unwrap();
    let text = log(300, &[]);
    let err = apply_budget(&text, &small_budget(), &blocker.join("tool-output")).unwrap_err();
    assert_ne!(err.kind(), io::ErrorKind::NotFound, "{err}");

    let mut sink = OutputSink::new(small_budget(), blocker.join("x"));
    assert!(sink.write(text.as_bytes()).is_err());
    assert!(sink.write(b"more").is_err(), "a failed sink stays failed");
    assert!(sink.finish().is_err());
}

#[test]
fn apply_to_marks_a_truncated_success_partial() {
    let dir = tempfile::tempdir().unwrap();
    let c = apply_budget(&log(300, &[]), &small_budget(), dir.path()).unwrap();
    let id = c.output_id.clone().unwrap();
    let path = c.spill_path.clone().unwrap();
    let text = c.text.clone();
    let mut env = Envelope::success(json!({"exit_code": 0}), "");
    c.apply_to(&mut env);
    assert_eq!(env.status, Status::Partial);
    assert_eq!(env.text, text);
    assert_eq!(
        env.data,
        json!({"exit_code": 0, "truncated": true, "output_id": id})
    );
    assert_eq!(
        serde_json::to_value(&env.stats).unwrap(),
        json!({"time_ms": 0, "output_bytes": 6_000, "output_lines": 300})
    );
    assert_eq!(
        env.context.extra,
        json!({"output_path": path.display().to_string()})
            .as_object()
            .unwrap()
            .clone()
    );
}

#[test]
fn apply_to_keeps_errors_and_non_object_data() {
    let c = apply_budget(
        &log(300, &[]),
        &small_budget(),
        tempfile::tempdir().unwrap().path(),
    )
    .unwrap();
    let id = c.output_id.clone().unwrap();
    let mut env = Envelope::error(crate::ErrorCode::NonzeroExit, "exit 1", None);
    env.data = json!(["not", "an", "object"]);
    c.apply_to(&mut env);
    assert_eq!(env.status, Status::Error);
    assert_eq!(env.data, json!(["not", "an", "object"]));
    assert_eq!(env.context.extra["truncated"], json!(true));
    assert_eq!(env.context.extra["output_id"], json!(id));
}

#[test]
fn apply_to_under_budget_only_counts() {
    let c = apply_budget("ok\n", &small_budget(), Path::new("/nonexistent")).unwrap();
    let mut env = Envelope::success(json!({}), "");
    c.apply_to(&mut env);
    assert_eq!(
        env,
        Envelope::success(json!({}), "ok\n")
            .with_stat("output_bytes", 3)
            .with_stat("output_lines", 1)
    );
}

#[test]
fn into_reply_carries_the_same_marks() {
    let c = truncate_in_memory_captured(&log(300, &[]), &small_budget());
    let text = c.text.clone();
    let reply = c.into_reply(json!({"lines": 300}));
    assert!(reply.partial);
    assert_eq!(reply.text, text);
    assert_eq!(reply.data, json!({"lines": 300, "truncated": true}));
    assert_eq!(reply.stats["output_lines"], json!(300));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// However the output is split into writes, the result is the same and within budget.
    #[test]
    fn chunking_never_changes_the_result(
        lines in proptest::collection::vec(
            prop_oneof![
                Just("step 0042: all good".to_string()),
                Just("error: boom".to_string()),
                Just("warning: unused".to_string()),
                Just("é✓🎉 日本語\r".to_string()),
                "[a-z ]{0,80}",
            ],
            0..200,
        ),
        chunk in 1usize..300,
        max_bytes in 0usize..3_000,
    ) {
        let text = lines.join("\n");
        let budget = OutputBudget::with_max_bytes(max_bytes);
        let whole = capture_chunked(text.as_bytes(), text.len(), &budget);
        let split = capture_chunked(text.as_bytes(), chunk, &budget);
        prop_assert!(whole.text.len() <= max_bytes);
        prop_assert_eq!(&whole, &split);
        if !whole.truncated {
            prop_assert_eq!(whole.text, text);
        }
    }
}

// ---------------------------------------------------------------------------
// read_spilled

fn spill_lines(n: u64) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let c = apply_budget(&log(n, &[]), &small_budget(), dir.path()).unwrap();
    (dir, c.output_id.unwrap())
}

#[test]
fn read_spilled_pages_forward() {
    let (dir, id) = spill_lines(300);
    let page = read_spilled(dir.path(), &id, 10, 3).unwrap();
    assert_eq!(
        page,
        SpilledPage {
            text: "    10\tstep 0010: all good\n    11\tstep 0011: all good\n    12\tstep 0012: all good\n[lines 10-12 of 300; continue with offset=13]".into(),
            first_line: 10,
            last_line: 12,
            total_lines: 300,
            total_bytes: 6_000,
            next_offset: Some(13),
            cut_lines: 0,
        }
    );
    let first = read_spilled(dir.path(), &id, 0, 1).unwrap();
    assert_eq!(
        first.text,
        "     1\tstep 0001: all good\n[lines 1-1 of 300; continue with offset=2]"
    );
    let default = read_spilled(dir.path(), &id, 1, 0).unwrap();
    assert_eq!((default.first_line, default.last_line), (1, 200));
}

#[test]
fn read_spilled_counts_back_from_the_end() {
    let (dir, id) = spill_lines(300);
    let page = read_spilled(dir.path(), &id, -2, 100).unwrap();
    assert_eq!(
        page.text,
        "   299\tstep 0299: all good\n   300\tstep 0300: all good\n[lines 299-300 of 300; end of output]"
    );
    assert_eq!(page.next_offset, None);
    let all = read_spilled(dir.path(), &id, -1_000, 1).unwrap();
    assert_eq!(all.first_line, 1);
}

#[test]
fn read_spilled_beyond_the_end() {
    let (dir, id) = spill_lines(300);
    let page = read_spilled(dir.path(), &id, 301, 10).unwrap();
    assert_eq!(
        page.text,
        "[offset 301 is past the end: the output has 300 lines; use an offset from 1 to 300, or a negative one such as -200 for the last lines]"
    );
    assert_eq!(
        (page.first_line, page.last_line, page.next_offset),
        (0, 0, None)
    );
}

#[test]
fn read_spilled_cuts_long_lines_and_caps_the_page() {
    let dir = tempfile::tempdir().unwrap();
    let mut text = "é".repeat(2_500);
    text.push_str("\r\nshort\n");
    text.push_str(&format!("{}\n", "z".repeat(1_500)).repeat(100));
    let c = apply_budget(&text, &small_budget(), dir.path()).unwrap();
    let id = c.output_id.unwrap();
    let page = read_spilled(dir.path(), &id, 1, 2).unwrap();
    let expected = format!(
        "     1\t{} [... line cut: 3,001 more bytes]\n     2\tshort\n[lines 1-2 of 102; continue with offset=3]",
        "é".repeat(1_000)
    );
    assert_eq!(page.text, expected);
    assert_eq!(page.cut_lines, 1);

    let big = read_spilled(dir.path(), &id, 3, MAX_READ_LIMIT_LINES).unwrap();
    assert!(big.text.len() <= MAX_PAGE_BYTES, "{}", big.text.len());
    assert_eq!((big.first_line, big.last_line), (3, 17));
    assert_eq!(big.next_offset, Some(18));
    assert!(
        big.text
            .ends_with("[lines 3-17 of 102; continue with offset=18]")
    );
}

#[test]
fn read_spilled_rejects_bad_ids() {
    let dir = tempfile::tempdir().unwrap();
    let upper = format!("out_{}", "A".repeat(32));
    let long = format!("out_{}", "a".repeat(33));
    let traversal = format!("out_{}/../x", "a".repeat(32));
    for id in [
        "../x",
        "",
        "/etc/passwd",
        "out_",
        upper.as_str(),
        long.as_str(),
        traversal.as_str(),
        "out_0192..\0",
    ] {
        let err = read_spilled(dir.path(), id, 1, 10).unwrap_err();
        assert!(
            matches!(err, SpillError::InvalidId(ref got) if got == id),
            "{id:?}: {err}"
        );
        assert_eq!(spilled_path(dir.path(), id), None);
    }
}

#[test]
fn read_spilled_missing_is_not_found() {
    let dir = tempfile::tempdir().unwrap();
    let id = new_output_id();
    let err = read_spilled(dir.path(), &id, 1, 10).unwrap_err();
    assert!(
        matches!(err, SpillError::NotFound(ref got) if *got == id),
        "{err}"
    );
    assert_eq!(
        err.to_string(),
        format!(
            "no saved output has output_id {id:?}; it may have been cleaned up, so run the call again"
        )
    );
}

#[cfg(unix)]
#[test]
fn read_spilled_ignores_symlinks() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("secret");
    std::fs::write(&target, "secret\n").unwrap();
    let id = new_output_id();
    std::os::unix::fs::symlink(&target, dir.path().join(format!("{id}.txt"))).unwrap();
    assert!(matches!(
        read_spilled(dir.path(), &id, 1, 10),
        Err(SpillError::NotFound(_))
    ));
}

#[test]
fn read_spilled_empty_and_unterminated_files() {
    let dir = tempfile::tempdir().unwrap();
    let id = new_output_id();
    std::fs::write(dir.path().join(format!("{id}.txt")), "").unwrap();
    assert_eq!(
        read_spilled(dir.path(), &id, 1, 10).unwrap().text,
        "[the output is empty]"
    );
    std::fs::write(dir.path().join(format!("{id}.txt")), "a\nb").unwrap();
    let page = read_spilled(dir.path(), &id, 1, 10).unwrap();
    assert_eq!(
        page.text,
        "     1\ta\n     2\tb\n[lines 1-2 of 2; end of output]"
    );
}

#[test]
fn output_ids_are_strict() {
    let id = new_output_id();
    assert!(is_valid_output_id(&id), "{id}");
    assert_eq!(id.len(), 36);
    assert!(!is_valid_output_id(&id.replace("out_", "OUT_")));
    assert!(!is_valid_output_id(&format!("{id}.txt")));
    assert!(!is_valid_output_id(&id[..35]));
}

#[test]
fn number_formatting() {
    assert_eq!(
        [group(0), group(999), group(1_000), group(1_234_567)],
        ["0", "999", "1,000", "1,234,567"]
    );
    assert_eq!(
        [
            human_bytes(812),
            human_bytes(12_345),
            human_bytes(1_234_567),
            human_bytes(3_400_000_000)
        ],
        ["812 B", "12.3 KB", "1.2 MB", "3.4 GB"]
    );
}

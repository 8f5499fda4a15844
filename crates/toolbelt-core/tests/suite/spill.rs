//! Integration tests: output budget and spill, through the registry.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::fs::File;
use std::io::{self, BufReader, Read, Write};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use toolbelt_core::output::{OutputBudget, is_valid_output_id, read_spilled, spilled_path};
use toolbelt_core::{ErrorCode, Registry, Reply, Session, Status, ToolError, ToolSpec};

/// Size of the generated build log.
const LOG_BYTES: u64 = 50_000_000;
/// The line of the log's one error, far from both ends.
const ERROR_LINE: u64 = 270_000;
/// Where the child test finds its state directory; set only on the child's command.
const CHILD_DIR_ENV: &str = "TOOLBELT_TEST_SPILL_50MB_DIR";
/// The child test's full name in this binary.
const CHILD_TEST: &str = "suite::spill::spill_50mb_child";
/// Prefix of the line on which the child reports its peak resident memory.
const PEAK_MARKER: &str = "SPILL_CHILD_VMHWM_KB=";
/// Peak resident memory allowed for writing the whole log.
const MAX_PEAK_BYTES: u64 = 100_000_000;
const WRITE_CHUNK_BYTES: usize = 64 * 1024;

fn error_text() -> String {
    format!("error[E0425]: cannot find value `batch_size_limit` in this scope at line {ERROR_LINE}")
}

/// Writes a deterministic log of at least [`LOG_BYTES`] in chunks of about 64 KiB:
/// realistic lines, a warning every 50,000 lines and one error at [`ERROR_LINE`].
/// Returns the number of lines.
fn write_log(out: &mut impl Write) -> io::Result<u64> {
    let mut buf = Vec::with_capacity(WRITE_CHUNK_BYTES + 256);
    let mut written = 0u64;
    let mut line = 0u64;
    while written + (buf.len() as u64) < LOG_BYTES {
        line += 1;
        if line == ERROR_LINE {
            writeln!(buf, "{}", error_text())?;
        } else if line.is_multiple_of(50_000) {
            writeln!(buf, "warning: unused variable: `tmp{line}`")?;
        } else {
            let (s, ms) = (line / 1_000, line % 1_000);
            writeln!(
                buf,
                "2024-05-01T{:02}:{:02}:{:02}.{ms:03}Z INFO  worker[{}] processed batch {line} in {} ms (queue depth {})",
                s / 3_600 % 24,
                s / 60 % 60,
                s % 60,
                line % 8,
                line * 7 % 113,
                line * 13 % 37,
            )?;
        }
        if buf.len() >= WRITE_CHUNK_BYTES {
            out.write_all(&buf)?;
            written += buf.len() as u64;
            buf.clear();
        }
    }
    out.write_all(&buf)?;
    Ok(line)
}

/// A writer that checks what is written against a file, chunk by chunk.
struct SameAsFile {
    file: BufReader<File>,
    expected: Vec<u8>,
    offset: u64,
}

impl Write for SameAsFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.expected.resize(buf.len(), 0);
        self.file.read_exact(&mut self.expected)?;
        if self.expected != buf {
            return Err(io::Error::other(format!(
                "the spill file differs within the {} bytes at offset {}",
                buf.len(),
                self.offset
            )));
        }
        self.offset += buf.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Asserts that `path` holds exactly the log, without holding either in memory.
fn assert_file_is_the_log(path: &Path) {
    let mut check = SameAsFile {
        file: BufReader::new(File::open(path).unwrap()),
        expected: Vec::new(),
        offset: 0,
    };
    write_log(&mut check).unwrap();
    let mut rest = Vec::new();
    check.file.read_to_end(&mut rest).unwrap();
    assert_eq!(rest.len(), 0, "the spill file is longer than the log");
}

fn io_error(e: io::Error) -> ToolError {
    ToolError::new(
        ErrorCode::Internal,
        format!("could not capture the output: {e}"),
    )
}

fn session(dir: &Path) -> Session {
    Session::new(dir)
        .with_state_dir(dir.join("state"))
        .with_timeout(Duration::from_secs(300))
}

/// Registers a tool that reads saved outputs back: truncated outputs name it.
fn register_reader(registry: &mut Registry) {
    let spec = ToolSpec::describe("read_output", "Reads a saved output.").reads_saved_output();
    registry
        .register_fn(spec, |_ctx, _args| async { Ok(Reply::new(json!({}), "")) })
        .unwrap();
}

/// The workload: a tool streams the 50 MB log through `ctx.output_sink()`.
async fn run_50mb(dir: &Path) {
    let mut registry = Registry::new(session(dir));
    register_reader(&mut registry);
    registry
        .register_fn(
            ToolSpec::describe("build_log", "Prints a long build log."),
            |ctx, _args| async move {
                let mut sink = ctx.output_sink();
                let lines = write_log(&mut sink).map_err(io_error)?;
                let captured = sink.finish().map_err(io_error)?;
                Ok(captured.into_reply(json!({ "lines": lines })))
            },
        )
        .unwrap();
    let env = registry.execute("build_log", json!({})).await;

    assert_eq!(env.status, Status::Partial, "{}", env.text);
    assert!(
        env.text.len() <= OutputBudget::default().max_bytes,
        "{} bytes",
        env.text.len()
    );
    assert!(
        env.text
            .contains(&format!("\n[line 270,000] {}\n", error_text())),
        "the middle error line is kept:\n{}",
        env.text
    );
    assert!(
        env.text
            .starts_with("2024-05-01T00:00:00.001Z INFO  worker[1] processed batch 1 ")
    );
    let id = env.data["output_id"].as_str().unwrap().to_string();
    assert!(is_valid_output_id(&id), "{id}");
    assert_eq!(env.data["truncated"], json!(true));
    let lines = env.data["lines"].as_u64().unwrap();
    assert!(
        env.text.ends_with(&format!(
            "; read them with read_output(output_id={id}, offset=88)]"
        )),
        "{}",
        env.text
    );
    let total_bytes = env.stats.counters["output_bytes"].as_u64().unwrap();
    assert!(
        (LOG_BYTES..LOG_BYTES + 200).contains(&total_bytes),
        "{total_bytes}"
    );
    assert_eq!(env.stats.counters["output_lines"], json!(lines));

    let spill_dir = dir.join("state").join("tool-output");
    let path = spilled_path(&spill_dir, &id).unwrap();
    assert_eq!(
        env.context.extra["output_path"],
        json!(path.display().to_string())
    );
    assert_eq!(std::fs::metadata(&path).unwrap().len(), total_bytes);
    assert_file_is_the_log(&path);

    let page = read_spilled(&spill_dir, &id, ERROR_LINE as i64, 2).unwrap();
    assert!(
        page.text
            .starts_with(&format!("{ERROR_LINE:>6}\t{}\n", error_text())),
        "{}",
        page.text
    );
    assert_eq!(page.next_offset, Some(ERROR_LINE + 2));
    assert_eq!(page.total_lines, lines);
    let last = read_spilled(&spill_dir, &id, -1, 10).unwrap();
    assert_eq!(
        (last.first_line, last.last_line, last.next_offset),
        (lines, lines, None)
    );
    assert!(last.text.ends_with(&format!(
        "[lines {0}-{0} of {0}; end of output]",
        group(lines)
    )));
}

fn group(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Runs only when re-executed by [`spill_50mb_in_bounded_memory`]: does the work,
/// then reports its own peak resident memory.
#[tokio::test]
async fn spill_50mb_child() {
    let Some(dir) = std::env::var_os(CHILD_DIR_ENV) else {
        return;
    };
    tokio::time::timeout(Duration::from_secs(300), run_50mb(Path::new(&dir)))
        .await
        .unwrap();
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let kb = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .unwrap()
        .trim()
        .trim_end_matches("kB")
        .trim();
    // On a line of its own: libtest has already printed "test <name> ... ".
    println!("\n{PEAK_MARKER}{kb}");
}

/// 50 MB through `ctx.output_sink()`: the text stays within budget, keeps the error
/// line from the middle, the spill file is the exact output and pages back, and the
/// process's peak memory stays under 100 MB (measured in a child process, so that
/// other tests of this binary do not count).
#[cfg(target_os = "linux")]
#[test]
fn spill_50mb_in_bounded_memory() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", CHILD_TEST, "--nocapture", "--test-threads=1"])
        .env(CHILD_DIR_ENV, dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the child failed:\n{stdout}\n{stderr}"
    );
    let peak_kb: u64 = stdout
        .lines()
        .find_map(|l| l.split_once(PEAK_MARKER))
        .map(|(_, rest)| {
            rest.chars()
                .take_while(char::is_ascii_digit)
                .collect::<String>()
        })
        .unwrap_or_else(|| panic!("the child did not report its peak memory:\n{stdout}\n{stderr}"))
        .parse()
        .unwrap();
    assert!(
        peak_kb * 1024 < MAX_PEAK_BYTES,
        "peak resident memory {peak_kb} kB while spilling {LOG_BYTES} bytes"
    );
}

/// A 2 MB `text` from a tool that knows nothing of budgets, with a failure in the middle.
fn big_text() -> String {
    let mut text = String::with_capacity(2_100_000);
    let mut line = 0u64;
    while text.len() < 2_000_000 {
        line += 1;
        if line == 10_000 {
            text.push_str("FAILED tests/test_cart.py::test_checkout - AssertionError: 3 != 4\n");
        } else {
            text.push_str(&format!("tests/test_cart.py::test_case_{line} PASSED\n"));
        }
    }
    text
}

#[tokio::test]
async fn registry_applies_the_budget_to_a_large_text() {
    tokio::time::timeout(Duration::from_secs(60), async {
        let dir = tempfile::tempdir().unwrap();
        let mut registry = Registry::new(session(dir.path()));
        registry
            .register_fn(ToolSpec::describe("pytest", "Runs the tests."), |_ctx, _args| async {
                Ok(Reply::new(json!({ "exit_code": 1 }), big_text()))
            })
            .unwrap();
        let env = registry.execute("pytest", json!({})).await;

        let text = big_text();
        assert_eq!(env.status, Status::Partial);
        assert!(env.text.len() <= 30_000, "{} bytes", env.text.len());
        assert!(
            env.text.contains(
                "\n[line 10,000] FAILED tests/test_cart.py::test_checkout - AssertionError: 3 != 4\n"
            ),
            "{}",
            env.text
        );
        let id = env.data["output_id"].as_str().unwrap();
        assert_eq!(
            env.data,
            json!({ "exit_code": 1, "truncated": true, "output_id": id })
        );
        assert_eq!(env.stats.counters["output_bytes"], json!(text.len()));
        assert_eq!(env.stats.counters["output_lines"], json!(text.lines().count()));
        let spill_dir = dir.path().join("state").join("tool-output");
        let saved = std::fs::read(spilled_path(&spill_dir, id).unwrap()).unwrap();
        assert!(saved == text.as_bytes(), "the spill file is the whole text");

        let page = read_spilled(&spill_dir, id, 10_000, 1).unwrap();
        assert_eq!(
            page.text,
            " 10000\tFAILED tests/test_cart.py::test_checkout - AssertionError: 3 != 4\n[lines 10,000-10,000 of 46,770; continue with offset=10001]"
        );
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn registry_honours_the_session_budget_and_keeps_errors_errors() {
    tokio::time::timeout(Duration::from_secs(60), async {
        let dir = tempfile::tempdir().unwrap();
        let session = session(dir.path()).with_budget(OutputBudget::with_max_bytes(2_000));
        let mut registry = Registry::new(session);
        registry
            .register_fn(
                ToolSpec::describe("short", "Says little."),
                |_ctx, _args| async { Ok(Reply::new(json!({}), "x".repeat(2_000))) },
            )
            .unwrap();
        registry
            .register_fn(
                ToolSpec::describe("crash", "Fails loudly."),
                |_ctx, _args| async {
                    Err::<Reply<Value>, _>(ToolError::new(
                        ErrorCode::NonzeroExit,
                        "y\n".repeat(5_000),
                    ))
                },
            )
            .unwrap();

        let short = registry.execute("short", json!({})).await;
        assert_eq!(short.status, Status::Success);
        assert_eq!(short.text.len(), 2_000);
        assert!(
            !dir.path().join("state").exists(),
            "nothing is spilled under budget"
        );

        let crash = registry.execute("crash", json!({})).await;
        assert_eq!(crash.status, Status::Error);
        assert_eq!(crash.error_code(), Some(ErrorCode::NonzeroExit));
        assert!(crash.text.len() <= 2_000, "{} bytes", crash.text.len());
        assert!(
            crash.text.starts_with("ERROR [NONZERO_EXIT]: y\ny\n"),
            "{}",
            crash.text
        );
        assert_eq!(crash.data["truncated"], json!(true));
        assert!(is_valid_output_id(
            crash.data["output_id"].as_str().unwrap()
        ));
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn markers_name_the_reader_only_when_one_is_served_and_under_its_exposed_name() {
    let dir = tempfile::tempdir().unwrap();
    let session = session(dir.path()).with_budget(OutputBudget::with_max_bytes(2_000));
    let mut registry = Registry::new(session);
    registry
        .register_fn(
            ToolSpec::describe("long", "Says much."),
            |_ctx, _args| async { Ok(Reply::new(json!({}), "line\n".repeat(2_000))) },
        )
        .unwrap();
    let env = registry.execute("long", json!({})).await;
    assert!(env.text.contains("output_id=out_"), "{}", env.text);
    assert!(!env.text.contains("read it with"), "{}", env.text);
    register_reader(&mut registry);
    registry.set_profile(toolbelt_core::profile::Profile::table(
        "p",
        &[("read_output", "ReadOutput")],
    ));
    let env = registry.execute("long", json!({})).await;
    assert!(
        env.text.contains("read it with ReadOutput(output_id"),
        "{}",
        env.text
    );
}

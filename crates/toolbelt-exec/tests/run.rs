//! Real commands through `toolbelt_exec::run`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;
use toolbelt_core::output::OutputBudget;
use toolbelt_exec::{EnvPolicy, ExecOutcome, ExecRequest, TIMEOUT_EXIT_CODE, run, tree};

fn request(command: &str, timeout: Duration) -> ExecRequest {
    let mut req = ExecRequest::new(command, std::env::temp_dir(), timeout);
    req.env = EnvPolicy::default().build(std::env::vars(), &BTreeMap::new());
    req
}

async fn exec(req: ExecRequest) -> ExecOutcome {
    run(req, &CancellationToken::new()).await.unwrap()
}

/// A fresh marker for the processes a test starts.
fn token() -> String {
    format!("tbtest{}", uuid_like())
}

fn uuid_like() -> String {
    use std::time::SystemTime;
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("{nanos:x}{}", std::process::id())
}

/// Processes whose environment holds `TBTEST=<token>`.
fn running_with(token: &str) -> Vec<u32> {
    toolbelt_exec::tree::with_env("TBTEST", token)
        .iter()
        .filter_map(|p| u32::try_from(p.as_raw_nonzero().get()).ok())
        .collect()
}

#[tokio::test]
async fn a_timeout_kills_the_whole_tree() {
    let t = token();
    let started = Instant::now();
    let out = exec(request(
        &format!("export TBTEST={t}; sleep 1000 & sleep 1000"),
        Duration::from_secs(2),
    ))
    .await;
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert!(out.timed_out);
    assert_eq!(out.exit_code, TIMEOUT_EXIT_CODE);
    assert_eq!(running_with(&t), Vec::<u32>::new());
}

#[tokio::test]
async fn background_processes_that_left_the_group_are_killed() {
    for how in [
        "sleep 1000 & disown",
        "nohup sleep 1000 >/dev/null 2>&1 &",
        "setsid sleep 1000 &",
        "setsid sleep 1000 >/dev/null 2>&1 < /dev/null &",
    ] {
        let t = token();
        let started = Instant::now();
        let out = exec(request(
            &format!("export TBTEST={t}; {how}\necho started"),
            Duration::from_secs(30),
        ))
        .await;
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{how}: {:?}",
            started.elapsed()
        );
        assert_eq!(out.exit_code, 0, "{how}: {}", out.stderr.captured.text);
        assert!(out.stdout.captured.text.contains("started"), "{how}");
        assert!(out.leftovers_killed >= 1, "{how}: {out:?}");
        assert_eq!(running_with(&t), Vec::<u32>::new(), "{how}");
    }
}

#[tokio::test]
async fn a_background_child_holding_the_pipes_does_not_hang_the_call() {
    let started = Instant::now();
    let out = exec(request(
        "sh -c 'sleep 100 & echo hi'",
        Duration::from_secs(30),
    ))
    .await;
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(out.stdout.captured.text, "hi\n");
    assert_eq!(out.exit_code, 0);
}

#[tokio::test]
async fn standard_input_is_closed() {
    for command in [
        "cat",
        "read x; echo \"[$x]\"",
        "python3 -c 'input()' || true",
        "head -1",
    ] {
        let started = Instant::now();
        let out = exec(request(command, Duration::from_secs(20))).await;
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "{command}: {:?}",
            started.elapsed()
        );
        assert!(!out.timed_out, "{command}");
    }
}

#[tokio::test]
async fn the_command_has_its_own_process_group_and_no_terminal() {
    // /proc/<pid>/stat: pid (comm) state ppid pgrp session tty_nr ...
    let out = exec(request(
        "read -r stat < /proc/$$/stat; set -- ${stat##*) }; echo \"$$ $3\"; \
         (: < /dev/tty) 2>/dev/null && echo tty || echo no-tty",
        Duration::from_secs(10),
    ))
    .await;
    let text = &out.stdout.captured.text;
    let mut lines = text.lines();
    let ids: Vec<&str> = lines.next().unwrap().split(' ').collect();
    assert_eq!(ids[1], ids[0], "{text}");
    assert_eq!(lines.next(), Some("no-tty"));
}

#[tokio::test]
async fn output_is_always_utf8_and_gbk_is_readable() {
    let out = exec(request(r"printf '\xff\xfe bad'", Duration::from_secs(10))).await;
    assert!(
        out.stdout.captured.text.ends_with(" bad"),
        "{:?}",
        out.stdout.captured.text
    );
    // 编译失败 in GBK.
    let out = exec(request(
        r"printf '\xb1\xe0\xd2\xeb\xca\xa7\xb0\xdc\n' >&2",
        Duration::from_secs(10),
    ))
    .await;
    assert_eq!(out.stderr.captured.text, "编译失败\n");
    assert_eq!(out.stderr.encoding, Some("gb18030"));
}

#[tokio::test]
async fn secrets_are_not_in_the_environment() {
    // The test's own environment has none of these names; give the policy some.
    let server = [
        ("PATH", std::env::var("PATH").unwrap()),
        ("OPENAI_API_KEY", "sk-secret".to_string()),
        ("TOOLBELT_TOKEN", "server-token".to_string()),
        ("MY_PASSWORD", "hunter2".to_string()),
    ];
    let mut req = request("env", Duration::from_secs(10));
    req.env = EnvPolicy::default().build(server, &BTreeMap::from([("ADDED".into(), "1".into())]));
    let out = exec(req).await;
    let env = out.stdout.captured.text;
    for secret in ["sk-secret", "server-token", "hunter2", "OPENAI_API_KEY"] {
        assert!(!env.contains(secret), "{secret} in {env}");
    }
    assert!(env.contains("ADDED=1") && env.contains("GIT_TERMINAL_PROMPT=0"));
}

#[tokio::test]
async fn exit_codes_signals_and_stderr() {
    let out = exec(request(
        "echo out; echo err >&2; exit 3",
        Duration::from_secs(10),
    ))
    .await;
    assert_eq!(
        (
            out.exit_code,
            out.stdout.captured.text.as_str(),
            out.stderr.captured.text.as_str()
        ),
        (3, "out\n", "err\n")
    );
    let out = exec(request("kill -9 $$", Duration::from_secs(10))).await;
    assert_eq!((out.exit_code, out.signal), (137, Some(9)));
}

#[tokio::test]
async fn endless_output_stays_within_budget_and_is_spilled_whole() {
    let spill = tempfile::tempdir().unwrap();
    let mut req = request("yes", Duration::from_secs(3));
    req.stdout_budget = OutputBudget::with_max_bytes(4_000);
    req.spill_dir = Some(spill.path().to_path_buf());
    let out = exec(req).await;
    assert!(out.timed_out);
    let c = &out.stdout.captured;
    assert!(c.truncated && c.text.len() <= 4_000);
    let path = c.spill_path.as_ref().unwrap();
    assert_eq!(std::fs::metadata(path).unwrap().len(), c.total_bytes);
    assert!(c.total_bytes > 1_000_000, "{}", c.total_bytes);
    // One endless line too.
    let mut req = request(
        "head -c 50000000 /dev/zero | tr '\\0' a",
        Duration::from_secs(30),
    );
    req.stdout_budget = OutputBudget::with_max_bytes(4_000);
    req.spill_dir = Some(spill.path().to_path_buf());
    let out = exec(req).await;
    assert_eq!(out.stdout.captured.total_bytes, 50_000_000);
    assert!(out.stdout.captured.text.len() <= 4_000);
}

#[tokio::test]
async fn a_cancelled_call_stops_the_tree() {
    let t = token();
    let cancel = CancellationToken::new();
    let stopper = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(500)).await;
        stopper.cancel();
    });
    let started = Instant::now();
    let out = run(
        request(
            &format!("export TBTEST={t}; sleep 1000"),
            Duration::from_secs(60),
        ),
        &cancel,
    )
    .await
    .unwrap();
    assert!(out.cancelled && started.elapsed() < Duration::from_secs(4));
    assert_eq!(running_with(&t), Vec::<u32>::new());
}

#[tokio::test]
async fn a_dropped_call_leaves_nothing_running() {
    let t = token();
    let never = CancellationToken::new();
    let call = run(
        request(
            &format!("export TBTEST={t}; setsid sleep 1000 & sleep 1000"),
            Duration::from_secs(60),
        ),
        &never,
    );
    assert!(
        tokio::time::timeout(Duration::from_millis(700), call)
            .await
            .is_err()
    );
    assert_eq!(running_with(&t), Vec::<u32>::new());
}

#[tokio::test]
async fn a_missing_working_directory_is_an_error() {
    let mut req = request("true", Duration::from_secs(5));
    req.cwd = "/nonexistent/dir".into();
    let err = run(req, &CancellationToken::new()).await.unwrap_err();
    assert!(err.to_string().contains("/nonexistent/dir"), "{err}");
}

#[test]
fn the_marker_scan_finds_nothing_for_an_unknown_marker() {
    assert!(tree::marked("no-such-marker").is_empty());
}

#[tokio::test]
async fn stdin_bytes_reach_the_command_and_are_closed_after() {
    let mut req = request("wc -c; cat", Duration::from_secs(10));
    req.stdin = Some(b"{\"a\":1}".to_vec());
    let out = exec(req).await;
    assert_eq!(out.exit_code, 0);
    assert_eq!(out.stdout.captured.text.trim(), "7");

    // A command that never reads its input still ends, with its own status.
    let mut req = request("exit 3", Duration::from_secs(10));
    req.stdin = Some(vec![b'x'; 1 << 20]);
    let out = exec(req).await;
    assert_eq!(out.exit_code, 3);
}

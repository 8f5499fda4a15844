#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::future::Future;
use std::time::Duration;

use pretty_assertions::assert_eq;

use super::*;
use crate::EnvPolicy;

const LONG: Duration = Duration::from_secs(10);

async fn within<T>(f: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(30), f)
        .await
        .expect("the test took too long")
}

fn request(command: &str) -> StartRequest {
    let mut req = StartRequest::new(command, std::env::temp_dir());
    req.env = EnvPolicy::default().build(std::env::vars(), &BTreeMap::new());
    req
}

/// A fresh marker for the processes a test starts.
fn token() -> String {
    format!("tbtest{}", uuid::Uuid::new_v4().simple())
}

/// Processes whose environment holds `TBTEST=<token>`.
fn running_with(token: &str) -> Vec<u32> {
    crate::tree::with_env("TBTEST", token)
        .iter()
        .filter_map(|p| u32::try_from(p.as_raw_nonzero().get()).ok())
        .collect()
}

/// Reads `id` until its stdout holds `want` (or the session ends).
async fn read_until(shells: &Shells, id: &str, want: &str) -> String {
    let mut seen = String::new();
    loop {
        shells.wait_for_output(id, LONG).await.unwrap();
        let read = shells.read(id).unwrap();
        seen.push_str(&read.stdout);
        if seen.contains(want) || !read.info.status.is_running() {
            return seen;
        }
    }
}

/// Waits until `id` has ended; returns all it printed on stdout.
async fn read_to_end(shells: &Shells, id: &str) -> (String, ShellStatus) {
    let mut seen = String::new();
    loop {
        shells.wait_for_output(id, LONG).await.unwrap();
        let read = shells.read(id).unwrap();
        seen.push_str(&read.stdout);
        if !read.info.status.is_running() {
            return (seen, read.info.status);
        }
    }
}

#[tokio::test]
async fn new_output_is_returned_once() {
    within(async {
        let shells = Shells::new();
        let info = shells
            .start(request("echo one; echo err >&2; sleep 1000"))
            .unwrap();
        assert_eq!(info.id, "shell_1");
        assert!(info.status.is_running() && info.pid.is_some());
        let first = read_until(&shells, &info.id, "one\n").await;
        assert_eq!(first, "one\n");
        tokio::time::sleep(Duration::from_millis(100)).await;
        let again = shells.read(&info.id).unwrap();
        assert_eq!(again.stdout, "");
        assert_eq!(again.info.status, ShellStatus::Running);
        shells.kill(&info.id).await.unwrap();
    })
    .await;
}

#[tokio::test]
async fn a_wait_returns_when_output_arrives() {
    within(async {
        let shells = Shells::new();
        let id = shells
            .start(request("sleep 0.5; echo late; sleep 1000"))
            .unwrap()
            .id;
        let started = Instant::now();
        shells.wait_for_output(&id, LONG).await.unwrap();
        let waited = started.elapsed();
        assert!(waited >= Duration::from_millis(400), "{waited:?}");
        assert!(waited < Duration::from_secs(5), "{waited:?}");
        assert_eq!(shells.read(&id).unwrap().stdout, "late\n");
        // Nothing new: the wait ends at its timeout.
        let started = Instant::now();
        shells
            .wait_for_output(&id, Duration::from_millis(200))
            .await
            .unwrap();
        assert!(started.elapsed() >= Duration::from_millis(200));
        shells.kill(&id).await.unwrap();
    })
    .await;
}

#[tokio::test]
async fn stdin_reaches_cat_and_read() {
    within(async {
        let shells = Shells::new();
        let cat = shells.start(request("cat")).unwrap().id;
        shells.write_stdin(&cat, b"hello\n").await.unwrap();
        assert_eq!(read_until(&shells, &cat, "hello\n").await, "hello\n");

        let reader = shells.start(request("read x; echo got $x")).unwrap().id;
        shells.write_stdin(&reader, b"42\n").await.unwrap();
        let (out, status) = read_to_end(&shells, &reader).await;
        assert_eq!(out, "got 42\n");
        assert_eq!(status, ShellStatus::Exited(0));
        shells.kill(&cat).await.unwrap();
    })
    .await;
}

#[tokio::test]
async fn finished_sessions_report_their_exit_code_then_are_forgotten() {
    within(async {
        let shells = Shells::new();
        let id = shells.start(request("echo bye; exit 3")).unwrap().id;
        let done = shells.start(request("true")).unwrap().id;
        let (out, status) = read_to_end(&shells, &id).await;
        assert_eq!((out.as_str(), status), ("bye\n", ShellStatus::Exited(3)));
        assert!(matches!(
            shells.read(&id),
            Err(ShellError::NotFound { known, .. }) if known == [done.clone()]
        ));
        // Listed with its code until read.
        shells.wait_for_output(&done, LONG).await.unwrap();
        let listed = shells.list();
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].status, ShellStatus::Exited(0));
        let err = shells.write_stdin(&done, b"x").await.unwrap_err();
        assert!(matches!(err, ShellError::StdinClosed { .. }), "{err}");
    })
    .await;
}

#[tokio::test]
async fn kill_stops_the_whole_tree_including_setsid_children() {
    within(async {
        let t = token();
        let shells = Shells::new();
        let id = shells
            .start(request(&format!(
                "export TBTEST={t}; setsid sleep 1000 & sleep 1000 & echo started; wait"
            )))
            .unwrap()
            .id;
        read_until(&shells, &id, "started").await;
        assert!(running_with(&t).len() >= 2);
        let info = shells.kill(&id).await.unwrap();
        assert_eq!(info.status, ShellStatus::Killed);
        assert_eq!(running_with(&t), Vec::<u32>::new());
        let err = shells.kill("shell_99").await.unwrap_err();
        assert_eq!(
            err.to_string(),
            "no background shell \"shell_99\"; there are shell_1"
        );
    })
    .await;
}

#[tokio::test]
async fn a_timeout_stops_the_session() {
    within(async {
        let shells = Shells::new();
        let mut req = request("sleep 1000");
        req.timeout = Some(Duration::from_millis(300));
        let id = shells.start(req).unwrap().id;
        let (_, status) = read_to_end(&shells, &id).await;
        assert_eq!(status, ShellStatus::TimedOut);
    })
    .await;
}

#[tokio::test]
async fn the_cap_refuses_one_more_and_names_the_running_ones() {
    within(async {
        let shells = Shells::with_limits(8, DEFAULT_MAX_UNREAD_BYTES);
        for _ in 0..8 {
            shells.start(request("sleep 1000")).unwrap();
        }
        let err = shells.start(request("sleep 1000")).unwrap_err();
        let ShellError::TooMany { max, running } = &err else {
            panic!("{err}");
        };
        assert_eq!((*max, running.len()), (8, 8));
        assert!(err.to_string().contains("shell_8: sleep 1000"), "{err}");
        shells.kill("shell_3").await.unwrap();
        shells.start(request("sleep 1000")).unwrap();
        shells.kill_all().await;
        assert!(shells.list().iter().all(|s| !s.status.is_running()));
    })
    .await;
}

#[tokio::test]
async fn dropping_the_manager_kills_live_sessions() {
    within(async {
        let t = token();
        let shells = Shells::new();
        let clone = shells.clone();
        let id = shells
            .start(request(&format!(
                "export TBTEST={t}; setsid sleep 1000 & echo started; sleep 1000"
            )))
            .unwrap()
            .id;
        read_until(&shells, &id, "started").await;
        assert!(!running_with(&t).is_empty());
        drop(shells);
        assert!(!running_with(&t).is_empty(), "a clone still holds them");
        drop(clone);
        assert_eq!(running_with(&t), Vec::<u32>::new());
    })
    .await;
}

#[tokio::test]
async fn endless_output_keeps_at_most_the_cap_and_counts_what_was_dropped() {
    within(async {
        let cap = 64 * 1024;
        let shells = Shells::with_limits(8, cap);
        let id = shells.start(request("yes")).unwrap().id;
        tokio::time::sleep(Duration::from_millis(500)).await;
        let read = shells.read(&id).unwrap();
        assert!(read.stdout.len() <= cap, "{}", read.stdout.len());
        assert!(read.stdout.len() >= cap / 2, "{}", read.stdout.len());
        assert!(read.stdout_dropped > 0);
        assert!(read.stdout.ends_with("y\n") || read.stdout.ends_with('y'));
        shells.kill(&id).await.unwrap();
    })
    .await;
}

#[test]
fn unread_output_drops_whole_characters() {
    let mut unread = Unread::default();
    unread.push("aé€", 4);
    let (text, dropped) = unread.take();
    assert_eq!((text.as_str(), dropped), ("€", 3));
    let (text, dropped) = unread.take();
    assert_eq!((text.as_str(), dropped), ("", 0));
}

#[test]
fn shell_errors_for_the_model_say_what_to_do_next() {
    use toolbelt_core::{ErrorCode, ToolError};
    let none: ToolError = ShellError::NotFound {
        id: "shell_9".into(),
        known: Vec::new(),
    }
    .into();
    assert_eq!(none.code, ErrorCode::NotFound);
    assert_eq!(
        none.hint.as_deref(),
        Some("no background shell is running; start one with bash and run_in_background: true")
    );
    let some: ToolError = ShellError::NotFound {
        id: "shell_9".into(),
        known: vec!["shell_1".into(), "shell_2".into()],
    }
    .into();
    assert_eq!(
        some.hint.as_deref(),
        Some("known shells: shell_1, shell_2; list_shells shows them all")
    );
    let spawn: ToolError = ShellError::Spawn {
        shell: "/bin/sh".into(),
        cwd: "/nowhere".into(),
        source: std::io::Error::from(std::io::ErrorKind::NotFound),
    }
    .into();
    assert_eq!(spawn.code, ErrorCode::Internal);
    assert!(
        spawn
            .message
            .starts_with("cannot start /bin/sh in /nowhere: "),
        "{}",
        spawn.message
    );
}

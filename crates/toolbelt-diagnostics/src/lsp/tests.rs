//! The client against the fake server (`fixtures/fake_lsp.py`), which causes
//! the faults real servers have: lag, stale publishes, hangs, crashes, garbage.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tempfile::TempDir;
use toolbelt_core::diagnostics::{Diagnostic, Position, Severity};

use super::*;

#[path = "tests_faults.rs"]
mod faults;
#[path = "tests_others.rs"]
mod others;

const FAKE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/fake_lsp.py");

/// No test may take longer.
const TEST_TIMEOUT: Duration = Duration::from_secs(120);

/// A deadline generous enough for a healthy fake on a busy 2-core machine.
const HEALTHY: Duration = Duration::from_secs(10);

/// Runs `fut` under [`TEST_TIMEOUT`].
async fn bounded<T>(fut: impl Future<Output = T>) -> T {
    tokio::time::timeout(TEST_TIMEOUT, fut)
        .await
        .expect("test timed out")
}

/// One fake server setup: a workspace, a unique tag on its command line, its
/// log and pid files.
struct Fake {
    dir: TempDir,
    tag: String,
}

impl Fake {
    fn new() -> Fake {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let tag = format!(
            "fake-{}-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        );
        Fake {
            dir: tempfile::tempdir().unwrap(),
            tag,
        }
    }

    fn spec(&self, args: &[&str]) -> ServerSpec {
        let mut command: Vec<String> = vec![
            "python3".into(),
            FAKE.into(),
            "--tag".into(),
            self.tag.clone(),
            "--log".into(),
            self.path("server.log").display().to_string(),
            "--pids".into(),
            self.path("server.pids").display().to_string(),
        ];
        command.extend(args.iter().map(|a| a.to_string()));
        let mut spec = ServerSpec::new("fake", command, vec![".fk".into()]);
        spec.root_markers = vec![".root".into()];
        spec
    }

    fn servers(&self, args: &[&str]) -> Servers {
        Servers::new(vec![self.spec(args)], vec![self.dir.path().to_path_buf()])
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.path("server.log")).unwrap_or_default()
    }

    /// The pids of every server started (and of their grandchildren).
    fn pids(&self) -> Vec<u32> {
        std::fs::read_to_string(self.path("server.pids"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect()
    }

    /// Processes still alive with this setup's tag on their command line.
    fn running(&self) -> Vec<u32> {
        running_with(&self.tag)
    }

    /// Waits until no process of this setup is alive and every one of them is
    /// reaped; what is left after `limit`.
    async fn left_after(&self, limit: Duration) -> Vec<u32> {
        let until = Instant::now() + limit;
        loop {
            let mut left = self.running();
            left.extend(unreaped(&self.pids()));
            left.sort_unstable();
            left.dedup();
            if left.is_empty() || Instant::now() >= until {
                return left;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// `(state, ppid)` of a process.
fn stat(pid: u32) -> Option<(char, u32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = stat.rsplit_once(") ")?.1;
    let mut fields = rest.split(' ');
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    Some((state, ppid))
}

/// Live processes whose command line holds `tag`.
fn running_with(tag: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline);
        if cmdline.contains(tag) && stat(pid).is_some_and(|(state, _)| state != 'Z') {
            found.push(pid);
        }
    }
    found
}

/// Of `pids`, those still running, or dead but not reaped by this process.
fn unreaped(pids: &[u32]) -> Vec<u32> {
    let me = std::process::id();
    pids.iter()
        .copied()
        .filter(|&pid| stat(pid).is_some_and(|(state, ppid)| state != 'Z' || ppid == me))
        .collect()
}

/// This process's resident memory, in KiB.
fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

fn after(limit: Duration) -> Instant {
    Instant::now() + limit
}

/// The text of step `i` of a break/fix series: even steps break a line that
/// moves with `i`, odd steps fix it.
fn step_text(i: usize) -> String {
    if i.is_multiple_of(2) {
        format!("first\n{}BROKEN\nlast\n", " ".repeat(i))
    } else {
        "first\nfine\nlast\n".to_string()
    }
}

/// What the fake reports for `text`, shown as `shown`.
fn expected(text: &str, shown: &str) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for (i, line) in text.split('\n').enumerate() {
        let Some(at) = line.find("BROKEN") else {
            continue;
        };
        let col = line[..at].chars().count() as u32 + 1;
        let line = i as u32 + 1;
        out.push(Diagnostic {
            path: shown.to_string(),
            line,
            col,
            end: Position { line, col: col + 6 },
            severity: Severity::Error,
            code: Some("fake-broken".into()),
            source: "fake".into(),
            message: "broken here".into(),
            new: false,
        });
    }
    out
}

/// Changes `file` through the series `0..n` and checks every answer is exactly
/// the current content's problems.
async fn break_fix(servers: &Servers, file: &Path, n: usize) {
    let mut old: Option<String> = None;
    for i in 0..n {
        let text = step_text(i);
        let change = servers
            .change(file, "a.fk", old.as_deref(), &text, after(HEALTHY))
            .await;
        assert_eq!(
            change.after,
            Answer::Fresh(expected(&text, "a.fk")),
            "step {i}"
        );
        if let (Some(old), Some(before)) = (&old, &change.before) {
            assert_eq!(before, &expected(old, "a.fk"), "before of step {i}");
        }
        old = Some(text);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fresh_problems_after_a_change_and_before_from_the_last_answer() {
    bounded(async {
        let fake = Fake::new();
        let servers = fake.servers(&[]);
        let file = fake.path("a.fk");
        let broken = "ok\né😀 BROKEN\n";
        let change = servers
            .change(&file, "a.fk", None, broken, after(HEALTHY))
            .await;
        assert_eq!(change.before, None);
        let Answer::Fresh(found) = &change.after else {
            panic!("not fresh: {:?}", change.after);
        };
        // UTF-16 column 4 is the 4th character.
        assert_eq!(found, &expected(broken, "a.fk"));
        assert_eq!((found[0].col, found[0].end.col), (4, 10));
        let change = servers
            .change(&file, "a.fk", Some(broken), "ok\n", after(HEALTHY))
            .await;
        assert_eq!(change.before, Some(expected(broken, "a.fk")));
        assert_eq!(change.after, Answer::Fresh(Vec::new()));
        // The content unchanged: answered at once.
        let started = Instant::now();
        let answer = servers.check(&file, "a.fk", "ok\n", after(HEALTHY)).await;
        assert_eq!(answer, Answer::Fresh(Vec::new()));
        assert!(started.elapsed() < Duration::from_millis(300));
        assert!(servers.take_notes().is_empty());
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn before_is_asked_for_when_no_answer_matches_the_old_text() {
    bounded(async {
        let fake = Fake::new();
        let servers = fake.servers(&[]);
        let file = fake.path("a.fk");
        let old = "BROKEN\n";
        // Warm the server first so that the old text can be answered in time.
        servers
            .check(&fake.path("other.fk"), "other.fk", "x\n", after(HEALTHY))
            .await;
        let change = servers
            .change(&file, "a.fk", Some(old), "fine\n", after(HEALTHY))
            .await;
        assert_eq!(change.before, Some(expected(old, "a.fk")));
        assert_eq!(change.after, Answer::Fresh(Vec::new()));
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn break_fix_twenty_times_is_never_stale() {
    bounded(async {
        let fake = Fake::new();
        let servers = fake.servers(&[]);
        break_fix(&servers, &fake.path("a.fk"), 20).await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stale_publishes_are_never_taken_for_the_current_content() {
    bounded(async {
        let fake = Fake::new();
        let servers = fake.servers(&["--stale"]);
        break_fix(&servers, &fake.path("a.fk"), 8).await;
        // With a deadline shorter than the fake's delay for the right answer,
        // the previous version's problems arrive first: pending, not them.
        let file = fake.path("a.fk");
        let change = servers
            .change(
                &file,
                "a.fk",
                Some(&step_text(7)),
                &step_text(8),
                after(Duration::from_millis(150)),
            )
            .await;
        assert!(
            matches!(change.after, Answer::Pending(_)),
            "{:?}",
            change.after
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unversioned_publishes_count_after_the_change() {
    bounded(async {
        let fake = Fake::new();
        let servers = fake.servers(&["--no-version"]);
        break_fix(&servers, &fake.path("a.fk"), 8).await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pull_diagnostics_are_asked_for() {
    bounded(async {
        let fake = Fake::new();
        let servers = fake.servers(&["--pull"]);
        break_fix(&servers, &fake.path("a.fk"), 6).await;
        assert!(fake.log().contains("textDocument/diagnostic"));
        // On demand, the server is asked again.
        let file = fake.path("a.fk");
        let answer = servers
            .check(&file, "a.fk", &step_text(5), after(HEALTHY))
            .await;
        assert_eq!(answer, Answer::Fresh(Vec::new()));
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lagging_server_is_pending_and_never_shows_old_problems() {
    bounded(async {
        let fake = Fake::new();
        let servers = fake.servers(&["--lag", "5"]);
        let file = fake.path("a.fk");
        let deadline = Duration::from_millis(300);
        let mut old: Option<String> = None;
        for i in 0..6 {
            let text = step_text(i);
            let started = Instant::now();
            let change = servers
                .change(&file, "a.fk", old.as_deref(), &text, after(deadline))
                .await;
            assert!(started.elapsed() < deadline + Duration::from_millis(500));
            match &change.after {
                Answer::Pending(why) => {
                    assert!(why.starts_with("python3 "), "{why}");
                }
                other => panic!("step {i}: {other:?}"),
            }
            old = Some(text);
        }
        assert!(matches!(
            servers.check(&file, "a.fk", &step_text(5), after(deadline)).await,
            Answer::Pending(why) if why.contains("still indexing")
        ));
        // In the end the server catches up with the current content.
        let answer = servers
            .check(&file, "a.fk", &step_text(5), after(HEALTHY))
            .await;
        assert_eq!(answer, Answer::Fresh(Vec::new()));
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn least_recently_used_documents_are_closed() {
    bounded(async {
        let fake = Fake::new();
        let servers = fake.servers(&[]);
        for i in 0..60 {
            let file = fake.path(&format!("f{i}.fk"));
            let change = servers
                .change(&file, "f.fk", None, "x\n", after(HEALTHY))
                .await;
            assert_eq!(change.after, Answer::Fresh(Vec::new()), "file {i}");
        }
        let log = fake.log();
        let opens = log
            .lines()
            .filter(|l| l.starts_with("textDocument/didOpen"))
            .count();
        let closes: Vec<&str> = log
            .lines()
            .filter(|l| l.starts_with("textDocument/didClose"))
            .collect();
        assert_eq!((opens, closes.len()), (60, 10));
        assert!(closes[0].ends_with("/f0.fk"), "{}", closes[0]);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_leaves_no_process() {
    bounded(async {
        let fake = Fake::new();
        for project in ["p1", "p2"] {
            std::fs::create_dir(fake.path(project)).unwrap();
            std::fs::write(fake.path(project).join(".root"), "").unwrap();
        }
        let servers = fake.servers(&["--grandchild"]);
        for file in ["p1/a.fk", "p2/a.fk"] {
            let change = servers
                .change(&fake.path(file), file, None, "BROKEN\n", after(HEALTHY))
                .await;
            assert!(matches!(change.after, Answer::Fresh(ref d) if d.len() == 1));
        }
        // One server per root, each with a grandchild.
        assert_eq!(fake.pids().len(), 4);
        assert_eq!(fake.running().len(), 4);
        let started = Instant::now();
        servers.shutdown().await;
        assert!(started.elapsed() < Duration::from_secs(4));
        assert_eq!(
            fake.left_after(Duration::from_secs(2)).await,
            Vec::<u32>::new()
        );
        assert!(fake.log().contains("shutdown"));
        // Closed: nothing starts again.
        let change = servers
            .change(&fake.path("p1/a.fk"), "a.fk", None, "x\n", after(HEALTHY))
            .await;
        assert_eq!(change.after, Answer::Unavailable);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_last_clone_kills_the_servers() {
    bounded(async {
        let fake = Fake::new();
        let servers = fake.servers(&["--grandchild"]);
        let file = fake.path("a.fk");
        servers
            .change(&file, "a.fk", None, "x\n", after(HEALTHY))
            .await;
        let clone = servers.clone();
        drop(servers);
        assert_eq!(fake.running().len(), 2);
        drop(clone);
        assert_eq!(
            fake.left_after(Duration::from_secs(3)).await,
            Vec::<u32>::new()
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_servers_are_stopped_and_start_again_when_needed() {
    bounded(async {
        let fake = Fake::new();
        let servers = fake
            .servers(&[])
            .with_idle_timeout(Duration::from_millis(1000));
        let file = fake.path("a.fk");
        let change = servers
            .change(&file, "a.fk", None, "BROKEN\n", after(HEALTHY))
            .await;
        assert!(matches!(change.after, Answer::Fresh(ref d) if d.len() == 1));
        assert_eq!(
            fake.left_after(Duration::from_secs(5)).await,
            Vec::<u32>::new()
        );
        assert!(fake.log().contains("exit"));
        let change = servers
            .change(&file, "a.fk", Some("BROKEN\n"), "fine\n", after(HEALTHY))
            .await;
        assert_eq!(change.after, Answer::Fresh(Vec::new()));
        assert_eq!(fake.pids().len(), 2);
        // An idle stop is no failure.
        assert!(servers.take_notes().is_empty());
    })
    .await;
}

#[test]
fn files_are_handled_by_extension() {
    let fake = Fake::new();
    let servers = fake.servers(&[]);
    assert!(servers.handles(Path::new("/w/a.fk")));
    assert!(!servers.handles(Path::new("/w/a.fkx")));
    assert!(!servers.handles(Path::new("/w/fk")));
    assert!(!servers.handles(Path::new("/w/.fk")));
}

#[test]
fn report_tells_whether_programs_are_found() {
    let mut missing = ServerSpec::new(
        "nope",
        vec!["no-such-ls-toolbelt".into()],
        vec![".n".into()],
    );
    missing.install_hint = Some("`pip install nope`".into());
    let fake = Fake::new();
    let servers = Servers::new(vec![fake.spec(&[]), missing], Vec::new());
    let report = servers.report();
    assert!(report[0].found && report[0].path.is_some());
    assert_eq!(report[0].program, "python3");
    assert!(!report[1].found);
    assert_eq!(report[1].path, None);
    assert_eq!(
        report[1].install_hint.as_deref(),
        Some("`pip install nope`")
    );
}

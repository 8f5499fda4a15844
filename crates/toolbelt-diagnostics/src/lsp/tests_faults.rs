//! Servers that fail: missing, hung, crashing, writing garbage.

use super::*;

/// What a change may take past its deadline here: the call returns at the
/// deadline, and a loaded 2-core machine running the other tests beside it may
/// hold the task a while longer. A change queued behind a hung server would take
/// seconds.
const SLACK: Duration = Duration::from_millis(500);

/// Changes `file` until the server is turned off (its note appears); the
/// notes seen. Each change must return within its deadline + [`SLACK`].
async fn until_off(servers: &Servers, file: &Path) -> Vec<String> {
    let deadline = Duration::from_millis(300);
    let give_up = Instant::now() + Duration::from_secs(60);
    let mut notes = Vec::new();
    while !notes.iter().any(|n: &String| n.contains("stopped 6 times")) {
        assert!(
            Instant::now() < give_up,
            "never turned off; notes: {notes:?}"
        );
        let started = Instant::now();
        let change = servers
            .change(file, "a.fk", None, "BROKEN\n", after(deadline))
            .await;
        assert!(
            started.elapsed() < deadline + SLACK,
            "took {:?}",
            started.elapsed()
        );
        assert!(
            !matches!(change.after, Answer::Fresh(_)),
            "{:?}",
            change.after
        );
        notes.extend(servers.take_notes());
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    notes
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_program_is_unavailable_with_one_note_and_no_cost() {
    bounded(async {
        let mut spec = ServerSpec::new(
            "python",
            vec!["no-such-ls-toolbelt".into(), "--stdio".into()],
            vec![".py".into()],
        );
        spec.install_hint = Some("`pip install basedpyright`".into());
        let dir = tempfile::tempdir().unwrap();
        let servers = Servers::new(vec![spec], vec![dir.path().to_path_buf()]);
        let file = dir.path().join("x.py");
        let change = servers
            .change(&file, "x.py", None, "x = 1\n", after(HEALTHY))
            .await;
        assert_eq!(change.after, Answer::Unavailable);
        assert_eq!(
            servers.take_notes(),
            vec![
                "python diagnostics unavailable: `no-such-ls-toolbelt` not found on PATH; \
                 `pip install basedpyright`"
                    .to_string()
            ]
        );
        let calls = 1000;
        let started = Instant::now();
        for _ in 0..calls {
            let change = servers
                .change(&file, "x.py", Some("x = 1\n"), "x = 2\n", after(HEALTHY))
                .await;
            assert_eq!(change.after, Answer::Unavailable);
        }
        let each = started.elapsed() / calls;
        println!("missing server: {each:?} per change");
        assert!(each < Duration::from_millis(1), "{each:?} per change");
        assert!(servers.take_notes().is_empty());
        // A program missing is looked for again only after the retry delay.
        let servers = servers.with_missing_retry(Duration::ZERO);
        let change = servers
            .change(&file, "x.py", None, "x\n", after(HEALTHY))
            .await;
        assert_eq!(change.after, Answer::Unavailable);
        assert!(servers.take_notes().is_empty(), "told once per Servers");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_hung_in_initialize_never_blocks_and_is_killed_after_its_timeout() {
    bounded(async {
        let fake = Fake::new();
        let mut spec = fake.spec(&["--hang-initialize"]);
        spec.startup_timeout = Duration::from_secs(1);
        let servers = Servers::new(vec![spec], vec![fake.dir.path().to_path_buf()])
            .with_backoff(Duration::from_millis(50));
        let file = fake.path("a.fk");
        let deadline = Duration::from_millis(150);
        let mut notes = Vec::new();
        let mut slowest = Duration::ZERO;
        for i in 0..50 {
            let started = Instant::now();
            let change = servers
                .change(&file, "a.fk", Some("x\n"), "BROKEN\n", after(deadline))
                .await;
            let took = started.elapsed();
            slowest = slowest.max(took);
            assert!(took < deadline + SLACK, "change {i} took {took:?}");
            assert!(
                !matches!(change.after, Answer::Fresh(_)),
                "{:?}",
                change.after
            );
            assert_eq!(change.before, None);
            notes.extend(servers.take_notes());
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        println!("hung server: slowest change {slowest:?}");
        assert!(
            notes
                .iter()
                .any(|n| n == "fake diagnostics: python3 did not start within 1 s"),
            "{notes:?}"
        );
        drop(servers);
        assert_eq!(
            fake.left_after(Duration::from_secs(3)).await,
            Vec::<u32>::new()
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_changes_do_not_queue_behind_a_hung_server() {
    bounded(async {
        let fake = Fake::new();
        let servers = fake.servers(&["--hang-initialize"]);
        let deadline = Duration::from_millis(300);
        let started = Instant::now();
        let calls = (0..20).map(|i| {
            let servers = servers.clone();
            let file = fake.path(&format!("f{i}.fk"));
            async move {
                servers
                    .change(&file, "f.fk", None, "x\n", after(deadline))
                    .await
            }
        });
        let answers = futures::future::join_all(calls).await;
        assert!(started.elapsed() < deadline + SLACK);
        assert!(
            answers
                .iter()
                .all(|c| matches!(&c.after, Answer::Pending(why) if why.contains("starting")))
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashing_server_is_restarted_five_times_then_off_and_leaves_nothing() {
    bounded(async {
        let fake = Fake::new();
        let servers = fake
            .servers(&["--exit-after", "2", "--grandchild"])
            .with_backoff(Duration::from_millis(10));
        let notes = until_off(&servers, &fake.path("a.fk")).await;
        assert_eq!(
            notes,
            vec!["fake diagnostics off: `python3` stopped 6 times".to_string()]
        );
        // Six starts, each with a grandchild.
        assert_eq!(fake.pids().len(), 12);
        assert_eq!(
            fake.left_after(Duration::from_secs(3)).await,
            Vec::<u32>::new()
        );
        // Off: no further start, no further note.
        let change = servers
            .change(&fake.path("a.fk"), "a.fk", None, "x\n", after(HEALTHY))
            .await;
        assert_eq!(change.after, Answer::Unavailable);
        assert_eq!(fake.pids().len(), 12);
        assert!(servers.take_notes().is_empty());
    })
    .await;
}

/// A server writing `fault` garbage is disconnected as a crash and each change
/// returns in time. (That memory does not grow is checked on the binary, whose
/// peak is its own: this process runs other tests beside it.)
async fn garbage_is_a_crash(fault: &str) {
    let fake = Fake::new();
    let servers = fake
        .servers(&[fault])
        .with_backoff(Duration::from_millis(10));
    let before = rss_kib();
    let notes = until_off(&servers, &fake.path("a.fk")).await;
    let grown = rss_kib().saturating_sub(before);
    println!("{fault}: RSS grew by {grown} KiB (other tests run beside this one)");
    assert_eq!(
        notes,
        vec!["fake diagnostics off: `python3` stopped 6 times".to_string()]
    );
    assert_eq!(fake.pids().len(), 6);
    assert_eq!(
        fake.left_after(Duration::from_secs(3)).await,
        Vec::<u32>::new()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn text_before_the_headers_disconnects_the_server() {
    bounded(garbage_is_a_crash("--garbage")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_content_length_disconnects_the_server() {
    bounded(garbage_is_a_crash("--huge-length")).await;
}

//! Problems a change brings to other open documents (`--cross`).

use super::*;

/// What the fake reports, under `--cross`, for a line `USES foo` (line
/// `line`, 1-based) of a file shown as `path` when nothing defines `foo`.
fn missing(path: &Path, line: u32) -> Diagnostic {
    Diagnostic {
        path: path.display().to_string(),
        line,
        col: 6,
        end: Position { line, col: 9 },
        severity: Severity::Error,
        code: Some("fake-missing".into()),
        source: "fake".into(),
        message: "foo is not defined".into(),
        new: false,
    }
}

/// Changes `file` (shown as its name) from `old` to `new` and checks that its
/// own answer is fresh.
async fn change(servers: &Servers, file: &Path, old: Option<&str>, new: &str) -> Change {
    let shown = file.file_name().unwrap().to_str().unwrap();
    let change = servers.change(file, shown, old, new, after(HEALTHY)).await;
    assert!(
        matches!(change.after, Answer::Fresh(_)),
        "{shown}: {:?}",
        change.after
    );
    change
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_that_breaks_or_fixes_another_open_file_lists_it() {
    bounded(async {
        let fake = Fake::new();
        let servers = fake.servers(&["--cross"]);
        let (a, b) = (fake.path("a.fk"), fake.path("b.fk"));
        let uses = "x\nUSES foo\n";
        let opened = change(&servers, &b, None, uses).await;
        assert_eq!(
            opened.after,
            Answer::Fresh(vec![missing(Path::new("b.fk"), 2)])
        );
        assert_eq!(opened.others, Vec::new());
        // Opening a file that defines foo fixes b.fk.
        let defines = "DEFINES foo\n";
        let fixed = change(&servers, &a, None, defines).await;
        assert_eq!(fixed.after, Answer::Fresh(Vec::new()));
        let gone = OtherFile {
            file: b.clone(),
            before: vec![missing(&b, 2)],
            after: Vec::new(),
        };
        assert_eq!(fixed.others, vec![gone.clone()]);
        // Removing the definition breaks it.
        let removed = change(&servers, &a, Some(defines), "other\n").await;
        let broken = OtherFile {
            file: b.clone(),
            before: Vec::new(),
            after: vec![missing(&b, 2)],
        };
        assert_eq!(removed.others, vec![broken]);
        // Putting it back fixes it again.
        let back = change(&servers, &a, Some("other\n"), defines).await;
        assert_eq!(back.others, vec![gone]);
        // A change that does not touch foo lists nothing.
        let unrelated = change(&servers, &a, Some(defines), "DEFINES foo\nBROKEN\n").await;
        assert_eq!(unrelated.others, Vec::new());
        assert!(matches!(unrelated.after, Answer::Fresh(ref d) if d.len() == 1));
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_documents_the_change_affects_are_listed() {
    bounded(async {
        let fake = Fake::new();
        let servers = fake.servers(&["--cross"]);
        let (a, b, c) = (fake.path("a.fk"), fake.path("b.fk"), fake.path("c.fk"));
        change(&servers, &b, None, "USES foo\n").await;
        change(&servers, &c, None, "USES bar\n").await;
        change(&servers, &a, None, "DEFINES bar\n").await;
        let change = change(&servers, &a, Some("DEFINES bar\n"), "DEFINES foo\n").await;
        let files: Vec<_> = change.others.iter().map(|o| o.file.clone()).collect();
        assert_eq!(
            files,
            vec![c.clone(), b.clone()],
            "most recently used first"
        );
        assert_eq!(change.others[1].before, vec![missing(&b, 1)]);
        assert_eq!(change.others[1].after, Vec::new());
        assert_eq!(change.others[0].before, Vec::new());
        assert_eq!(change.others[0].after.len(), 1);
        assert_eq!(change.others[0].after[0].message, "bar is not defined");
    })
    .await;
}

/// The median of `n` changes of `file` (break and fix), each checked to list
/// no other file.
async fn median_change(servers: &Servers, file: &Path, n: usize) -> Duration {
    let mut took = Vec::new();
    let mut old: Option<String> = None;
    for i in 0..n {
        let text = step_text(i);
        let started = Instant::now();
        let change = change(servers, file, old.as_deref(), &text).await;
        took.push(started.elapsed());
        assert_eq!(change.others, Vec::new(), "step {i}");
        old = Some(text);
    }
    took.sort();
    took[n / 2]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_publishes_only_for_the_changed_file_costs_no_wait() {
    bounded(async {
        let alone = Fake::new();
        let alone_servers = alone.servers(&[]);
        let crowd = Fake::new();
        let crowd_servers = crowd.servers(&[]);
        for name in ["b.fk", "c.fk", "d.fk"] {
            change(&crowd_servers, &crowd.path(name), None, "BROKEN\n").await;
        }
        // Warm both.
        median_change(&alone_servers, &alone.path("a.fk"), 2).await;
        median_change(&crowd_servers, &crowd.path("a.fk"), 2).await;
        let by_itself = median_change(&alone_servers, &alone.path("a.fk"), 9).await;
        let among_others = median_change(&crowd_servers, &crowd.path("a.fk"), 9).await;
        println!("median change: {by_itself:?} alone, {among_others:?} among others");
        assert!(
            among_others < by_itself + Duration::from_millis(100),
            "{among_others:?} with other documents open, {by_itself:?} without"
        );
    })
    .await;
}

/// A server that publishes for the changed file first and for the others
/// `later`: b.fk open with `USES foo`, a.fk with `DEFINES foo`, both answered
/// and the server seen publishing again for b.fk.
async fn others_later(fake: &Fake, later: &str) -> Servers {
    let servers = fake.servers(&["--cross", "--others-after", later]);
    change(&servers, &fake.path("b.fk"), None, "USES foo\n").await;
    change(&servers, &fake.path("a.fk"), None, "DEFINES foo\n").await;
    for _ in 0..200 {
        let b = servers
            .check(&fake.path("b.fk"), "b.fk", "USES foo\n", after(HEALTHY))
            .await;
        if b == Answer::Fresh(Vec::new()) {
            return servers;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("b.fk never fixed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_files_published_soon_after_are_waited_for() {
    bounded(async {
        let fake = Fake::new();
        let servers = others_later(&fake, "0.05").await;
        let b = fake.path("b.fk");
        let removed = change(&servers, &fake.path("a.fk"), Some("DEFINES foo\n"), "x\n").await;
        let broken = OtherFile {
            file: b.clone(),
            before: Vec::new(),
            after: vec![missing(&b, 1)],
        };
        assert_eq!(removed.others, vec![broken]);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_files_published_late_are_waited_for_a_grace_only() {
    bounded(async {
        let fake = Fake::new();
        let servers = others_later(&fake, "1.5").await;
        let started = Instant::now();
        let removed = change(&servers, &fake.path("a.fk"), Some("DEFINES foo\n"), "x\n").await;
        let took = started.elapsed();
        assert_eq!(removed.others, Vec::new());
        assert!(took >= OTHERS_GRACE, "{took:?}");
        assert!(took < OTHERS_GRACE + Duration::from_millis(600), "{took:?}");
        // Nor past the deadline.
        let started = Instant::now();
        let deadline = after(Duration::from_millis(20));
        servers
            .change(&fake.path("a.fk"), "a.fk", Some("x\n"), "y\n", deadline)
            .await;
        let took = started.elapsed();
        assert!(took < OTHERS_GRACE, "{took:?}");
    })
    .await;
}

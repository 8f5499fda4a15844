//! The temporary files a killed write leaves: noted in the journal, swept at the
//! next start, and nothing else touched.

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use pretty_assertions::assert_eq;
use toolbelt_fs::{Change, FsError, Jail, MAX_JOURNAL_BYTES, TempJournal, WriteOptions};

/// The margin the sweeps of these tests give a write under way.
const MIN_AGE: Duration = Duration::from_secs(60);
/// How old the planted leftovers are.
const HOUR: Duration = Duration::from_secs(3600);

struct Fixture {
    _tmp: tempfile::TempDir,
    /// The workspace root, canonical.
    root: PathBuf,
    /// A directory beside the root.
    outside: PathBuf,
    journal: Arc<TempJournal>,
    jail: Jail,
}

/// `<tmp>/work` is the root, `<tmp>/outside` is not; the journal is in `<tmp>/state`.
fn fixture() -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().canonicalize().unwrap();
    let root = base.join("work");
    let outside = base.join("outside");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    let journal = Arc::new(TempJournal::new(base.join("state/temp-dirs")));
    let jail = Jail::open(std::slice::from_ref(&root))
        .unwrap()
        .with_journal(Arc::clone(&journal));
    Fixture {
        _tmp: tmp,
        root,
        outside,
        journal,
        jail,
    }
}

impl Fixture {
    /// Writes `rel` through the jail, as a tool does.
    fn write(&self, rel: &str) {
        let p = self.jail.resolve(&self.root, rel).unwrap();
        let opts = WriteOptions {
            create_dirs: true,
            ..WriteOptions::default()
        };
        self.jail.write(&p, b"content\n", opts).unwrap();
    }

    fn journal_text(&self) -> String {
        std::fs::read_to_string(self.journal.path()).unwrap_or_default()
    }

    /// The directories the journal names, in order.
    fn journaled(&self) -> Vec<String> {
        self.journal_text()
            .lines()
            .map(|l| l.splitn(3, ' ').nth(2).unwrap().to_owned())
            .collect()
    }

    /// Makes the journal's writers look ended (`0 0`: a writer not known), as
    /// they are at the next start after a kill.
    fn end_writers(&self) {
        let text: String = self
            .journal_text()
            .lines()
            .map(|l| format!("0 0 {}\n", l.splitn(3, ' ').nth(2).unwrap()))
            .collect();
        std::fs::write(self.journal.path(), text).unwrap();
    }

    /// Adds lines naming `dirs` by an ended writer.
    fn journal_dirs(&self, dirs: &[&Path]) {
        let mut text = self.journal_text();
        for dir in dirs {
            text.push_str(&format!("0 0 {}\n", dir.display()));
        }
        std::fs::create_dir_all(self.journal.path().parent().unwrap()).unwrap();
        std::fs::write(self.journal.path(), text).unwrap();
    }

    /// Sweeps as a process started now does.
    fn sweep(&self) -> toolbelt_fs::Swept {
        self.journal
            .sweep(&self.jail, SystemTime::now(), MIN_AGE)
            .unwrap()
    }
}

/// A temporary file's name with the id made of `digit`.
fn temp(digit: char, kind: &str) -> String {
    format!(".tb-{}.{kind}", digit.to_string().repeat(32))
}

/// A regular file at `path`, last modified `age` ago.
fn plant(path: &Path, age: Duration) {
    std::fs::write(path, "left over\n").unwrap();
    let file = std::fs::File::options().write(true).open(path).unwrap();
    file.set_modified(SystemTime::now() - age).unwrap();
}

/// Sets the times of `path` itself (a symlink is not followed) to `age` ago.
fn age_nofollow(path: &Path, age: Duration) {
    let secs = (SystemTime::now() - age)
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let t = rustix::fs::Timespec {
        tv_sec: i64::try_from(secs).unwrap(),
        tv_nsec: 0,
    };
    rustix::fs::utimensat(
        rustix::fs::CWD,
        path,
        &rustix::fs::Timestamps {
            last_access: t,
            last_modification: t,
        },
        rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
    )
    .unwrap();
}

fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn the_journal_names_each_directory_once() {
    let f = fixture();
    assert_eq!(f.journal_text(), "", "nothing is noted before a write");
    for i in 0..5 {
        f.write(&format!("a/file{i}.txt"));
        f.write(&format!("b/c/file{i}.txt"));
    }
    // A commit's backups go in the same journal.
    std::fs::write(f.root.join("gone.txt"), "x").unwrap();
    let r = |p: &str| f.jail.resolve(&f.root, p).unwrap();
    f.jail
        .commit(&[
            Change::Delete {
                path: r("gone.txt"),
            },
            Change::Write {
                path: r("a/file0.txt"),
                bytes: b"new".to_vec(),
                create_new: false,
            },
        ])
        .unwrap();
    let shown = |rel: &str| {
        if rel.is_empty() {
            f.root.display().to_string()
        } else {
            f.root.join(rel).display().to_string()
        }
    };
    assert_eq!(f.journaled(), [shown("a"), shown("b/c"), shown("")]);
    // Each line names this process: its id, then its start time.
    let pid = std::process::id().to_string();
    assert!(
        f.journal_text()
            .lines()
            .all(|l| l.split(' ').next() == Some(pid.as_str())),
        "{}",
        f.journal_text()
    );
    // A second jail sharing the journal does not note them again.
    let other = Jail::open(std::slice::from_ref(&f.root))
        .unwrap()
        .with_journal(Arc::clone(&f.journal));
    let p = other.resolve(&f.root, "a/again.txt").unwrap();
    other.write(&p, b"x", WriteOptions::default()).unwrap();
    assert_eq!(f.journaled().len(), 3);
}

#[test]
fn a_killed_writes_temp_files_go_and_look_alikes_stay() {
    let f = fixture();
    f.write("sub/a.txt");
    f.end_writers();
    let sub = f.root.join("sub");
    // What a SIGKILL leaves: a staged file and a commit's backup.
    plant(&sub.join(temp('1', "tmp")), HOUR);
    plant(&sub.join(temp('2', "bak")), HOUR);
    // A user's files with names close to ours, as old.
    let user_files = [
        ".tb-notes.txt".to_owned(),
        format!(".tb-{}.tmp", "A".repeat(32)),
        temp('3', "txt"),
        format!("{}~", temp('4', "tmp")),
        format!(".tb-{}.tmp", "5".repeat(31)),
    ];
    for name in &user_files {
        plant(&sub.join(name), HOUR);
    }
    // A symlink so named, old itself, pointing out of the workspace.
    let victim = f.outside.join("victim.txt");
    plant(&victim, HOUR);
    let link = sub.join(temp('6', "tmp"));
    symlink(&victim, &link).unwrap();
    age_nofollow(&link, HOUR);
    // A directory so named.
    let dir = sub.join(temp('7', "tmp"));
    std::fs::create_dir(&dir).unwrap();
    age_nofollow(&dir, HOUR);

    let swept = f.sweep();
    let mut removed = swept.removed.clone();
    removed.sort();
    assert_eq!(
        removed,
        [sub.join(temp('1', "tmp")), sub.join(temp('2', "bak"))]
    );
    assert!(swept.problems.is_empty(), "{:?}", swept.problems);
    let mut expected: Vec<String> = user_files.to_vec();
    expected.extend(["a.txt".to_owned(), temp('6', "tmp"), temp('7', "tmp")]);
    expected.sort();
    assert_eq!(names(&sub), expected);
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "left over\n");
    assert_eq!(std::fs::read_link(&link).unwrap(), victim);
    // Nothing of ours is left there: the directory leaves the journal.
    assert_eq!((swept.entries_before, swept.entries_after), (1, 0));
    assert_eq!(f.journal_text(), "");
}

#[test]
fn a_temp_file_younger_than_the_margin_or_changed_since_the_start_is_kept() {
    let f = fixture();
    f.write("sub/a.txt");
    f.end_writers();
    let sub = f.root.join("sub");
    let old = sub.join(temp('1', "tmp"));
    plant(&old, HOUR);
    // Written 10 s before the start: perhaps a write still being flushed.
    let recent = sub.join(temp('2', "tmp"));
    plant(&recent, Duration::from_secs(10));
    let started = SystemTime::now();
    std::thread::sleep(Duration::from_millis(50));
    // A commit's backup linked after the start: old content, an inode just changed.
    plant(&f.outside.join("old.txt"), HOUR);
    let linked = sub.join(temp('3', "bak"));
    std::fs::hard_link(f.outside.join("old.txt"), &linked).unwrap();
    // Written after the start.
    let newer = sub.join(temp('4', "tmp"));
    plant(&newer, Duration::ZERO);

    let swept = f.journal.sweep(&f.jail, started, MIN_AGE).unwrap();
    assert_eq!(swept.removed, [old]);
    let mut young = swept.too_young.clone();
    young.sort();
    assert_eq!(young, [recent.clone(), linked.clone(), newer.clone()]);
    // Still holding leftovers: the directory stays in the journal.
    assert_eq!(swept.entries_after, 1);

    // A later start, without a margin, takes them.
    let later = SystemTime::now() + Duration::from_secs(1);
    let swept = f.journal.sweep(&f.jail, later, Duration::ZERO).unwrap();
    let mut removed = swept.removed.clone();
    removed.sort();
    assert_eq!(removed, [recent, linked, newer]);
    assert_eq!(swept.entries_after, 0);
    assert!(f.outside.join("old.txt").exists());
}

#[test]
fn another_users_temp_file_is_kept() {
    if !rustix::process::geteuid().is_root() {
        eprintln!("skipped: only root can give a file to another user");
        return;
    }
    let f = fixture();
    f.write("sub/a.txt");
    f.end_writers();
    let theirs = f.root.join("sub").join(temp('1', "tmp"));
    plant(&theirs, HOUR);
    rustix::fs::chown(&theirs, Some(rustix::fs::Uid::from_raw(4242)), None).unwrap();
    age_nofollow(&theirs, HOUR);
    let swept = f.sweep();
    assert_eq!(swept.removed, Vec::<PathBuf>::new());
    assert!(theirs.exists());
    // Not ours to remove, ever: it does not keep the directory in the journal.
    assert_eq!(swept.entries_after, 0);
}

#[test]
fn only_journaled_directories_in_the_roots_are_swept() {
    let f = fixture();
    // A directory toolbelt never wrote to.
    std::fs::create_dir(f.root.join("other")).unwrap();
    let unjournaled = f.root.join("other").join(temp('1', "tmp"));
    plant(&unjournaled, HOUR);
    // A journaled directory outside the roots.
    let outside = f.outside.join(temp('2', "tmp"));
    plant(&outside, HOUR);
    // A journaled directory replaced by a symlink leading out of the workspace.
    std::fs::create_dir(f.outside.join("dir")).unwrap();
    let behind_link = f.outside.join("dir").join(temp('3', "tmp"));
    plant(&behind_link, HOUR);
    symlink(f.outside.join("dir"), f.root.join("link")).unwrap();
    // A journaled directory that is gone, and one that is now a file.
    let gone = f.root.join("gone");
    std::fs::write(f.root.join("file"), "x").unwrap();
    f.journal_dirs(&[
        f.outside.as_path(),
        &f.root.join("link"),
        &gone,
        &f.root.join("file"),
    ]);

    let swept = f.sweep();
    assert_eq!(swept.removed, Vec::<PathBuf>::new());
    assert!(swept.problems.is_empty(), "{:?}", swept.problems);
    for kept in [&unjournaled, &outside, &behind_link] {
        assert!(kept.exists(), "{}", kept.display());
    }
    // The directory outside is not this jail's to judge: it stays; the others go.
    assert_eq!(f.journaled(), [f.outside.display().to_string()]);
}

#[test]
fn a_directory_being_written_is_left_for_the_next_start() {
    let f = fixture();
    f.write("sub/a.txt");
    f.end_writers();
    let leftover = f.root.join("sub").join(temp('1', "tmp"));
    plant(&leftover, HOUR);
    let p = f.jail.resolve(&f.root, "sub/a.txt").unwrap();
    let guard = f.jail.lock(&p).unwrap();
    let swept = f.sweep();
    assert_eq!(swept.busy, [f.root.join("sub")]);
    assert!(leftover.exists());
    assert_eq!(swept.entries_after, 1);
    drop(guard);
    assert_eq!(f.sweep().removed, [leftover]);
}

#[test]
fn a_running_writers_directories_stay_journaled() {
    let f = fixture();
    f.write("sub/a.txt");
    // This process noted `sub` and runs on: it may still leave a file there.
    let leftover = f.root.join("sub").join(temp('1', "tmp"));
    plant(&leftover, HOUR);
    let swept = f.sweep();
    assert_eq!(swept.removed, Vec::<PathBuf>::new());
    assert!(leftover.exists());
    assert_eq!(f.journaled(), [f.root.join("sub").display().to_string()]);
}

#[test]
fn the_journal_stays_under_its_cap() {
    let f = fixture();
    let line_dirs: Vec<PathBuf> = (0..1000)
        .map(|i| {
            f.outside
                .join(format!("a-long-directory-name-to-fill-the-journal-{i:05}"))
        })
        .collect();
    let refs: Vec<&Path> = line_dirs.iter().map(PathBuf::as_path).collect();
    f.journal_dirs(&refs);
    let size = std::fs::metadata(f.journal.path()).unwrap().len();
    assert!(size > MAX_JOURNAL_BYTES, "{size}");
    // Full: a new directory is not noted, and the write goes on.
    let p = f.jail.resolve(&f.root, "new.txt").unwrap();
    let err = f.journal.record(p.abs().parent().unwrap()).unwrap_err();
    assert!(matches!(err, FsError::TooLarge { .. }), "{err}");
    f.write("new.txt");
    // Compaction keeps the newest lines that fit.
    let swept = f.sweep();
    let size = std::fs::metadata(f.journal.path()).unwrap().len();
    assert!(size <= MAX_JOURNAL_BYTES, "{size}");
    let kept = f.journaled();
    assert_eq!(kept.len(), swept.entries_after);
    assert_eq!(
        kept.last().map(String::as_str),
        line_dirs.last().and_then(|d| d.to_str())
    );
}

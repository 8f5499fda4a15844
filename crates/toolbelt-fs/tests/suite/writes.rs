//! Atomic writes, all-or-nothing commits and locks, on real files.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use proptest::prelude::*;
use toolbelt_fs::{Change, FsError, Jail, WriteOptions};

fn jail_in(dir: &Path) -> Jail {
    Jail::open(&[dir.to_path_buf()]).unwrap()
}

#[test]
fn write_keeps_mode_and_reports_creation() {
    let tmp = tempfile::tempdir().unwrap();
    let jail = jail_in(tmp.path());
    let script = tmp.path().join("run.sh");
    std::fs::write(&script, "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o750)).unwrap();
    let p = jail.resolve(tmp.path(), "run.sh").unwrap();
    let w = jail
        .write(&p, b"#!/bin/sh\necho hi\n", WriteOptions::default())
        .unwrap();
    assert!(!w.created);
    assert_eq!(w.bytes, 18);
    let meta = std::fs::metadata(&script).unwrap();
    assert_eq!(meta.permissions().mode() & 0o7777, 0o750);
    assert_eq!(
        std::fs::read_to_string(&script).unwrap(),
        "#!/bin/sh\necho hi\n"
    );

    let q = jail.resolve(tmp.path(), "new.txt").unwrap();
    assert!(
        jail.write(&q, b"n", WriteOptions::default())
            .unwrap()
            .created
    );
    // No temporary files are left behind.
    let names: Vec<String> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.iter().all(|n| !n.starts_with(".tb-")), "{names:?}");
}

#[test]
fn create_new_and_create_dirs() {
    let tmp = tempfile::tempdir().unwrap();
    let jail = jail_in(tmp.path());
    let p = jail.resolve(tmp.path(), "a/b/c.txt").unwrap();
    let err = jail.write(&p, b"x", WriteOptions::default()).unwrap_err();
    assert!(matches!(err, FsError::NotFound { .. }), "{err}");
    let opts = WriteOptions {
        create_new: true,
        create_dirs: true,
    };
    assert!(jail.write(&p, b"x", opts).unwrap().created);
    let err = jail.write(&p, b"y", opts).unwrap_err();
    assert!(matches!(err, FsError::Exists { .. }), "{err}");
    assert_eq!(std::fs::read(tmp.path().join("a/b/c.txt")).unwrap(), b"x");
    let dir = jail.resolve(tmp.path(), "a").unwrap();
    let err = jail.write(&dir, b"x", WriteOptions::default()).unwrap_err();
    assert!(matches!(err, FsError::IsADirectory { .. }), "{err}");
}

#[test]
fn commit_applies_every_change() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("keep.txt"), "old").unwrap();
    std::fs::write(tmp.path().join("gone.txt"), "bye").unwrap();
    let jail = jail_in(tmp.path());
    let r = |p: &str| jail.resolve(tmp.path(), p).unwrap();
    jail.commit(&[
        Change::Write {
            path: r("keep.txt"),
            bytes: b"new".to_vec(),
            create_new: false,
        },
        Change::Write {
            path: r("deep/er/added.txt"),
            bytes: b"added".to_vec(),
            create_new: true,
        },
        Change::Delete {
            path: r("gone.txt"),
        },
    ])
    .unwrap();
    assert_eq!(
        std::fs::read_to_string(tmp.path().join("keep.txt")).unwrap(),
        "new"
    );
    assert_eq!(
        std::fs::read_to_string(tmp.path().join("deep/er/added.txt")).unwrap(),
        "added"
    );
    assert!(!tmp.path().join("gone.txt").exists());
    assert_eq!(leftovers(tmp.path()), Vec::<String>::new());
}

#[test]
fn commit_rolls_back_when_a_late_change_fails() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("one.txt"), "one").unwrap();
    std::fs::write(tmp.path().join("two.txt"), "two").unwrap();
    std::fs::write(tmp.path().join("exists.txt"), "here").unwrap();
    let jail = jail_in(tmp.path());
    let r = |p: &str| jail.resolve(tmp.path(), p).unwrap();
    let err = jail
        .commit(&[
            Change::Write {
                path: r("one.txt"),
                bytes: b"ONE".to_vec(),
                create_new: false,
            },
            Change::Delete { path: r("two.txt") },
            Change::Write {
                path: r("fresh/new.txt"),
                bytes: b"new".to_vec(),
                create_new: true,
            },
            Change::Write {
                path: r("exists.txt"),
                bytes: b"clobber".to_vec(),
                create_new: true,
            },
        ])
        .unwrap_err();
    assert!(matches!(err, FsError::Exists { .. }), "{err}");
    assert_eq!(
        std::fs::read_to_string(tmp.path().join("one.txt")).unwrap(),
        "one"
    );
    assert_eq!(
        std::fs::read_to_string(tmp.path().join("two.txt")).unwrap(),
        "two"
    );
    assert_eq!(
        std::fs::read_to_string(tmp.path().join("exists.txt")).unwrap(),
        "here"
    );
    assert!(
        !tmp.path().join("fresh").exists(),
        "created directories are removed again"
    );
    assert_eq!(leftovers(tmp.path()), Vec::<String>::new());
}

#[test]
fn commit_rolls_back_when_a_rename_fails_midway() {
    // The last target's directory turns read-only between staging and applying is
    // hard to arrange; a missing file to delete fails at staging, so use a target
    // that is a directory, which fails when applied... staged checks catch it too.
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("a.txt"), "a").unwrap();
    let jail = jail_in(tmp.path());
    let r = |p: &str| jail.resolve(tmp.path(), p).unwrap();
    let err = jail
        .commit(&[
            Change::Write {
                path: r("a.txt"),
                bytes: b"A".to_vec(),
                create_new: false,
            },
            Change::Delete {
                path: r("missing.txt"),
            },
        ])
        .unwrap_err();
    assert!(matches!(err, FsError::NotFound { .. }), "{err}");
    assert_eq!(
        std::fs::read_to_string(tmp.path().join("a.txt")).unwrap(),
        "a"
    );
    assert_eq!(leftovers(tmp.path()), Vec::<String>::new());
    let err = jail
        .commit(&[
            Change::Delete { path: r("a.txt") },
            Change::Delete { path: r("a.txt") },
        ])
        .unwrap_err();
    assert!(matches!(err, FsError::InvalidPath { .. }), "{err}");
}

/// Hidden temporary or backup files left in `dir`.
fn leftovers(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".tb-"))
        .collect()
}

#[test]
fn locks_exclude_each_other() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("counter"), "0").unwrap();
    let root = tmp.path().to_path_buf();
    let inside = Arc::new(AtomicUsize::new(0));
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let root = root.clone();
            let inside = inside.clone();
            std::thread::spawn(move || {
                let jail = jail_in(&root);
                let p = jail.resolve(&root, "counter").unwrap();
                for _ in 0..25 {
                    let _guard = jail.lock(&p).unwrap();
                    assert_eq!(
                        inside.fetch_add(1, Ordering::SeqCst),
                        0,
                        "two holders at once"
                    );
                    let n: u64 = String::from_utf8(jail.read(&p, 64).unwrap())
                        .unwrap()
                        .parse()
                        .unwrap();
                    jail.write(&p, (n + 1).to_string().as_bytes(), WriteOptions::default())
                        .unwrap();
                    inside.fetch_sub(1, Ordering::SeqCst);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(
        std::fs::read_to_string(root.join("counter")).unwrap(),
        "200"
    );
}

#[test]
fn lock_all_takes_each_directory_once() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir(tmp.path().join("sub")).unwrap();
    let jail = jail_in(tmp.path());
    let r = |p: &str| jail.resolve(tmp.path(), p).unwrap();
    // Same directory twice, a missing directory, and a subdirectory: no self-deadlock.
    let _guard = jail
        .lock_all(&[r("a"), r("b"), r("new/dir/c"), r("sub/d")])
        .unwrap();
}

const CHILD_ENV: &str = "TOOLBELT_TEST_KILLED_WRITER_DIR";
const CHILD_TEST: &str = "suite::writes::killed_writer_child";
const BIG_BYTES: usize = 50 * 1024 * 1024;

/// Run only as the child of `sigkill_mid_write_leaves_old_or_new`: rewrites the big
/// file with alternating contents until killed.
#[test]
fn killed_writer_child() {
    let Some(dir) = std::env::var_os(CHILD_ENV) else {
        return;
    };
    let dir = PathBuf::from(dir);
    let jail = jail_in(&dir);
    let p = jail.resolve(&dir, "big.bin").unwrap();
    let a = vec![b'a'; BIG_BYTES];
    let b = vec![b'b'; BIG_BYTES];
    println!("started");
    for i in 0.. {
        let bytes = if i % 2 == 0 { &b } else { &a };
        jail.write(&p, bytes, WriteOptions::default()).unwrap();
    }
}

/// A process killed with SIGKILL in the middle of a 50 MB write leaves the old
/// content or the new one, never a torn file.
#[test]
fn sigkill_mid_write_leaves_old_or_new() {
    let tmp = tempfile::tempdir().unwrap();
    let big = tmp.path().join("big.bin");
    std::fs::write(&big, vec![b'a'; BIG_BYTES]).unwrap();
    for delay_ms in [30, 120, 400] {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", CHILD_TEST, "--nocapture", "--test-threads=1"])
            .env(CHILD_ENV, tmp.path())
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(delay_ms));
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        let bytes = std::fs::read(&big).unwrap();
        assert_eq!(bytes.len(), BIG_BYTES, "torn after {delay_ms} ms");
        let first = bytes[0];
        assert!(first == b'a' || first == b'b');
        assert!(
            bytes.iter().all(|&b| b == first),
            "mixed content after {delay_ms} ms"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Whatever the path, a resolved path lies in the root.
    #[test]
    fn no_path_resolves_outside_the_root(
        parts in prop::collection::vec(
            prop::sample::select(vec!["..", ".", "a", "b", "up", "out", "loop", "x.txt", "", "/"]),
            0..12,
        ),
        absolute in any::<bool>(),
    ) {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("root");
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        std::fs::create_dir_all(tmp.path().join("outside")).unwrap();
        std::os::unix::fs::symlink("..", root.join("a/up")).unwrap();
        std::os::unix::fs::symlink("../../outside", root.join("a/out")).unwrap();
        std::os::unix::fs::symlink("loop", root.join("loop")).unwrap();
        let jail = jail_in(&root);
        let joined = parts.join("/");
        let input = if absolute { format!("{}/{joined}", root.display()) } else { joined };
        if let Ok(p) = jail.resolve(&root, &input) {
            let canon_root = root.canonicalize().unwrap();
            prop_assert!(p.abs().starts_with(&canon_root), "{input} -> {}", p.abs().display());
            prop_assert!(!p.abs().components().any(|c| c.as_os_str() == ".."));
        }
    }
}

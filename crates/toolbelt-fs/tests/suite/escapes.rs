//! Attacks on the jail, each named by what it attacks.

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use toolbelt_fs::{FsError, Jail, WriteOptions};

struct Fixture {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    outside: PathBuf,
    jail: Jail,
}

/// `<tmp>/work` is the root; `<tmp>/outside` holds `secret.txt` and `dir/inner.txt`.
fn fixture() -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("work");
    let outside = tmp.path().join("outside");
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::create_dir_all(outside.join("dir")).unwrap();
    std::fs::write(root.join("src/main.rs"), "fn main() {}\n").unwrap();
    std::fs::write(outside.join("secret.txt"), "secret\n").unwrap();
    std::fs::write(outside.join("dir/inner.txt"), "inner\n").unwrap();
    let jail = Jail::open(std::slice::from_ref(&root)).unwrap();
    Fixture {
        _tmp: tmp,
        root,
        outside,
        jail,
    }
}

fn write_opts() -> WriteOptions {
    WriteOptions::default()
}

#[test]
fn dotdot_out_of_the_root() {
    let f = fixture();
    for path in [
        "../outside/secret.txt",
        "src/../../outside/secret.txt",
        "..",
    ] {
        let err = f.jail.resolve(&f.root, path).unwrap_err();
        assert!(matches!(err, FsError::Outside { .. }), "{path}: {err}");
        assert!(err.to_string().contains("outside the workspace"), "{err}");
    }
    // `..` that stays inside is fine.
    let p = f.jail.resolve(&f.root, "src/../src/main.rs").unwrap();
    assert_eq!(p.abs(), f.root.join("src/main.rs").canonicalize().unwrap());
}

#[test]
fn absolute_path_elsewhere() {
    let f = fixture();
    for path in [
        "/etc/passwd",
        f.outside.join("secret.txt").to_str().unwrap(),
        "/",
    ] {
        let err = f.jail.resolve(&f.root, path).unwrap_err();
        assert!(matches!(err, FsError::Outside { .. }), "{path}: {err}");
    }
    let inside = f.root.join("src/main.rs");
    let p = f
        .jail
        .resolve(Path::new("/"), inside.to_str().unwrap())
        .unwrap();
    assert_eq!(f.jail.read(&p, 1024).unwrap(), b"fn main() {}\n");
}

#[test]
fn path_prefix_confusion() {
    let f = fixture();
    let twin = f.root.with_file_name("work2");
    std::fs::create_dir_all(&twin).unwrap();
    std::fs::write(twin.join("x.txt"), "twin").unwrap();
    let err = f
        .jail
        .resolve(&f.root, twin.join("x.txt").to_str().unwrap())
        .unwrap_err();
    assert!(matches!(err, FsError::Outside { .. }), "{err}");
    let err = f.jail.resolve(&f.root, "../work2/x.txt").unwrap_err();
    assert!(matches!(err, FsError::Outside { .. }), "{err}");
}

#[test]
fn symlink_to_an_outside_file() {
    let f = fixture();
    symlink(f.outside.join("secret.txt"), f.root.join("link")).unwrap();
    let err = f.jail.resolve(&f.root, "link").unwrap_err();
    assert!(matches!(err, FsError::SymlinkEscape { .. }), "{err}");
    assert!(err.to_string().contains("outside the workspace"), "{err}");
    // A relative link climbing out is refused the same way.
    symlink("../outside/secret.txt", f.root.join("rel")).unwrap();
    let err = f.jail.resolve(&f.root, "rel").unwrap_err();
    assert!(matches!(err, FsError::SymlinkEscape { .. }), "{err}");
    // Even a path that was never resolved cannot be read or written through it.
    let lexical = f.jail.lexical(&f.root, "link").unwrap();
    assert!(f.jail.read(&lexical, 1024).is_err());
    assert!(f.jail.write(&lexical, b"pwned", write_opts()).is_err());
    assert_eq!(
        std::fs::read_to_string(f.outside.join("secret.txt")).unwrap(),
        "secret\n"
    );
}

#[test]
fn symlink_to_an_outside_directory() {
    let f = fixture();
    symlink(f.outside.join("dir"), f.root.join("dirlink")).unwrap();
    for path in ["dirlink", "dirlink/inner.txt", "dirlink/new.txt"] {
        let err = f.jail.resolve(&f.root, path).unwrap_err();
        assert!(
            matches!(err, FsError::SymlinkEscape { .. }),
            "{path}: {err}"
        );
    }
    let lexical = f.jail.lexical(&f.root, "dirlink/new.txt").unwrap();
    let err = f.jail.write(&lexical, b"pwned", write_opts()).unwrap_err();
    assert!(matches!(err, FsError::Outside { .. }), "{err}");
    let lexical = f.jail.lexical(&f.root, "dirlink/inner.txt").unwrap();
    assert!(f.jail.read(&lexical, 1024).is_err());
    let lexical = f.jail.lexical(&f.root, "dirlink").unwrap();
    assert!(f.jail.read_dir(&lexical).is_err());
    assert!(!f.outside.join("dir/new.txt").exists());
}

#[test]
fn symlinks_inside_the_root_are_followed() {
    let f = fixture();
    symlink("src/main.rs", f.root.join("a")).unwrap();
    symlink("a", f.root.join("b")).unwrap();
    symlink(f.root.join("b"), f.root.join("c")).unwrap();
    symlink("src", f.root.join("s")).unwrap();
    let real = f.root.join("src/main.rs").canonicalize().unwrap();
    for path in ["a", "b", "c", "s/main.rs", "s/../s/main.rs"] {
        let p = f.jail.resolve(&f.root, path).unwrap();
        assert_eq!(p.abs(), real, "{path}");
    }
    // A write through a link lands in the link's target; the link stays a link.
    let p = f.jail.resolve(&f.root, "c").unwrap();
    f.jail
        .write(&p, b"fn main() { 1; }\n", write_opts())
        .unwrap();
    assert_eq!(
        std::fs::read_to_string(f.root.join("src/main.rs")).unwrap(),
        "fn main() { 1; }\n"
    );
    assert!(f.root.join("c").symlink_metadata().unwrap().is_symlink());
}

#[test]
fn symlink_chain_leading_out() {
    let f = fixture();
    symlink(f.outside.join("secret.txt"), f.root.join("last")).unwrap();
    symlink("last", f.root.join("middle")).unwrap();
    symlink("middle", f.root.join("first")).unwrap();
    let err = f.jail.resolve(&f.root, "first").unwrap_err();
    assert!(matches!(err, FsError::SymlinkEscape { .. }), "{err}");
}

#[test]
fn symlink_loops_are_answered_quickly() {
    let f = fixture();
    symlink("loop2", f.root.join("loop1")).unwrap();
    symlink("loop1", f.root.join("loop2")).unwrap();
    symlink("self", f.root.join("self")).unwrap();
    // A directory link to its own parent makes an endless path.
    symlink(".", f.root.join("dot")).unwrap();
    let started = Instant::now();
    for path in ["loop1", "loop2/x", "self"] {
        let err = f.jail.resolve(&f.root, path).unwrap_err();
        assert!(matches!(err, FsError::SymlinkLoop { .. }), "{path}: {err}");
    }
    let deep = ["dot"; 60].join("/") + "/src/main.rs";
    let err = f.jail.resolve(&f.root, &deep).unwrap_err();
    assert!(matches!(err, FsError::SymlinkLoop { .. }), "{err}");
    // Through the kernel too: a never-resolved loop fails, it does not spin.
    let lexical = f.jail.lexical(&f.root, "loop1").unwrap();
    assert!(f.jail.read(&lexical, 1024).is_err());
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[test]
fn hard_link_to_an_outside_file_is_replaced_not_written_through() {
    let f = fixture();
    let outside = f.outside.join("secret.txt");
    if std::fs::hard_link(&outside, f.root.join("hard.txt")).is_err() {
        eprintln!("hard links are not supported here; skipped");
        return;
    }
    let p = f.jail.resolve(&f.root, "hard.txt").unwrap();
    // Reading it is reading a file of the workspace.
    assert_eq!(f.jail.read(&p, 1024).unwrap(), b"secret\n");
    f.jail.write(&p, b"edited\n", write_opts()).unwrap();
    assert_eq!(
        std::fs::read_to_string(f.root.join("hard.txt")).unwrap(),
        "edited\n"
    );
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "secret\n");
}

#[test]
fn fifo_is_refused_without_blocking() {
    let f = fixture();
    let fifo = f.root.join("pipe");
    rustix::fs::mkfifoat(
        rustix::fs::CWD,
        &fifo,
        rustix::fs::Mode::from_raw_mode(0o644),
    )
    .unwrap();
    let started = Instant::now();
    let p = f.jail.resolve(&f.root, "pipe").unwrap();
    let err = f.jail.read(&p, 1024).unwrap_err();
    assert!(matches!(err, FsError::NotAFile { .. }), "{err}");
    assert!(err.to_string().contains("FIFO"), "{err}");
    let err = f.jail.write(&p, b"x", write_opts()).unwrap_err();
    assert!(matches!(err, FsError::NotAFile { .. }), "{err}");
    // The fast open for walkers does not block either.
    let _ = f.jail.open_walked(p.abs());
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[test]
fn devices_and_sockets_are_refused() {
    let f = fixture();
    symlink("/dev/null", f.root.join("null")).unwrap();
    // /dev/null is outside the root: the link is refused as an escape.
    assert!(f.jail.resolve(&f.root, "null").is_err());
    let sock = f.root.join("sock");
    let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    let p = f.jail.resolve(&f.root, "sock").unwrap();
    let err = f.jail.read(&p, 1024).unwrap_err();
    assert!(matches!(err, FsError::NotAFile { .. }), "{err}");
}

#[test]
fn nul_bytes_and_very_long_names() {
    let f = fixture();
    let err = f.jail.resolve(&f.root, "src/ma\0in.rs").unwrap_err();
    assert!(matches!(err, FsError::InvalidPath { .. }), "{err}");
    assert!(err.to_string().contains("NUL"), "{err}");
    let err = f.jail.resolve(&f.root, "").unwrap_err();
    assert!(matches!(err, FsError::InvalidPath { .. }), "{err}");
    let err = f.jail.resolve(&f.root, &"a/".repeat(3000)).unwrap_err();
    assert!(matches!(err, FsError::InvalidPath { .. }), "{err}");
    // A 300-byte name is refused clearly, at resolution or at the write.
    let long = "n".repeat(300);
    let err = f.jail.lexical(&f.root, &long).and_then(|p| {
        f.jail.resolve(&f.root, &long)?;
        f.jail.write(&p, b"x", write_opts()).map(|_| p)
    });
    let err = err.unwrap_err();
    assert!(matches!(err, FsError::InvalidPath { .. }), "{err}");
    assert!(err.to_string().contains("255"), "{err}");
    let err = f.jail.resolve(&f.root, "~/secrets").unwrap_err();
    assert!(matches!(err, FsError::InvalidPath { .. }), "{err}");
}

#[test]
fn a_nested_symlinked_root_is_matched_by_either_spelling() {
    let tmp = tempfile::tempdir().unwrap();
    let real = tmp.path().join("real");
    std::fs::create_dir_all(&real).unwrap();
    std::fs::write(real.join("f.txt"), "f").unwrap();
    let alias = tmp.path().join("alias");
    symlink(&real, &alias).unwrap();
    let jail = Jail::open(std::slice::from_ref(&alias)).unwrap();
    let by_alias = jail
        .resolve(&alias, alias.join("f.txt").to_str().unwrap())
        .unwrap();
    let by_real = jail
        .resolve(&alias, real.join("f.txt").to_str().unwrap())
        .unwrap();
    assert_eq!(by_alias, by_real);
    assert_eq!(jail.read(&by_alias, 16).unwrap(), b"f");
}

/// A thread swaps a directory of the root with a symlink to the outside, over and
/// over, while 2,000 writes go into it: none may land outside.
#[test]
fn race_directory_flipped_to_an_outside_symlink() {
    let f = fixture();
    let target = f.outside.join("target");
    std::fs::create_dir_all(&target).unwrap();
    std::fs::create_dir_all(f.root.join("d")).unwrap();
    symlink(&target, f.root.join("spare")).unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flipper = {
        let stop = stop.clone();
        let root = f.root.clone();
        std::thread::spawn(move || {
            let mut flips = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                rustix::fs::renameat_with(
                    rustix::fs::CWD,
                    root.join("d"),
                    rustix::fs::CWD,
                    root.join("spare"),
                    rustix::fs::RenameFlags::EXCHANGE,
                )
                .unwrap();
                flips += 1;
            }
            flips
        })
    };
    let mut written = 0;
    for i in 0..2000 {
        let name = format!("d/f{i}.txt");
        let Ok(p) = f.jail.resolve(&f.root, &name) else {
            continue;
        };
        let opts = WriteOptions {
            create_dirs: i % 2 == 0,
            ..WriteOptions::default()
        };
        if f.jail.write(&p, b"data", opts).is_ok() {
            written += 1;
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let flips = flipper.join().unwrap();
    let escaped: Vec<_> = walk(&f.outside)
        .into_iter()
        .filter(|p| !p.ends_with("secret.txt") && !p.ends_with("dir/inner.txt"))
        .collect();
    assert_eq!(escaped, Vec::<PathBuf>::new(), "files escaped the root");
    assert!(flips > 100, "the flipper only flipped {flips} times");
    assert!(written > 0, "no write succeeded at all");
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let ft = entry.file_type().unwrap();
        if ft.is_dir() {
            out.extend(walk(&entry.path()));
        } else {
            out.push(entry.path());
        }
    }
    out
}

//! The write benchmark: WRITES atomic writes ([`Jail::write`]) of a small file,
//! spread over 4 directories, half replacing an existing file and half creating
//! one, by a jail without a journal and by one noting its temporary files'
//! directories in a [`TempJournal`] (rounds of 50 writes, alternately, so that
//! load from other processes hits both alike); reports the median, mean and 90th
//! percentile time of one write for each.
//!
//! ```text
//! cargo run --release -p toolbelt-fs --example write_bench -- [WRITES] [DIR]
//! ```
//!
//! DIR (default: the current directory) is where the files are written, in a
//! temporary directory: pick one on the disk to measure, as every write is
//! flushed to it.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use toolbelt_fs::{Jail, TempJournal, WriteOptions};

/// Directories the writes are spread over.
const DIRS: usize = 4;
/// Writes of one round.
const ROUND_WRITES: usize = 50;
/// What is written: a small source file.
const CONTENT: &str = "fn main() {\n    println!(\"hello\");\n}\n";

fn run(jail: &Jail, root: &Path, writes: usize, round: usize) -> Vec<Duration> {
    let opts = WriteOptions {
        create_dirs: true,
        ..WriteOptions::default()
    };
    let content = CONTENT.repeat(20);
    let mut times = Vec::with_capacity(writes);
    for i in 0..writes {
        // Even: the same file again (replace); odd: a new file (create).
        let name = if i % 2 == 0 {
            format!("d{}/kept.rs", i % DIRS)
        } else {
            format!("d{}/new-{round}-{i}.rs", i % DIRS)
        };
        let p = jail.resolve(root, &name).unwrap();
        let start = Instant::now();
        jail.write(&p, content.as_bytes(), opts).unwrap();
        times.push(start.elapsed());
    }
    times
}

fn report(label: &str, mut times: Vec<Duration>) {
    times.sort();
    let n = times.len();
    let total: Duration = times.iter().sum();
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    println!(
        "{label}: {n} writes, median {:.1} us, mean {:.1} us, p90 {:.1} us",
        us(times[n / 2]),
        us(total / u32::try_from(n).unwrap()),
        us(times[n * 9 / 10]),
    );
}

fn main() {
    let mut args = std::env::args().skip(1);
    let writes: usize = args.next().map_or(400, |a| a.parse().unwrap());
    let held = tempfile::tempdir_in(args.next().unwrap_or_else(|| ".".into())).unwrap();
    let base = held.path().canonicalize().unwrap();
    let (plain_root, noted_root) = (base.join("plain"), base.join("noted"));
    std::fs::create_dir_all(&plain_root).unwrap();
    std::fs::create_dir_all(&noted_root).unwrap();
    let plain = Jail::open(std::slice::from_ref(&plain_root)).unwrap();
    let journal = Arc::new(TempJournal::new(base.join("state/temp-dirs")));
    let noted = Jail::open(std::slice::from_ref(&noted_root))
        .unwrap()
        .with_journal(journal);
    // A warm-up round each: the directories exist (and are noted), caches are filled.
    run(&plain, &plain_root, DIRS * 4, 0);
    run(&noted, &noted_root, DIRS * 4, 0);
    let (mut without, mut with) = (Vec::new(), Vec::new());
    for round in 1..=writes.div_ceil(ROUND_WRITES) {
        without.extend(run(&plain, &plain_root, ROUND_WRITES, round));
        with.extend(run(&noted, &noted_root, ROUND_WRITES, round));
    }
    report("without a journal", without);
    report("with a journal   ", with);
}

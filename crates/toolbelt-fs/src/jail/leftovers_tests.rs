use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use pretty_assertions::assert_eq;

use super::*;
use crate::jail::is_temp_name;

const HEX: &str = "0123456789abcdef0123456789abcdef";

#[test]
fn temp_names_are_exactly_what_writes_make() {
    assert!(is_temp_name(&format!(".tb-{HEX}.tmp")));
    assert!(is_temp_name(&format!(".tb-{HEX}.bak")));
    for name in [
        ".tb-notes.txt".to_owned(),
        ".tb-.tmp".to_owned(),
        format!(".tb-{HEX}.txt"),
        format!(".tb-{HEX}.tmp.orig"),
        format!(".tb-{HEX}.tmp~"),
        format!(".tb-{HEX}"),
        format!(".tb-{HEX}0.tmp"),
        format!(".tb-{}.tmp", &HEX[1..]),
        format!(".tb-{}.tmp", HEX.to_uppercase()),
        format!(".tb-{}g.tmp", &HEX[1..]),
        format!("tb-{HEX}.tmp"),
        format!("x.tb-{HEX}.tmp"),
        format!(".TB-{HEX}.tmp"),
        format!(".tb-{HEX}.TMP"),
    ] {
        assert!(!is_temp_name(&name), "{name}");
    }
}

fn rules(started: SystemTime) -> Rules {
    Rules {
        uid: 1000,
        modified_before: started - Duration::from_secs(60),
        changed_before: started,
    }
}

#[test]
fn only_old_regular_files_of_ours_are_removed() {
    let started = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
    let hour_ago = started - Duration::from_secs(3600);
    let old = Seen {
        kind: EntryKind::File,
        uid: 1000,
        modified: Some(hour_ago),
        changed: Some(hour_ago),
    };
    let r = rules(started);
    assert_eq!(judge(&old, &r), Judgement::Remove);
    // Another user's, or not a regular file: never touched.
    assert_eq!(judge(&Seen { uid: 0, ..old }, &r), Judgement::NotOurs);
    for kind in [EntryKind::Symlink, EntryKind::Dir, EntryKind::Fifo] {
        assert_eq!(judge(&Seen { kind, ..old }, &r), Judgement::NotOurs);
    }
    // Modified within the margin before the start, or after it: a write under way.
    let recent = Some(started - Duration::from_secs(10));
    assert_eq!(
        judge(
            &Seen {
                modified: recent,
                ..old
            },
            &r
        ),
        Judgement::TooYoung
    );
    let later = Some(started + Duration::from_secs(1));
    assert_eq!(
        judge(
            &Seen {
                modified: later,
                ..old
            },
            &r
        ),
        Judgement::TooYoung
    );
    // An old modification time on an inode changed since the start: a backup just
    // linked to old content.
    assert_eq!(
        judge(
            &Seen {
                changed: later,
                ..old
            },
            &r
        ),
        Judgement::TooYoung
    );
    // No time known: kept.
    assert_eq!(
        judge(
            &Seen {
                modified: None,
                ..old
            },
            &r
        ),
        Judgement::TooYoung
    );
}

#[test]
fn journal_lines_read_back_and_bad_ones_are_dropped() {
    let entries = vec![
        Entry {
            writer: Some(Writer {
                pid: 42,
                start_ticks: 7,
            }),
            dir: PathBuf::from("/w/a dir with spaces"),
        },
        Entry {
            writer: None,
            dir: PathBuf::from("/w/b"),
        },
    ];
    let mut text: Vec<u8> = entries.iter().flat_map(Entry::line).collect();
    assert_eq!(
        String::from_utf8_lossy(&text),
        "42 7 /w/a dir with spaces\n0 0 /w/b\n"
    );
    text.extend_from_slice(b"garbage\n1 2 relative/dir\nx 1 /w/c\n\n3 4 /w/d\n5 6 /w/unfinis");
    let mut expected = entries;
    expected.push(Entry {
        writer: Some(Writer {
            pid: 3,
            start_ticks: 4,
        }),
        dir: PathBuf::from("/w/d"),
    });
    assert_eq!(parse(&text), expected);
}

#[test]
fn this_process_is_alive_and_a_reused_pid_is_not() {
    let me = this_process().unwrap();
    assert!(is_alive(me));
    assert!(!is_alive(Writer {
        start_ticks: me.start_ticks + 1,
        ..me
    }));
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let pid = child.id();
    let started = start_ticks(pid);
    child.wait().unwrap();
    if let Some(start_ticks) = started {
        assert!(!is_alive(Writer { pid, start_ticks }));
    }
}

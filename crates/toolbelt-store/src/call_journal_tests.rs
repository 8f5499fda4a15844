#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use pretty_assertions::assert_eq;

use super::*;

fn row(journal: &Journal, n: usize, args: &str) -> CallRow {
    CallRow {
        record_key: Some(journal.next_key()),
        at_ms: 1_700_000_000_000 + n as i64,
        tool: "think".into(),
        call_id: format!("call-{n}"),
        args: args.into(),
        status: "success".into(),
        error_code: None,
        duration_ms: 1,
        bytes_out: 2,
        workspace: "/w".into(),
        origin: None,
        checkpoint: None,
        hooks: None,
    }
}

fn call_ids(rows: &[CallRow]) -> Vec<String> {
    rows.iter().map(|r| r.call_id.clone()).collect()
}

/// What is appended comes back whole, in order, in batches of at most `max`, from
/// where the last batch was committed; keys are unique.
#[test]
fn appended_rows_are_read_back_in_batches_from_the_committed_point() {
    let dir = tempfile::tempdir().unwrap();
    let journal = Journal::create(dir.path(), "tag").unwrap();
    let rows: Vec<CallRow> = (0..5).map(|n| row(&journal, n, "{}")).collect();
    for (n, r) in rows.iter().enumerate() {
        assert_eq!(journal.append(r).unwrap(), n as u64 + 1);
    }
    let mut buf = Vec::new();
    let first = journal.read_batch(3, &mut buf).unwrap();
    assert_eq!(first.rows, rows[..3]);
    assert_eq!(first.lines, 3);
    // Not committed: read again from the same point.
    assert_eq!(journal.read_batch(3, &mut buf).unwrap().rows, rows[..3]);
    journal.commit(first.lines, first.end);
    assert_eq!(journal.pending(), 2);
    let second = journal.read_batch(3, &mut buf).unwrap();
    assert_eq!(second.rows, rows[3..]);
    journal.commit(second.lines, second.end);
    assert_eq!((journal.pending(), journal.appended()), (0, 5));
    let keys: std::collections::BTreeSet<_> = rows.iter().map(|r| r.record_key.clone()).collect();
    assert_eq!(keys.len(), 5);
}

/// A line longer than one read is read whole.
#[test]
fn a_line_longer_than_a_read_is_read_whole() {
    let dir = tempfile::tempdir().unwrap();
    let journal = Journal::create(dir.path(), "tag").unwrap();
    let long = row(&journal, 1, &"x".repeat(3 * READ_CHUNK_BYTES));
    journal.append(&long).unwrap();
    let batch = journal.read_batch(32, &mut Vec::new()).unwrap();
    assert_eq!(batch.rows, [long]);
}

/// Once everything is committed past the rotation size, the journal goes on in a
/// new file (the old one removed), and the keys go on.
#[test]
fn a_committed_journal_past_its_size_goes_on_in_a_new_file() {
    let dir = tempfile::tempdir().unwrap();
    let journal = Journal::create(dir.path(), "tag").unwrap();
    let first = journal.path();
    let args = "y".repeat(1000);
    let mut n = 0;
    while std::fs::metadata(&first).unwrap().len() < CALL_JOURNAL_ROTATE_BYTES {
        journal.append(&row(&journal, n, &args)).unwrap();
        n += 1;
    }
    let mut buf = Vec::new();
    while journal.pending() > 0 {
        let batch = journal.read_batch(32, &mut buf).unwrap();
        assert_eq!(journal.path(), first, "rotated before all was committed");
        journal.commit(batch.lines, batch.end);
    }
    let second = journal.path();
    assert_ne!(second, first);
    assert!(!first.exists());
    let last = row(&journal, n, "{}");
    journal.append(&last).unwrap();
    assert_eq!(
        journal.read_batch(32, &mut buf).unwrap().rows,
        std::slice::from_ref(&last)
    );
    assert_eq!(
        last.record_key.unwrap().rsplit(':').next(),
        Some(n.to_string().as_str())
    );
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(names, [second]);
}

/// A journal with records left stays when dropped; an empty one goes.
#[test]
fn a_journal_is_removed_at_the_end_only_when_all_is_committed() {
    let dir = tempfile::tempdir().unwrap();
    let kept = Journal::create(dir.path(), "tag").unwrap();
    kept.append(&row(&kept, 1, "{}")).unwrap();
    let kept_path = kept.path();
    drop(kept);
    assert!(kept_path.exists());
    let done = Journal::create(dir.path(), "tag").unwrap();
    let done_path = done.path();
    drop(done);
    assert!(!done_path.exists());
}

/// Of a directory: the unlocked journals of this store, oldest first; not a live
/// one, not another store's, not a stray file; a new file its process never named
/// is removed.
#[test]
fn dead_journals_are_the_unlocked_ones_of_this_store() {
    let dir = tempfile::tempdir().unwrap();
    let live = Journal::create(dir.path(), "tag").unwrap();
    live.append(&row(&live, 0, "{}")).unwrap();
    let mut dead = Vec::new();
    for _ in 0..2 {
        let ended = Journal::create(dir.path(), "tag").unwrap();
        ended.append(&row(&ended, 0, "{}")).unwrap();
        dead.push(ended.path());
    }
    let other_store = Journal::create(dir.path(), "other").unwrap();
    other_store.append(&row(&other_store, 0, "{}")).unwrap();
    drop(other_store);
    std::fs::write(dir.path().join("notes.txt"), "not a journal").unwrap();
    let unnamed = dir
        .path()
        .join(format!(".tag-x-000000{EXTENSION}{NEW_SUFFIX}"));
    std::fs::write(&unnamed, "").unwrap();

    let found: Vec<PathBuf> = dead_journals(dir.path(), "tag", Some(&live.path()))
        .into_iter()
        .map(|d| d.path().to_path_buf())
        .collect();
    dead.sort();
    assert_eq!(found, dead);
    assert!(!unnamed.exists());
    // Found, and so locked by this process: not found twice.
    let held = dead_journals(dir.path(), "tag", None);
    assert_eq!(held.len(), 2);
    assert_eq!(dead_journals(dir.path(), "tag", None).len(), 0);
}

/// A dead journal's records come back in batches; a line that is not a record and
/// an unfinished last line (torn by a crash) are left out.
#[test]
fn a_dead_journal_leaves_out_unreadable_and_unfinished_lines() {
    let dir = tempfile::tempdir().unwrap();
    let journal = Journal::create(dir.path(), "tag").unwrap();
    let rows: Vec<CallRow> = (0..3).map(|n| row(&journal, n, "{}")).collect();
    journal.append(&rows[0]).unwrap();
    let path = journal.path();
    drop(journal);
    let mut text = std::fs::read(&path).unwrap();
    text.extend_from_slice(b"\0\0\0 not a record\n");
    text.extend_from_slice(&serde_json::to_vec(&rows[1]).unwrap());
    text.push(b'\n');
    text.extend_from_slice(b"{\"record_key\":\"torn");
    std::fs::write(&path, text).unwrap();

    let mut dead = dead_journals(dir.path(), "tag", None);
    assert_eq!(dead.len(), 1);
    let mut read = Vec::new();
    while let Some(batch) = dead[0].next_batch(2).unwrap() {
        read.extend(batch);
    }
    assert_eq!(call_ids(&read), ["call-0", "call-1"]);
    dead.pop().unwrap().remove();
    assert!(!path.exists());
}

/// The store's tag is its location's, stable, and blind to the password.
#[test]
fn the_store_tag_names_the_location_without_its_password() {
    let a = store_tag(&Location::Postgres("postgres://u:one@h/db".into()));
    let b = store_tag(&Location::Postgres("postgres://u:two@h/db".into()));
    let c = store_tag(&Location::Postgres("postgres://u:one@h/other".into()));
    assert_eq!(a, b);
    assert_ne!(a, c);
    assert_eq!(a.len(), 16);
    assert_eq!(
        store_tag(&Location::Sqlite("/state/toolbelt.db".into())),
        store_tag(&Location::Sqlite("/state/toolbelt.db".into()))
    );
}

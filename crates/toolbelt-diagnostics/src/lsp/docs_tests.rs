use super::*;
use lsp_types::{Position, Range};

fn uri(name: &str) -> Url {
    Url::parse(&format!("file:///w/{name}")).unwrap()
}

fn problem(line: u32) -> lsp_types::Diagnostic {
    lsp_types::Diagnostic {
        range: Range::new(Position::new(line, 0), Position::new(line, 6)),
        message: format!("line {line}"),
        ..lsp_types::Diagnostic::default()
    }
}

fn sync(docs: &mut Docs, name: &str, text: &str) -> (i32, Vec<Outgoing>) {
    let mut out = Vec::new();
    let v = docs.sync(&uri(name), "fake", text, SaveMode::No, &mut out);
    (v, out)
}

#[test]
fn versions_increase_and_same_text_sends_nothing() {
    let mut docs = Docs::new(50);
    let (v1, out) = sync(&mut docs, "a", "one");
    assert_eq!(v1, 1);
    assert!(matches!(&out[..], [Outgoing::Open { version: 1, .. }]));
    let (v2, out) = sync(&mut docs, "a", "two");
    assert_eq!(v2, 2);
    assert!(matches!(&out[..], [Outgoing::Change { version: 2, .. }]));
    let (v3, out) = sync(&mut docs, "a", "two");
    assert_eq!((v3, out.len()), (2, 0));
}

#[test]
fn save_follows_a_change_only() {
    let mut docs = Docs::new(50);
    let mut out = Vec::new();
    docs.sync(&uri("a"), "fake", "x", SaveMode::WithText, &mut out);
    assert!(matches!(
        &out[..],
        [Outgoing::Open { .. }, Outgoing::Save { text: Some(_), .. }]
    ));
    out.clear();
    docs.sync(&uri("a"), "fake", "x", SaveMode::Plain, &mut out);
    assert!(out.is_empty());
}

#[test]
fn an_older_version_never_answers_a_newer_one() {
    let mut docs = Docs::new(50);
    sync(&mut docs, "a", "BROKEN");
    let (v2, _) = sync(&mut docs, "a", "fixed");
    // The server answers version 1 late: it is not an answer for version 2.
    assert!(docs.published(&uri("a"), Some(1), &[problem(0)], "p"));
    assert!(docs.answer(&uri("a"), v2).is_none());
    assert!(docs.published(&uri("a"), Some(2), &[], "p"));
    assert!(docs.answer(&uri("a"), v2).unwrap().diagnostics.is_empty());
    // Once version 2 is answered, a late publish for 1 is dropped.
    assert!(!docs.published(&uri("a"), Some(1), &[problem(0)], "p"));
    assert!(docs.answer(&uri("a"), v2).unwrap().diagnostics.is_empty());
}

#[test]
fn versions_never_sent_are_dropped() {
    let mut docs = Docs::new(50);
    sync(&mut docs, "a", "x");
    assert!(!docs.published(&uri("a"), Some(7), &[problem(0)], "p"));
    assert!(!docs.published(&uri("b"), Some(1), &[problem(0)], "p"));
}

#[test]
fn unversioned_publish_counts_only_once_the_change_is_written() {
    let mut docs = Docs::new(50);
    let (v1, _) = sync(&mut docs, "a", "BROKEN");
    // Not written yet: no version to give it.
    assert!(!docs.published(&uri("a"), None, &[problem(0)], "p"));
    docs.written(&uri("a"), v1);
    assert!(docs.published(&uri("a"), None, &[problem(0)], "p"));
    let (v2, _) = sync(&mut docs, "a", "fixed");
    // Arrived before version 2 was written: it is for version 1.
    assert!(docs.published(&uri("a"), None, &[problem(0)], "p"));
    assert!(docs.answer(&uri("a"), v2).is_none());
    docs.written(&uri("a"), v2);
    assert!(docs.published(&uri("a"), None, &[], "p"));
    assert_eq!(docs.answer(&uri("a"), v2).unwrap().version, v2);
}

#[test]
fn answers_are_converted_with_their_own_versions_text() {
    let mut docs = Docs::new(50);
    sync(&mut docs, "a", "é BROKEN");
    sync(&mut docs, "a", "BROKEN");
    let item = lsp_types::Diagnostic {
        range: Range::new(Position::new(0, 2), Position::new(0, 8)),
        ..lsp_types::Diagnostic::default()
    };
    assert!(docs.published(&uri("a"), Some(1), &[item], "p"));
    let answered = docs.answer(&uri("a"), 1).unwrap();
    assert_eq!(&*answered.text, "é BROKEN");
    assert_eq!(answered.diagnostics[0].col, 3);
}

#[test]
fn pulls_count_only_while_their_version_is_current() {
    let mut docs = Docs::new(50);
    let (v1, _) = sync(&mut docs, "a", "BROKEN");
    sync(&mut docs, "a", "fixed");
    assert!(!docs.pulled(&uri("a"), v1, &[problem(0)], "p"));
    assert!(docs.pulled(&uri("a"), v1 + 1, &[], "p"));
}

#[test]
fn least_recently_used_documents_are_closed() {
    let mut docs = Docs::new(3);
    for name in ["a", "b", "c"] {
        sync(&mut docs, name, "x");
    }
    sync(&mut docs, "a", "y"); // a is used again: b is now the oldest
    let (_, out) = sync(&mut docs, "d", "x");
    assert_eq!(out[0], Outgoing::Close { uri: uri("b") });
    assert_eq!(docs.open_count(), 3);
}

#[test]
fn wanted_documents_open_when_the_server_is_ready() {
    let mut docs = Docs::new(50);
    let mut out = Vec::new();
    docs.want(&uri("a"), "fake", "one", &mut out);
    docs.want(&uri("a"), "fake", "two", &mut out);
    assert!(out.is_empty());
    docs.open_wanted(&mut out);
    match &out[..] {
        [Outgoing::Open { text, version, .. }] => assert_eq!((&**text, *version), ("two", 1)),
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn the_text_of_an_answer_serves_before() {
    let mut docs = Docs::new(50);
    sync(&mut docs, "a", "old");
    docs.published(&uri("a"), Some(1), &[problem(0)], "p");
    assert!(docs.answer_for_text(&uri("a"), "old").is_some());
    assert!(docs.answer_for_text(&uri("a"), "other").is_none());
}

#[test]
fn reset_reopens_with_increasing_versions() {
    let mut docs = Docs::new(50);
    sync(&mut docs, "a", "one");
    docs.reset();
    let mut out = Vec::new();
    docs.open_wanted(&mut out);
    assert!(matches!(&out[..], [Outgoing::Open { version: 2, .. }]));
}

#[test]
fn baselines_hold_the_other_documents_answered_for_their_version() {
    let mut docs = Docs::new(50);
    for name in ["a", "b", "c", "d"] {
        sync(&mut docs, name, "x");
    }
    docs.published(&uri("b"), Some(1), &[problem(0)], "p");
    docs.published(&uri("c"), Some(1), &[], "p");
    docs.published(&uri("a"), Some(1), &[], "p");
    // d was never answered; c holds a version not answered yet.
    sync(&mut docs, "c", "y");
    let baselines = docs.baselines(&uri("a"));
    let names: Vec<_> = baselines.docs.iter().map(|b| b.uri.clone()).collect();
    assert_eq!(names, vec![uri("b")]);
    assert_eq!(baselines.docs[0].answer.diagnostics.len(), 1);
    assert!(!docs.republishes());
}

#[test]
fn since_takes_only_answers_after_the_mark_for_the_same_version() {
    let mut docs = Docs::new(50);
    sync(&mut docs, "a", "x");
    sync(&mut docs, "b", "x");
    sync(&mut docs, "c", "x");
    for name in ["a", "b", "c"] {
        docs.published(&uri(name), Some(1), &[problem(0)], "p");
    }
    let baselines = docs.baselines(&uri("a"));
    let mark = baselines.mark;
    assert_eq!(baselines.docs.len(), 2);
    assert!(docs.since(&uri("b"), 1, mark).is_none());
    assert!(!docs.settled(&uri("b"), 1, mark));
    // b is published again for the same version: a change of a affected it.
    docs.published(&uri("b"), Some(1), &[], "p");
    assert!(docs.republishes());
    assert!(
        docs.since(&uri("b"), 1, mark)
            .unwrap()
            .diagnostics
            .is_empty()
    );
    assert!(docs.settled(&uri("b"), 1, mark));
    // c changes and is answered for its new version: not the same content.
    sync(&mut docs, "c", "y");
    assert!(docs.settled(&uri("c"), 1, mark));
    docs.published(&uri("c"), Some(2), &[], "p");
    assert!(docs.since(&uri("c"), 1, mark).is_none());
}

#[test]
fn a_first_answer_per_version_is_no_republish() {
    let mut docs = Docs::new(50);
    sync(&mut docs, "a", "x");
    docs.published(&uri("a"), Some(1), &[], "p");
    sync(&mut docs, "a", "y");
    docs.published(&uri("a"), Some(2), &[], "p");
    assert!(docs.pulled(&uri("a"), 2, &[], "p"));
    assert!(!docs.republishes());
    docs.published(&uri("a"), Some(2), &[problem(0)], "p");
    assert!(docs.republishes());
}

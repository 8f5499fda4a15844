#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use pretty_assertions::assert_eq;
use proptest::prelude::*;
use serde_json::{Value, json};

use super::parse_loose_json;

/// Cases per property (the generators are slow in debug builds).
const PROPTEST_CASES: u32 = 600;

fn ok(s: &str) -> (Value, Vec<String>) {
    match parse_loose_json(s) {
        Ok(r) => r,
        Err(e) => panic!("{s:?} did not parse: {e}"),
    }
}

fn err(s: &str) -> String {
    match parse_loose_json(s) {
        Ok(r) => panic!("{s:?} parsed as {r:?}"),
        Err(e) => e.0,
    }
}

fn reps(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

#[test]
fn strict_json_is_untouched() {
    assert_eq!(
        ok(r#" {"a": [1, 2.5, "x"], "b": null} "#),
        (json!({"a": [1, 2.5, "x"], "b": null}), vec![])
    );
    assert_eq!(ok("true"), (json!(true), vec![]));
    assert_eq!(ok(r#""{\"a\":1}""#), (json!("{\"a\":1}"), vec![]));
}

#[test]
fn code_fences_are_removed() {
    assert_eq!(
        ok("```json\n{\"path\": \"src/main.rs\"}\n```"),
        (
            json!({"path": "src/main.rs"}),
            reps(&["removed code fence"])
        )
    );
    assert_eq!(
        ok("```\n[1, 2]\n```\n"),
        (json!([1, 2]), reps(&["removed code fence"]))
    );
    // Inline fence, and an unterminated one.
    assert_eq!(
        ok("```{\"a\": 1}```"),
        (json!({"a": 1}), reps(&["removed code fence"]))
    );
    assert_eq!(
        ok("```json\n{\"a\": 1}"),
        (json!({"a": 1}), reps(&["removed code fence"]))
    );
    assert_eq!(
        ok("Here you go:\n```JSON\n{\"a\": 1,}\n```\nDone."),
        (
            json!({"a": 1}),
            reps(&[
                "removed code fence",
                "removed text before the JSON",
                "removed text after the JSON",
                "removed trailing comma"
            ])
        )
    );
}

#[test]
fn fences_inside_strings_are_content() {
    // Raw newlines inside the string put a fence at a line start; the bracket before
    // it shows it is content.
    let s = "{\"content\": \"# Title\n```rust\nfn main() {}\n```\n\",}";
    assert_eq!(
        ok(s),
        (
            json!({"content": "# Title\n```rust\nfn main() {}\n```\n"}),
            reps(&[
                "escaped control characters in strings",
                "removed trailing comma"
            ])
        )
    );
}

#[test]
fn prose_around_one_object_is_removed() {
    assert_eq!(
        ok("Sure! The arguments are {\"q\": \"rust [async]\"} as requested."),
        (
            json!({"q": "rust [async]"}),
            reps(&[
                "removed text before the JSON",
                "removed text after the JSON"
            ])
        )
    );
    // A bracket in the prose that is not JSON is skipped.
    assert_eq!(
        ok("Calling [search] with {\"q\": 1}"),
        (json!({"q": 1}), reps(&["removed text before the JSON"]))
    );
    assert_eq!(
        ok("{\"a\": 1}}"),
        (json!({"a": 1}), reps(&["removed text after the JSON"]))
    );
}

#[test]
fn two_objects_are_ambiguous() {
    assert_eq!(
        err("{\"a\": 1}\n{\"b\": 2}"),
        "found more than one JSON value (another starts at line 2 column 1); send exactly one"
    );
}

#[test]
fn trailing_commas_are_removed() {
    assert_eq!(
        ok(r#"{"a": [1, 2, ], "b": {"c": 3,},}"#),
        (
            json!({"a": [1, 2], "b": {"c": 3}}),
            reps(&["removed 3 trailing commas"])
        )
    );
    // A comma inside a string is content.
    assert_eq!(
        ok(r#"{"a": "x,}", }"#),
        (json!({"a": "x,}"}), reps(&["removed trailing comma"]))
    );
}

#[test]
fn truncated_ends_are_closed() {
    assert_eq!(
        ok(r#"{"path": "a.txt", "lines": [1, 2"#),
        (
            json!({"path": "a.txt", "lines": [1, 2]}),
            reps(&["closed 2 brackets"])
        )
    );
    assert_eq!(
        ok(r#"{"content": "hello wor"#),
        (
            json!({"content": "hello wor"}),
            reps(&["closed unterminated string", "closed 1 bracket"])
        )
    );
    assert_eq!(
        ok(r#"{"todos": [{"id": 1}, "#),
        (
            json!({"todos": [{"id": 1}]}),
            reps(&["removed trailing comma", "closed 2 brackets"])
        )
    );
    // A lone backslash at the cut escapes nothing.
    assert_eq!(
        ok(r#"{"p": "C:\"#),
        (
            json!({"p": "C:"}),
            reps(&["closed unterminated string", "closed 1 bracket"])
        )
    );
}

#[test]
fn truncation_inside_a_key_or_value_fails() {
    assert_eq!(
        err(r#"{"a": 1, "b": "#),
        "expected value at line 1 column 14"
    );
    assert_eq!(err(r#"{"a": tr"#), "expected ident at line 1 column 9");
}

#[test]
fn python_literals_outside_strings() {
    assert_eq!(
        ok(r#"{"recursive": True, "hidden": False, "limit": None, "note": "True"}"#),
        (
            json!({"recursive": true, "hidden": false, "limit": null, "note": "True"}),
            reps(&[
                "replaced Python True with true",
                "replaced Python False with false",
                "replaced Python None with null"
            ])
        )
    );
    // Words that merely start like a literal are not touched.
    assert_eq!(err(r#"{"a": Truest}"#), "expected value at line 1 column 7");
}

#[test]
fn single_quotes_when_unambiguous() {
    assert_eq!(
        ok(r#"{'path': 'a "b".txt', 'n': 2}"#),
        (
            json!({"path": "a \"b\".txt", "n": 2}),
            reps(&["converted single-quoted strings to double quotes"])
        )
    );
    assert_eq!(
        ok(r"{'q': 'it\'s'}"),
        (
            json!({"q": "it's"}),
            reps(&["converted single-quoted strings to double quotes"])
        )
    );
    // An apostrophe makes the end unclear: left alone, and the parse fails there.
    assert_eq!(
        err(r"{'q': 'it's fine'}"),
        "expected value at line 1 column 7"
    );
}

#[test]
fn control_characters_in_strings_are_escaped() {
    assert_eq!(
        ok("{\"text\": \"line 1\nline 2\tend\"}"),
        (
            json!({"text": "line 1\nline 2\tend"}),
            reps(&["escaped control characters in strings"])
        )
    );
}

#[test]
fn byte_order_mark_is_removed() {
    assert_eq!(
        ok("\u{feff}{\"a\": 1}"),
        (json!({"a": 1}), reps(&["removed byte order mark"]))
    );
}

#[test]
fn errors_point_into_the_original_text() {
    // The position is in the text as sent, fence and all.
    assert_eq!(
        err("```json\n{\"a\": 1 \"b\": 2}\n```"),
        "expected `,` or `}` at line 2 column 9"
    );
    assert_eq!(
        err("{\"名前\": \"値\" \"b\": 2}"),
        "expected `,` or `}` at line 1 column 12"
    );
    assert_eq!(err("{a: 1}"), "key must be a string at line 1 column 2");
    assert_eq!(err("   "), "no JSON value: the text is empty");
    assert_eq!(
        err("```json\n```"),
        "no JSON value: the code fence is empty"
    );
    assert_eq!(err("sure thing"), "expected value at line 1 column 1");
}

#[test]
fn unquoted_keys_and_comments_are_not_guessed() {
    assert!(parse_loose_json("{path: \"a\"}").is_err());
    assert!(parse_loose_json("{\"a\": 1 // one\n}").is_err());
}

/// Fragments models put around and inside JSON.
fn fragment() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("{".to_string()),
        Just("}".to_string()),
        Just("[".to_string()),
        Just("]".to_string()),
        Just("\"".to_string()),
        Just("'".to_string()),
        Just("\\".to_string()),
        Just(",".to_string()),
        Just(":".to_string()),
        Just("```json\n".to_string()),
        Just("```".to_string()),
        Just("\n".to_string()),
        Just("True".to_string()),
        Just("None".to_string()),
        Just("\"key\"".to_string()),
        Just("\u{feff}".to_string()),
        Just("值".to_string()),
        "[a-z ]{0,5}",
        "[0-9.e-]{1,4}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(PROPTEST_CASES))]

    #[test]
    fn never_panics_on_arbitrary_text(s in "\\PC{0,80}") {
        let _ = parse_loose_json(&s);
    }

    #[test]
    fn never_panics_on_json_fragments(parts in prop::collection::vec(fragment(), 0..24)) {
        let _ = parse_loose_json(&parts.concat());
    }

    #[test]
    fn strict_json_round_trips_without_repairs(v in arb_json()) {
        let text = v.to_string();
        prop_assert_eq!(parse_loose_json(&text), Ok((v, Vec::new())));
    }

    #[test]
    fn a_truncated_object_parses_or_fails_cleanly(v in arb_json(), cut in 0usize..200) {
        let text = json!({"v": v}).to_string();
        let cut = text.char_indices().map(|(i, _)| i).nth(cut).unwrap_or(text.len());
        if let Ok((value, _)) = parse_loose_json(&text[..cut]) {
            prop_assert!(value.is_object() || cut == 0);
        }
    }
}

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i32>().prop_map(Value::from),
        "[a-z \\]\\[{}\",'\\\\]{0,8}".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-z]{1,3}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

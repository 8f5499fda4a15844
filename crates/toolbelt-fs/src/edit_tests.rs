use pretty_assertions::assert_eq;
use proptest::prelude::{
    ProptestConfig, TestCaseError, any, prop, prop_assert, prop_assert_eq, prop_assume, proptest,
};
use proptest::strategy::Strategy as _;

use super::Strategy;
use super::*;

fn applied(replacements: usize, strategy: Strategy, lines: &[(usize, usize)]) -> Applied {
    Applied {
        replacements,
        strategy,
        lines: lines
            .iter()
            .map(|&(start, end)| LineRange { start, end })
            .collect(),
    }
}

fn ok(text: &str, edit: Edit<'_>) -> EditOutcome {
    match apply_edit(text, edit) {
        Ok(outcome) => outcome,
        Err(e) => panic!("edit failed: {e}"),
    }
}

#[test]
fn exact_single_replacement_reports_lines() {
    let outcome = ok("one\ntwo\nthree\n", Edit::new("two\n", "2\n2b\n"));
    assert_eq!(
        outcome,
        EditOutcome {
            text: "one\n2\n2b\nthree\n".to_owned(),
            applied: applied(1, Strategy::Exact, &[(2, 3)]),
        }
    );
}

#[test]
fn deletion_reports_the_line_it_happened_on() {
    let outcome = ok("a\nb\nc\n", Edit::new("b\n", ""));
    assert_eq!(outcome.text, "a\nc\n");
    assert_eq!(outcome.applied, applied(1, Strategy::Exact, &[(2, 2)]));
}

#[test]
fn empty_old_string_is_refused_pointing_to_write_file() {
    let err = apply_edit("x", Edit::new("", "y")).unwrap_err();
    assert_eq!(err, EditError::EmptyOldString);
    assert!(err.to_string().contains("write_file"));
}

#[test]
fn identical_strings_are_refused() {
    assert_eq!(
        apply_edit("abc", Edit::new("b", "b")).unwrap_err(),
        EditError::Identical
    );
}

#[test]
fn several_matches_without_replace_all_list_every_line() {
    let text = "x = 1\ny = 2\nx = 1\n\nx = 1\n";
    let err = apply_edit(text, Edit::new("x = 1", "x = 3")).unwrap_err();
    assert_eq!(
        err,
        EditError::Ambiguous {
            count: 3,
            lines: vec![1, 3, 5],
            strategy: Strategy::Exact,
        }
    );
    insta::assert_snapshot!("ambiguous_message", err.to_string());
}

#[test]
fn replace_all_replaces_every_match_and_reports_each_range() {
    let text = "x = 1\ny = 2\nx = 1\n\nx = 1\n";
    let outcome = ok(text, Edit::new("x = 1", "x = 3\n# was 1").all());
    assert_eq!(
        outcome,
        EditOutcome {
            text: "x = 3\n# was 1\ny = 2\nx = 3\n# was 1\n\nx = 3\n# was 1\n".to_owned(),
            applied: applied(3, Strategy::Exact, &[(1, 2), (4, 5), (7, 8)]),
        }
    );
}

#[test]
fn replace_all_with_a_single_match_is_fine() {
    let outcome = ok("a b c", Edit::new("b", "B").all());
    assert_eq!(outcome.text, "a B c");
    assert_eq!(outcome.applied.replacements, 1);
}

#[test]
fn crlf_file_with_lf_strings_stays_all_crlf() {
    let text = "first\r\nfn a() {\r\n    1\r\n}\r\nlast\r\n";
    let outcome = ok(
        text,
        Edit::new("fn a() {\n    1\n}\n", "fn a() {\n    2\n    3\n}\n"),
    );
    assert_eq!(
        outcome,
        EditOutcome {
            text: "first\r\nfn a() {\r\n    2\r\n    3\r\n}\r\nlast\r\n".to_owned(),
            applied: applied(1, Strategy::LineEndings, &[(2, 5)]),
        }
    );
}

#[test]
fn crlf_file_single_line_old_with_multi_line_new_gets_crlf() {
    let outcome = ok("a\r\nb\r\nc\r\n", Edit::new("b", "b1\nb2"));
    assert_eq!(outcome.text, "a\r\nb1\r\nb2\r\nc\r\n");
    assert_eq!(outcome.applied.strategy, Strategy::Exact);
}

#[test]
fn lf_file_with_crlf_new_string_stays_lf() {
    let outcome = ok("a\nb\nc\n", Edit::new("b\n", "x\r\ny\r\n"));
    assert_eq!(outcome.text, "a\nx\ny\nc\n");
}

#[test]
fn leading_lf_in_old_string_never_splits_a_crlf() {
    let outcome = ok("a\r\nb\r\n", Edit::new("\nb", "\nB"));
    assert_eq!(outcome.text, "a\r\nB\r\n");
    assert_eq!(outcome.applied.strategy, Strategy::LineEndings);
}

#[test]
fn mixed_line_endings_outside_the_edit_are_untouched() {
    let text = "lf\ncrlf\r\nmid\r\nlf again\n";
    let outcome = ok(text, Edit::new("crlf\nmid\n", "crlf\nMID\n"));
    assert_eq!(outcome.text, "lf\ncrlf\r\nMID\r\nlf again\n");
}

#[test]
fn cat_n_prefixes_are_stripped_from_old_and_new() {
    let text = "fn main() {\n    let x = 1;\n    println!(\"{x}\");\n}\n";
    let old = "     2\t    let x = 1;\n     3\t    println!(\"{x}\");";
    let new = "     2\t    let x = 2;\n     3\t    println!(\"{x}\");";
    let outcome = ok(text, Edit::new(old, new));
    assert_eq!(outcome.text, text.replace("x = 1", "x = 2"));
    assert_eq!(
        outcome.applied,
        applied(1, Strategy::LineNumberPrefixes, &[(2, 3)])
    );
}

#[test]
fn arrow_and_pipe_prefixes_are_stripped_and_unprefixed_new_is_kept() {
    let text = "alpha\nbeta\ngamma\n";
    let arrow = ok(text, Edit::new("2→beta\n3→gamma", "BETA\ngamma"));
    assert_eq!(arrow.text, "alpha\nBETA\ngamma\n");
    let pipe = ok(
        text,
        Edit::new("1| alpha\n2| beta\n", "1| ALPHA\n2| beta\n"),
    );
    assert_eq!(pipe.text, "ALPHA\nbeta\ngamma\n");
    assert_eq!(pipe.applied.strategy, Strategy::LineNumberPrefixes);
}

#[test]
fn blank_lines_of_read_output_may_lose_their_separator() {
    let text = "a\n\nb\n";
    let outcome = ok(text, Edit::new("     1\ta\n     2\n     3\tb", "a\n\nB"));
    assert_eq!(outcome.text, "a\n\nB\n");
}

#[test]
fn non_consecutive_numbers_are_not_prefixes() {
    let err = apply_edit("a\nb\n", Edit::new("1\ta\n5\tb", "x")).unwrap_err();
    assert!(matches!(err, EditError::NotFound { .. }), "{err:?}");
}

#[test]
fn trailing_whitespace_in_the_file_is_tolerated_and_kept_on_unchanged_lines() {
    let text = "keep  \nfn x() {   \n    old();\t\n}\n";
    let outcome = ok(
        text,
        Edit::new("fn x() {\n    old();\n}", "fn x() {\n    new();\n}"),
    );
    assert_eq!(outcome.text, "keep  \nfn x() {   \n    new();\n}\n");
    assert_eq!(
        outcome.applied,
        applied(1, Strategy::TrailingWhitespace, &[(2, 4)])
    );
}

#[test]
fn tabs_in_the_file_spaces_in_old_string_reindents_new() {
    let text = "func f() {\n\tif ok {\n\t\treturn 1\n\t}\n}\n";
    let old = "    if ok {\n        return 1\n    }\n";
    let new = "    if ok {\n        log()\n        return 2\n    }\n";
    let outcome = ok(text, Edit::new(old, new));
    assert_eq!(
        outcome.text,
        "func f() {\n\tif ok {\n\t\tlog()\n\t\treturn 2\n\t}\n}\n"
    );
    assert_eq!(
        outcome.applied,
        applied(1, Strategy::Indentation, &[(2, 5)])
    );
}

#[test]
fn two_space_model_indentation_against_tabs() {
    let text = "\tif a {\n\t\tb()\n\t}\n";
    let outcome = ok(
        text,
        Edit::new("  if a {\n    b()\n  }", "  if a {\n    c()\n  }"),
    );
    assert_eq!(outcome.text, "\tif a {\n\t\tc()\n\t}\n");
}

#[test]
fn dropped_indentation_is_restored_in_new_string() {
    let text = "class A:\n    def f(self):\n        return 1\n";
    let old = "def f(self):\n    return 1";
    let new = "def f(self):\n    if self:\n        return 2\n    return 1";
    let outcome = ok(text, Edit::new(old, new));
    assert_eq!(
        outcome.text,
        "class A:\n    def f(self):\n        if self:\n            return 2\n        return 1\n"
    );
    assert_eq!(outcome.applied.strategy, Strategy::Indentation);
}

#[test]
fn non_uniform_indentation_is_not_found_and_says_so() {
    let text = "fn f() {\n\tif a {\n\t\tb();\n\t}\n}\n";
    let err = apply_edit(text, Edit::new("    if a {\n    b();\n    }", "x")).unwrap_err();
    let EditError::NotFound {
        closest: Some(near),
    } = &err
    else {
        panic!("expected NotFound with a region, got {err:?}");
    };
    assert_eq!((near.start_line, near.end_line), (2, 4));
    assert_eq!(
        near.differences,
        vec![
            "tabs in the file, spaces in old_string (indentation of lines 2-4); copy the \
             indentation as it is, or it is re-indented for you only when the shift is the \
             same on every line"
                .to_owned()
        ]
    );
    insta::assert_snapshot!("not_found_tabs_message", err.to_string());
}

#[test]
fn curly_quotes_in_the_file_match_straight_ones_and_stay_curly() {
    let text = "<p>She said “don’t go” — twice.</p>\n";
    let outcome = ok(
        text,
        Edit::new("said \"don't go\" - twice", "said \"don't stay\" - twice"),
    );
    assert_eq!(outcome.text, "<p>She said “don’t stay” - twice.</p>\n");
    assert_eq!(outcome.applied.strategy, Strategy::Typography);
}

#[test]
fn unchanged_lines_keep_their_typography_exactly() {
    let text = "title: “A” — B\nbody: “old”\n";
    let outcome = ok(
        text,
        Edit::new(
            "title: \"A\" - B\nbody: \"old\"",
            "title: \"A\" - B\nbody: \"new\"",
        ),
    );
    assert_eq!(outcome.text, "title: “A” — B\nbody: “new”\n");
}

#[test]
fn non_breaking_space_matches_a_space() {
    let text = "price:\u{a0}10\u{a0}€\n";
    let outcome = ok(text, Edit::new("price: 10", "price: 12"));
    assert_eq!(outcome.text, "price: 12\u{a0}€\n");
    assert_eq!(outcome.applied.strategy, Strategy::Typography);
}

#[test]
fn curly_model_quotes_become_straight_in_a_straight_file() {
    let outcome = ok(
        "print(\"hi\")\n",
        Edit::new("print(“hi”)", "print(“hello”)"),
    );
    assert_eq!(outcome.text, "print(\"hello\")\n");
}

#[test]
fn normalised_ambiguity_is_an_error_with_its_strategy() {
    let text = "\tx()\n  x()\n";
    let err = apply_edit(text, Edit::new("x()  \n", "y()\n")).unwrap_err();
    assert_eq!(
        err,
        EditError::Ambiguous {
            count: 2,
            lines: vec![1, 2],
            strategy: Strategy::Indentation,
        }
    );
}

#[test]
fn replace_all_uses_the_first_strategy_that_matches() {
    let text = "\tcall()\nother\n\tcall()\n";
    let outcome = ok(text, Edit::new("    call()", "    done()").all());
    assert_eq!(outcome.text, "\tdone()\nother\n\tdone()\n");
    assert_eq!(
        outcome.applied,
        applied(2, Strategy::Indentation, &[(1, 1), (3, 3)])
    );
}

#[test]
fn no_change_after_normalisation_is_reported() {
    let err = apply_edit("keep  \nnext\n", Edit::new("keep\nnext", "keep  \nnext")).unwrap_err();
    assert_eq!(err, EditError::NoChange { lines: vec![1] });
}

#[test]
fn not_found_names_the_closest_region_and_line_differences() {
    let text = "use std::io;\n\nfn main() {\n    let total = 0;\n    for i in 0..10 {\n        total += i;\n    }\n}\n";
    let old = "    for i in 0..100 {\n        total += i;\n    }";
    let err = apply_edit(text, Edit::new(old, "x")).unwrap_err();
    let EditError::NotFound {
        closest: Some(near),
    } = &err
    else {
        panic!("expected NotFound with a region, got {err:?}");
    };
    assert_eq!((near.start_line, near.end_line), (5, 7));
    assert!(
        near.similarity > 0.9 && near.similarity < 1.0,
        "{}",
        near.similarity
    );
    assert_eq!(
        near.differences,
        vec![
            "line 5 differs: the file has \"    for i in 0..10 {\", old_string has \"    for i in 0..100 {\""
                .to_owned()
        ]
    );
    insta::assert_snapshot!("not_found_message", err.to_string());
}

#[test]
fn not_found_reports_trailing_whitespace_and_typography() {
    let text = "a = “x”  \nb = 1\n";
    let err = apply_edit(text, Edit::new("a = \"x\"\nb = 2", "z")).unwrap_err();
    let EditError::NotFound {
        closest: Some(near),
    } = err
    else {
        panic!("expected NotFound");
    };
    assert_eq!(
        near.differences,
        vec![
            "trailing whitespace in the file that old_string lacks (line 1)".to_owned(),
            "typographic quotes, dashes or spaces differ on line 1 (line 1: '“' in the file, '\"' in old_string)"
                .to_owned(),
            "line 2 differs: the file has \"b = 1\", old_string has \"b = 2\"".to_owned(),
        ]
    );
}

#[test]
fn not_found_in_an_empty_file() {
    assert_eq!(
        apply_edit("", Edit::new("x", "y")).unwrap_err(),
        EditError::NotFound { closest: None }
    );
}

#[test]
fn closest_region_in_a_large_text_uses_anchors() {
    let mut text: String = (0..20_000).map(|i| format!("line number {i}\n")).collect();
    text.push_str("    special_call(a, b);\n    other_call();\n");
    let err = apply_edit(
        &text,
        Edit::new("  special_call(a, c);\n  other_call();", "x"),
    )
    .unwrap_err();
    let EditError::NotFound {
        closest: Some(near),
    } = err
    else {
        panic!("expected NotFound");
    };
    assert_eq!((near.start_line, near.end_line), (20_001, 20_002));
}

#[test]
fn multi_edit_applies_in_order_on_the_running_text() {
    let outcome = apply_edits(
        "a\nb\nc\n",
        &[
            Edit::new("a", "A"),
            Edit::new("A\nb", "AB"),
            Edit::new("c", "C").all(),
        ],
    );
    let outcome = outcome.unwrap();
    assert_eq!(
        outcome,
        MultiEditOutcome {
            text: "AB\nC\n".to_owned(),
            applied: vec![
                applied(1, Strategy::Exact, &[(1, 1)]),
                applied(1, Strategy::Exact, &[(1, 1)]),
                applied(1, Strategy::Exact, &[(2, 2)]),
            ],
        }
    );
}

#[test]
fn multi_edit_failure_names_the_index_and_applies_nothing() {
    let err = apply_edits(
        "a\nb\nc\n",
        &[
            Edit::new("a", "A"),
            Edit::new("b", "B"),
            Edit::new("zzz", "Z"),
        ],
    )
    .unwrap_err();
    assert_eq!(err.index, 2);
    assert!(matches!(err.source, EditError::NotFound { .. }));
    assert!(
        toolbelt_core::error_chain(&err).starts_with(
            "edits[2] failed, so none of the edits was applied: old_string was not found"
        ),
        "{err}"
    );
}

#[test]
fn multi_edit_later_edit_may_not_repeat_an_earlier_one() {
    let err = apply_edits("a\n", &[Edit::new("a", "b"), Edit::new("a", "c")]).unwrap_err();
    assert_eq!(err.index, 1);
}

#[test]
fn prefix_parser_styles() {
    assert_eq!(
        parse_prefix("    12\tx"),
        Some((Some(PrefixStyle::Tab), 12, "x"))
    );
    assert_eq!(
        parse_prefix("12→  x"),
        Some((Some(PrefixStyle::Arrow), 12, "  x"))
    );
    assert_eq!(
        parse_prefix("12| x"),
        Some((Some(PrefixStyle::Pipe), 12, "x"))
    );
    assert_eq!(
        parse_prefix("L7: x"),
        Some((Some(PrefixStyle::Colon), 7, "x"))
    );
    assert_eq!(parse_prefix("  7"), Some((None, 7, "")));
    assert_eq!(parse_prefix("x7\ty"), None);
    assert_eq!(parse_prefix("7 y"), None);
}

// --- properties -----------------------------------------------------------------

fn text_with_endings(crlf: bool) -> impl proptest::strategy::Strategy<Value = String> {
    prop::collection::vec("[ab \t“é-]{0,6}", 1..16).prop_map(move |lines| {
        let eol = if crlf { "\r\n" } else { "\n" };
        let mut s = String::new();
        for line in lines {
            s.push_str(&line);
            s.push_str(eol);
        }
        s
    })
}

fn char_boundary(s: &str, index: prop::sample::Index) -> usize {
    let boundaries: Vec<usize> = s
        .char_indices()
        .map(|(i, _)| i)
        .chain(std::iter::once(s.len()))
        .filter(|&i| {
            !(i > 0 && s.as_bytes()[i - 1] == b'\r' && s.as_bytes().get(i) == Some(&b'\n'))
        })
        .collect();
    boundaries[index.index(boundaries.len())]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    /// Any unique span replaced: the bytes before and after it are untouched.
    #[test]
    fn bytes_outside_the_replaced_span_are_kept(
        text in any::<bool>().prop_flat_map(text_with_endings),
        a in any::<prop::sample::Index>(),
        b in any::<prop::sample::Index>(),
        new in "[xy\n]{0,8}",
    ) {
        let (a, b) = {
            let (x, y) = (char_boundary(&text, a), char_boundary(&text, b));
            (x.min(y), x.max(y))
        };
        let old = &text[a..b];
        prop_assume!(!old.is_empty() && old != new);
        prop_assume!(find_all(&text, old).count() == 1);
        let outcome = apply_edit(&text, Edit::new(old, &new));
        let outcome = match outcome {
            Ok(o) => o,
            Err(EditError::NoChange { .. }) => return Ok(()),
            Err(e) => return Err(TestCaseError::fail(format!("{e}"))),
        };
        prop_assert!(outcome.text.starts_with(&text[..a]));
        prop_assert!(outcome.text.ends_with(&text[b..]));
        let middle = &outcome.text[a..outcome.text.len() - (text.len() - b)];
        prop_assert_eq!(middle.replace("\r\n", "\n"), new);
    }

    /// An all-CRLF text edited with LF strings (as a model writes them) stays all CRLF,
    /// and everything outside the matched lines is byte-identical.
    #[test]
    fn crlf_text_edited_with_lf_strings_stays_crlf(
        text in text_with_endings(true),
        first in any::<prop::sample::Index>(),
        count in 1usize..4,
        new in "[xy\n]{1,8}",
    ) {
        let lines: Vec<&str> = text.split_inclusive("\r\n").collect();
        let start = first.index(lines.len());
        let end = (start + count).min(lines.len());
        let a: usize = lines[..start].iter().map(|l| l.len()).sum();
        let b: usize = a + lines[start..end].iter().map(|l| l.len()).sum::<usize>();
        let old_lf = text[a..b].replace("\r\n", "\n");
        let folded = text.replace("\r\n", "\n");
        prop_assume!(find_all(&folded, &old_lf).count() == 1 && old_lf != new);
        let outcome = apply_edit(&text, Edit::new(&old_lf, &new));
        let outcome = match outcome {
            Ok(o) => o,
            Err(EditError::NoChange { .. }) => return Ok(()),
            Err(e) => return Err(TestCaseError::fail(format!("{e}"))),
        };
        prop_assert!(!has_bare_lf(&outcome.text), "bare LF in {:?}", outcome.text);
        prop_assert!(outcome.text.starts_with(&text[..a]));
        prop_assert!(outcome.text.ends_with(&text[b..]));
    }

    /// The engine never panics, whatever the inputs.
    #[test]
    fn never_panics(
        text in "[ab \t\r\n“”—\u{a0}0-9|→]{0,60}",
        old in "[ab \t\r\n\"'\\-0-9|→]{0,20}",
        new in "[ab \t\r\n\"']{0,10}",
        all in any::<bool>(),
    ) {
        let edit = Edit { old_string: &old, new_string: &new, replace_all: all };
        let _ = apply_edit(&text, edit);
    }
}

#![allow(clippy::unwrap_used)]

use pretty_assertions::assert_eq;

use super::*;

/// llama.cpp's own `grammars/json.gbnf`, in substance (bounded whitespace).
const JSON: &str = r#"
root   ::= object
value  ::= object | array | string | number | ("true" | "false" | "null") ws

object ::=
  "{" ws (
            string ":" ws value
    ("," ws string ":" ws value)*
  )? "}" ws

array  ::=
  "[" ws (
            value
    ("," ws value)*
  )? "]" ws

string ::=
  "\"" (
    [^"\\\x7F\x00-\x1F] |
    "\\" (["\\bfnrt] | "u" [0-9a-fA-F]{4}) # escapes
  )* "\"" ws

number ::= ("-"? ([0-9] | [1-9] [0-9]{0,15})) ("." [0-9]+)? ([eE] [-+]? [0-9] [1-9]{0,15})? ws

# Optional space: by convention, applied in this grammar after literal chars when allowed
ws ::= | " " | "\n" [ \t]{0,20}
"#;

#[test]
fn a_json_grammar_takes_nested_values_and_refuses_broken_ones() {
    let g = Grammar::parse(JSON).unwrap();
    for good in [
        r#"{}"#,
        r#"{"a": 1}"#,
        r#"{"a": [1, 2.5e3, "x\"y", {"b": null}], "c": true}"#,
        r#"{"deep": {"deeper": {"deepest": [[[]]]}}}"#,
        "{\"u\": \"\\u00e9 é ✓\"}",
    ] {
        assert!(g.accepts(good), "{good}");
    }
    for bad in [
        r#"{"a": 1,}"#,
        r#"{"a" 1}"#,
        r#"[1, 2]"#,
        r#"{"a": "unterminated}"#,
        r#"{"a": 01x}"#,
        "{\"raw\": \"line\nbreak\"}",
        "",
    ] {
        assert!(!g.accepts(bad), "{bad}");
    }
}

#[test]
fn literals_classes_escapes_and_any_character() {
    let g = Grammar::parse("root ::= \"a\\\"b\\\\\" [\\x41-\\x43] [^\\]\\n] \"\\u00e9\" . [-x]\n")
        .unwrap();
    assert!(g.accepts("a\"b\\Bzé✓-"));
    assert!(!g.accepts("a\"b\\A]é x"));
    assert!(!g.accepts("a\"b\\Dzé✓-"));
    assert!(!g.accepts("a\"b\\B\né✓x"));
    assert!(g.accepts("a\"b\\C%é\u{1F600}x"));
}

#[test]
fn repetitions_count_as_llama_cpp_counts() {
    let g = Grammar::parse("root ::= \"<\" \"ab\"{2} [0-9]{1,3} \"x\"{2,} \"y\"? \"z\"* \">\"\n")
        .unwrap();
    assert!(g.accepts("<abab1xx>"));
    assert!(g.accepts("<abab123xxxxyzzz>"));
    assert!(!g.accepts("<ab1xx>"));
    assert!(!g.accepts("<abab1234xx>"));
    assert!(!g.accepts("<abab1x>"));
    assert!(!g.accepts("<abab1xxyy>"));
    let plus = Grammar::parse("root ::= ( \"a\" | \"b\" )+\n").unwrap();
    assert!(plus.accepts("abba"));
    assert!(!plus.accepts(""));
    let none = Grammar::parse("root ::= \"a\" \"b\"{0,0} \"c\"\n").unwrap();
    assert!(none.accepts("ac"));
    assert!(!none.accepts("abc"));
}

#[test]
fn rules_may_span_lines_inside_groups_and_after_a_bar_only() {
    let g =
        Grammar::parse("root ::= (\n  \"a\"\n  \"b\"\n) | # a comment\n  \"c\"\nother ::= root\n")
            .unwrap();
    assert!(g.accepts("ab"));
    assert!(g.accepts("c"));
    // At the top level a line end ends the rule: `"b"` would begin a new rule.
    let err = Grammar::parse("root ::= \"a\"\n  \"b\"\n").unwrap_err();
    assert!(matches!(err, GbnfError::Syntax { line: 2, .. }), "{err}");
}

#[test]
fn recursion_to_the_right_is_fine_to_the_left_refused() {
    let g = Grammar::parse("root ::= \"(\" root \")\" | \"x\"\n").unwrap();
    assert!(g.accepts("((x))"));
    assert!(!g.accepts("((x)"));
    assert_eq!(
        Grammar::parse("root ::= root \"a\" | \"b\"\n").unwrap_err(),
        GbnfError::LeftRecursion {
            name: "root".into()
        }
    );
    // Through a rule that may match nothing, as llama.cpp sees it too.
    assert!(matches!(
        Grammar::parse("root ::= ( \"a\"? )*\n").unwrap_err(),
        GbnfError::LeftRecursion { .. }
    ));
}

#[test]
fn what_llama_cpp_refuses_is_refused() {
    assert_eq!(
        Grammar::parse("root ::= missing\n").unwrap_err(),
        GbnfError::UndefinedRule {
            name: "missing".into()
        }
    );
    assert_eq!(
        Grammar::parse("start ::= \"a\"\n").unwrap_err(),
        GbnfError::NoRoot
    );
    for (text, said) in [
        ("root = \"a\"\n", "expecting ::="),
        ("root ::= \"a\n", "unexpected end of input"),
        ("root ::= [a-\n", "unexpected end of input"),
        ("root ::= \"\\q\"\n", "unknown escape"),
        ("root ::= \"\\x4\"\n", "expecting 2 hex chars"),
        ("root ::= ( \"a\"\n", "expecting ')'"),
        ("root ::= * \"a\"\n", "expecting preceding item"),
        ("root ::= \"a\"{x}\n", "expecting an int"),
        ("root ::= \"a\"{1;2}\n", "expecting ','"),
        ("root ::= {2}\n", "expecting preceding item"),
        ("root_rule ::= \"a\"\n", "expecting ::="),
        ("::= \"a\"\n", "expecting name"),
    ] {
        let err = Grammar::parse(text).unwrap_err();
        assert!(
            matches!(&err, GbnfError::Syntax { message, .. } if message.contains(said)),
            "{text:?}: {err}"
        );
    }
}

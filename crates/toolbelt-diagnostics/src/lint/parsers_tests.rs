use std::path::Path;

use toolbelt_core::diagnostics::{Diagnostic, Position, Severity};

use crate::lint::{LintError, MAX_PROBLEMS, OutputError, Parser, parse};

/// `ruff check --output-format=json lint.py` (ruff 0.17.6), run in /tmp/rufft.
const RUFF_RULES: &str = include_str!("samples/ruff-0.17.6-rules.json");
/// The same for a file with a syntax error.
const RUFF_SYNTAX: &str = include_str!("samples/ruff-0.17.6-syntax.json");
/// `ruff check --output-format=sarif lint.py` (ruff 0.17.6; rule help texts cut).
const RUFF_SARIF: &str = include_str!("samples/ruff-0.17.6-rules.sarif");

fn problem(
    at: (u32, u32),
    end: (u32, u32),
    severity: Severity,
    code: Option<&str>,
    message: &str,
) -> Diagnostic {
    Diagnostic {
        path: "lint.py".to_string(),
        line: at.0,
        col: at.1,
        end: Position {
            line: end.0,
            col: end.1,
        },
        severity,
        code: code.map(str::to_string),
        source: "ruff".to_string(),
        message: message.to_string(),
        new: false,
    }
}

fn read(parser: &Parser, output: &str, file: &str) -> Result<Vec<Diagnostic>, LintError> {
    parse(
        parser,
        output,
        Path::new(file),
        "lint.py",
        Path::new("/tmp/rufft"),
        "ruff",
    )
}

fn parser(text: &str) -> Parser {
    text.parse().unwrap()
}

#[test]
fn ruff_json_rules_are_warnings_and_undefined_names_errors() {
    let found = read(&Parser::RuffJson, RUFF_RULES, "/tmp/rufft/lint.py").unwrap();
    let want = vec![
        problem(
            (1, 1),
            (1, 10),
            Severity::Warning,
            Some("I001"),
            "Import block is un-sorted or un-formatted",
        ),
        problem(
            (1, 8),
            (1, 10),
            Severity::Warning,
            Some("F401"),
            "`os` imported but unused",
        ),
        problem(
            (2, 5),
            (2, 19),
            Severity::Error,
            Some("F821"),
            "Undefined name `undefined_name`",
        ),
    ];
    assert_eq!(found, want);
}

#[test]
fn ruff_json_syntax_errors_are_errors() {
    let found = read(&Parser::RuffJson, RUFF_SYNTAX, "/tmp/rufft/syn.py").unwrap();
    assert_eq!(found.len(), 2);
    assert!(
        found
            .iter()
            .all(|d| d.severity == Severity::Error && d.code.as_deref() == Some("invalid-syntax"))
    );
    assert_eq!((found[0].line, found[0].col), (3, 7));
}

#[test]
fn ruff_json_null_code_is_invalid_syntax() {
    let out = r#"[{"code": null, "message": "SyntaxError: Expected an expression",
        "location": {"row": 2, "column": 4}, "end_location": {"row": 2, "column": 5},
        "filename": "lint.py", "fix": null, "noqa_row": null, "url": null}]"#;
    let found = read(&Parser::RuffJson, out, "/tmp/rufft/lint.py").unwrap();
    assert_eq!(found[0].code.as_deref(), Some("invalid-syntax"));
    assert_eq!(found[0].severity, Severity::Error);
}

#[test]
fn ruff_json_keeps_only_the_file_asked_about() {
    let found = read(&Parser::RuffJson, RUFF_RULES, "/tmp/rufft/other.py").unwrap();
    assert_eq!(found, vec![]);
}

#[test]
fn ruff_json_that_is_not_json_is_an_error() {
    let err = read(&Parser::RuffJson, "error: bad flag", "/tmp/rufft/lint.py").unwrap_err();
    assert!(matches!(
        err,
        LintError::Output {
            source: OutputError::Json(_),
            ..
        }
    ));
    let err = read(&Parser::RuffJson, r#"{"a": 1}"#, "/tmp/rufft/lint.py").unwrap_err();
    assert!(matches!(
        err,
        LintError::Output {
            source: OutputError::Shape { .. },
            ..
        }
    ));
}

#[test]
fn sarif_from_ruff() {
    let found = read(&Parser::Sarif, RUFF_SARIF, "/tmp/rufft/lint.py").unwrap();
    let codes: Vec<_> = found.iter().map(|d| d.code.as_deref()).collect();
    assert_eq!(codes, [Some("I001"), Some("F401"), Some("F821")]);
    assert_eq!(
        found[2],
        problem(
            (2, 5),
            (2, 19),
            Severity::Error,
            Some("F821"),
            "Undefined name `undefined_name`"
        )
    );
}

#[test]
fn sarif_levels_relative_uris_and_missing_columns() {
    let out = r#"{"version": "2.1.0", "runs": [{
        "originalUriBaseIds": {"SRC": {"uri": "file:///tmp/rufft/"}},
        "results": [
          {"ruleId": "a", "level": "warning", "message": {"text": "relative"},
           "locations": [{"physicalLocation": {"artifactLocation": {"uri": "lint.py"},
             "region": {"startLine": 4}}}]},
          {"ruleId": "b", "level": "note", "message": {"text": "based"},
           "locations": [{"physicalLocation": {"artifactLocation": {"uri": "lint.py", "uriBaseId": "SRC"},
             "region": {"startLine": 5, "startColumn": 3, "endLine": 7}}}]},
          {"ruleId": "c", "level": "none", "message": {"markdown": "*md*"},
           "locations": [{"physicalLocation": {"artifactLocation": {"uri": "other.py"},
             "region": {"startLine": 1}}}]},
          {"ruleId": "d", "message": {"text": "no level"},
           "locations": [{"physicalLocation": {"artifactLocation": {"uri": "file:///tmp/rufft/lint.py"},
             "region": {"startLine": 9, "startColumn": 2, "endColumn": 6}}}]},
          {"ruleId": "e", "kind": "pass", "level": "none", "message": {"text": "passed"},
           "locations": [{"physicalLocation": {"artifactLocation": {"uri": "lint.py"}}}]},
          {"ruleId": "f", "level": "error", "message": {"text": "nowhere"}}
        ]}]}"#;
    let found = read(&Parser::Sarif, out, "/tmp/rufft/lint.py").unwrap();
    let summary: Vec<_> = found
        .iter()
        .map(|d| {
            (
                d.code.clone().unwrap(),
                d.severity,
                (d.line, d.col, d.end.line, d.end.col),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("a".to_string(), Severity::Warning, (4, 1, 4, 1)),
            ("b".to_string(), Severity::Info, (5, 3, 7, 1)),
            ("d".to_string(), Severity::Warning, (9, 2, 9, 6)),
        ]
    );
}

#[test]
fn sarif_without_runs_is_an_error() {
    let err = read(&Parser::Sarif, "[]", "/tmp/rufft/lint.py").unwrap_err();
    assert!(matches!(
        err,
        LintError::Output {
            source: OutputError::Shape { .. },
            ..
        }
    ));
}

#[test]
fn gcc_lines_with_codes_notes_and_other_files() {
    let out = "\
lint.c: In function 'main':
lint.c:3:9: warning: unused variable 'x' [-Wunused-variable]
    3 |     int x;
      |         ^
lint.c:5:1: error: expected ';' before '}' token
lint.c:2:5: note: declared here
include/h.h:1:1: error: not this file
/tmp/rufft/lint.c:7: error: Incompatible return value type [return-value]
";
    let found = read(&Parser::Gcc, out, "/tmp/rufft/lint.c").unwrap();
    let summary: Vec<_> = found
        .iter()
        .map(|d| {
            (
                d.line,
                d.col,
                d.severity,
                d.code.as_deref(),
                d.message.as_str(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            (
                3,
                9,
                Severity::Warning,
                Some("-Wunused-variable"),
                "unused variable 'x'"
            ),
            (5, 1, Severity::Error, None, "expected ';' before '}' token"),
            (2, 5, Severity::Info, None, "declared here"),
            (
                7,
                1,
                Severity::Error,
                Some("return-value"),
                "Incompatible return value type"
            ),
        ]
    );
}

#[test]
fn gcc_output_with_no_such_line_is_an_error_but_empty_output_is_not() {
    let err = read(&Parser::Gcc, "usage: lint [options]\n", "/tmp/rufft/lint.c").unwrap_err();
    assert!(matches!(
        err,
        LintError::Output {
            source: OutputError::NoMatch { .. },
            ..
        }
    ));
    assert_eq!(
        read(&Parser::Gcc, "\n", "/tmp/rufft/lint.c").unwrap(),
        vec![]
    );
}

#[test]
fn regex_with_all_groups() {
    let p = parser(
        r"regex:^(?P<file>[^:]+):(?P<line>\d+):(?P<col>\d+)-(?P<end_line>\d+):(?P<end_col>\d+) (?P<severity>\w+) (?P<code>\S+) (?P<message>.*)$",
    );
    let out = "lint.py:2:3-2:8 E X100 bad thing\nother.py:1:1-1:2 W X1 not ours\nnoise\n";
    let found = read(&p, out, "/tmp/rufft/lint.py").unwrap();
    assert_eq!(
        found,
        vec![problem(
            (2, 3),
            (2, 8),
            Severity::Error,
            Some("X100"),
            "bad thing"
        )]
    );
}

#[test]
fn regex_without_file_group_takes_every_line_as_the_file() {
    let p = parser(r"regex:^line (?P<line>\d+): (?P<message>.+)$");
    let found = read(&p, "line 4: too long\r\n", "/tmp/rufft/lint.py").unwrap();
    assert_eq!(
        found,
        vec![problem((4, 1), (4, 1), Severity::Warning, None, "too long")]
    );
}

#[test]
fn at_most_max_problems_are_kept() {
    let out: String = (1..=MAX_PROBLEMS + 50)
        .map(|i| format!("/tmp/rufft/lint.c:{i}:1: warning: w{i}\n"))
        .collect();
    let found = read(&Parser::Gcc, &out, "/tmp/rufft/lint.c").unwrap();
    assert_eq!(found.len(), MAX_PROBLEMS);
}

#[test]
fn positions_are_at_least_one_and_end_after_start() {
    let out = r#"[{"code": "E1", "message": "  ", "location": {"row": 0, "column": 0},
        "end_location": {"row": 0, "column": 0}, "filename": "/tmp/rufft/lint.py"}]"#;
    let found = read(&Parser::RuffJson, out, "/tmp/rufft/lint.py").unwrap();
    assert_eq!(
        found,
        vec![problem(
            (1, 1),
            (1, 1),
            Severity::Warning,
            Some("E1"),
            "(no message)"
        )]
    );
}

#[test]
fn parser_names_and_errors() {
    assert!(matches!(parser("ruff-json"), Parser::RuffJson));
    assert!(matches!(parser("sarif"), Parser::Sarif));
    assert!(matches!(parser("gcc"), Parser::Gcc));
    let err = "eslint".parse::<Parser>().unwrap_err();
    assert!(
        err.to_string()
            .contains("\"ruff-json\", \"sarif\", \"gcc\" or \"regex:<pattern>\"")
    );
    assert!(matches!(
        "regex:(".parse::<Parser>(),
        Err(LintError::BadPattern { .. })
    ));
    assert!(matches!(
        r"regex:(?P<line>\d+)".parse::<Parser>(),
        Err(LintError::MissingGroup {
            group: "message",
            ..
        })
    ));
    let p = parser(r"regex:(?P<line>\d+) (?P<message>.*)");
    assert_eq!(p.to_string(), r"regex:(?P<line>\d+) (?P<message>.*)");
}

#[test]
fn parser_deserializes_from_a_string() {
    let p: Parser = serde_json::from_str("\"sarif\"").unwrap();
    assert!(matches!(p, Parser::Sarif));
    let err = serde_json::from_str::<Parser>("\"pylint\"").unwrap_err();
    assert!(err.to_string().contains("unknown linter parser `pylint`"));
}

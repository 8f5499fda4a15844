#![allow(clippy::unwrap_used)]

use std::path::Path;

use pretty_assertions::assert_eq;

use super::{Decision, Evaluation, Policy, PolicyConfig, PolicyError, Request, Rule};
use crate::ToolKinds;
use crate::command::normalize_command;
use crate::subject::clean_relative;
use toolbelt_core::Subject;

pub(super) const FS: &[&str] = &["fs:read"];

/// The subjects of the tools these tests name, as the built-in tools declare
/// them, under their canonical names and the names profiles give them.
pub(super) fn kinds() -> ToolKinds {
    let mut kinds = ToolKinds::new();
    kinds.declare("bash", Subject::Command);
    kinds.declare("web_fetch", Subject::Url);
    for tool in [
        "read_file",
        "write_file",
        "edit_file",
        "multi_edit",
        "list_dir",
        "glob",
        "grep",
    ] {
        kinds.declare(tool, Subject::Path);
    }
    for (alias, tool) in [
        ("Bash", "bash"),
        ("exec", "bash"),
        ("run_command", "bash"),
        ("WebFetch", "web_fetch"),
        ("Read", "read_file"),
        ("ReadFile", "read_file"),
        ("Write", "write_file"),
        ("WriteFile", "write_file"),
        ("Edit", "edit_file"),
        ("StrReplaceFile", "edit_file"),
        ("MultiEdit", "multi_edit"),
        ("LS", "list_dir"),
        ("Glob", "glob"),
        ("Grep", "grep"),
    ] {
        kinds.alias(alias, tool);
    }
    kinds
}

pub(super) fn parse(text: &str) -> Result<Rule, PolicyError> {
    Rule::parse_for(text, &kinds())
}

pub(super) fn from_rules(
    allow: &[&str],
    ask: &[&str],
    deny: &[&str],
) -> Result<Policy, PolicyError> {
    Policy::from_rules(allow, ask, deny)?.with_kinds(kinds())
}

pub(super) fn build(config: &PolicyConfig) -> Result<Policy, PolicyError> {
    config.build()?.with_kinds(kinds())
}

pub(super) fn perms(list: &[&str]) -> Vec<String> {
    list.iter().map(|p| p.to_string()).collect()
}

/// A policy with fixed roots and home, so no test depends on the machine.
pub(super) fn policy(allow: &[&str], ask: &[&str], deny: &[&str]) -> Policy {
    from_rules(allow, ask, deny)
        .unwrap()
        .with_roots(["/work/proj"])
        .with_home(Some(Path::new("/home/u")))
}

pub(super) fn eval(
    p: &Policy,
    tool: &str,
    alias: Option<&str>,
    subject: Option<&str>,
    permissions: &[&str],
) -> Evaluation {
    let permissions = perms(permissions);
    p.evaluate(&Request {
        tool,
        alias,
        subject,
        permissions: &permissions,
    })
}

pub(super) fn decided(decision: Decision, rule: &str) -> Evaluation {
    Evaluation {
        decision,
        rule: Some(rule.to_string()),
    }
}

pub(super) fn allowed_by_default() -> Evaluation {
    Evaluation {
        decision: Decision::Allow,
        rule: None,
    }
}

/// A shell command no rule matches, under a policy with allow rules for the shell.
pub(super) fn not_covered(cmd: &str) -> Evaluation {
    decided(Decision::Ask, &format!("no allow rule covers {cmd:?}"))
}

pub(super) fn command(p: &Policy, cmd: &str) -> Evaluation {
    eval(p, "bash", Some("Bash"), Some(cmd), &["exec"])
}

pub(super) fn read(p: &Policy, path: &str) -> Evaluation {
    eval(p, "read_file", None, Some(path), FS)
}

pub(super) fn fetch(p: &Policy, url: &str) -> Evaluation {
    eval(p, "web_fetch", None, Some(url), &["net:http"])
}

// ---- rule syntax ----

#[test]
fn rule_parts_are_kept_as_written() {
    let rule = parse("  Bash(git status:*) ").unwrap();
    assert_eq!(rule.text(), "Bash(git status:*)");
    assert_eq!(rule.tool(), "Bash");
    assert_eq!(rule.specifier(), Some("git status:*"));
    assert_eq!(rule.to_string(), "Bash(git status:*)");
    let bare: Rule = "mcp__github__create_issue".parse().unwrap();
    assert_eq!(bare.tool(), "mcp__github__create_issue");
    assert_eq!(bare.specifier(), None);
    let nested = parse("bash(echo (a))").unwrap();
    assert_eq!(nested.specifier(), Some("echo (a)"));
}

#[test]
fn malformed_rules_are_refused_with_the_reason() {
    let cases: Vec<(&str, PolicyError)> = vec![
        ("   ", PolicyError::Empty),
        ("(x)", PolicyError::EmptyTool { rule: "(x)".into() }),
        (
            "bash(git status",
            PolicyError::Unbalanced {
                rule: "bash(git status".into(),
            },
        ),
        (
            "bash(ls)x",
            PolicyError::Unbalanced {
                rule: "bash(ls)x".into(),
            },
        ),
        (
            "bash)",
            PolicyError::Unbalanced {
                rule: "bash)".into(),
            },
        ),
        (
            "bash()",
            PolicyError::EmptySpecifier {
                rule: "bash()".into(),
            },
        ),
        (
            "bash( :*)",
            PolicyError::EmptySpecifier {
                rule: "bash( :*)".into(),
            },
        ),
        (
            "read file(x)",
            PolicyError::BadToolName {
                rule: "read file(x)".into(),
                tool: "read file".into(),
            },
        ),
        (
            "b*sh",
            PolicyError::BadToolName {
                rule: "b*sh".into(),
                tool: "b*sh".into(),
            },
        ),
        (
            "web_fetch(https://example.com)",
            PolicyError::NeedsDomain {
                rule: "web_fetch(https://example.com)".into(),
                tool: "web_fetch".into(),
            },
        ),
    ];
    for (text, want) in cases {
        assert_eq!(parse(text).unwrap_err(), want, "{text}");
    }
}

#[test]
fn bad_glob_names_the_rule_and_the_problem() {
    let err = parse("read_file(src/[a)").unwrap_err();
    let PolicyError::BadGlob { rule, source } = &err else {
        panic!("not a glob error: {err:?}");
    };
    assert_eq!(rule, "read_file(src/[a)");
    assert_eq!(
        source.to_string(),
        "error parsing glob 'src/[a': unclosed character class; missing ']'"
    );
    assert_eq!(
        toolbelt_core::error_chain(&err),
        r#"permission rule "read_file(src/[a)" has an invalid path pattern: error parsing glob 'src/[a': unclosed character class; missing ']'"#
    );
    // The same text is a valid command: shell rules are not globs.
    assert!(parse("bash(awk '{ if (x) { y } }')").is_ok());
}

#[test]
fn bad_domains_are_refused() {
    for (text, domain, reason) in [
        ("web_fetch(domain:)", "", "no host"),
        (
            "web_fetch(domain:https://example.com/x)",
            "https://example.com/x",
            "a URL, not a host",
        ),
        (
            "web_fetch(domain:example.com:8080)",
            "example.com:8080",
            "a port is not part of a host",
        ),
        (
            "web_fetch(domain:me@example.com)",
            "me@example.com",
            "not a host name",
        ),
        ("web_fetch(domain:a b.com)", "a b.com", "not a host name"),
        (
            "WebFetch(domain:*.10.0.0.1)",
            "*.10.0.0.1",
            "an IP address has no subdomains",
        ),
    ] {
        assert_eq!(
            parse(text).unwrap_err(),
            PolicyError::BadDomain {
                rule: text.into(),
                domain: domain.into(),
                reason: reason.into(),
            },
            "{text}"
        );
    }
}

#[test]
fn a_host_the_url_parser_refuses_keeps_its_cause() {
    let text = "web_fetch(domain:a<b.com)";
    let err = parse(text).unwrap_err();
    assert_eq!(
        err,
        PolicyError::BadHost {
            rule: text.into(),
            domain: "a<b.com".into(),
            source: url::ParseError::IdnaError,
        }
    );
    assert_eq!(
        toolbelt_core::error_chain(&err),
        r#"permission rule "web_fetch(domain:a<b.com)" has an invalid domain "a<b.com": invalid international domain name"#
    );
}

#[test]
fn error_messages_say_what_to_write() {
    assert_eq!(
        parse("bash(ls").unwrap_err().to_string(),
        r#"permission rule "bash(ls" has unbalanced parentheses; write `tool` or `tool(specifier)`, with the closing `)` last"#
    );
    assert_eq!(
        parse("web_fetch(example.com)").unwrap_err().to_string(),
        r#"permission rule "web_fetch(example.com)": rules for web_fetch take `domain:HOST`, e.g. `web_fetch(domain:example.com)`"#
    );
    assert_eq!(
        parse("web_fetch(domain:a.com/x)").unwrap_err().to_string(),
        r#"permission rule "web_fetch(domain:a.com/x)" has an invalid domain "a.com/x" (a path is not part of a host); write `domain:example.com` without scheme, port or path"#
    );
}

// ---- tool names ----

#[test]
fn tool_part_matches_canonical_or_alias_case_sensitively() {
    let p = policy(&[], &[], &["Bash"]);
    assert_eq!(command(&p, "ls"), decided(Decision::Deny, "Bash"));
    let p = policy(&[], &[], &["bash"]);
    assert_eq!(command(&p, "ls"), decided(Decision::Deny, "bash"));
    let p = policy(&[], &[], &["BASH", "Read"]);
    assert_eq!(command(&p, "ls"), allowed_by_default());
    // `Read` is an alias only when the request says so.
    assert_eq!(read(&p, "a.txt"), allowed_by_default());
    assert_eq!(
        eval(&p, "read_file", Some("Read"), Some("a.txt"), FS),
        decided(Decision::Deny, "Read")
    );
}

#[test]
fn wildcard_and_mcp_tool_names() {
    let p = policy(&[], &["mcp__github"], &["mcp__db__*", "*(**/.git/**)"]);
    assert_eq!(
        eval(&p, "mcp__github__create_issue", None, None, &[]),
        decided(Decision::Ask, "mcp__github")
    );
    assert_eq!(
        eval(&p, "mcp__githubx__a", None, None, &[]),
        allowed_by_default()
    );
    assert_eq!(
        eval(&p, "mcp__github", None, None, &[]),
        allowed_by_default()
    );
    assert_eq!(
        eval(&p, "mcp__db__query", None, Some("select 1"), &[]),
        decided(Decision::Deny, "mcp__db__*")
    );
    assert_eq!(
        eval(
            &p,
            "write_file",
            None,
            Some("sub/.git/config"),
            &["fs:write"]
        ),
        decided(Decision::Deny, "*(**/.git/**)")
    );
    assert_eq!(
        eval(&p, "anything", None, Some("sub/.git/config"), &["fs:read"]),
        decided(Decision::Deny, "*(**/.git/**)")
    );
    let exact = policy(&[], &[], &["mcp__db__query"]);
    assert_eq!(
        eval(&exact, "mcp__db__query", None, None, &[]),
        decided(Decision::Deny, "mcp__db__query")
    );
    assert_eq!(
        eval(&exact, "mcp__db__query2", None, None, &[]),
        allowed_by_default()
    );
}

#[test]
fn a_bare_or_star_rule_matches_calls_without_a_subject_and_a_specifier_does_not() {
    let p = policy(&[], &["think(*)"], &["task"]);
    assert_eq!(
        eval(&p, "think", None, None, &[]),
        decided(Decision::Ask, "think(*)")
    );
    assert_eq!(
        eval(&p, "task", None, Some("x"), &[]),
        decided(Decision::Deny, "task")
    );
    let p = policy(&[], &[], &["bash(ls)"]);
    assert_eq!(eval(&p, "bash", None, None, &[]), allowed_by_default());
}

// ---- commands ----

#[test]
fn command_prefix_respects_word_boundaries() {
    let p = policy(&["Bash(git status:*)"], &[], &[]);
    let allow = decided(Decision::Allow, "Bash(git status:*)");
    assert_eq!(command(&p, "git status"), allow);
    assert_eq!(command(&p, "git status --short"), allow);
    assert_eq!(command(&p, "  git \t status   -s "), allow);
    // An allow rule for the shell makes it an allow list: other commands ask.
    assert_eq!(command(&p, "git statusx"), not_covered("git statusx"));
    assert_eq!(command(&p, "git stat"), not_covered("git stat"));
    assert_eq!(command(&p, "xgit status"), not_covered("xgit status"));
}

#[test]
fn command_exact_match() {
    let p = policy(&[], &[], &["bash(npm test)"]);
    let deny = decided(Decision::Deny, "bash(npm test)");
    assert_eq!(command(&p, "npm test"), deny);
    assert_eq!(command(&p, " npm  test "), deny);
    assert_eq!(command(&p, "npm test --watch"), allowed_by_default());
    assert_eq!(command(&p, "npm tests"), allowed_by_default());
}

#[test]
fn run_command_is_a_shell_tool_too() {
    let p = policy(&[], &[], &["run_command(rm:*)"]);
    assert_eq!(
        eval(&p, "run_command", None, Some("rm -rf /"), &[]),
        decided(Decision::Deny, "run_command(rm:*)")
    );
}

#[test]
fn normalize_command_collapses_only_unquoted_blanks() {
    let cases = [
        ("  git   status  ", "git status"),
        ("echo 'a   b'  c", "echo 'a   b' c"),
        ("echo \"a \\\"  b\"   c", "echo \"a \\\"  b\" c"),
        ("echo a\\  b", "echo a\\  b"),
        ("a\t\tb", "a b"),
        ("", ""),
        ("'unterminated   quote", "'unterminated   quote"),
    ];
    for (input, want) in cases {
        assert_eq!(normalize_command(input), want, "{input:?}");
    }
}

#[test]
fn evaluate_commands_takes_the_strictest_part() {
    let p = policy(
        &["bash(git:*)", "bash(ls:*)"],
        &["bash(git push:*)"],
        &["bash(rm:*)"],
    );
    let req = Request {
        tool: "bash",
        alias: None,
        subject: Some("git status && rm -rf x"),
        permissions: &[],
    };
    assert_eq!(
        p.evaluate_commands(&req, ["git status", "rm -rf x"]),
        decided(Decision::Deny, "bash(rm:*)")
    );
    assert_eq!(
        p.evaluate_commands(&req, ["ls", "git push", "git log"]),
        decided(Decision::Ask, "bash(git push:*)")
    );
    assert_eq!(
        p.evaluate_commands(&req, ["git log", "ls -l"]),
        decided(Decision::Allow, "bash(git:*)")
    );
    // No parts given: the request's own command line is split.
    assert_eq!(
        p.evaluate_commands(&req, []),
        decided(Decision::Deny, "bash(rm:*)")
    );
    assert_eq!(
        p.evaluate_command(&req, "cargo build"),
        not_covered("cargo build")
    );
}

// ---- paths ----

#[test]
fn relative_patterns_match_workspace_paths() {
    let p = policy(
        &[],
        &[],
        &["read_file(./secrets/**)", "write_file(src/**/*.rs)"],
    );
    let secrets = decided(Decision::Deny, "read_file(./secrets/**)");
    assert_eq!(read(&p, "secrets/a.txt"), secrets);
    assert_eq!(read(&p, "./secrets/deep/b"), secrets);
    assert_eq!(read(&p, "docs/../secrets/x"), secrets);
    assert_eq!(read(&p, "/work/proj/secrets/x"), secrets);
    assert_eq!(read(&p, "docs/secrets/x"), allowed_by_default());
    assert_eq!(read(&p, "/elsewhere/secrets/x"), allowed_by_default());
    assert_eq!(read(&p, "/work/proj2/secrets/x"), allowed_by_default());

    let write = |path| eval(&p, "write_file", None, Some(path), &["fs:write"]);
    let rs = decided(Decision::Deny, "write_file(src/**/*.rs)");
    assert_eq!(write("src/main.rs"), rs);
    assert_eq!(write("src/a/b/c.rs"), rs);
    assert_eq!(write("src/main.rs.bak"), allowed_by_default());
    assert_eq!(write("lib/src/main.rs"), allowed_by_default());
    // The rule names write_file only.
    assert_eq!(read(&p, "src/main.rs"), allowed_by_default());
}

#[test]
fn a_pattern_naming_a_directory_covers_its_contents() {
    let p = policy(&[], &[], &["read_file(./private)", "list_dir(build/)"]);
    assert_eq!(
        read(&p, "private/notes/a.md"),
        decided(Decision::Deny, "read_file(./private)")
    );
    assert_eq!(
        read(&p, "private"),
        decided(Decision::Deny, "read_file(./private)")
    );
    assert_eq!(read(&p, "privateer"), allowed_by_default());
    let list = |path| eval(&p, "list_dir", None, Some(path), FS);
    assert_eq!(
        list("a/build/x"),
        decided(Decision::Deny, "list_dir(build/)")
    );
}

#[test]
fn names_without_a_slash_match_at_any_depth() {
    let p = policy(&[], &[], &["read_file(*.log)", "read_file(**/gen/*.json)"]);
    assert_eq!(
        read(&p, "a.log"),
        decided(Decision::Deny, "read_file(*.log)")
    );
    assert_eq!(
        read(&p, "x/y/a.log"),
        decided(Decision::Deny, "read_file(*.log)")
    );
    assert_eq!(
        read(&p, "/var/log/a.log"),
        decided(Decision::Deny, "read_file(*.log)")
    );
    assert_eq!(
        read(&p, "gen/a.json"),
        decided(Decision::Deny, "read_file(**/gen/*.json)")
    );
    assert_eq!(
        read(&p, "/tmp/x/gen/a.json"),
        decided(Decision::Deny, "read_file(**/gen/*.json)")
    );
    assert_eq!(read(&p, "gen/sub/a.json"), allowed_by_default());
}

#[test]
fn names_at_any_depth_never_match_directories_above_the_workspace_root() {
    let p = from_rules(&[], &[], &["read_file(build)"])
        .unwrap()
        .with_roots(["/home/u/build/proj"]);
    let deny = decided(Decision::Deny, "read_file(build)");
    assert_eq!(read(&p, "src/a.rs"), allowed_by_default());
    assert_eq!(
        read(&p, "/home/u/build/proj/src/a.rs"),
        allowed_by_default()
    );
    assert_eq!(read(&p, "out/build/x"), deny);
    assert_eq!(read(&p, "/home/u/build/proj/build"), deny);
    // Outside the workspace the whole absolute path counts.
    assert_eq!(read(&p, "/home/u/build/other/x"), deny);
    assert_eq!(read(&p, "../../build/x"), deny);
}

#[test]
fn absolute_and_home_patterns() {
    let p = policy(
        &[],
        &[],
        &[
            "read_file(/etc/**)",
            "read_file(//var/secret)",
            "read_file(~/.zshrc)",
        ],
    );
    assert_eq!(
        read(&p, "/etc/passwd"),
        decided(Decision::Deny, "read_file(/etc/**)")
    );
    assert_eq!(
        read(&p, "/etc/../etc/shadow"),
        decided(Decision::Deny, "read_file(/etc/**)")
    );
    assert_eq!(read(&p, "etc/passwd"), allowed_by_default());
    assert_eq!(
        read(&p, "/var/secret"),
        decided(Decision::Deny, "read_file(//var/secret)")
    );
    assert_eq!(
        read(&p, "/home/u/.zshrc"),
        decided(Decision::Deny, "read_file(~/.zshrc)")
    );
    assert_eq!(
        read(&p, "~/.zshrc"),
        decided(Decision::Deny, "read_file(~/.zshrc)")
    );
    assert_eq!(read(&p, "/home/u2/.zshrc"), allowed_by_default());
    // A relative subject is absolute under the first root.
    let p = policy(&[], &[], &["read_file(/work/proj/vendor/**)"]);
    assert_eq!(
        read(&p, "vendor/a"),
        decided(Decision::Deny, "read_file(/work/proj/vendor/**)")
    );
}

#[test]
fn without_roots_relative_and_absolute_subjects_stay_apart() {
    let p = from_rules(&[], &[], &["read_file(/etc/**)", "read_file(src/**)"])
        .unwrap()
        .with_home(None);
    assert_eq!(read(&p, "etc/passwd"), allowed_by_default());
    assert_eq!(read(&p, "/x/src/a"), allowed_by_default());
    assert_eq!(
        read(&p, "src/a"),
        decided(Decision::Deny, "read_file(src/**)")
    );
    assert_eq!(read(&p, "~/src/a"), allowed_by_default());
}

#[test]
fn paths_compare_case_sensitively() {
    let p = policy(&[], &[], &["read_file(Secrets/**)"]);
    assert_eq!(read(&p, "secrets/a"), allowed_by_default());
    assert_eq!(
        read(&p, "Secrets/a"),
        decided(Decision::Deny, "read_file(Secrets/**)")
    );
}

#[test]
fn path_cleaning() {
    let cases = [
        ("./a/../b", "b"),
        ("a//b/./c/", "a/b/c"),
        ("../x", "../x"),
        ("a/../../x", "../x"),
        (".", ""),
    ];
    for (input, want) in cases {
        assert_eq!(clean_relative(input), want, "{input}");
    }
}

#[test]
fn unknown_tools_match_paths_only_with_an_fs_permission() {
    let p = policy(&[], &[], &["notes(drafts/*)"]);
    let deny = decided(Decision::Deny, "notes(drafts/*)");
    assert_eq!(
        eval(&p, "notes", None, Some("drafts/a"), &["fs:read"]),
        deny
    );
    assert_eq!(
        eval(&p, "notes", None, Some("drafts/a"), &[]),
        allowed_by_default()
    );
    assert_eq!(eval(&p, "notes", None, Some("drafts/*"), &[]), deny);
}

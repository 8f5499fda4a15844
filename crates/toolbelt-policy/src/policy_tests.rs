#![allow(clippy::unwrap_used)]

use std::path::Path;

use pretty_assertions::assert_eq;
use proptest::prelude::*;

use super::{Decision, Evaluation, Policy, PolicyConfig, PolicyError, Request, Rule};
use crate::ToolKinds;
use crate::rule::normalize_command;
use crate::subject::clean_relative;
use toolbelt_core::Subject;

const FS: &[&str] = &["fs:read"];

/// The subjects of the tools these tests name, as the built-in tools declare
/// them, under their canonical names and the names profiles give them.
fn kinds() -> ToolKinds {
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

fn parse(text: &str) -> Result<Rule, PolicyError> {
    Rule::parse_for(text, &kinds())
}

fn from_rules(allow: &[&str], ask: &[&str], deny: &[&str]) -> Result<Policy, PolicyError> {
    Policy::from_rules(allow, ask, deny)?.with_kinds(kinds())
}

fn build(config: &PolicyConfig) -> Result<Policy, PolicyError> {
    config.build()?.with_kinds(kinds())
}

fn perms(list: &[&str]) -> Vec<String> {
    list.iter().map(|p| p.to_string()).collect()
}

/// A policy with fixed roots and home, so no test depends on the machine.
fn policy(allow: &[&str], ask: &[&str], deny: &[&str]) -> Policy {
    from_rules(allow, ask, deny)
        .unwrap()
        .with_roots(["/work/proj"])
        .with_home(Some(Path::new("/home/u")))
}

fn eval(
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

fn decided(decision: Decision, rule: &str) -> Evaluation {
    Evaluation {
        decision,
        rule: Some(rule.to_string()),
    }
}

fn allowed_by_default() -> Evaluation {
    Evaluation {
        decision: Decision::Allow,
        rule: None,
    }
}

/// A shell command no rule matches, under a policy with allow rules for the shell.
fn not_covered(cmd: &str) -> Evaluation {
    decided(Decision::Ask, &format!("no allow rule covers {cmd:?}"))
}

fn command(p: &Policy, cmd: &str) -> Evaluation {
    eval(p, "bash", Some("Bash"), Some(cmd), &["exec"])
}

fn read(p: &Policy, path: &str) -> Evaluation {
    eval(p, "read_file", None, Some(path), FS)
}

fn fetch(p: &Policy, url: &str) -> Evaluation {
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
    assert_eq!(
        err,
        PolicyError::BadGlob {
            rule: "read_file(src/[a)".into(),
            reason: "error parsing glob 'src/[a': unclosed character class; missing ']'".into(),
        }
    );
    assert_eq!(
        err.to_string(),
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
            "web_fetch(domain:a<b.com)",
            "a<b.com",
            "invalid international domain name",
        ),
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

// ---- domains ----

#[test]
fn domain_rules_match_the_host_and_its_subdomains() {
    let p = policy(
        &["web_fetch(domain:example.com)"],
        &[],
        &["WebFetch(domain:*.evil.org)"],
    );
    let allow = decided(Decision::Allow, "web_fetch(domain:example.com)");
    assert_eq!(fetch(&p, "https://example.com/a?b#c"), allow);
    assert_eq!(fetch(&p, "http://docs.EXAMPLE.com:8080/"), allow);
    assert_eq!(fetch(&p, "https://example.com./"), allow);
    assert_eq!(fetch(&p, "example.com/path"), allow);
    assert_eq!(fetch(&p, "https://user:pw@a.example.com/"), allow);
    assert_eq!(fetch(&p, "https://notexample.com/"), allowed_by_default());
    assert_eq!(
        fetch(&p, "https://example.com.attacker.net/"),
        allowed_by_default()
    );
    assert_eq!(
        fetch(&p, "https://example.com@attacker.net/"),
        allowed_by_default()
    );
    assert_eq!(fetch(&p, "not a url at all"), allowed_by_default());

    let evil = decided(Decision::Deny, "WebFetch(domain:*.evil.org)");
    let aliased = |url| eval(&p, "web_fetch", Some("WebFetch"), Some(url), &[]);
    assert_eq!(aliased("https://a.evil.org/"), evil);
    assert_eq!(aliased("https://evil.org/"), allowed_by_default());
}

#[test]
fn domain_rules_see_hosts_the_way_http_clients_do() {
    let p = policy(
        &[],
        &[],
        &[
            "web_fetch(domain:evil.com)",
            "web_fetch(domain:127.0.0.1)",
            "web_fetch(domain:[::1])",
        ],
    );
    let evil = decided(Decision::Deny, "web_fetch(domain:evil.com)");
    // Percent-encoded and backslash tricks resolve to the real host.
    assert_eq!(fetch(&p, "http://ev%69l.com/"), evil);
    assert_eq!(
        fetch(&p, "https://good.com\\@evil.com/"),
        allowed_by_default()
    );
    assert_eq!(fetch(&p, "http://evil.com\\@good.com/"), evil);
    let loopback = decided(Decision::Deny, "web_fetch(domain:127.0.0.1)");
    assert_eq!(fetch(&p, "http://127.0.0.1:8080/x"), loopback);
    assert_eq!(fetch(&p, "http://0x7f.0.0.1/"), loopback);
    assert_eq!(fetch(&p, "http://2130706433/"), loopback);
    assert_eq!(
        fetch(&p, "http://[0:0::1]/"),
        decided(Decision::Deny, "web_fetch(domain:[::1])")
    );
}

#[test]
fn unicode_domains_compare_in_their_ascii_form() {
    let p = policy(&[], &[], &["web_fetch(domain:bücher.de)"]);
    assert_eq!(
        fetch(&p, "https://www.xn--bcher-kva.de/"),
        decided(Decision::Deny, "web_fetch(domain:bücher.de)")
    );
}

// ---- precedence ----

#[test]
fn deny_beats_ask_beats_allow_whatever_the_order_added() {
    let mut p = Policy::permissive();
    p.add(Decision::Allow, "bash").unwrap();
    p.add(Decision::Ask, "bash(git:*)").unwrap();
    p.add(Decision::Deny, "bash(git push --force:*)").unwrap();
    p.add(Decision::Allow, "bash(git push --force origin main)")
        .unwrap();
    assert_eq!(command(&p, "ls"), decided(Decision::Allow, "bash"));
    assert_eq!(
        command(&p, "git log"),
        decided(Decision::Ask, "bash(git:*)")
    );
    assert_eq!(
        command(&p, "git push --force origin main"),
        decided(Decision::Deny, "bash(git push --force:*)")
    );
    assert_eq!(
        p.rules().map(|(d, r)| (d, r.text())).collect::<Vec<_>>(),
        vec![
            (Decision::Allow, "bash"),
            (Decision::Ask, "bash(git:*)"),
            (Decision::Deny, "bash(git push --force:*)"),
            (Decision::Allow, "bash(git push --force origin main)"),
        ]
    );
}

#[test]
fn the_first_matching_rule_of_a_kind_is_reported() {
    let p = policy(&[], &[], &["bash(rm:*)", "bash", "*"]);
    assert_eq!(command(&p, "rm x"), decided(Decision::Deny, "bash(rm:*)"));
    assert_eq!(command(&p, "ls"), decided(Decision::Deny, "bash"));
}

#[test]
fn decisions_order_from_permissive_to_strict() {
    assert!(Decision::Allow < Decision::Ask && Decision::Ask < Decision::Deny);
    assert_eq!(
        [Decision::Allow, Decision::Ask, Decision::Deny].map(|d| d.to_string()),
        ["allow", "ask", "deny"]
    );
}

// ---- secret files ----

#[test]
fn secret_files_are_denied_by_default_at_any_depth() {
    let p = policy(&[], &[], &[]);
    let cases = [
        (".env", ".env"),
        ("app/.env", ".env"),
        ("/work/proj/.env", ".env"),
        ("./a/../.env", ".env"),
        ("../other/.env", ".env"),
        (".env.local", ".env.*"),
        ("deploy/.env.production", ".env.*"),
        (".env.example.local", ".env.*"),
        ("certs/server.pem", "*.pem"),
        ("tls.key", "*.key"),
        ("/home/u/.ssh/id_rsa", "id_rsa*"),
        ("backup/id_ed25519", "id_ed25519*"),
        ("id_ecdsa_sk", "id_ecdsa*"),
        ("id_dsa", "id_dsa*"),
        ("~/.aws/credentials", ".aws/credentials"),
        ("/root/.aws/config", ".aws/config"),
        (
            "~/.config/gcloud/application_default_credentials.json",
            ".config/gcloud/**",
        ),
        (".azure/accessTokens.json", ".azure/**"),
        ("/home/u/.docker/config.json", ".docker/config.json"),
        ("~/.kube/config", ".kube/config"),
        ("~/.netrc", ".netrc"),
        (".npmrc", ".npmrc"),
        ("~/.pypirc", ".pypirc"),
        ("~/.git-credentials", ".git-credentials"),
        ("cert.p12", "*.p12"),
        ("cert.pfx", "*.pfx"),
        ("android/release.keystore", "*.keystore"),
        ("~/.ssh/config", ".ssh/**"),
        ("~/.ssh/authorized_keys", ".ssh/**"),
    ];
    for (path, label) in cases {
        assert_eq!(
            read(&p, path),
            decided(
                Decision::Deny,
                &format!("deny secret file {label} (built-in)")
            ),
            "{path}"
        );
    }
}

#[test]
fn harmless_neighbours_of_secret_files_are_allowed() {
    let p = policy(&[], &[], &[]);
    for path in [
        ".env.example",
        "app/.env.sample",
        ".env.template",
        ".envrc",
        "env",
        "src/environment.rs",
        "~/.ssh/id_rsa.pub",
        "keys/id_ed25519.pub",
        "~/.ssh/known_hosts",
        "docs/keys.md",
        "monkey.txt",
        ".aws/README",
        ".kube/cache/x",
    ] {
        assert_eq!(read(&p, path), allowed_by_default(), "{path}");
    }
}

#[test]
fn secret_defaults_apply_only_to_file_tools() {
    let p = policy(&[], &[], &[]);
    assert_eq!(command(&p, ".env"), allowed_by_default());
    assert_eq!(
        eval(&p, "notes", None, Some(".env"), &["net:http"]),
        allowed_by_default()
    );
    assert_eq!(
        eval(&p, "notes", None, Some(".env"), &["fs:write"]),
        decided(Decision::Deny, "deny secret file .env (built-in)")
    );
    assert_eq!(eval(&p, "read_file", None, None, FS), allowed_by_default());
}

#[test]
fn an_allow_rule_does_not_open_a_secret_file_but_turning_defaults_off_does() {
    let p = policy(&["read_file(.env)"], &[], &[]);
    assert_eq!(
        read(&p, ".env"),
        decided(Decision::Deny, "deny secret file .env (built-in)")
    );
    let p = p.without_secret_defaults();
    assert!(!p.secret_defaults());
    assert_eq!(
        read(&p, ".env"),
        decided(Decision::Allow, "read_file(.env)")
    );
    assert!(Policy::default().secret_defaults());
    assert_eq!(read(&Policy::permissive(), "id_rsa"), allowed_by_default());
}

#[test]
fn a_user_deny_rule_is_reported_before_the_secret_default() {
    let p = policy(&[], &[], &["read_file(**/.env)"]);
    assert_eq!(
        read(&p, "a/.env"),
        decided(Decision::Deny, "read_file(**/.env)")
    );
}

#[test]
fn secret_defaults_beat_ask_rules() {
    let p = policy(&[], &["read_file"], &[]);
    assert_eq!(
        read(&p, "server.pem"),
        decided(Decision::Deny, "deny secret file *.pem (built-in)")
    );
    assert_eq!(read(&p, "server.txt"), decided(Decision::Ask, "read_file"));
}

// ---- config ----

#[test]
fn config_from_toml() {
    let config: PolicyConfig = toml::from_str(
        r#"
        allow = ["bash(cargo test:*)"]
        ask = ["bash(git push:*)"]
        deny = ["web_fetch(domain:example.com)"]
        "#,
    )
    .unwrap();
    assert_eq!(
        config,
        PolicyConfig {
            allow: vec!["bash(cargo test:*)".into()],
            ask: vec!["bash(git push:*)".into()],
            deny: vec!["web_fetch(domain:example.com)".into()],
            secret_defaults: true,
        }
    );
    let p = build(&config).unwrap();
    assert!(p.secret_defaults());
    assert_eq!(
        p.rules()
            .map(|(d, r)| (d, r.to_string()))
            .collect::<Vec<_>>(),
        vec![
            (Decision::Allow, "bash(cargo test:*)".to_string()),
            (Decision::Ask, "bash(git push:*)".to_string()),
            (Decision::Deny, "web_fetch(domain:example.com)".to_string()),
        ]
    );
    let off: PolicyConfig = toml::from_str("secret_defaults = false").unwrap();
    assert!(!build(&off).unwrap().secret_defaults());
    assert_eq!(
        toml::from_str::<PolicyConfig>("").unwrap(),
        PolicyConfig::default()
    );
}

#[test]
fn config_refuses_unknown_keys_and_bad_rules() {
    let err = toml::from_str::<PolicyConfig>("alow = []").unwrap_err();
    assert!(err.to_string().contains("unknown field `alow`"), "{err}");
    let config = PolicyConfig {
        deny: vec!["bash(".into()],
        ..PolicyConfig::default()
    };
    assert_eq!(
        build(&config).unwrap_err(),
        PolicyError::Unbalanced {
            rule: "bash(".into()
        }
    );
}

#[test]
fn config_round_trips_through_toml() {
    let config = PolicyConfig {
        allow: vec!["Read(src/**)".into()],
        ask: vec![],
        deny: vec!["*(**/.env)".into()],
        secret_defaults: false,
    };
    let text = toml::to_string(&config).unwrap();
    assert_eq!(toml::from_str::<PolicyConfig>(&text).unwrap(), config);
}

// ---- properties ----

const TOOLS: &[(&str, Option<&str>, &[&str])] = &[
    ("bash", Some("Bash"), &["exec"]),
    ("read_file", Some("Read"), &["fs:read"]),
    ("write_file", None, &["fs:write"]),
    ("web_fetch", Some("WebFetch"), &["net:http"]),
    ("mcp__db__query", None, &[]),
];

fn arb_specifier() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("*".to_string()),
        "[a-z]{1,6}( [a-z]{1,6})?:\\*",
        "[a-z]{1,6}( [a-z-]{1,6})?",
        "(\\./|/|~/|\\*\\*/)?[a-z.]{1,6}(/\\*\\*)?",
        "domain:(\\*\\.)?[a-z]{1,6}\\.(com|org)",
    ]
}

fn arb_rule() -> impl Strategy<Value = String> {
    let tool = prop_oneof![
        Just("*"),
        Just("bash"),
        Just("Bash"),
        Just("read_file"),
        Just("Read"),
        Just("write_file"),
        Just("web_fetch"),
        Just("mcp__db"),
        Just("mcp__db__query"),
    ];
    (tool, proptest::option::of(arb_specifier())).prop_map(|(t, s)| match s {
        Some(s) => format!("{t}({s})"),
        None => t.to_string(),
    })
}

fn arb_subject() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        "[a-z./~ :*-]{0,30}",
        "(https?://)?[a-z.@:%\\\\\\[\\]0-9]{0,20}(/[a-z]{0,5})?",
    ]
}

/// A permissive policy with every generated rule that parses.
fn lenient(allow: &[String], ask: &[String]) -> Policy {
    let mut p = Policy::permissive();
    for (decision, rules) in [(Decision::Allow, allow), (Decision::Ask, ask)] {
        for rule in rules {
            let _ = p.add(decision, rule);
        }
    }
    p
}

proptest! {
    #[test]
    fn deny_always_wins(
        allow in proptest::collection::vec(arb_rule(), 0..6),
        ask in proptest::collection::vec(arb_rule(), 0..6),
        tool_index in 0..TOOLS.len(),
        subject in arb_subject(),
        deny_form in 0..3usize,
    ) {
        let (tool, alias, permissions) = TOOLS[tool_index];
        let deny = match deny_form {
            0 => tool.to_string(),
            1 => format!("{}(*)", alias.unwrap_or(tool)),
            _ => "*".to_string(),
        };
        let mut p = lenient(&allow, &ask);
        p.add(Decision::Deny, &deny).unwrap();
        let permissions = perms(permissions);
        for subject in [None, Some(subject.as_str())] {
            let req = Request { tool, alias, subject, permissions: &permissions };
            prop_assert_eq!(p.evaluate(&req), decided(Decision::Deny, &deny));
        }
    }

    #[test]
    fn a_matching_specific_deny_wins_over_any_allow(
        allow in proptest::collection::vec(arb_rule(), 0..6),
        ask in proptest::collection::vec(arb_rule(), 0..6),
        words in "[a-z]{1,5}( [a-z]{1,5}){0,3}",
        dir in "[a-z]{1,5}",
        file in "[a-z]{1,5}",
        host in "[a-z]{1,5}",
    ) {
        let first = words.split(' ').next().unwrap_or_default().to_string();
        let cases = [
            ("bash", format!("bash({first}:*)"), words.clone(), "exec"),
            ("read_file", format!("read_file(./{dir}/**)"), format!("{dir}/x/{file}"), "fs:read"),
            ("web_fetch", format!("web_fetch(domain:{host}.com)"), format!("https://a.{host}.com/{file}"), "net:http"),
        ];
        for (tool, deny, subject, permission) in cases {
            let mut p = lenient(&allow, &ask);
            p.add(Decision::Deny, &deny).unwrap();
            let permissions = vec![permission.to_string()];
            let req = Request { tool, alias: None, subject: Some(&subject), permissions: &permissions };
            prop_assert_eq!(p.evaluate(&req).decision, Decision::Deny);
        }
    }

    #[test]
    fn evaluation_never_panics(
        rules in proptest::collection::vec((0..3usize, arb_rule()), 0..8),
        subject in arb_subject(),
        tool_index in 0..TOOLS.len(),
        home in proptest::option::of("/[a-z]{0,4}"),
    ) {
        let mut p = Policy::default()
            .with_kinds(kinds())
            .unwrap()
            .with_roots(["/work/proj", "/"])
            .with_home(home.as_deref().map(Path::new));
        for (d, rule) in &rules {
            let decision = [Decision::Allow, Decision::Ask, Decision::Deny][*d];
            let _ = p.add(decision, rule);
        }
        let (tool, alias, permissions) = TOOLS[tool_index];
        let permissions = perms(permissions);
        let req = Request { tool, alias, subject: Some(&subject), permissions: &permissions };
        let _ = p.evaluate(&req);
        let _ = p.evaluate_commands(&req, subject.split("&&"));
    }

    #[test]
    fn parsing_never_panics(text in any::<String>()) {
        if let Ok(rule) = parse(&text) {
            prop_assert_eq!(rule.text(), text.trim());
            prop_assert!(rule.text().starts_with(rule.tool()));
        }
    }

    #[test]
    fn command_and_path_normalisation_are_idempotent(s in any::<String>()) {
        let once = normalize_command(&s);
        prop_assert_eq!(normalize_command(&once), once.clone());
        let cleaned = clean_relative(&s);
        prop_assert_eq!(clean_relative(&cleaned), cleaned);
    }
}

#[test]
fn every_secret_pattern_compiles() {
    assert_eq!(
        crate::subject::SECRETS.files.len(),
        crate::subject::SECRET_FILES.len()
    );
    assert_eq!(
        crate::subject::SECRETS.set.len(),
        crate::subject::SECRET_FILES.len()
    );
    for (secret, (_, except)) in crate::subject::SECRETS
        .files
        .iter()
        .zip(crate::subject::SECRET_FILES)
    {
        assert_eq!(secret.except.len(), except.len(), "{}", secret.label);
    }
}

/// The full match without the cheap pre-test.
fn secret_label_slow(path: &str) -> Option<&'static str> {
    let secrets = &*crate::subject::SECRETS;
    let name = path.rsplit('/').next().unwrap_or(path);
    secrets.set.matches(path).into_iter().find_map(|i| {
        let secret = secrets.files.get(i)?;
        (!secret.except.iter().any(|e| e.is_match(name))).then_some(secret.label)
    })
}

#[test]
fn the_cheap_secret_test_admits_every_secret_file() {
    for (label, _) in crate::subject::SECRET_FILES {
        let example = label.replace("**", "sub/x").replace('*', "x");
        for path in [
            example.clone(),
            format!("a/b/{example}"),
            format!("/abs/{example}"),
        ] {
            assert!(
                secret_label_slow(&path).is_some(),
                "{path} is not a secret?"
            );
            assert!(crate::subject::might_be_secret(&path), "{path}");
            assert_eq!(
                crate::subject::secret_file_label(&path),
                secret_label_slow(&path),
                "{path}"
            );
        }
    }
}

proptest! {
    #[test]
    fn secret_file_label_agrees_with_the_full_match(
        parts in prop::collection::vec(
            prop::sample::select(vec![
                "src", ".env", ".env.local", ".env.example", "id_rsa", "id_rsa.pub", "key.pem",
                "a.key", ".ssh", "known_hosts", ".aws", "credentials", "config", ".config",
                "gcloud", ".kube", "main.rs", "x.p12", ".npmrc", "notes.txt", ".docker",
                "config.json", "store.keystore", ".azure",
            ]),
            1..6,
        ),
        absolute in any::<bool>(),
    ) {
        let joined = parts.join("/");
        let path = if absolute { format!("/{joined}") } else { joined };
        prop_assert_eq!(crate::subject::secret_file_label(&path), secret_label_slow(&path), "{}", path);
    }
}

// ---- compound commands ----

#[test]
fn allowed_prefix_does_not_cover_the_rest_of_a_list() {
    let p = policy(&["bash(git status:*)"], &[], &[]);
    let eval = command(&p, "git status && rm -rf x");
    assert_eq!(eval, not_covered("rm -rf x"));
    assert_ne!(eval.decision, Decision::Allow);
    assert_eq!(
        command(&p, "git status; git status -s"),
        decided(Decision::Allow, "bash(git status:*)")
    );
}

#[test]
fn allowed_echo_does_not_cover_its_command_substitution() {
    let p = policy(&["bash(echo:*)"], &[], &[]);
    assert_eq!(command(&p, "echo $(rm x)"), not_covered("rm x"));
    assert_eq!(command(&p, "echo \"`rm x`\""), not_covered("rm x"));
    assert_eq!(command(&p, "echo <(rm x)"), not_covered("rm x"));
    assert_eq!(
        command(&p, "echo \"a && b\""),
        decided(Decision::Allow, "bash(echo:*)")
    );
    assert_eq!(
        command(&p, "echo $(echo hi)"),
        decided(Decision::Allow, "bash(echo:*)")
    );
}

#[test]
fn deny_wins_inside_any_construct() {
    let p = policy(&["bash(*)"], &["bash(git push:*)"], &["bash(rm:*)"]);
    let deny = decided(Decision::Deny, "bash(rm:*)");
    for line in [
        "rm -rf x",
        "ls | rm x",
        "(cd a && rm x)",
        "{ ls; rm x; }",
        "echo `rm x`",
        "echo \"$(rm x)\"",
        "git push && echo $(rm x)",
        "if true; then rm x; fi",
        "for f in *; do rm $f; done",
        "f() { rm x; }",
        "X=$(rm x)",
        "FOO=1 rm x",
        "\"rm\" x",
        "\\rm x",
        "ls > $(rm x)",
        "cat <<EOF\n$(rm x)\nEOF",
    ] {
        assert_eq!(command(&p, line), deny, "{line:?}");
    }
    assert_eq!(
        command(&p, "ls && git push origin"),
        decided(Decision::Ask, "bash(git push:*)")
    );
    assert_eq!(
        command(&p, "ls | wc -l"),
        decided(Decision::Allow, "bash(*)")
    );
}

#[test]
fn a_rule_for_every_command_covers_compound_ones() {
    for rule in ["bash", "bash(*)", "Bash"] {
        let p = policy(&[rule], &[], &[]);
        for line in ["a && b | c", "echo $(rm x)", "echo 'unterminated"] {
            assert_eq!(
                command(&p, line),
                decided(Decision::Allow, rule),
                "{rule} {line:?}"
            );
        }
    }
    let p = policy(&[], &[], &["bash"]);
    assert_eq!(command(&p, "ls && pwd"), decided(Decision::Deny, "bash"));
}

#[test]
fn unparseable_command_asks() {
    let p = policy(&["bash(echo:*)"], &[], &[]);
    let ask = decided(Decision::Ask, super::UNPARSED_COMMAND);
    assert_eq!(command(&p, "echo 'unterminated"), ask);
    assert_eq!(command(&p, "echo $(rm x"), ask);
    assert_eq!(command(&p, "$CMD -rf x"), ask);
    // A deny rule that matches the whole line still denies it.
    let p = policy(&["bash(*)"], &[], &["bash(rm:*)"]);
    assert_eq!(
        command(&p, "rm -rf x; echo 'oops"),
        decided(Decision::Deny, "bash(rm:*)")
    );
    assert_eq!(command(&p, "ls; rm -rf x; echo 'oops"), ask);
}

#[test]
fn without_command_rules_shell_calls_stay_allowed() {
    let p = policy(&[], &[], &[]);
    for line in ["rm -rf x", "a && b", "echo 'unterminated"] {
        assert_eq!(command(&p, line), allowed_by_default(), "{line:?}");
    }
    // Rules for other tools do not make the shell an allow list.
    let p = policy(&["read_file(src/**)"], &[], &[]);
    assert_eq!(command(&p, "ls && pwd"), allowed_by_default());
    // Deny or ask rules alone leave unmatched commands allowed.
    let p = policy(&[], &["bash(git push:*)"], &["bash(rm:*)"]);
    assert_eq!(command(&p, "ls && pwd"), allowed_by_default());
}

#[test]
fn prefix_assignments_need_their_own_allow_rule() {
    let p = policy(&["bash(make:*)", "bash(RUST_LOG=debug cargo:*)"], &[], &[]);
    assert_eq!(
        command(&p, "make all"),
        decided(Decision::Allow, "bash(make:*)")
    );
    assert_eq!(
        command(&p, "PATH=/tmp/evil make all"),
        not_covered("PATH=/tmp/evil make all")
    );
    assert_eq!(
        command(&p, "RUST_LOG=debug cargo test"),
        decided(Decision::Allow, "bash(RUST_LOG=debug cargo:*)")
    );
    assert_eq!(command(&p, "X=$(make)"), not_covered("X=$(make)"));
}

#[test]
fn run_command_is_split_too() {
    let p = policy(&["run_command(ls:*)"], &[], &["run_command(rm:*)"]);
    assert_eq!(
        eval(&p, "run_command", None, Some("ls && rm -rf /"), &[]),
        decided(Decision::Deny, "run_command(rm:*)")
    );
    assert_eq!(
        eval(&p, "run_command", None, Some("ls | pwd"), &[]),
        not_covered("pwd")
    );
}

/// Operators joining commands (no newline: after a long pipeline the grammar can read
/// on across one, and the line is then refused, which asks).
const OPERATORS: [&str; 5] = [" && ", " || ", "; ", " | ", " & "];

fn join(commands: &[String], ops: &[usize]) -> String {
    let mut line = String::new();
    for (i, command) in commands.iter().enumerate() {
        if i > 0 {
            line.push_str(OPERATORS[ops[i - 1] % OPERATORS.len()]);
        }
        line.push_str(command);
    }
    line
}

fn allowed_command() -> impl Strategy<Value = String> {
    (
        prop::sample::select(vec!["git status", "cargo test", "ls", "echo"]),
        prop::collection::vec("[a-z0-9-]{1,6}", 0..3),
        prop::sample::select(vec!["", "\"$(ls)\"", "`echo x`", "'a && b'", "<(ls)"]),
    )
        .prop_map(|(name, args, tail)| {
            let mut command = name.to_string();
            for arg in args {
                command.push(' ');
                command.push_str(&arg);
            }
            if !tail.is_empty() {
                command.push(' ');
                command.push_str(tail);
            }
            command
        })
}

proptest! {
    #[test]
    fn allowed_parts_joined_stay_allowed_and_one_denied_part_denies(
        commands in prop::collection::vec(allowed_command(), 1..6),
        ops in prop::collection::vec(0usize..6, 6),
        at in 0usize..6,
        wrap in 0usize..4,
    ) {
        let p = policy(
            &["bash(git status:*)", "bash(cargo test:*)", "bash(ls:*)", "bash(echo:*)"],
            &[],
            &["bash(rm:*)"],
        );
        let line = join(&commands, &ops);
        prop_assert_eq!(command(&p, &line).decision, Decision::Allow, "{:?}", line);

        let denied = ["rm -rf x", "(rm x)", "echo $(rm x)", "echo `rm x`"][wrap];
        let mut with_denied = commands.clone();
        with_denied.insert(at.min(commands.len()), denied.to_string());
        let line = join(&with_denied, &ops);
        prop_assert_eq!(command(&p, &line), decided(Decision::Deny, "bash(rm:*)"), "{:?}", line);
    }
}

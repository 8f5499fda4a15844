#![allow(clippy::unwrap_used)]

use std::path::Path;

use pretty_assertions::assert_eq;
use proptest::prelude::*;

use super::tests::{
    FS, allowed_by_default, build, command, decided, eval, fetch, kinds, not_covered, parse, perms,
    policy, read,
};
use super::{Decision, Policy, PolicyConfig, PolicyError, Request};
use crate::command::normalize_command;
use crate::subject::clean_relative;

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
            config_defaults: true,
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
        config_defaults: false,
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

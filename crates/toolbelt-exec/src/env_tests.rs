#![allow(clippy::unwrap_used)]

use pretty_assertions::assert_eq;

use super::*;

fn server() -> Vec<(&'static str, &'static str)> {
    vec![
        ("PATH", "/usr/bin"),
        ("HOME", "/home/me"),
        ("LC_ALL", "C.UTF-8"),
        ("OPENAI_API_KEY", "sk-1"),
        ("GITHUB_TOKEN", "ghp"),
        ("DB_PASSWORD", "pw"),
        ("TOOLBELT_TOKEN", "t"),
        ("EDITOR", "vim"),
        ("PAGER", "less"),
    ]
}

fn names(env: &[(String, String)]) -> Vec<&str> {
    env.iter().map(|(n, _)| n.as_str()).collect()
}

#[test]
fn the_core_set_without_secrets_and_non_interactive() {
    let env = EnvPolicy::default().build(server(), &BTreeMap::new());
    let names = names(&env);
    assert!(names.contains(&"PATH") && names.contains(&"HOME") && names.contains(&"LC_ALL"));
    for secret in [
        "OPENAI_API_KEY",
        "GITHUB_TOKEN",
        "DB_PASSWORD",
        "TOOLBELT_TOKEN",
        "EDITOR",
    ] {
        assert!(!names.contains(&secret), "{secret} inherited");
    }
    let get = |n: &str| env.iter().find(|(k, _)| k == n).map(|(_, v)| v.as_str());
    assert_eq!(get("PAGER"), Some("cat"));
    assert_eq!(get("GIT_TERMINAL_PROMPT"), Some("0"));
}

#[test]
fn all_still_scrubs_secrets_and_the_call_wins() {
    let policy = EnvPolicy {
        inherit: Inherit::All,
        include: vec!["GITHUB_TOKEN".into()],
        exclude: vec!["ED*".into()],
        ..EnvPolicy::default()
    };
    let call = BTreeMap::from([("PAGER".to_string(), "more".to_string())]);
    let env = policy.build(server(), &call);
    let names = names(&env);
    assert!(names.contains(&"GITHUB_TOKEN"), "included explicitly");
    assert!(!names.contains(&"OPENAI_API_KEY") && !names.contains(&"EDITOR"));
    assert!(env.contains(&("PAGER".into(), "more".into())));
}

#[test]
fn secret_looking_names() {
    for name in [
        "AWS_SECRET_ACCESS_KEY",
        "npm_token",
        "Password",
        "SSH_AUTH_SOCK",
    ] {
        assert!(looks_secret(name), "{name}");
    }
    for name in ["PATH", "HOME", "LANG", "CARGO_HOME"] {
        assert!(!looks_secret(name), "{name}");
    }
}

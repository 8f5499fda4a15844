#![allow(clippy::unwrap_used)]

use std::path::Path;

use pretty_assertions::assert_eq;
use proptest::prelude::*;
use toolbelt_core::{Decision, Evaluation, Request};

use crate::{Policy, PolicyConfig, PolicyError};

/// A policy with fixed roots and home, so no test depends on the machine.
fn at_proj(policy: Policy) -> Policy {
    policy
        .with_roots(["/work/proj"])
        .with_home(Some(Path::new("/home/u")))
}

/// How `policy` judges the tool `tool`, holding `permission`, on `path`.
fn on(policy: &Policy, tool: &str, permission: &str, path: Option<&str>) -> Evaluation {
    let permissions = [permission.to_string()];
    policy.evaluate(&Request {
        tool,
        alias: None,
        subject: path,
        permissions: &permissions,
    })
}

fn write(policy: &Policy, path: &str) -> Evaluation {
    on(policy, "write_file", "fs:write", Some(path))
}

fn denied(label: &str) -> Evaluation {
    Evaluation {
        decision: Decision::Deny,
        rule: Some(label.to_string()),
    }
}

const CONFIG: &str = "deny toolbelt configuration toolbelt.toml (built-in)";
const HOOKS: &str = "deny toolbelt configuration .toolbelt/hooks (built-in)";

#[test]
fn the_workspace_configuration_is_denied_to_tools_that_write() {
    let p = at_proj(Policy::default());
    for path in [
        "toolbelt.toml",
        "./toolbelt.toml",
        "sub/../toolbelt.toml",
        "/work/proj/toolbelt.toml",
        "../proj/toolbelt.toml",
        "Toolbelt.TOML",
    ] {
        assert_eq!(write(&p, path), denied(CONFIG), "{path}");
    }
    for path in [
        ".toolbelt/hooks",
        ".toolbelt/hooks/",
        ".toolbelt/hooks/pre_tool_use.sh",
        "/work/proj/.toolbelt/hooks/deep/x.py",
    ] {
        assert_eq!(write(&p, path), denied(HOOKS), "{path}");
    }
}

#[test]
fn neighbours_of_the_configuration_stay_writable() {
    let p = at_proj(Policy::default());
    for path in [
        "sub/toolbelt.toml",
        "docs/examples/toolbelt.toml",
        "toolbelt.toml.bak",
        ".toolbelt/agents/reviewer.md",
        ".toolbelt/skills/x/SKILL.md",
        ".toolbelt/hooksx",
        "/elsewhere/toolbelt.toml",
        "/work/proj2/toolbelt.toml",
    ] {
        assert_eq!(write(&p, path), Evaluation::allowed(), "{path}");
    }
}

#[test]
fn reading_the_configuration_stays_allowed() {
    let p = at_proj(Policy::default());
    assert_eq!(
        on(&p, "read_file", "fs:read", Some("toolbelt.toml")),
        Evaluation::allowed()
    );
    assert_eq!(
        on(&p, "grep", "fs:read", Some(".toolbelt/hooks/x.sh")),
        Evaluation::allowed()
    );
    // A tool that declares no file permission, or writes without a subject.
    assert_eq!(
        on(&p, "note", "store:write", Some("toolbelt.toml")),
        Evaluation::allowed()
    );
    assert_eq!(
        on(&p, "apply_patch", "fs:write", None),
        Evaluation::allowed()
    );
    // A command is judged by its own rules, not as a path.
    assert_eq!(
        on(&p, "bash", "shell:exec", Some("echo x >> toolbelt.toml")),
        Evaluation::allowed()
    );
}

#[test]
fn every_root_has_its_configuration_protected() {
    let p = Policy::default().with_roots(["/a", "/b"]);
    assert_eq!(write(&p, "/b/toolbelt.toml"), denied(CONFIG));
    assert_eq!(write(&p, "/b/.toolbelt/hooks/x"), denied(HOOKS));
    assert_eq!(write(&p, "/c/toolbelt.toml"), Evaluation::allowed());
}

#[test]
fn rules_do_not_open_the_configuration_and_a_user_deny_is_reported_first() {
    let p = at_proj(
        Policy::from_rules(
            &["write_file(toolbelt.toml)", "write_file"],
            &["write_file(./.toolbelt/**)"],
            &[],
        )
        .unwrap(),
    );
    assert_eq!(write(&p, "toolbelt.toml"), denied(CONFIG));
    assert_eq!(write(&p, ".toolbelt/hooks/a"), denied(HOOKS));
    let p = at_proj(Policy::from_rules(&[], &[], &["write_file(*.toml)"]).unwrap());
    assert_eq!(write(&p, "toolbelt.toml"), denied("write_file(*.toml)"));
}

#[test]
fn the_defaults_are_on_without_any_rules_and_can_be_turned_off() {
    // What the tools get when the configuration has no `[permissions]` table.
    assert!(Policy::default().config_defaults());
    assert!(PolicyConfig::default().build().unwrap().config_defaults());
    let off = at_proj(Policy::default().without_config_defaults());
    assert!(!off.config_defaults());
    assert_eq!(write(&off, "toolbelt.toml"), Evaluation::allowed());
    // Secret files are another default.
    assert!(off.secret_defaults());
    assert_eq!(
        write(&off, ".env").rule.as_deref(),
        Some("deny secret file .env (built-in)")
    );
    let permissive = at_proj(Policy::permissive());
    assert!(!permissive.config_defaults());
    assert_eq!(
        write(&permissive, ".toolbelt/hooks/x"),
        Evaluation::allowed()
    );
}

#[test]
fn the_permissions_table_has_a_switch() {
    let config: PolicyConfig = toml::from_str("config_defaults = false").unwrap();
    assert!(!config.config_defaults);
    assert!(config.secret_defaults);
    assert!(!config.build().unwrap().config_defaults());
    let config: PolicyConfig = toml::from_str("deny = []").unwrap();
    assert!(config.build().unwrap().config_defaults());
}

#[test]
fn protected_paths_are_denied_to_tools_that_write() {
    let p = at_proj(Policy::default())
        .with_protected_paths(["scripts/check.sh", "/etc/tb/hooks", "~/hooks/x.sh"])
        .unwrap();
    let script = denied("deny hook script scripts/check.sh (built-in)");
    assert_eq!(write(&p, "scripts/check.sh"), script);
    assert_eq!(write(&p, "./scripts/../scripts/check.sh"), script);
    assert_eq!(write(&p, "/work/proj/scripts/check.sh"), script);
    let dir = denied("deny hook script /etc/tb/hooks (built-in)");
    assert_eq!(write(&p, "/etc/tb/hooks"), dir);
    assert_eq!(write(&p, "/etc/tb/hooks/a/b.sh"), dir);
    let home = denied("deny hook script ~/hooks/x.sh (built-in)");
    assert_eq!(write(&p, "~/hooks/x.sh"), home);
    assert_eq!(write(&p, "/home/u/hooks/x.sh"), home);
    for path in [
        "scripts/check.sh.bak",
        "scripts/other.sh",
        "/etc/tb/hooksx",
        "/etc/tb",
        "/home/u/hooks/y.sh",
    ] {
        assert_eq!(write(&p, path), Evaluation::allowed(), "{path}");
    }
    assert_eq!(
        on(&p, "read_file", "fs:read", Some("scripts/check.sh")),
        Evaluation::allowed()
    );
    // They stay protected without the built-in defaults.
    let p = p.without_config_defaults();
    assert_eq!(write(&p, "scripts/check.sh"), script);
    assert_eq!(
        p.protected_paths().collect::<Vec<_>>(),
        ["scripts/check.sh", "/etc/tb/hooks", "~/hooks/x.sh"]
    );
}

#[test]
fn protecting_the_root_covers_the_workspace_only() {
    let p = at_proj(Policy::default())
        .with_protected_paths(["."])
        .unwrap();
    assert_eq!(
        write(&p, "src/main.rs"),
        denied("deny hook script . (built-in)")
    );
    assert_eq!(write(&p, "/elsewhere/x"), Evaluation::allowed());
}

#[test]
fn protected_paths_are_added_once_and_bad_ones_refused() {
    let p = Policy::default()
        .with_protected_paths(["a", "a"])
        .unwrap()
        .with_protected_paths(["a"])
        .unwrap();
    assert_eq!(p.protected_paths().len(), 1);
    assert_eq!(
        Policy::default().with_protected_paths([""]).unwrap_err(),
        PolicyError::BadProtectedPath {
            path: "".into(),
            reason: "empty"
        }
    );
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        let bad = Path::new(std::ffi::OsStr::from_bytes(b"hooks/\xff.sh"));
        let err = Policy::default().with_protected_paths([bad]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "the protected path \"hooks/\\xFF.sh\" is not valid UTF-8; give a file or directory \
             as a UTF-8 path"
        );
    }
}

proptest! {
    #[test]
    fn no_rule_opens_a_hook_script(
        allow in proptest::collection::vec("(write_file|\\*|edit_file)(\\((\\*|\\*\\*|\\.toolbelt/\\*\\*|[a-z.]{1,8})\\))?", 0..4),
        name in "[a-zA-Z0-9._-]{1,10}",
        form in 0..3usize,
    ) {
        // `.toolbelt/hooks/..` is `.toolbelt`.
        prop_assume!(!name.chars().all(|c| c == '.'));
        let p = at_proj(Policy::from_rules(&allow, &[], &[]).unwrap());
        let path = match form {
            0 => format!(".toolbelt/hooks/{name}"),
            1 => format!("/work/proj/.toolbelt/hooks/{name}"),
            _ => format!("./.toolbelt/./hooks/{name}"),
        };
        prop_assert_eq!(write(&p, &path), denied(HOOKS));
    }
}

/// How a shell tool's `command` is judged by `policy` (its kinds declare `bash`).
fn shell(policy: &Policy, command: &str) -> Evaluation {
    policy.evaluate(&Request {
        tool: "bash",
        alias: None,
        subject: Some(command),
        permissions: &["shell:exec".to_string()],
    })
}

fn with_bash(policy: Policy) -> Policy {
    let mut kinds = crate::ToolKinds::new();
    kinds.declare("bash", toolbelt_core::Subject::Command);
    at_proj(policy).with_kinds(kinds).unwrap()
}

#[test]
fn a_shell_line_that_writes_the_configuration_is_denied() {
    let p = with_bash(
        Policy::default()
            .with_protected_paths(["/work/proj/scripts/guard.sh"])
            .unwrap(),
    );
    for command in [
        "echo '[permissions]' >> toolbelt.toml",
        "cd . && sed -i s/deny/allow/ toolbelt.toml",
        "cat x | tee ./toolbelt.toml",
    ] {
        assert_eq!(shell(&p, command), denied(CONFIG), "{command}");
    }
    assert_eq!(
        shell(&p, "cp /tmp/x .toolbelt/hooks/check.sh"),
        denied(HOOKS)
    );
    assert_eq!(
        shell(&p, "echo exit 0 > scripts/guard.sh"),
        denied("deny hook script /work/proj/scripts/guard.sh (built-in)")
    );
    // Reading them, and writing elsewhere, is not touched.
    for command in [
        "cat toolbelt.toml",
        "grep -r hooks .toolbelt/hooks",
        "cargo build -p toolbelt > build.log",
        "echo x >> notes.txt",
    ] {
        assert_eq!(shell(&p, command).decision, Decision::Allow, "{command}");
    }
    // Turned off with the defaults.
    let off = with_bash(Policy::default().without_config_defaults());
    assert_eq!(
        shell(&off, "echo x >> toolbelt.toml").decision,
        Decision::Allow
    );
}

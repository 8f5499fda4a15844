#![allow(clippy::unwrap_used)]

use pretty_assertions::assert_eq;
use toolbelt_core::{Authorizer, Decision, Guard, Request};

use crate::Policy;
use crate::policy::tests::kinds;

/// A policy with the guard on and these allow rules.
fn guarded(allow: &[&str]) -> Policy {
    Policy::from_rules(allow, &[], &[])
        .unwrap()
        .with_kinds(kinds())
        .unwrap()
        .with_destructive_guard(true)
}

/// The guard's hold on `command` run by the shell tool `tool` (exposed as `alias`).
fn hold(policy: &Policy, tool: &str, alias: Option<&str>, command: &str) -> Option<Guard> {
    policy.guard(&Request {
        tool,
        alias,
        subject: Some(command),
        permissions: &[],
    })
}

fn bash(policy: &Policy, command: &str) -> Option<Guard> {
    hold(policy, "bash", None, command)
}

#[test]
fn off_by_default_and_only_for_shell_tools() {
    let plain = Policy::permissive().with_kinds(kinds()).unwrap();
    assert!(!plain.destructive_guard());
    assert_eq!(bash(&plain, "rm -rf build"), None);
    let policy = guarded(&[]);
    assert!(policy.destructive_guard());
    // A file tool's path is not a command.
    assert_eq!(hold(&policy, "write_file", None, "rm -rf build"), None);
    assert_eq!(bash(&policy, "rm notes.txt"), None);
}

#[test]
fn a_destructive_command_is_held_with_what_it_destroys() {
    let policy = guarded(&[]);
    assert_eq!(
        bash(&policy, "cd web && rm -rf node_modules"),
        Some(Guard {
            rule: "ask before rm -r (built-in guard)".into(),
            danger: "it deletes node_modules and everything in it".into(),
            instead: "delete single files by name (rm FILE, without -r), or ask the user to remove the directory".into(),
        })
    );
    // The rules themselves are unchanged: allowed, but held.
    let req = Request {
        tool: "bash",
        alias: None,
        subject: Some("git reset --hard"),
        permissions: &[],
    };
    assert_eq!(policy.evaluate(&req).decision, Decision::Allow);
    let held = Authorizer::guard(&policy, &req).unwrap();
    assert_eq!(held.rule, "ask before git reset --hard (built-in guard)");
}

#[test]
fn an_allow_rule_naming_the_command_lets_it_run() {
    let policy = guarded(&["bash(rm -rf build)", "Bash(git clean:*)"]);
    assert_eq!(bash(&policy, "rm -rf build"), None);
    assert!(bash(&policy, "rm -rf dist").is_some());
    // Under the name a profile gives the tool too.
    assert_eq!(hold(&policy, "bash", Some("Bash"), "git clean -fdx"), None);
    // Each destructive part needs its own rule.
    let held = bash(&policy, "rm -rf build && rm -rf dist").unwrap();
    assert_eq!(held.danger, "it deletes dist and everything in it");
}

#[test]
fn a_rule_for_the_whole_tool_is_not_a_rule_for_the_command() {
    for allow in [["bash"], ["bash(*)"]] {
        let policy = guarded(&allow);
        assert!(bash(&policy, "rm -rf build").is_some(), "{allow:?}");
    }
}

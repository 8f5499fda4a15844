#![allow(clippy::unwrap_used)]

use serde_json::json;

use super::*;

fn named(names: &[&str]) -> Vec<(String, HookEvent)> {
    names
        .iter()
        .map(|n| (n.to_string(), HookEvent::PreToolUse))
        .collect()
}

fn rewrite(patch: serde_json::Value) -> Answer {
    let mut a = Answer::outcome("rewrote", None);
    a.rewrite = patch.as_object().cloned();
    a
}

#[test]
fn rewrites_apply_in_configuration_order_and_a_null_removes() {
    let args = json!({"command": "echo original", "timeout_ms": 5});
    let verdict = compose(
        &named(&["a", "b"]),
        vec![
            rewrite(json!({"command": "echo A", "timeout_ms": null})),
            rewrite(json!({"command": "echo B"})),
        ],
        Some(&args),
    );
    let rewrite = verdict.rewrite.unwrap();
    assert_eq!(rewrite.arguments, json!({"command": "echo B"}));
    assert_eq!(rewrite.hook, "b");
    assert_eq!(verdict.runs.len(), 2);
    assert_eq!(verdict.runs[0].name, "a");
}

#[test]
fn any_deny_wins_whatever_its_place() {
    let deny = |hook: &str| {
        Answer::decided(
            HookDecision::Deny {
                hook: hook.into(),
                reason: "no".into(),
            },
            "denied",
        )
    };
    let allow = || Answer::decided(HookDecision::Allow, "allowed");
    let ask = || {
        Answer::decided(
            HookDecision::Ask {
                hook: "asker".into(),
                reason: None,
            },
            "asked",
        )
    };
    let verdict = compose(
        &named(&["x", "y", "z"]),
        vec![allow(), ask(), deny("z")],
        None,
    );
    assert!(matches!(verdict.decision, HookDecision::Deny { ref hook, .. } if hook == "z"));
    let verdict = compose(&named(&["x", "y"]), vec![allow(), ask()], None);
    assert!(matches!(verdict.decision, HookDecision::Ask { .. }));
    // The first deny in configuration order is the one named.
    let verdict = compose(&named(&["p", "q"]), vec![deny("p"), deny("q")], None);
    assert!(matches!(verdict.decision, HookDecision::Deny { ref hook, .. } if hook == "p"));
}

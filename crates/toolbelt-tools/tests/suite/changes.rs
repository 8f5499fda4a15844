//! What each tool says a call may change, for its checkpoint: the file tools name
//! their paths, a read-only shell command changes nothing, everything else that
//! may write says `Unknown`.

use std::path::PathBuf;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tempfile::TempDir;
use toolbelt_core::{Changes, Registry};

use super::builtins;

/// What `tool` (as registered) says a call with `args` may change.
fn changes(registry: &Registry, tool: &str, args: &Value) -> Changes {
    registry
        .get(tool)
        .unwrap_or_else(|| panic!("{tool} is not registered"))
        .changes(args)
}

fn paths(list: &[&str]) -> Changes {
    Changes::Paths(list.iter().map(PathBuf::from).collect())
}

#[test]
fn bash_changes_nothing_only_for_read_only_commands() {
    let dir = TempDir::new().unwrap();
    let registry = builtins(dir.path());
    for (command, want) in [
        ("rg foo; git status", Changes::Nothing),
        ("ls | wc -l", Changes::Nothing),
        ("git status 2>/dev/null", Changes::Nothing),
        ("cat a && rm b", Changes::Unknown),
        ("echo x > a.txt", Changes::Unknown),
        ("git diff > p.patch", Changes::Unknown),
        ("find . -delete", Changes::Unknown),
        ("echo $(rm x)", Changes::Unknown),
        ("cargo test", Changes::Unknown),
        ("echo 'unterminated", Changes::Unknown),
    ] {
        assert_eq!(
            changes(&registry, "bash", &json!({"command": command})),
            want,
            "{command:?}"
        );
    }
}

#[test]
fn bash_in_the_background_and_with_its_own_env() {
    let dir = TempDir::new().unwrap();
    let registry = builtins(dir.path());
    let bash = |args: Value| changes(&registry, "bash", &args);
    assert_eq!(
        bash(json!({"command": "tail -f log.txt", "run_in_background": true})),
        Changes::Nothing
    );
    assert_eq!(
        bash(json!({"command": "npm run dev", "run_in_background": true})),
        Changes::Unknown
    );
    assert_eq!(
        bash(json!({"command": "ls", "working_dir": "src", "timeout": 5})),
        Changes::Nothing
    );
    // Variables of its own can change what a read-only line runs.
    assert_eq!(
        bash(json!({"command": "git diff", "env": ["GIT_EXTERNAL_DIFF=./x.sh"]})),
        Changes::Unknown
    );
    assert_eq!(
        bash(json!({"command": "git diff", "env": []})),
        Changes::Nothing
    );
    assert_eq!(bash(json!({})), Changes::Unknown);
}

#[test]
fn the_other_shell_tools() {
    let dir = TempDir::new().unwrap();
    let registry = builtins(dir.path());
    let id = json!({"shell_id": "shell_1"});
    assert_eq!(changes(&registry, "bash_output", &id), Changes::Nothing);
    assert_eq!(
        changes(&registry, "list_shells", &json!({})),
        Changes::Nothing
    );
    assert_eq!(changes(&registry, "kill_shell", &id), Changes::Nothing);
    assert_eq!(
        changes(
            &registry,
            "write_stdin",
            &json!({"shell_id": "shell_1", "chars": "y\n"})
        ),
        Changes::Unknown
    );
    assert_eq!(
        changes(
            &registry,
            "write_stdin",
            &json!({"shell_id": "shell_1", "chars": ""})
        ),
        Changes::Nothing
    );
}

#[test]
fn file_tools_name_their_path() {
    let dir = TempDir::new().unwrap();
    let registry = builtins(dir.path());
    assert_eq!(
        changes(
            &registry,
            "write_file",
            &json!({"path": "a/b/new.txt", "content": "x"})
        ),
        paths(&["a/b/new.txt"])
    );
    assert_eq!(
        changes(
            &registry,
            "edit_file",
            &json!({"path": "src/main.rs", "old_string": "a", "new_string": "b"})
        ),
        paths(&["src/main.rs"])
    );
    let abs = dir.path().join("notes.md");
    assert_eq!(
        changes(
            &registry,
            "multi_edit",
            &json!({
                "path": abs.to_str().unwrap(),
                "edits": [{"old_string": "a", "new_string": "b"}]
            })
        ),
        Changes::Paths(vec![abs])
    );
    // A dry run writes nothing.
    for (tool, args) in [
        (
            "write_file",
            json!({"path": "a.txt", "content": "x", "dry_run": true}),
        ),
        (
            "edit_file",
            json!({"path": "a.txt", "old_string": "a", "new_string": "b", "dry_run": true}),
        ),
        (
            "multi_edit",
            json!({"path": "a.txt", "edits": [{"old_string": "a", "new_string": "b"}], "dry_run": true}),
        ),
    ] {
        assert_eq!(changes(&registry, tool, &args), Changes::Nothing, "{tool}");
    }
    // Read-only file tools change nothing.
    assert_eq!(
        changes(&registry, "read_file", &json!({"path": "a.txt"})),
        Changes::Nothing
    );
    assert_eq!(changes(&registry, "list_dir", &json!({})), Changes::Nothing);
}

#[test]
fn apply_patch_names_every_path_it_touches() {
    let dir = TempDir::new().unwrap();
    let registry = builtins(dir.path());
    let patch = "*** Begin Patch\n\
                 *** Add File: src/new.rs\n\
                 +pub fn hello() {}\n\
                 *** Delete File: src/old.rs\n\
                 *** Update File: src/lib.rs\n\
                 @@\n\
                 -a\n\
                 +b\n\
                 *** Update File: src/util.rs\n\
                 *** Move to: src/helpers/util.rs\n\
                 @@\n\
                 -x\n\
                 +y\n\
                 *** Update File: src/lib.rs\n\
                 @@\n\
                 -c\n\
                 +d\n\
                 *** End Patch\n";
    assert_eq!(
        changes(&registry, "apply_patch", &json!({"patch": patch})),
        paths(&[
            "src/new.rs",
            "src/old.rs",
            "src/lib.rs",
            "src/util.rs",
            "src/helpers/util.rs"
        ])
    );
    // A pure rename, in a heredoc wrapper the parser forgives.
    let rename = "apply_patch <<'EOF'\n*** Begin Patch\n*** Update File: a.txt\n*** Move to: b.txt\n*** End Patch\nEOF\n";
    assert_eq!(
        changes(&registry, "apply_patch", &json!({"patch": rename})),
        paths(&["a.txt", "b.txt"])
    );
    assert_eq!(
        changes(
            &registry,
            "apply_patch",
            &json!({"patch": patch, "dry_run": true})
        ),
        Changes::Nothing
    );
    // A patch that does not parse (a unified diff): the call will fail; walk anyway.
    let unified = "--- a/x.txt\n+++ b/x.txt\n@@ -1 +1 @@\n-a\n+b\n";
    assert_eq!(
        changes(&registry, "apply_patch", &json!({"patch": unified})),
        Changes::Unknown
    );
}

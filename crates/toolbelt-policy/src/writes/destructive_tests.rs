#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use pretty_assertions::assert_eq;

use super::*;

/// The kind and command found in `line`.
fn found(line: &str) -> Option<(DestructiveKind, String)> {
    destructive(line).map(|d| (d.kind, d.command))
}

fn kind(line: &str) -> Option<DestructiveKind> {
    destructive(line).map(|d| d.kind)
}

#[test]
fn recursive_rm_in_every_spelling() {
    for line in [
        "rm -rf build",
        "rm -fr build",
        "rm -r -f build",
        "rm -R build",
        "rm --recursive build",
        "rm -vrf build",
        "rm -f -- -r build",
        "rm -rf src/*",
        "rm -rf *",
        "rm -rf \"$DIR\"",
        "/bin/rm -rf build",
        "\\rm -rf build",
        "\"rm\" -rf build",
    ] {
        let got = kind(line);
        // `rm -f -- -r build` removes a file named `-r`: not recursive.
        let want = (line != "rm -f -- -r build").then_some(DestructiveKind::RecursiveRm);
        assert_eq!(got, want, "{line}");
    }
    let d = destructive("rm -rf build dist").unwrap();
    assert_eq!(d.reason, "it deletes build, dist and everything in them");
    assert_eq!(
        destructive("rm -rf a b c d e").unwrap().reason,
        "it deletes a, b, c and 2 more and everything in them"
    );
    assert_eq!(
        destructive("rm -rf build").unwrap().reason,
        "it deletes build and everything in it"
    );
}

#[test]
fn plain_rm_and_reading_commands_are_not_destructive() {
    for line in [
        "rm file.txt",
        "rm -f a.o b.o",
        "rm -- -rf",
        "rmdir empty",
        "git status",
        "git reset",
        "git reset --soft HEAD~1",
        "git reset HEAD file.txt",
        "git checkout main",
        "git checkout -b feature",
        "git checkout -- src/lib.rs",
        "git restore --staged .",
        "git restore src/lib.rs",
        "git clean -n",
        "git clean -nd",
        "git clean --dry-run",
        "git log --oneline .git",
        "cat .gitignore",
        "ls .github",
        "cat .git/HEAD",
        "ls -la .git",
        "grep -r TODO .",
        "find . -name '*.rs'",
        "find . -path ./.git -prune -o -print",
        "echo rm -rf build",
        "echo 'rm -rf /' > notes.txt",
        "cargo test",
        "",
    ] {
        assert_eq!(found(line), None, "{line}");
    }
}

#[test]
fn git_commands_that_throw_work_away() {
    for (line, want) in [
        ("git reset --hard", DestructiveKind::GitResetHard),
        ("git reset --hard HEAD~3", DestructiveKind::GitResetHard),
        ("git -C repo reset --hard", DestructiveKind::GitResetHard),
        (
            "git -c core.pager=cat reset --hard origin/main",
            DestructiveKind::GitResetHard,
        ),
        ("git --no-pager reset --hard", DestructiveKind::GitResetHard),
        ("git clean", DestructiveKind::GitClean),
        ("git clean -fd", DestructiveKind::GitClean),
        ("git clean -fdx", DestructiveKind::GitClean),
        ("git clean -f -x -d", DestructiveKind::GitClean),
        ("git checkout .", DestructiveKind::GitDiscard),
        ("git checkout -- .", DestructiveKind::GitDiscard),
        ("git checkout HEAD -- .", DestructiveKind::GitDiscard),
        ("git checkout -f main", DestructiveKind::GitDiscard),
        ("git restore .", DestructiveKind::GitDiscard),
        (
            "git restore --worktree --staged .",
            DestructiveKind::GitDiscard,
        ),
        ("git restore :/", DestructiveKind::GitDiscard),
        (
            "git switch --discard-changes main",
            DestructiveKind::GitDiscard,
        ),
    ] {
        assert_eq!(kind(line), Some(want), "{line}");
    }
}

#[test]
fn anything_that_changes_dot_git() {
    for line in [
        "rm .git/index.lock",
        "mv .git .git-old",
        "cp -r hooks/ .git/hooks/",
        "chmod -R 777 .git",
        "touch vendor/lib/.git/config",
        "sed -i s/a/b/ .git/config",
        "echo ref > .git/HEAD",
        "echo ref >> '.git/refs/heads/main'",
        "truncate -s 0 .git/index",
    ] {
        assert_eq!(kind(line), Some(DestructiveKind::GitDirectory), "{line}");
    }
    // `rm -r` of .git says so.
    let d = destructive("rm -rf .git/*").unwrap();
    assert_eq!(d.kind, DestructiveKind::RecursiveRm);
    assert_eq!(
        d.reason,
        "it deletes .git/*, inside the .git directory where the repository's history is kept"
    );
    assert_eq!(
        destructive("echo ref > .git/HEAD").unwrap().command,
        "echo ref > .git/HEAD"
    );
}

#[test]
fn find_delete_and_find_exec() {
    assert_eq!(
        kind("find . -name '*.pyc' -delete"),
        Some(DestructiveKind::FindDelete)
    );
    assert_eq!(
        found("find . -type d -name node_modules -exec rm -rf {} +"),
        Some((
            DestructiveKind::RecursiveRm,
            "find . -type d -name node_modules -exec rm -rf {} +".to_string()
        ))
    );
    assert_eq!(kind("find . -name '*.o' -exec rm {} \\;"), None);
    assert_eq!(
        kind("find . -name x -exec rm -r {} \\; -print"),
        Some(DestructiveKind::RecursiveRm)
    );
}

#[test]
fn wrappers_are_looked_through() {
    for line in [
        "sudo rm -rf /var/cache/app",
        "sudo -u deploy rm -rf build",
        "env FOO=1 rm -rf build",
        "nice -n 10 rm -rf build",
        "timeout 5 rm -rf build",
        "nohup rm -rf build",
        "ls | xargs rm -rf",
        "find . -name tmp | xargs -0 rm -r",
        "sudo env LANG=C git clean -fdx",
        "FOO=1 rm -rf build",
    ] {
        assert!(destructive(line).is_some(), "{line}");
    }
    // The command is the whole simple command, wrapper and all.
    assert_eq!(
        found("sudo rm -rf build"),
        Some((
            DestructiveKind::RecursiveRm,
            "sudo rm -rf build".to_string()
        ))
    );
    // A wrapper that runs no command.
    assert_eq!(found("command -v rm"), None);
}

#[test]
fn every_command_of_a_list_or_pipeline_and_scripts() {
    assert_eq!(
        found("cd web && rm -rf node_modules && npm install"),
        Some((
            DestructiveKind::RecursiveRm,
            "rm -rf node_modules".to_string()
        ))
    );
    assert_eq!(kind("make; git clean -fd"), Some(DestructiveKind::GitClean));
    assert_eq!(
        kind("echo start | (cd x; git reset --hard)"),
        Some(DestructiveKind::GitResetHard)
    );
    assert_eq!(
        kind("echo $(rm -rf build)"),
        Some(DestructiveKind::RecursiveRm)
    );
    assert_eq!(
        kind("if true; then rm -rf out; fi"),
        Some(DestructiveKind::RecursiveRm)
    );
    // Inside a shell's script: the command is the script's.
    assert_eq!(
        found("sh -c 'rm -rf build'"),
        Some((DestructiveKind::RecursiveRm, "rm -rf build".to_string()))
    );
    assert_eq!(
        found("bash -lc \"cd x && git clean -fdx\""),
        Some((DestructiveKind::GitClean, "git clean -fdx".to_string()))
    );
    assert_eq!(
        kind("eval 'rm -rf build'"),
        Some(DestructiveKind::RecursiveRm)
    );
    assert_eq!(kind("bash script.sh"), None);
    // Every one is listed, in order.
    let all: Vec<String> = destructive_all("rm -rf a && git status && git reset --hard")
        .into_iter()
        .map(|d| d.command)
        .collect();
    assert_eq!(all, ["rm -rf a", "git reset --hard"]);
}

#[test]
fn a_shells_options_before_its_script_are_skipped() {
    for line in [
        "bash -o pipefail -c 'rm -rf build'",
        "bash -euo pipefail -c 'rm -rf build'",
        "bash +o history -ec 'rm -rf build'",
        "bash -O extglob -c 'rm -rf build'",
        "bash --noprofile --rcfile /dev/null -c 'rm -rf build'",
        "bash -c -e 'rm -rf build'",
        "sh -x -c 'cd x; rm -rf build'",
    ] {
        assert_eq!(
            found(line),
            Some((DestructiveKind::RecursiveRm, "rm -rf build".to_string())),
            "{line}"
        );
    }
    // Without -c the operand is a script file, and -o's value is not a script.
    assert_eq!(kind("bash -o pipefail 'rm -rf build'"), None);
    assert_eq!(kind("bash -e run.sh"), None);
}

#[test]
fn a_cd_into_git_is_followed() {
    for line in [
        "cd .git && rm HEAD",
        "cd .git; echo ref: refs/heads/x > HEAD",
        "cd repo/.git/refs && cd .. && rm -f index",
        "pushd .git && mv config config.old",
        "sh -c 'cd .git && touch x'",
    ] {
        assert_eq!(kind(line), Some(DestructiveKind::GitDirectory), "{line}");
    }
    let d = destructive("cd .git && rm HEAD").unwrap();
    assert_eq!(d.command, "rm HEAD");
    assert!(d.reason.contains("after a cd into it"), "{}", d.reason);
    for line in [
        // Reading there is fine, and so is git's own work.
        "cd .git && cat HEAD && ls refs",
        "cd .git && git log -1",
        // Out again before the change.
        "cd .git && cd .. && rm notes.txt",
        "cd .git/refs && cd ../.. && rm notes.txt",
        "cd .git && cd /tmp && rm x",
        "(cd .git && cat HEAD); rm notes.txt",
        "cd .github && rm ci.yml",
        "cd .git && cat HEAD 2>/dev/null",
    ] {
        assert_eq!(kind(line), None, "{line}");
    }
}

#[test]
fn a_line_that_does_not_parse_is_read_word_by_word() {
    assert_eq!(
        kind("rm -rf build 'unterminated"),
        Some(DestructiveKind::RecursiveRm)
    );
    assert_eq!(
        kind("git reset --hard && echo 'x"),
        Some(DestructiveKind::GitResetHard)
    );
    assert_eq!(
        kind("echo .git/x > 'y"),
        Some(DestructiveKind::GitDirectory)
    );
    assert_eq!(kind("rm file.txt 'x"), None);
}

#[test]
fn kinds_name_themselves_and_the_safer_way() {
    assert_eq!(DestructiveKind::RecursiveRm.as_str(), "rm -r");
    assert!(
        DestructiveKind::RecursiveRm
            .instead()
            .contains("rm FILE, without -r")
    );
    assert!(
        DestructiveKind::GitDirectory
            .instead()
            .contains("ask the user")
    );
}

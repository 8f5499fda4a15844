//! What each mode lets a command do, checked by running commands in it. Where
//! this machine cannot enforce a mode, the mode must be refused instead.

use std::io::Read;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use pretty_assertions::assert_eq;
use toolbelt_sandbox::{SETUP_FAILED_EXIT_CODE, Sandbox, SandboxError, SandboxMode, Support};

fn helper() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_toolbelt-sandbox"))
}

/// The sandbox, or `None` after checking that it was refused because the probe
/// found this machine cannot enforce it.
fn sandbox(mode: SandboxMode, network: bool, roots: &[PathBuf]) -> Option<Sandbox> {
    let support = Support::probe_with(&helper());
    match Sandbox::with_helper(mode, network, roots, helper(), &support) {
        Ok(sandbox) => Some(sandbox),
        Err(e) => {
            let refused_by_probe = support.check(mode, network).is_err()
                || matches!(
                    e,
                    SandboxError::GitNeedsMountNamespace { .. }
                        | SandboxError::ReadOnlyNeedsMountNamespace { .. }
                );
            assert!(refused_by_probe, "refused though the probe allows it: {e}");
            eprintln!("not enforceable on this machine, refused: {e}");
            None
        }
    }
}

/// Runs `script` with bash in `sandbox`, in `cwd`.
fn run(sandbox: &Sandbox, cwd: &Path, script: &str) -> Output {
    let (program, args) = sandbox.command(Path::new("/bin/bash"), script);
    Command::new(program)
        .args(args)
        .current_dir(cwd)
        .env("TMPDIR", sandbox.tmp_dir())
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn canonical_tempdir() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = std::fs::canonicalize(dir.path()).unwrap();
    (dir, path)
}

fn has_git() -> bool {
    Command::new("git")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn workspace_write_writes_inside_the_roots_only_and_keeps_git_hooks_and_config_read_only() {
    let (_ws, root) = canonical_tempdir();
    let (_out, outside) = canonical_tempdir();
    // A repository whose hooks directory is missing: it is made, and read-only.
    std::fs::create_dir_all(root.join(".git")).unwrap();
    std::fs::write(root.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::write(root.join(".git/config"), "[core]\n").unwrap();
    let Some(sandbox) = sandbox(
        SandboxMode::WorkspaceWrite,
        true,
        std::slice::from_ref(&root),
    ) else {
        return;
    };
    let etc = PathBuf::from(format!("/etc/toolbelt-sandbox-test-{}", std::process::id()));
    let script = format!(
        r#"echo in > inside.txt && echo inside=ok
mkdir -p sub/deeper && echo x > sub/deeper/f && echo nested=ok
echo out > {outside}/outside.txt 2>/dev/null; echo outside=$?
: > {etc} 2>/dev/null; echo etc=$?
echo h > .git/hooks/pre-commit 2>/dev/null; echo hooks=$?
echo c >> .git/config 2>/dev/null; echo config=$?
mv .git/hooks .git/hooks-moved 2>/dev/null; echo move_hooks=$?
mv .git .git-moved 2>/dev/null; echo move_git=$?
rm -rf .git 2>/dev/null; test -d .git/hooks && test -f .git/config && echo git_kept=yes
echo t > "$TMPDIR/t" && echo tmp=ok
echo d > /dev/null && echo devnull=ok
cat inside.txt"#,
        outside = outside.display(),
        etc = etc.display(),
    );
    let out = run(&sandbox, &root, &script);
    assert_eq!(
        stdout(&out),
        "inside=ok\nnested=ok\noutside=1\netc=1\nhooks=1\nconfig=1\nmove_hooks=1\nmove_git=1\n\
         git_kept=yes\ntmp=ok\ndevnull=ok\nin\n",
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success());
    assert!(!outside.join("outside.txt").exists());
    assert!(root.join("sub/deeper/f").is_file());
    assert_eq!(
        std::fs::read_dir(root.join(".git/hooks")).unwrap().count(),
        0
    );
    assert_eq!(
        std::fs::read_to_string(root.join(".git/config")).unwrap(),
        "[core]\n"
    );
    let written = etc.exists();
    let _ = std::fs::remove_file(&etc);
    assert!(!written, "{} was written", etc.display());
}

#[test]
fn workspace_write_keeps_toolbelt_configuration_and_hook_scripts_read_only() {
    let (_ws, root) = canonical_tempdir();
    let config = "[permissions]\ndeny = [\"bash(rm:*)\"]\n";
    std::fs::write(root.join("toolbelt.toml"), config).unwrap();
    std::fs::create_dir_all(root.join(".toolbelt/hooks")).unwrap();
    std::fs::create_dir_all(root.join(".toolbelt/agents")).unwrap();
    std::fs::write(root.join(".toolbelt/hooks/pre.sh"), "exit 0\n").unwrap();
    std::fs::create_dir_all(root.join("scripts/hooks")).unwrap();
    std::fs::write(root.join("scripts/hooks/check.sh"), "check\n").unwrap();
    let Some(sandbox) = sandbox(
        SandboxMode::WorkspaceWrite,
        true,
        std::slice::from_ref(&root),
    ) else {
        return;
    };
    let sandbox = sandbox
        .protecting(&[PathBuf::from("scripts/hooks/check.sh")])
        .unwrap();
    assert_eq!(sandbox.protected(), [root.join("scripts/hooks/check.sh")]);
    let script = r#"echo >> toolbelt.toml; echo append=$?
: > toolbelt.toml 2>/dev/null; echo truncate=$?
rm -f toolbelt.toml 2>/dev/null; echo rm=$?
mv toolbelt.toml moved.toml 2>/dev/null; echo mv=$?
echo x > .toolbelt/hooks/pre.sh 2>/dev/null; echo hook=$?
echo x > .toolbelt/hooks/new.sh 2>/dev/null; echo new_hook=$?
rm -rf .toolbelt/hooks 2>/dev/null; echo rm_hooks=$?
mv .toolbelt .toolbelt-moved 2>/dev/null; echo mv_dir=$?
echo a > .toolbelt/agents/a.md && echo agents=ok
echo x >> scripts/hooks/check.sh 2>/dev/null; echo script=$?
mv scripts scripts-moved 2>/dev/null; echo mv_scripts=$?
echo n > scripts/notes.txt && echo scripts_dir=ok
echo w > other.txt && echo other=ok"#;
    let out = run(&sandbox, &root, script);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        stdout(&out),
        "append=1\ntruncate=1\nrm=1\nmv=1\nhook=1\nnew_hook=1\nrm_hooks=1\nmv_dir=1\n\
         agents=ok\nscript=1\nmv_scripts=1\nscripts_dir=ok\nother=ok\n",
        "stderr: {stderr}"
    );
    assert!(
        stderr.contains("toolbelt.toml: Read-only file system"),
        "{stderr}"
    );
    // A working directory inside a bound directory is on the bind too.
    let out = run(
        &sandbox,
        &root.join(".toolbelt"),
        "echo x > hooks/pre.sh 2>/dev/null; echo hook=$?",
    );
    assert_eq!(stdout(&out), "hook=1\n");
    let out = run(
        &sandbox,
        &root.join("scripts/hooks"),
        "echo x >> check.sh 2>/dev/null; echo script=$?",
    );
    assert_eq!(stdout(&out), "script=1\n");

    assert_eq!(
        std::fs::read_to_string(root.join("toolbelt.toml")).unwrap(),
        config
    );
    assert_eq!(
        std::fs::read_to_string(root.join(".toolbelt/hooks/pre.sh")).unwrap(),
        "exit 0\n"
    );
    assert_eq!(
        std::fs::read_dir(root.join(".toolbelt/hooks"))
            .unwrap()
            .count(),
        1
    );
    assert_eq!(
        std::fs::read_to_string(root.join("scripts/hooks/check.sh")).unwrap(),
        "check\n"
    );
    assert!(!root.join("moved.toml").exists());
    assert!(root.join(".toolbelt/agents/a.md").is_file());
    assert!(root.join("other.txt").is_file());
}

#[test]
fn a_configuration_reached_through_a_link_in_the_workspace_is_refused() {
    let (_ws, root) = canonical_tempdir();
    let (_elsewhere, elsewhere) = canonical_tempdir();
    std::fs::write(elsewhere.join("toolbelt.toml"), "").unwrap();
    std::os::unix::fs::symlink(elsewhere.join("toolbelt.toml"), root.join("toolbelt.toml"))
        .unwrap();
    let support = Support::probe_with(&helper());
    if support.check(SandboxMode::WorkspaceWrite, true).is_err() {
        return;
    }
    let err = Sandbox::with_helper(
        SandboxMode::WorkspaceWrite,
        true,
        std::slice::from_ref(&root),
        helper(),
        &support,
    )
    .unwrap_err();
    assert!(
        matches!(&err, SandboxError::ReadOnlyThroughLink { link, .. } if *link == root.join("toolbelt.toml")),
        "{err}"
    );
    // Read-only keeps every file of the root as it is anyway.
    assert!(
        Sandbox::with_helper(
            SandboxMode::ReadOnly,
            true,
            std::slice::from_ref(&root),
            helper(),
            &support
        )
        .is_ok()
    );
}

#[test]
fn a_configuration_without_mount_namespaces_is_refused() {
    let (_ws, root) = canonical_tempdir();
    std::fs::write(root.join("toolbelt.toml"), "").unwrap();
    let (_other, other) = canonical_tempdir();
    std::fs::write(other.join("hook.sh"), "").unwrap();
    let support = Support {
        landlock_abi: Some(7),
        user_namespace: false,
        mount_namespace: false,
        network_namespace: false,
        pid_namespace: false,
        problems: vec!["user namespace: EPERM".to_string()],
    };
    let build = |mode, root: &PathBuf| {
        Sandbox::with_helper(mode, true, std::slice::from_ref(root), helper(), &support)
    };
    let err = build(SandboxMode::WorkspaceWrite, &root).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "sandbox workspace-write cannot keep {} read-only on this machine: it needs mount \
             namespaces (user namespace: EPERM)",
            root.join("toolbelt.toml").display()
        )
    );
    assert!(build(SandboxMode::ReadOnly, &root).is_ok());
    // A protected path is refused the same way; one that does not exist is kept.
    let sandbox = build(SandboxMode::WorkspaceWrite, &other).unwrap();
    let sandbox = sandbox.protecting(&[PathBuf::from("missing.sh")]).unwrap();
    let err = sandbox.protecting(&[other.join("hook.sh")]).unwrap_err();
    assert!(
        matches!(&err, SandboxError::ReadOnlyNeedsMountNamespace { path, .. } if *path == other.join("hook.sh")),
        "{err}"
    );
}

#[test]
fn a_configuration_made_later_without_mount_namespaces_stops_the_command_before_it_runs() {
    let (_ws, root) = canonical_tempdir();
    let probed = Support::probe_with(&helper());
    if probed.check(SandboxMode::WorkspaceWrite, true).is_err() {
        return;
    }
    let support = Support {
        mount_namespace: false,
        ..probed
    };
    let sandbox = Sandbox::with_helper(
        SandboxMode::WorkspaceWrite,
        true,
        std::slice::from_ref(&root),
        helper(),
        &support,
    )
    .unwrap();
    std::fs::write(root.join("toolbelt.toml"), "").unwrap();
    let out = run(&sandbox, &root, "echo ran > ran.txt");
    assert_eq!(out.status.code(), Some(SETUP_FAILED_EXIT_CODE));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with("toolbelt sandbox: the command was not run: ")
            && stderr.contains("toolbelt.toml must stay read-only"),
        "{stderr}"
    );
    assert!(!root.join("ran.txt").exists());
}

#[test]
fn git_still_commits_in_a_workspace_write_sandbox() {
    if !has_git() {
        eprintln!("git is not installed");
        return;
    }
    let (_ws, root) = canonical_tempdir();
    let git = |args: &[&str]| {
        let ok = Command::new("git")
            .args(args)
            .current_dir(&root)
            .output()
            .unwrap()
            .status
            .success();
        assert!(ok, "git {args:?}");
    };
    git(&["init", "-q", "."]);
    let hooks_before = std::fs::read_dir(root.join(".git/hooks")).unwrap().count();
    let config_before = std::fs::read_to_string(root.join(".git/config")).unwrap();
    let Some(sandbox) = sandbox(
        SandboxMode::WorkspaceWrite,
        true,
        std::slice::from_ref(&root),
    ) else {
        return;
    };
    let out = run(
        &sandbox,
        &root,
        "echo a > a.txt && git add a.txt && git -c user.name=t -c user.email=t@t commit -qm first \
         && git log --oneline | wc -l; \
         git config user.name evil 2>/dev/null || echo config_refused; \
         git config core.hooksPath /tmp 2>/dev/null || echo hooks_path_refused",
    );
    assert_eq!(
        stdout(&out),
        "1\nconfig_refused\nhooks_path_refused\n",
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        std::fs::read_dir(root.join(".git/hooks")).unwrap().count(),
        hooks_before
    );
    assert_eq!(
        std::fs::read_to_string(root.join(".git/config")).unwrap(),
        config_before
    );
}

#[test]
fn read_only_writes_nothing_but_its_temporary_directory() {
    let (_ws, root) = canonical_tempdir();
    std::fs::write(root.join("notes.txt"), "read me\n").unwrap();
    let Some(sandbox) = sandbox(SandboxMode::ReadOnly, true, std::slice::from_ref(&root)) else {
        return;
    };
    let out = run(
        &sandbox,
        &root,
        "cat notes.txt; echo x > new.txt 2>/dev/null; echo new=$?; \
         : > notes.txt 2>/dev/null; echo truncate=$?; rm notes.txt 2>/dev/null; echo rm=$?; \
         echo t > \"$TMPDIR/t\" && echo tmp=ok",
    );
    assert_eq!(
        stdout(&out),
        "read me\nnew=1\ntruncate=1\nrm=1\ntmp=ok\n",
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(root.join("notes.txt")).unwrap(),
        "read me\n"
    );
    assert!(!root.join("new.txt").exists());
}

#[test]
fn hidden_directories_cannot_be_read_or_written_in_either_mode() {
    let (_ws, root) = canonical_tempdir();
    let (_st, state) = canonical_tempdir();
    std::fs::write(state.join("serve-token"), "secret\n").unwrap();
    // A state directory inside the root (a workspace's old `.toolbelt`) too.
    let inner = root.join(".toolbelt");
    std::fs::create_dir(&inner).unwrap();
    std::fs::write(inner.join("toolbelt.db"), "db\n").unwrap();
    for mode in [SandboxMode::ReadOnly, SandboxMode::WorkspaceWrite] {
        let Some(sandbox) = sandbox(mode, true, std::slice::from_ref(&root)) else {
            continue;
        };
        let sandbox = sandbox.hiding(&[state.clone(), inner.clone()]).unwrap();
        if sandbox.hidden().is_empty() {
            eprintln!("no mount namespace here: {mode} cannot hide directories");
            continue;
        }
        let script = format!(
            "cat {token} 2>/dev/null || echo token=unreadable; \
             cat .toolbelt/toolbelt.db 2>/dev/null || echo db=unreadable; \
             echo x > .toolbelt/new 2>/dev/null || echo write=refused; ls -A {state}; echo end",
            token = state.join("serve-token").display(),
            state = state.display(),
        );
        let out = run(&sandbox, &root, &script);
        assert_eq!(
            stdout(&out),
            "token=unreadable\ndb=unreadable\nwrite=refused\nend\n",
            "{mode}: stderr: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        // Inside a hidden directory, the working directory is on the cover too.
        let out = run(
            &sandbox,
            &inner,
            "cat toolbelt.db 2>/dev/null || echo db=unreadable",
        );
        assert_eq!(stdout(&out), "db=unreadable\n", "{mode}");
    }
    assert_eq!(
        std::fs::read_to_string(state.join("serve-token")).unwrap(),
        "secret\n"
    );
    assert!(!inner.join("new").exists());
}

/// Connects to a server on 127.0.0.1 from the sandbox; returns what the command
/// printed and how many connections the server accepted.
fn connect_from(mode: SandboxMode, network: bool) -> Option<(String, usize)> {
    let (_ws, root) = canonical_tempdir();
    let sandbox = sandbox(mode, network, std::slice::from_ref(&root))?;
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let out = run(
        &sandbox,
        &root,
        &format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected || echo refused"),
    );
    listener.set_nonblocking(true).unwrap();
    let mut accepted = 0;
    let deadline = Instant::now() + Duration::from_millis(500);
    while Instant::now() < deadline {
        match listener.accept() {
            Ok((mut stream, _)) => {
                accepted += 1;
                let _ = stream.read(&mut [0u8; 1]);
            }
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
    Some((stdout(&out), accepted))
}

#[test]
fn network_off_cannot_reach_a_server_on_loopback_and_network_on_can() {
    if let Some((said, accepted)) = connect_from(SandboxMode::WorkspaceWrite, false) {
        assert_eq!((said.as_str(), accepted), ("refused\n", 0));
    }
    if let Some((said, accepted)) = connect_from(SandboxMode::None, false) {
        assert_eq!((said.as_str(), accepted), ("refused\n", 0));
    }
    if let Some((said, accepted)) = connect_from(SandboxMode::WorkspaceWrite, true) {
        assert_eq!((said.as_str(), accepted), ("connected\n", 1));
    }
}

/// Processes whose command line holds `token`.
fn running_with(token: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if std::fs::read(entry.path().join("cmdline"))
            .is_ok_and(|c| String::from_utf8_lossy(&c).contains(token))
        {
            found.push(pid);
        }
    }
    found
}

#[test]
fn what_a_command_leaves_running_dies_with_it_even_without_its_environment() {
    let (_ws, root) = canonical_tempdir();
    let support = Support::probe_with(&helper());
    let Some(sandbox) = sandbox(SandboxMode::ReadOnly, true, std::slice::from_ref(&root)) else {
        return;
    };
    if !support.pid_namespace {
        eprintln!("no PID namespace here: {:?}", support.problems);
        return;
    }
    let token = format!("tbsbx{}", std::process::id());
    // `env -i` drops every variable, so no environment marker could find it.
    let script = format!(
        "(exec -a {token}a sleep 1000) & setsid bash -c 'exec -a {token}b sleep 1000' & \
         env -i bash -c 'exec -a {token}c sleep 1000' & sleep 0.2; echo pid=$$"
    );
    let started = Instant::now();
    let out = run(&sandbox, &root, &script);
    assert_eq!(stdout(&out), "pid=1\n");
    assert!(started.elapsed() < Duration::from_secs(5));
    let deadline = Instant::now() + Duration::from_secs(2);
    while !running_with(&token).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(running_with(&token), Vec::<u32>::new());
}

#[test]
fn a_bad_plan_is_refused_without_running_anything() {
    let out = Command::new(helper())
        .args([
            toolbelt_sandbox::HELPER_ARG,
            "run",
            "{not json",
            "/bin/sh",
            "-c",
            "echo ran",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(SETUP_FAILED_EXIT_CODE));
    assert_eq!(stdout(&out), "");
    assert!(String::from_utf8_lossy(&out.stderr).contains("usage"));
}

#[test]
fn mode_none_with_the_network_on_needs_no_sandbox() {
    let (_ws, root) = canonical_tempdir();
    assert!(
        Sandbox::new(SandboxMode::None, true, &[root])
            .unwrap()
            .is_none()
    );
}

#[test]
fn a_workspace_git_repository_without_mount_namespaces_is_refused() {
    let (_ws, root) = canonical_tempdir();
    std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
    let support = Support {
        landlock_abi: Some(7),
        user_namespace: false,
        mount_namespace: false,
        network_namespace: false,
        pid_namespace: false,
        problems: vec!["user namespace: EPERM".to_string()],
    };
    let err = Sandbox::with_helper(
        SandboxMode::WorkspaceWrite,
        true,
        std::slice::from_ref(&root),
        helper(),
        &support,
    )
    .unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains(".git") && text.contains("mount namespaces") && text.contains("EPERM"),
        "{text}"
    );
    // Read-only needs no mount namespace: Landlock alone keeps the repository whole.
    assert!(
        Sandbox::with_helper(
            SandboxMode::ReadOnly,
            true,
            std::slice::from_ref(&root),
            helper(),
            &support
        )
        .is_ok()
    );
    // The network off needs a network namespace.
    let err = Sandbox::with_helper(SandboxMode::ReadOnly, false, &[root], helper(), &support)
        .unwrap_err();
    assert!(err.to_string().contains("network namespaces"), "{err}");
}

#[test]
fn a_repository_made_later_without_mount_namespaces_stops_the_command_before_it_runs() {
    let (_ws, root) = canonical_tempdir();
    let probed = Support::probe_with(&helper());
    if probed.check(SandboxMode::WorkspaceWrite, true).is_err() {
        return;
    }
    // As on a machine with Landlock but no mount namespaces.
    let support = Support {
        mount_namespace: false,
        ..probed
    };
    let sandbox = Sandbox::with_helper(
        SandboxMode::WorkspaceWrite,
        true,
        std::slice::from_ref(&root),
        helper(),
        &support,
    )
    .unwrap();
    std::fs::create_dir_all(root.join(".git")).unwrap();
    let out = run(&sandbox, &root, "echo ran > ran.txt");
    assert_eq!(out.status.code(), Some(SETUP_FAILED_EXIT_CODE));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with("toolbelt sandbox: the command was not run: ")
            && stderr.contains("is a git repository"),
        "{stderr}"
    );
    assert!(!root.join("ran.txt").exists());
}

//! What users and models see stays put across refactors: `toolbelt schema` in
//! every format and profile, and every command's `--help`.
//!
//! The default profile's schemas and the help texts are kept whole under
//! `tests/surface/`; the other profiles' schemas as SHA-256 digests (their
//! full text is 3.5 MB). `TOOLBELT_UPDATE_SURFACE=1` rewrites them after an
//! intended change, for review with `git diff`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use tempfile::TempDir;

use super::cli::toolbelt;

/// Every `--format` of `toolbelt schema`.
const FORMATS: [&str; 7] = [
    "openai",
    "openai-strict",
    "openai-responses",
    "anthropic",
    "gemini",
    "mcp",
    "text",
];
/// Profiles whose schemas are kept as digests.
const OTHER_PROFILES: [&str; 5] = ["claude", "kimi", "seed001", "seed002", "seed003"];
/// Every command, for its `--help`.
const COMMANDS: [&str; 13] = [
    "",
    "tools",
    "schema",
    "call",
    "batch",
    "serve",
    "mcp",
    "log",
    "agent",
    "cron",
    "checkpoints",
    "rewind",
    "doctor",
];

fn surface_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/surface")
}

fn updating() -> bool {
    std::env::var_os("TOOLBELT_UPDATE_SURFACE").is_some()
}

/// Compares `actual` with the kept file `name`, or rewrites it when updating.
fn check(name: &str, actual: &str) {
    let path = surface_dir().join(name);
    if updating() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let kept = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (TOOLBELT_UPDATE_SURFACE=1 writes it)",
            path.display()
        )
    });
    if kept != actual {
        let line = kept
            .lines()
            .zip(actual.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| kept.lines().count().min(actual.lines().count()));
        panic!(
            "{name} changed from line {}:\nkept:   {:?}\nactual: {:?}\n(an intended change: TOOLBELT_UPDATE_SURFACE=1, then review git diff)",
            line + 1,
            kept.lines().nth(line),
            actual.lines().nth(line),
        );
    }
}

fn schema(root: &Path, profile: &str, format: &str) -> String {
    let state = root.join(".state");
    let run = toolbelt(
        root,
        &[
            "--state-dir",
            state.to_str().unwrap(),
            "--profile",
            profile,
            "schema",
            "--format",
            format,
        ],
    );
    assert_eq!(run.code, 0, "schema {profile} {format}: {}", run.stderr);
    run.stdout
}

#[test]
fn schemas_of_every_format_and_profile_are_unchanged() {
    let root = TempDir::new().unwrap();
    for format in FORMATS {
        check(
            &format!("schema/default-{format}.out"),
            &schema(root.path(), "default", format),
        );
    }
    let mut digests = String::new();
    for profile in OTHER_PROFILES {
        for format in FORMATS {
            let digest = Sha256::digest(schema(root.path(), profile, format).as_bytes());
            let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
            writeln!(digests, "{profile} {format} {hex}").unwrap();
        }
    }
    check("schema/profiles.sha256", &digests);
}

#[test]
fn help_of_every_command_is_unchanged() {
    let root = TempDir::new().unwrap();
    let mut all = String::new();
    for command in COMMANDS {
        let mut args: Vec<&str> = command.split_whitespace().collect();
        args.push("--help");
        let run = toolbelt(root.path(), &args);
        assert_eq!(run.code, 0, "{command} --help: {}", run.stderr);
        writeln!(all, "==> toolbelt {command} --help\n{}", run.stdout).unwrap();
    }
    check("help.txt", &all);
}

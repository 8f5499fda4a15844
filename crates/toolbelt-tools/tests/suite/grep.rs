//! `grep` through the registry: every parameter, the text a model reads, the
//! structured data, and the workspace boundary.

use std::os::unix::fs::symlink;
use std::sync::Arc;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tempfile::TempDir;
use toolbelt_core::{Category, Envelope, ErrorCode, Registry, Status};

use super::{builtins, call, error_message, success_data};

/// A small project: sources, docs, ignored build output, a hidden dir, a secret
/// file and a binary file.
fn project() -> (TempDir, Registry) {
    let dir = tempfile::tempdir().unwrap();
    let files: &[(&str, &[u8])] = &[
        (".git/HEAD", b"ref: refs/heads/main\n"),
        (".gitignore", b"target/\n"),
        (
            "src/main.rs",
            b"fn main() {\n    let cfg = parse_config();\n    run(cfg);\n}\n",
        ),
        (
            "src/config.rs",
            b"// Parse the config.\npub fn parse_config() -> Config {\n    Config::default()\n}\n",
        ),
        (
            "app/util.py",
            b"import os\n\ndef parse_config(path):\n    return os.path.exists(path)\n",
        ),
        ("README.md", b"# Demo\nCall parse_config() first.\n"),
        ("target/gen.rs", b"fn parse_config() {}\n"),
        (".github/ci.yml", b"run: parse_config\n"),
        (".env", b"PARSE_CONFIG_TOKEN=hunter2\n"),
        ("logo.bin", b"parse_config\x00\x01\x02"),
    ];
    for (path, bytes) in files {
        let p = dir.path().join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, bytes).unwrap();
    }
    let registry = builtins(dir.path());
    (dir, registry)
}

async fn grep(registry: &Registry, args: Value) -> Envelope {
    call(registry, "grep", args).await
}

/// The text of a successful call.
async fn text(registry: &Registry, args: Value) -> String {
    let env = grep(registry, args).await;
    success_data(&env);
    env.text
}

/// The page part of a text: everything before the summary line.
fn body(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[..lines.len() - 1]
        .iter()
        .map(|l| format!("{l}\n"))
        .collect()
}

#[tokio::test]
async fn content_is_the_default_with_a_summary_line() {
    let (_dir, registry) = project();
    let env = grep(&registry, json!({"pattern": "parse_config\\("})).await;
    let data = success_data(&env);
    assert_eq!(
        env.text,
        "README.md:2: Call parse_config() first.\n\
         app/util.py:3: def parse_config(path):\n\
         src/config.rs:2: pub fn parse_config() -> Config {\n\
         src/main.rs:2:     let cfg = parse_config();\n\
         Found 4 matching lines in 4 files (5 files searched). 1 binary file skipped.\n"
    );
    assert_eq!(
        data["matches"][3],
        json!({"path": "src/main.rs", "line": 2, "text": "    let cfg = parse_config();", "context": false})
    );
    assert_eq!(
        (
            &data["output_mode"],
            &data["total"],
            &data["match_count"],
            &data["files_searched"],
            &data["binary_skipped"]
        ),
        (
            &json!("content"),
            &json!(4),
            &json!(4),
            &json!(5),
            &json!(1)
        )
    );
    assert_eq!(env.stats.counters.get("matches"), Some(&json!(4)));
}

#[tokio::test]
async fn rendered_text_with_context_and_paging() {
    let (_dir, registry) = project();
    let text = text(
        &registry,
        json!({"pattern": "config", "context_lines": 1, "head_limit": 6, "case_sensitive": false}),
    )
    .await;
    insta::assert_snapshot!("grep_context_and_paging", text);
}

#[tokio::test]
async fn path_limits_the_search_to_a_directory_or_a_file() {
    let (_dir, registry) = project();
    assert_eq!(
        body(&text(&registry, json!({"pattern": "parse_config", "path": "src"})).await),
        "src/config.rs:2: pub fn parse_config() -> Config {\nsrc/main.rs:2:     let cfg = parse_config();\n"
    );
    assert_eq!(
        body(&text(&registry, json!({"pattern": "fn", "path": "src/main.rs"})).await),
        "src/main.rs:1: fn main() {\n"
    );
}

#[tokio::test]
async fn output_modes_files_with_matches_and_count() {
    let (_dir, registry) = project();
    let env = grep(
        &registry,
        json!({"pattern": "parse_config", "output_mode": "files_with_matches"}),
    )
    .await;
    let data = success_data(&env);
    assert_eq!(
        body(&env.text),
        "README.md\napp/util.py\nsrc/config.rs\nsrc/main.rs\n"
    );
    assert_eq!(data["files"][0], json!({"path": "README.md"}));
    let env = grep(
        &registry,
        json!({"pattern": "os", "output_mode": "count", "path": "app"}),
    )
    .await;
    assert_eq!(body(&env.text), "app/util.py:2\n");
    assert_eq!(
        success_data(&env)["files"],
        json!([{"path": "app/util.py", "count": 2}])
    );
}

#[tokio::test]
async fn glob_and_file_type_filters() {
    let (_dir, registry) = project();
    let files = |args: Value| {
        let registry = &registry;
        async move {
            let mut args = args;
            args["output_mode"] = json!("files_with_matches");
            args["pattern"] = json!("parse_config");
            body(&text(registry, args).await)
        }
    };
    assert_eq!(
        files(json!({"glob": "*.rs"})).await,
        "src/config.rs\nsrc/main.rs\n"
    );
    assert_eq!(
        files(json!({"glob": "*.py *.md"})).await,
        "README.md\napp/util.py\n"
    );
    assert_eq!(
        files(json!({"glob": "!*.rs"})).await,
        "README.md\napp/util.py\n"
    );
    assert_eq!(files(json!({"file_type": "py"})).await, "app/util.py\n");
    assert_eq!(
        files(json!({"file_type": "rust, markdown"})).await,
        "README.md\nsrc/config.rs\nsrc/main.rs\n"
    );
    let env = grep(&registry, json!({"pattern": "x", "file_type": "rs"})).await;
    let message = error_message(&env, ErrorCode::InvalidParams);
    assert!(message.contains("did you mean one of: rust"), "{message}");
}

#[tokio::test]
async fn context_before_and_after() {
    let (_dir, registry) = project();
    assert_eq!(
        body(&text(&registry, json!({"pattern": "run\\(", "before": 1})).await),
        "src/main.rs-2-     let cfg = parse_config();\nsrc/main.rs:3:     run(cfg);\n"
    );
    assert_eq!(
        body(&text(&registry, json!({"pattern": "run\\(", "after": 1})).await),
        "src/main.rs:3:     run(cfg);\nsrc/main.rs-4- }\n"
    );
    let env = grep(&registry, json!({"pattern": "run\\(", "context_lines": 1})).await;
    let data = success_data(&env);
    assert_eq!(data["matches"][0]["context"], json!(true));
    assert_eq!(data["total"], json!(3));
    let env = grep(&registry, json!({"pattern": "x", "context_lines": 21})).await;
    assert_eq!(
        env.status,
        Status::Error,
        "context over 20 is refused: {}",
        env.text
    );
}

#[tokio::test]
async fn case_sensitivity_is_smart_unless_set() {
    let (_dir, registry) = project();
    let count = |args: Value| {
        let registry = &registry;
        async move {
            let env = grep(registry, args).await;
            success_data(&env)["match_count"].clone()
        }
    };
    // "parse the config" (comment) and the code lines all match lowercase "parse".
    assert_eq!(count(json!({"pattern": "parse"})).await, json!(5));
    assert_eq!(count(json!({"pattern": "Parse"})).await, json!(1));
    assert_eq!(
        count(json!({"pattern": "Parse", "case_sensitive": false})).await,
        json!(5)
    );
    assert_eq!(
        count(json!({"pattern": "parse", "case_sensitive": true})).await,
        json!(4)
    );
}

#[tokio::test]
async fn whole_word_fixed_strings_and_multiline() {
    let (_dir, registry) = project();
    assert_eq!(
        body(
            &text(
                &registry,
                json!({"pattern": "os", "whole_word": true, "path": "app"})
            )
            .await
        ),
        "app/util.py:1: import os\napp/util.py:4:     return os.path.exists(path)\n"
    );
    assert_eq!(
        body(
            &text(
                &registry,
                json!({"pattern": "config()", "fixed_strings": true})
            )
            .await
        ),
        "README.md:2: Call parse_config() first.\n\
         src/config.rs:2: pub fn parse_config() -> Config {\n\
         src/main.rs:2:     let cfg = parse_config();\n"
    );
    assert_eq!(
        body(
            &text(
                &registry,
                json!({"pattern": "main\\(\\) \\{.*cfg = ", "multiline": true})
            )
            .await
        ),
        "src/main.rs:1: fn main() {\nsrc/main.rs:2:     let cfg = parse_config();\n"
    );
    let env = grep(&registry, json!({"pattern": "main(", "path": "src"})).await;
    let message = error_message(&env, ErrorCode::InvalidParams);
    assert!(message.contains("fixed_strings=true"), "{message}");
}

#[tokio::test]
async fn head_limit_and_offset_page_through_results() {
    let (_dir, registry) = project();
    let env = grep(
        &registry,
        json!({"pattern": "parse_config", "head_limit": 2}),
    )
    .await;
    let data = success_data(&env);
    assert_eq!(
        (
            data["shown"].clone(),
            data["total"].clone(),
            data["next_offset"].clone()
        ),
        (json!(2), json!(4), json!(2))
    );
    assert!(
        env.text.ends_with(
            "Showing output lines 1-2 of 4; continue with offset=2. 1 binary file skipped.\n"
        ),
        "{}",
        env.text
    );
    let env = grep(
        &registry,
        json!({"pattern": "parse_config", "head_limit": 2, "offset": 2}),
    )
    .await;
    assert_eq!(
        body(&env.text),
        "src/config.rs:2: pub fn parse_config() -> Config {\nsrc/main.rs:2:     let cfg = parse_config();\n"
    );
    assert_eq!(success_data(&env)["next_offset"], Value::Null);
    let env = grep(
        &registry,
        json!({"pattern": "parse_config", "head_limit": 0, "output_mode": "files_with_matches"}),
    )
    .await;
    assert_eq!(success_data(&env)["shown"], json!(4));
}

#[tokio::test]
async fn ignored_and_hidden_files_only_when_asked() {
    let (_dir, registry) = project();
    let files = |args: Value| {
        let registry = &registry;
        async move {
            let mut args = args;
            args["output_mode"] = json!("files_with_matches");
            args["pattern"] = json!("parse_config");
            body(&text(registry, args).await)
        }
    };
    let base = "README.md\napp/util.py\nsrc/config.rs\nsrc/main.rs\n";
    assert_eq!(files(json!({})).await, base);
    assert_eq!(
        files(json!({"include_ignored": true})).await,
        format!("{base}target/gen.rs\n")
    );
    assert_eq!(
        files(json!({"include_hidden": true})).await,
        format!(".github/ci.yml\n{base}")
    );
}

#[tokio::test]
async fn secret_files_are_never_searched_but_counted() {
    let (_dir, registry) = project();
    let env = grep(
        &registry,
        json!({"pattern": "hunter2", "include_hidden": true, "include_ignored": true}),
    )
    .await;
    let data = success_data(&env);
    assert!(!data.to_string().contains("hunter2"), "{data}");
    assert_eq!(
        (data["matches"].clone(), data["files_searched"].clone()),
        (json!([]), json!(9))
    );
    assert!(
        env.text.starts_with("No matches for \"hunter2\""),
        "{}",
        env.text
    );
    assert_eq!(data["secret_skipped"], json!(1));
    assert!(
        env.text
            .contains("1 secret file (.env, keys, credentials) not searched."),
        "{}",
        env.text
    );
}

#[tokio::test]
async fn nothing_found_says_what_was_skipped() {
    let (_dir, registry) = project();
    let env = grep(&registry, json!({"pattern": "no such text"})).await;
    assert_eq!(env.status, Status::Success);
    assert_eq!(
        env.text,
        "No matches for \"no such text\" in . (5 files searched). Files excluded by .gitignore and hidden \
         files were skipped (include_ignored / include_hidden search them). 1 binary file skipped.\n"
    );
}

#[tokio::test]
async fn a_spent_time_budget_returns_partial_results_or_a_timeout() {
    let dir = tempfile::tempdir().unwrap();
    super::wide_tree(dir.path(), "needle\n");
    let registry = builtins(dir.path());
    let env = grep(
        &registry,
        json!({"pattern": "needle", "timeout_ms": 1, "head_limit": 0}),
    )
    .await;
    match env.status {
        Status::Partial => {
            assert_eq!(env.data["timed_out"], json!(true));
            assert!(env.text.contains("Timed out after 1 ms"), "{}", env.text);
            assert!(env.data["files_searched"].as_u64().unwrap() < 3000);
        }
        _ => {
            let message = error_message(&env, ErrorCode::Timeout);
            assert!(message.contains("1 ms budget"), "{message}");
        }
    }
}

#[tokio::test]
async fn links_leading_outside_are_not_searched_and_escapes_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("work");
    let outside = tmp.path().join("outside");
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::create_dir_all(outside.join("dir")).unwrap();
    std::fs::write(root.join("src/lib.rs"), "needle inside\n").unwrap();
    std::fs::write(outside.join("secret.txt"), "needle outside\n").unwrap();
    std::fs::write(outside.join("dir/inner.txt"), "needle outside\n").unwrap();
    symlink(outside.join("secret.txt"), root.join("file_link")).unwrap();
    symlink(outside.join("dir"), root.join("dir_link")).unwrap();
    let registry = builtins(&root);
    let env = grep(
        &registry,
        json!({"pattern": "needle", "include_ignored": true, "include_hidden": true}),
    )
    .await;
    assert_eq!(
        env.text,
        "src/lib.rs:1: needle inside\nFound 1 matching line in 1 file (1 file searched).\n"
    );
    for path in [
        "..",
        outside.to_str().unwrap(),
        "dir_link",
        "file_link",
        "../outside/secret.txt",
    ] {
        let env = grep(&registry, json!({"pattern": "needle", "path": path})).await;
        let message = error_message(&env, ErrorCode::AccessDenied);
        assert!(!env.text.contains("needle outside"), "{path}: {message}");
    }
}

#[tokio::test]
async fn a_missing_path_is_not_found() {
    let (_dir, registry) = project();
    let env = grep(&registry, json!({"pattern": "x", "path": "scr"})).await;
    let message = error_message(&env, ErrorCode::NotFound);
    assert_eq!(message, "scr does not exist");
}

#[test]
fn spec_is_a_read_only_search_tool_keyed_by_pattern() {
    let dir = tempfile::tempdir().unwrap();
    let registry = builtins(dir.path());
    let tool = registry.get("grep").unwrap();
    let spec = tool.spec();
    assert_eq!(spec.category, Category::Search);
    assert_eq!(spec.permissions, ["fs:read"]);
    assert!(spec.hints.read_only && !spec.hints.destructive);
    assert_eq!(
        tool.key_argument(&json!({"pattern": "fn main", "path": "src"})),
        Some("fn main".into())
    );
    assert_eq!(
        tool.permission_subject(&json!({"pattern": "fn main", "path": "src"})),
        Some("src".into())
    );
}

#[tokio::test]
async fn the_examples_hold_on_the_tree_they_describe() {
    let dir = tempfile::tempdir().unwrap();
    let write = |p: &str, s: &str| {
        let p = dir.path().join(p);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, s).unwrap();
    };
    write(
        "src/cli.rs",
        &format!("{}    let cfg = parse_config(&args)?;\n", "\n".repeat(41)),
    );
    write(
        "src/config.rs",
        &format!(
            "{}pub fn parse_config(args: &Args) -> Result<Config> {{\n",
            "\n".repeat(16)
        ),
    );
    for i in 0..29 {
        write(&format!("src/m{i}.rs"), "\n");
    }
    write("app/models.py", "# TODO\n");
    write("app/views.py", "# TODO: more\n");
    for i in 0..10 {
        write(&format!("app/m{i}.py"), "\n");
    }
    let registry = builtins(dir.path());
    let spec = registry.get("grep").unwrap().spec().clone();
    for example in &spec.examples {
        let env = grep(&registry, example.input.clone()).await;
        assert_eq!(
            success_data(&env),
            &example.output,
            "{}",
            example.description
        );
    }
}

#[test]
fn grep_and_glob_schemas_pass_the_strict_and_gemini_checks() {
    use toolbelt_wire::export::{Format, check_gemini, check_strict, export};
    let dir = tempfile::tempdir().unwrap();
    let registry = builtins(dir.path());
    let specs: Vec<_> = ["grep", "glob"]
        .iter()
        .map(|n| registry.get(n).unwrap().spec().clone())
        .collect();
    for tool in export(&specs, Format::OpenAiStrict).as_array().unwrap() {
        let function = &tool["function"];
        assert_eq!(function["strict"], json!(true), "{}", function["name"]);
        check_strict(&function["parameters"]).unwrap();
    }
    let gemini = export(&specs, Format::Gemini);
    for declaration in gemini["functionDeclarations"].as_array().unwrap() {
        check_gemini(&declaration["parameters"]).unwrap();
    }
}

/// Records progress reports; cancels the call after the third.
struct CancelAfterThree {
    reports: std::sync::Mutex<Vec<(f64, Option<String>)>>,
    cancel: tokio_util::sync::CancellationToken,
}

impl toolbelt_core::ProgressSink for CancelAfterThree {
    fn report(&self, progress: f64, _total: Option<f64>, message: Option<&str>) {
        let mut reports = self.reports.lock().unwrap();
        reports.push((progress, message.map(str::to_owned)));
        if reports.len() >= 3 {
            self.cancel.cancel();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_search_reports_progress_and_stops_when_cancelled() {
    let dir = TempDir::new().unwrap();
    // Accented words and Unicode word boundaries keep the regex engine slow (seconds
    // for the whole tree), and the pattern has no literal to skip ahead with.
    let line = "alpha béta gamma délta epsilon zeta thêta kappa ".repeat(2) + "\n";
    let body = line.repeat(200);
    for d in 0..20 {
        let sub = dir.path().join(format!("d{d:02}"));
        std::fs::create_dir(&sub).unwrap();
        for f in 0..100 {
            std::fs::write(sub.join(format!("f{f:03}.txt")), &body).unwrap();
        }
    }
    let registry = builtins(dir.path());
    let cancel = tokio_util::sync::CancellationToken::new();
    let sink = Arc::new(CancelAfterThree {
        reports: std::sync::Mutex::new(Vec::new()),
        cancel: cancel.clone(),
    });
    let started = std::time::Instant::now();
    let env = tokio::time::timeout(
        std::time::Duration::from_secs(60),
        registry.execute_call(
            toolbelt_core::ToolCall::new(
                "grep",
                json!({"pattern": r"\b\w{3}\b\s\p{Lu}", "timeout_ms": 120_000}),
            ),
            toolbelt_core::CallOptions {
                cancel: Some(cancel),
                progress: Some(Arc::clone(&sink) as Arc<dyn toolbelt_core::ProgressSink>),
                ..toolbelt_core::CallOptions::default()
            },
        ),
    )
    .await
    .expect("the cancelled search did not stop");
    error_message(&env, ErrorCode::Cancelled);
    let reports = sink.reports.lock().unwrap().clone();
    assert!(reports.len() >= 3, "{reports:?}");
    let counts: Vec<f64> = reports.iter().map(|(p, _)| *p).collect();
    assert!(counts.windows(2).all(|w| w[0] < w[1]), "{counts:?}");
    assert!(counts[0] >= 1.0 && counts[0] <= 2000.0, "{counts:?}");
    for (_, message) in &reports {
        let message = message.as_deref().unwrap();
        assert!(
            message.starts_with("grep: ") && message.contains("walked"),
            "{message}"
        );
    }
    // Three reports a quarter second apart, then the cancel: well under the search.
    assert!(
        started.elapsed() < std::time::Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn an_unknown_parameter_names_the_closest_real_one() {
    let (_dir, registry) = project();
    let env = call(
        &registry,
        "grep",
        json!({"pattern": "parse_config", "case_insensitive": true}),
    )
    .await;
    let message = error_message(&env, ErrorCode::InvalidParams);
    assert!(
        message.contains(
            "case_insensitive: not a parameter of grep; did you mean `case_sensitive` (false)?"
        ),
        "{message}"
    );
    let env = call(
        &registry,
        "grep",
        json!({"pattern": "parse_config", "head_limt": 3}),
    )
    .await;
    let message = error_message(&env, ErrorCode::InvalidParams);
    assert!(
        message.contains("head_limt: not a parameter of grep; did you mean `head_limit`?"),
        "{message}"
    );
}

//! What the post-edit pipeline costs an edit: `edit_file` through a registry
//! without the pipeline and one with it, taking turns, reported as medians and
//! the difference.
//!
//! `cargo bench -p toolbelt --bench diagnostics` (a release build). Cases, each an
//! `edit_file` of one line of a 200-line Python file:
//! - no checker configured for it: the in-process syntax check only;
//! - a language server configured whose program is missing;
//! - ruff as the linter (needs `ruff` on `PATH`);
//! - basedpyright as the language server, warm, on a project of 10 files (needs
//!   `basedpyright-langserver` on `PATH`).
//!
//! A case whose program is missing is skipped, saying so. `DIAG_BENCH_RUNS` sets
//! the edits per side of the first two cases (default 500; the others take 40).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use toolbelt_core::{AfterWrite, Registry, Session};
use toolbelt_diagnostics::{Config, Engine};

/// A 200-line Python file with `value = 0` on line 100.
fn source() -> String {
    let mut s = String::from("import os\n\n\n");
    for i in 0..49 {
        s.push_str(&format!(
            "def f{i}(a: int) -> int:\n    return a + {i}\n\n\n"
        ));
    }
    s.insert_str(s.len() / 2, "value = 0\n");
    s
}

fn workspace(root: &Path, files: usize) {
    std::fs::create_dir_all(root).unwrap();
    std::fs::write(root.join("x.py"), source()).unwrap();
    std::fs::write(
        root.join("pyproject.toml"),
        "[project]\nname = 'x'\nversion = '0'\n",
    )
    .unwrap();
    for i in 1..files {
        std::fs::write(
            root.join(format!("m{i}.py")),
            format!("def g{i}(a: int) -> int:\n    return a * {i}\n"),
        )
        .unwrap();
    }
}

fn registry(root: &Path, state: &Path, config: Option<&str>) -> Registry {
    let mut registry = Registry::new(Session::new(root).with_state_dir(state));
    toolbelt_tools::register_builtins(&mut registry).unwrap();
    if let Some(text) = config {
        #[derive(serde::Deserialize, Default)]
        #[serde(default)]
        struct File {
            diagnostics: toolbelt_diagnostics::config::Settings,
            lint: std::collections::BTreeMap<String, toolbelt_diagnostics::config::LintSpec>,
            lsp: std::collections::BTreeMap<String, toolbelt_diagnostics::config::LspSpec>,
        }
        let file: File = toml::from_str(text).unwrap();
        let config = Config {
            settings: file.diagnostics,
            lint: file.lint,
            lsp: file.lsp,
            ..Config::default()
        };
        let engine = Engine::new(config, vec![root.to_path_buf()]).unwrap();
        toolbelt_tools::register_diagnostics(
            &mut registry,
            Arc::new(engine) as Arc<dyn AfterWrite>,
        )
        .unwrap();
    }
    registry
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// One side of a case: its registry and the edit it makes next.
struct Side {
    registry: Registry,
    n: u64,
}

impl Side {
    async fn new(root: &Path, config: Option<&str>, files: usize) -> Side {
        workspace(&root.join("ws"), files);
        let registry = registry(&root.join("ws"), &root.join("state"), config);
        let env = registry.execute("read_file", json!({"path": "x.py"})).await;
        assert!(env.error.is_none(), "{}", env.text);
        Side { registry, n: 0 }
    }

    /// One edit (the value goes up by one); its time and text.
    async fn edit(&mut self) -> (Duration, String) {
        let args = json!({
            "path": "x.py",
            "old_string": format!("value = {}", self.n),
            "new_string": format!("value = {}", self.n + 1),
        });
        let t = Instant::now();
        let env = self.registry.execute("edit_file", args).await;
        let took = t.elapsed();
        assert!(env.error.is_none(), "{}", env.text);
        self.n += 1;
        (took, env.text)
    }
}

/// `runs` edits a side, in turns, after a warm-up: the medians.
async fn compare(with: &mut Side, without: &mut Side, runs: usize) -> (Duration, Duration) {
    for _ in 0..5 {
        with.edit().await;
        without.edit().await;
    }
    let (mut a, mut b) = (Vec::with_capacity(runs), Vec::with_capacity(runs));
    for _ in 0..runs {
        a.push(with.edit().await.0);
        b.push(without.edit().await.0);
    }
    (median(a), median(b))
}

fn report(case: &str, runs: usize, (with, without): (Duration, Duration), target_ms: f64) {
    let extra = ms(with) - ms(without);
    println!(
        "| {case} | {runs} | {:.3} ms | {:.3} ms | {extra:+.3} ms | < {target_ms} ms: {} |",
        ms(without),
        ms(with),
        if extra < target_ms { "yes" } else { "NO" }
    );
}

fn on_path(program: &str) -> bool {
    let found = toolbelt_exec::on_path(program);
    if !found {
        println!("(skipped: {program} is not on PATH)");
    }
    found
}

fn main() {
    let runs: usize = std::env::var("DIAG_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(500);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path();
        let mut without = Side::new(&base.join("off"), None, 1).await;
        println!("| case | edits a side | without | with | difference | target |");
        println!("|---|---:|---:|---:|---:|---|");

        let mut syntax = Side::new(&base.join("syntax"), Some(""), 1).await;
        report(
            "syntax check only (no checker for .py)",
            runs,
            compare(&mut syntax, &mut without, runs).await,
            1.0,
        );

        let missing = "[lsp.python]\ncommand = [\"no-such-ls\"]\n";
        let mut missing = Side::new(&base.join("missing"), Some(missing), 1).await;
        report(
            "a language server that is missing",
            runs,
            compare(&mut missing, &mut without, runs).await,
            5.0,
        );

        if on_path("ruff") {
            let ruff = "[lint.python]\ncommand = [\"ruff\", \"check\", \"--output-format=json\", \"{path}\"]\nparser = \"ruff-json\"\n";
            let mut ruff = Side::new(&base.join("ruff"), Some(ruff), 1).await;
            report("ruff as the linter", 40, compare(&mut ruff, &mut without, 40).await, 80.0);
        }

        if on_path("basedpyright-langserver") {
            let lsp = "[diagnostics]\nbudget_ms = 10000\n[lsp.python]\ncommand = [\"basedpyright-langserver\", \"--stdio\"]\nroot_markers = [\"pyproject.toml\"]\n";
            let mut warm = Side::new(&base.join("pyright"), Some(lsp), 10).await;
            // Warm: until an edit is answered fresh.
            let started = Instant::now();
            loop {
                let (_, text) = warm.edit().await;
                if !text.contains("pending") || started.elapsed() > Duration::from_secs(120) {
                    break;
                }
            }
            report(
                "basedpyright, warm, 10-file project",
                40,
                compare(&mut warm, &mut without, 40).await,
                800.0,
            );
        }
    });
}

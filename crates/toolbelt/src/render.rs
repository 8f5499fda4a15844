//! Human-readable renderings for the terminal.

use serde_json::{Value, json};
use toolbelt_core::{Envelope, Status, ToolSpec};

/// `tools --json`: one object per tool.
pub fn tools_json(specs: &[ToolSpec]) -> Value {
    Value::Array(
        specs
            .iter()
            .map(|s| {
                json!({
                    "name": s.name,
                    "title": s.title,
                    "category": s.category,
                    "summary": s.summary(),
                    "permissions": s.permissions,
                    "hints": s.hints,
                })
            })
            .collect(),
    )
}

/// `tools`: an aligned table of name, category and summary.
pub fn tools_table(specs: &[ToolSpec]) -> String {
    let w_name = specs.iter().map(|s| s.name.len()).max().unwrap_or(4).max(4);
    let w_cat = specs
        .iter()
        .map(|s| s.category.as_str().len())
        .max()
        .unwrap_or(8)
        .max(8);
    let mut out = format!("{:<w_name$}  {:<w_cat$}  DESCRIPTION\n", "NAME", "CATEGORY");
    for s in specs {
        out.push_str(&format!(
            "{:<w_name$}  {:<w_cat$}  {}\n",
            s.name,
            s.category.as_str(),
            s.summary()
        ));
    }
    out
}

/// `call` without `--json`: a status line, then the text the model would read.
pub fn envelope_human(env: &Envelope) -> String {
    let mut out = String::new();
    let head = match (&env.status, &env.error) {
        (Status::Error, Some(e)) => format!(
            "✗ {} — {} ({} ms)\n",
            env.context.tool, e.code, env.stats.time_ms
        ),
        (Status::Partial, _) => format!(
            "◐ {} — partial ({} ms)\n",
            env.context.tool, env.stats.time_ms
        ),
        _ => format!("✓ {} ({} ms)\n", env.context.tool, env.stats.time_ms),
    };
    out.push_str(&head);
    for r in &env.context.repairs {
        let at = if r.path.is_empty() {
            String::new()
        } else {
            format!("{}: ", r.path)
        };
        out.push_str(&format!("  repaired {at}{}\n", r.action));
    }
    out.push_str(&env.text);
    if !env.text.ends_with('\n') {
        out.push('\n');
    }
    out
}

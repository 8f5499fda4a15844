//! `toolbelt tools`: the tools, as a table or as JSON.

use std::process::ExitCode;

use anyhow::{Context, Result};
use toolbelt_core::{Category, Registry};

use super::{out, out_json};
use crate::cli::ToolsArgs;
use crate::render;

/// Lists the tools of `registry` (of one category with `--category`).
///
/// # Errors
/// An unknown category, or standard output cannot be written.
pub fn run(args: ToolsArgs, registry: &Registry) -> Result<ExitCode> {
    let category = match args.category {
        Some(c) => Some(Category::parse(&c).with_context(|| {
            let all: Vec<_> = Category::ALL.iter().map(|c| c.as_str()).collect();
            format!("unknown category {c:?}; choose one of: {}", all.join(", "))
        })?),
        None => None,
    };
    let specs: Vec<_> = registry
        .definitions()
        .into_iter()
        .filter(|s| category.is_none_or(|c| s.category == c))
        .collect();
    if args.json {
        out_json(&render::tools_json(&specs))?;
    } else {
        out(&render::tools_table(&specs))?;
    }
    Ok(ExitCode::SUCCESS)
}

//! `toolbelt schema`: the tools' schemas in the format of a model API.

use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use serde_json::Value;
use toolbelt_core::Registry;
use toolbelt_wire::export::{self, Format};

use super::{out, out_json};
use crate::cli::SchemaArgs;

/// Prints the schemas of `registry`'s tools (of those named, when any are).
///
/// # Errors
/// An unknown format or tool, or standard output cannot be written.
pub fn run(args: SchemaArgs, registry: &Registry) -> Result<ExitCode> {
    let SchemaArgs { format, tools } = args;
    let fmt = Format::parse(&format).with_context(|| {
        let all: Vec<_> = Format::ALL.iter().map(|f| f.as_str()).collect();
        format!(
            "unknown format {format:?}; choose one of: {}",
            all.join(", ")
        )
    })?;
    let mut specs = registry.definitions();
    if !tools.is_empty() {
        for t in &tools {
            if !specs.iter().any(|s| &s.name == t) {
                let names: Vec<_> = specs.iter().map(|s| s.name.as_str()).collect();
                bail!("unknown tool {t:?}; available: {}", names.join(", "));
            }
        }
        specs.retain(|s| tools.contains(&s.name));
    }
    match export::export(&specs, fmt) {
        Value::String(s) => out(&s)?,
        v => out_json(&v)?,
    }
    Ok(ExitCode::SUCCESS)
}

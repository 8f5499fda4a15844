//! Output budgets and spill files. (Skeleton: the full implementation replaces this.)

use std::path::PathBuf;

/// Limits on the text a model reads from one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputBudget {
    /// Maximum bytes of `text`.
    pub max_bytes: usize,
}

impl Default for OutputBudget {
    fn default() -> Self {
        OutputBudget { max_bytes: 30_000 }
    }
}

/// A bounded sink for a tool's output.
#[derive(Debug)]
pub struct OutputSink {
    budget: OutputBudget,
    spill_dir: PathBuf,
}

impl OutputSink {
    /// A sink with `budget` that spills into `spill_dir`.
    pub fn new(budget: OutputBudget, spill_dir: PathBuf) -> OutputSink {
        OutputSink { budget, spill_dir }
    }
}

/// The result of bounding a text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Captured {
    /// The text within budget.
    pub text: String,
}

impl Captured {
    /// Applies to an envelope.
    pub fn apply_to(self, env: &mut crate::Envelope) {
        env.text = self.text;
    }
}

/// Bounds a text, spilling the full text.
///
/// # Errors
/// The spill file could not be written.
pub fn apply_budget(
    text: &str,
    _budget: &OutputBudget,
    _spill_dir: &std::path::Path,
) -> std::io::Result<Captured> {
    Ok(Captured {
        text: text.to_string(),
    })
}

/// Bounds a text without spilling.
pub fn truncate_in_memory(text: &str, _budget: &OutputBudget) -> String {
    text.to_string()
}

//! `skill`: loads a skill's instructions by name; its description lists the skills
//! found on disk now.

use std::fmt::Write as _;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use toolbelt_core::{
    BoxFuture, Category, Envelope, ErrorCode, Hints, Reply, Tool, ToolContext, ToolError,
    ToolResult, ToolSpec, Typed, TypedTool, Violation,
};

use super::discovery::{Catalog, Skills, UnknownSkill};

/// Skills the description lists; the others are counted.
pub(crate) const MAX_LISTED_SKILLS: usize = 50;
/// Characters of a skill's description the listing keeps.
pub(crate) const MAX_LISTED_DESCRIPTION_CHARS: usize = 200;

/// Arguments of `skill`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SkillParams {
    /// The skill's name, as listed in this tool's description.
    #[schemars(length(min = 1))]
    pub name: String,
}

/// Result of `skill`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SkillOutput {
    /// The skill's name.
    pub name: String,
    /// When to use it.
    pub description: String,
    /// The skill's folder: its scripts and files are relative to it.
    pub path: String,
    /// Its `SKILL.md`.
    pub file: String,
    /// The other files of the folder, relative to it (at most 50).
    pub files: Vec<String>,
    /// The folder holds more files than `files` lists.
    pub more_files: bool,
}

/// The `skill` tool over a set of [`Skills`]. Its description follows the skills
/// on disk ([`Tool::current_spec`]), and its [`Tool::revision`] changes with them.
#[derive(Debug)]
pub struct SkillTool {
    typed: Typed<LoadSkill>,
}

impl SkillTool {
    /// The tool serving `skills`.
    pub fn new(skills: Skills) -> SkillTool {
        SkillTool {
            typed: Typed::new(LoadSkill { skills }),
        }
    }

    /// The skills it serves.
    pub fn skills(&self) -> &Skills {
        &self.typed.inner().skills
    }
}

/// The typed part of [`SkillTool`]: its schemas and its call.
#[derive(Debug)]
struct LoadSkill {
    skills: Skills,
}

/// NOT_FOUND, with the names to call instead or, when there are none, where
/// skills are looked for.
impl From<UnknownSkill> for ToolError {
    fn from(unknown: UnknownSkill) -> ToolError {
        let hint = if unknown.available.is_empty() {
            let dirs: Vec<String> = unknown
                .dirs
                .iter()
                .map(|d| d.display().to_string())
                .collect();
            format!(
                "a skill is a folder holding a SKILL.md (front matter with name and description, then instructions) in one of: {}",
                dirs.join(", ")
            )
        } else {
            format!(
                "call skill with one of the names: {}",
                unknown.available.join(", ")
            )
        };
        ToolError::new(ErrorCode::NotFound, unknown.to_string()).hint(hint)
    }
}

impl TypedTool for LoadSkill {
    type Params = SkillParams;
    type Output = SkillOutput;

    fn spec(&self) -> ToolSpec {
        ToolSpec::describe("skill", include_str!("skill.md").trim_end())
            .title("Load Skill")
            .category(Category::Agent)
            .permission("skills:read")
            .hints(Hints::read_only())
            .key_argument("name")
            .example(
                "Load the skill for PDF files before filling a form",
                serde_json::json!({"name": "pdf"}),
                serde_json::json!({
                    "name": "pdf",
                    "description": "Extract text and tables from PDF files and fill PDF forms.",
                    "path": "/home/me/.config/toolbelt/skills/pdf",
                    "file": "/home/me/.config/toolbelt/skills/pdf/SKILL.md",
                    "files": ["forms.md", "scripts/extract.py"],
                    "more_files": false
                }),
            )
    }

    async fn call(&self, _ctx: &ToolContext, p: SkillParams) -> ToolResult<SkillOutput> {
        let skill = self.skills.get(p.name.trim())?;
        let (files, more_files) = tokio::task::spawn_blocking({
            let skill = skill.clone();
            move || skill.files()
        })
        .await
        .unwrap_or_default();
        let mut text = skill.instructions();
        if !files.is_empty() {
            if !text.ends_with('\n') {
                text.push('\n');
            }
            let _ = write!(
                text,
                "\nFiles in the skill's folder: {}{}",
                files.join(", "),
                if more_files { ", ..." } else { "" }
            );
        }
        let out = SkillOutput {
            name: skill.name.clone(),
            description: skill.description.clone(),
            path: skill.dir.display().to_string(),
            file: skill.file.display().to_string(),
            files,
            more_files,
        };
        Ok(Reply::new(out, text))
    }
}

impl Tool for SkillTool {
    fn spec(&self) -> &ToolSpec {
        self.typed.spec()
    }

    fn current_spec(&self) -> Option<ToolSpec> {
        let mut spec = self.typed.spec().clone();
        spec.description = describe(&spec.description, &self.skills().catalog());
        Some(spec)
    }

    fn revision(&self) -> u64 {
        self.skills().revision()
    }

    fn validate(&self, args: &Value) -> Vec<Violation> {
        self.typed.validate(args)
    }

    fn call<'a>(&'a self, ctx: &'a ToolContext, args: Value) -> BoxFuture<'a, Envelope> {
        self.typed.call(ctx, args)
    }
}

/// The tool's description: `base`, then every skill as `- name: description`,
/// as many as fit in [`toolbelt_core::MAX_DESCRIPTION_CHARS`] (at most
/// [`MAX_LISTED_SKILLS`]).
fn describe(base: &str, catalog: &Catalog) -> String {
    let mut text = base.to_string();
    if catalog.skills.is_empty() {
        text.push_str("\n\nNo skills are installed at the moment.");
        return text;
    }
    text.push_str("\n\nSkills:");
    let lines = catalog.skills.iter().take(MAX_LISTED_SKILLS).map(|skill| {
        format!(
            "\n- {}: {}",
            skill.name,
            shorten(&skill.description, MAX_LISTED_DESCRIPTION_CHARS)
        )
    });
    let unlisted = catalog.skills.len().saturating_sub(MAX_LISTED_SKILLS);
    crate::describe::with_listing(text, lines, unlisted, |left| {
        format!("\n... and {left} more: call skill with a name (an unknown name lists the closest)")
    })
}

/// `text` on one line, cut to `max` characters with "...".
fn shorten(text: &str, max: usize) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= max {
        return flat;
    }
    let cut: String = flat.chars().take(max.saturating_sub(3)).collect();
    // At a word's end, when one is not too far back.
    let cut = match cut.rfind(' ') {
        Some(i) if i > cut.len() / 2 => &cut[..i],
        _ => cut.as_str(),
    };
    format!("{}...", cut.trim_end())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_descriptions_are_cut_on_one_line() {
        assert_eq!(shorten("a\n  b", 10), "a b");
        let long = "word ".repeat(100);
        let short = shorten(&long, 20);
        assert_eq!(short, "word word word...");
        assert!(short.chars().count() <= 20 + 3);
        assert_eq!(
            shorten("é".repeat(30).as_str(), 10),
            format!("{}...", "é".repeat(7))
        );
    }
}

//! Skills: folders holding a `SKILL.md` (YAML front matter with `name` and
//! `description`, then instructions for the model), as Claude's skills are.
//!
//! - [`Skills`] finds them, in precedence order, in each workspace root's
//!   `.toolbelt/skills/` and `.claude/skills/`, then in the user's
//!   `<config home>/skills/` ([`skill_dirs`]), and finds them again when they change.
//! - [`SkillTool`] (`skill`) lists them in its description and returns a skill's
//!   instructions by name.

mod discovery;
// Each tool of a toolset is `<toolset>/<tool>.rs`; here the tool is named like its set.
#[allow(clippy::module_inception)]
mod skill;

pub use discovery::{SKILL_FILE, Skill, SkillProblem, SkillScan, Skills, UnknownSkill, skill_dirs};
pub use skill::SkillTool;

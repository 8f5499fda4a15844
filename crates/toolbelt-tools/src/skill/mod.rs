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

pub use discovery::{
    MAX_ENTRIES_PER_DIR, MAX_LISTED_FILES, MAX_SKILL_FILE_BYTES, MAX_SKILL_NAME_LEN, SKILL_FILE,
    Skill, SkillProblem, SkillScan, Skills, UnknownSkill, skill_dirs,
};
pub use skill::{
    MAX_LISTED_DESCRIPTION_CHARS, MAX_LISTED_SKILLS, SkillOutput, SkillParams, SkillTool,
};

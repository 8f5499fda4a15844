//! `skill` and [`Skills`]: skills found in the workspace's `.toolbelt/skills/` and
//! `.claude/skills/` and in the user's config home, listed in the tool's
//! description as they change on disk, and loaded by name.

use std::path::{Path, PathBuf};

use pretty_assertions::assert_eq;
use serde_json::json;
use toolbelt_core::{ErrorCode, Registry, Session, Tool};
use toolbelt_tools::{BuiltinOptions, SkillTool, Skills, register_builtins_with};

use super::{call, error_message, success_data};

/// A workspace root and a config home of the user's, both temporary.
struct Places {
    root: tempfile::TempDir,
    home: tempfile::TempDir,
}

impl Places {
    fn new() -> Places {
        Places {
            root: tempfile::tempdir().unwrap(),
            home: tempfile::tempdir().unwrap(),
        }
    }

    fn roots(&self) -> Vec<PathBuf> {
        vec![self.root.path().to_path_buf()]
    }

    fn skills(&self) -> Skills {
        Skills::discover(&self.roots(), Some(self.home.path()))
    }

    /// The root's `.toolbelt/skills`.
    fn toolbelt_dir(&self) -> PathBuf {
        self.root.path().join(".toolbelt/skills")
    }

    /// The root's `.claude/skills`.
    fn claude_dir(&self) -> PathBuf {
        self.root.path().join(".claude/skills")
    }

    /// The user's skills.
    fn user_dir(&self) -> PathBuf {
        self.home.path().join("skills")
    }

    /// A registry with the built-ins, `skill` serving [`Places::skills`].
    fn registry(&self) -> Registry {
        let mut registry = Registry::new(Session::new(self.root.path()));
        register_builtins_with(
            &mut registry,
            BuiltinOptions {
                skills: Some(self.skills()),
                ..BuiltinOptions::default()
            },
        )
        .unwrap();
        registry
    }
}

/// Writes `<dir>/<folder>/SKILL.md`; returns the folder.
fn write_skill(dir: &Path, folder: &str, text: &str) -> PathBuf {
    let folder = dir.join(folder);
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(folder.join("SKILL.md"), text).unwrap();
    folder
}

fn skill_md(name: &str, description: &str, body: &str) -> String {
    format!("---\nname: {name}\ndescription: {description}\n---\n{body}")
}

/// The `skill` tool's description as served now.
fn description(registry: &Registry) -> String {
    registry
        .definitions()
        .into_iter()
        .find(|s| s.name == "skill")
        .unwrap()
        .description
}

#[test]
fn skills_are_found_in_all_three_places_the_first_place_winning() {
    let places = Places::new();
    write_skill(
        &places.toolbelt_dir(),
        "pdf",
        &skill_md("pdf", "PDF files, ours.", "Ours.\n"),
    );
    write_skill(
        &places.claude_dir(),
        "pdf",
        &skill_md("pdf", "PDF files, Claude's.", "Theirs.\n"),
    );
    // Claude's skills carry more keys; they are allowed.
    write_skill(
        &places.claude_dir(),
        "docx",
        "---\nname: docx\ndescription: Word documents.\nlicense: Proprietary\nallowed-tools: [bash]\nmetadata:\n  version: 2\n---\nUse python-docx.\n",
    );
    write_skill(
        &places.user_dir(),
        "notes",
        &skill_md("notes", "The user's notes.", "Mine.\n"),
    );
    let skills = places.skills();
    assert_eq!(
        skills.dirs(),
        vec![
            places.toolbelt_dir(),
            places.claude_dir(),
            places.user_dir()
        ]
    );
    let scan = skills.scan();
    let found: Vec<(&str, &str, &Path)> = scan
        .skills
        .iter()
        .map(|s| (s.name.as_str(), s.description.as_str(), s.source.as_path()))
        .collect();
    let (toolbelt, claude, user) = (
        places.toolbelt_dir(),
        places.claude_dir(),
        places.user_dir(),
    );
    assert_eq!(
        found,
        vec![
            ("docx", "Word documents.", claude.as_path()),
            ("notes", "The user's notes.", user.as_path()),
            ("pdf", "PDF files, ours.", toolbelt.as_path()),
        ]
    );
    assert_eq!(scan.problems.len(), 1, "{:#?}", scan.problems);
    let shadowed = &scan.problems[0];
    assert_eq!(shadowed.path, places.claude_dir().join("pdf/SKILL.md"));
    assert_eq!(
        shadowed.message,
        format!(
            "the skill \"pdf\" is also defined in {}, which comes first; this one is ignored",
            places.toolbelt_dir().join("pdf/SKILL.md").display()
        )
    );
}

#[test]
fn the_description_lists_every_skill_and_says_when_there_are_none() {
    let places = Places::new();
    let registry = places.registry();
    let empty = description(&registry);
    assert!(
        empty.ends_with("\n\nNo skills are installed at the moment."),
        "{empty}"
    );

    write_skill(
        &places.toolbelt_dir(),
        "pdf",
        &skill_md("pdf", "Read and fill PDF forms.", "Body.\n"),
    );
    let long = format!("Start here. {}", "More words. ".repeat(40));
    write_skill(
        &places.user_dir(),
        "review",
        &format!("---\nname: review\ndescription: |\n  {long}\n---\nBody.\n"),
    );
    let text = description(&registry);
    let listing = text.split_once("\n\nSkills:\n").unwrap().1;
    let lines: Vec<&str> = listing.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert_eq!(lines[0], "- pdf: Read and fill PDF forms.");
    assert!(lines[1].starts_with("- review: Start here. More words."));
    assert!(lines[1].ends_with("..."), "{}", lines[1]);
    assert!(lines[1].chars().count() <= "- review: ".len() + 200);
    // The spec given at registration stays as it was; only the served one follows.
    let tool = registry.get("skill").unwrap();
    assert!(!tool.spec().description.contains("pdf"));
}

#[test]
fn more_than_fifty_skills_are_counted_not_listed() {
    let places = Places::new();
    for i in 0..53 {
        let name = format!("s{i:02}");
        write_skill(
            &places.toolbelt_dir(),
            &name,
            &skill_md(&name, "A skill.", ""),
        );
    }
    let text = description(&places.registry());
    assert!(text.contains("\n- s49: A skill."), "{text}");
    assert!(!text.contains("- s50"), "{text}");
    assert!(
        text.ends_with(
            "\n... and 3 more: call skill with a name (an unknown name lists the closest)"
        ),
        "{text}"
    );
}

#[tokio::test]
async fn a_call_returns_the_instructions_and_the_folder() {
    let places = Places::new();
    let folder = write_skill(
        &places.claude_dir(),
        "pdf",
        &skill_md(
            "pdf",
            "PDF files.",
            "\n# PDF\n\nRun `uv run scripts/extract.py FILE`.\n",
        ),
    );
    std::fs::create_dir(folder.join("scripts")).unwrap();
    std::fs::write(folder.join("scripts/extract.py"), "print()\n").unwrap();
    std::fs::write(folder.join("forms.md"), "# Forms\n").unwrap();
    let registry = places.registry();
    let env = call(&registry, "skill", json!({"name": "pdf"})).await;
    let data = success_data(&env);
    assert_eq!(
        data,
        &json!({
            "name": "pdf",
            "description": "PDF files.",
            "path": folder.display().to_string(),
            "file": folder.join("SKILL.md").display().to_string(),
            "files": ["forms.md", "scripts/extract.py"],
            "more_files": false,
        })
    );
    assert_eq!(
        env.text,
        format!(
            "Skill \"pdf\" from the folder {} (run its scripts and open its files from there).\n\n\
             # PDF\n\nRun `uv run scripts/extract.py FILE`.\n\n\
             Files in the skill's folder: forms.md, scripts/extract.py",
            folder.display()
        )
    );
}

#[tokio::test]
async fn an_unknown_name_suggests_the_closest_and_lists_the_skills() {
    let places = Places::new();
    for name in ["pdf", "docx", "xlsx"] {
        write_skill(
            &places.toolbelt_dir(),
            name,
            &skill_md(name, "A kind of file.", ""),
        );
    }
    let registry = places.registry();
    let env = call(&registry, "skill", json!({"name": "pdff"})).await;
    assert_eq!(
        error_message(&env, ErrorCode::NotFound),
        "there is no skill named \"pdff\"; did you mean \"pdf\"?"
    );
    let hint = env.error.as_ref().unwrap().hint.clone().unwrap();
    assert_eq!(hint, "call skill with one of the names: docx, pdf, xlsx");

    let none = Places::new();
    let env = call(&none.registry(), "skill", json!({"name": "pdf"})).await;
    assert_eq!(
        error_message(&env, ErrorCode::NotFound),
        "there is no skill named \"pdf\": no skills are installed"
    );
    let hint = env.error.as_ref().unwrap().hint.clone().unwrap();
    assert!(
        hint.contains(&none.user_dir().display().to_string()),
        "{hint}"
    );
}

#[tokio::test]
async fn broken_skills_are_problems_and_the_others_still_load() {
    let places = Places::new();
    let dir = places.toolbelt_dir();
    write_skill(&dir, "plain", "# Just Markdown\n\nNo front matter.\n");
    write_skill(
        &dir,
        "yaml",
        "---\nname: yaml\ndescription: [unclosed\n---\nBody.\n",
    );
    write_skill(&dir, "nodesc", "---\nname: nodesc\n---\nBody.\n");
    write_skill(
        &dir,
        "badname",
        "---\ndescription: Fine.\nname: bad name!\n---\nBody.\n",
    );
    write_skill(&dir, "good", &skill_md("good", "Works.", "Do it.\n"));
    let scan = places.skills().scan();
    let names: Vec<&str> = scan.skills.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, vec!["good"]);
    let problems: Vec<(PathBuf, String)> = scan
        .problems
        .iter()
        .map(|p| (p.path.clone(), p.message.clone()))
        .collect();
    let at = |folder: &str| dir.join(folder).join("SKILL.md");
    assert_eq!(problems.len(), 4, "{problems:#?}");
    assert_eq!(problems[0].0, at("badname"));
    assert_eq!(
        problems[0].1,
        "invalid name \"bad name!\" (line 3): ' ' is not allowed; use letters, digits, '-', '_' and '.'"
    );
    assert_eq!(problems[1].0, at("nodesc"));
    assert!(
        problems[1].1.contains("missing field `description`"),
        "{}",
        problems[1].1
    );
    assert_eq!(problems[2].0, at("plain"));
    assert!(
        problems[2]
            .1
            .starts_with("the file does not start with front matter"),
        "{}",
        problems[2].1
    );
    assert_eq!(problems[3].0, at("yaml"));
    assert!(
        problems[3].1.starts_with("invalid front matter (line "),
        "{}",
        problems[3].1
    );

    let registry = places.registry();
    let env = call(&registry, "skill", json!({"name": "good"})).await;
    assert!(success_data(&env)["name"] == "good");
    assert!(env.text.ends_with("\n\nDo it.\n"), "{}", env.text);
}

#[test]
fn a_skill_added_later_is_served_and_changes_the_revision() {
    let places = Places::new();
    let tool = SkillTool::new(places.skills());
    let before = tool.revision();
    assert_eq!(before, tool.revision(), "nothing changed");
    assert!(!tool.current_spec().unwrap().description.contains("- late:"));

    write_skill(
        &places.user_dir(),
        "late",
        &skill_md("late", "Came later.", "Body.\n"),
    );
    let after = tool.revision();
    assert_ne!(before, after);
    let spec = tool.current_spec().unwrap();
    assert!(
        spec.description.contains("\n- late: Came later."),
        "{}",
        spec.description
    );
    assert_eq!(spec.name, "skill");
    assert_eq!(spec.input_schema, tool.spec().input_schema);

    // New instructions are served but do not change what is listed.
    write_skill(
        &places.user_dir(),
        "late",
        &skill_md("late", "Came later.", "A longer body than before.\n"),
    );
    assert_eq!(tool.revision(), after);
    assert_eq!(
        tool.skills().get("late").unwrap().body,
        "A longer body than before.\n"
    );

    // A registry's revision follows its tools'.
    let registry = places.registry();
    let seen = registry.revision();
    std::fs::remove_dir_all(places.user_dir().join("late")).unwrap();
    assert_ne!(registry.revision(), seen);
}

#[tokio::test]
async fn the_example_is_what_the_tool_returns_for_that_skill() {
    let places = Places::new();
    let registry = places.registry();
    let spec = registry.get("skill").unwrap().spec().clone();
    let example = &spec.examples[0];
    let expected = &example.output;
    let folder = write_skill(
        &places.user_dir(),
        "pdf",
        &skill_md("pdf", expected["description"].as_str().unwrap(), "Body.\n"),
    );
    std::fs::create_dir(folder.join("scripts")).unwrap();
    std::fs::write(folder.join("scripts/extract.py"), "").unwrap();
    std::fs::write(folder.join("forms.md"), "").unwrap();
    let env = call(&registry, "skill", example.input.clone()).await;
    let mut data = success_data(&env).clone();
    // The paths are this machine's.
    assert_eq!(data["path"], json!(folder.display().to_string()));
    data["path"] = expected["path"].clone();
    data["file"] = expected["file"].clone();
    assert_eq!(&data, expected);
}

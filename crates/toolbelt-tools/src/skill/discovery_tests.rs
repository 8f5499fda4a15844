#![allow(clippy::unwrap_used)]

use pretty_assertions::assert_eq;

use super::*;

fn write_skill(dir: &Path, folder: &str, text: &str) -> PathBuf {
    let folder = dir.join(folder);
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(folder.join(SKILL_FILE), text).unwrap();
    folder
}

#[test]
fn names_are_short_and_safe() {
    for good in ["pdf", "pdf-tools", "a.b_c", "9lives"] {
        assert_eq!(check_name(good), Ok(()), "{good}");
    }
    for bad in [
        "",
        ".hidden",
        "-x",
        "a/b",
        "a b",
        "..",
        "ünï",
        &"x".repeat(65),
    ] {
        assert!(check_name(bad).is_err(), "{bad:?}");
    }
    assert_eq!(
        check_name("a/b").unwrap_err().to_string(),
        "'/' is not allowed; use letters, digits, '-', '_' and '.'"
    );
}

#[test]
fn the_line_of_a_field_is_found_in_the_front_matter_only() {
    let text = "---\ndescription: d\nname: x y\n---\nname: in the body\n";
    assert_eq!(field_line(text, "name"), Some(3));
    assert_eq!(field_line("---\n---\nname: body\n", "name"), None);
}

#[test]
fn close_names_are_suggested() {
    let names: Vec<String> = ["pdf", "docx", "xlsx", "pptx"].map(String::from).to_vec();
    assert_eq!(closest("pdff", &names), vec!["pdf".to_string()]);
    // Nothing close: the three best are offered anyway when there are many.
    assert_eq!(closest("zzzzzz", &names).len(), 3);
    assert_eq!(closest("zzzzzz", &names[..2]), Vec::<String>::new());
}

#[test]
fn an_unchanged_directory_is_not_parsed_again() {
    let dir = tempfile::tempdir().unwrap();
    let skills = Skills::new(vec![dir.path().to_path_buf()]);
    write_skill(
        dir.path(),
        "a",
        "---\nname: a\ndescription: A.\n---\nBody.\n",
    );
    let first = skills.catalog();
    assert!(Arc::ptr_eq(&first, &skills.catalog()));
    // A change of size is a change even within the clock's resolution.
    write_skill(
        dir.path(),
        "a",
        "---\nname: a\ndescription: A, changed.\n---\n",
    );
    let second = skills.catalog();
    assert!(!Arc::ptr_eq(&first, &second));
    assert_eq!(second.skills[0].description, "A, changed.");
    assert_ne!(first.revision, second.revision);
}

#[test]
fn loose_markdown_files_and_empty_folders_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("pdf.md"), "---\nname: pdf\n---\n").unwrap();
    std::fs::create_dir(dir.path().join("empty")).unwrap();
    std::fs::write(dir.path().join("notes.txt"), "ignored").unwrap();
    let scan = Skills::new(vec![dir.path().to_path_buf()]).scan();
    assert_eq!(scan.skills, Vec::new());
    let messages: Vec<String> = scan.problems.iter().map(ToString::to_string).collect();
    assert_eq!(messages.len(), 2, "{messages:#?}");
    assert!(messages[0].contains("no SKILL.md"), "{messages:#?}");
    assert!(
        messages[1].contains(&format!(
            "move it to {}",
            dir.path().join("pdf").join("SKILL.md").display()
        )),
        "{messages:#?}"
    );
}

#[test]
fn files_beside_skill_md_are_listed_relative_and_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let folder = write_skill(dir.path(), "s", "---\nname: s\ndescription: S.\n---\n");
    std::fs::create_dir_all(folder.join("scripts")).unwrap();
    std::fs::create_dir_all(folder.join("__pycache__")).unwrap();
    std::fs::write(folder.join("scripts/run.py"), "").unwrap();
    std::fs::write(folder.join("__pycache__/run.pyc"), "").unwrap();
    std::fs::write(folder.join(".secret"), "").unwrap();
    std::fs::write(folder.join("reference.md"), "").unwrap();
    let skill = Skills::new(vec![dir.path().to_path_buf()])
        .get("s")
        .unwrap();
    assert_eq!(
        skill.files(),
        (
            vec!["reference.md".to_string(), "scripts/run.py".to_string()],
            false
        )
    );
    for i in 0..60 {
        std::fs::write(folder.join(format!("f{i:02}.txt")), "").unwrap();
    }
    let (files, more) = skill.files();
    assert_eq!(files.len(), MAX_LISTED_FILES);
    assert!(more);
}

#[test]
fn a_large_or_binary_skill_file_is_a_problem() {
    let dir = tempfile::tempdir().unwrap();
    let big = "x".repeat(usize::try_from(MAX_SKILL_FILE_BYTES).unwrap() + 1);
    write_skill(dir.path(), "big", &big);
    let folder = dir.path().join("bin");
    std::fs::create_dir(&folder).unwrap();
    std::fs::write(folder.join(SKILL_FILE), b"---\nname: \xff\n---\n").unwrap();
    let scan = Skills::new(vec![dir.path().to_path_buf()]).scan();
    assert_eq!(scan.skills, Vec::new());
    assert!(
        scan.problems[0].message.contains("over the limit"),
        "{scan:#?}"
    );
    assert!(scan.problems[1].message.contains("not UTF-8"), "{scan:#?}");
}

use std::path::{Path, PathBuf};

use super::*;

#[test]
fn normalize_folds_dots_as_text() {
    assert_eq!(normalize(Path::new("/a/./b/../c")), PathBuf::from("/a/c"));
    assert_eq!(normalize(Path::new("/../..")), PathBuf::from("/"));
    assert_eq!(normalize(Path::new("/a//b/")), PathBuf::from("/a/b"));
}

#[test]
fn climbs_out_counts_depth() {
    assert!(climbs_out(Path::new(""), Path::new("../x")));
    assert!(!climbs_out(Path::new("a"), Path::new("../x")));
    assert!(climbs_out(Path::new("a"), Path::new("../../x")));
    assert!(!climbs_out(Path::new("a"), Path::new("b/../../x")));
    assert!(climbs_out(Path::new("a"), Path::new("b/../../../x")));
}

#[test]
fn check_input_refuses_what_no_path_should_be() {
    assert!(check_input("src/main.rs").is_ok());
    assert!(
        check_input("~user/x").is_ok(),
        "only `~` and `~/...` mean home"
    );
    for bad in ["", "a\0b", "~", "~/x"] {
        assert!(check_input(bad).is_err(), "{bad:?}");
    }
    assert!(check_input(&"x".repeat(MAX_PATH_BYTES + 1)).is_err());
}

#[test]
fn display_is_relative_to_the_cwd_when_beneath_it() {
    let p = WorkPath::new(0, Path::new("/w"), PathBuf::from("src/a.rs"));
    assert_eq!(p.display(Path::new("/w")), "src/a.rs");
    assert_eq!(p.display(Path::new("/w/src")), "a.rs");
    assert_eq!(p.display(Path::new("/w/src/a.rs")), ".");
    assert_eq!(p.display(Path::new("/w/docs")), "/w/src/a.rs");
    let root = WorkPath::new(0, Path::new("/w"), PathBuf::new());
    assert_eq!(root.abs(), Path::new("/w"));
}

#[test]
fn beneath_is_a_component_wise_prefix() {
    assert_eq!(
        beneath(Path::new("/w/a/b"), Path::new("/w")),
        Some(Path::new("a/b"))
    );
    assert_eq!(beneath(Path::new("/w2/a"), Path::new("/w")), None);
    assert_eq!(beneath(Path::new("/w"), Path::new("/w")), None);
    assert_eq!(beneath(Path::new("/w/"), Path::new("/w")), None);
    assert_eq!(
        beneath(Path::new("/etc/passwd"), Path::new("/")),
        Some(Path::new("etc/passwd"))
    );
}

#[test]
fn temp_names_are_recognised_as_such() {
    for kind in TempKind::ALL {
        let name = temp_name(kind);
        assert!(is_temp_name(&name), "{name}");
        assert!(name.ends_with(&format!(".{}", kind.extension())), "{name}");
    }
}

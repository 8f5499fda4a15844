//! Toolsets: named groups of tools, and the [`ToolSelection`] that narrows a
//! registry to the tools one session serves (`--tools coding,-bash`).
//!
//! Sets are plain data ([`Toolset`]); the built-in ones live with the tools. A
//! selection names sets or tools (canonical or as the profile exposes them); items
//! written `-name` are taken out. An empty selection keeps every tool.
//!
//! ```
//! use toolbelt_core::toolset::{ToolSelection, Toolset};
//!
//! const SETS: &[Toolset] = &[Toolset::new("search", "Find files.", &["grep", "glob"], &[])];
//! let selection = ToolSelection::parse("search,-glob");
//! let known = ["grep", "glob", "bash"];
//! let keep = selection.resolve(SETS, &|n| known.contains(&n).then(|| n.to_string()), &known).unwrap();
//! assert_eq!(keep.into_iter().collect::<Vec<_>>(), ["grep"]);
//! ```

use std::collections::BTreeSet;
use std::fmt;

/// A named group of tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Toolset {
    /// The name used in `--tools` and config files (`files`, `coding`).
    pub name: &'static str,
    /// One line on what the set is for.
    pub summary: &'static str,
    /// Canonical names of the tools in the set.
    pub tools: &'static [&'static str],
    /// Other sets whose tools belong to this one too.
    pub sets: &'static [&'static str],
}

impl Toolset {
    /// A set of `tools` plus the tools of `sets`.
    pub const fn new(
        name: &'static str,
        summary: &'static str,
        tools: &'static [&'static str],
        sets: &'static [&'static str],
    ) -> Toolset {
        Toolset {
            name,
            summary,
            tools,
            sets,
        }
    }

    /// The canonical names of every tool in the set, its included sets' too.
    pub fn members(&self, all: &[Toolset]) -> BTreeSet<&'static str> {
        let mut out = BTreeSet::new();
        let mut seen = BTreeSet::new();
        collect(self, all, &mut out, &mut seen);
        out
    }
}

fn collect(
    set: &Toolset,
    all: &[Toolset],
    out: &mut BTreeSet<&'static str>,
    seen: &mut BTreeSet<&'static str>,
) {
    if !seen.insert(set.name) {
        return;
    }
    out.extend(set.tools.iter().copied());
    for name in set.sets {
        if let Some(inner) = all.iter().find(|s| s.name == *name) {
            collect(inner, all, out, seen);
        }
    }
}

/// Which tools a session serves: sets and tools to enable (none: all) and to
/// disable (applied after).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolSelection {
    enable: Vec<String>,
    disable: Vec<String>,
}

impl ToolSelection {
    /// Every tool.
    pub fn all() -> ToolSelection {
        ToolSelection::default()
    }

    /// Reads a list such as `coding,web,-bash` (commas or spaces between items; an
    /// item written `-name` is disabled).
    pub fn parse(list: &str) -> ToolSelection {
        let mut selection = ToolSelection::default();
        for item in list.split([',', ' ', '\t', '\n']).map(str::trim) {
            if let Some(name) = item.strip_prefix('-') {
                selection.disable(name.trim());
            } else {
                selection.enable(item);
            }
        }
        selection
    }

    /// Adds a set or tool to enable (blank names are ignored).
    pub fn enable(&mut self, name: &str) -> &mut ToolSelection {
        if !name.is_empty() {
            self.enable.push(name.to_string());
        }
        self
    }

    /// Adds a set or tool to disable (blank names are ignored).
    pub fn disable(&mut self, name: &str) -> &mut ToolSelection {
        if !name.is_empty() {
            self.disable.push(name.to_string());
        }
        self
    }

    /// True when every tool is kept.
    pub fn is_all(&self) -> bool {
        self.enable.is_empty() && self.disable.is_empty()
    }

    /// The tools to keep: canonical names from sets and from `canonical`, which maps
    /// a name as written (canonical or exposed) to the canonical name of a
    /// registered tool; with nothing enabled, `registered` (the names of every
    /// registered tool, also listed in errors) minus what is disabled. Tools of a
    /// set that are not registered here are fine (the `message` set without a
    /// channel keeps nothing).
    ///
    /// # Errors
    /// A name that is neither a set, a registered tool nor a tool of a set; the
    /// error lists the valid sets and tools.
    pub fn resolve(
        &self,
        sets: &[Toolset],
        canonical: &dyn Fn(&str) -> Option<String>,
        registered: &[&str],
    ) -> Result<BTreeSet<String>, SelectionError> {
        let expand = |name: &str| -> Result<BTreeSet<String>, SelectionError> {
            if let Some(set) = sets.iter().find(|s| s.name == name) {
                return Ok(set.members(sets).into_iter().map(String::from).collect());
            }
            if let Some(c) = canonical(name) {
                return Ok(BTreeSet::from([c]));
            }
            if sets.iter().any(|s| s.tools.contains(&name)) {
                return Ok(BTreeSet::from([name.to_string()]));
            }
            Err(SelectionError {
                name: name.to_string(),
                sets: sets.iter().map(|s| s.name.to_string()).collect(),
                tools: registered.iter().map(|t| (*t).to_string()).collect(),
            })
        };
        let mut keep: BTreeSet<String> = if self.enable.is_empty() {
            registered.iter().map(|t| (*t).to_string()).collect()
        } else {
            let mut keep = BTreeSet::new();
            for name in &self.enable {
                keep.extend(expand(name)?);
            }
            keep
        };
        for name in &self.disable {
            for tool in expand(name)? {
                keep.remove(&tool);
            }
        }
        Ok(keep)
    }
}

/// A name in a [`ToolSelection`] that is neither a set nor a tool.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct SelectionError {
    /// The name as written.
    pub name: String,
    /// The sets there are.
    pub sets: Vec<String>,
    /// The tools there are (as the profile exposes them).
    pub tools: Vec<String>,
}

impl fmt::Display for SelectionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown toolset or tool {:?}; toolsets: {}; tools: {}",
            self.name,
            self.sets.join(", "),
            self.tools.join(", ")
        )
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    const SETS: &[Toolset] = &[
        Toolset::new("files", "", &["read_file", "write_file"], &[]),
        Toolset::new("search", "", &["grep", "glob"], &[]),
        Toolset::new("message", "", &["message"], &[]),
        Toolset::new("empty", "", &[], &[]),
        Toolset::new("coding", "", &["think"], &["files", "search", "coding"]),
    ];
    const REGISTERED: [&str; 6] = ["bash", "glob", "grep", "read_file", "think", "write_file"];

    fn resolve(list: &str) -> Result<Vec<String>, SelectionError> {
        let canonical = |n: &str| {
            let n = if n == "Read" { "read_file" } else { n };
            REGISTERED.contains(&n).then(|| n.to_string())
        };
        ToolSelection::parse(list)
            .resolve(SETS, &canonical, &REGISTERED)
            .map(|s| s.into_iter().collect())
    }

    #[test]
    fn empty_keeps_everything() {
        assert!(ToolSelection::parse(" , ").is_all());
        assert_eq!(resolve("").unwrap(), REGISTERED);
    }

    #[test]
    fn sets_nest_and_tools_add_and_minus_removes() {
        assert_eq!(
            resolve("coding").unwrap(),
            ["glob", "grep", "read_file", "think", "write_file"]
        );
        assert_eq!(
            resolve("search, Read").unwrap(),
            ["glob", "grep", "read_file"]
        );
        assert_eq!(resolve("coding,-files,-grep").unwrap(), ["glob", "think"]);
        assert_eq!(
            resolve("-search").unwrap(),
            ["bash", "read_file", "think", "write_file"]
        );
        assert_eq!(resolve("empty").unwrap(), Vec::<String>::new());
    }

    #[test]
    fn tools_of_a_set_that_are_not_registered_are_accepted() {
        assert_eq!(resolve("message").unwrap(), ["message"]);
    }

    #[test]
    fn unknown_names_list_the_valid_ones() {
        let e = resolve("coding,nope").unwrap_err();
        assert_eq!(e.name, "nope");
        let text = e.to_string();
        assert!(
            text.contains("toolsets: files, search, message, empty, coding"),
            "{text}"
        );
        assert!(text.contains("tools: bash, glob"), "{text}");
        assert!(resolve("-nope").is_err());
    }
}

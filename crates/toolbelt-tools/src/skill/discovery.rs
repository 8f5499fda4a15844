//! Finding skills on disk: [`Skills`] scans the skill directories, parses each
//! `SKILL.md` and keeps the result until a file or directory changes.

use std::collections::BTreeMap;
use std::fmt;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use serde::Deserialize;
use toolbelt_core::closest::STRONG_MATCH;
use toolbelt_core::error_chain;
use toolbelt_core::front_matter::{self, FrontMatterError};
use toolbelt_core::sync::lock;

/// The file that makes a folder a skill.
pub const SKILL_FILE: &str = "SKILL.md";
/// Longest skill name, in bytes.
pub(crate) const MAX_SKILL_NAME_LEN: usize = 64;
/// Largest `SKILL.md` read, in bytes; a larger one is reported and skipped.
pub(crate) const MAX_SKILL_FILE_BYTES: u64 = 1024 * 1024;
/// Entries of one skills directory looked at; the rest are reported and ignored.
pub(crate) const MAX_ENTRIES_PER_DIR: usize = 1_000;
/// Files of a skill's folder listed by [`Skill::files`].
pub(crate) const MAX_LISTED_FILES: usize = 50;
/// How deep [`Skill::files`] goes below the skill's folder.
const MAX_FILES_DEPTH: usize = 4;
/// Folders [`Skill::files`] does not enter: caches and installed packages.
const SKIPPED_FOLDERS: [&str; 3] = ["node_modules", "__pycache__", "target"];

/// One skill: a folder holding a `SKILL.md` whose front matter names and
/// describes it and whose body tells the model what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    /// The name from the front matter (letters, digits, `-`, `_`, `.`).
    pub name: String,
    /// When to use it, from the front matter.
    pub description: String,
    /// The skill's folder.
    pub dir: PathBuf,
    /// Its `SKILL.md`.
    pub file: PathBuf,
    /// The skills directory it was found in.
    pub source: PathBuf,
    /// The instructions: the Markdown after the front matter.
    pub body: String,
}

impl Skill {
    /// What a model reads when it loads the skill: a line naming the skill and its
    /// folder (its scripts and files are relative to it), then the instructions.
    pub fn instructions(&self) -> String {
        format!(
            "Skill \"{}\" from the folder {} (run its scripts and open its files from there).\n\n{}",
            self.name,
            self.dir.display(),
            self.body.trim_start_matches(['\r', '\n'])
        )
    }

    /// The other files of the skill's folder, relative to it with `/` between
    /// parts, sorted, at most 50; `true` when there are more.
    /// Hidden entries and package caches are left out; symbolic links to folders
    /// are listed, not entered.
    pub fn files(&self) -> (Vec<String>, bool) {
        let mut files = Vec::new();
        let more = list_files(&self.dir, "", 0, &mut files);
        (files, more)
    }
}

/// Lists the files below `dir` into `out`; true when it stopped at the limit.
fn list_files(dir: &Path, prefix: &str, depth: usize, out: &mut Vec<String>) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    let mut entries: Vec<(String, PathBuf, bool)> = entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let is_dir = e.file_type().is_ok_and(|t| t.is_dir());
            (!name.starts_with('.')).then(|| (name, e.path(), is_dir))
        })
        .collect();
    entries.sort();
    for (name, path, is_dir) in entries {
        let relative = format!("{prefix}{name}");
        if is_dir {
            if depth + 1 < MAX_FILES_DEPTH
                && !SKIPPED_FOLDERS.contains(&name.as_str())
                && list_files(&path, &format!("{relative}/"), depth + 1, out)
            {
                return true;
            }
            continue;
        }
        if depth == 0 && name == SKILL_FILE {
            continue;
        }
        if out.len() == MAX_LISTED_FILES {
            return true;
        }
        out.push(relative);
    }
    false
}

/// Something wrong with a would-be skill, reported (by `toolbelt doctor`) and
/// skipped, never fatal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillProblem {
    /// The file or folder concerned.
    pub path: PathBuf,
    /// What is wrong and what to do, with the line when one is known.
    pub message: String,
}

impl fmt::Display for SkillProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.message)
    }
}

/// Everything a scan found: the skills and the problems.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SkillScan {
    /// The usable skills, one per name, sorted by name.
    pub skills: Vec<Skill>,
    /// What was skipped and why.
    pub problems: Vec<SkillProblem>,
}

/// A name that is no skill, with the names closest to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownSkill {
    /// The name asked for.
    pub name: String,
    /// The closest names, best first (at most three).
    pub closest: Vec<String>,
    /// Every skill's name.
    pub available: Vec<String>,
    /// The folders searched for skills, in precedence order.
    pub dirs: Vec<PathBuf>,
}

impl fmt::Display for UnknownSkill {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let quoted = |names: &[String]| {
            names
                .iter()
                .map(|n| format!("{n:?}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        if self.available.is_empty() {
            write!(
                f,
                "there is no skill named {:?}: no skills are installed",
                self.name
            )
        } else if self.closest.is_empty() {
            write!(
                f,
                "there is no skill named {:?}; the skills are {}",
                self.name,
                quoted(&self.available)
            )
        } else {
            write!(
                f,
                "there is no skill named {:?}; did you mean {}?",
                self.name,
                quoted(&self.closest)
            )
        }
    }
}

impl std::error::Error for UnknownSkill {}

/// The skills of some directories, found again whenever they change. Cheap to
/// clone: clones share one cache.
///
/// Each call ([`Skills::scan`], [`Skills::get`], [`Skills::revision`]) reads the
/// directories and stats the `SKILL.md` files (a few system calls); the files are
/// parsed again only when a path, modification time or size changed.
///
/// ```
/// use toolbelt_tools::Skills;
///
/// let root = tempfile::tempdir().unwrap();
/// let dir = root.path().join(".toolbelt/skills/hello");
/// std::fs::create_dir_all(&dir).unwrap();
/// std::fs::write(dir.join("SKILL.md"), "---\nname: hello\ndescription: Greets.\n---\nSay hello.\n").unwrap();
///
/// let skills = Skills::discover(&[root.path().to_path_buf()], None);
/// let hello = skills.get("hello").unwrap();
/// assert_eq!(hello.description, "Greets.");
/// assert_eq!(hello.body, "Say hello.\n");
/// ```
///
/// # Security
/// Skills are read outside the workspace roots (the user's own skills live in
/// the config home), but only the `SKILL.md` files found here are ever read.
#[derive(Clone)]
pub struct Skills {
    inner: Arc<Inner>,
}

struct Inner {
    /// The directories of the workspace roots, in precedence order.
    root_dirs: Vec<PathBuf>,
    /// The directories after them (the user's).
    other_dirs: Vec<PathBuf>,
    /// The last scan and what it was made of.
    cache: Mutex<Option<(Fingerprint, Arc<Catalog>)>>,
}

impl fmt::Debug for Skills {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Skills")
            .field("dirs", &self.dirs())
            .finish_non_exhaustive()
    }
}

/// The skills directories of `roots` and of the user, in precedence order: for
/// each root `<root>/.toolbelt/skills` then `<root>/.claude/skills` (Claude's
/// skills), then `<config_home>/skills`.
pub fn skill_dirs(roots: &[PathBuf], config_home: Option<&Path>) -> Vec<PathBuf> {
    let mut dirs = root_skill_dirs(roots);
    dirs.extend(config_home.map(|home| home.join("skills")));
    dedup(dirs)
}

fn root_skill_dirs(roots: &[PathBuf]) -> Vec<PathBuf> {
    roots
        .iter()
        .flat_map(|root| {
            [
                root.join(".toolbelt").join("skills"),
                root.join(".claude").join("skills"),
            ]
        })
        .collect()
}

/// `dirs` without repeats, first occurrence kept.
fn dedup(dirs: Vec<PathBuf>) -> Vec<PathBuf> {
    let mut seen = std::collections::BTreeSet::new();
    dirs.into_iter()
        .filter(|d| seen.insert(d.clone()))
        .collect()
}

impl Skills {
    /// The skills of `dirs`; when two define one name, the first directory wins.
    pub fn new(dirs: Vec<PathBuf>) -> Skills {
        Skills::with_dirs(Vec::new(), dirs)
    }

    /// The skills of the workspace `roots` and of the user's `config_home`, in the
    /// order of [`skill_dirs`].
    pub fn discover(roots: &[PathBuf], config_home: Option<&Path>) -> Skills {
        let other = config_home.map(|h| h.join("skills")).into_iter().collect();
        Skills::with_dirs(root_skill_dirs(roots), other)
    }

    /// [`Skills::discover`] with the config home of this process's environment
    /// ([`toolbelt_core::state::user_config_home_from_env`]).
    pub fn from_env(roots: &[PathBuf]) -> Skills {
        let home = toolbelt_core::state::user_config_home_from_env();
        Skills::discover(roots, home.as_deref())
    }

    /// The skills of other workspace `roots`, with the same directories after
    /// them (the user's) as these. Shares no cache with `self`.
    pub fn for_roots(&self, roots: &[PathBuf]) -> Skills {
        Skills::with_dirs(root_skill_dirs(roots), self.inner.other_dirs.clone())
    }

    fn with_dirs(root_dirs: Vec<PathBuf>, other_dirs: Vec<PathBuf>) -> Skills {
        Skills {
            inner: Arc::new(Inner {
                root_dirs,
                other_dirs,
                cache: Mutex::new(None),
            }),
        }
    }

    /// The directories searched, in precedence order.
    pub fn dirs(&self) -> Vec<PathBuf> {
        let mut dirs = self.inner.root_dirs.clone();
        dirs.extend(self.inner.other_dirs.iter().cloned());
        dedup(dirs)
    }

    /// The skills and the problems found now.
    pub fn scan(&self) -> SkillScan {
        let catalog = self.catalog();
        SkillScan {
            skills: catalog.skills.clone(),
            problems: catalog.problems.clone(),
        }
    }

    /// The skill named `name`.
    ///
    /// # Errors
    /// No skill has that name: the error names the closest ones.
    pub fn get(&self, name: &str) -> Result<Skill, UnknownSkill> {
        let catalog = self.catalog();
        if let Some(skill) = catalog.skills.iter().find(|s| s.name == name) {
            return Ok(skill.clone());
        }
        let available: Vec<String> = catalog.skills.iter().map(|s| s.name.clone()).collect();
        Err(UnknownSkill {
            name: name.to_string(),
            closest: closest(name, &available),
            available,
            dirs: self.dirs(),
        })
    }

    /// A number that changes when a skill appears, goes or changes its name,
    /// description or folder (not its instructions).
    pub fn revision(&self) -> u64 {
        self.catalog().revision
    }

    /// The scan, parsed again only when the fingerprint changed.
    pub(crate) fn catalog(&self) -> Arc<Catalog> {
        let listing = list(&self.dirs());
        {
            let cache = lock(&self.inner.cache);
            if let Some((print, catalog)) = cache.as_ref()
                && *print == listing.print
            {
                return Arc::clone(catalog);
            }
        }
        let print = listing.print.clone();
        let catalog = Arc::new(parse_listing(listing));
        *lock(&self.inner.cache) = Some((print, Arc::clone(&catalog)));
        catalog
    }
}

/// The names of `names` closest to `name`: those similar enough, best first, at
/// most three; else the three best.
fn closest(name: &str, names: &[String]) -> Vec<String> {
    let ranked = toolbelt_core::closest::closest(name, names.iter().map(String::as_str), 3);
    let strong: Vec<String> = ranked
        .iter()
        .filter(|m| m.score >= STRONG_MATCH)
        .map(|m| m.name.to_owned())
        .collect();
    if strong.is_empty() && names.len() > 3 {
        ranked.iter().map(|m| m.name.to_owned()).collect()
    } else {
        strong
    }
}

/// A parsed scan.
#[derive(Debug)]
pub(crate) struct Catalog {
    /// One skill per name, sorted by name.
    pub(crate) skills: Vec<Skill>,
    /// What was skipped.
    pub(crate) problems: Vec<SkillProblem>,
    /// See [`Skills::revision`].
    pub(crate) revision: u64,
}

/// What the directories hold, by path, modification time and size: a scan with
/// the same fingerprint parses to the same skills.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Fingerprint(Vec<(PathBuf, Option<SystemTime>, u64)>);

/// One `SKILL.md` to parse.
struct Candidate {
    source: PathBuf,
    dir: PathBuf,
    file: PathBuf,
    size: u64,
}

/// A directory listing: what to parse, what is already wrong, and the fingerprint.
struct Listing {
    candidates: Vec<Candidate>,
    problems: Vec<SkillProblem>,
    print: Fingerprint,
}

/// Reads `dirs` and stats the `SKILL.md` files in their folders.
fn list(dirs: &[PathBuf]) -> Listing {
    let mut listing = Listing {
        candidates: Vec::new(),
        problems: Vec::new(),
        print: Fingerprint(Vec::new()),
    };
    for dir in dirs {
        let modified = std::fs::metadata(dir)
            .ok()
            .filter(std::fs::Metadata::is_dir)
            .map(|m| m.modified().unwrap_or(SystemTime::UNIX_EPOCH));
        listing.print.0.push((dir.clone(), modified, 0));
        if modified.is_none() {
            continue;
        }
        let entries = match std::fs::read_dir(dir) {
            Ok(entries) => entries,
            Err(e) => {
                listing.problems.push(SkillProblem {
                    path: dir.clone(),
                    message: format!("the skills directory cannot be read: {}", error_chain(&e)),
                });
                continue;
            }
        };
        let mut names: Vec<String> = entries
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| !n.starts_with('.'))
            .collect();
        names.sort();
        if names.len() > MAX_ENTRIES_PER_DIR {
            listing.problems.push(SkillProblem {
                path: dir.clone(),
                message: format!(
                    "the directory holds {} entries; only the first {MAX_ENTRIES_PER_DIR} (by name) are looked at",
                    names.len()
                ),
            });
            names.truncate(MAX_ENTRIES_PER_DIR);
        }
        for name in names {
            look_at(dir, &name, &mut listing);
        }
    }
    listing
}

/// Looks at the entry `name` of the skills directory `dir`.
fn look_at(dir: &Path, name: &str, listing: &mut Listing) {
    let path = dir.join(name);
    // Followed: a skill's folder may be a link to where it is kept.
    let Ok(meta) = std::fs::metadata(&path) else {
        return;
    };
    if !meta.is_dir() {
        if Path::new(name)
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("md"))
        {
            let stem = name.get(..name.len() - 3).unwrap_or(name);
            listing.problems.push(SkillProblem {
                message: format!(
                    "a skill is a folder holding a {SKILL_FILE}, not a Markdown file: move it to {}",
                    dir.join(stem).join(SKILL_FILE).display()
                ),
                path,
            });
        }
        return;
    }
    let file = path.join(SKILL_FILE);
    match std::fs::metadata(&file) {
        Ok(meta) if meta.is_file() => {
            let modified = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
            listing
                .print
                .0
                .push((file.clone(), Some(modified), meta.len()));
            listing.candidates.push(Candidate {
                source: dir.to_path_buf(),
                dir: path,
                file,
                size: meta.len(),
            });
        }
        _ => {
            listing.print.0.push((file, None, 0));
            listing.problems.push(SkillProblem {
                message: format!(
                    "the folder has no {SKILL_FILE}; a skill is a folder holding a {SKILL_FILE} that starts with front matter (name, description)"
                ),
                path,
            });
        }
    }
}

/// The front matter of a `SKILL.md`. Other keys (`license`, `allowed-tools`,
/// `metadata`, ... in Claude's skills) are allowed and ignored.
#[derive(Deserialize)]
struct Meta {
    name: String,
    description: String,
}

/// Parses the candidates of `listing`: the skills, the first of each name kept.
fn parse_listing(listing: Listing) -> Catalog {
    let mut problems = listing.problems;
    let mut by_name: BTreeMap<String, Skill> = BTreeMap::new();
    for candidate in listing.candidates {
        let skill = match parse_candidate(&candidate) {
            Ok(skill) => skill,
            Err(e) => {
                problems.push(SkillProblem {
                    path: candidate.file,
                    message: error_chain(&e),
                });
                continue;
            }
        };
        if let Some(first) = by_name.get(&skill.name) {
            problems.push(SkillProblem {
                message: format!(
                    "the skill {:?} is also defined in {}, which comes first; this one is ignored",
                    skill.name,
                    first.file.display()
                ),
                path: skill.file,
            });
            continue;
        }
        by_name.insert(skill.name.clone(), skill);
    }
    let skills: Vec<Skill> = by_name.into_values().collect();
    let mut hasher = DefaultHasher::new();
    for skill in &skills {
        (&skill.name, &skill.description, &skill.dir).hash(&mut hasher);
    }
    Catalog {
        skills,
        problems,
        revision: hasher.finish(),
    }
}

/// What is wrong with a `SKILL.md`, in the words of a [`SkillProblem`] (the
/// message of the error, then each of its causes, joined with `: `).
#[derive(Debug, thiserror::Error)]
enum SkillFileError {
    /// Over [`MAX_SKILL_FILE_BYTES`].
    #[error(
        "the file is {size} bytes, over the limit of {MAX_SKILL_FILE_BYTES}; keep {SKILL_FILE} short and move details to other files in the folder"
    )]
    TooLarge { size: u64 },
    /// The file cannot be read.
    #[error("the file cannot be read")]
    Unreadable(#[source] std::io::Error),
    /// The file is not UTF-8.
    #[error("the file is not UTF-8 text (invalid byte at offset {offset})")]
    NotUtf8 {
        /// The offset of the first byte that is not UTF-8.
        offset: usize,
    },
    /// The file does not start with front matter.
    #[error(
        "the file does not start with front matter: write `---`, `name: ...`, `description: ...` and `---` as its first lines ({})",
        FrontMatterError::Missing
    )]
    NoFrontMatter,
    /// The front matter cannot be read: its own error says what to write.
    #[error(transparent)]
    FrontMatter(FrontMatterError),
    /// The name cannot name a skill.
    #[error("invalid name {name:?}{}", at_line(*.line))]
    Name {
        name: String,
        /// The line of `name:` in the file.
        line: Option<usize>,
        #[source]
        why: BadName,
    },
    /// The description is empty.
    #[error(
        "the description is empty{}: say what the skill does and when to use it",
        at_line(*.line)
    )]
    NoDescription {
        /// The line of `description:` in the file.
        line: Option<usize>,
    },
}

impl From<FrontMatterError> for SkillFileError {
    fn from(e: FrontMatterError) -> SkillFileError {
        match e {
            FrontMatterError::Missing => SkillFileError::NoFrontMatter,
            other => SkillFileError::FrontMatter(other),
        }
    }
}

/// Why a name cannot name a skill.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum BadName {
    #[error("the name is empty")]
    Empty,
    #[error("the name is {0} characters long; at most {MAX_SKILL_NAME_LEN}")]
    TooLong(usize),
    #[error("{0:?} is not allowed; use letters, digits, '-', '_' and '.'")]
    Char(char),
    #[error("the name must start with a letter or a digit")]
    Start,
}

/// ` (line N)`, or nothing when the line is not known.
fn at_line(line: Option<usize>) -> String {
    line.map_or_else(String::new, |l| format!(" (line {l})"))
}

/// One skill from its `SKILL.md`, or what is wrong with it.
fn parse_candidate(candidate: &Candidate) -> Result<Skill, SkillFileError> {
    if candidate.size > MAX_SKILL_FILE_BYTES {
        return Err(SkillFileError::TooLarge {
            size: candidate.size,
        });
    }
    let bytes = std::fs::read(&candidate.file).map_err(SkillFileError::Unreadable)?;
    let text = String::from_utf8(bytes).map_err(|e| SkillFileError::NotUtf8 {
        offset: e.utf8_error().valid_up_to(),
    })?;
    let doc = front_matter::parse::<Meta>(&text)?;
    let name = doc.meta.name.trim().to_string();
    check_name(&name).map_err(|why| SkillFileError::Name {
        line: field_line(&text, "name"),
        name: name.clone(),
        why,
    })?;
    let description = doc.meta.description.trim().to_string();
    if description.is_empty() {
        return Err(SkillFileError::NoDescription {
            line: field_line(&text, "description"),
        });
    }
    Ok(Skill {
        name,
        description,
        dir: candidate.dir.clone(),
        file: candidate.file.clone(),
        source: candidate.source.clone(),
        body: doc.body,
    })
}

/// Whether `name` can name a skill: 1 to [`MAX_SKILL_NAME_LEN`] letters, digits,
/// `-`, `_` and `.`, starting with a letter or digit.
fn check_name(name: &str) -> Result<(), BadName> {
    if name.is_empty() {
        return Err(BadName::Empty);
    }
    if name.len() > MAX_SKILL_NAME_LEN {
        return Err(BadName::TooLong(name.len()));
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
    {
        return Err(BadName::Char(bad));
    }
    if !name.starts_with(|c: char| c.is_ascii_alphanumeric()) {
        return Err(BadName::Start);
    }
    Ok(())
}

/// The 1-based line of the front matter's `field:` key, if one starts a line.
fn field_line(text: &str, field: &str) -> Option<usize> {
    let key = format!("{field}:");
    text.trim_start_matches('\u{feff}')
        .lines()
        .take_while({
            let mut fences = 0;
            move |line| {
                if line.trim_end() == "---" {
                    fences += 1;
                }
                fences < 2
            }
        })
        .position(|line| line.starts_with(&key))
        .map(|i| i + 1)
}

#[cfg(test)]
#[path = "discovery_tests.rs"]
mod tests;

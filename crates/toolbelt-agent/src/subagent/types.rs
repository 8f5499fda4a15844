//! Agent types: what a subagent is for, its system prompt and its tools. Two are
//! built in (`general-purpose`, `explore`); more come from Markdown files with
//! front matter in `.toolbelt/agents/` of the workspace and `agents/` of the
//! user's config directory.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use toolbelt_core::error_chain;
use toolbelt_core::front_matter::{self, NameList};

use crate::error::TypeFileError;
use crate::tool_names::EXPLORE_TOOLS;

/// The type `task` uses when none is named.
pub const DEFAULT_TYPE: &str = "general-purpose";

/// The longest type name accepted.
const MAX_NAME_CHARS: usize = 64;

/// One agent type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentType {
    /// Its name (`general-purpose`, `reviewer`).
    pub name: String,
    /// When to use it, as the `task` description shows it.
    pub description: String,
    /// The tools it gets, by name; `None`: every tool but the subagent tools.
    pub tools: Option<Vec<String>>,
    /// A model other than the parent's.
    pub model: Option<String>,
    /// Its system prompt (the file's body).
    pub prompt: String,
    /// The file it came from; `None` for the built-in ones.
    pub source: Option<PathBuf>,
}

/// A file that could not be read as an agent type (it is left out).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypeProblem {
    /// The file.
    pub path: PathBuf,
    /// What is wrong.
    pub message: String,
}

/// The agent types available, and the files that were left out.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AgentTypes {
    types: Vec<AgentType>,
    problems: Vec<TypeProblem>,
    dirs: Vec<PathBuf>,
}

#[derive(Debug, Deserialize)]
struct Meta {
    name: String,
    description: String,
    #[serde(default)]
    tools: Option<NameList>,
    #[serde(default)]
    model: Option<String>,
    // Keys other agents' files carry (`color`, `permissionMode`, ...) are ignored.
}

impl AgentTypes {
    /// The built-in types only.
    pub fn builtin() -> AgentTypes {
        AgentTypes {
            types: vec![
                AgentType {
                    name: DEFAULT_TYPE.into(),
                    description: "General-purpose agent for researching questions, searching code and \
                                  carrying out multi-step tasks on its own. Has every tool but the \
                                  subagent tools."
                        .into(),
                    tools: None,
                    model: None,
                    prompt: GENERAL_PROMPT.into(),
                    source: None,
                },
                AgentType {
                    name: "explore".into(),
                    description: "Fast read-only agent for exploring a codebase: finds files, searches \
                                  code, reads and answers questions about it. Cannot change files or \
                                  run commands."
                        .into(),
                    tools: Some(EXPLORE_TOOLS.iter().map(|s| s.to_string()).collect()),
                    model: None,
                    prompt: EXPLORE_PROMPT.into(),
                    source: None,
                },
            ],
            problems: Vec::new(),
            dirs: Vec::new(),
        }
    }

    /// The built-in types, then those of the `*.md` files in `dirs` (in order: a
    /// name defined twice keeps its first definition, and a file may replace a
    /// built-in type). Directories that do not exist are skipped; files that cannot
    /// be read are reported in [`AgentTypes::problems`], never fatal.
    pub fn load(dirs: &[PathBuf]) -> AgentTypes {
        let mut out = AgentTypes::builtin();
        out.dirs = dirs.to_vec();
        let mut from_files: Vec<AgentType> = Vec::new();
        for dir in dirs {
            let Ok(entries) = std::fs::read_dir(dir) else {
                continue;
            };
            let mut files: Vec<PathBuf> = entries
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == "md") && p.is_file())
                .collect();
            files.sort();
            for path in files {
                match read_type(&path) {
                    Ok(t) => {
                        if let Some(first) = from_files.iter().find(|f| f.name == t.name) {
                            out.problems.push(TypeProblem {
                                message: format!(
                                    "the agent type {:?} is also defined in {}, which is used",
                                    t.name,
                                    first
                                        .source
                                        .as_deref()
                                        .map_or_else(String::new, |p| p.display().to_string())
                                ),
                                path,
                            });
                            continue;
                        }
                        from_files.push(t);
                    }
                    Err(e) => out.problems.push(TypeProblem {
                        path,
                        message: error_chain(&e),
                    }),
                }
            }
        }
        for t in from_files {
            match out.types.iter_mut().find(|b| b.name == t.name) {
                Some(builtin) => *builtin = t,
                None => out.types.push(t),
            }
        }
        out
    }

    /// The agent type directories of a workspace: `<root>/.toolbelt/agents` of each
    /// root, then `<config home>/agents`.
    pub fn dirs(roots: &[PathBuf], config_home: Option<&Path>) -> Vec<PathBuf> {
        let mut dirs: Vec<PathBuf> = roots
            .iter()
            .map(|r| r.join(".toolbelt").join("agents"))
            .collect();
        if let Some(home) = config_home {
            dirs.push(home.join("agents"));
        }
        dirs
    }

    /// Every type, built-in first.
    pub fn all(&self) -> &[AgentType] {
        &self.types
    }

    /// The type called `name`.
    pub fn get(&self, name: &str) -> Option<&AgentType> {
        self.types.iter().find(|t| t.name == name)
    }

    /// The names, in order.
    pub fn names(&self) -> Vec<&str> {
        self.types.iter().map(|t| t.name.as_str()).collect()
    }

    /// The files that were left out, and why.
    pub fn problems(&self) -> &[TypeProblem] {
        &self.problems
    }

    /// The directories looked in.
    pub fn searched(&self) -> &[PathBuf] {
        &self.dirs
    }
}

fn read_type(path: &Path) -> Result<AgentType, TypeFileError> {
    let text = std::fs::read_to_string(path)?;
    let doc = front_matter::parse::<Meta>(&text)?;
    let name = doc.meta.name.trim().to_string();
    if name.is_empty()
        || name.chars().count() > MAX_NAME_CHARS
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    {
        return Err(TypeFileError::Name {
            name,
            max_chars: MAX_NAME_CHARS,
        });
    }
    let description = doc.meta.description.trim().to_string();
    if description.is_empty() {
        return Err(TypeFileError::NoDescription);
    }
    let prompt = doc.body.trim().to_string();
    if prompt.is_empty() {
        return Err(TypeFileError::NoPrompt);
    }
    Ok(AgentType {
        name,
        description,
        tools: doc.meta.tools.map(|t| t.names()),
        model: doc
            .meta
            .model
            .map(|m| m.trim().to_string())
            .filter(|m| !m.is_empty() && m != "inherit"),
        prompt,
        source: Some(path.to_path_buf()),
    })
}

const GENERAL_PROMPT: &str = "\
You are a subagent of toolbelt: another agent gave you one task. Work on it on your own \
with your tools until it is done, then give your final answer.

- Search and read before you act; keep changes small and focused.
- When a tool answers with an error, read its message and hint and fix the call.";

const EXPLORE_PROMPT: &str = "\
You are an exploring subagent of toolbelt: another agent asked you a question about the \
code or the web. You can only read and search; you cannot change files or run commands.

- Search broadly first (glob, grep), then read what matters.
- Answer with what you found: file paths with line numbers, short quotes, and how the \
pieces connect.";

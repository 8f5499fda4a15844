//! A patch as data: a [`Patch`] of [`FileOp`] sections, an update's [`Hunk`]s and
//! their [`HunkLine`]s.

/// A parsed patch: its file sections in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Patch {
    /// The file sections, in the order they appear.
    pub ops: Vec<FileOp>,
}

/// One file section of a patch. `line` is the 1-based patch line of its header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileOp {
    /// `*** Add File: path` followed by `+` lines: create a file.
    Add {
        /// The path as written in the patch.
        path: String,
        /// The new file's text (`\n` line ends, a final newline unless empty).
        contents: String,
        /// Patch line of the header.
        line: usize,
    },
    /// `*** Delete File: path`: remove a file.
    Delete {
        /// The path as written in the patch.
        path: String,
        /// Patch line of the header.
        line: usize,
    },
    /// `*** Update File: path`, optionally `*** Move to: path`, then hunks.
    Update {
        /// The path as written in the patch.
        path: String,
        /// The new path when the file is also renamed.
        move_to: Option<String>,
        /// The changes, in file order (may be empty for a pure rename).
        hunks: Vec<Hunk>,
        /// Patch line of the header.
        line: usize,
    },
}

impl FileOp {
    /// The path named in the section header.
    #[must_use]
    pub fn path(&self) -> &str {
        match self {
            FileOp::Add { path, .. }
            | FileOp::Delete { path, .. }
            | FileOp::Update { path, .. } => path,
        }
    }

    /// The 1-based patch line of the section header.
    #[must_use]
    pub fn line(&self) -> usize {
        match self {
            FileOp::Add { line, .. }
            | FileOp::Delete { line, .. }
            | FileOp::Update { line, .. } => *line,
        }
    }
}

/// One change inside an `*** Update File` section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hunk {
    /// `@@ text` anchors, in order: each is a line of the file that must come
    /// before the hunk (each one after the previous). Empty for a bare `@@`.
    pub anchors: Vec<String>,
    /// The hunk's lines, in order.
    pub lines: Vec<HunkLine>,
    /// `*** End of File` followed the hunk: its old lines end the file.
    pub end_of_file: bool,
    /// The 1-based patch line where the hunk starts (its first `@@` or line).
    pub line: usize,
}

impl Hunk {
    /// The lines the hunk expects in the file (context and removed lines).
    #[must_use]
    pub fn old_lines(&self) -> Vec<&str> {
        self.lines
            .iter()
            .filter_map(|l| match l {
                HunkLine::Context(t) | HunkLine::Remove(t) => Some(t.as_str()),
                HunkLine::Add(_) => None,
            })
            .collect()
    }

    /// The lines the hunk leaves in the file (context and added lines).
    #[must_use]
    pub fn new_lines(&self) -> Vec<&str> {
        self.lines
            .iter()
            .filter_map(|l| match l {
                HunkLine::Context(t) | HunkLine::Add(t) => Some(t.as_str()),
                HunkLine::Remove(_) => None,
            })
            .collect()
    }
}

/// One line of a hunk, without its prefix character.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HunkLine {
    /// ` text`: a line that stays.
    Context(String),
    /// `-text`: a line that goes.
    Remove(String),
    /// `+text`: a line that comes.
    Add(String),
}

//! Markdown files that start with YAML front matter: skills (`SKILL.md`) and agent
//! types (`.toolbelt/agents/*.md`).
//!
//! ```
//! #[derive(serde::Deserialize)]
//! struct Meta { name: String }
//! let doc = toolbelt_core::front_matter::parse::<Meta>("---\nname: pdf\n---\nUse it.\n").unwrap();
//! assert_eq!(doc.meta.name, "pdf");
//! assert_eq!(doc.body, "Use it.\n");
//! ```

use serde::de::DeserializeOwned;

/// A parsed file: its front matter and the text after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Document<T> {
    /// The front matter.
    pub meta: T,
    /// The Markdown after the closing `---`.
    pub body: String,
    /// The 1-based line the body starts on.
    pub body_line: usize,
}

/// Why a file's front matter could not be read. The messages say what to write.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FrontMatterError {
    /// The file does not start with a `---` line.
    #[error(
        "the file does not start with front matter (a `---` line, `name: ...` and `description: ...`, then `---`)"
    )]
    Missing,
    /// No closing `---` line.
    #[error("the front matter opened on line 1 is never closed (a line with `---` alone)")]
    Unclosed,
    /// The YAML is invalid or lacks a field.
    #[error("invalid front matter{}: {message}", .line.map(|l| format!(" (line {l})")).unwrap_or_default())]
    Invalid {
        /// The line of the file, when the parser knows it.
        line: Option<usize>,
        /// What is wrong.
        message: String,
    },
}

/// Splits `text` into its front matter, read as `T`, and its body.
///
/// # Errors
/// No front matter, an unclosed one, invalid YAML or YAML that is not a `T`.
pub fn parse<T: DeserializeOwned>(text: &str) -> Result<Document<T>, FrontMatterError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    let first = lines.next().ok_or(FrontMatterError::Missing)?;
    if first.trim_end() != "---" {
        return Err(FrontMatterError::Missing);
    }
    let mut yaml_len = 0;
    let mut line_no = 1;
    let mut closed = None;
    for line in lines {
        line_no += 1;
        let trimmed = line.trim_end();
        if trimmed == "---" || trimmed == "..." {
            closed = Some(first.len() + yaml_len + line.len());
            break;
        }
        yaml_len += line.len();
    }
    let body_start = closed.ok_or(FrontMatterError::Unclosed)?;
    let yaml = &text[first.len()..first.len() + yaml_len];
    let meta = serde_yaml_ng::from_str::<T>(if yaml.trim().is_empty() { "{}" } else { yaml })
        .map_err(|e| FrontMatterError::Invalid {
            // The YAML starts on the file's line 2.
            line: e.location().map(|l| l.line() + 1),
            message: strip_location(&e.to_string()),
        })?;
    Ok(Document {
        meta,
        body: text[body_start..].to_string(),
        body_line: line_no + 1,
    })
}

/// The parser's message without its " at line L column C" (the error gives the
/// file's line instead).
fn strip_location(message: &str) -> String {
    match message.find(" at line ") {
        Some(i) => message[..i].to_string(),
        None => message.to_string(),
    }
}

/// A list in front matter, written as a YAML list (`[read_file, grep]`) or as one
/// comma-separated string (`read_file, grep`, as Claude Code's agent files do).
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
#[serde(untagged)]
pub enum NameList {
    /// `[a, b]`.
    List(Vec<String>),
    /// `a, b`.
    Text(String),
}

impl NameList {
    /// The names, trimmed, empty ones left out.
    pub fn names(&self) -> Vec<String> {
        let raw: Vec<&str> = match self {
            NameList::List(items) => items.iter().map(String::as_str).collect(),
            NameList::Text(text) => text.split(',').collect(),
        };
        raw.into_iter()
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct Meta {
        name: String,
        #[serde(default)]
        tools: Option<NameList>,
    }

    #[test]
    fn body_and_fields() {
        let doc = parse::<Meta>("---\nname: a\ntools: [read_file, grep]\n---\n# A\nbody\n")
            .expect("parses");
        assert_eq!(doc.meta.name, "a");
        assert_eq!(
            doc.meta.tools.map(|t| t.names()),
            Some(vec!["read_file".to_string(), "grep".to_string()])
        );
        assert_eq!(doc.body, "# A\nbody\n");
        assert_eq!(doc.body_line, 5);
        let doc =
            parse::<Meta>("\u{feff}---\r\nname: b\r\ntools: Read, Grep\r\n---\r\n").expect("crlf");
        assert_eq!(
            doc.meta.tools.map(|t| t.names()),
            Some(vec!["Read".into(), "Grep".into()])
        );
        assert_eq!(doc.body, "");
    }

    #[test]
    fn errors_say_what_is_wrong() {
        assert_eq!(
            parse::<Meta>("# just markdown\n"),
            Err(FrontMatterError::Missing)
        );
        assert_eq!(parse::<Meta>(""), Err(FrontMatterError::Missing));
        assert_eq!(
            parse::<Meta>("---\nname: a\n"),
            Err(FrontMatterError::Unclosed)
        );
        let missing = parse::<Meta>("---\ntools: [a]\n---\n").expect_err("no name");
        assert!(
            missing.to_string().contains("missing field `name`"),
            "{missing}"
        );
        let bad = parse::<Meta>("---\nname: a\nname: [\n---\n").expect_err("bad yaml");
        match bad {
            FrontMatterError::Invalid { line, .. } => assert!(line.is_some_and(|l| l >= 2)),
            other => panic!("{other:?}"),
        }
        let unknown = parse::<Meta>("---\nname: a\ncolour: red\n---\n").expect_err("unknown");
        assert!(unknown.to_string().contains("colour"), "{unknown}");
    }
}

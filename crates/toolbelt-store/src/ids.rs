//! Planner ids as models see them: `project-12`, `goal-3`, `task-40`, `review-7`.

use std::fmt;

use crate::error::{StoreError, StoreResult};

/// The kind of a planner record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// A project.
    Project,
    /// A goal.
    Goal,
    /// A task.
    Task,
    /// A review.
    Review,
}

impl Kind {
    /// The prefix of its ids, which is also its name in messages.
    pub fn prefix(self) -> &'static str {
        match self {
            Kind::Project => "project",
            Kind::Goal => "goal",
            Kind::Task => "task",
            Kind::Review => "review",
        }
    }

    /// The tool that lists records of this kind, for hints.
    pub fn list_tool(self) -> &'static str {
        match self {
            Kind::Project => "list_projects",
            Kind::Goal => "list_goals",
            Kind::Task => "list_tasks",
            Kind::Review => "list_reviews",
        }
    }

    const ALL: [Kind; 4] = [Kind::Project, Kind::Goal, Kind::Task, Kind::Review];
}

/// The id of one planner record: a kind and a positive number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RecordId {
    /// What it names.
    pub kind: Kind,
    /// The row's key.
    pub number: i64,
}

impl fmt::Display for RecordId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.kind.prefix(), self.number)
    }
}

impl RecordId {
    /// The id of row `number` of `kind`.
    pub fn new(kind: Kind, number: i64) -> RecordId {
        RecordId { kind, number }
    }

    /// Reads an id of `kind` as a model sends it: `project-12`, `Project-12`, `12`.
    ///
    /// # Errors
    /// [`StoreError::NotFound`] for an id of another kind (`task-3` where a project
    /// is wanted) or one that cannot name any record, saying how ids look and which
    /// tool lists them.
    pub fn parse(kind: Kind, text: &str) -> StoreResult<RecordId> {
        let t = text.trim();
        let lower = t.to_ascii_lowercase();
        let digits = match lower.split_once('-') {
            Some((prefix, rest)) => {
                if prefix != kind.prefix() {
                    if let Some(other) = Kind::ALL.into_iter().find(|k| k.prefix() == prefix) {
                        return Err(StoreError::not_found(format!(
                            "{t:?} is a {} id, not a {} id; {} lists the {}s and their ids",
                            other.prefix(),
                            kind.prefix(),
                            kind.list_tool(),
                            kind.prefix()
                        )));
                    }
                    return Err(bad_id(kind, t));
                }
                rest
            }
            None => lower.as_str(),
        };
        match digits.parse::<i64>() {
            Ok(n) if n > 0 && !digits.starts_with('+') => Ok(RecordId::new(kind, n)),
            _ => Err(bad_id(kind, t)),
        }
    }
}

fn bad_id(kind: Kind, text: &str) -> StoreError {
    StoreError::not_found(format!(
        "no {} has the id {text:?}: {} ids look like \"{}-12\"; {} lists them",
        kind.prefix(),
        kind.prefix(),
        kind.prefix(),
        kind.list_tool()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_read_as_models_send_them() {
        for text in ["project-12", "Project-12", " 12 ", "PROJECT-12"] {
            assert_eq!(
                RecordId::parse(Kind::Project, text).ok(),
                Some(RecordId::new(Kind::Project, 12)),
                "{text}"
            );
        }
        assert_eq!(RecordId::new(Kind::Goal, 3).to_string(), "goal-3");
        let wrong = RecordId::parse(Kind::Project, "task-3")
            .err()
            .map(|e| e.to_string());
        assert_eq!(
            wrong.as_deref(),
            Some(
                "\"task-3\" is a task id, not a project id; list_projects lists the projects and their ids"
            )
        );
        for bad in [
            "project-",
            "project-0",
            "project--1",
            "project-+1",
            "abc",
            "",
            "x-1",
        ] {
            assert!(
                matches!(
                    RecordId::parse(Kind::Project, bad),
                    Err(StoreError::NotFound(_))
                ),
                "{bad}"
            );
        }
    }
}

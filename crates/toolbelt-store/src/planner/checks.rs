//! A request's ids and texts, checked before anything is written: an id of the
//! wrong kind or naming nothing is [`StoreError::NotFound`], a blank required text
//! [`StoreError::Invalid`], both with a message written for the model.

use std::collections::BTreeSet;

use crate::error::{StoreError, StoreResult};
use crate::ids::{Kind, RecordId};

/// The row number of `id`, which must be of `kind`.
pub(super) fn number(kind: Kind, id: RecordId) -> StoreResult<i64> {
    if id.kind == kind {
        Ok(id.number)
    } else {
        Err(StoreError::not_found(format!(
            "\"{id}\" is a {} id, not a {} id; {} lists the {}s and their ids",
            id.kind.prefix(),
            kind.prefix(),
            kind.list_tool(),
            kind.prefix()
        )))
    }
}

pub(super) fn missing(id: RecordId) -> StoreError {
    let kind = id.kind.prefix();
    StoreError::not_found(format!(
        "no {kind} has the id {id}; {} lists the {kind}s and their ids",
        id.kind.list_tool()
    ))
}

/// A required text: trimmed, not blank.
pub(super) fn required_text(field: &str, text: &str) -> StoreResult<String> {
    let t = text.trim();
    if t.is_empty() {
        return Err(StoreError::invalid(format!(
            "{field} is blank; give a {field} with at least one visible character"
        )));
    }
    Ok(t.to_string())
}

/// An optional text: blank means none.
pub(super) fn optional_text(text: Option<&str>) -> Option<String> {
    text.map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_string)
}

pub(super) fn dedup(ids: &[RecordId], kind: Kind) -> StoreResult<Vec<i64>> {
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for id in ids {
        let n = number(kind, *id)?;
        if seen.insert(n) {
            out.push(n);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wrong_kind_of_id_is_not_found_with_a_hint() {
        let err = number(Kind::Project, RecordId::new(Kind::Task, 1))
            .err()
            .map(|e| e.to_string());
        assert_eq!(
            err.as_deref(),
            Some(
                "\"task-1\" is a task id, not a project id; list_projects lists the projects and their ids"
            )
        );
        assert_eq!(
            missing(RecordId::new(Kind::Goal, 9)).to_string(),
            "no goal has the id goal-9; list_goals lists the goals and their ids"
        );
    }
}

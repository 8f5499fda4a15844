//! The stage after the checkpoint is finished: with the post-edit pipeline's
//! `after_bash`, the files a call changed without its tool writing them itself (a
//! shell command) are checked, and the problems found are added to the result,
//! as an edit's are.

use std::path::Path;

use serde_json::{Map, Value};

use super::super::Registry;
use super::Target;
use crate::checkpoint::{Changes, CheckpointNote, absolute_path};
use crate::diagnostics::CheckRequest;
use crate::envelope::Envelope;

impl Registry {
    /// Stage 8b: the problems of the files a shell command changed, in the
    /// envelope's text and its data's `diagnostics` and `diagnostics_summary`.
    pub(super) async fn shell_checks(
        &self,
        target: &Target<'_>,
        args: &Value,
        mut env: Envelope,
        note: &CheckpointNote,
    ) -> Envelope {
        let Some(after) = &self.after_write else {
            return env;
        };
        // The write tools report their own files' problems.
        if !after.after_bash()
            || note.changed.is_empty()
            || target.tool.changes(args) != Changes::Unknown
        {
            return env;
        }
        let root = self
            .session
            .roots()
            .first()
            .map_or_else(|| self.session.cwd().to_path_buf(), Clone::clone);
        let files: Vec<_> = note
            .changed
            .iter()
            .filter(|c| c.change != "deleted")
            .map(|c| absolute_path(&root, Path::new(&c.path)))
            .collect();
        if files.is_empty() {
            return env;
        }
        let request = CheckRequest {
            cwd: self.session.cwd().to_path_buf(),
            files,
        };
        let Some(report) = after.changed(request).await else {
            return env;
        };
        if report.is_quiet() {
            return env;
        }
        report.append_to(&mut env.text);
        if !env.data.is_object() {
            env.data = Value::Object(Map::new());
        }
        if let (Value::Object(data), Ok(Value::Object(found))) =
            (&mut env.data, serde_json::to_value(&report))
        {
            data.extend(found);
        }
        env
    }
}

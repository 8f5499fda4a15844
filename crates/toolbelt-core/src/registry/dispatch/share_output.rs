//! The stage after the budget: a saved output is kept where the session keeps
//! saved outputs beyond this process (a store the replicas of a server share), so
//! that `read_output` answered by any of them finds it. It runs before the call's
//! answer leaves; a failure is a warning on the result, never the call's failure.

use serde_json::{Map, Value};

use super::super::Registry;
use crate::envelope::Envelope;
use crate::error::error_chain;
use crate::output::spilled_path;

/// The key of `context` that says a saved output is kept by this process only.
const OUTPUT_WARNING_KEY: &str = "output_warning";

impl Registry {
    /// Stage 10: the output a call saved (its result's `truncated: true` and
    /// `output_id`, in `data` or `context`) is kept in the session's
    /// [`SavedOutputs`](crate::output::SavedOutputs), when it has them.
    pub(super) async fn share_output(&self, mut env: Envelope) -> Envelope {
        let Some(saved) = self.session.saved_outputs() else {
            return env;
        };
        let Some(output_id) = saved_output_id(&env) else {
            return env;
        };
        let Some(path) = spilled_path(&self.session.spill_dir(), &output_id) else {
            return env;
        };
        if let Err(e) = saved.save(&output_id, &path).await {
            let why = error_chain(&e);
            tracing::warn!(
                output_id,
                "a saved output is kept by this server only: {why}"
            );
            env.context.extra.insert(
                OUTPUT_WARNING_KEY.into(),
                Value::String(format!(
                    "the full output can be read back through this server only: {why}"
                )),
            );
        }
        env
    }
}

/// The id of the output a result saved: `output_id` beside `truncated: true`, in
/// `data` when it is an object, else in `context` (as
/// [`Captured::apply_to`](crate::output::Captured::apply_to) puts them). A result
/// that only names an output (`read_output`'s) has no `truncated` and saved none.
fn saved_output_id(env: &Envelope) -> Option<String> {
    let marked = |map: &Map<String, Value>| {
        (map.get("truncated") == Some(&Value::Bool(true)))
            .then(|| map.get("output_id")?.as_str().map(str::to_string))
            .flatten()
    };
    match &env.data {
        Value::Object(data) => marked(data),
        _ => None,
    }
    .or_else(|| marked(&env.context.extra))
}

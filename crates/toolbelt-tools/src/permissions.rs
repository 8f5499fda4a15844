//! The permission rules of a registry of built-in tools: a [`Policy`] told what
//! each tool declares as its subject and where the workspace is.

use std::sync::Arc;

use toolbelt_core::Registry;
use toolbelt_policy::{Policy, PolicyError, ToolKinds};

use crate::profiles;

/// The kinds of subject the tools of `registry` declare (a path, a command, a
/// URL), under their canonical names and every name a built-in profile exposes
/// them as: a rule may name a tool by any of them.
pub fn tool_kinds(registry: &Registry) -> ToolKinds {
    let tools: Vec<_> = registry
        .names()
        .iter()
        .filter_map(|name| registry.get(name))
        .collect();
    let mut kinds = ToolKinds::from_specs(tools.iter().map(|tool| tool.spec()));
    for (exposed, canonical) in profiles::exposed_names() {
        kinds.alias(exposed, canonical);
    }
    for (canonical, exposed) in registry.profile().entries() {
        kinds.alias(exposed, canonical);
    }
    kinds
}

/// Puts `policy` in charge of `registry`'s calls, relative to the session's roots
/// and reading each rule for what its tool declares, under its canonical name and
/// every name a built-in profile exposes it as. Tools
/// registered later and declaring a subject need the policy applied again.
///
/// # Errors
///
/// A rule that does not fit its tool (a URL tool's rule without `domain:`).
pub fn apply_policy(registry: &mut Registry, policy: Policy) -> Result<(), PolicyError> {
    let policy = policy
        .with_roots(registry.session().roots())
        .with_kinds(tool_kinds(registry))?;
    registry.set_authorizer(Arc::new(policy));
    Ok(())
}

//! What each tool's subject is, as the tools declare it.

use std::collections::BTreeMap;

use toolbelt_core::{Subject, ToolSpec};

/// The kinds of subject of the tools a policy judges, by every name a rule may
/// call them (canonical and exposed names): rules for a [`Subject::Command`] tool
/// take commands, for a [`Subject::Url`] tool `domain:` specifiers, for a
/// [`Subject::Path`] tool path patterns; tools not listed take any of these.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolKinds(BTreeMap<String, Subject>);

impl ToolKinds {
    /// No tool declared.
    pub fn new() -> ToolKinds {
        ToolKinds::default()
    }

    /// The subjects the `specs` declare, under their names.
    pub fn from_specs<'a>(specs: impl IntoIterator<Item = &'a ToolSpec>) -> ToolKinds {
        let mut kinds = ToolKinds::new();
        for spec in specs {
            if let Some(subject) = spec.subject {
                kinds.declare(spec.name.clone(), subject);
            }
        }
        kinds
    }

    /// Declares that `name`'s subject is a `subject`.
    pub fn declare(&mut self, name: impl Into<String>, subject: Subject) -> &mut ToolKinds {
        self.0.insert(name.into(), subject);
        self
    }

    /// Lets rules call the tool `canonical` also `alias` (a name a profile exposes
    /// it as); nothing happens when `canonical` declares no subject.
    pub fn alias(&mut self, alias: impl Into<String>, canonical: &str) -> &mut ToolKinds {
        if let Some(&subject) = self.0.get(canonical) {
            self.0.insert(alias.into(), subject);
        }
        self
    }

    /// The subject `name` declares, if any.
    pub fn of(&self, name: &str) -> Option<Subject> {
        self.0.get(name).copied()
    }
}

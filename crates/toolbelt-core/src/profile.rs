//! Name profiles: the names a model sees, mapped to the canonical tool names.
//!
//! Models are trained on particular tool names (`Read`, `ReadFile`, `createProject`).
//! A [`Profile`] renames the exposed tools without touching their implementations:
//! every tool keeps one canonical snake_case name, and the profile says what it is
//! called in front of a model. Tools a profile does not mention keep their canonical
//! names.
//!
//! ```
//! use toolbelt_core::profile::Profile;
//!
//! let profile = Profile::custom("short", [("search_files", "Search"), ("list_dir", "LS")]).unwrap();
//! assert_eq!(profile.exposed("search_files"), "Search");
//! assert_eq!(profile.canonical("LS"), Some("list_dir"));
//! // Tools the profile does not rename keep their names.
//! assert_eq!(profile.exposed("note"), "note");
//! ```
//!
//! The built-in profiles are tables beside the built-in tools (`toolbelt-tools`).
//! A profile can also write the parameters of the tools it renames in camelCase
//! ([`ParamCase::Camel`]: a `createTask` then takes `projectId` and `dueDate`). The registry then shows camelCase schemas and examples, reads
//! camelCase arguments back into the canonical ones, and names the camelCase
//! parameters in validation errors; the tools and their results are unchanged.

use std::collections::BTreeSet;

use serde_json::Value;

/// How a profile writes the parameters of the tools it renames.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ParamCase {
    /// As the tools define them: snake_case (`project_id`).
    #[default]
    Canonical,
    /// camelCase (`projectId`), at every level of the arguments.
    Camel,
}

/// A mapping from canonical tool names to the names shown to a model.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Profile {
    name: String,
    map: Vec<(String, String)>,
    params: ParamCase,
}

/// Why a custom profile was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProfileError {
    /// The profile has no name.
    #[error("a profile needs a name")]
    EmptyName,
    /// A canonical or exposed name is empty.
    #[error("profile {profile:?} maps {canonical:?} to {exposed:?}; neither name may be empty")]
    EmptyToolName {
        /// The profile.
        profile: String,
        /// The canonical name of the pair.
        canonical: String,
        /// The exposed name of the pair.
        exposed: String,
    },
    /// Two canonical names are exposed under one name, so calls to it would be ambiguous.
    #[error(
        "profile {profile:?} exposes both {first:?} and {second:?} as {exposed:?}; give each tool its own name"
    )]
    DuplicateExposed {
        /// The profile.
        profile: String,
        /// The exposed name used twice.
        exposed: String,
        /// The first canonical name mapped to it.
        first: String,
        /// The second canonical name mapped to it.
        second: String,
    },
    /// One canonical name is given two exposed names.
    #[error("profile {profile:?} renames {canonical:?} twice, as {first:?} and as {second:?}")]
    DuplicateCanonical {
        /// The profile.
        profile: String,
        /// The canonical name renamed twice.
        canonical: String,
        /// The first exposed name.
        first: String,
        /// The second exposed name.
        second: String,
    },
}

impl Profile {
    /// The default profile: canonical snake_case names.
    pub fn default_profile() -> Profile {
        Profile {
            name: "default".into(),
            map: Vec::new(),
            params: ParamCase::Canonical,
        }
    }

    /// A profile from a table of `(canonical, exposed)` pairs known to be valid (as
    /// [`Profile::custom`] checks: no empty names, no name used twice, no identity
    /// pairs), such as the built-in profiles.
    pub fn table(name: &str, pairs: &[(&str, &str)]) -> Profile {
        Profile {
            name: name.to_string(),
            map: pairs
                .iter()
                .map(|&(c, e)| (c.to_string(), e.to_string()))
                .collect(),
            params: ParamCase::Canonical,
        }
    }

    /// A user-defined profile from `(canonical, exposed)` pairs. Pairs whose two
    /// names are equal are dropped (they rename nothing).
    ///
    /// # Errors
    ///
    /// [`ProfileError`] when the profile or a tool name is empty, when two canonical
    /// names map to one exposed name, or when one canonical name is renamed twice.
    pub fn custom<I, C, E>(name: impl Into<String>, pairs: I) -> Result<Profile, ProfileError>
    where
        I: IntoIterator<Item = (C, E)>,
        C: Into<String>,
        E: Into<String>,
    {
        let name = name.into();
        if name.trim().is_empty() {
            return Err(ProfileError::EmptyName);
        }
        let mut map: Vec<(String, String)> = Vec::new();
        for (canonical, exposed) in pairs {
            let (canonical, exposed) = (canonical.into(), exposed.into());
            if canonical.is_empty() || exposed.is_empty() {
                return Err(ProfileError::EmptyToolName {
                    profile: name,
                    canonical,
                    exposed,
                });
            }
            if let Some((c, e)) = map.iter().find(|(c, _)| *c == canonical) {
                if *e == exposed {
                    continue;
                }
                return Err(ProfileError::DuplicateCanonical {
                    profile: name,
                    canonical: c.clone(),
                    first: e.clone(),
                    second: exposed,
                });
            }
            if let Some((c, _)) = map.iter().find(|(_, e)| *e == exposed) {
                return Err(ProfileError::DuplicateExposed {
                    profile: name,
                    exposed,
                    first: c.clone(),
                    second: canonical,
                });
            }
            map.push((canonical, exposed));
        }
        map.retain(|(c, e)| c != e);
        Ok(Profile {
            name,
            map,
            params: ParamCase::Canonical,
        })
    }

    /// The same profile, writing the parameters of the tools it renames in `case`.
    #[must_use]
    pub fn with_param_case(mut self, case: ParamCase) -> Profile {
        self.params = case;
        self
    }

    /// How the parameters of `canonical` are written in front of a model: the
    /// profile's [`ParamCase`] for a tool it renames, else [`ParamCase::Canonical`].
    pub fn param_case(&self, canonical: &str) -> ParamCase {
        if self.map.iter().any(|(c, _)| c == canonical) {
            self.params
        } else {
            ParamCase::Canonical
        }
    }

    /// The profile's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The renamed tools, as `(canonical, exposed)` pairs in table order.
    pub fn entries(&self) -> impl ExactSizeIterator<Item = (&str, &str)> + '_ {
        self.map.iter().map(|(c, e)| (c.as_str(), e.as_str()))
    }

    /// The exposed name of `canonical` (`canonical` itself when the profile does not
    /// rename it).
    pub fn exposed<'a>(&'a self, canonical: &'a str) -> &'a str {
        self.map
            .iter()
            .find(|(c, _)| c == canonical)
            .map_or(canonical, |(_, e)| e.as_str())
    }

    /// The canonical name behind an exposed name, if the profile renames it.
    pub fn canonical<'a>(&'a self, exposed: &str) -> Option<&'a str> {
        self.map
            .iter()
            .find(|(_, e)| e == exposed)
            .map(|(c, _)| c.as_str())
    }
}

/// `project_id` -> `projectId`; a name without `_` is unchanged.
pub fn camel_case(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut upper = false;
    for c in name.chars() {
        if c == '_' && !out.is_empty() {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    if upper {
        out.push('_');
    }
    out
}

/// Every property name in `schema`, at any depth (nested objects, items, `$defs`).
pub(crate) fn property_names(schema: &Value) -> BTreeSet<String> {
    fn walk(v: &Value, out: &mut BTreeSet<String>) {
        match v {
            Value::Object(map) => {
                if let Some(Value::Object(props)) = map.get("properties") {
                    out.extend(props.keys().cloned());
                }
                map.values().for_each(|x| walk(x, out));
            }
            Value::Array(items) => items.iter().for_each(|x| walk(x, out)),
            _ => {}
        }
    }
    let mut out = BTreeSet::new();
    walk(schema, &mut out);
    out
}

/// `schema` with every property (and every `required` entry) in camelCase.
pub(crate) fn camel_schema(schema: &Value) -> Value {
    match schema {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let v = match (k.as_str(), v) {
                        ("properties", Value::Object(props)) => Value::Object(
                            props
                                .iter()
                                .map(|(name, s)| (camel_case(name), camel_schema(s)))
                                .collect(),
                        ),
                        ("required", Value::Array(names)) => Value::Array(
                            names
                                .iter()
                                .map(|n| match n {
                                    Value::String(s) => Value::String(camel_case(s)),
                                    other => other.clone(),
                                })
                                .collect(),
                        ),
                        _ => camel_schema(v),
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(camel_schema).collect()),
        other => other.clone(),
    }
}

/// `args` with the keys that are parameters of the schema (`names`, canonical)
/// written as `case` writes them: camelCase going out, or back to the canonical
/// names coming in (`to_canonical`). Other keys are left as they are; a camelCase
/// key whose canonical form is also present is left too, for validation to report.
pub(crate) fn rename_args(args: Value, names: &BTreeSet<String>, to_canonical: bool) -> Value {
    match args {
        Value::Object(map) => {
            let keys: BTreeSet<String> = map.keys().cloned().collect();
            let mut out = serde_json::Map::with_capacity(map.len());
            for (k, v) in map {
                let renamed = if to_canonical {
                    names
                        .iter()
                        .find(|n| camel_case(n) == k && **n != k)
                        .filter(|n| !keys.contains(*n))
                        .cloned()
                } else {
                    names.contains(&k).then(|| camel_case(&k))
                };
                out.insert(renamed.unwrap_or(k), rename_args(v, names, to_canonical));
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(
            items
                .into_iter()
                .map(|v| rename_args(v, names, to_canonical))
                .collect(),
        ),
        other => other,
    }
}

/// `message` with the parameter names it quotes (`"project_id"`, `'project_id'`,
/// `` `project_id` ``), or starts with (`due_date: ...`), in camelCase.
pub(crate) fn camel_message(message: &str, names: &BTreeSet<String>) -> String {
    let mut message = message.to_string();
    for n in names.iter().filter(|n| n.contains('_')) {
        let camel = camel_case(n);
        for q in ['"', '\'', '`'] {
            message = message.replace(&format!("{q}{n}{q}"), &format!("{q}{camel}{q}"));
        }
        if let Some(rest) = message.strip_prefix(&format!("{n}: ")) {
            message = format!("{camel}: {rest}");
        }
    }
    message
}

/// A violation as a camelCase profile shows it: the path's parameter names and
/// the quoted parameter names of the message in camelCase.
pub(crate) fn camel_violation(v: &crate::Violation, names: &BTreeSet<String>) -> crate::Violation {
    let path = v
        .path
        .split('.')
        .map(|seg| {
            let (name, index) = seg.find('[').map_or((seg, ""), |i| seg.split_at(i));
            if names.contains(name) {
                format!("{}{index}", camel_case(name))
            } else {
                seg.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join(".");
    let message = camel_message(&v.message, names);
    crate::Violation::new(path, message)
}

#[cfg(test)]
#[path = "profile_tests.rs"]
mod tests;

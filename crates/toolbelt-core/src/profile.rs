//! Name profiles (skeleton; the full table replaces this).

/// A mapping from canonical tool names to the names shown to a model.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Profile {
    name: String,
    map: Vec<(String, String)>,
}

impl Profile {
    /// The default profile: canonical snake_case names.
    pub fn default_profile() -> Profile {
        Profile {
            name: "default".into(),
            map: Vec::new(),
        }
    }

    /// A built-in profile by name.
    pub fn by_name(name: &str) -> Option<Profile> {
        (name == "default").then(Profile::default_profile)
    }

    /// The profile's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The exposed name of `canonical`.
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

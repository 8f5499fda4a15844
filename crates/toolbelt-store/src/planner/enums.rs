//! The values of a planner record's fixed fields: [`ProjectStatus`], [`GoalStage`],
//! [`TaskStatus`] and [`Priority`], stored and written by models as plain words.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

macro_rules! text_enum {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident => $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        #[serde(rename_all = "snake_case")]
        pub enum $name {
            $($(#[$vmeta])* $variant),+
        }

        /// A plain `enum` of strings, without the values' doc comments: models
        /// read what each value means in the field's description, and a wrong
        /// value is reported with the values allowed.
        impl JsonSchema for $name {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($name).into()
            }

            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                schemars::json_schema!({
                    "type": "string",
                    "enum": [$($text),+],
                })
            }
        }

        impl $name {
            /// Every value, in order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The value as stored and as models write it.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text),+
                }
            }

            /// Reads a value written by [`Self::as_str`].
            pub fn parse(text: &str) -> Option<$name> {
                match text {
                    $($text => Some($name::$variant),)+
                    _ => None,
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

text_enum! {
    /// Where a project stands.
    ProjectStatus {
        /// Being worked on (the default).
        Active => "active",
        /// On hold.
        Paused => "paused",
        /// Done.
        Completed => "completed",
    }
}

text_enum! {
    /// The horizon of a goal.
    GoalStage {
        /// A life goal.
        Life => "life",
        /// A goal for the year.
        Yearly => "yearly",
        /// A goal for the quarter.
        Quarter => "quarter",
    }
}

text_enum! {
    /// Where a task stands.
    TaskStatus {
        /// Not done yet.
        Pending => "pending",
        /// Done.
        Completed => "completed",
    }
}

text_enum! {
    /// How urgent a task is.
    Priority {
        /// Can wait.
        Low => "low",
        /// The default.
        Medium => "medium",
        /// First.
        High => "high",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enums_read_back_what_they_write() {
        for s in ProjectStatus::ALL {
            assert_eq!(ProjectStatus::parse(s.as_str()), Some(*s));
        }
        assert_eq!(ProjectStatus::parse("done"), None);
        assert_eq!(GoalStage::parse("quarter"), Some(GoalStage::Quarter));
        assert_eq!(Priority::parse("high"), Some(Priority::High));
        assert_eq!(TaskStatus::parse("completed"), Some(TaskStatus::Completed));
    }
}

//! What the tools kept in the store share (the todo list, reviews, the planner):
//! their only state is the [`StoreHandle`](toolbelt_store::StoreHandle) they read
//! and write, opened on first use and shared by all of them. [`store_tool!`]
//! declares such a tool with its constructor; [`workspace_key`] is the workspace
//! that todo lists and cron jobs belong to.

use toolbelt_core::ToolContext;

/// The workspace a todo list or a cron job belongs to: the session's first root
/// (its cwd without roots).
pub(crate) fn workspace_key(ctx: &ToolContext) -> String {
    toolbelt_store::workspace_key(ctx.session())
}

/// Declares a tool whose only state is the store, with `new(store)`:
///
/// ```text
/// store_tool! {
///     /// The `create_goal` tool.
///     CreateGoal
/// }
/// ```
macro_rules! store_tool {
    ($(#[$meta:meta])* $name:ident) => {
        $(#[$meta])*
        #[derive(Debug, Clone)]
        pub struct $name {
            store: toolbelt_store::StoreHandle,
        }

        impl $name {
            /// The tool, on `store`.
            pub fn new(store: toolbelt_store::StoreHandle) -> $name {
                $name { store }
            }
        }
    };
}

pub(crate) use store_tool;

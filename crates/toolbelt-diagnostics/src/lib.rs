//! What an edit broke, for toolbelt's write tools.

pub mod format;
pub mod lint;
pub mod lsp;
pub mod syntax;

//! The string-replacement engine behind edit_file and multi_edit.

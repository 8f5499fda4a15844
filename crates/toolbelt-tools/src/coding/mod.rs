//! The tools the `coding` toolset adds to files, search, shell and todos:
//! [`think::Think`], [`read_output::ReadOutput`] and [`ask_user::AskUser`].

pub(crate) mod ask_user;
pub(crate) mod read_output;
pub(crate) mod think;

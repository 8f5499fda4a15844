//! The tools the `coding` toolset adds to files, search, shell and todos:
//! [`think::Think`] and [`read_output::ReadOutput`].

pub(crate) mod read_output;
pub(crate) mod think;

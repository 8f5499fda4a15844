mod policy;
mod registry;
mod spill;

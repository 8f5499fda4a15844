mod registry;
mod spill;

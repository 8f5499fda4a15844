mod registry;
mod saved_outputs;
mod spill;

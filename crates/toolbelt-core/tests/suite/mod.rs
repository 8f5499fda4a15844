mod calls;
mod export;
mod policy;
mod registry;
mod spill;

mod calls;
mod export;

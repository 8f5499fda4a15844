mod open;
mod reviews;

mod open;
mod planner;

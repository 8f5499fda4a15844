mod open;

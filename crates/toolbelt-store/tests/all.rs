//! The store's test suite: every test runs on SQLite and on PostgreSQL
//! (`TOOLBELT_TEST_DATABASE_URL`; `.ci/postgres start DIR` gives one).

mod suite;

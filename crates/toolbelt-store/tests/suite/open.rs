//! Opening, migrating and refusing databases.

use toolbelt_store::{Backend, LATEST_VERSION, Store, testing};

#[tokio::test]
async fn a_new_store_is_migrated_on_both_backends() {
    for t in testing::both().await.unwrap() {
        assert_eq!(t.store.schema_version().await.unwrap(), LATEST_VERSION);
        // Opening again is a no-op.
        let again = Store::open(&t.location).await.unwrap();
        assert_eq!(again.schema_version().await.unwrap(), LATEST_VERSION);
        let backend = t.store.backend();
        assert!(matches!(backend, Backend::Sqlite | Backend::Postgres));
    }
}

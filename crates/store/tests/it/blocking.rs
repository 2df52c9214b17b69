//! `BlockingPg` runs a query to completion from wherever a synchronous store is called — a plain async task of a
//! single-threaded runtime included — and refuses, instead of hanging, a call from its own runtime.

use holdfast_store::BlockingPg;

#[tokio::test]
async fn runs_from_a_single_threaded_runtime_and_refuses_its_own() {
    let Some(url) = holdfast_testkit::postgres::fresh_database().await else { return };
    let pg = BlockingPg::connect(url).await.unwrap();
    // Straight from this current-thread runtime's task: the pool's own runtime drives the sockets.
    let one: i64 = pg
        .run(|store| async move { sqlx::query_scalar("SELECT 1::bigint").fetch_one(store.pool()).await })
        .unwrap()
        .unwrap();
    assert_eq!(one, 1);
    // From a blocking-pool thread, where the memory and task stores call it.
    let again = pg.clone();
    let two: i64 = tokio::task::spawn_blocking(move || {
        again.run(|store| async move { sqlx::query_scalar("SELECT 2::bigint").fetch_one(store.pool()).await })
    })
    .await
    .unwrap()
    .unwrap()
    .unwrap();
    assert_eq!(two, 2);
    // From a task of the pool's own runtime: refused with an error, not a dead-lock.
    let inner = pg.clone();
    let refused = pg.spawn(move |_| async move { Ok(inner.run(|_| async {}).is_err()) }).await.unwrap();
    assert!(refused);
}

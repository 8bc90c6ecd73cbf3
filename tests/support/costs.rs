//! Measuring what a request costs in table operations and capacity units,
//! for the cost tests: `tests/tests/costs.rs` holds the shared mechanisms'
//! (a read by id, a create, the limiter, batches), each group's test file its
//! own lists' (a `costs` module at its end).

use shared::store::MetricsSnapshot;

use crate::TestApp;

/// The cost of one request.
pub async fn cost_of<F, Fut>(app: &TestApp, request: F) -> MetricsSnapshot
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let before = app.metrics();
    request().await;
    app.metrics() - before
}

/// Capacity units: DynamoDB Local's ConsumedCapacity, and the embedded store's
/// computation of the same (4 KB read units, halved when eventually consistent).
#[track_caller]
pub fn assert_units(app: &TestApp, what: &str, measured: f64, expected: f64) {
    assert!(
        (measured - expected).abs() < 1e-9,
        "{what} on {:?}: {measured} units, expected {expected}",
        app.backend
    );
}

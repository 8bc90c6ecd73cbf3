//! What each endpoint costs in table operations, on both backends, and in
//! capacity units as DynamoDB Local reports them (ConsumedCapacity, ScannedCount).
//!
//! Every authenticated request first reads the token's secret item: one strongly
//! consistent GetItem, 1 RCU. The numbers below include it.

use api_tests::serde_json::json;
use api_tests::{TestApp, api_test};
use shared::auth::Caller;
use shared::store::MetricsSnapshot;

/// The cost of one request.
async fn cost_of<F, Fut>(app: &TestApp, request: F) -> MetricsSnapshot
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
fn assert_units(app: &TestApp, what: &str, measured: f64, expected: f64) {
    assert!(
        (measured - expected).abs() < 1e-9,
        "{what} on {:?}: {measured} units, expected {expected}",
        app.backend
    );
}

api_test! {
    /// A tag by id is one GetItem of 0.5 RCU (eventually consistent, under 4 KB).
    async fn a_tag_by_id_is_one_get_item(app) {
        let tag = app.post("/v3/tags", json!({ "name": "VIP" })).await.expect(201);
        let id: u64 = tag["id"].as_str().unwrap().parse().unwrap();
        let caller = Caller::system(1, "test");
        let cost = cost_of(&app, || async {
            shared::domain::tags::get(app.store.as_ref(), &caller, id).await.unwrap();
        })
        .await;
        assert_eq!((cost.gets, cost.queries, cost.batch_gets), (1, 0, 0));
        assert_units(&app, "tag by id", cost.read_units, 0.5);

        let path = format!("/v3/tags/{id}");
        let cost = cost_of(&app, || async { app.get(&path).await.expect(200); }).await;
        assert_eq!((cost.gets, cost.queries, cost.batch_gets), (2, 0, 0), "token + tag");
        assert_units(&app, "GET /v3/tags/{id}", cost.read_units, 1.5);
        assert_eq!(cost.writes + cost.transactions, 0, "a read writes nothing");
    }
}

api_test! {
    /// A list page is one Query plus the counter's GetItem, whatever the size of
    /// the workspace: shown with the same request at two sizes.
    async fn a_tag_list_page_does_not_grow_with_the_workspace(app) {
        let mut costs = Vec::new();
        for size in [6, 60] {
            let have = app.get("/v3/tags").await.expect(200)["totalCount"].as_u64().unwrap();
            for i in have..size {
                app.post("/v3/tags", json!({ "name": format!("tag {i}") })).await.expect(201);
            }
            let cost = cost_of(&app, || async {
                let page = app.get("/v3/tags?limit=5").await.expect(200);
                assert_eq!(page["totalCount"], json!(size));
                assert_eq!(page["data"].as_array().unwrap().len(), 5);
            })
            .await;
            assert_eq!((cost.gets, cost.queries), (2, 1), "token + counter, one Query");
            assert_eq!(cost.scanned, 5, "the Query reads the page only");
            costs.push(cost.read_units);
        }
        assert_eq!(costs[0], costs[1], "same cost at 6 and 60 tags");
        assert_units(&app, "GET /v3/tags?limit=5", costs[0], 2.0);

        let cost = cost_of(&app, || async { app.get("/v1/tags?limit=5").await.expect(200); }).await;
        assert_eq!((cost.gets, cost.queries), (1, 1), "token, one Query");
        assert_eq!(cost.scanned, 6, "the page and one item to know whether more follow");
    }
}

api_test! {
    /// A create is one transaction: the tag, its name sentinel, the counter, the audit
    /// entry and the audit counters.
    async fn a_tag_create_is_one_transaction(app) {
        let cost = cost_of(&app, || async { app.post("/v3/tags", json!({ "name": "VIP" })).await.expect(201); }).await;
        assert_eq!((cost.transactions, cost.writes), (1, 0));
        assert_eq!(cost.reads(), 1, "the token only");
        // Six items under 1 KB: 6 WCU as DynamoDB Local reports them (AWS bills a
        // transaction twice, 12 WCU, plus 1 for the audit entry's index entry).
        assert_units(&app, "POST /v3/tags", cost.write_units, 6.0);
    }
}

api_test! {
    /// An offset page steps over the offset with key-only reads of the same range,
    /// bounded by offset + limit <= 10,000.
    async fn an_offset_page_reads_offset_plus_limit_items(app) {
        for i in 0..30 {
            app.post("/v3/tags", json!({ "name": format!("tag {i}") })).await.expect(201);
        }
        let cost = cost_of(&app, || async { app.get("/v3/tags?limit=5&offset=20").await.expect(200); }).await;
        assert_eq!(cost.queries, 2, "one key-only step, one page");
        assert_eq!(cost.scanned, 25);
    }
}

//! Rate limits: a token bucket per token and one per workspace, with the
//! IETF `RateLimit-Policy` and `RateLimit` headers on every answer, a 429
//! with `Retry-After` past the limit, limits an operator sets per
//! workspace, and requests let through when the limiter's store fails. The
//! clock is the test's: nothing sleeps.

use std::collections::BTreeMap;

use api_tests::serde_json::json;
use api_tests::{TestApp, TestResponse, api_test};
use chrono::Duration;
use shared::ratelimit::{Limiter, Limits, Policy};
use shared::store::{Item, Key, Page, Query, Store, StoreError, Write};

/// A store whose every call fails, as DynamoDB does when it is unreachable.
#[derive(Default)]
struct DownStore(shared::store::Metrics);

#[async_trait::async_trait]
impl Store for DownStore {
    async fn get(&self, _: &Key, _: bool) -> Result<Option<Item>, StoreError> {
        Err(StoreError::Unavailable("down".into()))
    }
    async fn batch_get(&self, _: &[Key]) -> Result<Vec<Item>, StoreError> {
        Err(StoreError::Unavailable("down".into()))
    }
    async fn query(&self, _: &Query) -> Result<Page, StoreError> {
        Err(StoreError::Unavailable("down".into()))
    }
    async fn write(&self, _: Vec<Write>) -> Result<(), StoreError> {
        Err(StoreError::Unavailable("down".into()))
    }
    fn metrics(&self) -> &shared::store::Metrics {
        &self.0
    }
    fn backend(&self) -> &'static str {
        "down"
    }
}

fn limits(token: u32, workspace: u32) -> Limits {
    Limits {
        token: Policy {
            quota: token,
            window_seconds: 10,
        },
        workspace: Policy {
            quota: workspace,
            window_seconds: 10,
        },
    }
}

/// The `RateLimit` header's `r` of each policy: `{"token": 4, "workspace": 99}`.
fn remaining(answer: &TestResponse) -> BTreeMap<String, u32> {
    let header = answer.headers["ratelimit"].to_str().unwrap();
    header
        .split(", ")
        .map(|item| {
            let name = item.split(';').next().unwrap().trim_matches('"').to_owned();
            let r = item
                .split(';')
                .find_map(|p| p.strip_prefix("r="))
                .unwrap()
                .parse()
                .unwrap();
            (name, r)
        })
        .collect()
}

async fn a_token(app: &TestApp, name: &str) -> String {
    let created = app
        .post("/v3/api-tokens", json!({ "name": name }))
        .await
        .expect(201);
    created["token"].as_str().unwrap().to_owned()
}

api_test! {
    /// A token's burst: its quota at once, the headers counting down, then a
    /// 429 in the error shape with `Retry-After`; the bucket refills one
    /// request per `window / quota`.
    async fn a_token_gets_its_burst_then_a_429(app) {
        let (app, clock) = app.rate_limited(limits(5, 100));
        let token = a_token(&app, "burst").await;
        let client = app.as_token(&token);
        for left in (0..5).rev() {
            let answer = client.get("/v3/tags").await;
            assert_eq!(answer.status, 200, "{}", answer.body);
            assert_eq!(answer.headers["ratelimit-policy"], r#""token";q=5;w=10, "workspace";q=100;w=10"#);
            assert_eq!(remaining(&answer)["token"], left);
        }
        let refused = client.get("/v3/tags").await;
        assert_eq!(refused.status, 429, "{}", refused.body);
        assert_eq!(refused.body["statusCode"], 429);
        assert!(refused.body["message"].as_str().unwrap().contains("token"), "{}", refused.body);
        assert_eq!(refused.headers["retry-after"], "2", "one request every 2 s");
        assert_eq!(remaining(&refused)["token"], 0);
        client.post("/v3/tags", json!({ "name": "late" })).await.expect_error(429);
        clock.advance(Duration::seconds(2));
        client.post("/v3/tags", json!({ "name": "later" })).await.expect(201);
        client.get("/v3/tags").await.expect_error(429);
        // Another token of the workspace has its own bucket.
        let other = a_token(&app, "other").await;
        app.as_token(&other).get("/v3/tags").await.expect(200);
        // Errors carry the headers too.
        clock.advance(Duration::seconds(10));
        let missing = client.get("/v3/tags/1").await;
        assert_eq!(missing.status, 404);
        assert!(missing.headers.contains_key("ratelimit"));
    }
}

api_test! {
    /// The workspace's bucket is shared by its tokens: together they get
    /// its quota, and the 429 names the workspace.
    async fn a_workspace_shares_its_bucket(app) {
        let (app, _clock) = app.rate_limited(limits(100, 9));
        let (_, theirs) = app.new_workspace("Theirs").await;
        // The admin's token made these three requests: three of the nine.
        let (one, two) = (a_token(&app, "one").await, a_token(&app, "two").await);
        for _ in 0..3 {
            app.as_token(&one).get("/v3/tags").await.expect(200);
            app.as_token(&two).get("/v3/tags").await.expect(200);
        }
        let refused = app.as_token(&one).get("/v3/tags").await;
        assert_eq!(refused.status, 429, "{}", refused.body);
        assert!(refused.body["message"].as_str().unwrap().contains("workspace"), "{}", refused.body);
        assert_eq!(remaining(&refused)["workspace"], 0);
        // Another workspace is not held back.
        app.as_token(&theirs).get("/v3/tags").await.expect(200);
    }
}

api_test! {
    /// An operator sets a workspace's own limits; new leases take them.
    async fn an_admin_sets_a_workspaces_limits(app) {
        let (app, _clock) = app.rate_limited(limits(100, 1000));
        let path = "/v3/workspaces/1/rate-limits";
        assert_eq!(app.get(path).await.expect(200), json!(limits(100, 1000)));
        app.get("/v3/workspaces/9999/rate-limits").await.expect_error(404);
        let reader = a_token(&app, "reader").await;
        app.as_token(&reader).get(path).await.expect_error(403);
        app.send(http::Method::PUT, path, Some(api_tests::ADMIN_TOKEN), Some(json!({ "token": { "quota": 0, "windowSeconds": 10 }, "workspace": { "quota": 5, "windowSeconds": 10 } })))
            .await.expect_field_error("token.quota");
        let set = app.send(http::Method::PUT, path, Some(api_tests::ADMIN_TOKEN), Some(json!(limits(2, 1000)))).await.expect(200);
        assert_eq!(set, json!(limits(2, 1000)));
        let token = a_token(&app, "after").await;
        let client = app.as_token(&token);
        let first = client.get("/v3/tags").await;
        assert_eq!(first.status, 200);
        assert_eq!(first.headers["ratelimit-policy"], r#""token";q=2;w=10, "workspace";q=1000;w=10"#);
        client.get("/v3/tags").await.expect(200);
        client.get("/v3/tags").await.expect_error(429);
    }
}

api_test! {
    /// A store that fails lets requests through, without headers: a limiter
    /// must not take the API down with it.
    async fn a_failing_store_lets_requests_through(app) {
        let limiter = Limiter::with(limits(1, 1));
        let down = DownStore::default();
        for _ in 0..3 {
            let admission = limiter.admit(&down, shared::ids::WorkspaceId(1), "abc", 1, 0).await;
            assert!(admission.refusal().is_none() && admission.standings.is_empty());
        }
        // And the same limiter on the real store refuses the second.
        assert!(limiter.admit(app.store.as_ref(), shared::ids::WorkspaceId(1), "abc", 1, 0).await.refusal().is_none());
        assert!(limiter.admit(app.store.as_ref(), shared::ids::WorkspaceId(1), "abc", 1, 0).await.refusal().is_some());
    }
}

api_test! {
    /// A batch counts one request per operation: the bucket's headers say
    /// so, and a batch larger than what is left is a 429 that writes nothing.
    async fn a_batch_counts_per_operation(app) {
        let (app, clock) = app.rate_limited(limits(10, 100));
        let token = a_token(&app, "batch").await;
        let client = app.as_token(&token);
        let creates = |n: usize| {
            let operations: Vec<_> = (0..n).map(|i| json!({ "op": "create", "data": { "name": format!("t{n}-{i}") } })).collect();
            json!({ "operations": operations })
        };
        let answer = client.post("/v3/tags/batch", creates(7)).await;
        assert_eq!(answer.status, 200, "{}", answer.body);
        assert_eq!(remaining(&answer)["token"], 3);
        let refused = client.post("/v3/tags/batch", creates(4)).await;
        assert_eq!(refused.status, 429, "{}", refused.body);
        assert_eq!(refused.headers["retry-after"], "1", "one more request in 1 s");
        assert_eq!(app.get("/v3/tags").await.expect(200)["totalCount"], 7);
        // A batch larger than the whole bucket waits for the whole bucket.
        clock.advance(Duration::seconds(10));
        let answer = client.post("/v3/tags/batch", creates(12)).await;
        assert_eq!(answer.status, 200, "{}", answer.body);
        assert_eq!(remaining(&answer)["token"], 0);
    }
}

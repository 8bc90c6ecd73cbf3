//! Authentication of reads: a token that names its workspace lets a GET's own
//! reads go out beside the token's GetItem (one round trip, not two), and
//! nothing is answered from them until the token holds.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use api_tests::serde_json::{Value, json};
use api_tests::{TestApp, api_test};
use async_trait::async_trait;
use http::{Request, StatusCode};
use shared::auth::{Scope, TokenSecret, generate_token, hash_token};
use shared::http::AppState;
use shared::ids::WorkspaceId;
use shared::store::{Item, Key, Metrics, Page, Query, SharedStore, Store, StoreError, Write};
use tower::ServiceExt;

/// A store whose GetItems wait, while armed, until two of them are in flight
/// together: a GET whose reads go one after the other times out here.
struct InPairs {
    inner: SharedStore,
    armed: AtomicBool,
    pair: tokio::sync::Barrier,
    patience: Duration,
}

#[async_trait]
impl Store for InPairs {
    async fn get(&self, key: &Key, consistent: bool) -> Result<Option<Item>, StoreError> {
        if self.armed.load(Ordering::SeqCst)
            && tokio::time::timeout(self.patience, self.pair.wait())
                .await
                .is_err()
        {
            return Err(StoreError::Unavailable("a GetItem went out alone".into()));
        }
        self.inner.get(key, consistent).await
    }
    async fn batch_get(&self, keys: &[Key]) -> Result<Vec<Item>, StoreError> {
        self.inner.batch_get(keys).await
    }
    async fn query(&self, query: &Query) -> Result<Page, StoreError> {
        self.inner.query(query).await
    }
    async fn write(&self, writes: Vec<Write>) -> Result<(), StoreError> {
        self.inner.write(writes).await
    }
    fn metrics(&self) -> &Metrics {
        self.inner.metrics()
    }
    fn backend(&self) -> &'static str {
        self.inner.backend()
    }
}

/// The status of `GET path` with `token`, on a tags function over `store`.
async fn status_through(store: Arc<InPairs>, path: &str, token: &str) -> StatusCode {
    let router = shared::http::app(AppState::new(store), vec![tags::group()]);
    let request = Request::get(path)
        .header("authorization", format!("Bearer {token}"))
        .body(axum::body::Body::empty())
        .unwrap();
    router.oneshot(request).await.unwrap().status()
}

async fn issue(app: &TestApp, body: Value) -> String {
    let created = app.post("/v3/api-tokens", body).await.expect(201);
    created["token"].as_str().unwrap().to_owned()
}

api_test! {
    /// The tag's GetItem is in flight together with the token's: the store
    /// here lets a GetItem through only beside another one. A token of the
    /// earlier kind names no workspace, so its request reads one after the other.
    async fn a_read_by_id_goes_out_beside_the_token_check(app) {
        let path = app.tag_path("VIP").await;
        let token = issue(&app, json!({ "name": "reader" })).await;
        let paired = |patience| Arc::new(InPairs {
            inner: app.store.clone(),
            armed: AtomicBool::new(true),
            pair: tokio::sync::Barrier::new(2),
            patience,
        });
        let store = paired(Duration::from_secs(30));
        assert_eq!(status_through(store, &path, &token).await, StatusCode::OK);
        let store = paired(Duration::from_millis(300));
        let legacy = status_through(store, &path, api_tests::ADMIN_TOKEN).await;
        assert_eq!(legacy, StatusCode::SERVICE_UNAVAILABLE, "the earlier path reads in turn");
    }
}

api_test! {
    /// A revoked or expired token gets 401 on its next read, whether the route
    /// reads a record, a list, or nothing at all; no byte of the record leaves.
    async fn nothing_is_answered_before_the_token_holds(app) {
        let path = app.tag_path("Secret plans").await;
        let token = issue(&app, json!({ "name": "soon revoked" })).await;
        let reader = app.as_token(&token);
        reader.get(&path).await.expect(200);
        let listed = app.get("/v3/api-tokens").await.expect(200);
        let id = listed["data"].as_array().unwrap().iter()
            .find(|t| t["name"] == "soon revoked").unwrap()["id"].as_str().unwrap().to_owned();
        app.delete(&format!("/v3/api-tokens/{id}")).await.expect(200);
        for route in [path.as_str(), "/v3/tags", "/v3/time/utc", "/v3/workspaces/info"] {
            let refused = reader.get(route).await.expect_error(401);
            assert!(!refused.to_string().contains("Secret plans"), "{route}: {refused}");
        }
        // An expired token: its record says so, and the read beside it is thrown away.
        let expiring = issue(&app, json!({ "name": "expiring", "expiresAt": "2099-01-01T00:00:00Z" })).await;
        app.expire(shared::keys::token_secret(&hash_token(&expiring)), "expiresAt").await;
        let refused = app.as_token(&expiring).get(&path).await.expect_error(401);
        assert_eq!(refused["message"], "token expired");
    }
}

api_test! {
    /// A token whose name and record disagree on the workspace reads nothing
    /// there: its reads of the named workspace are discarded and it gets 401.
    async fn a_token_naming_another_workspace_sees_nothing_of_it(app) {
        let (other, other_token) = app.new_workspace("Other").await;
        let theirs = app.as_token(&other_token).post("/v3/tags", json!({ "name": "Their secret" })).await.expect(201);
        let path = format!("/v3/tags/{}", theirs["id"].as_str().unwrap());
        // Stored for workspace 1, named for the other one.
        let forged = generate_token(WorkspaceId(other));
        let secret = TokenSecret {
            sha256: hash_token(&forged),
            workspace_id: WorkspaceId(1),
            token_id: "forged".into(),
            scopes: vec![Scope::Admin],
            expires_at: None,
        };
        let item = shared::record::to_item(&secret).unwrap();
        app.store.write(vec![Write::Put { item, condition: None }]).await.unwrap();
        for route in [path.as_str(), "/v3/tags", "/v3/workspaces/info"] {
            let refused = app.as_token(&forged).get(route).await.expect_error(401);
            assert!(!refused.to_string().contains("Their secret"), "{route}: {refused}");
        }
        // A made-up token of the current format, stored nowhere: 401 as well.
        app.as_token(&generate_token(WorkspaceId(other))).get(&path).await.expect_error(401);
        app.as_token(&other_token).get(&path).await.expect(200);
    }
}

api_test! {
    /// Scopes and writes wait for the token's record: a workspace token is
    /// refused the admin list, and a revoked one writes nothing.
    async fn scopes_and_writes_wait_for_the_token(app) {
        let token = issue(&app, json!({ "name": "plain" })).await;
        app.as_token(&token).get("/v3/audit/admin").await.expect_error(403);
        app.as_token(&token).get("/v3/audit").await.expect(200);
        let made = app.as_token(&token).post("/v3/tags", json!({ "name": "Mine" })).await.expect(201);
        assert_eq!(made["name"], "Mine");
        let id = app.get("/v3/api-tokens").await.expect(200)["data"].as_array().unwrap().iter()
            .find(|t| t["name"] == "plain").unwrap()["id"].as_str().unwrap().to_owned();
        app.delete(&format!("/v3/api-tokens/{id}")).await.expect(200);
        let before = app.get("/v3/tags").await.expect(200)["totalCount"].clone();
        app.as_token(&token).post("/v3/tags", json!({ "name": "Too late" })).await.expect_error(401);
        assert_eq!(app.get("/v3/tags").await.expect(200)["totalCount"], before);
    }
}

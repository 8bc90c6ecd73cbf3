//! Workspaces: `GET /v3/workspaces/info` (the caller's own) and the admin
//! extension `POST /v3/workspaces`.

use api_tests::api_test;
use api_tests::serde_json::json;

api_test! {
    async fn info_is_the_callers_workspace(app) {
        let info = app.get("/v3/workspaces/info").await.expect(200);
        assert_eq!(info["id"], "1");
        assert_eq!(info["workspaceId"], 1);
        assert_eq!(info["name"], "Test workspace");
        assert_eq!(info["environment"], "production");
        assert!(info["createdAt"].is_string() && info["lastUpdateAt"].is_string());
    }
}

api_test! {
    /// An admin creates a workspace and gets its first token (secret in `token.token`).
    async fn an_admin_creates_a_workspace_with_a_token(app) {
        let created = app.post("/v3/workspaces", json!({ "name": "Acme", "tokenName": "acme-bootstrap" })).await.expect(201);
        let id = created["workspace"]["workspaceId"].as_u64().unwrap();
        assert_ne!(id, 1);
        assert!(id < 1 << 53);
        assert_eq!(created["workspace"]["id"], json!(id.to_string()));
        assert_eq!(created["workspace"]["name"], "Acme");
        assert_eq!(created["token"]["name"], "acme-bootstrap");
        assert_eq!(created["token"]["workspaceId"], json!(id));
        assert_eq!(created["token"]["scopes"], json!(["*:write"]), "a workspace token, not an admin one");
        let token = created["token"]["token"].as_str().unwrap();
        let info = app.as_token(token).get("/v3/workspaces/info").await.expect(200);
        assert_eq!(info["workspaceId"], json!(id));
        assert_eq!(info["name"], "Acme");
    }
}

api_test! {
    /// A workspace token is not an operator: 403 on creating workspaces.
    async fn a_workspace_token_cannot_create_workspaces(app) {
        let (_, token) = app.new_workspace("Acme").await;
        app.as_token(&token).post("/v3/workspaces", json!({ "name": "Sneaky" })).await.expect_error(403);
        let plain = app.post("/v3/api-tokens", json!({ "name": "plain" })).await.expect(201);
        app.as_token(plain["token"].as_str().unwrap())
            .post("/v3/workspaces", json!({ "name": "Sneaky" }))
            .await
            .expect_error(403);
    }
}

api_test! {
    async fn validates_the_create_body(app) {
        app.post("/v3/workspaces", json!({})).await.expect_field_error("name");
        app.post("/v3/workspaces", json!({ "name": " " })).await.expect_field_error("name");
        app.post("/v3/workspaces", json!({ "name": "x".repeat(129) })).await.expect_field_error("name");
        app.post("/v3/workspaces", json!({ "name": "x", "id": 5 })).await.expect_field_error("id");
    }
}

api_test! {
    /// Every workspace sees only itself.
    async fn workspaces_are_isolated(app) {
        let (a, token_a) = app.new_workspace("A").await;
        let (b, token_b) = app.new_workspace("B").await;
        assert_eq!(app.as_token(&token_a).get("/v3/workspaces/info").await.expect(200)["workspaceId"], json!(a));
        assert_eq!(app.as_token(&token_b).get("/v3/workspaces/info").await.expect(200)["workspaceId"], json!(b));
        let tag = app.as_token(&token_a).post("/v3/tags", json!({ "name": "x" })).await.expect(201);
        assert_eq!(tag["workspaceId"], json!(a));
        assert_eq!(app.as_token(&token_b).get("/v3/tags").await.expect(200)["totalCount"], 0);
    }
}

api_test! {
    /// Operators move a workspace into and out of the testing environment (201).
    async fn promotes_and_demotes_testing(app) {
        let (id, token) = app.new_workspace("Acme").await;
        let promoted = app.post(&format!("/v3/workspaces/promote-testing/{id}"), json!({})).await.expect(201);
        assert_eq!((promoted["environment"].clone(), promoted["workspaceId"].clone()), (json!("testing"), json!(id)));
        assert_eq!(app.as_token(&token).get("/v3/workspaces/info").await.expect(200)["environment"], "testing");
        // Again: nothing changes, no audit entry.
        let audit = app.get("/v3/audit").await.expect(200)["totalCount"].clone();
        app.post(&format!("/v3/workspaces/promote-testing/{id}"), json!({})).await.expect(201);
        assert_eq!(app.get("/v3/audit").await.expect(200)["totalCount"], audit);
        let demoted = app.post(&format!("/v3/workspaces/demote-testing/{id}"), json!({})).await.expect(201);
        assert_eq!(demoted["environment"], "production");
        // A workspace token is no operator; unknown and malformed ids.
        app.as_token(&token).post(&format!("/v3/workspaces/promote-testing/{id}"), json!({})).await.expect_error(403);
        app.post("/v3/workspaces/promote-testing/123", json!({})).await.expect_error(404);
        app.post("/v3/workspaces/demote-testing/abc", json!({})).await.expect_field_error("id");
    }
}

api_test! {
    /// Each event type of the group is made by its change (docs/api-contract.md,
    /// "Events"; `events.rs` fails for a declared type no suite makes).
    async fn a_workspace_made_and_refreshed_makes_its_event_types(app) {
        app.post("/v3/refresh-page", json!({})).await.expect(201);
        app.assert_made_events(&["workspace.updated"]).await;
        // An operator's new workspace is an event of that workspace (#44).
        let (other, _) = app.new_workspace("Another").await;
        app.assert_made_events_in(other, &["workspace.created"]).await;
    }
}

//! API tokens (`/v3/api-tokens`): created with the secret shown once, listed
//! without secrets, revoked with effect on the next request; scoped to one
//! workspace; only admin tokens mint admin tokens.

use api_tests::serde_json::{Value, json};
use api_tests::{ADMIN_TOKEN, api_test};
use http::Method;

fn secret(created: &Value) -> String {
    created["token"]
        .as_str()
        .expect("the secret in the create response")
        .to_owned()
}

api_test! {
    /// The 201 answer holds the secret; the token works at once.
    async fn creates_a_token_and_shows_the_secret_once(app) {
        let created = app.post("/v3/api-tokens", json!({ "name": "CI" })).await.expect(201);
        let token = secret(&created);
        assert!(token.starts_with("crm_1_") && token.len() == "crm_1_".len() + 38, "{token}");
        assert_eq!(created["prefix"], json!(&token[..8]));
        assert_eq!(created["name"], "CI");
        assert_eq!(created["workspaceId"], 1);
        assert_eq!(created["scopes"], json!(["*:write"]), "an admin's token without scopes: the workspace's");
        assert!(created["id"].as_str().is_some_and(|id| id.len() == 26), "a ULID: {created}");
        let info = app.as_token(&token).get("/v3/workspaces/info").await.expect(200);
        assert_eq!(info["workspaceId"], 1);
    }
}

api_test! {
    /// Lists never carry a secret or a hash.
    async fn lists_tokens_without_secrets(app) {
        let created = app.post("/v3/api-tokens", json!({ "name": "CI" })).await.expect(201);
        let token = secret(&created);
        let page = app.get("/v3/api-tokens").await.expect(200);
        assert_eq!(page["totalCount"], 2, "the bootstrap admin token and the new one");
        let text = page.to_string();
        assert!(!text.contains(&token[8..]), "a secret leaked: {text}");
        assert!(!text.contains(&shared::auth::hash_token(&token)), "a hash leaked: {text}");
        for t in page["data"].as_array().unwrap() {
            assert!(t.get("token").is_none() && t.get("sha256").is_none(), "{t}");
        }
        let listed = page["data"].as_array().unwrap().iter().find(|t| t["id"] == created["id"]).unwrap();
        assert_eq!(listed["name"], "CI");
    }
}

api_test! {
    /// A revoked token fails with 401 on its very next request.
    async fn revoked_tokens_stop_working_at_once(app) {
        let created = app.post("/v3/api-tokens", json!({ "name": "temp" })).await.expect(201);
        let token = secret(&created);
        let client = app.as_token(&token);
        client.get("/v3/tags").await.expect(200);
        let revoked = app.delete(&format!("/v3/api-tokens/{}", created["id"].as_str().unwrap())).await.expect(200);
        assert_eq!(revoked["id"], created["id"]);
        assert!(revoked.get("token").is_none());
        client.get("/v3/tags").await.expect_error(401);
        client.get("/v1/tags").await.expect_error(401);
        assert_eq!(app.get("/v3/api-tokens").await.expect(200)["totalCount"], 1);
        app.delete(&format!("/v3/api-tokens/{}", created["id"].as_str().unwrap())).await.expect_error(404);
        app.delete("/v3/api-tokens/not-a-token-id").await.expect_error(404);
        app.delete(&format!("/v3/api-tokens/{}", "x".repeat(2000))).await.expect_error(404);
    }
}

api_test! {
    /// A token can revoke itself.
    async fn a_token_can_revoke_itself(app) {
        let created = app.post("/v3/api-tokens", json!({ "name": "self" })).await.expect(201);
        let token = secret(&created);
        let client = app.as_token(&token);
        client.delete(&format!("/v3/api-tokens/{}", created["id"].as_str().unwrap())).await.expect(200);
        client.get("/v3/api-tokens").await.expect_error(401);
    }
}

api_test! {
    async fn expired_tokens_are_refused(app) {
        let (app, clock) = app.with_manual_clock();
        let soon = (chrono::Utc::now() + chrono::Duration::minutes(5)).to_rfc3339();
        let created = app.post("/v3/api-tokens", json!({ "name": "short", "expiresAt": soon })).await.expect(201);
        assert!(created["expiresAt"].is_string());
        let client_token = secret(&created);
        app.as_token(&client_token).get("/v3/tags").await.expect(200);
        clock.advance(chrono::Duration::minutes(6));
        let refused = app.as_token(&client_token).get("/v3/tags").await.expect_error(401);
        assert_eq!(refused["message"], "token expired");
        app.post("/v3/api-tokens", json!({ "name": "past", "expiresAt": "2020-01-01T00:00:00Z" }))
            .await
            .expect_field_error("expiresAt");
        app.post("/v3/api-tokens", json!({ "name": "bad", "expiresAt": "tomorrow" }))
            .await
            .expect_field_error("expiresAt");
    }
}

api_test! {
    async fn validates_the_create_body(app) {
        app.post("/v3/api-tokens", json!({})).await.expect_field_error("name");
        app.post("/v3/api-tokens", json!({ "name": "" })).await.expect_field_error("name");
        app.post("/v3/api-tokens", json!({ "name": "x".repeat(129) })).await.expect_field_error("name");
        app.post("/v3/api-tokens", json!({ "name": "x", "scopes": ["root"] })).await.expect_field_error("scopes[0]");
        app.post("/v3/api-tokens", json!({ "name": "x", "workspaceId": 2 })).await.expect_field_error("workspaceId");
        assert_eq!(app.get("/v3/api-tokens").await.expect(200)["totalCount"], 1);
    }
}

api_test! {
    /// Only an admin token mints or revokes an admin token (403 otherwise).
    async fn admin_tokens_need_an_admin(app) {
        let plain = secret(&app.post("/v3/api-tokens", json!({ "name": "plain" })).await.expect(201));
        let plain = app.as_token(&plain);
        plain.post("/v3/api-tokens", json!({ "name": "escalate", "scopes": ["admin"] })).await.expect_error(403);
        plain.post("/v3/api-tokens", json!({ "name": "fine" })).await.expect(201);

        let admin = app.post("/v3/api-tokens", json!({ "name": "ops", "scopes": ["admin"] })).await.expect(201);
        assert_eq!(admin["scopes"], json!(["admin"]));
        plain.delete(&format!("/v3/api-tokens/{}", admin["id"].as_str().unwrap())).await.expect_error(403);
        app.as_token(&secret(&admin)).post("/v3/workspaces", json!({ "name": "by ops" })).await.expect(201);
    }
}

api_test! {
    /// Tokens belong to one workspace: another workspace's token id is a 404.
    async fn tokens_are_scoped_to_their_workspace(app) {
        let (other_id, other_token) = app.new_workspace("Other").await;
        let other = app.as_token(&other_token);
        let theirs = other.post("/v3/api-tokens", json!({ "name": "theirs" })).await.expect(201);
        assert_eq!(theirs["workspaceId"], json!(other_id));
        app.delete(&format!("/v3/api-tokens/{}", theirs["id"].as_str().unwrap())).await.expect_error(404);
        let mine = app.get("/v3/api-tokens").await.expect(200);
        assert!(mine["data"].as_array().unwrap().iter().all(|t| t["workspaceId"] == 1));
        let listed = other.get("/v3/api-tokens").await.expect(200);
        assert_eq!(listed["totalCount"], 2);
        // Their token still works.
        app.as_token(&secret(&theirs)).get("/v3/tags").await.expect(200);
    }
}

api_test! {
    async fn malformed_authorization_headers_are_401(app) {
        for header in ["", "Bearer", "Bearer ", "Basic abc", "Token crm_x", ADMIN_TOKEN] {
            let request = http::Request::builder()
                .method(Method::GET)
                .uri("/v3/tags")
                .header("authorization", header)
                .body(axum::body::Body::empty())
                .unwrap();
            app.raw(request).await.expect_error(401);
        }
        let lower = http::Request::builder()
            .uri("/v3/tags")
            .header("authorization", format!("bearer {ADMIN_TOKEN}"))
            .body(axum::body::Body::empty())
            .unwrap();
        app.raw(lower).await.expect(200);
    }
}

api_test! {
    /// A token names its workspace and ends in a checksum: a mistyped one is
    /// refused with no read at all; a token from before (`crm_` and 40
    /// characters, like the suite's admin token) still works.
    async fn a_mistyped_token_is_refused_without_a_read(app) {
        let token = secret(&app.post("/v3/api-tokens", json!({ "name": "CI" })).await.expect(201));
        let last = token.chars().last().unwrap();
        let typo = format!("{}{}", &token[..token.len() - 1], if last == 'a' { 'b' } else { 'a' });
        let before = app.metrics();
        app.as_token(&typo).get("/v3/workspaces/info").await.expect_error(401);
        assert_eq!((app.metrics() - before).reads(), 0, "refused before any read");
        // A token moved to another workspace does not hold its checksum either.
        let (other, _) = app.new_workspace("Other").await;
        let moved = token.replacen("crm_1_", &format!("crm_{other}_"), 1);
        app.as_token(&moved).get("/v3/workspaces/info").await.expect_error(401);
        app.as_token(&token).get("/v3/workspaces/info").await.expect(200);
        assert!(!ADMIN_TOKEN.contains("crm_1_"), "the suite's token is of the earlier kind");
        app.get("/v3/workspaces/info").await.expect(200);
    }
}

api_test! {
    /// Each event type of the group is made by its change (docs/api-contract.md,
    /// "Events"; `events.rs` fails for a declared type no suite makes).
    async fn a_token_issued_and_revoked_makes_its_event_types(app) {
        let token = app.post("/v3/api-tokens", json!({ "name": "zapier" })).await.expect(201);
        app.delete(&format!("/v3/api-tokens/{}", token["id"].as_str().unwrap())).await.expect(200);
        app.assert_made_events(&["apiToken.created", "apiToken.deleted"]).await;
    }
}

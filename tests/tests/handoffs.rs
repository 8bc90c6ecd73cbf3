//! Redirect sessions (`/v3/redirect-session`): a payload under an unguessable
//! key, answered once, gone after its expiry; and `POST /v3/refresh-page`,
//! seen in `GET /v3/workspaces/info`.

use api_tests::api_test;
use api_tests::serde_json::json;
use shared::ids::WorkspaceId;

api_test! {
    /// The session is answered once: a second read, or a racing one, is a 404.
    async fn a_redirect_session_is_read_once(app) {
        let created = app.post("/v3/redirect-session", json!({ "targetUrl": "https://app.example.com/welcome", "payload": { "userId": 7, "next": "/deals" } })).await.expect(201);
        let key = created["key"].as_str().unwrap();
        assert_eq!(key.len(), 24);
        let created_at = shared::ids::parse_ts(created["createdAt"].as_str().unwrap()).unwrap();
        let expires = shared::ids::parse_ts(created["expiresAt"].as_str().unwrap()).unwrap();
        assert_eq!(expires - created_at, chrono::Duration::seconds(300));
        let read = app.get(&format!("/v3/redirect-session/{key}")).await.expect(200);
        assert_eq!(read["payload"], json!({ "userId": 7, "next": "/deals" }));
        assert_eq!(read["targetUrl"], "https://app.example.com/welcome");
        app.get(&format!("/v3/redirect-session/{key}")).await.expect_error(404);

        let racing = app.post("/v3/redirect-session", json!({ "targetUrl": "https://a.example.com" })).await.expect(201);
        let path = format!("/v3/redirect-session/{}", racing["key"].as_str().unwrap());
        let results = futures::future::join_all((0..6).map(|_| app.get(&path))).await;
        let answered = results.iter().filter(|r| r.status == 200).count();
        assert_eq!(answered, 1, "{results:?}");
        assert!(results.iter().all(|r| r.status == 200 || r.status == 404));
    }
}

api_test! {
    async fn a_redirect_session_expires(app) {
        let created = app.post("/v3/redirect-session", json!({ "targetUrl": "https://a.example.com", "expiresInSeconds": 10 })).await.expect(201);
        let key = created["key"].as_str().unwrap();
        app.expire(shared::keys::redirect_session(WorkspaceId(1), key), "expiresAt").await;
        app.get(&format!("/v3/redirect-session/{key}")).await.expect_error(404);
    }
}

api_test! {
    async fn refuses_bad_redirect_sessions(app) {
        let post = |body| app.post("/v3/redirect-session", body);
        post(json!({})).await.expect_field_error("targetUrl");
        post(json!({ "targetUrl": "/relative" })).await.expect_field_error("targetUrl");
        post(json!({ "targetUrl": "https://a.example.com", "expiresInSeconds": 5 })).await.expect_field_error("expiresInSeconds");
        post(json!({ "targetUrl": "https://a.example.com", "expiresInSeconds": 3601 })).await.expect_field_error("expiresInSeconds");
        post(json!({ "targetUrl": "https://a.example.com", "payload": { "x": "y".repeat(9000) } })).await.expect_field_error("payload");
        app.get("/v3/redirect-session/nope").await.expect_error(404);
    }
}

api_test! {
    /// Another workspace cannot read the session (and reading it there does not use it up).
    async fn redirect_sessions_stay_in_their_workspace(app) {
        let created = app.post("/v3/redirect-session", json!({ "targetUrl": "https://a.example.com" })).await.expect(201);
        let path = format!("/v3/redirect-session/{}", created["key"].as_str().unwrap());
        let (_, token) = app.new_workspace("Other").await;
        app.as_token(&token).get(&path).await.expect_error(404);
        app.get(&path).await.expect(200);
    }
}

api_test! {
    /// A refresh request is recorded on the workspace; clients that poll
    /// `GET /v3/workspaces/info` see it move forward.
    async fn refresh_page_is_seen_in_the_workspace_info(app) {
        assert!(app.get("/v3/workspaces/info").await.expect(200).get("refreshRequestedAt").is_none());
        let first = app.post("/v3/refresh-page", json!({})).await.expect(201);
        assert_eq!(first["workspaceId"], 1);
        let info = app.get("/v3/workspaces/info").await.expect(200);
        assert_eq!(info["refreshRequestedAt"], first["refreshRequestedAt"]);
        let second = app.send(http::Method::POST, "/v3/refresh-page", Some(api_tests::ADMIN_TOKEN), None).await.expect(201);
        assert!(second["refreshRequestedAt"].as_str().unwrap() > first["refreshRequestedAt"].as_str().unwrap());
        app.post("/v3/refresh-page", json!({ "reason": "new release" })).await.expect(201);
        app.post("/v3/refresh-page", json!({ "force": true })).await.expect_field_error("force");
        // Only the caller's workspace.
        let (_, token) = app.new_workspace("Other").await;
        assert!(app.as_token(&token).get("/v3/workspaces/info").await.expect(200).get("refreshRequestedAt").is_none());
    }
}

api_test! {
    /// Eight refreshes at once all succeed: the client names no version, so
    /// one that meets another's change reads the workspace again instead of
    /// answering a 409 it could not act on. Each moves the time forward.
    async fn concurrent_refreshes_all_succeed(app) {
        let answers = futures::future::join_all((0..8).map(|_| app.post("/v3/refresh-page", json!({})))).await;
        let mut times: Vec<String> = answers
            .into_iter()
            .map(|a| a.expect(201)["refreshRequestedAt"].as_str().unwrap().to_owned())
            .collect();
        times.sort();
        times.dedup();
        assert_eq!(times.len(), 8, "each refresh is its own moment: {times:?}");
        let info = app.get("/v3/workspaces/info").await.expect(200);
        assert_eq!(info["refreshRequestedAt"].as_str().unwrap(), times[7]);
    }
}

//! Idempotency keys on every POST: a retry with the same key, route and body
//! answers the first response with `Idempotent-Replayed: true` and has no
//! second effect; the same key elsewhere is 422; while the first runs, 409;
//! a request refused before any write keeps nothing; keys are per workspace
//! and forgotten after 24 hours.

use std::collections::BTreeSet;

use api_tests::serde_json::json;
use api_tests::{TestApp, api_test};
use http::{Method, Request};

async fn tag_count(app: &TestApp) -> u64 {
    app.get("/v3/tags").await.expect(200)["totalCount"]
        .as_u64()
        .unwrap()
}

api_test! {
    /// The retry answers the first response, marked as a replay; one tag exists.
    async fn a_retry_answers_the_first_response(app) {
        let body = json!({ "name": "VIP" });
        let first = app.post_with_key("/v3/tags", "retry-1", &body).await;
        assert!(!first.replayed());
        let first = first.expect(201);
        let again = app.post_with_key("/v3/tags", "retry-1", &body).await;
        assert!(again.replayed(), "{:?}", again.headers);
        assert_eq!(again.headers["content-type"], "application/json");
        assert_eq!(again.expect(201), first);
        assert_eq!(tag_count(&app).await, 1);
    }
}

api_test! {
    /// Headers of the answer come back too (here the one telling found from created).
    async fn a_replay_keeps_the_answers_own_headers(app) {
        let body = json!({ "name": "Ana", "phone": "+5511999990000" });
        let first = app.post_with_key("/v3/contacts/find-or-create", "foc", &body).await;
        assert_eq!(first.headers["x-contact-created"], "true");
        let again = app.post_with_key("/v3/contacts/find-or-create", "foc", &body).await;
        assert!(again.replayed());
        assert_eq!(again.headers["x-contact-created"], "true");
        assert_eq!(again.body, first.body);
    }
}

api_test! {
    /// The same key with another body, or on another route, is 422 and does nothing.
    async fn a_key_reused_elsewhere_is_422(app) {
        app.post_with_key("/v3/tags", "k", &json!({ "name": "VIP" })).await.expect(201);
        let other_body = app.post_with_key("/v3/tags", "k", &json!({ "name": "Lead" })).await;
        assert!(other_body.expect_error(422)["message"].as_str().unwrap().contains("different body"));
        let other_route = app.post_with_key("/v1/tags", "k", &json!({ "name": "VIP" })).await;
        assert!(other_route.expect_error(422)["message"].as_str().unwrap().contains("POST /v3/tags"));
        assert_eq!(tag_count(&app).await, 1);
    }
}

api_test! {
    /// A request refused before any write keeps nothing: the corrected retry
    /// with the same key runs.
    async fn a_refused_request_keeps_nothing(app) {
        app.post_with_key("/v3/tags", "fix-me", &json!({ "name": "" })).await.expect_field_error("name");
        let fixed = app.post_with_key("/v3/tags", "fix-me", &json!({ "name": "Fixed" })).await;
        assert!(!fixed.replayed());
        assert_eq!(fixed.expect(201)["name"], "Fixed");
        // A conflict (a write refused by its condition) is not kept either.
        app.post_with_key("/v3/tags", "dup", &json!({ "name": "fixed" })).await.expect_error(409);
        let other = app.post_with_key("/v3/tags", "dup", &json!({ "name": "Other" })).await;
        assert_eq!(other.expect(201)["name"], "Other");
    }
}

api_test! {
    /// Sixteen concurrent requests with one key: one effect; every answer is
    /// the created tag or a 409 "in progress".
    async fn sixteen_concurrent_requests_have_one_effect(app) {
        let body = json!({ "name": "Once" });
        let answers = futures::future::join_all((0..16).map(|_| app.post_with_key("/v3/tags", "race", &body))).await;
        let mut created = Vec::new();
        for answer in answers {
            match answer.status.as_u16() {
                201 => created.push(answer.body),
                409 => assert!(answer.headers.contains_key("retry-after"), "{}", answer.body),
                other => panic!("unexpected {other}: {}", answer.body),
            }
        }
        assert!(!created.is_empty());
        assert!(created.iter().all(|c| c == &created[0]), "{created:?}");
        assert_eq!(tag_count(&app).await, 1);
        // Once done, every retry is a replay of that one tag.
        let later = app.post_with_key("/v3/tags", "race", &body).await;
        assert!(later.replayed());
        assert_eq!(later.expect(201), created[0]);
        // One audit entry, for one create.
        let audit = app.get("/v3/audit").await.expect(200);
        let creates = audit["data"].as_array().unwrap().iter().filter(|e| e["action"] == "tag.create").count();
        assert_eq!(creates, 1, "{audit}");
    }
}

api_test! {
    /// Keys belong to a workspace: another workspace's same key is a new request.
    async fn keys_are_per_workspace(app) {
        let (_, token) = app.new_workspace("Other").await;
        let body = json!({ "name": "VIP" });
        let mine = app.post_with_key("/v3/tags", "shared-key", &body).await.expect(201);
        let theirs = app.post_keyed(&token, "/v3/tags", "shared-key", &body).await;
        assert!(!theirs.replayed());
        let theirs = theirs.expect(201);
        assert_ne!(mine["id"], theirs["id"]);
    }
}

api_test! {
    /// After 24 hours a key is forgotten: the same request runs again.
    async fn an_expired_key_is_forgotten(app) {
        let body = json!({ "name": "VIP" });
        let first = app.post_with_key("/v3/tags", "old", &body).await.expect(201);
        app.expire(app.key_record("old").await, "expiresAt").await;
        app.delete(&format!("/v3/tags/{}", first["id"].as_str().unwrap())).await.expect(200);
        let again = app.post_with_key("/v3/tags", "old", &body).await;
        assert!(!again.replayed());
        assert_ne!(again.expect(201)["id"], first["id"]);
    }
}

api_test! {
    /// A key must be 1 to 255 printable characters; GET ignores the header.
    async fn a_malformed_key_is_400(app) {
        let long = "k".repeat(256);
        app.post_with_key("/v3/tags", &long, &json!({ "name": "VIP" })).await.expect_field_error("Idempotency-Key");
        app.post_with_key("/v3/tags", &"k".repeat(255), &json!({ "name": "VIP" })).await.expect(201);
        // Without a token, 401 before anything is kept.
        let request = Request::builder()
            .method(Method::POST)
            .uri("/v3/tags")
            .header("content-type", "application/json")
            .header("idempotency-key", "anon")
            .body(axum::body::Body::from(r#"{"name":"x"}"#))
            .unwrap();
        app.raw(request).await.expect_error(401);
    }
}

api_test! {
    /// Actions are POSTs too: a campaign started twice with one key starts once.
    async fn an_action_is_applied_once(app) {
        let campaign = app
            .post(
                "/v3/campaigns",
                json!({ "name": "Launch", "channelId": "wa-1", "channelType": "whatsapp", "leadType": "list",
                        "leadsCount": 10, "message": "Hi", "scheduledTo": "2030-01-01T12:00:00Z" }),
            )
            .await
            .expect(201);
        let id = campaign["id"].as_str().map(str::to_owned).unwrap_or_else(|| campaign["id"].to_string());
        app.post(&format!("/v3/campaigns/{id}/schedule"), json!({})).await.expect(201);
        let start = format!("/v3/campaigns/{id}/start");
        let first = app.post_with_key(&start, "start-1", &json!({})).await.expect(201);
        let again = app.post_with_key(&start, "start-1", &json!({})).await;
        assert!(again.replayed());
        assert_eq!(again.expect(201), first);
        // Without the key, the second start is the lifecycle's 409.
        app.post(&start, json!({})).await.expect_error(409);
    }
}

/// Every create that declares where it is read (`.reads_back(..)`) is
/// checked by its group's suite with `TestApp::assert_read_back`: a retry
/// whose first answer was not kept answers as it first answered (status,
/// body, its headers), by reading what it made. A new create's check is in
/// its group's test file, and this test fails until it is.
#[test]
fn every_create_that_reads_back_is_checked_by_its_groups_suite() {
    let declared: BTreeSet<&str> = crm::groups()
        .iter()
        .flat_map(|g| g.routes())
        .filter(|r| r.read_back.is_some())
        .map(|r| r.path)
        .collect();
    let calls = api_tests::suites::calls("assert_read_back");
    let checked: BTreeSet<&str> = calls
        .iter()
        .filter_map(|args| api_tests::suites::literals(args).first().copied())
        .collect();
    let unchecked: Vec<_> = declared.difference(&checked).collect();
    assert!(
        unchecked.is_empty(),
        "{unchecked:?} declare a read-back that no suite checks: add \
         `app.assert_read_back(route, path, body, moving)` to the group's test file"
    );
    let undeclared: Vec<_> = checked.difference(&declared).collect();
    assert!(undeclared.is_empty(), "{undeclared:?} are checked but declare no read-back");
}

//! The one error shape: every failure, of every route, is
//! `{ statusCode, error, message, details?, requestId }` with the right status.

use api_tests::serde_json::json;
use api_tests::{ADMIN_TOKEN, api_test};
use axum::body::Body;
use http::Request;

fn post_raw(path: &str, content_type: Option<&str>, body: impl Into<Body>) -> Request<Body> {
    let mut builder = Request::builder()
        .method("POST")
        .uri(path)
        .header("authorization", format!("Bearer {ADMIN_TOKEN}"));
    if let Some(ct) = content_type {
        builder = builder.header("content-type", ct);
    }
    builder.body(body.into()).unwrap()
}

api_test! {
    async fn malformed_json_is_400(app) {
        let body = app.raw(post_raw("/v3/tags", Some("application/json"), "{\"name\": \"x\",")).await.expect_error(400);
        assert!(body["message"].as_str().unwrap().starts_with("malformed JSON"), "{body}");
        app.raw(post_raw("/v3/tags", Some("application/json"), "{\"name\": \"x\"} trailing")).await.expect_error(400);
        app.raw(post_raw("/v3/tags", Some("application/json"), "")).await.expect_error(400);
    }
}

api_test! {
    /// A wrong type names the field and says what was expected.
    async fn wrong_types_name_the_field(app) {
        let body = app.post("/v3/tags", json!({ "name": ["VIP"] })).await.expect_field_error("name");
        assert_eq!(body["message"], "name: invalid type: sequence, expected a string");
        assert_eq!(body["details"], json!([{ "field": "name", "problem": "invalid type: sequence, expected a string" }]));
    }
}

api_test! {
    async fn non_json_bodies_are_415(app) {
        app.raw(post_raw("/v3/tags", Some("text/plain"), "name=x")).await.expect_error(415);
        app.raw(post_raw("/v3/tags", Some("application/x-www-form-urlencoded"), "name=x")).await.expect_error(415);
        // Without a content type the body is read as JSON.
        app.raw(post_raw("/v3/tags", None, "{\"name\": \"x\"}")).await.expect(201);
        app.raw(post_raw("/v3/tags", Some("application/json; charset=utf-8"), "{\"name\": \"y\"}")).await.expect(201);
    }
}

api_test! {
    async fn oversized_bodies_are_413(app) {
        let huge = format!("{{\"name\": \"{}\"}}", "x".repeat(shared::http::BODY_LIMIT + 1));
        app.raw(post_raw("/v3/tags", Some("application/json"), huge)).await.expect_error(413);
        assert_eq!(app.get("/v3/tags").await.expect(200)["totalCount"], 0);
    }
}

api_test! {
    async fn unknown_routes_and_methods(app) {
        let body = app.get("/v3/nothing-here").await.expect_error(404);
        assert_eq!(body["message"], "no route for GET /v3/nothing-here");
        app.send(http::Method::PUT, "/v3/tags", Some(ADMIN_TOKEN), Some(json!({}))).await.expect_error(405);
    }
}

api_test! {
    /// 401 answers say how to authenticate.
    async fn unauthorized_answers_are_json(app) {
        let response = app.send(http::Method::GET, "/v3/workspaces/info", None, None).await;
        let body = response.expect_error(401);
        assert_eq!(body["error"], "Unauthorized");
    }
}

api_test! {
    /// Every response carries a request id, and errors repeat it in the body.
    async fn request_ids(app) {
        let response = app.get("/v3/tags/1").await;
        let header = response.headers["x-request-id"].to_str().unwrap().to_owned();
        let body = response.expect_error(404);
        assert_eq!(body["requestId"], json!(header));
        // A caller's own request id is kept.
        let request = Request::builder()
            .uri("/v3/tags/1")
            .header("authorization", format!("Bearer {ADMIN_TOKEN}"))
            .header("x-request-id", "trace-me-123")
            .body(Body::empty())
            .unwrap();
        let body = app.raw(request).await.expect_error(404);
        assert_eq!(body["requestId"], "trace-me-123");
    }
}

//! Utility: the server's time (`/v3/time`, `/v3/time/utc`) and the store
//! diagnostic (`/v3/test-store`).

use api_tests::serde_json::json;
use api_tests::{Backend, api_test};
use http::Method;

api_test! {
    async fn tells_the_time(app) {
        let before = chrono::Utc::now().timestamp_millis();
        let time = app.get("/v3/time").await.expect(200);
        let utc = app.get("/v3/time/utc").await.expect(200);
        let after = chrono::Utc::now().timestamp_millis();
        let t = time["timestamp"].as_i64().unwrap();
        assert!(before <= t && t <= after, "{time}");
        assert_eq!(time["timezone"], "UTC");
        assert!(time["time"].as_str().unwrap().ends_with('Z'));
        assert!(utc["utc"].as_str().unwrap().ends_with('Z') && utc["timestamp"].as_i64().unwrap() >= t);
        app.send(Method::GET, "/v3/time", None, None).await.expect_error(401);
    }
}

api_test! {
    async fn checks_the_store(app) {
        let check = app.get("/v3/test-store").await.expect(200);
        assert_eq!(check["status"], "ok");
        let backend = if app.backend == Backend::DynamoDb { "dynamodb" } else { "embedded" };
        assert_eq!(check["backend"], json!(backend));
        assert!(check["latencyMs"].as_f64().unwrap() >= 0.0);
    }
}

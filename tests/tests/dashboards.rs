//! Dashboards (`/v3/dashboards`) and their snapshots: create and read a layout
//! of widgets, take snapshots computed in the background, list them newest first.

use api_tests::api_test;
use api_tests::serde_json::json;

api_test! {
    async fn creates_and_reads_a_dashboard(app) {
        let layout = json!([{ "i": "sales", "x": 0, "y": 0, "w": 6, "h": 4 }, { "i": "funnel", "x": 6, "y": 0, "w": 6, "h": 4 }]);
        let d = app.post("/v3/dashboards", json!({ "name": "Sales", "description": "weekly", "layout": layout, "authorId": { "id": 7 }, "_id": "old" })).await.expect(201);
        assert!(d["id"].as_str().unwrap().parse::<u64>().is_ok());
        assert_eq!((d["name"].clone(), d["workspaceId"].clone(), d["_id"].clone()), (json!("Sales"), json!(1), json!("old")));
        assert_eq!(d["layout"][1]["i"], "funnel");
        assert_eq!(app.get(&format!("/v3/dashboards/{}", d["id"].as_str().unwrap())).await.expect(200), d);
        app.post("/v3/dashboards", json!({})).await.expect_field_error("name");
        app.post("/v3/dashboards", json!({ "name": "x", "layout": [{ "i": "a", "x": -1, "y": 0, "w": 1, "h": 1 }] })).await.expect_field_error("layout[0].x");
        app.post("/v3/dashboards", json!({ "name": "x", "layout": [{ "i": "a" }] })).await.expect_field_error("layout[0].x");
        app.post("/v3/dashboards", json!({ "name": "x", "authorId": 7 })).await.expect_field_error("authorId");
        app.get("/v3/dashboards/123").await.expect_error(404);
        app.get("/v3/dashboards/abc").await.expect_field_error("dashboardId");
    }
}

api_test! {
    /// A snapshot is recorded `queued` and answered at once; the background job
    /// computes each widget's metric; snapshots list newest first.
    async fn snapshots_a_dashboard(app) {
        app.post("/v3/contacts", json!({ "name": "Ana" })).await.expect(201);
        app.post("/v3/contacts", json!({ "name": "Rui", "newContact": true })).await.expect(201);
        let layout = json!([
            { "i": "a", "x": 0, "y": 0, "w": 1, "h": 1, "metric": "contactsCreated" },
            { "i": "b", "x": 1, "y": 0, "w": 1, "h": 1, "metric": "newContacts" },
            { "i": "c", "x": 2, "y": 0, "w": 1, "h": 1 },
        ]);
        let d = app.post("/v3/dashboards", json!({ "name": "Sales", "layout": layout })).await.expect(201);
        let id = d["id"].as_str().unwrap();
        let first = app.post(&format!("/v3/dashboards/{id}/snapshots"), json!({ "authorId": 7, "authorName": "Ana", "name": "Monday" })).await.expect(201);
        for member in ["id", "data", "authorId", "authorName", "workspaceId", "createdAt", "lastUpdateAt"] {
            assert!(first.get(member).is_some(), "{member} is required: {first}");
        }
        assert_eq!(first["dashboardId"], json!(id));
        assert_eq!(first["status"]["state"], "queued");
        assert_eq!(first["data"]["dashboardName"], "Sales");
        let done = api_tests::computed_snapshot(&app, id, first["id"].as_str().unwrap()).await;
        assert_eq!(done["data"]["a"]["value"], 2);
        assert_eq!(done["data"]["a"]["metric"], "contactsCreated");
        assert_eq!(done["data"]["b"]["value"], 1);
        assert_eq!(done["data"]["c"]["error"], "the widget names no metric", "one widget's failure fails no other");
        assert_eq!(done["status"]["widgetsFailed"], 1);
        assert!(done["processedAt"].is_string() && done["processedTimeInMs"].is_number() && done["totalTimeInMs"].is_number());
        let second = app.post(&format!("/v3/dashboards/{id}/snapshots"), json!({ "authorId": 8, "authorName": "Bia", "dashboardName": "Sales (copy)", "dashboardId": id, "period": "today" })).await.expect(201);
        assert_eq!(second["data"]["dashboardName"], "Sales (copy)");
        let page = app.get(&format!("/v3/dashboards/{id}/snapshots")).await.expect(200);
        assert_eq!(page["totalCount"], 2);
        assert_eq!(page["data"][0]["id"], second["id"], "newest first");
        assert_eq!(app.get(&format!("/v3/dashboards/{id}/snapshots?limit=1&offset=1")).await.expect(200)["data"][0]["id"], first["id"]);

        app.post("/v3/dashboards", json!({ "name": "x", "layout": [{ "i": "a", "x": 0, "y": 0, "w": 1, "h": 1, "metric": "happiness" }] })).await.expect_field_error("layout[0].metric");
        app.post(&format!("/v3/dashboards/{id}/snapshots"), json!({ "authorName": "x" })).await.expect_field_error("authorId");
        app.post(&format!("/v3/dashboards/{id}/snapshots"), json!({ "authorId": 1 })).await.expect_field_error("authorName");
        app.post(&format!("/v3/dashboards/{id}/snapshots"), json!({ "authorId": 1, "authorName": "x", "dashboardId": "9" })).await.expect_field_error("dashboardId");
        app.post(&format!("/v3/dashboards/{id}/snapshots"), json!({ "authorId": 1, "authorName": "x", "data": {} })).await.expect_field_error("data");
        app.post(&format!("/v3/dashboards/{id}/snapshots"), json!({ "authorId": 1, "authorName": "x", "period": "custom" })).await.expect_field_error("periodFrom");
        app.post("/v3/dashboards/123/snapshots", json!({ "authorId": 1, "authorName": "x" })).await.expect_error(404);
        app.get("/v3/dashboards/123/snapshots").await.expect_error(404);
        app.get(&format!("/v3/dashboards/{id}/snapshots/01ARZ3NDEKTSV4RRFFQ69G5FAV")).await.expect_error(404);
        app.get(&format!("/v3/dashboards/{id}/snapshots/nope")).await.expect_error(404);
        app.get(&format!("/v3/dashboards/{id}/snapshots?limit=501")).await.expect_field_error("limit");
    }
}

api_test! {
    async fn dashboards_are_per_workspace(app) {
        let d = app.post("/v3/dashboards", json!({ "name": "Mine" })).await.expect(201);
        let id = d["id"].as_str().unwrap();
        let s = app.post(&format!("/v3/dashboards/{id}/snapshots"), json!({ "authorId": 1, "authorName": "A" })).await.expect(201);
        let (_, token) = app.new_workspace("Other").await;
        let other = app.as_token(&token);
        other.get(&format!("/v3/dashboards/{id}")).await.expect_error(404);
        other.get(&format!("/v3/dashboards/{id}/snapshots")).await.expect_error(404);
        other.get(&format!("/v3/dashboards/{id}/snapshots/{}", s["id"].as_str().unwrap())).await.expect_error(404);
        other.post(&format!("/v3/dashboards/{id}/snapshots"), json!({ "authorId": 1, "authorName": "B" })).await.expect_error(404);
        assert_eq!(app.get(&format!("/v3/dashboards/{id}/snapshots")).await.expect(200)["totalCount"], 1);
    }
}

api_test! {
    /// A keyed create whose answer was not kept (the store took the record,
    /// not the answer) answers its retry as it first did, by reading what it
    /// made (docs/api-contract.md, "Idempotency").
    async fn a_keyed_create_whose_answer_was_lost_is_read_back(app) {
        let layout = json!([{ "i": "volume", "x": 0, "y": 0, "w": 6, "h": 4, "metric": "sessionsStarted" }]);
        app.assert_read_back("/v3/dashboards", "/v3/dashboards", &json!({ "name": "Support", "layout": layout }), &[]).await;
    }
}

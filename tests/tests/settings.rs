//! Custom fields (`/v3/custom-fields`, `/v1/custom-fields`) and business hours
//! (`/v3/business-hours`): records the API reads, loaded by `crm load`.

use api_tests::serde_json::{Value, json};
use api_tests::{TestApp, api_test};

async fn load(
    app: &TestApp,
    workspace: u64,
    line: Value,
) -> Result<&'static str, shared::ApiError> {
    app.load_line(workspace, line).await
}

async fn fields(app: &TestApp) {
    for (id, name, deleted) in [
        (1, "Plan", false),
        (2, "Old", true),
        (3, "Seats", false),
        (4, "CPF", false),
    ] {
        let line = json!({
            "type": "customField", "id": id, "name": name, "key": name.to_lowercase(), "entity": "contact",
            "fieldType": "text", "isDeleted": deleted, "position": id, "options": { "max": 10 }
        });
        load(app, 1, line).await.unwrap();
    }
}

api_test! {
    async fn lists_and_reads_custom_fields(app) {
        fields(&app).await;
        let page = app.get("/v3/custom-fields").await.expect(200);
        assert_eq!(page["totalCount"], 4);
        let first = &page["data"][0];
        assert_eq!((first["id"].clone(), first["name"].clone(), first["type"].clone()), (json!("1"), json!("Plan"), json!("text")));
        assert_eq!(first["isActive"], true);
        assert_eq!(first["workspaceId"], 1);
        assert!(first["createdAt"].is_string() && first["lastUpdateAt"].is_string());
        assert_eq!(app.get("/v3/custom-fields/2").await.expect(200)["isDeleted"], true);
        assert_eq!(app.get("/v3/custom-fields?limit=2&offset=2").await.expect(200)["data"][0]["name"], "Seats");
        app.get("/v3/custom-fields/9").await.expect_error(404);
        app.get("/v3/custom-fields/x").await.expect_field_error("id");
        app.get("/v3/custom-fields?limit=0").await.expect_field_error("limit");
    }
}

api_test! {
    /// /v1: the public record, deleted definitions left out, cursor pages.
    async fn v1_lists_public_custom_fields(app) {
        fields(&app).await;
        let page = app.get("/v1/custom-fields?limit=2").await.expect(200);
        assert_eq!(page["data"][0], json!({ "id": "1", "key": "plan", "name": "Plan", "type": "text", "entity": "contact", "options": { "max": 10 }, "isActive": true, "position": 1.0 }));
        assert_eq!(page["data"][1]["name"], "Seats", "the deleted one is left out");
        let next = page["nextCursor"].as_str().unwrap();
        assert_eq!(next, "3");
        let rest = app.get(&format!("/v1/custom-fields?limit=2&cursor={next}")).await.expect(200);
        assert_eq!((rest["data"][0]["name"].clone(), rest["nextCursor"].clone()), (json!("CPF"), json!("")));
        app.get("/v1/custom-fields/2").await.expect_error(404);
        assert_eq!(app.get("/v1/custom-fields/4").await.expect(200)["key"], "cpf");
        app.get("/v1/custom-fields?limit=101").await.expect_field_error("limit");
    }
}

api_test! {
    async fn business_hours(app) {
        let office = json!({
            "type": "businessHour", "id": 1, "name": "Office", "timezone": "America/Sao_Paulo", "isDefault": true,
            "intervals": [{ "day": 1, "start": "09:00", "end": "18:00" }, { "day": 6, "start": "09:00", "end": "12:00" }],
            "holidays": ["2026-12-25"]
        });
        load(&app, 1, office).await.unwrap();
        load(&app, 1, json!({ "type": "businessHour", "id": 2, "name": "Night", "timezone": "UTC", "intervals": [{ "day": 0, "start": "20:00", "end": "24:00" }] })).await.unwrap();
        let page = app.get("/v3/business-hours").await.expect(200);
        assert_eq!(page["totalCount"], 2);
        let one = app.get("/v3/business-hours/1").await.expect(200);
        assert_eq!((one["name"].clone(), one["timezone"].clone(), one["isDefault"].clone()), (json!("Office"), json!("America/Sao_Paulo"), json!(true)));
        assert_eq!(one["intervals"][1], json!({ "day": 6, "start": "09:00", "end": "12:00" }));
        assert_eq!(one["holidays"], json!(["2026-12-25"]));
        app.get("/v3/business-hours/3").await.expect_error(404);
        // Loading it again changed nothing; a change moves lastUpdateAt.
        load(&app, 1, json!({ "type": "businessHour", "id": 2, "name": "Night", "timezone": "UTC", "intervals": [{ "day": 0, "start": "20:00", "end": "24:00" }] })).await.unwrap();
        assert_eq!(app.get("/v3/business-hours/2").await.expect(200)["lastUpdateAt"], page["data"][1]["lastUpdateAt"]);
        load(&app, 1, json!({ "type": "businessHour", "id": 2, "name": "Late", "timezone": "UTC" })).await.unwrap();
        let changed = app.get("/v3/business-hours/2").await.expect(200);
        assert_eq!(changed["name"], "Late");
        assert!(changed["lastUpdateAt"].as_str() > page["data"][1]["lastUpdateAt"].as_str());
        assert_eq!(changed["createdAt"], page["data"][1]["createdAt"]);
    }
}

api_test! {
    async fn the_loader_validates_settings(app) {
        for line in [
            json!({ "type": "businessHour", "id": 1, "name": "x", "timezone": "UTC", "intervals": [{ "day": 7, "start": "09:00", "end": "10:00" }] }),
            json!({ "type": "businessHour", "id": 1, "name": "x", "timezone": "UTC", "intervals": [{ "day": 1, "start": "9h", "end": "10:00" }] }),
            json!({ "type": "businessHour", "id": 1, "name": "x", "timezone": "UTC", "intervals": [{ "day": 1, "start": "18:00", "end": "09:00" }] }),
            json!({ "type": "businessHour", "id": 1, "name": "x", "timezone": "UTC", "holidays": ["Christmas"] }),
            json!({ "type": "businessHour", "id": 1, "name": "x" }),
            json!({ "type": "customField", "id": 1 }),
            json!({ "type": "customField", "id": 1, "name": "x", "colour": "red" }),
        ] {
            let error = load(&app, 1, line.clone()).await.expect_err(&line.to_string());
            assert_eq!(error.status.as_u16(), 400, "{line}: {}", error.message);
        }
        assert_eq!(app.get("/v3/business-hours").await.expect(200)["totalCount"], 0);
    }
}

api_test! {
    async fn settings_are_per_workspace(app) {
        fields(&app).await;
        let (_, token) = app.new_workspace("Other").await;
        let other = app.as_token(&token);
        assert_eq!(other.get("/v3/custom-fields").await.expect(200)["totalCount"], 0);
        other.get("/v3/custom-fields/1").await.expect_error(404);
        other.get("/v1/custom-fields/1").await.expect_error(404);
        assert_eq!(other.get("/v1/custom-fields").await.expect(200)["data"], json!([]));
    }
}

api_test! {
    /// Each event type of the group is made by its change (docs/api-contract.md,
    /// "Events"; `events.rs` fails for a declared type no suite makes).
    async fn each_loaded_change_of_a_setting_makes_its_event_type(app) {
        app.load_line(1, json!({ "type": "product", "id": 1, "name": "Starter plan", "price": 49.0 })).await.unwrap();
        app.patch("/v3/products/1", json!({ "price": 59 })).await.expect(200);
        for name in ["Plan", "Plan 2"] {
            let field = json!({ "type": "customField", "id": 1, "name": name, "key": "plan", "entity": "contact", "fieldType": "text" });
            app.load_line(1, field).await.unwrap();
            let hours = json!({ "type": "businessHour", "id": 1, "name": name, "timezone": "America/Sao_Paulo",
                "intervals": [{ "day": 1, "start": "09:00", "end": "18:00" }] });
            app.load_line(1, hours).await.unwrap();
        }
        app.assert_made_events(&["product.created", "product.updated", "customField.created", "customField.updated",
            "businessHour.created", "businessHour.updated"]).await;
    }
}

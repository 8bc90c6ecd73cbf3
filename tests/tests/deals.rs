//! Deals (`/v3/deals`) and products (`/v3/products`): the required fields of a
//! create, honest derived fields (won/lost date, lost reasons, stage time),
//! visibility, every filter in flat and nested forms, pages, and tenancy through
//! `contactId` and `productIds`.

use api_tests::serde_json::{self, Value, json};
use api_tests::{TestApp, api_test};

async fn load(app: &TestApp, workspace: u64, line: Value) {
    app.load_line(workspace, line).await.unwrap();
}

/// A valid create body, changed by `overrides`.
fn body(contact: u64, overrides: Value) -> Value {
    let mut body = json!({
        "name": "Deal", "value": 1000, "status": "open", "contactId": contact, "operatorId": 7, "groupId": 3,
        "pipelineId": "p1", "stageId": "s1", "origin": "site", "tagIds": [1]
    });
    for (k, v) in overrides.as_object().unwrap() {
        if v.is_null() {
            body.as_object_mut().unwrap().remove(k);
        } else {
            body[k] = v.clone();
        }
    }
    body
}

const OWNER: &str = "roleId=1&isOwner=true&userId=7";

fn ids(page: &Value) -> Vec<String> {
    page["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["name"].as_str().unwrap().to_owned())
        .collect()
}

api_test! {
    /// POST /v3/deals: 201 with the deal; the contact is a snapshot of the contact record.
    async fn creates_a_deal(app) {
        let contact = app.a_contact().await;
        let deal = app.post("/v3/deals", body(contact, json!({ "authorType": "bot", "context": { "automationId": "a1" } }))).await.expect(201);
        assert!(deal["id"].as_str().unwrap().parse::<u64>().is_ok());
        assert_eq!(deal["workspaceId"], 1);
        assert_eq!(deal["contact"]["id"], json!(contact));
        assert_eq!(deal["contact"]["phone"], "+5511987654321");
        assert_eq!((deal["status"].clone(), deal["value"].clone()), (json!("open"), json!(1000.0)));
        assert!(deal.get("wonLostDate").is_none());
        assert_eq!(deal["timeInStage"], json!({}));
        assert!(deal["lastStageChanged"].is_string() && deal["createdAt"].is_string() && deal["lastUpdateAt"].is_string());
        let read = app.get(&format!("/v3/deals/{}", deal["id"].as_str().unwrap())).await.expect(200);
        assert_eq!(read, deal);
        // contact.id works as well as contactId.
        let with_object = app.post("/v3/deals", body(contact, json!({ "contactId": null, "contact": { "id": contact, "name": "ignored" } }))).await.expect(201);
        assert_eq!(with_object["contact"]["name"], "Buyer");
    }
}

api_test! {
    /// Every field the document requires (the spec's), each missing alone,
    /// and the types and enums.
    async fn validates_the_create_body(app) {
        let contact = app.a_contact().await;
        let document: Value = serde_json::from_str(&crm::openapi()).unwrap();
        let required = document["components"]["schemas"]["DealCreate"]["required"].as_array().unwrap().clone();
        assert_eq!(required.len(), 9, "{required:?}");
        for field in required {
            let field = field.as_str().unwrap();
            app.post("/v3/deals", body(contact, json!({ field: null }))).await.expect_field_error(field);
        }
        app.post("/v3/deals", body(contact, json!({ "contactId": null }))).await.expect_field_error("contact");
        app.post("/v3/deals", body(contact, json!({ "status": "pending" }))).await.expect_field_error("status");
        app.post("/v3/deals", body(contact, json!({ "value": "1000" }))).await.expect_field_error("value");
        app.post("/v3/deals", body(contact, json!({ "authorType": "alien" }))).await.expect_field_error("authorType");
        app.post("/v3/deals", body(contact, json!({ "workspaceId": 2 }))).await.expect_field_error("workspaceId");
        app.post("/v3/deals", body(contact, json!({ "timeInStage": {} }))).await.expect_field_error("timeInStage");
        app.post("/v3/deals", body(contact, json!({ "contactId": 99 }))).await.expect_error(404);
        let too_many = app.post("/v3/deals", body(contact, json!({ "tagIds": (0..21).collect::<Vec<u64>>() }))).await.expect_field_error("tagIds");
        assert_eq!(too_many["details"][0]["problem"], "must be at most 20 items", "a list's limit is in items");
        assert_eq!(app.get(&format!("/v3/deals?{OWNER}")).await.expect(200)["totalCount"], 0);
    }
}

api_test! {
    /// Deal products are catalog products; total is computed when absent.
    async fn computes_product_totals(app) {
        let contact = app.a_contact().await;
        load(&app, 1, json!({ "type": "product", "id": 5, "name": "Seat", "price": 100 })).await;
        let products = json!([
            { "id": "5", "quantity": 3 },
            { "id": "5", "quantity": 2, "discount": 10, "discountType": { "type": "percent" } },
            { "id": "5", "price": 50, "quantity": 1, "discount": 5, "discountType": { "type": "amount" } },
            { "id": "5", "quantity": 1, "total": 1 }
        ]);
        let deal = app.post("/v3/deals", body(contact, json!({ "products": products }))).await.expect(201);
        let totals: Vec<Value> = deal["products"].as_array().unwrap().iter().map(|p| p["total"].clone()).collect();
        assert_eq!(totals, [json!(300.0), json!(180.0), json!(45.0), json!(1.0)]);
        assert_eq!(deal["products"][0]["name"], "Seat");
        app.post("/v3/deals", body(contact, json!({ "products": [{ "id": "6" }] }))).await.expect_error(404);
        app.post("/v3/deals", body(contact, json!({ "products": [{ "id": "seat" }] }))).await.expect_field_error("products[0].id");
        app.post("/v3/deals", body(contact, json!({ "products": [{ "id": "5", "discountType": { "type": "half" } }] }))).await.expect_field_error("products[0].discountType.type");
    }
}

api_test! {
    /// won/lost stamp wonLostDate, open clears it; lost reasons only on lost deals.
    async fn status_changes_are_honest(app) {
        let contact = app.a_contact().await;
        let deal = app.post("/v3/deals", body(contact, json!({}))).await.expect(201);
        let path = format!("/v3/deals/{}", deal["id"].as_str().unwrap());
        app.patch(&path, json!({ "lostReason": ["price"] })).await.expect_field_error("lostReason");
        let won = app.patch(&path, json!({ "status": "won" })).await.expect(200);
        assert!(won["wonLostDate"].is_string());
        let reopened = app.patch(&path, json!({ "status": "open" })).await.expect(200);
        assert!(reopened.get("wonLostDate").is_none());
        let lost = app.patch(&path, json!({ "status": "lost", "lostReason": ["price", "timing"], "lostReasonObs": "too dear" })).await.expect(200);
        assert_eq!(lost["lostReason"], json!(["price", "timing"]));
        assert!(lost["wonLostDate"].is_string());
        let open_again = app.patch(&path, json!({ "status": "open" })).await.expect(200);
        assert!(open_again.get("lostReason").is_none() && open_again.get("lostReasonObs").is_none(), "{open_again}");
        app.patch(&path, json!({ "status": "won", "wonLostDate": "2026-01-02T03:04:05Z" })).await.expect(200);
        assert_eq!(app.get(&path).await.expect(200)["wonLostDate"], "2026-01-02T03:04:05.000Z");
        app.patch(&path, json!({ "status": "open", "wonLostDate": "2026-01-02T03:04:05Z" })).await.expect_field_error("wonLostDate");
    }
}

api_test! {
    /// A stage change stamps lastStageChanged and adds the time spent to
    /// timeInStage (the app's clock is moved, not waited for).
    async fn stage_changes_accumulate_time(app) {
        let (app, clock) = app.with_manual_clock();
        let minutes = |n| chrono::Duration::minutes(n);
        let contact = app.a_contact().await;
        let deal = app.post("/v3/deals", body(contact, json!({ "stageId": "s1" }))).await.expect(201);
        let path = format!("/v3/deals/{}", deal["id"].as_str().unwrap());
        clock.advance(minutes(30));
        let moved = app.patch(&path, json!({ "stageId": "s2" })).await.expect(200);
        assert!(moved["lastStageChanged"].as_str() > deal["lastStageChanged"].as_str());
        assert_eq!(moved["timeInStage"], json!({ "s1": 30 * 60_000 }));
        clock.advance(minutes(10));
        app.patch(&path, json!({ "stageId": "s1" })).await.expect(200);
        clock.advance(minutes(5));
        let back = app.patch(&path, json!({ "stageId": "s2" })).await.expect(200);
        assert_eq!(back["timeInStage"], json!({ "s1": 35 * 60_000, "s2": 10 * 60_000 }));
        app.patch(&path, json!({ "lastStageChanged": "2026-01-01T00:00:00Z" })).await.expect_field_error("lastStageChanged");
    }
}

api_test! {
    async fn patch_refuses_what_it_must_not_change(app) {
        let contact = app.a_contact().await;
        let deal = app.post("/v3/deals", body(contact, json!({}))).await.expect(201);
        let path = format!("/v3/deals/{}", deal["id"].as_str().unwrap());
        for field in ["workspaceId", "createdAt", "lastUpdateAt", "updatedAt"] {
            app.patch(&path, json!({ field: "x" })).await.expect_field_error(field);
        }
        let patched = app.patch(&path, json!({ "name": "Bigger", "value": 2000.5, "tagIds": [1, 2] })).await.expect(200);
        // The most index items a change can move: 20 tags out, 20 others in.
        app.patch(&path, json!({ "tagIds": (100..120).collect::<Vec<u64>>() })).await.expect(200);
        app.patch(&path, json!({ "tagIds": (200..220).collect::<Vec<u64>>() })).await.expect(200);
        app.patch(&path, json!({ "tagIds": [1, 2] })).await.expect(200);
        assert_eq!((patched["name"].clone(), patched["value"].clone()), (json!("Bigger"), json!(2000.5)));
        assert_eq!(patched["createdAt"], deal["createdAt"]);
        app.patch("/v3/deals/not-a-deal", json!({ "name": "x" })).await.expect_error(404);
        app.get("/v3/deals/123").await.expect_error(404);
    }
}

/// Twelve deals across stages, statuses, operators, tags and products.
async fn pipeline(app: &TestApp) -> u64 {
    let contact = app.a_contact().await;
    load(
        app,
        1,
        json!({ "type": "product", "id": 5, "name": "Seat", "price": 100 }),
    )
    .await;
    load(
        app,
        1,
        json!({ "type": "product", "id": 6, "name": "Support", "price": 10 }),
    )
    .await;
    for i in 0..12u64 {
        let status = ["open", "won", "lost"][(i % 3) as usize];
        let mut b = body(
            contact,
            json!({
                "name": format!("d{i:02}"), "value": 100 * (12 - i), "status": status, "operatorId": 7 + i % 2,
                "groupId": 3 + i % 4, "stageId": format!("s{}", i % 4), "pipelineId": if i < 8 { "p1" } else { "p2" },
                "tagIds": [i % 3, 10 + i % 2]
            }),
        );
        if i % 5 == 0 {
            b["products"] = json!([{ "id": if i == 5 { "6" } else { "5" } }]);
        }
        if status == "lost" {
            b["lostReason"] = json!(["price"]);
        }
        app.post("/v3/deals", b).await.expect(201);
    }
    contact
}

api_test! {
    /// roleId, isOwner and userId are required; a non-owner sees its own deals only.
    async fn lists_what_the_user_may_see(app) {
        pipeline(&app).await;
        app.get("/v3/deals?isOwner=true&userId=7").await.expect_field_error("roleId");
        app.get("/v3/deals?roleId=1&userId=7").await.expect_field_error("isOwner");
        app.get("/v3/deals?roleId=1&isOwner=true").await.expect_field_error("userId");
        assert_eq!(app.get(&format!("/v3/deals?{OWNER}")).await.expect(200)["totalCount"], 12);
        let own = app.get("/v3/deals?roleId=2&isOwner=false&userId=8").await.expect(200);
        assert_eq!(own["totalCount"], 6);
        assert!(own["data"].as_array().unwrap().iter().all(|d| d["operatorId"] == 8));
        let unrestricted = app.get("/v3/deals?roleId=2&isOwner=false&userId=8&ignoreRestrictions=true").await.expect(200);
        assert_eq!(unrestricted["totalCount"], 12);
        assert_eq!(app.get("/v3/deals?roleId=2&isOwner=false&userId=8&operatorId=7").await.expect(200)["totalCount"], 0);
    }
}

api_test! {
    /// limit/offset pages are disjoint and complete, newest first by default.
    async fn pages_deals(app) {
        pipeline(&app).await;
        let mut seen = Vec::new();
        for offset in [0, 5, 10] {
            let page = app.get(&format!("/v3/deals?{OWNER}&limit=5&offset={offset}")).await.expect(200);
            assert_eq!(page["totalCount"], 12);
            seen.extend(ids(&page));
        }
        let expected: Vec<String> = (0..12).rev().map(|i| format!("d{i:02}")).collect();
        assert_eq!(seen, expected);
        // Filtered pages too.
        let mut open = Vec::new();
        for offset in [0, 3] {
            open.extend(ids(&app.get(&format!("/v3/deals?{OWNER}&status=open&limit=3&offset={offset}&sort=asc")).await.expect(200)));
        }
        assert_eq!(open, ["d00", "d03", "d06", "d09"]);
        app.get(&format!("/v3/deals?{OWNER}&limit=0")).await.expect_field_error("limit");
        app.get(&format!("/v3/deals?{OWNER}&limit=501")).await.expect_field_error("limit");
        app.get(&format!("/v3/deals?{OWNER}&offset=-1")).await.expect_field_error("offset");
    }
}

api_test! {
    /// Every filter, flat and nested.
    async fn filters_deals(app) {
        let contact = pipeline(&app).await;
        let names = |q: &str| {
            let path = format!("/v3/deals?{OWNER}&sort=asc&limit=100&{q}");
            let app = &app;
            async move { ids(&app.get(&path).await.expect(200)) }
        };
        assert_eq!(names("status=won").await, ["d01", "d04", "d07", "d10"]);
        assert_eq!(names("stageId=s1&stageId=s2").await, ["d01", "d02", "d05", "d06", "d09", "d10"]);
        assert_eq!(names("stageId[]=s1&stageId[]=s2").await, names("stageId=s1,s2").await);
        assert_eq!(names("pipelineId=p2").await, ["d08", "d09", "d10", "d11"]);
        assert_eq!(names("operatorId=8&status=open").await, ["d03", "d09"]);
        assert_eq!(names("operatorIds=7,8&groupIds=3").await, ["d00", "d04", "d08"]);
        assert_eq!(names("groupId=4").await, ["d01", "d05", "d09"]);
        assert_eq!(names("tagId=2").await, ["d02", "d05", "d08", "d11"]);
        assert_eq!(names("tagIds=0,2&stageId=s3").await, ["d03", "d11"]);
        assert_eq!(names("productIds=5").await, ["d00", "d10"]);
        assert_eq!(names("productIds=6").await, ["d05"]);
        assert_eq!(names(&format!("contactId={contact}&status=lost")).await, ["d02", "d05", "d08", "d11"]);
        let now = chrono::Utc::now();
        let (earlier, later) = ((now - chrono::Duration::hours(1)).to_rfc3339(), (now + chrono::Duration::hours(1)).to_rfc3339());
        assert_eq!(names(&format!("createdAtFrom={}", urlencode(&later))).await.len(), 0);
        assert_eq!(names(&format!("createdAtFrom={}&createdAtTo={}", urlencode(&earlier), urlencode(&later))).await.len(), 12);
        assert_eq!(names(&format!("wonLostAtFrom={}&status=won", urlencode(&earlier))).await.len(), 4);
        assert_eq!(names("wonLostAtTo=2020-01-01").await.len(), 0);
        assert_eq!(names("date=current_month").await.len(), 12);
        assert_eq!(names("date=last_month").await.len(), 0);
        assert_eq!(names("period=last_1h").await.len(), 12);
        assert_eq!(names("period=last_year").await.len(), 0);
        assert_eq!(names("period=last_24h&periodMetric=wonLostDate").await.len(), 8);
        assert_eq!(names(&format!("period=custom&periodFrom={}", urlencode(&later))).await.len(), 0);
        // Nested forms: filters[x]=..., JSON in a grouping, sort objects.
        assert_eq!(names("filters[status]=won").await, names("status=won").await);
        assert_eq!(names("filters[stageId][]=s1&conditions[status]=won").await, ["d01"]);
        assert_eq!(names("filters=%7B%22status%22%3A%22won%22%2C%22stageId%22%3A%5B%22s1%22%2C%22s3%22%5D%7D").await, ["d01", "d07"]);
        assert_eq!(names("meta[pipelineId]=p2&sortedBy[sortBy]=value").await, ["d11", "d10", "d09", "d08"]);
        let by_value = ids(&app.get(&format!("/v3/deals?{OWNER}&sort[value]=desc&limit=3")).await.expect(200));
        assert_eq!(by_value, ["d00", "d01", "d02"]);
        let by_name = ids(&app.get(&format!("/v3/deals?{OWNER}&sortBy=name&sort=desc&limit=2")).await.expect(200));
        assert_eq!(by_name, ["d11", "d10"]);
        // Bad values are 400s naming the parameter.
        for (q, field) in [
            ("status=pending", "status"), ("date=yesterday", "date"), ("period=decade", "period"),
            ("periodMetric=size", "periodMetric"), ("sortBy=color", "sortBy"), ("sort=up", "sort"),
            ("operatorId=seven", "operatorId"), ("createdAtFrom=soon", "createdAtFrom"), ("colour=red", "colour"),
            ("filters=nope", "filters"), ("period=custom", "periodFrom"), ("isOwner=yes", "isOwner"),
        ] {
            app.get(&format!("/v3/deals?roleId=1&isOwner=true&userId=7&{q}")).await.expect_field_error(field);
        }
    }
}

fn urlencode(text: &str) -> String {
    text.replace('+', "%2B").replace(':', "%3A")
}

api_test! {
    /// Another workspace's deals, contacts and products are 404, also through filters.
    async fn deals_are_per_workspace(app) {
        let contact = pipeline(&app).await;
        let (other, token) = app.new_workspace("Other").await;
        let them = app.as_token(&token);
        let their_deal = app.get(&format!("/v3/deals?{OWNER}&limit=1")).await.expect(200)["data"][0]["id"].as_str().unwrap().to_owned();
        them.get(&format!("/v3/deals/{their_deal}")).await.expect_error(404);
        them.patch(&format!("/v3/deals/{their_deal}"), json!({ "name": "x" })).await.expect_error(404);
        // Workspace 1's contact and product cannot be used here.
        them.post("/v3/deals", body(contact, json!({}))).await.expect_error(404);
        load(&app, other, json!({ "type": "product", "id": 9, "name": "Theirs", "price": 1 })).await;
        let their_contact = them.post("/v3/contacts", json!({ "name": "C" })).await.expect(201)["id"].as_str().unwrap().parse::<u64>().unwrap();
        them.post("/v3/deals", body(their_contact, json!({ "products": [{ "id": "5" }] }))).await.expect_error(404);
        them.post("/v3/deals", body(their_contact, json!({ "products": [{ "id": "9" }] }))).await.expect(201);
        assert_eq!(them.get(&format!("/v3/deals?{OWNER}&productIds=5")).await.expect(200)["totalCount"], 0);
        assert_eq!(them.get(&format!("/v3/deals?{OWNER}&contactId={contact}")).await.expect(200)["totalCount"], 0);
        assert_eq!(them.get(&format!("/v3/deals?{OWNER}")).await.expect(200)["totalCount"], 1);
        them.get("/v3/products/5").await.expect_error(404);
        them.patch("/v3/products/5", json!({ "price": 1 })).await.expect_error(404);
    }
}

api_test! {
    /// PATCH /v3/products/{id}, and the catalog extensions.
    async fn patches_products(app) {
        load(&app, 1, json!({ "type": "product", "id": 5, "name": "Seat", "price": 100 })).await;
        let list = app.get("/v3/products").await.expect(200);
        assert_eq!(list["totalCount"], 1);
        let patched = app.patch("/v3/products/5", json!({ "price": 120.5, "description": "per month", "_id": "legacy" })).await.expect(200);
        for member in ["id", "name", "description", "price", "workspaceId", "createdAt", "lastUpdateAt"] {
            assert!(patched.get(member).is_some(), "{member} is required in the update response: {patched}");
        }
        assert_eq!((patched["price"].clone(), patched["description"].clone()), (json!(120.5), json!("per month")));
        assert!(patched["lastUpdateAt"].as_str() > list["data"][0]["lastUpdateAt"].as_str());
        assert_eq!(app.get("/v3/products/5").await.expect(200), patched);
        app.patch("/v3/products/5", json!({ "price": -1 })).await.expect_field_error("price");
        app.patch("/v3/products/5", json!({ "price": "free" })).await.expect_field_error("price");
        app.patch("/v3/products/5", json!({ "name": null })).await.expect_field_error("name");
        app.patch("/v3/products/5", json!({ "stock": 3 })).await.expect_field_error("stock");
        app.patch("/v3/products/6", json!({ "price": 1 })).await.expect_error(404);
        app.get("/v3/products/abc").await.expect_field_error("id");
    }
}

api_test! {
    /// The `date` presets as the spec spells them, and the earlier spellings.
    async fn takes_the_specs_date_presets(app) {
        for date in ["all", "current_month", "last_month", "last_3_months", "last_6_months", "last_12_months", "last3_months", "last12_months"] {
            app.get(&format!("/v3/deals?{OWNER}&date={date}")).await.expect(200);
        }
        app.get(&format!("/v3/deals?{OWNER}&date=last_2_months")).await.expect_field_error("date");
    }
}

api_test! {
    /// A keyed create whose answer was not kept (the store took the record,
    /// not the answer) answers its retry as it first did, by reading what it
    /// made (docs/api-contract.md, "Idempotency").
    async fn a_keyed_create_whose_answer_was_lost_is_read_back(app) {
        let contact = app.a_contact().await;
        let deal = json!({ "name": "Plan", "value": 1200, "status": "open", "contactId": contact, "operatorId": 7,
            "groupId": 1, "pipelineId": "sales", "stageId": "lead", "origin": "site", "tagIds": [] });
        app.assert_read_back("/v3/deals", "/v3/deals", &deal, &[]).await;
    }
}

api_test! {
    /// Each event type of the group is made by its change (docs/api-contract.md,
    /// "Events"; `events.rs` fails for a declared type no suite makes).
    async fn each_change_of_a_deal_makes_its_event_type(app) {
        let contact = app.a_contact().await;
        let deal = app.post("/v3/deals", json!({ "name": "Plan", "value": 1200, "status": "open", "contactId": contact, "operatorId": 7,
            "groupId": 1, "pipelineId": "sales", "stageId": "lead", "origin": "site", "tagIds": [] })).await.expect(201);
        let deal = format!("/v3/deals/{}", deal["id"].as_str().unwrap());
        for change in [json!({ "name": "Renewal" }), json!({ "status": "won" }), json!({ "status": "open" }), json!({ "status": "lost" })] {
            app.patch(&deal, change).await.expect(200);
        }
        app.assert_made_events(&["deal.created", "deal.updated", "deal.won", "deal.reopened", "deal.lost"]).await;
    }
}

/// Deal `id`'s items (its record and index items) copied as the list kept
/// them before its shards: under an id made on 2024-06-01 (before the suites'
/// cutover, `api_tests::SHARDED_FROM`), in the partitions of shard 0.
/// Answers the copy's id.
async fn an_old_copy_of_deal(app: &TestApp, id: &str, n: u64) -> String {
    let at = "2024-06-01T00:00:00Z".parse().unwrap();
    let old = shared::ids::id_range(&at, &at).0 + n;
    let sk = format!("{:016}", id.parse::<u64>().unwrap());
    let mut writes = Vec::new();
    for mut item in app.every_item().await {
        let deal = matches!(item.get("_type").and_then(Value::as_str), Some("Deal" | "DealIndex"));
        if !deal || item["sk"] != json!(sk) || !item["pk"].as_str().unwrap().starts_with("W#1#") {
            continue;
        }
        let pk = item["pk"].as_str().unwrap().to_owned();
        // `W#1#S3#DEAL...` as `W#1#DEAL...`
        let unsharded = match pk.strip_prefix("W#1#S").and_then(|rest| rest.split_once('#')) {
            Some((_, family)) => format!("W#1#{family}"),
            None => pk,
        };
        item.insert("pk".into(), json!(unsharded));
        item.insert("sk".into(), json!(format!("{old:016}")));
        match item.get_mut("d") {
            Some(digest) => digest["id"] = json!(old),
            None => { item.insert("id".into(), json!(old)); }
        }
        writes.push(shared::store::Write::Put { item, condition: None });
    }
    assert!(writes.len() >= 6, "the deal and its index items");
    app.store.write(writes).await.unwrap();
    old.to_string()
}

/// The ids of the deals of `stage`, ascending.
async fn in_stage(app: &TestApp, stage: &str) -> Vec<u64> {
    let page = app.get(&format!("/v3/deals?{OWNER}&stageId={stage}&limit=50")).await.expect(200);
    let mut ids: Vec<u64> = page["data"].as_array().unwrap().iter().map(|d| d["id"].as_str().unwrap().parse().unwrap()).collect();
    ids.sort_unstable();
    ids
}

api_test! {
    /// The deals over their shards (decision 0037): those made before the
    /// cutover, in their one list and index partitions, and the new ones
    /// spread over the shards list as one, in id order both ways, page by
    /// page and filtered by an index; an old deal read by id and moved to
    /// another stage leaves its old index item behind nowhere.
    async fn deals_from_before_the_shards_and_after_list_as_one(app) {
        let contact = app.a_contact().await;
        let deal = |stage: &str| json!({ "name": "d", "value": 1, "status": "open", "contactId": contact, "operatorId": 7,
            "groupId": 1, "pipelineId": "p", "stageId": stage, "origin": "o", "tagIds": [] });
        let mut s1 = Vec::new();
        for _ in 0..10 {
            s1.push(app.post("/v3/deals", deal("s1")).await.expect(201)["id"].as_str().unwrap().to_owned());
        }
        for _ in 0..5 {
            app.post("/v3/deals", deal("s2")).await.expect(201);
        }
        let old = [an_old_copy_of_deal(&app, &s1[0], 0).await, an_old_copy_of_deal(&app, &s1[1], 1).await];
        s1.extend(old.iter().cloned());
        let ids_of = |page: &Value| -> Vec<u64> {
            page["data"].as_array().unwrap().iter().map(|d| d["id"].as_str().unwrap().parse().unwrap()).collect()
        };
        let base = format!("/v3/deals?{OWNER}");
        let mut every: Vec<u64> = Vec::new();
        for offset in (0..24).step_by(4) {
            every.extend(ids_of(&app.get(&format!("{base}&sort=asc&limit=4&offset={offset}")).await.expect(200)));
        }
        assert_eq!(every.len(), 17, "15 new, 2 from before: {every:?}");
        assert!(every.windows(2).all(|w| w[0] < w[1]), "ascending: {every:?}");
        assert_eq!(every[..2], [old[0].parse::<u64>().unwrap(), old[1].parse().unwrap()]);
        let newest = ids_of(&app.get(&format!("{base}&limit=17")).await.expect(200));
        assert_eq!(newest, every.iter().rev().copied().collect::<Vec<_>>(), "descending");
        let mut expected: Vec<u64> = s1.iter().map(|id| id.parse().unwrap()).collect();
        expected.sort_unstable();
        assert_eq!(in_stage(&app, "s1").await, expected, "a stage's index over its shards and its partition from before");

        let path = format!("/v3/deals/{}", old[0]);
        app.get(&path).await.expect(200);
        app.patch(&path, json!({ "stageId": "s2" })).await.expect(200);
        assert!(!in_stage(&app, "s1").await.contains(&old[0].parse().unwrap()));
        assert!(in_stage(&app, "s2").await.contains(&old[0].parse().unwrap()));
        let stale = app.every_item().await.into_iter().filter(|i| {
            i.get("_type") == Some(&json!("DealIndex")) && i["sk"] == json!(format!("{:016}", old[0].parse::<u64>().unwrap()))
                && i["pk"].as_str().unwrap().contains("STAGE#s1")
        }).count();
        assert_eq!(stale, 0, "the old stage's index item is gone");
    }
}

/// What its lists cost, at two sizes of the workspace (tests/tests/costs.rs
/// has the costs every group shares).
mod costs {
    use api_tests::costs::cost_of;
    use api_tests::serde_json::json;
    use api_tests::api_test;

    api_test! {
        /// The common deal lists cost the same at two workspace sizes: a filtered
        /// one reads the partition of its narrowest filter (its 8 shards, and none of
        /// the deals the filters exclude) and the page; an unfiltered page merges the
        /// list's 8 shards (decision 0037): one or two Queries a shard, at most the
        /// page of each (all 46 deals would be more), and the counter.
        async fn deal_lists_read_the_narrowest_index(app) {
            let contact: u64 = app.post("/v3/contacts", json!({ "name": "Buyer" })).await.expect(201)["id"].as_str().unwrap().parse().unwrap();
            let deal = |stage: &str, status: &str, operator: u64| json!({
                "name": "d", "value": 1, "status": status, "contactId": contact, "operatorId": operator, "groupId": 1,
                "pipelineId": "p", "stageId": stage, "origin": "o", "tagIds": []
            });
            for _ in 0..6 {
                app.post("/v3/deals", deal("s1", "won", 7)).await.expect(201);
            }
            let lists = [
                "/v3/deals?roleId=1&isOwner=true&userId=7&limit=5",
                "/v3/deals?roleId=1&isOwner=false&userId=7&limit=5",
                "/v3/deals?roleId=1&isOwner=true&userId=7&status=won&limit=5",
                "/v3/deals?roleId=1&isOwner=true&userId=7&stageId=s1&status=won&limit=5",
            ];
            let mut at = Vec::new();
            for extra in [0, 40] {
                for _ in 0..extra {
                    app.post("/v3/deals", deal("s2", "open", 8)).await.expect(201);
                }
                let mut costs = Vec::new();
                for path in lists {
                    let cost = cost_of(&app, || async { app.get(path).await.expect(200); }).await;
                    costs.push((cost.gets, cost.batch_gets, cost.queries, cost.scanned));
                }
                at.push(costs);
            }
            for (i, path) in lists.iter().enumerate().skip(1) {
                assert_eq!(at[0][i], at[1][i], "{path} at 6 and 46 deals");
            }
            for costs in &at {
                let (gets, batch_gets, queries, scanned) = costs[0];
                assert_eq!((gets, batch_gets), (1, 1), "unfiltered: token, one BatchGet of the counter's shards (4 of each layout)");
                assert!((8..=16).contains(&queries) && scanned <= 8 * 5, "unfiltered: {:?}", costs[0]);
            }
            assert_eq!(at[0][2], (1, 1, 8, 6), "status: token, the status partition's 6 digests (a Query a shard), one BatchGet of the page");
        }
    }
}

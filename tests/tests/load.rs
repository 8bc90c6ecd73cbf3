//! `crm load` of the CRM's own records: `tag`, `contact` and `deal` lines
//! carry their record's `id` and the create body of its API, under the API's
//! rules; loading a line again changes nothing, and a changed line changes the
//! record. The demo data of `examples/` loads whole and fills every list, and
//! its sessions name its own tags, campaigns and deals.

use api_tests::serde_json::{Value, json};
use api_tests::{TestApp, api_test};

async fn load(app: &TestApp, line: Value) -> Result<&'static str, u16> {
    app.load_line(1, line).await.map_err(|e| e.status.as_u16())
}

api_test! {
    /// A tag line creates the tag under its id, once; the name stays unique.
    async fn loads_tags_under_their_ids(app) {
        let line = json!({ "type": "tag", "id": 7, "name": "VIP", "color": "#FF0000" });
        assert_eq!(load(&app, line.clone()).await, Ok("tag"));
        let first = app.get("/v3/tags/7").await.expect(200);
        assert_eq!((first["name"].clone(), first["color"].clone()), (json!("VIP"), json!("#FF0000")));
        load(&app, line).await.unwrap();
        assert_eq!(app.get("/v3/tags/7").await.expect(200), first, "loaded again: no change");
        assert_eq!(app.get("/v3/tags").await.expect(200)["totalCount"], 1);

        load(&app, json!({ "type": "tag", "id": 7, "name": "VIP", "color": "#00FF00" })).await.unwrap();
        assert_eq!(app.get("/v3/tags/7").await.expect(200)["color"], "#00FF00");
        app.post("/v3/tags", json!({ "name": "vip" })).await.expect_error(409);
        assert_eq!(load(&app, json!({ "type": "tag", "id": 8, "name": " vip " })).await, Err(409));
        assert_eq!(load(&app, json!({ "type": "tag", "id": 9 })).await, Err(400), "a name is needed");
        assert_eq!(load(&app, json!({ "type": "tag", "name": "no id" })).await, Err(400));
        assert_eq!(load(&app, json!({ "type": "tag", "id": 10, "name": "x", "size": 3 })).await, Err(400), "unknown field");
        assert_eq!(app.get("/v3/tags").await.expect(200)["totalCount"], 1);
    }
}

api_test! {
    /// Ids are time-ordered: a loaded record was created when its id says, and
    /// an id from the future is refused.
    async fn a_loaded_record_was_created_when_its_id_says(app) {
        // 2026-11-20T10:00:00.000Z in the ids' scheme: ms since 2024-01-01, then 12 bits.
        let ms: u64 = 1_795_168_800_000 - 1_704_067_200_000;
        let id = (ms << 12) | 5;
        load(&app, json!({ "type": "contact", "id": id, "name": "Old friend" })).await.unwrap();
        let contact = app.get(&format!("/v3/contacts/{id}")).await.expect(200);
        assert_eq!(contact["createdAt"], "2026-11-20T10:00:00.000Z");
        load(&app, json!({ "type": "tag", "id": 7, "name": "Early" })).await.unwrap();
        assert_eq!(app.get("/v3/tags/7").await.expect(200)["createdAt"], "2024-01-01T00:00:00.000Z");
        let future = ((1_893_456_000_000u64 - 1_704_067_200_000) << 12) | 1; // 2030-01-01
        let err = app.load_line(1, json!({ "type": "tag", "id": future, "name": "Future" })).await.unwrap_err();
        assert_eq!((err.status.as_u16(), err.details[0].field.as_str()), (400, "id"));
        assert!(err.message.contains("later than now"), "{}", err.message);
        // Past the ids' 2^53 (what a JSON client reads exactly), named as such, not as missing.
        let err = app.load_line(1, json!({ "type": "tag", "id": 1u64 << 53, "name": "Too big" })).await.unwrap_err();
        assert_eq!((err.status.as_u16(), err.details[0].field.as_str()), (400, "id"));
        assert!(err.message.contains("2^53") && !err.message.contains("required"), "{}", err.message);
        assert_eq!(app.get("/v3/tags").await.expect(200)["totalCount"], 1, "nothing written");
        // A migration's typo in a field is named, as the API names it.
        let err = app.load_line(1, json!({ "type": "contact", "id": 9, "name": 5 })).await.unwrap_err();
        assert!(err.message.contains("name"), "{}", err.message);
    }
}

api_test! {
    /// A contact line: its phone canonical and its identity, as through the API.
    async fn loads_contacts_under_their_ids(app) {
        let line = json!({ "type": "contact", "id": 3, "name": "Maria", "phone": "(11) 98765-4321", "email": "maria@example.com" });
        assert_eq!(load(&app, line.clone()).await, Ok("contact"));
        let first = app.get("/v3/contacts/3").await.expect(200);
        assert_eq!((first["phone"].clone(), first["email"].clone()), (json!("+5511987654321"), json!("maria@example.com")));
        load(&app, line).await.unwrap();
        assert_eq!(app.get("/v3/contacts/3").await.expect(200), first, "loaded again: no change");
        assert_eq!(app.get("/v3/contacts?search=mar").await.expect(200)["data"][0]["id"], "3");
        assert_eq!(app.get("/v3/contacts").await.expect(200)["totalCount"], 1);

        // A changed line moves what the line names and keeps the rest.
        load(&app, json!({ "type": "contact", "id": 3, "name": "Maria Silva" })).await.unwrap();
        let changed = app.get("/v3/contacts/3").await.expect(200);
        assert_eq!((changed["name"].clone(), changed["email"].clone()), (json!("Maria Silva"), json!("maria@example.com")));
        // One phone, one contact.
        assert_eq!(load(&app, json!({ "type": "contact", "id": 4, "phone": "5511987654321" })).await, Err(409));
        assert_eq!(load(&app, json!({ "type": "contact", "id": 5, "phones": ["11987654322"] })).await, Err(400));
        assert_eq!(load(&app, json!({ "type": "contact", "id": 6, "email": "not an address" })).await, Err(400));
        assert_eq!(app.get("/v3/contacts").await.expect(200)["totalCount"], 1);
    }
}

api_test! {
    /// A deal line: the create's required fields and its contact a contact of the workspace.
    async fn loads_deals_under_their_ids(app) {
        load(&app, json!({ "type": "contact", "id": 1, "name": "Buyer", "phone": "11987654321" })).await.unwrap();
        let line = json!({ "type": "deal", "id": 12, "name": "Annual", "value": 1200, "status": "open", "contactId": 1,
                           "operatorId": 7, "groupId": 1, "pipelineId": "sales", "stageId": "lead", "origin": "site", "tagIds": [] });
        assert_eq!(load(&app, line.clone()).await, Ok("deal"));
        let first = app.get("/v3/deals/12").await.expect(200);
        assert_eq!((first["contact"]["name"].clone(), first["value"].clone()), (json!("Buyer"), json!(1200.0)));
        load(&app, line).await.unwrap();
        assert_eq!(app.get("/v3/deals/12").await.expect(200), first, "loaded again: no change");

        load(&app, json!({ "type": "deal", "id": 12, "status": "won" })).await.unwrap();
        let won = app.get("/v3/deals/12").await.expect(200);
        assert_eq!(won["status"], "won");
        assert!(won["wonLostDate"].is_string(), "the deal's rules hold for a line too: {won}");
        let won_list = app.get("/v3/deals?roleId=1&isOwner=true&userId=7&filters[status]=won").await.expect(200);
        assert_eq!(won_list["totalCount"], 1);

        assert_eq!(load(&app, json!({ "type": "deal", "id": 13, "name": "No contact" })).await, Err(400), "required fields");
        let mut elsewhere = json!({ "type": "deal", "id": 14, "name": "x", "value": 1, "status": "open", "contactId": 99,
                                    "operatorId": 7, "groupId": 1, "pipelineId": "p", "stageId": "s", "origin": "o", "tagIds": [] });
        assert!(matches!(load(&app, elsewhere.clone()).await, Err(400 | 404)), "an unknown contact");
        elsewhere["contactId"] = json!(1);
        load(&app, elsewhere).await.unwrap();
        assert_eq!(app.get("/v3/deals?roleId=1&isOwner=true&userId=7").await.expect(200)["totalCount"], 2);
    }
}

api_test! {
    /// `examples/demo.jsonl` loads whole, twice without a change, and fills the lists.
    async fn the_demo_data_loads_and_fills_every_list(app) {
        let demo = include_str!("../../examples/demo.jsonl");
        for round in 0..2 {
            for (n, line) in demo.lines().enumerate() {
                let line: Value = api_tests::serde_json::from_str(line).unwrap();
                app.load_line(1, line).await.unwrap_or_else(|e| panic!("line {} (round {round}): {e:?}", n + 1));
            }
            let total = |path: &'static str| {
                let app = &app;
                async move { app.get(path).await.expect(200)["totalCount"].clone() }
            };
            assert_eq!(total("/v3/tags").await, 5);
            assert_eq!(total("/v3/contacts").await, 41);
            let pair = app.get("/v3/contacts/duplicates").await.expect(200);
            assert_eq!(pair["data"][0]["contacts"].as_array().unwrap().len(), 2, "the demo's duplicate pair: {pair}");
            assert_eq!(total("/v3/contacts?organizationId=1").await, 10);
            assert_eq!(total("/v3/contacts?sessionCreatedAtFrom=2026-01-01").await, 20, "their conversations' last sessions");
            assert_eq!(total("/v3/contacts?segmentId=whatsapp-1").await, 5);
            assert_eq!(total("/v3/deals?roleId=1&isOwner=true&userId=7").await, 24);
            assert_eq!(total("/v3/campaigns").await, 3);
            assert_eq!(total("/v3/products").await, 2);
        }
        // Every event the demo made is of a documented type (docs/design.md,
        // "Events"), and the second load, which changed nothing, made none.
        let log = shared::domain::events::log_page(app.store.as_ref(), shared::ids::WorkspaceId(1), None, None, 1000).await.unwrap();
        assert!(!log.data.is_empty() && !log.has_more);
        let mut created = std::collections::BTreeSet::new();
        for event in &log.data {
            assert!(shared::domain::events::TYPES.contains(&event.kind.as_str()), "undocumented type {}", event.kind);
            if event.kind.ends_with(".created") {
                assert!(created.insert((&event.resource, &event.resource_id)), "created twice: {event:?}");
            }
        }
        app.get("/v3/reports/sessions/demo-0000").await.expect(200);
        // The sessions name the demo's own tags, campaigns and deals.
        let lines: Vec<Value> = demo.lines().map(|l| api_tests::serde_json::from_str(l).unwrap()).collect();
        let of_type = |t: &str| lines.iter().filter(|l| l["type"] == t).cloned().collect::<Vec<_>>();
        let (tag, sessions) = (of_type("tag")[0]["id"].clone(), of_type("session"));
        let deal_ids: Vec<Value> = of_type("deal").iter().map(|d| d["id"].clone()).collect();
        let named = |f: &dyn Fn(&Value) -> bool| sessions.iter().filter(|s| f(s)).count();
        let tagged = named(&|s| s["tags"].as_array().unwrap().contains(&tag));
        let campaign = of_type("campaign")[0]["id"].to_string();
        let in_campaign = named(&|s| s["campaignId"] == campaign.as_str());
        assert!(tagged > 0 && in_campaign > 0);
        assert!(sessions.iter().flat_map(|s| s["deals"]["ids"].as_array().cloned().unwrap_or_default()).all(|d| deal_ids.contains(&d)));
        let window = "from=2026-10-01T00:00:00.000Z&to=2026-11-30T00:00:00.000Z";
        let count = |query: String| {
            let app = &app;
            async move { app.get(&format!("/v3/reports/sessions?{window}&{query}")).await.expect(200)["totalCount"].clone() }
        };
        assert_eq!(count(format!("tags={tag}")).await, tagged);
        assert_eq!(count(format!("campaignId={campaign}")).await, in_campaign);
        // Loaded under its id, a campaign was created when its id says: before its sessions.
        let created = app.get(&format!("/v3/campaigns/{campaign}")).await.expect(200)["createdAt"].clone();
        let created = created.as_str().expect("a campaign's createdAt");
        assert!(sessions.iter().filter(|s| s["campaignId"] == campaign.as_str()).all(|s| s["createdAt"].as_str().unwrap() > created));
        app.get(&format!("/v3/deals/{}", deal_ids[0])).await.expect(200);
        app.get("/v3/business-hours/1").await.expect(200);
        app.get("/v3/custom-fields/1").await.expect(200);
    }
}

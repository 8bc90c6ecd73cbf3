//! Campaigns (`/v3/campaigns`): the spec's list with its filters, and the
//! extensions: drafts, edits while draft or scheduled, the lifecycle as
//! conditional transitions, and results counted once per report.

use api_tests::serde_json::{Value, json};
use api_tests::{TestApp, api_test};

async fn draft(app: &TestApp, name: &str, channel: &str) -> Value {
    app.post(
        "/v3/campaigns",
        json!({ "name": name, "channelId": channel, "channelType": "whatsapp", "leadType": "list",
                "leadsCount": 250, "chunkSize": 100, "secondsBetweenMessages": 2, "secondsBetweenChunks": 60,
                "message": "Hello {{name}}", "scheduledTo": "2030-01-01T12:00:00Z" }),
    )
    .await
    .expect(201)
}

fn path(c: &Value) -> String {
    format!("/v3/campaigns/{}", c["id"].as_str().unwrap())
}

api_test! {
    /// A draft with the figures that follow from it: 3 chunks of 100 for 250
    /// leads, the finish forecast from the schedule.
    async fn drafts_a_campaign(app) {
        let c = draft(&app, "Black Friday", "wa-1").await;
        assert_eq!((c["status"].clone(), c["active"].clone(), c["chunksCount"].clone(), c["progress"].clone()), (json!("draft"), json!(false), json!(3), json!(0)));
        // 250 messages x 2 s + 2 pauses x 60 s = 620 s after 12:00.
        assert_eq!(c["finishedAtPrediction"], "2030-01-01T12:10:20.000Z");
        assert_eq!(c["resultCounts"]["sent"], 0);
        assert_eq!(c["workspaceId"], 1);
        assert_eq!(app.get(&path(&c)).await.expect(200), c);
        let edited = app.patch(&path(&c), json!({ "name": "Black Friday 2030", "leadsCount": 300 })).await.expect(200);
        assert_eq!((edited["name"].clone(), edited["chunksCount"].clone()), (json!("Black Friday 2030"), json!(3)));
        app.post("/v3/campaigns", json!({ "channelId": "x" })).await.expect_field_error("name");
        app.post("/v3/campaigns", json!({ "name": "x", "channelType": "pigeon" })).await.expect_field_error("channelType");
        app.post("/v3/campaigns", json!({ "name": "x", "leadType": "everyone" })).await.expect_field_error("leadType");
        app.post("/v3/campaigns", json!({ "name": "x", "chunkSize": 0 })).await.expect_field_error("chunkSize");
        app.post("/v3/campaigns", json!({ "name": "x", "status": "running" })).await.expect_field_error("status");
        app.get("/v3/campaigns/999").await.expect_error(404);
    }
}

api_test! {
    /// schedule → start → pause → resume → finish; every other move is a 409,
    /// and a finished campaign refuses edits.
    async fn moves_through_its_lifecycle(app) {
        let c = draft(&app, "Renewal", "wa-1").await;
        let p = path(&c);
        app.post(&format!("{p}/start"), json!({})).await.expect_error(409);
        let s = app.post(&format!("{p}/schedule"), json!({})).await.expect(201);
        assert_eq!((s["status"].clone(), s["originalScheduledTo"].clone()), (json!("scheduled"), json!("2030-01-01T12:00:00.000Z")));
        app.patch(&p, json!({ "scheduledTo": "2030-01-02T12:00:00Z" })).await.expect(200);
        let r = app.post(&format!("{p}/start"), json!({})).await.expect(201);
        assert_eq!((r["status"].clone(), r["active"].clone()), (json!("running"), json!(true)));
        app.patch(&p, json!({ "name": "late" })).await.expect_error(409);
        assert_eq!(app.post(&format!("{p}/pause"), json!({})).await.expect(201)["status"], "paused");
        assert_eq!(app.post(&format!("{p}/resume"), json!({})).await.expect(201)["status"], "running");
        let done = app.post(&format!("{p}/finish"), json!({})).await.expect(201);
        assert_eq!((done["status"].clone(), done["active"].clone()), (json!("finished"), json!(false)));
        app.patch(&p, json!({ "name": "again" })).await.expect_error(409);
        app.post(&format!("{p}/cancel"), json!({})).await.expect_error(409);
        app.post(&format!("{p}/teleport"), json!({})).await.expect_error(404);
        // Scheduling needs what a run needs.
        let bare = app.post("/v3/campaigns", json!({ "name": "Bare" })).await.expect(201);
        app.post(&format!("{}/schedule", path(&bare)), json!({})).await.expect_field_error("scheduledTo");
        assert_eq!(app.post(&format!("{}/cancel", path(&bare)), json!({})).await.expect(201)["status"], "canceled");
    }
}

api_test! {
    /// Sixteen concurrent starts: one start, fifteen 409s.
    async fn concurrent_starts_have_one_winner(app) {
        let c = draft(&app, "Race", "wa-1").await;
        let p = path(&c);
        app.post(&format!("{p}/schedule"), json!({})).await.expect(201);
        let start = format!("{p}/start");
        let results = futures::future::join_all((0..16).map(|_| app.post(&start, json!({})))).await;
        let won = results.iter().filter(|r| r.status == 201).count();
        assert_eq!(won, 1, "{results:?}");
        assert!(results.iter().all(|r| r.status == 201 || r.status == 409));
        let audit = app.get("/v3/audit?limit=100").await.expect(200);
        let starts = audit["data"].as_array().unwrap().iter().filter(|e| e["action"] == "campaign.start").count();
        assert_eq!(starts, 1, "one start in the audit");
    }
}

api_test! {
    /// Results add up atomically; a report already counted changes nothing,
    /// even sent again concurrently.
    async fn counts_results_once_per_report(app) {
        let c = draft(&app, "Counts", "wa-1").await;
        let p = path(&c);
        let report = json!({ "reportId": "r-1", "chunkId": "c1", "sent": 100, "received": 90, "read": 60, "answered": 10, "processed": 100, "chunkExecuted": true });
        app.post(&format!("{p}/results"), report.clone()).await.expect_error(409);
        app.post(&format!("{p}/schedule"), json!({})).await.expect(201);
        app.post(&format!("{p}/start"), json!({})).await.expect(201);
        let first = app.post(&format!("{p}/results"), report.clone()).await.expect(201);
        assert_eq!((first["resultCounts"]["sent"].clone(), first["resultCounts"]["chunksExecuted"].clone()), (json!(100), json!(1)));
        assert_eq!(first["progress"], 40, "100 of 250 leads");
        assert_eq!(first["resultCounts"]["byChunkId"]["c1"]["read"], 60);
        let again = app.post(&format!("{p}/results"), report.clone()).await.expect(200);
        assert_eq!(again["resultCounts"], first["resultCounts"]);
        // Concurrent reports, some repeated: each counted once.
        let results_path = format!("{p}/results");
        let sends = (0..12).map(|i| {
            let body = json!({ "reportId": format!("r-{}", 2 + i % 4), "sent": 10, "processed": 10 });
            app.post(&results_path, body)
        });
        for r in futures::future::join_all(sends).await {
            assert!(r.status == 201 || r.status == 200, "{r:?}");
        }
        let now = app.get(&p).await.expect(200);
        assert_eq!((now["resultCounts"]["sent"].clone(), now["messagesProcessed"].clone()), (json!(140), json!(140)));
        app.post(&format!("{p}/results"), json!({ "sent": 1 })).await.expect_field_error("reportId");
        app.post(&format!("{p}/results"), json!({ "reportId": "bad id", "sent": 1 })).await.expect_field_error("reportId");
    }
}

api_test! {
    /// The list: newest first, `name` by word prefixes without case or accents,
    /// `channelId`, `status`, combined, with exact totals.
    async fn lists_campaigns_with_every_filter(app) {
        let a = draft(&app, "Promoção de Natal", "wa-1").await;
        let b = draft(&app, "Natal VIP", "ig-1").await;
        let c = draft(&app, "Renovação anual", "wa-1").await;
        app.post(&format!("{}/schedule", path(&b)), json!({})).await.expect(201);
        let ids = |list: &Value| list["data"].as_array().unwrap().iter().map(|x| x["id"].clone()).collect::<Vec<_>>();
        let all = app.get("/v3/campaigns").await.expect(200);
        assert_eq!(all["totalCount"], 3);
        assert_eq!(ids(&all), [c["id"].clone(), b["id"].clone(), a["id"].clone()]);
        for (query, want) in [
            ("name=natal", vec![b["id"].clone(), a["id"].clone()]),
            ("name=PROMO%C3%87", vec![a["id"].clone()]),
            ("name=promocao%20nat", vec![a["id"].clone()]),
            ("name=renova", vec![c["id"].clone()]),
            ("channelId=wa-1", vec![c["id"].clone(), a["id"].clone()]),
            ("status=scheduled", vec![b["id"].clone()]),
            ("status=draft&channelId=wa-1&name=natal", vec![a["id"].clone()]),
            ("name=xyz", vec![]),
        ] {
            let list = app.get(&format!("/v3/campaigns?{query}")).await.expect(200);
            assert_eq!(ids(&list), want, "{query}");
            assert_eq!(list["totalCount"], json!(want.len()), "{query}");
        }
        assert_eq!(app.get("/v3/campaigns?limit=1&offset=1").await.expect(200)["data"][0]["id"], b["id"]);
        app.get("/v3/campaigns?status=sleeping").await.expect_field_error("status");
        app.get("/v3/campaigns?limit=501").await.expect_field_error("limit");
        app.get("/v3/campaigns?name=%20%20").await.expect_field_error("name");
        app.get("/v3/campaigns?colour=red").await.expect_field_error("colour");
    }
}

api_test! {
    async fn campaigns_stay_in_their_workspace(app) {
        let c = draft(&app, "Mine", "wa-1").await;
        let (_, token) = app.new_workspace("Other").await;
        let other = app.as_token(&token);
        other.get(&path(&c)).await.expect_error(404);
        other.patch(&path(&c), json!({ "name": "theirs" })).await.expect_error(404);
        other.post(&format!("{}/cancel", path(&c)), json!({})).await.expect_error(404);
        other.post(&format!("{}/results", path(&c)), json!({ "reportId": "x" })).await.expect_error(404);
        assert_eq!(other.get("/v3/campaigns").await.expect(200)["totalCount"], 0);
        assert_eq!(other.get("/v3/campaigns?name=mine").await.expect(200)["totalCount"], 0);
    }
}

api_test! {
    /// Campaigns of a migration come in through `crm load`; loading again changes nothing.
    async fn loads_campaigns(app) {
        let line = json!({ "type": "campaign", "id": 42, "name": "Imported", "status": "finished", "channelId": "wa-9",
                           "leadsCount": 10, "messagesProcessed": 10, "resultCounts": { "sent": 10, "received": 9, "read": 5, "answered": 1, "chunksExecuted": 1 } });
        assert_eq!(app.load_line(1, line.clone()).await.unwrap(), "campaign");
        app.load_line(1, line).await.unwrap();
        let c = app.get("/v3/campaigns/42").await.expect(200);
        assert_eq!((c["status"].clone(), c["progress"].clone(), c["resultCounts"]["read"].clone(), c["version"].clone()), (json!("finished"), json!(100), json!(5), json!(1)));
        assert_eq!(app.get("/v3/campaigns?status=finished").await.expect(200)["totalCount"], 1);
        assert_eq!(app.get("/v3/campaigns").await.expect(200)["totalCount"], 1);
        assert!(app.load_line(1, json!({ "type": "campaign", "id": 43 })).await.is_err(), "a name is needed");
        // Created when its id says (a small id: at the ids' epoch), as every record loaded under its id.
        assert_eq!(c["createdAt"], "2024-01-01T00:00:00.000Z");
        let future = ((1_893_456_000_000u64 - 1_704_067_200_000) << 12) | 1; // 2030-01-01
        let err = app.load_line(1, json!({ "type": "campaign", "id": future, "name": "Later" })).await.unwrap_err();
        assert_eq!((err.status.as_u16(), err.details[0].field.as_str()), (400, "id"));
        assert!(err.message.contains("later than now"), "{}", err.message);
        assert_eq!(app.get("/v3/campaigns").await.expect(200)["totalCount"], 1, "nothing written");
    }
}

api_test! {
    /// A keyed create whose answer was not kept (the store took the record,
    /// not the answer) answers its retry as it first did, by reading what it
    /// made (docs/api-contract.md, "Idempotency").
    async fn keyed_drafts_moves_and_results_whose_answers_were_lost_are_read_back(app) {
        let body = json!({ "name": "Launch", "channelId": "wa-1", "channelType": "whatsapp", "leadType": "list",
            "leadsCount": 10, "message": "Hi", "scheduledTo": "2030-01-01T12:00:00Z" });
        let campaign = app.assert_read_back("/v3/campaigns", "/v3/campaigns", &body, &[]).await;
        let at = format!("/v3/campaigns/{}", campaign["id"].as_str().unwrap());
        for action in ["schedule", "start"] {
            app.assert_read_back("/v3/campaigns/{id}/{action}", &format!("{at}/{action}"), &json!({}), &[]).await;
        }
        let report = json!({ "reportId": "r-1", "sent": 10, "processed": 10 });
        app.assert_read_back("/v3/campaigns/{id}/results", &format!("{at}/results"), &report, &[]).await;
    }
}

api_test! {
    /// Each event type of the group is made by its change (docs/api-contract.md,
    /// "Events"; `events.rs` fails for a declared type no suite makes).
    async fn each_move_of_a_campaign_makes_its_event_type(app) {
        let campaign = |name: &'static str| {
            let app = &app;
            async move {
                let c = app.post("/v3/campaigns", json!({ "name": name, "channelId": "wa-1", "leadsCount": 10, "message": "Oi!", "scheduledTo": "2030-01-01T12:00:00Z" })).await.expect(201);
                format!("/v3/campaigns/{}", c["id"].as_str().unwrap())
            }
        };
        let (one, two, three) = (campaign("One").await, campaign("Two").await, campaign("Three").await);
        app.patch(&one, json!({ "name": "One again" })).await.expect(200);
        for (path, action) in [(&one, "schedule"), (&one, "start"), (&one, "pause"), (&one, "finish"), (&two, "cancel"), (&three, "schedule"), (&three, "fail")] {
            app.post(&format!("{path}/{action}"), json!({})).await.expect(201);
        }
        app.assert_made_events(&["campaign.created", "campaign.updated", "campaign.scheduled", "campaign.started", "campaign.paused",
            "campaign.finished", "campaign.canceled", "campaign.failed"]).await;
    }
}

/// What its lists cost, at two sizes of the workspace (tests/tests/costs.rs
/// has the costs every group shares).
mod costs {
    use api_tests::costs::cost_of;
    use api_tests::serde_json::json;
    use api_tests::api_test;

    api_test! {
        /// The campaign list: unfiltered, one Query page and the counter; filtered,
        /// the narrowest index only. The same reads at 5 and 45 campaigns, the 40
        /// added ones matching none of the filters.
        async fn the_campaign_list_does_not_grow_with_the_workspace(app) {
            for i in 0..5 {
                app.post("/v3/campaigns", json!({ "name": format!("Natal {i}"), "channelId": "wa-1" })).await.expect(201);
            }
            let queries = ["limit=3", "name=natal&limit=3", "channelId=wa-1&limit=3", "status=draft&channelId=wa-1&name=natal"];
            let mut costs = Vec::new();
            for size in [5, 45] {
                for i in if size == 5 { 0..0 } else { 0..40 } {
                    let c = app.post("/v3/campaigns", json!({ "name": format!("Renewal {i}"), "channelId": "ig-1" })).await.expect(201);
                    app.post(&format!("/v3/campaigns/{}/cancel", c["id"].as_str().unwrap()), json!({})).await.expect(201);
                }
                let mut at_size = Vec::new();
                for query in queries {
                    let path = format!("/v3/campaigns?{query}");
                    let cost = cost_of(&app, || async { app.get(&path).await.expect(200); }).await;
                    at_size.push((query, cost.gets, cost.queries, cost.batch_gets, cost.scanned));
                }
                costs.push(at_size);
            }
            assert_eq!(costs[0][0].1, 2, "token + counter");
            assert_eq!(costs[0][0].2, 1, "one Query");
            // The unfiltered page reads the same 3 items; each filter reads its 5.
            assert_eq!(costs[0], costs[1], "the same reads at 5 and 45 campaigns");
        }
    }
}

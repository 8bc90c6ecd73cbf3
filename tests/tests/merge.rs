//! Merging contacts (`POST /v3/contacts/{id}/merge`, `GET
//! /v3/contacts/merge/{id}`): the merged contacts' deals, sessions,
//! conversations, organizations, fields and phones move to the survivor,
//! checked by reading every related list; a merged id answers its survivor;
//! counts stay exact; a merge larger than a request's share runs on in the
//! background to the end.

use std::time::Duration;

use api_tests::serde_json::{Value, json};
use api_tests::{TestApp, api_test};

async fn contact(app: &TestApp, body: Value) -> String {
    app.post("/v3/contacts", body).await.expect(201)["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

async fn deal(app: &TestApp, contact: &str, name: &str) -> String {
    let body = json!({
        "name": name, "value": 100, "status": "open", "contactId": contact.parse::<u64>().unwrap(),
        "operatorId": 7, "groupId": 1, "pipelineId": "sales", "stageId": "lead", "origin": "site", "tagIds": [],
    });
    app.post("/v3/deals", body).await.expect(201)["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// A session on conversation `conversation` of `contact` (which makes the
/// conversation and its last session).
async fn session(app: &TestApp, id: &str, contact: &str, conversation: u64) {
    let body = json!({
        "createdAt": "2026-11-20T10:00:00.000Z",
        "conversation": { "id": conversation, "contactId": contact.parse::<u64>().unwrap(), "contactPhone": "+55 11 97777-0000", "channelId": "whatsapp-1", "channelType": "whatsapp" },
        "trails": [{ "type": "message", "at": "2026-11-20T10:01:00.000Z", "from": "contact" }],
    });
    app.put_session(id, body).await;
}

/// Waits (bounded) for a merge to finish in the background.
async fn finished(app: &TestApp, job: &str) -> Value {
    for _ in 0..600 {
        let merge = app
            .get(&format!("/v3/contacts/merge/{job}"))
            .await
            .expect(200);
        if merge["status"] == "done" {
            return merge;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("merge {job} did not finish in 30 s");
}

fn deal_contacts(page: &Value) -> Vec<String> {
    page["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["contact"]["id"].to_string())
        .collect()
}

api_test! {
    /// Everything of the merged contact is the survivor's after the merge,
    /// read back through every list that shows it.
    async fn a_merge_moves_everything_to_the_survivor(app) {
        let ana = contact(&app, json!({ "name": "Ana", "phone": "11 98765-0001", "customFields": { "plan": "Pro" } })).await;
        let again = contact(&app, json!({
            "name": "Ana S.", "phone": "11 98765-0002", "email": "ana@example.com", "notes": "met at the fair",
            "customFields": { "plan": "Starter", "city": "Santos" },
        })).await;
        let other = contact(&app, json!({ "name": "Bruno" })).await;
        let deals = [deal(&app, &again, "Renewal").await, deal(&app, &again, "Upsell").await, deal(&app, &ana, "First").await];
        session(&app, "merge-s1", &again, 501).await;
        session(&app, "merge-s2", &again, 501).await;
        app.load_line(1, json!({ "type": "organization", "id": 9, "name": "Acme" })).await.unwrap();
        app.load_line(1, json!({ "type": "contactOrganization", "contactId": again.parse::<u64>().unwrap(), "organizationId": 9, "main": true })).await.unwrap();
        let total = app.get("/v3/contacts").await.expect(200)["totalCount"].clone();

        let merge = app.post(&format!("/v3/contacts/{ana}/merge"), json!({ "ids": [again] })).await.expect(200);
        assert_eq!((merge["status"].clone(), merge["survivorId"].clone(), merge["mergedIds"].clone()), (json!("done"), json!(ana), json!([again])));
        // 2 deals, 2 sessions, 1 conversation, the contact.
        assert_eq!(merge["moved"], 6);

        // The survivor keeps its own and gains what it lacked.
        let survivor = app.get(&format!("/v3/contacts/{ana}")).await.expect(200);
        assert_eq!((survivor["name"].clone(), survivor["phone"].clone()), (json!("Ana"), json!("+5511987650001")));
        assert_eq!((survivor["email"].clone(), survivor["notes"].clone()), (json!("ana@example.com"), json!("met at the fair")));
        assert_eq!(survivor["customFields"], json!({ "plan": "Pro", "city": "Santos" }));
        // The merged id answers the survivor.
        assert_eq!(app.get(&format!("/v3/contacts/{again}")).await.expect(200), survivor);
        assert_eq!(app.get(&format!("/v1/contacts/{again}")).await.expect(200)["id"], json!(ana));
        let patched = app.patch(&format!("/v3/contacts/{again}"), json!({ "location": "Santos" })).await.expect(200);
        assert_eq!((patched["id"].clone(), patched["location"].clone()), (json!(ana), json!("Santos")));
        // Its phone is the survivor's identity now.
        let found = app.post("/v3/contacts/find-or-create", json!({ "phone": "(11) 98765-0002" })).await;
        assert_eq!(found.headers["x-contact-created"], "false");
        assert_eq!(found.expect(201)["id"], json!(ana));
        // Counts stay exact; the lists hold the survivor and not the merged one.
        assert_eq!(app.get("/v3/contacts").await.expect(200)["totalCount"], total.as_u64().unwrap() - 1);
        let listed: Vec<Value> = app.get("/v3/contacts?limit=100").await.expect(200)["data"].as_array().unwrap().iter().map(|c| c["id"].clone()).collect();
        assert!(listed.contains(&json!(ana)) && listed.contains(&json!(other)) && !listed.contains(&json!(again)));
        let org = app.get("/v3/contacts?organizationId=9").await.expect(200);
        assert_eq!(org["data"].as_array().unwrap().iter().map(|c| c["id"].clone()).collect::<Vec<_>>(), [json!(ana)]);
        let by_email = app.get("/v3/contacts?search=ana@example.com").await.expect(200);
        assert_eq!(by_email["data"].as_array().unwrap().iter().map(|c| c["id"].clone()).collect::<Vec<_>>(), [json!(ana)]);
        let recent = app.get("/v3/contacts?sessionCreatedAtFrom=2026-11-01").await.expect(200);
        assert_eq!(recent["data"].as_array().unwrap().iter().map(|c| c["id"].clone()).collect::<Vec<_>>(), [json!(ana)], "the conversation's last session");
        // Deals: each reads the survivor, and the survivor's deal list holds all three.
        for id in &deals {
            assert_eq!(app.get(&format!("/v3/deals/{id}")).await.expect(200)["contact"]["id"], json!(ana.parse::<u64>().unwrap()));
        }
        let theirs = app.get(&format!("/v3/deals?roleId=1&isOwner=true&userId=7&contactId={ana}")).await.expect(200);
        assert_eq!(theirs["totalCount"], 3, "{theirs}");
        assert!(deal_contacts(&theirs).iter().all(|c| *c == ana));
        let none = app.get(&format!("/v3/deals?roleId=1&isOwner=true&userId=7&contactId={again}")).await.expect(200);
        assert_eq!(none["totalCount"], 0);
        // Sessions name the survivor.
        for id in ["merge-s1", "merge-s2"] {
            let s = app.get(&format!("/v3/reports/sessions/{id}")).await.expect(200);
            assert_eq!(s["conversation"]["contactId"], json!(ana.parse::<u64>().unwrap()), "{s}");
        }
        // The feed tells it: the merged contact's event names the survivor.
        let history = app.get(&format!("/v3/contacts/{again}/history")).await.expect(200);
        let last = history["data"].as_array().unwrap().last().unwrap().clone();
        assert_eq!((last["type"].clone(), last["data"]["object"]["mergedInto"].clone()), (json!("contact.merged"), json!(ana)));
    }
}

api_test! {
    /// An upsert by a merged contact's phone updates the survivor, as
    /// find-or-create answers it (not a 409 "already exists"), and the
    /// survivor keeps its own phone; merged on, the phones go along.
    async fn an_upsert_by_a_merged_phone_updates_the_survivor(app) {
        let ana = contact(&app, json!({ "name": "Ana", "phone": "11 98765-0001" })).await;
        let again = contact(&app, json!({ "name": "Ana S.", "phone": "11 98765-0002" })).await;
        app.post(&format!("/v3/contacts/{ana}/merge"), json!({ "ids": [again] })).await.expect(200);
        let total = app.get("/v3/contacts").await.expect(200)["totalCount"].clone();
        let answer = app
            .post("/v3/contacts/batch", json!({ "operations": [
                { "op": "upsert", "data": { "phone": "(11) 98765-0002", "location": "Recife" } },
                { "op": "upsert", "by": "phone", "data": { "phone": "+55 11 98765-0002", "notes": "called back" } },
            ]}))
            .await;
        assert_eq!(answer.status, 200, "{}", answer.body);
        for result in answer.body["results"].as_array().unwrap() {
            assert_eq!((result["status"].clone(), result["created"].clone(), result["id"].clone()), (json!(200), json!(false), json!(ana)), "{result}");
        }
        let survivor = app.get(&format!("/v3/contacts/{ana}")).await.expect(200);
        assert_eq!((survivor["phone"].clone(), survivor["location"].clone(), survivor["notes"].clone()), (json!("+5511987650001"), json!("Recife"), json!("called back")));
        assert_eq!(app.get("/v3/contacts").await.expect(200)["totalCount"], total, "no contact created");
        for phone in ["11 98765-0001", "11 98765-0002"] {
            let found = app.post("/v3/contacts/find-or-create", json!({ "phone": phone })).await;
            assert_eq!(found.headers["x-contact-created"], "false");
            assert_eq!(found.expect(201)["id"], json!(ana));
        }
        // Ana merged on into Bia: both of Ana's phones find Bia.
        let bia = contact(&app, json!({ "name": "Bia", "phone": "11 98765-0003" })).await;
        app.post(&format!("/v3/contacts/{bia}/merge"), json!({ "ids": [ana] })).await.expect(200);
        for phone in ["11 98765-0001", "11 98765-0002"] {
            let answer = app
                .post("/v3/contacts/batch", json!({ "operations": [{ "op": "upsert", "data": { "phone": phone, "origin": "call" } }] }))
                .await;
            assert_eq!(answer.status, 200, "{}", answer.body);
            let result = &answer.body["results"][0];
            assert_eq!((result["id"].clone(), result["created"].clone()), (json!(bia), json!(false)), "{result}");
        }
        assert_eq!(app.get(&format!("/v3/contacts/{bia}")).await.expect(200)["phone"], "+5511987650003");
    }
}

api_test! {
    /// A merge of more records than a request moves itself answers 202 with
    /// the `Location` of the job, which finishes in the background.
    async fn a_large_merge_runs_on_in_the_background(app) {
        let ana = contact(&app, json!({ "name": "Ana" })).await;
        let again = contact(&app, json!({ "name": "Ana again" })).await;
        let many = shared::domain::contacts::INLINE_MOVES as usize + 5;
        for i in 0..many {
            deal(&app, &again, &format!("Deal {i}")).await;
        }
        let r = app.post(&format!("/v3/contacts/{ana}/merge"), json!({ "ids": [again] })).await;
        let location = r.headers["location"].to_str().unwrap().to_owned();
        let merge = r.expect(202);
        assert_eq!(merge["status"], "running");
        assert_eq!(location, format!("/v3/contacts/merge/{}", merge["id"].as_str().unwrap()));
        let done = finished(&app, merge["id"].as_str().unwrap()).await;
        assert!(done["moved"].as_u64().unwrap() > many as u64, "{done}");
        let theirs = app.get(&format!("/v3/deals?roleId=1&isOwner=true&userId=7&contactId={ana}")).await.expect(200);
        assert_eq!(theirs["totalCount"], many);
        assert_eq!(app.get("/v3/contacts").await.expect(200)["totalCount"], 1);
    }
}

api_test! {
    /// What a merge refuses: no ids, the survivor among them, a contact
    /// named twice, one that is not there (or is another workspace's, or
    /// merged already: 404); a made-up merge id is a 404.
    async fn a_merge_checks_its_contacts(app) {
        let ana = contact(&app, json!({ "name": "Ana" })).await;
        let bruno = contact(&app, json!({ "name": "Bruno" })).await;
        let path = format!("/v3/contacts/{ana}/merge");
        app.post(&path, json!({ "ids": [] })).await.expect_field_error("ids");
        app.post(&path, json!({})).await.expect_field_error("ids");
        app.post(&path, json!({ "ids": [ana] })).await.expect_field_error("ids[0]");
        app.post(&path, json!({ "ids": [bruno, bruno] })).await.expect_field_error("ids[1]");
        app.post(&path, json!({ "ids": ["123"] })).await.expect_error(404);
        app.post("/v3/contacts/123/merge", json!({ "ids": [bruno] })).await.expect_error(404);
        let (_, token) = app.new_workspace("Other").await;
        app.as_token(&token).post(&path, json!({ "ids": [bruno] })).await.expect_error(404);

        app.post(&path, json!({ "ids": [bruno] })).await.expect(200);
        app.post(&path, json!({ "ids": [bruno] })).await.expect_error(404);
        app.get("/v3/contacts/merge/01JZZZZZZZZZZZZZZZZZZZZZZZ").await.expect_error(404);
        app.get("/v3/contacts/merge/nope").await.expect_error(404);
    }
}

api_test! {
    /// Merges of merges: a phone merged twice still finds the last survivor,
    /// and a `crm load` line of a merged contact changes nothing.
    async fn a_merged_phone_and_line_lead_to_the_last_survivor(app) {
        let first = contact(&app, json!({ "name": "First", "phone": "11 98765-1001" })).await;
        let second = contact(&app, json!({ "name": "Second", "phone": "11 98765-1002" })).await;
        let last = contact(&app, json!({ "name": "Last", "phone": "11 98765-1003" })).await;
        app.post(&format!("/v3/contacts/{second}/merge"), json!({ "ids": [first] })).await.expect(200);
        app.post(&format!("/v3/contacts/{last}/merge"), json!({ "ids": [second] })).await.expect(200);
        for phone in ["11 98765-1001", "11 98765-1002"] {
            let found = app.post("/v3/contacts/find-or-create", json!({ "phone": phone })).await;
            assert_eq!(found.headers["x-contact-created"], "false");
            assert_eq!(found.expect(201)["id"], json!(last));
        }
        assert_eq!(app.get(&format!("/v3/contacts/{first}")).await.expect(200)["id"], json!(last));
        // Merging a merged contact again, or into one: 404.
        app.post(&format!("/v3/contacts/{first}/merge"), json!({ "ids": [last] })).await.expect_error(404);
        // A load line of a merged contact changes nothing.
        let line = json!({ "type": "contact", "id": first.parse::<u64>().unwrap(), "name": "First", "phone": "11 98765-1001" });
        app.load_line(1, line).await.unwrap();
        assert_eq!(app.get("/v3/contacts").await.expect(200)["totalCount"], 1);
    }
}

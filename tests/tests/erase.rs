//! Erasure and access (`POST /v3/contacts/{id}/erase`, `GET
//! /v3/contacts/{id}/export`): a person's name, phone and e-mail, written
//! into every place this service keeps them, are nowhere in the store after
//! the erasure (read whole, item by item; on disk, every byte of the
//! store's folder too); the tombstone keeps the id, the counts and the
//! references; the export holds all of it before.

use std::time::Duration;

use api_tests::receiver::Receiver;
use api_tests::serde_json::{Value, json};
use api_tests::{TestApp, api_test, store_test, webhook_settings};
use shared::auth::{Resource, Scope};

const NAME: &str = "Zuleika Erasmo";
const EMAIL: &str = "zuleika.erasmo@example.com";
/// The person's phone and the one of the contact merged into theirs.
const PHONE: &str = "(11) 97654-3210";
const OTHER_PHONE: &str = "(11) 96543-2109";
/// What must be nowhere after the erasure (lowercase; phones as digits).
const NEEDLES: [&str; 5] = [
    "zuleika",
    "erasmo",
    "976543210",
    "965432109",
    "zuleika-crm-7",
];

fn id(body: &Value) -> String {
    body["id"].as_str().unwrap().to_owned()
}

/// Writes the person into every place: the contact (with an
/// `Idempotency-Key`, so its answer is kept), a contact merged into it, a
/// deal named after them, a session with its summary and call, a welcome
/// message, an import naming them, and events delivered to a webhook whose
/// receiver echoes them back.
async fn the_person_everywhere(app: &TestApp, receiver: &Receiver) -> (String, String) {
    receiver.echo();
    app.post(
        "/v3/webhooks",
        json!({ "url": receiver.url, "types": ["contact.*", "deal.*", "session.*"] }),
    )
    .await
    .expect(201);
    let body = json!({ "name": NAME, "phone": PHONE, "email": EMAIL, "externalId": "zuleika-crm-7", "notes": "Zuleika prefers calls" });
    let contact = app
        .post_with_key("/v3/contacts", "create-zuleika", &body)
        .await
        .expect(201);
    let contact = id(&contact);
    let twin = app
        .post(
            "/v3/contacts",
            json!({ "name": "Zuleika E.", "phone": OTHER_PHONE }),
        )
        .await
        .expect(201);
    app.post(
        &format!("/v3/contacts/{contact}/merge"),
        json!({ "ids": [id(&twin)] }),
    )
    .await
    .expect(200);
    let deal = app.post("/v3/deals", json!({
        "name": "Annual plan for Zuleika", "value": 100, "status": "open", "contactId": contact.parse::<u64>().unwrap(),
        "operatorId": 7, "groupId": 1, "pipelineId": "sales", "stageId": "lead", "origin": "site", "tagIds": [],
    })).await.expect(201);
    app.put_session("erase-s1", json!({
        "createdAt": "2026-11-20T10:00:00.000Z",
        "conversation": { "id": 77, "contactId": contact.parse::<u64>().unwrap(), "contactPhone": PHONE, "channelId": "whatsapp-1", "channelType": "whatsapp" },
        "trails": [{ "type": "message", "at": "2026-11-20T10:01:00.000Z", "from": "contact" }],
        // What an operator wrote about them, and their call.
        "summary": "Zuleika asked for the annual plan",
        "call": { "recording": "https://calls.example/zuleika-erasmo.ogg", "seconds": 95 },
    })).await;
    app.put_session("erase-s2", json!({
        "createdAt": "2026-11-21T10:00:00.000Z",
        "conversation": { "id": 78, "contactPhone": OTHER_PHONE, "channelId": "whatsapp-1", "channelType": "whatsapp" },
        "trails": [{ "type": "message", "at": "2026-11-21T10:01:00.000Z", "from": "contact" }],
    })).await;
    app.post(
        "/v3/workspaces/send-welcome-message",
        json!({ "phone": PHONE, "name": NAME, "text": "Oi Zuleika!" }),
    )
    .await
    .expect(201);
    let job = app
        .post(
            "/v3/contacts/import",
            json!({ "contacts": [{ "name": NAME, "phone": PHONE, "email": EMAIL }] }),
        )
        .await
        .expect(201);
    let job = format!("/v3/contacts/import/{}", id(&job));
    for _ in 0..600 {
        if app.get(&job).await.expect(200)["status"] == "done" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Every delivery made and its echo kept.
    receiver
        .wait_for("the deliveries", |got| got.len() >= 4)
        .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    (contact, id(&deal))
}

/// The items of the store that hold any of the person's words.
async fn traces(app: &TestApp) -> Vec<String> {
    app.every_item()
        .await
        .into_iter()
        .map(|item| Value::Object(item).to_string())
        .filter(|text| {
            let lower = text.to_lowercase();
            NEEDLES.iter().any(|n| lower.contains(n))
        })
        .collect()
}

/// The files of the store's folder (on disk only) that hold any of the
/// person's words, with the word and how often: what a copy of the folder,
/// the README's backup, would carry. The engine's pages that earlier writes
/// freed are read too: they are bytes of the file.
fn traces_in_files(app: &TestApp) -> Vec<String> {
    let mut found = Vec::new();
    for (path, bytes) in app.folder_bytes() {
        let lower = bytes.to_ascii_lowercase();
        for needle in NEEDLES {
            let hits = lower
                .windows(needle.len())
                .filter(|w| *w == needle.as_bytes())
                .count();
            if hits > 0 {
                found.push(format!("{}: {needle} x{hits}", path.display()));
            }
        }
    }
    found
}

store_test! {
    /// After the erasure no item of the store holds the person's name,
    /// phones, e-mail or external id; before it, many did. On disk, no byte
    /// of the folder holds them either, from the erasure's answer on: not
    /// the pages the engine freed (earlier versions of the records, deleted
    /// index entries and sentinels), nor the first format's log.
    async fn an_erasure_leaves_no_trace_of_the_person(app) {
        let app = app.delivering(webhook_settings()).await;
        let receiver = Receiver::start().await;
        let (contact, deal) = the_person_everywhere(&app, &receiver).await;
        let before = traces(&app).await;
        assert!(before.len() > 20, "the person is written in many places: {}", before.len());
        if app.folder.is_some() {
            assert!(!traces_in_files(&app).is_empty(), "the folder holds the person before");
        }
        let total = app.get("/v3/contacts").await.expect(200)["totalCount"].clone();

        let tombstone = app.post(&format!("/v3/contacts/{contact}/erase"), json!({})).await.expect(200);
        assert_eq!(traces(&app).await, Vec::<String>::new());
        assert_eq!(traces_in_files(&app), Vec::<String>::new());

        // The tombstone: the id, the times, who erased it and when; nothing personal.
        assert_eq!(tombstone["id"], json!(contact));
        assert!(tombstone["erased"]["by"].as_str().is_some_and(|by| !by.is_empty()), "{tombstone}");
        assert!(tombstone["erased"]["at"].is_string());
        assert!(tombstone.get("name").is_none() && tombstone.get("phone").is_none() && tombstone.get("email").is_none());
        assert_eq!(app.get(&format!("/v3/contacts/{contact}")).await.expect(200), tombstone);
        // Counts and references stay whole; the tombstone takes no new data.
        assert_eq!(app.get("/v3/contacts").await.expect(200)["totalCount"], total);
        let kept = app.get(&format!("/v3/deals/{deal}")).await.expect(200);
        assert_eq!(kept["contact"]["id"], json!(contact.parse::<u64>().unwrap()));
        // What a seller wrote that names them is blanked; the rest stays.
        assert_eq!(kept["name"], "", "{kept}");
        assert_eq!(kept["value"].as_f64(), Some(100.0));
        app.patch(&format!("/v3/contacts/{contact}"), json!({ "name": NAME })).await.expect_error(410);
        // Erasing again answers the tombstone; the phone is free for a new contact.
        assert_eq!(app.post(&format!("/v3/contacts/{contact}/erase"), json!({})).await.expect(200)["erased"], tombstone["erased"]);
        app.post("/v3/contacts", json!({ "phone": PHONE })).await.expect(201);
        // The feed says it, without the data.
        let history = app.get(&format!("/v3/contacts/{contact}/history")).await.expect(200);
        assert_eq!(history["data"].as_array().unwrap().last().unwrap()["type"], "contact.erased");
    }
}

api_test! {
    /// A replay sends the person's events again as deliveries of their own
    /// (new ids, not the events' cursors), to a receiver that echoes them:
    /// the erasure finds those too, and no answer of theirs keeps the person.
    async fn a_replayed_delivery_keeps_no_answer_of_the_person(app) {
        let app = app.delivering(webhook_settings()).await;
        let receiver = Receiver::start().await;
        receiver.echo();
        let hook = app.post("/v3/webhooks", json!({ "url": receiver.url, "types": ["contact.*"] })).await.expect(201);
        let since = api_tests::serde_json::to_value(chrono::Utc::now() - chrono::Duration::seconds(5)).unwrap();
        let contact = app.post("/v3/contacts", json!({ "name": NAME, "phone": PHONE, "email": EMAIL })).await.expect(201);
        receiver.wait_for("the delivery", |got| !got.is_empty()).await;
        let replay = app.post(&format!("/v3/webhooks/{}/replay", id(&hook)), json!({ "since": since })).await.expect(200);
        assert_eq!(replay["queued"], 1, "{replay}");
        receiver.wait_for("the replay", |got| got.len() >= 2).await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        let before = traces(&app).await;
        assert!(before.iter().filter(|t| t.contains("\"Delivery\"")).count() >= 2, "both answers kept: {before:?}");

        app.post(&format!("/v3/contacts/{}/erase", id(&contact)), json!({})).await.expect(200);
        assert_eq!(traces(&app).await, Vec::<String>::new());
    }
}

api_test! {
    /// An attempt under way during the erasure, to a receiver that answers
    /// after it and echoes what it was sent (the person, as they were before
    /// the erasure): the attempt is recorded without its answer, so the
    /// delivery log and the store hold none of the person's words.
    async fn an_answer_that_comes_after_the_erasure_is_not_kept(app) {
        let mut settings = webhook_settings();
        settings.timeout = Duration::from_secs(20); // the receiver answers late, not never
        let app = app.delivering(settings).await;
        let receiver = Receiver::start().await;
        receiver.echo();
        receiver.hold();
        let hook = app.post("/v3/webhooks", json!({ "url": receiver.url, "types": ["contact.*"] })).await.expect(201);
        let log_path = format!("/v3/webhooks/{}/deliveries", id(&hook));
        let contact = app.post("/v3/contacts", json!({ "name": NAME, "phone": PHONE, "email": EMAIL })).await.expect(201);
        // The attempt of `contact.created` is under way: the receiver holds it.
        for _ in 0..500 {
            if receiver.most_at_once() >= 1 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(receiver.most_at_once(), 1, "the attempt reached the receiver");
        let log = app.get(&log_path).await.expect(200);
        assert_eq!(log["data"][0]["status"], "sending", "{log}");

        app.post(&format!("/v3/contacts/{}/erase", id(&contact)), json!({})).await.expect(200);
        // Now it answers, with the person's data it was sent before the erasure.
        receiver.release();
        let got = receiver.wait_for("the held attempt", |got| got.iter().any(|r| r.kind() == "contact.created")).await;
        assert!(got.iter().any(|r| r.body.contains(NAME)), "the attempt carried the person");

        let created = |log: &Value| {
            log["data"].as_array().unwrap().iter().find(|d| d["eventType"] == "contact.created").cloned()
        };
        let mut log = Value::Null;
        for _ in 0..500 {
            log = app.get(&log_path).await.expect(200);
            if created(&log).is_some_and(|d| d["status"] == "succeeded") {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let delivery = created(&log).unwrap_or_default();
        assert_eq!(delivery["status"], "succeeded", "the attempt is recorded: {log}");
        assert_eq!(delivery["attempts"][0]["statusCode"], 200, "{delivery}");
        assert!(delivery["attempts"][0].get("response").is_none(), "the answer came after the erasure: {delivery}");
        assert!(!log.to_string().to_lowercase().contains("zuleika"), "{log}");
        // The contact.erased delivery too is done before the store is read whole.
        receiver.wait_for("contact.erased", |got| got.iter().any(|r| r.kind() == "contact.erased")).await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(traces(&app).await, Vec::<String>::new());
    }
}

api_test! {
    /// The export holds everything the erasure would take: the contact, the
    /// merged contact's phone, the deal, the sessions, the welcome message
    /// and their events.
    async fn an_export_holds_everything_about_the_person(app) {
        let app = app.delivering(webhook_settings()).await;
        let receiver = Receiver::start().await;
        let (contact, deal) = the_person_everywhere(&app, &receiver).await;
        let export = app.get(&format!("/v3/contacts/{contact}/export")).await.expect(200);
        assert_eq!((export["contact"]["name"].clone(), export["contact"]["email"].clone()), (json!(NAME), json!(EMAIL)));
        assert_eq!(export["phones"], json!(["+5511976543210", "+5511965432109"]));
        assert_eq!(export["mergedIds"].as_array().unwrap().len(), 1);
        assert_eq!(export["deals"][0]["id"], json!(deal));
        let sessions: Vec<Value> = export["sessions"].as_array().unwrap().iter().map(|s| s["id"].clone()).collect();
        assert_eq!(sessions.len(), 2, "by conversation and by the merged phone: {sessions:?}");
        assert_eq!(export["welcomeMessages"][0]["name"], NAME);
        let types: Vec<&str> = export["events"].as_array().unwrap().iter().map(|e| e["type"].as_str().unwrap()).collect();
        for wanted in ["contact.created", "contact.merged", "deal.created", "session.upserted"] {
            assert!(types.contains(&wanted), "{wanted} in {types:?}");
        }
        // Another workspace's contact is not there.
        let (_, token) = app.new_workspace("Other").await;
        let theirs = app.as_token(&token).post("/v3/contacts", json!({ "name": "Theirs" })).await.expect(201);
        app.get(&format!("/v3/contacts/{}/export", id(&theirs))).await.expect_error(404);
        app.post(&format!("/v3/contacts/{}/erase", id(&theirs)), json!({})).await.expect_error(404);
    }
}

api_test! {
    /// Erasing takes its own scope: `contacts:write` and `*:write` do not
    /// grant it; `contacts:erase` does.
    async fn erasing_takes_its_own_scope(app) {
        let contact = app.post("/v3/contacts", json!({ "name": NAME })).await.expect(201);
        let path = format!("/v3/contacts/{}/erase", id(&contact));
        for held in [vec![Scope::WriteAll], vec![Scope::Write(Resource::Contacts)]] {
            let token = api_tests::token_with(&app, &held).await;
            let refused = app.as_token(&token).post(&path, json!({})).await.expect_error(403);
            assert!(refused["message"].as_str().unwrap().contains("contacts:erase"), "{refused}");
        }
        let eraser = api_tests::token_with(&app, &[Scope::EraseContacts]).await;
        app.as_token(&eraser).post(&path, json!({})).await.expect(200);
    }
}

api_test! {
    /// A person with more records than a request scrubs is erased in the
    /// background: 202 with the contact's `Location`, then its tombstone,
    /// and no trace of them.
    async fn a_large_erasure_runs_in_the_background(app) {
        let contact = id(&app.post("/v3/contacts", json!({ "name": NAME, "phone": PHONE })).await.expect(201));
        // Each deal is two records: itself and its event.
        let deals = shared::domain::contacts::INLINE_RECORDS / 2 + 1;
        let operations: Vec<Value> = (0..deals)
            .map(|i| json!({ "op": "create", "data": {
                "name": format!("Deal {i}"), "value": 10, "status": "open", "contactId": contact.parse::<u64>().unwrap(),
                "operatorId": 7, "groupId": 1, "pipelineId": "sales", "stageId": "lead", "origin": "site", "tagIds": [],
            }}))
            .collect();
        for chunk in operations.chunks(100) {
            app.post("/v3/deals/batch", json!({ "operations": chunk })).await.expect(200);
        }
        let r = app.post(&format!("/v3/contacts/{contact}/erase"), json!({})).await;
        assert_eq!(r.headers["location"], format!("/v3/contacts/{contact}").as_str());
        assert_eq!(r.expect(202)["name"], NAME, "the contact as it is still");
        let mut erased = Value::Null;
        for _ in 0..600 {
            erased = app.get(&format!("/v3/contacts/{contact}")).await.expect(200);
            if erased.get("erased").is_some() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert!(erased["erased"]["by"].is_string(), "erased in the background: {erased}");
        assert_eq!(traces(&app).await, Vec::<String>::new());
    }
}

api_test! {
    /// Erasure x backups: a store restored from a backup made before an
    /// erasure holds the person again; `crm erasures apply` (the same
    /// function) reads the live store's ledger, which keeps ids and times
    /// only, and erases them again, once: after it, no item of the restored
    /// store holds them, and a second run finds them erased already.
    async fn a_restored_backup_is_erased_again_from_its_ledger(app) {
        let contact = app
            .post("/v3/contacts", json!({ "name": NAME, "phone": PHONE, "email": EMAIL, "externalId": "zuleika-crm-7" }))
            .await
            .expect(201);
        let backup = app.restored_copy().await;
        app.post(&format!("/v3/contacts/{}/erase", id(&contact)), json!({})).await.expect(200);
        assert!(traces(&app).await.is_empty());
        let ledger: Vec<Value> = app
            .every_item()
            .await
            .into_iter()
            .filter(|item| item.get(shared::store::TYPE).and_then(Value::as_str) == Some("ErasedContact"))
            .map(Value::Object)
            .collect();
        assert_eq!(ledger.len(), 1, "one entry of the ledger");
        assert!(ledger[0].to_string().contains(&id(&contact)));

        assert!(!traces(&backup).await.is_empty(), "the restored store holds the person again");
        let done = shared::domain::contacts::reapply(app.store.as_ref(), backup.store.as_ref()).await.unwrap();
        assert_eq!((done.entries, done.erased, done.already, done.absent), (1, 1, 0, 0));
        assert_eq!(traces(&backup).await, Vec::<String>::new());
        let tombstone = backup.get(&format!("/v3/contacts/{}", id(&contact))).await.expect(200);
        assert!(tombstone["erased"].is_object(), "{tombstone}");
        let again = shared::domain::contacts::reapply(app.store.as_ref(), backup.store.as_ref()).await.unwrap();
        assert_eq!((again.erased, again.already), (0, 1));
    }
}

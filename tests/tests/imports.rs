//! Contact imports (`POST /v3/contacts/import`, `GET /v3/contacts/import/{id}`):
//! batches of up to 500 phone-book contacts, created in the background; phones
//! already registered are ignored; a repeated or redelivered batch creates
//! nothing twice.

use std::sync::Arc;
use std::time::Duration;

use api_tests::serde_json::{Value, json};
use api_tests::{RecordingQueue, TestApp, api_test};
use shared::auth::Caller;
use shared::domain::imports::{self, ImportRequest, JobStatus};

/// Waits (bounded) for the background worker to finish a job; returns the job.
async fn finished(app: &TestApp, job_id: &str) -> Value {
    for _ in 0..600 {
        let job = app
            .get(&format!("/v3/contacts/import/{job_id}"))
            .await
            .expect(200);
        if job["status"] == "done" {
            return job;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("import {job_id} did not finish in 30 s");
}

fn phone_book(n: usize, first: usize) -> Value {
    let contacts: Vec<Value> = (first..first + n)
        .map(|i| json!({ "name": format!("Imported {i}"), "phone": format!("11 9{:08}", 60_000_000 + i), "email": format!("i{i}@x.com") }))
        .collect();
    json!({ "contacts": contacts })
}

api_test! {
    /// 500 contacts: 201 at once with the job, then created in the background.
    async fn imports_a_batch_of_500_in_the_background(app) {
        let job = app.post("/v3/contacts/import", phone_book(500, 0)).await.expect(201);
        assert!(job["id"].as_str().is_some_and(|id| id.len() == 26), "{job}");
        assert_eq!(job["received"], 500);
        assert!(job["status"] == "queued" || job["status"] == "done", "{job}");
        let done = finished(&app, job["id"].as_str().unwrap()).await;
        assert_eq!((done["created"].clone(), done["ignored"].clone(), done["failed"].clone()), (json!(500), json!(0), json!(0)));
        assert_eq!(app.get("/v3/contacts").await.expect(200)["totalCount"], 500);
        let one = app.get("/v3/contacts?search=11960000007").await.expect(200);
        assert_eq!(one["data"][0]["name"], "Imported 7");
        assert_eq!(one["data"][0]["isImported"], true);
        assert_eq!(app.get("/v3/contacts?emailExact=i7@x.com").await.expect(200)["totalCount"], 1);
    }
}

api_test! {
    /// Phones registered already are ignored, in any format; so are repeats in a batch.
    async fn registered_phones_are_ignored(app) {
        app.post("/v3/contacts", json!({ "name": "Known", "phone": "+55 11 96000-0001" })).await.expect(201);
        let batch = json!({ "contacts": [
            { "name": "New", "phone": "11960000000" },
            { "name": "Known again", "phone": "(11) 6000-0001" },
            { "name": "Twice", "phone": "11 96000-0002" },
            { "name": "Twice again", "phone": "5511960000002" }
        ]});
        let job = app.post("/v3/contacts/import", batch).await.expect(201);
        let done = finished(&app, job["id"].as_str().unwrap()).await;
        assert_eq!((done["received"].clone(), done["created"].clone(), done["ignored"].clone()), (json!(4), json!(2), json!(2)));
        let known = app.get("/v3/contacts?search=11960000001").await.expect(200);
        assert_eq!(known["data"][0]["name"], "Known", "an existing contact is not changed");
        assert_eq!(app.get("/v3/contacts").await.expect(200)["totalCount"], 3);
    }
}

api_test! {
    /// The same batch imported again creates nothing.
    async fn a_repeated_batch_creates_nothing(app) {
        let first = app.post("/v3/contacts/import", phone_book(30, 0)).await.expect(201);
        finished(&app, first["id"].as_str().unwrap()).await;
        let again = app.post("/v3/contacts/import", phone_book(30, 0)).await.expect(201);
        let done = finished(&app, again["id"].as_str().unwrap()).await;
        assert_eq!((done["created"].clone(), done["ignored"].clone()), (json!(0), json!(30)));
        assert_eq!(app.get("/v3/contacts").await.expect(200)["totalCount"], 30);
    }
}

api_test! {
    async fn validates_the_batch(app) {
        app.post("/v3/contacts/import", phone_book(501, 0)).await.expect_field_error("contacts");
        app.post("/v3/contacts/import", json!({ "contacts": [] })).await.expect_field_error("contacts");
        app.post("/v3/contacts/import", json!({})).await.expect_field_error("contacts");
        let bad_phone = json!({ "contacts": [{ "phone": "11987654321" }, { "name": "x", "phone": "12" }] });
        app.post("/v3/contacts/import", bad_phone).await.expect_field_error("contacts[1].phone");
        let no_phone = json!({ "contacts": [{ "name": "x" }] });
        app.post("/v3/contacts/import", no_phone).await.expect_field_error("contacts[0].phone");
        let long_name = json!({ "contacts": [{ "name": "n".repeat(129), "phone": "11987654321" }] });
        app.post("/v3/contacts/import", long_name).await.expect_field_error("contacts[0].name");
        let unknown = json!({ "contacts": [{ "phone": "11987654321", "age": 3 }] });
        app.post("/v3/contacts/import", unknown).await.expect_field_error("contacts[0].age");
        assert_eq!(app.get("/v3/contacts").await.expect(200)["totalCount"], 0);
    }
}

api_test! {
    async fn job_status_is_per_workspace(app) {
        let job = app.post("/v3/contacts/import", phone_book(2, 0)).await.expect(201);
        let path = format!("/v3/contacts/import/{}", job["id"].as_str().unwrap());
        finished(&app, job["id"].as_str().unwrap()).await;
        let (_, token) = app.new_workspace("Other").await;
        app.as_token(&token).get(&path).await.expect_error(404);
        app.get("/v3/contacts/import/01ARZ3NDEKTSV4RRFFQ69G5FAV").await.expect_error(404);
        app.get("/v3/contacts/import/nope").await.expect_error(404);
        // The other workspace imports the same phones: its own contacts.
        let theirs = app.as_token(&token).post("/v3/contacts/import", phone_book(2, 0)).await.expect(201);
        let status = format!("/v3/contacts/import/{}", theirs["id"].as_str().unwrap());
        let mut done = Value::Null;
        for _ in 0..600 {
            done = app.as_token(&token).get(&status).await.expect(200);
            if done["status"] == "done" {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert_eq!(done["created"], 2);
    }
}

fn request(value: Value) -> ImportRequest {
    api_tests::serde_json::from_value(value).unwrap()
}

api_test! {
    /// SQS delivers at least once: runs of one job, one after the other or at the
    /// same time, create each contact once and agree on the counts.
    async fn redelivered_runs_create_nothing_twice(app) {
        let queue = Arc::new(RecordingQueue::default());
        let caller = Caller::system(1, "test");
        let store = app.store.as_ref();
        let job = imports::start(store, queue.as_ref(), &caller, request(phone_book(120, 0))).await.unwrap();
        assert_eq!(job.status, JobStatus::Queued);
        let message = queue.0.lock().unwrap()[0].clone();
        assert_eq!(message.job_id, job.id);

        let (a, b) = tokio::join!(imports::process(store, message.workspace_id, &message.job_id), imports::process(store, message.workspace_id, &message.job_id));
        let (a, b) = (a.unwrap(), b.unwrap());
        assert_eq!((a.created, a.ignored), (120, 0), "{a:?}");
        assert_eq!((b.created, b.ignored), (120, 0), "{b:?}");
        let again = imports::process(store, message.workspace_id, &message.job_id).await.unwrap();
        assert_eq!((again.status, again.created, again.ignored), (JobStatus::Done, 120, 0));
        assert_eq!(app.get("/v3/contacts").await.expect(200)["totalCount"], 120);
    }
}

api_test! {
    /// The worker writes 500 contacts in a bounded number of calls, not one per contact.
    async fn the_worker_batches_its_writes(app) {
        let queue = Arc::new(RecordingQueue::default());
        let caller = Caller::system(1, "test");
        imports::start(app.store.as_ref(), queue.as_ref(), &caller, request(phone_book(500, 0))).await.unwrap();
        let message = queue.0.lock().unwrap()[0].clone();
        let before = app.metrics();
        let job = imports::process(app.store.as_ref(), message.workspace_id, &message.job_id).await.unwrap();
        let cost = app.metrics() - before;
        assert_eq!(job.created, 500);
        eprintln!("worker cost of 500 contacts on {:?}: {cost:?}", app.backend);
        // 5 BatchGets of phone sentinels; about 20 items per contact-transaction item budget.
        assert_eq!(cost.batch_gets, 5, "{cost:?}");
        assert!(cost.transactions <= 40, "{cost:?}");
        assert!(cost.gets + cost.queries <= 4, "{cost:?}");
    }
}

api_test! {
    /// A keyed create whose answer was not kept (the store took the record,
    /// not the answer) answers its retry as it first did, by reading what it
    /// made (docs/api-contract.md, "Idempotency").
    async fn a_keyed_import_whose_answer_was_lost_is_read_back(app) {
        let body = json!({ "contacts": [{ "name": "Rui", "phone": "21 98888-0002" }] });
        // The job moves on its own in the background.
        let moving = ["status", "created", "ignored", "failed", "lastUpdateAt", "updatedAt", "version"];
        app.assert_read_back("/v3/contacts/import", "/v3/contacts/import", &body, &moving).await;
    }
}

api_test! {
    /// Each event type of the group is made by its change (docs/api-contract.md,
    /// "Events"; `events.rs` fails for a declared type no suite makes).
    async fn an_import_makes_its_event_types(app) {
        let job = app.post("/v3/contacts/import", json!({ "contacts": [{ "name": "Ana", "phone": "21 98888-0001" }] })).await.expect(201);
        let job = format!("/v3/contacts/import/{}", job["id"].as_str().unwrap());
        for _ in 0..600 {
            if app.get(&job).await.expect(200)["status"] == "done" {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        app.assert_made_events(&["import.created", "import.completed"]).await;
    }
}

api_test! {
    /// An import is paced by the workspace's write budget, never refused by
    /// it: 60 contacts (about 9 items each) under a budget of 200 items a
    /// second are all created, none failed, every item charged to the
    /// budget: its bucket stands past the start by more than its one-second
    /// window holds, so the job waited for it.
    async fn an_import_is_paced_by_the_write_budget_never_refused(app) {
        let app = app.with_write_budget(shared::ratelimit::Policy { quota: 200, window_seconds: 1 }).await;
        let start = chrono::Utc::now().timestamp_micros();
        let job = app.post("/v3/contacts/import", phone_book(60, 0)).await.expect(201);
        let done = finished(&app, job["id"].as_str().unwrap()).await;
        assert_eq!((done["created"].clone(), done["failed"].clone()), (json!(60), json!(0)), "{done}");
        let bucket = app.store.get(&shared::keys::write_bucket(shared::ids::WorkspaceId(1)), true).await.unwrap().expect("the budget's bucket");
        let tat = bucket["tat"].as_i64().unwrap();
        // 60 contacts of at least 9 items: 540 items, 2.7 s of the bucket.
        assert!(tat - start > 2_000_000, "the bucket stands {} µs past the start", tat - start);
    }
}

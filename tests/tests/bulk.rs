//! Bulk imports and exports (`/v3/imports`, `/v3/exports`): a whole CRM in
//! and out as files. An import's rows are the object's batch operations, in
//! windows with a checkpoint after each; a job that stops resumes there and
//! applies no row twice. On DynamoDB the files are moto's S3 (presigned
//! URLs, ranged reads, multipart writes); on the embedded store a folder
//! behind signed URLs of the server.

use std::time::Duration;

use api_tests::serde_json::{Value, json};
use api_tests::{TestApp, api_test, token_with};
use shared::auth::{Resource, Scope};
use shared::domain::bulk::JobStatus;
use shared::domain::bulk::import::{self, ImportJob, Run};
use shared::record;

/// Waits (bounded) until the job at `path` is final; returns it.
async fn settled(app: &TestApp, path: &str) -> Value {
    for _ in 0..1200 {
        let job = app.get(path).await.expect(200);
        if ["done", "failed", "canceled"].contains(&job["status"].as_str().unwrap_or_default()) {
            return job;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{path} did not finish in 60 s");
}

/// Makes an import of `body`, uploads `file` and starts it; returns the job's path.
async fn import(app: &TestApp, body: Value, file: &str) -> String {
    let job = app.post("/v3/imports", body).await.expect(201);
    assert_eq!(job["status"], "awaitingUpload", "{job}");
    let path = format!("/v3/imports/{}", job["id"].as_str().unwrap());
    let url = job["uploadUrl"].as_str().expect("an upload URL");
    assert_eq!(app.put_file(url, file.as_bytes().to_vec()).await, 200);
    let started = app
        .post(&format!("{path}/start"), json!({}))
        .await
        .expect(200);
    assert!(
        ["queued", "running", "done"].contains(&started["status"].as_str().unwrap()),
        "{started}"
    );
    path
}

fn contacts_csv(rows: std::ops::Range<usize>) -> String {
    let mut csv = String::from("Name,Phone,E-mail,Plan\n");
    for i in rows {
        csv.push_str(&format!(
            "\"Bulk, {i}\",+55 11 9{:08},bulk{i}@x.com,gold\n",
            70_000_000 + i
        ));
    }
    csv
}

api_test! {
    /// A CSV of contacts with a mapping: each row created through the
    /// contacts batch; a bad row fails alone, with its reason in the errors.
    async fn a_csv_of_contacts_is_imported_and_its_bad_rows_reported(app) {
        let mut file = contacts_csv(0..250);
        file.push_str("Nobody,+55 11 91234-0000,not-an-email,\n");
        let path = import(&app, json!({
            "object": "contacts",
            "mapping": { "Name": "name", "Phone": "phone", "E-mail": "email", "Plan": "customFields.plan" }
        }), &file).await;
        let done = settled(&app, &path).await;
        assert_eq!(done["status"], "done", "{done}");
        assert_eq!((done["rows"].clone(), done["created"].clone(), done["updated"].clone(), done["failed"].clone()),
            (json!(251), json!(250), json!(0), json!(1)), "{done}");
        assert_eq!(done["bytesRead"], done["bytes"]);
        assert_eq!(app.get("/v3/contacts").await.expect(200)["totalCount"], 250);
        let one = app.get("/v3/contacts?emailExact=bulk7@x.com").await.expect(200);
        assert_eq!(one["data"][0]["name"], "Bulk, 7");
        assert_eq!(one["data"][0]["customFields"]["plan"], "gold");

        let errors = app.get(&format!("{path}/errors")).await.expect(200);
        let text = errors.as_str().expect("CSV");
        assert!(text.starts_with("row,error,record\n251,email"), "{text}");
        assert!(text.contains("not-an-email"), "{text}");
    }
}

api_test! {
    /// JSON lines, upserted by e-mail: the second import updates what the
    /// first made, and says so in its counts.
    async fn json_lines_upsert_contacts_by_email(app) {
        let lines = "{\"name\":\"Ana\",\"email\":\"ana@x.com\"}\n{\"name\":\"Bo\",\"email\":\"bo@x.com\"}\n";
        let first = import(&app, json!({"object": "contacts", "format": "jsonl", "mode": "upsert", "by": "email"}), lines).await;
        assert_eq!(settled(&app, &first).await["created"], 2);
        let again = "{\"name\":\"Ana Maria\",\"email\":\"ANA@x.com\"}\n{\"name\":\"Cy\",\"email\":\"cy@x.com\"}";
        let second = import(&app, json!({"object": "contacts", "format": "jsonl", "mode": "upsert", "by": "email"}), again).await;
        let done = settled(&app, &second).await;
        assert_eq!((done["created"].clone(), done["updated"].clone()), (json!(1), json!(1)), "{done}");
        let ana = app.get("/v3/contacts?emailExact=ana@x.com").await.expect(200);
        assert_eq!(ana["data"][0]["name"], "Ana Maria");
        assert_eq!(app.get("/v3/contacts").await.expect(200)["totalCount"], 3);
    }
}

api_test! {
    /// A job that lost its checkpoints (a kill between a window's commits and
    /// its checkpoint, here all of them) runs its rows again: each row's mark
    /// says it landed, so nothing is doubled and the counts are whole.
    async fn a_resumed_import_applies_no_row_twice(app) {
        let mapping = json!({"Name": "name", "Phone": "phone", "E-mail": "email", "Plan": ""});
        let path = import(&app, json!({"object": "contacts", "mapping": mapping}), &contacts_csv(0..230)).await;
        let done = settled(&app, &path).await;
        assert_eq!(done["created"], 230, "{done}");
        let id = done["id"].as_str().unwrap();
        let key = shared::keys::bulk_import(1.into(), id);
        let mut job: ImportJob = record::find(app.store.as_ref(), &key, true, "import").await.unwrap();
        let file = job.file.clone();
        // The file is gone once done (it holds personal data): put it back,
        // as it stood when the kill came.
        assert_eq!(app.files.size(&file).await.unwrap(), None);
        let mut writer = app.files.create(&file).await.unwrap();
        writer.write(contacts_csv(0..230).as_bytes()).await.unwrap();
        writer.finish().await.unwrap();
        for (offset, rows, created) in [(0u64, 0u64, 0u64), (first_window_bytes(230), 100, 100)] {
            job.status = JobStatus::Running;
            job.offset = offset;
            job.rows = rows;
            job.created = created;
            job.columns = if offset == 0 { Vec::new() } else { job.columns.clone() };
            job.version += 1;
            let item = record::to_item(&job).unwrap();
            app.store.write(vec![shared::store::Write::Put { item, condition: None }]).await.unwrap();
            let run = Run { files: app.files.as_ref(), queue: None, deadline: None };
            // Done removes the file: put it back for the next round.
            let again = import::process(app.store.as_ref(), &run, 1.into(), id).await.unwrap();
            assert_eq!((again.status, again.rows, again.created, again.failed), (JobStatus::Done, 230, 230, 0));
            assert_eq!(app.get("/v3/contacts").await.expect(200)["totalCount"], 230);
            let mut writer = app.files.create(&file).await.unwrap();
            writer.write(contacts_csv(0..230).as_bytes()).await.unwrap();
            writer.finish().await.unwrap();
            job = again;
        }
    }
}

/// The bytes of the header and the first 100 rows of `contacts_csv(0..n)`.
fn first_window_bytes(n: usize) -> u64 {
    let csv = contacts_csv(0..n);
    csv.split_inclusive('\n')
        .take(101)
        .map(str::len)
        .sum::<usize>() as u64
}

api_test! {
    /// A deadline (a Lambda's time) stops the job between windows; it sends
    /// itself again and the next run goes on from the checkpoint.
    async fn an_import_stopped_by_its_deadline_goes_on_from_its_checkpoint(app) {
        let job = app.post("/v3/imports", json!({"object": "tags", "format": "jsonl"})).await.expect(201);
        let id = job["id"].as_str().unwrap().to_owned();
        let lines: String = (0..150).map(|i| format!("{{\"name\":\"bulk-tag-{i}\"}}\n")).collect();
        assert_eq!(app.put_file(job["uploadUrl"].as_str().unwrap(), lines.into_bytes()).await, 200);
        // Started by hand: the job's message goes to a queue that only records.
        let queue = api_tests::RecordingQueue::default();
        let caller = shared::auth::Caller::system(1, "test");
        import::start(app.store.as_ref(), app.files.as_ref(), &queue, &caller, &id).await.unwrap();
        let passed = Some(std::time::Instant::now());
        let run = Run { files: app.files.as_ref(), queue: Some(&queue), deadline: passed };
        let paused = import::process(app.store.as_ref(), &run, 1.into(), &id).await.unwrap();
        assert_eq!((paused.status, paused.rows), (JobStatus::Running, 0));
        assert_eq!(queue.0.lock().unwrap().len(), 2, "queued by start, then by the pause");
        let run = Run { files: app.files.as_ref(), queue: Some(&queue), deadline: None };
        let done = import::process(app.store.as_ref(), &run, 1.into(), &id).await.unwrap();
        assert_eq!((done.status, done.created), (JobStatus::Done, 150));
        assert_eq!(app.get("/v3/tags?limit=1").await.expect(200)["totalCount"], 150);
    }
}

api_test! {
    /// Deals are created with their typed fields; products are updated by
    /// id only; modes an object does not take are refused when the job is made.
    async fn deals_and_tags_import_in_their_modes(app) {
        let contact = app.a_contact().await;
        let csv = format!(
            "name,value,status,contactId,operatorId,groupId,pipelineId,stageId,origin,tagIds\n\
             Big deal,1200.5,open,{contact},7,3,p1,s1,import,1;2\n\
             Bad value,abc,open,{contact},7,3,p1,s1,import,\n"
        );
        let path = import(&app, json!({"object": "deals"}), &csv).await;
        let done = settled(&app, &path).await;
        assert_eq!((done["created"].clone(), done["failed"].clone()), (json!(1), json!(1)), "{done}");
        let errors = app.get(&format!("{path}/errors")).await.expect(200);
        assert!(errors.as_str().unwrap().contains("\n2,\"value: invalid type"), "{errors}");
        // Read back through an export of deals.
        let job = app.post("/v3/exports", json!({"object": "deals", "format": "jsonl"})).await.expect(201);
        let exported = settled(&app, &format!("/v3/exports/{}", job["id"].as_str().unwrap())).await;
        let (_, bytes) = app.get_file(exported["downloadUrl"].as_str().unwrap()).await;
        let deal: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!((deal["name"].clone(), deal["value"].clone(), deal["tagIds"].clone()), (json!("Big deal"), json!(1200.5), json!([1, 2])), "{deal}");

        app.post("/v3/imports", json!({"object": "products", "mode": "create"})).await.expect_field_error("mode");
        app.post("/v3/imports", json!({"object": "deals", "mode": "upsert"})).await.expect_field_error("mode");
        app.post("/v3/imports", json!({"object": "tags", "by": "email", "mode": "upsert"})).await.expect_field_error("by");
        app.post("/v3/imports", json!({"object": "contacts", "mapping": {"a": "b..c"}})).await.expect_field_error("mapping.a");

        let tags = import(&app, json!({"object": "tags", "mode": "upsert"}), "name,color\nvip,#ff0000\nVIP,#00ff00\n").await;
        let done = settled(&app, &tags).await;
        assert_eq!((done["created"].clone(), done["updated"].clone()), (json!(1), json!(1)), "{done}");
    }
}

api_test! {
    /// The scope follows the object, through every route and the worker: a
    /// token that writes tags imports no contacts; one that reads deals
    /// reads no contacts import and exports no contacts.
    async fn bulk_jobs_keep_the_scopes_of_their_object(app) {
        let tags_writer = token_with(&app, &[Scope::Write(Resource::Tags)]).await;
        let deals_reader = token_with(&app, &[Scope::Read(Resource::Deals)]).await;
        app.as_token(&tags_writer).post("/v3/imports", json!({"object": "contacts"})).await.expect_error(403);
        app.as_token(&tags_writer).post("/v3/imports", json!({"object": "tags"})).await.expect(201);
        let job = app.post("/v3/imports", json!({"object": "contacts"})).await.expect(201);
        let path = format!("/v3/imports/{}", job["id"].as_str().unwrap());
        app.as_token(&deals_reader).get(&path).await.expect_error(403);
        app.as_token(&deals_reader).get(&format!("{path}/errors")).await.expect_error(403);
        app.as_token(&deals_reader).post(&format!("{path}/cancel"), json!({})).await.expect_error(403);
        app.as_token(&deals_reader).post("/v3/exports", json!({"object": "contacts"})).await.expect_error(403);
        app.as_token(&deals_reader).post("/v3/exports", json!({"object": "deals"})).await.expect(201);
        // Another workspace sees neither job.
        let (_, other) = app.new_workspace("Other").await;
        app.as_token(&other).get(&path).await.expect_error(404);
    }
}

api_test! {
    /// The upload URL is the only credential: it names one file and method,
    /// and a changed one is refused; a start before the upload is a 409.
    async fn an_import_waits_for_its_file(app) {
        let job = app.post("/v3/imports", json!({"object": "contacts"})).await.expect(201);
        let path = format!("/v3/imports/{}", job["id"].as_str().unwrap());
        app.post(&format!("{path}/start"), json!({})).await.expect_error(409);
        let url = job["uploadUrl"].as_str().unwrap();
        if url.starts_with(api_tests::LOCAL_BASE) {
            let forged = url.replace("signature=", "signature=0");
            assert_eq!(app.put_file(&forged, b"name\nx\n".to_vec()).await, 403);
            // Without its expiry and signature: refused the same way, in the error shape.
            let bare = url.split('?').next().unwrap();
            assert_eq!(app.put_file(bare, b"name\nx\n".to_vec()).await, 403);
            let (status, body) = app.get_file(&format!("{bare}?expires=soon")).await;
            assert_eq!(status, 403);
            assert!(String::from_utf8_lossy(&body).contains("\"statusCode\":403"), "{body:?}");
        }
        // Each read gives a fresh URL while the job waits.
        assert!(app.get(&path).await.expect(200)["uploadUrl"].is_string());
        let canceled = app.post(&format!("{path}/cancel"), json!({})).await.expect(200);
        assert_eq!(canceled["status"], "canceled");
        assert!(canceled.get("uploadUrl").is_none());
        app.get("/v3/imports/not-a-job").await.expect_error(404);
    }
}

api_test! {
    /// Exports: every contact as CSV (a header of the view's fields) and as
    /// JSON lines, downloaded from the URL the finished job gives.
    async fn contacts_export_as_csv_and_json_lines(app) {
        for i in 0..30 {
            app.post("/v3/contacts", json!({"name": format!("Out {i}"), "email": format!("out{i}@x.com")})).await.expect(201);
        }
        for (format, lines) in [("csv", 31), ("jsonl", 30)] {
            let job = app.post("/v3/exports", json!({"object": "contacts", "format": format})).await.expect(201);
            let done = settled(&app, &format!("/v3/exports/{}", job["id"].as_str().unwrap())).await;
            assert_eq!((done["status"].clone(), done["records"].clone()), (json!("done"), json!(30)), "{done}");
            let (status, bytes) = app.get_file(done["downloadUrl"].as_str().unwrap()).await;
            assert_eq!(status, 200);
            let text = String::from_utf8(bytes).unwrap();
            assert_eq!(text.lines().count(), lines, "{text}");
            assert!(text.contains("out29@x.com"));
            if format == "csv" {
                assert!(text.starts_with("id,"), "{text}");
            } else {
                let first: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
                assert!(first["id"].is_string() && first["email"].is_string(), "{first}");
            }
        }
        let none = app.post("/v3/exports", json!({"object": "contacts", "filters": {"createdAtFrom": "2099-01-01T00:00:00Z"}})).await.expect(201);
        let done = settled(&app, &format!("/v3/exports/{}", none["id"].as_str().unwrap())).await;
        assert_eq!(done["records"], 0);
    }
}

api_test! {
    /// The rows' changes are events of the feed (it stays complete), made by
    /// the job (`import:<id>` in the audit): a webhook endpoint gets them
    /// only with `importRows`.
    async fn imported_rows_are_events_made_by_the_job(app) {
        let path = import(&app, json!({"object": "contacts", "format": "jsonl"}), "{\"name\":\"From file\",\"email\":\"file@x.com\"}\n").await;
        assert_eq!(settled(&app, &path).await["created"], 1);
        let found = app.get("/v3/contacts?emailExact=file@x.com").await.expect(200);
        let id = found["data"][0]["id"].as_str().unwrap().to_owned();
        let history = app.get(&format!("/v3/contacts/{id}/history")).await.expect(200);
        assert_eq!(history["data"][0]["type"], "contact.created", "{history}");
        let audit = app.get("/v3/audit?limit=50").await.expect(200);
        assert!(audit.to_string().contains("import:"), "{audit}");
    }
}

api_test! {
    /// An export's file is reached only through its job: once the token that
    /// made it is revoked, it gets no download URL (and another token needs
    /// the object's read scope for one).
    async fn a_revoked_token_gets_no_download_of_its_export(app) {
        let created = app.post("/v3/api-tokens", json!({ "name": "exporter", "scopes": ["contacts:read"] })).await.expect(201);
        let token = created["token"].as_str().unwrap().to_owned();
        app.post("/v3/contacts", json!({"name": "Private", "email": "private@x.com"})).await.expect(201);
        let job = app.as_token(&token).post("/v3/exports", json!({"object": "contacts"})).await.expect(201);
        let path = format!("/v3/exports/{}", job["id"].as_str().unwrap());
        settled(&app, &path).await;
        assert!(app.as_token(&token).get(&path).await.expect(200)["downloadUrl"].is_string());
        app.delete(&format!("/v3/api-tokens/{}", created["id"].as_str().unwrap())).await.expect(200);
        app.as_token(&token).get(&path).await.expect_error(401);
        let deals_reader = token_with(&app, &[Scope::Read(Resource::Deals)]).await;
        app.as_token(&deals_reader).get(&path).await.expect_error(403);
    }
}

api_test! {
    /// A keyed create whose answer was not kept (the store took the record,
    /// not the answer) answers its retry as it first did, by reading what it
    /// made (docs/api-contract.md, "Idempotency").
    async fn keyed_jobs_whose_answers_were_lost_are_read_back(app) {
        // Each read signs a fresh upload URL.
        app.assert_read_back("/v3/imports", "/v3/imports", &json!({ "object": "tags" }), &["uploadUrl"]).await;
        let moving = ["status", "records", "bytes", "recordsPerSecond", "downloadUrl", "startedAt", "finishedAt", "lastUpdateAt", "updatedAt"];
        app.assert_read_back("/v3/exports", "/v3/exports", &json!({ "object": "tags" }), &moving).await;
    }
}

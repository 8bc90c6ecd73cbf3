//! Batches (`POST /v3/{contacts,tags,deals,products}/batch`): up to 100
//! operations, each answered on its own in input order (200 when all
//! succeed, 207 when some do not, 4xx only for a request wrong as a whole);
//! upsert of contacts by phone identity, e-mail or `externalId`, and of tags
//! by name; two items naming one record act in order; an `Idempotency-Key`
//! covers the whole batch; a store failure stops it.

use api_tests::faults::Op;
use api_tests::serde_json::{Value, json};
use api_tests::{TestApp, api_test, fault_test};

fn results(answer: &Value) -> &Vec<Value> {
    answer["results"].as_array().unwrap()
}

fn id(result: &Value) -> String {
    result["id"].as_str().unwrap().to_owned()
}

async fn total(app: &TestApp, list: &str) -> Value {
    app.get(list).await.expect(200)["totalCount"].clone()
}

api_test! {
    /// Every operation succeeds: 200, one result per operation in input order,
    /// each as its single route answers (201 created, 200 changed).
    async fn a_batch_that_succeeds_answers_200(app) {
        let first = app.post("/v3/contacts", json!({ "name": "Ana" })).await.expect(201);
        let answer = app
            .post("/v3/contacts/batch", json!({ "operations": [
                { "op": "create", "data": { "name": "Bruno", "phone": "11987654321" } },
                { "op": "update", "id": first["id"], "data": { "email": "ana@example.com" } },
                { "op": "create", "data": { "name": "Carla" } },
            ]}))
            .await
            .expect(200);
        assert_eq!((answer["succeeded"].clone(), answer["failed"].clone()), (json!(3), json!(0)));
        let r = results(&answer);
        assert_eq!(r.iter().map(|r| r["index"].clone()).collect::<Vec<_>>(), [0, 1, 2]);
        assert_eq!((r[0]["status"].clone(), r[0]["created"].clone()), (json!(201), json!(true)));
        assert_eq!(r[0]["data"]["phone"], "+5511987654321");
        assert_eq!((r[1]["status"].clone(), r[1]["created"].clone()), (json!(200), json!(false)));
        assert_eq!(r[1]["id"], first["id"]);
        assert_eq!(r[1]["data"]["email"], "ana@example.com");
        // What the batch answered is what the API holds.
        let read = app.get(&format!("/v3/contacts/{}", id(&r[0]))).await.expect(200);
        assert_eq!(read, r[0]["data"]);
        assert_eq!(total(&app, "/v3/contacts").await, 3);
    }
}

api_test! {
    /// Some operations fail: 207; each failure has its status and the API's
    /// error shape naming its field from the batch's root, and the others
    /// are applied all the same.
    async fn a_batch_with_failures_answers_207_per_item(app) {
        app.post("/v3/contacts", json!({ "phone": "11987654321" })).await.expect(201);
        let answer = app
            .post("/v3/contacts/batch", json!({ "operations": [
                { "op": "create", "data": { "name": "Good" } },
                { "op": "create", "data": { "email": "not an e-mail" } },
                { "op": "create", "data": { "phone": "(11) 8765-4321" } },
                { "op": "update", "id": "99999", "data": { "name": "x" } },
                { "op": "remove", "id": "1" },
                { "op": "create", "data": { "name": "Also good", "color": "red" } },
                { "op": "create", "data": { "name": "Last" } },
            ]}))
            .await
            .expect(207);
        assert_eq!((answer["succeeded"].clone(), answer["failed"].clone()), (json!(2), json!(5)));
        let r = results(&answer);
        let statuses: Vec<_> = r.iter().map(|r| r["status"].as_u64().unwrap()).collect();
        assert_eq!(statuses, [201, 400, 409, 404, 400, 400, 201]);
        assert_eq!(r[1]["error"]["statusCode"], 400);
        assert_eq!(r[1]["error"]["details"][0]["field"], "operations[1].data.email");
        assert!(r[2]["error"]["message"].as_str().unwrap().contains("+5511987654321"), "{}", r[2]);
        assert_eq!((r[3]["id"].clone(), r[3]["error"]["statusCode"].clone()), (json!("99999"), json!(404)));
        assert!(r[4]["error"]["message"].as_str().unwrap().contains("op"), "{}", r[4]);
        assert_eq!(r[5]["error"]["details"][0]["field"], "operations[5].data.color");
        assert!(r[1].get("data").is_none() && r[1].get("created").is_none());
        assert_eq!(total(&app, "/v3/contacts").await, 3, "the good ones, and no half-written record");
    }
}

api_test! {
    /// A request wrong as a whole is one 4xx, and nothing is applied.
    async fn a_wrong_batch_is_one_400(app) {
        let many: Vec<Value> = (0..101).map(|i| json!({ "op": "create", "data": { "name": format!("n{i}") } })).collect();
        app.post("/v3/contacts/batch", json!({ "operations": many })).await.expect_field_error("operations");
        app.post("/v3/contacts/batch", json!({ "operations": [] })).await.expect_field_error("operations");
        app.post("/v3/contacts/batch", json!({})).await.expect_field_error("operations");
        app.post("/v3/contacts/batch", json!({ "operations": [], "atomic": true })).await.expect_error(400);
        app.post("/v3/contacts/batch", json!([{ "op": "create" }])).await.expect_error(400);
        assert_eq!(total(&app, "/v3/contacts").await, 0);
    }
}

api_test! {
    /// Upsert by phone finds the contact under any form of its number (the
    /// ninth digit, the country code): one person written three ways is one
    /// contact, updated twice.
    async fn upsert_by_phone_reads_every_form_of_a_number(app) {
        let answer = app
            .post("/v3/contacts/batch", json!({ "operations": [
                { "op": "upsert", "data": { "phone": "11987654321", "name": "Maria" } },
                { "op": "upsert", "by": "phone", "data": { "phone": "(11) 8765-4321", "email": "maria@example.com" } },
                { "op": "upsert", "data": { "phone": "+55 11 98765-4321", "location": "São Paulo" } },
            ]}))
            .await
            .expect(200);
        let r = results(&answer);
        assert_eq!(r.iter().map(|r| r["status"].clone()).collect::<Vec<_>>(), [201, 200, 200]);
        assert_eq!(r.iter().map(|r| r["created"].clone()).collect::<Vec<_>>(), [true, false, false]);
        assert!(r.iter().all(|x| x["id"] == r[0]["id"]), "{answer}");
        let contact = &r[2]["data"];
        assert_eq!((contact["name"].clone(), contact["email"].clone()), (json!("Maria"), json!("maria@example.com")));
        assert_eq!(contact["location"], "São Paulo");
        assert_eq!(total(&app, "/v3/contacts").await, 1);
        // A landline of the same digits is another phone: a new contact.
        let landline = app
            .post("/v3/contacts/batch", json!({ "operations": [{ "op": "upsert", "data": { "phone": "(11) 3765-4321" } }] }))
            .await
            .expect(200);
        assert_eq!(results(&landline)[0]["status"], 201);
        // Without the key it finds by, the item is a 400 naming it.
        let missing = app
            .post("/v3/contacts/batch", json!({ "operations": [{ "op": "upsert", "data": { "name": "No phone" } }] }))
            .await
            .expect(207);
        assert_eq!(results(&missing)[0]["error"]["details"][0]["field"], "operations[0].data.phone");
    }
}

api_test! {
    /// Upsert by e-mail (without case) and by `externalId` (exactly); two
    /// contacts with one e-mail make an upsert by it a 409 naming both.
    async fn upsert_by_email_and_external_id(app) {
        let ana = app.post("/v3/contacts", json!({ "name": "Ana", "email": "Ana@Example.com", "externalId": "crm-1" })).await.expect(201);
        let answer = app
            .post("/v3/contacts/batch", json!({ "operations": [
                { "op": "upsert", "by": "email", "data": { "email": "ana@example.COM", "location": "Recife" } },
                { "op": "upsert", "by": "externalId", "data": { "externalId": "crm-1", "notes": "synced" } },
                { "op": "upsert", "by": "externalId", "data": { "externalId": "CRM-1", "name": "Other" } },
                { "op": "upsert", "by": "email", "data": { "email": "new@example.com", "name": "New" } },
            ]}))
            .await
            .expect(200);
        let r = results(&answer);
        assert_eq!(r.iter().map(|r| r["status"].clone()).collect::<Vec<_>>(), [200, 200, 201, 201]);
        assert_eq!((r[0]["id"].clone(), r[1]["id"].clone()), (ana["id"].clone(), ana["id"].clone()));
        assert_eq!((r[1]["data"]["location"].clone(), r[1]["data"]["notes"].clone()), (json!("Recife"), json!("synced")));

        app.post("/v3/contacts", json!({ "name": "Twin", "email": "ana@example.com" })).await.expect(201);
        let twins = app
            .post("/v3/contacts/batch", json!({ "operations": [{ "op": "upsert", "by": "email", "data": { "email": "ana@example.com" } }] }))
            .await
            .expect(207);
        let error = &results(&twins)[0]["error"];
        assert_eq!(error["statusCode"], 409);
        assert!(error["message"].as_str().unwrap().contains(ana["id"].as_str().unwrap()), "{error}");
    }
}

api_test! {
    /// Two items naming one record act in input order, each answered: the
    /// second sees the first, and the batch does not fail for it.
    async fn items_naming_one_record_act_in_order(app) {
        let answer = app
            .post("/v3/contacts/batch", json!({ "operations": [
                { "op": "create", "data": { "name": "First", "phone": "11987654321" } },
                { "op": "create", "data": { "name": "Again", "phone": "11987654321" } },
                { "op": "upsert", "data": { "phone": "1187654321", "name": "Second" } },
            ]}))
            .await
            .expect(207);
        let r = results(&answer);
        assert_eq!(r.iter().map(|r| r["status"].clone()).collect::<Vec<_>>(), [201, 409, 200]);
        assert_eq!(r[2]["id"], r[0]["id"]);
        let id = id(&r[0]);
        let answer = app
            .post("/v3/contacts/batch", json!({ "operations": [
                { "op": "update", "id": id, "data": { "notes": "one" } },
                { "op": "update", "id": id, "data": { "location": "two" } },
            ]}))
            .await
            .expect(200);
        let last = &results(&answer)[1]["data"];
        assert_eq!((last["name"].clone(), last["notes"].clone(), last["location"].clone()), (json!("Second"), json!("one"), json!("two")));
    }
}

api_test! {
    /// Sixteen concurrent upserts of one phone, in its different forms, make
    /// one contact.
    async fn concurrent_upserts_of_one_phone_make_one_contact(app) {
        let forms = ["11987654321", "(11) 8765-4321", "+55 11 98765-4321", "5511987654321"];
        let calls = (0..16).map(|i| {
            app.post("/v3/contacts/batch", json!({ "operations": [
                { "op": "upsert", "data": { "phone": forms[i % 4], "notes": format!("call {i}") } },
            ]}))
        });
        let mut ids = std::collections::BTreeSet::new();
        let mut created = 0;
        for answer in futures::future::join_all(calls).await {
            let answer = answer.expect(200);
            let r = &results(&answer)[0];
            ids.insert(id(r));
            created += usize::from(r["created"] == true);
        }
        assert_eq!((ids.len(), created), (1, 1), "{ids:?}");
        assert_eq!(total(&app, "/v3/contacts").await, 1);
    }
}

api_test! {
    /// An `Idempotency-Key` covers the whole batch: the retry answers the
    /// first answer and applies nothing again.
    async fn an_idempotency_key_covers_the_batch(app) {
        let body = json!({ "operations": [
            { "op": "create", "data": { "name": "Once" } },
            { "op": "create", "data": { "email": "bad" } },
            { "op": "upsert", "data": { "phone": "11987654321" } },
        ]});
        let first = app.post_with_key("/v3/contacts/batch", "batch-1", &body).await;
        let retry = app.post_with_key("/v3/contacts/batch", "batch-1", &body).await;
        assert!(retry.replayed());
        assert_eq!(retry.expect(207), first.expect(207));
        assert_eq!(total(&app, "/v3/contacts").await, 2);
    }
}

api_test! {
    /// Another workspace's records are not found from a batch (404 per item).
    async fn a_batch_sees_only_its_workspace(app) {
        let (_, token) = app.new_workspace("Other").await;
        let theirs = app.as_token(&token).post("/v3/contacts", json!({ "name": "Theirs", "phone": "11987654321" })).await.expect(201);
        let answer = app
            .post("/v3/contacts/batch", json!({ "operations": [
                { "op": "update", "id": theirs["id"], "data": { "name": "Mine now" } },
                { "op": "upsert", "data": { "phone": "11987654321", "name": "Mine" } },
            ]}))
            .await
            .expect(207);
        let r = results(&answer);
        assert_eq!((r[0]["status"].clone(), r[1]["status"].clone()), (json!(404), json!(201)));
        assert_ne!(r[1]["id"], theirs["id"]);
        let theirs_now = app.as_token(&token).get(&format!("/v3/contacts/{}", theirs["id"].as_str().unwrap())).await.expect(200);
        assert_eq!(theirs_now["name"], "Theirs");
    }
}

api_test! {
    /// Tags: create, update, upsert by name (without case or accents), delete.
    async fn a_tags_batch(app) {
        let vip = app.post("/v3/tags", json!({ "name": "VIP" })).await.expect(201);
        let answer = app
            .post("/v3/tags/batch", json!({ "operations": [
                { "op": "create", "data": { "name": "Lead" } },
                { "op": "upsert", "data": { "name": "vip", "color": "#000000" } },
                { "op": "upsert", "data": { "name": "Prospect" } },
                { "op": "update", "id": vip["id"], "data": { "textColor": "#ffffff" } },
                { "op": "create", "data": { "name": "LEAD" } },
                { "op": "delete", "id": vip["id"] },
                { "op": "delete", "id": vip["id"] },
            ]}))
            .await
            .expect(207);
        let r = results(&answer);
        assert_eq!(r.iter().map(|r| r["status"].clone()).collect::<Vec<_>>(), [201, 200, 201, 200, 409, 200, 404]);
        assert_eq!(r[1]["id"], vip["id"]);
        assert_eq!((r[1]["data"]["name"].clone(), r[1]["data"]["color"].clone()), (json!("vip"), json!("#000000")));
        assert_eq!(r[5]["data"]["textColor"], "#ffffff", "the deleted tag as it was");
        app.get(&format!("/v3/tags/{}", vip["id"].as_str().unwrap())).await.expect_error(404);
        assert_eq!(total(&app, "/v3/tags").await, 2);
    }
}

api_test! {
    /// Deals: create and update; products: update (they are loaded, not created).
    async fn deals_and_products_batches(app) {
        let contact = app.a_contact().await;
        app.load_line(1, json!({ "type": "product", "id": 5, "name": "Seat", "price": 100 })).await.unwrap();
        let deal = |name: &str| json!({
            "name": name, "value": 1000, "status": "open", "contactId": contact, "operatorId": 7,
            "groupId": 3, "pipelineId": "p1", "stageId": "s1", "origin": "site", "tagIds": []
        });
        let answer = app
            .post("/v3/deals/batch", json!({ "operations": [
                { "op": "create", "data": deal("One") },
                { "op": "create", "data": { "name": "No value" } },
            ]}))
            .await
            .expect(207);
        let r = results(&answer);
        assert_eq!((r[0]["status"].clone(), r[1]["status"].clone()), (json!(201), json!(400)), "{answer}");
        let answer = app
            .post("/v3/deals/batch", json!({ "operations": [{ "op": "update", "id": r[0]["id"], "data": { "status": "won" } }] }))
            .await
            .expect(200);
        assert_eq!(results(&answer)[0]["data"]["status"], "won");

        let answer = app
            .post("/v3/products/batch", json!({ "operations": [
                { "op": "update", "id": 5, "data": { "price": 120 } },
                { "op": "update", "id": 6, "data": { "price": 1 } },
                { "op": "create", "data": { "name": "New" } },
            ]}))
            .await
            .expect(207);
        let r = results(&answer);
        assert_eq!(r.iter().map(|r| r["status"].clone()).collect::<Vec<_>>(), [200, 404, 400]);
        assert_eq!(app.get("/v3/products/5").await.expect(200)["price"], 120.0);
    }
}

fault_test! {
    /// The store failing stops the batch: the operations whose shared
    /// commit met it answer 503 (their outcome unknown: one transaction may
    /// have landed), the ones after their wave 503 "not applied", and none
    /// of those is tried, so nothing after the wave is written.
    async fn a_store_failure_stops_the_batch(app, faults) {
        faults.lose_every_answer(Op::Transaction);
        let answer = app
            .post("/v3/tags/batch", json!({ "operations": [
                { "op": "create", "data": { "name": "one" } },
                { "op": "create", "data": { "name": "two" } },
                // The same name as the first: a later wave, never tried.
                { "op": "create", "data": { "name": "ONE" } },
                { "op": "create", "data": { "name": "three" } },
            ]}))
            .await
            .expect(207);
        faults.calm();
        let r = results(&answer);
        assert_eq!(r.iter().map(|r| r["status"].clone()).collect::<Vec<_>>(), [503, 503, 503, 503], "{}", faults.report());
        for met in &r[..2] {
            assert!(met["error"]["message"].as_str().unwrap().contains("may or may not"), "{met}");
        }
        for later in &r[2..] {
            assert!(later["error"]["message"].as_str().unwrap().starts_with("not applied: operation 0"), "{later}");
        }
        let names: Vec<Value> = app.get("/v3/tags").await.expect(200)["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].clone())
            .collect();
        assert!(names.iter().all(|n| n == "one" || n == "two"), "only the first wave may have landed: {names:?}");
    }
}

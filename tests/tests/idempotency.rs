//! Idempotency keys on every POST: a retry with the same key, route and body
//! answers the first response with `Idempotent-Replayed: true` and has no
//! second effect; the same key elsewhere is 422; while the first runs, 409;
//! a request refused before any write keeps nothing; keys are per workspace
//! and forgotten after 24 hours.

use api_tests::serde_json::{Value, json};
use api_tests::{TestApp, api_test};
use http::{Method, Request};

async fn tag_count(app: &TestApp) -> u64 {
    app.get("/v3/tags").await.expect(200)["totalCount"]
        .as_u64()
        .unwrap()
}

api_test! {
    /// The retry answers the first response, marked as a replay; one tag exists.
    async fn a_retry_answers_the_first_response(app) {
        let body = json!({ "name": "VIP" });
        let first = app.post_with_key("/v3/tags", "retry-1", &body).await;
        assert!(!first.replayed());
        let first = first.expect(201);
        let again = app.post_with_key("/v3/tags", "retry-1", &body).await;
        assert!(again.replayed(), "{:?}", again.headers);
        assert_eq!(again.headers["content-type"], "application/json");
        assert_eq!(again.expect(201), first);
        assert_eq!(tag_count(&app).await, 1);
    }
}

api_test! {
    /// Headers of the answer come back too (here the one telling found from created).
    async fn a_replay_keeps_the_answers_own_headers(app) {
        let body = json!({ "name": "Ana", "phone": "+5511999990000" });
        let first = app.post_with_key("/v3/contacts/find-or-create", "foc", &body).await;
        assert_eq!(first.headers["x-contact-created"], "true");
        let again = app.post_with_key("/v3/contacts/find-or-create", "foc", &body).await;
        assert!(again.replayed());
        assert_eq!(again.headers["x-contact-created"], "true");
        assert_eq!(again.body, first.body);
    }
}

api_test! {
    /// The same key with another body, or on another route, is 422 and does nothing.
    async fn a_key_reused_elsewhere_is_422(app) {
        app.post_with_key("/v3/tags", "k", &json!({ "name": "VIP" })).await.expect(201);
        let other_body = app.post_with_key("/v3/tags", "k", &json!({ "name": "Lead" })).await;
        assert!(other_body.expect_error(422)["message"].as_str().unwrap().contains("different body"));
        let other_route = app.post_with_key("/v1/tags", "k", &json!({ "name": "VIP" })).await;
        assert!(other_route.expect_error(422)["message"].as_str().unwrap().contains("POST /v3/tags"));
        assert_eq!(tag_count(&app).await, 1);
    }
}

api_test! {
    /// A request refused before any write keeps nothing: the corrected retry
    /// with the same key runs.
    async fn a_refused_request_keeps_nothing(app) {
        app.post_with_key("/v3/tags", "fix-me", &json!({ "name": "" })).await.expect_field_error("name");
        let fixed = app.post_with_key("/v3/tags", "fix-me", &json!({ "name": "Fixed" })).await;
        assert!(!fixed.replayed());
        assert_eq!(fixed.expect(201)["name"], "Fixed");
        // A conflict (a write refused by its condition) is not kept either.
        app.post_with_key("/v3/tags", "dup", &json!({ "name": "fixed" })).await.expect_error(409);
        let other = app.post_with_key("/v3/tags", "dup", &json!({ "name": "Other" })).await;
        assert_eq!(other.expect(201)["name"], "Other");
    }
}

api_test! {
    /// Sixteen concurrent requests with one key: one effect; every answer is
    /// the created tag or a 409 "in progress".
    async fn sixteen_concurrent_requests_have_one_effect(app) {
        let body = json!({ "name": "Once" });
        let answers = futures::future::join_all((0..16).map(|_| app.post_with_key("/v3/tags", "race", &body))).await;
        let mut created = Vec::new();
        for answer in answers {
            match answer.status.as_u16() {
                201 => created.push(answer.body),
                409 => assert!(answer.headers.contains_key("retry-after"), "{}", answer.body),
                other => panic!("unexpected {other}: {}", answer.body),
            }
        }
        assert!(!created.is_empty());
        assert!(created.iter().all(|c| c == &created[0]), "{created:?}");
        assert_eq!(tag_count(&app).await, 1);
        // Once done, every retry is a replay of that one tag.
        let later = app.post_with_key("/v3/tags", "race", &body).await;
        assert!(later.replayed());
        assert_eq!(later.expect(201), created[0]);
        // One audit entry, for one create.
        let audit = app.get("/v3/audit").await.expect(200);
        let creates = audit["data"].as_array().unwrap().iter().filter(|e| e["action"] == "tag.create").count();
        assert_eq!(creates, 1, "{audit}");
    }
}

api_test! {
    /// Keys belong to a workspace: another workspace's same key is a new request.
    async fn keys_are_per_workspace(app) {
        let (_, token) = app.new_workspace("Other").await;
        let body = json!({ "name": "VIP" });
        let mine = app.post_with_key("/v3/tags", "shared-key", &body).await.expect(201);
        let theirs = app.post_keyed(&token, "/v3/tags", "shared-key", &body).await;
        assert!(!theirs.replayed());
        let theirs = theirs.expect(201);
        assert_ne!(mine["id"], theirs["id"]);
    }
}

api_test! {
    /// After 24 hours a key is forgotten: the same request runs again.
    async fn an_expired_key_is_forgotten(app) {
        let body = json!({ "name": "VIP" });
        let first = app.post_with_key("/v3/tags", "old", &body).await.expect(201);
        app.expire(app.key_record("old").await, "expiresAt").await;
        app.delete(&format!("/v3/tags/{}", first["id"].as_str().unwrap())).await.expect(200);
        let again = app.post_with_key("/v3/tags", "old", &body).await;
        assert!(!again.replayed());
        assert_ne!(again.expect(201)["id"], first["id"]);
    }
}

api_test! {
    /// A key must be 1 to 255 printable characters; GET ignores the header.
    async fn a_malformed_key_is_400(app) {
        let long = "k".repeat(256);
        app.post_with_key("/v3/tags", &long, &json!({ "name": "VIP" })).await.expect_field_error("Idempotency-Key");
        app.post_with_key("/v3/tags", &"k".repeat(255), &json!({ "name": "VIP" })).await.expect(201);
        // Without a token, 401 before anything is kept.
        let request = Request::builder()
            .method(Method::POST)
            .uri("/v3/tags")
            .header("content-type", "application/json")
            .header("idempotency-key", "anon")
            .body(axum::body::Body::from(r#"{"name":"x"}"#))
            .unwrap();
        app.raw(request).await.expect_error(401);
    }
}

api_test! {
    /// Actions are POSTs too: a campaign started twice with one key starts once.
    async fn an_action_is_applied_once(app) {
        let campaign = app
            .post(
                "/v3/campaigns",
                json!({ "name": "Launch", "channelId": "wa-1", "channelType": "whatsapp", "leadType": "list",
                        "leadsCount": 10, "message": "Hi", "scheduledTo": "2030-01-01T12:00:00Z" }),
            )
            .await
            .expect(201);
        let id = campaign["id"].as_str().map(str::to_owned).unwrap_or_else(|| campaign["id"].to_string());
        app.post(&format!("/v3/campaigns/{id}/schedule"), json!({})).await.expect(201);
        let start = format!("/v3/campaigns/{id}/start");
        let first = app.post_with_key(&start, "start-1", &json!({})).await.expect(201);
        let again = app.post_with_key(&start, "start-1", &json!({})).await;
        assert!(again.replayed());
        assert_eq!(again.expect(201), first);
        // Without the key, the second start is the lifecycle's 409.
        app.post(&start, json!({})).await.expect_error(409);
    }
}

/// Forgets the kept answer of `key`, as an answer the store could not keep
/// leaves the record: done, to be read back.
async fn forget_answer(app: &TestApp, key: &str) {
    let record = app.key_record(key).await;
    let mut item = app
        .store
        .get(&record, true)
        .await
        .unwrap()
        .expect("the key's record");
    assert_eq!(item["state"], "done", "{item:?}");
    item.remove("sealed").expect("a kept answer");
    let write = shared::store::Write::Put {
        item,
        condition: None,
    };
    app.store.write(vec![write]).await.unwrap();
}

/// The answer headers a read-back repeats.
const MARKS: [&str; 3] = ["content-type", "x-contact-created", "x-welcome-duplicate"];

api_test! {
    /// Every create that declares where it is read answers a retry whose
    /// first answer was not kept as it first answered (status, body, its
    /// headers), by reading what it made; and every such create is here.
    async fn a_create_whose_answer_was_not_kept_is_read_back(app) {
        let contact = app.a_contact().await;
        let campaign = json!({ "name": "Launch", "channelId": "wa-1", "channelType": "whatsapp", "leadType": "list",
            "leadsCount": 10, "message": "Hi", "scheduledTo": "2030-01-01T12:00:00Z" });
        let deal = json!({ "name": "Plan", "value": 1200, "status": "open", "contactId": contact, "operatorId": 7,
            "groupId": 1, "pipelineId": "sales", "stageId": "lead", "origin": "site", "tagIds": [] });
        let layout = json!([{ "i": "volume", "x": 0, "y": 0, "w": 6, "h": 4, "metric": "sessionsStarted" }]);
        // (route, then the path and body of a request to it, and the fields
        // that move on their own in the background: a job's, a snapshot's).
        let mut cases: Vec<(&str, String, Value, &[&str])> = vec![
            ("/v3/tags", "/v3/tags".into(), json!({ "name": "VIP" }), &[]),
            ("/v1/tags", "/v1/tags".into(), json!({ "name": "Lead", "color": "#00f" }), &[]),
            ("/v3/contacts", "/v3/contacts".into(), json!({ "name": "Ana", "phone": "11 98765-0001" }), &[]),
            ("/v1/contacts", "/v1/contacts".into(), json!({ "name": "Bia", "phone": "21 98888-7777" }), &[]),
            ("/v3/contacts/find-or-create", "/v3/contacts/find-or-create".into(), json!({ "name": "Caio", "phone": "11 98765-0002" }), &[]),
            ("/v3/contacts/import", "/v3/contacts/import".into(), json!({ "contacts": [{ "name": "Rui", "phone": "21 98888-0002" }] }),
                &["status", "created", "ignored", "failed", "lastUpdateAt", "updatedAt", "version"]),
            ("/v3/deals", "/v3/deals".into(), deal, &[]),
            ("/v3/campaigns", "/v3/campaigns".into(), campaign, &[]),
            ("/v3/dashboards", "/v3/dashboards".into(), json!({ "name": "Support", "layout": layout }), &[]),
            ("/v3/workspaces/send-welcome-message", "/v3/workspaces/send-welcome-message".into(), json!({ "phone": "11 98765-4321", "text": "Welcome!" }), &[]),
            ("/v3/workspaces/checkout-link", "/v3/workspaces/checkout-link".into(), json!({ "plan": "pro", "seats": 5 }), &[]),
            // Each read signs a fresh upload URL.
            ("/v3/imports", "/v3/imports".into(), json!({ "object": "tags" }), &["uploadUrl"]),
            ("/v3/exports", "/v3/exports".into(), json!({ "object": "tags" }),
                &["status", "records", "bytes", "recordsPerSecond", "downloadUrl", "startedAt", "finishedAt", "lastUpdateAt", "updatedAt"]),
        ];
        let mut answers = std::collections::HashMap::new();
        let check = async |i: usize, path: &str, body: &Value, moving: &[&str]| -> Value {
            let key = format!("read-back-{i}");
            let first = app.post_with_key(path, &key, body).await;
            assert!(first.status.is_success(), "{path}: {} {}", first.status, first.body);
            forget_answer(&app, &key).await;
            let again = app.post_with_key(path, &key, body).await;
            assert!(again.replayed(), "{path}: {:?}", again.headers);
            assert_eq!(again.status, first.status, "{path}: {}", again.body);
            for mark in MARKS {
                assert_eq!(again.headers.get(mark), first.headers.get(mark), "{path}: {mark}");
            }
            let (mut read, mut answered) = (again.body, first.body.clone());
            for field in moving {
                read.as_object_mut().unwrap().remove(*field);
                answered.as_object_mut().unwrap().remove(*field);
            }
            assert_eq!(read, answered, "{path}");
            first.body
        };
        for (i, (_, path, body, moving)) in cases.iter().enumerate() {
            answers.insert(path.clone(), check(i, path, body, moving).await);
        }
        // Routes whose path names what an earlier create made.
        let campaign = format!("/v3/campaigns/{}", answers["/v3/campaigns"]["id"].as_str().unwrap());
        let dashboard = format!("/v3/dashboards/{}", answers["/v3/dashboards"]["id"].as_str().unwrap());
        let report = json!({ "reportId": "r-1", "sent": 10, "processed": 10 });
        let snapshot = json!({ "authorId": 1, "authorName": "Ana", "period": "week" });
        let later: Vec<(&str, String, Value, &[&str])> = vec![
            ("/v3/campaigns/{id}/{action}", format!("{campaign}/schedule"), json!({}), &[]),
            ("/v3/campaigns/{id}/{action}", format!("{campaign}/start"), json!({}), &[]),
            ("/v3/campaigns/{id}/results", format!("{campaign}/results"), report, &[]),
            ("/v3/dashboards/{dashboardId}/snapshots", format!("{dashboard}/snapshots"), snapshot,
                &["status", "data", "processedAt", "processedTimeInMs", "totalTimeInMs", "lastUpdateAt", "updatedAt", "version"]),
        ];
        for (i, (_, path, body, moving)) in later.iter().enumerate() {
            check(100 + i, path, body, moving).await;
        }
        cases.extend(later);
        let tested: std::collections::BTreeSet<&str> = cases.iter().map(|c| c.0).collect();
        let declared: std::collections::BTreeSet<&str> = crm::groups()
            .iter()
            .flat_map(|g| g.routes())
            .filter(|r| r.read_back.is_some())
            .map(|r| r.path)
            .collect();
        assert_eq!(tested, declared);
    }
}

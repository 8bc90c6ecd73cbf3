//! Once means once: what a write promises when the network between the API
//! and its store fails (docs/design.md, "Writes that happen once").
//!
//! On DynamoDB Local the faults are real, from a proxy in front of it: a
//! transaction that lands and whose answer is lost is sent again under its
//! token and applied once; an idempotency key's claim that lands and whose
//! answer is lost is recognised as the request's own. On both stores, a
//! write whose outcome the store cannot learn is a 503 saying so, and a
//! retry with the same `Idempotency-Key` gets the first answer.

use api_tests::faults::{Fault, Op};
use api_tests::serde_json::{Value, json};
use api_tests::{TestApp, fault_test};

fn deal(contact: u64) -> Value {
    json!({
        "name": "Annual plan", "value": 1200, "status": "open", "contactId": contact,
        "operatorId": 7, "groupId": 1, "pipelineId": "sales", "stageId": "lead", "origin": "site", "tagIds": []
    })
}

/// The deals of the workspace, as the list and its count say.
async fn deals(app: &TestApp) -> (u64, Vec<Value>) {
    let page = app
        .get("/v3/deals?roleId=1&isOwner=true&userId=7&limit=100")
        .await
        .expect(200);
    (
        page["totalCount"].as_u64().unwrap(),
        page["data"].as_array().unwrap().clone(),
    )
}

async fn tag_count(app: &TestApp) -> u64 {
    app.get("/v3/tags").await.expect(200)["totalCount"]
        .as_u64()
        .unwrap()
}

/// How many audit entries of `action` the workspace has.
async fn audited(app: &TestApp, action: &str) -> usize {
    let audit = app.get("/v3/audit?limit=100").await.expect(200);
    audit["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["action"] == action)
        .count()
}

/// The ids of the records that have a `<kind>.created` event in the log
/// (read from the store: settled or not).
async fn created_events(app: &TestApp, kind: &str) -> Vec<String> {
    let ws = shared::ids::WorkspaceId(1);
    let page = shared::domain::events::log_page(app.store.as_ref(), ws, None, None, 1000)
        .await
        .unwrap();
    let kind = format!("{kind}.created");
    page.data
        .into_iter()
        .filter(|e| e.kind == kind)
        .map(|e| e.resource_id)
        .collect()
}

fault_test! {
    /// A deal's transaction lands, and DynamoDB answers its resends "in
    /// progress" (the first attempt still settling): the store waits and
    /// sends it again under the same token, so one deal exists, counted once.
    async fn a_create_answered_in_progress_is_applied_once(app, faults) {
        let contact = app.a_contact().await;
        faults.meet(Op::Transaction, &[Fault::DropAfter, Fault::InProgressAfter, Fault::InProgressAfter]);
        let created = app.post("/v3/deals", deal(contact)).await.expect(201);
        let (count, data) = deals(&app).await;
        assert_eq!((count, data.len()), (1, 1), "{data:?} after {}", faults.report());
        assert_eq!(data[0]["id"], created["id"]);
        assert_eq!(audited(&app, "deal.create").await, 1);
    }
}

fault_test! {
    /// A tag's transaction lands and its answers are lost: the resend is
    /// answered as done, not refused by the name the tag itself took.
    async fn a_create_whose_answer_is_lost_is_not_its_own_conflict(app, faults) {
        faults.meet(Op::Transaction, &[Fault::DropAfter, Fault::ErrorAfter, Fault::InProgressAfter]);
        let tag = app.post("/v3/tags", json!({ "name": "VIP" })).await.expect(201);
        assert_eq!(tag["name"], "VIP");
        assert_eq!(tag_count(&app).await, 1);
    }
}

fault_test! {
    /// A key's claim lands and its answer is lost: the store sends it again
    /// and finds the request's own claim, so the request runs, not a 409.
    async fn a_claim_whose_answer_is_lost_is_the_requests_own(app, faults) {
        faults.meet(Op::Put, &[Fault::DropAfter, Fault::ErrorAfter]);
        let first = app.post_with_key("/v3/tags", "fresh-key", &json!({ "name": "VIP" })).await;
        assert!(!first.replayed());
        let tag = first.expect(201);
        let again = app.post_with_key("/v3/tags", "fresh-key", &json!({ "name": "VIP" })).await;
        assert!(again.replayed());
        assert_eq!(again.expect(201), tag);
        assert_eq!(tag_count(&app).await, 1);
    }
}

fault_test! {
    /// A claim whose outcome the store cannot learn: the request answers 503
    /// and gives its claim back, so the retry with the key runs at once.
    async fn a_claim_never_confirmed_does_not_block_its_key(app, faults) {
        faults.lose_every_answer(Op::Put);
        let body = json!({ "name": "VIP" });
        let unsure = app.post_with_key("/v3/tags", "unsure-claim", &body).await;
        assert!(unsure.headers.contains_key("retry-after"), "{} {} {}", unsure.status, unsure.body, faults.report());
        unsure.expect_error(503);
        let retry = app.post_with_key("/v3/tags", "unsure-claim", &body).await;
        assert!(!retry.replayed());
        assert_eq!(retry.expect(201)["name"], "VIP");
        assert_eq!(tag_count(&app).await, 1);
    }
}

fault_test! {
    /// A deal's transaction lands and the store never learns it: the answer
    /// is a 503 saying so, and the retry with the same key gets the deal,
    /// read back as the first answer would have had it; one deal exists.
    async fn a_keyed_create_whose_outcome_was_unknown_answers_its_record(app, faults) {
        let contact = app.a_contact().await;
        faults.lose_every_answer(Op::Transaction);
        let unknown = app.post_with_key("/v3/deals", "lost-id", &deal(contact)).await;
        assert_eq!(unknown.headers["retry-after"], "1");
        let message = unknown.expect_error(503)["message"].as_str().unwrap().to_owned();
        assert!(message.contains("may or may not have been applied") && message.contains("Idempotency-Key"), "{message}");
        let (count, data) = deals(&app).await;
        assert_eq!(count, 1, "the deal was applied once: {data:?}");
        let retry = app.post_with_key("/v3/deals", "lost-id", &deal(contact)).await;
        assert!(retry.replayed(), "{:?}", retry.headers);
        let read_back = retry.expect(201);
        assert_eq!(read_back, app.get(&format!("/v3/deals/{}", data[0]["id"].as_str().unwrap())).await.expect(200));
        let again = app.post_with_key("/v3/deals", "lost-id", &deal(contact)).await;
        assert_eq!(again.expect(201), read_back);
        assert_eq!(deals(&app).await.0, 1);
        assert_eq!(audited(&app, "deal.create").await, 1);
    }
}

fault_test! {
    /// Without a key, a create whose outcome is unknown is a 503 that says
    /// so; it was applied at most once.
    async fn a_create_whose_outcome_was_unknown_says_so(app, faults) {
        faults.lose_every_answer(Op::Transaction);
        let unknown = app.post("/v3/tags", json!({ "name": "VIP" })).await;
        let message = unknown.expect_error(503)["message"].as_str().unwrap().to_owned();
        assert!(message.contains("read before you retry"), "{message}");
        assert_eq!(tag_count(&app).await, 1);
    }
}

/// One kind of record the load test creates, by the request's number.
fn request(n: usize, contact: u64, key: &str) -> (&'static str, &'static str, Value) {
    match n % 3 {
        0 => ("tag", "/v3/tags", json!({ "name": key })),
        1 => ("deal", "/v3/deals", {
            let mut d = deal(contact);
            d["name"] = json!(key);
            d
        }),
        _ => (
            "contact",
            "/v3/contacts",
            json!({ "name": key, "phone": format!("11 9{:08}", n) }),
        ),
    }
}

/// Eight clients create records with keys while `rate` of the store's calls
/// fail, each retrying a request with its key until the answer is final.
/// Then: no 500, every acknowledged record present, no record twice, every
/// count exact, every unknown outcome resolved by its retry.
async fn under_load(app: &TestApp, faults: &api_tests::faults::Faults, seed: u64, rate: f64) {
    const CLIENTS: usize = 8;
    const EACH: usize = 9;
    let contact = app.a_contact().await;
    faults.random(seed, rate);
    let client = |c: usize| async move {
        let mut made = Vec::new();
        let mut unknown = 0;
        for i in 0..EACH {
            let n = c * EACH + i;
            let key = format!("load-{seed}-{n}");
            let (kind, path, body) = request(n, contact, &key);
            let answer = loop {
                let answer = app.post_with_key(path, &key, &body).await;
                match answer.status.as_u16() {
                    201 => break answer.body,
                    503 | 409 => {
                        assert!(
                            answer.headers.contains_key("retry-after"),
                            "{} {}",
                            answer.status,
                            answer.body
                        );
                        let message = answer.body["message"].as_str().unwrap_or_default();
                        if message.contains("may or may not") {
                            unknown += 1;
                        } else if answer.status == 409 {
                            assert!(message.contains("in progress"), "{}", answer.body);
                        }
                        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                    }
                    _ => panic!("{path} ({key}): {} {}", answer.status, answer.body),
                }
            };
            assert_eq!(answer["name"], json!(key));
            made.push((kind, answer["id"].as_str().unwrap().to_owned()));
        }
        (made, unknown)
    };
    let runs = futures::future::join_all((0..CLIENTS).map(client)).await;
    faults.calm();
    let unknown: usize = runs.iter().map(|r| r.1).sum();
    let made: Vec<(&str, String)> = runs.into_iter().flat_map(|r| r.0).collect();
    assert!(faults.met() > 0, "no fault was met");
    eprintln!(
        "{rate}: {} faults met, {unknown} unknown outcomes resolved: {}",
        faults.met(),
        faults.report()
    );
    let ids: std::collections::HashSet<&String> = made.iter().map(|m| &m.1).collect();
    assert_eq!(ids.len(), made.len(), "a record answered twice");
    for (kind, path, list, action, extra) in [
        ("tag", "/v3/tags", "/v3/tags?limit=100", "tag.create", 0),
        (
            "deal",
            "/v3/deals",
            "/v3/deals?roleId=1&isOwner=true&userId=7&limit=100",
            "deal.create",
            0,
        ),
        (
            "contact",
            "/v3/contacts",
            "/v3/contacts?limit=100",
            "contact.create",
            1,
        ),
    ] {
        let acknowledged: Vec<&String> =
            made.iter().filter(|m| m.0 == kind).map(|m| &m.1).collect();
        let page = app.get(list).await.expect(200);
        let stored: std::collections::HashSet<&str> = page["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["id"].as_str().unwrap())
            .collect();
        assert_eq!(
            page["totalCount"].as_u64().unwrap() as usize,
            acknowledged.len() + extra,
            "{kind}: the count"
        );
        assert_eq!(
            stored.len(),
            acknowledged.len() + extra,
            "{kind}: no record twice"
        );
        for id in &acknowledged {
            assert!(
                stored.contains(id.as_str()),
                "{kind} {id} acknowledged and missing"
            );
            app.get(&format!("{path}/{id}")).await.expect(200);
        }
        assert_eq!(
            audited(app, action).await,
            acknowledged.len() + extra,
            "{kind}: one audit entry each"
        );
        // An event for each record made, none for a write that failed.
        let mut events = created_events(app, kind).await;
        events.sort();
        let mut records: Vec<String> = stored.iter().map(|id| id.to_string()).collect();
        records.sort();
        assert_eq!(events, records, "{kind}: one event each");
    }
}

fault_test! {
    /// Under load, with 10% of the store's calls failing.
    async fn holds_under_load_at_ten_percent(app, faults) {
        under_load(&app, &faults, 10, 0.10).await;
    }
}

fault_test! {
    /// Under load, with 30% of the store's calls failing.
    async fn holds_under_load_at_thirty_percent(app, faults) {
        under_load(&app, &faults, 30, 0.30).await;
    }
}

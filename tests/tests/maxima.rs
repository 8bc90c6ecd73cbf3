//! Every documented per-request maximum, at its value, on both stores
//! (`shared::domain::maxima`, docs/design.md "Per-request maxima"): a request
//! at the maximum succeeds, one past it is refused and writes nothing. A
//! maximum that multiplies what one transaction writes is sent at its worst
//! (every index item a record can have, under an `Idempotency-Key`, whose
//! record moves in each transaction too): that is where a new item per
//! record (an event) pushes a documented maximum past DynamoDB's 100 items.

use std::sync::Arc;
use std::time::Duration as Wait;

use api_tests::serde_json::{Value, json};
use api_tests::{TestApp, api_test};
use chrono::Duration;
use shared::domain::maxima::{self, MAXIMA};

/// The maximum the table names `what`.
fn max(what: &str) -> usize {
    maxima::of(what) as usize
}

/// `n` with a comma between thousands, as the docs write numbers.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The code's table is the docs' table, row for row, and every test it names
/// is a test of this suite's files.
#[test]
fn every_maximum_is_documented_and_tested() {
    let design = include_str!("../../docs/design.md");
    let section = design
        .split("### Per-request maxima")
        .nth(1)
        .expect("docs/design.md has a section \"Per-request maxima\"")
        .split("\n## ")
        .next()
        .unwrap();
    let here = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    for m in MAXIMA {
        let untested = m.test.starts_with("untested:");
        let tested_by = if untested {
            m.test.to_owned()
        } else {
            format!("`{}`", m.test)
        };
        let row = format!(
            "| {} | {} | {} | {tested_by} |",
            m.what,
            m.routes,
            thousands(m.max)
        );
        assert!(
            section.contains(&row),
            "docs/design.md (\"Per-request maxima\") lacks the row\n{row}"
        );
        if !untested {
            let (suite, test) = m.test.split_once("::").expect("`<suite>::<test>`");
            let text = std::fs::read_to_string(here.join(format!("{suite}.rs")))
                .unwrap_or_else(|e| panic!("{}: {e}", m.test));
            assert!(
                text.contains(&format!("async fn {test}(")),
                "{} names no test",
                m.test
            );
        }
    }
    let rows = section
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| What |"))
        .count();
    assert_eq!(
        rows,
        MAXIMA.len(),
        "the docs' table has a row the code's lacks"
    );
}

fn deal_body(contact: u64, name: &str) -> Value {
    json!({
        "name": name, "value": 100, "status": "open", "contactId": contact, "operatorId": 7,
        "groupId": 1, "pipelineId": "sales", "stageId": "lead", "origin": "site", "tagIds": [],
    })
}

/// `n` phone-book contacts of distinct phones; `email` gives each its e-mail.
fn phone_book(n: usize, email: impl Fn(usize) -> String) -> Vec<Value> {
    (0..n)
        .map(|i| json!({ "name": format!("Imported {i}"), "phone": format!("11 9{:08}", 60_000_000 + i), "email": email(i) }))
        .collect()
}

/// Imports `contacts` and waits (60 s at most) for the job to finish.
async fn imported(app: &TestApp, contacts: Vec<Value>) {
    let job = app
        .post("/v3/contacts/import", json!({ "contacts": contacts }))
        .await
        .expect(201);
    let path = format!("/v3/contacts/import/{}", job["id"].as_str().unwrap());
    for _ in 0..1200 {
        if app.get(&path).await.expect(200)["status"] == "done" {
            return;
        }
        tokio::time::sleep(Wait::from_millis(50)).await;
    }
    panic!("the import did not finish in 60 s");
}

api_test! {
    /// A batch of each kind at 100 operations under an Idempotency-Key:
    /// 200, every operation applied; 101 are one 400 that applies nothing.
    async fn batches_at_their_maximum(app) {
        let n = max("operations of a batch");
        let contact = app.a_contact().await;
        for i in 1..=n {
            app.load_line(1, json!({ "type": "product", "id": i, "name": format!("Seat {i}"), "price": 10 })).await.unwrap();
        }
        let batches = [
            ("/v3/contacts/batch", (0..n).map(|i| json!({ "op": "create", "data": {
                "name": format!("Batch contact {i}"), "phone": format!("11 9{:08}", 70_000_000 + i), "email": format!("b{i}@example.com"),
            } })).collect::<Vec<Value>>()),
            ("/v3/tags/batch", (0..n).map(|i| json!({ "op": "upsert", "data": { "name": format!("Batch tag {i}") } })).collect()),
            ("/v3/deals/batch", (0..n).map(|i| json!({ "op": "create", "data": deal_body(contact, &format!("Batch deal {i}")) })).collect()),
            ("/v3/products/batch", (1..=n).map(|i| json!({ "op": "update", "id": i, "data": { "price": 20 } })).collect()),
        ];
        for (path, operations) in batches {
            let mut too_many = operations.clone();
            too_many.push(operations[0].clone());
            app.post(path, json!({ "operations": too_many })).await.expect_field_error("operations");
            let answer = app.post_with_key(path, &format!("at-most{path}"), &json!({ "operations": operations })).await.expect(200);
            assert_eq!((answer["succeeded"].clone(), answer["failed"].clone()), (json!(n), json!(0)), "{path}");
        }
        assert_eq!(app.get("/v3/contacts").await.expect(200)["totalCount"], n + 1);
        assert_eq!(app.get("/v3/tags").await.expect(200)["totalCount"], n);
        assert_eq!(app.get("/v3/deals?roleId=1&isOwner=true&userId=7").await.expect(200)["totalCount"], n);
    }
}

api_test! {
    /// 50 reasons in one request under an Idempotency-Key: each a record and
    /// its event (more than one transaction holds: written 25 at a time);
    /// four such requests fill the list's 200, and one more is a 409; 51 in
    /// one request are a 400.
    async fn churn_reasons_at_their_maximum(app) {
        let path = "/v3/workspaces/churn-reasons/suggestions";
        let (per_request, in_list) = (max("churn reasons a request adds"), max("churn reasons in the list"));
        let reasons = |from: usize, n: usize| -> Vec<String> { (from..from + n).map(|i| format!("Reason number {i}")).collect() };
        app.post(path, json!({ "reasons": reasons(0, per_request + 1) })).await.expect_field_error("reasons");
        assert_eq!(app.get(path).await.expect(200)["totalCount"], 0);
        let first = app.post_with_key(path, "fifty-reasons", &json!({ "reasons": reasons(0, per_request) })).await.expect(201);
        assert_eq!(first["totalCount"], per_request);
        for from in (per_request..in_list).step_by(per_request) {
            app.post(path, json!({ "reasons": reasons(from, per_request) })).await.expect(201);
        }
        assert_eq!(app.get(path).await.expect(200)["totalCount"], in_list);
        app.post(path, json!({ "reason": "One too many" })).await.expect_error(409);
        // One event per reason.
        let log = shared::domain::events::log_page(app.store.as_ref(), shared::ids::WorkspaceId(1), None, None, 1000).await.unwrap();
        assert_eq!(log.data.iter().filter(|e| e.kind == "churnReason.created").count(), in_list);
    }
}

api_test! {
    /// Ten contacts merged at once into one, each with every index item a
    /// contact can have (ten name words, an e-mail, an externalId, new),
    /// under an Idempotency-Key: done within the request, the ten gone from
    /// the list and their phones the survivor's; eleven are a 400.
    async fn a_merge_at_its_maximum(app) {
        let n = max("contacts merged at once");
        let phone = |i: usize| format!("11 9{:08}", 80_000_000 + i);
        let contact = |i: usize| json!({
            "name": format!("Alpha Bravo Charlie Delta Echo Foxtrot Golf Hotel India Juliet Kilo {i}"),
            "phone": phone(i), "email": format!("merge{i}@example.com"), "externalId": format!("ext-{i}"),
            "newContact": true, "notes": "n".repeat(10_000),
        });
        let survivor = app.post("/v3/contacts", contact(0)).await.expect(201)["id"].as_str().unwrap().to_owned();
        let mut merged = Vec::new();
        for i in 1..=n + 1 {
            merged.push(app.post("/v3/contacts", contact(i)).await.expect(201)["id"].as_str().unwrap().to_owned());
        }
        let path = format!("/v3/contacts/{survivor}/merge");
        app.post(&path, json!({ "ids": merged })).await.expect_field_error("ids");
        let done = app.post_with_key(&path, "merge-at-most", &json!({ "ids": merged[..n].to_vec() })).await.expect(200);
        assert_eq!(done["status"], "done", "{done}");
        assert_eq!(app.get("/v3/contacts").await.expect(200)["totalCount"], 2, "the survivor and the one left out");
        for i in 1..=n {
            let found = app.post("/v3/contacts/find-or-create", json!({ "phone": phone(i) })).await;
            assert_eq!(found.headers["x-contact-created"], "false");
            assert_eq!(found.expect(201)["id"], json!(survivor));
        }
    }
}

api_test! {
    /// Ten phones to look a contact up by: the one known (the last) answers;
    /// none known, the contact is made with the first; eleven are a 400.
    async fn find_or_create_at_its_maximum(app) {
        let n = max("phones of a find-or-create");
        let phones: Vec<String> = (0..=n).map(|i| format!("11 9{:08}", 90_000_000 + i)).collect();
        app.post("/v3/contacts/find-or-create", json!({ "name": "Ana", "phones": phones })).await.expect_field_error("phones");
        let known = app.post("/v3/contacts", json!({ "name": "Known", "phone": phones[n - 1] })).await.expect(201);
        let found = app.post("/v3/contacts/find-or-create", json!({ "name": "Ana", "phones": phones[..n].to_vec() })).await;
        assert_eq!(found.headers["x-contact-created"], "false");
        assert_eq!(found.expect(201)["id"], known["id"]);
        let fresh: Vec<String> = (0..n).map(|i| format!("21 9{:08}", 90_000_000 + i)).collect();
        let made = app.post("/v3/contacts/find-or-create", json!({ "name": "Bia", "phones": fresh })).await;
        assert_eq!(made.headers["x-contact-created"], "true");
        assert_eq!(made.expect(201)["phone"], "+5521990000000");
    }
}

api_test! {
    /// A deal with 20 tags and 20 products, won (its rollups), under an
    /// Idempotency-Key; then every tag and product changed at once and lost
    /// with 20 reasons: every index item rewritten in one transaction (97
    /// items with its event). 21 of any of them are a 400.
    async fn a_deal_at_its_maximum(app) {
        let n = max("tags of a deal");
        assert_eq!((max("products of a deal"), max("lost reasons of a deal")), (n, n));
        let contact = app.a_contact().await;
        let operations: Vec<Value> = (0..2 * n + 1).map(|i| json!({ "op": "create", "data": { "name": format!("Deal tag {i}") } })).collect();
        let created = app.post("/v3/tags/batch", json!({ "operations": operations })).await.expect(200);
        let tags: Vec<u64> = created["results"].as_array().unwrap().iter().map(|r| r["id"].as_str().unwrap().parse().unwrap()).collect();
        for i in 1..=2 * n + 1 {
            app.load_line(1, json!({ "type": "product", "id": i, "name": format!("Product {i}"), "price": 10 })).await.unwrap();
        }
        let products = |ids: std::ops::Range<usize>| -> Vec<Value> { ids.map(|i| json!({ "id": (i + 1).to_string(), "quantity": 2 })).collect() };
        let mut body = deal_body(contact, "At its maximum");
        body["status"] = json!("won");
        body["tagIds"] = json!(tags[..n + 1].to_vec());
        body["products"] = json!(products(0..n));
        app.post("/v3/deals", body.clone()).await.expect_field_error("tagIds");
        body["tagIds"] = json!(tags[..n].to_vec());
        body["products"] = json!(products(0..n + 1));
        app.post("/v3/deals", body.clone()).await.expect_field_error("products");
        body["products"] = json!(products(0..n));
        let deal = app.post_with_key("/v3/deals", "deal-at-most", &body).await.expect(201);
        let path = format!("/v3/deals/{}", deal["id"].as_str().unwrap());

        let reasons: Vec<String> = (0..=n).map(|i| format!("reason {i}")).collect();
        let mut change = json!({ "status": "lost", "tagIds": tags[n..2 * n].to_vec(), "products": products(n..2 * n), "lostReason": reasons });
        app.patch(&path, change.clone()).await.expect_field_error("lostReason");
        change["lostReason"] = json!(reasons[..n].to_vec());
        let lost = app.patch(&path, change).await.expect(200);
        assert_eq!((lost["tagIds"].as_array().unwrap().len(), lost["products"].as_array().unwrap().len()), (n, n));
        // Listed under its new tags only.
        let by_tag = |tag: u64| format!("/v3/deals?roleId=1&isOwner=true&userId=7&tagIds={tag}");
        assert_eq!(app.get(&by_tag(tags[2 * n - 1])).await.expect(200)["totalCount"], 1);
        assert_eq!(app.get(&by_tag(tags[0])).await.expect(200)["totalCount"], 0);
    }
}

/// A session at every maximum of its body; `v` names its tags, groups, bots,
/// operator, channel, campaign, phone and segment, and stretches its trails
/// (another `v` changes all of them, and its metrics).
fn session_at_most(v: usize, created: &str, contact: u64) -> Value {
    let start = shared::ids::parse_ts(created).unwrap();
    let at = |i: usize| shared::ids::format_ts(&(start + Duration::seconds((i * v) as i64)));
    let mut trails = Vec::new();
    for b in 0..5 {
        trails.push(
            json!({ "type": "bot", "at": at(trails.len()), "botId": format!("bot-{v}-{b}") }),
        );
    }
    for g in 0..5 {
        trails.push(json!({ "type": "queued", "at": at(trails.len()), "groupId": format!("group-{v}-{g}") }));
    }
    let operator = format!("operator-{v}");
    trails.push(json!({ "type": "assigned", "at": at(trails.len()), "operatorId": operator, "groupId": format!("group-{v}-4") }));
    while trails.len() < 499 {
        trails.push(if trails.len() % 2 == 0 {
            json!({ "type": "message", "at": at(trails.len()), "from": "contact" })
        } else {
            json!({ "type": "message", "at": at(trails.len()), "from": "operator", "operatorId": operator })
        });
    }
    trails.push(json!({ "type": "finished", "at": at(trails.len()) }));
    json!({
        "createdAt": created,
        "conversation": {
            "id": 900, "contactId": contact, "contactPhone": format!("11 9{:08}", 80_000_000 + v),
            "channelId": format!("channel-{v}"), "channelType": "whatsapp",
        },
        "segmentId": format!("segment-{v}"),
        "trails": trails,
        "tags": (0..20).map(|i| 100 * v + i).collect::<Vec<usize>>(),
        "followers": (0..50).collect::<Vec<usize>>(),
        "scheduledMessages": (0..50).collect::<Vec<usize>>(),
        "deals": { "ids": (0..20).map(|i| 1000 + i).collect::<Vec<usize>>(), "won": true },
        "campaignId": format!("campaign-{v}"),
        "rating": 5,
    })
}

api_test! {
    /// A session at every maximum (500 trails through 5 groups and 5 bots, 20
    /// tags, 50 followers and scheduled messages, 20 deals, a contact's
    /// conversation in a segment), then replaced with every one of them
    /// changed; the report filtered by 20 values of each list filter over a
    /// window of 93 days finds it. Past a maximum, a 400. Replaced on
    /// another day with all that changing too, its index items and rollups
    /// move twice: 101 items, the documented 400 that asks for two steps.
    async fn a_session_at_its_maximum(app) {
        let values = max("values of a report's list filter");
        let days = max("days of a report's window") as i64;
        assert_eq!((max("trails of a session"), max("tags of a session"), max("groups a session goes through")), (500, 20, 5));
        let contact = app.a_contact().await;
        let created = shared::ids::format_ts(&(chrono::Utc::now() - Duration::days(3)));
        let path = "/v3/reports/sessions/at-most";
        let put = |body: Value| app.send(http::Method::PUT, path, Some(api_tests::ADMIN_TOKEN), Some(body));

        for (field, more) in [("tags", json!(1000)), ("followers", json!(1000)), ("scheduledMessages", json!(1000)), ("trails", json!({ "type": "reopened", "at": created }))] {
            let mut body = session_at_most(1, &created, contact);
            body[field].as_array_mut().unwrap().push(more);
            put(body).await.expect_field_error(field);
        }
        let mut body = session_at_most(1, &created, contact);
        body["deals"]["ids"].as_array_mut().unwrap().push(json!(2000));
        put(body).await.expect_field_error("deals.ids");
        let mut body = session_at_most(1, &created, contact);
        body["trails"][10]["groupId"] = json!("a sixth group"); // the assignment's
        put(body).await.expect_field_error("trails");

        put(session_at_most(1, &created, contact)).await.expect(201);
        let replaced = put(session_at_most(2, &created, contact)).await.expect(200);
        assert_eq!((replaced["operatorId"].clone(), replaced["tags"][0].clone()), (json!("operator-2"), json!(200)));

        let any_of = |name: &str, found: String, other: &dyn Fn(usize) -> String| -> String {
            std::iter::once(found).chain((1..values).map(other)).map(|v| format!("{name}={v}")).collect::<Vec<_>>().join("&")
        };
        let now = chrono::Utc::now();
        let query = [
            any_of("tags", "219".into(), &|i: usize| (5000 + i).to_string()),
            any_of("channels", "channel-2".into(), &|i: usize| format!("channel-x{i}")),
            any_of("groups", "group-2-0".into(), &|i: usize| format!("group-x{i}")),
            any_of("assigned", "operator-2".into(), &|i: usize| format!("operator-x{i}")),
            any_of("bots", "bot-2-4".into(), &|i: usize| format!("bot-x{i}")),
            format!("from={}&to={}", shared::ids::format_ts(&(now - Duration::days(days))), shared::ids::format_ts(&now)),
        ]
        .join("&");
        let report = app.get(&format!("/v3/reports/sessions?{query}")).await.expect(200);
        assert_eq!(report["totalCount"], 1, "{report}");
        let too_many = any_of("tags", "219".into(), &|i: usize| (5000 + i).to_string()) + "&tags=1";
        app.get(&format!("/v3/reports/sessions?{too_many}")).await.expect_error(400);
        let wide = format!("from={}&to={}", shared::ids::format_ts(&(now - Duration::days(days + 1))), shared::ids::format_ts(&now));
        app.get(&format!("/v3/reports/sessions?{wide}")).await.expect_error(400);

        // Another day, and everything else changed too: two steps.
        let later = shared::ids::format_ts(&(chrono::Utc::now() - Duration::days(2)));
        let refused = put(session_at_most(3, &later, contact)).await.expect_error(400);
        assert!(refused["message"].as_str().unwrap().contains("two steps"), "{refused}");
        assert_eq!(app.get(path).await.expect(200), replaced, "a refused change writes nothing");
    }
}

api_test! {
    /// 100 widgets, each computed in one snapshot; 101 are a 400.
    async fn a_dashboard_at_its_maximum(app) {
        let n = max("widgets of a dashboard");
        let metrics = ["contactsCreated", "dealsCreated", "dealsWon", "sessionsStarted", "conversionRate", "avgTma"];
        let layout: Vec<Value> = (0..=n)
            .map(|i| json!({ "i": format!("w{i}"), "x": i % 12, "y": i / 12, "w": 1, "h": 1, "metric": metrics[i % metrics.len()] }))
            .collect();
        app.post("/v3/dashboards", json!({ "name": "Everything", "layout": layout })).await.expect_field_error("layout");
        let d = app.post("/v3/dashboards", json!({ "name": "Everything", "layout": layout[..n].to_vec() })).await.expect(201);
        let id = d["id"].as_str().unwrap().to_owned();
        let s = app.post(&format!("/v3/dashboards/{id}/snapshots"), json!({ "authorId": 1, "authorName": "Ana" })).await.expect(201);
        let snapshot = format!("/v3/dashboards/{id}/snapshots/{}", s["id"].as_str().unwrap());
        let mut done = Value::Null;
        for _ in 0..600 {
            done = app.get(&snapshot).await.expect(200);
            if done["status"]["state"] == "done" {
                break;
            }
            tokio::time::sleep(Wait::from_millis(50)).await;
        }
        assert_eq!(done["status"]["state"], "done", "{done}");
        let data = done["data"].as_object().unwrap();
        for i in 0..n {
            let widget = &data[&format!("w{i}")];
            assert!(widget["metric"].is_string() && widget.get("error").is_none(), "widget w{i}: {widget}");
        }
    }
}

api_test! {
    /// 20 endpoints, each of 50 event types: one event makes 20 deliveries;
    /// a 21st endpoint is a 409 and 51 types are a 400.
    async fn webhooks_at_their_maximum(app) {
        let (types, endpoints) = (max("event types of a webhook endpoint"), max("webhook endpoints of a workspace"));
        let all = shared::domain::events::TYPES;
        let url = |i: usize| format!("https://203.0.114.{}/hooks", i + 1);
        app.post("/v3/webhooks", json!({ "url": url(0), "types": all[..types + 1].to_vec() })).await.expect_field_error("types");
        let mut paths = Vec::new();
        for i in 0..endpoints {
            let created = app.post("/v3/webhooks", json!({ "url": url(i), "types": all[..types].to_vec() })).await.expect(201);
            assert_eq!(created["types"].as_array().unwrap().len(), types);
            paths.push(format!("/v3/webhooks/{}", created["id"].as_str().unwrap()));
        }
        app.post("/v3/webhooks", json!({ "url": url(endpoints), "types": ["*"] })).await.expect_error(409);
        app.patch(&paths[0], json!({ "types": all[1..types + 2].to_vec() })).await.expect_field_error("types");
        app.patch(&paths[0], json!({ "types": all[1..types + 1].to_vec() })).await.expect(200);

        app.post("/v3/tags", json!({ "name": "Delivered twenty times" })).await.expect(201);
        let ws = shared::ids::WorkspaceId(1);
        let log = shared::domain::events::log_page(app.store.as_ref(), ws, None, None, 1000).await.unwrap();
        let tag: Vec<shared::record::Event> = log.data.into_iter().filter(|e| e.kind == "tag.created").collect();
        let queue = api_tests::RecordingQueue::default();
        assert_eq!(shared::domain::webhooks::dispatch(app.store.as_ref(), &queue, ws, &tag).await.unwrap(), endpoints);
    }
}

api_test! {
    /// A replay reads 500 events a call and queues a delivery of each the
    /// endpoint wants (500 imported rows, so two calls); a page of its log
    /// holds 100 deliveries, and 101 is a 400.
    async fn a_replay_at_its_maximum(app) {
        let per_call = max("events a replay reads");
        let page = max("deliveries of a log page (`limit`)");
        let hook = app.post("/v3/webhooks", json!({ "url": "https://203.0.114.9/hooks", "types": ["contact.created"], "importRows": true })).await.expect(201);
        let path = format!("/v3/webhooks/{}", hook["id"].as_str().unwrap());
        let since = shared::ids::format_ts(&chrono::Utc::now());
        imported(&app, phone_book(per_call, |i| format!("r{i}@example.com"))).await;
        // Deliveries queued, not sent: what is measured is the replay's own work.
        let queue = Arc::new(api_tests::RecordingQueue::default());
        let mut app = app;
        app.router = crm::app(
            shared::http::AppState::new(app.store.clone())
                .with_queue(queue.clone())
                .with_webhooks(api_tests::webhook_settings())
                .with_limiter(shared::ratelimit::Limiter::off()),
        );
        let first = app.post(&format!("{path}/replay"), json!({ "since": since })).await.expect(200);
        assert_eq!(first["hasMore"], true, "{first}");
        let mut queued = first["queued"].as_u64().unwrap() as usize;
        assert!(queued + 3 >= per_call, "{first}");
        let mut after = first["nextCursor"].as_str().unwrap().to_owned();
        for _ in 0..3 {
            let next = app.post(&format!("{path}/replay"), json!({ "since": since, "after": after })).await.expect(200);
            queued += next["queued"].as_u64().unwrap() as usize;
            if next["hasMore"] != true {
                break;
            }
            after = next["nextCursor"].as_str().unwrap().to_owned();
        }
        assert_eq!(queued, per_call, "every imported row, once");
        assert_eq!(queue.0.lock().unwrap().len(), per_call);
        let log = app.get(&format!("{path}/deliveries?limit={page}")).await.expect(200);
        assert_eq!(log["data"].as_array().unwrap().len(), page);
        app.get(&format!("{path}/deliveries?limit={}", page + 1)).await.expect_field_error("limit");
    }
}

api_test! {
    /// Ten asset URLs, at creation and in a change; eleven are a 400.
    async fn a_campaign_at_its_maximum(app) {
        let n = max("asset URLs of a campaign");
        let urls: Vec<String> = (0..=n).map(|i| format!("https://cdn.example.com/asset-{i}.png")).collect();
        app.post("/v3/campaigns", json!({ "name": "Launch", "assetsUrls": urls })).await.expect_field_error("assetsUrls");
        let c = app.post("/v3/campaigns", json!({ "name": "Launch", "assetsUrls": urls[..n].to_vec() })).await.expect(201);
        assert_eq!(c["assetsUrls"].as_array().unwrap().len(), n);
        let path = format!("/v3/campaigns/{}", c["id"].as_str().unwrap());
        app.patch(&path, json!({ "assetsUrls": urls })).await.expect_field_error("assetsUrls");
        let patched = app.patch(&path, json!({ "assetsUrls": urls[1..].to_vec() })).await.expect(200);
        assert_eq!(patched["assetsUrls"], json!(urls[1..].to_vec()));
    }
}

api_test! {
    /// A business hour of 70 intervals and 366 holidays loads and reads back;
    /// one more of either is refused.
    async fn business_hours_at_their_maximum(app) {
        let (intervals, holidays) = (max("opening intervals of a business hour"), max("holidays of a business hour"));
        let interval = |i: usize| json!({ "day": i % 7, "start": format!("{:02}:00", i / 7), "end": format!("{:02}:30", i / 7) });
        let holiday = |i: usize| (chrono::NaiveDate::from_ymd_opt(2027, 1, 1).unwrap() + chrono::Days::new(i as u64)).to_string();
        let line = |n: usize, m: usize| json!({
            "type": "businessHour", "id": 1, "name": "Always", "timezone": "America/Sao_Paulo",
            "intervals": (0..n).map(&interval).collect::<Vec<_>>(), "holidays": (0..m).map(&holiday).collect::<Vec<_>>(),
        });
        assert!(app.load_line(1, line(intervals + 1, holidays)).await.is_err());
        assert!(app.load_line(1, line(intervals, holidays + 1)).await.is_err());
        app.load_line(1, line(intervals, holidays)).await.unwrap();
        let read = app.get("/v3/business-hours/1").await.expect(200);
        assert_eq!((read["intervals"].as_array().unwrap().len(), read["holidays"].as_array().unwrap().len()), (intervals, holidays));
    }
}

api_test! {
    /// Pages at their largest `limit` over 500 imported contacts (every
    /// e-mail held twice): a /v3 page of 500, a /v1 page of 100, a feed page
    /// of 500 events, a duplicates page of 100 groups; `offset + limit` at
    /// 10,000. One past each is a 400.
    async fn pages_at_their_maximum(app) {
        let (app, clock) = app.with_manual_clock();
        let page = max("records of a /v3 page (`limit`)");
        let window = max("`offset + limit` of a /v3 list");
        let v1 = max("records of a /v1 page (`limit`)");
        let events = max("events of a feed or history page (`limit`)");
        let groups = max("groups of a duplicates page (`limit`)");
        imported(&app, phone_book(page, |i| format!("dup{}@example.com", i % (page / 2)))).await;

        let listed = app.get(&format!("/v3/contacts?limit={page}")).await.expect(200);
        assert_eq!((listed["data"].as_array().unwrap().len(), listed["totalCount"].clone()), (page, json!(page)));
        app.get(&format!("/v3/contacts?limit={}", page + 1)).await.expect_field_error("limit");
        let deep = app.get(&format!("/v3/contacts?limit={page}&offset={}", window - page)).await.expect(200);
        assert_eq!(deep["data"], json!([]));
        app.get(&format!("/v3/contacts?limit={page}&offset={}", window - page + 1)).await.expect_field_error("offset");
        let first = app.get(&format!("/v1/contacts?limit={v1}")).await.expect(200);
        assert_eq!(first["data"].as_array().unwrap().len(), v1);
        app.get(&format!("/v1/contacts?limit={}", v1 + 1)).await.expect_field_error("limit");

        clock.advance(Duration::minutes(5)); // every event settled
        let feed = app.get(&format!("/v3/events?limit={events}")).await.expect(200);
        assert_eq!((feed["data"].as_array().unwrap().len(), feed["hasMore"].clone()), (events, json!(true)));
        app.get(&format!("/v3/events?limit={}", events + 1)).await.expect_field_error("limit");
        let contact = listed["data"][0]["id"].as_str().unwrap();
        app.get(&format!("/v3/contacts/{contact}/history?limit={events}")).await.expect(200);
        app.get(&format!("/v3/contacts/{contact}/history?limit={}", events + 1)).await.expect_field_error("limit");

        let duplicates = app.get(&format!("/v3/contacts/duplicates?limit={groups}")).await.expect(200);
        assert_eq!(duplicates["data"].as_array().unwrap().len(), groups);
        app.get(&format!("/v3/contacts/duplicates?limit={}", groups + 1)).await.expect_field_error("limit");
    }
}

api_test! {
    /// Sizes at their limit to the byte: a body of 512 KB (an import), a
    /// request target of 8 KB, a redirect payload of 8 KB and welcome
    /// variables of 4 KB of JSON; one byte more is refused.
    async fn sizes_at_their_maximum(app) {
        let body_limit = max("bytes of a request body");
        assert_eq!(body_limit, shared::http::BODY_LIMIT);
        let mut contacts = phone_book(500, |i| format!("big{i}@example.com"));
        for c in &mut contacts {
            c["customFields"] = json!({ "pad": "" });
        }
        let short = body_limit - json!({ "contacts": contacts }).to_string().len();
        let n = contacts.len();
        for (i, c) in contacts.iter_mut().enumerate() {
            c["customFields"]["pad"] = json!("x".repeat(short / n + usize::from(i < short % n)));
        }
        let body = json!({ "contacts": contacts });
        assert_eq!(body.to_string().len(), body_limit);
        app.post("/v3/contacts/import", body).await.expect(201);
        // One byte more: `errors::oversized_bodies_are_413`.

        let target_limit = max("bytes of a request target");
        let target = |len: usize| format!("/v3/tags?name={}", "x".repeat(len - "/v3/tags?name=".len()));
        let at = app.get(&target(target_limit)).await;
        assert_ne!(at.status.as_u16(), 414, "{}", at.body);
        app.get(&target(target_limit + 1)).await.expect_error(414);

        // `{"x":"…"}` is 8 bytes and the string.
        let payload = max("bytes of a redirect session's payload (JSON)");
        let redirect = |n: usize| json!({ "targetUrl": "https://app.example.com/welcome", "payload": { "x": "y".repeat(n - 8) } });
        app.post("/v3/redirect-session", redirect(payload)).await.expect(201);
        app.post("/v3/redirect-session", redirect(payload + 1)).await.expect_field_error("payload");
        let variables = max("bytes of a welcome message's variables (JSON)");
        let welcome = |n: usize| json!({ "phone": "11987654321", "templateId": "welcome_v2", "variables": { "x": "y".repeat(n - 8) } });
        app.post("/v3/workspaces/send-welcome-message", welcome(variables)).await.expect(201);
        app.post("/v3/workspaces/send-welcome-message", welcome(variables + 1)).await.expect_field_error("variables");
    }
}

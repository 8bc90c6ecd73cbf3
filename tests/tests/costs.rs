//! What each endpoint costs in table operations, on both backends, and in
//! capacity units as DynamoDB Local reports them (ConsumedCapacity, ScannedCount).
//!
//! Every authenticated request reads the token's secret item: one strongly
//! consistent GetItem, 1 RCU, before its own reads or (a GET with a token of the
//! current format) beside them. The numbers below include it.

use api_tests::serde_json::json;
use api_tests::{TestApp, api_test};
use shared::auth::Caller;
use shared::store::MetricsSnapshot;

/// The cost of one request.
async fn cost_of<F, Fut>(app: &TestApp, request: F) -> MetricsSnapshot
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let before = app.metrics();
    request().await;
    app.metrics() - before
}

/// Capacity units: DynamoDB Local's ConsumedCapacity, and the embedded store's
/// computation of the same (4 KB read units, halved when eventually consistent).
#[track_caller]
fn assert_units(app: &TestApp, what: &str, measured: f64, expected: f64) {
    assert!(
        (measured - expected).abs() < 1e-9,
        "{what} on {:?}: {measured} units, expected {expected}",
        app.backend
    );
}

api_test! {
    /// A tag by id is one GetItem of 0.5 RCU (eventually consistent, under 4 KB).
    async fn a_tag_by_id_is_one_get_item(app) {
        let tag = app.post("/v3/tags", json!({ "name": "VIP" })).await.expect(201);
        let id: u64 = tag["id"].as_str().unwrap().parse().unwrap();
        let caller = Caller::system(1, "test");
        let cost = cost_of(&app, || async {
            shared::domain::tags::get(app.store.as_ref(), &caller, shared::ids::TagId(id)).await.unwrap();
        })
        .await;
        assert_eq!((cost.gets, cost.queries, cost.batch_gets), (1, 0, 0));
        assert_units(&app, "tag by id", cost.read_units, 0.5);

        let path = format!("/v3/tags/{id}");
        let cost = cost_of(&app, || async { app.get(&path).await.expect(200); }).await;
        assert_eq!((cost.gets, cost.queries, cost.batch_gets), (2, 0, 0), "token + tag");
        assert_units(&app, "GET /v3/tags/{id}", cost.read_units, 1.5);
        assert_eq!(cost.writes + cost.transactions, 0, "a read writes nothing");

        // A token of the current format: the same two GetItems and units, sent
        // together instead of one after the other (tests/auth.rs).
        let created = app.post("/v3/api-tokens", json!({ "name": "reader" })).await.expect(201);
        let token = created["token"].as_str().unwrap();
        let cost = cost_of(&app, || async { app.as_token(token).get(&path).await.expect(200); }).await;
        assert_eq!((cost.gets, cost.queries, cost.batch_gets), (2, 0, 0), "token + tag");
        assert_units(&app, "GET /v3/tags/{id}, current token", cost.read_units, 1.5);
    }
}

api_test! {
    /// A list page is one Query plus the counter's GetItem, whatever the size of
    /// the workspace: shown with the same request at two sizes.
    async fn a_tag_list_page_does_not_grow_with_the_workspace(app) {
        let mut costs = Vec::new();
        for size in [6, 60] {
            let have = app.get("/v3/tags").await.expect(200)["totalCount"].as_u64().unwrap();
            for i in have..size {
                app.post("/v3/tags", json!({ "name": format!("tag {i}") })).await.expect(201);
            }
            let cost = cost_of(&app, || async {
                let page = app.get("/v3/tags?limit=5").await.expect(200);
                assert_eq!(page["totalCount"], json!(size));
                assert_eq!(page["data"].as_array().unwrap().len(), 5);
            })
            .await;
            assert_eq!((cost.gets, cost.queries), (2, 1), "token + counter, one Query");
            assert_eq!(cost.scanned, 5, "the Query reads the page only");
            costs.push(cost.read_units);
        }
        assert_eq!(costs[0], costs[1], "same cost at 6 and 60 tags");
        assert_units(&app, "GET /v3/tags?limit=5", costs[0], 2.0);

        let cost = cost_of(&app, || async { app.get("/v1/tags?limit=5").await.expect(200); }).await;
        assert_eq!((cost.gets, cost.queries), (1, 1), "token, one Query");
        assert_eq!(cost.scanned, 6, "the page and one item to know whether more follow");
    }
}

api_test! {
    /// A create is one transaction: the tag, its name sentinel, the counter, the audit
    /// entry and the audit counters, and the tag's event: what a mutation pays
    /// for its event is that one item (and, on AWS, its history's index entry).
    async fn a_tag_create_is_one_transaction(app) {
        let cost = cost_of(&app, || async { app.post("/v3/tags", json!({ "name": "VIP" })).await.expect(201); }).await;
        assert_eq!((cost.transactions, cost.writes), (1, 0));
        assert_eq!(cost.reads(), 1, "the token only");
        // Seven items under 1 KB: 7 WCU as the embedded store counts them (AWS
        // bills a transaction twice, 14 WCU, plus 1 each for the index entries
        // of the audit entry and of the event: 16). DynamoDB Local reports 6
        // for a transaction whatever its items (docs/design.md, "Cost").
        let expected = if app.backend == api_tests::Backend::DynamoDb { 6.0 } else { 7.0 };
        assert_units(&app, "POST /v3/tags", cost.write_units, expected);
    }
}

api_test! {
    /// An offset page steps over the offset with key-only reads of the same range,
    /// bounded by offset + limit <= 10,000.
    async fn an_offset_page_reads_offset_plus_limit_items(app) {
        for i in 0..30 {
            app.post("/v3/tags", json!({ "name": format!("tag {i}") })).await.expect(201);
        }
        let cost = cost_of(&app, || async { app.get("/v3/tags?limit=5&offset=20").await.expect(200); }).await;
        assert_eq!(cost.queries, 2, "one key-only step, one page");
        assert_eq!(cost.scanned, 25);
    }
}

/// Adds contacts until the workspace holds `size` (names "Filler n", no phone).
async fn grow_contacts(app: &TestApp, size: u64) {
    let have = app.get("/v3/contacts").await.expect(200)["totalCount"]
        .as_u64()
        .unwrap();
    for i in have..size {
        app.post("/v3/contacts", json!({ "name": format!("Filler {i}") }))
            .await
            .expect(201);
    }
}

api_test! {
    /// A contact by id is one GetItem; find-or-create of a known phone reads a fixed
    /// number of items (BatchGet of the phone keys, the phone sentinel, the contact).
    async fn contact_reads_by_key_are_fixed(app) {
        let c = app.post("/v3/contacts", json!({ "name": "Key", "phone": "11987654321" })).await.expect(201);
        let path = format!("/v3/contacts/{}", c["id"].as_str().unwrap());
        let mut costs = Vec::new();
        for size in [5, 40] {
            grow_contacts(&app, size).await;
            let get = cost_of(&app, || async { app.get(&path).await.expect(200); }).await;
            assert_eq!((get.gets, get.queries, get.batch_gets), (2, 0, 0), "token + contact");
            let found = cost_of(&app, || async {
                app.post("/v3/contacts/find-or-create", json!({ "phones": ["(11) 8765-4321", "21 3333-4444"] })).await.expect(201);
            }).await;
            assert_eq!((found.gets, found.batch_gets, found.queries, found.transactions), (3, 1, 0, 0));
            costs.push((get.read_units, found.read_units));
        }
        assert_eq!(costs[0], costs[1], "the same at 5 and 40 contacts");
    }
}

api_test! {
    /// A name search, a phone search, a window and a /v1 page read what they return
    /// plus index items, whatever the size of the workspace.
    async fn contact_lists_do_not_grow_with_the_workspace(app) {
        for name in ["Zeca Alpha", "Zuleica Beta"] {
            app.post("/v3/contacts", json!({ "name": name })).await.expect(201);
        }
        // A window that holds the two contacts above and none of the fillers below.
        let from = (chrono::Utc::now() - chrono::Duration::minutes(30)).format("%Y-%m-%dT%H:%M:%S%.3fZ");
        let to = chrono::Utc::now().format("%Y-%m-%dT%H:%M:%S%.3fZ");
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        let requests = [
            "/v3/contacts?search=zul".to_owned(),
            "/v3/contacts?search=11912345678".to_owned(),
            format!("/v3/contacts/all?createdAtFrom={from}&createdAtTo={to}&limit=5"),
            "/v1/contacts?limit=5".to_owned(),
            "/v3/contacts?limit=5".to_owned(),
            "/v3/contacts?sortField=name&sortOrder=ascend&limit=5".to_owned(),
        ];
        let mut at = Vec::new();
        for size in [10, 60] {
            grow_contacts(&app, size).await;
            let mut costs = Vec::new();
            for path in &requests {
                let cost = cost_of(&app, || async { app.get(path).await.expect(200); }).await;
                costs.push((cost.gets, cost.batch_gets, cost.queries, cost.scanned));
            }
            at.push(costs);
        }
        let (small, large) = (&at[0], &at[1]);
        for (i, path) in requests.iter().enumerate() {
            assert_eq!(small[i], large[i], "{path} costs the same at 10 and 60 contacts");
        }
        assert_eq!(small[2], (1, 0, 2, 4), "window: token, a page Query and a key-only count of the window's 2");
        assert_eq!(small[0], (1, 1, 1, 1), "search=zul: token, one index Query of 1 key, one BatchGet");
        assert_eq!(small[3], (1, 0, 1, 6), "/v1 page: token, one Query of limit + 1");
    }
}

api_test! {
    /// The common deal lists cost the same at two workspace sizes: an unfiltered
    /// page is one Query and the counter; a filtered one reads the partition of its
    /// narrowest filter (and none of the deals the filters exclude) and the page.
    async fn deal_lists_read_the_narrowest_index(app) {
        let contact: u64 = app.post("/v3/contacts", json!({ "name": "Buyer" })).await.expect(201)["id"].as_str().unwrap().parse().unwrap();
        let deal = |stage: &str, status: &str, operator: u64| json!({
            "name": "d", "value": 1, "status": status, "contactId": contact, "operatorId": operator, "groupId": 1,
            "pipelineId": "p", "stageId": stage, "origin": "o", "tagIds": []
        });
        for _ in 0..6 {
            app.post("/v3/deals", deal("s1", "won", 7)).await.expect(201);
        }
        let lists = [
            "/v3/deals?roleId=1&isOwner=true&userId=7&limit=5",
            "/v3/deals?roleId=1&isOwner=false&userId=7&limit=5",
            "/v3/deals?roleId=1&isOwner=true&userId=7&status=won&limit=5",
            "/v3/deals?roleId=1&isOwner=true&userId=7&stageId=s1&status=won&limit=5",
        ];
        let mut at = Vec::new();
        for extra in [0, 40] {
            for _ in 0..extra {
                app.post("/v3/deals", deal("s2", "open", 8)).await.expect(201);
            }
            let mut costs = Vec::new();
            for path in lists {
                let cost = cost_of(&app, || async { app.get(path).await.expect(200); }).await;
                costs.push((cost.gets, cost.batch_gets, cost.queries, cost.scanned));
            }
            at.push(costs);
        }
        for (i, path) in lists.iter().enumerate() {
            assert_eq!(at[0][i], at[1][i], "{path} at 6 and 46 deals");
        }
        assert_eq!(at[0][0], (1, 1, 1, 5), "unfiltered: token, one BatchGet of the counter's 4 shards, one Query of the page");
        assert_eq!(at[0][2], (1, 1, 1, 6), "status: token, the status partition's 6 digests, one BatchGet of the page");
    }
}

api_test! {
    /// The account routes read one item or one page: a checkout link, a welcome
    /// message and a redirect session by key are one GetItem after the token's;
    /// the orders page is one Query plus the counter at any number of orders;
    /// the churn-reason list is one Query of its bounded partition.
    async fn account_reads_are_one_get_or_one_page(app) {
        let link = app.post("/v3/workspaces/checkout-link", json!({ "plan": "pro" })).await.expect(201);
        let path = format!("/v3/workspaces/checkout-link/{}", link["code"].as_str().unwrap());
        let cost = cost_of(&app, || async { app.get(&path).await.expect(200); }).await;
        assert_eq!((cost.gets, cost.queries, cost.batch_gets), (2, 0, 0), "token + link");

        let message = app.post("/v3/workspaces/send-welcome-message", json!({ "phone": "11987654321", "text": "Hi" })).await.expect(201);
        let path = format!("/v3/workspaces/welcome-messages/{}", message["id"].as_str().unwrap());
        let cost = cost_of(&app, || async { app.get(&path).await.expect(200); }).await;
        assert_eq!((cost.gets, cost.queries, cost.batch_gets), (2, 0, 0), "token + message");

        let session = app.post("/v3/redirect-session", json!({ "targetUrl": "https://a.example.com" })).await.expect(201);
        let path = format!("/v3/redirect-session/{}", session["key"].as_str().unwrap());
        let cost = cost_of(&app, || async { app.get(&path).await.expect(200); }).await;
        assert_eq!((cost.gets, cost.queries, cost.batch_gets), (2, 0, 0), "token + session");
        assert_eq!(cost.transactions, 1, "the read deletes it, with its audit entry");

        let mut costs = Vec::new();
        for size in [2u64, 12] {
            while app.get("/v3/orders").await.expect(200)["totalCount"].as_u64().unwrap() < size {
                let code = app.post("/v3/workspaces/checkout-link", json!({ "plan": "pro" })).await.expect(201)["code"].as_str().unwrap().to_owned();
                app.post(&format!("/v3/workspaces/checkout-link/{code}/complete"), json!({})).await.expect(201);
            }
            let cost = cost_of(&app, || async { app.get("/v3/orders?limit=2").await.expect(200); }).await;
            assert_eq!((cost.gets, cost.queries), (2, 1), "token + counter, one Query");
            assert_eq!(cost.scanned, 2, "the page only");
            costs.push(cost.read_units);
        }
        assert_eq!(costs[0], costs[1], "same cost at 2 and 12 orders");

        app.post("/v3/workspaces/churn-reasons/suggestions", json!({ "reasons": ["a b c", "d e f"] })).await.expect(201);
        let cost = cost_of(&app, || async { app.get("/v3/workspaces/churn-reasons/suggestions").await.expect(200); }).await;
        assert_eq!((cost.gets, cost.queries), (1, 1), "token, one Query");
    }
}

/// A session opened `hours` ago, of operator `ana` or `rui`, tagged 7 and
/// finished when `i` is even.
fn a_session(i: usize, hours: i64) -> api_tests::serde_json::Value {
    let start = chrono::Utc::now() - chrono::Duration::hours(hours);
    let t = |m: i64| shared::ids::format_ts(&(start + chrono::Duration::minutes(m)));
    let operator = if i.is_multiple_of(2) { "ana" } else { "rui" };
    let mut trails = vec![
        json!({ "type": "queued", "at": t(1), "groupId": "support" }),
        json!({ "type": "assigned", "at": t(3), "operatorId": operator }),
        json!({ "type": "message", "at": t(4), "from": "operator", "operatorId": operator }),
    ];
    if i.is_multiple_of(2) {
        trails.push(json!({ "type": "finished", "at": t(20) }));
    }
    json!({
        "createdAt": t(0),
        "conversation": { "id": 1000 + i, "contactPhone": format!("+5511990{i:06}"), "channelId": "whatsapp-1" },
        "tags": if i.is_multiple_of(2) { json!([7]) } else { json!([]) },
        "trails": trails,
    })
}

api_test! {
    /// A session report reads the period's key range of the narrowest index and
    /// loads only the page: the same reads at 50 and at 500 sessions, the 450
    /// added ones being older than the period. A session by id is one GetItem.
    async fn session_reports_do_not_grow_with_the_workspace(app) {
        let put = |i: usize, hours: i64| {
            let app = &app;
            async move {
                let r = app.send(http::Method::PUT, &format!("/v3/reports/sessions/s{i}"), Some(api_tests::ADMIN_TOKEN), Some(a_session(i, hours))).await;
                assert_eq!(r.status, 201, "{}", r.body);
            }
        };
        for i in 0..50 {
            put(i, 2 + i as i64).await;
        }
        let queries = [
            "period=week&limit=10",
            "period=week&assigned=ana&limit=10",
            "period=week&tags=7&isFinished=true&limit=10",
            "contactPhone=11990000003",
            "conversationId=1003",
        ];
        let mut costs = Vec::new();
        for size in [50, 500] {
            for i in if size == 50 { 50..50 } else { 50..500 } {
                put(i, 24 * 60 + i as i64).await;
            }
            let mut at_size = Vec::new();
            for query in queries {
                let path = format!("/v3/reports/sessions?{query}");
                let cost = cost_of(&app, || async { app.get(&path).await.expect(200); }).await;
                assert_eq!(cost.gets, 1, "{query}: the token");
                assert!(cost.batch_gets <= 1, "{query}: one BatchGetItem for the page");
                at_size.push((query, cost.queries, cost.scanned, cost.read_units));
            }
            let cost = cost_of(&app, || async { app.get("/v3/reports/sessions/s3").await.expect(200); }).await;
            assert_eq!((cost.gets, cost.queries, cost.batch_gets), (2, 0, 0), "token + session");
            at_size.push(("by id", cost.queries, cost.scanned, cost.read_units));
            costs.push(at_size);
        }
        assert_eq!(costs[0], costs[1], "the same reads at 50 and 500 sessions");
        let week = app.get("/v3/reports/sessions?period=week&limit=10").await.expect(200);
        assert_eq!(week["totalCount"], 50);
        assert_eq!(app.get("/v3/reports/sessions?from=2000-01-01T00:00:00Z&to=2000-02-01T00:00:00Z").await.expect(200)["totalCount"], 0);
    }
}

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

api_test! {
    /// A page of the event feed is one Query that reads at most `limit` events,
    /// whatever the workspace holds (here 20, then 60).
    async fn an_event_page_reads_limit_events_at_any_size(app) {
        let (app, clock) = app.with_manual_clock();
        let mut costs = Vec::new();
        for round in 0..2 {
            for i in 0..20 * (1 + 2 * round) {
                app.post("/v3/tags", json!({ "name": format!("r{round}-{i}") })).await.expect(201);
            }
            clock.advance(chrono::Duration::seconds(16));
            let cost = cost_of(&app, || async { app.get("/v3/events?limit=5").await.expect(200); }).await;
            costs.push(cost);
        }
        for cost in &costs {
            assert_eq!((cost.gets, cost.queries), (1, 1), "the token, one Query: {cost:?}");
            assert_eq!(cost.scanned, 5, "{cost:?}");
        }
        assert_eq!(costs[0].read_units, costs[1].read_units);
    }
}

api_test! {
    /// What a webhook delivery costs the table: dispatching a batch of events
    /// reads the workspace's endpoints once (one Query) and writes one item
    /// per delivery; an attempt reads the endpoint and its health, takes a
    /// slot, claims the delivery, reads the event, records the outcome and
    /// frees the slot. None of it grows with the workspace.
    async fn a_webhook_delivery_costs_a_few_items(app) {
        use shared::domain::{events, webhooks};
        let receiver = api_tests::receiver::Receiver::start().await;
        app.post("/v3/webhooks", json!({ "url": receiver.url, "types": ["tag.*"] })).await.expect(201);
        for i in 0..3 {
            app.post("/v3/tags", json!({ "name": format!("t{i}") })).await.expect(201);
        }
        let ws = shared::ids::WorkspaceId(1);
        let log = events::log_page(app.store.as_ref(), ws, None, None, 100).await.unwrap();
        let queue = api_tests::RecordingQueue::default();
        let cost = cost_of(&app, || async {
            assert_eq!(webhooks::dispatch(app.store.as_ref(), &queue, ws, &log.data).await.unwrap(), 3);
        })
        .await;
        assert_eq!((cost.queries, cost.gets, cost.writes, cost.transactions), (1, 0, 3, 0), "{cost:?}");
        assert_units(&app, "dispatch of 3", cost.write_units, 3.0);
        let message = queue.0.lock().unwrap()[0].clone();
        let settings = api_tests::webhook_settings();
        let cost = cost_of(&app, || async {
            webhooks::deliver(app.store.as_ref(), &queue, &settings, &message).await.unwrap();
        })
        .await;
        // The delivery and its event (2 GetItems), the endpoint, its health and
        // its owner's token record (one BatchGetItem); the slot taken and
        // freed, the claim, the outcome.
        assert_eq!((cost.gets, cost.batch_gets, cost.queries, cost.writes), (2, 1, 0, 4), "{cost:?}");
        assert_units(&app, "an attempt", cost.write_units, 4.0);
        assert_eq!(receiver.received().len(), 1);
    }
}

api_test! {
    /// What the rate limiter adds: per bucket (the token's and the
    /// workspace's), one BatchGetItem and one conditional put per lease (20
    /// requests, or a twentieth of a larger quota) or top-up (a lease, when
    /// a quarter is left): over 40 reads by id, 4 BatchGetItems and 4
    /// writes, one write per ten requests. The reads themselves are
    /// unchanged.
    async fn the_rate_limiter_costs_one_write_per_ten_requests(app) {
        let (app, _clock) = app.rate_limited(shared::ratelimit::Limits::DEFAULT);
        let tag = app.post("/v3/tags", json!({ "name": "VIP" })).await.expect(201);
        let path = format!("/v3/tags/{}", tag["id"].as_str().unwrap());
        let created = app.post("/v3/api-tokens", json!({ "name": "reader", "scopes": ["tags:read"] })).await.expect(201);
        let reader = app.as_token(created["token"].as_str().unwrap());
        let cost = cost_of(&app, || async {
            for _ in 0..40 {
                reader.get(&path).await.expect(200);
            }
            // The top-ups go on tasks of their own.
            app.limiter.as_ref().unwrap().settled().await;
        })
        .await;
        // The token's bucket (100 per 10 s) leases 20 at once, topped up by
        // 20 at the 15th and the 35th read. The workspace's (1,000 per 10 s)
        // leases a twentieth of its quota, 50, which the setup's first
        // request took, topped up once 12 are left.
        assert_eq!((cost.gets, cost.batch_gets, cost.writes, cost.transactions), (80, 4, 4, 0), "{cost:?}");
        assert_units(&app, "a lease and 3 top-ups", cost.write_units, 4.0);
    }
}

api_test! {
    /// A batch shares its commits: its operations' writes packed into as
    /// few transactions as DynamoDB allows (the counters they all move, one
    /// `ADD` of the sum), one durable commit on the embedded store; it reads
    /// what its operations read through their single routes, less the token
    /// check of every request but one; an upsert by phone reads the phone's
    /// sentinel (and the contact it names) before its write.
    async fn a_batch_costs_its_operations(app) {
        let operations: Vec<_> = (0..10).map(|i| json!({ "op": "create", "data": { "name": format!("b{i}") } })).collect();
        let batch = cost_of(&app, || async {
            app.post("/v3/tags/batch", json!({ "operations": operations })).await.expect(200);
        })
        .await;
        let singles = cost_of(&app, || async {
            for i in 0..10 {
                app.post("/v3/tags", json!({ "name": format!("s{i}") })).await.expect(201);
            }
        })
        .await;
        assert_eq!(singles.transactions, 10, "one transaction per request");
        assert_eq!(batch.transactions, 1, "ten creates in one transaction");
        assert_eq!(batch.gets + 9, singles.gets, "one token check, not ten");
        assert_eq!((batch.queries, batch.scanned), (0, 0));
        assert!(batch.write_units < singles.write_units, "shared counters: {batch:?} {singles:?}");

        // A hundred: the fewest transactions of at most 100 items, one commit
        // on the embedded store.
        let operations: Vec<_> = (0..100).map(|i| json!({ "op": "create", "data": { "name": format!("h{i}") } })).collect();
        let hundred = cost_of(&app, || async {
            app.post("/v3/tags/batch", json!({ "operations": operations })).await.expect(200);
        })
        .await;
        // Per tag: the tag, its name's sentinel, its event, the audit entry
        // (4 items); shared: the list's counter and the audit's, each one
        // shard for the whole batch (moves of a shard each would crowd out
        // a fifth of the creates).
        assert_eq!(hundred.transactions, 5, "{hundred:?}");
        if app.backend == api_tests::Backend::Embedded {
            assert_eq!(hundred.commits, 1, "one durable commit for the batch");
        }

        let upserts: Vec<_> = ["11987654321", "(11) 8765-4321"].iter().map(|p| json!({ "op": "upsert", "data": { "phone": p } })).collect();
        let cost = cost_of(&app, || async {
            app.post("/v3/contacts/batch", json!({ "operations": upserts })).await.expect(200);
        })
        .await;
        // The token; then a sentinel read for the first (none: a create), and
        // for the second the sentinel and the contact it names (strongly
        // consistent: the update's read); the second changes nothing, so it
        // writes nothing.
        assert_eq!((cost.gets, cost.queries, cost.batch_gets, cost.transactions), (4, 0, 0, 1), "{cost:?}");
    }
}

api_test! {
    /// A page of duplicates reads the shared marks, each shared e-mail's
    /// holders and their contacts: the same at 10 and 60 contacts. An
    /// e-mail costs a create one item more (its holder's sentinel).
    async fn duplicates_cost_what_they_return(app) {
        for _ in 0..2 {
            app.post("/v3/contacts", json!({ "email": "twice@example.com" })).await.expect(201);
        }
        let mut at = Vec::new();
        for size in [10, 60] {
            let have = app.get("/v3/contacts").await.expect(200)["totalCount"].as_u64().unwrap();
            for i in have..size {
                app.post("/v3/contacts", json!({ "email": format!("filler{i}@example.com") })).await.expect(201);
            }
            let cost = cost_of(&app, || async { app.get("/v3/contacts/duplicates").await.expect(200); }).await;
            at.push((cost.gets, cost.queries, cost.batch_gets, cost.scanned));
        }
        assert_eq!(at[0], at[1], "the same at 10 and 60 contacts");
        // The token; the marks (one) and the holders (two keys); the two contacts.
        assert_eq!(at[0], (1, 2, 1, 3));
    }
}

api_test! {
    /// A bulk import's cost per row is a batch create's and its mark: the
    /// same for the 1st and the 1,000th window (no read grows with the
    /// workspace, no Scan), and the file's reads are the store of files',
    /// not the table's. The figures of docs/bench-results.md: items and
    /// write units per contact.
    async fn a_bulk_import_costs_its_rows_and_a_checkpoint_a_window(app) {
        use shared::domain::bulk::import::{self, Run};
        let import_of = async |first: usize| -> shared::store::MetricsSnapshot {
            let job = app.post("/v3/imports", json!({"object": "contacts", "format": "jsonl"})).await.expect(201);
            let id = job["id"].as_str().unwrap().to_owned();
            let lines: String = (first..first + 200)
                .map(|i| format!("{{\"name\":\"Row {i}\",\"phone\":\"+55 31 9{:08}\",\"email\":\"row{i}@x.com\"}}\n", 40_000_000 + i))
                .collect();
            assert_eq!(app.put_file(job["uploadUrl"].as_str().unwrap(), lines.into_bytes()).await, 200);
            let queue = api_tests::RecordingQueue::default();
            let caller = shared::auth::Caller::system(1, "test");
            import::start(app.store.as_ref(), app.files.as_ref(), &queue, &caller, &id).await.unwrap();
            let run = Run { files: app.files.as_ref(), queue: None, deadline: None };
            cost_of(&app, || async {
                let done = import::process(app.store.as_ref(), &run, 1.into(), &id).await.unwrap();
                assert_eq!(done.created, 200);
            })
            .await
        };
        let items_before = app.every_item().await.len();
        let first = import_of(0).await;
        let items = app.every_item().await.len() - items_before;
        let later = import_of(10_000).await;
        assert_eq!((first.queries, first.scanned, later.queries, later.scanned), (0, 0, 0, 0), "{first:?}");
        assert_eq!(first.transactions, later.transactions, "{first:?} {later:?}");
        assert_eq!(first.gets, later.gets, "{first:?} {later:?}");
        // Per contact: the contact, its phone's sentinel, its e-mail's and
        // name words' index items, its event, its audit entry and the row's
        // mark (about 8.6 items); counters are shared by the window.
        assert!(items <= 9 * 200, "{items} items for 200 contacts");
        // DynamoDB Local does not report a transaction's capacity as DynamoDB
        // bills it; the embedded store computes DynamoDB's rule (2 units a
        // KB a transactional item).
        if app.backend == api_tests::Backend::Embedded {
            let per_row = first.write_units / 200.0;
            assert!(per_row < 10.0, "{per_row} write units per contact ({first:?})");
        }
    }
}

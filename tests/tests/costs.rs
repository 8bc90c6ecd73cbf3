//! What each endpoint costs in table operations, on both backends, and in
//! capacity units as DynamoDB Local reports them (ConsumedCapacity, ScannedCount).
//!
//! Every authenticated request reads the token's secret item: one strongly
//! consistent GetItem, 1 RCU, before its own reads or (a GET with a token of the
//! current format) beside them. The numbers below include it.
//!
//! These are the costs every group shares (a read by id, a create, offset
//! pages, the limiter, events, deliveries, batches, bulk jobs); each group's
//! lists are measured in its own test file, in a `costs` module at its end.

use api_tests::api_test;
use api_tests::costs::{assert_units, cost_of};
use api_tests::serde_json::json;
use shared::auth::Caller;

api_test! {
    /// A tag by id is one GetItem of 0.5 RCU (eventually consistent, under 4 KB).
    async fn a_tag_by_id_is_one_get_item(app) {
        let tag = app.post("/v3/tags", json!({ "name": "VIP" })).await.expect(201);
        let id: u64 = tag["id"].as_str().unwrap().parse().unwrap();
        let caller = Caller::system(1, "test");
        let cost = cost_of(&app, || async {
            shared::domain::tags::get(app.store.as_ref(), &caller, shared::keys::TagId(id)).await.unwrap();
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
    /// An offset page of one partition steps over the offset with key-only
    /// reads of the same range, bounded by offset + limit <= 10,000; a list
    /// kept over shards (tags) reads at most offset + limit of each shard
    /// however large the workspace.
    async fn an_offset_page_reads_offset_plus_limit_items(app) {
        for i in 0..30 {
            app.post("/v3/campaigns", json!({ "name": format!("campaign {i}") })).await.expect(201);
            app.post("/v3/tags", json!({ "name": format!("tag {i}") })).await.expect(201);
        }
        let cost = cost_of(&app, || async { app.get("/v3/campaigns?limit=5&offset=20").await.expect(200); }).await;
        assert_eq!(cost.queries, 2, "one key-only step, one page");
        assert_eq!(cost.scanned, 25);

        let page = app.get("/v3/tags?limit=5&offset=20").await.expect(200);
        assert_eq!(page["data"].as_array().unwrap().len(), 5);
        let cost = cost_of(&app, || async { app.get("/v3/tags?limit=5&offset=20").await.expect(200); }).await;
        assert!((8..=16).contains(&cost.queries) && cost.scanned <= 8 * 25, "{cost:?}");
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

api_test! {
    /// A page of the event feed reads the log's 8 shards at once, merged by
    /// cursor: 8 Queries, 16 at most (a second round is rare: `page::first_ask`),
    /// and at most 8 events a shard (the first round's 6 of the `limit` + 1
    /// wanted, and rarely a second), whatever the workspace holds (here 20
    /// events, then 120: more than a page could read if its cost grew with
    /// them).
    async fn an_event_page_reads_limit_events_at_any_size(app) {
        let (app, clock) = app.with_manual_clock();
        for (round, size) in [20, 100].into_iter().enumerate() {
            for i in 0..size {
                app.post("/v3/tags", json!({ "name": format!("r{round}-{i}") })).await.expect(201);
            }
            clock.advance(chrono::Duration::seconds(16));
            let cost = cost_of(&app, || async { app.get("/v3/events?limit=5").await.expect(200); }).await;
            assert_eq!(cost.gets, 1, "the token: {cost:?}");
            assert!((8..=16).contains(&cost.queries), "one or two Queries a shard: {cost:?}");
            assert!(cost.scanned <= 8 * (3 + 5), "{cost:?}");
        }
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

//! Computed dashboard snapshots: every metric of the catalog summed from the
//! rollups over the snapshot's period; the rollups moved with the writes equal
//! a recount from the records (no drift); a snapshot costs the same whatever
//! the workspace's size; the job runs through the job worker too.

use std::collections::BTreeMap;

use api_tests::serde_json::{Value, json};
use api_tests::{RecordingQueue, TestApp, api_test};
use shared::auth::Caller;
use shared::domain::{dashboards, rollups};
use shared::ids::WorkspaceId;
use shared::store::{Index, Key, Query, SkRange};

async fn contact(app: &TestApp) -> u64 {
    let c = app
        .post("/v3/contacts", json!({ "name": "Lead" }))
        .await
        .expect(201);
    c["id"].as_str().unwrap().parse().unwrap()
}

async fn deal(
    app: &TestApp,
    contact: u64,
    value: f64,
    status: &str,
    pipeline: &str,
    operator: u64,
) -> Value {
    app.post("/v3/deals", json!({ "name": "Plan", "value": value, "status": status, "contactId": contact, "operatorId": operator,
        "groupId": 1, "pipelineId": pipeline, "stageId": "lead", "origin": "site", "tagIds": [] })).await.expect(201)
}

async fn session(app: &TestApp, id: &str, hours: i64) {
    let start = chrono::Utc::now() - chrono::Duration::hours(hours);
    let t = |m: i64| shared::ids::format_ts(&(start + chrono::Duration::minutes(m)));
    let body = json!({ "createdAt": t(0), "conversation": { "id": 9 }, "trails": [
        { "type": "queued", "at": t(1) }, { "type": "assigned", "at": t(3), "operatorId": "ana" },
        { "type": "message", "at": t(4), "from": "operator", "operatorId": "ana" }, { "type": "finished", "at": t(10) } ] });
    app.put_session(id, body).await;
}

async fn dashboard(app: &TestApp, metrics: &[&str]) -> String {
    let layout: Vec<Value> = metrics
        .iter()
        .enumerate()
        .map(|(i, m)| json!({ "i": m, "x": i, "y": 0, "w": 1, "h": 1, "metric": m }))
        .collect();
    let d = app
        .post(
            "/v3/dashboards",
            json!({ "name": "KPIs", "layout": layout }),
        )
        .await
        .expect(201);
    d["id"].as_str().unwrap().to_owned()
}

api_test! {
    /// A snapshot holds real metrics: deals won and lost with their values,
    /// won value per pipeline and operator, conversion, sessions and their
    /// averages, campaign results; records outside the period are not counted.
    async fn computes_the_metric_catalog(app) {
        let c = contact(&app).await;
        deal(&app, c, 100.0, "won", "sales", 7).await;
        deal(&app, c, 250.5, "won", "renewal", 8).await;
        deal(&app, c, 40.0, "lost", "sales", 7).await;
        let open = deal(&app, c, 10.0, "open", "sales", 7).await;
        session(&app, "s1", 2).await;
        session(&app, "s2", 3).await;
        session(&app, "old", 24 * 60).await;
        let camp = app.post("/v3/campaigns", json!({ "name": "C", "leadsCount": 10, "message": "Hi", "scheduledTo": "2030-01-01T00:00:00Z" })).await.expect(201);
        let cp = format!("/v3/campaigns/{}", camp["id"].as_str().unwrap());
        app.post(&format!("{cp}/schedule"), json!({})).await.expect(201);
        app.post(&format!("{cp}/start"), json!({})).await.expect(201);
        app.post(&format!("{cp}/results"), json!({ "reportId": "r", "sent": 10, "read": 6, "answered": 2 })).await.expect(201);
        let d = dashboard(&app, &["contactsCreated", "dealsCreated", "dealsCreatedValue", "dealsWon", "dealsWonValue", "dealsLost", "dealsLostValue",
            "wonValueByPipeline", "wonValueByOperator", "conversionRate", "sessionsStarted", "sessionsFinished", "avgTma", "avgTme", "avgTmp",
            "campaignMessagesSent", "campaignMessagesRead", "campaignMessagesAnswered"]).await;
        let s = app.post(&format!("/v3/dashboards/{d}/snapshots"), json!({ "authorId": 1, "authorName": "Ana", "period": "week" })).await.expect(201);
        let done = api_tests::computed_snapshot(&app, &d, s["id"].as_str().unwrap()).await;
        let v = |m: &str| done["data"][m]["value"].clone();
        assert_eq!((v("contactsCreated"), v("dealsCreated"), v("dealsCreatedValue")), (json!(1), json!(4), json!(400.5)));
        assert_eq!((v("dealsWon"), v("dealsWonValue"), v("dealsLost"), v("dealsLostValue")), (json!(2), json!(350.5), json!(1), json!(40)));
        assert_eq!(v("wonValueByPipeline"), json!({ "renewal": 250.5, "sales": 100 }));
        assert_eq!(v("wonValueByOperator"), json!({ "7": 100, "8": 250.5 }));
        assert_eq!(v("conversionRate"), json!(66.67));
        assert_eq!((v("sessionsStarted"), v("sessionsFinished")), (json!(2), json!(2)), "the 60-day-old session is outside the week");
        assert_eq!((v("avgTma"), v("avgTme"), v("avgTmp")), (json!(420), json!(120), json!(60)));
        assert_eq!((v("campaignMessagesSent"), v("campaignMessagesRead"), v("campaignMessagesAnswered")), (json!(10), json!(6), json!(2)));
        // Winning the open deal moves the next snapshot.
        app.patch(&format!("/v3/deals/{}", open["id"].as_str().unwrap()), json!({ "status": "won" })).await.expect(200);
        let s2 = app.post(&format!("/v3/dashboards/{d}/snapshots"), json!({ "authorId": 1, "authorName": "Ana" })).await.expect(201);
        let done2 = api_tests::computed_snapshot(&app, &d, s2["id"].as_str().unwrap()).await;
        assert_eq!(done2["data"]["dealsWon"]["value"], 3);
    }
}

/// Every counter item of the workspace's rollup series, its shards summed
/// under shard 0's key (only the sums mean anything), and how many shards
/// hold any item.
async fn rollup_items(app: &TestApp) -> (BTreeMap<Key, i64>, usize) {
    let mut out = BTreeMap::new();
    let mut used = std::collections::BTreeSet::new();
    for s in rollups::RECORD_SERIES {
        for shard in 0..shared::keys::SHARDS {
            let q = Query::new(
                Index::TABLE,
                shared::keys::rollup_shard(WorkspaceId(1), s, shard),
                SkRange::All,
            );
            for item in shared::page::read_up_to(app.store.as_ref(), q, usize::MAX)
                .await
                .unwrap()
            {
                let key = Key::new(shared::keys::rollups(WorkspaceId(1), s), Key::of(&item).unwrap().sk);
                *out.entry(key).or_insert(0) += item["n"].as_i64().unwrap();
                used.insert(shard);
            }
        }
    }
    out.retain(|_, n| *n != 0);
    (out, used.len())
}

/// How many counter items the series hold, over every shard.
async fn stored_items(app: &TestApp, series: &[&str]) -> u64 {
    let mut n = 0;
    for s in series {
        for shard in 0..shared::keys::SHARDS {
            let q = Query::new(Index::TABLE, shared::keys::rollup_shard(WorkspaceId(1), s, shard), SkRange::All);
            n += shared::page::read_up_to(app.store.as_ref(), q, usize::MAX).await.unwrap().len() as u64;
        }
    }
    n
}

api_test! {
    /// After random creates, updates (won, lost, reopened, revalued, moved)
    /// and replaced sessions, the rollups equal a recount from the records:
    /// they moved in the same transactions, so they cannot drift. Rebuilding
    /// them from the records (`crm rollups`) gives the same counts.
    async fn rollups_never_drift_from_the_records(app) {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(11);
        let c = contact(&app).await;
        let mut deals = Vec::new();
        for _ in 0..12 {
            let status = ["open", "won", "lost"][rng.random_range(0..3)];
            deals.push(deal(&app, c, rng.random_range(1..1000) as f64, status, ["a", "b"][rng.random_range(0..2)], rng.random_range(1..4)).await);
        }
        for _ in 0..30 {
            let d = &deals[rng.random_range(0..deals.len())];
            let path = format!("/v3/deals/{}", d["id"].as_str().unwrap());
            let body = match rng.random_range(0..4) {
                0 => json!({ "status": "won" }),
                1 => json!({ "status": "lost" }),
                2 => json!({ "status": "open" }),
                _ => {
                    let pipeline = ["a", "b"][rng.random_range(0..2)];
                    json!({ "value": rng.random_range(1..1000) as f64, "pipelineId": pipeline, "operatorId": rng.random_range(1..4) })
                }
            };
            app.patch(&path, body).await.expect(200);
        }
        for i in 0..8 {
            session(&app, &format!("s{i}"), rng.random_range(1..200)).await;
        }
        for i in 0..4 {
            session(&app, &format!("s{i}"), rng.random_range(1..200)).await; // replaced, maybe on another day
        }
        for _ in 0..3 {
            let c = app.post("/v3/contacts", json!({ "name": "More", "newContact": rng.random_bool(0.5) })).await.expect(201);
            // Marked new, or no longer new, later.
            let path = format!("/v3/contacts/{}", c["id"].as_str().unwrap());
            app.patch(&path, json!({ "newContact": rng.random_bool(0.5) })).await.expect(200);
        }
        let (moved, shards) = rollup_items(&app).await;
        assert!(shards > 1, "the moves spread over the shards: {shards}");
        // The recount: every record's contributions, summed.
        let ws = WorkspaceId(1);
        let mut moves = Vec::new();
        let all = |pk: String| Query::new(Index::TABLE, pk, SkRange::All);
        for partition in shared::keys::contact_partitions(ws) {
            for item in shared::page::read_up_to(app.store.as_ref(), all(partition), usize::MAX).await.unwrap() {
                moves.extend(rollups::of_contact(&shared::record::from_item(item).unwrap()));
            }
        }
        for partition in shared::keys::deal_partitions(ws) {
            for item in shared::page::read_up_to(app.store.as_ref(), all(partition), usize::MAX).await.unwrap() {
                moves.extend(rollups::of_deal(&shared::record::from_item(item).unwrap()));
            }
        }
        for i in 0..8 {
            let s: shared::domain::sessions::Session = shared::record::find(app.store.as_ref(), &shared::keys::session(ws, &format!("s{i}")), true, "session").await.unwrap();
            moves.extend(rollups::of_session(&s));
        }
        let recount = rollups::net(ws, &[], &moves);
        assert_eq!(moved, recount, "the rollups equal a recount from the records");
        // Rebuilding writes the same counts.
        let written = rollups::rebuild(app.store.as_ref(), ws, &|_| {}).await.unwrap();
        assert!(written >= recount.len(), "every counted item, and any that came to 0");
        assert_eq!(rollup_items(&app).await.0, recount);
    }
}

api_test! {
    /// Computing a snapshot reads the dashboard and the period's rollups: the
    /// same reads at 5 and at 50 deals (and as many contacts and sessions).
    async fn a_snapshot_costs_the_same_at_any_size(app) {
        let queue = RecordingQueue::default();
        let caller = Caller::system(1, "test");
        let d: u64 = dashboard(&app, &["dealsWon", "wonValueByPipeline", "avgTmp", "contactsCreated"]).await.parse().unwrap();
        let mut costs = Vec::new();
        for size in [5usize, 50] {
            let c = contact(&app).await;
            let have = costs.len() * 5;
            for i in have..size {
                deal(&app, c, 10.0, "won", ["a", "b"][i % 2], 7).await;
                session(&app, &format!("s{i}"), 2).await;
            }
            let input: dashboards::SnapshotCreate = serde_json::from_value(json!({ "authorId": 1, "authorName": "A" })).unwrap();
            let s = dashboards::snapshot(app.store.as_ref(), &queue, &caller, d.into(), input).await.unwrap();
            let message = queue.0.lock().unwrap().last().cloned().unwrap();
            let before = app.metrics();
            let done = dashboards::process(app.store.as_ref(), message.workspace_id, &message.job_id).await.unwrap();
            let cost = app.metrics() - before;
            assert_eq!(done.id, s.id);
            assert_eq!(done.data["dealsWon"]["value"], json!(size));
            // Again (a redelivery): nothing more is written.
            let again = dashboards::process(app.store.as_ref(), message.workspace_id, &message.job_id).await.unwrap();
            assert_eq!(again.version, done.version);
            costs.push((cost.gets, cost.queries, cost.batch_gets, cost.scanned));
            // It reads the series' items and nothing else.
            let read = ["deals.won", "deals.wonValueByPipeline", "sessions.tmpMs", "sessions.tmpCount", "contacts.created"];
            assert_eq!(cost.scanned, stored_items(&app, &read).await, "{cost:?}");
        }
        let shards = u64::from(shared::keys::rollup_shards());
        let reads = |c: &(u64, u64, u64, u64)| (c.0, c.1, c.2);
        assert_eq!(reads(&costs[0]), reads(&costs[1]), "the same reads at 5 and 50 deals");
        assert_eq!(costs[0].1, 5 * shards, "one Query per series and shard: won, by pipeline, tmp sum and count, contacts");
        // Items read: at most one per series, day, dimension (two pipelines)
        // and shard, however many records moved them.
        for c in &costs {
            assert!(c.3 <= 6 * shards, "{} items read for one day of 5 series", c.3);
        }
    }
}

api_test! {
    /// A keyed create whose answer was not kept (the store took the record,
    /// not the answer) answers its retry as it first did, by reading what it
    /// made (docs/api-contract.md, "Idempotency").
    async fn a_keyed_snapshot_whose_answer_was_lost_is_read_back(app) {
        let layout = json!([{ "i": "volume", "x": 0, "y": 0, "w": 6, "h": 4, "metric": "sessionsStarted" }]);
        let dashboard = app.post("/v3/dashboards", json!({ "name": "Support", "layout": layout })).await.expect(201);
        let path = format!("/v3/dashboards/{}/snapshots", dashboard["id"].as_str().unwrap());
        let body = json!({ "authorId": 1, "authorName": "Ana", "period": "week" });
        // The snapshot is computed in the background.
        let moving = ["status", "data", "processedAt", "processedTimeInMs", "totalTimeInMs", "lastUpdateAt", "updatedAt", "version"];
        app.assert_read_back("/v3/dashboards/{dashboardId}/snapshots", &path, &body, &moving).await;
    }
}

api_test! {
    /// Each event type of the group is made by its change (docs/api-contract.md,
    /// "Events"; `events.rs` fails for a declared type no suite makes).
    async fn a_dashboard_and_its_snapshot_make_their_event_types(app) {
        let layout = json!([{ "i": "v", "x": 0, "y": 0, "w": 6, "h": 4, "metric": "sessionsStarted" }]);
        let dashboard = app.post("/v3/dashboards", json!({ "name": "Support", "layout": layout })).await.expect(201);
        let dashboard = dashboard["id"].as_str().unwrap().to_owned();
        let snapshot = app.post(&format!("/v3/dashboards/{dashboard}/snapshots"), json!({ "authorId": 1, "authorName": "Ana" })).await.expect(201);
        api_tests::computed_snapshot(&app, &dashboard, snapshot["id"].as_str().unwrap()).await;
        app.assert_made_events(&["dashboard.created", "snapshot.created", "snapshot.updated"]).await;
    }
}

//! Session reports (`/v3/reports/sessions`): sessions come in through `PUT
//! /v3/reports/sessions/{id}` (or `crm load`), their metrics are computed by
//! the service, and the report filters them by every parameter of the spec.

use api_tests::serde_json::{Value, json};
use api_tests::{TestApp, api_test};

/// An RFC 3339 time `minutes` after `base` (a time string).
fn at(base: &str, minutes: i64) -> String {
    let t = shared::ids::parse_ts(base).unwrap() + chrono::Duration::minutes(minutes);
    shared::ids::format_ts(&t)
}

fn hours_ago(h: i64) -> String {
    shared::ids::format_ts(&(chrono::Utc::now() - chrono::Duration::hours(h)))
}

/// A session opened at `start` that waits 5 minutes, is taken by `operator`,
/// answered after 3 and finished after 30 (unless `open`).
fn session(start: &str, operator: &str, conversation: u64, open: bool) -> Value {
    let mut trails = vec![
        json!({ "type": "bot", "at": at(start, 0), "botId": "welcome-bot" }),
        json!({ "type": "message", "at": at(start, 1), "from": "bot", "botId": "welcome-bot" }),
        json!({ "type": "queued", "at": at(start, 2), "groupId": "support" }),
        json!({ "type": "assigned", "at": at(start, 7), "operatorId": operator, "groupId": "support" }),
        json!({ "type": "message", "at": at(start, 9), "from": "contact" }),
        json!({ "type": "message", "at": at(start, 10), "from": "operator", "operatorId": operator }),
    ];
    if !open {
        trails.push(json!({ "type": "finished", "at": at(start, 37) }));
    }
    json!({
        "createdAt": start,
        "conversation": { "id": conversation, "contactPhone": "+55 11 98765-4321", "channelId": "whatsapp-1", "channelType": "whatsapp" },
        "trails": trails,
    })
}

async fn put(app: &TestApp, id: &str, body: Value) -> Value {
    app.put_session(id, body).await
}

fn ids(list: &Value) -> Vec<String> {
    let mut ids: Vec<String> = list["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap().to_owned())
        .collect();
    ids.sort();
    ids
}

api_test! {
    /// The service computes the metrics from the trails (seconds): waiting from
    /// queued to assigned, first response from assigned to the first operator
    /// message (never a bot's), handling from assigned to finished.
    async fn ingests_a_session_and_computes_its_metrics(app) {
        let start = hours_ago(2);
        let r = app.send(http::Method::PUT, "/v3/reports/sessions/s-1", Some(api_tests::ADMIN_TOKEN), Some(session(&start, "ana", 5, false))).await;
        assert_eq!(r.status, 201);
        let s = r.body;
        assert_eq!((s["tme"].clone(), s["tmp"].clone(), s["tma"].clone()), (json!(300), json!(180), json!(1800)));
        assert_eq!((s["operatorId"].clone(), s["answeredBy"].clone()), (json!("ana"), json!("ana")));
        assert_eq!((s["botMessagesCount"].clone(), s["operatorMessagesCount"].clone(), s["contactMessagesCount"].clone(), s["totalMessagesCount"].clone()), (json!(1), json!(1), json!(1), json!(3)));
        assert_eq!(s["conversation"]["contactPhone"], "+5511987654321");
        assert_eq!(s["workspaceId"], 1);
        assert_eq!(s["createdAt"], json!(start));
        assert_eq!(app.get("/v3/reports/sessions/s-1").await.expect(200), s);
        // The same body again: nothing changes.
        let again = app.send(http::Method::PUT, "/v3/reports/sessions/s-1", Some(api_tests::ADMIN_TOKEN), Some(session(&start, "ana", 5, false))).await;
        assert_eq!(again.status, 200);
        assert_eq!(again.body, s);
        // Replaced: reopened later and answered by someone else.
        let mut body = session(&start, "ana", 5, false);
        body["trails"].as_array_mut().unwrap().extend([
            json!({ "type": "reopened", "at": at(&start, 60) }),
            json!({ "type": "queued", "at": at(&start, 60), "groupId": "support" }),
            json!({ "type": "assigned", "at": at(&start, 61), "operatorId": "rui" }),
            json!({ "type": "message", "at": at(&start, 63), "from": "operator", "operatorId": "rui" }),
        ]);
        let replaced = put(&app, "s-1", body).await;
        assert_eq!((replaced["tme"].clone(), replaced["tmp"].clone()), (json!(60), json!(120)), "measured from the reopening");
        assert!(replaced.get("tma").is_none(), "not finished since the reopening");
        assert_eq!(replaced["version"], 2);
        assert!(replaced["lastUpdateAt"].as_str() > s["lastUpdateAt"].as_str());
    }
}

api_test! {
    async fn refuses_bad_sessions(app) {
        let start = hours_ago(1);
        let send = |id: &str, body: Value| {
            let (app, path) = (&app, format!("/v3/reports/sessions/{id}"));
            async move { app.send(http::Method::PUT, &path, Some(api_tests::ADMIN_TOKEN), Some(body)).await }
        };
        let mut body = session(&start, "ana", 5, false);
        body["tma"] = json!(12);
        send("s-x", body).await.expect_field_error("tma");
        let mut body = session(&start, "ana", 5, false);
        body["trails"].as_array_mut().unwrap().reverse();
        send("s-x", body).await.expect_field_error("trails");
        send("s-x", json!({ "conversation": { "id": 1 } })).await.expect_field_error("createdAt");
        send("s-x", json!({ "createdAt": start })).await.expect_field_error("conversation");
        let mut body = session(&start, "ana", 5, false);
        body["conversation"]["contactPhone"] = json!("nope");
        send("s-x", body).await.expect_field_error("conversation.contactPhone");
        let mut body = session(&start, "ana", 5, false);
        body["rating"] = json!(6);
        send("s-x", body).await.expect_field_error("rating");
        send("bad%20id", session(&start, "ana", 5, false)).await.expect_field_error("id");
        app.get("/v3/reports/sessions/nope").await.expect_error(404);
        app.get("/v3/reports/sessions/bad%20id").await.expect_error(404);
    }
}

api_test! {
    /// Every filter alone and combined, over one set of sessions.
    async fn filters_sessions_by_every_parameter(app) {
        // 01:00 UTC two days ago: every session of the set, and its replies, fall
        // on that one day whatever the time the test runs (`answeredOnDay`).
        let base = {
            let day = (chrono::Utc::now() - chrono::Duration::days(2)).date_naive();
            shared::ids::format_ts(&day.and_hms_opt(1, 0, 0).unwrap().and_utc())
        };
        put(&app, "a", session(&at(&base, 0), "ana", 1, false)).await;
        put(&app, "b", session(&at(&base, 60), "rui", 2, true)).await;
        let mut c = session(&at(&base, 120), "ana", 3, false);
        c["tags"] = json!([7]);
        c["rating"] = json!(5);
        c["deals"] = json!({ "ids": [99], "won": true });
        c["campaignId"] = json!("black-friday");
        c["isNewContact"] = json!(true);
        c["conversation"]["channelId"] = json!("instagram-1");
        c["conversation"]["contactPhone"] = json!("+55 21 97777-0000");
        put(&app, "c", c).await;
        let mut d = session(&at(&base, 180), "ana", 4, false);
        d["trails"].as_array_mut().unwrap().insert(4, json!({ "type": "transferred", "at": at(&base, 188), "operatorId": "eva", "groupId": "sales" }));
        d["deals"] = json!({ "ids": [98], "won": false });
        put(&app, "d", d).await;
        // Waiting: queued, never assigned.
        put(&app, "e", json!({
            "createdAt": at(&base, 240),
            "conversation": { "id": 5, "channelId": "whatsapp-1" },
            "trails": [{ "type": "queued", "at": at(&base, 241), "groupId": "support" }, { "type": "message", "at": at(&base, 242), "from": "contact" }],
        })).await;

        let q = |query: &str| {
            let app = &app;
            let query = query.to_owned();
            async move { app.get(&format!("/v3/reports/sessions?{query}")).await.expect(200) }
        };
        let all = q("").await;
        assert_eq!(all["totalCount"], 5, "the last 31 days by default");
        assert_eq!(ids(&all), ["a", "b", "c", "d", "e"]);
        assert_eq!(all["data"][0]["id"], "e", "newest first");
        for (query, want) in [
            ("assigned=ana", vec!["a", "c"]),
            ("assigned=eva", vec!["d"]),
            ("assigned=ana&assigned=rui", vec!["a", "b", "c"]),
            ("groups=sales", vec!["d"]),
            ("groups=support", vec!["a", "b", "c", "d", "e"]),
            ("bots=welcome-bot", vec!["a", "b", "c", "d"]),
            ("channels=instagram-1", vec!["c"]),
            ("tags=7", vec!["c"]),
            ("campaignId=black-friday", vec!["c"]),
            ("conversationId=2", vec!["b"]),
            ("contactPhone=21977770000", vec!["c"]),
            ("isFinished=true", vec!["a", "c", "d"]),
            ("isFinished=false", vec!["b", "e"]),
            ("waiting=true", vec!["e"]),
            ("inProgress=true", vec!["b"]),
            ("pending=true", vec!["e"]),
            ("hasRating=true", vec!["c"]),
            ("isNewContact=true", vec!["c"]),
            ("tmaExists=true", vec!["a", "c", "d"]),
            ("tmeExists=false", vec!["e"]),
            ("tmpExists=true", vec!["a", "b", "c", "d"]),
            ("hasDeal=true", vec!["c", "d"]),
            ("hasWonDeal=true", vec!["c"]),
            ("changeAssignmentToTrail=true", vec!["d"]),
            ("answeredOnDay=true", vec!["a", "b", "c", "d"]),
            ("isReopened=true", vec![]),
            ("trails=%5B%7B%22type%22%3A%22transferred%22%2C%22groupId%22%3A%22sales%22%7D%5D", vec!["d"]),
            ("assigned=ana&isFinished=true&hasDeal=true", vec!["c"]),
            ("assigned=eva&isFinished=true&hasDeal=true", vec!["d"]),
            ("filters[assigned][]=ana&filters[hasWonDeal]=true", vec!["c"]),
            ("filters=%7B%22tags%22%3A%5B7%5D%7D", vec!["c"]),
        ] {
            assert_eq!(ids(&q(query).await), want, "{query}");
        }
        let sorted = q("sortBy=tmp&sort=asc&isFinished=true").await;
        assert_eq!(sorted["data"].as_array().unwrap().len(), 3);
        let summary = &all["summary"];
        assert_eq!((summary["sessions"].clone(), summary["finished"].clone()), (json!(5), json!(3)));
        assert_eq!((summary["avgTme"].clone(), summary["avgTmp"].clone()), (json!(300.0), json!(180.0)));
        // Pages.
        let page = q("limit=2&offset=1").await;
        assert_eq!(page["totalCount"], 5);
        assert_eq!(page["data"].as_array().unwrap().iter().map(|s| s["id"].as_str().unwrap()).collect::<Vec<_>>(), ["d", "c"]);
    }
}

api_test! {
    /// Periods: by creation or by finish, presets and custom windows, in UTC;
    /// a period longer than 93 days is refused.
    async fn reads_the_period_asked(app) {
        let last_month = {
            use chrono::Datelike;
            let now = chrono::Utc::now();
            let first = chrono::NaiveDate::from_ymd_opt(now.year(), now.month(), 1).unwrap();
            let prev = first - chrono::Duration::days(1);
            shared::ids::format_ts(&prev.and_hms_opt(12, 0, 0).unwrap().and_utc())
        };
        put(&app, "old", session(&last_month, "ana", 1, false)).await;
        let today = hours_ago(0);
        // 40 minutes ago, but today (UTC) even just after midnight, so the
        // windows below hold whatever the time the test runs.
        let midnight = shared::ids::format_ts(&chrono::Utc::now().date_naive().and_hms_opt(0, 1, 0).unwrap().and_utc());
        let started = at(&today, -40).max(midnight);
        put(&app, "new", session(&started, "ana", 2, false)).await;

        let q = |query: &str| {
            let app = &app;
            let query = query.to_owned();
            async move { app.get(&format!("/v3/reports/sessions?{query}")).await }
        };
        assert_eq!(ids(&q("period=last_month").await.expect(200)), ["old"]);
        assert_eq!(ids(&q("period=last_24h").await.expect(200)), ["new"]);
        let custom = format!("period=custom&periodFrom={}&periodTo={}", &last_month[..10], &today[..10]);
        assert_eq!(ids(&q(&custom).await.expect(200)), ["old"]);
        let window = format!("from={}&to={}", at(&last_month, -1), at(&last_month, 1));
        assert_eq!(ids(&q(&window).await.expect(200)), ["old"]);
        // By finish: the session finished 37 minutes after it opened.
        let finished = format!("onlyFinishedAt=true&from={}&to={}", at(&started, 36), at(&started, 38));
        assert_eq!(ids(&q(&finished).await.expect(200)), ["new"]);
        let created = format!("periodMetric=createdAt&from={}&to={}", at(&started, 36), at(&started, 38));
        assert!(ids(&q(&created).await.expect(200)).is_empty());
        // On the period: open at some moment of it.
        let on_period = format!("isConversationOnPeriod=true&from={}&to={}", at(&started, 20), at(&started, 21));
        assert_eq!(ids(&q(&on_period).await.expect(200)), ["new"]);

        q("from=2026-01-01&to=2026-06-01").await.expect_field_error("from");
        q("onlyFinishedAt=true&onlyCreatedAt=true").await.expect_field_error("onlyFinishedAt");
        q("period=custom").await.expect_field_error("periodFrom");
        q("from=2026-02-01&to=2026-01-01").await.expect_field_error("to");
    }
}

api_test! {
    async fn refuses_bad_parameters(app) {
        for (query, field) in [
            ("limit=0", "limit"),
            ("limit=501", "limit"),
            ("offset=-1", "offset"),
            ("isFinished=maybe", "isFinished"),
            ("tags=x", "tags"),
            ("period=fortnight", "period"),
            ("periodMetric=queuedAt", "periodMetric"),
            ("sortBy=mood", "sortBy"),
            ("sort=sideways", "sort"),
            ("contactPhone=nope", "contactPhone"),
            ("trails=%5B%7B%22type%22%3A%22teleported%22%7D%5D", "trails"),
            ("colour=red", "colour"),
            ("other[x]=1", "other[x]"),
        ] {
            app.get(&format!("/v3/reports/sessions?{query}")).await.expect_field_error(field);
        }
    }
}

api_test! {
    /// Another workspace's sessions are invisible, to read and in its report.
    async fn sessions_stay_in_their_workspace(app) {
        put(&app, "mine", session(&hours_ago(3), "ana", 1, false)).await;
        let (_, token) = app.new_workspace("Other").await;
        let other = app.as_token(&token);
        other.get("/v3/reports/sessions/mine").await.expect_error(404);
        assert_eq!(other.get("/v3/reports/sessions").await.expect(200)["totalCount"], 0);
        // Their own session of the same id is theirs.
        let theirs = app.send(http::Method::PUT, "/v3/reports/sessions/mine", Some(&token), Some(session(&hours_ago(3), "eva", 9, false))).await;
        assert_eq!(theirs.status, 201);
        assert_eq!(app.get("/v3/reports/sessions/mine").await.expect(200)["operatorId"], "ana");
    }
}

api_test! {
    /// A session of a contact's conversation is that conversation's last session
    /// when it is the newest: the contact list's segment and session filters
    /// follow it. Loaded through `crm load` the same way.
    async fn the_newest_session_is_the_conversations_last(app) {
        let contact = app.post("/v3/contacts", json!({ "name": "Maria" })).await.expect(201);
        let id: u64 = contact["id"].as_str().unwrap().parse().unwrap();
        let mut newer = session(&hours_ago(2), "ana", 50, false);
        newer["conversation"]["contactId"] = json!(id);
        newer["segmentId"] = json!("vip");
        put(&app, "n", newer).await;
        let in_segment = |segment: &str| {
            let app = &app;
            let path = format!("/v3/contacts?segmentId={segment}");
            async move { app.get(&path).await.expect(200)["totalCount"].clone() }
        };
        assert_eq!(in_segment("vip").await, 1);
        // An older session of the same conversation changes nothing.
        let mut older = session(&hours_ago(30), "ana", 50, false);
        older["conversation"]["contactId"] = json!(id);
        older["segmentId"] = json!("archive");
        put(&app, "o", older).await;
        assert_eq!((in_segment("vip").await, in_segment("archive").await), (json!(1), json!(0)));
        // A newer one, loaded by an operator, moves it.
        let mut line = session(&hours_ago(1), "rui", 50, false);
        line["conversation"]["contactId"] = json!(id);
        line["segmentId"] = json!("archive");
        line["type"] = json!("session");
        line["id"] = json!("l");
        assert_eq!(app.load_line(1, line).await.unwrap(), "session");
        assert_eq!((in_segment("vip").await, in_segment("archive").await), (json!(0), json!(1)));
        assert_eq!(app.get("/v3/reports/sessions/l").await.expect(200)["operatorId"], "rui");
        // Unknown contact: 404.
        let mut bad = session(&hours_ago(1), "rui", 51, false);
        bad["conversation"]["contactId"] = json!(1);
        app.send(http::Method::PUT, "/v3/reports/sessions/z", Some(api_tests::ADMIN_TOKEN), Some(bad)).await.expect_error(404);
    }
}

api_test! {
    /// A retried first PUT racing the original (and two new sessions of one new
    /// conversation) never answers a 500: one creates, the others read it again.
    async fn concurrent_puts_of_one_session_agree(app) {
        let contact = app.post("/v3/contacts", json!({ "name": "Eva" })).await.expect(201);
        let id: u64 = contact["id"].as_str().unwrap().parse().unwrap();
        let mut body = session(&hours_ago(1), "ana", 77, false);
        body["conversation"]["contactId"] = json!(id);
        let puts = (0..6u32).map(|i| {
            let (app, body) = (&app, body.clone());
            let name = if i.is_multiple_of(2) { "same".to_owned() } else { format!("other{}", i / 4) };
            async move { app.send(http::Method::PUT, &format!("/v3/reports/sessions/{name}"), Some(api_tests::ADMIN_TOKEN), Some(body)).await }
        });
        for r in futures::future::join_all(puts).await {
            assert!(r.status == 200 || r.status == 201, "{} {}", r.status, r.body);
        }
        // Times come to the millisecond, so the same body again changes nothing.
        let mut precise = session("2026-11-01T10:00:00.123456Z", "ana", 78, false);
        precise["trails"] = json!([]);
        let first = put(&app, "precise", precise.clone()).await;
        let again = put(&app, "precise", precise).await;
        assert_eq!(first["version"], again["version"]);
    }
}

api_test! {
    /// Each event type of the group is made by its change (docs/api-contract.md,
    /// "Events"; `events.rs` fails for a declared type no suite makes).
    async fn a_session_put_makes_its_event_type(app) {
        put(&app, "s-1", session(&hours_ago(2), "ana", 5, false)).await;
        app.assert_made_events(&["session.upserted"]).await;
    }
}

/// What its lists cost, at two sizes of the workspace (tests/tests/costs.rs
/// has the costs every group shares).
mod costs {
    use api_tests::costs::cost_of;
    use api_tests::serde_json::json;
    use api_tests::api_test;

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
}

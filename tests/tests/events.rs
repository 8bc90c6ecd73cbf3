//! The event log and the feed (`GET /v3/events`), and record histories: one
//! event per changed record, in the change's own transaction; none for a
//! change refused or failed; the feed in order, settled, resumable; a
//! reader that follows it from the start holds what the API holds.

use api_tests::serde_json::{Value, json};
use api_tests::{TestApp, api_test};
use chrono::Duration;

/// The feed from `after` to its settled end, in pages of `limit`.
async fn follow(
    app: &TestApp,
    after: Option<&str>,
    query: &str,
    limit: u64,
) -> (Vec<Value>, Option<String>) {
    follow_as(app, api_tests::ADMIN_TOKEN, after, query, limit).await
}

/// [`follow`] with `token`.
async fn follow_as(
    app: &TestApp,
    token: &str,
    after: Option<&str>,
    query: &str,
    limit: u64,
) -> (Vec<Value>, Option<String>) {
    let mut events = Vec::new();
    let mut cursor = after.map(str::to_owned);
    for _ in 0..1000 {
        let after = cursor
            .as_deref()
            .map(|c| format!("&after={c}"))
            .unwrap_or_default();
        let page = app
            .as_token(token)
            .get(&format!("/v3/events?limit={limit}{after}{query}"))
            .await
            .expect(200);
        events.extend(page["data"].as_array().unwrap().iter().cloned());
        cursor = page["nextCursor"].as_str().map(str::to_owned);
        if page["hasMore"] != true {
            return (events, cursor);
        }
    }
    panic!("the feed did not end");
}

/// JSON as a reader compares it: numbers by value (`10` is `10.0`).
fn normal(value: &Value) -> Value {
    match value {
        Value::Number(n) => json!(n.as_f64()),
        Value::Array(items) => Value::Array(items.iter().map(normal).collect()),
        Value::Object(map) => {
            Value::Object(map.iter().map(|(k, v)| (k.clone(), normal(v))).collect())
        }
        other => other.clone(),
    }
}

fn types(events: &[Value]) -> Vec<&str> {
    events.iter().map(|e| e["type"].as_str().unwrap()).collect()
}

api_test! {
    /// Each kind of change makes its event, with the record after it, what it
    /// moved and the version; the feed shows them in order once settled.
    async fn each_change_makes_its_event(app) {
        let (app, clock) = app.with_manual_clock();
        let tag = app.post("/v3/tags", json!({ "name": "VIP" })).await.expect(201);
        let tag_path = format!("/v3/tags/{}", tag["id"].as_str().unwrap());
        app.patch(&tag_path, json!({ "name": "Gold" })).await.expect(200);
        let contact = app.a_contact().await;
        let deal = app.post("/v3/deals", json!({ "name": "Plan", "value": 10, "status": "open", "contactId": contact,
            "operatorId": 7, "groupId": 1, "pipelineId": "p", "stageId": "s", "origin": "site", "tagIds": [] })).await.expect(201);
        let deal_path = format!("/v3/deals/{}", deal["id"].as_str().unwrap());
        app.patch(&deal_path, json!({ "status": "won" })).await.expect(200);
        app.patch(&deal_path, json!({ "status": "lost" })).await.expect(200);
        app.patch(&deal_path, json!({ "status": "open" })).await.expect(200);
        app.delete(&tag_path).await.expect(200);

        // Not settled yet: the feed holds them back.
        assert_eq!(app.get("/v3/events").await.expect(200)["data"], json!([]));
        clock.advance(Duration::seconds(16));
        let (events, _) = follow(&app, None, "&types=tag.*,contact.*,deal.*", 100).await;
        assert_eq!(
            types(&events),
            ["tag.created", "tag.updated", "contact.created", "deal.created", "deal.won", "deal.lost", "deal.reopened", "tag.deleted"]
        );
        let renamed = &events[1];
        assert_eq!(renamed["data"]["object"]["name"], "Gold");
        assert_eq!(renamed["data"]["previous"]["name"], "VIP");
        assert_eq!(renamed["resource"], "tag");
        assert_eq!(renamed["resourceId"], tag["id"]);
        assert!(renamed["id"].as_str().unwrap().starts_with("evt_"));
        let won = &events[4];
        assert_eq!((won["data"]["object"]["status"].clone(), won["data"]["previous"]["status"].clone()), (json!("won"), json!("open")));
        assert_eq!(won["version"], 2);
        let reopened = &events[6];
        assert_eq!(normal(&reopened["data"]["object"]), normal(&app.get(&deal_path).await.expect(200)), "the record as GET shows it");
        let deleted = events.last().unwrap();
        assert_eq!(deleted["data"]["object"]["name"], "Gold", "a deletion carries the record as it was");
        // Cursors grow; ids are unique.
        let cursors: Vec<&str> = events.iter().map(|e| e["cursor"].as_str().unwrap()).collect();
        assert!(cursors.windows(2).all(|w| w[0] < w[1]), "{cursors:?}");
    }
}

api_test! {
    /// A change refused (a taken name, a bad body, a stale version) writes no event.
    async fn a_refused_change_makes_no_event(app) {
        let (app, clock) = app.with_manual_clock();
        app.post("/v3/tags", json!({ "name": "VIP" })).await.expect(201);
        app.post("/v3/tags", json!({ "name": "vip" })).await.expect_error(409);
        app.post("/v3/tags", json!({ "name": "" })).await.expect_field_error("name");
        let contact = app.a_contact().await;
        app.patch(&format!("/v3/contacts/{contact}"), json!({ "phone": "not a phone" })).await.expect_field_error("phone");
        // A PATCH that changes nothing writes nothing, and no event.
        app.patch(&format!("/v3/contacts/{contact}"), json!({ "name": "Buyer" })).await.expect(200);
        clock.advance(Duration::seconds(16));
        let (events, _) = follow(&app, None, "&types=tag.*,contact.*", 100).await;
        assert_eq!(types(&events), ["tag.created", "contact.created"]);
    }
}

api_test! {
    /// A reader that follows the feed from the start, in small pages, holds
    /// exactly what the API holds: every record as GET shows it, none deleted.
    async fn following_the_feed_reproduces_every_record(app) {
        let (app, clock) = app.with_manual_clock();
        let mut paths = Vec::new();
        for i in 0..6 {
            let tag = app.post("/v3/tags", json!({ "name": format!("t{i}") })).await.expect(201);
            paths.push(("tag", format!("/v3/tags/{}", tag["id"].as_str().unwrap())));
            let contact = app.post("/v3/contacts", json!({ "name": format!("c{i}"), "phone": format!("11 9876{i}-000{i}") })).await.expect(201);
            paths.push(("contact", format!("/v3/contacts/{}", contact["id"].as_str().unwrap())));
        }
        // Changes, and deletions: the reader must drop what was deleted.
        app.patch(&paths[0].1, json!({ "color": "#00ff00" })).await.expect(200);
        app.patch(&paths[1].1, json!({ "email": "c0@example.com" })).await.expect(200);
        app.delete(&paths[2].1).await.expect(200);
        app.delete(&paths[4].1).await.expect(200);
        clock.advance(Duration::seconds(16));
        // The first half, then the rest from the cursor kept: nothing skipped.
        let (first, cursor) = follow(&app, None, "&types=tag.*,contact.*", 3).await;
        app.post("/v3/tags", json!({ "name": "late" })).await.expect(201);
        clock.advance(Duration::seconds(16));
        let (rest, _) = follow(&app, cursor.as_deref(), "&types=tag.*,contact.*", 3).await;
        let events: Vec<shared::record::Event> = first.iter().chain(&rest).map(|e| serde_json::from_value(e.clone()).unwrap()).collect();
        let held = shared::domain::events::replay(&events);
        let tags = app.get("/v3/tags?limit=100").await.expect(200);
        let contacts = app.get("/v3/contacts?limit=100").await.expect(200);
        let expected = tags["data"].as_array().unwrap().iter().map(|t| ("tag", t))
            .chain(contacts["data"].as_array().unwrap().iter().map(|c| ("contact", c)));
        let mut count = 0;
        for (resource, listed) in expected {
            let id = listed["id"].as_str().unwrap();
            let path = format!("/v3/{resource}s/{id}");
            let read = app.get(&path).await.expect(200);
            let copy = held.get(&(resource.to_owned(), id.to_owned())).unwrap_or_else(|| panic!("{path} missing"));
            assert_eq!(normal(copy), normal(&read), "{path}");
            count += 1;
        }
        assert_eq!(held.len(), count, "nothing deleted is held: {:?}", held.keys());
        assert_eq!(count, 11, "6 + 1 tags less one, 6 contacts less one");
    }
}

api_test! {
    /// A contact's and a deal's history: their events, oldest first; a record
    /// of another workspace is not found.
    async fn a_record_has_its_history(app) {
        let contact = app.a_contact().await;
        app.patch(&format!("/v3/contacts/{contact}"), json!({ "name": "Renamed" })).await.expect(200);
        let history = app.get(&format!("/v3/contacts/{contact}/history")).await.expect(200);
        assert_eq!(types(history["data"].as_array().unwrap()), ["contact.created", "contact.updated"]);
        assert_eq!(history["data"][1]["data"]["previous"]["name"], "Buyer");
        let deal = app.post("/v3/deals", json!({ "name": "Plan", "value": 10, "status": "open", "contactId": contact,
            "operatorId": 7, "groupId": 1, "pipelineId": "p", "stageId": "s", "origin": "site", "tagIds": [] })).await.expect(201);
        let deal_path = format!("/v3/deals/{}", deal["id"].as_str().unwrap());
        app.patch(&deal_path, json!({ "status": "won" })).await.expect(200);
        let first = app.get(&format!("{deal_path}/history?limit=1")).await.expect(200);
        assert_eq!(types(first["data"].as_array().unwrap()), ["deal.created"]);
        assert_eq!(first["hasMore"], true);
        let after = first["nextCursor"].as_str().unwrap();
        let second = app.get(&format!("{deal_path}/history?limit=1&after={after}")).await.expect(200);
        assert_eq!(types(second["data"].as_array().unwrap()), ["deal.won"]);
        let (_, token) = app.new_workspace("Other").await;
        app.as_token(&token).get(&format!("/v3/contacts/{contact}/history")).await.expect_error(404);
        app.get("/v3/contacts/999/history").await.expect_error(404);
    }
}

api_test! {
    /// The feed's parameters: a cursor it did not give, an unknown type form or
    /// a limit out of range are 400; an expired event is not shown.
    async fn the_feed_refuses_what_it_cannot_read(app) {
        let (app, clock) = app.with_manual_clock();
        app.get("/v3/events?after=nope").await.expect_field_error("after");
        app.get("/v3/events?types=deal.").await.expect_field_error("types");
        app.get("/v3/events?types=deal.won;drop").await.expect_field_error("types");
        app.get("/v3/events?limit=0").await.expect_field_error("limit");
        app.get("/v3/events?limit=501").await.expect_field_error("limit");
        app.post("/v3/tags", json!({ "name": "VIP" })).await.expect(201);
        clock.advance(Duration::seconds(16));
        let (events, _) = follow(&app, None, "&types=tag.created", 10).await;
        assert_eq!(events.len(), 1);
        // Its 30 days over (TTL deletes lazily): refused on read.
        let [cursor, resource, id] = ["cursor", "resource", "resourceId"].map(|f| events[0][f].as_str().unwrap());
        let key = shared::keys::event(shared::ids::WorkspaceId(1), resource, id, cursor);
        let mut item = app.store.get(&key, true).await.unwrap().unwrap();
        item.insert("ttl".into(), json!(chrono::Utc::now().timestamp() - 1));
        app.store.write(vec![shared::store::Write::Put { item, condition: None }]).await.unwrap();
        let (events, _) = follow(&app, None, "&types=tag.created", 10).await;
        assert!(events.is_empty(), "{events:?}");
    }
}

api_test! {
    /// Each event of a record has a greater `version` than the one before
    /// it, a deletion's and a merge's too: a receiver that applies only
    /// greater versions applies every change (a tag deleted, a contact
    /// merged away, a contact erased, a webhook deleted).
    async fn each_event_of_a_record_has_a_greater_version(app) {
        let tag = app.tag_path("VIP").await;
        app.patch(&tag, json!({ "name": "Gold" })).await.expect(200);
        app.delete(&tag).await.expect(200);
        let ana = app.post("/v3/contacts", json!({ "name": "Ana", "phone": "11 98765-0001" })).await.expect(201);
        let twin = app.post("/v3/contacts", json!({ "name": "Ana S.", "phone": "11 98765-0002" })).await.expect(201);
        app.patch(&format!("/v3/contacts/{}", twin["id"].as_str().unwrap()), json!({ "notes": "the same person" })).await.expect(200);
        app.post(&format!("/v3/contacts/{}/merge", ana["id"].as_str().unwrap()), json!({ "ids": [twin["id"]] })).await.expect(200);
        let gone = app.post("/v3/contacts", json!({ "name": "Erased" })).await.expect(201);
        app.post(&format!("/v3/contacts/{}/erase", gone["id"].as_str().unwrap()), json!({})).await.expect(200);
        let hook = app.post("/v3/webhooks", json!({ "url": "https://203.0.114.7/hooks" })).await.expect(201);
        app.delete(&format!("/v3/webhooks/{}", hook["id"].as_str().unwrap())).await.expect(200);

        let log = shared::domain::events::log_page(app.store.as_ref(), shared::ids::WorkspaceId(1), None, None, 1000).await.unwrap();
        assert!(!log.has_more);
        // A receiver that applies an event only when its version is greater.
        let mut applied: std::collections::BTreeMap<(String, String), (u64, String)> = Default::default();
        let mut kinds = Vec::new();
        for event in &log.data {
            let Some(version) = event.version else { continue };
            let key = (event.resource.clone(), event.resource_id.clone());
            if let Some((before, kind)) = applied.get(&key) {
                assert!(version > *before, "{} (version {version}) after {kind} (version {before}) of {key:?}", event.kind);
            }
            applied.insert(key, (version, event.kind.clone()));
            kinds.push(event.kind.clone());
        }
        for kind in ["tag.deleted", "contact.merged", "contact.erased", "webhook.deleted"] {
            assert!(kinds.iter().any(|k| k == kind), "{kind} is applied: {kinds:?}");
        }
    }
}

/// docs/api-contract.md's table of event types ("Events") names every type the
/// service makes, and no other.
#[test]
fn the_docs_list_every_event_type() {
    let design = include_str!("../../docs/api-contract.md");
    let table = design
        .split("| resource | verbs |")
        .nth(1)
        .expect("the table");
    // The backticked words of a cell, leaving out its remarks in brackets.
    let words = |cell: &str| -> Vec<String> {
        let mut plain = String::new();
        let mut depth = 0;
        for c in cell.chars() {
            match c {
                '(' => depth += 1,
                ')' => depth -= 1,
                _ if depth == 0 => plain.push(c),
                _ => {}
            }
        }
        plain
            .split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_owned)
            .collect()
    };
    let mut listed = std::collections::BTreeSet::new();
    for row in table.lines().skip(2).take_while(|l| l.starts_with('|')) {
        let cells: Vec<&str> = row.split('|').collect();
        for resource in words(cells[1]) {
            for verb in words(cells[2]) {
                listed.insert(format!("{resource}.{verb}"));
            }
        }
    }
    let types: std::collections::BTreeSet<String> = shared::domain::events::TYPES
        .iter()
        .map(|t| t.to_string())
        .collect();
    assert_eq!(listed, types);
}

/// Every declared event type (but a ping, never in the log) is made by its
/// change in its group's suite, which checks it with
/// `TestApp::assert_made_events`: a new group's types are made and checked
/// in its own test file, and this test fails until they are.
#[test]
fn every_type_is_made_by_its_change_in_its_groups_suite() {
    let mut checked = std::collections::BTreeSet::new();
    for call in api_tests::suites::calls("assert_made_events").iter().chain(&api_tests::suites::calls("assert_made_events_in")) {
        let list = &call[call.find("&[").expect("the types as a list") ..];
        let list = &list[..list.find(']').unwrap()];
        checked.extend(api_tests::suites::literals(list).into_iter().map(str::to_owned));
    }
    let declared: std::collections::BTreeSet<String> = shared::domain::events::TYPES
        .iter()
        .filter(|t| **t != "webhook.ping")
        .map(|t| t.to_string())
        .collect();
    let unmade: Vec<_> = declared.difference(&checked).collect();
    assert!(
        unmade.is_empty(),
        "{unmade:?}: no suite makes them with their change and checks them with \
         `app.assert_made_events(&[..])` (in the group's test file)"
    );
    let undeclared: Vec<_> = checked.difference(&declared).collect();
    assert!(undeclared.is_empty(), "{undeclared:?} are checked but not declared");
}

api_test! {
    /// An event belongs to the workspace whose record changed (#44): an
    /// operator's new workspace, its first token and a change of its
    /// environment are events of that workspace. The operator's workspace
    /// (its feed, its log, so its webhooks) holds none of them.
    async fn an_operators_change_is_an_event_of_the_workspace_changed(app) {
        let (app, clock) = app.with_manual_clock();
        let reader = api_tests::token_with(&app, &[shared::auth::Scope::ReadAll]).await;
        let (id, token) = app.new_workspace("Acme").await;
        app.post(&format!("/v3/workspaces/promote-testing/{id}"), json!({})).await.expect(201);
        app.post("/v3/tags", json!({ "name": "mine" })).await.expect(201);
        clock.advance(Duration::seconds(16));

        let (mine, _) = follow_as(&app, &reader, None, "", 100).await;
        assert!(mine.iter().all(|e| e["workspaceId"] == 1), "{mine:?}");
        // Workspace 1's own bootstrap events are there; nothing of Acme's.
        assert!(!mine.iter().any(|e| e["resourceId"].as_str() == Some(id.to_string().as_str()) || e["data"]["object"]["workspaceId"] == id), "{mine:?}");
        assert!(types(&mine).contains(&"tag.created"), "the operator's own changes stay its own: {mine:?}");
        // The log the webhooks read holds none of them either.
        let log = shared::domain::events::log_page(app.store.as_ref(), shared::ids::WorkspaceId(1), None, None, 1000).await.unwrap();
        assert!(log.data.iter().all(|e| e.workspace_id == shared::ids::WorkspaceId(1)
            && e.data.object["workspaceId"] != id), "{:?}", log.data);

        let (theirs, _) = follow_as(&app, &token, None, "", 100).await;
        assert_eq!(types(&theirs), ["workspace.created", "apiToken.created", "workspace.updated"]);
        assert!(theirs.iter().all(|e| e["workspaceId"] == id), "{theirs:?}");
        assert_eq!(theirs[0]["data"]["object"]["name"], "Acme");
        assert_eq!(theirs[2]["data"]["object"]["environment"], "testing");
    }
}

api_test! {
    /// The log over its shards (each record's events in its record's): the
    /// events from before the cutover, still in their one partition, and
    /// the new ones spread over the shards read as one feed, each once, in
    /// cursor order; a cursor from before resumes; `types` pages step over
    /// the others as before.
    async fn the_feed_reads_the_log_from_before_its_shards_and_after_as_one(app) {
        let (app, clock) = app.with_manual_clock();
        let mut old = Vec::new();
        for i in 0..5 {
            old.push(app.an_old_event("tag.created", &format!("old-{i}"), &format!("2024-06-01T00:00:0{i}Z")).await);
        }
        for i in 0..12 {
            app.post("/v3/tags", json!({ "name": format!("t{i}") })).await.expect(201);
        }
        for i in 0..4 {
            app.post("/v3/contacts", json!({ "name": format!("c{i}") })).await.expect(201);
        }
        clock.advance(Duration::seconds(16));
        let stored = app.stored_events().await;
        let shards: std::collections::BTreeSet<&str> = stored.iter().filter(|(c, _)| !old.contains(c)).map(|(_, p)| p.as_str()).collect();
        assert!(shards.len() >= 3, "new events spread over the shards: {shards:?}");

        let (events, _) = follow(&app, None, "", 3).await;
        let cursors: Vec<String> = events.iter().map(|e| e["cursor"].as_str().unwrap().to_owned()).collect();
        let mut expected: Vec<String> = stored.iter().map(|(c, _)| c.clone()).collect();
        expected.sort();
        assert_eq!(cursors, expected, "every stored event once, in cursor order");
        assert_eq!(cursors[..5], old[..], "the events from before come first");

        let (rest, _) = follow(&app, Some(&old[2]), "", 4).await;
        assert_eq!(rest.len(), cursors.len() - 3, "a cursor from before the shards resumes after itself");
        assert_eq!(rest[0]["cursor"], json!(old[3]));

        let (contacts, _) = follow(&app, None, "&types=contact.*", 2).await;
        assert_eq!(types(&contacts), ["contact.created"; 4]);
    }
}

api_test! {
    /// A record's history crosses the cutover: its event from before (in the
    /// log's first partition) and its later ones (in its shard), oldest
    /// first, page by page.
    async fn a_history_crosses_the_logs_cutover(app) {
        let contact = app.a_contact().await;
        app.an_old_event("contact.updated", &contact.to_string(), "2024-06-01T00:00:00Z").await;
        app.patch(&format!("/v3/contacts/{contact}"), json!({ "name": "Renamed" })).await.expect(200);
        let mut kinds = Vec::new();
        let mut after = String::new();
        loop {
            let page = app.get(&format!("/v3/contacts/{contact}/history?limit=1{after}")).await.expect(200);
            kinds.extend(types(page["data"].as_array().unwrap()).into_iter().map(str::to_owned));
            if page["hasMore"] != true {
                break;
            }
            after = format!("&after={}", page["nextCursor"].as_str().unwrap());
        }
        assert_eq!(kinds, ["contact.updated", "contact.created", "contact.updated"]);
    }
}

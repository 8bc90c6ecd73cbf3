//! Audit (`/v3/audit`, `/v3/audit/{id}`, `/v3/audit/admin`): every successful
//! mutation leaves one entry (who, what, when, request id); refused ones leave none.

use api_tests::api_test;
use api_tests::serde_json::{Value, json};

/// Tags made until the workspace has `size`, each a mutation and its entry.
async fn fill_with_tags(app: &api_tests::TestApp, size: u64) {
    let count = |page: Value| page["totalCount"].as_u64().unwrap();
    let mut n = count(app.get("/v3/tags?limit=1").await.expect(200));
    while n < size {
        app.post("/v3/tags", json!({ "name": format!("tag {n}") })).await.expect(201);
        n += 1;
    }
}

/// An audit entry as the earlier layouts stored it: in the workspace's one
/// partition `W#1#AUDIT`, and in the admin view's one index partition `AUDIT`.
async fn write_old_entry(app: &api_tests::TestApp, id: &str, at: &str) {
    let mut old = shared::store::Item::new();
    for (k, v) in [
        ("pk", json!("W#1#AUDIT")), ("sk", json!(id)), ("_type", json!("AuditEntry")),
        ("gsi1pk", json!("AUDIT")), ("gsi1sk", json!(id)), ("id", json!(id)),
        ("workspaceId", json!(1)), ("action", json!("tag.legacy")), ("resource", json!("tag")),
        ("resourceId", json!("1")), ("tokenId", json!("t")), ("requestId", json!("r")),
        ("createdAt", json!(at)), ("lastUpdateAt", json!(at)), ("updatedAt", json!(at)),
    ] {
        old.insert(k.into(), v);
    }
    app.store.write(vec![shared::store::Write::Put { item: old, condition: None }]).await.unwrap();
}

fn actions(page: &Value) -> Vec<String> {
    page["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["action"].as_str().unwrap().to_owned())
        .collect()
}

api_test! {
    /// Newest first, with who (token), what (action, resource, id) and the request id.
    async fn records_every_mutation_newest_first(app) {
        let tag = app.post("/v3/tags", json!({ "name": "VIP" })).await.expect(201);
        let id = tag["id"].as_str().unwrap();
        app.patch(&format!("/v3/tags/{id}"), json!({ "color": "#000" })).await.expect(200);
        app.delete(&format!("/v3/tags/{id}")).await.expect(200);
        let page = app.get("/v3/audit").await.expect(200);
        assert_eq!(actions(&page), vec!["tag.delete", "tag.update", "tag.create", "workspace.bootstrap"]);
        assert_eq!(page["totalCount"], 4);
        let entry = &page["data"][0];
        assert_eq!(entry["resource"], "tag");
        assert_eq!(entry["resourceId"], json!(id));
        assert_eq!(entry["workspaceId"], 1);
        assert!(entry["tokenId"].as_str().is_some_and(|t| t.len() == 26), "{entry}");
        assert!(entry["requestId"].is_string() && entry["createdAt"].is_string());
    }
}

api_test! {
    /// The entry's request id is the one the response carried.
    async fn entries_carry_the_request_id(app) {
        let response = app.post("/v3/tags", json!({ "name": "VIP" })).await;
        let request_id = response.headers["x-request-id"].to_str().unwrap().to_owned();
        response.expect(201);
        let page = app.get("/v3/audit?limit=1").await.expect(200);
        assert_eq!(page["data"][0]["requestId"], json!(request_id));
    }
}

api_test! {
    async fn refused_requests_leave_no_entry(app) {
        app.post("/v3/tags", json!({ "name": "VIP" })).await.expect(201);
        app.post("/v3/tags", json!({ "name": "VIP" })).await.expect_error(409);
        app.post("/v3/tags", json!({ "name": "" })).await.expect_error(400);
        app.delete("/v3/tags/42").await.expect_error(404);
        let page = app.get("/v3/audit").await.expect(200);
        assert_eq!(actions(&page), vec!["tag.create", "workspace.bootstrap"]);
    }
}

api_test! {
    async fn reads_one_entry_by_id(app) {
        app.post("/v3/tags", json!({ "name": "VIP" })).await.expect(201);
        let listed = app.get("/v3/audit?limit=1").await.expect(200)["data"][0].clone();
        let id = listed["id"].as_str().unwrap();
        assert_eq!(app.get(&format!("/v3/audit/{id}")).await.expect(200), listed);
        app.get("/v3/audit/01ARZ3NDEKTSV4RRFFQ69G5FAV").await.expect_error(404);
        app.get("/v3/audit/not-an-id").await.expect_error(404);
        // Longer than DynamoDB accepts in a key: still a plain 404.
        app.get(&format!("/v3/audit/{}", "x".repeat(2000))).await.expect_error(404);
    }
}

api_test! {
    async fn pages_the_audit(app) {
        for i in 0..5 {
            app.post("/v3/tags", json!({ "name": format!("t{i}") })).await.expect(201);
        }
        let first = app.get("/v3/audit?limit=2").await.expect(200);
        let second = app.get("/v3/audit?limit=2&offset=2").await.expect(200);
        assert_eq!(first["totalCount"], 6);
        let ids: Vec<_> = [&first, &second].iter().flat_map(|p| p["data"].as_array().unwrap().clone()).map(|e| e["id"].clone()).collect();
        let mut unique = ids.clone();
        unique.dedup();
        assert_eq!(unique.len(), 4, "disjoint pages");
        app.get("/v3/audit?limit=0").await.expect_field_error("limit");
    }
}

api_test! {
    /// A workspace sees its own entries only, also by id. Its creation is
    /// its own entry, not one of the operator's workspace.
    async fn another_workspaces_entries_are_invisible(app) {
        let (other_id, token) = app.new_workspace("Other").await;
        let other = app.as_token(&token);
        other.post("/v3/tags", json!({ "name": "theirs" })).await.expect(201);
        let theirs = other.get("/v3/audit").await.expect(200);
        assert_eq!(actions(&theirs), vec!["tag.create", "workspace.create"]);
        assert!(theirs["data"].as_array().unwrap().iter().all(|e| e["workspaceId"] == other_id), "{theirs}");
        let their_id = theirs["data"][0]["id"].as_str().unwrap();
        app.get(&format!("/v3/audit/{their_id}")).await.expect_error(404);
        let mine = app.get("/v3/audit").await.expect(200);
        assert!(mine["data"].as_array().unwrap().iter().all(|e| e["workspaceId"] == 1));
        assert_eq!(actions(&mine), vec!["workspace.bootstrap"], "the operator's workspace holds no other's creation");
    }
}

api_test! {
    /// The operator's view spans workspaces; a workspace token gets 403.
    async fn admin_audit_spans_workspaces(app) {
        let (other_id, token) = app.new_workspace("Other").await;
        let other = app.as_token(&token);
        other.post("/v3/tags", json!({ "name": "theirs" })).await.expect(201);
        app.post("/v3/tags", json!({ "name": "mine" })).await.expect(201);
        let all = app.get("/v3/audit/admin").await.expect(200);
        assert_eq!(actions(&all), vec!["tag.create", "tag.create", "workspace.create", "workspace.bootstrap"]);
        assert_eq!(all["totalCount"], 4);
        let workspaces: Vec<_> = all["data"].as_array().unwrap().iter().map(|e| e["workspaceId"].clone()).collect();
        // A workspace's creation is an entry of that workspace.
        assert_eq!(workspaces, vec![json!(1), json!(other_id), json!(other_id), json!(1)]);
        other.get("/v3/audit/admin").await.expect_error(403);
        let paged = app.get("/v3/audit/admin?limit=1&offset=1").await.expect(200);
        assert_eq!(paged["data"][0], all["data"][1]);
    }
}

api_test! {
    /// The operator's view reads 16 index shards and the partition from before
    /// sharding, newest first across all of them: an entry written under the
    /// old key (`gsi1pk = AUDIT`) is still listed, in its place. A page costs
    /// the same Queries and one counter read at any size of the service.
    async fn admin_audit_merges_its_shards_and_the_old_partition(app) {
        // An entry of the earlier layout: the one index partition `AUDIT`.
        let old_id = shared::ids::new_ulid();
        write_old_entry(&app, &old_id, "2026-11-22T00:00:00.000Z").await;
        // 17 Queries and a counter read at 5 entries and at 200: the shards
        // are merged (`page::merged`), at most two Queries each, and the items
        // read stay near the page, not the service.
        for size in [5, 200] {
            fill_with_tags(&app, size).await;
            let before = app.metrics();
            let page = app.get("/v3/audit/admin?limit=5").await.expect(200);
            let cost = app.metrics() - before;
            assert_eq!((cost.gets, cost.batch_gets), (1, 1), "the token, the counter's shards");
            assert!((17..=34).contains(&cost.queries), "16 shards and the old partition, one or two rounds: {cost:?}");
            // A first round of 4 a shard (`page::first_ask`), and rarely the 5 wanted.
            assert!(cost.scanned <= 17 * 4 + 17 * 5, "{size} tags: {cost:?}");
            let ids: Vec<&str> = page["data"].as_array().unwrap().iter().map(|e| e["id"].as_str().unwrap()).collect();
            let mut sorted = ids.clone();
            sorted.sort_by(|a, b| b.cmp(a));
            assert_eq!(ids, sorted, "newest first across shards");
            assert_eq!(ids.len(), 5);
        }
        let all = app.get("/v3/audit/admin?limit=500").await.expect(200);
        let actions = actions(&all);
        assert_eq!(actions.last().map(String::as_str), Some("workspace.bootstrap"));
        assert!(actions.iter().any(|a| a == "tag.legacy"), "{actions:?}");
        assert_eq!(all["data"].as_array().unwrap().len() as u64, all["totalCount"].as_u64().unwrap() + 1, "the old entry is listed; the counter counts what was written through it");
    }
}

api_test! {
    /// A workspace's entries are spread over eight partitions by id (one
    /// tenant's every mutation appends one, past what one partition takes:
    /// docs/plans/tenant-write-rate.md), and the list merges them back,
    /// newest first, with the entries stored before the shards' cutover,
    /// which stay in the first partition and are still read by id.
    async fn a_workspaces_entries_are_sharded_and_listed_as_one(app) {
        // Made in 2024, before the suites' cutover (`api_tests::SHARDED_FROM`):
        // stored under the one partition of the earlier layout, though its
        // id hashes to shard 3.
        let old_id = "01HZ8HH5007K3M9Q2X5V8B4N6C";
        write_old_entry(&app, old_id, "2024-06-01T00:00:00.000Z").await;
        fill_with_tags(&app, 40).await;

        let partitions: std::collections::BTreeSet<String> = app.every_item().await.into_iter()
            .filter(|item| item.get("_type") == Some(&json!("AuditEntry")))
            .map(|item| item.get("pk").and_then(Value::as_str).unwrap().to_owned())
            .collect();
        assert!(partitions.len() >= 6, "41 entries over the shards: {partitions:?}");
        assert!(partitions.iter().all(|pk| pk == "W#1#AUDIT" || (pk.starts_with("W#1#S") && pk.ends_with("#AUDIT"))), "{partitions:?}");

        let all = app.get("/v3/audit?limit=100").await.expect(200);
        let ids: Vec<&str> = all["data"].as_array().unwrap().iter().map(|e| e["id"].as_str().unwrap()).collect();
        assert_eq!(ids.len(), 42, "40 tags, the bootstrap and the old entry");
        let mut newest_first = ids.clone();
        newest_first.sort_by(|a, b| b.cmp(a));
        assert_eq!(ids, newest_first);
        assert_eq!(ids.last(), Some(&old_id), "the oldest");
        assert_eq!(all["totalCount"], 41, "the counter counts what was written through it");
        // Pages follow one another across the shards.
        let mut paged = Vec::new();
        for offset in (0..42).step_by(5) {
            let page = app.get(&format!("/v3/audit?limit=5&offset={offset}")).await.expect(200);
            paged.extend(page["data"].as_array().unwrap().iter().map(|e| e["id"].as_str().unwrap().to_owned()));
        }
        assert_eq!(paged, ids);
        // By id, one GetItem: the new ones in their shards, the old one in the first partition.
        for id in [ids[0], ids[20], old_id] {
            let before = app.metrics();
            assert_eq!(app.get(&format!("/v3/audit/{id}")).await.expect(200)["id"], json!(id));
            let cost = app.metrics() - before;
            assert_eq!((cost.gets, cost.queries), (2, 0), "the token and the entry: {cost:?}");
        }
    }
}

api_test! {
    /// A page of a workspace's audit: eight Queries (one a shard; two
    /// rounds at most) and the counter, reading about the page, whatever
    /// the number of entries.
    async fn an_audit_page_costs_the_same_at_any_size(app) {
        for size in [5, 300] {
            fill_with_tags(&app, size).await;
            let before = app.metrics();
            let page = app.get("/v3/audit?limit=20").await.expect(200);
            let cost = app.metrics() - before;
            assert_eq!(page["data"].as_array().unwrap().len() as u64, 20.min(size + 1));
            assert_eq!((cost.gets, cost.batch_gets), (1, 1), "the token, the counter's shards: {cost:?}");
            assert!((8..=16).contains(&cost.queries), "{cost:?}");
            // A first round of 10 a shard (`page::first_ask`), and rarely the 20 wanted.
            assert!(cost.scanned <= 8 * 10 + 8 * 20, "{size} entries: {cost:?}");
        }
    }
}

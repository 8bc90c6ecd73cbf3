//! No hot key at internet scale. The embedded store's hot-key detector counts
//! the writes each partition (of the table and of the index) takes while many
//! tenants work at once, and the rule is:
//!
//! - a partition of one tenant (its key names the workspace) may take any
//!   share: that share shrinks as tenants are added;
//! - a partition of no tenant (the admin view, its counter) is written by
//!   mutations of every tenant, so its share does not shrink: it must stay
//!   under [`GLOBAL_SHARE`], so that the service's ceiling is many partitions'.
//!
//! And one tenant creating 1,000 records concurrently meets few conflicts, on
//! both stores: its list counters are sharded.

use api_tests::serde_json::{Value, json};
use api_tests::{TestApp, api_test};

/// The largest share of all writes a partition of no tenant may take: 1/16
/// (the admin view's index and counter have 16 shards), with room for chance.
const GLOBAL_SHARE: f64 = 0.09;

/// The tenant a partition belongs to, if any (`W#<ws>...`, also as an index partition).
fn tenant_of(partition: &str) -> Option<&str> {
    let key = partition.split_once(':').map_or(partition, |(_, pk)| pk);
    key.strip_prefix("W#")
        .map(|rest| rest.split('#').next().unwrap_or(rest))
}

/// Some of what a tenant does in a day: tags, contacts and a deal created,
/// one of each changed, a tag deleted.
async fn a_tenants_work(app: &TestApp, token: &str, n: usize) {
    let client = app.as_token(token);
    let tag = client
        .post("/v3/tags", json!({ "name": format!("t{n}") }))
        .await
        .expect(201);
    client
        .post("/v3/tags", json!({ "name": format!("u{n}") }))
        .await
        .expect(201);
    let mut contact = Value::Null;
    for i in 0..3 {
        contact = client
            .post(
                "/v3/contacts",
                json!({ "name": format!("Contact {n} {i}") }),
            )
            .await
            .expect(201);
    }
    let contact_id = contact["id"].as_str().unwrap();
    client
        .patch(
            &format!("/v3/contacts/{contact_id}"),
            json!({ "notes": "called" }),
        )
        .await
        .expect(200);
    client
        .post(
            "/v3/deals",
            json!({ "name": "Deal", "value": 100, "status": "open", "contactId": contact_id.parse::<u64>().unwrap(),
                    "operatorId": 7, "groupId": 3, "pipelineId": "p1", "stageId": "s1", "origin": "site", "tagIds": [1] }),
        )
        .await
        .expect(201);
    client
        .delete(&format!("/v3/tags/{}", tag["id"].as_str().unwrap()))
        .await
        .expect(200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn no_partition_of_no_tenant_takes_a_large_share_of_writes() {
    let (app, partitions) = TestApp::counting_partitions().await;
    let mut tokens = Vec::new();
    for i in 0..200 {
        let (_, token) = app.new_workspace(&format!("Tenant {i}")).await;
        tokens.push(token);
    }
    partitions.clear();
    // 200 tenants at once, and a large one creating 300 contacts meanwhile.
    let large = tokens.pop().unwrap();
    let tenants = futures::future::join_all(
        tokens
            .iter()
            .enumerate()
            .map(|(n, token)| a_tenants_work(&app, token, n)),
    );
    let import = async {
        let client = app.as_token(&large);
        for chunk in 0..30 {
            let creates = (0..10).map(|i| {
                client.post(
                    "/v3/contacts",
                    json!({ "name": format!("Imported {chunk} {i}") }),
                )
            });
            for created in futures::future::join_all(creates).await {
                assert!(
                    created.status == 201 || created.status == 409,
                    "{created:?}"
                );
            }
        }
    };
    tokio::join!(tenants, import);

    let total = partitions.total() as f64;
    let ranked = partitions.ranked();
    println!(
        "{total} writes over {} partitions; the most written:",
        ranked.len()
    );
    for (partition, writes) in ranked.iter().take(12) {
        println!(
            "  {:>6.2}%  {writes:>6}  {partition}",
            100.0 * *writes as f64 / total
        );
    }
    for (partition, writes) in &ranked {
        let share = *writes as f64 / total;
        if tenant_of(partition).is_none() {
            assert!(
                share <= GLOBAL_SHARE,
                "{partition} takes {:.1}% of all writes and belongs to no tenant",
                100.0 * share
            );
        }
    }
    // Before sharding, the admin view's one index partition took every audit entry.
    assert!(ranked.iter().any(|(p, _)| p.starts_with("gsi1:AUDIT#")));
    assert!(!ranked.iter().any(|(p, _)| p == "gsi1:AUDIT"));
}

api_test! {
    /// One tenant creating 1,000 contacts, 25 at a time: few conflicts, and
    /// `totalCount` exact after concurrent creates and deletes.
    async fn a_busy_tenant_counts_exactly_with_few_conflicts(app) {
        let mut conflicts = 0;
        let mut ids = Vec::new();
        for round in 0..40 {
            let creates = (0..25).map(|i| app.post("/v3/contacts", json!({ "name": format!("C {round} {i}") })));
            for created in futures::future::join_all(creates).await {
                match created.status.as_u16() {
                    201 => ids.push(created.body["id"].as_str().unwrap().to_owned()),
                    409 | 503 => conflicts += 1,
                    other => panic!("{other}: {}", created.body),
                }
            }
        }
        println!("{} created, {conflicts} conflicts", ids.len());
        assert!(conflicts * 100 <= 1000 * 3, "{conflicts} conflicts in 1,000 creates");
        let tags = futures::future::join_all((0..40).map(|i| app.post("/v3/tags", json!({ "name": format!("tag {i}") })))).await;
        let tag_ids: Vec<String> = tags.iter().filter(|t| t.status == 201).map(|t| t.body["id"].as_str().unwrap().to_owned()).collect();
        let paths: Vec<String> = tag_ids.iter().take(15).map(|id| format!("/v3/tags/{id}")).collect();
        let deletes = paths.iter().map(|path| app.delete(path));
        let deleted = futures::future::join_all(deletes).await.iter().filter(|d| d.status == 200).count();
        let contacts = app.get("/v3/contacts?limit=1").await.expect(200);
        assert_eq!(contacts["totalCount"], ids.len());
        let tags = app.get("/v3/tags?limit=1").await.expect(200);
        assert_eq!(tags["totalCount"], tag_ids.len() - deleted);
    }
}

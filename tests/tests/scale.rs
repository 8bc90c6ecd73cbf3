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
use embedded_store::partitions::PartitionWrites;
use http::Method;

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

/// DynamoDB's ceiling is 1,000 write units a second per partition; a test
/// holds 60% of it, room for larger records and uneven hashing.
const UNITS_A_SECOND: u64 = 600;

/// The partitions of one tenant past [`UNITS_A_SECOND`] at 1,000 mutations
/// a second: none, now that every family issue #47 shards is (the
/// time-ordered ones, docs/plans/tenant-write-rate.md, and a contact's
/// index items: by value, the name words by id). Held exact, so a family
/// that grows hot again fails the test by name.
const KNOWN_HOT: &[&str] = &[];

/// A tenant's partition with its workspace written `<ws>` (`W#<ws>`,
/// `W#<ws>#AUDIT`, `gsi1:W#<ws>#CONTACTNAME`), or any other as it is.
fn family(partition: &str) -> String {
    let (index, key) = match partition.split_once(':') {
        Some((index, key)) => (format!("{index}:"), key),
        None => (String::new(), partition),
    };
    match tenant_of(partition) {
        Some(ws) => format!("{index}W#<ws>{}", &key[2 + ws.len()..]),
        None => partition.to_owned(),
    }
}

/// One tenant's mutations, driven on a clock the test moves (so the rate
/// holds on any machine): every 25 ms, `times` × 25 mutations at once (10
/// contact creates with a phone and an e-mail, 5 contact edits, 4 deals in
/// one stage, status and pipeline, 2 deals won, 3 tags made and 1 deleted).
struct Tenant {
    app: TestApp,
    /// The tenant's token: a workspace made since the shards' cutover, as
    /// one that imports a CRM is (`keys::value_shard`).
    token: String,
    clock: std::sync::Arc<shared::ids::ManualClock>,
    owner: u64,
    made: usize,
    contacts: Vec<String>,
    deals: Vec<String>,
    tags: Vec<String>,
    done: usize,
    conflicts: usize,
    /// Answers refused by the write budget (429, naming it, `Retry-After`).
    refused: usize,
}

impl Tenant {
    /// `times` × 1,000 mutations a second for `seconds`.
    async fn drive(&mut self, seconds: usize, times: usize) {
        for _ in 0..seconds * 40 {
            self.tick(times).await;
            self.clock.advance(chrono::Duration::milliseconds(25));
        }
    }

    async fn tick(&mut self, times: usize) {
        // (what a 201 makes, the method, the path, the body)
        let mut requests: Vec<(&str, Method, String, Option<Value>)> = Vec::new();
        for _ in 0..times {
            for _ in 0..10 {
                let n = self.made;
                self.made += 1;
                let body = json!({ "name": format!("Contact {n}"), "phone": format!("+55 11 9{:04}-{:04}", n / 10000, n % 10000),
                    "email": format!("c{n}@example.com") });
                requests.push(("contact", Method::POST, "/v3/contacts".into(), Some(body)));
            }
            for id in self.contacts.drain(..).take(5) {
                requests.push(("", Method::PATCH, format!("/v3/contacts/{id}"), Some(json!({ "notes": "called" }))));
            }
            for _ in 0..4 {
                let body = json!({ "name": "Deal", "value": 100, "status": "open", "contactId": self.owner, "operatorId": 7,
                    "groupId": 3, "pipelineId": "p1", "stageId": "s1", "origin": "site", "tagIds": [] });
                requests.push(("deal", Method::POST, "/v3/deals".into(), Some(body)));
            }
            for id in self.deals.drain(..).take(2) {
                requests.push(("", Method::PATCH, format!("/v3/deals/{id}"), Some(json!({ "status": "won" }))));
            }
            for _ in 0..3 {
                let n = self.made;
                self.made += 1;
                requests.push(("tag", Method::POST, "/v3/tags".into(), Some(json!({ "name": format!("tag {n}") }))));
            }
            if let Some(id) = self.tags.drain(..).next() {
                requests.push(("", Method::DELETE, format!("/v3/tags/{id}"), None));
            }
        }
        let (app, token) = (&self.app, self.token.as_str());
        let answers = futures::future::join_all(
            requests.iter().map(|(_, method, path, body)| app.send(method.clone(), path, Some(token), body.clone())),
        )
        .await;
        let kinds = requests.iter().map(|r| r.0);
        for (kind, answer) in kinds.zip(answers) {
            match answer.status.as_u16() {
                200 | 201 => self.done += 1,
                409 | 503 => self.conflicts += 1,
                429 => {
                    let message = answer.body["message"].as_str().unwrap_or_default();
                    assert!(message.starts_with("write budget"), "{}", answer.body);
                    assert!(answer.headers.contains_key("retry-after"));
                    self.refused += 1;
                }
                other => panic!("{other}: {}", answer.body),
            }
            if answer.status == 201 {
                let id = answer.body["id"].as_str().unwrap().to_owned();
                match kind {
                    "contact" => self.contacts.push(id),
                    "deal" => self.deals.push(id),
                    "tag" => self.tags.push(id),
                    _ => {}
                }
            }
        }
    }
}

/// The partitions past `units` write units in their busiest second, by
/// family, printing the busiest.
fn hot_families(partitions: &PartitionWrites, units: u64) -> Vec<String> {
    let peaks = partitions.peaks();
    for (partition, _, written) in peaks.iter().take(16) {
        println!("  {written:>6}  {partition}");
    }
    let hot: Vec<&String> = peaks.iter().filter(|(_, _, written)| *written > units).map(|(p, _, _)| p).collect();
    assert!(hot.iter().all(|p| tenant_of(p).is_some()), "a partition of no tenant is hot: {hot:?}");
    let mut hot: Vec<String> = hot.into_iter().map(|p| family(p)).collect();
    hot.sort();
    hot
}

/// One tenant at 1,000 mutations a second ([`Tenant`]) for 3 seconds, with
/// the write budget at its default: none refused, and every partition's
/// busiest second in write units, by the KB and twice in a transaction,
/// under [`UNITS_A_SECOND`] but for [`KNOWN_HOT`], exactly. Then 2 seconds
/// at 3,000 a second: the budget refuses some (429 naming it, with
/// `Retry-After`), and what it lets through keeps every time-ordered
/// partition under DynamoDB's 1,000.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_tenant_at_1000_mutations_a_second_passes_a_partition_limit_only_where_known() {
    let (app, partitions) = TestApp::counting_partitions().await;
    // Request quotas out of the way; the write budget at its default.
    let wide = shared::ratelimit::Policy { quota: 1_000_000, window_seconds: 1 };
    let writes = shared::ratelimit::Limits::DEFAULT.writes;
    let (app, clock) = app.rate_limited(shared::ratelimit::Limits { token: wide, workspace: wide, writes });
    let (_, token) = app.new_workspace("Busy").await;
    let owner = app.as_token(&token).post("/v3/contacts", json!({ "name": "Owner" })).await.expect(201);
    let owner = owner["id"].as_str().unwrap().parse().unwrap();
    partitions.clear();
    let mut tenant = Tenant {
        app, token, clock, owner, made: 0, contacts: Vec::new(), deals: Vec::new(), tags: Vec::new(),
        done: 0, conflicts: 0, refused: 0,
    };
    tenant.drive(3, 1).await;
    let (done, conflicts) = (tenant.done, tenant.conflicts);
    assert!(conflicts * 100 <= (done + conflicts) * 3, "{conflicts} conflicts, {done} done");
    assert_eq!(tenant.refused, 0, "1,000 mutations a second fit the default write budget");
    println!("{done} mutations in 3 s; the busiest partitions (write units in their busiest second):");
    let hot = hot_families(&partitions, UNITS_A_SECOND);
    assert_eq!(hot, KNOWN_HOT, "the partitions past {UNITS_A_SECOND} write units a second");

    partitions.clear();
    tenant.drive(2, 3).await;
    println!("at 3,000 a second: {} done, {} refused by the write budget", tenant.done - done, tenant.refused);
    assert!(tenant.refused > 0, "3,000 mutations a second pass the default write budget");
    let hot: Vec<String> = hot_families(&partitions, 1_000).into_iter().filter(|p| !KNOWN_HOT.contains(&p.as_str())).collect();
    assert!(hot.is_empty(), "time-ordered partitions past 1,000 write units a second under the budget: {hot:?}");
}

//! Webhooks: endpoints and their secrets; deliveries signed per Standard
//! Webhooks (checked here by its reference library), at least once, retried
//! with the same `webhook-id`; what disables an endpoint; the delivery log,
//! a retry, a replay, a ping; and the addresses no delivery may reach.

use api_tests::receiver::{Received, Receiver};
use api_tests::serde_json::{Value, json};
use api_tests::{TestApp, api_test, webhook_settings};

/// An endpoint for `types` posting to `receiver`: its path and its secret.
async fn endpoint(app: &TestApp, receiver: &Receiver, types: Value) -> (String, String) {
    let created = app
        .post(
            "/v3/webhooks",
            json!({ "url": receiver.url, "types": types, "description": "test" }),
        )
        .await
        .expect(201);
    let id = created["id"].as_str().unwrap();
    assert!(id.starts_with("wh_"));
    let secret = created["secret"].as_str().unwrap().to_owned();
    (format!("/v3/webhooks/{id}"), secret)
}

/// The endpoint's delivery log once `done` holds of it (the receiver may
/// answer before the delivery is written): 10 s at most.
async fn log_when(app: &TestApp, path: &str, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    let mut log = Vec::new();
    for _ in 0..500 {
        log = app.get(&format!("{path}/deliveries")).await.expect(200)["data"]
            .as_array()
            .unwrap()
            .clone();
        if done(&log) {
            return log;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    panic!("the delivery log never came to what was awaited: {log:?}");
}

fn kinds(received: &[Received]) -> Vec<String> {
    received.iter().map(Received::kind).collect()
}

api_test! {
    /// An endpoint is created with its secret (shown once), read, listed,
    /// changed and deleted; its id and a bad address or type are checked.
    async fn endpoints_are_managed_and_their_secret_shown_once(app) {
        let receiver = Receiver::start().await;
        let (path, secret) = endpoint(&app, &receiver, json!(["deal.*", "contact.created"])).await;
        assert!(secret.starts_with("whsec_") && secret.len() >= 6 + 44, "{secret}");
        let read = app.get(&path).await.expect(200);
        assert_eq!(read["types"], json!(["contact.created", "deal.*"]));
        assert_eq!((read["enabled"].clone(), read["importRows"].clone()), (json!(true), json!(false)));
        assert!(read.get("secret").is_none(), "the secret is never answered again: {read}");
        let list = app.get("/v3/webhooks").await.expect(200);
        assert_eq!(list["totalCount"], 1);
        assert!(list["data"][0].get("secret").is_none());
        let changed = app.patch(&path, json!({ "enabled": false, "description": null })).await.expect(200);
        assert_eq!(changed["enabled"], false);
        assert!(changed.get("description").is_none());
        app.post("/v3/webhooks", json!({ "url": "ftp://example.com/x" })).await.expect_field_error("url");
        app.post("/v3/webhooks", json!({ "url": receiver.url, "types": ["deal."] })).await.expect_field_error("types");
        app.post("/v3/webhooks", json!({ "url": receiver.url, "types": [] })).await.expect_field_error("types");
        app.get("/v3/webhooks/wh_nope").await.expect_error(404);
        let (_, other) = app.new_workspace("Other").await;
        app.as_token(&other).get(&path).await.expect_error(404);
        app.delete(&path).await.expect(200);
        app.get(&path).await.expect_error(404);
    }
}

api_test! {
    /// Each change is delivered, signed so that the reference library
    /// verifies it, with the event as the feed has it; only the types the
    /// endpoint asked for.
    async fn deliveries_are_signed_per_standard_webhooks(app) {
        let app = app.delivering(webhook_settings()).await;
        let receiver = Receiver::start().await;
        let (_, secret) = endpoint(&app, &receiver, json!(["tag.*"])).await;
        let tag = app.post("/v3/tags", json!({ "name": "VIP" })).await.expect(201);
        let tag_path = format!("/v3/tags/{}", tag["id"].as_str().unwrap());
        app.patch(&tag_path, json!({ "name": "Gold" })).await.expect(200);
        app.a_contact().await; // not a tag: not delivered
        app.delete(&tag_path).await.expect(200);
        let got = receiver.wait_for("three tag events", |got| got.len() >= 3).await;
        let mut kinds = kinds(&got);
        kinds.sort();
        assert_eq!(kinds, ["tag.created", "tag.deleted", "tag.updated"]);
        for delivery in &got {
            assert!(delivery.verifies_with(&secret), "{:?}", delivery.headers);
            assert!(!delivery.verifies_with("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"));
            let event = delivery.event();
            assert_eq!(delivery.id(), event["id"].as_str().unwrap(), "webhook-id is the event's id");
            assert_eq!(event["resourceId"], tag["id"]);
            assert_eq!(delivery.headers["content-type"], "application/json");
        }
        let updated = got.iter().find(|r| r.kind() == "tag.updated").unwrap().event();
        assert_eq!((updated["data"]["object"]["name"].clone(), updated["data"]["previous"]["name"].clone()), (json!("Gold"), json!("VIP")));
        assert_eq!(updated["version"], 2);
    }
}

api_test! {
    /// A receiver that is down gets every event once it is back; each retry
    /// of an event carries the same `webhook-id` and body; the log shows
    /// every attempt.
    async fn a_receiver_down_for_a_while_gets_every_event(app) {
        let app = app.delivering(webhook_settings()).await;
        let receiver = Receiver::start().await;
        receiver.answer(503, None);
        let (path, secret) = endpoint(&app, &receiver, json!(["tag.created"])).await;
        for name in ["a", "b", "c"] {
            app.post("/v3/tags", json!({ "name": name })).await.expect(201);
        }
        receiver.wait_for("two attempts of each", |got| got.len() >= 6).await;
        receiver.answer(200, None);
        let got = receiver.wait_for("each event accepted", |got| {
            got.iter().filter(|r| r.answered == 200).count() >= 3
        }).await;
        let accepted: std::collections::BTreeSet<&str> = got.iter().filter(|r| r.answered == 200).map(Received::id).collect();
        assert_eq!(accepted.len(), 3, "one accepted delivery per event");
        for id in &accepted {
            let tries: Vec<&Received> = got.iter().filter(|r| r.id() == *id).collect();
            assert!(tries.len() >= 2, "{id} was retried");
            assert!(tries.iter().all(|r| r.body == tries[0].body && r.verifies_with(&secret)));
        }
        let deliveries = log_when(&app, &path, |log| log.len() == 3 && log.iter().all(|d| d["status"] == "succeeded")).await;
        for d in &deliveries {
            assert_eq!(d["status"], "succeeded");
            let attempts = d["attempts"].as_array().unwrap();
            assert!(attempts.len() >= 2 && attempts[0]["statusCode"] == 503, "{d}");
            assert_eq!(attempts.last().unwrap()["statusCode"], 200);
            assert_eq!(attempts.last().unwrap()["response"], "status 200");
            assert!(d["id"].as_str().unwrap().starts_with("dlv_"));
        }
    }
}

api_test! {
    /// A `429` (or `503`) with `Retry-After` is tried again no sooner than
    /// it asks, though the schedule's next wait is shorter.
    async fn retry_after_is_honoured(app) {
        let app = app.delivering(webhook_settings()).await;
        let receiver = Receiver::start().await;
        receiver.answer(429, Some("2"));
        let (path, _) = endpoint(&app, &receiver, json!(["tag.created"])).await;
        app.post("/v3/tags", json!({ "name": "a" })).await.expect(201);
        let log = log_when(&app, &path, |log| log.len() == 1 && log[0]["attemptCount"] == 1 && log[0]["status"] == "pending").await;
        let at = |v: &Value| chrono::DateTime::parse_from_rfc3339(v.as_str().unwrap()).unwrap();
        let (first, next) = (at(&log[0]["attempts"][0]["at"]), at(&log[0]["nextAttemptAt"]));
        assert!(next - first >= chrono::Duration::seconds(2), "the next attempt at {next}, the first at {first}");
        receiver.answer(200, None);
        let log = log_when(&app, &path, |log| log[0]["status"] == "succeeded").await;
        assert!(at(&log[0]["attempts"][1]["at"]) - first >= chrono::Duration::seconds(2), "{log:?}");
    }
}

api_test! {
    /// A slow endpoint holds at most `CRM_WEBHOOK_CONCURRENCY` deliveries at a
    /// time and delays no other endpoint's: the fast one gets every event
    /// while the slow one still holds its first.
    async fn a_slow_endpoint_delays_no_other(app) {
        let mut settings = webhook_settings();
        settings.concurrency = 2;
        let app = app.delivering(settings).await;
        let (slow, fast) = (Receiver::start().await, Receiver::start().await);
        slow.hold();
        endpoint(&app, &slow, json!(["tag.created"])).await;
        endpoint(&app, &fast, json!(["tag.created"])).await;
        for i in 0..8 {
            app.post("/v3/tags", json!({ "name": format!("t{i}") })).await.expect(201);
        }
        fast.wait_for("all eight", |got| got.len() == 8).await;
        // Long enough for a delivery with no free slot to come back from the queue.
        tokio::time::sleep(std::time::Duration::from_millis(1600)).await;
        assert_eq!(slow.most_at_once(), 2, "two deliveries at a time to the slow endpoint");
        slow.release();
        slow.wait_for("all eight, once released", |got| got.len() >= 8).await;
        assert_eq!(slow.most_at_once(), 2);
    }
}

api_test! {
    /// `410 Gone` disables the endpoint at once, and that is a
    /// `webhook.disabled` event (delivered to the other endpoints).
    async fn gone_disables_the_endpoint(app) {
        let app = app.delivering(webhook_settings()).await;
        let (gone, watcher) = (Receiver::start().await, Receiver::start().await);
        let (path, _) = endpoint(&app, &gone, json!(["tag.*"])).await;
        endpoint(&app, &watcher, json!(["webhook.disabled"])).await;
        gone.answer(410, None);
        app.post("/v3/tags", json!({ "name": "a" })).await.expect(201);
        let got = watcher.wait_for("webhook.disabled", |got| !got.is_empty()).await;
        let disabled = got[0].event();
        assert_eq!(disabled["type"], "webhook.disabled");
        assert_eq!(disabled["data"]["object"]["enabled"], false);
        let endpoint = app.get(&path).await.expect(200);
        assert_eq!(endpoint["enabled"], false);
        assert!(endpoint["disabledReason"].as_str().unwrap().contains("410"), "{endpoint}");
        assert_eq!(gone.received().len(), 1, "no retry after a 410");
    }
}

api_test! {
    /// An endpoint whose every attempt failed for `CRM_WEBHOOK_DISABLE_AFTER`
    /// is disabled (here after 300 ms instead of five days).
    async fn days_of_failures_disable_the_endpoint(app) {
        let mut settings = webhook_settings();
        settings.disable_after = std::time::Duration::from_millis(300);
        settings.schedule = vec![std::time::Duration::from_millis(100); 20];
        let app = app.delivering(settings).await;
        let receiver = Receiver::start().await;
        receiver.answer(500, None);
        let (path, _) = endpoint(&app, &receiver, json!(["tag.*"])).await;
        app.post("/v3/tags", json!({ "name": "a" })).await.expect(201);
        let mut endpoint = Value::Null;
        for _ in 0..500 {
            endpoint = app.get(&path).await.expect(200);
            if endpoint["enabled"] == false {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        assert_eq!(endpoint["enabled"], false, "{endpoint}");
        assert!(endpoint["disabledReason"].as_str().unwrap().contains("every attempt failed"), "{endpoint}");
    }
}

api_test! {
    /// After a rotation each delivery is signed by both secrets until the
    /// overlap ends; the new secret is shown once.
    async fn a_rotation_signs_with_both_secrets(app) {
        let app = app.delivering(webhook_settings()).await;
        let receiver = Receiver::start().await;
        let (path, old) = endpoint(&app, &receiver, json!(["tag.*"])).await;
        let rotated = app.post(&format!("{path}/rotate-secret"), json!({})).await.expect(200);
        let new = rotated["secret"].as_str().unwrap().to_owned();
        assert_ne!(new, old);
        assert!(rotated["previousSecretExpiresAt"].is_string());
        app.post("/v3/tags", json!({ "name": "a" })).await.expect(201);
        let got = receiver.wait_for("a delivery", |got| !got.is_empty()).await;
        assert!(got[0].verifies_with(&new) && got[0].verifies_with(&old));
        assert_eq!(got[0].headers["webhook-signature"].to_str().unwrap().split(' ').count(), 2);
    }
}

api_test! {
    /// A ping answers how it went; a delivery is sent again on request, and a
    /// replay delivers every matching event since a time again, each with its
    /// event's `webhook-id`.
    async fn ping_retry_and_replay(app) {
        let app = app.delivering(webhook_settings()).await;
        let receiver = Receiver::start().await;
        let (path, secret) = endpoint(&app, &receiver, json!(["tag.created"])).await;
        let ping = app.post(&format!("{path}/test"), json!({})).await.expect(200);
        assert_eq!((ping["eventType"].clone(), ping["status"].clone()), (json!("webhook.ping"), json!("succeeded")));
        let since = api_tests::serde_json::to_value(chrono::Utc::now() - chrono::Duration::seconds(5)).unwrap();
        for name in ["a", "b"] {
            app.post("/v3/tags", json!({ "name": name })).await.expect(201);
        }
        receiver.wait_for("the ping and two events", |got| got.len() >= 3).await;
        log_when(&app, &path, |log| log.len() == 3 && log.iter().all(|d| d["status"] == "succeeded")).await;
        let log = app.get(&format!("{path}/deliveries?limit=1")).await.expect(200);
        assert_eq!(log["data"].as_array().unwrap().len(), 1);
        let newest = log["data"][0].clone();
        let after = log["nextCursor"].as_str().unwrap();
        let rest = app.get(&format!("{path}/deliveries?after={after}")).await.expect(200);
        assert_eq!(rest["data"].as_array().unwrap().len(), 2, "{rest}");
        let retried = app.post(&format!("{path}/deliveries/{}/retry", newest["id"].as_str().unwrap()), json!({})).await.expect(200);
        assert_eq!(retried["status"], "pending");
        let got = receiver.wait_for("the retry", |got| got.len() >= 4).await;
        assert_eq!(got[3].id(), newest["eventId"].as_str().unwrap());
        let replay = app.post(&format!("{path}/replay"), json!({ "since": since })).await.expect(200);
        assert_eq!((replay["queued"].clone(), replay["hasMore"].clone()), (json!(2), json!(false)));
        let got = receiver.wait_for("the replay", |got| got.len() >= 6).await;
        assert!(got.iter().all(|r| r.verifies_with(&secret)));
        let replayed: Vec<&str> = got[4..].iter().map(Received::id).collect();
        let first: Vec<&str> = got[1..3].iter().map(Received::id).collect();
        assert_eq!(replayed.iter().collect::<std::collections::BTreeSet<_>>(), first.iter().collect());
        app.post(&format!("{path}/deliveries/dlv_nope/retry"), json!({})).await.expect_error(404);
        app.post(&format!("{path}/replay"), json!({ "since": "yesterday" })).await.expect_field_error("since");
    }
}

api_test! {
    /// A replay reaches the events from before the log's shards (in its
    /// first partition; their deliveries name no shard) and the later ones
    /// in their shards: each delivery reads its event where it is.
    async fn a_replay_reads_each_event_in_its_shard(app) {
        let app = app.delivering(webhook_settings()).await;
        let receiver = Receiver::start().await;
        let (path, _) = endpoint(&app, &receiver, json!(["tag.created"])).await;
        let mut old = Vec::new();
        for i in 0..2 {
            let cursor = app.an_old_event("tag.created", &format!("old-{i}"), &format!("2024-06-01T00:00:0{i}Z")).await;
            old.push(format!("evt_{cursor}"));
        }
        for i in 0..6 {
            app.post("/v3/tags", json!({ "name": format!("t{i}") })).await.expect(201);
        }
        receiver.wait_for("the live deliveries", |got| got.len() >= 6).await;
        let live: std::collections::BTreeSet<String> = receiver.received().iter().map(|r| r.id().to_owned()).collect();
        let replay = app.post(&format!("{path}/replay"), json!({ "since": "2024-01-01T00:00:00Z" })).await.expect(200);
        assert_eq!(replay["queued"], 8, "{replay}");
        let got = receiver.wait_for("the replay", |got| got.len() >= 14).await;
        let replayed: std::collections::BTreeSet<String> = got[6..].iter().map(|r| r.id().to_owned()).collect();
        let expected: std::collections::BTreeSet<String> = live.into_iter().chain(old).collect();
        assert_eq!(replayed, expected, "every event's body read, old and new");
        assert!(got[6..].iter().all(|r| r.kind() == "tag.created"));
    }
}

api_test! {
    /// An endpoint's deliveries over their shards: those from before the
    /// cutover (in their one partition) and the new ones spread over the
    /// shards list as one log, newest first, page by page.
    async fn the_delivery_log_reads_its_shards_and_its_partition_from_before(app) {
        use shared::domain::webhooks::Delivery;
        let app = app.delivering(webhook_settings()).await;
        let receiver = Receiver::start().await;
        let (path, _) = endpoint(&app, &receiver, json!(["tag.created"])).await;
        for i in 0..8 {
            app.post("/v3/tags", json!({ "name": format!("t{i}") })).await.expect(201);
        }
        let log = log_when(&app, &path, |log| log.len() == 8 && log.iter().all(|d| d["status"] == "succeeded")).await;
        let hook = path.trim_start_matches("/v3/webhooks/");
        let ws = shared::ids::WorkspaceId(1);
        let newest = log[0]["id"].as_str().unwrap().trim_start_matches("dlv_").to_owned();
        let item = app.store.get(&shared::keys::delivery(ws, hook, &newest), true).await.unwrap().unwrap();
        let mut expected: Vec<String> = log.iter().map(|d| d["id"].as_str().unwrap().to_owned()).collect();
        for n in 0..2 {
            // A copy made on 2024-06-01, before the suites' cutover (`api_tests::SHARDED_FROM`).
            let mut old: Delivery = shared::record::from_item(item.clone()).unwrap();
            old.id = shared::domain::events::cursor_at(format!("2024-06-01T00:00:0{n}Z").parse().unwrap());
            let stored = shared::record::to_item(&old).unwrap();
            assert_eq!(stored["pk"], json!(format!("W#1#DELIVERY#{hook}")), "a delivery from before is in shard 0");
            app.store.write(vec![shared::store::Write::Put { item: stored, condition: None }]).await.unwrap();
            expected.push(format!("dlv_{}", old.id));
        }
        expected.sort();
        expected.reverse();
        let mut listed = Vec::new();
        let mut after = String::new();
        loop {
            let page = app.get(&format!("{path}/deliveries?limit=3{after}")).await.expect(200);
            listed.extend(page["data"].as_array().unwrap().iter().map(|d| d["id"].as_str().unwrap().to_owned()));
            match page["nextCursor"].as_str() {
                Some(next) => after = format!("&after={next}"),
                None => break,
            }
        }
        assert_eq!(listed, expected, "newest first, the two from before last");
    }
}

api_test! {
    /// An import delivers its `import.completed` with its counts, not one
    /// event per row, unless the endpoint opted in to rows.
    async fn an_import_is_one_event(app) {
        let app = app.delivering(webhook_settings()).await;
        let (quiet, rows) = (Receiver::start().await, Receiver::start().await);
        endpoint(&app, &quiet, json!(["*"])).await;
        let created = app.post("/v3/webhooks", json!({ "url": rows.url, "types": ["contact.created", "import.completed"], "importRows": true })).await.expect(201);
        assert_eq!(created["importRows"], true);
        let contacts: Vec<Value> = (0..5).map(|i| json!({ "name": format!("C{i}"), "phone": format!("21 98888-00{i:02}") })).collect();
        app.post("/v3/contacts/import", json!({ "contacts": contacts })).await.expect(201);
        let got = quiet.wait_for("import.completed", |got| got.iter().any(|r| r.kind() == "import.completed")).await;
        let completed = got.iter().find(|r| r.kind() == "import.completed").unwrap().event();
        assert_eq!(completed["data"]["object"]["created"], 5, "{completed}");
        rows.wait_for("five rows and the completion", |got| got.len() >= 6).await;
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        assert!(!kinds(&quiet.received()).iter().any(|k| k == "contact.created"), "{:?}", kinds(&quiet.received()));
    }
}

api_test! {
    /// No delivery reaches the inside: an address literal of a private class,
    /// and a name that is loopback or resolves to the inside, are refused at
    /// creation and at a change of `url`; a name that came to point inside
    /// after its registration is refused at each delivery (the attempt says
    /// why), unless allowed for development.
    async fn no_delivery_reaches_the_inside(app) {
        let receiver = Receiver::start().await;
        let port = receiver.url.rsplit(':').next().unwrap().to_owned();
        // Registered while private addresses were allowed, as a name that
        // pointed outside then would be: each attempt checks it again.
        let created = app.post("/v3/webhooks", json!({ "url": format!("https://localhost:{port}"), "types": ["tag.*"] })).await.expect(201);
        let path = format!("/v3/webhooks/{}", created["id"].as_str().unwrap());
        let mut settings = webhook_settings();
        settings.allow_private = false;
        settings.schedule = vec![];
        let app = app.delivering(settings).await;
        for url in [
            "https://169.254.169.254/latest/meta-data/", "https://127.0.0.1/", "https://10.1.2.3/",
            "https://[::1]/", "https://[fd00:ec2::254]/", "https://[::ffff:169.254.169.254]/",
            "https://[fe80::1]/", "https://192.168.0.1/", "http://hooks.example.com/",
            "https://localhost/", "https://LOCALHOST/", "https://localhost./", "https://localhost:443/",
            "https://hooks.localhost/", &format!("https://localhost:{port}"),
        ] {
            let e = app.post("/v3/webhooks", json!({ "url": url })).await.expect_field_error("url");
            assert!(e["message"].as_str().unwrap().contains("url"), "{e}");
        }
        app.patch(&path, json!({ "url": "https://LocalHost./elsewhere" })).await.expect_field_error("url");
        assert_eq!(app.get("/v3/webhooks").await.expect(200)["totalCount"], 1, "nothing refused was made");
        app.post("/v3/tags", json!({ "name": "a" })).await.expect(201);
        let failed = log_when(&app, &path, |log| log.first().is_some_and(|d| d["status"] == "failed")).await[0].clone();
        let error = failed["attempts"][0]["error"].as_str().unwrap_or_default();
        assert!(error.contains("loopback"), "{failed}");
        assert!(receiver.received().is_empty());
    }
}

api_test! {
    /// An endpoint reads with the token that registered it (#49). Revoking
    /// the token disables it at once, saying why, and nothing more is sent,
    /// not even a ping; a token that does not read its types cannot take it
    /// over (403 naming the scope); another that does registers it anew,
    /// and it delivers again.
    async fn an_endpoint_stops_with_the_token_that_registered_it(app) {
        use shared::auth::{Resource, Scope};
        let app = app.delivering(webhook_settings()).await;
        let receiver = Receiver::start().await;
        let owner = api_tests::token_with(&app, &[Scope::Read(Resource::Tags), Scope::Write(Resource::Webhooks)]).await;
        let created = app.as_token(&owner).post("/v3/webhooks", json!({ "url": receiver.url, "types": ["tag.*"] })).await.expect(201);
        let path = format!("/v3/webhooks/{}", created["id"].as_str().unwrap());
        assert_eq!(created["owner"]["scopes"], json!(["tags:read", "webhooks:write"]), "{created}");
        let token_id = created["owner"]["tokenId"].as_str().unwrap().to_owned();
        app.post("/v3/tags", json!({ "name": "before" })).await.expect(201);
        receiver.wait_for("the tag", |got| !got.is_empty()).await;

        app.delete(&format!("/v3/api-tokens/{token_id}")).await.expect(200);
        let read = app.get(&path).await.expect(200);
        assert_eq!(read["enabled"], false, "{read}");
        assert!(read["disabledReason"].as_str().unwrap().contains("revoked"), "{read}");
        app.post("/v3/tags", json!({ "name": "after" })).await.expect(201);
        let refused = app.post(&format!("{path}/test"), json!({})).await.expect_error(409);
        assert!(refused["message"].as_str().unwrap().contains("revoked"), "{refused}");
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        assert_eq!(receiver.received().len(), 1, "nothing after the revocation: {:?}", kinds(&receiver.received()));

        let hooks_only = api_tests::token_with(&app, &[Scope::Write(Resource::Webhooks)]).await;
        for patch in [json!({ "enabled": true }), json!({ "url": receiver.url }), json!({ "types": ["tag.created"] })] {
            let refused = app.as_token(&hooks_only).patch(&path, patch).await.expect_error(403);
            assert!(refused["message"].as_str().unwrap().contains("`tags:read`"), "{refused}");
        }
        let again = app.patch(&path, json!({ "enabled": true })).await.expect(200);
        assert_eq!(again["owner"]["scopes"], json!(["admin"]));
        app.post("/v3/tags", json!({ "name": "again" })).await.expect(201);
        receiver.wait_for("the tag after the new registration", |got| {
            got.iter().any(|r| r.event()["data"]["object"]["name"] == "again")
        }).await;
    }
}

/// Rewrites workspace 1's stored endpoint `id` with `change`: as time
/// passing, or an earlier version, would have left it.
async fn rewrite(app: &TestApp, id: &str, change: impl FnOnce(&mut shared::store::Item)) {
    let key = shared::keys::webhook(shared::ids::WorkspaceId(1), id);
    let mut item = app
        .store
        .get(&key, true)
        .await
        .unwrap()
        .expect("the endpoint");
    change(&mut item);
    app.store
        .write(vec![shared::store::Write::Put {
            item,
            condition: None,
        }])
        .await
        .unwrap();
}

api_test! {
    /// Once the registering token has expired, the next delivery sends
    /// nothing and disables the endpoint, saying why; an endpoint kept
    /// from before owners (none stored) sends nothing either, and a replay
    /// or ping of it is a 409, until a token registers it anew.
    async fn an_endpoint_stops_when_its_token_expires(app) {
        let app = app.delivering(webhook_settings()).await;
        let receiver = Receiver::start().await;
        let (path, _) = endpoint(&app, &receiver, json!(["tag.*"])).await;
        let id = path.rsplit('/').next().unwrap().to_owned();
        // Its token's expiry, as the endpoint keeps it, passed.
        rewrite(&app, &id, |item| {
            let past = shared::ids::format_ts(&(chrono::Utc::now() - chrono::Duration::seconds(1)));
            item.get_mut("owner").unwrap()["expiresAt"] = json!(past);
        }).await;
        app.post("/v3/tags", json!({ "name": "late" })).await.expect(201);
        let log = log_when(&app, &path, |log| log.first().is_some_and(|d| d["status"] == "failed")).await;
        assert!(log[0]["reason"].as_str().unwrap().contains("expired"), "{log:?}");
        let read = app.get(&path).await.expect(200);
        assert_eq!(read["enabled"], false, "{read}");
        assert!(read["disabledReason"].as_str().unwrap().contains("expired"), "{read}");
        assert!(receiver.received().is_empty());

        // No owner stored (an endpoint from before): nothing is sent.
        app.patch(&path, json!({ "enabled": true })).await.expect(200);
        rewrite(&app, &id, |item| {
            item.remove("owner");
        }).await;
        assert!(app.get(&path).await.expect(200).get("owner").is_none());
        app.post(&format!("{path}/test"), json!({})).await.expect_error(409);
        let since = api_tests::serde_json::to_value(chrono::Utc::now() - chrono::Duration::minutes(1)).unwrap();
        app.post(&format!("{path}/replay"), json!({ "since": since })).await.expect_error(409);
        app.post("/v3/tags", json!({ "name": "ownerless" })).await.expect(201);
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        assert!(receiver.received().is_empty(), "{:?}", kinds(&receiver.received()));
        // Registered anew: it delivers.
        app.patch(&path, json!({ "types": ["tag.*"] })).await.expect(200);
        app.post("/v3/tags", json!({ "name": "owned" })).await.expect(201);
        receiver.wait_for("the tag once registered anew", |got| !got.is_empty()).await;
    }
}

api_test! {
    /// Each event type of the group is made by its change (docs/api-contract.md,
    /// "Events"; `events.rs` fails for a declared type no suite makes).
    async fn each_change_of_an_endpoint_makes_its_event_type(app) {
        let hook = app.post("/v3/webhooks", json!({ "url": "https://203.0.114.7/hooks" })).await.expect(201);
        let hook = format!("/v3/webhooks/{}", hook["id"].as_str().unwrap());
        for change in [json!({ "description": "CRM sync" }), json!({ "enabled": false }), json!({ "enabled": true })] {
            app.patch(&hook, change).await.expect(200);
        }
        app.delete(&hook).await.expect(200);
        app.assert_made_events(&["webhook.created", "webhook.updated", "webhook.disabled", "webhook.enabled", "webhook.deleted"]).await;
    }
}

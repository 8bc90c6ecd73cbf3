//! Scopes: every operation refuses a token without the scope it declares
//! (403 in the error shape, naming it, with `X-Accepted-Scopes`) and lets
//! one with it through; what a token may give another; expiry; the caller's
//! own token; a token with every scope of its workspace sees nothing of
//! another; and events (the feed, histories, webhooks) are read with the
//! scopes of the records they carry.

use std::collections::HashMap;

use api_tests::serde_json::{Value, json};
use api_tests::{TestApp, api_test, token_with};
use chrono::Duration;
use http::Method;
use shared::auth::{Need, Resource, Scope};

/// [`token_with`], made once per set of scopes.
async fn cached(app: &TestApp, tokens: &mut HashMap<Vec<Scope>, String>, held: &[Scope]) -> String {
    if let Some(token) = tokens.get(held) {
        return token.clone();
    }
    let token = token_with(app, held).await;
    tokens.insert(held.to_vec(), token.clone());
    token
}

/// A path of the route with each `{parameter}` filled in.
fn concrete(path: &str) -> String {
    path.split('/')
        .map(|part| match part {
            "{action}" => "start",
            part if part.starts_with('{') => "1",
            part => part,
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// The scopes a token lacking `needed` holds: another group's, or (for a
/// write) the read of the same group, or (for admin) the whole workspace.
fn lacking(needed: Scope) -> Vec<Vec<Scope>> {
    let other = |r: Resource| {
        if r == Resource::Tags {
            Resource::Deals
        } else {
            Resource::Tags
        }
    };
    match needed {
        Scope::Read(r) => vec![vec![Scope::Write(other(r))]],
        Scope::Write(r) => vec![
            vec![Scope::Write(other(r))],
            vec![Scope::Read(r), Scope::ReadAll],
        ],
        Scope::ReadAll => vec![vec![Scope::Read(Resource::Tags)]],
        Scope::WriteAll => vec![vec![Scope::ReadAll]],
        Scope::Admin => vec![vec![Scope::WriteAll]],
        // An erasure is given on its own: no write grants it.
        Scope::EraseContacts => vec![
            vec![Scope::WriteAll],
            vec![Scope::Write(Resource::Contacts)],
        ],
    }
}

api_test! {
    /// The matrix: each operation against a token without its scope (403,
    /// naming it) and with exactly it (anything but 401 and 403).
    async fn every_operation_needs_its_scope(app) {
        let mut tokens: HashMap<Vec<Scope>, String> = HashMap::new();
        for group in crm::groups() {
            for route in group.routes() {
                let Some(Need::Scope(needed)) = route.need else { continue };
                let method = route.method.clone();
                let path = concrete(route.path);
                let body = (method != Method::GET).then(|| json!({}));
                for held in lacking(needed) {
                    let token = cached(&app, &mut tokens, &held).await;
                    let answer = app.send(method.clone(), &path, Some(&token), body.clone()).await;
                    assert_eq!(answer.status, 403, "{method} {path} with {held:?}: {}", answer.body);
                    assert!(answer.body["message"].as_str().unwrap().contains(&format!("`{needed}`")), "{}", answer.body);
                    let accepted = answer.headers["x-accepted-scopes"].to_str().unwrap();
                    assert!(accepted.split(", ").any(|s| s == needed.to_string()), "{method} {path}: {accepted}");
                }
                let token = if needed == Scope::Admin {
                    api_tests::ADMIN_TOKEN.to_owned()
                } else {
                    cached(&app, &mut tokens, &[needed]).await
                };
                let answer = app.send(method.clone(), &path, Some(&token), body.clone()).await;
                assert!(![401, 403].contains(&answer.status.as_u16()), "{method} {path} with `{needed}`: {} {}", answer.status, answer.body);
            }
        }
    }
}

api_test! {
    /// A token gives no scope it lacks: it makes tokens of its own scopes or
    /// narrower; left out, the new token gets the creator's scopes. It
    /// revokes no token that holds more.
    async fn a_token_gives_no_more_than_it_has(app) {
        let writer = token_with(&app, &[Scope::Write(Resource::Contacts), Scope::Write(Resource::ApiTokens)]).await;
        let writer = app.as_token(&writer);
        let refused = writer.post("/v3/api-tokens", json!({ "name": "more", "scopes": ["deals:read"] })).await.expect_error(403);
        assert!(refused["message"].as_str().unwrap().contains("deals:read"), "{refused}");
        writer.post("/v3/api-tokens", json!({ "name": "admin", "scopes": ["admin"] })).await.expect_error(403);
        writer.post("/v3/api-tokens", json!({ "name": "none", "scopes": [] })).await.expect_field_error("scopes");
        let narrower = writer.post("/v3/api-tokens", json!({ "name": "reader", "scopes": ["contacts:read"] })).await.expect(201);
        assert_eq!(narrower["scopes"], json!(["contacts:read"]));
        let same = writer.post("/v3/api-tokens", json!({ "name": "same" })).await.expect(201);
        assert_eq!(same["scopes"], json!(["contacts:write", "api-tokens:write"]));
        let reader = app.as_token(narrower["token"].as_str().unwrap());
        reader.get("/v3/contacts").await.expect(200);
        reader.post("/v3/contacts", json!({ "name": "Ana" })).await.expect_error(403);
        // The admin's token holds more than the writer: not the writer's to revoke.
        let admin_id = app.get("/v3/api-tokens/self").await.expect(200)["id"].as_str().unwrap().to_owned();
        writer.delete(&format!("/v3/api-tokens/{admin_id}")).await.expect_error(403);
        writer.delete(&format!("/v3/api-tokens/{}", narrower["id"].as_str().unwrap())).await.expect(200);
        writer.post("/v3/api-tokens", json!({ "name": "bad", "scopes": ["contacts:delete"] })).await.expect_field_error("scopes[0]");
    }
}

api_test! {
    /// `GET /v3/api-tokens/self`: any token reads its own name, scopes and
    /// expiry, never its secret.
    async fn a_token_reads_itself(app) {
        let expires = "2030-01-01T00:00:00.000Z";
        let created = app.post("/v3/api-tokens", json!({ "name": "bi", "scopes": ["*:read"], "expiresAt": expires })).await.expect(201);
        let secret = created["token"].as_str().unwrap();
        let own = app.as_token(secret).get("/v3/api-tokens/self").await.expect(200);
        assert_eq!((own["id"].clone(), own["name"].clone(), own["scopes"].clone(), own["expiresAt"].clone()),
            (created["id"].clone(), json!("bi"), json!(["*:read"]), json!(expires)));
        assert!(!own.to_string().contains(&secret[8..]), "{own}");
        let admin = app.get("/v3/api-tokens/self").await.expect(200);
        assert_eq!(admin["scopes"], json!(["admin"]));
    }
}

api_test! {
    /// A token past its `expiresAt` is a 401, from its first request after.
    async fn an_expired_token_is_refused(app) {
        let (app, clock) = app.with_manual_clock();
        let at = (shared::ids::now() + Duration::hours(1)).to_rfc3339();
        let created = app.post("/v3/api-tokens", json!({ "name": "brief", "expiresAt": at })).await.expect(201);
        let token = app.as_token(created["token"].as_str().unwrap());
        token.get("/v3/tags").await.expect(200);
        clock.advance(Duration::hours(1) + Duration::seconds(1));
        let refused = token.get("/v3/tags").await.expect_error(401);
        assert!(refused["message"].as_str().unwrap().contains("expired"), "{refused}");
        token.post("/v3/tags", json!({ "name": "late" })).await.expect_error(401);
    }
}

api_test! {
    /// A token holding every scope of its workspace still finds nothing of
    /// another: 404, as an id that does not exist.
    async fn every_scope_stays_in_its_workspace(app) {
        let (_, other) = app.new_workspace("Other").await;
        let theirs = app.as_token(&other).post("/v3/tags", json!({ "name": "Theirs" })).await.expect(201);
        let every: Vec<Scope> = Scope::all().into_iter().filter(|s| *s != Scope::Admin).collect();
        let mine = token_with(&app, &every).await;
        let mine = app.as_token(&mine);
        mine.get(&format!("/v3/tags/{}", theirs["id"].as_str().unwrap())).await.expect_error(404);
        mine.patch(&format!("/v3/tags/{}", theirs["id"].as_str().unwrap()), json!({ "name": "Mine" })).await.expect_error(404);
        let listed: Value = mine.get("/v3/tags").await.expect(200);
        assert!(!listed.to_string().contains("Theirs"));
    }
}

// ------------------------------------------------------------ events (#49)

/// One event of every type but the ping in workspace 1's log, as a change
/// writes it, a minute old: settled for the feed, older than any endpoint
/// (so only a replay sends them). Their types, in order.
async fn every_type_in_the_log(app: &TestApp) -> Vec<String> {
    use shared::domain::events;
    use shared::record::{Event, EventData, StoredEvent};
    let base = chrono::Utc::now() - Duration::minutes(1);
    let mut writes = Vec::new();
    let mut kinds = Vec::new();
    for (i, kind) in events::TYPES
        .iter()
        .filter(|t| **t != "webhook.ping")
        .enumerate()
    {
        let at = base + Duration::milliseconds(i as i64);
        let cursor = events::cursor_at(at);
        let (resource, _) = kind.split_once('.').unwrap();
        let stored = StoredEvent {
            event: Event {
                id: format!("evt_{cursor}"),
                kind: (*kind).to_owned(),
                workspace_id: shared::ids::WorkspaceId(1),
                occurred_at: at,
                cursor,
                resource: resource.to_owned(),
                resource_id: format!("matrix-{i}"),
                version: Some(1),
                data: EventData {
                    object: json!({ "id": format!("matrix-{i}") }),
                    previous: None,
                },
                token_id: "matrix".into(),
                request_id: "matrix".into(),
            },
            ttl: (at + Duration::days(30)).timestamp(),
        };
        let item = shared::record::to_item(&stored).unwrap();
        writes.push(shared::store::Write::Put {
            item,
            condition: None,
        });
        kinds.push((*kind).to_owned());
    }
    app.store.write(writes).await.unwrap();
    kinds
}

/// The event types a group's read scope reads, of `kinds`.
fn read_by(group: Resource, kinds: &[String]) -> Vec<String> {
    kinds
        .iter()
        .filter(|k| shared::domain::events::read_scope(k.as_str()) == Some(Scope::Read(group)))
        .cloned()
        .collect()
}

/// The resources (`contact`, `import`...) whose events `group` reads.
fn resources_of(group: Resource) -> Vec<&'static str> {
    shared::domain::events::READ_BY
        .iter()
        .filter(|(_, g)| *g == group)
        .map(|(r, _)| *r)
        .collect()
}

/// The settled feed with `token`, from the start: every event's type.
async fn feed_as(app: &TestApp, token: &str) -> Vec<String> {
    let mut kinds = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..1000 {
        let after = cursor
            .as_deref()
            .map(|c| format!("&after={c}"))
            .unwrap_or_default();
        let page = app
            .as_token(token)
            .get(&format!("/v3/events?limit=100{after}"))
            .await
            .expect(200);
        kinds.extend(
            page["data"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| e["type"].as_str().unwrap().to_owned()),
        );
        cursor = page["nextCursor"].as_str().map(str::to_owned);
        if page["hasMore"] != true {
            return kinds;
        }
    }
    panic!("the feed did not end");
}

/// A 403 in the error shape that names `scope`, with `X-Accepted-Scopes`.
#[track_caller]
fn refused_for(answer: api_tests::TestResponse, scope: Scope) {
    let accepted = answer
        .headers
        .get("x-accepted-scopes")
        .map(|v| v.to_str().unwrap().to_owned());
    let body = answer.expect_error(403);
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains(&format!("`{scope}`")),
        "{body}"
    );
    assert!(
        accepted.is_some_and(|a| a.split(", ").any(|s| s == scope.to_string())),
        "{body}"
    );
}

api_test! {
    /// The matrix covers events: for each scope group, a token without its
    /// read scope (holding every other group's, `events:read` and
    /// `webhooks:write`) sees none of its events in the feed, gets 403 from
    /// its histories and from a `types` filter or an endpoint naming them,
    /// and an endpoint it registers for `*` is never sent one, not even by
    /// a replay; a token with the scope sees, and is sent, every one.
    async fn the_scope_matrix_covers_events(app) {
        let app = app.delivering(api_tests::webhook_settings()).await;
        let contact = app.a_contact().await;
        let deal = app.post("/v3/deals", json!({ "name": "Plan", "value": 10, "status": "open", "contactId": contact,
            "operatorId": 7, "groupId": 1, "pipelineId": "p", "stageId": "s", "origin": "site", "tagIds": [] })).await.expect(201);
        let record_of = |group: Resource| match group {
            Resource::Contacts => contact.to_string(),
            Resource::Deals => deal["id"].as_str().unwrap().to_owned(),
            other => panic!("a history route of {other:?}: give the matrix one of its records"),
        };
        let since = api_tests::serde_json::to_value(chrono::Utc::now() - Duration::minutes(2)).unwrap();
        let kinds = every_type_in_the_log(&app).await;
        let mut groups: Vec<Resource> = shared::domain::events::READ_BY.iter().map(|(_, g)| *g).collect();
        groups.sort();
        groups.dedup();
        let histories: Vec<(Resource, &'static str)> = crm::groups().iter()
            .flat_map(|g| g.routes().iter().filter_map(|r| match r.need {
                Some(Need::Scope(Scope::Read(resource))) if r.path.ends_with("/history") => Some((resource, r.path)),
                _ => None,
            }).collect::<Vec<_>>())
            .collect();
        assert_eq!(histories.len(), 2, "{histories:?}");

        for group in groups {
            let needed = Scope::Read(group);
            let theirs = read_by(group, &kinds);
            assert!(!theirs.is_empty(), "{group:?} reads no event type");
            let others: Vec<Scope> = shared::domain::events::READ_BY.iter().map(|(_, g)| *g)
                .filter(|g| *g != group && *g != Resource::Webhooks)
                .map(Scope::Read)
                .collect();
            let mut without = others.clone();
            without.push(Scope::Read(Resource::Events));
            if group != Resource::Webhooks {
                without.push(Scope::Write(Resource::Webhooks));
            }
            // With the scope: to read (the feed, histories), and to register endpoints.
            let reader = token_with(&app, &[needed, Scope::Read(Resource::Events)]).await;
            let with = vec![needed, Scope::Write(Resource::Webhooks)];
            let (without, with) = (token_with(&app, &without).await, token_with(&app, &with).await);

            // The feed: none of them without the scope, every one with it.
            let seen = feed_as(&app, &without).await;
            assert!(!seen.iter().any(|k| theirs.contains(k)), "{group:?}: {seen:?}");
            assert!(!seen.is_empty(), "{group:?}: the other groups' events are shown");
            let seen = feed_as(&app, &reader).await;
            assert!(theirs.iter().all(|k| seen.contains(k)), "{group:?}: {seen:?}");
            assert!(seen.iter().all(|k| theirs.contains(k)), "{group:?}: {seen:?}");
            for resource in resources_of(group) {
                refused_for(app.as_token(&without).get(&format!("/v3/events?types={resource}.*")).await, needed);
                app.as_token(&reader).get(&format!("/v3/events?types={resource}.*")).await.expect(200);
            }
            refused_for(app.as_token(&without).get(&format!("/v3/events?types={}", theirs[0])).await, needed);

            // The histories.
            for (resource, path) in histories.iter().filter(|(r, _)| *r == group) {
                let path = path.replace("{id}", &record_of(*resource));
                refused_for(app.as_token(&without).get(&path).await, needed);
                let history = app.as_token(&reader).get(&path).await.expect(200);
                assert!(!history["data"].as_array().unwrap().is_empty(), "{path}: {history}");
            }

            // Endpoints.
            if group == Resource::Webhooks {
                // Without any webhooks scope no endpoint is registered at all.
                let answer = app.as_token(&without).post("/v3/webhooks", json!({ "url": "https://203.0.114.7/h", "types": ["*"] })).await;
                refused_for(answer, Scope::Write(Resource::Webhooks));
                continue;
            }
            for resource in resources_of(group) {
                let answer = app.as_token(&without).post("/v3/webhooks", json!({ "url": "https://203.0.114.7/h", "types": [format!("{resource}.*")] })).await;
                refused_for(answer, needed);
            }
            let answer = app.as_token(&without).post("/v3/webhooks", json!({ "url": "https://203.0.114.7/h", "types": [theirs[0].clone()] })).await;
            refused_for(answer, needed);
            let (theirs_receiver, all_receiver) = (api_tests::receiver::Receiver::start().await, api_tests::receiver::Receiver::start().await);
            let patterns: Vec<String> = resources_of(group).iter().map(|r| format!("{r}.*")).collect();
            let with_hook = app.as_token(&with).post("/v3/webhooks", json!({ "url": theirs_receiver.url, "types": patterns })).await.expect(201);
            let all_hook = app.as_token(&without).post("/v3/webhooks", json!({ "url": all_receiver.url, "types": ["*"] })).await.expect(201);
            let (with_path, all_path) = (format!("/v3/webhooks/{}", with_hook["id"].as_str().unwrap()), format!("/v3/webhooks/{}", all_hook["id"].as_str().unwrap()));
            // Nor can it take an endpoint over for them.
            refused_for(app.as_token(&without).patch(&all_path, json!({ "types": patterns })).await, needed);
            refused_for(app.as_token(&without).patch(&with_path, json!({ "url": all_receiver.url })).await, needed);

            // A replay sends what the endpoint's token reads, and nothing else.
            let queued = app.post(&format!("{all_path}/replay"), json!({ "since": since })).await.expect(200)["queued"].as_u64().unwrap() as usize;
            let got = all_receiver.wait_for("the replay", |got| got.len() >= queued).await;
            let queued_theirs = app.post(&format!("{with_path}/replay"), json!({ "since": since })).await.expect(200)["queued"].as_u64().unwrap() as usize;
            let got_theirs = theirs_receiver.wait_for("the replay", |got| got.len() >= queued_theirs).await;
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            let sent: Vec<String> = all_receiver.received().iter().map(|r| r.kind()).collect();
            assert!(!got.is_empty(), "{group:?}: the other groups' events are sent");
            assert!(!sent.iter().any(|k| theirs.contains(k)), "{group:?}: {sent:?}");
            let sent: Vec<String> = got_theirs.iter().map(|r| r.kind()).collect();
            assert!(theirs.iter().all(|k| sent.contains(k)), "{group:?}: {sent:?}");
            assert!(sent.iter().all(|k| theirs.contains(k)), "{group:?}: {sent:?}");
            app.delete(&with_path).await.expect(200);
            app.delete(&all_path).await.expect(200);
        }
    }
}

api_test! {
    /// Events a token may not read are stepped over as other types are: a
    /// page may be short, even empty, with `hasMore`, and following
    /// `nextCursor` reaches each event it may read once. A `types` filter
    /// naming what it may not read is a 403 naming the scope.
    async fn the_feed_steps_over_what_a_token_may_not_read(app) {
        let (app, clock) = app.with_manual_clock();
        for i in 0..4 {
            app.post("/v3/tags", json!({ "name": format!("t{i}") })).await.expect(201);
            app.post("/v3/contacts", json!({ "name": format!("c{i}"), "phone": format!("11 9876{i}-000{i}") })).await.expect(201);
        }
        clock.advance(Duration::seconds(16));
        let reader = token_with(&app, &[Scope::Read(Resource::Tags), Scope::Read(Resource::Events)]).await;
        let reader = app.as_token(&reader);
        let (mut seen, mut short, mut cursor) = (Vec::new(), false, None::<String>);
        for _ in 0..100 {
            let after = cursor.as_deref().map(|c| format!("&after={c}")).unwrap_or_default();
            let page = reader.get(&format!("/v3/events?limit=2{after}")).await.expect(200);
            let data = page["data"].as_array().unwrap();
            short |= page["hasMore"] == true && data.len() < 2;
            seen.extend(data.iter().map(|e| (e["type"].clone(), e["resourceId"].clone())));
            cursor = page["nextCursor"].as_str().map(str::to_owned);
            if page["hasMore"] != true {
                break;
            }
        }
        assert!(short, "the contacts' events make short pages");
        assert_eq!(seen.len(), 4, "{seen:?}");
        assert!(seen.iter().all(|(kind, _)| kind == "tag.created"), "{seen:?}");
        let ids: std::collections::BTreeSet<String> = seen.iter().map(|(_, id)| id.to_string()).collect();
        assert_eq!(ids.len(), 4, "each once: {seen:?}");
        refused_for(reader.get("/v3/events?types=contact.created").await, Scope::Read(Resource::Contacts));
        refused_for(reader.get("/v3/events?types=tag.*,deal.*").await, Scope::Read(Resource::Deals));
        reader.get("/v3/events?types=tag.*").await.expect(200);
        reader.get("/v3/events?types=*").await.expect(200);
    }
}

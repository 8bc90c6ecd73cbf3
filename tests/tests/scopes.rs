//! Scopes: every operation refuses a token without the scope it declares
//! (403 in the error shape, naming it, with `X-Accepted-Scopes`) and lets
//! one with it through; what a token may give another; expiry; the caller's
//! own token; and a token with every scope of its workspace sees nothing of
//! another.

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

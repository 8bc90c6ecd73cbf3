//! Where two features meet, the promise of each holds through the other.
//! Each test here names a row of docs/threat-model.md: a feature that keeps,
//! copies or answers something another feature governs (a secret, a scope,
//! a person's data), and the attack or accident that would break it.

use api_tests::serde_json::{Value, json};
use api_tests::{api_test, store_test, token_with};
use shared::auth::{Resource, Scope};

fn text(value: &Value, member: &str) -> String {
    value[member].as_str().unwrap().to_owned()
}

store_test! {
    /// Idempotency x scopes: the admin's keyed request for an admin token
    /// is not answered again to a lesser token that sends the same key and
    /// body. The key is the sender's own: the lesser token's request runs
    /// as its own, under its own scopes (403), and learns nothing.
    async fn another_tokens_key_is_another_request(app) {
        let body = json!({ "name": "root", "scopes": ["admin"] });
        let first = app.post_with_key("/v3/api-tokens", "K-1", &body).await.expect(201);
        let secret = text(&first, "token");
        for lesser in [
            token_with(&app, &[Scope::Write(Resource::ApiTokens)]).await,
            token_with(&app, &[Scope::WriteAll]).await,
        ] {
            let again = app.post_keyed(&lesser, "/v3/api-tokens", "K-1", &body).await;
            assert!(!again.replayed(), "{:?}", again.headers);
            assert!(!again.body.to_string().contains(&secret));
            again.expect_error(403);
            // Its own request with the key is its own to retry.
            let own = json!({ "name": "mine", "scopes": ["api-tokens:write"] });
            let made = app.post_keyed(&lesser, "/v3/api-tokens", "K-2", &own).await.expect(201);
            let retried = app.post_keyed(&lesser, "/v3/api-tokens", "K-2", &own).await;
            assert!(retried.replayed());
            assert_eq!(retried.expect(201), made);
        }
        // The admin's own retry still gets its first answer, secret and all.
        let replayed = app.post_with_key("/v3/api-tokens", "K-1", &body).await;
        assert!(replayed.replayed());
        assert_eq!(text(&replayed.expect(201), "token"), secret);
    }
}

store_test! {
    /// Idempotency x secrets: an answer shown once (a new token's secret, a
    /// webhook's signing secret, a new workspace's first token) is kept for
    /// its retry sealed for the token that asked. No item of the table and
    /// no byte of the data folder holds a token's secret; a webhook's
    /// signing secret is only in its endpoint, which signs with it.
    async fn a_kept_answer_holds_no_readable_secret(app) {
        let token = app
            .post_with_key("/v3/api-tokens", "S-1", &json!({ "name": "zapier" }))
            .await
            .expect(201);
        let workspace = app
            .post_with_key("/v3/workspaces", "S-2", &json!({ "name": "Acme" }))
            .await
            .expect(201);
        let hook = app
            .post_with_key(
                "/v3/webhooks",
                "S-3",
                &json!({ "url": "https://hooks.example.com/crm", "types": ["tag.*"] }),
            )
            .await
            .expect(201);
        let rotated = app
            .post_with_key(&format!("/v3/webhooks/{}/rotate-secret", text(&hook, "id")), "S-4", &json!({}))
            .await;
        let rotated = rotated.expect(200);
        let workspace_token = text(&workspace["token"], "token");
        for secret in [text(&token, "token"), workspace_token] {
            let places = app.places_holding(&secret).await;
            assert!(places.is_empty(), "a token's secret is kept in {places:?}");
        }
        let endpoint = format!("item \"W#1#WEBHOOK\" / \"{}\"", text(&hook, "id"));
        for secret in [text(&hook, "secret"), text(&rotated, "secret")] {
            let places = app.places_holding(&secret).await;
            assert!(
                places.iter().all(|p| *p == endpoint || p.starts_with("file")),
                "a webhook's secret is kept outside its endpoint: {places:?}"
            );
        }
        // Each retry by the same token is answered whole, secrets and all.
        let again = app.post_with_key("/v3/api-tokens", "S-1", &json!({ "name": "zapier" })).await;
        assert!(again.replayed());
        assert_eq!(again.expect(201), token);
    }
}

store_test! {
    /// Erasure x idempotency: after an erasure, a retry of a keyed request
    /// that made the person, or whose kept answer holds them, is refused
    /// (410, naming the erasure) and never runs again, so the person is not
    /// made again; the key's record keeps nothing of theirs. A keyed request
    /// about somebody else is still answered again.
    async fn an_erased_persons_keyed_retry_is_gone(app) {
        let person = json!({ "name": "Zora Quintal", "phone": "(11) 97777-1234", "email": "zora.q@example.com" });
        let made = app.post_with_key("/v3/contacts", "E-1", &person).await.expect(201);
        let lookup = json!({ "name": "Someone", "phone": "11 97777-1234" });
        let found = app.post_with_key("/v3/contacts/find-or-create", "E-2", &lookup).await;
        assert_eq!(found.headers["x-contact-created"], "false", "found, not made: an answer without a write");
        assert_eq!(found.expect(201)["id"], made["id"]);
        let other_body = json!({ "name": "Olga Outra", "phone": "(21) 96666-0000" });
        let other = app.post_with_key("/v3/contacts", "E-3", &other_body).await.expect(201);

        app.post(&format!("/v3/contacts/{}/erase", text(&made, "id")), json!({})).await.expect(200);

        for (key, body, path) in [("E-1", &person, "/v3/contacts"), ("E-2", &lookup, "/v3/contacts/find-or-create")] {
            let retry = app.post_with_key(path, key, body).await;
            assert!(!retry.replayed());
            let error = retry.expect_error(410);
            assert!(error["message"].as_str().unwrap().contains("erased"), "{error}");
        }
        assert_eq!(app.get("/v3/contacts").await.expect(200)["totalCount"], 2, "nobody made again");
        let again = app.post_with_key("/v3/contacts", "E-3", &other_body).await;
        assert!(again.replayed());
        assert_eq!(again.expect(201), other);
        // Nowhere: no item, and on disk no byte of the folder (the erasure
        // rewrote the store's file: Store::purge).
        for word in ["zora", "quintal", "977771234", "zora.q@example.com"] {
            let places = app.places_holding(word).await;
            assert!(places.is_empty(), "{word} is still in {places:?}");
        }
    }
}

api_test! {
    /// Erasure x a request running during it: an answer kept after the
    /// erasure read the keys (its request was still running then) names the
    /// erased contact; its retry finds it in the erasure ledger and is
    /// refused (410), and the answer is dropped.
    async fn an_answer_kept_after_an_erasure_is_not_replayed(app) {
        let person = json!({ "name": "Rui Tardio", "phone": "(21) 97777-4321" });
        let made = app.post_with_key("/v3/contacts", "R-1", &person).await.expect(201);
        let record = app.key_record("R-1").await;
        let kept = app.store.get(&record, true).await.unwrap().expect("the kept answer");
        app.post(&format!("/v3/contacts/{}/erase", text(&made, "id")), json!({})).await.expect(200);
        // As the running request would have left it, after the erasure.
        let write = shared::store::Write::Put { item: kept, condition: None };
        app.store.write(vec![write]).await.unwrap();
        let retry = app.post_with_key("/v3/contacts", "R-1", &person).await;
        assert!(!retry.replayed());
        retry.expect_error(410);
        let left = app.store.get(&record, true).await.unwrap().unwrap();
        assert_eq!(left["state"], "erased");
        assert!(left.get("sealed").is_none(), "{left:?}");
    }
}

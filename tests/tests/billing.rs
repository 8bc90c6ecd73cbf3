//! Checkout links (`/v3/workspaces/checkout-link`) and orders (`/v3/orders`):
//! unguessable codes, expiry on read, deactivation kept for the audit,
//! completion (admin, idempotent) into an order, tenancy.

use api_tests::serde_json::json;
use api_tests::{TestApp, api_test};
use shared::ids::WorkspaceId;

async fn link(app: &TestApp) -> String {
    let link = app
        .post(
            "/v3/workspaces/checkout-link",
            json!({ "plan": "pro", "seats": 5 }),
        )
        .await
        .expect(201);
    link["code"].as_str().unwrap().to_owned()
}

api_test! {
    /// A link names the plan and seats, carries an unguessable code, its url and
    /// expiry (72 hours by default), and reads back open.
    async fn creates_and_reads_a_link(app) {
        let created = app.post("/v3/workspaces/checkout-link", json!({ "plan": "pro", "seats": 5, "successUrl": "https://app.example.com/thanks" })).await.expect(201);
        let code = created["code"].as_str().unwrap();
        assert_eq!(code.len(), 24);
        assert!(code.chars().all(|c| c.is_ascii_alphanumeric()));
        assert_eq!(created["url"], format!("https://checkout.example.com/c/{code}"));
        assert_eq!((created["plan"].clone(), created["seats"].clone(), created["status"].clone()), (json!("pro"), json!(5), json!("open")));
        assert_eq!(created["workspaceId"], 1);
        let created_at = shared::ids::parse_ts(created["createdAt"].as_str().unwrap()).unwrap();
        let expires = shared::ids::parse_ts(created["expiresAt"].as_str().unwrap()).unwrap();
        assert_eq!(expires - created_at, chrono::Duration::hours(72));
        let read = app.get(&format!("/v3/workspaces/checkout-link/{code}")).await.expect(200);
        assert_eq!(read, created);
        // Two links never share a code.
        assert_ne!(link(&app).await, link(&app).await);
    }
}

api_test! {
    async fn refuses_bad_links(app) {
        let post = |body| app.post("/v3/workspaces/checkout-link", body);
        post(json!({})).await.expect_field_error("plan");
        post(json!({ "plan": "Pro Plan" })).await.expect_field_error("plan");
        post(json!({ "plan": "pro", "seats": 0 })).await.expect_field_error("seats");
        post(json!({ "plan": "pro", "expiresInHours": 721 })).await.expect_field_error("expiresInHours");
        post(json!({ "plan": "pro", "successUrl": "javascript:alert(1)" })).await.expect_field_error("successUrl");
        post(json!({ "plan": "pro", "price": 10 })).await.expect_field_error("price");
        app.get("/v3/workspaces/checkout-link/short").await.expect_error(404);
        app.get("/v3/workspaces/checkout-link/AAAAAAAAAAAAAAAAAAAAAAAA").await.expect_error(404);
    }
}

api_test! {
    /// Past `expiresAt` an open link reads `expired` and cannot be completed.
    async fn expires_on_read(app) {
        let code = link(&app).await;
        app.expire(shared::keys::checkout_link(WorkspaceId(1), &code), "expiresAt").await;
        let read = app.get(&format!("/v3/workspaces/checkout-link/{code}")).await.expect(200);
        assert_eq!(read["status"], "expired");
        app.post(&format!("/v3/workspaces/checkout-link/{code}/complete"), json!({})).await.expect_error(409);
        // Deactivating it still works (and is kept).
        let off = app.delete(&format!("/v3/workspaces/checkout-link/{code}")).await.expect(200);
        assert_eq!(off["status"], "deactivated");
    }
}

api_test! {
    /// DELETE deactivates; the record stays; a deactivated link cannot complete;
    /// deactivating again changes nothing.
    async fn deactivates_a_link(app) {
        let code = link(&app).await;
        let path = format!("/v3/workspaces/checkout-link/{code}");
        let off = app.delete(&path).await.expect(200);
        assert_eq!(off["status"], "deactivated");
        assert!(off["deactivatedAt"].is_string());
        assert_eq!(app.get(&path).await.expect(200)["status"], "deactivated");
        assert_eq!(app.delete(&path).await.expect(200), off);
        app.post(&format!("{path}/complete"), json!({})).await.expect_error(409);
    }
}

api_test! {
    /// Completing (the provider's callback, admin only) creates one order, in the
    /// link's workspace; again, the same order; a completed link cannot be
    /// deactivated. Orders list newest first.
    async fn completes_into_an_order(app) {
        let (other, token) = app.new_workspace("Buyer").await;
        let buyer = app.as_token(&token);
        let code = buyer.post("/v3/workspaces/checkout-link", json!({ "plan": "enterprise", "seats": 20 })).await.expect(201)["code"].as_str().unwrap().to_owned();
        let path = format!("/v3/workspaces/checkout-link/{code}");
        // Not an admin: 403.
        buyer.post(&format!("{path}/complete"), json!({})).await.expect_error(403);
        app.post(&format!("{path}/complete"), json!({ "amount": -1 })).await.expect_field_error("amount");
        let order = app.post(&format!("{path}/complete"), json!({ "amount": 990.0, "currency": "usd", "providerReference": "pi_123" })).await.expect(201);
        assert_eq!(order["workspaceId"], other);
        assert_eq!((order["plan"].clone(), order["seats"].clone(), order["currency"].clone(), order["status"].clone()), (json!("enterprise"), json!(20), json!("USD"), json!("paid")));
        let again = app.post(&format!("{path}/complete"), json!({})).await.expect(201);
        assert_eq!(again["id"], order["id"]);
        let read = buyer.get(&path).await.expect(200);
        assert_eq!((read["status"].clone(), read["orderId"].clone()), (json!("completed"), order["id"].clone()));
        buyer.delete(&path).await.expect_error(409);

        let orders = buyer.get("/v3/orders").await.expect(200);
        assert_eq!(orders["totalCount"], 1);
        assert_eq!(orders["data"][0]["id"], order["id"]);
        // Workspace 1 has none; its own link's order comes first in its list.
        assert_eq!(app.get("/v3/orders").await.expect(200)["totalCount"], 0);
        let mine = link(&app).await;
        let first = app.post(&format!("/v3/workspaces/checkout-link/{mine}/complete"), json!({})).await.expect(201);
        let second_code = link(&app).await;
        let second = app.post(&format!("/v3/workspaces/checkout-link/{second_code}/complete"), json!({})).await.expect(201);
        let list = app.get("/v3/orders?limit=1").await.expect(200);
        assert_eq!(list["totalCount"], 2);
        assert_eq!(list["data"][0]["id"], second["id"]);
        assert_eq!(app.get("/v3/orders?limit=1&offset=1").await.expect(200)["data"][0]["id"], first["id"]);
        app.get("/v3/orders?limit=0").await.expect_field_error("limit");
    }
}

api_test! {
    /// Another workspace's code is a 404, to read and to deactivate.
    async fn links_stay_in_their_workspace(app) {
        let code = link(&app).await;
        let (_, token) = app.new_workspace("Other").await;
        let other = app.as_token(&token);
        other.get(&format!("/v3/workspaces/checkout-link/{code}")).await.expect_error(404);
        other.delete(&format!("/v3/workspaces/checkout-link/{code}")).await.expect_error(404);
        assert_eq!(app.get(&format!("/v3/workspaces/checkout-link/{code}")).await.expect(200)["status"], "open");
    }
}

api_test! {
    /// Concurrent completions make one order.
    async fn concurrent_completions_make_one_order(app) {
        let code = link(&app).await;
        let path = format!("/v3/workspaces/checkout-link/{code}/complete");
        let results = futures::future::join_all((0..8).map(|_| app.post(&path, json!({})))).await;
        let ids: std::collections::BTreeSet<String> = results.into_iter().map(|r| r.expect(201)["id"].as_str().unwrap().to_owned()).collect();
        assert_eq!(ids.len(), 1);
        assert_eq!(app.get("/v3/orders").await.expect(200)["totalCount"], 1);
    }
}

api_test! {
    /// A keyed create whose answer was not kept (the store took the record,
    /// not the answer) answers its retry as it first did, by reading what it
    /// made (docs/api-contract.md, "Idempotency").
    async fn a_keyed_link_whose_answer_was_lost_is_read_back(app) {
        let body = json!({ "plan": "pro", "seats": 5 });
        app.assert_read_back("/v3/workspaces/checkout-link", "/v3/workspaces/checkout-link", &body, &[]).await;
    }
}

api_test! {
    /// Each event type of the group is made by its change (docs/api-contract.md,
    /// "Events"; `events.rs` fails for a declared type no suite makes).
    async fn a_checkout_link_completed_makes_its_event_types(app) {
        let link = app.post("/v3/workspaces/checkout-link", json!({ "plan": "pro" })).await.expect(201);
        app.post(&format!("/v3/workspaces/checkout-link/{}/complete", link["code"].as_str().unwrap()), json!({})).await.expect(201);
        app.assert_made_events(&["checkoutLink.created", "checkoutLink.updated", "order.created"]).await;
    }
}

//! Welcome messages (`POST /v3/workspaces/send-welcome-message`) and the
//! churn-reason suggestions (`/v3/workspaces/churn-reasons/suggestions`).

use api_tests::api_test;
use api_tests::serde_json::json;
use shared::ids::WorkspaceId;

api_test! {
    /// A message is queued in the outbox for a phone (any format) or a contact.
    async fn queues_a_welcome_message(app) {
        let sent = app.post("/v3/workspaces/send-welcome-message", json!({ "phone": "(11) 98765-4321", "text": "Welcome!" })).await;
        assert_eq!(sent.headers["x-welcome-duplicate"], "false");
        let message = sent.expect(201);
        assert_eq!((message["phone"].clone(), message["status"].clone(), message["workspaceId"].clone()), (json!("+5511987654321"), json!("queued"), json!(1)));
        let read = app.get(&format!("/v3/workspaces/welcome-messages/{}", message["id"].as_str().unwrap())).await.expect(200);
        assert_eq!(read, message);

        let contact = app.post("/v3/contacts", json!({ "name": "Ana", "phone": "21 98888-0001" })).await.expect(201);
        let id: u64 = contact["id"].as_str().unwrap().parse().unwrap();
        let to_contact = app.post("/v3/workspaces/send-welcome-message", json!({ "contactId": id, "templateId": "welcome_v2", "variables": { "plan": "pro" } })).await.expect(201);
        assert_eq!((to_contact["phone"].clone(), to_contact["name"].clone(), to_contact["contactId"].clone()), (json!("+5521988880001"), json!("Ana"), json!(id)));
    }
}

api_test! {
    /// The same recipient and content within 10 minutes is one message, however
    /// the phone is written, even when the requests race; other content is another.
    async fn the_same_message_is_sent_once(app) {
        let first = app.post("/v3/workspaces/send-welcome-message", json!({ "phone": "+55 11 98765-4321", "text": "Hi" })).await.expect(201);
        let again = app.post("/v3/workspaces/send-welcome-message", json!({ "phone": "11987654321", "text": "Hi" })).await;
        assert_eq!(again.headers["x-welcome-duplicate"], "true");
        assert_eq!(again.expect(201)["id"], first["id"]);
        let other = app.post("/v3/workspaces/send-welcome-message", json!({ "phone": "11987654321", "text": "Hello" })).await.expect(201);
        assert_ne!(other["id"], first["id"]);

        let racing = futures::future::join_all((0..8).map(|_| app.post("/v3/workspaces/send-welcome-message", json!({ "phone": "21 97777-0000", "templateId": "t1" })))).await;
        let ids: std::collections::BTreeSet<String> = racing.into_iter().map(|r| r.expect(201)["id"].as_str().unwrap().to_owned()).collect();
        assert_eq!(ids.len(), 1);

        // After the window, the same request sends again.
        let content = {
            use sha2::Digest;
            let canonical = json!([null, "Hi", {}]);
            hex::encode(sha2::Sha256::digest(canonical.to_string().as_bytes()))
        };
        app.expire(shared::keys::welcome_sent(WorkspaceId(1), "+5511987654321", &content), "until").await;
        let later = app.post("/v3/workspaces/send-welcome-message", json!({ "phone": "11987654321", "text": "Hi" })).await.expect(201);
        assert_ne!(later["id"], first["id"]);
    }
}

api_test! {
    async fn refuses_bad_welcome_messages(app) {
        let post = |body| app.post("/v3/workspaces/send-welcome-message", body);
        post(json!({ "text": "Hi" })).await.expect_field_error("phone");
        post(json!({ "phone": "11987654321" })).await.expect_field_error("text");
        post(json!({ "phone": "not a phone", "text": "Hi" })).await.expect_field_error("phone");
        post(json!({ "phone": "11987654321", "contactId": 1, "text": "Hi" })).await.expect_field_error("phone");
        post(json!({ "phone": "11987654321", "text": "   " })).await.expect_field_error("text");
        post(json!({ "phone": "11987654321", "text": "Hi", "sendAt": "now" })).await.expect_field_error("sendAt");
        post(json!({ "contactId": 999999, "text": "Hi" })).await.expect_error(404);
        let no_phone = app.post("/v3/contacts", json!({ "name": "Sem Fone" })).await.expect(201);
        post(json!({ "contactId": no_phone["id"].as_str().unwrap().parse::<u64>().unwrap(), "text": "Hi" })).await.expect_field_error("contactId");
        app.get("/v3/workspaces/welcome-messages/nope").await.expect_error(404);
        // Another workspace's message and contact are invisible.
        let mine = post(json!({ "phone": "11987654321", "text": "Hi" })).await.expect(201);
        let (_, token) = app.new_workspace("Other").await;
        let other = app.as_token(&token);
        other.get(&format!("/v3/workspaces/welcome-messages/{}", mine["id"].as_str().unwrap())).await.expect_error(404);
    }
}

api_test! {
    /// One list for every workspace: anyone reads it, only operators change it.
    /// Reasons are one without regard to case, accents and spacing.
    async fn churn_reasons_are_one_list_managed_by_operators(app) {
        let path = "/v3/workspaces/churn-reasons/suggestions";
        assert_eq!(app.get(path).await.expect(200), json!({ "totalCount": 0, "data": [] }));
        let added = app.post(path, json!({ "reasons": ["Too expensive", "Missing a feature", "  too   EXPENSIVE "] })).await.expect(201);
        assert_eq!(added["totalCount"], 2);
        let one = app.post(path, json!({ "reason": "Não uso mais" })).await.expect(201);
        assert_eq!(one["totalCount"], 3);
        // Adding an existing one changes nothing; the first spelling stays.
        let same = app.post(path, json!({ "reason": "nao uso MAIS" })).await.expect(201);
        assert_eq!(same, one);
        assert!(same["data"].as_array().unwrap().iter().any(|r| r["reason"] == "Não uso mais"));

        let (_, token) = app.new_workspace("Customer").await;
        let customer = app.as_token(&token);
        assert_eq!(customer.get(path).await.expect(200)["totalCount"], 3);
        customer.post(path, json!({ "reason": "Mine" })).await.expect_error(403);
        customer.delete(&format!("{path}?reason=Too%20expensive")).await.expect_error(403);

        let removed = app.delete(&format!("{path}?reason=TOO%20EXPENSIVE")).await.expect(200);
        assert_eq!(removed["reason"], "Too expensive");
        app.delete(&format!("{path}?reason=Too%20expensive")).await.expect_error(404);
        let by_body = app.send(http::Method::DELETE, path, Some(api_tests::ADMIN_TOKEN), Some(json!({ "reason": "missing a feature" }))).await.expect(200);
        assert_eq!(by_body["reason"], "Missing a feature");
        assert_eq!(app.get(path).await.expect(200)["totalCount"], 1);

        app.post(path, json!({})).await.expect_field_error("reasons");
        app.post(path, json!({ "reason": "x".repeat(201) })).await.expect_field_error("reason");
        app.post(path, json!({ "reasons": (0..51).map(|i| format!("r{i}")).collect::<Vec<_>>() })).await.expect_field_error("reasons");
        app.delete(path).await.expect_field_error("reason");
    }
}

api_test! {
    /// A keyed create whose answer was not kept (the store took the record,
    /// not the answer) answers its retry as it first did, by reading what it
    /// made (docs/api-contract.md, "Idempotency").
    async fn a_keyed_message_whose_answer_was_lost_is_read_back(app) {
        let body = json!({ "phone": "11 98765-4321", "text": "Welcome!" });
        app.assert_read_back("/v3/workspaces/send-welcome-message", "/v3/workspaces/send-welcome-message", &body, &[]).await;
    }
}

api_test! {
    /// Each event type of the group is made by its change (docs/api-contract.md,
    /// "Events"; `events.rs` fails for a declared type no suite makes).
    async fn a_welcome_message_and_a_churn_reason_make_their_event_types(app) {
        app.post("/v3/workspaces/send-welcome-message", json!({ "phone": "11987654321", "text": "Hi" })).await.expect(201);
        let reasons = "/v3/workspaces/churn-reasons/suggestions";
        app.post(reasons, json!({ "reason": "Too expensive" })).await.expect(201);
        app.delete(&format!("{reasons}?reason=Too%20expensive")).await.expect(200);
        app.assert_made_events(&["welcomeMessage.created", "churnReason.created", "churnReason.deleted"]).await;
    }
}

//! Duplicates (`GET /v3/contacts/duplicates`): groups of contacts that share
//! an e-mail (without case), oldest first, in cursor pages; a phone is one
//! identity per workspace, so a phone is never shared.

use api_tests::serde_json::{Value, json};
use api_tests::{TestApp, api_test};

async fn contact(app: &TestApp, body: Value) -> String {
    app.post("/v3/contacts", body).await.expect(201)["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

fn ids(group: &Value) -> Vec<String> {
    group["contacts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap().to_owned())
        .collect()
}

api_test! {
    /// Two contacts with one e-mail, written in two cases, are one group; a
    /// contact alone with its e-mail is in none; another workspace sees nothing.
    async fn contacts_that_share_an_email_are_a_group(app) {
        let ana = contact(&app, json!({ "name": "Ana", "email": "ana@example.com" })).await;
        let again = contact(&app, json!({ "name": "Ana Souza", "email": "Ana@Example.com", "phone": "11987654321" })).await;
        contact(&app, json!({ "name": "Bruno", "email": "bruno@example.com" })).await;
        let page = app.get("/v3/contacts/duplicates").await.expect(200);
        let groups = page["data"].as_array().unwrap();
        assert_eq!(groups.len(), 1, "{page}");
        assert_eq!((groups[0]["by"].clone(), groups[0]["value"].clone()), (json!("email"), json!("ana@example.com")));
        assert_eq!(ids(&groups[0]), [ana, again], "oldest first");
        assert_eq!(groups[0]["contacts"][1]["phone"], "+5511987654321");
        assert_eq!(page["nextCursor"], "");

        let (_, token) = app.new_workspace("Other").await;
        let theirs = app.as_token(&token).get("/v3/contacts/duplicates").await.expect(200);
        assert_eq!(theirs["data"], json!([]));
    }
}

api_test! {
    /// A change of e-mail joins or leaves a group; a group left with one
    /// contact is no longer listed.
    async fn an_email_change_joins_and_leaves_a_group(app) {
        let ana = contact(&app, json!({ "name": "Ana", "email": "ana@example.com" })).await;
        let other = contact(&app, json!({ "name": "Other", "email": "other@example.com" })).await;
        app.patch(&format!("/v3/contacts/{other}"), json!({ "email": "ANA@example.com" })).await.expect(200);
        let page = app.get("/v3/contacts/duplicates").await.expect(200);
        assert_eq!(ids(&page["data"][0]), [ana.clone(), other.clone()]);

        app.patch(&format!("/v3/contacts/{other}"), json!({ "email": "other@example.com" })).await.expect(200);
        assert_eq!(app.get("/v3/contacts/duplicates").await.expect(200)["data"], json!([]));
        // A third holder of an e-mail held before is found again.
        let third = contact(&app, json!({ "email": "ana@example.com" })).await;
        let page = app.get("/v3/contacts/duplicates").await.expect(200);
        assert_eq!(ids(&page["data"][0]), [ana, third]);
    }
}

api_test! {
    /// Duplicates made in one transaction (two rows of a batch, an import)
    /// are found as those made one by one.
    async fn duplicates_of_a_batch_are_found(app) {
        app.post("/v3/contacts/batch", json!({ "operations": [
            { "op": "create", "data": { "name": "One", "email": "same@example.com" } },
            { "op": "create", "data": { "name": "Two", "email": "same@example.com" } },
        ]})).await.expect(200);
        let page = app.get("/v3/contacts/duplicates").await.expect(200);
        assert_eq!(page["data"][0]["contacts"].as_array().unwrap().len(), 2, "{page}");
    }
}

api_test! {
    /// `limit` groups per page, in e-mail order; `nextCursor` leads to the
    /// next page and is empty on the last; a made-up cursor is a 400.
    async fn groups_come_in_cursor_pages(app) {
        for email in ["a@example.com", "b@example.com", "c@example.com"] {
            contact(&app, json!({ "email": email })).await;
            contact(&app, json!({ "email": email })).await;
        }
        let first = app.get("/v3/contacts/duplicates?limit=2").await.expect(200);
        let values: Vec<_> = first["data"].as_array().unwrap().iter().map(|g| g["value"].clone()).collect();
        assert_eq!(values, [json!("a@example.com"), json!("b@example.com")]);
        let cursor = first["nextCursor"].as_str().unwrap();
        assert!(!cursor.is_empty());
        let next = app.get(&format!("/v3/contacts/duplicates?limit=2&cursor={cursor}")).await.expect(200);
        assert_eq!(next["data"][0]["value"], "c@example.com");
        assert_eq!(next["nextCursor"], "");

        app.get("/v3/contacts/duplicates?cursor=bm9wZQ").await.expect_field_error("cursor");
        app.get("/v3/contacts/duplicates?limit=0").await.expect_field_error("limit");
    }
}

//! The contact list's filters on records loaded by `crm load`: `organizationId`
//! (contacts linked to the active organization), `withOrganization`, `segmentId`
//! and `sessionCreatedAtFrom/To` (contacts having a conversation whose last
//! session meets them).

use api_tests::serde_json::{Value, json};
use api_tests::{TestApp, api_test};

async fn load(
    app: &TestApp,
    workspace: u64,
    line: Value,
) -> Result<&'static str, shared::ApiError> {
    app.load_line(workspace, line).await
}

async fn contact(app: &TestApp, name: &str) -> u64 {
    let c = app
        .post("/v3/contacts", json!({ "name": name }))
        .await
        .expect(201);
    c["id"].as_str().unwrap().parse().unwrap()
}

fn names(page: &Value) -> Vec<String> {
    let mut names: Vec<String> = page["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap().to_owned())
        .collect();
    names.sort();
    names
}

/// Ana, Bia and Caio; organizations 10 (active) and 11 (inactive); conversations.
async fn scenario(app: &TestApp) -> (u64, u64, u64) {
    let (a, b, c) = (
        contact(app, "Ana").await,
        contact(app, "Bia").await,
        contact(app, "Caio").await,
    );
    contact(app, "Dora").await;
    for line in [
        json!({ "type": "organization", "id": 10, "name": "Acme" }),
        json!({ "type": "organization", "id": 11, "name": "Old Corp", "active": false }),
        json!({ "type": "contactOrganization", "contactId": a, "organizationId": 10 }),
        json!({ "type": "contactOrganization", "contactId": b, "organizationId": 10 }),
        json!({ "type": "contactOrganization", "contactId": b, "organizationId": 11 }),
        json!({ "type": "contactOrganization", "contactId": c, "organizationId": 11, "main": true }),
        json!({ "type": "conversation", "id": 1, "contactId": a, "lastSession": { "id": "s1", "createdAt": "2026-11-20T10:00:00Z", "segmentId": "inbox-1" } }),
        json!({ "type": "conversation", "id": 2, "contactId": b, "lastSession": { "id": "s2", "createdAt": "2026-11-21T10:00:00Z", "segmentId": "inbox-2" } }),
        json!({ "type": "conversation", "id": 3, "contactId": a, "lastSession": { "id": "s3", "createdAt": "2026-11-22T10:00:00Z", "segmentId": "inbox-2" } }),
        json!({ "type": "conversation", "id": 4, "contactId": c }),
    ] {
        load(app, 1, line).await.unwrap();
    }
    (a, b, c)
}

api_test! {
    /// organizationId: the contacts linked to that organization, if it is active.
    async fn filters_by_organization(app) {
        scenario(&app).await;
        let page = app.get("/v3/contacts?organizationId=10").await.expect(200);
        assert_eq!((page["totalCount"].clone(), names(&page)), (json!(2), vec!["Ana".to_owned(), "Bia".to_owned()]));
        assert_eq!(app.get("/v3/contacts?organizationId=11").await.expect(200)["totalCount"], 0, "inactive");
        assert_eq!(app.get("/v3/contacts?organizationId=99").await.expect(200)["totalCount"], 0, "unknown");
        app.get("/v3/contacts?organizationId=acme").await.expect_field_error("organizationId");
        let sorted = app.get("/v3/contacts?organizationId=10&sortField=name&sortOrder=descend").await.expect(200);
        assert_eq!(sorted["data"][0]["name"], "Bia");
        let paged = app.get("/v3/contacts?organizationId=10&sortOrder=ascend&limit=1&offset=1").await.expect(200);
        assert_eq!((paged["totalCount"].clone(), paged["data"][0]["name"].clone()), (json!(2), json!("Bia")));
    }
}

api_test! {
    /// withOrganization: the main organization and how many a contact has.
    async fn shows_organizations_when_asked(app) {
        scenario(&app).await;
        let page = app.get("/v3/contacts?withOrganization=true&sortOrder=ascend").await.expect(200);
        let by_name = |name: &str| page["data"].as_array().unwrap().iter().find(|c| c["name"] == name).unwrap().clone();
        assert_eq!(by_name("Ana")["organization"]["name"], "Acme");
        assert_eq!(by_name("Ana")["organizationsCount"], 1);
        assert_eq!(by_name("Bia")["organization"]["id"], "10", "the first linked is the main one");
        assert_eq!(by_name("Bia")["organizationsCount"], 2);
        assert_eq!(by_name("Caio")["organization"]["name"], "Old Corp", "marked main");
        assert_eq!(by_name("Dora")["organization"], Value::Null);
        assert_eq!(by_name("Dora")["organizationsCount"], 0);
        let plain = app.get("/v3/contacts").await.expect(200);
        assert!(plain["data"][0].get("organization").is_none() && plain["data"][0].get("organizationsCount").is_none());
    }
}

api_test! {
    /// segmentId and sessionCreatedAtFrom/To look at the last session of each conversation.
    async fn filters_by_the_last_session(app) {
        let (a, _, _) = scenario(&app).await;
        let get = |q: &str| {
            let path = format!("/v3/contacts?{q}");
            let app = &app;
            async move { app.get(&path).await.expect(200) }
        };
        assert_eq!(names(&get("segmentId=inbox-2").await), ["Ana", "Bia"]);
        assert_eq!(names(&get("segmentId=inbox-1").await), ["Ana"]);
        assert_eq!(names(&get("sessionCreatedAtFrom=2026-11-21").await), ["Ana", "Bia"]);
        assert_eq!(names(&get("sessionCreatedAtTo=2026-11-20T10:00:00Z").await), ["Ana"], "inclusive");
        assert_eq!(names(&get("sessionCreatedAtFrom=2026-11-21T00:00:00Z&sessionCreatedAtTo=2026-11-21T23:59:59Z").await), ["Bia"]);
        assert_eq!(get("segmentId=inbox-1&sessionCreatedAtFrom=2026-11-21").await["totalCount"], 0);
        assert_eq!(get("segmentId=inbox-9").await["totalCount"], 0);
        app.get("/v3/contacts?sessionCreatedAtFrom=soon").await.expect_field_error("sessionCreatedAtFrom");
        app.get("/v3/contacts?sessionCreatedAtFrom=2026-11-22&sessionCreatedAtTo=2026-11-21").await.expect_field_error("sessionCreatedAtTo");

        // Loading a conversation again with a new last session moves it.
        load(&app, 1, json!({ "type": "conversation", "id": 3, "contactId": a, "lastSession": { "id": "s4", "createdAt": "2026-11-22T11:00:00Z", "segmentId": "inbox-1" } })).await.unwrap();
        assert_eq!(names(&get("segmentId=inbox-2").await), ["Bia"]);
        assert_eq!(get("segmentId=inbox-1").await["totalCount"], 1, "one contact, though two of its conversations match");
    }
}

api_test! {
    /// Filters meet: a contact must pass every one given.
    async fn filters_combine(app) {
        scenario(&app).await;
        assert_eq!(names(&app.get("/v3/contacts?organizationId=10&segmentId=inbox-1").await.expect(200)), ["Ana"]);
        assert_eq!(names(&app.get("/v3/contacts?organizationId=10&segmentId=inbox-2").await.expect(200)), ["Ana", "Bia"]);
        assert_eq!(names(&app.get("/v3/contacts?organizationId=10&search=bia").await.expect(200)), ["Bia"]);
        assert_eq!(names(&app.get("/v3/contacts?segmentId=inbox-1&search=bia").await.expect(200)), Vec::<String>::new());
    }
}

api_test! {
    /// The loader validates every line and refuses links to what does not exist.
    async fn the_loader_validates(app) {
        let a = contact(&app, "Ana").await;
        for (line, status) in [
            (json!({ "type": "planet", "id": 1 }), 400),
            (json!({ "type": "organization", "id": 1 }), 400),
            (json!({ "type": "organization", "id": 1, "name": "x", "size": 3 }), 400),
            (json!({ "type": "organization", "id": 0, "name": "x" }), 400),
            (json!({ "type": "contactOrganization", "contactId": a, "organizationId": 77 }), 404),
            (json!({ "type": "contactOrganization", "contactId": 123, "organizationId": 77 }), 404),
            (json!({ "type": "conversation", "id": 1, "contactId": 123 }), 404),
            (json!({ "type": "conversation", "id": 1, "contactId": a, "lastSession": { "id": "s", "createdAt": "later" } }), 400),
        ] {
            let error = load(&app, 1, line.clone()).await.expect_err(&line.to_string());
            assert_eq!(error.status.as_u16(), status, "{line}: {}", error.message);
        }
        // Loading the same line twice changes nothing.
        load(&app, 1, json!({ "type": "organization", "id": 1, "name": "Acme" })).await.unwrap();
        let audit = app.get("/v3/audit").await.expect(200)["totalCount"].clone();
        load(&app, 1, json!({ "type": "organization", "id": 1, "name": "Acme" })).await.unwrap();
        assert_eq!(app.get("/v3/audit").await.expect(200)["totalCount"], audit);
    }
}

api_test! {
    /// Loaded records belong to their workspace only.
    async fn loaded_records_stay_in_their_workspace(app) {
        scenario(&app).await;
        let (other, token) = app.new_workspace("Other").await;
        let theirs = app.as_token(&token).post("/v3/contacts", json!({ "name": "Eva" })).await.expect(201);
        let eva: u64 = theirs["id"].as_str().unwrap().parse().unwrap();
        // Workspace 1's organization is not theirs to link to.
        let error = load(&app, other, json!({ "type": "contactOrganization", "contactId": eva, "organizationId": 10 })).await.unwrap_err();
        assert_eq!(error.status.as_u16(), 404);
        let other_client = app.as_token(&token);
        assert_eq!(other_client.get("/v3/contacts?organizationId=10").await.expect(200)["totalCount"], 0);
        assert_eq!(other_client.get("/v3/contacts?segmentId=inbox-2").await.expect(200)["totalCount"], 0);
    }
}

api_test! {
    /// Each event type of the group is made by its change (docs/api-contract.md,
    /// "Events"; `events.rs` fails for a declared type no suite makes).
    async fn each_loaded_change_of_a_relation_makes_its_event_type(app) {
        let contact = app.a_contact().await;
        for name in ["Acme", "Acme Ltd"] {
            app.load_line(1, json!({ "type": "organization", "id": 1, "name": name, "active": true })).await.unwrap();
        }
        for segment in ["whatsapp-1", "elsewhere"] {
            let line = json!({ "type": "conversation", "id": 10000, "contactId": contact,
                "lastSession": { "id": "s-1", "createdAt": "2026-11-20T10:00:00.000Z", "segmentId": segment } });
            app.load_line(1, line).await.unwrap();
        }
        app.assert_made_events(&["organization.created", "organization.updated", "conversation.created", "conversation.updated"]).await;
    }
}

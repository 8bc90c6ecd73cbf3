//! Contacts (`/v3/contacts`, `/v1/contacts`): the spec's two Contact shapes of
//! one record, phone identity (one person written five ways is one contact),
//! the list's filters and search, the 2-hour `/all` window, cursor pages of
//! `/v1`, and find-or-create.

use api_tests::serde_json::{Value, json};
use api_tests::{TestApp, api_test};

async fn contact(app: &TestApp, body: Value) -> Value {
    app.post("/v3/contacts", body).await.expect(201)
}

async fn search(app: &TestApp, q: &str) -> Value {
    app.get(&format!("/v3/contacts?search={q}"))
        .await
        .expect(200)
}

fn ids(page: &Value) -> Vec<String> {
    page["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap().to_owned())
        .collect()
}

fn names(page: &Value) -> Vec<String> {
    page["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap_or("").to_owned())
        .collect()
}

api_test! {
    /// POST /v3/contacts: 201 with the stored record; the phone in canonical form.
    async fn creates_a_contact(app) {
        let c = contact(&app, json!({
            "name": "Maria Silva", "phone": "(11) 98765-4321", "email": "Maria@Example.com",
            "location": "São Paulo", "origin": "site", "externalId": "ext-1", "socialAId": "sa",
            "isPrivate": true, "customFields": { "plan": "gold", "seats": 3 },
            "crmData": { "crmAlphaId": "A1", "referrals": { "utm_source": "google", "_bg": "x" } },
            "CustomerCustomField": { "tier": 1 }, "_id": "legacy-9"
        })).await;
        assert!(c["id"].as_str().unwrap().parse::<u64>().unwrap() < 1 << 53);
        assert_eq!(c["workspaceId"], 1);
        assert_eq!(c["phone"], "+5511987654321");
        assert_eq!(c["email"], "Maria@Example.com");
        assert_eq!(c["customFields"], json!({ "plan": "gold", "seats": 3 }));
        assert_eq!(c["crmData"]["referrals"]["utm_source"], "google");
        assert_eq!(c["CustomerCustomField"], json!({ "tier": 1 }));
        assert_eq!(c["_id"], "legacy-9");
        assert_eq!((c["isPrivate"].clone(), c["isImported"].clone(), c["newContact"].clone()), (json!(true), json!(false), json!(false)));
        assert_eq!(c["createdAt"], c["lastUpdateAt"]);
        let read = app.get(&format!("/v3/contacts/{}", c["id"].as_str().unwrap())).await.expect(200);
        assert_eq!(read, c);
    }
}

api_test! {
    async fn validates_the_create_body(app) {
        app.post("/v3/contacts", json!({})).await.expect_field_error("name");
        app.post("/v3/contacts", json!({ "notes": "no identity" })).await.expect_field_error("name");
        app.post("/v3/contacts", json!({ "name": "x".repeat(129) })).await.expect_field_error("name");
        app.post("/v3/contacts", json!({ "name": "x", "email": "not-an-email" })).await.expect_field_error("email");
        app.post("/v3/contacts", json!({ "name": "x", "phone": "12345" })).await.expect_field_error("phone");
        app.post("/v3/contacts", json!({ "name": "x", "phone": "call me" })).await.expect_field_error("phone");
        app.post("/v3/contacts", json!({ "name": "x", "origin": "o".repeat(101) })).await.expect_field_error("origin");
        app.post("/v3/contacts", json!({ "name": "x", "externalId": "e".repeat(101) })).await.expect_field_error("externalId");
        app.post("/v3/contacts", json!({ "name": "x", "isPrivate": "yes" })).await.expect_field_error("isPrivate");
        app.post("/v3/contacts", json!({ "name": "x", "crmData": { "unknown": 1 } })).await.expect_field_error("crmData.unknown");
        app.post("/v3/contacts", json!({ "name": "x", "crmData": { "referrals": { "utm_source": 5 } } })).await.expect_field_error("crmData.referrals.utm_source");
        for field in ["id", "workspaceId", "createdAt", "lastUpdateAt", "updatedAt"] {
            app.post("/v3/contacts", json!({ "name": "x", field: "1" })).await.expect_field_error(field);
        }
        app.post("/v3/contacts", json!({ "name": "x", "phones": ["11987654321"] })).await.expect_field_error("phones");
        assert_eq!(app.get("/v3/contacts").await.expect(200)["totalCount"], 0, "nothing was written");
    }
}

api_test! {
    /// The variants of one phone are one contact: a second create is 409.
    async fn one_phone_is_one_contact(app) {
        contact(&app, json!({ "name": "A", "phone": "+55 11 98765-4321" })).await;
        for variant in ["11987654321", "1187654321", "5511987654321", "(11) 8765-4321"] {
            app.post("/v3/contacts", json!({ "name": "B", "phone": variant })).await.expect_error(409);
        }
        // A landline of the same digits is another phone, never given a ninth digit.
        let landline = contact(&app, json!({ "name": "Office", "phone": "(11) 3456-7890" })).await;
        assert_eq!(landline["phone"], "+551134567890");
        assert_eq!(app.get("/v3/contacts").await.expect(200)["totalCount"], 2);
    }
}

api_test! {
    async fn patches_a_contact(app) {
        let c = contact(&app, json!({ "name": "Ana", "phone": "11987654321", "notes": "n", "customFields": { "a": 1, "b": 2 } })).await;
        let path = format!("/v3/contacts/{}", c["id"].as_str().unwrap());
        let patched = app.patch(&path, json!({
            "name": "Ana Paula", "notes": null, "customFields": { "b": null, "c": 3 },
            "hasConversation": true, "_id": "x", "CustomerCustomField": { "k": "v" }
        })).await.expect(200);
        assert_eq!(patched["name"], "Ana Paula");
        assert!(patched.get("notes").is_none());
        assert_eq!(patched["customFields"], json!({ "a": 1, "c": 3 }));
        assert_eq!(patched["hasConversation"], true);
        assert_eq!(patched["CustomerCustomField"], json!({ "k": "v" }));
        assert_eq!(patched["createdAt"], c["createdAt"]);
        assert!(patched["lastUpdateAt"].as_str() > c["lastUpdateAt"].as_str());
        for field in ["id", "workspaceId", "createdAt", "lastUpdateAt", "updatedAt"] {
            app.patch(&path, json!({ field: "1" })).await.expect_field_error(field);
        }
        app.patch(&path, json!({ "name": null, "phone": null })).await.expect_field_error("name");
        assert_eq!(app.get(&path).await.expect(200), patched, "refused patches change nothing");
    }
}

api_test! {
    /// Changing a phone frees the old one and claims the new one.
    async fn patching_the_phone_moves_the_identity(app) {
        let a = contact(&app, json!({ "name": "A", "phone": "11987654321" })).await;
        contact(&app, json!({ "name": "B", "phone": "21987654321" })).await;
        let path = format!("/v3/contacts/{}", a["id"].as_str().unwrap());
        app.patch(&path, json!({ "phone": "(21) 8765-4321" })).await.expect_error(409);
        let moved = app.patch(&path, json!({ "phone": "31 98765 4321" })).await.expect(200);
        assert_eq!(moved["phone"], "+5531987654321");
        contact(&app, json!({ "name": "C", "phone": "11987654321" })).await;
        let found = app.get("/v3/contacts?search=31987654321").await.expect(200);
        assert_eq!(ids(&found), vec![a["id"].as_str().unwrap()]);
    }
}

api_test! {
    async fn unknown_and_foreign_contacts_are_404(app) {
        app.get("/v3/contacts/123").await.expect_error(404);
        app.get("/v3/contacts/abc").await.expect_field_error("id");
        app.patch("/v3/contacts/123", json!({ "name": "x" })).await.expect_error(404);
        let (_, token) = app.new_workspace("Other").await;
        let other = app.as_token(&token);
        let theirs = other.post("/v3/contacts", json!({ "name": "Theirs", "phone": "11987654321", "email": "t@x.com" })).await.expect(201);
        let path = format!("/v3/contacts/{}", theirs["id"].as_str().unwrap());
        app.get(&path).await.expect_error(404);
        app.patch(&path, json!({ "name": "mine" })).await.expect_error(404);
        app.get(&format!("/v1/contacts/{}", theirs["id"].as_str().unwrap())).await.expect_error(404);
        // Their phone, e-mail and name are not found here, and the phone is free here.
        assert_eq!(app.get("/v3/contacts?search=11987654321").await.expect(200)["data"], json!([]));
        assert_eq!(app.get("/v3/contacts?search=Theirs").await.expect(200)["data"], json!([]));
        assert_eq!(app.get("/v3/contacts?emailExact=t@x.com").await.expect(200)["totalCount"], 0);
        assert_eq!(app.get("/v1/contacts?phone=11987654321").await.expect(200)["data"], json!([]));
        let mine = contact(&app, json!({ "name": "Mine", "phone": "11987654321" })).await;
        assert_ne!(mine["id"], theirs["id"]);
    }
}

api_test! {
    /// Newest first by default; createdAt, id or name, ascending or descending.
    async fn lists_in_the_order_asked(app) {
        for name in ["Carla", "ana", "Bruno"] {
            contact(&app, json!({ "name": name })).await;
        }
        let page = app.get("/v3/contacts").await.expect(200);
        assert_eq!(page["totalCount"], 3);
        assert_eq!(names(&page), ["Bruno", "ana", "Carla"]);
        assert_eq!(names(&app.get("/v3/contacts?sortField=createdAt&sortOrder=ascend").await.expect(200)), ["Carla", "ana", "Bruno"]);
        assert_eq!(names(&app.get("/v3/contacts?sortField=id&sortOrder=descend").await.expect(200)), ["Bruno", "ana", "Carla"]);
        assert_eq!(names(&app.get("/v3/contacts?sortField=name&sortOrder=ascend").await.expect(200)), ["ana", "Bruno", "Carla"]);
        assert_eq!(names(&app.get("/v3/contacts?sortField=name&sortOrder=descend").await.expect(200)), ["Carla", "Bruno", "ana"]);
        app.get("/v3/contacts?sortField=email").await.expect_field_error("sortField");
        app.get("/v3/contacts?sortOrder=up").await.expect_field_error("sortOrder");
        app.get("/v3/contacts?limit=501").await.expect_field_error("limit");
        app.get("/v3/contacts?organizationIdd=1").await.expect_field_error("organizationIdd");
    }
}

api_test! {
    async fn pages_are_disjoint_and_complete(app) {
        for i in 0..11 {
            contact(&app, json!({ "name": format!("c{i:02}") })).await;
        }
        let mut seen = Vec::new();
        for offset in (0..11).step_by(4) {
            let page = app.get(&format!("/v3/contacts?sortOrder=ascend&limit=4&offset={offset}")).await.expect(200);
            assert_eq!(page["totalCount"], 11);
            seen.extend(names(&page));
        }
        assert_eq!(seen, (0..11).map(|i| format!("c{i:02}")).collect::<Vec<_>>());
        let mut by_name = Vec::new();
        for offset in [0, 5, 10] {
            let path = format!("/v3/contacts?sortField=name&sortOrder=ascend&limit=5&offset={offset}");
            by_name.extend(names(&app.get(&path).await.expect(200)));
        }
        assert_eq!(by_name, seen);
    }
}

api_test! {
    async fn filters_by_exact_email_without_case(app) {
        let a = contact(&app, json!({ "name": "A", "email": "Team@Acme.com" })).await;
        let b = contact(&app, json!({ "name": "B", "email": "team@acme.com" })).await;
        contact(&app, json!({ "name": "C", "email": "team@acme.com.br" })).await;
        let page = app.get("/v3/contacts?emailExact=TEAM@acme.COM&sortOrder=ascend").await.expect(200);
        assert_eq!(page["totalCount"], 2);
        assert_eq!(ids(&page), [a["id"].as_str().unwrap(), b["id"].as_str().unwrap()]);
        // Changing the e-mail moves the contact out of the old one.
        app.patch(&format!("/v3/contacts/{}", a["id"].as_str().unwrap()), json!({ "email": "other@acme.com" })).await.expect(200);
        assert_eq!(app.get("/v3/contacts?emailExact=team@acme.com").await.expect(200)["totalCount"], 1);
    }
}

api_test! {
    /// search: name by any word's first letters (3+, no case or accents), a phone in
    /// any format, an exact e-mail, or an id; no totalCount in the answer.
    async fn searches_names_phones_emails_and_ids(app) {
        let maria = contact(&app, json!({ "name": "Maria José da Silva", "phone": "11987654321", "email": "maria@x.com" })).await;
        let mario = contact(&app, json!({ "name": "Mário Souza" })).await;
        contact(&app, json!({ "name": "Ana Jose" })).await;
        let page = search(&app, "MAR").await;
        assert!(page.get("totalCount").is_none(), "search answers no totalCount: {page}");
        let mut found = ids(&page);
        found.sort();
        let mut expected = vec![maria["id"].as_str().unwrap().to_owned(), mario["id"].as_str().unwrap().to_owned()];
        expected.sort();
        assert_eq!(found, expected);
        assert_eq!(ids(&search(&app, "jos%C3%A9").await).len(), 2, "José and Jose");
        assert_eq!(names(&search(&app, "sil").await), ["Maria José da Silva"]);
        assert_eq!(names(&search(&app, "mar%20sil").await), ["Maria José da Silva"], "every word must match");
        assert_eq!(names(&search(&app, "%2B55%20(11)%208765-4321").await), ["Maria José da Silva"]);
        assert_eq!(names(&search(&app, "1187654321").await), ["Maria José da Silva"]);
        assert_eq!(names(&search(&app, "MARIA@X.COM").await), ["Maria José da Silva"]);
        assert_eq!(names(&search(&app, mario["id"].as_str().unwrap()).await), ["Mário Souza"]);
        assert_eq!(search(&app, "xyz").await["data"], json!([]));
        app.get("/v3/contacts?search=ma").await.expect_field_error("search");
    }
}

api_test! {
    async fn filters_new_contacts(app) {
        let fresh = contact(&app, json!({ "name": "Fresh", "newContact": true })).await;
        let old = contact(&app, json!({ "name": "Old" })).await;
        let page = app.get("/v3/contacts?newContact=true").await.expect(200);
        assert_eq!((page["totalCount"].clone(), ids(&page)), (json!(1), vec![fresh["id"].as_str().unwrap().to_owned()]));
        assert_eq!(app.get("/v3/contacts?newContact=false").await.expect(200)["totalCount"], 2, "false does not filter");
        app.patch(&format!("/v3/contacts/{}", old["id"].as_str().unwrap()), json!({ "newContact": true })).await.expect(200);
        app.patch(&format!("/v3/contacts/{}", fresh["id"].as_str().unwrap()), json!({ "newContact": false })).await.expect(200);
        let page = app.get("/v3/contacts?newContact=true").await.expect(200);
        assert_eq!((page["totalCount"].clone(), names(&page)), (json!(1), vec!["Old".to_owned()]));
        assert_eq!(names(&app.get("/v3/contacts?newContact=true&search=old").await.expect(200)), ["Old"]);
        app.get("/v3/contacts?newContact=true&sortField=name").await.expect_field_error("sortField");
        app.get("/v3/contacts?newContact=maybe").await.expect_field_error("newContact");
    }
}

api_test! {
    /// /all: createdAtFrom and createdAtTo at most 2 hours apart, or last48h.
    async fn lists_a_creation_window(app) {
        let before = chrono::Utc::now() - chrono::Duration::seconds(1);
        let a = contact(&app, json!({ "name": "A" })).await;
        let b = contact(&app, json!({ "name": "B", "newContact": true })).await;
        let after = chrono::Utc::now() + chrono::Duration::seconds(1);
        let window = |from: chrono::DateTime<chrono::Utc>, to: chrono::DateTime<chrono::Utc>| {
            format!("/v3/contacts/all?createdAtFrom={}&createdAtTo={}", from.format("%Y-%m-%dT%H:%M:%S%.3fZ"), to.format("%Y-%m-%dT%H:%M:%S%.3fZ"))
        };
        let page = app.get(&window(before, after)).await.expect(200);
        assert_eq!(page["totalCount"], 2);
        assert_eq!(ids(&page), [a["id"].as_str().unwrap(), b["id"].as_str().unwrap()], "oldest first");
        let new_only = app.get(&format!("{}&newContact=true", window(before, after))).await.expect(200);
        assert_eq!(ids(&new_only), [b["id"].as_str().unwrap()]);
        let earlier = app.get(&window(before - chrono::Duration::hours(2), before)).await.expect(200);
        assert_eq!(earlier["totalCount"], 0);
        assert_eq!(app.get("/v3/contacts/all?last48h=true").await.expect(200)["totalCount"], 2);
        let paged = app.get(&format!("{}&limit=1&offset=1", window(before, after))).await.expect(200);
        assert_eq!(ids(&paged), [b["id"].as_str().unwrap()]);

        app.get("/v3/contacts/all").await.expect_field_error("createdAtFrom");
        app.get(&window(before, before + chrono::Duration::minutes(121))).await.expect_field_error("createdAtTo");
        app.get(&window(after, before)).await.expect_field_error("createdAtTo");
        app.get("/v3/contacts/all?createdAtFrom=2026-01-01T00:00:00Z").await.expect_field_error("createdAtTo");
        app.get("/v3/contacts/all?createdAtFrom=yesterday&createdAtTo=today").await.expect_field_error("createdAtFrom");
        app.get(&format!("{}&last48h=true", window(before, after))).await.expect_field_error("last48h");
    }
}

api_test! {
    /// /v1: the public shape, custom fields as { value }.
    async fn v1_serves_the_public_shape(app) {
        let created = app.post("/v1/contacts", json!({
            "name": "Bia", "phone": "21 98888-7777", "customFields": { "plan": { "value": "gold" } },
            "crmData": { "crmBetaType": "lead" }
        })).await.expect(201);
        assert_eq!(created["customFields"], json!({ "plan": { "value": "gold" } }));
        assert_eq!(created["phone"], "+5521988887777");
        assert!(created.get("workspaceId").is_none() && created.get("createdAt").is_none(), "{created}");
        let id = created["id"].as_str().unwrap();
        let v3 = app.get(&format!("/v3/contacts/{id}")).await.expect(200);
        assert_eq!(v3["customFields"], json!({ "plan": "gold" }));
        assert_eq!(app.get(&format!("/v1/contacts/{id}")).await.expect(200), created);
        let patched = app.patch(&format!("/v1/contacts/{id}"), json!({ "customFields": { "plan": null, "size": { "value": 5 } } })).await.expect(200);
        assert_eq!(patched["customFields"], json!({ "size": { "value": 5 } }));
        app.post("/v1/contacts", json!({ "name": "x", "customFields": { "plan": "gold" } })).await.expect_field_error("customFields.plan");
        app.post("/v1/contacts", json!({ "name": "x", "_id": "y" })).await.expect_field_error("_id");
        app.patch(&format!("/v1/contacts/{id}"), json!({ "workspaceId": 2 })).await.expect_field_error("workspaceId");
    }
}

/// Every `/v1/contacts` page of `limit`, from the first cursor to the
/// last, as one page.
async fn v1_pages(app: &TestApp, limit: u64) -> Value {
    let mut data = Vec::new();
    let mut cursor = String::new();
    loop {
        let page = app.get(&format!("/v1/contacts?limit={limit}&cursor={cursor}")).await.expect(200);
        data.extend(page["data"].as_array().unwrap().iter().cloned());
        cursor = page["nextCursor"].as_str().unwrap().to_owned();
        if cursor.is_empty() {
            return json!({ "data": data });
        }
    }
}

api_test! {
    /// /v1 pages follow the cursor without repeats or gaps; filters by time, phone, e-mail.
    async fn v1_lists_with_a_cursor_and_filters(app) {
        for i in 0..23 {
            app.post("/v1/contacts", json!({ "name": format!("p{i:02}"), "phone": format!("119{}", 80_000_000 + i), "email": format!("p{}@x.com", i % 2) })).await.expect(201);
        }
        assert_eq!(app.get("/v1/contacts").await.expect(200)["data"].as_array().unwrap().len(), 10, "default limit 10");
        let seen = names(&v1_pages(&app, 6).await);
        assert_eq!(seen, (0..23).map(|i| format!("p{i:02}")).collect::<Vec<_>>());
        app.get("/v1/contacts?limit=0").await.expect_field_error("limit");
        app.get("/v1/contacts?limit=101").await.expect_field_error("limit");
        app.get("/v1/contacts?cursor=x").await.expect_field_error("cursor");
        app.get("/v1/contacts?created_at_from=soon").await.expect_field_error("created_at_from");

        let by_phone = app.get("/v1/contacts?phone=%2B55%20(11)%208000-0005").await.expect(200);
        assert_eq!(names(&by_phone), ["p05"]);
        let by_email = app.get("/v1/contacts?email=P1@X.COM&limit=5").await.expect(200);
        assert_eq!(names(&by_email), ["p01", "p03", "p05", "p07", "p09"]);
        let next = by_email["nextCursor"].as_str().unwrap();
        let rest = app.get(&format!("/v1/contacts?email=p1@x.com&limit=50&cursor={next}")).await.expect(200);
        assert_eq!(names(&rest).len(), 6);
        assert_eq!(rest["nextCursor"], "");
        let future = (chrono::Utc::now() + chrono::Duration::hours(1)).format("%Y-%m-%dT%H:%M:%SZ");
        assert_eq!(app.get(&format!("/v1/contacts?created_at_from={future}")).await.expect(200)["data"], json!([]));
        assert_eq!(app.get("/v1/contacts?created_at_to=2020-01-01").await.expect(200)["data"], json!([]));
        assert_eq!(app.get("/v1/contacts?created_at_from=2020-01-01&limit=100").await.expect(200)["data"].as_array().unwrap().len(), 23);
    }
}

api_test! {
    /// find-or-create looks up every variant of every phone given, and creates when none matches.
    async fn finds_or_creates_by_phone(app) {
        let response = app.post("/v3/contacts/find-or-create", json!({ "name": "Caio", "phone": "(11) 8765-4321" })).await;
        assert_eq!(response.headers["x-contact-created"], "true");
        let created = response.expect(201);
        for variant in ["+55 11 98765-4321", "11987654321", "1187654321", "5511987654321"] {
            let response = app.post("/v3/contacts/find-or-create", json!({ "name": "Other name", "phone": variant })).await;
            assert_eq!(response.headers["x-contact-created"], "false");
            assert_eq!(response.expect(201)["id"], created["id"], "{variant}");
        }
        let by_list = app.post("/v3/contacts/find-or-create", json!({ "phones": ["21 3333-4444", "5511987654321"] })).await.expect(201);
        assert_eq!(by_list["id"], created["id"]);
        assert_eq!(by_list["name"], "Caio", "found, not changed");
        let new_one = app.post("/v3/contacts/find-or-create", json!({ "name": "Duda", "phones": ["21 3333-4444", "21 98888-1111"] })).await.expect(201);
        assert_ne!(new_one["id"], created["id"]);
        assert_eq!(new_one["phone"], "+552133334444", "created with the first phone");
        assert_eq!(app.get("/v3/contacts").await.expect(200)["totalCount"], 2);

        app.post("/v3/contacts/find-or-create", json!({ "name": "No phone" })).await.expect_field_error("phone");
        app.post("/v3/contacts/find-or-create", json!({ "phones": ["11987654321", "bad"] })).await.expect_field_error("phones[1]");
        app.post("/v3/contacts/find-or-create", json!({ "phones": [] })).await.expect_field_error("phones");
    }
}

api_test! {
    /// Concurrent find-or-creates of one phone create one contact.
    async fn concurrent_find_or_create_has_one_contact(app) {
        let calls = (0..8).map(|i| {
            let phone = if i % 2 == 0 { "11987654321" } else { "(11) 8765-4321" };
            app.post("/v3/contacts/find-or-create", json!({ "name": format!("n{i}"), "phone": phone }))
        });
        let answers = futures::future::join_all(calls).await;
        let mut ids = std::collections::BTreeSet::new();
        for answer in answers {
            ids.insert(answer.expect(201)["id"].as_str().unwrap().to_owned());
        }
        assert_eq!(ids.len(), 1, "{ids:?}");
        assert_eq!(app.get("/v3/contacts").await.expect(200)["totalCount"], 1);
    }
}

api_test! {
    /// find-or-create stays in its workspace: the same phone elsewhere is another contact.
    async fn find_or_create_is_per_workspace(app) {
        let (_, token) = app.new_workspace("Other").await;
        let theirs = app.as_token(&token).post("/v3/contacts/find-or-create", json!({ "phone": "11987654321" })).await.expect(201);
        let response = app.post("/v3/contacts/find-or-create", json!({ "phone": "11987654321" })).await;
        assert_eq!(response.headers["x-contact-created"], "true");
        let mine = response.expect(201);
        assert_ne!(mine["id"], theirs["id"]);
        assert_eq!(mine["workspaceId"], 1);
    }
}

api_test! {
    /// A keyed create whose answer was not kept (the store took the record,
    /// not the answer) answers its retry as it first did, by reading what it
    /// made (docs/api-contract.md, "Idempotency").
    async fn a_keyed_create_whose_answer_was_lost_is_read_back(app) {
        app.assert_read_back("/v3/contacts", "/v3/contacts", &json!({ "name": "Ana", "phone": "11 98765-0001" }), &[]).await;
        app.assert_read_back("/v1/contacts", "/v1/contacts", &json!({ "name": "Bia", "phone": "21 98888-7777" }), &[]).await;
        let body = json!({ "name": "Caio", "phone": "11 98765-0002" });
        app.assert_read_back("/v3/contacts/find-or-create", "/v3/contacts/find-or-create", &body, &[]).await;
    }
}

api_test! {
    /// Each event type of the group is made by its change (docs/api-contract.md,
    /// "Events"; `events.rs` fails for a declared type no suite makes).
    async fn each_change_of_a_contact_makes_its_event_type(app) {
        let maria = app.post("/v3/contacts", json!({ "name": "Maria" })).await.expect(201);
        let maria = maria["id"].as_str().unwrap().to_owned();
        app.patch(&format!("/v3/contacts/{maria}"), json!({ "name": "Maria S." })).await.expect(200);
        let twin = app.post("/v3/contacts", json!({ "name": "Maria twice" })).await.expect(201);
        app.post(&format!("/v3/contacts/{maria}/merge"), json!({ "ids": [twin["id"]] })).await.expect(200);
        let gone = app.post("/v3/contacts", json!({ "name": "Erased" })).await.expect(201);
        app.post(&format!("/v3/contacts/{}/erase", gone["id"].as_str().unwrap()), json!({})).await.expect(200);
        app.assert_made_events(&["contact.created", "contact.updated", "contact.merged", "contact.erased"]).await;
    }
}

/// A contact as the list kept it before its shards: a copy of a new one
/// named `name` under an id made on 2024-06-01 (before the suites' cutover,
/// `api_tests::SHARDED_FROM`), so in `W#1#CONTACT`. Answers its id.
async fn an_old_contact(app: &TestApp, name: &str, n: u64) -> u64 {
    use shared::domain::contacts::Contact;
    let made = contact(app, json!({ "name": name })).await;
    let id: u64 = made["id"].as_str().unwrap().parse().unwrap();
    let ws = shared::ids::WorkspaceId(1);
    let item = app.store.get(&shared::keys::contact(ws, id), true).await.unwrap().unwrap();
    let mut old: Contact = shared::record::from_item(item).unwrap();
    let at = "2024-06-01T00:00:00Z".parse().unwrap();
    old.id = shared::ids::id_range(&at, &at).0 + n;
    let item = shared::record::to_item(&old).unwrap();
    assert_eq!(item["pk"], json!("W#1#CONTACT"), "a contact from before is in shard 0");
    app.store.write(vec![shared::store::Write::Put { item, condition: None }]).await.unwrap();
    old.id
}

/// Every contact id stored in workspace 1, ascending, and the partitions
/// that hold them.
async fn stored_contacts(app: &TestApp) -> (Vec<u64>, std::collections::BTreeSet<String>) {
    use shared::store::{Index, Query, SkRange};
    let (mut ids, mut partitions) = (Vec::new(), std::collections::BTreeSet::new());
    for pk in shared::keys::contact_partitions(shared::ids::WorkspaceId(1)) {
        let query = Query::new(Index::TABLE, pk.clone(), SkRange::All);
        for item in shared::page::read_up_to(app.store.as_ref(), query, 10_000).await.unwrap() {
            ids.push(item["sk"].as_str().unwrap().parse::<u64>().unwrap());
            partitions.insert(pk.clone());
        }
    }
    ids.sort_unstable();
    (ids, partitions)
}

api_test! {
    /// The contacts over their shards (decision 0037): those made before
    /// the cutover, still in their one partition, and the new ones spread
    /// over the shards list as one, in id order both ways, page by page
    /// (`/v3` offsets, `/v1` cursors, the `/all` window), and each reads by id.
    async fn contacts_from_before_the_shards_and_after_list_as_one(app) {
        let mut old = Vec::new();
        for n in 0..3 {
            old.push(an_old_contact(&app, &format!("Old {n}"), n).await);
        }
        for i in 0..20 {
            contact(&app, json!({ "name": format!("New {i}") })).await;
        }
        let (stored, partitions) = stored_contacts(&app).await;
        assert!(partitions.len() >= 4, "spread over the shards: {partitions:?}");
        assert_eq!(stored[..3], old[..], "the old ids come first");
        let as_ids = |page: &Value| ids(page).iter().map(|id| id.parse::<u64>().unwrap()).collect::<Vec<_>>();
        for (order, expected) in [("ascend", stored.clone()), ("descend", stored.iter().rev().copied().collect())] {
            let mut listed = Vec::new();
            for offset in (0..stored.len() + 4).step_by(4) {
                let page = app.get(&format!("/v3/contacts?sortField=id&sortOrder={order}&limit=4&offset={offset}")).await.expect(200);
                listed.extend(as_ids(&page));
            }
            assert_eq!(listed, expected, "/v3 pages, {order}");
        }
        assert_eq!(as_ids(&v1_pages(&app, 5).await), stored, "/v1 pages");
        let window = app.get("/v3/contacts/all?createdAtFrom=2024-06-01T00:00:00Z&createdAtTo=2024-06-01T01:00:00Z").await.expect(200);
        assert_eq!((as_ids(&window), window["totalCount"].clone()), (old.clone(), json!(3)), "a window from before");
        for id in &old {
            app.get(&format!("/v3/contacts/{id}")).await.expect(200);
        }
    }
}

/// The shards of workspace `ws` of a value-keyed family that hold items.
async fn shards_holding(app: &TestApp, ws: u64, family: &str) -> usize {
    use shared::store::{Index, Query, SkRange};
    let mut holding = 0;
    for shard in 0..shared::keys::SHARDS {
        let pk = shared::keys::shard_partition(shared::ids::WorkspaceId(ws), family, shard);
        let query = Query::new(Index::TABLE, pk, SkRange::All);
        let items = shared::page::read_up_to(app.store.as_ref(), query, 1).await.unwrap();
        holding += usize::from(!items.is_empty());
    }
    holding
}

api_test! {
    /// In a workspace made since the shards' cutover (as one that brings
    /// its CRM in is), a contact's index items spread over the shards: by
    /// value (phone, e-mail and its holder, `externalId`), the name words by
    /// id. Every lookup still finds them: a search by phone, e-mail or name
    /// (paged), find-or-create, upsert by e-mail and by `externalId`, a
    /// phone taken, the duplicates; an erasure leaves none. Workspace 1,
    /// made before the cutover, keeps its value-keyed items in shard 0.
    async fn a_new_workspace_spreads_a_contacts_index_items_and_every_lookup_finds_them(app) {
        let (ws, token) = app.new_workspace("Imported").await;
        let client = app.as_token(&token);
        let mut made = Vec::new();
        for n in 0..24 {
            let body = json!({ "name": format!("Ana Souza {n}"), "phone": format!("11 98765-{n:04}"),
                               "email": format!("ana{n}@example.com"), "externalId": format!("crm-{n}") });
            made.push(client.post("/v3/contacts", body).await.expect(201)["id"].as_str().unwrap().to_owned());
        }
        for family in ["PHONE", "EMAIL", "EMAILHELD", "EXTERNALID", "NAMEWORD"] {
            let holding = shards_holding(&app, ws, family).await;
            assert!(holding >= 4, "{family} over {holding} shards");
        }
        for n in [0, 7, 23] {
            let by_phone = client.get(&format!("/v3/contacts?search=1198765{n:04}")).await.expect(200);
            assert_eq!(ids(&by_phone), [made[n].clone()], "by phone {n}");
            let by_email = client.get(&format!("/v3/contacts?search=ANA{n}@example.com")).await.expect(200);
            assert_eq!(ids(&by_email), [made[n].clone()], "by e-mail {n}");
        }
        let mut by_name = Vec::new();
        for offset in (0..28).step_by(5) {
            by_name.extend(ids(&client.get(&format!("/v3/contacts?search=souz&limit=5&offset={offset}")).await.expect(200)));
        }
        assert_eq!(by_name, made, "a name search over the shards, in the word's order (then id)");
        let found = client.post("/v3/contacts/find-or-create", json!({ "phone": "+55 11 98765-0003" })).await;
        assert_eq!(found.headers["x-contact-created"], "false");
        assert_eq!(found.expect(201)["id"], json!(made[3]));
        let upserts = client
            .post("/v3/contacts/batch", json!({ "operations": [
                { "op": "upsert", "by": "email", "data": { "email": "ANA5@example.com", "location": "Recife" } },
                { "op": "upsert", "by": "externalId", "data": { "externalId": "crm-6", "notes": "synced" } },
            ]}))
            .await
            .expect(200);
        let answered: Vec<(Value, Value)> = upserts["results"].as_array().unwrap().iter().map(|r| (r["status"].clone(), r["id"].clone())).collect();
        assert_eq!(answered, [(json!(200), json!(made[5])), (json!(200), json!(made[6]))]);
        client.post("/v3/contacts", json!({ "phone": "+5511987650002" })).await.expect(409);
        client.post("/v3/contacts", json!({ "name": "Twin", "email": "ana9@example.com" })).await.expect(201);
        let duplicates = client.get("/v3/contacts/duplicates").await.expect(200);
        let groups: Vec<(Value, usize)> = duplicates["data"].as_array().unwrap().iter()
            .map(|g| (g["value"].clone(), g["contacts"].as_array().unwrap().len())).collect();
        assert_eq!(groups, [(json!("ana9@example.com"), 2)]);

        // Erased as the job worker erases (the workspace's token holds no `contacts:erase`).
        let eraser = shared::auth::Caller::system(ws, "test");
        shared::domain::contacts::erase(app.store.as_ref(), &eraser, made[4].parse().unwrap()).await.unwrap();
        let gone = client.get("/v3/contacts?search=11987650004").await.expect(200);
        assert_eq!(ids(&gone), Vec::<String>::new(), "an erased contact's phone finds nothing");
        let gone = client.get("/v3/contacts?search=ana4@example.com").await.expect(200);
        assert_eq!(ids(&gone), Vec::<String>::new(), "nor its e-mail");
        let sentinel = shared::keys::contact_phone(shared::ids::WorkspaceId(ws), "+5511987650004");
        assert_ne!(sentinel.pk, format!("W#{ws}#PHONE"), "this phone's shard is not 0");
        assert!(app.store.get(&sentinel, true).await.unwrap().is_none(), "the erased phone's sentinel");
        client.post("/v3/contacts", json!({ "phone": "+5511987650004" })).await.expect(201);

        app.post("/v3/contacts", json!({ "phone": "+5511912340000", "email": "old@example.com" })).await.expect(201);
        for family in ["PHONE", "EMAIL", "EMAILHELD"] {
            assert_eq!(shards_holding(&app, 1, family).await, 1, "workspace 1's {family}");
        }
        let held = shared::keys::contact_phone(shared::ids::WorkspaceId(1), "+5511912340000");
        assert_eq!(held.pk, "W#1#PHONE", "a workspace made before the cutover keeps shard 0");
    }
}

api_test! {
    /// A name search reads its word's items over the shards 100 at a time
    /// and goes on after the last one read: matches past the first hundred
    /// are found, in the word's order.
    async fn a_name_search_goes_on_past_its_first_hundred_index_items(app) {
        let mut both = Vec::new();
        for n in 0..120 {
            let name = if n < 115 { format!("Limeira {n}") } else { format!("Limeira Rosa {n}") };
            let made = app.post("/v3/contacts", json!({ "name": name })).await.expect(201);
            if n >= 115 {
                both.push(made["id"].as_str().unwrap().to_owned());
            }
        }
        let found = app.get("/v3/contacts?search=limeira%20rosa&limit=10").await.expect(200);
        assert_eq!(ids(&found), both);
    }
}

/// What its lists cost, at two sizes of the workspace (tests/tests/costs.rs
/// has the costs every group shares).
mod costs {
    use api_tests::costs::cost_of;
    use api_tests::serde_json::json;
    use api_tests::{TestApp, api_test};

    /// Adds contacts until the workspace holds `size` (names "Filler n", no phone).
    async fn grow_contacts(app: &TestApp, size: u64) {
        let have = app.get("/v3/contacts").await.expect(200)["totalCount"]
            .as_u64()
            .unwrap();
        for i in have..size {
            app.post("/v3/contacts", json!({ "name": format!("Filler {i}") }))
                .await
                .expect(201);
        }
    }

    api_test! {
        /// A contact by id is one GetItem; find-or-create of a known phone reads a fixed
        /// number of items (BatchGet of the phone keys, the phone sentinel, the contact).
        async fn contact_reads_by_key_are_fixed(app) {
            let c = app.post("/v3/contacts", json!({ "name": "Key", "phone": "11987654321" })).await.expect(201);
            let path = format!("/v3/contacts/{}", c["id"].as_str().unwrap());
            let mut costs = Vec::new();
            for size in [5, 40] {
                grow_contacts(&app, size).await;
                let get = cost_of(&app, || async { app.get(&path).await.expect(200); }).await;
                assert_eq!((get.gets, get.queries, get.batch_gets), (2, 0, 0), "token + contact");
                let found = cost_of(&app, || async {
                    app.post("/v3/contacts/find-or-create", json!({ "phones": ["(11) 8765-4321", "21 3333-4444"] })).await.expect(201);
                }).await;
                assert_eq!((found.gets, found.batch_gets, found.queries, found.transactions), (3, 1, 0, 0));
                costs.push((get.read_units, found.read_units));
            }
            assert_eq!(costs[0], costs[1], "the same at 5 and 40 contacts");
        }
    }

    api_test! {
        /// A name search, a phone search, a window and a /v1 page read what they return
        /// plus index items, whatever the size of the workspace. The lists by
        /// creation read the 8 shards of the contacts at once (decision 0037):
        /// one or two Queries a shard and at most `limit` items of each
        /// (all 62 contacts would be more), at 10 contacts as at 60.
        async fn contact_lists_do_not_grow_with_the_workspace(app) {
            for name in ["Zeca Alpha", "Zuleica Beta"] {
                app.post("/v3/contacts", json!({ "name": name })).await.expect(201);
            }
            // A window that holds the two contacts above and none of the fillers below.
            let from = (chrono::Utc::now() - chrono::Duration::minutes(30)).format("%Y-%m-%dT%H:%M:%S%.3fZ");
            let to = chrono::Utc::now().format("%Y-%m-%dT%H:%M:%S%.3fZ");
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            let requests = [
                "/v3/contacts?search=zul".to_owned(),
                "/v3/contacts?search=11912345678".to_owned(),
                format!("/v3/contacts/all?createdAtFrom={from}&createdAtTo={to}&limit=5"),
                "/v1/contacts?limit=5".to_owned(),
                "/v3/contacts?limit=5".to_owned(),
                "/v3/contacts?sortField=name&sortOrder=ascend&limit=5".to_owned(),
            ];
            let mut at = Vec::new();
            for size in [10, 60] {
                grow_contacts(&app, size).await;
                let mut costs = Vec::new();
                for path in &requests {
                    let cost = cost_of(&app, || async { app.get(path).await.expect(200); }).await;
                    costs.push((cost.gets, cost.batch_gets, cost.queries, cost.scanned));
                }
                at.push(costs);
            }
            let (small, large) = (&at[0], &at[1]);
            let merged = [3, 4]; // `/v1` and `/v3` pages by creation
            for (i, path) in requests.iter().enumerate().filter(|(i, _)| !merged.contains(i)) {
                assert_eq!(small[i], large[i], "{path} costs the same at 10 and 60 contacts");
            }
            for costs in &at {
                assert_eq!(costs[2], (1, 0, 16, 4), "window: token, a page Query and a key-only count a shard, of the window's 2");
                let (gets, batch_gets, queries, scanned) = costs[3];
                assert_eq!((gets, batch_gets), (1, 0), "/v1 page: the token");
                assert!((8..=16).contains(&queries) && scanned <= 8 * 6, "/v1 page: limit + 1 a shard at most: {:?}", costs[3]);
                let (gets, _, queries, scanned) = costs[4];
                assert!(gets <= 2 && (8..=16).contains(&queries) && scanned <= 8 * 5, "/v3 page: {:?}", costs[4]);
            }
            // The name words are kept over the shards by contact id: a search
            // reads each shard's range of the word at once.
            assert_eq!(small[0], (1, 1, 8, 1), "search=zul: token, an index Query a shard of 1 key in all, one BatchGet");
        }
    }
}

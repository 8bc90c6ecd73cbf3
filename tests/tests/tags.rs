//! Tags (`/v3/tags`, `/v1/tags`): the spec's Tag, its limits (name unique per
//! workspace and at most 128 characters, color at most 128, textColor at most
//! 20), and the public `/v1` shape of the same records.

use api_tests::serde_json::json;
use api_tests::{ADMIN_TOKEN, api_test};

api_test! {
    /// POST /v3/tags answers 201 with the spec's required members.
    async fn creates_a_tag(app) {
        let tag = app
            .post("/v3/tags", json!({ "name": "VIP", "color": "#ff0000", "textColor": "#ffffff", "authorId": 7 }))
            .await
            .expect(201);
        assert!(tag["id"].as_str().is_some_and(|id| id.parse::<u64>().is_ok()), "{tag}");
        assert_eq!(tag["name"], "VIP");
        assert_eq!(tag["color"], "#ff0000");
        assert_eq!(tag["textColor"], "#ffffff");
        assert_eq!(tag["authorId"], 7);
        assert_eq!(tag["workspaceId"], 1);
        assert!(tag["createdAt"].as_str().is_some_and(|t| t.ends_with('Z') && t.len() == 24), "{tag}");
        assert_eq!(tag["createdAt"], tag["lastUpdateAt"]);
        // The id is a JavaScript-safe number.
        assert!(tag["id"].as_str().unwrap().parse::<u64>().unwrap() < 1 << 53);
    }
}

api_test! {
    /// Only the name is required; the color has a default so that it is always present.
    async fn creates_a_tag_with_a_name_only(app) {
        let tag = app.post("/v3/tags", json!({ "name": "Lead" })).await.expect(201);
        assert_eq!(tag["color"], "#9E9E9E");
        assert!(tag.get("textColor").is_none());
    }
}

api_test! {
    async fn reads_a_tag_by_id(app) {
        let created = app.post("/v3/tags", json!({ "name": "VIP" })).await.expect(201);
        let id = created["id"].as_str().unwrap();
        let read = app.get(&format!("/v3/tags/{id}")).await.expect(200);
        assert_eq!(read, created);
    }
}

api_test! {
    async fn lists_tags_with_total_count(app) {
        for name in ["a", "b", "c"] {
            app.post("/v3/tags", json!({ "name": name })).await.expect(201);
        }
        let page = app.get("/v3/tags").await.expect(200);
        assert_eq!(page["totalCount"], 3);
        let names: Vec<_> = page["data"].as_array().unwrap().iter().map(|t| t["name"].clone()).collect();
        assert_eq!(names, vec![json!("a"), json!("b"), json!("c")]); // creation order
    }
}

api_test! {
    /// limit/offset pages are disjoint, complete, and the count is the whole list.
    async fn pages_tags_with_limit_and_offset(app) {
        for i in 0..7 {
            app.post("/v3/tags", json!({ "name": format!("tag {i}") })).await.expect(201);
        }
        let mut seen = Vec::new();
        for offset in [0, 3, 6] {
            let page = app.get(&format!("/v3/tags?limit=3&offset={offset}")).await.expect(200);
            assert_eq!(page["totalCount"], 7);
            seen.extend(page["data"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_owned()));
        }
        let expected: Vec<String> = (0..7).map(|i| format!("tag {i}")).collect();
        assert_eq!(seen, expected);
        let past_the_end = app.get("/v3/tags?limit=3&offset=50").await.expect(200);
        assert_eq!(past_the_end["data"], json!([]));
        assert_eq!(past_the_end["totalCount"], 7);
    }
}

api_test! {
    async fn refuses_bad_list_parameters(app) {
        app.get("/v3/tags?limit=0").await.expect_field_error("limit");
        app.get("/v3/tags?limit=501").await.expect_field_error("limit");
        app.get("/v3/tags?limit=ten").await.expect_field_error("limit");
        app.get("/v3/tags?offset=-1").await.expect_field_error("offset");
        app.get("/v3/tags?limit=500&offset=9501").await.expect_field_error("offset");
        app.get("/v3/tags?offset=18446744073709551615").await.expect_field_error("offset");
        app.get("/v3/tags?offset=18446744073709551616").await.expect_field_error("offset");
        app.get("/v3/tags?colour=red").await.expect_field_error("colour");
    }
}

api_test! {
    /// Names are unique per workspace, compared without case and spacing (and
    /// accents: `names_are_one_without_case_accents_or_spacing`).
    async fn refuses_a_duplicate_name_with_409(app) {
        app.post("/v3/tags", json!({ "name": "VIP" })).await.expect(201);
        app.post("/v3/tags", json!({ "name": "VIP" })).await.expect_error(409);
        app.post("/v3/tags", json!({ "name": "  vip " })).await.expect_error(409);
        app.post("/v1/tags", json!({ "name": "Vip" })).await.expect_error(409);
        let page = app.get("/v3/tags").await.expect(200);
        assert_eq!(page["totalCount"], 1, "a refused create writes nothing");
    }
}

api_test! {
    /// A name is one without case, accents or spacing, as the tags batch's
    /// upsert promises: "promocao  de NATAL" is "Promoção de Natal" (409 on
    /// create, found by upsert), and renaming to it is a 409 too.
    async fn names_are_one_without_case_accents_or_spacing(app) {
        let tag = app.post("/v3/tags", json!({ "name": "Promoção de Natal" })).await.expect(201);
        app.post("/v3/tags", json!({ "name": " promocao  de NATAL" })).await.expect_error(409);
        let other = app.tag_path("Black Friday").await;
        app.patch(&other, json!({ "name": "PROMOÇAO DE NATAL" })).await.expect_error(409);
        let answer = app
            .post("/v3/tags/batch", json!({ "operations": [{ "op": "upsert", "data": { "name": "promocao de natal", "color": "#00ff00" } }] }))
            .await
            .expect(200);
        let result = &answer["results"][0];
        assert_eq!((result["status"].clone(), result["created"].clone(), result["id"].clone()), (json!(200), json!(false), tag["id"].clone()), "{answer}");
        assert_eq!(result["data"]["color"], "#00ff00");
        assert_eq!(app.get("/v3/tags").await.expect(200)["totalCount"], 2);
        // Deleted, its name is free again, in any spelling.
        app.delete(&format!("/v3/tags/{}", tag["id"].as_str().unwrap())).await.expect(200);
        app.post("/v3/tags", json!({ "name": "Promocao de Natal" })).await.expect(201);
    }
}

api_test! {
    /// A tag named with accents before names were folded holds the sentinel
    /// of that rule alone (its name without case and spacing): an upsert of
    /// its own name finds it, a create of its own name is a 409, and once it
    /// is renamed its old name is free.
    async fn a_tag_named_before_accents_were_folded_keeps_its_name(app) {
        let tag = app.post("/v3/tags", json!({ "name": "Ação" })).await.expect(201);
        let id = tag["id"].as_str().unwrap().to_owned();
        // As the earlier rule left it: the sentinel of "ação", not of "acao".
        let ws = shared::ids::WorkspaceId(1);
        let today = shared::keys::tag_name(ws, "acao");
        let mut sentinel = app.store.get(&today, true).await.unwrap().expect("the name's sentinel");
        sentinel.insert(shared::store::SK.into(), json!("TAGNAME#ação"));
        app.store.write(vec![
            shared::store::Write::Delete { key: today, condition: None },
            shared::store::Write::Put { item: sentinel, condition: None },
        ]).await.unwrap();

        app.post("/v3/tags", json!({ "name": " AÇÃO " })).await.expect_error(409);
        let answer = app
            .post("/v3/tags/batch", json!({ "operations": [{ "op": "upsert", "data": { "name": "ação", "textColor": "#fff" } }] }))
            .await
            .expect(200);
        assert_eq!((answer["results"][0]["created"].clone(), answer["results"][0]["id"].clone()), (json!(false), json!(id)), "{answer}");
        assert_eq!(app.get("/v3/tags").await.expect(200)["totalCount"], 1);
        app.patch(&format!("/v3/tags/{id}"), json!({ "name": "Reação" })).await.expect(200);
        app.post("/v3/tags", json!({ "name": "Ação" })).await.expect(201);
    }
}

api_test! {
    /// Of many concurrent creates of one name exactly one wins; the rest get 409.
    async fn concurrent_creates_of_one_name_have_one_winner(app) {
        let attempts = (0..8).map(|_| app.post("/v3/tags", json!({ "name": "Hot lead" })));
        let statuses: Vec<u16> = futures::future::join_all(attempts)
            .await
            .into_iter()
            .map(|r| r.status.as_u16())
            .collect();
        assert_eq!(statuses.iter().filter(|&&s| s == 201).count(), 1, "{statuses:?}");
        assert_eq!(statuses.iter().filter(|&&s| s == 409).count(), 7, "{statuses:?}");
        let page = app.get("/v3/tags").await.expect(200);
        assert_eq!(page["totalCount"], 1);
        assert_eq!(page["data"].as_array().unwrap().len(), 1);
    }
}

api_test! {
    async fn validates_the_limits_of_the_spec(app) {
        let long = |n: usize| "x".repeat(n);
        app.post("/v3/tags", json!({ "name": long(128) })).await.expect(201);
        app.post("/v3/tags", json!({ "name": long(129) })).await.expect_field_error("name");
        app.post("/v3/tags", json!({ "name": "c", "color": long(128) })).await.expect(201);
        app.post("/v3/tags", json!({ "name": "d", "color": long(129) })).await.expect_field_error("color");
        app.post("/v3/tags", json!({ "name": "e", "textColor": long(20) })).await.expect(201);
        app.post("/v3/tags", json!({ "name": "f", "textColor": long(21) })).await.expect_field_error("textColor");
        // Multi-byte characters count as one each.
        app.post("/v3/tags", json!({ "name": "é".repeat(128) })).await.expect(201);
    }
}

api_test! {
    async fn refuses_malformed_bodies_with_400(app) {
        app.post("/v3/tags", json!({})).await.expect_field_error("name");
        app.post("/v3/tags", json!({ "name": "" })).await.expect_field_error("name");
        app.post("/v3/tags", json!({ "name": "   " })).await.expect_field_error("name");
        app.post("/v3/tags", json!({ "name": 5 })).await.expect_field_error("name");
        app.post("/v3/tags", json!({ "name": "x", "authorId": "seven" })).await.expect_field_error("authorId");
        app.post("/v3/tags", json!({ "name": "x", "owner": 1 })).await.expect_field_error("owner");
        app.post("/v3/tags", json!(["name"])).await.expect_error(400);
        let page = app.get("/v3/tags").await.expect(200);
        assert_eq!(page["totalCount"], 0, "no refused body wrote anything");
    }
}

api_test! {
    /// PATCH changes what it names, moves lastUpdateAt and updatedAt, keeps createdAt.
    async fn patches_a_tag(app) {
        let tag = app.post("/v3/tags", json!({ "name": "VIP", "color": "#f00", "textColor": "#fff" })).await.expect(201);
        let id = tag["id"].as_str().unwrap();
        let patched = app
            .patch(&format!("/v3/tags/{id}"), json!({ "color": "#0f0", "_id": "legacy-1", "authorId": 3 }))
            .await
            .expect(200);
        assert_eq!(patched["name"], "VIP");
        assert_eq!(patched["color"], "#0f0");
        assert_eq!(patched["_id"], "legacy-1");
        assert_eq!(patched["authorId"], 3);
        assert_eq!(patched["createdAt"], tag["createdAt"]);
        assert!(patched["lastUpdateAt"].as_str() > tag["lastUpdateAt"].as_str());
        assert_eq!(patched["updatedAt"], patched["lastUpdateAt"]);
        // null clears an optional member.
        let cleared = app.patch(&format!("/v3/tags/{id}"), json!({ "textColor": null })).await.expect(200);
        assert!(cleared.get("textColor").is_none(), "{cleared}");
        assert_eq!(app.get(&format!("/v3/tags/{id}")).await.expect(200), cleared);
    }
}

api_test! {
    async fn validates_patches(app) {
        let tag = app.post("/v3/tags", json!({ "name": "VIP" })).await.expect(201);
        let path = format!("/v3/tags/{}", tag["id"].as_str().unwrap());
        app.patch(&path, json!({ "name": "x".repeat(129) })).await.expect_field_error("name");
        app.patch(&path, json!({ "name": null })).await.expect_field_error("name");
        app.patch(&path, json!({ "textColor": "x".repeat(21) })).await.expect_field_error("textColor");
        app.patch(&path, json!({ "workspaceId": 2 })).await.expect_field_error("workspaceId");
        app.patch(&path, json!({ "createdAt": "2020-01-01T00:00:00Z" })).await.expect_field_error("createdAt");
        assert_eq!(app.get(&path).await.expect(200), tag, "refused patches change nothing");
    }
}

api_test! {
    /// Renaming frees the old name and claims the new one.
    async fn renames_keep_names_unique(app) {
        let a = app.post("/v3/tags", json!({ "name": "alpha" })).await.expect(201);
        app.post("/v3/tags", json!({ "name": "beta" })).await.expect(201);
        let a_path = format!("/v3/tags/{}", a["id"].as_str().unwrap());
        app.patch(&a_path, json!({ "name": "BETA" })).await.expect_error(409);
        app.patch(&a_path, json!({ "name": "gamma" })).await.expect(200);
        app.post("/v3/tags", json!({ "name": "alpha" })).await.expect(201);
        // A change of case only keeps the same name.
        app.patch(&a_path, json!({ "name": "Gamma" })).await.expect(200);
    }
}

api_test! {
    async fn deletes_a_tag(app) {
        let tag = app.post("/v3/tags", json!({ "name": "VIP" })).await.expect(201);
        let path = format!("/v3/tags/{}", tag["id"].as_str().unwrap());
        let deleted = app.delete(&path).await.expect(200);
        assert_eq!(deleted["id"], tag["id"]);
        app.get(&path).await.expect_error(404);
        app.delete(&path).await.expect_error(404);
        assert_eq!(app.get("/v3/tags").await.expect(200)["totalCount"], 0);
        // The name is free again.
        app.post("/v3/tags", json!({ "name": "VIP" })).await.expect(201);
    }
}

api_test! {
    async fn unknown_and_malformed_ids(app) {
        app.get("/v3/tags/123456").await.expect_error(404);
        app.patch("/v3/tags/123456", json!({ "name": "x" })).await.expect_error(404);
        app.delete("/v3/tags/123456").await.expect_error(404);
        app.get("/v3/tags/abc").await.expect_field_error("id");
        app.get("/v3/tags/-5").await.expect_field_error("id");
        app.get("/v1/tags/abc").await.expect_field_error("id");
    }
}

api_test! {
    /// Another workspace's tags are invisible: 404, never 403, and never listed.
    async fn another_workspaces_tags_are_invisible(app) {
        let (_, other) = app.new_workspace("Other").await;
        let other = app.as_token(&other);
        let theirs = other.post("/v3/tags", json!({ "name": "VIP" })).await.expect(201);
        let path = format!("/v3/tags/{}", theirs["id"].as_str().unwrap());
        app.get(&path).await.expect_error(404);
        app.patch(&path, json!({ "name": "mine" })).await.expect_error(404);
        app.delete(&path).await.expect_error(404);
        app.get(&format!("/v1/tags/{}", theirs["id"].as_str().unwrap())).await.expect_error(404);
        assert_eq!(app.get("/v3/tags").await.expect(200)["totalCount"], 0);
        assert_eq!(app.get("/v1/tags").await.expect(200), json!([]));
        // Names are unique per workspace, not across workspaces.
        let mine = app.post("/v3/tags", json!({ "name": "VIP" })).await.expect(201);
        assert_eq!(mine["workspaceId"], 1);
        // Their record is untouched.
        assert_eq!(other.get(&path).await.expect(200), theirs);
    }
}

api_test! {
    async fn needs_a_valid_token(app) {
        use http::Method;
        app.send(Method::GET, "/v3/tags", None, None).await.expect_error(401);
        app.send(Method::GET, "/v1/tags", None, None).await.expect_error(401);
        app.send(Method::GET, "/v3/tags", Some("crm_not_a_real_token_at_all"), None).await.expect_error(401);
        app.send(Method::GET, "/v3/tags", Some("not-even-the-prefix"), None).await.expect_error(401);
        let _ = ADMIN_TOKEN;
    }
}

api_test! {
    /// `/v1` serves the same records in the public shape.
    async fn v1_serves_the_same_tags(app) {
        let created = app.post("/v1/tags", json!({ "name": "Lead", "color": "#00f" })).await.expect(201);
        assert_eq!(
            created.as_object().unwrap().keys().cloned().collect::<Vec<_>>(),
            vec!["color", "createdAt", "id", "name", "updatedAt"]
        );
        let id = created["id"].as_str().unwrap();
        let v3 = app.get(&format!("/v3/tags/{id}")).await.expect(200);
        assert_eq!(v3["name"], "Lead");
        assert_eq!(v3["workspaceId"], 1);
        let v1 = app.get(&format!("/v1/tags/{id}")).await.expect(200);
        assert_eq!(v1, created);
        let patched = app.patch(&format!("/v1/tags/{id}"), json!({ "textColor": "#000" })).await.expect(200);
        assert_eq!(patched["textColor"], "#000");
        // The public records take the public fields only.
        app.post("/v1/tags", json!({ "name": "x", "authorId": 1 })).await.expect_field_error("authorId");
        app.patch(&format!("/v1/tags/{id}"), json!({ "_id": "x" })).await.expect_field_error("_id");
        let deleted = app.delete(&format!("/v1/tags/{id}")).await.expect(200);
        assert_eq!(deleted["id"], id);
        app.get(&format!("/v3/tags/{id}")).await.expect_error(404);
    }
}

api_test! {
    /// `/v1` lists answer the spec's array of tags; the next page is announced in
    /// a `Link: <...>; rel="next"` header (the cursor is the id of the last record),
    /// without repeats or gaps.
    async fn v1_lists_with_a_cursor(app) {
        for i in 0..25 {
            app.post("/v1/tags", json!({ "name": format!("t{i:02}") })).await.expect(201);
        }
        let first = app.get("/v1/tags").await.expect(200);
        assert_eq!(first.as_array().unwrap().len(), 10, "default limit is 10");
        let mut names = Vec::new();
        let mut next = "/v1/tags?limit=7".to_owned();
        let mut pages = 0;
        loop {
            let page = app.get(&next).await;
            let link = page.headers.get("link").map(|v| v.to_str().unwrap().to_owned());
            let data = page.expect(200);
            let data = data.as_array().unwrap();
            pages += 1;
            names.extend(data.iter().map(|t| t["name"].as_str().unwrap().to_owned()));
            let Some(link) = link else { break };
            let last = data.last().unwrap()["id"].as_str().unwrap();
            assert_eq!(link, format!("</v1/tags?limit=7&cursor={last}>; rel=\"next\""));
            next = link.trim_start_matches('<').split('>').next().unwrap().to_owned();
        }
        assert_eq!(pages, 4);
        assert_eq!(names, (0..25).map(|i| format!("t{i:02}")).collect::<Vec<_>>());
        // A page that ends exactly at the end says so: no Link.
        let exact = app.get("/v1/tags?limit=25").await;
        assert!(exact.headers.get("link").is_none());
        assert_eq!(exact.expect(200).as_array().unwrap().len(), 25);
        app.get("/v1/tags?limit=0").await.expect_field_error("limit");
        app.get("/v1/tags?limit=101").await.expect_field_error("limit");
        app.get("/v1/tags?cursor=abc").await.expect_field_error("cursor");
    }
}

api_test! {
    /// A keyed create whose answer was not kept (the store took the record,
    /// not the answer) answers its retry as it first did, by reading what it
    /// made (docs/api-contract.md, "Idempotency").
    async fn a_keyed_create_whose_answer_was_lost_is_read_back(app) {
        app.assert_read_back("/v3/tags", "/v3/tags", &json!({ "name": "VIP" }), &[]).await;
        app.assert_read_back("/v1/tags", "/v1/tags", &json!({ "name": "Lead", "color": "#00f" }), &[]).await;
    }
}

api_test! {
    /// Each event type of the group is made by its change (docs/api-contract.md,
    /// "Events"; `events.rs` fails for a declared type no suite makes).
    async fn each_change_of_a_tag_makes_its_event_type(app) {
        let tag = app.tag_path("Temporary").await;
        app.patch(&tag, json!({ "name": "VIP 2" })).await.expect(200);
        app.delete(&tag).await.expect(200);
        app.assert_made_events(&["tag.created", "tag.updated", "tag.deleted"]).await;
    }
}

/// What its lists cost, at two sizes of the workspace (tests/tests/costs.rs
/// has the costs every group shares).
mod costs {
    use api_tests::costs::cost_of;
    use api_tests::serde_json::json;
    use api_tests::api_test;

    api_test! {
        /// A list page is a Query or two of each of the 8 shards plus the
        /// counter's GetItem, and reads a page's worth of each shard at most,
        /// whatever the size of the workspace: shown with the same request at
        /// two sizes.
        async fn a_tag_list_page_does_not_grow_with_the_workspace(app) {
            let mut costs = Vec::new();
            for size in [6, 60] {
                let have = app.get("/v3/tags").await.expect(200)["totalCount"].as_u64().unwrap();
                for i in have..size {
                    app.post("/v3/tags", json!({ "name": format!("tag {i}") })).await.expect(201);
                }
                let cost = cost_of(&app, || async {
                    let page = app.get("/v3/tags?limit=5").await.expect(200);
                    assert_eq!(page["totalCount"], json!(size));
                    assert_eq!(page["data"].as_array().unwrap().len(), 5);
                })
                .await;
                assert_eq!(cost.gets, 2, "token + counter");
                // one or two Queries of each of the 8 shards, a page's worth at most
                assert!((8..=16).contains(&cost.queries) && cost.scanned <= 8 * 5, "{cost:?}");
                costs.push(cost.read_units);
            }
            assert!(costs[1] <= costs[0] + 8.0, "about the same cost at 6 and 60 tags: {costs:?}");

            let cost = cost_of(&app, || async { app.get("/v1/tags?limit=5").await.expect(200); }).await;
            assert_eq!(cost.gets, 1, "the token");
            assert!((8..=16).contains(&cost.queries) && cost.scanned <= 8 * 6, "the page and one to know whether more follow, a shard at most: {cost:?}");
        }
    }
}

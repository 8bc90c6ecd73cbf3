//! `POST /mcp`: the Model Context Protocol for AI agents, stateless over
//! Streamable HTTP. Its tools are requests of this API made with the
//! caller's token, so they keep its promises: the scopes decide which tools
//! a token sees and may call, a keyed write retried happens once, a refused
//! input names its field, and the envelope's own refusals are the one error
//! shape. (`scripts/mcp.sh` runs the official Python SDK against `crm serve`.)

use api_tests::serde_json::{Value, json};
use api_tests::{ADMIN_TOKEN, TestApp, api_test, token_with};
use axum::body::Body;
use http::{Method, Request};
use shared::auth::{Resource, Scope};

/// One JSON-RPC request to `/mcp` with `token`: the HTTP answer.
async fn rpc(app: &TestApp, token: &str, method: &str, params: Value) -> api_tests::TestResponse {
    let message = json!({ "jsonrpc": "2.0", "id": 7, "method": method, "params": params });
    app.send(Method::POST, "/mcp", Some(token), Some(message))
        .await
}

/// A `tools/call`'s result.
async fn call(app: &TestApp, token: &str, tool: &str, arguments: Value) -> Value {
    let body = rpc(
        app,
        token,
        "tools/call",
        json!({ "name": tool, "arguments": arguments }),
    )
    .await
    .expect(200);
    assert!(body["error"].is_null(), "a JSON-RPC error: {body}");
    body["result"].clone()
}

async fn tool_names(app: &TestApp, token: &str) -> Vec<String> {
    let body = rpc(app, token, "tools/list", json!({})).await.expect(200);
    body["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

fn a_deal(contact: u64) -> Value {
    json!({
        "name": "Fleet", "value": 10, "status": "open", "contactId": contact, "operatorId": 7,
        "groupId": 3, "pipelineId": "p1", "stageId": "s1", "origin": "site", "tagIds": []
    })
}

fn text(result: &Value) -> String {
    result["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

api_test!(
    async fn initialize_answers_the_version_asked_or_the_newest(app) {
        for (asked, answered) in [
            ("2025-06-18", "2025-06-18"),
            ("2025-03-26", "2025-03-26"),
            ("2099-01-01", "2025-11-25"),
        ] {
            let params = json!({ "protocolVersion": asked, "capabilities": {}, "clientInfo": { "name": "test", "version": "1" } });
            let body = rpc(&app, ADMIN_TOKEN, "initialize", params).await.expect(200);
            assert_eq!(body["jsonrpc"], "2.0");
            assert_eq!(body["id"], 7);
            assert_eq!(body["result"]["protocolVersion"], answered);
            assert!(body["result"]["capabilities"]["tools"].is_object());
        }
        let body = rpc(&app, ADMIN_TOKEN, "ping", json!({})).await.expect(200);
        assert_eq!(body["result"], json!({}));
        let body = rpc(&app, ADMIN_TOKEN, "resources/list", json!({})).await.expect(200);
        assert_eq!(body["error"]["code"], -32601);
    }
);

api_test!(
    async fn every_tool_describes_its_input_output_and_hints(app) {
        let body = rpc(&app, ADMIN_TOKEN, "tools/list", json!({})).await.expect(200);
        let tools = body["result"]["tools"].as_array().unwrap();
        assert_eq!(tools.len(), ::mcp::tools::TOOLS.len());
        for tool in tools {
            let name = tool["name"].as_str().unwrap();
            assert!(tool["description"].as_str().is_some_and(|d| d.len() > 40), "{name}");
            assert_eq!(tool["inputSchema"]["type"], "object", "{name}");
            assert_eq!(tool["outputSchema"]["type"], "object", "{name}");
            let hints = &tool["annotations"];
            for hint in ["readOnlyHint", "destructiveHint", "idempotentHint"] {
                assert!(hints[hint].is_boolean(), "{name} {hint}");
            }
            let writes = hints["readOnlyHint"] == false;
            let keyed = tool["inputSchema"]["properties"]["idempotencyKey"].is_object();
            assert_eq!(writes, keyed, "{name}: every write tool, and only those, takes an idempotencyKey");
        }
    }
);

api_test!(
    async fn a_token_sees_only_the_tools_its_scopes_allow(app) {
        let reader = token_with(&app, &[Scope::ReadAll]).await;
        let names = tool_names(&app, &reader).await;
        assert!(names.contains(&"search_contacts".to_owned()));
        for name in &names {
            let tool = ::mcp::tools::TOOLS.iter().find(|t| t.name == name).unwrap();
            assert!(tool.hints.0, "{name} is not read-only");
        }
        let contacts_reader = token_with(&app, &[Scope::Read(Resource::Contacts)]).await;
        let mut names = tool_names(&app, &contacts_reader).await;
        names.sort();
        assert_eq!(names, ["get_contact", "search_contacts"]);
    }
);

api_test!(
    async fn a_tool_the_scopes_do_not_allow_is_refused_naming_the_scope(app) {
        let reader = token_with(&app, &[Scope::ReadAll]).await;
        let result = call(&app, &reader, "create_contact", json!({ "name": "Not made" })).await;
        assert_eq!(result["isError"], true);
        assert!(text(&result).contains("contacts:write"), "{result}");
        let found = app.get("/v3/contacts?search=Not%20made").await.expect(200);
        assert_eq!(found["data"], json!([]), "nothing was written");
    }
);

api_test!(
    async fn a_refused_input_is_a_tool_result_naming_the_field(app) {
        let result = call(&app, ADMIN_TOKEN, "create_contact", json!({ "email": "not an e-mail" })).await;
        assert_eq!(result["isError"], true);
        assert!(text(&result).contains("email: "), "{result}");
        // Through a batch-relayed tool the field is the tool's own, not the batch's.
        let contact = app.a_contact().await;
        let deal = app.post("/v3/deals", a_deal(contact)).await.expect(201);
        let id: u64 = deal["id"].as_str().unwrap().parse().unwrap();
        let result = call(&app, ADMIN_TOKEN, "update_deal", json!({ "id": id, "value": "lots" })).await;
        assert_eq!(result["isError"], true);
        assert!(text(&result).contains("value: "), "{result}");
        assert!(!text(&result).contains("operations[0]"), "{result}");
        // Arguments that are not an object, or no id where one is needed.
        let result = call(&app, ADMIN_TOKEN, "get_deal", json!({})).await;
        assert_eq!(result["isError"], true);
        assert!(text(&result).starts_with("id: "), "{result}");
        let body = rpc(&app, ADMIN_TOKEN, "tools/call", json!({ "name": "no_such_tool" })).await.expect(200);
        assert_eq!(body["error"]["code"], -32602);
    }
);

api_test!(
    async fn a_keyed_write_retried_happens_once(app) {
        let arguments = json!({ "name": "Once Only", "email": "once.only@example.com", "idempotencyKey": "agent-1" });
        let first = call(&app, ADMIN_TOKEN, "create_contact", arguments.clone()).await;
        assert_eq!(first["isError"], false, "{first}");
        let again = call(&app, ADMIN_TOKEN, "create_contact", arguments).await;
        assert_eq!(again["structuredContent"]["id"], first["structuredContent"]["id"]);
        assert!(text(&again).contains("a retry"), "{again}");
        let found = app.get("/v3/contacts?emailExact=once.only@example.com").await.expect(200);
        assert_eq!(found["data"].as_array().unwrap().len(), 1);
        // The key is the HTTP API's: the same key and body over HTTP replay it.
        let http = app
            .post_with_key("/v3/contacts", "agent-1", &json!({ "email": "once.only@example.com", "name": "Once Only" }))
            .await;
        assert!(http.replayed(), "{:?}", http.body);
        // Another token's same key is its own: no answer crosses tokens.
        let other = token_with(&app, &[Scope::Write(Resource::Contacts)]).await;
        let theirs = call(&app, &other, "create_contact", json!({ "name": "Once Only", "email": "once.only@example.com", "idempotencyKey": "agent-1" })).await;
        assert_ne!(theirs["structuredContent"]["id"], first["structuredContent"]["id"], "{theirs}");
        assert!(!text(&theirs).contains("a retry"), "{theirs}");
    }
);

api_test!(
    async fn deals_move_win_lose_and_tag_through_their_tools(app) {
        let (app, clock) = app.with_manual_clock();
        let tag = call(&app, ADMIN_TOKEN, "create_tag", json!({ "name": "hot", "idempotencyKey": "t1" })).await;
        let tag_id: u64 = tag["structuredContent"]["id"].as_str().unwrap().parse().unwrap();
        let contact = app.a_contact().await;
        let deal = call(&app, ADMIN_TOKEN, "create_deal", a_deal(contact)).await;
        assert_eq!(deal["isError"], false, "{deal}");
        let id: u64 = deal["structuredContent"]["id"].as_str().unwrap().parse().unwrap();
        let moved = call(&app, ADMIN_TOKEN, "move_deal", json!({ "id": id, "stageId": "s2" })).await;
        assert_eq!(moved["structuredContent"]["stageId"], "s2", "{moved}");
        let tagged = call(&app, ADMIN_TOKEN, "tag_deal", json!({ "id": id, "add": [tag_id] })).await;
        assert_eq!(tagged["structuredContent"]["tagIds"], json!([tag_id]), "{tagged}");
        let won = call(&app, ADMIN_TOKEN, "win_deal", json!({ "id": id })).await;
        assert_eq!(won["structuredContent"]["status"], "won", "{won}");
        let lost = call(&app, ADMIN_TOKEN, "lose_deal", json!({ "id": id, "lostReason": ["price"] })).await;
        assert_eq!(lost["structuredContent"]["status"], "lost", "{lost}");
        let found = call(&app, ADMIN_TOKEN, "search_deals", json!({ "status": "lost" })).await;
        assert_eq!(found["structuredContent"]["data"][0]["id"], id.to_string(), "{found}");
        // The feed answers settled events (`SETTLE` old); a margin beyond it
        // for a loaded machine, whose store may stamp them later.
        clock.advance(shared::record::event::SETTLE + chrono::Duration::seconds(120));
        let events = call(&app, ADMIN_TOKEN, "list_events", json!({ "types": "deal.*" })).await;
        assert!(!events["structuredContent"]["data"].as_array().unwrap().is_empty(), "{events}");
    }
);

api_test!(
    async fn the_envelopes_refusals_are_the_error_shape(app) {
        // No token: 401, saying how to authenticate.
        let message = json!({ "jsonrpc": "2.0", "id": 1, "method": "ping" });
        let response = app.send(Method::POST, "/mcp", None, Some(message.clone())).await;
        let www = response.headers.get("www-authenticate").cloned();
        response.expect_error(401);
        assert!(www.is_some_and(|v| v.to_str().unwrap().starts_with("Bearer")));
        // A token that does not hold: 401 on initialize, not a tool result.
        for method in ["initialize", "ping", "tools/list"] {
            rpc(&app, "crm_not_a_token_0123456789abcdef", method, json!({})).await.expect_error(401);
        }
        // No stream here.
        let response = app.send(Method::GET, "/mcp", Some(ADMIN_TOKEN), None).await;
        assert_eq!(response.headers.get("allow").unwrap(), "POST");
        response.expect_error(405);
        // A notification is accepted, answered with nothing.
        let note = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
        let response = app.send(Method::POST, "/mcp", Some(ADMIN_TOKEN), Some(note)).await;
        assert_eq!(response.status, 202);
        // Not JSON-RPC 2.0, a batch, a bad id.
        for (body, field) in [
            (json!({ "jsonrpc": "1.0", "id": 1, "method": "ping" }), "jsonrpc"),
            (json!({ "jsonrpc": "2.0", "id": [1], "method": "ping" }), "id"),
            (json!({ "jsonrpc": "2.0", "id": 1 }), "method"),
        ] {
            app.send(Method::POST, "/mcp", Some(ADMIN_TOKEN), Some(body)).await.expect_field_error(field);
        }
        app.send(Method::POST, "/mcp", Some(ADMIN_TOKEN), Some(json!([message.clone()]))).await.expect_error(400);
        let request = |header: (&str, &str)| {
            Request::builder()
                .method(Method::POST)
                .uri("/mcp")
                .header("authorization", format!("Bearer {ADMIN_TOKEN}"))
                .header("content-type", "application/json")
                .header(header.0, header.1)
                .body(Body::from(message.to_string()))
                .unwrap()
        };
        // A page elsewhere may not drive it; a version it does not speak; media.
        app.raw(request(("origin", "https://evil.example"))).await.expect_error(403);
        app.raw(request(("mcp-protocol-version", "2024-01-01"))).await.expect_field_error("MCP-Protocol-Version");
        app.raw(request(("accept", "text/html"))).await.expect_error(406);
        let plain = Request::builder()
            .method(Method::POST)
            .uri("/mcp")
            .header("authorization", format!("Bearer {ADMIN_TOKEN}"))
            .header("content-type", "text/plain")
            .body(Body::from(message.to_string()))
            .unwrap();
        app.raw(plain).await.expect_error(415);
    }
);

api_test!(
    /// The robustness sweep of the tools: every argument of every tool, of
    /// every odd kind (an id that tries to walk to another route among
    /// them), is answered with a tool result or a JSON-RPC error, never a
    /// 500, never a request elsewhere.
    async fn every_tool_answers_odd_arguments_without_a_500(app) {
        let odd = [json!(null), json!(true), json!(-1), json!("../../v3/workspaces/info"), json!("1?limit=1"), json!([{}]), json!({})];
        for tool in ::mcp::tools::TOOLS {
            let described = ::mcp::tools::describe(tool);
            let names: Vec<String> = described["inputSchema"]["properties"].as_object().unwrap().keys().cloned().collect();
            for arguments in [json!(null), json!([]), json!("text"), json!({})] {
                let body = rpc(&app, ADMIN_TOKEN, "tools/call", json!({ "name": tool.name, "arguments": arguments })).await.expect(200);
                assert!(body["result"]["isError"].is_boolean() || body["error"]["code"].is_i64(), "{} {arguments}: {body}", tool.name);
            }
            for name in &names {
                for value in &odd {
                    let arguments = json!({ name.as_str(): value });
                    let body = rpc(&app, ADMIN_TOKEN, "tools/call", json!({ "name": tool.name, "arguments": arguments })).await.expect(200);
                    let result = &body["result"];
                    assert!(result["isError"].is_boolean(), "{} {arguments}: {body}", tool.name);
                    if name == "id" && value.is_string() {
                        assert_eq!(result["isError"], true, "{} {arguments}: {body}", tool.name);
                    }
                }
            }
        }
    }
);

api_test!(
    /// A refused write gives its key back, through a batch-relayed tool too
    /// (its batch answers 207 and wrote nothing): the corrected retry with
    /// the same key runs, and is then answered again.
    async fn a_refused_keyed_update_can_be_corrected_with_the_same_key(app) {
        let contact = app.a_contact().await;
        let deal = app.post("/v3/deals", a_deal(contact)).await.expect(201);
        let id: u64 = deal["id"].as_str().unwrap().parse().unwrap();
        let refused = call(&app, ADMIN_TOKEN, "update_deal", json!({ "id": id, "value": "lots", "idempotencyKey": "fix-1" })).await;
        assert_eq!(refused["isError"], true, "{refused}");
        let corrected = call(&app, ADMIN_TOKEN, "update_deal", json!({ "id": id, "value": 42, "idempotencyKey": "fix-1" })).await;
        assert_eq!(corrected["isError"], false, "{corrected}");
        assert_eq!(corrected["structuredContent"]["value"], 42.0);
        let again = call(&app, ADMIN_TOKEN, "update_deal", json!({ "id": id, "value": 42, "idempotencyKey": "fix-1" })).await;
        assert!(text(&again).contains("a retry"), "{again}");
    }
);

api_test!(
    /// `search_deals` sees every deal unless it names a user, and a
    /// session's text id is one path segment, never a way to another route.
    async fn deal_search_and_session_ids_mean_what_they_say(app) {
        let contact = app.a_contact().await;
        app.post("/v3/deals", a_deal(contact)).await.expect(201);
        let all = call(&app, ADMIN_TOKEN, "search_deals", json!({ "isOwner": null })).await;
        assert_eq!(all["structuredContent"]["totalCount"], 1, "{all}");
        let theirs = call(&app, ADMIN_TOKEN, "search_deals", json!({ "userId": 99 })).await;
        assert_eq!(theirs["isError"], false, "{theirs}");
        assert_eq!(theirs["structuredContent"]["data"], json!([]), "user 99 sees none of operator 7's deals: {theirs}");
        for id in ["../../v3/workspaces/info", "a b", "é", ".."] {
            let result = call(&app, ADMIN_TOKEN, "get_session", json!({ "id": id })).await;
            assert_eq!(result["isError"], true, "{id}: {result}");
            assert!(!text(&result).contains("workspaceId"), "{id}: {result}");
        }
        // A null id is not a notification: it is refused.
        app.send(Method::POST, "/mcp", Some(ADMIN_TOKEN), Some(json!({ "jsonrpc": "2.0", "id": null, "method": "ping" })))
            .await
            .expect_field_error("id");
    }
);

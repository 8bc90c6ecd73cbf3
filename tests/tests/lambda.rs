//! The Lambda side: API Gateway HTTP API (payload v2) events, the ones in
//! `events/` that `cargo lambda invoke` sends, go through `lambda_http`'s own
//! adapter (what `lambda_http::run` wraps the Router in) into one group's Router,
//! exactly as each function's `main.rs` wires it.

use api_tests::serde_json::{self, Value, json};
use api_tests::{ADMIN_TOKEN, TestApp, api_test};
use lambda_http::request::LambdaRequest;
use lambda_http::{Adapter, Context, LambdaEvent, Service};
use shared::http::{AppState, Group};

/// Sends an event file through the adapter to a function made of one group.
async fn invoke(app: &TestApp, group: Group, event_file: &str) -> Value {
    invoke_on(AppState::new(app.store.clone()), group, event_file).await
}

/// [`invoke`] on `state`.
async fn invoke_on(state: AppState, group: Group, event_file: &str) -> Value {
    let path = format!("{}/../events/{event_file}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let text = text.replace("crm_REPLACE_WITH_YOUR_TOKEN", ADMIN_TOKEN);
    let request: LambdaRequest = serde_json::from_str(&text).expect("an API Gateway v2 event");
    let router = shared::http::app(state, vec![group]);
    let mut adapter = Adapter::from(router);
    let response = adapter
        .call(LambdaEvent::new(request, Context::default()))
        .await
        .expect("the function answers");
    serde_json::to_value(response).expect("a serialisable Lambda response")
}

fn body(response: &Value) -> Value {
    serde_json::from_str(response["body"].as_str().expect("a text body")).expect("a JSON body")
}

api_test! {
    async fn an_http_api_event_reaches_the_workspaces_function(app) {
        let response = invoke(&app, workspaces::group(), "workspaces-info.json").await;
        assert_eq!(response["statusCode"], 200, "{response}");
        assert_eq!(body(&response)["workspaceId"], 1);
        // API Gateway's request id is the request id of the logs and errors.
        assert_eq!(response["headers"]["x-request-id"], "JKJaXmPLIAMEvxQ=");
    }
}

api_test! {
    async fn the_tags_function_creates_and_lists(app) {
        let response = invoke(&app, tags::group(), "tags-create.json").await;
        assert_eq!(response["statusCode"], 201, "{response}");
        assert_eq!(body(&response)["name"], "VIP");
        let response = invoke(&app, tags::group(), "tags-list.json").await;
        assert_eq!(response["statusCode"], 200, "{response}");
        assert_eq!(body(&response)["totalCount"], 1);
    }
}

api_test! {
    /// A function serves its own group only: another group's route is a JSON 404.
    async fn a_function_answers_only_its_routes(app) {
        let response = invoke(&app, tags::group(), "workspaces-info.json").await;
        assert_eq!(response["statusCode"], 404);
        assert_eq!(body(&response)["requestId"], json!("JKJaXmPLIAMEvxQ="));
    }
}

api_test! {
    /// The contacts function finds or creates from an API Gateway event.
    async fn the_contacts_function_finds_or_creates(app) {
        let first = invoke(&app, contacts::group(), "contacts-find-or-create.json").await;
        assert_eq!(first["statusCode"], 201, "{first}");
        assert_eq!(first["headers"]["x-contact-created"], "true");
        let again = invoke(&app, contacts::group(), "contacts-find-or-create.json").await;
        assert_eq!(again["headers"]["x-contact-created"], "false");
        assert_eq!(body(&again)["id"], body(&first)["id"]);
        assert_eq!(body(&first)["phone"], "+5511987654321");
    }
}

api_test! {
    /// The deals function parses a nested filter from an API Gateway query string.
    async fn the_deals_function_lists_with_nested_filters(app) {
        let response = invoke(&app, deals::group(), "deals-list.json").await;
        assert_eq!(response["statusCode"], 200, "{response}");
        assert_eq!(body(&response)["totalCount"], 0);
    }
}

api_test! {
    /// The MCP function relays its tools through the groups linked into it
    /// (`shared::lambda::relaying_app`), as `mcp`'s `main.rs` wires it.
    async fn the_mcp_function_lists_its_tools(app) {
        let state = AppState::new(app.store.clone()).with_relay(::mcp::tool_groups);
        let response = invoke_on(state, ::mcp::group(), "mcp-tools-list.json").await;
        assert_eq!(response["statusCode"], 200, "{response}");
        let tools = body(&response)["result"]["tools"].as_array().unwrap().len();
        assert_eq!(tools, ::mcp::tools::TOOLS.len());
    }
}

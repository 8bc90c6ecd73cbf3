//! The OpenAPI document: generated from the groups that build the Routers
//! (`crm openapi`), checked in as docs/openapi.json, served at `/openapi.json`
//! without a token. A route cannot be served without being in it, and the
//! checked-in file cannot fall behind the code.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use api_tests::serde_json::{self, Value};
use api_tests::{TestApp, api_test};
use http::Method;

fn checked_in_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/openapi.json")
}

fn generated() -> Value {
    serde_json::from_str(&crm::openapi()).expect("the document is JSON")
}

#[test]
fn the_checked_in_document_is_the_generated_one() {
    let path = checked_in_path();
    if std::env::var_os("UPDATE_OPENAPI").is_some() {
        std::fs::write(&path, crm::openapi() + "\n").expect("docs/openapi.json written");
    }
    let checked_in: Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("docs/openapi.json"))
            .expect("docs/openapi.json is JSON");
    assert!(
        checked_in == generated(),
        "docs/openapi.json is not the document the code generates; run \
         `UPDATE_OPENAPI=1 cargo test -p api-tests --test api openapi::` (or `cargo run -- openapi > docs/openapi.json`) and commit it"
    );
}

#[test]
fn every_served_route_is_an_operation_and_nothing_else_is() {
    let served: BTreeSet<(String, String)> = crm::groups()
        .iter()
        .flat_map(|g| {
            g.routes()
                .iter()
                .map(|r| (r.method.to_string(), r.path.to_owned()))
        })
        .collect();
    let document = generated();
    let mut documented = BTreeSet::new();
    for (path, item) in document["paths"].as_object().unwrap() {
        for method in item.as_object().unwrap().keys() {
            documented.insert((method.to_uppercase(), path.clone()));
        }
    }
    assert_eq!(served, documented);
}

/// Every operation declares what its caller needs (a scope, any token, or
/// nothing), and the document shows it in its security requirement.
#[test]
fn every_operation_declares_its_scope() {
    let document = generated();
    for group in crm::groups() {
        for route in group.routes() {
            let (method, path) = (route.method.as_str().to_ascii_lowercase(), route.path);
            let need = route.need.unwrap_or_else(|| {
                panic!("{method} {path} declares no scope (Group::scoped or Group::needs)")
            });
            let security = &document["paths"][path][&method]["security"];
            let expected = match need {
                shared::auth::Need::Public => serde_json::Value::Null,
                shared::auth::Need::Token | shared::auth::Need::Relayed => {
                    serde_json::json!([{ "bearer": [] }])
                }
                shared::auth::Need::Scope(scope) => {
                    serde_json::json!([{ "bearer": [scope.to_string()] }])
                }
            };
            assert_eq!(security, &expected, "{method} {path}");
        }
    }
}

#[test]
fn every_operation_is_described_in_full() {
    let document = generated();
    let mut ids = BTreeSet::new();
    for (path, item) in document["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            let id = operation["operationId"].as_str().expect("an operationId");
            assert!(
                operation["summary"].is_string(),
                "{method} {path} has no summary (Group::summary)"
            );
            assert!(ids.insert(id.to_owned()), "operationId {id} twice");
            let undescribed = shared::http::openapi::undescribed_path_parameters(path, operation);
            assert!(
                undescribed.is_empty(),
                "{method} {path}: {undescribed:?} not described"
            );
            let responses = operation["responses"].as_object().unwrap();
            // `GET /mcp` only says there is no stream here (405).
            assert!(
                responses.keys().any(|code| code.starts_with('2'))
                    || (path == "/mcp" && method == "get"),
                "{method} {path} has no success response"
            );
            // Public routes have no security requirement
            // (`every_operation_declares_its_scope` holds that to `Need`).
            let public = operation["security"].as_array().is_some_and(Vec::is_empty)
                || operation["security"].is_null();
            if !public {
                // The scope it needs, or none for a route any token may call.
                let scopes = operation["security"][0]["bearer"].as_array().unwrap();
                assert!(scopes.len() <= 1, "{method} {path}");
                if let Some(scope) = scopes.first() {
                    assert!(
                        scope
                            .as_str()
                            .unwrap()
                            .parse::<shared::auth::Scope>()
                            .is_ok()
                    );
                    assert!(responses.contains_key("403"), "{method} {path}");
                }
                assert!(
                    responses.contains_key("401") && responses.contains_key("default"),
                    "{method} {path}"
                );
            }
            let takes_key = operation["parameters"].as_array().is_some_and(|ps| {
                ps.iter()
                    .any(|p| p["name"] == "Idempotency-Key" && p["in"] == "header")
            });
            // `/mcp` relays: its write tools take `idempotencyKey` instead.
            assert_eq!(
                takes_key,
                method == "post" && path != "/mcp",
                "{method} {path}: Idempotency-Key"
            );
        }
    }
    // The spec's nested query forms are described.
    let deals = &document["paths"]["/v3/deals"]["get"]["parameters"];
    assert!(
        deals
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["name"] == "filters" && p["style"] == "deepObject")
    );
    // A create links to what can be done with what it created.
    let links = &document["paths"]["/v3/tags"]["post"]["responses"]["201"]["links"];
    assert_eq!(links["tags.get"]["parameters"]["id"], "$response.body#/id");
}

api_test! {
    /// `GET /openapi.json` needs no token and serves the checked-in document;
    /// `GET /docs` is the reference page, its files served from the binary.
    async fn the_document_and_the_page_are_served(app) {
        let served = app.send(Method::GET, "/openapi.json", None, None).await.expect(200);
        let checked_in: Value = serde_json::from_str(api_docs::DOCUMENT).unwrap();
        assert_eq!(served, checked_in);
        let page = page(&app, "/docs").await;
        assert!(page.contains("/docs/swagger-ui-bundle.js") && page.contains("/openapi.json"));
        let script = page_len(&app, "/docs/swagger-ui-bundle.js").await;
        assert!(script > 100_000, "{script} bytes");
        app.send(Method::GET, "/docs/nothing.js", None, None).await.expect_error(404);
    }
}

api_test! {
    /// A create documents the fields it needs as required (a typed create
    /// such as `DealCreate` by its own type, one whose body type is the
    /// update's by `http::Create`): an empty body is refused naming only
    /// fields the document requires (serde names the first it misses; a
    /// deal's each one is tested in tests/tests/deals.rs against this list).
    async fn a_create_documents_the_fields_it_refuses_without(app) {
        let document = generated();
        let mut creates = BTreeSet::new();
        for (path, item) in document["paths"].as_object().unwrap() {
            let schema = &item["post"]["requestBody"]["content"]["application/json"]["schema"]["$ref"];
            let Some(name) = schema.as_str().and_then(|r| r.strip_prefix("#/components/schemas/")) else { continue };
            if !name.trim_end_matches("V1").ends_with("Create") {
                continue;
            }
            creates.insert(name.to_owned());
            let schema = &document["components"]["schemas"][name];
            let mut documented: BTreeSet<String> =
                schema["required"].as_array().into_iter().flatten().map(|f| f.as_str().unwrap().to_owned()).collect();
            // Of the fields one of which is needed, the create names the first.
            if let Some(any_of) = schema["allOf"][0]["anyOf"].as_array() {
                documented.insert(any_of[0]["required"][0].as_str().unwrap().to_owned());
            }
            // A path's ids: any will do, the body is refused first.
            let path: String = path.split('/').map(|s| if s.starts_with('{') { "1" } else { s }).collect::<Vec<_>>().join("/");
            let refused = app.post(&path, serde_json::json!({})).await.expect_error(400);
            let named: BTreeSet<String> =
                refused["details"].as_array().unwrap().iter().map(|d| d["field"].as_str().unwrap().to_owned()).collect();
            assert!(!named.is_empty() && named.is_subset(&documented), "{path}: {named:?} of {documented:?}");
        }
        // Every create body the document names is a POST's, and was tried
        // (15 on 2026-12-03, from ContactCreate to CheckoutLinkCreate).
        let named: BTreeSet<String> = document["components"]["schemas"].as_object().unwrap().keys()
            .filter(|name| name.trim_end_matches("V1").ends_with("Create"))
            .cloned()
            .collect();
        assert_eq!(creates, named);
        assert!(creates.len() >= 15, "{creates:?}");
    }
}

async fn page(app: &TestApp, path: &str) -> String {
    let response = raw(app, path).await;
    String::from_utf8(response).unwrap()
}

async fn page_len(app: &TestApp, path: &str) -> usize {
    raw(app, path).await.len()
}

async fn raw(app: &TestApp, path: &str) -> Vec<u8> {
    use http_body_util::BodyExt;
    use tower::ServiceExt;
    let request = http::Request::get(path)
        .body(axum::body::Body::empty())
        .unwrap();
    let response = app.router.clone().oneshot(request).await.unwrap();
    assert_eq!(response.status(), 200, "{path}");
    response
        .into_body()
        .collect()
        .await
        .unwrap()
        .to_bytes()
        .to_vec()
}

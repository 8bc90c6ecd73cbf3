//! Bad input never reaches a 500: every route of every group gets malformed ids,
//! bodies of every JSON type, fields of the wrong type, and odd query strings,
//! and each answer is a 2xx or a 4xx in the one error shape.

use api_tests::serde_json::{Value, json};
use api_tests::{ADMIN_TOKEN, api_test};
use axum::body::Body;
use http::Request;

const FIELDS: &[&str] = &[
    "name",
    "phone",
    "phones",
    "email",
    "value",
    "status",
    "contactId",
    "contact",
    "operatorId",
    "groupId",
    "pipelineId",
    "stageId",
    "origin",
    "tagIds",
    "products",
    "customFields",
    "crmData",
    "price",
    "scopes",
    "expiresAt",
    "color",
    "textColor",
    "contacts",
    "lostReason",
    "wonLostDate",
    "dueDate",
    "newContact",
    "_id",
    "ids",
];

fn bodies() -> Vec<Value> {
    let mut bodies = vec![json!(null), json!([]), json!("x"), json!(7), json!({})];
    for odd in [
        json!(null),
        json!(true),
        json!(-1),
        json!(1.5e300),
        json!(""),
        json!([{}]),
        json!({ "a": [] }),
    ] {
        bodies.push(Value::Object(
            FIELDS
                .iter()
                .map(|f| ((*f).to_owned(), odd.clone()))
                .collect(),
        ));
    }
    bodies
}

const QUERIES: &[&str] = &[
    "",
    "?limit=x&offset=-1",
    "?limit=99999999999999999999",
    "?offset=18446744073709551615",
    "?sort[x]=y&filters={bad&filters[status]=&stageId[]=",
    "?roleId=1&isOwner=true&userId=1&period=custom&periodFrom=2026-01-01&date=all&createdAtFrom=9999-12-31",
    "?search=%00%FF&emailExact=&newContact=2&cursor=-1&created_at_from=0",
    "?createdAtFrom=2026-01-01&createdAtTo=2026-01-01T01:00:00Z&organizationId=99999999999999999999",
];

/// The path with each `{name}` replaced by `value`.
fn fill_params(path: &str, value: &str) -> String {
    let mut out = String::new();
    let mut rest = path;
    while let Some(start) = rest.find('{') {
        out.push_str(&rest[..start]);
        out.push_str(value);
        rest = rest[start..].split_once('}').map_or("", |(_, after)| after);
    }
    out.push_str(rest);
    out
}

api_test! {
    async fn bad_input_never_reaches_a_500(app) {
        let routes: Vec<(http::Method, &str)> = crm::groups().iter().flat_map(|g| g.routes().iter().map(|r| (r.method.clone(), r.path)).collect::<Vec<_>>()).collect();
        assert!(routes.len() > 30);
        let mut checked = 0;
        for (method, path) in routes {
            // A number, junk, an overflow, a huge one, and a well-formed code or key.
            for id in ["1", "x%20y", "99999999999999999999999", &"7".repeat(1500), "AbCdEfGhIjKlMnOpQrStUvWx"] {
                // Every path parameter ({id}, {code}, {key}, {dashboardId}) gets the value.
                let path = fill_params(path, id);
                let requests: Vec<(String, Option<String>)> = if method == http::Method::GET || method == http::Method::DELETE {
                    QUERIES.iter().map(|q| (format!("{path}{q}"), None)).collect()
                } else {
                    bodies().into_iter().map(|b| (path.clone(), Some(b.to_string()))).collect()
                };
                for (uri, body) in requests {
                    let request = Request::builder()
                        .method(method.clone())
                        .uri(&uri)
                        .header("authorization", format!("Bearer {ADMIN_TOKEN}"))
                        .header("content-type", "application/json")
                        .body(body.clone().map(Body::from).unwrap_or_else(Body::empty))
                        .unwrap();
                    let response = app.raw(request).await;
                    let status = response.status.as_u16();
                    assert!(status < 500, "{method} {uri} {body:?} -> {status} {}", response.body);
                    if status >= 400 {
                        assert_eq!(response.body["statusCode"], json!(status), "{method} {uri}: {}", response.body);
                        assert!(response.body["message"].is_string() && response.body["requestId"].is_string());
                    }
                    checked += 1;
                }
            }
        }
        assert!(checked > 500, "{checked} requests");
    }
}

//! OpenAPI links from every create to what can be done with what it created,
//! so that stateful clients (and schemathesis' stateful runs) can follow a
//! `POST /v3/tags` with `GET`, `PATCH` and `DELETE /v3/tags/{id}`.
//!
//! One rule for every group: a `201` of `POST P` links to each operation of a
//! path `P/{x}...` (no further parameter after `{x}`). `{x}` takes the new
//! record's `id` when it is `id` or ends in `Id`, its field of the same name
//! otherwise (`code`, `key`); the parameters of `P` itself are passed along.

use serde_json::{Map, Value, json};

pub(super) fn add_links(document: &mut Value) {
    let Some(paths) = document["paths"].as_object() else {
        return;
    };
    let mut found = Vec::new();
    for (path, item) in paths {
        if item["post"]["responses"].get("201").is_none() {
            continue;
        }
        let mut links = Map::new();
        for (target, target_item) in paths {
            let Some(rest) = target
                .strip_prefix(path.as_str())
                .and_then(|r| r.strip_prefix("/{"))
            else {
                continue;
            };
            let Some((name, tail)) = rest.split_once('}') else {
                continue;
            };
            if tail.contains('{') {
                continue;
            }
            let field = if name == "id" || name.ends_with("Id") {
                "id"
            } else {
                name
            };
            let mut parameters = Map::new();
            for own in params_of(path) {
                parameters.insert(own.to_owned(), json!(format!("$request.path.{own}")));
            }
            parameters.insert(name.to_owned(), json!(format!("$response.body#/{field}")));
            for operation in target_item.as_object().into_iter().flat_map(|o| o.values()) {
                let Some(id) = operation["operationId"].as_str() else {
                    continue;
                };
                links.insert(
                    id.to_owned(),
                    json!({ "operationId": id, "parameters": parameters }),
                );
            }
        }
        if !links.is_empty() {
            found.push((path.clone(), links));
        }
    }
    for (path, links) in found {
        document["paths"][&path]["post"]["responses"]["201"]["links"] = Value::Object(links);
    }
}

fn params_of(path: &str) -> impl Iterator<Item = &str> {
    path.split('/')
        .filter_map(|s| s.strip_prefix('{')?.strip_suffix('}'))
}

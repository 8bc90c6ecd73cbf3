//! The rules the document's schemas follow so that the generators
//! integrators use read them as the API means them (`scripts/clients.sh`
//! generates a Python and a TypeScript client from the document and runs a
//! flow with each). Applied as the document is generated, to every schema:
//!
//! - **No boolean schemas.** Any JSON value is `{}`, not `true`, which some
//!   generators refuse (schemars' own `ReplaceBoolSchemas`).
//! - **Enums are `enum`.** An enum whose variants carry doc comments comes
//!   out of schemars as a `oneOf` of single `const`s, which generators read
//!   as a union of literal types (and one takes only the first); it becomes
//!   one `enum`, the variants' docs in its description.
//! - **Every header the server sends is declared**: `x-request-id` on every
//!   answer, `Idempotent-Replayed` on a `POST`'s success, `Retry-After` with
//!   the errors a client retries (`Link` is declared by `/v1` pages).
//! - **A request's defaults are words.** A field the server fills in when a
//!   request leaves it out is optional, its default said in its description:
//!   generators take a `default` to mean the field is always there, and make
//!   it required in a request. Responses keep theirs (the server sends them).

use std::collections::BTreeSet;

use schemars::transform::{ReplaceBoolSchemas, Transform};
use serde_json::{Map, Value, json};

/// Applies the rules to the document's schemas (`components.schemas`, and
/// every schema inline in a path: a parameter's, a body's).
pub(super) fn apply(document: &mut Value) {
    let requested = requested_schemas(document);
    if let Some(schemas) = document["components"]["schemas"].as_object_mut() {
        for (name, schema) in schemas.iter_mut() {
            common(schema);
            if requested.contains(name) {
                defaults_to_words(schema);
            }
        }
    }
    inline_schemas(&mut document["paths"], &mut common);
}

/// Calls `f` on every schema inline in `paths` (each value of a `schema` key).
fn inline_schemas(value: &mut Value, f: &mut impl FnMut(&mut Value)) {
    match value {
        Value::Object(object) => {
            for (key, child) in object.iter_mut() {
                if key == "schema" {
                    f(child);
                } else {
                    inline_schemas(child, f);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| inline_schemas(v, f)),
        _ => {}
    }
}

/// The rules for every schema.
fn common(schema: &mut Value) {
    if let Ok(schema) = <&mut schemars::Schema>::try_from(&mut *schema) {
        let mut replace = ReplaceBoolSchemas::default();
        replace.skip_additional_properties = true;
        replace.transform(schema);
    }
    enums_as_enum(schema);
}

/// `oneOf: [{const: a, description}, {const: b}]` → `enum: [a, b]`.
fn enums_as_enum(value: &mut Value) {
    match value {
        Value::Object(object) => {
            object.values_mut().for_each(enums_as_enum);
            let Some(Value::Array(branches)) = object.get("oneOf") else {
                return;
            };
            // Each branch a `const` (with its doc) or an `enum` (variants without one).
            let consts: Option<Vec<(Value, Option<String>)>> = branches
                .iter()
                .map(|b| {
                    let branch = b.as_object()?;
                    let plain = branch
                        .keys()
                        .all(|k| matches!(k.as_str(), "const" | "enum" | "description" | "type"));
                    if !plain || branch.get("type").is_some_and(|t| t != "string") {
                        return None;
                    }
                    let described = b
                        .get("description")
                        .and_then(Value::as_str)
                        .map(str::to_owned);
                    match (
                        branch.get("const"),
                        branch.get("enum").and_then(Value::as_array),
                    ) {
                        (Some(value), None) => Some(vec![(value.clone(), described)]),
                        (None, Some(values)) => {
                            Some(values.iter().map(|v| (v.clone(), None)).collect())
                        }
                        _ => None,
                    }
                })
                .collect::<Option<Vec<_>>>()
                .map(|all| all.into_iter().flatten().collect());
            let Some(consts) = consts else { return };
            let mut words: Vec<String> = consts
                .iter()
                .filter_map(|(v, d)| Some(format!("`{}`: {}", v.as_str()?, d.as_deref()?)))
                .collect();
            if let Some(own) = object.get("description").and_then(Value::as_str) {
                words.insert(0, own.to_owned());
            }
            object.remove("oneOf");
            object.insert("type".into(), json!("string"));
            object.insert(
                "enum".into(),
                Value::Array(consts.into_iter().map(|(v, _)| v).collect()),
            );
            if !words.is_empty() {
                object.insert("description".into(), json!(words.join("\n\n")));
            }
        }
        Value::Array(items) => items.iter_mut().for_each(enums_as_enum),
        _ => {}
    }
}

/// The components a request body names, and those they name in turn.
fn requested_schemas(document: &Value) -> BTreeSet<String> {
    fn refs(value: &Value, out: &mut Vec<String>) {
        match value {
            Value::Object(object) => {
                if let Some(name) = object
                    .get("$ref")
                    .and_then(Value::as_str)
                    .and_then(|r| r.strip_prefix("#/components/schemas/"))
                {
                    out.push(name.to_owned());
                }
                object.values().for_each(|v| refs(v, out));
            }
            Value::Array(items) => items.iter().for_each(|v| refs(v, out)),
            _ => {}
        }
    }
    let mut todo = Vec::new();
    for item in document["paths"]
        .as_object()
        .into_iter()
        .flat_map(Map::values)
    {
        for operation in item.as_object().into_iter().flat_map(Map::values) {
            refs(&operation["requestBody"], &mut todo);
        }
    }
    let mut seen = BTreeSet::new();
    while let Some(name) = todo.pop() {
        if seen.insert(name.clone()) {
            refs(&document["components"]["schemas"][&name], &mut todo);
        }
    }
    seen
}

/// Each property's `default` moved into its description.
fn defaults_to_words(schema: &mut Value) {
    let Some(properties) = schema.get_mut("properties").and_then(Value::as_object_mut) else {
        return;
    };
    for property in properties.values_mut() {
        let Some(object) = property.as_object_mut() else {
            continue;
        };
        let Some(default) = object.remove("default") else {
            continue;
        };
        let said = format!("Default: `{default}`.");
        let description = match object.get("description").and_then(Value::as_str) {
            Some(own) => format!("{own}\n\n{said}"),
            None => said,
        };
        object.insert("description".into(), json!(description));
    }
}

/// Declares the headers the server sends on an operation's answers.
pub(super) fn declare_headers(operation: &mut Value, method: &axum::http::Method) {
    let post = method == axum::http::Method::POST;
    let Some(responses) = operation
        .get_mut("responses")
        .and_then(Value::as_object_mut)
    else {
        return;
    };
    for (status, response) in responses.iter_mut() {
        let Some(response) = response.as_object_mut() else {
            continue;
        };
        let headers = response
            .entry("headers")
            .or_insert_with(|| json!({}))
            .as_object_mut()
            .expect("headers are an object");
        headers.insert(
            "x-request-id".into(),
            json!({ "description": "The request's id, as the log has it.", "schema": { "type": "string" } }),
        );
        if post && status.starts_with('2') {
            headers.insert(
                "Idempotent-Replayed".into(),
                json!({
                    "description": "`true` on an answer given again to a retry with the same `Idempotency-Key`.",
                    "schema": { "type": "string", "enum": ["true"] },
                }),
            );
        }
        if status == "401" {
            headers.insert(
                "WWW-Authenticate".into(),
                json!({
                    "description": "`Bearer realm=\"crm\"` (RFC 6750): the token to send.",
                    "schema": { "type": "string" },
                }),
            );
        }
        if status == "default" || status == "409" || status == "429" || status == "503" {
            headers.insert(
                "Retry-After".into(),
                json!({
                    "description": "Seconds to wait before retrying (with 409 in progress, 429 and 503).",
                    "schema": { "type": "integer", "minimum": 0 },
                }),
            );
        }
    }
}

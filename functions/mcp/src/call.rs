//! `tools/call`: a tool's arguments made into a request of the API, sent
//! through the relay, and its answer made into a tool result.

use axum::http::Method;
use serde_json::{Map, Value, json};
use shared::ApiError;

use crate::protocol::RpcError;
use crate::relay::{Relayed, Reply};
use crate::schema::KEY;
use crate::tools::{TOOLS, Tool, Via};

/// `tools/call`: a refused input, a refused scope or a failed request is a
/// tool result a model can act on (`isError`); only a token that does not
/// hold is the POST's own 401.
pub async fn call(
    relayed: &Relayed,
    params: &Map<String, Value>,
) -> Result<Result<Value, RpcError>, ApiError> {
    let Some(name) = params.get("name").and_then(Value::as_str) else {
        return Ok(Err(RpcError::invalid_params("`name`: the tool to call")));
    };
    let Some(tool) = TOOLS.iter().find(|t| t.name == name) else {
        return Ok(Err(RpcError::invalid_params(format!("no tool {name}"))));
    };
    let arguments = match params.get("arguments") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(arguments)) => arguments.clone(),
        Some(_) => return Ok(Ok(refused("`arguments` must be an object"))),
    };
    let reply = match run(relayed, tool, arguments).await? {
        Ok(reply) => reply,
        Err(problem) => return Ok(Ok(refused(&problem))),
    };
    if reply.status == axum::http::StatusCode::UNAUTHORIZED {
        return Err(reply.error());
    }
    Ok(Ok(answer(&reply)))
}

/// Runs `tool` with `arguments`: the API's answer, or what is wrong with the arguments.
async fn run(
    relayed: &Relayed,
    tool: &Tool,
    mut arguments: Map<String, Value>,
) -> Result<Result<Reply, String>, ApiError> {
    let key = match arguments.remove(KEY) {
        None | Some(Value::Null) => None,
        Some(Value::String(key)) if shared::idempotency::valid_key(&key) => Some(key),
        Some(_) => {
            return Ok(Err(format!(
                "{KEY}: must be 1 to 255 printable ASCII characters"
            )));
        }
    };
    let key = key.as_deref();
    match &tool.via {
        Via::Get { path, defaults } => {
            arguments.retain(|_, value| !value.is_null()); // absent, as a query has it
            let path = match fill_id(path, &mut arguments) {
                Ok(path) => path,
                Err(problem) => return Ok(Err(problem)),
            };
            defaults(&mut arguments);
            let target = match query(&arguments) {
                Ok(query) if query.is_empty() => path,
                Ok(query) => format!("{path}?{query}"),
                Err(problem) => return Ok(Err(problem)),
            };
            Ok(Ok(relayed.send(Method::GET, &target, None, None).await?))
        }
        Via::Post(path) => Ok(Ok(relayed
            .send(
                Method::POST,
                path,
                Some(canonical(&Value::Object(arguments))),
                key,
            )
            .await?)),
        Via::Batch { path, op, set } => {
            let mut operation = Map::new();
            operation.insert("op".into(), json!(op));
            if let Some(id) = arguments.remove("id") {
                operation.insert("id".into(), id);
            }
            if let Some(by) = arguments.remove("by") {
                operation.insert("by".into(), by);
            }
            for (name, value) in *set {
                arguments.insert((*name).to_owned(), json!(value));
            }
            operation.insert("data".into(), Value::Object(arguments));
            let body = json!({ "operations": [operation] });
            let reply = relayed
                .send(Method::POST, path, Some(canonical(&body)), key)
                .await?;
            Ok(Ok(unwrap_batch(reply)))
        }
        Via::TagDeal => {
            let Some(id) = arguments.get("id").and_then(Value::as_u64) else {
                return Ok(Err("id: the deal's id, a number".into()));
            };
            let ids = |name: &str| -> Result<Vec<u64>, String> {
                match arguments.get(name) {
                    None | Some(Value::Null) => Ok(Vec::new()),
                    Some(Value::Array(items)) => items
                        .iter()
                        .map(|i| i.as_u64().ok_or(format!("{name}: tag ids, numbers")))
                        .collect(),
                    Some(_) => Err(format!("{name}: a list of tag ids")),
                }
            };
            let (add, remove) = match (ids("add"), ids("remove")) {
                (Ok(add), Ok(remove)) => (add, remove),
                (Err(problem), _) | (_, Err(problem)) => return Ok(Err(problem)),
            };
            let deal = relayed
                .send(Method::GET, &format!("/v3/deals/{id}"), None, None)
                .await?;
            if !deal.status.is_success() {
                return Ok(Ok(deal));
            }
            let mut tags: Vec<u64> = deal.body["tagIds"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_u64)
                .filter(|t| !remove.contains(t))
                .collect();
            for tag in add {
                if !tags.contains(&tag) {
                    tags.push(tag);
                }
            }
            let body =
                json!({ "operations": [{ "op": "update", "id": id, "data": { "tagIds": tags } }] });
            let reply = relayed
                .send(Method::POST, "/v3/deals/batch", Some(canonical(&body)), key)
                .await?;
            Ok(Ok(unwrap_batch(reply)))
        }
    }
}

/// `path` with its `{id}` (a number) or `{key}` (text, one path segment)
/// filled from the `id` argument, taken out of them.
fn fill_id(path: &str, arguments: &mut Map<String, Value>) -> Result<String, String> {
    if path.contains("{id}") {
        return match arguments.remove("id") {
            Some(Value::Number(n)) if n.is_u64() => Ok(path.replace("{id}", &n.to_string())),
            _ => Err("id: the record's id, a number, is required".into()),
        };
    }
    if path.contains("{key}") {
        return match arguments.remove("id") {
            Some(Value::String(key)) if !key.is_empty() && key != "." && key != ".." => {
                Ok(path.replace("{key}", &segment(&key)))
            }
            _ => Err("id: the record's id, a string, is required".into()),
        };
    }
    Ok(path.to_owned())
}

/// `text` as one path segment: every byte but the unreserved percent-encoded.
fn segment(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// The arguments as a query: lists as repeated names.
fn query(arguments: &Map<String, Value>) -> Result<String, String> {
    let mut pairs: Vec<(String, String)> = Vec::new();
    for (name, value) in arguments {
        let mut push = |value: &Value| -> Result<(), String> {
            let text = match value {
                Value::String(s) => s.clone(),
                Value::Number(n) => n.to_string(),
                Value::Bool(b) => b.to_string(),
                Value::Null => return Ok(()),
                _ => return Err(format!("{name}: must be a string, a number or a boolean")),
            };
            pairs.push((name.clone(), text));
            Ok(())
        };
        match value {
            Value::Array(items) => items.iter().try_for_each(&mut push)?,
            other => push(other)?,
        }
    }
    serde_urlencoded::to_string(&pairs).map_err(|e| e.to_string())
}

/// One byte string for one JSON value: a retry with the same key sends the
/// same bytes (the key's record compares them). `serde_json` keeps object
/// keys sorted, so its compact text is canonical.
fn canonical(value: &Value) -> Vec<u8> {
    serde_json::to_vec(value).unwrap_or_default()
}

/// A batch of one answered as that one operation's own request would be.
fn unwrap_batch(mut reply: Reply) -> Reply {
    if !reply.status.is_success() {
        return reply;
    }
    let Some(result) = reply
        .body
        .get_mut("results")
        .and_then(|results| results.get_mut(0))
        .map(Value::take)
    else {
        return reply;
    };
    let status = result["status"]
        .as_u64()
        .and_then(|s| u16::try_from(s).ok())
        .and_then(|s| axum::http::StatusCode::from_u16(s).ok())
        .unwrap_or(reply.status);
    reply.body = if status.is_success() {
        result["data"].clone()
    } else {
        let mut error = result["error"].clone();
        if let Some(message) = error["message"].as_str() {
            let plain = message
                .replace("operations[0].data.", "")
                .replace("operations[0].", "");
            error["message"] = json!(plain);
        }
        // The fields as the tool's arguments name them.
        if let Some(details) = error["details"].as_array_mut() {
            for detail in details {
                if let Some(field) = detail["field"].as_str() {
                    let plain = field
                        .trim_start_matches("operations[0].")
                        .trim_start_matches("data.")
                        .to_owned();
                    detail["field"] = json!(plain);
                }
            }
        }
        error
    };
    reply.status = status;
    reply
}

/// A tool result: the record or page, or the error a model can act on.
fn answer(reply: &Reply) -> Value {
    if reply.status.is_success() {
        let text = serde_json::to_string(&reply.body).unwrap_or_default();
        let mut content = vec![json!({ "type": "text", "text": text })];
        if reply.headers.get("idempotent-replayed").is_some() {
            content.push(json!({ "type": "text", "text": "(a retry: this is the first call's answer; nothing was done again)" }));
        }
        return json!({ "content": content, "structuredContent": reply.body, "isError": false });
    }
    let mut lines = vec![format!(
        "{} {}: {}",
        reply.status.as_u16(),
        reply.status.canonical_reason().unwrap_or("Error"),
        reply.body["message"]
            .as_str()
            .unwrap_or("the request failed")
    )];
    for detail in reply.body["details"].as_array().into_iter().flatten() {
        let line = format!(
            "{}: {}",
            detail["field"].as_str().unwrap_or("?"),
            detail["problem"].as_str().unwrap_or("?")
        );
        if !lines[0].ends_with(&line) {
            lines.push(line);
        }
    }
    if let Some(seconds) = reply.retry_after() {
        lines.push(format!(
            "Retry after {seconds} s, with the same idempotencyKey."
        ));
    }
    refused(&lines.join("\n"))
}

fn refused(text: &str) -> Value {
    json!({ "content": [{ "type": "text", "text": text }], "isError": true })
}
